"""Nsight Compute adapter with a side file: a capture with more raw values than
``inline_max_cells`` keeps them in an Arrow IPC file (``raw_table``) instead of inline
(``raw_columns``). The file must hold exactly what ``raw_columns`` would have held, and the
rest of the packet must not change."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from _raw_helpers import without_raw

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.ncu import ADAPTER, read_reports
from kernel_evidence.adapters.ncu import _csv as _ncu_csv
from kernel_evidence.adapters.ncu._common import column_values
from kernel_evidence.errors import KernelEvidenceError
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rawtable import RAW_TABLE_MEDIA_TYPE, raw_columns_of, read_raw_table
from kernel_evidence.rules import validate

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
T0 = "2026-11-22T00:00:00Z"
HAVE_NCU_REPORT = importlib.util.find_spec("ncu_report") is not None

ID_COLUMNS = [
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
    "Block Size", "Grid Size", "Device", "CC",
]  # fmt: skip
KERNELS = ["void gemm<cutlass::half_t, 128, 256, 64>(Params<float, 2>, int, int)", "elementwise_add"]


def _metrics(launches: int) -> list[tuple[str, str, list[str]]]:
    """(name, unit, one cell per launch) of a raw page's metric columns: device attributes
    the same in every launch (hoisted) or not, numbers, thousands separators, a column
    mixing numbers and text, NaN/infinity text, instanced values, an empty column, NVTX."""
    n = range(launches)
    return [
        ("device__attribute_display_name", "", ["NVIDIA H100 80GB HBM3"] * launches),
        ("device__attribute_multiprocessor_count", "", ["132"] * launches),
        ("device__attribute_compute_capability_major", "", ["9"] * launches),
        ("device__attribute_compute_capability_minor", "", ["0"] * launches),
        ("device__attribute_clock_rate", "", ["1980000" if i % 3 else "1755000" for i in n]),
        ("device__attribute_total_memory", "byte", ["85520809984"] * launches),
        # empty in the first launch, or in one launch: not the same in every launch
        ("device__attribute_max_registers_per_block", "", ["" if i == 0 else "65536" for i in n]),
        ("device__attribute_l2_cache_size", "", ["" if i == launches // 2 else "52428800" for i in n]),
        # 0 and -0 are equal numbers: the same in every launch
        ("device__attribute_zero", "", ["-0" if i % 2 else "0" for i in n]),
        ("gpu__time_duration.sum", "nsecond", [f"{1000 + 7.25 * i}" for i in n]),
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", [f"{(13 * i) % 100}.25" for i in n]),
        ("dram__bytes.sum", "byte", [f"{i + 1},{i % 10}{i % 7}5,{100 + i}" for i in n]),
        ("sm__cycles_elapsed.avg.per_second", "cycle/nsecond", ["1.75"] * launches),
        ("launch__grid_size", "", [str(i % 4 + 1) for i in n]),
        ("launch__block_size", "", ["128"] * launches),
        ("launch__registers_per_thread", "register/thread", [str(32 + i % 3) for i in n]),
        # numbers, with text and n/a in some launches (also outside the sampled rows)
        (
            "smsp__inst_executed.sum",
            "inst",
            ["abc" if i % 5 == 3 else "n/a" if i % 7 == 4 else str(i) for i in n],
        ),
        ("l1tex__t_bytes.sum", "byte", ["nan" if i == 2 else "-inf" if i == 6 else f"{i}.5" for i in n]),
        ("smsp__pcsamp_sample_count", "", [f"({i};1;2)" for i in n]),
        ("profiler__replayer_passes", "", [""] * launches),
        ("thread Domain:Push/Pop_Range:PL_Type:PL_Value", "", [f"step{i % 2}" for i in n]),
    ]


def write_raw_page(
    path: Path, launches: int = 24, *, noise: bool = False, without_id: int | None = None, tables: int = 1
) -> Path:
    """An ``ncu --csv --page raw`` log: profiler lines, header, units row, one row per
    launch. ``noise``: program output inside the table (the tolerant reader's path);
    ``without_id``: that row has no launch ID (skipped); ``tables``: several tables in one
    log (the profiler lines after the first table send it down the tolerant path too)."""
    metrics = _metrics(launches)
    with path.open("w", newline="") as fh:
        for t in range(tables):
            # ncu prints the table once the program has ended: after its own lines
            fh.write(f"==PROF== Connected to process {4242 + t} (/usr/bin/python3)\n")
            fh.write(f"==PROF== Disconnected from process {4242 + t}\n")
            w = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n")
            w.writerow(ID_COLUMNS + [m[0] for m in metrics])
            w.writerow([""] * len(ID_COLUMNS) + [m[1] for m in metrics])
            for i in range(launches):
                if noise and i == launches // 2:
                    fh.write("step 12 loss 0.25\n")
                ids = [
                    "" if i == without_id else str(i), str(4242 + t), "python3", "node-a", KERNELS[i % 2], "1",
                    "7", "(128, 1, 1)", f"({i % 4 + 1}, 16, 1)", "0", "9.0",
                ]  # fmt: skip
                w.writerow(ids + [m[2][i] for m in metrics])
    return path


def write_details_page(path: Path, launches: int = 6) -> Path:
    """An ``ncu --csv`` details page: one row per launch x metric, units scaled per launch
    (``usecond`` or ``msecond``: split columns), text values, and a rule row."""
    header = ID_COLUMNS + ["Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name", "Rule Type", "Rule Description"]  # fmt: skip
    with path.open("w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writerow(header)
        for i in range(launches):
            ids = [str(i), "77", "bench", "h", KERNELS[i % 2], "1", "7", "(64, 1, 1)", f"({i + 1}, 1, 1)", "0", "8.9"]  # fmt: skip
            rows = [
                (
                    "GPU Speed Of Light Throughput",
                    "Duration",
                    "msecond" if i % 3 == 0 else "usecond",
                    f"{i + 1}.5",
                ),
                ("GPU Speed Of Light Throughput", "Memory Throughput", "%", f"{10 * i}.25"),
                ("GPU Speed Of Light Throughput", "DRAM Throughput", "%", "n/a" if i == 1 else f"{i}"),
                ("Launch Statistics", "Function Cache Configuration", "", "CachePreferNone"),
                (
                    "Launch Statistics",
                    "Registers Per Thread",
                    "register/thread",
                    "x" if i == 4 else f"{32 + i}",
                ),
                ("Launch Statistics", "Grid Size", "", f"{i + 1}"),
            ]
            for section, name, unit, value in rows:
                w.writerow(ids + [section, name, unit, value, "", "", ""])
            w.writerow(ids + ["SpeedOfLight", "", "", "", "SOLBottleneck", "OPT", f"Launch {i} is small."])
    return path


def read(path: Path | str, options: AdapterOptions) -> list[EvidencePacket]:
    return ADAPTER.read([str(path)], options).packets


def side_options(side: Path, inline_max_cells: int) -> AdapterOptions:
    return AdapterOptions(
        created_at=T0, side_dir=str(side), side_base=str(side), inline_max_cells=inline_max_cells
    )


def assert_same_raw(inline: EvidencePacket, side: EvidencePacket, side_dir: Path) -> None:
    """``side`` holds its raw values in a side file that gives back exactly ``inline``'s
    ``raw_columns`` and ``raw_units``; everything else in the packets is the same."""
    want = inline.profiler[0]  # type: ignore[index]
    cap = side.profiler[0]  # type: ignore[index]
    assert want.raw_table is None and want.raw_columns
    assert cap.raw_columns is None
    ref = cap.raw_table
    assert ref is not None and ref.media_type == RAW_TABLE_MEDIA_TYPE and ref.sha256
    assert ref.path is not None and not Path(ref.path).is_absolute()  # relative to side_base
    assert (side_dir / ref.path).is_file()
    columns, units = raw_columns_of(read_raw_table(cap, side_dir))
    assert list(columns) == list(want.raw_columns)  # same names, same order
    assert columns == want.raw_columns
    assert units == (want.raw_units or {}) == (cap.raw_units or {})
    assert without_raw(side) == without_raw(inline)
    # a valid packet whose id covers the side file through its digest
    assert side.packet_id is not None and side.packet_id != inline.packet_id
    again = EvidencePacket.model_validate(side.to_dict())
    assert again.compute_id() == side.packet_id
    codes = {f.rule_id for f in validate(side).findings}
    assert not codes & {"KE001", "KE901", "KE902"}, codes


def test_raw_page_goes_to_a_side_file(tmp_path: Path) -> None:
    src = write_raw_page(tmp_path / "run.csv", without_id=5)
    (inline,) = read(src, AdapterOptions(created_at=T0))
    side_dir = tmp_path / "side"
    options = side_options(side_dir, 10)
    (side,) = read(src, options)
    assert_same_raw(inline, side, side_dir)
    cap = side.profiler[0]  # type: ignore[index]
    assert len(cap.kernels or []) == 23  # the row without a launch ID is skipped in both
    ref = cap.raw_table
    assert ref is not None and ref.name is not None and ref.name.startswith("run.csv.raw-")
    assert options.side_files == [str(side_dir / ref.name)]
    assert sorted(p.name for p in side_dir.iterdir()) == [ref.name]
    # device attributes the same in every launch are attributes, not columns, in both
    assert cap.attributes is not None and cap.attributes["device__attribute_multiprocessor_count"] == 132.0
    assert cap.attributes["device__attribute_zero"] == 0.0
    table = read_raw_table(cap, side_dir)
    assert "device__attribute_multiprocessor_count" not in table.column_names
    assert "device__attribute_l2_cache_size" in table.column_names
    assert "device__attribute_max_registers_per_block" in table.column_names
    # numbers as float64, text as string, numbers mixed with text as JSON cells
    types = {f.name: (str(f.type), (f.metadata or {}).get(b"kevidence.cells")) for f in table.schema}
    assert types["gpu__time_duration.sum"] == ("double", None)
    assert types["dram__bytes.sum"] == ("double", None)  # thousands separators
    assert types["device__attribute_clock_rate"] == ("double", None)  # differs between launches
    assert types["profiler__replayer_passes"] == ("double", None)  # empty in every launch
    assert types["smsp__pcsamp_sample_count"] == ("string", None)
    assert types["smsp__inst_executed.sum"] == ("string", b"json")
    assert types["l1tex__t_bytes.sum"] == ("string", b"json")  # nan and -inf stay text
    mixed = table.column("smsp__inst_executed.sum").to_pylist()
    assert mixed[:5] == ["0.0", "1.0", "2.0", '"abc"', None]
    columns, _units = raw_columns_of(table)
    assert columns["smsp__inst_executed.sum"][:5] == [0.0, 1.0, 2.0, "abc", None]
    assert columns["l1tex__t_bytes.sum"][2] == "nan" and columns["l1tex__t_bytes.sum"][5] == "-inf"
    assert (cap.raw_units or {})["gpu__time_duration.sum"] == "nsecond"
    assert table.schema.field("gpu__time_duration.sum").metadata[b"unit"] == b"nsecond"


@pytest.mark.parametrize("threshold", [0, 10**9])
def test_options_that_decline_or_insist_are_obeyed(tmp_path: Path, threshold: int) -> None:
    """``AdapterOptions.raw_table`` decides: a subclass that keeps the values inline after the
    adapter started a side file for them (threshold 0) gets the inline packet, and one that
    writes a file below the threshold (10**9) gets the side-file packet."""
    from kernel_evidence.rawtable import write_raw_table

    src = write_raw_page(tmp_path / "run.csv", without_id=5)
    (inline,) = read(src, AdapterOptions(created_at=T0))
    asked: list[int] = []

    class Declines(AdapterOptions):
        def raw_table(self, columns: Any, units: Any, rows: int, stem: str) -> Any:
            asked.append(rows)
            return None

    class Insists(AdapterOptions):
        def raw_table(self, columns: Any, units: Any, rows: int, stem: str) -> Any:
            asked.append(rows)
            return write_raw_table(
                columns, units, rows, self.side_dir or ".", stem, relative_to=self.side_base
            )

    side = tmp_path / "side"
    kw: dict[str, Any] = {"created_at": T0, "side_dir": str(side), "side_base": str(side)}
    (declined,) = read(src, Declines(**kw, inline_max_cells=threshold))
    assert declined == inline and asked == [23]
    (written,) = read(src, Insists(**kw, inline_max_cells=threshold))
    assert asked == [23, 23]
    assert_same_raw(inline, written, side)


def test_raw_page_for_a_side_file_keeps_number_columns_as_arrow(tmp_path: Path) -> None:
    # the parsed float64 columns are not made Python floats when they go to a side file;
    # each stands for exactly the list the inline reader makes
    src = write_raw_page(tmp_path / "run.csv", without_id=3)
    (arrow,), _ = read_reports(str(src), arrow=True)
    (lists,), _ = read_reports(str(src))
    columns, want = arrow.table()[0], lists.table()[0]
    assert list(columns) == list(want)
    assert isinstance(columns["gpu__time_duration.sum"], (pa.Array, pa.ChunkedArray))
    assert isinstance(columns["dram__bytes.sum"], (pa.Array, pa.ChunkedArray))  # "1,234,567"
    assert isinstance(columns["smsp__inst_executed.sum"], list)  # numbers and text
    assert isinstance(columns["Host Name"], list)
    assert all(isinstance(v, list) for v in want.values())
    assert {k: column_values(v) for k, v in columns.items()} == want
    assert arrow.units == lists.units and arrow.warnings == lists.warnings


def test_raw_page_read_by_the_tolerant_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # program output inside the table: the csv-module path, whose columns are lists
    src = write_raw_page(tmp_path / "noisy.log", noise=True)
    calls: list[int] = []
    slow = _ncu_csv._columns_slow

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return slow(*args, **kwargs)

    monkeypatch.setattr(_ncu_csv, "_columns_slow", spy)
    (inline,) = read(src, AdapterOptions(created_at=T0))
    (side,) = read(src, side_options(tmp_path / "side", 10))
    assert len(calls) == 2
    assert_same_raw(inline, side, tmp_path / "side")


def test_details_page_goes_to_a_side_file(tmp_path: Path) -> None:
    src = write_details_page(tmp_path / "details.csv")
    (inline,) = read(src, AdapterOptions(created_at=T0))
    want = inline.profiler[0].raw_columns  # type: ignore[index]
    assert want is not None and "Duration [msecond]" in want  # units scaled per launch: split
    assert "Registers Per Thread" in want and "x" in want["Registers Per Thread"]
    (side,) = read(src, side_options(tmp_path / "side", 10))
    assert_same_raw(inline, side, tmp_path / "side")
    table = read_raw_table(side.profiler[0], tmp_path / "side")  # type: ignore[index]
    assert table.schema.field("Duration [msecond]").metadata[b"unit"] == b"msecond"
    assert table.schema.field("Registers Per Thread").metadata[b"kevidence.cells"] == b"json"


def test_several_tables_in_one_log_give_one_side_file_each(tmp_path: Path) -> None:
    src = write_raw_page(tmp_path / "two.log", launches=8, tables=2)
    inline = read(src, AdapterOptions(created_at=T0))
    options = side_options(tmp_path / "side", 10)
    side = read(src, options)
    assert len(inline) == len(side) == 2
    for a, b in zip(inline, side, strict=True):
        assert_same_raw(a, b, tmp_path / "side")
    names = [p.profiler[0].raw_table.name for p in side]  # type: ignore[index,union-attr]
    assert [n.split(".raw-")[0] for n in names] == ["two.log-1", "two.log-2"]  # type: ignore[union-attr]
    assert len(options.side_files) == 2


def test_the_threshold_is_rows_times_columns(tmp_path: Path) -> None:
    src = write_raw_page(tmp_path / "run.csv", launches=10)
    (inline,) = read(src, AdapterOptions(created_at=T0))
    cap = inline.profiler[0]  # type: ignore[index]
    cells = len(cap.kernels or []) * len(cap.raw_columns or {})
    # one value more than allowed: a side file
    (side,) = read(src, side_options(tmp_path / "side", cells - 1))
    assert_same_raw(inline, side, tmp_path / "side")
    # exactly as many as allowed: inline, the very same packet as without side_dir
    options = side_options(tmp_path / "inline", cells)
    (same,) = read(src, options)
    assert same.to_dict() == inline.to_dict()
    assert options.side_files == [] and not (tmp_path / "inline").exists()


@pytest.mark.parametrize(
    "name",
    sorted(
        p.name
        for p in FIX.iterdir()
        if p.name.startswith(("raw_", "details_", "summary_per_kernel", "text_"))
    ),
)
def test_every_fixture_gives_the_same_values_from_a_side_file(tmp_path: Path, name: str) -> None:
    inline = read(FIX / name, AdapterOptions(created_at=T0))
    side = read(FIX / name, side_options(tmp_path, 0))
    assert len(inline) == len(side) >= 1
    for a, b in zip(inline, side, strict=True):
        assert_same_raw(a, b, tmp_path)


def test_corpus_gives_the_same_values_from_a_side_file(corpus: Path, tmp_path: Path) -> None:
    files = [f for f in sorted((corpus / "ncu").iterdir()) if f.suffix not in (".md", ".tsv")]
    assert files
    compared = 0
    for f in files:
        side_dir = tmp_path / f.name
        options = side_options(side_dir, 0)
        try:
            inline = read(f, AdapterOptions(created_at=T0))
        except KernelEvidenceError as exc:
            # refused alike, and nothing is left behind
            with pytest.raises(type(exc)) as again:
                read(f, options)
            assert str(again.value) == str(exc)
            assert options.side_files == [] and not side_dir.exists()
            continue
        side = read(f, options)
        assert len(inline) == len(side)
        for a, b in zip(inline, side, strict=True):
            assert_same_raw(a, b, side_dir)
            compared += 1
    assert compared >= (6 if HAVE_NCU_REPORT else 4)


@pytest.mark.parametrize("width", [8, 3000])  # short lines (the regex) and long ones (find)
@pytest.mark.parametrize("brk", [None, 0, 100, 255, 256, 257, 599, "end"])
def test_lines_quoted_agrees_with_the_regex(width: int, brk: int | str | None) -> None:
    # the clean-table check jumps from newline to newline on long lines: same answer as the
    # regex it replaces, wherever a line that does not start with a quote is
    lines = [b'"' + b"x" * width + b'"' for _ in range(600)]
    if isinstance(brk, int):
        lines[brk] = b"program output"
    data = b"header\n" + b"\n".join(lines) + (b"\n" if brk == "end" else b"")
    begin = data.find(b"\n")
    want = _ncu_csv._CLEAN_QUOTED_BREAK.search(data, begin, len(data)) is None
    assert _ncu_csv._lines_quoted(data, begin, len(data)) is want
    assert want is (brk is None or brk == "end")  # a newline that ends the data is no break


def test_a_clean_raw_page_is_not_scanned_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table whose every row parsed with a launch ID is clean: the line scan is skipped."""
    src = write_raw_page(tmp_path / "one.csv", launches=8)
    calls: list[int] = []
    real = _ncu_csv._lines_quoted

    def spy(*args: Any) -> bool:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(_ncu_csv, "_lines_quoted", spy)
    reports, _ = read_reports(str(src))
    assert len(reports) == 1 and len(reports[0].launches) == 8
    assert calls == []


def test_a_second_table_right_after_the_first_is_still_found(tmp_path: Path) -> None:
    """Two tables back to back (no profiler line between them): the second header parses as
    a row of the same width, with `ID` where a launch ID should be: not taken for a launch."""
    one = write_raw_page(tmp_path / "a.csv", launches=5).read_text().splitlines(keepends=True)
    table = [line for line in one if not line.startswith("==")]
    both = tmp_path / "both.csv"
    both.write_text("".join(one) + "".join(table).replace('"4242"', '"4343"'))
    reports, _ = read_reports(str(both))
    assert [len(r.launches) for r in reports] == [5, 5]
    assert {la.pid for la in reports[1].launches} == {"4343"}
