"""rocprof adapter: raw metrics in an Arrow IPC side file (``ProfilerCapture.raw_table``).

With ``AdapterOptions.side_dir`` and more than ``inline_max_cells`` raw values, a capture
keeps its raw columns in a side file instead of ``raw_columns``. The file must hold exactly
what ``raw_columns`` holds when the same input is read without a side directory (names,
order, values, numbers vs text), and the rest of the packet must not change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from _raw_helpers import without_raw

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters import rocprof as rocprof_module
from kernel_evidence.adapters.rocprof import ADAPTER, _discover
from kernel_evidence.errors import AdapterError, InputError
from kernel_evidence.models import Artifact, EvidencePacket
from kernel_evidence.rawtable import RAW_TABLE_MEDIA_TYPE, raw_columns_of, read_raw_table
from kernel_evidence.rules import validate

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "rocprof"
T0 = "2026-11-22T00:00:00Z"

_BIG = 2**60  # an integer a float would round: kept as its text
_SYSINFO = {
    "workload_name": "mixed", "command": "./mixed -n 4", "version": "2", "rocm_version": "6.2.0",
    "gpu_model": "MI200", "gpu_arch": "gfx90a", "cu_per_gpu": "104", "max_waves_per_cu": "32",
    "max_sclk": "1700", "max_mclk": "1600", "cur_sclk": "1700", "cur_mclk": "1600", "hbm_bw": "1638.4",
    "num_xcd": "1", "total_l2_chan": "16", "lds_banks_per_cu": "32",
}  # fmt: skip


def _workload(folder: Path) -> Path:
    """A small Omniperf 2.x-style workload whose raw columns hold every kind of cell: integer
    counters, floats, an infinite value (text inline, a JSON cell in the side file), an
    integer beyond 2**53 (the column as text), booleans, text with empty cells, an all-empty column,
    nanosecond timestamps (text) and a level pass (``SQ_LEVEL_WAVES.*``)."""
    folder.mkdir(parents=True, exist_ok=True)
    header = (
        "Dispatch_ID,GPU_ID,Queue_ID,PID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Arch_VGPR,SGPR,"
        "Kernel_Name,GRBM_GUI_ACTIVE,GRBM_COUNT,SQ_WAVES,SQ_INSTS_VALU,SQ_ACTIVE_INST_VALU,"
        "SQ_BUSY_CYCLES,TCC_HIT_sum,TCC_MISS_sum,TCC_EA_RDREQ_sum,TCC_EA_RDREQ_32B_sum,"
        "TCC_EA_WRREQ_sum,TCC_EA_WRREQ_64B_sum,Ratio,Scale,Big,Flag,Note,Empty,"
        "Start_Timestamp,End_Timestamp"
    )
    rows = [
        f'0,2,1,4242,65536,256,4096,32,24,"gemm_tile(float const*, float*) [clone .kd]",80000,80100,'
        f"1024,50000,40000,70000,300,100,2000,100,1000,500,0.5,-0.0,{_BIG},true,first,,"
        "1411551767635712,1411551767645712",
        '1,2,1,4242,1024,64,0,8,16,"fill_buffer(float*, float) [clone .kd]",20000,20010,'
        "16,1000,900,15000,10,10,40,0,80,80,inf,1.25,7,false,,,"
        "1411551767655712,1411551767656712",
        '2,2,2,4242,65536,256,4096,32,24,"gemm_tile(float const*, float*) [clone .kd]",240000,'
        '240100,1024,0,0,200000,0,0,0,0,0,0,,2.5,-3,,"a, quoted",,'
        "1411551767665712,1411551767695712",
        '3,2,2,4242,65536,256,4096,32,24,"gemm_tile(float const*, float*) [clone .kd]",90000,'
        "90100,1024,60000,50000,80000,400,50,2500,120,900,450,1e300,3,12,true,last,,"
        "1411551767705712,1411551767715712",
    ]
    (folder / "pmc_perf.csv").write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    (folder / "SQ_LEVEL_WAVES.csv").write_text(
        "Dispatch_ID,GPU_ID,Kernel_Name,GRBM_GUI_ACTIVE,SQ_LEVEL_WAVES,SQ_ACCUM_PREV_HIRES\n"
        '3,2,"gemm_tile(float const*, float*) [clone .kd]",90000,0,4096000\n'
        '0,2,"gemm_tile(float const*, float*) [clone .kd]",80000,0,40960000\n'
        '2,2,"gemm_tile(float const*, float*) [clone .kd]",240000,0,0\n'
    )
    (folder / "sysinfo.csv").write_text(",".join(_SYSINFO) + "\n" + ",".join(_SYSINFO.values()) + "\n")
    return folder


def _read(path: Path, options: AdapterOptions) -> list[EvidencePacket]:
    packets = ADAPTER.read([str(path)], options).packets
    for p in packets:
        EvidencePacket.model_validate(p.to_dict())  # built without validation: must validate
        assert p.packet_id == p.compute_id()
    return packets


def _side_options(tmp_path: Path, limit: int = 0) -> AdapterOptions:
    return AdapterOptions(
        created_at=T0, side_dir=str(tmp_path / "side"), side_base=str(tmp_path), inline_max_cells=limit
    )


def _check_same(
    inline: list[EvidencePacket], side: list[EvidencePacket], base: Path, options: AdapterOptions
) -> int:
    """Every side-file packet holds what the inline one does; returns how many side files."""
    assert len(side) == len(inline)
    files = 0
    for a, b in zip(inline, side, strict=True):
        assert without_raw(b) == without_raw(a)  # records, summary, warnings... unchanged
        for ca, cb in zip(a.profiler or [], b.profiler or [], strict=True):
            if not ca.raw_columns:
                assert cb.raw_table is None and cb.raw_columns == ca.raw_columns
                continue
            assert cb.raw_columns is None, "raw values both inline and in a side file"
            ref = cb.raw_table
            assert ref is not None and ref.media_type == RAW_TABLE_MEDIA_TYPE and ref.sha256
            assert ref.path is not None and not Path(ref.path).is_absolute()  # relative to side_base
            assert str(Path(options.side_dir or "") / (ref.name or "")) in options.side_files
            columns, units = raw_columns_of(read_raw_table(cb, base))
            assert list(columns) == list(ca.raw_columns)  # same names, same order
            assert columns == ca.raw_columns  # same values, row for row
            assert units == (ca.raw_units or {})
            files += 1
        assert not [f for f in validate(b).findings if f.rule_id in ("KE901", "KE902")]
    return files


def test_side_file_holds_exactly_the_inline_raw_columns(tmp_path: Path) -> None:
    wl = _workload(tmp_path / "mixed")
    (inline,) = _read(wl, AdapterOptions(created_at=T0))
    options = _side_options(tmp_path, limit=1)
    (side,) = _read(wl, options)
    assert _check_same([inline], [side], tmp_path, options) == 1
    raw = inline.profiler[0].raw_columns  # type: ignore[index]
    assert raw is not None
    # the kinds of cell the side file must carry, as the inline packet holds them
    assert raw["Big"] == [str(_BIG), "7", "-3", "12"]  # the whole column as text
    assert raw["Ratio"] == [0.5, "inf", None, 1e300]
    assert raw["Flag"] == ["true", "false", None, "true"]
    assert raw["Empty"] == [None] * 4
    assert raw["Start_Timestamp"][0] == "1411551767635712"
    assert raw["SQ_LEVEL_WAVES.SQ_ACCUM_PREV_HIRES"] == [40960000.0, None, 0.0, 4096000.0]
    # and the Arrow types they have there
    cap = side.profiler[0]  # type: ignore[index]
    assert cap.raw_table is not None and (cap.raw_table.name or "").startswith(
        "mixed.raw-"
    )  # the input's name
    assert cap.raw_table.path == f"side/{cap.raw_table.name}"  # relative to side_base
    table = read_raw_table(cap, tmp_path)
    assert table.schema.field("SQ_WAVES").type == pa.float64()
    assert table.schema.field("Kernel_Name").type == pa.string()
    assert table.schema.field("Big").type == pa.string()
    ratio = table.schema.field("Ratio")
    assert (ratio.metadata or {}).get(b"kevidence.cells") == b"json"  # numbers and text mixed
    assert [None if v is None else json.loads(v) for v in table["Ratio"].to_pylist()] == raw["Ratio"]
    assert table.num_rows == len(cap.kernels or ())


def test_the_threshold_counts_raw_values(tmp_path: Path) -> None:
    """Up to ``inline_max_cells`` raw values stay inline (the packet is the one read without
    a side directory); one value more and they go to the side file."""
    wl = _workload(tmp_path / "mixed")
    (inline,) = _read(wl, AdapterOptions(created_at=T0))
    raw = inline.profiler[0].raw_columns  # type: ignore[index]
    assert raw is not None
    cells = sum(len(col) for col in raw.values())
    at = _side_options(tmp_path / "at", limit=cells)
    (p,) = _read(wl, at)
    assert p.packet_id == inline.packet_id  # the same packet, byte for byte
    assert at.side_files == [] and not (tmp_path / "at" / "side").exists()
    below = _side_options(tmp_path / "below", limit=cells - 1)
    (q,) = _read(wl, below)
    assert q.profiler[0].raw_table is not None and len(below.side_files) == 1  # type: ignore[index]


def test_packet_id_covers_the_side_file(tmp_path: Path) -> None:
    wl = _workload(tmp_path / "mixed")
    (a,) = _read(wl, _side_options(tmp_path / "a"))
    text = (wl / "pmc_perf.csv").read_text().replace(",1024,50000,", ",1024,50001,")  # one raw counter
    (wl / "pmc_perf.csv").write_text(text)
    (b,) = _read(wl, _side_options(tmp_path / "b"))
    ref_a, ref_b = (p.profiler[0].raw_table for p in (a, b))  # type: ignore[index]
    assert ref_a is not None and ref_b is not None and ref_a.sha256 != ref_b.sha256
    assert a.packet_id != b.packet_id


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in FIX.iterdir() if p.is_dir() and p.name != "malformed"),
)
def test_every_fixture_layout_round_trips(name: str, tmp_path: Path) -> None:
    """Workloads (wide, long), analyze exports, rocprofv3 traces with counters, rocprof v1
    results.csv and per-kernel statistics: every reader that keeps raw columns."""
    inline = _read(FIX / name, AdapterOptions(created_at=T0))
    options = _side_options(tmp_path)
    side = _read(FIX / name, options)
    assert _check_same(inline, side, tmp_path, options) >= 1


def test_the_columns_stay_inline_when_raw_table_declines(tmp_path: Path) -> None:
    """``AdapterOptions.raw_table`` decides: when it keeps the values inline after the adapter
    prepared them for a side file, they are in ``raw_columns`` as without a side directory."""

    class Declines(AdapterOptions):
        def raw_table(self, columns: Any, units: Any, rows: int, stem: str) -> Artifact | None:
            self.extra.setdefault("asked", []).append(rows)
            return None

    wl = _workload(tmp_path / "mixed")
    (inline,) = _read(wl, AdapterOptions(created_at=T0))
    options = Declines(created_at=T0, side_dir=str(tmp_path / "side"), inline_max_cells=0)
    (p,) = _read(wl, options)
    assert options.extra["asked"] == [4]
    assert p.packet_id == inline.packet_id


def test_raw_table_is_asked_even_below_the_adapters_own_estimate(tmp_path: Path) -> None:
    """Options whose ``raw_table`` writes a side file where the default threshold would not:
    the adapter still hands the columns over and references the file."""

    class Always(AdapterOptions):
        def raw_table(self, columns: Any, units: Any, rows: int, stem: str) -> Artifact | None:
            from kernel_evidence.rawtable import write_raw_table

            return write_raw_table(columns, units, rows, self.side_dir or ".", stem)

    wl = _workload(tmp_path / "mixed")
    (inline,) = _read(wl, AdapterOptions(created_at=T0))
    options = Always(created_at=T0, side_dir=str(tmp_path / "side"), inline_max_cells=10**9)
    (p,) = _read(wl, options)
    cap = p.profiler[0]  # type: ignore[index]
    assert cap.raw_columns is None and cap.raw_table is not None
    assert raw_columns_of(read_raw_table(cap))[0] == inline.profiler[0].raw_columns  # type: ignore[index]


def test_large_side_file_packet_objects_are_promoted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the raw values in a side file, a packet of 20,000+ records still holds 10^5 objects:
    they are promoted past the young generations as a packet of as many raw cells is."""
    calls: list[int] = []
    monkeypatch.setattr(rocprof_module, "promote_survivors", lambda: calls.append(1))
    lines = ["Dispatch_ID,Kernel_Name,Grid_Size,Workgroup_Size,Start_Timestamp,End_Timestamp"]
    lines += [f"{i},k,{64 * (1 + i % 3)},64,{1000 * i},{1000 * i + 500 + i % 7}" for i in range(21_000)]
    (tmp_path / "wl").mkdir()
    (tmp_path / "wl" / "pmc_perf.csv").write_text("\n".join(lines) + "\n")
    options = _side_options(tmp_path)
    (p,) = ADAPTER.read([str(tmp_path / "wl")], options).packets
    cap = p.profiler[0]  # type: ignore[index]
    assert cap.raw_table is not None and cap.raw_columns is None
    assert calls == [1]


def _corpus_inputs(root: Path) -> list[Path]:
    """Every folder under the rocprof corpus (as test_rocprof.py reads them), and every file
    below it that the adapter reads on its own as something no folder read covers."""
    inputs = [p for p in sorted(root.iterdir()) if p.is_dir()]
    seen: set[tuple[str, str]] = set()
    for folder in inputs:
        seen.update((j.kind, str(j.path)) for j in _discover(folder))
    for f in sorted(root.rglob("*")):
        if not f.is_file():
            continue
        try:
            jobs = _discover(f)
        except (InputError, AdapterError):
            continue
        keys = {(j.kind, str(j.path)) for j in jobs}
        if keys - seen:
            inputs.append(f)
            seen |= keys
    return inputs


def test_every_corpus_input_round_trips(corpus: Path, tmp_path: Path) -> None:
    inputs = _corpus_inputs(corpus / "rocprof")
    assert inputs
    files = 0
    for i, path in enumerate(inputs):
        inline = _read(path, AdapterOptions(created_at=T0))
        options = _side_options(tmp_path / str(i))
        side = _read(path, options)
        files += _check_same(inline, side, tmp_path / str(i), options)
    assert files >= len([p for p in inputs if p.is_dir()])
