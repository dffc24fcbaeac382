"""The pure-Python statistics behind the timer and compare."""

from __future__ import annotations

import math
import random

import pytest

from kernel_evidence.harness._stats import (
    bootstrap_ratio_ci,
    mann_whitney_u,
    median_ci,
    quantile,
    summarize,
)


@pytest.mark.parametrize(
    ("n", "low_rank", "high_rank"),
    # 95 % distribution-free CI of the median, 1-based ranks (binomial(n, 1/2) tables)
    [(6, 1, 6), (10, 2, 9), (20, 6, 15), (100, 40, 61)],
)
def test_median_ci_ranks_match_binomial_tables(n: int, low_rank: int, high_rank: int) -> None:
    lo, hi, level = median_ci([float(i) for i in range(1, n + 1)], 0.95)
    assert (lo, hi) == (low_rank, high_rank)
    assert level >= 0.95


def test_median_ci_with_too_few_samples_reports_the_achieved_level() -> None:
    lo, hi, level = median_ci([1.0, 2.0, 3.0], 0.95)
    assert (lo, hi) == (1.0, 3.0)
    assert level == pytest.approx(0.75)


def test_quantile_interpolates_like_type_7() -> None:
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.25) == 1.75
    assert quantile([7.0], 0.99) == 7.0


def test_summarize() -> None:
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.n, s.median, s.mean, s.min, s.max) == (5, 3.0, 3.0, 1.0, 5.0)
    assert s.std == pytest.approx(math.sqrt(2.5))
    assert s.percentiles["p50"] == 3.0


def test_mann_whitney_matches_hand_computation() -> None:
    # U_a = 0, mu = 4.5, var = 3*3*7/12 = 5.25, z = (0 - 4.5 + 0.5)/sqrt(5.25)
    r = mann_whitney_u([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert r.u == 0
    assert r.z == pytest.approx(-4.0 / math.sqrt(5.25))
    assert r.p_value == pytest.approx(0.080856, abs=1e-5)
    assert r.prob_a_greater == 0.0


def test_mann_whitney_all_tied_has_p_one() -> None:
    assert mann_whitney_u([2.0] * 5, [2.0] * 7).p_value == 1.0


def test_mann_whitney_constant_but_different_groups_is_significant() -> None:
    r = mann_whitney_u([1.0] * 20, [2.0] * 20)
    assert r.p_value < 1e-6


def test_bootstrap_ratio_ci_brackets_the_true_ratio() -> None:
    rng = random.Random(3)
    b = [100.0 * rng.lognormvariate(0, 0.05) for _ in range(200)]
    a = [2.0 * x for x in b]
    point, lo, hi = bootstrap_ratio_ci(a, b, seed=1)
    assert point == pytest.approx(2.0)
    assert lo <= 2.0 <= hi
    # seeded: the same answer every time
    assert bootstrap_ratio_ci(a, b, seed=1) == (point, lo, hi)


@pytest.mark.parametrize("n", [1, 2, 5, 6, 11, 40])
def test_resampled_median_matches_naive_resampling(n: int) -> None:
    from kernel_evidence.harness._stats import _median_sorted, _resampled_median

    s = sorted(random.Random(n).random() for _ in range(n))
    fast_rng, naive_rng = random.Random(1), random.Random(2)
    draws = 20_000
    fast = sorted(_resampled_median(s, fast_rng) for _ in range(draws))
    naive = sorted(_median_sorted(sorted(naive_rng.choices(s, k=n))) for _ in range(draws))
    for q in (0.05, 0.25, 0.5, 0.75, 0.95):
        i = int(q * draws)
        # both are draws from the same discrete distribution: quantiles agree up to a
        # neighbouring support point
        lo, hi = sorted((fast[i], naive[i]))
        between = [v for v in s if lo < v < hi]
        assert len(between) <= 1, (q, fast[i], naive[i])
