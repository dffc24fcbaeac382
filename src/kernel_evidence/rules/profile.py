"""KE11xx: a profile of the timed call agrees with the claim.

A capture that says what it is of (``ProfilerCapture.of``: candidate or baseline, which shape,
which kernels to expect) can be held against the packet's own timing: the kernels of one call
must fit in the time claimed for that call, and a capture of the candidate must show the
candidate's kernel rather than, say, a library call it dispatched to.
"""

from __future__ import annotations

import re
from typing import Any

from ._common import CACHED_CHARS
from ._context import Add, Ctx
from ._engine import declare
from ._units import FACTOR

declare(
    "KE1101",
    "error",
    "the claimed time fits the profiled kernels",
    "time the same call you profiled, with device timers, synchronised, and record the capture's shape",
    "A capture of the candidate (or the baseline) at the timed shape (`of.shape_id` equal to "
    "the timing's shape; absent, for a task of at most one shape) gives the kernel time of one call: per stream, the "
    "sum over kernel names of the median launch duration (canonical metric `duration`, one "
    "launch per record, a record with `invocations` counting as that many launches) times "
    "the launches per call (launches of the name / the calls the capture holds: launches of the "
    "least-launched of `of.expected_kernels`, else of the least-launched kernel); the longest "
    "stream bounds the call. The side's claimed median (else mean) x (1 + "
    "`of.claim_tolerance`, default 0.5, at most 0.5: a wider one counts as 0.5, and where "
    "only the wider one lets the claim through the finding points at it) MUST NOT be below "
    "it: a call cannot finish before its "
    "own kernels. Every kernel counts but memset, memcpy, fill and flush kernels (a harness's "
    "cache flush: a word of the name, split at separators and case changes, so "
    "`FillFunctor` is one and `attn_fwd_prefill` is not; a kernel the capture expects never "
    "is). A capture that names no shape is of the timed one when the task has one shape.",
)
declare(
    "KE1102",
    "error",
    "the candidate's capture shows the candidate's kernel",
    "profile the candidate's own call and name the kernels it launches in /profiler/N/of/expected_kernels",
    "A capture of the candidate (`of.side: candidate`) that lists kernel records MUST show at "
    "least one of `of.expected_kernels` (matched as a case-insensitive substring of a "
    "record's name or raw name): a capture without them profiled something else.",
)

declare(
    "KE1103",
    "error",
    "a capture's shape is one of the task's",
    "record in /profiler/N/of/shape_id the id of the task shape the capture holds",
    "Where `task.shapes` lists the shapes, a capture's `of.shape_id` MUST be one of their ids: "
    "a capture of a shape the task does not have is held against no timing (KE1101).",
)
declare(
    "KE1104",
    "error",
    "a profiled candidate kernel is in the packet's captures",
    "keep the candidate's capture with `of.side: candidate`, or record the defence as skipped",
    "Where a packet carries captures that all say what they are of (`of.side`), the "
    "`candidate_kernel_profiled` defence MUST NOT be recorded passed unless one of them is of the "
    "candidate: a capture of the candidate relabelled as the baseline's escapes KE1101 and "
    "KE1102 while the defence record still vouches for it.",
)
declare(
    "KE1105",
    "warning",
    "a profiled candidate kernel comes with its capture",
    "attach the capture of the candidate (/profiler, `of.side: candidate`), or record the defence as skipped",
    "A packet that records the `candidate_kernel_profiled` defence passed SHOULD carry a "
    "profiler capture (`profiler`): without one, nothing in the packet shows the candidate's "
    "kernel ran, and a capture that contradicted the claim (KE1101, KE1102) may have been "
    "dropped. Graded C at best.",
    caps="C",
)

_DEFAULT_TOLERANCE = 0.5
#: the widest tolerance a capture may state: the clocks a profiler pins (ncu's base clocks)
#: slow a kernel by a quarter or so, a kernel half again the claimed time is not noise
_MAX_TOLERANCE = 0.5
#: the words of a kernel name: runs of letters split at case changes (`FillFunctor`: fill,
#: functor), and runs of digits
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_UTILITY_WORDS = frozenset({
    "memset", "memcpy", "fill", "fills", "filled", "flush", "flushes", "zero", "zeros", "zeroes",
    "zeroing", "zeroed",
})  # fmt: skip
_UTILITY_CACHE: dict[str, bool] = {}


