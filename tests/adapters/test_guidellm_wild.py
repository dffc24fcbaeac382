"""guidellm adapter on the shapes of real reports it had not seen (fixtures written by
hand in tests/fixtures/guidellm/wild, named in their README)."""

from __future__ import annotations

from pathlib import Path

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.guidellm import ADAPTER

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "guidellm" / "wild"
T0 = "2026-11-22T00:00:00Z"


def test_status_summaries_without_a_count_keep_their_statistics() -> None:
    result = ADAPTER.read([str(WILD / "v0.6_trimmed_no_counts.json")], AdapterOptions(created_at=T0))
    (p,) = result.packets
    s = p.timing.serving
    assert s.completed == 40 and s.failed == 3
    assert s.ttft is not None and s.ttft.median == 50.0 and s.ttft.mean == 52.5
    assert s.ttft.n is None
    assert s.ttft.percentiles == {"p50": 50.0, "p99": 71.0}
    assert s.itl is not None and s.itl.median == 7.25
    # request_latency is in seconds: ms in the packet
    assert s.e2el is not None and s.e2el.median == 1200.0
    assert s.e2el.percentiles == {"p99": 1900.0}


def test_a_v07_profile_is_named_by_kind() -> None:
    result = ADAPTER.read([str(WILD / "v0.7_profile_kind.json")], AdapterOptions(created_at=T0))
    (p,) = result.packets
    assert p.task.serving.settings["profile"] == "sweep"
    assert p.task.serving.settings["strategy"] == "synchronous"
    assert p.task.serving.max_concurrency == 1
    assert p.timing.serving.e2el.median == 2000.0
