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
