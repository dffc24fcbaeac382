"""rocprof adapter on damaged inputs (the cases of a fuzzing audit): one-line errors naming the
file and the place, or a packet whose warnings name what could not be derived, never a
traceback and never a number read from the wrong place.

Every input is made here from the small synthetic fixtures in tests/fixtures/rocprof/.
"""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.rocprof import ADAPTER
from kernel_evidence.cli import main
from kernel_evidence.errors import AdapterError, InputError
from kernel_evidence.models import EvidencePacket

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "rocprof"
T0 = "2026-11-22T00:00:00Z"

WIDE = (
    "Dispatch_ID,GPU_ID,Grid_Size,Workgroup_Size,Kernel_Name,GRBM_GUI_ACTIVE,SQ_ACTIVE_INST_VALU,"
    "Start_Timestamp,End_Timestamp\n"
    '0,2,4096,256,"copy(float*)",1000,2080,1000,21000\n'
    '1,2,4096,256,"copy(float*)",1000,2080,30000,50000\n'
    '2,2,4096,256,"fill(float*)",1000,1040,60000,70000\n'
)
SYSINFO = (
    "workload_name,version,gpu_model,gpu_arch,cu_per_gpu,max_waves_per_cu,max_sclk,max_mclk,"
    "cur_sclk,cur_mclk,hbm_bw,num_xcd\n"
    "copy,2,MI200,gfx90a,104,32,1700,1600,1700,1600,1638.4,1\n"
)


def read(path: Path | str, **extra: object) -> list[EvidencePacket]:
    result = ADAPTER.read([str(path)], AdapterOptions(created_at=T0, extra=dict(extra)))
    for p in result.packets:
        EvidencePacket.model_validate(p.to_dict())
    return result.packets


def one(path: Path | str, **extra: object) -> EvidencePacket:
    (p,) = read(path, **extra)
    return p


def cap(p: EvidencePacket):  # type: ignore[no-untyped-def]
    assert p.profiler is not None
    return p.profiler[0]


def warned(p: EvidencePacket, *parts: str) -> list[str]:
    """The warnings of ``p`` that contain every one of ``parts``."""
    return [w for w in cap(p).warnings or [] if all(x in w for x in parts)]


def metric(p: EvidencePacket, kernel_id: str, name: str) -> float | None:
    (k,) = [k for k in cap(p).kernels or [] if k.id == kernel_id]
    m = k.metrics or {}
    return m[name].value if name in m else None


def workload(tmp_path: Path, pmc: bytes | str = WIDE, sysinfo: bytes | str = SYSINFO) -> Path:
    wl = tmp_path / "wl"
    wl.mkdir(exist_ok=True)
    for name, content in (("pmc_perf.csv", pmc), ("sysinfo.csv", sysinfo)):
        data = content.encode() if isinstance(content, str) else content
        (wl / name).write_bytes(data)
    return wl


def cli(capsys: pytest.CaptureFixture[str], path: Path, tmp_path: Path, *opts: str) -> tuple[int, str]:
    code = main(["ingest", "rocprof", str(path), "-o", str(tmp_path / "out.json"), *opts])
    _, err = capsys.readouterr()
    return code, err


def test_the_clean_synthetic_workload_as_a_baseline(tmp_path: Path) -> None:
    p = one(workload(tmp_path))
    assert metric(p, "0", "duration") == 20000.0
    assert metric(p, "0", "valu_utilization") == pytest.approx(2.0)  # 100*2080/(1000/1*104)
    assert p.hardware.compute_units == 104 and p.hardware.peak_bandwidth.value == 1638.4
    assert not [w for w in cap(p).warnings if w.startswith(("pmc_perf.csv:", "sysinfo.csv:"))]


# --------------------------------------------------------------------------- 1. encoding


def test_header_that_is_not_utf8_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = WIDE.encode().replace(b"Kernel_Name", b"Kernel_\xffName", 1)
    wl = workload(tmp_path, pmc=data)
    with pytest.raises(InputError) as err:
        read(wl)
    assert str(err.value) == (
        f"{wl / 'pmc_perf.csv'}:line 1: byte 0xff at column 52 is not UTF-8 text; "
        "expected a CSV header row of column names"
    )
    code, msg = cli(capsys, wl, tmp_path)
    assert code == 1 and msg == f"kevidence: error: {err.value}\n"  # one line, no traceback


