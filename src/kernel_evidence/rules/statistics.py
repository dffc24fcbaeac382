"""KE5xx: timing statistics are consistent with themselves and with their samples."""

from __future__ import annotations

import math
from operator import mul as _mul
from typing import Any

from ._common import CACHED_CHARS as _CACHED_CHARS
from ._common import HI as _HI
from ._common import LO as _LO
from ._common import TINY as _TINY
from ._common import cache_mode, cand, lazy_re
from ._context import Add, Ctx
from ._engine import declare
from ._units import FACTOR as _FACTOR

declare(
    "KE501",
    "error",
    "timing statistics are self-consistent",
    "recompute the statistics from the measurements",
    "For every statistics block: min <= median <= max, min <= mean <= max, percentiles named `pNN` and non-decreasing with NN and within [min, max], `p50` equal to the median (1%), ci_low <= median <= ci_high (ci_low <= ci_high when there is no median). "
    "A confidence interval (both ends given, with `n` or samples) MUST be at least a tenth as "
    "wide as the narrowest interval its block's spread gives: z * sigma / sqrt(n) for sigma = "
    "`std` and, with samples kept, their standard deviation and their distribution-free "
    "interval of the median (order statistics n/2 -+ z sqrt(n)/2), or, without, each "
    "percentile's, the min's and the max's distance from the median over its normal quantile "
    "(sqrt(2 ln n) for min and max); z is the normal quantile of `ci_level` (1.96 from 95% up) "
    "and the interval's ends are widened by one unit of their last digit. A narrower one is made up. "
    "Where a block gives its mean, min, max, `n` (or samples) and percentiles, the mean MUST lie "
    "within the bounds those percentiles allow: at most the mass below each percentile level at "
    "that percentile's value and the rest at the max (sum of (p_i+1 - p_i) x q_i+1 + (1 - "
    "p_last) x max), at least the mass below the first level at the min and each further share "
    "at the percentile below it; each level is moved by 1/n for the discrete definitions, each "
    "value by half a unit of its last digit, with 0.2% slack. A mean above the upper bound is a "
    "cut tail.",
)
declare(
    "KE502",
    "error",
    "at least one repeat",
    "time the kernel at least once; record warmup and repeats",
    "`timing.repeats`, when given, MUST be at least 1, and a statistics block's `n` at least 1.",
)
declare(
    "KE503",
    "error",
    "raw samples agree with the summary",
    "recompute median, min and max from the samples you kept",
    "When raw `samples` are kept, their median (1%), min and max MUST match the stated statistics (those given; a block may lack a median) and `n` MUST equal their count; "
    "when none were dropped (`dropped` absent or 0), a stated `mean` MUST match theirs (1%, widened "
    "by half a unit of the last digit the mean is written with).",
)
declare(
    "KE504",
    "warning",
    "repeats agree with the samples",
    "record repeats equal to the number of timed runs, and the samples dropped as `stats.dropped`",
    "When both are given, `timing.repeats` SHOULD equal the number of samples of `timing.stats` "
    "plus those it dropped (`stats.dropped`): kept samples that do not account for the timed "
    "calls (the fastest 11 of 31 kept, unsaid) are selectively reported. Graded C at best.",
    caps="C",
)
declare(
    "KE505",
    "error",
    "durations a timer can give",
    "fix the timer: a kernel takes at least a launch, and never no time",
    "A statistics block of either side MUST NOT give a median (or mean) duration of 0, nor, "
    "from any timer but the host clock, a minimum of 0, and "
    "with device event timers (`cuda_events`, `hip_events`, `triton_do_bench`) MUST NOT "
    "give one below 1 us (faster than a kernel launch), nor below 0.5 us when the calls "
    "were replayed from a CUDA graph (a kernel node still runs on the device): such times "
    "come from a broken or patched timer.",
)
declare(
    "KE506",
    "error",
    "std agrees with the samples",
    "recompute the standard deviation from the samples you kept",
    "A block's `std` MUST agree with its samples (within 10% of their standard deviation) "
    "and with its range: no larger than max - min (widened by one unit of the last digit "
    "min and max are written with, which rounding for a report may hide), and not 0 when "
    "min < max. Nor, with `n`, no samples kept and none dropped, smaller than the range forces: "
    "n values whose extremes lie max - min apart deviate from their mean by at least "
    "(max - min)^2 / 2 in squares, so their standard deviation (either convention) is at "
    "least (max - min) / sqrt(2n); the range is narrowed by one unit of the last digit min "
    "and max are written with and std widened by half a unit of its own, 10% slack.",
)
declare(
    "KE507",
    "error",
    "samples vary as measurements do",
    "record the measured samples, not one value repeated",
    "Ten or more kept samples that are all the same value, recorded "
    "to a resolution finer than 0.2% of it, MUST NOT appear: no timer repeats to that "
    "resolution over many runs; a constant is a patched or copied timing. Nor ten or more "
    "that differ but all lie within 1e-4 of their median of each other (device event timers: "
    "`cuda_events`, `hip_events`, `triton_do_bench`, whose launches jitter by more) or within "
    "1e-5 (any other timer): a constant nudged to look measured. Nor a series made up rather "
    "than measured: the candidate's ten or more samples equal to the baseline's, in the same "
    "order or both sorted, times one constant or plus one constant (each within the rounding "
    "of the digits both are written with, over a spread of at least 50 times that); ten or "
    "more samples, written with 4 or more significant digits, holding a run of 5 or more "
    "values that recurs elsewhere in the series, where so long a repeat is not chance (the "
    "product of its values' shares of the series, times the number of places it could recur, "
    "below 1e-6); or ten or more samples whose sorted gaps are all equal (within 1% of their "
    "mean gap, plus the rounding of the digits written, the mean gap at least 5 units of "
    "that rounding): an arithmetic progression, shuffled or not.",
)
declare("KE508", "warning", "a claim rests on warmed, repeated timings",
     "warm up and time each side many times (e.g. 10 warmup calls and 50 timed ones)",
     "A speedup claim SHOULD rest on at least three timed calls per side and on timings after "
     "a warmup (`warmup` >= 1; cold-start timing on both sides excepted): one cold call "
     "measures compilation, autotuning and noise, and the median of two calls is their mean, "
     "which one cold call moves. The repeats a side's conditions record and the calls its "
     "statistics block holds (`n`, else its samples) are each held to this (pointer: that "
     "block's `n` where the block holds fewer). Graded C at best.", caps="C")  # fmt: skip

