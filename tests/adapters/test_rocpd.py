"""rocpd SQLite databases (rocprofv3 --output-format rocpd) through ``kevidence ingest rocprof``.

No real rocpd database is public (searched: ROCm/rocm-systems and rocprofiler-sdk keep the
schema and tests that make databases at run time, not a database file; see
docs/adapters/rocprof.md). The databases here are built with DDL written after ROCm's
published schema (tests/fixtures/rocprofv3/rocpd_schema.sql cites it), by tests/adapters/_rocpd.py."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _rocpd import GUID, SECRET, UUID, Dispatch, Kernel, build_rocpd, small

from kernel_evidence.adapters import AdapterOptions, get_adapter
from kernel_evidence.errors import AdapterError, InputError, KernelEvidenceError
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rules import validate
from kernel_evidence.schema import load_schema

T0 = "2026-11-22T00:00:00Z"
SCHEMA = jsonschema.Draft202012Validator(load_schema())
ADAPTER = get_adapter("rocprof")
ADD = "void addition_kernel<float>(float*, float const*, float const*, int, int)"
DIV = "divide_kernel(float*, float const*, float const*, int, int)"


def read(*paths: Any, **extra: Any) -> tuple[list[EvidencePacket], list[str]]:
    res = ADAPTER.read([str(p) for p in paths], AdapterOptions(created_at=T0, extra=extra))
    for p in res.packets:
        data = json.loads(p.to_json())
        SCHEMA.validate(data)
        again = EvidencePacket.model_validate(data)
        assert again.packet_id == p.packet_id == again.compute_id()
        partial = {"KE101"} | ({"KE801"} if p.hardware is None else set())
        assert {f.rule_id for f in validate(p).findings if f.severity == "error"} <= partial
        cap = p.profiler[0]
        assert all(len(col) == len(cap.kernels or ()) for col in (cap.raw_columns or {}).values())
    return res.packets, res.warnings


def test_small_database(tmp_path: Path) -> None:
    (p,), warnings = read(small(tmp_path / "4242_results.db"))
    assert warnings == []
    cap = p.profiler[0]
    assert (cap.tool, cap.version) == ("rocprofv3", "rocpd schema 3")
    got = [(k.name, k.device, k.invocations, k.metrics["duration"].value, k.id) for k in cap.kernels]
    assert got == [(ADD, 0, 3, 11400.0, "0/1"), (DIV, 0, 1, 11200.0, "0/2"), (ADD, 3, 1, 10000.0, "3/1")]
    add0, div, _ = cap.kernels
    assert add0.raw_name == "_Z15addition_kernelIfEvPT_PKS0_S3_ii"
    assert add0.metrics["grid_size"].value == 1048576 and add0.grid == [1024, 1024, 1]
    assert (
        div.metrics["registers_per_thread"].value == 12
        and div.metrics["shared_memory_per_block"].value == 1024
    )
    raw = cap.raw_columns
    assert raw["accum_vgpr_count"] == [0.0, 4.0, 0.0]
    assert raw["SQ_WAVES"] == ["16384.0 16385.0 16386.0", 16384.0, 16384.0]
    assert raw["duration_sum_ns"][0] == 12800 + 11400 + 9840
    assert raw["start"][0] == "3719662416752501 3719662416792501 3719662416812501"
    hw = p.hardware
    assert (hw.device, hw.arch, hw.count, hw.compute_units, hw.partitions, hw.device_id) == (
        "AMD Instinct MI300X", "gfx942", 2, 304, 8, "amd-mi300x",
    )  # fmt: skip
    a = cap.attributes
    assert (a["format"], a["pid"], a["gpus_listed"], a["devices_used"], a["counters"]) == (
        "rocpd",
        4242,
        8,
        "0 3",
        1,
    )
    assert p.subject.name == ADD and p.timing.stats.median == 11400.0 and p.timing.stats.n == 3
    assert (
        cap.source.media_type == "application/vnd.sqlite3"
        and cap.source.size.value == (tmp_path / "4242_results.db").stat().st_size
    )


def test_environment_and_command_never_reach_the_packet(tmp_path: Path) -> None:
    (p,), warnings = read(small(tmp_path / "s.db"))
    assert SECRET not in p.to_json().decode() and not any(SECRET in w for w in warnings)


def test_suffixed_tables_without_views(tmp_path: Path) -> None:
    (with_views,), _ = read(small(tmp_path / "a.db"))
    (bare,), _ = read(small(tmp_path / "b.db", views=False))
    assert bare.profiler[0].kernels == with_views.profiler[0].kernels
    assert bare.profiler[0].raw_columns == with_views.profiler[0].raw_columns


def test_found_in_a_folder_and_by_content(tmp_path: Path) -> None:
    small(tmp_path / "4242_results.db")
    packets, _ = read(tmp_path)
    assert len(packets) == 1
    other = small(tmp_path / "renamed.bin")
    (p,), _ = read(other)
    assert p.profiler[0].attributes["format"] == "rocpd"


def test_opened_read_only(tmp_path: Path) -> None:
    f = small(tmp_path / "ro.db")
    f.chmod(0o444)
    before = sorted(x.name for x in tmp_path.iterdir())
    read(f)
    assert sorted(x.name for x in tmp_path.iterdir()) == before  # no journal or -wal beside it


# --------------------------------------------------------------------------- damaged databases


def test_truncated_database(tmp_path: Path) -> None:
    f = small(tmp_path / "full.db")
    cut = tmp_path / "cut.db"
    cut.write_bytes(f.read_bytes()[:8192])
    with pytest.raises(KernelEvidenceError) as err:
        read(cut)
    msg = str(err.value)
    assert msg.startswith(str(cut)) and "\n" not in msg


def test_not_a_database(tmp_path: Path) -> None:
    f = tmp_path / "x.db"
    f.write_bytes(b"SQLite format 3\x00" + bytes(100))
    with pytest.raises(InputError) as err:
        read(f)
    assert str(err.value).startswith(f"{f}: not a readable SQLite database (")


def test_missing_dispatch_table(tmp_path: Path) -> None:
    f = tmp_path / "nodisp.db"
    conn = sqlite3.connect(f)
    conn.execute("CREATE TABLE rocpd_metadata (id INTEGER, tag TEXT, value TEXT)")
    conn.close()
    with pytest.raises(InputError) as err:
        read(f)
    assert str(err.value) == (
        f"{f}: no rocpd_kernel_dispatch table; expected a rocpd database (rocprofv3 --output-format rocpd) with a kernel trace"
    )
    plain = tmp_path / "other.db"
    sqlite3.connect(plain).execute("CREATE TABLE t (x INTEGER)").connection.close()
    with pytest.raises(
        InputError, match=r"no rocpd_kernel_dispatch table \(no rocpd tables at all: not a rocpd database\)"
    ):
        read(plain)


def test_missing_column(tmp_path: Path) -> None:
    f = small(tmp_path / "nocol.db")
    conn = sqlite3.connect(f)
    conn.execute("DROP VIEW rocpd_kernel_dispatch")
    conn.execute(f'ALTER TABLE rocpd_kernel_dispatch{UUID} DROP COLUMN "end"')
    conn.commit()
    conn.close()
    with pytest.raises(InputError) as err:
        read(f)
    assert str(err.value) == (
        f"{f}:table rocpd_kernel_dispatch{UUID}: has no column end; expected the rocpd schema's rocpd_kernel_dispatch"
    )


def test_wrong_column_type(tmp_path: Path) -> None:
    f = small(tmp_path / "typed.db")
    conn = sqlite3.connect(f)
    conn.execute(f"UPDATE rocpd_kernel_dispatch{UUID} SET start = 'later' WHERE dispatch_id = 3")
    conn.commit()
    conn.close()
    with pytest.raises(InputError) as err:
        read(f)
    assert (
        str(err.value)
        == f"{f}:table rocpd_kernel_dispatch, row 3: column `start` holds str 'later'; expected an integer"
    )


def test_empty_dispatch_table(tmp_path: Path) -> None:
    f = build_rocpd(tmp_path / "empty.db", [Kernel("k", "k()")], [])
    with pytest.raises(InputError) as err:
        read(f)
    assert str(err.value) == (
        f"{f}:table rocpd_kernel_dispatch: is empty: no kernel dispatches; expected a rocpd database "
        "(rocprofv3 --output-format rocpd) with a kernel trace"
    )


def test_nsys_export_is_sent_to_nsys(tmp_path: Path) -> None:
    from _nsys import build_export

    f = build_export(tmp_path / "report.sqlite")
    with pytest.raises(
        InputError,
        match=r"an Nsight Systems export, not a rocpd database: read it with `kevidence ingest nsys`",
    ):
        read(f)


def test_directory_named_like_a_database(tmp_path: Path) -> None:
    d = tmp_path / "x.db"
    d.mkdir()
    with pytest.raises(AdapterError):
        read(d)


def test_dispatch_of_unknown_agent_and_symbol(tmp_path: Path) -> None:
    f = small(tmp_path / "odd.db")
    conn = sqlite3.connect(f)
    conn.execute(f"UPDATE rocpd_kernel_dispatch{UUID} SET agent_id = 77, kernel_id = 9 WHERE dispatch_id = 5")
    conn.commit()
    conn.close()
    (p,), _ = read(f)
    names = [(k.name, k.device) for k in p.profiler[0].kernels]
    assert names == [("kernel 9", None), (ADD, 0), (DIV, 0)]
    w = p.profiler[0].warnings
    assert any("1 dispatch(es) name no agent of rocpd_info_agent" in x for x in w)
    assert any("kernel id(s) 9 not in rocpd_info_kernel_symbol" in x for x in w)
    assert p.hardware.count == 1


def test_guid_separates_runs(tmp_path: Path) -> None:
    """Rows join on id and guid: a second run's rows with the same ids are not mixed in."""
    f = small(tmp_path / "two.db")
    conn = sqlite3.connect(f)
    conn.execute(
        f"INSERT INTO rocpd_kernel_dispatch{UUID} (guid, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, "
        'start, "end", workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z) '
        "VALUES ('other-guid', 1, 1, 1, 2, 1, 1, 1, 1, 100, 200, 1, 1, 1, 1, 1, 1)"
    )
    conn.commit()
    conn.close()
    packets, _ = read(f)
    assert len(packets) == 2  # one per (guid, process)
    main = next(p for p in packets if p.profiler[0].attributes.get("pid") == 4242)
    assert [k.invocations for k in main.profiler[0].kernels] == [3, 1, 1]
    stray = next(p for p in packets if p is not main)
    assert stray.profiler[0].kernels[0].name == "kernel 1" and stray.hardware is None


