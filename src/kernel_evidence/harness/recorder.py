"""The recording API: one packet per candidate, failures included, in a few lines.

>>> rec = Recorder(created_at="2026-11-22T00:00:00Z")   # no path: packets stay in memory
>>> with rec.candidate("add_one", operator="add") as c:
...     _ = c.shape_result("n1024", passed=True)
>>> c.packet.status.value
'passed'
>>> with rec.candidate("broken", operator="add") as c:
...     raise ZeroDivisionError("division by zero")
>>> c.packet.status.value, c.packet.failure.failure_class.value
('failed', 'runtime_error')

An exception inside the block becomes a failure packet: its class comes from
:func:`classify_exception`, its text and a traceback excerpt are kept, and the packet
makes no performance claim. By default (``suppress=True``) the exception is then
suppressed so that a search loop goes on to the next candidate; it is never lost: the
packet holds it and :attr:`CandidateRecord.error` keeps the exception object. Pass
``suppress=False`` (to the recorder or to one candidate) to re-raise it after the packet
is written. ``KeyboardInterrupt`` and ``SystemExit`` are never suppressed (a packet is
still written for them, with class ``infra_error``).
"""

from __future__ import annotations

import builtins
import hashlib
import os
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import msgspec
from pydantic import ValidationError

from .._codec.canonical import strip_nulls
from ..adapters._envelope import start_packet_data
from ..errors import MissingExtra
from ..models import (
    Compile,
    Cost,
    Duration,
    EvidencePacket,
    Failure,
    FailureClass,
    Lineage,
    Reference,
    ShapeCase,
    ShapeResult,
    Software,
    Status,
    Task,
    Timing,
    TolerancePolicy,
    Validation,
)
from .environment import Environment, capture_environment
from .sink import MemorySink, PacketSink, TeeSink, open_sink
from .timer import Measurement

__all__ = [
    "CandidateFailure",
    "CandidateRecord",
    "InfraError",
    "Recorder",
    "classify_exception",
    "identify",
    "status_for",
]

_LOG_CAP = 4000
FC = FailureClass


class CandidateFailure(Exception):
    """Raise inside a candidate block to fail it with a chosen class and message."""

    def __init__(
        self, failure_class: FailureClass | str, message: str, *, shape_id: str | None = None
    ) -> None:
        self.failure_class = FailureClass(failure_class)
        self.shape_id = shape_id
        super().__init__(message)


class InfraError(Exception):
    """The harness or machine failed, not the candidate: the packet's status is ``error``."""


def status_for(failure_class: FailureClass) -> Status:
    """``error`` for infrastructure and reference faults, ``failed`` for the candidate's own."""
    return Status.ERROR if failure_class in (FC.INFRA_ERROR, FC.INVALID_REFERENCE) else Status.FAILED


def classify_exception(exc: BaseException) -> FailureClass:
    """The failure class of an exception raised while building, checking or timing a candidate.

    ==================================================  ==================
    exception                                           class
    ==================================================  ==================
    :class:`CandidateFailure`                           its own class
    an exception group                                  the class all leaves share,
                                                        else ``runtime_error``
    :class:`InfraError`, pydantic ``ValidationError``   ``infra_error``
    (bad harness data), ``MissingExtra``; any
    non-``Exception`` (``KeyboardInterrupt``,
    ``SystemExit``, ``GeneratorExit``)
    ``SyntaxError``; a class named ``*CompileError``    ``compile_error``
    / ``*CompilationError`` (Triton, nvcc wrappers)
    ``TimeoutError``, ``subprocess.TimeoutExpired``     ``timeout``
    ``FloatingPointError`` (``np.errstate(all="raise")``)  ``nan_inf``
    anything else                                       ``runtime_error``
    ==================================================  ==================
    """
    if isinstance(exc, CandidateFailure):
        return exc.failure_class
    leaves = _group_leaves(exc)
    if leaves is not None:
        # an exception group: the class its leaves agree on, else runtime_error
        classes = {classify_exception(leaf) for leaf in leaves}
        return classes.pop() if len(classes) == 1 else FC.RUNTIME_ERROR
    if isinstance(exc, (InfraError, ValidationError, MissingExtra)) or not isinstance(exc, Exception):
        # KeyboardInterrupt, SystemExit, GeneratorExit: the run was stopped, not judged
        return FC.INFRA_ERROR
    names = [c.__name__ for c in type(exc).__mro__]
    if isinstance(exc, SyntaxError) or any(n.endswith(("CompileError", "CompilationError")) for n in names):
        return FC.COMPILE_ERROR
    if isinstance(exc, TimeoutError) or "TimeoutExpired" in names:
        return FC.TIMEOUT
    if isinstance(exc, FloatingPointError):
        return FC.NAN_INF
    return FC.RUNTIME_ERROR


