"""A sixth red-team round, hardware and tolerance bands: clock records no device runs at, a
clock_policy `locked` the clock record does not show, an H100 relabelled as its H200 sibling
(told apart by the memory clock), a serving run's pipeline-parallel devices and nodes, inputs
set to zero by a scale dim, and a tolerance wide enough to pass zeroed outputs. Each beside an
honest twin that must still pass."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_build import finalize  # noqa: E402
from _adv_kit import control, found, rules  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
LN = "h100_layernorm_vs_transformer_engine"
TP8 = "serving_sglang_tp8_llama70b"


def result(p: dict[str, Any]) -> Any:
    return validate(finalize(copy.deepcopy(p)))


# ---------------------------------------------------------------- KE807: no clock a device runs at


@pytest.mark.parametrize(("value", "unit"), [(1755.0, "Hz"), (0.0, "MHz"), (12.0, "GHz"), (5.0, "MHz")])
def test_an_observed_clock_no_device_runs_at_is_ke807(value: float, unit: str) -> None:
    p = control()
    p["hardware"]["clocks"] = {"locked": False, "sm_observed": {"value": value, "unit": unit}}
    p["timing"]["clock_policy"] = "unlocked"
    for side in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        side["clock_policy"] = "unlocked"
    assert ("KE807", "/hardware/clocks/sm_observed") in found(p)
    assert not result(p).ok


@pytest.mark.parametrize(("value", "unit"), [(1.755, "GHz"), (1755e6, "Hz"), (345.0, "MHz"), (5.7, "GHz")])
def test_a_clock_in_any_unit_a_device_runs_at_passes(value: float, unit: str) -> None:
    p = control()
    c = p["hardware"]["clocks"]
    c["sm_observed"] = {"value": value, "unit": unit}
    c.pop("sm_requested")
    assert "KE807" not in rules(p)


# ---------------------------------------------------------------- KE803: a lock the clock record does not show


@pytest.mark.parametrize("locked", [None, False])
def test_clock_policy_locked_without_the_lock_recorded_is_ke803(locked: bool | None) -> None:
    p = control()
    c = p["hardware"]["clocks"]
    if locked is None:
        del c["locked"]
    else:
        c["locked"] = locked
    assert ("KE803", "/timing/clock_policy") in found(p)
    assert result(p).grade.letter != "A"
    p["timing"]["clock_policy"] = "unknown"
    assert ("KE803", "/timing/conditions/clock_policy") in found(p)


def test_clock_policy_locked_with_the_lock_recorded_passes() -> None:
    p = control()
    assert p["hardware"]["clocks"]["locked"] is True
    assert "KE803" not in rules(p)
    assert result(p).grade.letter == "A"
    # an unlocked run that says so, and a run with no clock record (KE803's other finding)
    p["hardware"]["clocks"]["locked"] = False
    p["timing"]["clock_policy"] = "unlocked"
    for side in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        side["clock_policy"] = "unlocked"
    assert ("KE803", "/timing/clock_policy") not in found(p)


# ---------------------------------------------------------------- KE806: a sibling's memory clock


def _as_h200(p: dict[str, Any]) -> None:
    h = p["hardware"]
    h["device"] = "NVIDIA H200"
    h["device_id"] = "nvidia-h200-sxm-141gb"
    h["memory"] = {"value": 141.0, "unit": "GB"}


def test_an_h100_memory_clock_under_an_h200_name_is_ke806() -> None:
    p = control(LN)
    assert p["hardware"]["clocks"]["memory_observed"]["value"] == 2619.0
    _as_h200(p)
    assert ("KE806", "/hardware/device_id") in found(p)
    del p["hardware"]["device_id"]
    assert ("KE806", "/hardware/device") in found(p)


def test_an_h200_with_its_own_memory_clock_passes() -> None:
    p = control(LN)
    _as_h200(p)
    p["hardware"]["clocks"]["memory_observed"] = {"value": 3.201, "unit": "GHz"}
    assert "KE806" not in rules(p)
    # an H100 at its own clock, and a memory clock that is nobody's (not judged)
    p = control(LN)
    assert "KE806" not in rules(p)
    _as_h200(p)
    p["hardware"]["clocks"]["memory_observed"] = {"value": 1000.0, "unit": "MHz"}
    assert "KE806" not in rules(p)


# ---------------------------------------------------------------- KE805: pipeline stages and nodes


def test_pipeline_parallel_in_settings_needs_its_devices() -> None:
    p = control(TP8)
    p["task"]["serving"]["settings"]["pipeline_parallel_size"] = 2
    assert ("KE805", "/hardware/count") in found(p)
    assert not result(p).ok


def test_pipeline_parallel_on_the_command_line_needs_its_devices() -> None:
    p = control(TP8)
    del p["hardware"]["count"]
    p["replay"]["command"] += ["--pipeline-parallel-size", "2"]
    assert ("KE805", "/timing/conditions/device_count") in found(p)
    p = control(TP8)
    del p["hardware"]["count"]
    p["replay"]["command"] += ["--nnodes=16"]
    assert ("KE805", "/timing/conditions/device_count") in found(p)


def test_one_node_and_one_stage_pass() -> None:
    p = control(TP8)
    p["task"]["serving"]["settings"]["nnodes"] = 1
    p["task"]["serving"]["settings"]["pipeline_parallel_size"] = 1
    p["replay"]["command"] += ["--nnodes", "2"]
    assert "KE805" not in rules(p)
    assert result(p).ok


# ---------------------------------------------------------------- KE701: zero inputs, zeroed outputs


def test_a_shape_validated_on_zero_inputs_is_ke701() -> None:
    p = control(LN)
    p["task"]["shapes"][0]["dims"]["input_scale"] = 0
    assert ("KE701", "/task/shapes/0/dims/input_scale") in found(p)
    assert not result(p).ok


@pytest.mark.parametrize(
    ("name", "value"), [("input_scale", 1), ("rope_scale", 0), ("scale", 0), ("range_start", 0)]
)
def test_a_nonzero_input_scale_or_an_operator_parameter_passes(name: str, value: int) -> None:
    p = control(LN)
    p["task"]["shapes"][0]["dims"][name] = value
    assert "KE701" not in rules(p)


def test_a_whole_element_wrong_and_half_the_range_is_ke701() -> None:
    p = control()
    s = p["validation"]["shapes"][0]
    s.update(max_rel_error=1.0, max_abs_error=100.0, atol=100.0, rtol=0.0)
    p["task"]["tolerance"] = {"atol": 100.0, "rtol": 0.0}
    assert ("KE701", "/validation/shapes/0/max_rel_error") in found(p)
    assert not result(p).ok


def test_a_large_relative_error_on_a_near_zero_element_passes() -> None:
    # honest: the relative error is largest where the reference is within atol of zero
    p = control()
    p["validation"]["shapes"][0]["max_rel_error"] = 3.5
    assert "KE701" not in rules(p)
    assert result(p).grade.letter == "A"
