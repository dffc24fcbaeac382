"""XProf inputs in shapes met in the wild that the corpus lacks (hand-written fixtures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.xprof import ADAPTER
from kernel_evidence.errors import AdapterError
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


def test_a_pytorch_profiler_trace_is_refused_not_read_as_an_empty_profile(tmp_path: Path) -> None:
    # PyTorch's Kineto traces share the trace-event format (and the name trace.json) but name
    # no XSpace plane: they gave a packet with no ops and no hardware, exit 0
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "Some GPU"}],
        "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 1.0, "dur": 5.0},
            {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 9, "ts": 2.0, "dur": 3.0},
        ],
    }
    for name in ("trace.json", "host0.trace.json"):
        f = tmp_path / name
        f.write_text(json.dumps(doc))
        with pytest.raises(AdapterError) as exc:
            ADAPTER.read([str(f)], AdapterOptions(created_at="2026-11-22T00:00:00Z"))
        msg = str(exc.value)
        assert msg.startswith(f"{f}: no `process_name` event names an XProf plane")
        assert "Kineto" in msg and "\n" not in msg
