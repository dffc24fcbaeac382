"""KE3xx: the claimed speedup follows from the packet's own statistics."""

from __future__ import annotations

import math
from typing import Any

from ._common import HI, TIME_BASES, TINY, cand
from ._context import Add, Ctx
from ._engine import declare
from ._tables import baseline_entry
from ._units import FACTOR as _FACTOR
from ._units import seconds
from .statistics import _quantum

declare(
    "KE301",
    "error",
    "claimed speedup matches the timings",
    "recompute the speedup from the recorded statistics, or fix the statistics",
    "The claimed speedup MUST equal baseline/candidate (for time statistics) or "
    "candidate/baseline (for throughputs) within `speedup.tolerance` (relative to the computed "
    "speedup, default 0.02, at most 0.05: a wider stated tolerance counts as 0.05, since the "
    "claim and the statistics it is checked against are in the same packet and only rounding "
    "separates them; a claim exactly at the tolerance matches). Whatever the tolerance, a claim "
    "of 1 or more MUST NOT stand on timings that give a slowdown (below 1) by more than the "
    "rounding of the digits written: the claim's, read to at most 3 significant digits, and "
    "the statistics', plus 0.2%.",
)
declare(
    "KE302",
    "error",
    "the claim can be checked",
    "record the candidate's and the baseline's statistics for the claimed basis",
    "A claimed speedup MUST be checkable from the packet: candidate and baseline both carry the "
    "statistic named by `speedup.basis`, unless the baseline is another packet.",
)
declare(
    "KE303",
    "error",
    "the timings give a finite speedup",
    "a candidate time of 0 (or a baseline throughput of 0) is a broken timer, not a speedup",
    "A claimed speedup MUST rest on timings that give a finite, defined ratio: a candidate "
    "statistic of 0 (an infinite speedup) or a baseline throughput of 0 (an undefined one) "
    "does not match any claim.",
)
declare("KE304", "warning", "the claim's basis is what the samples support",
     "claim on the median, and treat both sides' samples alike (keep all, or trim both)",
     "A speedup SHOULD NOT rest on a basis that the typical call does not support: a claim "
     "on the mean or the minimum that exceeds the median speedup by more than a quarter "
     "(one slow baseline outlier inflating its mean, one lucky candidate sample) is "
     "cherry-picked, and so is a claim on the minimum whose candidate minimum is one lone "
     "sample (of ten or more) over 10% below the next-fastest, its gap over twice the spread "
     "of the fastest tenth after it and over two units of the digits the samples are written "
     "with; so are sides whose samples were handled differently (`sample_handling`, "
     "samples `dropped` on one side only, or one side's `n` below its `repeats` beside another "
     "that kept all of its own). Nor SHOULD a claim sit above the speedup its statistics "
     "give by more than the default tolerance (0.02 of it) plus the rounding of the digits "
     "written (the claim's, read to at most 3 significant digits, and the statistics'): a "
     "wider stated `tolerance` covers a claim below the timings, not an inflated one. Graded "
     "C at best.", caps="C")  # fmt: skip
declare("KE305", "warning", "a speedup over a tuned library is within what tuning gives",
     "check both sides' units and conditions; a gain of 10x over a vendor library or serving engine is "
     "almost always a measurement error, and is graded as one until a reviewer has reproduced it",
     "A claim of 10x or more over a vendor library or a serving engine of the baseline registry "
     "(`kevidence rules --baselines`) SHOULD be reproduced before it is believed: the fake >100x "
     "speedups on record (AMD GEAK #254, the Sakana AI CUDA Engineer) were broken timers, "
     "mislabelled units or another workload. Graded C at best; a reference implementation's "
     "baseline (C already) is not judged.", caps="C")  # fmt: skip

