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
import secrets
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal

import msgspec
from pydantic import ValidationError

from .._codec.canonical import strip_nulls
from ..adapters._envelope import start_packet_data
from ..errors import MissingExtra
from ..models import (
    DEFENCE_CHECKS,
    CaptureOf,
    Compile,
    Conditions,
    Cost,
    Defence,
    Duration,
    EvidencePacket,
    Failure,
    FailureClass,
    Lineage,
    ProfilerCapture,
    Reference,
    ServingTask,
    ShapeCase,
    ShapeResult,
    Software,
    Status,
    Task,
    Timing,
    TolerancePolicy,
    Validation,
    Work,
)
from ._integrity import put_back_time_functions
from .environment import Environment, capture_environment
from .sink import MemorySink, PacketSink, TeeSink, open_sink
from .timer import Measurement, Timer

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


ShapesArg = Sequence[ShapeCase | Mapping[str, Any]]
Relation = Literal["mutation", "replay", "rerun", "baseline", "other"]


def _task_data(**given: Any) -> dict[str, Any]:
    """Task fields as plain data (models dumped, sequences listed), None values left out."""
    out: dict[str, Any] = {}
    for key, value in given.items():
        if value is None:
            continue
        if isinstance(value, Task):
            out.update(value.model_dump(exclude_none=True))
            continue
        if hasattr(value, "model_dump"):
            value = value.model_dump(exclude_none=True)
        elif key in ("shapes", "dtypes"):
            value = [v.model_dump(exclude_none=True) if hasattr(v, "model_dump") else v for v in value]
        out[key] = value
    return out