def test_large_database_side_file(tmp_path: Path) -> None:
    from kernel_evidence.rawtable import raw_columns_of, read_raw_table

    ds = [Dispatch(i + 1, i % 2, 0, 10_000 * i + 1, 10_000 * i + 5000 + i) for i in range(200)]
    f = build_rocpd(tmp_path / "big.db", [Kernel("a", "a()"), Kernel("b", "b()")], ds)
    side = tmp_path / "side"
    side.mkdir()
    res = ADAPTER.read(
        [str(f)],
        AdapterOptions(created_at=T0, side_dir=str(side), side_base=str(tmp_path), inline_max_cells=8),
    )
    cap = res.packets[0].profiler[0]
    assert cap.raw_table is not None and cap.raw_columns is None
    inline = ADAPTER.read([str(f)], AdapterOptions(created_at=T0)).packets[0].profiler[0]
    assert raw_columns_of(read_raw_table(cap, tmp_path))[0] == inline.raw_columns
    assert [k.invocations for k in inline.kernels] == [100, 100]
    assert inline.raw_columns["duration_min_ns"] == [4999.0, 5000.0]


def test_guid_constant_matches_fixture() -> None:
    assert GUID.replace("-", "_") == UUID.lstrip("_")


def test_counter_instances_summed_and_text_values_refused(tmp_path: Path) -> None:
    f = small(tmp_path / "pmc.db")
    conn = sqlite3.connect(f)
    # a second instance of SQ_WAVES for dispatch 2 (event 2), and a NULL value (skipped)
    conn.execute(
        f"INSERT INTO rocpd_pmc_event{UUID} (guid, event_id, pmc_id, value) VALUES (?, 2, 1, 100.0)", (GUID,)
    )
    conn.execute(
        f"INSERT INTO rocpd_pmc_event{UUID} (guid, event_id, pmc_id, value) VALUES (?, 3, 1, NULL)", (GUID,)
    )
    conn.commit()
    (p,), _ = read(f)
    assert p.profiler[0].raw_columns["SQ_WAVES"] == ["16384.0 16385.0 16386.0", 16484.0, 16384.0]
    conn.execute(f"UPDATE rocpd_pmc_event{UUID} SET value = 'many' WHERE event_id = 1")
    conn.commit()
    conn.close()
    with pytest.raises(InputError) as err:
        read(f)
    assert str(err.value) == f"{f}:table rocpd_pmc_event: a counter value is text 'many'; expected a number"


def test_stream_and_process_of_a_record(tmp_path: Path) -> None:
    (p,), _ = read(small(tmp_path / "sp.db"))
    add0, div, add3 = p.profiler[0].kernels
    assert add0.stream is None  # queues 1, 1 and 2: no one stream
    assert (div.stream, add3.stream) == ("1", "3")
    assert {k.process for k in p.profiler[0].kernels} == {"4242"}
