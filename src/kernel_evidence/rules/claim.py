"""KE3xx: the claimed speedup follows from the packet's own statistics."""

from __future__ import annotations

from typing import Any

from ._common import HI, TIME_BASES, TINY
from ._context import Add, Ctx
from ._engine import declare
from ._units import FACTOR as _FACTOR
from ._units import seconds

declare(
    "KE301",
    "error",
    "claimed speedup matches the timings",
    "recompute the speedup from the recorded statistics, or fix the statistics",
    "The claimed speedup MUST equal baseline/candidate (for time statistics) or "
    "candidate/baseline (for throughputs) within `speedup.tolerance` (relative to the computed "
    "speedup, default 0.02; a claim exactly at the tolerance matches).",
)
declare("KE302", "error", "the claim can be checked",
     "record the candidate's and the baseline's statistics for the claimed basis",
     "A claimed speedup MUST be checkable from the packet: candidate and baseline both carry the "
     "statistic named by `speedup.basis`, unless the baseline is another packet.")  # fmt: skip


def computed_speedup(p: Any, basis: str) -> float | None:
    """The speedup the packet's own statistics give for ``basis``, or None if they cannot."""
    t = p.timing
    b = t.baseline
    if b is None:
        return None
    if basis in TIME_BASES:
        if t.stats is None or b.stats is None:
            return None
        cand = getattr(t.stats, basis)
        ref = getattr(b.stats, basis)
        if cand is None or ref is None:
            return None
        cand_s = seconds(cand, t.stats.unit)
        if cand_s == 0:
            return float("inf")
        return seconds(ref, b.stats.unit) / cand_s
    if t.serving is None or b.serving is None:
        return None
    cand_q = getattr(t.serving, basis)
    ref_q = getattr(b.serving, basis)
    if cand_q is None or ref_q is None or ref_q.value == 0:
        return None
    return float(cand_q.value / ref_q.value)


def check(p: Any, ctx: Ctx, add: Add) -> None:
    if not ctx.claim:
        return  # no claim, nothing to check it against
    t = p.timing
    b = t.baseline
    if b is None:
        return  # KE201
    kernel = p.subject.kind == "kernel"
    s = t.speedup
    # the statistic the claim compares: its stated basis, else median (kernels) or
    # output throughput; for time statistics, computed_speedup(p, basis) inline
    basis = s.basis  # a str (a Literal of the model) or None
    if basis is None:
        basis = "median" if kernel or t.stats is not None else "output_throughput"
    computed: float | None = None
    if basis in TIME_BASES:
        cs = t.stats
        bs = b.stats
        if cs is not None and bs is not None:
            if basis == "median":
                cand = cs.median
                ref = bs.median
            else:
                cand = getattr(cs, basis)
                ref = getattr(bs, basis)
            if cand is not None and ref is not None:
                cand_s = cand * _FACTOR[cs.unit]
                computed = float("inf") if cand_s == 0 else ref * _FACTOR[bs.unit] / cand_s
    else:
        computed = computed_speedup(p, basis)
    if computed is None:
        if not (b.packet_id is not None and b.stats is None and b.serving is None):
            add(
                (
                    "KE302",
                    "/timing/speedup",
                    f"speedup on basis `{basis}` cannot be checked: candidate or baseline lacks that statistic",
                )
            )
    else:
        tol = s.tolerance
        if tol is None:
            tol = 0.02
        # the boundary is inside: 1.02 against 1.0 at tolerance 0.02 matches, whatever
        # the rounding of the subtraction
        if computed <= 0 or abs(s.value - computed) > tol * computed * HI + TINY:
            add(
                (
                    "KE301",
                    "/timing/speedup/value",
                    f"claimed speedup {s.value:g} does not match the timings: {basis} gives {computed:.4g} (tolerance {tol:g})",
                )
            )
