"""Is B faster than A, by how much, and how sure? From raw samples, or summaries when that is all.

With samples on both sides (``timing.stats.samples``): the speedup is
``median(A) / median(B)`` (above 1: B is faster), its confidence interval comes from a
seeded percentile bootstrap, and significance from a two-sided Mann-Whitney U test. B is
*improved* when the test is significant at ``alpha``, the interval lies above 1 and the
speedup reaches ``1 + min_effect``; *regressed* symmetrically; otherwise *no_change*.

The interval's level is ``1 - alpha`` unless ``level`` is given.

Without samples, summaries are used: non-overlapping median confidence intervals
(conservative), else a normal approximation on means and standard deviations, else the
verdict is *inconclusive* and the notes say why. The packets' intervals have the level
they were recorded at (``ci_level``, 95 % when not recorded): two that do not overlap show
a difference at ``p < 1 - level``, so the verdict holds for any ``alpha`` at least that
large; for a smaller ``alpha`` the summaries cannot show significance, and a change they
suggest is *inconclusive*.

Packets that are not comparable (different device, arch, operator, shapes, dtypes,
timing method, or a packet that did not pass) are refused unless ``force=True``.

Exit codes for the CLI and loops: 0 improved, 3 no significant change (or inconclusive),
4 regressed, 1 invalid input or incomparable, 2 usage.
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from ..models import EvidencePacket, Stats, Status
from ..units import convert
from ._stats import _norm_cdf, _z_for, bootstrap_ratio_ci, mann_whitney_u

__all__ = [
    "EXIT_CODES",
    "MAX_RESAMPLES",
    "Comparison",
    "comparability_problems",
    "compare_packets",
    "compare_samples",
]

Verdict = Literal["improved", "no_change", "regressed", "inconclusive", "incomparable"]

#: verdict -> process exit code
EXIT_CODES: dict[str, int] = {
    "improved": 0,
    "no_change": 3,
    "inconclusive": 3,
    "regressed": 4,
    "incomparable": 1,
}

#: most bootstrap resamples: one float is kept per resample (about 40 bytes and 4 us each),
#: so a million is ~40 MB and ~4 s; the tails of a percentile interval are stable
#: long before that
MAX_RESAMPLES = 1_000_000

#: the smallest time a ratio is taken of, in ns: a zero or subnormal median is a timer
#: artefact, not a measurement, and dividing by it overflows
_SMALLEST = sys.float_info.min


@dataclass
class Comparison:
    """The answer: verdict, speedup of B over A with its interval, the test, and caveats."""

    verdict: Verdict
    speedup: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = None
    p_value: float | None = None
    method: str | None = None
    n_a: int | None = None
    n_b: int | None = None
    median_a_ns: float | None = None
    median_b_ns: float | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    forced: bool = False

    @property
    def exit_code(self) -> int:
        """0 improved, 3 no change / inconclusive, 4 regressed, 1 incomparable."""
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        """JSON data (nulls dropped)."""
        data = {k: v for k, v in asdict(self).items() if v is not None and v != []}
        data["exit_code"] = self.exit_code
        return data

    def summary(self) -> str:
        """One line a person reads first."""
        if self.verdict == "incomparable":
            return "not comparable: " + "; ".join(self.problems)
        if self.speedup is None or not _ratio_ok(self.speedup):
            return f"{self.verdict}: " + "; ".join(self.notes)
        factor = self.speedup if self.speedup >= 1.0 else 1.0 / self.speedup
        word_ = "faster" if self.speedup >= 1.0 else "slower"
        amount = f"{factor:.3g}x" if factor >= 2.0 else f"{(factor - 1.0) * 100.0:.1f}%"
        faster = f"B is {amount} {word_} than A (speedup {self.speedup:.4g}x"
        if self.ci_low is not None and self.ci_high is not None:
            faster += f", {_percent(self.ci_level or 0.95)} CI {self.ci_low:.4g}-{self.ci_high:.4g}"
        if self.p_value is not None:
            faster += f", p={self.p_value:.3g}"
        faster += ")"
        word = {
            "improved": "improved",
            "regressed": "regressed",
            "no_change": "no significant change",
            "inconclusive": "inconclusive",
        }[self.verdict]
        return f"{word}: {faster}"


def _ratio_ok(r: float) -> bool:
    """A ratio that can be shown both ways round: finite, positive, and so is its inverse."""
    return math.isfinite(r) and r > 0.0 and math.isfinite(1.0 / r)


def _median_problem(label: str, median_ns: float) -> str | None:
    """Why a ratio cannot be taken of this median (in ns), or None."""
    if median_ns == 0.0:
        return f"the median of {label} is zero: a ratio is undefined (timer resolution too coarse?)"
    if not math.isfinite(median_ns):
        return f"the median of {label} is too large to express in ns: a ratio is undefined"
    if median_ns < _SMALLEST:
        return (
            f"the median of {label} is {median_ns:.3g} ns, a subnormal number rather than a "
            "measurement: a ratio is undefined"
        )
    return None


def _no_ratio(notes: list[str], ma: float | None, mb: float | None, **kw: Any) -> Comparison:
    """An inconclusive result: the ratio of the medians cannot be computed."""
    return Comparison(
        verdict="inconclusive",
        median_a_ns=ma if ma is not None and math.isfinite(ma) else None,
        median_b_ns=mb if mb is not None and math.isfinite(mb) else None,
        notes=notes,
        **kw,
    )


def _ratio_note(ma: float, mb: float) -> str | None:
    """Why ``ma / mb`` is not a usable ratio (medians in ns), or None."""
    for label, m in (("A", ma), ("B", mb)):
        why = _median_problem(label, m)
        if why:
            return why
    if not _ratio_ok(ma / mb):
        return (
            f"the medians ({ma:.4g} ns and {mb:.4g} ns) are too far apart for their ratio "
            "to be a floating-point number: a ratio is undefined"
        )
    return None


def _finite(result: Comparison) -> Comparison:
    """No infinity or NaN leaves this module: numbers out of range make it inconclusive."""
    if result.median_a_ns is not None and not math.isfinite(result.median_a_ns):
        result.median_a_ns = None
    if result.median_b_ns is not None and not math.isfinite(result.median_b_ns):
        result.median_b_ns = None
    numbers = (result.speedup, result.ci_low, result.ci_high, result.p_value)
    if all(x is None or math.isfinite(x) for x in numbers) and (
        result.speedup is None or _ratio_ok(result.speedup)
    ):
        return result
    return replace(
        result,
        verdict="inconclusive",
        speedup=None,
        ci_low=None,
        ci_high=None,
        ci_level=None,
        p_value=None,
        notes=[
            *result.notes,
            "the timings span more than the floating-point range: the ratio or its interval "
            "cannot be computed from these values",
        ],
    )


def _percent(level: float) -> str:
    """``0.95`` -> ``95%``; as many digits as it takes not to round 0.999999 up to 100%."""
    for decimals in range(13):
        shown = f"{level * 100.0:.{decimals}f}"
        if float(shown) < 100.0 or level >= 1.0:
            break
    return shown + "%"


def _verdict(
    speedup: float, lo: float, hi: float, p: float | None, alpha: float, min_effect: float
) -> tuple[Verdict, str | None]:
    significant = p is None or p < alpha
    if significant and lo > 1.0 and speedup >= 1.0 + min_effect:
        return "improved", None
    if significant and hi < 1.0 and speedup <= 1.0 / (1.0 + min_effect):
        return "regressed", None
    if significant and (lo > 1.0 or hi < 1.0):
        return (
            "no_change",
            f"the difference is significant but smaller than the {min_effect:.1%} minimum effect",
        )
    if p is not None and significant:
        return (
            "no_change",
            f"the test is significant (p < {alpha:g}) but the interval of the speedup includes 1: "
            "they disagree, so no change is claimed",
        )
    return "no_change", None


def compare_samples(
    a_ns: list[float],
    b_ns: list[float],
    *,
    alpha: float = 0.05,
    min_effect: float = 0.01,
    level: float | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare two sets of timing samples (same unit); speedup = median(A) / median(B).

    ``level`` is the confidence level of the interval, ``1 - alpha`` when not given. A median
    that is zero, subnormal or (in ns) infinite gives an *inconclusive* result saying so: the
    ratio is undefined. Raises :class:`ValueError` for negative samples, or ``resamples``
    outside 1..:data:`MAX_RESAMPLES`.
    """
    level = 1.0 - alpha if level is None else level
    notes: list[str] = []
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"resamples must be between 1 and {MAX_RESAMPLES}, got {resamples}")
    if min(a_ns) < 0 or min(b_ns) < 0:
        raise ValueError("timing samples must not be negative")
    ma, mb = _median(a_ns), _median(b_ns)
    why = _ratio_note(ma, mb)
    if why:
        return _no_ratio([why], ma, mb, n_a=len(a_ns), n_b=len(b_ns))
    point, lo, hi = bootstrap_ratio_ci(a_ns, b_ns, level=level, resamples=resamples, seed=seed)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return _finite(
            Comparison(
                verdict="inconclusive", speedup=point, ci_low=lo, ci_high=hi, median_a_ns=ma, median_b_ns=mb
            )
        )
    mw = mann_whitney_u(a_ns, b_ns)
    zero_a = max(a_ns) == min(a_ns)
    zero_b = max(b_ns) == min(b_ns)
    if zero_a and zero_b:
        notes.append(
            "both sample sets have zero spread (a constant or a coarse timer): the ratio is exact for "
            "these samples, but run-to-run noise is unknown; repeat in fresh processes before trusting it"
        )
    elif zero_a or zero_b:
        notes.append(
            f"{'A' if zero_a else 'B'} has zero spread (a constant or a coarse timer); its noise is unknown"
        )
    smallest_p = 2.0 * _norm_cdf(
        -(len(a_ns) * len(b_ns) / 2.0 - 0.5)
        / math.sqrt(len(a_ns) * len(b_ns) * (len(a_ns) + len(b_ns) + 1) / 12.0)
    )
    if smallest_p >= alpha:
        notes.append(
            f"too few samples (n={len(a_ns)} and {len(b_ns)}) for any difference to be significant at alpha={alpha:g}"
        )
    if (1.0 - level) / 2.0 * resamples < 5:
        notes.append(
            f"the {_percent(level)} interval rests on fewer than 5 of the {resamples} bootstrap "
            "resamples in each tail: raise the number of resamples for a stable interval"
        )
    verdict, note = _verdict(point, lo, hi, mw.p_value, alpha, min_effect)
    if note:
        notes.append(note)
    return _finite(
        Comparison(
            verdict=verdict,
            speedup=point,
            ci_low=lo,
            ci_high=hi,
            ci_level=level,
            p_value=mw.p_value,
            method=f"bootstrap CI of the median ratio ({resamples} resamples, seed {seed}) + Mann-Whitney U",
            n_a=len(a_ns),
            n_b=len(b_ns),
            median_a_ns=ma,
            median_b_ns=mb,
            notes=notes,
        )
    )


