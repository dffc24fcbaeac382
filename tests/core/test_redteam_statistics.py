"""Red-team cheats on the statistics (KE5xx) and the claim (KE3xx), each caught at the lying
field, each beside an honest near-twin that stays clean."""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path
from typing import Any

from kernel_evidence import validate
from kernel_evidence.harness._stats import summarize

EXAMPLE = (
    Path(__file__).resolve().parents[2]
    / "examples"
    / "packets"
    / "valid"
    / "nvidia_h100_gemm_vs_cublaslt.json"
)


def _jitter(median: float, n: int, seed: int, sigma: float = 0.01) -> list[float]:
    """``n`` right-skewed timer samples (us, 4 decimals) around ``median``."""
    rng = random.Random(seed)
    raw = [math.exp(rng.gauss(0.0, sigma)) * (1.0 + abs(rng.gauss(0.0, sigma / 2))) for _ in range(n)]
    mid = sorted(raw)[n // 2]
    return [round(median * r / mid, 4) for r in raw]


def _stats(samples: list[float], unit: str = "us", **extra: Any) -> dict[str, Any]:
    """A statistics block that agrees with ``samples``."""
    xs = sorted(samples)
    n = len(xs)
    out: dict[str, Any] = {
        "unit": unit,
        "median": xs[n // 2] if n % 2 else round((xs[n // 2 - 1] + xs[n // 2]) / 2, 6),
        "mean": round(statistics.fmean(xs), 6),
        "min": xs[0],
        "max": xs[-1],
        "n": n,
        "samples": list(samples),
    }
    if n > 1:
        out["std"] = round(statistics.stdev(xs), 6)
    out.update(extra)
    return out


def _resp(d: dict[str, Any]) -> None:
    """Recompute the claim from the statistics on its basis."""
    t = d["timing"]
    basis = t["speedup"].get("basis", "median")
    t["speedup"]["value"] = round(t["baseline"]["stats"][basis] / t["stats"][basis], 4)


def _packet(n: int = 31) -> dict[str, Any]:
    """The H100 GEMM example with independent jittered samples on both sides."""
    d: dict[str, Any] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    d.pop("packet_id")
    t = d["timing"]
    t["repeats"] = n
    t["stats"] = _stats(_jitter(151.9, n, 1))
    t["baseline"]["stats"] = _stats(_jitter(170.9, n, 2))
    _resp(d)
    return d


def _found(d: dict[str, Any], rule: str) -> set[str]:
    return {f.pointer for f in validate(d).findings if f.rule_id == rule}


def _assert_clean_base() -> None:
    r = validate(_packet())
    assert r.ok and r.grade.letter in ("A", "B"), r.findings


def test_the_base_is_honest() -> None:
    _assert_clean_base()


# ---------------------------------------------------------------- KE503: the mean of the samples


def test_a_stated_mean_without_the_tail_is_caught() -> None:
    d = _packet()
    for side in (d["timing"]["stats"], d["timing"]["baseline"]["stats"]):
        xs = sorted(side["samples"])
        xs[-4:] = [x * 2 for x in xs[-4:]]  # a slow tail
        side.update(_stats(xs))
    d["timing"]["speedup"]["basis"] = "mean"
    d["timing"]["stats"]["mean"] = d["timing"]["stats"]["median"]  # the lie: no tail
    _resp(d)
    assert "/timing/stats/mean" in _found(d, "KE503")
    assert "/timing/baseline/stats/mean" not in _found(d, "KE503")
    d["timing"]["baseline"]["stats"]["mean"] = d["timing"]["baseline"]["stats"]["median"]
    assert "/timing/baseline/stats/mean" in _found(d, "KE503")


def test_a_mean_off_over_a_tight_series_is_caught() -> None:
    d = _packet()
    st = d["timing"]["stats"]
    st["samples"] = [round(x, 1) for x in _jitter(151.9, 31, 7, sigma=0.001)]
    st.update(_stats(st["samples"]))
    st["mean"] = round(st["mean"] * 1.015, 4)  # 1.5% off, the samples within 0.5%
    _resp(d)
    assert "/timing/stats/mean" in _found(d, "KE503")


def test_a_mean_rounded_for_a_report_or_over_dropped_samples_passes() -> None:
    d = _packet()
    st = d["timing"]["stats"]
    st["mean"] = float(f"{st['mean']:.3g}")  # 3 significant digits: within 1%
    assert not _found(d, "KE503")
    # samples dropped: the mean may be over every timed call, not only those kept
    d = _packet()
    st = d["timing"]["stats"]
    st["mean"] = round(st["mean"] * 1.05, 4)
    st["dropped"] = 4
    d["timing"]["repeats"] = st["n"] + 4
    assert not _found(d, "KE503")


# ---------------------------------------------------------------- KE507: a nudged constant


def test_a_constant_with_one_nudged_sample_is_caught() -> None:
    d = _packet(51)
    m = 1836.9
    xs = [m] * 51
    xs[17] = round(m + 0.1, 4)  # 5e-5 of the median
    d["timing"]["stats"] = _stats(xs)
    _resp(d)
    assert _found(d, "KE507") == {"/timing/stats/samples"}
    # the baseline's too
    d = _packet(51)
    d["timing"]["baseline"]["stats"] = _stats(xs)
    assert _found(d, "KE507") == {"/timing/baseline/stats/samples"}


def test_near_constant_thresholds_follow_the_timer() -> None:
    d = _packet(51)
    m = 1836.9
    xs = [m] * 51
    xs[17] = round(m + 0.05, 4)  # 2.7e-5 of the median: too close for events ...
    d["timing"]["stats"] = _stats(xs)
    _resp(d)
    assert _found(d, "KE507") == {"/timing/stats/samples"}
    d["timing"]["method"] = "cupti"  # ... not for a ns-resolution profiler on locked clocks
    assert not _found(d, "KE507")
    xs[17] = round(m + 0.01, 4)  # 5e-6: too close for any timer
    d["timing"]["stats"] = _stats(xs)
    _resp(d)
    assert _found(d, "KE507") == {"/timing/stats/samples"}


def test_a_coarse_timer_and_real_jitter_pass() -> None:
    # 1 us resolution on a ~5 us kernel: most readings equal, some one tick away
    d = _packet(51)
    d["timing"]["stats"] = _stats([5.0] * 45 + [6.0] * 5 + [4.0])
    _resp(d)
    assert not _found(d, "KE507")
    # a steady kernel: 0.05% jitter
    d = _packet(51)
    d["timing"]["stats"] = _stats(_jitter(151.9, 51, 3, sigma=0.0005))
    _resp(d)
    assert not _found(d, "KE507")


# ---------------------------------------------------------------- KE508: two calls behind a claim


def test_a_baseline_timed_twice_is_graded_c() -> None:
    d = _packet()
    w = 170.9
    d["timing"]["baseline"]["stats"] = _stats([round(w * 4, 4), w])  # the first call cold
    _resp(d)
    r = validate(d)
    assert ("KE508", "/timing/baseline/stats/n") in {(f.rule_id, f.pointer) for f in r.findings}
    assert r.grade.letter == "C"
    d["timing"]["baseline"]["conditions"] = {"repeats": 2}
    assert "/timing/baseline/conditions/repeats" in _found(d, "KE508")


def test_three_calls_per_side_pass_ke508() -> None:
    d = _packet()
    d["timing"]["baseline"]["stats"] = _stats([171.2, 170.9, 170.4])
    _resp(d)
    assert not _found(d, "KE508")


# ---------------------------------------------------------------- KE504: the fastest kept, unsaid


def test_keeping_the_fastest_unsaid_is_graded_c() -> None:
    d = _packet()
    d["timing"]["stats"] = _stats(sorted(d["timing"]["stats"]["samples"])[:11])  # repeats still 31
    _resp(d)
    r = validate(d)
    assert {(f.rule_id, f.pointer) for f in r.findings if f.rule_id == "KE504"} == {
        ("KE504", "/timing/repeats")
    }
    assert r.grade.letter == "C"


def test_samples_dropped_and_said_pass_ke504() -> None:
    d = _packet()
    d["timing"]["stats"] = _stats(sorted(d["timing"]["stats"]["samples"])[:11], dropped=20)
    _resp(d)
    assert not _found(d, "KE504")


# ---------------------------------------------------------------- KE501: a made-up interval


def test_a_confidence_interval_far_narrower_than_the_spread_is_caught() -> None:
    d = _packet(51)
    for st in (d["timing"]["stats"], d["timing"]["baseline"]["stats"]):
        st.pop("samples")
    st = d["timing"]["stats"]
    st["ci_low"] = round(st["median"] * (1 - 1e-5), 6)
    st["ci_high"] = round(st["median"] * (1 + 1e-5), 6)
    st["ci_level"] = 0.95
    assert _found(d, "KE501") == {"/timing/stats/ci_low"}
    # with the samples kept, they judge it
    d = _packet(51)
    st = d["timing"]["stats"]
    st["ci_low"] = round(st["median"] * (1 - 1e-5), 6)
    st["ci_high"] = round(st["median"] * (1 + 1e-5), 6)
    assert _found(d, "KE501") == {"/timing/stats/ci_low"}


def _harness_stats(xs: list[float], keep: bool) -> dict[str, Any]:
    """The statistics block the project's harness writes (a distribution-free CI of the median)."""
    s = summarize(xs)
    out = {"unit": "us", "median": s.median, "mean": s.mean, "std": s.std, "min": s.min, "max": s.max,
           "percentiles": s.percentiles, "n": s.n, "ci_low": s.ci_low, "ci_high": s.ci_high,
           "ci_level": round(s.ci_level, 6)}  # fmt: skip
    if keep:
        out["samples"] = xs
    return out


def test_an_honest_median_interval_over_a_slow_tail_passes() -> None:
    # a steady kernel with a few slow outliers: std is large, the median's interval tight
    for n, seed in ((10, 4), (51, 5), (1000, 6)):
        xs = _jitter(151.9, n, seed, sigma=0.001)
        for i in range(0, n, max(n // 3, 4)):
            xs[i] *= 12.0
        for keep in (True, False):
            d = _packet(n)
            d["timing"]["stats"] = _harness_stats(xs, keep)
            _resp(d)
            assert not _found(d, "KE501"), (n, keep)
    # ties: a coarse timer, the interval of the median has no width
    xs = [5120.0] * 700 + [4608.0] * 150 + [5632.0] * 150
    d = _packet(1000)
    d["timing"]["stats"] = _harness_stats(xs, False)
    assert d["timing"]["stats"]["ci_low"] == d["timing"]["stats"]["ci_high"]
    _resp(d)
    assert not _found(d, "KE501")


# ---------------------------------------------------------------- KE301: a tolerance that hides


def test_a_wide_stated_tolerance_does_not_hide_an_inflated_claim() -> None:
    d = _packet()
    computed = d["timing"]["speedup"]["value"]
    d["timing"]["speedup"]["tolerance"] = 0.25
    d["timing"]["speedup"]["value"] = round(computed * 1.24, 4)
    (f,) = [f for f in validate(d).findings if f.rule_id == "KE301"]
    assert f.pointer == "/timing/speedup/value" and "the stated 0.25 counts as 0.05" in f.message


def test_a_claim_within_five_percent_passes_ke301() -> None:
    d = _packet()
    d["timing"]["speedup"]["tolerance"] = 0.25
    d["timing"]["speedup"]["value"] = round(d["timing"]["speedup"]["value"] * 1.04, 4)
    assert not _found(d, "KE301")


# ---------------------------------------------------------------- KE304: a minimum of one lucky sample


def test_a_min_claim_on_one_lucky_sample_is_graded_c() -> None:
    d = _packet(51)
    xs = list(d["timing"]["stats"]["samples"])
    xs[5] = round(d["timing"]["stats"]["median"] * 0.85, 4)
    d["timing"]["stats"] = _stats(xs)
    d["timing"]["speedup"]["basis"] = "min"
    _resp(d)
    r = validate(d)
    assert ("KE304", "/timing/speedup/basis") in {(f.rule_id, f.pointer) for f in r.findings}
    assert r.grade.letter == "C"


def test_a_min_claim_on_clustered_or_coarse_fast_samples_passes() -> None:
    d = _packet(51)
    d["timing"]["speedup"]["basis"] = "min"
    _resp(d)
    assert not _found(d, "KE304")
    # a coarse timer: the fastest reading one tick (20%) below the rest
    d = _packet(51)
    d["timing"]["stats"] = _stats([4.0] + [5.0] * 40 + [6.0] * 10)
    d["timing"]["baseline"]["stats"] = _stats([6.0] * 41 + [7.0] * 10)
    d["timing"]["speedup"]["basis"] = "min"
    _resp(d)
    assert not _found(d, "KE304")
