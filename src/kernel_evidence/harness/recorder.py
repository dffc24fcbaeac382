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

import hashlib
import os
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone
from types import TracebackType
from typing import Any

import msgspec
from pydantic import ValidationError

from .._canonical import strip_nulls
from .._version import __version__
from ..models import (
    Compile,
    Cost,
    Duration,
    EvidencePacket,
    Failure,
    FailureClass,
    Lineage,
    Producer,
    Reference,
    ShapeCase,
    ShapeResult,
    Software,
    Status,
    Subject,
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
    :class:`InfraError`, ``KeyboardInterrupt``,         ``infra_error``
    ``SystemExit``, pydantic ``ValidationError``
    (bad harness data)
    ``SyntaxError``; a class named ``*CompileError``    ``compile_error``
    / ``*CompilationError`` (Triton, nvcc wrappers)
    ``TimeoutError``, ``subprocess.TimeoutExpired``     ``timeout``
    ``FloatingPointError`` (``np.errstate(all="raise")``)  ``nan_inf``
    anything else                                       ``runtime_error``
    ==================================================  ==================
    """
    if isinstance(exc, CandidateFailure):
        return exc.failure_class
    if isinstance(exc, (InfraError, KeyboardInterrupt, SystemExit, ValidationError)):
        return FC.INFRA_ERROR
    names = [c.__name__ for c in type(exc).__mro__]
    if isinstance(exc, SyntaxError) or any(n.endswith(("CompileError", "CompilationError")) for n in names):
        return FC.COMPILE_ERROR
    if isinstance(exc, TimeoutError) or "TimeoutExpired" in names:
        return FC.TIMEOUT
    if isinstance(exc, FloatingPointError):
        return FC.NAN_INF
    return FC.RUNTIME_ERROR


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
    pid = "sha256:" + hashlib.sha256(_sorted_encoder.encode(body)).hexdigest()
    data["packet_id"] = pid
    return packet.model_copy(update={"packet_id": pid}), _sorted_encoder.encode(data)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _excerpt(text: str, cap: int = _LOG_CAP) -> str:
    return text if len(text) <= cap else "...\n" + text[-cap:]


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
        self.name = name
        self._kind = kind
        self._description = description
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
            log_excerpt=_excerpt(log) if log else None,
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
        failed shape decides the packet's failure class.
        """
        if isinstance(shape_id, ShapeResult):
            result = shape_id
        else:
            if passed is None:
                raise TypeError("shape_result() needs passed=True or passed=False")
            result = ShapeResult(shape_id=shape_id, passed=passed, message=message, **fields)
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
        """Record the timing (and the baseline measured in the same session, if any)."""
        if isinstance(measurement, Timing):
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
        self._failure = Failure(failure_class=FailureClass(failure_class), message=message, shape_id=shape_id)
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
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            return Failure(
                failure_class=fc,
                message=_excerpt(f"{type(exc).__name__}: {exc}", 1000),
                shape_id=getattr(exc, "shape_id", None),
                log_excerpt=_excerpt(text),
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
        try:
            packet = self._build(exc)
        except ValidationError as bad:
            # the harness handed us data the models refuse: record that, not a crash
            packet = self._build(
                InfraError(
                    f"the harness recorded invalid data: {bad.errors()[0]['msg']} at {bad.errors()[0]['loc']}"
                ),
                minimal=True,
            )
        packet, raw = identify(packet)
        self.packet = packet
        self.location = self._rec._emit(packet, raw)
        return packet

    def _build(self, exc: BaseException | None, *, minimal: bool = False) -> EvidencePacket:
        rec = self._rec
        failure = self._failure_from(exc)
        status = Status.PASSED if failure is None else status_for(failure.failure_class)
        subject = Subject(kind=self._kind, name=self.name, description=self._description)
        data: dict[str, Any] = {
            "schema_version": "0.1",
            "created_at": rec.created_at or _now(),
            "producer": Producer(name="kernel-evidence", version=__version__),
            "subject": subject,
            "status": status,
            "failure": failure,
            "lineage": self._lineage,
            "hardware": rec.environment.hardware,
            "replay": rec.environment.replay(seeds=dict(self._seeds) or None),
        }
        if minimal:
            return EvidencePacket(**data)
        compile_ = self._compile
        if failure is not None and failure.failure_class is FC.COMPILE_ERROR:
            compile_ = (compile_ or Compile()).model_copy(
                update={"succeeded": False, "log_excerpt": failure.log_excerpt}
            )
        validation = None
        if self._shapes:
            ok = all(s.passed for s in self._shapes)
            validation = Validation(
                verdict="passed" if ok else "failed",
                shapes=self._shapes,
                seeds=sorted(set(self._seeds.values())) or None,
                inputs_regenerated=self._inputs_regenerated,
            )
        timing = self._timing
        if timing is not None and status is not Status.PASSED and timing.speedup is not None:
            timing = timing.model_copy(update={"speedup": None})  # no performance claim on failure
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

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the output."""
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
        if kwargs.get("iteration") is None:
            kwargs["iteration"] = self._iteration
        self._iteration += 1
        return CandidateRecord(self, name, **kwargs)

    def record(self, packet: EvidencePacket) -> str:
        """Write a packet built elsewhere (its id is (re)computed)."""
        return self._emit(*identify(packet))

    def _emit(self, packet: EvidencePacket, raw: bytes) -> str:
        assert packet.packet_id is not None
        where = self.sink.write(packet.packet_id, raw)
        self.written += 1
        self.histogram[packet.failure.failure_class.value if packet.failure else packet.status.value] += 1
        if self.keep:
            self.packets.append(packet)
        return where