#: ``BaseExceptionGroup`` on Python 3.11+, None before
_GROUP: Any = getattr(builtins, "BaseExceptionGroup", None)


def _group_leaves(exc: BaseException) -> list[BaseException] | None:
    """The leaf exceptions of an exception group (Python 3.11+), or None for any other."""
    if _GROUP is None or not isinstance(exc, _GROUP):
        return None
    leaves: list[BaseException] = []
    stack: list[BaseException] = list(exc.exceptions)
    while stack and len(leaves) < 1000:
        e = stack.pop(0)
        if isinstance(e, _GROUP):
            stack[:0] = list(e.exceptions)
        else:
            leaves.append(e)
    return leaves or None


_sorted_encoder = msgspec.json.Encoder(order="sorted")


def identify(packet: EvidencePacket) -> tuple[EvidencePacket, bytes]:
    """The packet with its content-addressed id, and its JSON bytes, in one serialisation.

    Same id as :meth:`EvidencePacket.compute_id`: ``to_dict()`` already drops null model
    fields, so only the free-form members (extensions, profiler attributes) need
    :func:`strip_nulls`; this skips walking every timing sample again. The bytes hold the
    packet as given (nulls inside extensions kept) with keys sorted: without such nulls they
    are its canonical form, which readers such as ``kevidence validate`` and ``kevidence
    archive`` recognise and take without re-normalising.
    """
    data = packet.to_dict()
    data.pop("packet_id", None)
    body = dict(data)
    for key in ("extensions", "profiler"):
        if key in body:
            body[key] = strip_nulls(body[key])
    try:
        encoded = _sorted_encoder.encode(body)
    except UnicodeEncodeError:
        # a lone surrogate (text decoded with surrogateescape, a broken str()): JSON must be
        # UTF-8, so such characters are written as their escape (backslash-u-dcff)
        packet = EvidencePacket.model_validate(_scrub(packet.to_dict()))
        return identify(packet)
    pid = "sha256:" + hashlib.sha256(encoded).hexdigest()
    data["packet_id"] = pid
    return packet.model_copy(update={"packet_id": pid}), _sorted_encoder.encode(data)


def _scrub_text(text: str) -> str:
    """``text`` encodable as UTF-8: lone surrogates backslash-escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _scrub(obj: Any) -> Any:
    """``obj`` with every string made encodable as UTF-8 (lone surrogates backslash-escaped)."""
    if isinstance(obj, str):
        return _scrub_text(obj)
    if isinstance(obj, dict):
        return {_scrub(k): _scrub(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_scrub(v) for v in obj]
    return obj


def _excerpt(text: str, cap: int = _LOG_CAP) -> str:
    return text if len(text) <= cap else "...\n" + text[-cap:]


def _head(text: str, cap: int = 1000) -> str:
    return text if len(text) <= cap else text[:cap] + " ..."


def _describe(exc: BaseException) -> str:
    """``Type: text`` of an exception, even when its ``__str__`` raises or returns junk."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception as inner:  # noqa: BLE001 - a broken __str__ must not lose the packet
        text = f"<str() failed: {type(inner).__name__}>"
    return _scrub_text(f"{name}: {text}" if text else name)