class CandidateRecord:
    """Builds the packet of one candidate; a context manager, or call :meth:`finish` yourself.

    Made by :meth:`Recorder.candidate` (its parameters are described there). After the
    block, :attr:`packet` is the written packet, :attr:`location` where it went,
    :attr:`error` the exception raised inside the block (if any).

    Besides the packet's categories it keeps the **defence record**: which anti-gaming
    checks ran for this candidate and what they found (:meth:`timing` with a
    :class:`Measurement` adds the timer's: fresh inputs, cache flush, timer integrity;
    :meth:`time_and_check` adds ``outputs_checked_after_timing``, :meth:`check_unseen`
    ``unseen_inputs``; :meth:`defence` any other). A failed defence makes the packet
    ``failed`` with class ``reward_hack``.
    """

    def __init__(
        self,
        recorder: Recorder,
        name: str,
        *,
        kind: Literal["kernel", "serving"] = "kernel",
        description: str | None = None,
        candidate_id: str | None = None,
        iteration: int | None = None,
        parent_packet_id: str | None = None,
        relation: Relation | None = None,
        suppress: bool | None = None,
        task: Task | None = None,
        task_fields: Mapping[str, Any] | None = None,
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
        base.update(_task_data(task=task, **(task_fields or {})))
        self._task = base
        self._compile: Compile | None = None
        self._shapes: list[ShapeResult] = []
        self._first_failure: tuple[FailureClass, str | None, str | None] | None = None
        self._seeds: dict[str, int] = {}
        self._inputs_regenerated: bool | None = None
        self._timing: Timing | None = None
        self._defences: dict[str, Defence] = {}
        self._profiles: list[ProfilerCapture] = []
        self._extensions: dict[str, dict[str, Any]] = {}
        self._failure: Failure | None = None
        self._started = time.perf_counter()
        put_back_time_functions()  # a patch left by code outside this candidate is not its doing
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
            sides = [measurement] if baseline is None else [measurement, baseline]
            for found in zip(*(m.defences() for m in sides), strict=True):
                self._defences[found[0].check] = _combined(found)
        return self

    def defence(
        self,
        check: str,
        outcome: Literal["passed", "failed", "skipped", "not_applicable"],
        *,
        detail: str | None = None,
        tool: str | None = None,
    ) -> CandidateRecord:
        """Record an anti-gaming check the harness ran itself (``check`` from
        :data:`~kernel_evidence.models.DEFENCE_CHECKS`), e.g. ``hidden_workload`` when the
        seed was drawn after the candidate was built, or ``candidate_kernel_profiled`` once
        a profile shows the candidate's own kernel. ``failed`` fails the candidate
        (``reward_hack``)."""
        if check not in DEFENCE_CHECKS:
            raise ValueError(f"expected one of {', '.join(sorted(DEFENCE_CHECKS))}, got `{check}`")
        self._defences[check] = Defence(check=check, outcome=outcome, detail=_scrub(detail), tool=tool)
        return self

    def time_and_check(
        self,
        timer: Timer,
        candidate: Callable[..., Any],
        reference: Callable[..., Any],
        *,
        setup: Callable[[], Any],
        shape_id: str,
        baseline: Callable[..., Any] | None = None,
        provider: str | None = None,
        version: str | None = None,
        call: str | None = None,
        atol: float = 1e-5,
        rtol: float = 1e-5,
        required_matched_ratio: float = 1.0,
        checked_calls: int = 3,
    ) -> tuple[Measurement, Measurement | None]:
        """Time the candidate (interleaved with ``baseline`` when given), record the timing,
        then check the outputs of the timed calls themselves against ``reference``.

        ``checked_calls`` timed calls, chosen at random while timing, keep a copy of their
        inputs (taken before the call) and of their output as it was the moment the clock
        stopped; after timing, ``reference(*inputs)`` is compared with each (``atol``,
        ``rtol``, ``required_matched_ratio`` as in :meth:`check`). Work deferred past the
        timed window (another stream, a thread, a lazy or future result) leaves an
        unfinished or unmaterialised output there, and fails the
        ``outputs_checked_after_timing`` defence: the packet fails as ``reward_hack``.
        ``provider``, ``version`` and ``call`` name the baseline, as in :meth:`timing`.
        Returns ``(candidate, baseline)`` measurements (baseline None without one).
        """
        from ._check import compare_arrays, materialized

        if baseline is not None:
            cand, base = timer.compare(candidate, baseline, setup=setup, keep_outputs=checked_calls)
        else:
            cand, base = timer.measure(candidate, setup=setup, keep_outputs=checked_calls), None
        self.timing(cand, baseline=base, provider=provider, version=version, call=call, shape_id=shape_id)
        if not cand.kept:
            self.defence(
                "outputs_checked_after_timing", "skipped", detail="no timed call kept (checked_calls=0)"
            )
            return cand, base
        problems = []
        for kept in cand.kept:
            where = f"timed call {kept.index + 1}"
            if not materialized(kept.output):
                problems.append(
                    f"{where} returned a {type(kept.output).__name__}, not its values: its work can run after"
                    " the timer stopped"
                )
                continue
            result, _ = compare_arrays(
                shape_id, kept.output, reference(*kept.inputs),
                atol=atol, rtol=rtol, required_matched_ratio=required_matched_ratio,
            )  # fmt: skip
            if not result.passed:
                problems.append(f"the output of {where}, as it was when the clock stopped: {result.message}")
        calls = ", ".join(str(k.index + 1) for k in cand.kept)
        self.defence(
            "outputs_checked_after_timing",
            "failed" if problems else "passed",
            detail="; ".join(problems)[:2000]
            if problems
            else f"the outputs of timed calls {calls} of {cand.repeats} (chosen at random), copied when the"
            f" clock stopped, matched the reference (atol={atol:g}, rtol={rtol:g}) after timing",
            tool="kernel-evidence CandidateRecord.time_and_check",
        )
        return cand, base

    def check_unseen(
        self,
        fn: Callable[..., Any],
        reference: Callable[..., Any],
        inputs: Callable[[int], Any],
        *,
        draws: int = 2,
        shape_id: str = "unseen",
        atol: float = 1e-5,
        rtol: float = 1e-5,
        required_matched_ratio: float = 1.0,
    ) -> bool:
        """Re-run the candidate on inputs it has not seen, and record ``unseen_inputs``.

        ``inputs(seed)`` makes the arguments of one call from a seed; ``draws`` seeds are
        drawn now from the operating system's random source, so no candidate could know
        them while it was built or validated. Each draw's output must match
        ``reference`` on a copy of the same inputs, and two draws must not give the same
        output while their references differ: a candidate that serves outputs cached by an
        input fingerprint (or by the seeds it was validated on) fails, and the packet fails
        as ``reward_hack``. Returns whether the check passed. The seeds are in the detail,
        so the check can be repeated.
        """
        from ._check import compare_arrays, materialized, same_values, snapshot

        if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
            raise ValueError(f"expected draws to be an int >= 1, got {draws!r}")
        source = secrets.SystemRandom()
        seeds: list[int] = []
        while len(seeds) < draws:
            seed = source.randrange(2**31)
            if seed not in seeds:
                seeds.append(seed)
        problems: list[str] = []
        seen: list[tuple[int, Any, Any]] = []
        for seed in seeds:
            made = inputs(seed)
            args = made if isinstance(made, tuple) else (made,)
            before = snapshot(args)
            out = snapshot(fn(*args))
            expected = reference(*before)
            if not materialized(out):
                problems.append(f"seed {seed}: returned a {type(out).__name__}, not its values")
                continue
            result, _ = compare_arrays(
                shape_id, out, expected, atol=atol, rtol=rtol, required_matched_ratio=required_matched_ratio
            )
            if not result.passed:
                problems.append(f"seed {seed}: {result.message}")
            for other_seed, other_out, other_expected in seen:
                if same_values(out, other_out) and not same_values(expected, other_expected):
                    problems.append(
                        f"seeds {other_seed} and {seed}: the same output for different inputs (a cached result)"
                    )
            seen.append((seed, out, expected))
        listed = ", ".join(str(s) for s in seeds)
        self.defence(
            "unseen_inputs",
            "failed" if problems else "passed",
            detail="; ".join(problems)[:2000]
            if problems
            else f"{draws} re-runs on inputs from seeds drawn after the candidate was built ({listed})"
            f" matched the reference (atol={atol:g}, rtol={rtol:g})",
            tool="kernel-evidence CandidateRecord.check_unseen",
        )
        return not problems

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

    def profile(
        self,
        capture: ProfilerCapture,
        *,
        side: Literal["candidate", "baseline", "reference", "other"] | None = None,
        shape_id: str | None = None,
        expected_kernels: Sequence[str] | None = None,
    ) -> CandidateRecord:
        """Attach a profiler capture (``profiler``), saying what it is of (``capture.of``:
        ``side``, ``shape_id``, ``expected_kernels`` override what it says already).

        A capture of the candidate that names the kernels the candidate is expected to
        launch runs ``candidate_kernel_profiled``: passed when a kernel of the capture
        contains one of the expected names, failed when none does (the time was spent in
        some other kernel, such as only a library call: the packet fails as
        ``reward_hack``). Without expected kernels the check stays ``skipped``.
        """
        given = {"side": side, "shape_id": shape_id, "expected_kernels": list(expected_kernels or []) or None}
        base = capture.of.model_dump(exclude_none=True) if capture.of is not None else {}
        base.update({k: v for k, v in given.items() if v is not None})
        if base:
            capture = capture.model_copy(update={"of": CaptureOf(**base)})
        self._profiles.append(capture)
        of = capture.of
        if of is None or of.side != "candidate" or not of.expected_kernels:
            return self
        names = [k.name for k in capture.kernels or []] + [
            k.raw_name for k in capture.kernels or [] if k.raw_name
        ]
        found = sorted({e for e in of.expected_kernels for n in names if e in n})
        seen = ", ".join(sorted(set(names))[:5]) or "no kernels"
        self.defence(
            "candidate_kernel_profiled",
            "passed" if found else "failed",
            detail=(
                f"{capture.tool} capture of the candidate shows {', '.join(found)}"
                if found
                else f"none of the expected kernels ({', '.join(of.expected_kernels)}) in the {capture.tool}"
                f" capture of the candidate, which shows {seen}"
            )[:2000],
            tool=capture.tool,
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
        failed = [d for d in self._defences.values() if d.outcome == "failed"]
        if exc is not None:
            fc = classify_exception(exc)
            if fc is not FC.REWARD_HACK and any(d.check != "cache_flush" for d in failed):
                # a defence failed before the block raised: the candidate was caught gaming
                # first (any other class beside a failed defence is laundering, KE403)
                return Failure(
                    failure_class=FC.REWARD_HACK,
                    message=_head(
                        "; ".join(f"defence {d.check} failed: {d.detail or 'no detail'}" for d in failed)
                        + f"; then {_describe(exc)}"
                    ),
                    log_excerpt=_excerpt(_format_traceback(exc)),
                )
            shape_id = getattr(exc, "shape_id", None)
            return Failure(
                failure_class=fc,
                message=_head(_describe(exc)),
                shape_id=shape_id if isinstance(shape_id, str) and shape_id else None,
                log_excerpt=_excerpt(_format_traceback(exc)),
            )
        if self._failure is not None:
            return self._failure
        if failed:
            return Failure(
                failure_class=FC.REWARD_HACK,
                message=_head(
                    "; ".join(f"defence {d.check} failed: {d.detail or 'no detail'}" for d in failed)
                ),
            )
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
        self._clock_left_patched()
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
        timing = self._with_workload(timing)
        wall = time.perf_counter() - self._started
        data.update(
            defences=self._defence_record(timing),
            task=Task(**self._task) if self._task else None,
            compile=compile_,
            validation=validation,
            timing=timing,
            cost=Cost(wall_time=Duration(value=round(wall, 6), unit="s")),
            extensions=self._extensions or None,
            profiler=self._profiles or None,
        )
        return EvidencePacket(**data)

    def _clock_left_patched(self) -> None:
        """Fail ``timer_integrity`` when the block leaves a clock function replaced (a patch
        made while validating or re-running, outside any measurement), and put it back so
        the next candidate is timed with the real clock."""
        replaced = put_back_time_functions()
        if not replaced:
            return
        found = f"{', '.join(replaced)} replaced when the candidate's block ended (put back)"
        before = self._defences.get("timer_integrity")
        if before is not None and before.outcome == "failed" and before.detail:
            found = f"{before.detail}; {found}"
        self.defence("timer_integrity", "failed", detail=found[:2000], tool="kernel-evidence Recorder")

    def _with_workload(self, timing: Timing | None) -> Timing | None:
        """``timing`` with the workload and device filled into both sides' conditions where
        they are missing: dtypes from the task, dims from the task's shape of that id, the
        device from the environment."""
        if timing is None:
            return None
        hw = self._rec.environment.hardware
        shapes = self._task.get("shapes") or []
        known: dict[str, Any] = {
            "dtypes": self._task.get("dtypes"),
            "device": hw.device,
            "device_id": hw.device_id,
        }

        def fill(c: Conditions | None) -> Conditions | None:
            if c is None:
                return None
            given = dict(known)
            for shape in shapes:
                if isinstance(shape, Mapping) and shape.get("id") == c.shape_id and shape.get("dims"):
                    given["dims"] = shape["dims"]
            update = {k: v for k, v in given.items() if v is not None and getattr(c, k) is None}
            return c.model_copy(update=update) if update else c

        update: dict[str, Any] = {"conditions": fill(timing.conditions)}
        if timing.baseline is not None and timing.baseline.conditions is not None:
            update["baseline"] = timing.baseline.model_copy(
                update={"conditions": fill(timing.baseline.conditions)}
            )
        return timing.model_copy(update=update)

    def _defence_record(self, timing: Timing | None) -> list[Defence] | None:
        """Every named check, in registry order: as recorded, or ``skipped`` with what would
        have run it. None for a packet without timing where no check ran (it claims no speed
        that a defence would protect)."""
        if timing is None and not self._defences:
            return None
        return [
            self._defences.get(check) or Defence(check=check, outcome="skipped", detail=_NOT_RUN[check])
            for check in DEFENCE_CHECKS
        ]


#: why a check the harness did not run was skipped, and what would run it
_NOT_RUN = {
    "fresh_inputs": "not run: the timing was not measured by the harness's Timer",
    "outputs_checked_after_timing": "not run: CandidateRecord.time_and_check checks the timed calls' outputs",
    "timer_integrity": "not run: the timing was not measured by the harness's Timer",
    "unseen_inputs": "not run: CandidateRecord.check_unseen re-runs the candidate on unseen inputs",
    "candidate_kernel_profiled": "no capture of the candidate naming its expected kernels was attached"
    " (CandidateRecord.profile)",
    "hidden_workload": "the harness did not say that the workload or seed was hidden from the candidate",
    "cache_flush": "not run: the timing was not measured by the harness's Timer",
}
_ORDER = {"failed": 0, "skipped": 1, "not_applicable": 2, "passed": 3}


def _combined(found: Sequence[Defence]) -> Defence:
    """One defence from the candidate's and the baseline's: the worse outcome; both details
    when they differ."""
    if len(found) == 1 or found[0] == found[1]:
        return found[0]
    cand, base = found
    worst = min(found, key=lambda d: _ORDER[d.outcome])
    detail = (
        cand.detail if cand.detail == base.detail else f"candidate: {cand.detail}; baseline: {base.detail}"
    )
    return worst.model_copy(update={"detail": detail[:2000] if detail else None})


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
    another output, packets go to both (a CI job collecting them); when
    ``KEVIDENCE_PARENT_PACKET_ID`` is set too (``kevidence replay --execute`` runs the
    command), they go to ``KEVIDENCE_OUT`` only, so a replay never appends to the log of the
    run it replays.

    Parameters:

    * ``run_id``: ``lineage.run_id`` of every packet (default: a new random id).
    * ``suppress``: an exception in a candidate block is recorded, then suppressed (the
      default) or re-raised; a candidate can override it.
    * ``created_at``: a fixed ``created_at`` (RFC 3339 UTC) for reproducible packets;
      default: the time each packet is made.
    * ``environment``: the machine and code to record; default: captured once, now
      (:func:`~kernel_evidence.harness.capture_environment`).
    * ``durable``: ``fsync`` after every packet.
    * ``keep``: keep every packet in :attr:`packets` (default: only when writing to memory).
    * task defaults for every candidate (a candidate's own values win): ``task`` (a whole
      :class:`~kernel_evidence.models.Task`), ``operator``, ``workload``, ``description``
      (of the task), ``shapes``, ``dtypes``, ``reference``, ``tolerance``, ``work``,
      ``serving``; models or their JSON data.
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
        task: Task | None = None,
        operator: str | None = None,
        workload: str | None = None,
        description: str | None = None,
        shapes: ShapesArg | None = None,
        dtypes: Sequence[str] | None = None,
        reference: Reference | Mapping[str, Any] | None = None,
        tolerance: TolerancePolicy | Mapping[str, Any] | None = None,
        work: Work | Mapping[str, Any] | None = None,
        serving: ServingTask | Mapping[str, Any] | None = None,
    ) -> None:
        env_out = os.environ.get("KEVIDENCE_OUT") or None
        if env_out is not None and os.environ.get("KEVIDENCE_PARENT_PACKET_ID"):
            # run by `kevidence replay --execute`: the replay's packets go to its own output
            # only, never appended to the log of the run being replayed
            out = None
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
        self.task_defaults: dict[str, Any] = _task_data(
            task=task, operator=operator, workload=workload, description=description, shapes=shapes,
            dtypes=dtypes, reference=reference, tolerance=tolerance, work=work, serving=serving,
        )  # fmt: skip
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

    def candidate(
        self,
        name: str,
        *,
        kind: Literal["kernel", "serving"] = "kernel",
        description: str | None = None,
        candidate_id: str | None = None,
        iteration: int | None = None,
        parent_packet_id: str | None = None,
        relation: Relation | None = None,
        suppress: bool | None = None,
        task: Task | None = None,
        operator: str | None = None,
        workload: str | None = None,
        shapes: ShapesArg | None = None,
        dtypes: Sequence[str] | None = None,
        reference: Reference | Mapping[str, Any] | None = None,
        tolerance: TolerancePolicy | Mapping[str, Any] | None = None,
        work: Work | Mapping[str, Any] | None = None,
        serving: ServingTask | Mapping[str, Any] | None = None,
    ) -> CandidateRecord:
        """Start the record of one candidate (see :class:`CandidateRecord` for the calls).

        * ``name``: ``subject.name``; ``kind``: ``kernel`` or ``serving``; ``description``:
          ``subject.description`` (the candidate's, not the task's).
        * lineage: ``candidate_id`` (default: ``name``), ``iteration`` (default: the running
          count of this recorder), ``parent_packet_id`` and its ``relation``
          (``mutation``, ``replay``, ``rerun``, ``baseline``, ``other``).
        * ``suppress``: this candidate's choice over the recorder's (see :class:`Recorder`).
        * the task, over the recorder's defaults: ``task`` (a whole
          :class:`~kernel_evidence.models.Task`), then ``operator``, ``workload``,
          ``shapes``, ``dtypes``, ``reference``, ``tolerance``, ``work``, ``serving``.
        """
        with self._lock:
            if iteration is None:
                iteration = self._iteration
            self._iteration += 1
        fields = {
            "operator": operator, "workload": workload, "shapes": shapes, "dtypes": dtypes,
            "reference": reference, "tolerance": tolerance, "work": work, "serving": serving,
        }  # fmt: skip
        return CandidateRecord(
            self,
            name,
            kind=kind,
            description=description,
            candidate_id=candidate_id,
            iteration=iteration,
            parent_packet_id=parent_packet_id,
            relation=relation,
            suppress=suppress,
            task=task,
            task_fields=fields,
        )

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