_PCT = lazy_re(r"^p(\d+(?:\.\d+)?)$")
_LATENCIES = ("ttft", "tpot", "itl", "e2el")
#: the pointers of the latency blocks, in the order of ``_LATENCIES`` (ttft, tpot, itl, e2el)
_SERVING_PTRS = tuple(f"/timing/serving/{k}" for k in _LATENCIES)
_BASELINE_SERVING_PTRS = tuple(f"/timing/baseline/serving/{k}" for k in _LATENCIES)


def check(p: Any, ctx: Ctx, add: Add) -> None:
    t = p.timing
    if t is None:
        return
    st = t.stats
    repeats = t.repeats
    if repeats is not None:
        if repeats < 1:
            add(("KE502", "/timing/repeats", f"repeats is {repeats}; expected at least 1"))
        elif st is not None and st.samples and len(st.samples) + (st.dropped or 0) != repeats:
            kept = f"{len(st.samples)} samples are kept" + (
                f" and {st.dropped} dropped" if st.dropped else ""
            )
            missing = repeats - len(st.samples) - (st.dropped or 0)
            if missing > 0:
                kept += f": {missing} timed calls are in neither (which were left out, and why?)"
            add(("KE504", "/timing/repeats", f"repeats is {repeats} but {kept}"))
    cc = t.conditions
    m = cc.method if cc is not None and cc.method is not None else t.method
    # every statistics block: candidate, its serving latencies, then the baseline's
    # the samples' sums, when summed (KE503's mean), for KE506's standard deviation
    total = btotal = None
    if st is not None:
        total = _stats("/timing/stats", st, add, _NEAR_EVENTS if m in _EVENT_TIMERS else _NEAR)
    sv = t.serving
    if sv is not None:
        _serving_stats(sv, _SERVING_PTRS, add)
    b = t.baseline
    bs = None
    if b is not None:
        bc = b.conditions
        bm = bc.method if bc is not None and bc.method else m
        bs = b.stats
        if bs is not None:
            btotal = _stats("/timing/baseline/stats", bs, add, _NEAR_EVENTS if bm in _EVENT_TIMERS else _NEAR)
        sv = b.serving
        if sv is not None:
            _serving_stats(sv, _BASELINE_SERVING_PTRS, add)
    # KE505/KE506: degenerate durations and spreads, each side
    if st is not None:
        _degenerate("/timing/stats", st, m, cc, add, total)
    if bs is not None:
        _degenerate("/timing/baseline/stats", bs, bm, bc, add, btotal)
        # KE507: one side's series the other's times or plus a constant (a cheap test of the
        # stated extremes and medians first; KE503 holds them to the samples)
        if st is not None:
            xs = st.samples
            ys = bs.samples
            if xs and ys and len(xs) == len(ys) >= 10:
                _copied(st, bs, xs, ys, add)
    if ctx.claim and st is not None:
        _warmed(t, st, b, add)


#: timers that time a call with device events around it (triton's do_bench does)
_EVENT_TIMERS = frozenset({"cuda_events", "hip_events", "triton_do_bench"})
#: KE507: the least relative range (max - min over the median) of ten or more samples that
#: differ: event timers (a launch and two event records per call jitter by far more), other
#: timers (ns-resolution profilers on locked clocks: still tens of ns on a ms kernel)
_NEAR_EVENTS = 1e-4
_NEAR = 1e-5
#: the least a kernel takes from an event timer: a launch (1 us), and a kernel node of a
#: CUDA graph still runs on the device for about a microsecond (half of it allowed)
_FLOOR_S = 1e-6
_GRAPH_FLOOR_S = 0.5e-6


def _degenerate(ptr: str, s: Any, method: str, c: Any, add: Add, total: float | None) -> None:
    """KE505 (zero or sub-launch durations) and KE506 (std against samples and range);
    ``total``: the sum of the block's samples when :func:`_stats` summed them."""
    typical = s.median
    key = "median"
    if typical is None:
        typical, key = s.mean, "mean"
    if typical is not None:
        if typical == 0:
            add(("KE505", f"{ptr}/{key}", f"a {key} duration of 0: no call takes no time"))
        elif s.min == 0 and method != "host_clock":
            # some calls timed at 0 (an aggregator that underflows, a patched timer): a
            # device or profiler timer never gives a kernel no time (a coarse host clock can)
            add(("KE505", f"{ptr}/min", f"a call timed at 0 {s.unit} by {method}: no call takes no time"))
        elif method in _EVENT_TIMERS and typical * _FACTOR[s.unit] < _FLOOR_S:
            graphs = c.cache.cuda_graph_replays if c is not None and c.cache is not None else None
            if not graphs or typical * _FACTOR[s.unit] < _GRAPH_FLOOR_S:
                add(
                    (
                        "KE505",
                        f"{ptr}/{key}",
                        f"a {key} of {typical:g} {s.unit} from {method}: faster than a kernel runs "
                        f"({'0.5 us from CUDA-graph replays' if graphs else '1 us with its launch'})",
                    )
                )
    if s.std is not None:
        _std(ptr, s, add, total)