def test_gzip_under_a_plain_name_is_read_as_its_text(tmp_path: Path) -> None:
    plain = one(FIX / "rocprofv3_trace")
    work = tmp_path / "v3"
    shutil.copytree(FIX / "rocprofv3_trace", work)
    trace = work / "1234_kernel_trace.csv"
    trace.write_bytes(gzip.compress(trace.read_bytes()))
    p = one(work)
    assert [k.model_dump() for k in cap(p).kernels] == [k.model_dump() for k in cap(plain).kernels]
    assert cap(p).source.sha256 != cap(plain).source.sha256  # the file as stored is hashed

    wl = workload(tmp_path, pmc=gzip.compress(WIDE.encode()))
    assert metric(one(wl), "0", "duration") == 20000.0
    (wl / "pmc_perf.csv").write_bytes(gzip.compress(WIDE.encode())[:-12])  # truncated stream
    with pytest.raises(AdapterError, match=r"pmc_perf\.csv: gzip-compressed but not readable \("):
        read(wl)


def test_other_compression_is_named(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    wl = workload(tmp_path, pmc=zstandard.ZstdCompressor().compress(WIDE.encode()))
    with pytest.raises(AdapterError) as err:
        read(wl)
    assert str(err.value) == (
        f"{wl / 'pmc_perf.csv'}: zstd-compressed; expected a rocprof / rocprof-compute dispatch CSV: "
        "decompress it first"
    )


# --------------------------------------------------------------------------- 2. nan timestamps


def test_nan_end_timestamp_is_warned_like_other_bad_timestamps(tmp_path: Path) -> None:
    p = one(workload(tmp_path, pmc=WIDE.replace("1000,21000", "1000,nan")))
    assert metric(p, "0", "duration") is None and metric(p, "1", "duration") == 20000.0
    assert (
        warned(p)
        and (
            "pmc_perf.csv: End_Timestamp empty or `nan` in 1 of 3 dispatches; duration and per-second "
            "metrics not derived for them"
        )
        in cap(p).warnings
    )

    work = tmp_path / "v3"
    shutil.copytree(FIX / "rocprofv3_trace", work)
    trace = work / "1234_kernel_trace.csv"
    trace.write_text(trace.read_text().replace(",1000,9000,", ",1000,nan,", 1))
    p = one(work)
    assert metric(p, "1", "duration") is None
    assert warned(p, "1234_kernel_trace.csv: End_Timestamp empty or `nan` in 1 of")


def test_nan_timestamp_of_a_counter_pass_in_the_long_layout(tmp_path: Path) -> None:
    work = tmp_path / "long"
    shutil.copytree(FIX / "long_rocpd", work)
    pmc = work / "pmc_perf.csv"
    pmc.write_text(pmc.read_text().replace(",20000,27000,", ",20000,nan,"))
    assert warned(
        one(work), "pmc_perf.csv: Start_Timestamp/End_Timestamp empty or `nan` in 1 counter pass(es)"
    )


# --------------------------------------------------------------------------- 3. sysinfo widths


def test_sysinfo_row_wider_than_its_header_gives_no_shifted_values(tmp_path: Path) -> None:
    header, row = SYSINFO.splitlines()
    damaged = header.replace("gpu_arch,", "") + "\n" + row + "\n"  # one name lost: values shift left
    p = one(workload(tmp_path, sysinfo=damaged))
    assert p.hardware is None  # not compute_units=32 (max_waves_per_cu) nor hbm_bw from num_xcd
    assert (
        "sysinfo.csv: line 2 has 12 fields, the header has 11; no system values read: hardware, peaks "
        "and XCD count unknown (values are not assigned by position when the widths differ)"
    ) in cap(p).warnings
    assert metric(p, "0", "valu_utilization") is None
    assert warned(p, "valu_utilization not derived: sysinfo.csv has no usable $cu_per_gpu")
    assert metric(p, "0", "duration") == 20000.0  # the dispatches are still there


def test_roofline_and_agent_info_rows_of_another_width_are_not_used(tmp_path: Path) -> None:
    wl = workload(tmp_path)
    (wl / "roofline.csv").write_text("device,HBMBw,L2Bw\n0,1389.5\n")
    p = one(wl)
    assert not any(k.startswith("roofline.") for k in cap(p).attributes)
    assert "roofline.csv: line 2 has 2 fields, the header has 3; no roofline peaks read" in (
        " ".join(cap(p).warnings)
    )

    work = tmp_path / "v3"
    shutil.copytree(FIX / "rocprofv3_trace", work)
    info = work / "1234_agent_info.csv"
    info.write_text(info.read_text().replace('"Num_Xcc",', ""))
    p = one(work)
    assert p.hardware is None  # the GPU row is not read with its values shifted
    assert warned(p, "1234_agent_info.csv: line 3 has 11 fields, the header has 10; row not used")


# --------------------------------------------------------------------------- 4. save-dfs tables


def _savedfs(tmp_path: Path, sol: bytes | None = None) -> Path:
    work = tmp_path / "dfs"
    shutil.copytree(FIX / "savedfs_2x", work)
    if sol is not None:
        (work / "2.1_Speed-of-Light.csv").write_bytes(sol)
    return work


def _sol() -> bytes:
    return (FIX / "savedfs_2x" / "2.1_Speed-of-Light.csv").read_bytes()


def _summary(p: EvidencePacket) -> dict[str, float]:
    return {k: q.value for k, q in (cap(p).summary or {}).items()}


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (b"", "no Metric rows (expected a CSV with columns Metric, Avg or Value, Unit)"),
        (b"  \n\n", "no Metric rows (expected a CSV with columns Metric, Avg or Value, Unit)"),
        (bytes(range(256)) * 4, "no Metric column (header: "),
        (b"\x28\xb5\x2f\xfd" + b"\x00" * 40, "not read (zstd-compressed; expected an analyze table CSV"),
    ],
    ids=["emptied", "blank", "binary", "zstd"],
)
def test_speed_of_light_table_unusable_names_what_was_lost(tmp_path: Path, damage: bytes, why: str) -> None:
    p = one(_savedfs(tmp_path, damage))
    assert "valu_utilization" not in _summary(p)
    (w,) = warned(p, "2.1_Speed-of-Light.csv: ", why)
    assert w.endswith(
        "; not derived: achieved_occupancy, tensor_pipe_utilization, valu_utilization, l2_hit_rate, "
        "shared_bank_conflict_rate, memory_throughput, dram_bandwidth, achieved_flop_rate"
    )


