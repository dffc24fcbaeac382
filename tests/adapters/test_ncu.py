"""Nsight Compute adapter: real corpus files, synthetic fixtures, mapping table, error texts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel_evidence._resources import load_toml
from kernel_evidence.adapters import Adapter, AdapterOptions, get_adapter
from kernel_evidence.adapters.ncu import ADAPTER, canonical_metrics
from kernel_evidence.adapters.ncu._common import parse_dims, parse_value
from kernel_evidence.errors import InputError, MissingExtra
from kernel_evidence.models import EvidencePacket, KernelRecord, RawMetric
from kernel_evidence.units import UNIT_FACTORS

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
T0 = "2026-11-22T00:00:00Z"
HAVE_NCU_REPORT = importlib.util.find_spec("ncu_report") is not None


def read(path: Path | str) -> list[EvidencePacket]:
    return ADAPTER.read([str(path)], AdapterOptions(created_at=T0)).packets


def one(path: Path | str) -> EvidencePacket:
    packets = read(path)
    assert len(packets) == 1
    # every packet the adapter makes is structurally valid and carries its content id
    again = EvidencePacket.model_validate(packets[0].to_dict())
    assert again.compute_id() == packets[0].packet_id
    cap = packets[0].profiler[0]  # type: ignore[index]
    n = len(cap.kernels or [])
    assert cap.raw_columns and all(len(v) == n for v in cap.raw_columns.values())
    assert set(cap.raw_units or {}) <= set(cap.raw_columns)
    assert all(k.raw is None for k in cap.kernels or [])  # one representation: the columns
    return packets[0]


def raw(packet: EvidencePacket, i: int, name: str) -> RawMetric:
    """Launch ``i``'s raw metric ``name`` from the capture's raw columns."""
    cap = packet.profiler[0]  # type: ignore[index]
    assert cap.raw_columns is not None
    return RawMetric(value=cap.raw_columns[name][i], unit=(cap.raw_units or {}).get(name))


def metric(packet: EvidencePacket, i: int, name: str) -> float:
    kernels = packet.profiler[0].kernels  # type: ignore[index]
    q = kernels[i].metrics[name]  # type: ignore[index]
    return q.value


# ------------------------------------------------------------------------------ registry


def test_registered_with_aliases() -> None:
    assert isinstance(ADAPTER, Adapter)
    for name in ("ncu", "nsight-compute", "ncu-rep"):
        assert get_adapter(name) is ADAPTER


def test_a_builtin_adapter_by_its_name_is_imported_alone() -> None:
    # `kevidence ingest ncu` does not import the other adapters (a tenth of a second)
    import subprocess

    code = (
        "import sys; from kernel_evidence.adapters import get_adapter; get_adapter('ncu'); "
        "print(sorted(m for m in sys.modules if m.startswith('kernel_evidence.adapters.') and "
        "m.split('.')[-1] in ('vllm', 'rocprof', 'xprof')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    assert get_adapter("omniperf").name == "rocprof"  # an alias still finds its adapter


# ------------------------------------------------------------------------------ corpus


def test_corpus_raw_b200(corpus: Path) -> None:
    p = one(corpus / "ncu" / "raw_b200_cc100_flashattn_prof_prefix.csv")
    cap = p.profiler[0]  # type: ignore[index]
    kernels = cap.kernels or []
    assert [k.id for k in kernels] == [str(i) for i in range(16)]
    assert kernels[0].name == (
        "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, 0, 0, bfloat16_t, "
        "Flash_kernel_traits<128, 128, 64, 4, bfloat16_t>>, 0, 0, 0, 0, 0, 1, 0, 0>(Flash_fwd_params)"
    )
    assert kernels[0].process == "233513 python3.12"
    assert kernels[0].stream == "7"
    assert kernels[0].grid == [1, 16, 32] and kernels[0].block == [128, 1, 1]
    assert metric(p, 0, "duration") == 685280.0
    assert metric(p, 3, "duration") == 689536.0
    assert metric(p, 15, "duration") == 685568.0
    assert metric(p, 0, "registers_per_thread") == 255.0
    assert metric(p, 0, "shared_memory_per_block") == 65536.0
    assert metric(p, 0, "grid_size") == 65536.0  # launch__thread_count
    assert raw(p, 0, "launch__sm_count") == RawMetric(value=148.0, unit="SM")
    assert raw(p, 0, "gpu__time_duration.sum") == RawMetric(value=685280.0, unit="ns")
    hw = p.hardware
    assert hw is not None
    assert (hw.vendor, hw.device, hw.arch, hw.compute_units) == ("nvidia", "NVIDIA B200", "sm_100", 148)
    assert hw.memory is not None and hw.memory.value == 191503138816.0
    assert cap.attributes["device__attribute_max_gpu_frequency_khz"] == 1965000.0  # type: ignore[index]
    assert cap.attributes["page"] == "raw"  # type: ignore[index]
    # one kernel name: the timing stats summarise its 16 launches
    stats = p.timing.stats  # type: ignore[union-attr]
    assert stats is not None and stats.n == 16
    assert (stats.min, stats.median, stats.max) == (683808.0, 687184.0, 690080.0)


def test_corpus_details_ga104_nvtx_thousands(corpus: Path) -> None:
    p = one(corpus / "ncu" / "details_ga104_ncu2020.2_nvtx_thousands_stdout_prefix.csv")
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    assert [k.id for k in kernels] == ["0", "1"]
    assert kernels[0].name == (
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x10_nn_align4>"
        "(cutlass_80_tensorop_s1688gemm_64x64_16x10_nn_align4::Params)"
    )
    assert kernels[1].name.startswith(
        "void phi::funcs::VectorizedBroadcastKernel<phi::funcs::AddFunctor<float>, float, 2, 1, 4, 1>("
    )
    assert metric(p, 0, "duration") == 8192.0  # "8,192" nsecond
    assert metric(p, 1, "duration") == 3584.0
    assert metric(p, 0, "shared_memory_per_block") == 81920.0  # "81,920" byte/block
    assert metric(p, 0, "achieved_occupancy") == 8.32
    assert metric(p, 1, "achieved_occupancy") == 4.16
    assert metric(p, 0, "grid_size") == 256.0  # 2 blocks x 128 threads
    assert raw(p, 0, "gpu__time_duration.sum") == RawMetric(value=8192.0, unit="nsecond")
    assert raw(p, 0, "Kernel Time").value == "2024-Jul-13 19:18:31"
    assert (
        raw(p, 0, "Id:Domain:Start/Stop_Range:PL_Type:PL_Value").value
        == '"0:<default domain>:linear_nvtx:none:none"'
    )
    assert p.hardware is None  # the 2020 details page names no device
    assert any("device name not in this export (details page)" in w for w in p.profiler[0].warnings or [])


def test_corpus_text_page_matches_csv_of_same_tool(corpus: Path) -> None:
    p = one(corpus / "ncu" / "text_ga104_ncu2020.2_nvtx_metrics.txt")
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    assert p.profiler[0].attributes["page"] == "text"  # type: ignore[index]
    assert len(kernels) == 2 and kernels[0].process == "2361568 python3.8" and kernels[0].stream == "13"
    assert metric(p, 0, "duration") == pytest.approx(5150.0)  # 5.15 usecond
    assert metric(p, 1, "duration") == pytest.approx(3520.0)
    assert metric(p, 0, "shared_memory_per_block") == pytest.approx(81920.0)  # 81.92 Kbyte/block
    assert raw(p, 0, "launch__shared_mem_per_block_dynamic") == RawMetric(value=81.92, unit="Kbyte/block")
    assert metric(p, 1, "registers_per_thread") == 24.0


def test_corpus_raw_gtx1080_legacy(corpus: Path) -> None:
    p = one(corpus / "ncu" / "raw_gtx1080_cc61_legacy_fp_thousands_stdout_prefix.txt")
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    assert [k.name for k in kernels] == ["vecAdd"] * 3
    assert kernels[0].process == "3628380 vectoradd_l1_enabled"
    assert [metric(p, i, "duration") for i in range(3)] == [
        2720.0
    ] * 3  # "2,720.00" legacy gpu__time_duration
    assert metric(p, 0, "dram_bytes") == 7552.0 + 384.0
    assert metric(p, 1, "dram_bytes") == 3264.0 + 256.0
    assert metric(p, 0, "l2_hit_rate") == 30.77
    hw = p.hardware
    assert hw is not None
    assert (hw.device, hw.arch, hw.compute_units) == ("NVIDIA GeForce GTX 1080", "sm_61", 20)
    assert hw.memory is not None and hw.memory.value == 8504934400.0


def test_corpus_prof_only_log_fails_clearly(corpus: Path) -> None:
    path = corpus / "ncu" / "error_no_csv_b200_prof_only.log"
    with pytest.raises(InputError) as exc:
        read(path)
    assert str(exc.value) == (
        f"{path}:line 35: no Nsight Compute table found (expected a CSV header starting "
        '"ID","Process ID", a text page or a summary); last profiler error: '
        "==ERROR== The application returned an error code (1)."
    )


@pytest.mark.skipif(not HAVE_NCU_REPORT, reason="the ncu extra (ncu-report) is not installed")
def test_corpus_ncu_rep_rtx3070(corpus: Path) -> None:
    p = one(corpus / "ncu" / "speedy_scan_profile.ncu-rep")
    cap = p.profiler[0]  # type: ignore[index]
    kernels = cap.kernels or []
    assert len(kernels) == 1
    assert kernels[0].name.startswith("kernel(int const*, int*, unsigned long*")
    assert kernels[0].raw_name == "_Z6kernelPKiPiPmPjj"
    assert kernels[0].grid == [19532, 1, 1] and kernels[0].block == [512, 1, 1]
    assert metric(p, 0, "duration") == 336704.0
    hw = p.hardware
    assert hw is not None and (hw.device, hw.arch, hw.compute_units) == (
        "NVIDIA GeForce RTX 3070",
        "sm_86",
        46,
    )
    assert cap.summary is not None
    assert cap.summary["tensor_core_inst_executed"].value == 0.0
    assert cap.summary["sass_inst_executed"].value == 28232552.0
    assert raw(p, 0, "sass__inst_executed_per_opcode[IMAD]").value == 5111169.0  # type: ignore[index]
    rule = raw(p, 0, "rule:SourceCounters/UncoalescedGlobalAccess")
    assert str(rule.value).startswith("Uncoalesced global access, expected 189316 sectors, got 207086")


@pytest.mark.skipif(not HAVE_NCU_REPORT, reason="the ncu extra (ncu-report) is not installed")
def test_corpus_ncu_rep_gh200(corpus: Path) -> None:
    p = one(corpus / "ncu" / "cs599k_rms_norm_triton.ncu-rep")
    hw = p.hardware
    assert hw is not None and (hw.device, hw.arch, hw.compute_units) == ("NVIDIA GH200 480GB", "sm_90", 132)
    assert metric(p, 0, "duration") == 549184.0
    assert metric(p, 0, "grid_size") == 270336.0
    assert p.profiler[0].kernels[0].grid == [1056, 1, 1]  # type: ignore[index]


@pytest.mark.skipif(HAVE_NCU_REPORT, reason="checks the message shown without the ncu extra")
@pytest.mark.parametrize("name", ["speedy_scan_profile.ncu-rep", "cs599k_rms_norm_triton.ncu-rep"])
def test_corpus_ncu_rep_without_extra(corpus: Path, name: str) -> None:
    path = corpus / "ncu" / name
    with pytest.raises(MissingExtra) as exc:
        read(path)
    assert str(exc.value) == (
        f"{path}: reading .ncu-rep reports needs the `ncu-report` package: pip install 'kernel-evidence[ncu]'"
    )


def test_missing_extra_message(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # makes `import ncu_report` fail
    path = corpus / "ncu" / "speedy_scan_profile.ncu-rep"
    with pytest.raises(MissingExtra) as exc:
        read(path)
    assert exc.value.extra == "ncu"
    assert str(exc.value).endswith("needs the `ncu-report` package: pip install 'kernel-evidence[ncu]'")


def test_every_corpus_file_ingests_or_fails_clearly(corpus: Path) -> None:
    files = [f for f in sorted((corpus / "ncu").iterdir()) if f.suffix not in (".md", ".tsv")]
    assert files
    for f in files:
        try:
            packets = read(f)
        except (InputError, MissingExtra) as exc:
            msg = str(exc)
            assert msg.startswith(str(f)) and "\n" not in msg
        else:
            assert packets and all(p.profiler and p.profiler[0].kernels for p in packets)


# ---------------------------------------------------------------------------- fixtures


def test_details_current_rules_ragged_two_processes() -> None:
    p = one(FIX / "details_rules_ragged_two_processes.csv")
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    # grouped by (process, launch ID): process 4300 reuses ID 0
    assert [(k.process, k.id) for k in kernels] == [
        ("4242 bench", "0"),
        ("4242 bench", "1"),
        ("4300 bench", "0"),
    ]
    assert kernels[0].name == "void gemm<cutlass::half_t, 128, 64>(Params<float, 2>, int, int)"
    assert [metric(p, i, "duration") for i in range(3)] == [1520.0, 250.0, 1500.0]  # "us"
    assert metric(p, 0, "shared_memory_per_block") == pytest.approx(48130.0)  # 0 B + 48.13 Kbyte/block
    assert "l2_hit_rate" not in (kernels[0].metrics or {})  # n/a
    assert raw(p, 0, "L2 Hit Rate") == RawMetric(value=None, unit="%")
    assert raw(p, 0, "Function Cache Configuration").value == "CachePreferNone"
    assert raw(p, 0, "rule:SpeedOfLight/SOLBottleneck") == RawMetric(
        value="This kernel's grid is too small, to fill the device.", unit="OPT"
    )
    assert raw(p, 0, "rule:SpeedOfLight/SOLBottleneck:estimated_speedup") == RawMetric(
        value=50.0, unit="% (global)"
    )
    assert raw(p, 0, "CC").value == "10.0"
    assert kernels[1].grid == [64, 2, 1]
    assert p.subject.name == "details_rules_ragged_two_processes.csv"  # two kernel names
    assert p.timing is not None and p.timing.stats is None


def test_details_old_units_and_decimal_comma() -> None:
    p = one(FIX / "details_old_nvtx_units.csv")
    assert metric(p, 0, "duration") == pytest.approx(1.25e6)  # msecond
    assert metric(p, 0, "dram_bytes") == pytest.approx(1024.5e6)  # "1,024.50" Mbyte
    assert metric(p, 0, "dram_bandwidth") == pytest.approx(819.6)  # "819,60" Gbyte/second
    assert metric(p, 0, "grid_size") == 1048576.0  # "1,048,576" thread
    warnings = p.profiler[0].warnings or []  # type: ignore[index]
    assert "1 value(s) written with a decimal comma (e.g. `819,60`) were read as decimals" in warnings
    assert raw(p, 0, "thread Domain:Push/Pop_Range:PL_Type:PL_Value").value == "step,fwd"


def test_raw_units_row_nvtx_ragged_and_noise() -> None:
    p = one(FIX / "raw_units_nvtx_ragged.csv")
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    assert [k.name for k in kernels] == ["void attn<64, true>(Params, float, int)"] * 2 + ["elementwise_add"]
    assert metric(p, 0, "duration") == pytest.approx(2048500.0)  # "2,048.5" usecond
    assert metric(p, 0, "dram_bytes") == 12288.0 * 1000 + 4096.0  # Kbyte read + byte written
    assert "l2_hit_rate" not in (kernels[0].metrics or {})  # n/a
    assert metric(p, 1, "l2_hit_rate") == 77.5
    assert "tensor_pipe_utilization" not in (kernels[2].metrics or {})  # short row, padded
    assert raw(p, 0, "thread Domain:Push/Pop_Range:PL_Type:PL_Value").value == "fwd"  # type: ignore[index]
    hw = p.hardware
    assert hw is not None and (hw.device, hw.arch, hw.compute_units) == (
        "NVIDIA H100 80GB HBM3",
        "sm_90",
        132,
    )
    assert hw.clocks is not None and hw.clocks.sm_observed is not None
    assert hw.clocks.sm_observed.value == 1740.0  # median of 1,755 / 1,740 / 1,700 Mhz
    assert "1 short row(s) were padded with empty cells" in (p.profiler[0].warnings or [])


def test_raw_fast_path_equals_tolerant_path() -> None:
    fast = one(FIX / "raw_clean.csv").profiler[0]  # type: ignore[index]
    slow = one(FIX / "raw_clean_with_noise.csv").profiler[0]  # type: ignore[index]
    assert fast.kernels == slow.kernels
    assert fast.attributes == slow.attributes
    assert fast.raw_columns == slow.raw_columns and fast.raw_units == slow.raw_units


def test_raw_page_keeps_every_metric_as_a_column() -> None:
    p = one(FIX / "raw_clean.csv")
    cap = p.profiler[0]  # type: ignore[index]
    assert cap.raw_columns is not None and cap.raw_units is not None
    # one value per launch, in launch order, with the unit from the units row
    assert cap.raw_columns["gpu__time_duration.sum"] == [2048.5, 2050.25, 3.5]  # "2,048.5"
    assert cap.raw_units["gpu__time_duration.sum"] == "usecond"
    assert cap.raw_columns["dram__bytes_read.sum"] == [12288.0, 12288.0, 8.0]
    assert cap.raw_units["dram__bytes_read.sum"] == "Kbyte"
    assert cap.raw_columns["Host Name"] == ["node-a"] * 3 and "Host Name" not in cap.raw_units
    # n/a and empty cells are null; NVTX columns stay text
    assert cap.raw_columns["lts__t_sector_hit_rate.pct"] == [None, 77.5, 12.5]
    assert cap.raw_columns["thread Domain:Push/Pop_Range:PL_Type:PL_Value"] == ["fwd", None, None]
    # device attributes identical in every launch are kept once, in the attributes
    assert "device__attribute_display_name" not in cap.raw_columns
    assert cap.attributes["device__attribute_display_name"] == "NVIDIA H100 80GB HBM3"  # type: ignore[index]


def test_details_units_that_differ_between_launches_split_the_column(tmp_path: Path) -> None:
    text = (FIX / "details_rules_ragged_two_processes.csv").read_text()
    # ncu scales units per launch: the second launch's duration written in msecond
    assert text.count('"Duration","us","0.25"') == 1
    path = tmp_path / "scaled.csv"
    path.write_text(text.replace('"Duration","us","0.25"', '"Duration","msecond","0.00025"'))
    p = one(path)
    cap = p.profiler[0]  # type: ignore[index]
    assert cap.raw_columns is not None and cap.raw_units is not None
    assert cap.raw_columns["Duration"] == [1.52, None, 1.5] and cap.raw_units["Duration"] == "us"
    assert cap.raw_columns["Duration [msecond]"] == [None, 0.00025, None]
    assert cap.raw_units["Duration [msecond]"] == "msecond"
    assert [metric(p, i, "duration") for i in range(3)] == pytest.approx([1520.0, 250.0, 1500.0])
    assert raw(p, 2, "rule:SpeedOfLight/SOLBottleneck:estimated_speedup") == RawMetric(
        value=50.0, unit="% (global)"
    )


def test_text_page_new_style() -> None:
    p = one(FIX / "text_new_style.txt")
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    assert [k.name for k in kernels] == ["k(float *, int)"] * 2
    assert kernels[0].grid == [1, 1, 1] and kernels[0].block == [32, 1, 1] and kernels[0].device == 0
    assert metric(p, 0, "duration") == pytest.approx(2820.0)
    assert metric(p, 1, "duration") == pytest.approx(1.5e6)
    assert metric(p, 0, "block_size") == 32.0
    assert raw(p, 0, "Function Cache Configuration").value == "CachePreferNone"  # type: ignore[index]
    assert raw(p, 0, "Elapsed Cycles") == RawMetric(value=4242.0, unit="cycle")
    assert p.timing is not None and p.timing.stats is not None and p.timing.stats.n == 2


def test_summary_page() -> None:
    p = one(FIX / "summary_per_kernel.txt")
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    # the kernel line repeats before each section: still one record per kernel
    assert [(k.name, k.invocations, k.device) for k in kernels] == [
        ("PathTracer(int, Pixel *, int)", 3, 0),
        ("clear(Pixel *, int)", 1, 0),
    ]
    assert metric(p, 0, "duration") == pytest.approx(17.05e9)  # average, second
    assert metric(p, 0, "registers_per_thread") == 73.0  # from the second section
    assert metric(p, 0, "shared_memory_per_block") == pytest.approx(1024.0)  # 1.024 Kbyte/block
    assert metric(p, 0, "grid_size") == 2097152.0
    assert raw(p, 0, "gpu__time_duration.sum.minimum") == RawMetric(value=16.997685, unit="second")
    assert raw(p, 0, "launch__block_size") == RawMetric(value=256.0, unit=None)
    assert raw(p, 0, "Occupancy/launch__block_size") == RawMetric(value=256.0, unit=None)
    assert metric(p, 1, "duration") == pytest.approx(5120.0)
    assert p.profiler[0].attributes["page"] == "summary"  # type: ignore[index]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("empty.csv", "empty file; expected ncu --csv output, a text page or an .ncu-rep report"),
        (
            "fake.ncu-rep",
            "not an Nsight Compute report (expected the bytes NVR\\0 at offset 0, got b'PK\\x03\\x04')",
        ),
        ("header_only_raw.csv:line 1", "the raw-page CSV has a header but no launch rows"),
        (
            "not_ncu.txt:line 1",
            'no Nsight Compute table found (expected a CSV header starting "ID","Process ID", a text page or a summary); this does not look like ncu output',
        ),
        (
            "prof_only_warning.log:line 2",
            'no Nsight Compute table found (expected a CSV header starting "ID","Process ID", a text page or a summary); last profiler error: ==WARNING== No kernels were profiled.',
        ),
    ],
)
def test_bad_inputs(name: str, message: str) -> None:
    file, _, where = name.partition(":")
    with pytest.raises(InputError) as exc:
        read(FIX / file)
    prefix = f"{FIX / file}:{where}" if where else str(FIX / file)
    assert str(exc.value) == f"{prefix}: {message}"


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read(tmp_path / "absent.csv")
    with pytest.raises(InputError, match="directory holds no .csv, .txt, .log or .ncu-rep files"):
        read(tmp_path)


def test_truncated_raw_row_is_padded(tmp_path: Path) -> None:
    text = (FIX / "raw_clean.csv").read_text()
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: len(text) - 40])  # last row cut mid-field, as by a killed ncu
    p = one(cut)
    assert len(p.profiler[0].kernels or []) == 3  # type: ignore[index]


# --------------------------------------------------------------------------- units, values


def test_parse_value_cases() -> None:
    assert parse_value("1,759,000.00") == 1759000.0
    assert parse_value("n/a") is None and parse_value("") is None
    assert parse_value("nan") == "nan" and parse_value("inf") == "inf"
    assert parse_value("32.00; 32.00; 32.00") == "32.00; 32.00; 32.00"
    assert parse_value("1_000") == "1_000"
    seen: list[str] = []
    assert parse_value("9,00", seen) == 9.0 and seen == ["9,00"]
    assert parse_dims("(9, 32, 1)") == [9, 32, 1] and parse_dims("9") is None


@given(st.decimals(min_value=0, max_value=10**12, places=2, allow_nan=False, allow_infinity=False))
def test_thousands_separators_round_trip(value: object) -> None:
    text = f"{value:,.2f}"
    assert parse_value(text) == float(text.replace(",", ""))


@pytest.mark.parametrize(
    ("raw", "canonical", "expected"),
    [
        ({"gpu__time_duration.sum": RawMetric(value=1.5, unit="msecond")}, "duration", 1.5e6),
        ({"gpu__time_duration.sum": RawMetric(value=2.0, unit="second")}, "duration", 2e9),
        ({"Duration": RawMetric(value=406240.0, unit="ns")}, "duration", 406240.0),
        ({"dram__bytes.sum.per_second": RawMetric(value=1.5, unit="Tbyte/second")}, "dram_bandwidth", 1500.0),
        ({"dram__bytes_per_sec": RawMetric(value=2e9, unit="byte/second")}, "dram_bandwidth", 2.0),
        (
            {
                "launch__grid_size": RawMetric(value=4.0, unit=None),
                "launch__block_size": RawMetric(value=256.0, unit=None),
            },
            "grid_size",
            1024.0,
        ),
    ],
)
def test_canonical_unit_conversion(raw: dict[str, RawMetric], canonical: str, expected: float) -> None:
    assert canonical_metrics(raw)[canonical].value == pytest.approx(expected)


def test_unknown_or_wrong_unit_stays_raw_only() -> None:
    warnings: set[str] = set()
    out = canonical_metrics({"gpu__time_duration.sum": RawMetric(value=1.0, unit="fortnight")}, warnings)
    assert "duration" not in out
    assert warnings == {
        "unit `fortnight` of `gpu__time_duration.sum` is not in adapters/ncu.toml [units]; left raw only"
    }
    warnings.clear()
    out = canonical_metrics({"gpu__time_duration.sum": RawMetric(value=1.0, unit="%")}, warnings)
    assert "duration" not in out
    assert warnings == {
        "`gpu__time_duration.sum` is in `%`, which cannot be expressed in `ns`; left raw only"
    }


def test_mapping_table_is_consistent() -> None:
    table = load_toml("ncu.toml")
    canon = load_toml("canonical_metrics.toml")["metrics"]
    assert table["schema"] == 1 and table["tool"] == "ncu"
    assert set(table["metrics"]) == set(canon)
    for name, spec in table["metrics"].items():
        assert spec["equivalence"] in ("exact", "approximate", "none"), name
        assert bool(spec.get("sources")) == (spec["equivalence"] != "none"), name
        for src in spec.get("sources", []):
            assert src.get("combine", "sum") in ("sum", "product", "ratio_pct"), name
            if src.get("unit"):
                assert src["unit"] in UNIT_FACTORS, name
    for spelling, (unit, factor) in table["units"].items():
        assert unit in UNIT_FACTORS and factor > 0, spelling


def test_hostile_csv_lines(tmp_path: Path) -> None:
    header = '"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
    huge = tmp_path / "huge.csv"
    huge.write_text(header + f'"0","1","{"k" * 200_000}","a","","1"\n')
    with pytest.raises(InputError) as exc:
        read(huge)
    assert str(exc.value) == f"{huge}:line 2: malformed CSV line (field larger than field limit (131072))"
    nul = tmp_path / "nul.csv"
    nul.write_bytes(header.encode() + b'"0","1","k\x00","a","","1"\n')
    with pytest.raises(InputError) as nul_exc:
        read(nul)
    assert str(nul_exc.value).startswith(f"{nul}:line 2: text with NUL bytes (the first at byte 85)")


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    data = (FIX / "raw_clean.csv").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    p = one("-")
    assert p.profiler[0].source.name == "<stdin>" and p.profiler[0].source.path is None  # type: ignore[index,union-attr]
    assert len(p.profiler[0].kernels or []) == 3  # type: ignore[index]


def test_directory_skips_unreadable_files_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "run1.csv").write_bytes((FIX / "raw_clean.csv").read_bytes())
    (tmp_path / "failed.log").write_bytes((FIX / "prof_only_warning.log").read_bytes())
    (tmp_path / "notes.md").write_text("ignored: not an ncu output name")
    result = ADAPTER.read([str(tmp_path)], AdapterOptions(created_at=T0))
    assert len(result.packets) == 1
    assert f"skipped: {tmp_path / 'failed.log'}:line 2: no Nsight Compute table found" in result.warnings[0]
    only_bad = tmp_path / "bad"
    only_bad.mkdir()
    (only_bad / "failed.log").write_bytes((FIX / "prof_only_warning.log").read_bytes())
    with pytest.raises(InputError, match="no Nsight Compute table found"):
        read(only_bad)
    with pytest.raises(InputError):  # named explicitly: an error, not a warning
        ADAPTER.read(
            [str(tmp_path / "run1.csv"), str(tmp_path / "failed.log")], AdapterOptions(created_at=T0)
        )


def test_unquoted_csv_reads_like_quoted(tmp_path: Path) -> None:
    import csv
    import io

    rows = list(csv.reader(io.StringIO((FIX / "raw_clean.csv").read_text())))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)  # quotes only where needed
    path = tmp_path / "unquoted.csv"
    path.write_text("==PROF== Disconnected from process 9001\n" + buf.getvalue())
    assert one(path).profiler[0].kernels == one(FIX / "raw_clean.csv").profiler[0].kernels  # type: ignore[index]


_cell = st.one_of(
    st.integers(0, 10**9).map(str),
    st.integers(0, 10**9).map(lambda i: f"{i:,}"),
    st.floats(0, 1e6, allow_nan=False).map(lambda f: f"{f:,.2f}"),
    st.sampled_from(["n/a", "", "PolicySpread", "32.00; 32.00", "inf"]),
)


@given(st.lists(st.lists(_cell, min_size=3, max_size=3), min_size=1, max_size=6))
def test_fast_path_equals_tolerant_path(
    tmp_path_factory: pytest.TempPathFactory, rows: list[list[str]]
) -> None:
    import csv
    import io

    def table(noise: bool) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writerow(["ID", "Process ID", "Kernel Name", "a__x.sum", "b__y.pct", "c__z"])
        w.writerow(["", "", "", "ns", "%", ""])
        for i, r in enumerate(rows):
            w.writerow([str(i), "7", f"k<{i}, int>(float*, int)", *r])
            if noise and i == 0:
                buf.write("program output between rows\n")
        return buf.getvalue()

    d = tmp_path_factory.mktemp("fp")
    (d / "fast.csv").write_text(table(False))
    (d / "slow.csv").write_text(table(True))
    fast = one(d / "fast.csv").profiler[0]  # type: ignore[index]
    slow = one(d / "slow.csv").profiler[0]  # type: ignore[index]
    assert fast.kernels == slow.kernels


# ------------------------------------------------- raw page: float columns, pieces, retyping

_number_cell = st.one_of(
    st.integers(0, 10**12).map(str),
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda f: f"{f:.3f}"),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["-0", "0", "-0.0", " 12.5 ", "+3", ".5", "5.", "1e5", "4.9e-324"]),
)
_odd_cell = st.sampled_from(
    ["n/a", "N/A", "", "-", "na", "inf", "-inf", "nan", "1e400", "1_000", "1,234", "9,00", "0x10", "text"]
)


def _raw_table(rows: list[list[str]], noise: bool) -> bytes:
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    width = len(rows[0])
    w.writerow(["ID", "Process ID", "Kernel Name", *(f"m{j}__x.sum" for j in range(width))])
    w.writerow(["", "", "", *(["inst"] * width)])
    for i, r in enumerate(rows):
        w.writerow([str(i), "7", "k", *r])
        if noise and i == 0:
            buf.write("program output between rows\n")
    return buf.getvalue().encode()


def _raw_json(cap: object) -> bytes:
    import msgspec

    # JSON, not ==: 0.0 == -0.0, but the packet (and its id) tells them apart
    return msgspec.json.encode(cap.raw_columns, order="deterministic")  # type: ignore[attr-defined]


@settings(deadline=None, max_examples=80)
@given(
    st.integers(1, 4).flatmap(
        lambda width: st.lists(
            st.lists(st.one_of(_number_cell, _number_cell, _odd_cell), min_size=width, max_size=width),
            min_size=1,
            max_size=12,
        )
    )
)
def test_float_columns_keep_every_value_like_the_tolerant_path(
    tmp_path_factory: pytest.TempPathFactory, rows: list[list[str]]
) -> None:
    """Columns pyarrow parses as float64 (retyped to text when a later cell is not a finite
    number) hold exactly the values the cell-by-cell tolerant path gives."""
    d = tmp_path_factory.mktemp("fl")
    (d / "fast.csv").write_bytes(_raw_table(rows, noise=False))
    (d / "slow.csv").write_bytes(_raw_table(rows, noise=True))
    fast = one(d / "fast.csv").profiler[0]  # type: ignore[index]
    slow = one(d / "slow.csv").profiler[0]  # type: ignore[index]
    assert _raw_json(fast) == _raw_json(slow)
    assert fast.kernels == slow.kernels


def test_raw_float_columns_read_again_as_text_when_a_row_says_so(tmp_path: Path) -> None:
    """Columns that look numeric are parsed as floats; text or a non-finite number in any
    row (sampled or not) has the column read again, and every cell keeps what ncu wrote."""
    rows = [
        [str(i * 7), f"{i / 3:.4f}", "5", "n/a" if i % 5 else "1.5", "-0" if i > 30 else "0", "2.25"]
        for i in range(40)
    ]
    rows[-1][5] = "see log"  # the last row is sampled: read as text at once
    rows[17][0] = "text"  # not sampled: found by pyarrow, the column is read again
    rows[-2][1] = "inf"  # not a finite number: kept as the text ncu wrote
    path = tmp_path / "raw.csv"
    path.write_bytes(b"==PROF== Disconnected from process 7\n" + _raw_table(rows, noise=False))
    cap = one(path).profiler[0]  # type: ignore[index]
    assert cap.raw_columns is not None
    assert cap.raw_columns["m5__x.sum"][-2:] == [2.25, "see log"]
    assert cap.raw_columns["m0__x.sum"][16:19] == [112.0, "text", 126.0]
    assert cap.raw_columns["m1__x.sum"][-2] == "inf"
    assert cap.raw_columns["m3__x.sum"][:2] == [1.5, None]
    assert [str(v) for v in cap.raw_columns["m4__x.sum"][30:32]] == ["0.0", "-0.0"]
    assert cap.raw_columns["m2__x.sum"] == [5.0] * 40


def test_quoted_table_followed_by_noise_or_a_second_table(tmp_path: Path) -> None:
    """A quoted raw page is read on the fast path while its lines are checked; a line that
    is not a quoted row, or a second table, sends the file down the careful path."""
    rows = [[str(i), f"{i}.5"] for i in range(6)]
    table = _raw_table(rows, noise=False)
    clean = tmp_path / "clean.csv"
    clean.write_bytes(table)
    trailing = tmp_path / "trailing.csv"
    trailing.write_bytes(table + b"==PROF== Disconnected from process 7\n")
    two = tmp_path / "two.csv"
    two.write_bytes(table + table)
    expected = one(clean).profiler[0]  # type: ignore[index]
    assert _raw_json(one(trailing).profiler[0]) == _raw_json(expected)  # type: ignore[index]
    packets = read(two)
    assert len(packets) == 2
    assert all(_raw_json(p.profiler[0]) == _raw_json(expected) for p in packets)  # type: ignore[index]


# ------------------------------------------------------------ formats seen in real outputs


def _warnings(packet: EvidencePacket) -> list[str]:
    return list(packet.profiler[0].warnings or [])  # type: ignore[index]


def test_text_page_with_rulers_around_the_header() -> None:
    """ncu 2022+ prints a ruler above and below the `Metric Name` header and separates rule
    results by a `----- ----` line: every row is a metric, no header or rule text is one."""
    p = one(FIX / "text_rulers_around_header.txt")
    cap = p.profiler[0]  # type: ignore[index]
    assert [k.id for k in cap.kernels or []] == ["0", "1"]
    assert metric(p, 0, "duration") == pytest.approx(15360.0)  # 15.36 us
    assert metric(p, 0, "memory_throughput") == pytest.approx(61.25)
    assert metric(p, 0, "sm_throughput") == pytest.approx(27.5)
    assert metric(p, 0, "l2_hit_rate") == pytest.approx(92.0)
    assert raw(p, 0, "Elapsed Cycles") == RawMetric(value=12345.0, unit="cycle")
    assert raw(p, 0, "Local Memory Spilling Requests") == RawMetric(value=0.0, unit=None)
    assert raw(p, 0, "Memory Workload Analysis/Memory Throughput") == RawMetric(value=125.5, unit="Gbyte/s")
    assert metric(p, 1, "duration") == pytest.approx(1.25e6)  # 1.25 ms
    assert metric(p, 1, "dram_bandwidth") == pytest.approx(250.75)  # Gbyte/s -> GB/s
    assert raw(p, 1, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum") == RawMetric(value=4096.0, unit=None)
    names = set(cap.raw_columns or {})
    assert not any("Metric Name" in n or n.startswith(("OPT", "INF")) for n in names), names
    assert not any("cut off" in w or "no metric tables" in w for w in _warnings(p))
    assert p.timing is not None and p.timing.stats is not None and p.timing.stats.n == 2


def test_gbyte_per_s_unit_spelling() -> None:
    """ncu 2023+ writes bandwidths as `Gbyte/s` (older: `Gbyte/second`)."""
    warned: set[str] = set()
    got = canonical_metrics({"dram__bytes.sum.per_second": RawMetric(value=2.25, unit="Gbyte/s")}, warned)
    assert got["dram_bandwidth"].value == pytest.approx(2.25) and not warned
    got = canonical_metrics({"dram__bytes.sum.per_second": RawMetric(value=500.0, unit="Mbyte/s")}, warned)
    assert got["dram_bandwidth"].value == pytest.approx(0.5) and not warned


def test_text_page_kernel_lines_without_a_process_line() -> None:
    """Output pasted without its `[pid] process@host` line, kernel lines indented by one
    space: the launches are still read (no process)."""
    p = one(FIX / "text_kernel_lines_only.txt")
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    assert [(k.name, k.process, k.grid, k.block) for k in kernels] == [
        ("add(const float *, float *)", None, [8, 1, 1], [128, 1, 1])
    ]
    assert metric(p, 0, "duration") == pytest.approx(3100.0)


def test_details_page_in_a_decimal_comma_locale() -> None:
    """ncu on a German/French-locale system writes `117.344` ns for 117,344 ns and `65,77`
    for 65.77 %: once a value shows the locale, `.` is the thousands separator everywhere."""
    p = one(FIX / "details_decimal_comma_locale.csv")
    assert metric(p, 0, "duration") == pytest.approx(125440.0)  # "125.440" ns, not 125.44
    assert metric(p, 0, "dram_bytes") == pytest.approx(12582912.0)
    assert metric(p, 0, "sm_throughput") == pytest.approx(71.25)
    assert metric(p, 1, "duration") == pytest.approx(1.25e6)
    assert metric(p, 1, "dram_bytes") == pytest.approx(4096.0)
    assert metric(p, 1, "sm_throughput") == pytest.approx(1234.5)
    assert raw(p, 0, "CC").value == "8.9"  # identification columns stay as written
    assert any("decimal-comma locale (e.g. `12.582.912`)" in w for w in _warnings(p))
    # one value with a decimal point (`15.36`) settles it the other way: `1,234` is a thousand
    assert [parse_value(v) for v in ("117.344", "1,234", "9.5")] == [117.344, 1234.0, 9.5]
    assert not any("locale" in w for w in _warnings(one(FIX / "details_old_nvtx_units.csv")))


def test_raw_page_in_a_decimal_comma_locale() -> None:
    p = one(FIX / "raw_decimal_comma_locale.csv")
    assert metric(p, 0, "duration") == pytest.approx(125440.0)
    assert metric(p, 1, "duration") == pytest.approx(98112.0)
    assert metric(p, 0, "dram_bytes") == pytest.approx(12582912.0)
    assert metric(p, 1, "sm_throughput") == pytest.approx(65.5)
    assert p.hardware is not None and p.hardware.device == "NVIDIA GeForce RTX 4090"
    assert any("decimal-comma locale" in w for w in _warnings(p))


def test_text_page_in_a_decimal_comma_locale(tmp_path: Path) -> None:
    text = (FIX / "text_kernel_lines_only.txt").read_text()
    path = tmp_path / "de.txt"
    path.write_text(
        text.replace("us         3.10", "ns        3.100")
        + "   Section: Occupancy\n   --- --- ---\n   Achieved Occupancy   %   48,50\n   --- --- ---\n"
    )
    p = one(path)
    assert metric(p, 0, "duration") == pytest.approx(3100.0)  # "3.100" ns
    assert metric(p, 0, "achieved_occupancy") == pytest.approx(48.5)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_text_is_decoded(tmp_path: Path, encoding: str) -> None:
    """PowerShell's `>` writes UTF-16 (with a byte order mark); without one, every other
    byte of ASCII text is NUL."""
    path = tmp_path / "ps.csv"
    path.write_bytes((FIX / "raw_clean.csv").read_text().replace("\n", "\r\n").encode(encoding))
    p = one(path)
    ref = one(FIX / "raw_clean.csv")
    assert p.profiler[0].raw_columns == ref.profiler[0].raw_columns  # type: ignore[index]
    assert metric(p, 0, "duration") == metric(ref, 0, "duration")
    assert any("UTF-16" in w for w in _warnings(p))


def test_range_name_column_is_the_workload_name() -> None:
    """Range replay / range profiling reports name ranges in `Range Name`, not `Kernel Name`."""
    p = one(FIX / "details_range_name.csv")
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    assert [(k.id, k.name) for k in kernels] == [("0", "forward"), ("1", "backward")]
    assert metric(p, 0, "duration") == pytest.approx(2.5e6)
    assert metric(p, 0, "dram_bytes") == pytest.approx(1.5e9)
    assert "Range Name" not in (p.profiler[0].raw_columns or {})  # type: ignore[index]


# ------------------------------------------------------------------------ records built directly


def test_record_identity_fields_of_the_model_types_are_built_others_validated() -> None:
    from pydantic import ValidationError

    from kernel_evidence._codec.structs import columns_encoder
    from kernel_evidence.adapters.ncu import _buildable, _RawTable, _records
    from kernel_evidence.adapters.ncu._common import Launch, Report

    assert _buildable({"name": "k", "id": "1", "process": "4242 python", "device": 0, "grid": [1, 2, 1]})
    assert _buildable({"name": "k", "block": [128, 1, 1], "invocations": 3, "stream": "7"})
    for bad in (
        {"name": ""},
        {"name": "k", "id": 7},
        {"name": "k", "stream": None},
        {"name": "k", "device": 2**63},
        {"name": "k", "device": True},
        {"name": "k", "grid": [1, -1, 1]},
        {"name": "k", "grid": [1.0, 1, 1]},
        {"name": "k", "block": (1, 1, 1)},
        {"name": "k", "invocations": -1},
    ):
        assert not _buildable(bad), bad

    def report(*launches: Launch) -> tuple[Report, _RawTable]:
        cols: dict[str, Any] = {"gpu__time_duration.sum": [1500.0 + i for i in range(len(launches))]}
        units: dict[str, Any] = {"gpu__time_duration.sum": "nsecond"}
        return Report(page="raw", launches=list(launches), columns=cols, units=units), _RawTable(
            dict(cols), dict(units)
        )

    # records of plain launches are the records pydantic makes of the same data
    rep, table = report(
        Launch(id="0", name="gemm", pid="1", stream="7", device=0, grid=[4, 1, 1]), Launch(id="1", name="")
    )
    got, encoded = _records(rep, table, set())
    # the canonical JSON made for the packet id is that of the records themselves
    assert encoded == columns_encoder.encode([r.model_dump(exclude_none=True) for r in got])
    assert [r.model_dump(exclude_none=True) for r in got] == [
        KernelRecord.model_validate(r.model_dump(exclude_none=True)).model_dump(exclude_none=True)
        for r in got
    ]
    assert _records(rep, table, set(), encode=False) == (got, None)  # no JSON when no id is wanted
    assert got[0].metrics is not None and got[0].metrics["duration"].value == 1500.0
    assert got[1].name == "<unnamed>" and got[1].metrics["duration"].value == 1501.0  # type: ignore[index]
    # a device number the model cannot hold is refused, as validation refuses it
    rep, table = report(Launch(id="0", name="k", device=2**70))
    with pytest.raises(ValidationError):
        _records(rep, table, set())