def _quantum(x: float) -> float:
    """One unit in the last significant digit of ``x`` as written (shortest round-trip
    repr): ``2.65`` -> 0.01, ``0.0123`` -> 0.0001. A value rounded for a report (KernelBench
    keeps 3 significant digits) may be off by half of it; a full-precision float's quantum
    is negligible."""
    if x == 0 or not math.isfinite(x):
        return 0.0
    digits = repr(abs(x))
    if "e" in digits or "E" in digits:
        mantissa, _, exp = digits.lower().partition("e")
        sig = mantissa.replace(".", "").lstrip("0")
        return 10.0 ** (int(exp) - (len(sig) - 1 if "." in mantissa else 0)) if sig else 0.0
    frac = digits.partition(".")[2].rstrip("0")
    # a whole number counts as written to its units (trailing zeros are not read as rounding)
    return 10.0 ** -len(frac) if frac else 1.0


def _std(ptr: str, s: Any, add: Add, total: float | None = None) -> None:
    std = s.std
    lo, hi = s.min, s.max
    if lo is not None and hi is not None and hi >= lo:
        # min and max rounded for a report can each be off by half a unit of their last
        # digit: the true range may exceed the written one by up to one unit
        if std > (hi - lo) * _HI + _TINY and std > (hi - lo + max(_quantum(lo), _quantum(hi))) * _HI + _TINY:
            add(("KE506", f"{ptr}/std", f"std {std:g} is larger than the range {hi - lo:g} of the values"))
            return
        if std == 0 and hi > lo:
            add(("KE506", f"{ptr}/std", f"std 0 while the values range from {lo:g} to {hi:g}"))
            return
        # from below: n values spanning the range deviate by at least (hi - lo)^2 / 2 in
        # squares (the two extremes about their midpoint), so std >= (hi - lo) / sqrt(2n);
        # without the slack and rounding first, squared (the common case passes it)
        # (kept samples give the exact test below)
        n = s.n
        if (
            n is not None
            and n > 1
            and 2 * n * std * std < (hi - lo) * (hi - lo)
            and not s.samples
            and not s.dropped
        ):
            rng = hi - lo - max(_quantum(lo), _quantum(hi))
            least = rng / math.sqrt(2 * n)
            if (std + _quantum(std) / 2) * _SLACK_STD < least:
                add(
                    (
                        "KE506",
                        f"{ptr}/std",
                        f"std {std:g} is below what {n} values ranging from {lo:g} to {hi:g} "
                        f"allow: at least (max - min) / sqrt(2n) = {least:.3g}",
                    )
                )
                return
    xs = s.samples
    if not xs or len(xs) < 2:
        return
    n = len(xs)
    mean = (sum(xs) if total is None else total) / n
    var = max(sum(map(_mul, xs, xs)) - n * mean * mean, 0.0)
    sd0 = math.sqrt(var / n)
    sd1 = math.sqrt(var / (n - 1))
    slack = 1e-9 * (abs(mean) + 1.0)
    if std < sd0 * 0.9 - slack or std > sd1 * 1.1 + slack:
        add(("KE506", f"{ptr}/std", f"std {std:g} does not match the samples' standard deviation {sd1:.4g}"))


#: KE506: slack on the least std the range allows (beyond the rounding of the digits written)
_SLACK_STD = 1.1

#: KE508: the fewest timed calls per side a claim can rest on (the median of two is their mean)
_FEWEST = 3


def _few(who: str, r: int) -> str:
    """KE508's words for a side timed ``r`` (1 or 2) times."""
    if r == 1:
        return f"the {who} was timed once: one call cannot support a speedup"
    return (
        f"the {who} was timed {r} times: the median of {r} calls is their mean, which one cold or "
        f"noisy call moves (time each side at least {_FEWEST} times)"
    )


def _warmed(t: Any, st: Any, b: Any, add: Add) -> None:
    """KE508: fewer than three timed calls, or no warmup, on either side of a claim."""
    # cand(t, "repeats") and cand(t, "warmup") inline, their pointers worked out when reported
    c = t.conditions
    r = c.repeats if c is not None else None
    if r is None:
        r = t.repeats
        if r is None:
            r = st.n
    rptr = ""
    if r is not None and 0 < r < _FEWEST:
        stated, rptr = cand(t, "repeats")
        if stated is None:
            rptr = "/timing/stats/n"
        add(("KE508", rptr, _few("candidate", r)))
    if rptr != "/timing/stats/n":
        # the timings themselves (as the baseline's below)
        xs = st.samples
        sn = len(xs) if xs else st.n
        if sn is not None and 0 < sn < _FEWEST:
            add(("KE508", "/timing/stats/n", _few("candidate", sn)))
    w = c.warmup if c is not None else None
    if w is None:
        w = t.warmup
    if w == 0 and cache_mode(t)[0] != "cold_start":
        wptr = cand(t, "warmup")[1]
        add(
            (
                "KE508",
                wptr,
                "the candidate was timed without warmup: its first call (compilation, autotuning) is timed",
            )
        )
    if b is None:
        return
    bc = b.conditions
    br = bc.repeats if bc is not None else None
    brptr = "/timing/baseline/conditions/repeats"
    if br is None and b.stats is not None and b.stats.n is not None:
        br, brptr = b.stats.n, "/timing/baseline/stats/n"
    if br is not None and 0 < br < _FEWEST:
        add(("KE508", brptr, _few("baseline", br)))
    bs = b.stats
    if bs is not None and brptr != "/timing/baseline/stats/n":
        # the timings themselves: a stats block of fewer than three calls is what the claim
        # rests on, whatever its conditions say
        xs = bs.samples
        bn = len(xs) if xs else bs.n
        if bn is not None and 0 < bn < _FEWEST:
            add(("KE508", "/timing/baseline/stats/n", _few("baseline", bn)))
    if bc is not None and bc.warmup == 0 and not (bc.cache is not None and bc.cache.mode == "cold_start"):
        add(
            (
                "KE508",
                "/timing/baseline/conditions/warmup",
                "the baseline was timed without warmup: its first call (loading, autotuning) is timed",
            )
        )