@pytest.mark.parametrize("damage", [gzip.compress(_sol()), b"\xef\xbb\xbf" + _sol()], ids=["gzip", "bom"])
def test_speed_of_light_gzip_or_bom_reads_like_the_plain_table(tmp_path: Path, damage: bytes) -> None:
    plain = _summary(one(_savedfs(tmp_path / "a")))
    assert plain["valu_utilization"] == 12.5
    assert _summary(one(_savedfs(tmp_path / "b", damage))) == plain


def test_speed_of_light_bad_number_is_warned(tmp_path: Path) -> None:
    p = one(_savedfs(tmp_path, _sol().replace(b"L2 Cache Hit Rate,61.0,", b"L2 Cache Hit Rate,abc,")))
    s = _summary(p)
    assert "l2_hit_rate" not in s and s["valu_utilization"] == 12.5
    assert (
        "l2_hit_rate not derived: 2.1_Speed-of-Light.csv: `L2 Cache Hit Rate` value is `abc`, "
        "not a finite number"
    ) in cap(p).warnings


def test_speed_of_light_unit_that_disagrees_is_not_taken_as_percent(tmp_path: Path) -> None:
    p = one(
        _savedfs(tmp_path, _sol().replace(b"L2 Cache Hit Rate,61.0,Pct,", b"L2 Cache Hit Rate,61.0,Gb/s,"))
    )
    assert "l2_hit_rate" not in _summary(p)
    assert (
        "l2_hit_rate not derived: 2.1_Speed-of-Light.csv: `L2 Cache Hit Rate` has unit `Gb/s`, expected "
        "one meaning % (%, pct, percent)"
    ) in cap(p).warnings
    # a rescaled row is checked against its own label; Pct of Peak is a percentage whatever Unit says
    p = one(_savedfs(tmp_path / "b", _sol().replace(b"1.6,Conflicts/access", b"1.6,Cycles")))
    assert "shared_bank_conflict_rate" not in _summary(p)
    assert warned(
        p, "`LDS Bank Conflicts/Access` has unit `Cycles`, expected one meaning % (conflicts/access)"
    )
    assert _summary(p)["achieved_occupancy"] == 40.0  # Wavefronts unit, value from Pct of Peak


