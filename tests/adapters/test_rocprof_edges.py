"""Edge cases of the rocprof adapter derived from the real corpus workloads.

Each test copies a corpus workload into ``tmp_path`` and alters the copy; nothing from the
corpus is stored in the project. Skipped when the corpus is not on this machine.
"""

from __future__ import annotations

import csv
import math
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from kernel_evidence.adapters import AdapterOptions, get_adapter

CORPUS = Path("/work/shared/corpus/rocprof")
MI300X_2X = "omniperf-2.x_vcopy_MI300X_A1"
MI300X_ROCPD = "rocprof-compute-3.x_vcopy_MI300X_A1_rocpd"
MI200_2X = "omniperf-2.x_vcopy_MI200"

pytestmark = pytest.mark.skipif(not (CORPUS / MI200_2X).is_dir(), reason="rocprof corpus not present")


def _copy(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(CORPUS / name, dst)
    return dst


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


def _write(path: Path, rows: list[list[str]]) -> None:
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)


def _set(path: Path, column: str, values: list[str]) -> None:
    rows = _rows(path)
    i = rows[0].index(column)
    for row, v in zip(rows[1:], values, strict=True):
        row[i] = v
    _write(path, rows)


def _sysinfo(path: Path, **values: str | None) -> None:
    header, data = _rows(path)[:2]
    for key, v in values.items():
        i = header.index(key)
        if v is None:
            del header[i], data[i]
        else:
            data[i] = v
    _write(path, [header, data])


def _read(path: Path):  # type: ignore[no-untyped-def]
    result = get_adapter("rocprof").read([str(path)], AdapterOptions())
    assert len(result.packets) == 1
    return result.packets[0], result.warnings


def _metric(packet, name: str) -> list[float | None]:  # type: ignore[no-untyped-def]
    out = []
    for k in packet.profiler[0].kernels:
        q = (k.metrics or {}).get(name)
        out.append(None if q is None else q.value)
    return out


def _all_sane(packet) -> None:  # type: ignore[no-untyped-def]
    for k in packet.profiler[0].kernels:
        for name, q in (k.metrics or {}).items():
            assert math.isfinite(q.value) and q.value >= 0, (k.id, name, q.value)
            if q.unit == "%":
                assert q.value <= 100, (k.id, name, q.value)


# ------------------------------------------------------------------ hand-computed formulas