def _serving_stats(sv: Any, ptrs: tuple[str, ...], add: Add) -> None:
    """Each latency statistics block of a serving run (``ptrs``: their pointers)."""
    for s, ptr in zip((sv.ttft, sv.tpot, sv.itl, sv.e2el), ptrs, strict=True):
        if s is not None:
            _stats(ptr, s, add)


_PCT_CACHE: dict[str, float | None] = {}


def _pct(key: str) -> float | None:
    """``"p99.9"`` -> 99.9; None for a key that is not a percentile (cached)."""
    try:
        return _PCT_CACHE[key]
    except KeyError:
        m = _PCT.match(key)
        q = float(m.group(1)) if m is not None and float(m.group(1)) <= 100 else None
        if len(_PCT_CACHE) < 4096 and len(key) <= _CACHED_CHARS:
            _PCT_CACHE[key] = q
        return q


_ORDER_CACHE: dict[tuple[str, ...], list[tuple[float | None, str]]] = {}
#: the key tuples of _ORDER_CACHE that are all percentiles, already in level order: their
#: p50 keys (see _stats)
_LEVEL_ORDER: dict[tuple[str, ...], tuple[str, ...]] = {}


def _percentile_order(keys: tuple[str, ...]) -> list[tuple[float | None, str]]:
    """Keys that are not percentiles first (reported in their order), then percentiles by
    level (ties by key); cached per key tuple, as a batch repeats the same few key sets."""
    bad = [(None, k) for k in keys if _pct(k) is None]
    good = sorted((q, k) for k in keys if (q := _pct(k)) is not None)
    order: list[tuple[float | None, str]] = [*bad, *good]
    if len(_ORDER_CACHE) < 1024 and sum(map(len, keys)) <= _CACHED_CHARS:
        _ORDER_CACHE[keys] = order
        if not bad and tuple(k for _, k in good) == keys:
            _LEVEL_ORDER[keys] = tuple(k for q, k in good if q == 50)
    return order


def _stats(ptr: str, s: Any, add: Add, near: float = _NEAR) -> float | None:
    """Every check of one statistics block; returns the sum of its samples when it summed
    them (for KE503's mean), else None."""
    med = s.median
    lo = s.min
    hi = s.max
    mean = s.mean
    if med is None:
        if mean is None:
            add(("KE501", f"{ptr}", "statistics block has neither a median nor a mean"))
        return _stats_without_median(ptr, s, add, near)
    # the common case first: 0 <= min <= median, mean <= max leaves nothing to say below (the
    # slack only widens the bounds of values >= 0); a missing bound (None) or NaN takes the
    # detailed checks
    try:
        plain = 0.0 <= lo <= med <= hi and lo <= mean <= hi
    except TypeError:
        plain = False
    if not plain:
        if lo is not None and lo > med * _HI:
            add(("KE501", f"{ptr}/min", f"min {lo:g} is above the median {med:g}"))
        if hi is not None and hi < med * _LO:
            add(("KE501", f"{ptr}/max", f"max {hi:g} is below the median {med:g}"))
        if mean is not None and (
            (lo is not None and mean < lo * _LO) or (hi is not None and mean > hi * _HI)
        ):
            _mean_within(ptr, mean, lo, hi, add)
    pcts = s.percentiles
    if pcts:
        # the common case in a few steps: percentile keys already in level order (known from
        # an earlier block), values that never decrease from the min (>= 0, so none is below
        # the one before by the slack either) to at most the max, and p50 within 1% of the
        # median, leave nothing to say; anything else takes _percentiles, which words it
        mids = _LEVEL_ORDER.get(tuple(pcts)) if plain else None
        if mids is None:
            _percentiles(ptr, pcts, med, lo, hi, add)
        else:
            prev = lo
            for val in pcts.values():
                if not val >= prev:  # NaN too
                    _percentiles(ptr, pcts, med, lo, hi, add)
                    break
                prev = val
            else:
                if not prev <= hi:
                    _percentiles(ptr, pcts, med, lo, hi, add)
                else:
                    for k in mids:
                        val = pcts[k]  # >= 0: equal to the median is within 1% of it
                        if val != med and abs(val - med) > 0.01 * (val if val > med else med):
                            _percentiles(ptr, pcts, med, lo, hi, add)
                            break
    cl = s.ci_low
    ch = s.ci_high
    if cl is not None and cl > med * _HI:
        add(("KE501", f"{ptr}/ci_low", f"confidence interval low {cl:g} is above the median {med:g}"))
    if ch is not None and ch < med * _LO:
        add(("KE501", f"{ptr}/ci_high", f"confidence interval high {ch:g} is below the median {med:g}"))
    n = s.n
    if n is not None and n < 1:
        add(("KE502", f"{ptr}/n", f"n is {n}; expected at least 1"))
    xs = s.samples
    ys: list[float] | None = None
    total: float | None = None
    if xs:
        # _samples(ptr, xs, n, med, lo, hi, add), inline
        count = len(xs)
        if n is not None and n != count:
            add(("KE503", f"{ptr}/n", f"n is {n} but {count} samples are kept"))
        ys = sorted(xs)
        mid = count // 2
        # summaries computed from the samples match them exactly (the common case): equal
        # values >= 0 are within any relative tolerance of each other
        if not (count % 2 and (ys[0], ys[mid], ys[-1]) == (lo, med, hi) and plain):
            smed = ys[mid] if count % 2 else (ys[mid - 1] + ys[mid]) / 2
            y0 = ys[0]
            y1 = ys[-1]
            if abs(smed - med) > 0.01 * (smed if smed > med else med):
                add(("KE503", f"{ptr}/median", f"median {med:g} does not match the samples' median {smed:g}"))
            if lo is not None and abs(y0 - lo) > 1e-6 * (y0 if y0 > lo else lo):
                add(("KE503", f"{ptr}/min", f"min {lo:g} does not match the samples' min {y0:g}"))
            if hi is not None and abs(y1 - hi) > 1e-6 * (y1 if y1 > hi else hi):
                add(("KE503", f"{ptr}/max", f"max {hi:g} does not match the samples' max {y1:g}"))
        # KE503's mean (none dropped): the samples' mean lies between the bounds the sorted
        # samples give (those below the middle one at least the min, the others at least
        # it; ...), so a tight series within 1% of the stated mean needs no sum
        if (
            mean is not None
            and not s.dropped
            and not (
                (ys[0] * mid + ys[mid] * (count - mid)) >= mean * 0.99 * count
                and (ys[mid] * (mid + 1) + ys[-1] * (count - mid - 1)) <= mean * 1.01 * count
            )
        ):
            total = sum(xs)
            smean = total / count
            if abs(smean - mean) > 0.01 * (smean if smean > mean else mean):
                _sample_mean(ptr, mean, smean, add)
        if count >= 10:
            if ys[-1] - ys[0] < near * ys[mid]:
                _constant(ptr, s.unit, ys, near, add)
            else:
                _made_up(ptr, s.unit, xs, ys, add)
    if pcts and mean is not None and lo is not None and hi is not None and lo <= mean <= hi:
        _mean_bounds(ptr, s, pcts, med, mean, lo, hi, add)
    if cl is not None and ch is not None and med <= ch and cl <= med:
        _ci_width(ptr, s, med, ys, add)
    return total


