"""Timing honesty: statistics, the stop rule, interleaving and the speedup claim.

Timers run on a fake clock (``time`` in the timer module is replaced): a timed function
"takes" time by advancing it, so nothing here depends on real time. The tests marked
"failed before" name the bug they pin.
"""

from __future__ import annotations

import itertools
import math
import random
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _harness_packets import fixed_measurement

from kernel_evidence.harness import Recorder, StopRule, Timer
from kernel_evidence.harness import timer as timer_mod
from kernel_evidence.harness._stats import median_ci, summarize
from kernel_evidence.harness.timer import Measurement
from kernel_evidence.rules import validate

np = pytest.importorskip("numpy")


class FakeClock:
    """``perf_counter_ns`` / ``perf_counter`` that only move when a timed call spends time."""

    def __init__(self) -> None:
        self.now_ns = 0

    def perf_counter_ns(self) -> int:
        return self.now_ns

    def perf_counter(self) -> float:
        return self.now_ns / 1e9

    def spend(self, durations: Iterator[int]) -> Callable[..., None]:
        def fn(*_: Any) -> None:
            self.now_ns += next(durations)

        return fn


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(timer_mod, "time", fake)
    return fake


def _errors(p: Any) -> list[str]:
    return [f.rule_id for f in validate(p).findings if f.severity == "error"]


# ---------------------------------------------------------------- statistics


def test_statistics_match_numpy() -> None:
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 4, 7, 10, 11, 64, 101):
        x = list(rng.lognormal(8.0, 1.0, n))
        s = summarize(x)
        assert s.n == n and s.min == min(x) and s.max == max(x)
        assert s.median == pytest.approx(float(np.median(x)), rel=1e-12)
        assert s.mean == pytest.approx(float(np.mean(x)), rel=1e-12)
        # the sample standard deviation (ddof=1), as docs/harness.md says
        assert s.std == pytest.approx(float(np.std(x, ddof=1)) if n > 1 else 0.0, rel=1e-9, abs=1e-12)
        for p in (5, 25, 50, 75, 95, 99):  # numpy's default method="linear"
            assert s.percentiles[f"p{p}"] == pytest.approx(float(np.percentile(x, p)), rel=1e-12)


def test_median_ci_covers_the_true_median_at_its_level() -> None:
    rng = random.Random(12345)
    true_median = math.log(2.0)  # exponential(1)
    for n, runs in ((10, 1000), (31, 1000), (200, 400)):
        covered = 0
        levels = set()
        for _ in range(runs):
            lo, hi, achieved = median_ci(sorted(rng.expovariate(1.0) for _ in range(n)), 0.95)
            covered += lo <= true_median <= hi
            levels.add(achieved)
        (achieved,) = levels
        assert achieved >= 0.95
        # binomial noise of `runs` trials around the achieved level, about 4 sigma
        slack = 4 * math.sqrt(achieved * (1 - achieved) / runs)
        assert abs(covered / runs - achieved) < slack, (n, covered / runs, achieved)


def test_huge_samples_do_not_overflow_the_summary() -> None:
    # failed before: OverflowError in fsum / the squares of the standard deviation
    s = summarize([1e308, 1.5e308, 1.7e308])
    assert s.mean == pytest.approx(1.4e308) and math.isfinite(s.std) and s.min <= s.mean <= s.max


def test_samples_are_kept_as_measured_in_the_stated_unit(clock: FakeClock) -> None:
    durations = [1234, 999, 1001, 5000, 1500, 1000]
    timer = Timer(warmup=2, stop=StopRule(min_repeats=4, max_repeats=4, target_rel_ci=None))
    m = timer.measure(clock.spend(iter(durations)))
    assert m.samples_ns == [1001.0, 5000.0, 1500.0, 1000.0]  # the two warmup calls are dropped
    st = m.stats("us")
    assert st.unit == "us" and st.n == 4 and st.samples == pytest.approx([1.001, 5.0, 1.5, 1.0], rel=1e-15)
    assert st.min == min(st.samples) and st.max == max(st.samples)


