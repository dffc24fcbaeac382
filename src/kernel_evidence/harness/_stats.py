"""Small, dependency-free statistics for timing samples.

Pure Python (no numpy, no scipy), fast enough for a few thousand samples:

* :func:`quantile` - linear interpolation between order statistics (Hyndman-Fan type 7,
  the default of numpy and R).
* :func:`median_ci` - a distribution-free confidence interval for the median from order
  statistics: the ranks come from the Binomial(n, 1/2) distribution (Conover, *Practical
  Nonparametric Statistics*, 3rd ed., section 3.2).
* :func:`bootstrap_ratio_ci` - percentile bootstrap of ``median(a) / median(b)`` with a
  seeded generator, so the answer is reproducible.
* :func:`mann_whitney_u` - the two-sided Mann-Whitney U test with the normal
  approximation, tie correction and continuity correction.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MannWhitney",
    "Summary",
    "bootstrap_ratio_ci",
    "mann_whitney_u",
    "median_ci",
    "quantile",
    "summarize",
]


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of already sorted values, by linear interpolation."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("quantile of no values")
    if n == 1:
        return float(sorted_values[0])
    pos = q * (n - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac)


def _median_sorted(s: Sequence[float]) -> float:
    n = len(s)
    mid = n // 2
    if n % 2:
        return float(s[mid])
    m = (s[mid - 1] + s[mid]) / 2.0
    return m if math.isfinite(m) else s[mid - 1] / 2.0 + s[mid] / 2.0  # no overflow near max


def median_ci(sorted_values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """A distribution-free CI of the median: ``(low, high, achieved_level)``.

    The interval is ``[x_(k), x_(n-k+1)]`` (1-based order statistics) with the largest
    ``k`` whose coverage ``1 - 2 P(X <= k-1)``, X ~ Binomial(n, 1/2), still reaches
    ``level``. With too few samples for the requested level (n < 6 at 95 %), the interval
    is the full range and the achieved level is reported honestly.
    """
    n = len(sorted_values)
    if n == 0:
        raise ValueError("confidence interval of no values")
    half_alpha = (1.0 - level) / 2.0 + 1e-12
    if n > 5000:
        # normal approximation of the binomial ranks, exact enough at this size
        z = _z_for(level)
        k = max(1, math.floor(n / 2.0 - z * math.sqrt(n) / 2.0))
        cov = 1.0 - 2.0 * _binom_cdf_approx(k - 1, n)
        return float(sorted_values[k - 1]), float(sorted_values[n - k]), cov
    log_half_n = -n * math.log(2.0)
    lg_n1 = math.lgamma(n + 1)
    cdf = 0.0
    k = 1
    tail = math.exp(log_half_n)  # P(X <= k-1) for k = 1
    for i in range((n + 1) // 2):
        cdf += math.exp(lg_n1 - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half_n)
        if cdf > half_alpha:
            break
        k, tail = i + 1, cdf  # P(X <= k-1) = P(X <= i) is within the tail budget
    achieved = 1.0 - 2.0 * tail
    return float(sorted_values[k - 1]), float(sorted_values[n - k]), achieved


def _binom_cdf_approx(k: int, n: int) -> float:
    return _norm_cdf((k + 0.5 - n / 2.0) / (math.sqrt(n) / 2.0))


def _norm_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _z_for(level: float) -> float:
    """Two-sided normal quantile for a confidence level, by bisection on erfc."""
    target = (1.0 + level) / 2.0
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2.0
        if _norm_cdf(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


@dataclass(frozen=True)
class Summary:
    """Summary statistics of one sample set, in the samples' unit."""

    n: int
    median: float
    mean: float
    std: float
    min: float
    max: float
    percentiles: dict[str, float]
    ci_low: float
    ci_high: float
    ci_level: float


