"""Nsight Compute: a details page with the compute capability and SM count but no device
name still describes the device (the name unknown); the observed SM clock comes from the
report's SM cycles-per-second rate, ``gpc__`` where there is no ``sm__`` one."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_evidence.adapters import AdapterOptions, missing_fields
from kernel_evidence.adapters.ncu import ADAPTER
from kernel_evidence.models import EvidencePacket

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"


def _read(path: Path) -> tuple[EvidencePacket, list[str]]:
    result = ADAPTER.read([str(path)], AdapterOptions(created_at="2026-11-27T00:00:00Z"))
    (packet,) = result.packets
    return packet, result.warnings


def test_details_page_with_compute_capability_and_sm_count_but_no_name() -> None:
    path = FIX / "details_cc_sms_no_device_name.csv"
    packet, warnings = _read(path)
    hw = packet.hardware
    assert hw is not None
    assert (hw.vendor, hw.device, hw.arch, hw.compute_units) == ("nvidia", "unknown", "sm_86", 46)
    assert hw.device_id is None  # sm_86 with 46 SMs is a kind of device, not a named one
    assert hw.clocks is not None and hw.clocks.sm_observed is not None
    assert hw.clocks.sm_observed.value == 1500.0  # median of 1.51 and 1.49 cycle/ns
    (w,) = [w for w in warnings if "device name not in this export" in w]
    assert w == (
        f"{path}: device name not in this export (details page; compute capability sm_86, 46 SMs); "
        "hardware.device is `unknown`"
    )
    assert missing_fields(w) == {"hardware.device": "<GPU model>"}


def test_sm_clock_from_the_gpc_rate_when_the_report_has_no_sm_rate() -> None:
    packet, _ = _read(FIX / "raw_gpc_clock_only.csv")
    clocks = packet.hardware.clocks if packet.hardware else None
    assert clocks is not None and clocks.sm_observed is not None and clocks.memory_observed is not None
    assert clocks.sm_observed.value == 1515.679  # the median launch, in MHz
    assert clocks.memory_observed.value == 2618.974


def test_ncu_rep_observed_sm_clock(corpus: Path) -> None:
    pytest.importorskip("ncu_report")
    path = corpus / "ncu" / "cs599k_rms_norm_triton.ncu-rep"
    if not path.exists():
        pytest.skip("corpus file absent")
    packet, _ = _read(path)
    clocks = packet.hardware.clocks if packet.hardware else None
    # the report has gpc__cycles_elapsed.avg.per_second = 1515678716.06 cycle/s, no sm__ rate
    assert clocks is not None and clocks.sm_observed is not None
    assert clocks.sm_observed.value == 1515.679
