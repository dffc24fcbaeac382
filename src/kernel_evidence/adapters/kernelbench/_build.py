"""KernelBench results -> packets: one per evaluated sample, or one per baseline entry."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

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
    ShapeResult,
    Stats,
    Task,
    Timing,
    Validation,
)
from .._device import vendor_of
from .._envelope import start_packet
from ._files import BaselineEntry, BaselineFile, EvalResults, KernelSource, Sample, TimingStats

__all__ = ["Builder", "classify"]

#: characters of an error text kept in ``failure.log_excerpt`` / ``compile.log_excerpt``
EXCERPT_CHARS = 4000

_TRIALS = re.compile(r"\(\s*(\d+)\s*/\s*(\d+)\s*\)")


def _load_keys() -> dict[str, tuple[str, ...]]:
    from ..._resources import load_toml

    table = load_toml("kernelbench.toml")["metadata_keys"]
    return {str(k): tuple(str(x) for x in v) for k, v in table.items()}


#: which metadata keys say what went wrong (adapters/kernelbench.toml [metadata_keys])
METADATA_KEYS = _load_keys()


def classify(s: Sample) -> tuple[str, FailureClass | None, str | None]:
    """(status, failure class, message) of a sample, from ``compiled``, ``correctness`` and
    the error keys of its metadata."""
    md = s.metadata
    text = _first(md, *METADATA_KEYS["compile"])
    if s.compiled is False:
        if text is not None:
            return "failed", FailureClass.COMPILE_ERROR, text
        ran = _first(md, *METADATA_KEYS.get("run", ()))
        if ran is not None:  # KernelBench files an exception raised while the sample ran as "compiled: false"
            return "failed", FailureClass.RUNTIME_ERROR, ran
        infra = _first(md, *METADATA_KEYS["infra"])
        if infra is not None and infra.strip().lower() == "evaluation timed out":
            # eval_from_generations.py: the sample ran past config.timeout (a hang, a very
            # slow compile): the candidate's failure, not the harness's
            return "failed", FailureClass.TIMEOUT, infra
        if infra is not None:  # the evaluation itself failed (Modal GPU not attached, a lost future)
            return "error", FailureClass.INFRA_ERROR, infra
        return "failed", FailureClass.COMPILE_ERROR, "compiled: false (no error recorded)"
    if s.correctness is True:
        return "passed", None, None
    runtime_error = _first(md, *METADATA_KEYS["runtime"])
    if runtime_error is not None:
        return "failed", FailureClass.RUNTIME_ERROR, runtime_error
    issue = _first(md, *METADATA_KEYS["correctness"])
    if issue is not None and "shape" in issue.lower():
        return "failed", FailureClass.INCORRECT_SHAPE, issue
    if s.correctness is False:
        if any(_nonfinite(md)):
            return "failed", FailureClass.NAN_INF, issue or "correctness: false (NaN or Inf in the output)"
        return "failed", FailureClass.INCORRECT_NUMERICAL, issue or "correctness: false (no reason recorded)"
    infra = _first(md, *METADATA_KEYS["infra"])
    if infra is not None:
        return "error", FailureClass.INFRA_ERROR, infra
    return "error", FailureClass.INFRA_ERROR, "neither compiled nor correctness recorded"


def _first(md: dict[str, Any], *keys: str) -> str | None:
    for k in keys:
        v = md.get(k)
        if v is None or v is False:
            continue
        text = v if isinstance(v, str) else str(v)
        if text.strip():
            return text
    return None


def _stats(t: TimingStats) -> Stats:
    lo, hi = t.min, t.max
    return Stats(
        unit="ms",
        mean=t.mean,
        std=t.std if t.std is not None and t.std >= 0 else None,
        min=lo if lo is not None and lo >= 0 else None,
        max=hi if hi is not None and hi >= 0 else None,
        n=t.trials,
    )


def _max_difference(md: dict[str, Any]) -> float | None:
    """The largest of KernelBench's per-trial ``max_difference`` strings (``"0.031250"``)."""
    vals = md.get("max_difference")
    best = None
    for v in vals if isinstance(vals, list) else [vals]:
        if not isinstance(v, (str, int, float)) or isinstance(v, bool):
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f) and f >= 0 and (best is None or f > best):
            best = f
    return best