#: the smallest gain over a tuned library that KE305 asks to see reproduced
_HUGE = 10.0
#: the widest relative tolerance KE301 accepts beside a claim (a larger one is read as this):
#: claim and statistics are in one packet, only rounding separates them
_MAX_TOLERANCE = 0.05


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
        if basis not in TIME_BASES and _zero_baseline_rate(t, b, basis):
            add(("KE303", "/timing/speedup/value", f"the baseline's {basis} is 0: the speedup is undefined"))
        elif not (b.packet_id is not None and b.stats is None and b.serving is None):
            add(
                (
                    "KE302",
                    "/timing/speedup",
                    f"speedup on basis `{basis}` cannot be checked: candidate or baseline lacks that statistic",
                )
            )
    elif computed == _INF:
        add(
            (
                "KE303",
                "/timing/speedup/value",
                f"the candidate's {basis} time is 0 (or underflows to 0 s): the timings give an infinite speedup",
            )
        )
    else:
        tol = stated = s.tolerance
        if tol is None:
            tol = 0.02
        elif tol > _MAX_TOLERANCE:
            tol = _MAX_TOLERANCE  # a claim "1.4x, give or take 25%" hides an inflated one
        # the boundary is inside: 1.02 against 1.0 at tolerance 0.02 matches, whatever
        # the rounding of the subtraction
        if computed <= 0 or abs(s.value - computed) > tol * computed * HI + TINY:
            add(
                (
                    "KE301",
                    "/timing/speedup/value",
                    f"claimed speedup {s.value:g} does not match the timings: {basis} gives {computed:.4g} (tolerance {tol:g}"
                    + (
                        f"; the stated {stated:g} counts as {tol:g})"
                        if stated is not None and stated > tol
                        else ")"
                    ),
                )
            )
        elif s.value >= 1.0 > computed and _beyond_rounding(t, b, basis, s.value, computed, _FLIP_SLACK):
            add(
                (
                    "KE301",
                    "/timing/speedup/value",
                    f"claimed speedup {s.value:g} says faster, but {basis} gives {computed:.4g} (a slowdown): "
                    "no tolerance turns a slowdown into a speedup",
                )
            )
        elif s.value > computed * (1 + _UP_SLACK) and _beyond_rounding(
            t, b, basis, s.value, computed, _UP_SLACK
        ):
            add(
                (
                    "KE304",
                    "/timing/speedup/value",
                    f"claimed speedup {s.value:g} is {s.value / computed - 1:.1%} above what {basis} gives "
                    f"({computed:.4g}): the tolerance {tol if stated is None else stated:g} covers rounding, not a larger gain",
                )
            )
        elif basis != "median" and basis in TIME_BASES:
            _basis_supported(t, b, basis, computed, add)
    if s.value >= _HUGE:
        _huge_over_a_library(t, b, s.value, add)
    # KE304: the sides' samples handled alike (only packets that say how they handled them)
    cc = t.conditions
    bc = b.conditions
    st = t.stats
    bst = b.stats
    if (
        (cc is not None and cc.sample_handling is not None)
        or (bc is not None and bc.sample_handling is not None)
        or (st is not None and st.dropped)
        or (bst is not None and bst.dropped)
    ):
        _handling(t, b, cc, bc, add)
    if st is not None and not st.dropped and st.n is not None and bc is not None and bc.repeats is not None:
        _unstated_drop(t, b, st, bc, add)


_INF = float("inf")

#: how far above the computed speedup a claim may sit beyond the rounding of its digits (the
#: default tolerance: a wider stated one covers a claim below the timings, not above)
_UP_SLACK = 0.02
#: ... and how far a claim of 1 or more may sit above a slowdown
_FLIP_SLACK = 0.002


def _half_unit(x: float, cap_rel: bool) -> float:
    """Half a unit in the last digit of ``x`` as written; with ``cap_rel``, read to at most 3
    significant digits (``1.0`` is not taken as rounded to its units)."""
    if not x > 0 or x == _INF:
        return 0.0
    q = _quantum(x)
    if cap_rel:
        q = min(q, 10.0 ** (math.floor(math.log10(x)) - 2))
    return q / 2


def _beyond_rounding(t: Any, b: Any, basis: str, claim: float, computed: float, slack: float) -> bool:
    """Whether ``claim`` sits above ``computed`` by more than ``slack`` of it plus the rounding
    of the digits written: the claim's (to at most 3 significant digits) and, relative, the two
    statistics' it is computed from."""
    if basis in TIME_BASES:
        cs, bs = t.stats, b.stats
        c = getattr(cs, basis) if cs is not None else None
        r = getattr(bs, basis) if bs is not None else None
    else:
        cq = getattr(t.serving, basis) if t.serving is not None else None
        rq = getattr(b.serving, basis) if b.serving is not None else None
        c = cq.value if cq is not None else None
        r = rq.value if rq is not None else None
    rel = slack
    for x in (c, r):
        if x is not None and x > 0:
            rel += _half_unit(float(x), False) / x
    return claim - computed > (_half_unit(claim, True) + computed * rel) * HI + TINY


def _zero_baseline_rate(t: Any, b: Any, basis: str) -> bool:
    """True when both sides give ``basis`` (a throughput) and the baseline's is 0."""
    if t.serving is None or b.serving is None:
        return False
    c = getattr(t.serving, basis)
    r = getattr(b.serving, basis)
    return c is not None and r is not None and r.value == 0


