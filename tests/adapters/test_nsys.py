"""The Nsight Systems adapter: SQLite exports (the corpus file and built ones), nsys stats
CSV reports, .nsys-rep refusal, damaged databases, and metadata that must not leak.

Every packet is checked against the JSON Schema, round-trips with its id, and has no
validation error but those of a partial packet: no replay command (KE101), and no device
where the reports do not name it (KE801)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _nsys import GPID_2, SECRET, K, build_export

from kernel_evidence.adapters import AdapterOptions, get_adapter, missing_fields
from kernel_evidence.errors import AdapterError, InputError, KernelEvidenceError
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rules import validate
from kernel_evidence.schema import load_schema

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "nsys"
T0 = "2026-11-22T00:00:00Z"
SCHEMA = jsonschema.Draft202012Validator(load_schema())
ADAPTER = get_adapter("nsys")


def read(*paths: Any, **extra: Any) -> tuple[list[EvidencePacket], list[str]]:
    res = ADAPTER.read([str(p) for p in paths], AdapterOptions(created_at=T0, extra=extra))
    for p in res.packets:  # JSON-Schema-shaped, round-trips with its id, no error but the missing replay
        data = json.loads(p.to_json())
        SCHEMA.validate(data)
        again = EvidencePacket.model_validate(data)
        assert again.packet_id == p.packet_id == again.compute_id()
        partial = {"KE101"} | ({"KE801"} if p.hardware is None else set())  # what the user supplies
        assert {f.rule_id for f in validate(p).findings if f.severity == "error"} <= partial
        cap = p.profiler[0]
        assert all(len(col) == len(cap.kernels) for col in (cap.raw_columns or {}).values())
    return res.packets, res.warnings


def records(p: EvidencePacket) -> dict[str, Any]:
    return {k.name: k for k in p.profiler[0].kernels}


# --------------------------------------------------------------------------- the real export


def test_corpus_export_rtx4060ti(corpus: Path) -> None:
    f = corpus / "nsys" / "nsys2026.1_rtx4060ti_add_parallel_report1.sqlite"
    (p,), warnings = read(f)
    assert warnings == []
    cap = p.profiler[0]
    assert (cap.tool, cap.version) == ("nsys", "2026.1.1.204")
    (k,) = cap.kernels
    assert k.name == "add_parallel(const float *, const float *, float *, int)"
    assert k.raw_name == "_Z12add_parallelPKfS0_Pfi"
    assert (k.device, k.invocations, k.grid, k.block) == (0, 4, [97657, 1, 1], [256, 1, 1])
    m = {n: q.value for n, q in k.metrics.items()}
    assert m["duration"] == (134200 + 134263) / 2  # median of 134200, 134263, 133752, 134327
    assert m["grid_size"] == 97657 * 256 and m["registers_per_thread"] == 16
    assert cap.raw_columns["duration_sum_ns"] == [536542.0]
    assert cap.raw_columns["start"] == ["1453545934 1476681250 1499878033 1523003461"]
    assert cap.raw_columns["shortName"] == ["add_parallel"]
    assert p.timing.stats.n == 4 and p.timing.stats.min == 133752 and p.timing.stats.max == 134327
    hw = p.hardware
    assert (hw.vendor, hw.device, hw.arch, hw.compute_units) == (
        "nvidia",
        "NVIDIA GeForce RTX 4060 Ti",
        "sm_89",
        34,
    )
    assert hw.device_id == "nvidia-rtx-4060-ti"
    assert hw.memory.value == 8585216000 and hw.peak_bandwidth.value == 288032000000
    assert hw.last_level_cache.value == 33554432
    a = cap.attributes
    assert (a["memcpy_HtoD.count"], a["memcpy_HtoD.bytes"], a["memcpy_DtoH.count"]) == (8, 800_000_000, 4)
    assert a["pid"] == 17068 and a["gpu.chip"] == "AD106"
    assert p.measured_at == "2026-01-25T02:26:42Z"
    # the export names its user, host and paths: none of it is copied
    text = p.to_json().decode()
    assert "hangyudu" not in text and "0x822a5b873" not in text


# --------------------------------------------------------------------------- built exports


def test_built_export_one_packet_per_process(tmp_path: Path) -> None:
    packets, _ = read(build_export(tmp_path / "two.sqlite"))
    assert [p.profiler[0].attributes["pid"] for p in packets] == [31337, 31338]
    first, second = packets
    r = records(first)
    gemm = r["void gemm_kernel<128, 128>(float const*, float const*, float*, int)"]
    assert gemm.invocations == 3 and gemm.metrics["duration"].value == 30000.0
    assert gemm.metrics["shared_memory_per_block"].value == 229376.0
    relu = r["relu_kernel(float*, int)"]
    assert (
        relu.metrics["shared_memory_per_block"].value == 4096
        and relu.metrics["grid_size"].value == 1024 * 256
    )
    assert first.subject.name == gemm.name and first.timing.stats.median == 30000.0
    assert first.profiler[0].attributes["memcpy_HtoD.bytes"] == 4_194_304
    assert first.hardware.count == 1 and first.hardware.device_id == "nvidia-h100-sxm5-80gb"
    (only,) = second.profiler[0].kernels
    assert (only.device, only.invocations, only.metrics["duration"].value) == (1, 1, 31500.0)
    assert "memcpy_HtoD.count" not in second.profiler[0].attributes  # process 2 copied nothing
    assert second.profiler[0].attributes["devices_used"] == "1"


def test_secrets_in_capture_metadata_never_reach_a_packet(tmp_path: Path) -> None:
    packets, warnings = read(build_export(tmp_path / "s.sqlite"))
    for p in packets:
        assert SECRET not in p.to_json().decode()
    assert not any(SECRET in w for w in warnings)


def test_launches_without_timestamps_and_unknown_names(tmp_path: Path) -> None:
    ks = [K(1000, 2000, 10), K(0, 0, 10), K(5000, 4000, 10), K(6000, 7500, 99)]  # 99: not in StringIds
    (p,), _ = read(build_export(tmp_path / "odd.sqlite", ks))
    r = records(p)
    gemm = r["void gemm_kernel<128, 128>(float const*, float const*, float*, int)"]
    assert gemm.invocations == 3 and gemm.metrics["duration"].value == 1000.0
    assert r["relu_kernel"].invocations == 1  # no demangled name: the short name
    w = p.profiler[0].warnings
    assert any("2 of 4 launches have no usable timestamps" in x for x in w)
    assert any("1 kernel name id(s) not in StringIds" in x for x in w)


def test_mixed_launch_shapes_keep_each_launch_raw(tmp_path: Path) -> None:
    ks = [K(1000, 2000, 10, grid=(132, 1, 1)), K(3000, 4200, 10, grid=(66, 1, 1))]
    (p,), _ = read(build_export(tmp_path / "mixed.sqlite", ks))
    (k,) = p.profiler[0].kernels
    assert k.grid is None and "grid_size" not in k.metrics  # shapes differ: no one grid
    assert k.block == [128, 1, 1]
    assert p.profiler[0].raw_columns["gridX"] == ["132 66"]


# --------------------------------------------------------------------------- damaged databases


def test_no_kernel_table_is_one_line(tmp_path: Path) -> None:
    f = build_export(tmp_path / "nok.sqlite", with_kernel_table=False)
    with pytest.raises(InputError) as err:
        read(f)
    assert str(err.value) == (
        f"{f}: no CUPTI_ACTIVITY_KIND_KERNEL table: the capture launched no CUDA kernel (nsys writes a table "
        "only when it has rows; was CUDA traced, `nsys profile -t cuda`?)"
    )


def test_empty_kernel_table(tmp_path: Path) -> None:
    f = build_export(tmp_path / "empty.sqlite", [])
    with pytest.raises(InputError, match=r"table CUPTI_ACTIVITY_KIND_KERNEL: is empty: no kernel launches$"):
        read(f)


def test_truncated_database(tmp_path: Path) -> None:
    f = build_export(tmp_path / "full.sqlite")
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(f.read_bytes()[:6000])
    with pytest.raises(KernelEvidenceError) as err:
        read(cut)
    msg = str(err.value)
    assert msg.startswith(str(cut)) and "\n" not in msg
    assert "malformed" in msg or "no CUPTI_ACTIVITY_KIND_KERNEL" in msg


def test_not_a_database(tmp_path: Path) -> None:
    f = tmp_path / "junk.sqlite"
    f.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    with pytest.raises(InputError) as err:
        read(f)
    assert str(err.value).startswith(f"{f}: not a readable SQLite database (")


def test_text_where_a_number_belongs(tmp_path: Path) -> None:
    f = build_export(tmp_path / "typed.sqlite")
    conn = sqlite3.connect(f)
    conn.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE correlationId = 12")
    conn.commit()
    conn.close()
    with pytest.raises(InputError) as err:
        read(f)
    assert str(err.value) == (
        f"{f}:table CUPTI_ACTIVITY_KIND_KERNEL, row 2: column `start` holds str 'soon'; expected an integer"
    )


def test_missing_column(tmp_path: Path) -> None:
    f = tmp_path / "nocol.sqlite"
    conn = sqlite3.connect(f)
    conn.executescript(
        "CREATE TABLE StringIds (id INTEGER, value TEXT); CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, deviceId INTEGER);"
    )
    conn.close()
    with pytest.raises(InputError) as err:
        read(f)
    assert str(err.value) == (
        f"{f}:table CUPTI_ACTIVITY_KIND_KERNEL: has no column end; expected an Nsight Systems SQLite export "
        "(nsys export --type sqlite)"
    )


def test_rocpd_database_is_sent_to_rocprof(tmp_path: Path) -> None:
    from _rocpd import small

    f = small(tmp_path / "r.db")
    with pytest.raises(
        InputError,
        match="a rocpd database, not an Nsight Systems export: read it with `kevidence ingest rocprof`",
    ):
        read(f)


def test_nsys_rep_gets_the_export_command(tmp_path: Path) -> None:
    rep = tmp_path / "report1.nsys-rep"
    rep.write_bytes(b"\x00\x01binary")
    with pytest.raises(AdapterError) as err:
        read(rep)
    assert str(err.value) == (
        f"{rep}: an Nsight Systems report is nsys's own binary format; export it first with "
        "`nsys export --type sqlite -o report1.sqlite report1.nsys-rep` (or `nsys stats --format csv "
        "--report cuda_gpu_kern_sum,cuda_gpu_trace -o report1 report1.nsys-rep`) and ingest what it writes"
    )
    with pytest.raises(AdapterError, match="export it first"):
        read(tmp_path)  # a folder holding only the report


def test_export_beside_its_report_is_read(tmp_path: Path) -> None:
    build_export(tmp_path / "report1.sqlite")
    (tmp_path / "report1.nsys-rep").write_bytes(b"\x00")
    packets, _ = read(tmp_path)
    assert len(packets) == 2


# --------------------------------------------------------------------------- nsys stats CSV


def test_stats_files_of_one_prefix_make_one_packet() -> None:
    (p,), warnings = read(FIX / "run1")
    cap = p.profiler[0]
    names = [(k.name, k.category) for k in cap.kernels]
    assert names == [
        ("void gemm_kernel<128, 128>(float const*, float const*, float*, int)", None),
        ("relu_kernel(float*, int)", None),
        ("[CUDA memcpy Host-to-Device]", "memcpy"),
        (":timed_region", "nvtx"),
    ]
    gemm, relu, copy, nvtx = cap.kernels
    assert (gemm.invocations, gemm.metrics["duration"].value, gemm.grid, gemm.block) == (
        3,
        30000.0,
        [132, 1, 1],
        [128, 1, 1],
    )
    assert gemm.metrics["grid_size"].value == 132 * 128
    assert gemm.metrics["shared_memory_per_block"].value == 229000.0  # 0.229 MB as nsys prints it (10^6 B)
    assert gemm.metrics["registers_per_thread"].value == 168
    assert relu.invocations == 2 and relu.metrics["duration"].value == 4500.0
    assert cap.raw_columns["Strm"][1] == "7 8"  # relu ran on two streams
    assert (copy.invocations, copy.metrics["duration"].value) == (1, 5000.0)
    assert (nvtx.invocations, nvtx.metrics["duration"].value) == (1, 150000.0)
    assert cap.raw_columns["Style"] == [None, None, None, "PushPop"]
    assert cap.attributes["trace.[CUDA memcpy Host-to-Device].bytes"] == 4194000
    assert p.subject.name == gemm.name and p.timing.stats.median == 30000.0 and p.timing.stats.n == 3
    assert p.hardware.device == "NVIDIA H100 80GB HBM3" and p.hardware.device_id == "nvidia-h100-sxm5-80gb"
    assert any("cuda_gpu_kern_sum not used" in w for w in warnings)


def test_kernel_summary_alone() -> None:
    (p,), warnings = read(FIX / "run1" / "run1_cuda_gpu_kern_sum.csv")
    gemm, relu = p.profiler[0].kernels
    assert (gemm.invocations, gemm.metrics["duration"].value) == (3, 30000.0)
    assert p.timing.stats.model_dump(exclude_none=True) == {
        "unit": "ns", "median": 30000.0, "mean": 30000.0, "min": 29000.0, "max": 31000.0, "std": 1000.0, "n": 3,
    }  # fmt: skip
    assert p.profiler[0].raw_units["Total Time"] == "ns"
    assert p.hardware is None
    assert {"hardware.device": "<GPU model>"} in [missing_fields(w) for w in warnings]


def test_stats_stdout_with_banners_and_separators() -> None:
    (p,), warnings = read(FIX / "h100_stats_stdout.txt")
    cap = p.profiler[0]
    cutlass = cap.kernels[0]
    assert cutlass.invocations == 97620 and cutlass.metrics["duration"].value == 107872.0
    assert p.timing.stats.n == 97620 and p.subject.name.startswith("void cutlass::device_kernel")
    assert [k.category for k in cap.kernels] == [None, None, "memcpy", "memset"]
    assert cap.raw_columns["Total Time"][0] == 14198407375.0
    assert any("cuda_api_sum not read" in w for w in warnings)


def test_time_unit_from_the_header(tmp_path: Path) -> None:
    f = tmp_path / "us_cuda_gpu_kern_sum.csv"
    f.write_text(
        "Time (%),Total Time (us),Instances,Avg (us),Med (us),Min (us),Max (us),StdDev (us),Name\n"
        "100.0,90.0,3,30.0,30.5,29.0,31.0,1.0,k\n"
    )
    (p,), _ = read(f)
    assert p.profiler[0].kernels[0].metrics["duration"].value == 30500.0
    assert p.profiler[0].raw_columns["Med"] == [30.5] and p.profiler[0].raw_units["Med"] == "us"


def test_console_table_is_refused() -> None:
    f = FIX / "console_table.txt"
    with pytest.raises(InputError) as err:
        read(f)
    assert str(err.value) == (
        f"{f}:line 4: a console table (nsys stats --format column, the default); expected CSV: run "
        "`nsys stats --format csv`"
    )


def test_short_row(tmp_path: Path) -> None:
    f = tmp_path / "x_cuda_gpu_kern_sum.csv"
    f.write_text((FIX / "run1" / "run1_cuda_gpu_kern_sum.csv").read_text() + "5.0,100\n")
    with pytest.raises(InputError) as err:
        read(f)
    assert (
        str(err.value) == f"{f}:line 4: expected 9 fields as in the cuda_gpu_kern_sum header (line 1), got 2"
    )


def test_text_without_reports(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("nothing to see\n")
    with pytest.raises(InputError, match=r"no report table found; expected nsys stats --format csv output"):
        read(f)


def test_registered_under_its_alias() -> None:
    assert get_adapter("nsight-systems") is ADAPTER


def test_side_file_for_a_large_capture(tmp_path: Path) -> None:
    from kernel_evidence.rawtable import raw_columns_of, read_raw_table

    f = build_export(tmp_path / "big.sqlite")
    side = tmp_path / "side"
    side.mkdir()
    res = ADAPTER.read(
        [str(f)],
        AdapterOptions(created_at=T0, side_dir=str(side), side_base=str(tmp_path), inline_max_cells=10),
    )
    p = res.packets[0]
    cap = p.profiler[0]
    assert cap.raw_columns is None and cap.raw_table is not None
    inline = ADAPTER.read([str(f)], AdapterOptions(created_at=T0)).packets[0].profiler[0].raw_columns
    assert raw_columns_of(read_raw_table(cap, tmp_path))[0] == inline


def test_copied_export_keeps_its_numbers(tmp_path: Path, corpus: Path) -> None:
    # by content, not by name: an export under another name is still an export
    src = corpus / "nsys" / "nsys2026.1_rtx4060ti_add_parallel_report1.sqlite"
    dst = tmp_path / "renamed.bin"
    shutil.copyfile(src, dst)
    (p,), _ = read(dst)
    assert p.profiler[0].raw_columns["duration_sum_ns"] == [536542.0]


def test_second_process_devices(tmp_path: Path) -> None:
    ks = [K(10, 20, 10, gpid=GPID_2, device=3), K(30, 45, 10, gpid=GPID_2, device=2)]
    (p,), _ = read(build_export(tmp_path / "p2.sqlite", ks))
    assert [k.device for k in p.profiler[0].kernels] == [2, 3]
    assert p.hardware.count == 2


def test_mapping_table_names_every_canonical_metric_and_what_the_adapter_fills(tmp_path: Path) -> None:
    from kernel_evidence._resources import load_toml

    canon = load_toml("canonical_metrics.toml")["metrics"]
    table = load_toml("nsys.toml")
    assert table["tool"] == "nsys" and set(table["metrics"]) == set(canon)
    packets, _ = read(build_export(tmp_path / "m.sqlite"))
    filled = {name for p in packets for k in p.profiler[0].kernels for name in k.metrics}
    assert filled and all(table["metrics"][name]["equivalence"] != "none" for name in filled)


def test_pipe_and_device_are_refused_unopened(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "stats.csv"
    os.mkfifo(fifo)
    with pytest.raises(AdapterError, match=r"stats.csv: is not a regular file; expected nsys stats"):
        read(fifo)  # would block if opened
    with pytest.raises(AdapterError, match=r"^/dev/zero: is not a regular file"):
        read("/dev/zero")


def test_early_2021_gpu_table(tmp_path: Path) -> None:
    f = build_export(tmp_path / "old.sqlite")
    conn = sqlite3.connect(f)
    conn.executescript(
        "DROP TABLE TARGET_INFO_GPU;"
        "CREATE TABLE TARGET_INFO_CUDA_GPU (deviceId INTEGER, name TEXT, numMultiprocessors INTEGER,"
        " computeCapabilityMajor INTEGER, computeCapabilityMinor INTEGER, coreClockRate INTEGER);"
        "INSERT INTO TARGET_INFO_CUDA_GPU VALUES (0, 'Tesla V100-SXM2-16GB', 80, 7, 0, 1530000000);"
    )
    conn.close()
    first, _second = read(f)[0]
    hw = first.hardware
    assert (hw.device, hw.arch, hw.compute_units, hw.memory) == ("Tesla V100-SXM2-16GB", "sm_70", 80, None)


def test_older_gpukernsum_layouts(tmp_path: Path) -> None:
    f = tmp_path / "r_gpukernsum.csv"
    f.write_text(
        "Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,Name\n"
        '100.0,12000,4,3000.0,2500,3600,"k(int)"\n'
    )
    (p,), _ = read(f)
    (k,) = p.profiler[0].kernels
    assert (k.invocations, k.metrics["duration"].value) == (4, 3000.0)  # no median: the mean
    assert p.timing.stats.median is None and p.timing.stats.mean == 3000.0
    g = tmp_path / "s_gpukernsum.csv"
    g.write_text(
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),GridXYZ,BlockXYZ,Name\n"
        '100.0,536542,4,134135.5,134231.5,133752,134327,260.9,"97657    1    1","256    1    1",add_parallel\n'
    )
    (q,), _ = read(g)
    (k2,) = q.profiler[0].kernels
    assert (k2.grid, k2.block, k2.metrics["duration"].value) == ([97657, 1, 1], [256, 1, 1], 134231.5)


def test_stream_and_process_of_a_record(tmp_path: Path, corpus: Path) -> None:
    (p,), _ = read(corpus / "nsys" / "nsys2026.1_rtx4060ti_add_parallel_report1.sqlite")
    (k,) = p.profiler[0].kernels
    assert (k.stream, k.process) == (None, "17068")  # streams 13-16: one launch each
    first, _ = read(build_export(tmp_path / "s.sqlite"))[0]
    assert {k.stream for k in first.profiler[0].kernels} == {"7"}