def test_top_kernels_bad_number_is_warned(tmp_path: Path) -> None:
    work = _savedfs(tmp_path)
    top = work / "0.1_Top_Kernels.csv"
    top.write_text(top.read_text().replace("5000.0,5000.0,20.0", "x5,5000.0,20.0"))
    p = one(work)
    assert (
        "0.1_Top_Kernels.csv: `Mean(ns)` is not a finite number in 1 row(s) (e.g. `x5`); left out for "
        "those kernels"
    ) in cap(p).warnings


# --------------------------------------------------------------------------- 5. what is not a file


def test_pmc_perf_that_is_a_directory_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wl = tmp_path / "wl"
    (wl / "pmc_perf.csv").mkdir(parents=True)
    with pytest.raises(AdapterError) as err:
        read(wl)
    assert str(err.value) == (
        f"{wl / 'pmc_perf.csv'}: is a directory; expected a rocprof / rocprof-compute dispatch CSV"
    )
    assert cli(capsys, wl, tmp_path) == (1, f"kevidence: error: {err.value}\n")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_pmc_perf_linked_to_an_endless_device_stops_at_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wl = tmp_path / "wl"
    wl.mkdir()
    (wl / "pmc_perf.csv").symlink_to("/dev/zero")
    with pytest.raises(AdapterError, match=r"pmc_perf\.csv: larger than the 1 MiB cap for one input"):
        read(wl, max_bytes=1 << 20)
    code, msg = cli(capsys, wl, tmp_path, "--opt", "max_bytes=1048576")
    assert code == 1 and msg.count("\n") == 1 and "larger than the 1 MiB cap" in msg


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_pmc_perf_that_is_a_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    wl = tmp_path / "wl"
    wl.mkdir()
    os.mkfifo(wl / "pmc_perf.csv")
    with pytest.raises(AdapterError, match=r"pmc_perf\.csv: is a named pipe or socket; expected"):
        read(wl)


@pytest.mark.parametrize("content", [b"  \n\n \t\n", b"\xef\xbb\xbf\n\n", b"\x00\x00\n"])
def test_pmc_perf_with_only_blank_lines_is_an_error(tmp_path: Path, content: bytes) -> None:
    wl = workload(tmp_path, pmc=content)
    with pytest.raises(InputError) as err:
        read(wl)
    assert str(err.value) == f"{wl / 'pmc_perf.csv'}: expected a CSV header row, got only blank lines"


def test_pmc_perf_cut_inside_its_header_is_an_error_with_the_place(tmp_path: Path) -> None:
    wl = workload(tmp_path, pmc=WIDE[:40])
    with pytest.raises(InputError) as err:
        read(wl)
    assert str(err.value) == (
        f"{wl / 'pmc_perf.csv'}:line 1: the file ends inside its header row (40 bytes, no line break); "
        "expected a CSV header row and data rows (truncated?)"
    )


def test_side_files_are_read_capped_too(tmp_path: Path) -> None:
    wl = workload(tmp_path)
    big = SYSINFO + "x" * 3000
    (wl / "sysinfo.csv").write_text(big)
    with pytest.raises(AdapterError, match=r"sysinfo\.csv: larger than the 2 KiB cap for one input"):
        read(wl, max_bytes=2048)


# --------------------------------------------------------------------------- 6. NULs, bad bytes


