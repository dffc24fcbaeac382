"""rocprof formats met in the wild that the corpus lacks: per-kernel statistics files
(rocprofv3 ``*_kernel_stats.csv``, rocprof v1 ``results.stats.csv``) and kernel traces
without counters. Fixtures are hand-written (tests/fixtures/rocprof/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.rocprof import ADAPTER
from kernel_evidence.errors import AdapterError, InputError
from kernel_evidence.models import EvidencePacket

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "rocprof"
T0 = "2026-11-22T00:00:00Z"


def one(path: Path) -> EvidencePacket:
    result = ADAPTER.read([str(path)], AdapterOptions(created_at=T0))
    assert len(result.packets) == 1
    p = result.packets[0]
    EvidencePacket.model_validate(p.to_dict())
    assert p.packet_id == p.compute_id()
    return p


def test_rocprofv3_kernel_stats_folder() -> None:
    p = one(FIX / "rocprofv3_kernel_stats")  # hip_api / domain stats beside it are not kernels
    cap = p.profiler[0]
    assert cap.tool == "rocprofv3"
    assert [(k.name, k.invocations, k.metrics["duration"].value) for k in cap.kernels] == [
        ("saxpy(float, float const*, float*, int)", 40, 50000.0),
        ("fill_kernel(float*, int)", 10, 50000.0),
    ]
    assert p.subject.name == "saxpy(float, float const*, float*, int)"  # largest TotalDurationNs
    s = p.timing.stats
    assert (s.mean, s.min, s.max, s.std, s.n, s.median) == (50000.0, 48000.0, 56000.0, 1500.0, 40, None)
    assert (p.hardware.device, p.hardware.arch, p.hardware.compute_units) == (
        "Radeon RX 7900 XTX",
        "gfx1100",
        96,
    )
    assert cap.raw_columns["TotalDurationNs"] == [2000000.0, 500000.0]
    # the file itself is accepted as well
    assert one(FIX / "rocprofv3_kernel_stats" / "77_kernel_stats.csv").subject.name == p.subject.name


def test_rocprof_v1_results_stats_csv() -> None:
    p = one(FIX / "rocprofv1_stats")
    cap = p.profiler[0]
    assert cap.tool == "rocprof"
    k = {r.name: r for r in cap.kernels}
    assert set(k) == {"transpose(float*, float const*, int)", "zero(float*)"}  # [clone .kd] removed
    assert k["transpose(float*, float const*, int)"].metrics["duration"].value == 200000.0
    assert k["transpose(float*, float const*, int)"].invocations == 4
    assert k["zero(float*)"].metrics is None  # empty AverageNs: left out, never 0
    assert any("`AverageNs` is empty" in w for w in cap.warnings)
    assert p.hardware is None


def test_api_statistics_are_not_kernels(tmp_path: Path) -> None:
    f = tmp_path / "results.hip_stats.csv"
    f.write_text((FIX / "rocprofv1_stats" / "results.hip_stats.csv").read_text())
    with pytest.raises((AdapterError, InputError)):
        ADAPTER.read([str(f)], AdapterOptions(created_at=T0))


def test_kernel_trace_without_counters_is_not_called_counter_collection() -> None:
    p = one(FIX / "rocprofv3_trace_only")
    assert [k.metrics["duration"].value for k in p.profiler[0].kernels] == [3000.0, 5000.0]
    assert [k.metrics["shared_memory_per_block"].value for k in p.profiler[0].kernels] == [2048.0, 2048.0]
    assert "counter collection" not in p.timing.notes
    assert "kernel trace" in p.timing.notes