def _utility(name: str) -> bool:
    """Whether a kernel name is a harness's memset, memcpy, fill or flush, by its words
    (`fill_kernel`, `FillFunctor`, `[CUDA memset]`; not `attn_fwd_prefill`). Cached: a
    batch repeats a few kernel names."""
    hit = _UTILITY_CACHE.get(name)
    if hit is None:
        hit = False
        for w in _WORDS.findall(name[:4096]):
            w = w.lower()
            if w in _UTILITY_WORDS or w.startswith(("memset", "memcpy")):
                hit = True
                break
        if len(_UTILITY_CACHE) < 4096 and len(name) <= CACHED_CHARS:
            _UTILITY_CACHE[name] = hit
    return hit


def check(p: Any, ctx: Ctx, add: Add) -> None:
    caps = p.profiler
    if not caps:
        ds = p.defences
        if ds:
            for i, d in enumerate(ds):
                if d.check == "candidate_kernel_profiled" and d.outcome == "passed":
                    add(
                        (
                            "KE1105",
                            f"/defences/{i}",
                            "the candidate_kernel_profiled defence passed, but the packet carries no profiler capture",
                        )
                    )
                    break
        return
    task = p.task
    shapes = task.shapes if task is not None else None
    said = 0  # captures that say what they are of
    candidate = False
    for i, cap in enumerate(caps):
        of = cap.of
        if of is None:
            continue
        said += 1
        candidate = candidate or of.side == "candidate"
        if of.shape_id is not None and shapes and not _listed(of.shape_id, shapes):
            add(
                (
                    "KE1103",
                    f"/profiler/{i}/of/shape_id",
                    f"capture of shape `{of.shape_id}`, which the task does not list",
                )
            )
        if not cap.kernels:
            continue
        if of.side == "candidate" and of.expected_kernels:
            _expected_present(i, cap, of.expected_kernels, add)
        if of.side in ("candidate", "baseline"):
            _fits_claim(p, i, cap, of, add)
    if said == len(caps) and not candidate and p.defences:
        for d in p.defences:
            if d.check == "candidate_kernel_profiled" and d.outcome == "passed":
                sides = ", ".join(sorted({c.of.side for c in caps}))
                add(
                    (
                        "KE1104",
                        "/profiler/0/of/side",
                        f"the candidate_kernel_profiled defence passed, but every capture is of another side ({sides})",
                    )
                )
                break


def _matches(rec: Any, wanted: list[str]) -> bool:
    name = rec.name.casefold()
    raw = rec.raw_name.casefold() if rec.raw_name else ""
    for w in wanted:  # noqa: SIM110  (a loop: any() over a generator costs more, once per record)
        if w in name or (raw and w in raw):
            return True
    return False


def _named(name: str, wanted: list[str]) -> bool:
    """Whether ``name`` contains one of the (casefolded) expected kernel names."""
    folded = name.casefold()
    for w in wanted:  # noqa: SIM110  (a loop: any() over a generator costs more)
        if w in folded:
            return True
    return False


def _listed(shape_id: str, shapes: list[Any]) -> bool:
    """Whether one of ``shapes`` has the id ``shape_id``."""
    for sh in shapes:  # noqa: SIM110  (a loop: any() over a generator costs more)
        if sh.id == shape_id:
            return True
    return False


def _expected_present(i: int, cap: Any, expected: list[str], add: Add) -> None:
    wanted = [w.casefold() for w in expected]
    for rec in cap.kernels:
        if _matches(rec, wanted):
            return
    shown = ", ".join(sorted({r.name for r in cap.kernels})[:3])
    add(
        (
            "KE1102",
            f"/profiler/{i}/kernels",
            f"a capture of the candidate without any expected kernel ({', '.join(expected)}); it shows {shown}",
        )
    )