# ---------------------------------------------------------------- the stop rule


def test_ci_stop_needs_the_asked_confidence_level(clock: FakeClock) -> None:
    # failed before: one sample (a zero-width "interval" at level 0) stopped the run,
    # recorded as "CI half-width 0.00% < 50.00%"
    rule = StopRule(min_repeats=1, max_repeats=50, target_rel_ci=0.5, time_budget_s=None)
    m = Timer(warmup=0, stop=rule).measure(clock.spend(itertools.repeat(1000)))
    assert m.summary.ci_level >= 0.95
    assert m.repeats >= 6 and m.stop_reason.startswith("CI half-width")


def test_stop_rule_cases(clock: FakeClock) -> None:
    def run(durations: Iterator[int], **kw: Any) -> Measurement:
        rule = StopRule(**{"min_repeats": 10, "max_repeats": 300, "time_budget_s": None, **kw})
        return Timer(warmup=1, stop=rule).measure(clock.spend(durations))

    constant = run(itertools.repeat(1000))
    assert constant.repeats == 10 and constant.summary.std == 0 and "CI half-width" in constant.stop_reason
    zero = run(itertools.repeat(0), max_repeats=40)  # a clock too coarse: never "tight"
    assert zero.repeats == 40 and zero.stop_reason.startswith("max_repeats")
    bimodal = run(itertools.cycle([1000, 2000]))
    assert bimodal.repeats == 300 and bimodal.stop_reason.startswith("max_repeats")
    outlier = run(itertools.chain([1000] * 4, [1_000_000], itertools.repeat(1000)))
    assert outlier.summary.max == 1_000_000 and outlier.summary.median == 1000 and outlier.repeats <= 15
    drift = run(itertools.count(1000, 50), target_rel_ci=0.001)
    assert drift.repeats <= 300 and drift.samples_ns == sorted(drift.samples_ns)
    budget = run(itertools.repeat(10**8), target_rel_ci=None, min_repeats=3, time_budget_s=0.95)
    assert budget.repeats == 10 and budget.stop_reason.startswith("time budget (0.95 s)")
    cap = run(itertools.repeat(10**8), target_rel_ci=None, min_repeats=3, max_repeats=7, time_budget_s=100.0)
    assert cap.repeats == 7


# ---------------------------------------------------------------- interleaving


def test_compare_interleaves_abba_with_the_same_policy(clock: FakeClock) -> None:
    order: list[str] = []

    def make(tag: str, ns: int) -> Callable[..., None]:
        def fn(*_: Any) -> None:
            order.append(tag)
            clock.now_ns += ns

        return fn

    rule = StopRule(min_repeats=4, max_repeats=4, target_rel_ci=None)
    cand, base = Timer(warmup=2, stop=rule).compare(make("A", 1000), make("B", 3000))
    assert order == ["A", "B"] * 2 + ["A", "B", "B", "A"] * 2
    assert cand.warmup == base.warmup == 2 and cand.repeats == base.repeats == 4
    assert cand.stop_rule == base.stop_rule and cand.samples_ns == [1000.0] * 4
    t = cand.timing(baseline=base, provider="numpy", version="2", call="np.add")
    assert t.interleaved and t.baseline is not None and t.baseline.interleaved and t.baseline.same_session
    assert t.speedup is not None and t.speedup.value == pytest.approx(3.0)


def test_interleaved_only_with_the_measurement_of_the_same_compare(clock: FakeClock) -> None:
    # failed before: candidate and baseline from two different compare() calls were
    # recorded as interleaved with each other
    rule = StopRule(min_repeats=3, max_repeats=3, target_rel_ci=None)
    timer = Timer(warmup=0, stop=rule)
    c1, _ = timer.compare(clock.spend(itertools.repeat(1000)), clock.spend(itertools.repeat(2000)))
    _, b2 = timer.compare(clock.spend(itertools.repeat(1000)), clock.spend(itertools.repeat(2000)))
    t = c1.timing(baseline=b2, provider="numpy", version="2", call="np.add")
    assert t.baseline is not None and t.baseline.interleaved is False and t.interleaved is False
    alone = timer.measure(clock.spend(itertools.repeat(2000)))
    t2 = c1.timing(baseline=alone, provider="numpy", version="2", call="np.add")
    assert t2.baseline is not None and t2.baseline.interleaved is False and t2.interleaved is False


