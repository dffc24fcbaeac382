"""KernelBench's files, read by key name with every key optional.

* eval results (``runs/<run>/eval_results.json``): problem id (a string) -> a list of
  samples ``{sample_id, compiled, correctness, metadata, runtime, runtime_stats}`` (older
  versions: one such object per problem instead of a list); forks add ``ref_runtime`` and
  ``ref_runtime_stats``.
* baseline timing (``results/timing/<HW>/baseline_time_<config>.json``): ``levelN`` ->
  problem file name (``1_Square_matrix_multiplication_.py``) -> ``{mean, std, min, max,
  num_trials, hardware, device}`` (``hardware``/``device`` absent in some forks; ``null``
  when the reference could not be timed).
* kernel sources beside the eval results: ``level_<L>_problem_<P>_sample_<S>_kernel.py``.

All times are milliseconds: see ``docs/adapters/kernelbench.md`` for why, against the
"in us" comment of ``KernelExecResult.runtime``.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "BaselineEntry",
    "BaselineFile",
    "EvalResults",
    "KernelSource",
    "Sample",
    "kernel_sources",
    "parse_baseline",
    "parse_eval_results",
    "what_is",
]

_KERNEL_FILE = re.compile(r"level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")
_PROBLEM_ID = re.compile(r"^(\d+)_")
#: a level key: ``level1`` (a number) or a named level (``level_tk``: KernelBench's
#: ThunderKittens problems in ``results/timing/tk/``)
_ANY_LEVEL = re.compile(r"^level(?:(\d+)|_([A-Za-z0-9][\w-]*))$")


def _num(v: Any) -> float | None:
    """A finite number, or None (booleans are not numbers)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


_I64 = 2**63 - 1