def _fits_claim(p: Any, i: int, cap: Any, of: Any, add: Add) -> None:
    t = p.timing
    if t is None:
        return
    if of.side == "candidate":
        stats = t.stats
        ptr = "/timing/stats"
    else:
        stats = t.baseline.stats if t.baseline is not None else None
        ptr = "/timing/baseline/stats"
    if stats is None:
        return
    cond = t.conditions
    timed_shape = t.shape_id or (cond.shape_id if cond is not None else None)
    if of.shape_id != timed_shape:
        # a capture that names no shape is of the timed one when the task has only that one
        task = p.task
        shapes = task.shapes if task is not None else None
        if of.shape_id is not None or (shapes is not None and len(shapes) > 1):
            return
    which = "median" if stats.median is not None else "mean"
    claimed = getattr(stats, which)
    if claimed is None:
        return
    floor = _kernel_time_per_call(cap, of.expected_kernels)
    if floor is None:
        return
    stated = of.claim_tolerance if of.claim_tolerance is not None else _DEFAULT_TOLERANCE
    tol = min(stated, _MAX_TOLERANCE)
    sec = claimed * FACTOR[stats.unit]
    if sec * (1 + tol) < floor:
        if stated > tol and sec * (1 + stated) >= floor:
            # only the stated tolerance lets the claim through: it is what is wrong
            add(
                (
                    "KE1101",
                    f"/profiler/{i}/of/claim_tolerance",
                    f"claim_tolerance {stated:g} is above the {tol:g} a capture may state: the {of.side}'s "
                    f"claimed {which} {sec * 1e6:.4g} us is {floor / sec:.3g}x below its profiled kernel time "
                    f"per call {floor * 1e6:.4g} us",
                )
            )
        else:
            add(
                (
                    "KE1101",
                    f"{ptr}/{which}",
                    f"claimed {which} {sec * 1e6:.4g} us is below the {of.side}'s profiled kernel time per call "
                    f"{floor * 1e6:.4g} us (/profiler/{i}, tolerance {tol:g})",
                )
            )


def _kernel_time_per_call(cap: Any, expected: list[str] | None) -> float | None:
    """Seconds of kernel time in one call (the longest stream), or None when the capture
    gives no durations.

    Every kernel of the capture counts but a harness's memset, memcpy and fill (cache
    flush) kernels; the calls the capture holds are the launches of the least-launched
    expected kernel (else of the least-launched kernel), so a kernel launched fewer times
    (a one-off set-up) counts only its share."""
    wanted = [w.casefold() for w in expected] if expected else None
    launches: dict[str, int] = {}
    durations: dict[str, list[float]] = {}
    stream_of: dict[str, str | None] = {}
    calls_of: list[int] = []
    for rec in cap.kernels:
        m = rec.metrics
        d = m.get("duration") if m else None
        if d is None or d.unit not in FACTOR:
            continue
        if _utility(rec.name) and not (wanted is not None and _named(rec.name, wanted)):
            continue  # a harness's flush or fill, unless it is a kernel the capture expects
        n = rec.invocations if rec.invocations is not None else 1
        if n <= 0:
            continue
        name = rec.name
        launches[name] = launches.get(name, 0) + n
        durations.setdefault(name, []).append(d.value * FACTOR[d.unit])
        stream_of.setdefault(name, rec.stream)
    if not launches:
        return None
    if wanted is not None:
        for name, n in launches.items():
            folded = name.casefold()
            for w in wanted:
                if w in folded:
                    calls_of.append(n)
                    break
    calls = min(calls_of) if calls_of else min(launches.values())
    per_stream: dict[str | None, float] = {}
    for name, ds in durations.items():
        ds.sort()
        k = len(ds)
        med = ds[k // 2] if k % 2 else (ds[k // 2 - 1] + ds[k // 2]) / 2
        s = stream_of[name]
        per_stream[s] = per_stream.get(s, 0.0) + med * launches[name] / calls
    return max(per_stream.values())