def _format_traceback(exc: BaseException) -> str:
    try:
        return _scrub_text("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    except Exception:  # noqa: BLE001 - e.g. a RecursionError while formatting a deep chain
        return _describe(exc)


class CandidateRecord:
    """Builds the packet of one candidate; a context manager, or call :meth:`finish` yourself.

    After the block, :attr:`packet` is the written packet, :attr:`location` where it went,
    :attr:`error` the exception raised inside the block (if any).
    """

    def __init__(
        self,
        recorder: Recorder,
        name: str,
        *,
        kind: str = "kernel",
        description: str | None = None,
        candidate_id: str | None = None,
        iteration: int | None = None,
        parent_packet_id: str | None = None,
        relation: str | None = None,
        suppress: bool | None = None,
        task: Task | None = None,
        **task_fields: Any,
    ) -> None:
        self._rec = recorder
        self.name = _scrub(name)
        self._kind = kind
        self._description = _scrub(description)
        self._lineage = Lineage(
            run_id=recorder.run_id,
            candidate_id=candidate_id or name,
            iteration=iteration,
            parent_packet_id=parent_packet_id,
            relation=relation,
        )
        self._suppress = recorder.suppress if suppress is None else suppress
        base = recorder.task_defaults.copy()
        if task is not None:
            base.update(task.model_dump(exclude_none=True))
        base.update({k: v for k, v in task_fields.items() if v is not None})
        self._task = base
        self._compile: Compile | None = None
        self._shapes: list[ShapeResult] = []
        self._first_failure: tuple[FailureClass, str | None, str | None] | None = None
        self._seeds: dict[str, int] = {}
        self._inputs_regenerated: bool | None = None
        self._timing: Timing | None = None
        self._extensions: dict[str, dict[str, Any]] = {}
        self._failure: Failure | None = None
        self._started = time.perf_counter()
        self.packet: EvidencePacket | None = None
        self.location: str | None = None
        self.error: BaseException | None = None

    # ------------------------------------------------------------ context manager

    def __enter__(self) -> CandidateRecord:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        self.finish(exc)
        if exc is None:
            return False
        if not isinstance(exc, Exception):
            return False  # KeyboardInterrupt, SystemExit: never swallowed
        return self._suppress

    # ------------------------------------------------------------ builder calls

    def task(
        self,
        *,
        operator: str | None = None,
        shapes: Sequence[ShapeCase | dict[str, Any]] | None = None,
        dtypes: Sequence[str] | None = None,
        reference: Reference | dict[str, Any] | None = None,
        tolerance: TolerancePolicy | dict[str, Any] | None = None,
        description: str | None = None,
        **more: Any,
    ) -> CandidateRecord:
        """Set task fields (operator, shape suite, dtypes, reference, tolerance, ...)."""
        given = {
            "operator": operator,
            "shapes": [s.model_dump(exclude_none=True) if isinstance(s, ShapeCase) else s for s in shapes]
            if shapes is not None
            else None,
            "dtypes": list(dtypes) if dtypes is not None else None,
            "reference": reference.model_dump(exclude_none=True)
            if isinstance(reference, Reference)
            else reference,
            "tolerance": tolerance.model_dump(exclude_none=True)
            if isinstance(tolerance, TolerancePolicy)
            else tolerance,
            "description": description,
            **more,
        }
        self._task.update({k: v for k, v in given.items() if v is not None})
        Task(**self._task)  # fail now, inside the block, on bad harness data
        return self

    def compile(
        self,
        *,
        source: str | bytes | None = None,
        compiler: Software | str | None = None,
        language: str | None = None,
        target_arch: str | None = None,
        flags: Sequence[str] | None = None,
        succeeded: bool | None = True,
        duration_s: float | None = None,
        log: str | None = None,
    ) -> CandidateRecord:
        """Record how the candidate was built; ``source`` is hashed, not stored."""
        digest = None
        if source is not None:
            raw = source.encode() if isinstance(source, str) else source
            digest = "sha256:" + hashlib.sha256(raw).hexdigest()
        self._compile = Compile(
            compiler=Software(name=compiler) if isinstance(compiler, str) else compiler,
            language=language,
            target_arch=target_arch,
            flags=list(flags) if flags is not None else None,
            source_digest=digest,
            succeeded=succeeded,
            duration=Duration(value=duration_s, unit="s") if duration_s is not None else None,
            log_excerpt=_excerpt(_scrub(log)) if log else None,
        )
        return self

    def seed(self, name: str, value: int) -> CandidateRecord:
        """Record a seed (goes to ``replay.seeds``; ints also to ``validation.seeds``)."""
        self._seeds[name] = int(value)
        return self

    def inputs_regenerated(self, value: bool = True) -> CandidateRecord:
        """Say whether validation inputs were regenerated (not reused from a cache)."""
        self._inputs_regenerated = value
        return self

    def shape_result(
        self,
        shape_id: str | ShapeResult,
        passed: bool | None = None,
        *,
        failure_class: FailureClass | str | None = None,
        message: str | None = None,
        **fields: Any,
    ) -> ShapeResult:
        """Record the correctness of one shape; a failed shape needs (or defaults to) a class.

        A failed shape without ``failure_class`` counts as ``incorrect_numerical``. The first
        failed shape decides the packet's failure class. A shape given as passed with
        ``nan_seen`` or ``inf_seen`` is recorded as failed (``nan_inf`` by default): a
        passed verdict never includes NaN or infinity.
        """
        if isinstance(shape_id, ShapeResult):
            result = shape_id
        else:
            if passed is None:
                raise TypeError("shape_result() needs passed=True or passed=False")
            result = ShapeResult(shape_id=shape_id, passed=passed, message=message, **fields)
        if result.passed and (result.nan_seen or result.inf_seen):
            # a shape that saw NaN or infinity cannot pass (KE407)
            result = result.model_copy(
                update={
                    "passed": False,
                    "message": result.message or "NaN or infinity seen in the output",
                }
            )
            failure_class = failure_class if failure_class is not None else FC.NAN_INF
        self._shapes.append(result)
        if not result.passed and self._first_failure is None:
            fc = FailureClass(failure_class) if failure_class is not None else FC.INCORRECT_NUMERICAL
            self._first_failure = (fc, result.message, result.shape_id)
        return result

    def check(
        self,
        shape_id: str,
        output: Any,
        expected: Any,
        *,
        atol: float = 1e-5,
        rtol: float = 1e-5,
        required_matched_ratio: float = 1.0,
    ) -> ShapeResult:
        """Compare an output array with the reference (numpy) and record the shape result.

        Checks, in order: shape (``incorrect_shape``), dtype (``incorrect_dtype``), NaN or
        infinity where the reference is finite (``nan_inf``), then
        ``|out - ref| <= atol + rtol * |ref|`` on at least ``required_matched_ratio`` of the
        elements (``incorrect_numerical``).
        """
        from ._check import compare_arrays

        result, fc = compare_arrays(
            shape_id,
            output,
            expected,
            atol=atol,
            rtol=rtol,
            required_matched_ratio=required_matched_ratio,
        )
        return self.shape_result(result, failure_class=fc)

    def timing(
        self,
        measurement: Measurement | Timing,
        *,
        baseline: Measurement | None = None,
        provider: str | None = None,
        version: str | None = None,
        call: str | None = None,
        shape_id: str | None = None,
    ) -> CandidateRecord:
        """Record the timing (and the baseline measured in the same session, if any).

        The keyword arguments describe the baseline of a :class:`Measurement`; a ready
        :class:`Timing` carries its own, so passing them with one is a TypeError (they
        were ignored).
        """
        if isinstance(measurement, Timing):
            given = {
                k: v
                for k, v in (
                    ("baseline", baseline), ("provider", provider), ("version", version),
                    ("call", call), ("shape_id", shape_id),
                )
                if v is not None
            }  # fmt: skip
            if given:
                raise TypeError(
                    f"timing(): {', '.join(given)} apply to a Measurement; a Timing carries its own "
                    "baseline and shape_id (set them on the Timing)"
                )
            self._timing = measurement
        else:
            self._timing = measurement.timing(
                shape_id=shape_id, baseline=baseline, provider=provider, version=version, call=call
            )
        return self

    def fail(
        self,
        failure_class: FailureClass | str,
        message: str | None = None,
        *,
        shape_id: str | None = None,
    ) -> CandidateRecord:
        """Mark the candidate failed without raising."""
        self._failure = Failure(
            failure_class=FailureClass(failure_class), message=_scrub(message), shape_id=shape_id
        )
        return self

    def extension(self, key: str, data: dict[str, Any]) -> CandidateRecord:
        """Attach namespaced extra data (``vendor:name`` key)."""
        self._extensions[key] = data
        return self

    # ------------------------------------------------------------ finishing

    @property
    def validated(self) -> bool:
        """True while every shape recorded so far passed and nothing marked a failure."""
        return self._failure is None and self._first_failure is None

    @property
    def passed(self) -> bool:
        """True when the written packet passed."""
        return self.packet is not None and self.packet.status is Status.PASSED

    def _failure_from(self, exc: BaseException | None) -> Failure | None:
        if exc is not None:
            fc = classify_exception(exc)
            shape_id = getattr(exc, "shape_id", None)
            return Failure(
                failure_class=fc,
                message=_head(_describe(exc)),
                shape_id=shape_id if isinstance(shape_id, str) and shape_id else None,
                log_excerpt=_excerpt(_format_traceback(exc)),
            )
        if self._failure is not None:
            return self._failure
        if self._first_failure is not None:
            fc, msg, sid = self._first_failure
            return Failure(
                failure_class=fc,
                message=msg or f"shape {sid} did not match the reference",
                shape_id=sid,
            )
        return None

    def finish(self, exc: BaseException | None = None) -> EvidencePacket:
        """Build, identify and write the packet (once); returns it."""
        if self.packet is not None:
            return self.packet
        self.error = exc
        raised = f"; the block raised {_describe(exc)}" if exc is not None else ""
        try:
            packet, raw = identify(self._build(exc))
        except ValidationError as bad:
            # the harness handed us data the models refuse: record that, not a crash
            first = bad.errors()[0]
            why = f"the harness recorded invalid data: {first['msg']} at {first['loc']}"
            packet, raw = identify(self._build(InfraError(_head(why + raised)), minimal=True))
        except Exception as bad:  # noqa: BLE001 - every candidate yields a packet
            why = f"the recorder could not build the packet: {_describe(bad)}"
            packet, raw = identify(self._build(InfraError(_head(why + raised)), minimal=True))
        self.packet = packet
        self.location = self._rec._emit(packet, raw)
        return packet

    def _build(self, exc: BaseException | None, *, minimal: bool = False) -> EvidencePacket:
        rec = self._rec
        failure = self._failure_from(exc)
        status = Status.PASSED if failure is None else status_for(failure.failure_class)
        if minimal:
            # the fallback after bad harness data: only fields that cannot be refused
            name = self.name if isinstance(self.name, str) and self.name.strip() else "<unnamed>"
            kind = self._kind if self._kind in ("kernel", "serving") else "kernel"
            description = None
        else:
            kind, name, description = self._kind, self.name, self._description
        data = start_packet_data(
            subject_kind=kind,
            subject_name=name,
            description=description,
            status=status,
            created_at=rec.created_at,
            failure=failure,
            lineage=self._lineage,
            hardware=rec.environment.hardware,
            replay=rec.environment.replay(seeds=dict(self._seeds) or None),
        )
        if minimal:
            return EvidencePacket(**data)
        compile_ = self._compile
        if failure is not None and failure.failure_class is FC.COMPILE_ERROR:
            compile_ = (compile_ or Compile()).model_copy(
                update={"succeeded": False, "log_excerpt": failure.log_excerpt}
            )
        shapes = list(self._shapes)
        if failure is not None and failure.failure_class in _NEEDS_FAILED_SHAPE:
            shapes = _with_failed_shape(shapes, failure)
        validation = None
        if shapes:
            ok = all(s.passed for s in shapes)
            validation = Validation(
                verdict="passed" if ok else "failed",
                shapes=shapes,
                seeds=sorted(set(self._seeds.values())) or None,
                inputs_regenerated=self._inputs_regenerated,
            )
        timing = self._timing
        if timing is not None and timing.speedup is not None:
            if status is not Status.PASSED:
                timing = timing.model_copy(update={"speedup": None})  # no performance claim on failure
            elif self._kind == "kernel" and validation is None:
                # the speed of a kernel whose output was never checked is no evidence (KE404)
                note = "speedup not stated: no validation recorded"
                timing = timing.model_copy(
                    update={"speedup": None, "notes": f"{timing.notes}; {note}" if timing.notes else note}
                )
        wall = time.perf_counter() - self._started
        data.update(
            task=Task(**self._task) if self._task else None,
            compile=compile_,
            validation=validation,
            timing=timing,
            cost=Cost(wall_time=Duration(value=round(wall, 6), unit="s")),
            extensions=self._extensions or None,
        )
        return EvidencePacket(**data)


#: failure classes about the output, which a packet must back with a failed shape (KE406)
_NEEDS_FAILED_SHAPE = frozenset({FC.INCORRECT_SHAPE, FC.INCORRECT_DTYPE, FC.INCORRECT_NUMERICAL, FC.NAN_INF})


def _with_failed_shape(shapes: list[ShapeResult], failure: Failure) -> list[ShapeResult]:
    """The shape results, with the failure recorded as a failed shape when none failed yet.

    A correctness failure raised or declared without :meth:`CandidateRecord.check` (a
    ``FloatingPointError``, ``CandidateFailure("nan_inf", ...)``, ``c.fail(...)``) still
    needs a failed validation behind it: the failure's shape (or ``"unchecked"``) is marked
    failed with the failure's message.
    """
    if any(not s.passed for s in shapes):
        return shapes
    sid = failure.shape_id or "unchecked"
    for i, s in enumerate(shapes):
        if s.shape_id == sid:
            marked = s.model_copy(update={"passed": False, "message": failure.message})
            return [*shapes[:i], marked, *shapes[i + 1 :]]
    return [*shapes, ShapeResult(shape_id=sid, passed=False, message=failure.message)]


class Recorder:
    """Records one packet per candidate of a run, to a file, stream, folder or memory.

    ``out``: a folder (one JSON file per packet), a ``.json`` file (one packet), a
    ``.jsonl`` or ``.jsonl.zst`` stream (appended, survives a killed process), a
    :class:`~kernel_evidence.harness.sink.PacketSink`, or ``None``: then the
    ``KEVIDENCE_OUT`` environment variable names the output, and without it packets are
    kept in memory only (:attr:`packets`). When ``KEVIDENCE_OUT`` is set and ``out`` names
    another output, packets go to both (this is how ``kevidence replay --execute`` collects
    the packets of a replayed run). The environment is captured once, at creation.
    ``keep`` keeps every packet in :attr:`packets` (default: only when writing to memory).
    """

    def __init__(
        self,
        out: str | os.PathLike[str] | PacketSink | None = None,
        *,
        run_id: str | None = None,
        suppress: bool = True,
        created_at: str | None = None,
        environment: Environment | None = None,
        durable: bool = False,
        keep: bool | None = None,
        **task_defaults: Any,
    ) -> None:
        env_out = os.environ.get("KEVIDENCE_OUT") or None
        target = out if out is not None else env_out
        self.sink: PacketSink = MemorySink() if target is None else open_sink(target, durable=durable)
        if (
            env_out is not None
            and out is not None
            and not (isinstance(out, (str, os.PathLike)) and os.path.abspath(out) == os.path.abspath(env_out))
        ):
            # a replay (or a CI job) asked for the packets too: write them to both
            self.sink = TeeSink([self.sink, open_sink(env_out, durable=durable)])
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.suppress = suppress
        self.created_at = created_at
        self.environment = environment if environment is not None else capture_environment()
        self.task_defaults: dict[str, Any] = {k: v for k, v in task_defaults.items() if v is not None}
        self.keep = isinstance(self.sink, MemorySink) if keep is None else keep
        self.packets: list[EvidencePacket] = []
        #: ``passed`` or the failure class -> count, over every packet written
        self.histogram: Counter[str] = Counter()
        self.written = 0
        self._iteration = 0
        # candidates may be recorded from several threads: one packet written at a time
        self._lock = threading.Lock()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the output (closing twice is harmless)."""
        with self._lock:
            self.sink.close()

    def refresh_clocks(self) -> None:
        """Probe the device again, so later packets carry the clocks observed now.

        The environment is captured once, when the recorder is made; clocks drift with
        load and temperature. Call this between measurements (it runs NVML or a vendor
        tool, never inside a timed region).
        """
        from dataclasses import replace

        from .environment import capture_hardware

        self.environment = replace(
            self.environment, hardware=capture_hardware(self.environment.hardware.host)
        )

    def candidate(self, name: str, **kwargs: Any) -> CandidateRecord:
        """Start the record of one candidate (see :class:`CandidateRecord` for the calls).

        Keyword arguments: ``kind``, ``description``, ``candidate_id``, ``iteration`` (by
        default the running count), ``parent_packet_id``, ``relation``, ``suppress``,
        ``task`` and task fields (``operator=``, ``shapes=``, ...).
        """
        with self._lock:
            if kwargs.get("iteration") is None:
                kwargs["iteration"] = self._iteration
            self._iteration += 1
        return CandidateRecord(self, name, **kwargs)

    def record(self, packet: EvidencePacket) -> str:
        """Write a packet built elsewhere (its id is (re)computed)."""
        return self._emit(*identify(packet))

    def _emit(self, packet: EvidencePacket, raw: bytes) -> str:
        assert packet.packet_id is not None
        with self._lock:
            where = self.sink.write(packet.packet_id, raw)
            self.written += 1
            self.histogram[packet.failure.failure_class.value if packet.failure else packet.status.value] += 1
            if self.keep:
                self.packets.append(packet)
        return where