def summarize(values: Sequence[float], level: float = 0.95) -> Summary:
    """Median, mean, sample standard deviation, p5/p25/p50/p75/p95/p99 and the median CI.

    The standard deviation is the sample one (``ddof=1``, numpy's ``np.std(x, ddof=1)``; 0
    for one value); percentiles are numpy's default ``method="linear"`` (Hyndman-Fan type 7).
    Mean and deviation are computed on values scaled by the largest, so huge values do not
    overflow; the mean is clamped to ``[min, max]`` against rounding.
    """
    if not values:
        raise ValueError("summary of no values")
    s = sorted(values)
    n = len(s)
    # scaled by the largest magnitude, so that neither the sum nor the squares overflow
    scale = max(abs(s[0]), abs(s[-1]))
    if scale == 0 or not math.isfinite(scale):
        mean, std = (0.0 if scale == 0 else math.fsum(s) / n), 0.0
    else:
        mean_scaled = math.fsum(v / scale for v in s) / n
        mean = min(max(mean_scaled * scale, float(s[0])), float(s[-1]))
        var = math.fsum((v / scale - mean_scaled) ** 2 for v in s) / (n - 1) if n > 1 else 0.0
        std = math.sqrt(var) * scale
    lo, hi, achieved = median_ci(s, level)
    pct = {f"p{p:g}": quantile(s, p / 100.0) for p in (5, 25, 50, 75, 95, 99)}
    return Summary(
        n=n,
        median=_median_sorted(s),
        mean=mean,
        std=std,
        min=float(s[0]),
        max=float(s[-1]),
        percentiles=pct,
        ci_low=lo,
        ci_high=hi,
        ci_level=achieved,
    )


def _resampled_median(s: Sequence[float], rng: random.Random) -> float:
    """The median of one bootstrap resample of sorted ``s``, drawn in O(1).

    A resample is n uniform indices ``floor(n U)``; its k-th smallest index is
    ``floor(n U_(k))`` with ``U_(k) ~ Beta(k, n - k + 1)``, and the next order statistic is
    ``U_(k) + (1 - U_(k)) (1 - V^(1/(n-k)))`` with V uniform (the smallest of the n - k
    uniforms above it). So the resampled median is drawn exactly, without building the
    resample.
    """
    n = len(s)
    k = (n + 1) // 2 if n % 2 else n // 2
    u = rng.betavariate(k, n - k + 1)
    lo = s[min(int(u * n), n - 1)]
    if n % 2:
        return float(lo)
    u2 = u + (1.0 - u) * (1.0 - rng.random() ** (1.0 / (n - k)))
    return (lo + s[min(int(u2 * n), n - 1)]) / 2.0


def bootstrap_ratio_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``(point, low, high)`` for ``median(a) / median(b)`` by the percentile bootstrap.

    Each resample draws ``len(a)`` values from ``a`` and ``len(b)`` from ``b`` with
    replacement; only the resamples' medians are needed, and they are drawn exactly from
    their order-statistic distribution (:func:`_resampled_median`), so the cost does not
    grow with the number of samples.
    """
    if not a or not b:
        raise ValueError("bootstrap needs samples on both sides")
    sa, sb = sorted(a), sorted(b)
    mb = _median_sorted(sb)
    if mb <= 0:
        raise ValueError("median of the second sample set is zero; a ratio is undefined")
    point = _median_sorted(sa) / mb
    rng = random.Random(seed)
    ratios: list[float] = []
    for _ in range(resamples):
        ra = _resampled_median(sa, rng)
        den = _resampled_median(sb, rng)
        if den > 0:
            ratios.append(ra / den)
    ratios.sort()
    tail = (1.0 - level) / 2.0
    return point, quantile(ratios, tail), quantile(ratios, 1.0 - tail)


@dataclass(frozen=True)
class MannWhitney:
    """Result of the two-sided Mann-Whitney U test (normal approximation)."""

    u: float
    z: float
    p_value: float
    #: probability that a random value of ``a`` is larger than one of ``b`` (ties count half)
    prob_a_greater: float


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> MannWhitney:
    """Two-sided Mann-Whitney U of ``a`` against ``b``, tie- and continuity-corrected.

    ``u`` is the U statistic of ``a`` (the number of pairs where ``a`` wins, ties half).
    When every value is tied the variance is zero and the p-value is 1.
    """
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs samples on both sides")
    merged = sorted([(float(v), 0) for v in a] + [(float(v), 1) for v in b])
    n = n1 + n2
    rank_sum_a = 0.0
    tie_term = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and merged[j + 1][0] == merged[i][0]:
            j += 1
        avg_rank = (i + j) / 2.0 + 1.0
        t = j - i + 1
        if t > 1:
            tie_term += t**3 - t
        for k in range(i, j + 1):
            if merged[k][1] == 0:
                rank_sum_a += avg_rank
        i = j + 1
    u = rank_sum_a - n1 * (n1 + 1) / 2.0
    mu = n1 * n2 / 2.0
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return MannWhitney(u=u, z=0.0, p_value=1.0, prob_a_greater=u / (n1 * n2))
    diff = u - mu
    cc = 0.5 if diff > 0 else (-0.5 if diff < 0 else 0.0)
    z = (diff - cc) / math.sqrt(var)
    p = min(1.0, 2.0 * _norm_cdf(-abs(z)))
    return MannWhitney(u=u, z=z, p_value=p, prob_a_greater=u / (n1 * n2))
