"""rocprof-compute / Omniperf / rocprof adapter: real workloads from the corpus and small
synthetic fixtures (tests/fixtures/rocprof/) for what the corpus lacks.

Numbers asserted against the corpus were read out of the files (pmc_perf.csv timestamps,
sysinfo.csv fields) or out of the tool's own analyze output stored beside them
(Omniperf 1.x prev_analysis/201.csv, rocprof-compute 3.3 --save-dfs), so the formulas are
checked against what rocprof-compute itself computed from the same counters.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel_evidence._resources import load_toml
from kernel_evidence.adapters import Adapter, AdapterOptions, get_adapter
from kernel_evidence.adapters.rocprof import ADAPTER, load_mapping
from kernel_evidence.adapters.rocprof._formula import Formula, FormulaError
from kernel_evidence.adapters.rocprof._tables import normalise_kernel_name
from kernel_evidence.errors import AdapterError, InputError
from kernel_evidence.models import EvidencePacket

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "rocprof"
T0 = "2026-11-22T00:00:00Z"


def read(path: Path | str, **extra: object) -> list[EvidencePacket]:
    result = ADAPTER.read([str(path)], AdapterOptions(created_at=T0, extra=dict(extra)))
    for p in result.packets:
        EvidencePacket.model_validate(p.to_dict())  # what was built without validation validates
        assert p.packet_id == p.compute_id()  # the adapter's fast id is the generic one
        cap = capture(p)
        n = len(cap.kernels or ())
        assert all(len(col) == n for col in (cap.raw_columns or {}).values())
        assert not any(k.raw for k in cap.kernels or ())  # raw values are columnar
    return result.packets


def one(path: Path | str, **extra: object) -> EvidencePacket:
    packets = read(path, **extra)
    assert len(packets) == 1
    return packets[0]


def capture(p: EvidencePacket):  # type: ignore[no-untyped-def]
    assert p.profiler is not None and len(p.profiler) == 1
    return p.profiler[0]


def by_id(p: EvidencePacket) -> dict[str, object]:
    return {k.id: k for k in capture(p).kernels or []}


def raw(p: EvidencePacket, name: str, kernel_id: str | None = None) -> object:
    """The raw column ``name``, or its value for the dispatch ``kernel_id``."""
    cap = capture(p)
    col = cap.raw_columns[name]
    if kernel_id is None:
        return col
    (i,) = [i for i, k in enumerate(cap.kernels) if k.id == kernel_id]
    return col[i]


def metric(rec: object, name: str) -> float | None:
    m = getattr(rec, "metrics", None) or {}
    return m[name].value if name in m else None


def sol(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as fh:
        return {r["Metric"]: r for r in csv.DictReader(fh)}


# --------------------------------------------------------------------------- registry


def test_registered_under_name_and_aliases() -> None:
    for name in ("rocprof", "rocprof-compute", "omniperf"):
        assert get_adapter(name) is ADAPTER
    assert isinstance(ADAPTER, Adapter)


def test_mapping_table_covers_every_canonical_metric_and_parses() -> None:
    canon = load_toml("canonical_metrics.toml")["metrics"]
    table = load_toml("rocprof.toml")
    assert table["tool"] == "rocprof" and table["schema"] == 1
    assert set(table["metrics"]) == set(canon)
    for name, spec in table["metrics"].items():
        assert spec["equivalence"] in {"exact", "approximate", "none"}, name
        if spec["equivalence"] != "none":
            assert spec["sources"], name
    maps = load_mapping()
    order = [m.name for m in maps]
    # formulas reading metrics.X come after X
    assert order.index("dram_bandwidth") > order.index("dram_bytes")
    assert order.index("memory_throughput") > order.index("dram_bytes")
    assert order.index("arithmetic_intensity") > order.index("flops")


# --------------------------------------------------------------------------- corpus


def test_omniperf_1x_mixbench_mi200(corpus: Path) -> None:
    wl = corpus / "rocprof" / "omniperf-1.0.10_mixbench_MI200"
    p = one(wl)
    cap = capture(p)
    assert cap.tool == "omniperf"
    assert cap.attributes["sysinfo_layout"] == "omniperf-1"
    assert cap.attributes["dispatches"] == 167
    assert len(cap.kernels) == 167
    # the top kernel by total time, as in prev_analysis/1.csv
    assert p.subject.name == "void benchmark_func<int, 256, 8u, 512u>(int, int*)"
    assert p.timing.stats.median == 3356652.0 and p.timing.stats.n == 1
    first = by_id(p)["0"]
    assert first.name == "__amd_rocclr_fillBufferAligned"
    assert first.raw_name == "__amd_rocclr_fillBufferAligned.kd"
    assert metric(first, "duration") == 14234006812983 - 14234006575542
    assert first.grid == [33554432] and first.block == [256]
    assert metric(first, "scalar_registers") == 32
    hw = p.hardware
    assert (hw.vendor, hw.device, hw.arch, hw.compute_units) == ("amd", "mi200", "gfx90a", 104)
    assert hw.peak_bandwidth.value == 1638.4
    assert hw.runtime.version == "5.1.3-66"
    assert cap.attributes["roofline.HBMBw"] == pytest.approx(1406.8727)
    # Omniperf's own analysis of the same counters (prev_analysis/201.csv)
    table = sol(wl / "prev_analysis" / "201.csv")
    summ = cap.summary
    assert summ["valu_utilization"].value == pytest.approx(float(table["VALU Util"]["Value"]), rel=1e-9)
    assert summ["achieved_occupancy"].value == pytest.approx(float(table["Wave Occupancy"]["PoP"]), rel=1e-9)
    bw = float(table["L2-Fabric Read BW"]["Value"]) + float(table["L2-Fabric Write BW"]["Value"])
    assert summ["dram_bandwidth"].value == pytest.approx(bw, rel=1e-9)
    assert summ["l2_hit_rate"].value == pytest.approx(float(table["L2 Cache Hit Rate"]["Value"]), rel=1e-9)
    assert summ["achieved_flop_rate"].value == pytest.approx(
        float(table["VALU FLOPs"]["Value"]) * 1e9, rel=1e-9
    )


def test_every_counter_is_kept_raw(corpus: Path) -> None:
    wl = corpus / "rocprof" / "omniperf-1.0.10_mixbench_MI200"
    p = one(wl)
    with open(wl / "pmc_perf.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    cap = capture(p)
    assert [k.id for k in cap.kernels] == [r["Index"] for r in rows]  # columns follow the records
    cols = cap.raw_columns
    assert set(rows[0]) <= set(cols)  # every pmc_perf column, plus the level-pass counters
    for name in ("SQ_WAVES", "GRBM_GUI_ACTIVE", "TCC_HIT[0]", "TCC_EA_RDREQ_sum"):
        assert cols[name] == [float(r[name]) for r in rows], name
    assert cols["BeginNs"] == [r["BeginNs"] for r in rows]  # ns epochs beyond 2**53 stay text
    assert cols["KernelName"][5] == rows[5]["KernelName"] == cap.kernels[5].raw_name
    assert cap.raw_units is None  # pmc_perf.csv states no units
    with open(wl / "SQ_LEVEL_WAVES.csv", newline="") as fh:
        level = list(csv.DictReader(fh))[5]
    assert raw(p, "SQ_LEVEL_WAVES.SQ_ACCUM_PREV_HIRES", "5") == float(level["SQ_ACCUM_PREV_HIRES"])
    assert p.hardware.partitions is None  # Omniperf 1.x sysinfo has no XCD count


@pytest.mark.parametrize(
    ("folder", "model", "arch", "cu", "version", "durations", "peak"),
    [
        (
            "omniperf-2.x_vcopy_MI100",
            "MI100",
            "gfx908",
            120,
            "2.0.0-RC1",
            [24800.0, 18880.0, 18880.0],
            1228.8,
        ),
        (
            "omniperf-2.x_vcopy_MI200",
            "MI200",
            "gfx90a",
            104,
            "2.0.0-RC1",
            [20480.0, 16320.0, 15520.0],
            1638.4,
        ),
    ],
)
def test_omniperf_2x_rocprofv1(corpus: Path, folder: str, model: str, arch: str, cu: int, version: str,
                               durations: list[float], peak: float) -> None:  # fmt: skip
    p = one(corpus / "rocprof" / folder)
    cap = capture(p)
    assert (cap.tool, cap.version) == ("omniperf", version)
    assert cap.attributes["backend"] == "rocprofv1"
    assert p.subject.name == "vecCopy(double*, double*, double*, int, int)"
    ks = cap.kernels
    assert [metric(k, "duration") for k in ks] == durations
    assert ks[0].raw_name == "vecCopy(double*, double*, double*, int, int) [clone .kd]"
    assert ks[0].device == 2 and ks[0].grid == [1048576] and ks[0].block == [256]
    assert p.timing.stats.n == 3 and p.timing.stats.median == sorted(durations)[1]
    hw = p.hardware
    assert (hw.device, hw.arch, hw.compute_units, hw.peak_bandwidth.value) == (
        model,
        arch,
        cu,
        peak,
    )
    assert p.replay.command == ["./tests/vcopy", "-n", "1048576", "-b", "256", "-i", "3"]
    # vcopy moves 3 x 8 MiB per dispatch through the fabric at most; the formula must land near that
    assert 8e6 < metric(ks[0], "dram_bytes") < 3e7
    assert metric(ks[0], "memory_throughput") == pytest.approx(
        100 * metric(ks[0], "dram_bandwidth") / peak, rel=1e-12
    )


def test_mi100_has_no_mfma_counter(corpus: Path) -> None:
    cap = capture(one(corpus / "rocprof" / "omniperf-2.x_vcopy_MI100"))
    assert any("tensor_pipe_utilization" in w and "SQ_VALU_MFMA_BUSY_CYCLES" in w for w in cap.warnings)


@pytest.mark.parametrize(
    ("folder", "model", "cu", "xcd", "example"),
    [
        ("omniperf-2.x_vcopy_MI300A_A1", "MI300A_A1", 228, 6, "1.62068E+14"),
        ("omniperf-2.x_vcopy_MI300X_A1", "MI300X_A1", 304, 8, "8.1097E+14"),
    ],
)
def test_omniperf_2x_rocprofv2_rounded_timestamps(corpus: Path, folder: str, model: str, cu: int, xcd: int,
                                                  example: str) -> None:  # fmt: skip
    p = one(corpus / "rocprof" / folder)
    cap = capture(p)
    assert cap.attributes["backend"] == "rocprofv2"
    assert cap.attributes["sysinfo.num_xcd"] == xcd and p.hardware.partitions == xcd
    assert (p.hardware.device, p.hardware.arch, p.hardware.compute_units) == (model, "gfx942", cu)
    assert cap.warnings[0] == (
        f"pmc_perf.csv: Start_Timestamp/End_Timestamp stored in rounded or non-integer notation (e.g. `{example}`); "
        "duration and per-second metrics not derived for 3 of 3 dispatches"
    )
    assert "dram_bandwidth not derived: no dispatch has a duration" in cap.warnings
    assert p.timing is None
    assert p.subject.name == "vecCopy(double*, double*, double*, int, int)"
    k = cap.kernels[0]
    assert k.raw_name == "vecCopy(double*, double*, double*, int, int) (.kd)"
    assert raw(p, "Start_Timestamp")[0] == example
    assert metric(k, "duration") is None
    assert metric(k, "valu_utilization") is not None  # cycle-based metrics do not need the timestamps


def test_rocprof_compute_3x_rocpd_long(corpus: Path) -> None:
    root = corpus / "rocprof"
    p = one(root / "rocprof-compute-3.x_vcopy_MI300X_A1_rocpd")
    cap = capture(p)
    assert (cap.tool, cap.version) == ("rocprof-compute", "3.2.0")
    assert cap.attributes["layout"] == "long" and cap.attributes["config.format_rocprof_output"] == "rocpd"
    ks = by_id(p)
    assert sorted(ks) == ["1", "2", "3"]
    assert len(cap.raw_columns) > 2000  # 2009 counters pivoted to one column each, one value per dispatch
    # the pass of median duration: dispatch 1 has 12 passes, the 6th shortest is 8052 ns
    assert metric(ks["1"], "duration") == 8052.0
    assert raw(p, "Start_Timestamp", "1") == "13386724674342798"  # of two 8052 ns passes, the later
    assert p.hardware.partitions == 8
    assert p.hardware.peak_bandwidth is None  # max_mclk is empty in this sysinfo.csv
    assert (
        "memory_throughput not derived: peak HBM bandwidth unknown: max_mclk is empty in sysinfo.csv and there is no hbm_bw"
        in cap.warnings
    )
    assert p.replay.command == ["sample/vcopy", "-n", "1048576", "-b", "256", "-i", "3"]
    gen = (
        root
        / "GENERATED_rocprof-compute-3.3.0_analyze_MI300X_A1_rocpd"
        / "save-dfs"
        / "2.1_System_Speed-of-Light.csv"
    )
    if gen.is_file():  # rocprof-compute 3.3 analyze of the same workload, rounded to 2 decimals
        table = sol(gen)
        assert cap.summary["valu_utilization"].value == pytest.approx(
            float(table["VALU Utilization"]["Avg"]), abs=0.005
        )
        assert cap.summary["achieved_occupancy"].value == pytest.approx(
            float(table["Wavefront Occupancy"]["Pct of Peak"]), abs=0.005
        )
        assert cap.summary["l2_hit_rate"].value == pytest.approx(
            float(table["L2 Cache Hit Rate"]["Avg"]), abs=0.005
        )


def test_save_dfs_export(corpus: Path) -> None:
    p = one(corpus / "rocprof" / "GENERATED_rocprof-compute-3.3.0_analyze_MI300X_A1_rocpd")
    cap = capture(p)
    assert cap.tool == "rocprof-compute"
    assert cap.attributes["export"] == "save-dfs" and cap.attributes["dispatches"] == 3
    assert (
        p.subject.name == "vecCopy(double*, double*, double*, int, int)"
    )  # newline from the TTY wrap removed
    assert cap.kernels[0].invocations == 3
    assert p.timing.stats.median == 6730.0 and p.timing.stats.mean == 7357.67
    assert (p.hardware.device, p.hardware.arch) == ("MI300X_A1", "gfx942")
    assert cap.summary["valu_utilization"].value == 1.06
    assert cap.summary["dram_bandwidth"].value == pytest.approx(1157.18 + 1155.62)
    assert cap.summary["achieved_occupancy"].value == 20.09


def test_omniperf_1x_numbered_tables(corpus: Path) -> None:
    p = one(corpus / "rocprof" / "omniperf-1.0.10_mixbench_MI200" / "prev_analysis")
    cap = capture(p)
    assert cap.tool == "omniperf" and cap.attributes["export"] == "numbered tables"
    assert p.subject.name == "void benchmark_func<int, 256, 8u, 512u>(int, int*)"
    assert cap.summary["valu_utilization"].value == pytest.approx(58.39724587605327)
    assert cap.summary["tensor_pipe_utilization"].value == 0.0
    assert (p.hardware.device, p.hardware.arch) == ("mi200", "gfx90a")
    assert cap.summary["grid_size"].value == pytest.approx(4345193.77245509)


def test_rocprofv3_docs_samples(corpus: Path) -> None:
    d = corpus / "rocprof" / "rocprofv3_sdk-docs-data"
    p = one(d / "kernel_trace.csv")
    cap = capture(p)
    assert cap.tool == "rocprofv3" and len(cap.kernels) == 9
    k = by_id(p)["1"]
    assert k.name == "void addition_kernel<float>(float*, float const*, float const*, int, int)"
    assert metric(k, "duration") == 12800.0
    assert k.grid == [1024, 1024, 1] and k.block == [64, 1, 1] and k.device == 4
    assert metric(k, "grid_size") == 1048576 and metric(by_id(p)["4"], "registers_per_thread") == 12
    long_ = one(d / "counter_collection.csv")
    assert raw(long_, "SQ_WAVES") == [16384.0] * 4
    old = one(d / "kernel_names.csv")  # older layout: no timestamps, integer Agent_Id
    assert [k.id for k in capture(old).kernels] == ["4", "8", "12", "16"] and old.timing is None
    # the folder: kernel trace joined with the counters by Dispatch_Id
    assert len(read(d)) == 1


def test_every_corpus_folder_ingests(corpus: Path) -> None:
    for folder in sorted((corpus / "rocprof").iterdir()):
        if folder.is_dir():
            packets = read(folder)
            assert packets, folder.name
            for p in packets:
                assert p.subject.kind == "kernel"
                assert p.hardware is None or p.hardware.vendor == "amd"
                assert capture(p).tool in {"omniperf", "rocprof-compute", "rocprofv3", "rocprof"}


# --------------------------------------------------------------------------- synthetic fixtures


def test_damaged_workload_zero_clocks_and_rounded_timestamps() -> None:
    p = one(FIX / "damaged_3x")
    cap = capture(p)
    assert (cap.tool, cap.version) == ("rocprof-compute", "3.1.0")
    assert cap.warnings == [
        "pmc_perf.csv: Start_Timestamp/End_Timestamp stored in rounded or non-integer notation (e.g. `1.0E+12`); "
        "duration and per-second metrics not derived for 1 of 3 dispatches",
        "memory_throughput not derived: peak HBM bandwidth would be 0: max_mclk is 0 in sysinfo.csv",
        "flops not derived: pmc_perf.csv has no SQ_INSTS_VALU_ADD_F16, SQ_INSTS_VALU_ADD_F32, SQ_INSTS_VALU_ADD_F64 (+14 more)",
        "achieved_flop_rate not derived: pmc_perf.csv has no metrics.flops",
        "arithmetic_intensity not derived: pmc_perf.csv has no metrics.flops",
    ]
    hw = p.hardware
    assert (hw.device, hw.arch, hw.compute_units) == ("MI350", "gfx950", 256)
    assert hw.clocks is None and hw.peak_bandwidth is None  # clocks of 0 are left out, not infinities
    assert hw.partitions == 8
    assert cap.attributes["gpu_series"] == "MI350" and cap.attributes["sysinfo.num_xcd"] == 8
    k = by_id(p)
    m0 = {n: q.value for n, q in k["0"].metrics.items()}
    # GRBM_GUI_ACTIVE 80000 over 8 XCDs = 10000 cycles x 256 CUs
    assert m0["valu_utilization"] == pytest.approx(100 * 1024000 / (10000 * 256))  # 40 %
    assert m0["tensor_pipe_utilization"] == pytest.approx(100 * 512000 / (10000 * 256 * 4))  # 5 %
    assert m0["achieved_occupancy"] == pytest.approx(100 * 40960000 / 10000 / (32 * 256))  # 50 %
    assert m0["shared_bank_conflict_rate"] == pytest.approx(3.125 * 100 / (1100 - 100))
    assert m0["l2_hit_rate"] == pytest.approx(75.0)
    read_b = 128 * 1000 + 64 * (1500 - 1000 - 100) + 32 * 100
    write_b = 64 * 1500 + 32 * (2000 - 1500)
    assert m0["dram_bytes"] == read_b + write_b
    assert m0["dram_bandwidth"] == pytest.approx((read_b + write_b) / 10000)
    assert m0["duration"] == 10000.0
    assert "duration" not in k["1"].metrics and "dram_bandwidth" not in k["1"].metrics
    assert raw(p, "Start_Timestamp", "1") == "1.0E+12"
    assert "shared_bank_conflict_rate" not in k["2"].metrics  # 0 / 0, left out
    assert p.subject.name == "gemm_tile(float const*, float*)"
    assert p.timing.stats.median == 20000.0 and p.timing.stats.n == 2
    assert p.replay.command == ["./gemm", "--m", "4096"]


def test_missing_sysinfo() -> None:
    p = one(FIX / "no_sysinfo")
    cap = capture(p)
    assert p.hardware is None
    assert cap.warnings[0] == "sysinfo.csv missing: no hardware, peaks or XCD count (num_xcd taken as 1)"
    assert "valu_utilization not derived: sysinfo.csv has no usable $cu_per_gpu" in cap.warnings
    assert p.subject.name == "reduce_sum(int*, int)"
    k = by_id(p)["1"]
    assert k.name == "__amd_rocclr_fillBuffer" and metric(k, "duration") == 500.0


def test_long_layout_picks_median_pass_and_sysinfo_peak() -> None:
    p = one(FIX / "long_rocpd")
    cap = capture(p)
    assert p.hardware.peak_bandwidth.value == pytest.approx(1300 / 1000 * 32 * 128)
    k = by_id(p)
    assert metric(k["1"], "duration") == 6000.0  # passes of 5000, 6000 and 7000 ns
    assert metric(k["2"], "duration") == 4000.0
    assert metric(k["1"], "achieved_occupancy") == pytest.approx(100 * 20480000 / (80000 / 8) / (32 * 304))
    assert metric(k["1"], "valu_utilization") == pytest.approx(40.0)
    assert metric(k["2"], "valu_utilization") == pytest.approx(100 * 304000 / (40000 / 8 * 304))
    assert metric(k["1"], "l2_hit_rate") == 25.0 and metric(k["2"], "l2_hit_rate") is None
    assert cap.warnings[0].startswith("pmc_perf.csv: long counter layout with up to 3 counter passes")


def test_rocprof_v1_results_csv() -> None:
    p = one(FIX / "rocprofv1_results" / "results.csv")
    cap = capture(p)
    assert cap.tool == "rocprof"
    assert (p.hardware.device, p.hardware.arch, p.hardware.compute_units) == (
        "AMD Instinct MI250X",
        "gfx90a",
        110,
    )
    assert [metric(k, "duration") for k in cap.kernels] == [5000.0, 7000.0, 1000.0]
    assert p.subject.name == "stencil_kernel(float*, float const*)"
    assert cap.warnings[-1].startswith("results.csv: no hardware counters; not derived: dram_bytes")
    assert one(FIX / "rocprofv1_results").subject.name == p.subject.name  # the folder finds results.csv


def test_rocprofv3_trace_with_counters_and_agent_info() -> None:
    p = one(FIX / "rocprofv3_trace")
    k = by_id(p)
    assert (p.hardware.device, p.hardware.compute_units, p.hardware.partitions) == (
        "AMD Instinct MI300X",
        304,
        8,
    )
    assert k["1"].device == 4 and k["1"].grid == [1024, 1024, 1]
    # 12000 cycles over the 8 XCDs of agent 4, 304 CUs
    assert metric(k["1"], "valu_utilization") == pytest.approx(100 * 21888 / (12000 / 8 * 304))
    assert metric(k["2"], "duration") == 6000.0


def test_save_dfs_2x_title_and_wrapped_name() -> None:
    p = one(FIX / "savedfs_2x")
    cap = capture(p)
    assert cap.tool == "omniperf"
    assert p.subject.name == "void copy_kernel<float>(float const*, float*, unsigned long)"
    assert cap.kernels[0].raw_name == "void copy_kernel<float>(float const*, float*, unsigned \nlong)"
    assert raw(p, "Count") == [4.0, 2.0] and raw(p, "Median(ns)") == [9500.0, 5000.0]  # top-kernels rows
    s = {n: q.value for n, q in cap.summary.items()}
    assert s["memory_throughput"] == pytest.approx(48.83 + 12.21)
    assert s["shared_bank_conflict_rate"] == pytest.approx(1.6 * 3.125)
    assert s["dram_bandwidth"] == 1000.0 and s["achieved_occupancy"] == 40.0
    assert (p.hardware.device, p.hardware.arch) == ("MI200", "gfx90a")


# --------------------------------------------------------------------------- errors


def test_malformed_csv_names_file_and_line() -> None:
    with pytest.raises(InputError) as err:
        read(FIX / "malformed")
    assert (
        str(err.value)
        == f"{FIX / 'malformed' / 'pmc_perf.csv'}:line 3: expected 4 fields as in the header, got 3"
    )


def test_empty_and_missing_inputs(tmp_path: Path) -> None:
    with pytest.raises(AdapterError) as err:
        read(tmp_path)
    assert str(err.value) == (
        f"{tmp_path}: no rocprof-compute/Omniperf workload (pmc_perf.csv, sysinfo.csv), analyze export, "
        "rocprofv3 kernel_trace/counter_collection CSV or rocprof results.csv found"
    )
    with pytest.raises(InputError) as err2:
        read(tmp_path / "nope")
    assert str(err2.value) == f"{tmp_path / 'nope'}: no such file or folder"
    (tmp_path / "pmc_perf.csv").write_bytes(b"")
    with pytest.raises(InputError) as err3:
        read(tmp_path)
    assert str(err3.value) == f"{tmp_path / 'pmc_perf.csv'}: expected a CSV header row, got an empty file"


def test_header_only_and_damaged_side_files(tmp_path: Path) -> None:
    shutil.copy(FIX / "long_rocpd" / "sysinfo.csv", tmp_path / "sysinfo.csv")
    (tmp_path / "pmc_perf.csv").write_text("Dispatch_ID,Kernel_Name,Start_Timestamp,End_Timestamp\n")
    (tmp_path / "profiling_config.yaml").write_text("name: [unclosed\n")
    (tmp_path / "roofline.csv").write_text("device,HBMBw\n")
    p = one(tmp_path)
    cap = capture(p)
    assert cap.kernels is None and p.subject.name == "triad"
    assert "profiling_config.yaml: not valid YAML at line 2; profiling options not read" in cap.warnings
    assert "roofline.csv: no data rows" in cap.warnings
    assert p.hardware.device == "MI300X_A1"


def test_workloads_found_below_a_parent_folder(tmp_path: Path) -> None:
    for name in ("damaged_3x", "long_rocpd"):
        shutil.copytree(FIX / name, tmp_path / "workloads" / name / "MI300")
    packets = read(tmp_path)
    assert sorted(p.subject.name for p in packets) == [
        "gemm_tile(float const*, float*)",
        "triad(double*)",
    ]


def test_raw_columns_align_and_validate() -> None:
    from kernel_evidence.rules import validate

    p = one(FIX / "damaged_3x")
    cap = capture(p)
    assert [k.id for k in cap.kernels] == ["0", "1", "2"]
    assert raw(p, "Dispatch_ID") == [0.0, 1.0, 2.0]
    assert raw(p, "GRBM_GUI_ACTIVE", "0") == 80000.0
    assert raw(p, "SQ_LEVEL_WAVES.SQ_ACCUM_PREV_HIRES", "0") == 40960000.0
    report = validate(p)
    assert not [f for f in report.findings if f.rule_id == "KE901"]
    # a column that lost a value is caught by the validator, not by the adapter
    short = p.model_copy(update={"profiler": [cap.model_copy(update={"raw_columns": {"SQ_WAVES": [1.0]}})]})
    assert [f.message for f in validate(short).findings if f.rule_id == "KE901"] == [
        "column `SQ_WAVES` has 1 values for 3 kernel records"
    ]
    # ids are left to the caller when it edits the packet afterwards (kevidence ingest --set ...)
    opts = AdapterOptions(created_at=T0, extra={"packet_ids": False})
    assert ADAPTER.read([str(FIX / "damaged_3x")], opts).packets[0].packet_id is None


def test_packet_id_is_compute_id_with_awkward_column_names(tmp_path: Path) -> None:
    (tmp_path / "pmc_perf.csv").write_text(
        'Dispatch_ID,Kernel_Name,"a""quote",Zeta,alpha,\u00e9t\u00e9,TCC_HIT[1],TCC_HIT[10],SQ.X\n'
        "0,k,1,2,3,4,5,6,7\n"
        "1,k,,-0.5,1e300,x,5,6,7\n",
        encoding="utf-8",
    )
    p = one(tmp_path)  # read() compares packet_id with compute_id()
    assert raw(p, 'a"quote') == [1.0, None]
    assert raw(p, "\u00e9t\u00e9") == ["4", "x"]


# --------------------------------------------------------------------------- helpers


def test_formula_subset() -> None:
    import pyarrow as pa

    f = Formula.parse("100 * A / ($n * (B - C))")
    out = f.evaluate(
        {
            "A": pa.array([1.0, 2.0, None]),
            "B": pa.array([3.0, 2.0, 1.0]),
            "C": pa.array([1.0, 2.0, 0.0]),
        },
        {"n": 2.0},
    )
    assert out.to_pylist() == [25.0, None, None]  # x / 0 and a missing counter give nulls
    for bad in ("__import__('os')", "A ** 2", "A if B else C", "A[0]", "A <"):
        with pytest.raises(FormulaError):
            Formula.parse(bad)


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("vecCopy(double*, int) [clone .kd]", "vecCopy(double*, int)"),
        ("vecCopy(double*, int) (.kd)", "vecCopy(double*, int)"),
        ("__amd_rocclr_fillBufferAligned.kd", "__amd_rocclr_fillBufferAligned"),
        ("vecCopy(double*, \nint)", "vecCopy(double*, int)"),
        ("plain_kernel", "plain_kernel"),
    ],
)
def test_kernel_name_normalisation(raw: str, name: str) -> None:
    assert normalise_kernel_name(raw) == name


@given(st.text(max_size=40))
def test_kernel_name_normalisation_never_leaves_newlines_or_padding(text: str) -> None:
    name = normalise_kernel_name(text)
    assert "\n" not in name and name == name.strip()
    assert name or not text.replace("\n", "").replace("\r", "").strip() or _KD_ONLY(text)


def _KD_ONLY(text: str) -> bool:  # noqa: N802 - a name made only of a code-object suffix
    return text.replace("\n", "").strip() in {".kd", "[clone .kd]", "(.kd)"}


_CELLS = st.one_of(
    st.integers(-(2**62), 2**62).map(str),
    st.floats(allow_nan=False, width=64).map(repr),
    st.sampled_from(["", "nan", "inf", "-inf", "true", "N/A", "0", "-0.0", "1e308", "x,y", 'q"uote']),
)
_NAMES = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=8)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(_NAMES, min_size=1, max_size=4, unique_by=str.lower),
    st.lists(st.lists(_CELLS, min_size=4, max_size=4), min_size=1, max_size=5),
)
def test_fast_packet_id_equals_compute_id(names: list[str], rows: list[list[str]]) -> None:
    import tempfile

    def cell(v: str) -> str:
        return '"' + v.replace('"', '""') + '"' if any(c in v for c in ',"') else v

    header = ["Dispatch_ID", "Kernel_Name", "Start_Timestamp", "End_Timestamp", *(f"C_{n}" for n in names)]
    lines = [",".join(cell(h) for h in header)]
    for i, row in enumerate(rows):
        lines.append(",".join([str(i), "k", str(100 * i), str(100 * i + 50), *map(cell, row[: len(names)])]))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "pmc_perf.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        p = one(tmp)  # checks packet_id == compute_id() and the column lengths
    cols = capture(p).raw_columns
    for n in names:
        for v in cols[f"C_{n}"]:
            assert (
                v is None
                or isinstance(v, str)
                or (isinstance(v, float) and v == v and abs(v) != float("inf"))
            )


def test_negative_zero_metric_keeps_the_id(tmp_path: Path) -> None:
    (tmp_path / "pmc_perf.csv").write_text(
        "Dispatch_ID,Kernel_Name,SQ_LDS_BANK_CONFLICT,SQ_LDS_IDX_ACTIVE\n0,k,0,5\n1,k,0,-5\n"
    )
    p = one(tmp_path)  # 0 / 5 and 0 / -5: one zero, not two that the id would tell apart
    assert [metric(k, "shared_bank_conflict_rate") for k in capture(p).kernels] == [0.0, 0.0]


def test_non_finite_and_reversed_cells(tmp_path: Path) -> None:
    (tmp_path / "pmc_perf.csv").write_text(
        "Dispatch_ID,Kernel_Name,Grid_Size,Workgroup_Size,Start_Timestamp,End_Timestamp,Big,Flag,Empty\n"
        "0,k,inf,256,100,200,9007199254740993,true,\n"
        "1,k,nan,64,300,250,-5,false,\n"
    )
    p = one(tmp_path)
    cap = capture(p)
    k0, k1 = cap.kernels
    assert raw(p, "Grid_Size") == ["inf", None]  # JSON has no infinity; "nan" is an empty cell
    assert k0.grid is None and metric(k0, "grid_size") is None
    assert raw(p, "Big") == ["9007199254740993", "-5"]  # a float would round 2**53 + 1
    assert raw(p, "Flag") == ["true", "false"] and raw(p, "Empty") == [None, None]
    assert raw(p, "Start_Timestamp") == ["100", "300"]
    assert metric(k0, "duration") == 100.0 and metric(k1, "duration") is None
    assert (
        "pmc_perf.csv: End_Timestamp before Start_Timestamp in 1 dispatches; duration not derived"
        in cap.warnings
    )
    assert (
        "grid_size not derived: Grid_Size is empty or not finite in every dispatch of pmc_perf.csv"
        in cap.warnings
    )


def test_ingest_library_call_completes_the_packet(corpus: Path) -> None:
    from kernel_evidence._ingest import ingest
    from kernel_evidence.rules import validate

    wl = corpus / "rocprof" / "omniperf-2.x_vcopy_MI200"
    result = ingest("omniperf", [str(wl)], created_at=T0)
    (p,) = result.packets
    assert p.packet_id == p.compute_id()
    report = validate(p)
    assert report.ok, [f.message for f in report.findings]
    assert any("shared_bank_conflict_rate not derived" in w for w in result.warnings)


def test_docs_page_names_every_canonical_metric() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "adapters" / "rocprof.md").read_text()
    for name in load_toml("canonical_metrics.toml")["metrics"]:
        assert f"`{name}`" in page, name


def test_gzipped_pmc_perf_and_timestamps_only(tmp_path: Path) -> None:
    import gzip

    gz = tmp_path / "gz"
    shutil.copytree(FIX / "damaged_3x", gz)
    with open(gz / "pmc_perf.csv", "rb") as src, gzip.open(gz / "pmc_perf.csv.gz", "wb") as dst:
        dst.write(src.read())
    (gz / "pmc_perf.csv").unlink()
    p = one(gz)
    assert metric(by_id(p)["0"], "valu_utilization") == pytest.approx(40.0)

    ts = tmp_path / "ts"
    ts.mkdir()
    shutil.copy(FIX / "long_rocpd" / "sysinfo.csv", ts / "sysinfo.csv")
    (ts / "timestamps.csv").write_text(
        "Dispatch_ID,Kernel_Name,GPU_ID,Grid_Size,Workgroup_Size,Start_Timestamp,End_Timestamp\n"
        '0,"k(int) (.kd)",2,4096,64,1000,4000\n'
    )
    p = one(ts)
    cap = capture(p)
    assert cap.warnings[0] == "pmc_perf.csv missing: dispatches from timestamps.csv, no counters"
    assert metric(cap.kernels[0], "duration") == 3000.0 and p.subject.name == "k(int)"


# --------------------------------------------------------------------------- raw cells, fast path


def _reference_raw(values: list[object]) -> list[object]:
    """What ``raw_columns`` keeps for a numeric column, cell by cell (the documented rule)."""
    out: list[object] = []
    for v in values:
        if v is None:
            out.append(None)
        elif isinstance(v, int) and abs(v) >= 2**53:
            out.append(None)  # the whole column becomes text: checked separately
        elif isinstance(v, float) and v != v or v in (float("inf"), float("-inf")):
            out.append(str(v))
        else:
            out.append(float(v))  # type: ignore[arg-type]
    return out


@settings(max_examples=60, deadline=None)
@given(
    ints=st.lists(st.one_of(st.none(), st.integers(-(2**53) + 1, 2**53 - 1)), max_size=40),
    floats=st.lists(st.one_of(st.none(), st.floats(width=64)), max_size=40),
    cut=st.integers(0, 5),
)
def test_raw_cells_fast_path_matches_reference(
    ints: list[int | None], floats: list[float | None], cut: int
) -> None:
    import math

    import pyarrow as pa

    from kernel_evidence.adapters.rocprof import _raw_column

    for values, typ in ((ints, pa.int64()), (floats, pa.float64()), (floats, pa.float32())):
        arr = pa.array(values, typ)
        if typ == pa.float32():
            values = arr.to_pylist()  # float32 rounding happens in Arrow, before the adapter
        for col, vals in ((arr, values), (arr.slice(cut), values[cut:])):  # sliced: buffer offset
            got = _raw_column(col)
            want = _reference_raw(vals)
            assert len(got) == len(want)
            for g, w in zip(got, want, strict=True):
                assert type(g) is type(w)
                assert g == w
                if isinstance(g, float):  # -0.0 stays -0.0
                    assert math.copysign(1, g) == math.copysign(1, w)  # type: ignore[arg-type]


def test_large_packet_objects_promoted_without_touching_host_frozen_objects(tmp_path: Path) -> None:
    import gc

    counters = [f"SQ_C{i}" for i in range(60)]
    rows = [",".join(["Dispatch_ID", "Kernel_Name", *counters])]
    rows += [",".join([str(i), "k", *(str(i * j) for j in range(60))]) for i in range(2000)]
    (tmp_path / "pmc_perf.csv").write_text("\n".join(rows) + "\n")
    assert gc.isenabled() and gc.get_freeze_count() == 0
    p = one(tmp_path)
    assert sum(len(c) for c in capture(p).raw_columns.values()) == 2000 * 62  # above the threshold
    assert gc.isenabled() and gc.get_freeze_count() == 0  # promoted, nothing left frozen
    host = [[] for _ in range(10)]  # a host program that keeps its own objects frozen
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        one(tmp_path)
        assert gc.get_freeze_count() == frozen  # not unfrozen by the adapter
    finally:
        gc.unfreeze()
    del host
