"""The reward: correctness-gated, then log2 of the speedup over a named baseline."""

from __future__ import annotations

from typing import Any

import pytest

from kernel_evidence.harness import RewardConfig, reward, speed_of_light_fraction
from kernel_evidence.models import FailureClass


def _packet(
    status: str = "passed", speedup: float | None = None, failure: str | None = None, **more: Any
) -> dict[str, Any]:
    p: dict[str, Any] = {
        "schema_version": "0.1",
        "created_at": "2026-11-22T00:00:00Z",
        "producer": {"name": "kernel-evidence", "version": "0.1.0"},
        "subject": {"kind": "kernel", "name": "k"},
        "status": status,
    }
    if failure:
        p["failure"] = {"failure_class": failure}
    if speedup is not None:
        p["timing"] = {
            "method": "cuda_events",
            "stats": {"unit": "us", "median": 10.0},
            "baseline": {
                "provider": "cuBLAS",
                "version": "12",
                "call": "gemm",
                "stats": {"unit": "us", "median": 10.0 * speedup},
            },
            "speedup": {"value": speedup, "basis": "median"},
        }
    p.update(more)
    return p


@pytest.mark.parametrize("fc", [fc.value for fc in FailureClass if fc is not FailureClass.REWARD_HACK])
def test_failures_score_zero(fc: str) -> None:
    assert reward(_packet("failed", failure=fc)) == 0.0


def test_reward_hack_is_penalised_and_penalties_are_configurable() -> None:
    assert reward(_packet("failed", failure="reward_hack")) == -1.0
    cfg = RewardConfig(penalties={FailureClass.COMPILE_ERROR: -0.5})
    assert reward(_packet("failed", failure="compile_error"), cfg) == -0.5


@pytest.mark.parametrize(
    ("speedup", "expected"), [(1.0, 1.0), (2.0, 2.0), (4.0, 3.0), (0.5, 0.1), (1000.0, 5.0)]
)
def test_speedup_term(speedup: float, expected: float) -> None:
    assert reward(_packet(speedup=speedup)) == pytest.approx(expected)


def test_correct_without_claim_scores_the_correct_term() -> None:
    assert reward(_packet()) == 1.0


def test_failed_validation_gates_even_a_passed_status() -> None:
    p = _packet(speedup=2.0, validation={"verdict": "failed"}, failure=None)
    p["status"] = "passed"
    assert reward(p) == 0.0


def test_speed_of_light_term() -> None:
    p = _packet(
        speedup=1.0,
        task={"work": {"bytes": {"value": 1.0e6, "unit": "B"}}},
        hardware={
            "vendor": "nvidia",
            "device": "X",
            "peak_bandwidth": {"value": 200.0, "unit": "GB/s"},
        },
    )
    # 1e6 B in 10 us = 100 GB/s, half of the 200 GB/s peak
    assert speed_of_light_fraction(p) == pytest.approx(0.5)
    assert reward(p, RewardConfig(sol_weight=2.0)) == pytest.approx(2.0)
    assert speed_of_light_fraction(_packet(speedup=1.0)) == 0.0