def test_nul_bytes_are_removed_and_warned_once_per_file(tmp_path: Path) -> None:
    data = WIDE.encode().replace(b"SQ_ACTIVE", b"SQ_\x00\x00ACTIVE").replace(b'"fill(', b'"fi\x00ll(')
    p = one(workload(tmp_path, pmc=data))
    assert "pmc_perf.csv: 3 NUL byte(s) removed (first on line 1)" in cap(p).warnings
    assert "SQ_ACTIVE_INST_VALU" in cap(p).raw_columns
    assert {k.name for k in cap(p).kernels} == {"copy(float*)", "fill(float*)"}
    assert metric(p, "0", "valu_utilization") == pytest.approx(2.0)


def test_bytes_that_are_not_utf8_in_a_row_are_replaced_and_warned(tmp_path: Path) -> None:
    data = WIDE.encode().replace(b'"fill(', b'"fi\xff\xfell(')
    p = one(workload(tmp_path, pmc=data))
    assert "pmc_perf.csv: 2 byte sequence(s) that are not UTF-8 replaced by U+FFFD (first on line 4)" in (
        cap(p).warnings
    )
    assert "fi\ufffd\ufffdll(float*)" in {k.name for k in cap(p).kernels}

    p = one(workload(tmp_path, sysinfo=SYSINFO.encode().replace(b"MI200", b"MI\x00200\xff")))
    assert p.hardware.device == "MI200\ufffd"
    assert warned(p, "sysinfo.csv: 1 NUL byte(s) removed (first on line 2)")
    assert warned(
        p, "sysinfo.csv: 1 byte sequence(s) that are not UTF-8 replaced by U+FFFD (first on line 2)"
    )


def test_file_warnings_of_a_merged_level_pass_are_kept(tmp_path: Path) -> None:
    work = tmp_path / "d3"
    shutil.copytree(FIX / "damaged_3x", work)
    level = work / "SQ_LEVEL_WAVES.csv"
    level.write_bytes(level.read_bytes().replace(b"\n", b"\x00\n", 1))
    assert warned(one(work), "SQ_LEVEL_WAVES.csv: 1 NUL byte(s) removed (first on line 1)")


# --------------------------------------------------------------------------- 7. byte-order marks


def test_bom_at_the_start_of_sysinfo_keeps_the_first_field(tmp_path: Path) -> None:
    p = one(workload(tmp_path, sysinfo=b"\xef\xbb\xbf" + SYSINFO.encode()))
    assert p.task.workload == "copy"  # the first column, workload_name, is not lost
    assert cap(p).attributes["workload_name"] == "copy"


def test_bom_at_the_start_of_a_table_given_by_name(tmp_path: Path) -> None:
    p = one(workload(tmp_path, pmc=b"\xef\xbb\xbf" + WIDE.encode()))
    assert [k.id for k in cap(p).kernels] == ["0", "1", "2"] and "Dispatch_ID" in cap(p).raw_columns
    # a speed-of-light table given on its own is recognised by its header, BOM or not
    work = _savedfs(tmp_path, b"\xef\xbb\xbf" + _sol())
    assert _summary(one(work / "2.1_Speed-of-Light.csv"))["valu_utilization"] == 12.5


# --------------------------------------------------------------------------- 8. repeated rows


def test_repeated_dispatch_id_is_warned(tmp_path: Path) -> None:
    last = WIDE.splitlines()[-1]
    p = one(workload(tmp_path, pmc=WIDE + last + "\n" + last + "\n"))
    assert len(cap(p).kernels) == 5  # kept: the adapter cannot tell a repeat from a real dispatch
    assert (
        "pmc_perf.csv: 2 row(s) repeat a Dispatch_ID already seen (Dispatch_ID 2); every row is kept as "
        "its own dispatch, so counts and means include the repeats"
    ) in cap(p).warnings


def test_repeated_counter_row_in_the_long_layout_is_warned(tmp_path: Path) -> None:
    work = tmp_path / "long"
    shutil.copytree(FIX / "long_rocpd", work)
    pmc = work / "pmc_perf.csv"
    lines = pmc.read_text().splitlines(keepends=True)
    pmc.write_text("".join([*lines, lines[1]]))
    assert warned(
        one(work),
        "pmc_perf.csv: 1 row(s) repeat a (Dispatch_ID, Counter_Name) pair already seen "
        "(e.g. Dispatch_ID 1, GRBM_GUI_ACTIVE); their values are averaged",
    )
