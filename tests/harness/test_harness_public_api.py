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