def _count(v: Any) -> int | None:
    """A count that fits the packets' 64-bit integers, or None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, int) and 0 <= v <= _I64:
        return v
    return None


def _text(v: Any) -> str | None:
    if v is None:
        return None
    text = v if isinstance(v, str) else str(v)
    return text if text.strip() else None


@dataclass(frozen=True)
class TimingStats:
    """A KernelBench timing-statistics object, in milliseconds."""

    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    trials: int | None
    hardware: str | None
    device: str | None
    #: the object as the file wrote it
    raw: dict[str, Any] | None = None

    @classmethod
    def of(cls, d: Any) -> TimingStats | None:
        if not isinstance(d, dict):
            return None
        s = cls(
            mean=_num(d.get("mean")),
            std=_num(d.get("std")),
            min=_num(d.get("min")),
            max=_num(d.get("max")),
            trials=_count(d.get("num_trials")),
            hardware=_text(d.get("hardware")),
            device=_text(d.get("device")),
            raw=d,
        )
        return s if s.mean is not None and s.mean >= 0 else None


@dataclass(frozen=True)
class Sample:
    """One evaluated sample of one problem."""

    problem_id: int
    sample_id: int
    compiled: bool | None
    correctness: bool | None
    metadata: dict[str, Any]
    runtime: float | None
    runtime_stats: TimingStats | None
    ref_runtime: float | None
    ref_runtime_stats: TimingStats | None
    #: where in the file: ``"12"`` or ``"12[3]"``
    where: str


@dataclass
class EvalResults:
    path: str
    run: str | None
    samples: list[Sample] = field(default_factory=list)
    #: entries that are not sample objects: (where, why)
    skipped: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class BaselineEntry:
    #: the level number, or a named level's name (``tk``), which joins no eval results
    level: int | str
    problem_id: int
    #: the problem's file name as the baseline file keys it (``1_Square_matrix_multiplication_.py``)
    file_name: str
    stats: TimingStats

    @property
    def raw(self) -> dict[str, Any] | None:
        return self.stats.raw

    @property
    def level_key(self) -> str:
        """The level as the baseline file keys it (``level1``, ``level_tk``)."""
        return f"level{self.level}" if isinstance(self.level, int) else f"level_{self.level}"


@dataclass
class BaselineFile:
    path: str
    #: ``torch``, ``torch_compile_inductor_default``, ... (from the file name)
    config: str
    #: the ``<HW>`` folder of ``results/timing/<HW>/``, when the file sits in one
    folder_device: str | None
    entries: list[BaselineEntry] = field(default_factory=list)
    #: entries KernelBench wrote as null or without a mean (could not be timed)
    untimed: list[str] = field(default_factory=list)

    def lookup(self, level: int, problem_id: int) -> BaselineEntry | None:
        for e in self.entries:
            if e.level == level and e.problem_id == problem_id:
                return e
        return None

    @property
    def compiled(self) -> bool:
        return self.config.startswith("torch_compile")


@dataclass(frozen=True)
class KernelSource:
    level: int
    problem_id: int
    sample_id: int
    path: str
    sha256: str
    size: int


def what_is(doc: Any) -> str | None:
    """``eval`` or ``baseline`` for a decoded KernelBench file, None for anything else."""
    if not isinstance(doc, dict) or not doc:
        return None
    keys = list(doc)
    if all(isinstance(k, str) and _ANY_LEVEL.match(k) for k in keys) and all(
        isinstance(v, dict) for v in doc.values()
    ):
        return "baseline"
    if all(isinstance(k, str) and k.strip().isdigit() for k in keys):
        for v in doc.values():
            items = v if isinstance(v, list) else [v]
            if any(isinstance(i, dict) and ("compiled" in i or "correctness" in i) for i in items):
                return "eval"
    return None


def _unwrap(meta: Any) -> dict[str, Any]:
    """The metadata dict; KernelBench wraps a non-serialisable one as ``{"eval_0": {...}}``."""
    if not isinstance(meta, dict):
        return {}
    inner = meta.get("eval_0")
    if len(meta) == 1 and isinstance(inner, dict):
        return inner
    return meta


def parse_eval_results(path: str, doc: dict[str, Any]) -> EvalResults:
    run = os.path.basename(os.path.dirname(os.path.abspath(path))) or None
    out = EvalResults(path=path, run=run)
    for key, value in doc.items():
        pid = int(key.strip())
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            where = key if not isinstance(value, list) else f"{key}[{i}]"
            if not isinstance(item, dict):
                out.skipped.append((where, f"expected a sample object, got {type(item).__name__}"))
                continue
            sid = _count(item.get("sample_id"))
            compiled = item.get("compiled")
            correct = item.get("correctness")
            out.samples.append(
                Sample(
                    problem_id=pid,
                    sample_id=sid if sid is not None else i,
                    compiled=compiled if isinstance(compiled, bool) else None,
                    correctness=correct if isinstance(correct, bool) else None,
                    metadata=_unwrap(item.get("metadata")),
                    runtime=_num(item.get("runtime")),
                    runtime_stats=TimingStats.of(item.get("runtime_stats")),
                    ref_runtime=_num(item.get("ref_runtime")),
                    ref_runtime_stats=TimingStats.of(item.get("ref_runtime_stats")),
                    where=where,
                )
            )
    return out


def _config(path: str) -> str:
    stem = os.path.basename(path)
    for suffix in (".gz", ".json"):
        stem = stem.removesuffix(suffix)
    return stem.removeprefix("baseline_time_") or "torch"


def parse_baseline(path: str, doc: dict[str, Any]) -> BaselineFile:
    p = Path(os.path.abspath(path))
    folder = p.parent.name if p.parent.parent.name == "timing" else None
    out = BaselineFile(path=path, config=_config(path), folder_device=folder or None)
    for level_key, problems in doc.items():
        m = _ANY_LEVEL.match(level_key)
        if m is None or not isinstance(problems, dict):
            continue
        level: int | str = int(m.group(1)) if m.group(1) is not None else m.group(2)
        for name, value in problems.items():
            idm = _PROBLEM_ID.match(str(name))
            stats = TimingStats.of(value)
            if idm is None or stats is None:
                out.untimed.append(f"{level_key}/{name}")
                continue
            out.entries.append(BaselineEntry(level, int(idm.group(1)), str(name), stats))
    return out


def kernel_sources(folder: str) -> dict[tuple[int, int], KernelSource]:
    """The generated kernels beside an eval results file, by (problem, sample)."""
    found: dict[tuple[int, int], KernelSource] = {}
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return found
    for name in names:
        m = _KERNEL_FILE.match(name)
        if m is None:
            continue
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as fh:
                body = fh.read(16 << 20)
        except OSError:
            continue
        level, pid, sid = (int(g) for g in m.groups())
        found[(pid, sid)] = KernelSource(
            level, pid, sid, path, "sha256:" + hashlib.sha256(body).hexdigest(), len(body)
        )
    return found