def _median(v: list[float]) -> float:
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def _ns(stats: Stats, value: float | None) -> float | None:
    return None if value is None else convert(value, stats.unit, "ns")


def _compare_summaries(a: Stats, b: Stats, *, alpha: float, min_effect: float, level: float) -> Comparison:
    ma, mb = _ns(a, a.median), _ns(b, b.median)
    base: dict[str, Any] = {"n_a": a.n, "n_b": b.n, "median_a_ns": ma, "median_b_ns": mb}
    if ma is None or mb is None:
        return Comparison(
            verdict="inconclusive",
            notes=["a statistics block records no median (only mean or percentiles): nothing to compare"],
            **base,
        )
    why = _ratio_note(ma, mb)
    if why:
        return _no_ratio([why], ma, mb, n_a=a.n, n_b=b.n)
    point = ma / mb
    notes: list[str] = []
    if None not in (a.ci_low, a.ci_high, b.ci_low, b.ci_high):
        al, ah, bl, bh = (_ns(a, a.ci_low), _ns(a, a.ci_high), _ns(b, b.ci_low), _ns(b, b.ci_high))
        assert al is not None and ah is not None and bl is not None and bh is not None
        lo = al / bh if bh > 0 else 0.0
        hi = ah / bl if bl > 0 else math.inf
        # the packets' own level: non-overlap shows p < 1 - own, whatever alpha is
        own = min(a.ci_level or 0.95, b.ci_level or 0.95)
        assumed = "" if a.ci_level and b.ci_level else "; ci_level not recorded, 95% assumed"
        notes.append(
            f"significance from non-overlapping median confidence intervals at the packets' own "
            f"{_percent(own)} level (conservative: non-overlap means p < {1.0 - own:.2g}){assumed}"
        )
        if (lo > 1.0 or hi < 1.0) and alpha < (1.0 - own) * (1.0 - 1e-9):
            verdict: Verdict = "inconclusive"
            note: str | None = (
                f"the intervals do not overlap, which shows p < {1.0 - own:.2g} but not p < alpha={alpha:g}; "
                "record timing.stats.samples to test at that alpha"
            )
        else:
            verdict, note = _verdict(point, lo, hi, None, alpha, min_effect)
        if note:
            notes.append(note)
        return Comparison(
            verdict=verdict,
            speedup=point,
            ci_low=lo,
            ci_high=hi if math.isfinite(hi) else None,
            ci_level=own,
            method="summary: median CI overlap",
            notes=notes,
            **base,
        )
    if None not in (a.mean, b.mean, a.std, b.std) and (a.n or 0) >= 2 and (b.n or 0) >= 2:
        mean_a, mean_b, sa, sb = _ns(a, a.mean), _ns(b, b.mean), _ns(a, a.std), _ns(b, b.std)
        assert mean_a is not None and mean_b is not None and sa is not None and sb is not None
        assert a.n is not None and b.n is not None
        se = math.sqrt(sa * sa / a.n + sb * sb / b.n)  # not **: a huge value overflows to inf
        if se == 0:
            notes.append(
                "both standard deviations are zero: the noise is unknown, nothing can be concluded about significance"
            )
            return Comparison(
                verdict="inconclusive",
                speedup=point,
                method="summary: mean and std",
                notes=notes,
                **base,
            )
        z = (mean_a - mean_b) / se
        p = 2.0 * _norm_cdf(-abs(z))
        # delta-method interval of the mean ratio, used as the interval of the speedup
        r = mean_a / mean_b
        se_r = r * math.sqrt((sa * sa / a.n) / (mean_a * mean_a) + (sb * sb / b.n) / (mean_b * mean_b))
        zc = _z_for(level)
        notes.append("significance from a normal approximation on means and standard deviations (Welch z)")
        verdict, note = _verdict(point, r - zc * se_r, r + zc * se_r, p, alpha, min_effect)
        if note:
            notes.append(note)
        return Comparison(
            verdict=verdict,
            speedup=point,
            ci_low=r - zc * se_r,
            ci_high=r + zc * se_r,
            ci_level=level,
            p_value=p,
            method="summary: Welch z on means",
            notes=notes,
            **base,
        )
    notes.append(
        f"no samples and no spread (CI or std with n): the medians differ by {(point - 1) * 100:+.1f}%, "
        "but the noise is unknown, so no significance can be claimed; record timing.stats.samples"
    )
    return Comparison(
        verdict="inconclusive", speedup=point, method="summary: medians only", notes=notes, **base
    )


