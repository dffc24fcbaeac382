"""XProf inputs in shapes met in the wild that the corpus lacks (hand-written fixtures)."""

from __future__ import annotations

from pathlib import Path

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.xprof import ADAPTER
from kernel_evidence.models import EvidencePacket

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "xprof"


def test_gpu_trace_json_counts_the_busy_device_planes() -> None:
    result = ADAPTER.read(
        [str(FIX / "gpu_two_planes.trace.json")], AdapterOptions(created_at="2026-11-22T00:00:00Z")
    )
    (p,) = result.packets
    EvidencePacket.model_validate(p.to_dict())
    cap = p.profiler[0]
    # two GPU planes, only GPU:0 ran anything (it was reported as 0 active planes)
    assert cap.attributes["device_planes"] == 2
    assert cap.attributes["active_device_planes"] == 1
    (rec,) = cap.kernels
    assert rec.invocations == 2
    assert rec.metrics["duration"].value == 10000.0  # 4 us + 6 us (a string `dur`), in ns
