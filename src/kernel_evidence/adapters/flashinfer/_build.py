"""One packet per evaluated trace line.

The parts many lines share (the hardware and packages of one environment, a definition's
reference and dtypes, a solution's compile record) are built once per file and reused: a
trace of 100,000 lines names a handful of environments and solutions.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from typing import Any

from ..._iso import parse_iso
from ...devices import canonical_id
from ...models import (
    Artifact,
    Baseline,
    ByteSize,
    Compile,
    Conditions,
    EvidencePacket,
    Failure,
    FailureClass,
    Hardware,
    Lineage,
    Reference,
    Replay,
    ShapeCase,
    ShapeResult,
    Software,
    Speedup,
    Stats,
    Task,
    TensorSpec,
    Timing,
    TolerancePolicy,
    Validation,
)
from .._device import vendor_of
from .._envelope import start_packet
from ._io import Correctness, Environment, TraceLine
from ._side import Definition, RunSettings, SideIndex, Solution

__all__ = ["FileState", "LineBuilder", "STATUSES", "vendor_of"]

#: characters of a failed line's log kept in ``failure.log_excerpt`` (its end)
LOG_EXCERPT_CHARS = 4000

_CUPTI_MISSING = "Falling back to CUDA events"


def _load_statuses() -> dict[str, dict[str, str]]:
    from ..._resources import load_toml

    table = load_toml("flashinfer-trace.toml")["statuses"]
    return {str(k): {str(a): str(b) for a, b in v.items()} for k, v in table.items()}


#: evaluation.status -> {status, failure_class, validation, nan_inf} (adapters/flashinfer-trace.toml)
STATUSES = _load_statuses()


def _utc(ts: str | float, zone: tzinfo | None) -> str | None:
    """``ts`` (ISO 8601, or seconds since the epoch) as an RFC 3339 UTC time; None when it is
    not one, or names no zone and ``zone`` is None."""
    try:
        dt = datetime.fromtimestamp(ts, timezone.utc) if isinstance(ts, (int, float)) else parse_iso(ts)
    except (ValueError, OverflowError, OSError):
        return None
    if dt.tzinfo is None:
        if zone is None:
            return None
        dt = dt.replace(tzinfo=zone)
    dt = dt.astimezone(timezone.utc)
    frac = f".{dt.microsecond:06d}".rstrip("0") if dt.microsecond else ""
    return f"{dt:%Y-%m-%dT%H:%M:%S}{frac}Z"


def _error_value(v: float | str | None) -> tuple[float | None, str | None]:
    """(the finite error value, or the non-finite spelling the file used)."""
    if v is None:
        return None, None
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return None, v
        if math.isfinite(f) and f >= 0:
            return f, None
        return None, v
    if math.isfinite(v) and v >= 0:
        return float(v), None
    return None, repr(v)


def _seen(flag: bool | None, abs_raw: str | None, rel_raw: str | None, word: str) -> bool | None:
    """NaN (or Inf) in the outputs: the file's flag, or an error value that is ``word``."""
    if any(raw is not None and word in raw.lower() for raw in (abs_raw, rel_raw)):
        return True
    return flag


def _name(v: str | dict[str, Any] | None) -> str | None:
    """A definition's or solution's name: the string, or an embedded object's ``name``."""
    if isinstance(v, dict):
        v = v.get("name")
    return v if isinstance(v, str) and v.strip() else None


def _finite_ms(v: float | None) -> float | None:
    return float(v) if v is not None and math.isfinite(v) and v >= 0 else None


@dataclass
class FileState:
    """What one trace file says beyond its lines, and what was met while reading it."""

    path: str
    root: str | None
    run: RunSettings | None
    method: str
    method_note: str
    workload_only: int = 0
    naive_timestamps: int = 0
    unprofiled_reference: int = 0
    unknown_status: dict[str, int] = field(default_factory=dict)
    packets: int = 0
    #: the file's name (not its path: the same file read from anywhere gives the same packets)
    name: str = ""

    def __post_init__(self) -> None:
        self.name = os.path.basename(self.path)