def _shapes_key(p: EvidencePacket) -> Any:
    t = p.timing
    if t is not None and t.shape_id:
        dims = None
        if p.task and p.task.shapes:
            for c in p.task.shapes:
                if c.id == t.shape_id:
                    dims = c.dims
        return ("shape", t.shape_id, tuple(sorted((dims or {}).items())))
    if p.task and p.task.shapes:
        return (
            "suite",
            tuple(sorted((c.id, tuple(sorted((c.dims or {}).items()))) for c in p.task.shapes)),
        )
    return None


def comparability_problems(a: EvidencePacket, b: EvidencePacket) -> list[str]:
    """Why A and B should not be compared (empty when they may be)."""
    problems: list[str] = []
    for label, p in (("A", a), ("B", b)):
        if p.status is not Status.PASSED:
            problems.append(
                f"{label} did not pass (status {p.status.value}): its timing is not a valid measurement"
            )
    ha, hb = a.hardware, b.hardware
    if ha is not None and hb is not None:
        for attr in ("vendor", "device", "arch"):
            va, vb = getattr(ha, attr), getattr(hb, attr)
            if va is not None and vb is not None and va != vb:
                problems.append(f"different {attr}: A `{va}`, B `{vb}`")
    ta, tb = a.task, b.task
    if ta is not None and tb is not None:
        if ta.operator and tb.operator and ta.operator != tb.operator:
            problems.append(f"different operator: A `{ta.operator}`, B `{tb.operator}`")
        if ta.dtypes and tb.dtypes and sorted(ta.dtypes) != sorted(tb.dtypes):
            problems.append(f"different dtypes: A {sorted(ta.dtypes)}, B {sorted(tb.dtypes)}")
    ka, kb = _shapes_key(a), _shapes_key(b)
    if ka is not None and kb is not None and ka != kb:
        problems.append(f"different shapes: A {_show_shape(ka)}, B {_show_shape(kb)}")
    if a.timing is not None and b.timing is not None and a.timing.method != b.timing.method:
        problems.append(f"different timing method: A `{a.timing.method}`, B `{b.timing.method}`")
    return problems