def _samples(
    ptr: str, xs: list[float], n: int | None, med: float | None, lo: float | None, hi: float | None, add: Add
) -> None:
    """KE503: raw samples agree with n, the median (when given), min and max."""
    count = len(xs)
    if n is not None and n != count:
        add(("KE503", f"{ptr}/n", f"n is {n} but {count} samples are kept"))
    ys = sorted(xs)
    mid = count // 2
    smed = ys[mid] if count % 2 else (ys[mid - 1] + ys[mid]) / 2
    # all values are >= 0 (the schema says so): the larger one bounds the relative difference
    if med is not None and abs(smed - med) > 0.01 * (smed if smed > med else med):
        add(("KE503", f"{ptr}/median", f"median {med:g} does not match the samples' median {smed:g}"))
    y0, y1 = ys[0], ys[-1]
    if lo is not None and abs(y0 - lo) > 1e-6 * (y0 if y0 > lo else lo):
        add(("KE503", f"{ptr}/min", f"min {lo:g} does not match the samples' min {y0:g}"))
    if hi is not None and abs(y1 - hi) > 1e-6 * (y1 if y1 > hi else hi):
        add(("KE503", f"{ptr}/max", f"max {hi:g} does not match the samples' max {y1:g}"))


def _mean_within(ptr: str, mean: float, lo: float | None, hi: float | None, add: Add) -> None:
    if lo is not None and mean < lo * _LO:
        add(("KE501", f"{ptr}/mean", f"mean {mean:g} is below the min {lo:g}"))
    if hi is not None and mean > hi * _HI:
        add(("KE501", f"{ptr}/mean", f"mean {mean:g} is above the max {hi:g}"))


def _percentiles(
    ptr: str, pcts: dict[str, float], med: float | None, lo: float | None, hi: float | None, add: Add
) -> None:
    """Percentile keys are ``pNN``; values do not decrease with NN, stay within [min, max],
    and p50 equals the median (1%) when there is one."""
    keys = tuple(pcts)
    order = _ORDER_CACHE.get(keys)
    if order is None:
        order = _percentile_order(keys)
    pk = pv = None
    for q, k in order:
        val = pcts[k]
        if q is None:
            bad = f"percentile key `{k}` is not of the form p0..p100 (e.g. p50, p99.9)"
            add(("KE501", f"{ptr}/percentiles/{k}", bad))
            continue
        if pv is not None and val < pv * _LO:
            add(
                (
                    "KE501",
                    f"{ptr}/percentiles/{k}",
                    f"{k} = {val:g} is below {pk} = {pv:g}; percentiles must not decrease",
                )
            )
        pk, pv = k, val
        if med is not None and q == 50 and abs(val - med) > 0.01 * (val if val > med else med):
            add(("KE501", f"{ptr}/percentiles/{k}", f"p50 = {val:g} differs from the median {med:g}"))
        if lo is not None and val < lo * _LO:
            add(("KE501", f"{ptr}/percentiles/{k}", f"{k} = {val:g} is below the min {lo:g}"))
        if hi is not None and val > hi * _HI:
            add(("KE501", f"{ptr}/percentiles/{k}", f"{k} = {val:g} is above the max {hi:g}"))