def _median_of(s: Any) -> float | None:
    if s.median is not None:
        return float(s.median)
    xs = s.samples
    if not xs:
        return None
    ys = sorted(xs)
    n = len(ys)
    return float(ys[n // 2] if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2)


#: how far a claim on the mean or the minimum may exceed the median's speedup
_BASIS_SLACK = 1.25


def _basis_supported(t: Any, b: Any, basis: str, computed: float, add: Add) -> None:
    """KE304: a claim on the mean or minimum that the median speedup does not support."""
    cs, bs = t.stats, b.stats
    cm, bm = _median_of(cs), _median_of(bs)
    if cm is None or bm is None or cm <= 0:
        return
    med = bm * _FACTOR[bs.unit] / (cm * _FACTOR[cs.unit])
    if computed > 1 and computed > med * _BASIS_SLACK:
        add(
            (
                "KE304",
                "/timing/speedup/basis",
                f"the claim on the {basis} ({computed:.3g}x) is not what the typical call gives "
                f"(median: {med:.3g}x): one side's outliers or lucky samples make it",
            )
        )
    elif basis == "min" and computed > 1 and cs.samples and len(cs.samples) >= _LONE_MIN_N:
        _lone_min(cs, computed, add)


#: KE304: a minimum over this many samples or more can be judged a lone one
_LONE_MIN_N = 10
#: ... when the next-fastest sample is this much slower
_LONE_MIN_GAP = 1.1


def _lone_min(cs: Any, computed: float, add: Add) -> None:
    """KE304: a claim on the minimum whose candidate minimum is one lucky sample (a truncated
    event pair), far below the next-fastest ones, which cluster."""
    ys = sorted(cs.samples)
    lo, second = ys[0], ys[1]
    if not lo > 0 or second <= lo * _LONE_MIN_GAP:
        return
    gap = second - lo
    # the fastest tenth after the lone one cluster much closer than it lies below them
    k = max(2, len(ys) // 10 + 1)
    after = ys[k] - second
    quantum = max(_quantum(lo), _quantum(second))
    if gap <= 2 * after or gap <= 2 * quantum:
        return
    add(
        (
            "KE304",
            "/timing/speedup/basis",
            f"the claim on the min ({computed:.3g}x) rests on one sample: the candidate's fastest "
            f"{lo:g} {cs.unit} is {gap / second:.0%} below its next-fastest {second:g} (which give "
            f"{computed * lo / second:.3g}x), while the next {k - 1} lie within "
            f"{after:.3g} of that",
        )
    )


def _handling(t: Any, b: Any, cc: Any, bc: Any, add: Add) -> None:
    """KE304: samples trimmed (or dropped) on one side only (the candidate's slow ones, or
    the baseline's fast ones)."""
    ch, chp = cand(t, "sample_handling")
    bh = bc.sample_handling if bc is not None else None
    if ch is not None and bh is not None and ch != bh:
        who, ptr = ("candidate", chp) if ch != "all" else ("baseline", _B_HANDLING)
        add(
            (
                "KE304",
                ptr,
                f"the candidate's samples were {ch.replace('_', ' ')}, the baseline's {bh.replace('_', ' ')} "
                f"(the {who}'s differ): the sides are not summarised alike",
            )
        )
        return
    st, bs = t.stats, b.stats
    dropped = st.dropped if st is not None else None
    bdropped = bs.dropped if bs is not None else None
    if dropped and bs is not None and not bdropped and bh in (None, "all"):
        add(
            (
                "KE304",
                "/timing/stats/dropped",
                f"{dropped} candidate samples were dropped, no baseline sample: the sides are not summarised alike",
            )
        )
    elif bdropped and st is not None and not dropped and ch in (None, "all"):
        add(
            (
                "KE304",
                "/timing/baseline/stats/dropped",
                f"{bdropped} baseline samples were dropped, no candidate sample: the sides are not summarised alike",
            )
        )


_B_HANDLING = "/timing/baseline/conditions/sample_handling"


def _unstated_drop(t: Any, b: Any, st: Any, bc: Any, add: Add) -> None:
    """KE304: one side kept fewer samples than it timed, unsaid, while the other kept every
    one of its own (the fastest 21 of 51 calls: ``n: 21``, ``repeats: 51``)."""
    reps, rptr = cand(t, "repeats")
    bs = b.stats
    if reps is None or bs is None or bs.n is None or bs.dropped:
        return
    if st.n < reps and bs.n >= bc.repeats:
        ptr, who, kept, timed, other = "/timing/stats/n", "candidate", st.n, reps, "baseline"
    elif bs.n < bc.repeats and st.n >= reps:
        ptr, who, kept, timed, other = "/timing/baseline/stats/n", "baseline", bs.n, bc.repeats, "candidate"
    else:
        return
    add(
        (
            "KE304",
            ptr,
            f"the {who} kept {kept} of its {timed} timed calls, the {other} all of its own: "
            "the sides are not summarised alike",
        )
    )


def _huge_over_a_library(t: Any, b: Any, value: float, add: Add) -> None:
    """KE305: a gain of ``_HUGE`` or more over a vendor library or a serving engine."""
    name = b.provider or (b.engine.name if b.engine is not None else None)
    entry = baseline_entry(name) if name and len(name) <= 256 else None
    if entry is None or entry.kind not in ("vendor", "engine"):
        return
    side = "/timing/baseline/stats" if t.stats is not None else "/timing/baseline/serving"
    add(
        (
            "KE305",
            "/timing/speedup/value",
            f"{value:g}x over {entry.kind} `{entry.name}` ({side}): tuned code is rarely beaten 10x; check both sides' units and conditions",
        )
    )