def _show_shape(key: Any) -> str:
    if key[0] == "shape":
        return f"`{key[1]}`" + (f" {dict(key[2])}" if key[2] else "")
    return "suite [" + ", ".join(c[0] for c in key[1]) + "]"


def _as_packet(p: Any, label: str) -> EvidencePacket:
    if isinstance(p, EvidencePacket):
        return p
    if isinstance(p, dict):
        from .._codec.decode import model_from_data  # any supported version, migrated

        return model_from_data(p)
    raise TypeError(
        f"compare_packets() takes packets (EvidencePacket or dict); {label} is {type(p).__name__}"
    )


def compare_packets(
    a: EvidencePacket | dict[str, Any],
    b: EvidencePacket | dict[str, Any],
    *,
    force: bool = False,
    alpha: float = 0.05,
    min_effect: float = 0.01,
    level: float | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare the timing of packet B against packet A (see the module docstring).

    ``level`` is the confidence level of the interval computed here (from samples, or the
    Welch interval from means), ``1 - alpha`` when not given; median intervals recorded in
    the packets keep their own level.

    A packet may be given as a dict (read into :class:`EvidencePacket` first, as
    ``validate()`` and ``reward()`` do). Raises :class:`ValueError` when a packet has no
    ``timing.stats`` (nothing to compare), :class:`pydantic.ValidationError` (a ValueError)
    when a dict is not a packet, and :class:`TypeError` for anything else.
    """
    a, b = _as_packet(a, "A"), _as_packet(b, "B")
    for label, p in (("A", a), ("B", b)):
        if p.timing is None or p.timing.stats is None:
            why = "" if p.status is Status.PASSED else f" (status {p.status.value})"
            raise ValueError(f"{label} has no timing.stats{why}: nothing to compare")
    problems = comparability_problems(a, b)
    if problems and not force:
        return Comparison(verdict="incomparable", problems=problems)
    assert a.timing is not None and b.timing is not None
    sa, sb = a.timing.stats, b.timing.stats
    assert sa is not None and sb is not None
    level = 1.0 - alpha if level is None else level
    if sa.samples and sb.samples:
        fa = convert(1.0, sa.unit, "ns")
        fb = convert(1.0, sb.unit, "ns")
        result = compare_samples(
            [v * fa for v in sa.samples],
            [v * fb for v in sb.samples],
            alpha=alpha,
            min_effect=min_effect,
            level=level,
            resamples=resamples,
            seed=seed,
        )
    else:
        result = _finite(_compare_summaries(sa, sb, alpha=alpha, min_effect=min_effect, level=level))
        missing = [lbl for lbl, s in (("A", sa), ("B", sb)) if not s.samples]
        result.notes.insert(
            0,
            f"{' and '.join(missing)} {'has' if len(missing) == 1 else 'have'} no raw samples: "
            "compared from summary statistics",
        )
    if problems:
        result.problems = problems
        result.forced = True
        result.notes.append("compared despite the problems listed (--force)")
    return result