def test_formulas_match_hand_computation_on_rocpd_mi300x(tmp_path: Path) -> None:
    """VALU/MFMA utilisation, occupancy and L2-Fabric bandwidth against rocprof-compute's
    published gfx942 SOL formulas computed here by hand (MFMA busy cycles set non-zero)."""
    d = _copy(tmp_path, MI300X_ROCPD)
    rows = _rows(d / "pmc_perf.csv")
    h = rows[0]
    ci, vi = h.index("Counter_Name"), h.index("Counter_Value")
    for r in rows[1:]:
        if r[ci] == "SQ_VALU_MFMA_BUSY_CYCLES":
            r[vi] = "123456"
    _write(d / "pmc_perf.csv", rows)
    si = dict(zip(*_rows(d / "sysinfo.csv")[:2], strict=True))
    cu, xcd, mw = float(si["cu_per_gpu"]), float(si["num_xcd"]), float(si["max_waves_per_cu"])
    counters: dict[str, dict[str, float]] = defaultdict(dict)
    passes: dict[str, set[tuple[int, int]]] = defaultdict(set)
    di, si_, ei = h.index("Dispatch_ID"), h.index("Start_Timestamp"), h.index("End_Timestamp")
    for r in rows[1:]:
        counters[r[di]][r[ci]] = float(r[vi])
        passes[r[di]].add((int(r[si_]), int(r[ei])))
    packet, _ = _read(d)
    kernels = packet.profiler[0].kernels
    assert [k.id for k in kernels] == ["1", "2", "3"]
    for k in kernels:
        c = counters[k.id]
        per_xcd = c["GRBM_GUI_ACTIVE"] / xcd
        durs = sorted(e - s for s, e in passes[k.id])
        dur = durs[(len(durs) - 1) // 2]
        rd = (
            128 * c["TCC_BUBBLE_sum"]
            + 64 * (c["TCC_EA0_RDREQ_sum"] - c["TCC_BUBBLE_sum"] - c["TCC_EA0_RDREQ_32B_sum"])
            + 32 * c["TCC_EA0_RDREQ_32B_sum"]
        )
        wr = 64 * c["TCC_EA0_WRREQ_64B_sum"] + 32 * (c["TCC_EA0_WRREQ_sum"] - c["TCC_EA0_WRREQ_64B_sum"])
        m = k.metrics or {}
        assert m["valu_utilization"].value == pytest.approx(100 * c["SQ_ACTIVE_INST_VALU"] / (per_xcd * cu))
        assert m["tensor_pipe_utilization"].value == pytest.approx(100 * 123456 / (per_xcd * cu * 4))
        assert m["tensor_pipe_utilization"].value > 0
        assert m["achieved_occupancy"].value == pytest.approx(
            100 * c["SQ_LEVEL_WAVES_ACCUM"] / per_xcd / (mw * cu)
        )
        assert m["duration"].value == dur
        assert m["dram_bandwidth"].value == pytest.approx((rd + wr) / dur)
    # analyze 3.3 on the same workload printed VALU 1.06 %, occupancy 20.09 % of peak
    summary = packet.profiler[0].summary
    assert round(summary["valu_utilization"].value, 2) == 1.06
    assert round(summary["achieved_occupancy"].value, 2) == 20.09


# ------------------------------------------------------------------ sysinfo variants


@pytest.mark.parametrize("num_xcd", ["", "0", None])
def test_multi_xcd_arch_without_num_xcd_is_not_taken_as_one(tmp_path: Path, num_xcd: str | None) -> None:
    """gfx942 with num_xcd missing/0: dividing GRBM_GUI_ACTIVE by 1 instead of 8 made
    utilisations 8x too low, silently. Now not derived, with a warning naming num_xcd."""
    d = _copy(tmp_path, MI300X_ROCPD)
    _sysinfo(d / "sysinfo.csv", num_xcd=num_xcd)
    packet, warnings = _read(d)
    for name in ("valu_utilization", "tensor_pipe_utilization", "achieved_occupancy"):
        assert _metric(packet, name) == [None, None, None]
        assert any(f"{name} not derived: num_xcd" in w and "gfx942" in w for w in warnings), warnings
    assert _metric(packet, "l2_hit_rate")[0] is not None  # does not need num_xcd
    assert packet.hardware.partitions is None


def test_pre_mi300_arch_without_num_xcd_still_takes_one(tmp_path: Path) -> None:
    d = _copy(tmp_path, MI200_2X)
    _sysinfo(d / "sysinfo.csv", num_xcd=None)
    packet, warnings = _read(d)
    assert all(v is not None for v in _metric(packet, "valu_utilization"))
    assert not any("num_xcd" in w for w in warnings)


def test_cpx_partition_uses_partition_values(tmp_path: Path) -> None:
    """CPX: one XCD and 38 CUs per device; the formulas use them as stated."""
    d = _copy(tmp_path, MI300X_ROCPD)
    spx, _ = _read(d)
    _sysinfo(d / "sysinfo.csv", compute_partition="CPX", cu_per_gpu="38", num_xcd="1")
    cpx, _ = _read(d)
    assert (cpx.hardware.compute_units, cpx.hardware.partitions) == (38, 1)
    for a, b in zip(_metric(spx, "valu_utilization"), _metric(cpx, "valu_utilization"), strict=True):
        assert a is not None and b == pytest.approx(a)  # GRBM/8*304 == GRBM/1*38
    _all_sane(cpx)


def test_sysinfo_with_several_rows_is_warned(tmp_path: Path) -> None:
    d = _copy(tmp_path, MI300X_ROCPD)
    header, first = _rows(d / "sysinfo.csv")[:2]
    second = list(first)
    second[header.index("cu_per_gpu")] = "38"
    _write(d / "sysinfo.csv", [header, first, second])
    packet, warnings = _read(d)
    assert packet.hardware.compute_units == 304
    assert any("sysinfo.csv: 2 data rows" in w and "cu_per_gpu" in w for w in warnings), warnings


@pytest.mark.parametrize("clock", ["0", ""])
def test_zero_or_missing_mclk_gives_no_infinite_peak(tmp_path: Path, clock: str) -> None:
    d = _copy(tmp_path, MI300X_ROCPD)
    _sysinfo(d / "sysinfo.csv", max_mclk=clock, max_sclk=clock, cur_sclk=clock)
    packet, warnings = _read(d)
    assert packet.hardware.peak_bandwidth is None
    assert _metric(packet, "memory_throughput") == [None, None, None]
    assert any("memory_throughput not derived" in w and "max_mclk" in w for w in warnings)
    _all_sane(packet)


# ------------------------------------------------------------------ pmc_perf variants


def test_utilisation_above_100_percent_is_flagged_and_left_out(tmp_path: Path) -> None:
    d = _copy(tmp_path, MI200_2X)
    _set(d / "pmc_perf.csv", "SQ_ACTIVE_INST_VALU", ["99999999999", "163840", "163840"])
    packet, warnings = _read(d)
    vals = _metric(packet, "valu_utilization")
    assert vals[0] is None and vals[1] is not None
    assert any("valu_utilization: above 100 % in 1" in w for w in warnings), warnings
    _all_sane(packet)
    assert packet.profiler[0].raw_columns["SQ_ACTIVE_INST_VALU"][0] == 99999999999.0


def test_negative_derived_values_are_left_out(tmp_path: Path) -> None:
    d = _copy(tmp_path, MI200_2X)
    _set(d / "pmc_perf.csv", "TCC_EA_RDREQ_32B_sum", ["99999999999", "0", "0"])
    _set(d / "pmc_perf.csv", "TCC_HIT_sum", ["0", "-5", "0"])
    packet, warnings = _read(d)
    assert _metric(packet, "dram_bytes")[0] is None
    assert _metric(packet, "dram_bandwidth")[0] is None
    assert _metric(packet, "l2_hit_rate")[1] is None
    assert any("dram_bytes: negative in 1" in w for w in warnings)
    assert any("l2_hit_rate: negative in 1" in w for w in warnings)
    _all_sane(packet)


def test_counter_column_all_empty_is_named_as_empty(tmp_path: Path) -> None:
    d = _copy(tmp_path, MI200_2X)
    _set(d / "pmc_perf.csv", "SQ_ACTIVE_INST_VALU", ["", "", ""])
    packet, warnings = _read(d)
    assert _metric(packet, "valu_utilization") == [None, None, None]
    assert any("valu_utilization not derived: SQ_ACTIVE_INST_VALU is empty" in w for w in warnings), warnings


def test_start_equal_end_and_end_before_start(tmp_path: Path) -> None:
    d = _copy(tmp_path, MI200_2X)
    start = [r[_rows(d / "pmc_perf.csv")[0].index("Start_Timestamp")] for r in _rows(d / "pmc_perf.csv")[1:]]
    _set(d / "pmc_perf.csv", "End_Timestamp", [start[0], str(int(start[1]) - 5), str(int(start[2]) + 1000)])
    packet, warnings = _read(d)
    assert _metric(packet, "duration") == [0.0, None, 1000.0]
    assert _metric(packet, "dram_bandwidth")[:2] == [None, None]
    assert any("End_Timestamp before Start_Timestamp in 1" in w for w in warnings)
    _all_sane(packet)


def test_rounded_scientific_timestamps_equal(tmp_path: Path) -> None:
    d = _copy(tmp_path, MI200_2X)
    _set(d / "pmc_perf.csv", "Start_Timestamp", ["1.23e+15"] * 3)
    _set(d / "pmc_perf.csv", "End_Timestamp", ["1.23e+15"] * 3)
    packet, warnings = _read(d)
    assert _metric(packet, "duration") == [None] * 3
    assert any("rounded or non-integer notation" in w for w in warnings)
    _all_sane(packet)


def test_dispatch_ids_with_gaps_still_join_level_pass(tmp_path: Path) -> None:
    d = _copy(tmp_path, MI200_2X)
    before, _ = _read(d)
    for name in ("pmc_perf.csv", "SQ_LEVEL_WAVES.csv"):
        _set(d / name, "Dispatch_ID", ["5", "9", "12"])
    after, _ = _read(d)
    assert [k.id for k in after.profiler[0].kernels] == ["5", "9", "12"]
    assert _metric(after, "achieved_occupancy") == _metric(before, "achieved_occupancy")


def test_kd_suffix_variants_normalised_raw_kept(tmp_path: Path) -> None:
    d = _copy(tmp_path, MI200_2X)
    raw = ["k(int) [clone .kd]", "k(int).kd", "k(int) (.kd)"]
    _set(d / "pmc_perf.csv", "Kernel_Name", raw)
    packet, _ = _read(d)
    kernels = packet.profiler[0].kernels
    assert [k.name for k in kernels] == ["k(int)"] * 3
    assert [k.raw_name for k in kernels] == raw
    assert packet.subject.name == "k(int)"


# ------------------------------------------------------------------ directories


def test_workload_parent_with_several_gpu_subfolders(tmp_path: Path) -> None:
    root = tmp_path / "workloads" / "vcopy"
    for name in (MI200_2X, MI300X_ROCPD):
        shutil.copytree(CORPUS / name, root / name)
    result = get_adapter("rocprof").read([str(tmp_path / "workloads")], AdapterOptions())
    assert sorted(p.hardware.device for p in result.packets) == ["MI200", "MI300X_A1"]


def test_analyze_output_folder_instead_of_workload(tmp_path: Path) -> None:
    src = CORPUS / "GENERATED_rocprof-compute-3.3.0_analyze_MI300X_A1_rocpd"
    shutil.copytree(src, tmp_path / "analyze")
    result = get_adapter("rocprof").read([str(tmp_path / "analyze")], AdapterOptions())
    assert len(result.packets) == 1
    summary = result.packets[0].profiler[0].summary
    assert summary["valu_utilization"].value == pytest.approx(1.06)
