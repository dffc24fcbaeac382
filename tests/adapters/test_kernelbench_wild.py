"""kernelbench adapter on the shapes of real files it had not seen (fixtures written by
hand in tests/fixtures/kernelbench/wild, named in their README)."""

from __future__ import annotations

from pathlib import Path

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.kernelbench import ADAPTER

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench" / "wild"
T0 = "2026-11-22T00:00:00Z"


def test_a_named_level_is_a_baseline_file_not_another_kind() -> None:
    result = ADAPTER.read([str(WILD / "baseline_time_named_level.json")], AdapterOptions(created_at=T0))
    by_name = {p.subject.name: p for p in result.packets}
    assert sorted(by_name) == ["0_toy_subtraction_", "7_Matmul_with_small_K_dimension_"]
    p = by_name["7_Matmul_with_small_K_dimension_"]
    assert p.timing.stats.mean == 0.0312 and p.timing.stats.unit == "ms"
    assert p.timing.shape_id == "level_tk/7"
    assert p.extensions["kernelbench:raw"]["key"] == "level_tk/7_Matmul_with_small_K_dimension_.py"


def test_an_amd_baseline_is_timed_with_hip_events_unless_the_method_is_given() -> None:
    path = str(WILD / "results" / "timing" / "MI300X_rocm" / "baseline_time_torch.json")
    (p, _) = sorted(ADAPTER.read([path], AdapterOptions(created_at=T0)).packets, key=lambda p: p.subject.name)
    assert p.hardware is not None and p.hardware.vendor == "amd"
    assert p.timing.method == "hip_events"
    assert p.timing.conditions.method == "hip_events"
    given = AdapterOptions(created_at=T0, extra={"method": "cuda_events"})
    (q, _) = sorted(ADAPTER.read([path], given).packets, key=lambda p: p.subject.name)
    assert q.timing.method == "cuda_events"


def test_a_cuda_error_filed_as_not_compiled_is_a_runtime_error_with_its_text() -> None:
    path = str(WILD / "runs" / "old_layout_run" / "eval_results.json")
    packets = ADAPTER.read([path], AdapterOptions(created_at=T0)).packets
    by_entry = {p.extensions["kernelbench:raw"]["entry"]: p for p in packets}
    crashed = by_entry["7"]
    assert crashed.status == "failed"
    assert crashed.failure is not None and str(crashed.failure.failure_class) == "runtime_error"
    assert "illegal memory access" in (crashed.failure.message or "")
    assert crashed.timing is None  # runtime -1: not measured
    ok = by_entry["8"]
    assert ok.status == "passed" and ok.timing is not None and ok.timing.stats.mean == 1.25


def test_a_timed_out_evaluation_is_the_candidates_timeout_other_errors_stay_infra() -> None:
    path = str(WILD / "runs" / "old_layout_run" / "eval_results.json")
    packets = ADAPTER.read([path], AdapterOptions(created_at=T0)).packets
    by_entry = {p.extensions["kernelbench:raw"]["entry"]: p for p in packets}
    hung = by_entry["9"]
    assert hung.status == "failed" and str(hung.failure.failure_class) == "timeout"
    lost = by_entry["10"]
    assert lost.status == "error" and str(lost.failure.failure_class) == "infra_error"


def test_other_error_is_the_candidates_runtime_error_and_nan_differences_are_nan_inf() -> None:
    path = str(WILD / "runs" / "old_layout_run" / "eval_results.json")
    packets = ADAPTER.read([path], AdapterOptions(created_at=T0)).packets
    by_entry = {p.extensions["kernelbench:raw"]["entry"]: p for p in packets}
    raised = by_entry["11"]
    assert raised.status == "failed" and str(raised.failure.failure_class) == "runtime_error"
    assert "has no attribute" in (raised.failure.message or "")
    nan = by_entry["12"]
    assert str(nan.failure.failure_class) == "nan_inf"
    (shape,) = nan.validation.shapes
    assert shape.nan_seen is True and shape.max_abs_error is None
    finite = by_entry["13"]
    assert str(finite.failure.failure_class) == "incorrect_numerical"
    (shape,) = finite.validation.shapes
    assert shape.max_abs_error == 2.25 and shape.nan_seen is None