def _stats_without_median(ptr: str, s: Any, add: Add, near: float = _NEAR) -> float | None:
    """The checks that need no median, for blocks that only report mean and percentiles;
    returns the sum of the samples when it summed them."""
    lo, hi, mean = s.min, s.max, s.mean
    if mean is not None:
        _mean_within(ptr, mean, lo, hi, add)
    if s.percentiles:
        _percentiles(ptr, s.percentiles, None, lo, hi, add)
    if s.ci_low is not None and s.ci_high is not None and s.ci_low > s.ci_high * _HI:
        add(
            (
                "KE501",
                f"{ptr}/ci_low",
                f"confidence interval low {s.ci_low:g} is above its high {s.ci_high:g}",
            )
        )
    if s.n is not None and s.n < 1:
        add(("KE502", f"{ptr}/n", f"n is {s.n}; expected at least 1"))
    ys = total = None
    if s.samples:
        xs = s.samples
        _samples(ptr, xs, s.n, None, lo, hi, add)
        if mean is not None and not s.dropped:
            total = sum(xs)
            _sample_mean(ptr, mean, total / len(xs), add)
        if len(xs) >= 10:
            ys = sorted(xs)
            if ys[-1] - ys[0] < near * ys[len(ys) // 2]:
                _constant(ptr, s.unit, ys, near, add)
            else:
                _made_up(ptr, s.unit, xs, ys, add)
    if s.percentiles and mean is not None and lo is not None and hi is not None and lo <= mean <= hi:
        _mean_bounds(ptr, s, s.percentiles, None, mean, lo, hi, add)
    if s.ci_low is not None and s.ci_high is not None and s.ci_low <= s.ci_high:
        _ci_width(ptr, s, None, ys if ys is not None or not s.samples else sorted(s.samples), add)
    return total


def _identical(ptr: str, value: float, count: int, add: Add) -> None:
    """KE507: ``count`` values all equal to ``value``, at a resolution no timer repeats to."""
    if value <= 0:
        return  # KE505 says what is wrong with 0
    text = repr(float(value))
    if "e" in text:
        mant, exp = text.split("e")
        decimals = len(mant.split(".")[1].rstrip("0")) if "." in mant else 0
        quantum = 10.0 ** (int(exp) - decimals)
    else:
        whole, _, frac = text.partition(".")
        frac = frac.rstrip("0")
        # an integer's trailing zeros may be the timer's resolution (1000000 ns)
        quantum = 10.0 ** -len(frac) if frac else 10.0 ** (len(whole) - len(whole.rstrip("0")))
    if quantum / value < 2e-3:
        add(
            (
                "KE507",
                ptr,
                f"{count} values all exactly {value:g}: no timer repeats to that resolution over {count} runs",
            )
        )


def _sample_mean(ptr: str, mean: float, smean: float, add: Add) -> None:
    """KE503: a stated mean that is not ``smean``, the mean of the samples kept (none
    dropped), by 1% and half a unit of the last digit the mean is written with."""
    if abs(smean - mean) > 0.01 * max(smean, mean) + _quantum(mean) / 2:
        add(("KE503", f"{ptr}/mean", f"mean {mean:g} does not match the samples' mean {smean:.6g}"))


def _constant(ptr: str, unit: str, ys: list[float], near: float, add: Add) -> None:
    """KE507: ten or more samples (sorted ``ys``) all equal (:func:`_identical`), or that
    differ by less than ``near`` of their median: a constant with a value or two nudged,
    not a timer's readings."""
    count = len(ys)
    spread = ys[-1] - ys[0]
    if spread == 0:
        _identical(ptr, ys[0], count, add)
        return
    med = ys[count // 2]
    add(
        (
            "KE507",
            f"{ptr}/samples",
            f"{count} samples all within {spread:.3g} {unit} of each other ({spread / med:.1e} of the "
            f"median {med:g}, under {near:g}): no timer repeats that closely over {count} runs",
        )
    )


#: the two-sided normal quantile of a 95% confidence interval, used for every level from 95%
#: up (the lenient end: a higher level only widens the interval the spread allows)
_Z95 = 1.959963984540054
#: KE501: how much narrower than the spread allows a confidence interval may be
_CI_FACTOR = 0.1


def _ci_width(ptr: str, s: Any, med: float | None, ys: list[float] | None, add: Add) -> None:
    """KE501: a confidence interval far narrower than the block's spread allows (a made-up
    interval: +-0.001% over samples that spread 1%). ``ys``: the sorted samples, if kept."""
    lo = s.ci_low
    hi = s.ci_high
    n = len(ys) if ys else s.n
    if n is None or n < 2:
        return
    level = s.ci_level
    z = _Z95 if level is None or level >= 0.95 else _z(level)
    if z <= 0:
        return
    # half the width, widened by one unit of the last digit either end is written with
    half = (hi - lo) / 2
    allowed = _CI_FACTOR * z / math.sqrt(n)
    std = s.std
    # the common case: as wide as a tenth of what std gives (an interval judged wide enough
    # by any of the spreads below is not made up)
    if std is not None and half >= allowed * std:
        return
    half += max(_quantum(lo), _quantum(hi)) / 2
    if std is not None and half >= allowed * std:
        return
    if ys:
        # samples: the distribution-free interval of the median (order statistics about
        # n/2 -+ z sqrt(n)/2, taken a rank inside, never wider than the exact binomial one),
        # robust to a slow tail, or the mean's z * sd / sqrt(n)
        k = max(1, min(int(n / 2 - z * math.sqrt(n) / 2 + 0.5) + 1, (n + 1) // 2))
        wide = ys[n - k] - ys[k - 1]
        if half >= _CI_FACTOR * wide / 2:
            return
        mean = sum(ys) / n
        sd = math.sqrt(max(sum((y - mean) ** 2 for y in ys) / (n - 1), 0.0))
        if half >= allowed * sd:
            return
        what = f"the samples give +-{wide / 2:.3g} (median) and +-{z * sd / math.sqrt(n):.3g} (mean)"
    else:
        # no samples: the smallest spread the summary gives (std; each percentile's and min's
        # and max's distance from the median, over its normal quantile): a slow tail inflates
        # std and the upper ones, not all of them
        sigmas = [std] if std is not None else []
        if med is not None:
            root = math.sqrt(2 * math.log(n))
            if s.min is not None and s.min <= med:
                sigmas.append((med - s.min) / root)
            if s.max is not None and s.max >= med:
                sigmas.append((s.max - med) / root)
            for key, val in (s.percentiles or {}).items():
                q = _pct(key)
                if q is not None and 0 < q < 100 and q != 50:
                    sigmas.append(abs(val - med) / abs(_z(abs(2 * q / 100 - 1))))
        if not sigmas:
            return
        sigma = min(sigmas)
        if half >= allowed * sigma:
            return
        what = f"its spread (sigma {sigma:.3g} {s.unit} over n = {n}) gives +-{z * sigma / math.sqrt(n):.3g}"
    add(
        (
            "KE501",
            f"{ptr}/ci_low",
            f"confidence interval [{lo:g}, {hi:g}] {s.unit} (+-{(hi - lo) / 2:.3g}) is far narrower than "
            f"{what}: a made-up interval",
        )
    )


def _z(level: float) -> float:
    """The two-sided normal quantile of confidence ``level`` (0..1): 0.95 -> 1.96."""
    if level <= 0:
        return 0.0
    if level >= 1:
        return math.inf
    lo, hi = 0.0, 40.0
    target = 1 - level  # erfc(z / sqrt 2) is the two-sided tail
    for _ in range(60):
        mid = (lo + hi) / 2
        if math.erfc(mid / math.sqrt(2)) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# ---------------------------------------------------------------- made-up series (KE507)

#: KE507: a repeated run of samples is pasted when chance would give it less often than this
_CHANCE = 1e-6
#: the shortest repeated run, and the fewest significant digits its values are written with
_RUN = 5
_SIG = 1000.0


def _made_up(ptr: str, unit: str, xs: list[float], ys: list[float], add: Add) -> None:
    """KE507: ten or more samples (``xs`` as kept, ``ys`` sorted) that hold a pasted block or
    form an arithmetic progression."""
    count = len(xs)
    # a block pasted again repeats at least _RUN values (a set is cheap)
    if len(set(xs)) <= count - _RUN:
        _pasted(ptr, unit, xs, add)
    # an arithmetic progression: the first, last and middle gaps near the mean gap first
    g = (ys[-1] - ys[0]) / (count - 1)
    mid = count // 2
    if (
        g > 0
        and abs(ys[1] - ys[0] - g) <= 0.5 * g
        and abs(ys[-1] - ys[-2] - g) <= 0.5 * g
        and abs(ys[mid] - ys[0] - mid * g) <= 0.5 * g
    ):
        _progression(ptr, unit, ys, g, add)


def _pasted(ptr: str, unit: str, xs: list[float], add: Add) -> None:
    """KE507: a run of _RUN or more values that recurs elsewhere in ``xs``, not by chance: the
    product of its values' shares of the series times the places it could recur is below
    _CHANCE (a steady timer's few levels repeat runs by chance; finely written ones do not)."""
    n = len(xs)
    counts: dict[float, int] = {}
    for x in xs:
        counts[x] = counts.get(x, 0) + 1
    first: dict[tuple[float, ...], int] = {}
    for i in range(n - _RUN + 1):
        key = tuple(xs[i : i + _RUN])
        j = first.get(key)
        if j is None:
            first[key] = i
            continue
        if i - j < _RUN:
            continue  # overlapping: a level held over a stretch
        run = _RUN
        while i + run < n and j + run < i and xs[j + run] == xs[i + run]:
            run += 1
        block = xs[j : j + run]
        if any(not x > 0 or x < _SIG * _quantum(x) for x in block):
            continue  # written with fewer than 4 significant digits: levels repeat
        chance = (n - run + 1) ** 2 / 2
        for x in block:
            chance *= counts[x] / n
        if chance < _CHANCE:
            add(
                (
                    "KE507",
                    f"{ptr}/samples",
                    f"samples {j}..{j + run - 1} ({', '.join(f'{x:g}' for x in block[:3])}, ...) recur "
                    f"exactly as samples {i}..{i + run - 1} {unit}: a pasted block, not {n} measurements",
                )
            )
            return


def _progression(ptr: str, unit: str, ys: list[float], g: float, add: Add) -> None:
    """KE507: sorted samples ``ys`` whose gaps all equal the mean gap ``g`` (1%, plus the
    rounding of the digits written, itself at most a fifth of the gap); all exactly equal
    (a timer's ticks, each level hit once) only from 20 samples."""
    q = min(_quantum(y) for y in ys[:8])
    if g < 5 * q:
        return
    tol = 0.01 * g + q
    lo = hi = ys[1] - ys[0]
    for a, b in zip(ys, ys[1:], strict=False):
        d = b - a
        if abs(d - g) > tol:
            return
        lo = min(lo, d)
        hi = max(hi, d)
    n = len(ys)
    if hi - lo <= 1e-6 * g and n < 20:
        return
    add(
        (
            "KE507",
            f"{ptr}/samples",
            f"the {n} samples, sorted, are evenly spaced {g:.4g} {unit} apart (every gap within "
            f"{tol:.2g} of it): an arithmetic progression, not timer readings",
        )
    )


def _copied(st: Any, bs: Any, xs: list[float], ys: list[float], add: Add) -> None:
    """KE507: the candidate's samples ``xs`` equal the baseline's ``ys`` times or plus one
    constant, in the order kept or both sorted, within the rounding of their digits."""
    xlo, xhi, xmed = st.min, st.max, st.median
    ylo, yhi, ymed = bs.min, bs.max, bs.median
    if None in (xlo, xhi, xmed, ylo, yhi, ymed) or not (ylo > 0 and xhi > xlo):
        return
    # cheap: extremes and medians in one ratio, or one difference (1e-3 of the values)
    k = xlo / ylo
    scaled = abs(xhi - k * yhi) <= 1e-3 * xhi and abs(xmed - k * ymed) <= 1e-3 * xmed
    c = xlo - ylo
    top = xhi if xhi > yhi else yhi
    shifted = abs(xhi - yhi - c) <= 1e-3 * top and abs(xmed - ymed - c) <= 1e-3 * top
    if not (scaled or shifted):
        return
    qx = min(_quantum(x) for x in xs[:8])
    qy = min(_quantum(y) for y in ys[:8])
    n = len(xs)
    for a, b in ((xs, ys), (sorted(xs), sorted(ys))):
        if scaled:
            k = sum(a) / sum(b)
            tol = qx + k * qy + 1e-9 * xhi
            if xhi - xlo >= 50 * tol and all(abs(x - k * y) <= tol for x, y in zip(a, b, strict=True)):
                how = f"times {k:.6g}"
                break
        if shifted:
            c = (sum(a) - sum(b)) / n
            tol = qx + qy + 1e-9 * top
            if xhi - xlo >= 50 * tol and all(abs(x - y - c) <= tol for x, y in zip(a, b, strict=True)):
                how = f"plus {c:.6g} {st.unit}"
                break
    else:
        return
    order = "in the same order" if a is xs else "sorted"
    for ptr, who, other in (
        ("/timing/stats", "candidate", "baseline"),
        ("/timing/baseline/stats", "baseline", "candidate"),
    ):
        add(
            (
                "KE507",
                f"{ptr}/samples",
                f"the candidate's {n} samples are the baseline's, {order}, {how} (each within {tol:.2g} "
                f"{st.unit}): one series made from the other, not two measurements ({who} side; see the {other})",
            )
        )


# ---------------------------------------------------------------- mean against percentiles (KE501)

_LEVELS: dict[tuple[str, ...], tuple[float, ...] | None] = {}


def _levels(keys: tuple[str, ...]) -> tuple[float, ...] | None:
    """The levels (0..1) of percentile keys already in level order, else None (cached)."""
    try:
        return _LEVELS[keys]
    except KeyError:
        qs = [_pct(k) for k in keys]
        out = None
        if all(q is not None for q in qs) and qs == sorted(qs):  # type: ignore[type-var]
            out = tuple(q / 100 for q in qs)  # type: ignore[operator]
        if len(_LEVELS) < 1024 and sum(map(len, keys)) <= _CACHED_CHARS:
            _LEVELS[keys] = out
        return out


def _mean_bounds(
    ptr: str, s: Any, pcts: dict[str, float], med: float | None, mean: float, lo: float, hi: float, add: Add
) -> None:
    """KE501: the mean within the bounds the percentiles, the min and the max allow."""
    n = s.n if s.n is not None else (len(s.samples) if s.samples else None)
    if not n or n < 1:
        return
    keys = tuple(pcts)
    levels = _levels(keys)
    if levels is None:
        return
    points: Any = zip(levels, pcts.values(), strict=False)  # (one level per key)
    if med is not None and 0.5 not in levels:
        points = sorted([*points, (0.5, med)])
    # the common case first: the bounds with the levels as written and no rounding (the
    # exact ones below only widen them: levels moved toward the wider side, values by half
    # a unit of their last digit), in the same pass as the order check; a mean within them
    # is within the exact ones, with no digit read (``_quantum`` costs a repr per value)
    prev = lo
    p0 = 0.0
    up = down = 0.0
    for p, v in points:
        if not prev <= v:
            return  # KE501's order checks say so
        up += (p - p0) * v
        down += (p - p0) * prev
        p0 = p
        prev = v
    if not prev <= hi:
        return
    if (down + (1 - p0) * prev) * 0.998 <= mean <= (up + (1 - p0) * hi) * 1.002:
        return
    if not isinstance(points, list):
        points = list(zip(levels, pcts.values(), strict=False))
    step = 1.0 / n
    up = down = 0.0  # the upper and lower bounds
    pu = 0.0  # the level reached (upper: levels moved down 1/n; lower: up)
    pd = 0.0
    below = lo
    r = _quantum(lo) / 2  # the rounding of the values, weighted by the mass they carry
    for p, v in points:
        p_up = p - step if p > step else 0.0
        p_dn = p + step if p + step < 1 else 1.0
        half = _quantum(v) / 2
        if p_up > pu:
            up += (p_up - pu) * (v + half)
            pu = p_up
        if p_dn > pd:
            down += (p_dn - pd) * (below - r)
            pd = p_dn
        r = half
        below = v
    up += (1 - pu) * (hi + _quantum(hi) / 2)
    down += (1 - pd) * (below - r)
    half = _quantum(mean) / 2
    if mean - half > up * 1.002:
        add(
            (
                "KE501",
                f"{ptr}/mean",
                f"mean {mean:g} {s.unit} is above the {up:.4g} its percentiles and max {hi:g} allow "
                f"(each share of the {n} values at most the next percentile): a cut tail",
            )
        )
    elif mean + half < down * 0.998:
        add(
            (
                "KE501",
                f"{ptr}/mean",
                f"mean {mean:g} {s.unit} is below the {down:.4g} its percentiles and min {lo:g} allow "
                f"(each share of the {n} values at least the percentile below it)",
            )
        )