@dataclass
class LineBuilder:
    """Builds the packets of trace lines, sharing what lines have in common."""

    created_at: str
    side: SideIndex
    zone: tzinfo | None
    warnings: list[str]
    _hardware: dict[Any, tuple[Hardware | None, dict[str, str] | None]] = field(default_factory=dict)
    _reference: dict[str, Reference] = field(default_factory=dict)
    _compile: dict[tuple[str, bool | None], Compile] = field(default_factory=dict)
    _missing: set[str] = field(default_factory=set)
    _replays: dict[int, Replay] = field(default_factory=dict)
    _lineages: dict[str, Lineage] = field(default_factory=dict)
    _workloads: dict[Any, tuple[Task, Conditions]] = field(default_factory=dict)
    _baselines: dict[Any, Baseline] = field(default_factory=dict)
    #: workload-only lines met in every file read so far
    workload_only: int = 0

    # ------------------------------------------------------------------ shared parts

    def environment(self, env: Environment | None) -> tuple[Hardware | None, dict[str, str] | None]:
        if env is None:
            return None, None
        libs = env.libs or {}
        name = env.hardware if env.hardware is not None else env.device
        key = (name, tuple(sorted((str(k), str(v)) for k, v in libs.items())))
        hit = self._hardware.get(key)
        if hit is not None:
            return hit
        packages = {k: v for k, v in key[1] if k} or None
        hw: Hardware | None = None
        if name and name.strip():
            runtime = None
            for lib, label in (("cuda", "CUDA"), ("rocm", "ROCm"), ("hip", "HIP")):
                version = (packages or {}).get(lib)
                if version:
                    runtime = Software(name=label, version=version)
                    break
            hw = Hardware(vendor=vendor_of(name), device=name, device_id=canonical_id(name), runtime=runtime)
        self._hardware[key] = (hw, packages)
        return hw, packages

    def reference(self, name: str, d: Definition | None) -> Reference:
        hit = self._reference.get(name)
        if hit is None:
            source = None
            kind = None
            if d is not None and d.reference is not None:
                body = d.reference.encode("utf-8", "surrogatepass")
                source = Artifact(
                    kind="source",
                    name=f"{name}.reference.py",
                    sha256="sha256:" + hashlib.sha256(body).hexdigest(),
                    size=ByteSize(value=float(len(body)), unit="B"),
                    media_type="text/x-python",
                )
                kind = "torch_eager" if "torch" in d.reference else "other"
            hit = self._reference[name] = Reference(name=f"{name}.reference", kind=kind, source=source)
        return hit

    def compile(self, sol: Solution | None, succeeded: bool | None, log: str | None) -> Compile | None:
        if sol is None:
            if succeeded is False:
                return Compile(succeeded=False, log_excerpt=log[-LOG_EXCERPT_CHARS:] if log else None)
            return None
        key = (sol.name, succeeded)
        hit = self._compile.get(key)
        if hit is None:
            hit = self._compile[key] = Compile(
                language=sol.language,
                source_digest=sol.digest,
                succeeded=succeeded,
                artifacts=[
                    Artifact(
                        kind="source",
                        name=s.path,
                        sha256=s.sha256,
                        size=ByteSize(value=float(s.size), unit="B"),
                    )
                    for s in sol.sources
                ]
                or None,
            )
        if succeeded is False and log:
            return hit.model_copy(update={"log_excerpt": log[-LOG_EXCERPT_CHARS:]})
        return hit

    def _lookup_definition(self, name: str, fs: FileState) -> Definition | None:
        d = self.side.definitions.get(name)
        if d is None and ("d:" + name) not in self._missing:
            self._missing.add("d:" + name)
            self.warnings.append(
                f"{fs.path}: definition `{name}` not found (give its JSON as an input, or read the trace "
                "inside its dataset folder): no operator, dtypes, tensor shapes or reference source"
            )
        return d

    def _lookup_solution(self, name: str | None, fs: FileState) -> Solution | None:
        if name is None:
            return None
        s = self.side.solutions.get(name)
        if s is None and ("s:" + name) not in self._missing:
            self._missing.add("s:" + name)
            self.warnings.append(
                f"{fs.path}: solution `{name}` not found (give its JSON as an input, or read the trace "
                "inside its dataset folder): its sources are not digested"
            )
        return s

    # ------------------------------------------------------------------ one line

    def build(self, t: TraceLine, lineno: int, fs: FileState) -> EvidencePacket | None:
        """The packet of line ``lineno``; None (and a count in ``fs``) for a line that is not
        a measurement (workload only) or has a status this adapter does not know."""
        ev = t.evaluation
        if ev is None:
            fs.workload_only += 1
            return None
        raw_status = ev.status or ""
        norm = raw_status.upper()
        spec = STATUSES.get(norm)
        if spec is None:
            fs.unknown_status[raw_status] = fs.unknown_status.get(raw_status, 0) + 1
            return None
        def_name = _name(t.definition)
        sol_name = _name(t.solution)
        definition = def_name or "unnamed definition"
        log = ev.log if isinstance(ev.log, str) else None
        wl = t.workload
        uuid = str(wl.uuid) if wl is not None and wl.uuid not in (None, "") else f"line {lineno}"
        d = self._lookup_definition(definition, fs) if def_name else None
        sol = self._lookup_solution(sol_name, fs)
        hw, packages = self.environment(ev.environment)
        tol = wl.tolerance if wl is not None else None
        task, cond = self._workload(definition, d, t, uuid, hw, fs)

        status = spec["status"]
        failure = None
        fclass = spec.get("failure_class")
        nan_inf = self._nan_inf(ev.correctness)
        if fclass is not None:
            if nan_inf and spec.get("nan_inf"):
                fclass = spec["nan_inf"]
            log_file = ev.log_file if isinstance(ev.log_file, str) and ev.log_file else None
            failure = Failure(
                failure_class=FailureClass(fclass),
                message=f"evaluation status {raw_status}" + (f" (log file {log_file})" if log_file else ""),
                shape_id=uuid,
                log_excerpt=log[-LOG_EXCERPT_CHARS:] if log else None,
            )
        validation = self._validation(spec.get("validation", "none"), ev.correctness, tol, uuid, raw_status)
        timing = self._timing(t, fs, cond, packages, status == "passed", definition)

        measured_at = None
        if ev.timestamp is not None and ev.timestamp != "":
            measured_at = _utc(ev.timestamp, self.zone)
            if measured_at is None:
                fs.naive_timestamps += 1
        succeeded: bool | None = None
        if norm == "COMPILE_ERROR":
            succeeded = False
        elif norm in ("PASSED", "INCORRECT_NUMERICAL", "INCORRECT_SHAPE", "INCORRECT_DTYPE"):
            succeeded = True
        replay = self._replay(t, fs, uuid, packages, definition, sol_name)
        fs.packets += 1
        return start_packet(
            subject_kind="kernel",
            subject_name=definition,
            description=f"solution {sol_name or '(unnamed)'} on workload {uuid} ({fs.name} line {lineno})",
            status=status,
            created_at=self.created_at,
            measured_at=measured_at,
            failure=failure,
            lineage=self._lineage(sol_name),
            task=task,
            compile=self.compile(sol, succeeded, log),
            validation=validation,
            timing=timing,
            hardware=hw,
            replay=replay,
        )

    def _lineage(self, solution: str | None) -> Lineage | None:
        if not solution:
            return None
        hit = self._lineages.get(solution)
        if hit is None:
            hit = self._lineages[solution] = Lineage(candidate_id=solution)
        return hit

    def _workload(
        self,
        definition: str,
        d: Definition | None,
        t: TraceLine,
        uuid: str,
        hw: Hardware | None,
        fs: FileState,
    ) -> tuple[Task, Conditions]:
        """The task and the timing conditions of one workload, shared by every solution
        evaluated on it (a trace holds each workload once per solution)."""
        wl = t.workload
        axes = tuple(wl.axes.items()) if wl is not None and wl.axes else ()
        tol = wl.tolerance if wl is not None else None
        tol_key = (tol.max_atol, tol.max_rtol, tol.required_matched_ratio) if tol is not None else None
        key = (definition, uuid, axes, tol_key, id(hw), fs.method, id(fs.run))
        hit = self._workloads.get(key)
        if hit is not None:
            return hit
        dims: dict[str, int] = dict(d.const_axes) if d is not None else {}
        dims.update(axes)
        dtypes = sorted({dt for _, dt in d.tensors.values()}) if d is not None and d.tensors else None
        tolerance = None
        if tol is not None and (tol.max_atol is not None or tol.max_rtol is not None):
            tolerance = TolerancePolicy(
                atol=_finite_ms(tol.max_atol),
                rtol=_finite_ms(tol.max_rtol),
                required_matched_ratio=_finite_ms(tol.required_matched_ratio),
            )
        task = Task(
            operator=d.op_type if d is not None else None,
            workload=definition,
            description=d.description if d is not None else None,
            shapes=[ShapeCase(id=uuid, dims=dims or None, tensors=self._tensors(d, dims))],
            dtypes=dtypes,
            reference=self.reference(definition, d),
            tolerance=tolerance,
        )
        run = fs.run
        cond = Conditions(
            dtypes=dtypes,
            shape_id=uuid,
            dims=dims or None,
            device=hw.device if hw is not None else None,
            device_id=hw.device_id if hw is not None else None,
            method=fs.method,
            warmup=run.warmup if run is not None else None,
            repeats=run.iterations if run is not None else None,
            sample_handling="other",
        )
        if len(self._workloads) > 200_000:  # that many distinct workloads: little reuse to hope for
            self._workloads.clear()
        self._workloads[key] = (task, cond)
        return task, cond

    @staticmethod
    def _tensors(d: Definition | None, dims: dict[str, int]) -> list[TensorSpec] | None:
        if d is None or not d.tensors:
            return None
        out = []
        for name, (shape, dtype) in d.tensors.items():
            sizes: list[int] = []
            for ax in shape:
                v = dims.get(ax) if isinstance(ax, str) else ax
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    return None  # an axis the workload does not fix: no tensor list at all
                sizes.append(v)
            out.append(TensorSpec(name=name, shape=sizes, dtype=dtype))
        return out or None

    @staticmethod
    def _nan_inf(c: Correctness | None) -> bool:
        if c is None:
            return False
        if c.has_nan or c.has_inf:
            return True
        for v in (c.max_absolute_error, c.max_relative_error):
            if v is not None and _error_value(v)[1] is not None:
                return True
        return False

    @staticmethod
    def _validation(
        verdict: str, c: Correctness | None, tol: Any, uuid: str, raw_status: str
    ) -> Validation | None:
        if verdict == "none":
            return None
        passed = verdict == "passed"
        abs_err, abs_raw = _error_value(c.max_absolute_error) if c is not None else (None, None)
        rel_err, rel_raw = _error_value(c.max_relative_error) if c is not None else (None, None)
        notes = []
        if abs_raw is not None:
            notes.append(f"max_absolute_error {abs_raw}")
        if rel_raw is not None:
            notes.append(f"max_relative_error {rel_raw}")
        if not passed:
            notes.insert(0, f"evaluation status {raw_status}")
        shape = ShapeResult(
            shape_id=uuid,
            passed=passed,
            max_abs_error=abs_err,
            max_rel_error=rel_err,
            atol=_finite_ms(tol.max_atol) if tol is not None else None,
            rtol=_finite_ms(tol.max_rtol) if tol is not None else None,
            required_matched_ratio=_finite_ms(tol.required_matched_ratio) if tol is not None else None,
            nan_seen=_seen(c.has_nan if c is not None else None, abs_raw, rel_raw, "nan"),
            inf_seen=_seen(c.has_inf if c is not None else None, abs_raw, rel_raw, "inf"),
            message="; ".join(notes) or None,
        )
        return Validation(verdict=verdict, shapes=[shape])

    def _timing(
        self,
        t: TraceLine,
        fs: FileState,
        cond: Conditions,
        packages: dict[str, str] | None,
        passed: bool,
        definition: str,
    ) -> Timing | None:
        ev = t.evaluation
        perf = ev.performance if ev is not None else None
        if perf is None:
            return None
        latency = _finite_ms(perf.latency_ms)
        if latency is None:
            return None
        run = fs.run
        ref = _finite_ms(perf.reference_latency_ms)
        baseline = None
        speedup = None
        if ref is not None and ref > 0:
            # the runner times a workload's reference once per device and reuses it for every
            # solution evaluated there: one Baseline for all their lines
            key = (ref, id(cond), id(packages), definition)
            baseline = self._baselines.get(key)
            if baseline is None:
                if len(self._baselines) > 200_000:
                    self._baselines.clear()
                baseline = self._baselines[key] = Baseline(
                    provider="torch eager",
                    version=(packages or {}).get("torch"),
                    call=f"{definition}.reference run() (the definition's reference implementation)",
                    same_session=True,
                    stats=Stats(unit="ms", mean=ref, n=run.trials if run is not None else None),
                    conditions=cond,
                )
            sf = _finite_ms(perf.speedup_factor)
            if sf is not None and passed:
                speedup = Speedup(value=sf, basis="mean")
        elif perf.speedup_factor is not None or perf.reference_latency_ms is not None:
            fs.unprofiled_reference += 1
        return Timing(
            method=fs.method,
            warmup=run.warmup if run is not None else None,
            repeats=run.iterations if run is not None else None,
            shape_id=cond.shape_id,
            stats=Stats(unit="ms", mean=latency, n=run.trials if run is not None else None),
            notes=fs.method_note,
            baseline=baseline,
            speedup=speedup,
            conditions=cond,
        )

    def _replay(
        self,
        t: TraceLine,
        fs: FileState,
        uuid: str,
        packages: dict[str, str] | None,
        definition: str,
        solution: str | None,
    ) -> Replay | None:
        command = None
        notes = None
        if fs.root is not None and solution:
            command = ["flashinfer-bench", "run", "--local", fs.root]
            run = fs.run
            if run is not None:
                for flag, value in (
                    ("--warmup-runs", run.warmup),
                    ("--iterations", run.iterations),
                    ("--num-trials", run.trials),
                    ("--timeout", run.timeout_s),
                ):
                    if value is not None:
                        command += [flag, str(value)]
            command += ["--definitions", definition, "--solutions", solution]
            notes = f"re-runs every workload of this definition and solution; this packet is workload {uuid}"
        inputs = None
        wl = t.workload
        if wl is not None and wl.inputs:
            found = []
            for name, spec in wl.inputs.items():
                if (
                    isinstance(spec, dict)
                    and spec.get("type") == "safetensors"
                    and isinstance(spec.get("path"), str)
                ):
                    key = spec.get("tensor_key")
                    found.append(
                        Artifact(
                            kind="dataset",
                            name=f"{name}:{key}" if isinstance(key, str) else str(name),
                            path=spec["path"],
                            media_type="application/vnd.safetensors",
                        )
                    )
            inputs = found or None
        if command is None and inputs is None:
            if packages is None:
                return None
            # the same environment's packages (one dict per environment): one Replay for them
            hit = self._replays.get(id(packages))
            if hit is None:
                hit = self._replays[id(packages)] = Replay(packages=packages)
            return hit
        return Replay(command=command, packages=packages, inputs=inputs, notes=notes)


_MEANS = "latency_ms and reference_latency_ms: the mean over the trials of each trial's median"


def method_of(lines_log_hint: bool, option: str | None) -> tuple[str, str]:
    """The timing method of a file's lines and the note saying how it was decided."""
    if lines_log_hint:
        return "cuda_events", f"the run's log says CUPTI was missing: timed with CUDA events; {_MEANS}"
    if option:
        return option, f"timing method `{option}` given by the `method` option; {_MEANS}"
    return (
        "other",
        "the trace does not name its timer (flashinfer-bench and SOL-ExecBench time with CUPTI "
        f"and fall back to CUDA events when it is missing); {_MEANS}",
    )


def cupti_missing(data: bytes) -> bool:
    """Whether a trace file's logs say CUPTI was missing (one warning per process, so one
    line says it for the whole file)."""
    return _CUPTI_MISSING.encode() in data
