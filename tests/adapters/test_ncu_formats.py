"""Nsight Compute adapter on output layouts of ncu options and versions outside the real-file
corpus (hand-written fixtures following NVIDIA's documented layouts): each is read with the
right numbers or refused with a one-line error saying what the file is."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.ncu import ADAPTER
from kernel_evidence.errors import InputError
from kernel_evidence.models import EvidencePacket

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
T0 = "2026-11-22T00:00:00Z"


def read(name: str) -> EvidencePacket:
    packets = ADAPTER.read([str(FIX / name)], AdapterOptions(created_at=T0)).packets
    assert len(packets) == 1
    EvidencePacket.model_validate(packets[0].to_dict())
    return packets[0]


def refuse(name: str) -> str:
    with pytest.raises(InputError) as exc:
        ADAPTER.read([str(FIX / name)], AdapterOptions(created_at=T0))
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def durations(packet: EvidencePacket) -> list[float | None]:
    return [
        k.metrics["duration"].value if "duration" in k.metrics else None for k in packet.profiler[0].kernels
    ]


def test_summary_per_kernel_csv_is_read_one_record_per_kernel() -> None:
    # `ncu --csv --print-summary per-kernel`: no "ID" column, Minimum/Maximum/Average
    cap = read("summary_per_kernel_csv.csv").profiler[0]
    assert cap.attributes["page"] == "summary"
    assert [k.name for k in cap.kernels] == ["axpy(float, const float *, float *)", "scale(float *)"]
    assert [k.invocations for k in cap.kernels] == [3, 2]
    assert [k.metrics["duration"].value for k in cap.kernels] == [2000.0, 1000.0]  # us and ns
    assert cap.kernels[0].block == [256, 1, 1] and cap.kernels[0].grid == [512, 1, 1]
    assert cap.raw_columns["Duration.maximum"][0] == 2.5
    assert cap.raw_columns["Duration.maximum [ns]"][1] == 1200.0  # thousands separator


def test_source_page_is_refused_naming_it() -> None:
    msg = refuse("source_page.csv")
    assert "source page (`--page source`" in msg and "not supported" in msg and "--page raw" in msg


def test_session_page_is_refused_naming_it() -> None:
    msg = refuse("session_page.txt")
    assert "session page (`--page session`" in msg and "not supported" in msg


def test_no_kernels_profiled_quotes_the_warning_not_the_list_heading() -> None:
    msg = refuse("no_kernels_profiled_list.log")
    assert msg.endswith("==WARNING== No kernels were profiled.")


def test_raw_instanced_values_stay_text_and_numbers_are_right() -> None:
    # `--page raw --print-metric-instances values|details`: "(1;1;2)" and "1.0;2.0;1.0"
    packet = read("raw_instanced_values.csv")
    cap = packet.profiler[0]
    assert durations(packet) == [1234.0, 1300.0]
    assert cap.raw_columns["sm__ctas_launched"] == ["(1;1;2)", "1.0;2.0;1.0"]
    assert packet.hardware is not None and packet.hardware.device == "NVIDIA GeForce RTX 3070"


def test_range_replay_details_with_mixed_units() -> None:
    # `--replay-mode range`: a `Range Name` column, durations in ms and us
    packet = read("details_range_replay_units.csv")
    assert [k.name for k in packet.profiler[0].kernels] == ["region_a", "region_b"]
    assert durations(packet) == [1_500_000.0, 20_000.0]


def test_target_processes_all_keeps_both_processes_launch_zero() -> None:
    packet = read("raw_target_processes_all.csv")
    kernels = packet.profiler[0].kernels
    assert [(k.process, k.id, k.device) for k in kernels] == [
        ("501 python3", "0", 0),
        ("502 python3", "0", 1),
    ]
    assert durations(packet) == [1500.0, 2500.0]  # usecond -> ns


def test_units_base_fp_and_mangled_name() -> None:
    # `--print-units base --print-fp --print-kernel-base mangled`: "2,048.00" nsecond
    packet = read("raw_units_base_fp_mangled.csv")
    k = packet.profiler[0].kernels[0]
    assert k.name == "_Z4axpyfPKfPf"
    assert k.metrics["duration"].value == 2048.0
    assert k.metrics["dram_bytes"].value == 1_048_576.0
    assert packet.hardware is not None and packet.hardware.device == "NVIDIA H100 80GB HBM3"


def test_summary_csv_without_kernel_names_is_refused_naming_it() -> None:
    msg = refuse("summary_per_gpu_csv.csv")
    assert "summary CSV without a `Kernel Name` column" in msg and "not supported" in msg
