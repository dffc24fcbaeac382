"""The timer: warmup, stop rule, fresh inputs, interleaving, and what it records."""

from __future__ import annotations

import pytest

from kernel_evidence.harness import Measurement, MeasurementTimeout, StopRule, Timer
from kernel_evidence.rules import validate


def test_warmup_repeats_and_fresh_inputs_per_call() -> None:
    made: list[int] = []
    seen: list[int] = []

    def setup() -> int:
        made.append(len(made))
        return made[-1]

    timer = Timer(
        warmup=3,
        stop=StopRule(min_repeats=7, max_repeats=7, target_rel_ci=None, time_budget_s=None),
    )
    m = timer.measure(seen.append, setup=setup)
    assert m.repeats == 7
    assert m.warmup == 3
    assert seen == list(range(10))  # every call got its own, new input
    assert m.inputs_regenerated
    assert m.method == "host_clock"
    assert m.stop_reason == "max_repeats (7) reached"


def test_time_budget_stops_the_loop() -> None:
    timer = Timer(
        warmup=0,
        stop=StopRule(min_repeats=2, max_repeats=10_000, target_rel_ci=None, time_budget_s=0.05),
    )
    m = timer.measure(lambda: sum(range(2000)))
    assert 2 <= m.repeats < 10_000
    assert m.stop_reason.startswith("time budget (0.05 s) spent")


def test_ci_target_stops_a_quiet_measurement() -> None:
    timer = Timer(
        warmup=0,
        stop=StopRule(min_repeats=10, max_repeats=10_000, target_rel_ci=0.5, time_budget_s=None),
    )
    m = timer.measure(lambda: sum(range(5000)))
    assert m.repeats < 10_000
    assert "CI half-width" in m.stop_reason


def test_compare_interleaves_abba_each_side_on_its_own_fresh_inputs() -> None:
    order: list[tuple[str, int]] = []
    counter = iter(range(10_000))
    timer = Timer(
        warmup=1,
        stop=StopRule(min_repeats=4, max_repeats=4, target_rel_ci=None, time_budget_s=None),
    )
    cand, base = timer.compare(
        lambda x: order.append(("A", x)),
        lambda x: order.append(("B", x)),
        setup=lambda: next(counter),
    )
    timed = order[2:]  # after one warmup round
    assert [t for t, _ in timed] == ["A", "B", "B", "A", "A", "B", "B", "A"]
    # setup runs once per side per round (candidate's first), before either side runs:
    # no two calls share an input object (before: both sides of a round got the same one)
    assert [x for _, x in timed] == [2, 3, 5, 4, 6, 7, 9, 8]
    assert [x for _, x in order[:2]] == [0, 1]
    assert cand.interleaved and base.interleaved
    assert cand.repeats == base.repeats == 4


def test_call_timeout_raises_a_timeout_error() -> None:
    import time

    timer = Timer(warmup=0, stop=StopRule(min_repeats=1, max_repeats=1), call_timeout_s=0.001)
    with pytest.raises(TimeoutError, match=r"over the 0.001 s limit per call"):
        timer.measure(lambda: time.sleep(0.01))
    assert issubclass(MeasurementTimeout, TimeoutError)


def _m(samples_ns: list[float]) -> Measurement:
    return Measurement(
        samples_ns=samples_ns, method="host_clock", warmup=1, stop_rule="fixed", stop_reason="test",
        cache_policy="warm", synchronized=True, interleaved=True, session="run-1",
    )  # fmt: skip


def test_timing_records_method_baseline_and_a_checkable_speedup() -> None:
    cand = _m([1000.0, 1100.0, 900.0, 1050.0, 950.0])
    base = _m([2000.0, 2100.0, 1900.0, 2050.0, 1950.0])
    t = cand.timing(baseline=base, provider="numpy", version="2.0", call="np.exp", shape_id="s1", unit="us")
    assert t.method == "host_clock"
    assert t.stats is not None and t.stats.unit == "us" and t.stats.median == pytest.approx(1.0)
    assert t.stats.samples == pytest.approx([1.0, 1.1, 0.9, 1.05, 0.95])
    assert t.baseline is not None and t.baseline.same_session and t.baseline.interleaved
    assert t.speedup is not None and t.speedup.value == pytest.approx(2.0) and t.speedup.basis == "median"
    assert t.cache_policy == "warm" and t.synchronized and t.interleaved and t.stop_rule == "fixed"


def test_same_session_is_derived_from_the_sessions_never_assumed() -> None:
    # failed before: any baseline Measurement was recorded as same_session=True
    cand, base = _m([1000.0, 1100.0]), _m([2000.0, 2100.0])
    base.session = "run-2"
    t = cand.timing(baseline=base, provider="numpy", version="2.0", call="np.exp")
    assert t.baseline is not None and t.baseline.same_session is False
    cand.session = base.session = None  # built by hand, no session: unknown, not asserted
    t = cand.timing(baseline=base, provider="numpy", version="2.0", call="np.exp")
    assert t.baseline is not None and t.baseline.same_session is None


def test_timing_without_a_named_provider_makes_no_claim() -> None:
    t = _m([1.0, 2.0]).timing(baseline=_m([3.0, 4.0]))
    assert t.speedup is None


def test_stats_pass_the_validator_rules() -> None:
    from kernel_evidence.harness import Recorder

    rec = Recorder(created_at="2026-11-22T00:00:00Z")
    timer = Timer(warmup=1, stop=StopRule(min_repeats=15, max_repeats=15))
    cand, base = timer.compare(lambda: sum(range(300)), lambda: sum(range(600)))
    with rec.candidate("k", operator="sum") as c:
        c.shape_result("n", passed=True, reference_max_abs=1.0, atol=1e-6)
        c.timing(cand, baseline=base, provider="numpy", version="2", call="sum(range(600))")
    report = validate(c.packet)
    assert report.ok, [f.message for f in report.findings]


def test_stop_rule_refuses_impossible_bounds() -> None:
    with pytest.raises(ValueError, match=r"expected 1 <= min_repeats <= max_repeats, got 5 and 2"):
        StopRule(min_repeats=5, max_repeats=2)
