"""tritonbench adapter on the shapes of real outputs it had not seen (fixtures written by
hand in tests/fixtures/tritonbench/wild, named in their README)."""

from __future__ import annotations

from pathlib import Path

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.tritonbench import ADAPTER

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "tritonbench" / "wild"
T0 = "2026-11-22T00:00:00Z"


def read(name: str) -> tuple[dict[tuple[str, str], object], list[str]]:
    result = ADAPTER.read([str(WILD / name)], AdapterOptions(created_at=T0))
    rows = {}
    for p in result.packets:
        raw = p.extensions["pytorch:tritonbench"]
        rows[(raw["x_val"], raw["provider"])] = p
    return rows, [str(w) for w in result.warnings]


def test_nightly_wrapper_keys_under_metrics_and_its_device() -> None:
    rows, warnings = read("nightly_wrapper.json")
    assert sorted(rows) == [("1024", "liger_layer_norm"), ("2048", "liger_layer_norm")]
    p = rows[("1024", "liger_layer_norm")]
    assert p.subject.name == "layer_norm"
    assert p.timing.stats.median == 0.0125 and p.timing.stats.unit == "ms"
    assert p.hardware is not None and p.hardware.device == "NVIDIA H100 80GB HBM3"
    assert p.hardware.device_id == "nvidia-h100-sxm5-80gb"
    assert not any("does not print the GPU" in w for w in warnings)


def test_2024_keys_with_the_metric_inside_the_brackets() -> None:
    rows, _ = read("torchbench_2024_keys.json")
    assert sorted(rows) == [("256", "naive_softmax"), ("256", "triton_softmax")]
    p = rows[("256", "triton_softmax")]
    assert p.subject.name == "softmax"
    assert p.timing.stats.median == 0.015
    assert p.extensions["pytorch:tritonbench"]["metrics"] == {"gbps": 500.25, "latency": 0.015}
    assert p.replay is not None and p.replay.packages == {"torch": "2.4.0.dev20240101+cu121"}
