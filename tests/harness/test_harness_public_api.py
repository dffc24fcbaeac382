"""The harness namespace is curated like the package's: nothing appears or disappears by accident."""

from __future__ import annotations

import kernel_evidence.harness as harness

EXPECTED = {
    "EXIT_CODES", "CacheFlush", "CandidateFailure", "CandidateRecord", "Comparison", "Environment", "InfraError",
    "Measurement", "MeasurementTimeout", "Recorder", "ReplayPlan", "ReplayResult", "RewardConfig",
    "StopRule", "Timer", "capture_environment", "check_output", "classify_exception",
    "compare_packets", "compare_samples", "execute_replay", "open_sink", "plan_replay", "reward",
    "speed_of_light_fraction",
}  # fmt: skip


def test_harness_all_is_the_curated_set() -> None:
    assert set(harness.__all__) == EXPECTED
    assert harness.__all__ == sorted(harness.__all__)
    for name in harness.__all__:
        assert hasattr(harness, name), name


def test_recorder_and_candidate_options_are_explicit_parameters() -> None:
    # failed before: Recorder(**task_defaults) and candidate(name, **kwargs) hid the options
    # from help() and editors, and accepted any misspelt keyword until the packet was built
    import inspect

    from kernel_evidence.harness import CandidateRecord, Recorder

    for fn in (Recorder.__init__, Recorder.candidate, CandidateRecord.__init__):
        kinds = {p.kind for p in inspect.signature(fn).parameters.values()}
        assert inspect.Parameter.VAR_KEYWORD not in kinds, fn.__qualname__
    names = set(inspect.signature(Recorder.candidate).parameters)
    assert {"kind", "description", "iteration", "parent_packet_id", "relation", "suppress", "task"} <= names
    assert {"operator", "shapes", "dtypes", "reference", "tolerance", "work"} <= names
    assert {"operator", "shapes", "dtypes", "description", "created_at", "keep"} <= set(
        inspect.signature(Recorder.__init__).parameters
    )
    doc = inspect.getdoc(Recorder.candidate) or ""
    assert "parent_packet_id" in doc and "operator" in doc
    rec = Recorder(created_at="2026-11-22T00:00:00Z")
    try:
        rec.candidate("x", operater="softmax")  # type: ignore[call-arg]
    except TypeError as exc:
        assert "operater" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("a misspelt option was accepted")


def test_statuses_print_as_their_values() -> None:
    from kernel_evidence.models import FailureClass, Status

    assert str(Status.PASSED) == "passed" and f"{Status.FAILED}" == "failed"
    assert f"status {Status.ERROR}, class {FailureClass.NAN_INF}" == "status error, class nan_inf"