# ---------------------------------------------------------------- the speedup claim


def test_zero_baseline_median_makes_no_claim() -> None:
    # failed before: a speedup of 0 was claimed, which KE301 rejects
    t = fixed_measurement([1000.0, 1000.0]).timing(
        baseline=fixed_measurement([0.0, 0.0, 1.0]), provider="numpy", version="2", call="x"
    )
    assert t.speedup is None


def test_random_outcomes_always_give_valid_packets() -> None:
    # failed before: KE301 (zero baseline median) and overflow failures on huge values
    rng = random.Random(2024)
    rec = Recorder(created_at="2026-11-22T00:00:00Z", operator="softmax", keep=True)

    def outcome(kind: str) -> list[float]:
        n = rng.randint(1, 40)
        if kind == "lognormal":
            return [rng.lognormvariate(rng.uniform(0, 20), rng.uniform(0, 2)) for _ in range(n)]
        if kind == "constant":
            return [float(rng.randint(0, 10**6))] * n
        if kind == "zeros":
            return [rng.choice([0.0, 0.0, 1.0]) for _ in range(n)]
        if kind == "tiny":
            return [rng.uniform(0, 1e-300) for _ in range(n)]
        if kind == "huge":
            return [rng.uniform(1e300, 1.7e308) for _ in range(n)]
        s = [rng.uniform(1e3, 2e3) for _ in range(n)]
        s[0] *= 1000  # one 1000x outlier
        return s

    kinds = ["lognormal", "constant", "zeros", "tiny", "huge", "outlier"]
    for i in range(300):
        cand, base = (
            fixed_measurement(outcome(rng.choice(kinds))),
            fixed_measurement(outcome(rng.choice(kinds))),
        )
        unit = rng.choice(["ns", "us", "ms", "s"])
        with rec.candidate(f"c{i}") as c:
            c.shape_result("s1", passed=True)
            c.timing(cand.timing(baseline=base, provider="numpy", version="2", call="np.exp", unit=unit))
        p = c.packet
        assert p is not None and p.status.value == "passed", p.failure
        assert not set(_errors(p)) & {"KE301", "KE501", "KE503"}, (i, _errors(p))
        if p.timing is not None and p.timing.speedup is not None:
            assert 0 < p.timing.speedup.value < math.inf


# ---------------------------------------------------------------- what the timed call does


def test_exceptions_say_whether_warmup_or_a_timed_call_raised(clock: FakeClock) -> None:
    calls = itertools.count()

    def fails_at(k: int) -> Callable[[], None]:
        def fn() -> None:
            if next(calls) == k:
                raise ValueError("boom")

        return fn

    timer = Timer(warmup=2, stop=StopRule(min_repeats=3, max_repeats=3, target_rel_ci=None))
    for k, where in ((1, "warmup call 2 of 2"), (3, "timed call 2")):
        calls = itertools.count()
        with pytest.raises(ValueError) as info:
            timer.measure(fails_at(k))
        notes = getattr(info.value, "__notes__", None)
        if hasattr(info.value, "add_note"):  # Python 3.11+; failed before
            assert notes == [f"raised by the timer during {where}"]


def test_a_generator_result_is_not_timed_silently(clock: FakeClock) -> None:
    # failed before: the lazy work ran after the timed region, with no warning
    def lazy() -> Iterator[int]:
        clock.now_ns += 10**6  # never runs inside the timed call
        yield 1

    timer = Timer(warmup=1, stop=StopRule(min_repeats=3, max_repeats=3, target_rel_ci=None))
    with pytest.warns(RuntimeWarning, match="lazily") as record:
        m = timer.measure(lazy)
    assert len(record) == 1 and m.samples_ns == [0.0, 0.0, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        timer.measure(clock.spend(itertools.repeat(5)))  # an ordinary function: no warning