def _nonfinite(md: dict[str, Any]) -> tuple[bool, bool]:
    """Whether any trial's ``max_difference`` is ``nan`` / ``inf``: the candidate's output held
    NaN or Inf (KernelBench writes ``"nan"`` for every trial then)."""
    vals = md.get("max_difference")
    nan = inf = False
    for v in vals if isinstance(vals, list) else [vals]:
        if not isinstance(v, (str, float)):
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        nan = nan or f != f
        inf = inf or f in (math.inf, -math.inf)
    return nan, inf


@dataclass
class Builder:
    created_at: str
    method: str
    method_note: str
    device_option: str | None
    torch_version: str | None
    warnings: list[str]
    _hardware: dict[str, Hardware] = field(default_factory=dict)
    #: baseline file -> (the folder name used as its device, the entries' generic hardware)
    folder_used: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    #: (sample device, baseline device, baseline file) pairs that differ
    mismatched: set[tuple[str, str, str]] = field(default_factory=set)
    #: whether ``method`` was given (the ``method`` option) rather than KernelBench's default
    method_given: bool = False

    def method_on(self, device: str | None) -> str:
        """The timer on ``device``: KernelBench's ``torch.cuda.Event`` pairs are HIP events
        under a ROCm build of PyTorch (an AMD device)."""
        if not self.method_given and self.method == "cuda_events" and device and vendor_of(device) == "amd":
            return "hip_events"
        return self.method

    def hardware(self, device: str | None) -> Hardware | None:
        if device is None:
            return None
        hit = self._hardware.get(device)
        if hit is None:
            vendor = vendor_of(device)
            hit = self._hardware[device] = Hardware(
                vendor=vendor,
                device=device,
                device_id=canonical_id(device),
            )
        return hit

    # ------------------------------------------------------------------ baseline packets

    def sample_device(self, ev: EvalResults) -> str | None:
        """The device the samples of ``ev`` name first (the option wins)."""
        if self.device_option:
            return self.device_option
        for s in ev.samples:
            dev = _first(s.metadata, "hardware") or (s.runtime_stats.hardware if s.runtime_stats else None)
            if dev:
                return dev
        return None

    def baseline_device_id(self, b: BaselineFile) -> str | None:
        """The canonical id of the device a baseline file was measured on, when it tells."""
        for e in b.entries:
            hw = e.stats.hardware
            found = canonical_id(hw) if hw else None
            if found:
                return found
        return canonical_id(b.folder_device) if b.folder_device else None

    def entry_device(self, e: BaselineEntry, b: BaselineFile) -> str | None:
        """The device of a baseline entry: the option, else its ``hardware``, else the
        ``results/timing/<HW>/`` folder name - also when ``hardware`` names no device model
        (the ROCm fork's ``AMD GPU``) and the folder does (``MI300X_rocm``)."""
        if self.device_option:
            return self.device_option
        hw = e.stats.hardware
        folder = b.folder_device
        if folder is None or (
            hw is not None and (canonical_id(hw) is not None or canonical_id(folder) is None)
        ):
            return hw
        self.folder_used[b.path] = (folder, hw)
        return folder

    def baseline_packets(self, b: BaselineFile) -> list[EvidencePacket]:
        out = []
        for e in b.entries:
            dev = self.entry_device(e, b)
            cond = Conditions(
                device=dev,
                device_id=canonical_id(dev) if dev else None,
                method=self.method_on(dev),
                repeats=e.stats.trials,
                shape_id=f"{e.level_key}/{e.problem_id}",
            )
            name = e.file_name.removesuffix(".py")
            out.append(
                start_packet(
                    subject_kind="kernel",
                    subject_name=name,
                    description=f"KernelBench level {e.level} problem {e.problem_id} reference, "
                    f"{_provider(b)} ({os.path.basename(b.path)})",
                    status="passed",
                    created_at=self.created_at,
                    lineage=Lineage(relation="baseline", candidate_id=f"{b.config}:{e.level_key}/{name}"),
                    task=self._task(e.level, e.problem_id, e.file_name, b),
                    timing=Timing(
                        method=self.method_on(dev),
                        repeats=e.stats.trials,
                        shape_id=f"{e.level_key}/{e.problem_id}",
                        stats=_stats(e.stats),
                        notes=self.method_note,
                        conditions=cond,
                    ),
                    hardware=self.hardware(dev),
                    extensions={
                        "kernelbench:raw": {
                            "file": os.path.basename(b.path),
                            "key": f"{e.level_key}/{e.file_name}",
                            "stats": e.raw,
                        }
                    },
                )
            )
        return out

    def _task(self, level: int | str, pid: int, file_name: str | None, b: BaselineFile | None) -> Task:
        ref = None
        if file_name is not None:
            kind = "torch_compile" if b is not None and b.compiled else "torch_eager"
            ref = Reference(name=file_name, kind=kind, version=self.torch_version)
        return Task(workload=f"KernelBench level {level}", operator=None, reference=ref)

    # ------------------------------------------------------------------ eval packets

    def eval_packets(
        self,
        ev: EvalResults,
        level: int | None,
        base: BaselineFile | None,
        sources: dict[tuple[int, int], KernelSource],
    ) -> list[EvidencePacket]:
        return [
            self._sample(ev, s, level, base, sources.get((s.problem_id, s.sample_id))) for s in ev.samples
        ]

    def _sample(
        self,
        ev: EvalResults,
        s: Sample,
        level: int | None,
        base: BaselineFile | None,
        src: KernelSource | None,
    ) -> EvidencePacket:
        status, fclass, message = classify(s)
        md = s.metadata
        stats_hw = s.runtime_stats.hardware if s.runtime_stats is not None else None
        device = self.device_option or _first(md, "hardware") or stats_hw
        entry: BaselineEntry | None = None
        if base is not None and level is not None:
            entry = base.lookup(level, s.problem_id)
        name = entry.file_name.removesuffix(".py") if entry is not None else None
        where = f"level {level} problem {s.problem_id}" if level is not None else f"problem {s.problem_id}"
        shape_id = f"level{level}/{s.problem_id}" if level is not None else f"problem/{s.problem_id}"
        timing = self._timing(s, status, shape_id, device, entry, base)
        validation = None
        if s.compiled is not False and s.correctness is not None and fclass is not FailureClass.RUNTIME_ERROR:
            trials = _first(md, "correctness_trials")
            nonfinite = _nonfinite(md)
            note = "; ".join(x for x in (trials and f"correctness trials {trials}", message) if x) or None
            validation = Validation(
                verdict="passed" if s.correctness else "failed",
                shapes=[
                    ShapeResult(
                        shape_id=shape_id,
                        passed=bool(s.correctness),
                        max_abs_error=_max_difference(md),
                        nan_seen=nonfinite[0] or None,
                        inf_seen=nonfinite[1] or None,
                        message=note,
                    )
                ],
            )
        compile_ = None
        if s.compiled is not None or src is not None:
            compile_ = Compile(
                succeeded=s.compiled,
                source_digest=src.sha256 if src is not None else None,
                artifacts=[
                    Artifact(
                        kind="source",
                        name=os.path.basename(src.path),
                        sha256=src.sha256,
                        size=ByteSize(value=float(src.size), unit="B"),
                        media_type="text/x-python",
                    )
                ]
                if src is not None
                else None,
                log_excerpt=message[-EXCERPT_CHARS:]
                if fclass is FailureClass.COMPILE_ERROR and message
                else None,
            )
        failure = None
        if fclass is not None:
            failure = Failure(
                failure_class=fclass,
                message=(message or "")[:EXCERPT_CHARS] or None,
                shape_id=shape_id,
                log_excerpt=_first(md, "runtime_error_traceback"),
            )
        sample_name = (
            f"level_{level}_problem_{s.problem_id}_sample_{s.sample_id}" if level is not None else None
        )
        return start_packet(
            subject_kind="kernel",
            subject_name=name or f"KernelBench {where}",
            description=f"sample {s.sample_id} of KernelBench {where} (eval_results.json entry {s.where})",
            status=status,
            created_at=self.created_at,
            failure=failure,
            lineage=Lineage(
                run_id=ev.run,
                candidate_id=sample_name or f"problem_{s.problem_id}_sample_{s.sample_id}",
            ),
            task=self._task(level, s.problem_id, entry.file_name, base)
            if level is not None and entry is not None
            else Task(workload=f"KernelBench level {level}" if level is not None else "KernelBench"),
            compile=compile_,
            validation=validation,
            timing=timing,
            hardware=self.hardware(device),
            extensions={"kernelbench:raw": _raw_sample(s)},
        )

    def _timing(
        self,
        s: Sample,
        status: str,
        shape_id: str,
        device: str | None,
        entry: BaselineEntry | None,
        base: BaselineFile | None,
    ) -> Timing | None:
        runtime = s.runtime_stats
        if runtime is None and s.runtime is not None and s.runtime >= 0:
            runtime = TimingStats(s.runtime, None, None, None, None, None, None)
        if runtime is None or runtime.mean is None or runtime.mean < 0:
            return None  # runtime -1.0: not measured
        cond = Conditions(
            device=device,
            device_id=canonical_id(device) if device else None,
            method=self.method_on(device),
            repeats=runtime.trials,
            shape_id=shape_id,
        )
        baseline = None
        ref = s.ref_runtime_stats
        if ref is None and s.ref_runtime is not None and s.ref_runtime > 0:
            ref = TimingStats(s.ref_runtime, None, None, None, None, None, None)
        if ref is not None:  # timed by the same evaluation, right after the candidate
            baseline = Baseline(
                provider="torch eager",
                version=self.torch_version,
                call="the problem's reference Model.forward, timed by eval_kernel_against_ref",
                same_session=True,
                stats=_stats(ref),
                conditions=cond,
            )
        elif entry is not None and base is not None:
            bdev = self.entry_device(entry, base)
            if device and bdev and canonical_id(device) != canonical_id(bdev) and device != bdev:
                self.mismatched.add((device, bdev, base.path))
            baseline = Baseline(
                provider=_provider(base),
                version=self.torch_version,
                call=f"{entry.file_name} Model.forward ({base.config}, {os.path.basename(base.path)})",
                settings=_settings(base),
                same_session=False,
                stats=_stats(entry.stats),
                conditions=Conditions(
                    device=bdev,
                    device_id=canonical_id(bdev) if bdev else None,
                    method=self.method_on(bdev),
                    repeats=entry.stats.trials,
                    shape_id=shape_id,
                ),
            )
        return Timing(
            method=self.method_on(device),
            repeats=runtime.trials,
            shape_id=shape_id,
            stats=_stats(runtime),
            notes=self.method_note,
            baseline=baseline,
            conditions=cond,
        )


def _raw_sample(s: Sample) -> dict[str, Any]:
    """What the file said of a sample, as it said it (metadata unwrapped from ``eval_0``)."""
    raw: dict[str, Any] = {"entry": s.where, "metadata": s.metadata}
    for key, value in (("compiled", s.compiled), ("correctness", s.correctness), ("runtime", s.runtime)):
        if value is not None:
            raw[key] = value
    return raw


def _provider(b: BaselineFile) -> str:
    return "torch.compile" if b.compiled else "torch eager"


def _settings(b: BaselineFile) -> dict[str, str | float | int | bool] | None:
    if not b.compiled:
        return None
    rest = b.config.removeprefix("torch_compile").strip("_")
    if rest.startswith("inductor"):
        mode = rest.removeprefix("inductor").strip("_") or "default"
        return {"backend": "inductor", "mode": mode}
    return {"backend": rest or "inductor"}
