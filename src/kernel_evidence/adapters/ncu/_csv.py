"""Not public: Nsight Compute text exports -> :class:`~._common.Report`.

Handles what ncu writes to a terminal or ``--log-file``: ``--csv`` details page (long, one
row per metric), ``--csv --page raw`` (wide, units row, one row per launch), the default
text page, and ``--print-summary`` tables, with ``==PROF==``/``==WARNING==`` lines and the
program's own output around them. Columns are found by name; rows are split by the
``csv`` module (details) or ``pyarrow.csv`` (raw page body, with the ``csv`` module as the
fallback for ragged rows), never by hand. On the raw page pyarrow also turns the metric
columns that hold numbers into float64 in its own threads; a column that turns out to hold
text is read again as text, so every cell keeps exactly what the tolerant path would give.
When the caller writes the raw columns to a side file (``arrow=True``), those float64
columns stay Arrow arrays instead of becoming millions of Python floats.
"""

from __future__ import annotations

import bisect
import codecs
import csv
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import InputError
from ._common import (
    Column,
    Launch,
    Report,
    column_values,
    decimal_comma_locale,
    locale_evidence,
    parse_count,
    parse_dims,
    parse_value,
)

__all__ = ["read_text"]

#: identification columns of both CSV pages; every other column is a metric (or NVTX)
ID_COLUMNS = frozenset(
    {
        "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Range Name", "Kernel Time",
        "Context", "Stream", "Block Size", "Grid Size", "Device", "CC",
    }
)  # fmt: skip
DETAILS_COLUMNS = frozenset(
    {
        "Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name", "Rule Type",
        "Rule Description", "Estimated Speedup Type", "Estimated Speedup",
    }
)  # fmt: skip
#: id columns kept in ``raw`` as text (the others become KernelRecord fields)
_KEEP_AS_RAW = ("Host Name", "Kernel Time", "Context", "CC")

_PROFILER_LINE = re.compile(r"^==(PROF|WARNING|ERROR|WARN)==")


def _err(path: str, line: int | None, msg: str) -> InputError:
    return InputError(path, f"line {line}" if line else None, msg)


def _last_profiler_error(lines: Sequence[str]) -> tuple[int, str] | None:
    """(line, text) of the last ``==ERROR==`` line (else the last ``==WARNING==`` line); when
    there are several ``==ERROR==`` lines, the text also quotes the first: ncu prints the cause
    first and generic lines after it (``==ERROR== Use --list-sections to see ...``,
    ``==ERROR== An error occurred while trying to profile.``)."""
    last: tuple[int, str] | None = None
    first_error: tuple[int, str] | None = None
    errors = 0
    for i, line in enumerate(lines, 1):
        if (
            line.startswith(("==ERROR==", "==WARNING=="))
            and not line.rstrip().endswith(":")
            and (last is None or line.startswith("==ERROR==") or not last[1].startswith("==ERROR=="))
        ):
            last = (i, line.strip())
            if line.startswith("==ERROR=="):
                errors += 1
                first_error = first_error or last
    if last is not None and first_error is not None and errors > 1:
        first = f"the first of {errors} ==ERROR== lines, line {first_error[0]}: {first_error[1]}"
        return last[0], f"{last[1]} ({first})"
    return last


def read_text(path: str, data: bytes, *, arrow: bool = False) -> list[Report]:
    """Every report found in one ncu text output; raises InputError when there is none.

    ``arrow``: the caller will write the raw columns to a side file, so a raw page read by
    pyarrow keeps its number columns as the float64 Arrow arrays it parsed (see
    :data:`~._common.Column`) instead of making millions of Python floats of them."""
    nul = b"\x00" in data
    damaged = _damaged_lines(data, nul)
    if nul:
        # NUL bytes are removed before parsing (Python 3.10's csv module refuses them; in a
        # name or a unit they are noise): the damage is counted above and warned below
        data = data.replace(b"\x00", b"")
    reports = _read_all(path, data, arrow)
    if len(reports) == 1 and reports[0].page != "summary":
        _note_missing_launches(data, reports[0])
    if damaged:
        _note_damage(reports, damaged)
    return reports


_PROFILING = b'==PROF== Profiling "'
#: ``"name" - 3:`` (2019-2022) or ``"name" - 3 (4/10):`` (2025: the launch's place among
#: those the run profiles)
_PROFILING_ID = re.compile(rb'(.*)" - (\d+)(?: \(\d+/\d+\))?:')


def _note_missing_launches(data: bytes, report: Report) -> None:
    """ncu announces every launch it profiles (``==PROF== Profiling "name" - 3: ...``) on the
    same stream as the page: a page holding fewer launches than the log announced lost the
    others (a file cut off between two launches looks complete otherwise)."""
    announced: set[tuple[bytes, bytes]] = set()
    limit = len(data)
    if report.page in ("raw", "details"):  # ncu prints a CSV table after its profiling lines
        limit = 0
        for _ in range(_start_line(report) - 1):
            limit = data.find(b"\n", limit) + 1
    at = data.find(_PROFILING, 0, limit)
    while at >= 0:
        if at == 0 or data[at - 1] == 0x0A:
            eol = data.find(b"\n", at)
            m = _PROFILING_ID.match(data, at + len(_PROFILING), eol if eol >= 0 else len(data))
            if m is not None:
                announced.add((m[1], m[2]))
        at = data.find(_PROFILING, at + 1, limit)
    if len(announced) > len(report.launches):
        report.warnings.append(
            f"the log announces {len(announced)} profiled kernel launches (`==PROF== Profiling` lines) but "
            f"the {report.page} page holds {len(report.launches)}: the others are missing (the file may be cut off)"
        )


def _valid_utf8(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 (checked in pieces: no copy of a big file as text)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    step = 4 << 20
    try:
        for at in range(0, len(data), step):
            decoder.decode(data[at : at + step])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _damaged_lines(data: bytes, nul: bool) -> list[tuple[int, int]]:
    """(line number, cells) of every line holding NUL bytes (``nul``: the file has some) or
    bytes that are not UTF-8 (cells counted as CSV cells; a line of a text page counts
    once). Two fast checks answer for an undamaged file; only a damaged one is split."""
    invalid = not data.isascii() and not _valid_utf8(data)
    if not nul and not invalid:
        return []
    out = []
    for lno, line in enumerate(data.split(b"\n"), 1):
        bad_bytes = invalid and not line.isascii() and not _valid_utf8(line)
        if not bad_bytes and b"\x00" not in line:
            continue
        # NUL marked by a private-use character: Python 3.10's csv module refuses NUL itself
        text = line.decode("utf-8", errors="replace").rstrip("\r").replace("\x00", "\ue000")
        try:
            cells = next(csv.reader([text]), [text])
        except csv.Error:
            cells = [text]
        n = sum(1 for c in cells if "\ue000" in c or (bad_bytes and "\ufffd" in c))
        out.append((lno, max(n, 1)))
    return out


def _note_damage(reports: list[Report], damaged: list[tuple[int, int]]) -> None:
    """One warning per report for the damaged cells from its first line on (the lines before
    the first table are program output, skipped anyway)."""
    starts = [_start_line(r) for r in reports]
    per_report: dict[int, list[tuple[int, int]]] = {}
    for lno, cells in damaged:
        k = bisect.bisect_right(starts, lno) - 1
        if k >= 0:
            per_report.setdefault(k, []).append((lno, cells))
    for k, hits in per_report.items():
        count = sum(c for _l, c in hits)
        reports[k].warnings.append(
            f"{count} cell(s) held NUL bytes or bytes that are not UTF-8 (first at line {hits[0][0]}): "
            "NUL bytes were removed, other bytes read as U+FFFD; the file is damaged there"
        )


def _start_line(report: Report) -> int:
    loc = report.location or ""
    return int(loc[5:]) if loc.startswith("line ") and loc[5:].isdigit() else 1


def _read_all(path: str, data: bytes, arrow: bool = False) -> list[Report]:
    starts, clean = _header_starts(data)
    if starts:
        # CSV first: the raw page is the only big output, read from bytes without splitting lines
        try:
            return list(_read_csv(path, data, starts, clean, arrow))
        except _NotClean:
            return list(_read_csv(path, data, _all_header_starts(data), None, arrow))
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()
    reports = _read_text_page(path, lines, cut=not data.endswith((b"\n", b"\r")))
    if reports:
        return reports
    last = _last_profiler_error(lines)
    expected = (
        'no Nsight Compute table found (expected a CSV header starting "ID","Process ID", '
        "a text page or a summary)"
    )
    other = _other_page(lines)
    if other is not None:
        raise _err(
            path,
            other[0],
            f"{other[1]}: not supported (supported: the details, raw, text and summary pages); {_EXPORT_HINT}",
        )
    listing = _not_a_report(lines)
    if listing is not None:
        raise _err(path, listing[0], f"{listing[1]}, not an Nsight Compute report; {_EXPECTED_REPORT}")
    if last is not None:
        raise _err(path, last[0], f"{expected}; last profiler error: {last[1]}")
    if any(_PROFILER_LINE.match(line) for line in lines):
        report = next(
            (line[len(_REPORT_LINE) :].strip() for line in lines if line.startswith(_REPORT_LINE)), ""
        )
        raise _err(
            path,
            None,
            f"{expected}; the file holds only profiler status lines"
            + (f" (ncu wrote the results to {report}: read that file)" if report else ""),
        )
    raise _err(path, 1 if lines else None, f"{expected}; this does not look like ncu output")


_EXPORT_HINT = "export launches with `ncu --import R.ncu-rep --csv --page raw` (or `--page details`)"


def _other_page(lines: Sequence[str]) -> tuple[int, str] | None:
    """(line, what it is) when the output is an ncu page without launches: the source page
    (``--page source``: per-instruction SASS/source counters) or the session page (``--page
    session``: launch settings and device attributes only)."""
    for i, line in enumerate(lines[:200], 1):
        head = line.lstrip("\ufeff").strip()
        if not head or head.startswith("=="):
            continue
        cells = {c.strip().strip('"').lstrip("# ") for c in head.split(",")}
        if "Address" in cells and cells & {"Source", "Sass", "SASS"}:
            return i, "an ncu source page (`--page source`: counters per instruction, no launches)"
        if {"Invocations", "Minimum", "Maximum", "Average"} <= cells and "Kernel Name" not in cells:
            return (
                i,
                "an ncu summary CSV without a `Kernel Name` column (`--print-summary per-gpu` or `per-nvtx`)",
            )
        if head in ("Launch Settings", "Session", "Device Attributes"):
            return i, "an ncu session page (`--page session`: settings and device attributes, no launches)"
    return None


_REPORT_LINE = "==PROF== Report: "
_EXPECTED_REPORT = (
    "expected ncu --csv output (`--page raw` or `--page details`), a text page or an .ncu-rep report"
)
#: ``--query-metrics`` rows with a type column (2023+): ``<metric>  Counter|Ratio|Throughput  ...``
_METRIC_LISTING_ROW = re.compile(r"^[a-z0-9]+__\S+\s{2,}(?:Counter|Ratio|Throughput)\s")
_NVPROF_LINE = re.compile(r"^==\d+== (?:NVPROF is profiling|Profiling application:|Profiling result:)")


def _not_a_report(lines: Sequence[str]) -> tuple[int, str] | None:
    """(line, what it is) when the output is not a profiling report: an ncu
    ``--query-metrics`` or ``--list-sections`` listing, nvprof output, or an Nsight Systems
    ``nsys stats`` table."""
    listing_rows = 0
    for i, line in enumerate(lines[:200], 1):
        head = line.lstrip("\ufeff").strip()
        if _NVPROF_LINE.match(head):
            return i, "nvprof output (the legacy CUDA profiler)"
        words = " ".join(head.split())
        if words.startswith("Metric Name ") and words.endswith(" Metric Description"):
            return i, "an ncu `--query-metrics` listing (metric names and descriptions, no launches)"
        if words.startswith("Identifier Display Name ") and words.endswith(" Filename"):
            return i, "an ncu `--list-sections` listing (section names, no launches)"
        if _METRIC_LISTING_ROW.match(head):
            listing_rows += 1
            if listing_rows == 3:
                return i, "an ncu `--query-metrics` listing (metric names and descriptions, no launches)"
        if head.startswith(("Time (%),", '"Time (%)",')):
            cells = {c.strip().strip('"') for c in head.split(",")}
            if {"Total Time (ns)", "Instances", "Name"} <= cells:
                return i, "an Nsight Systems `nsys stats` table (time per kernel or API call)"
    return None


# --------------------------------------------------------------------------------- CSV pages


def _split(path: str, line_no: int | None, text: str) -> list[str]:
    """One CSV line -> cells (csv module); a malformed line is an InputError naming it."""
    try:
        return next(csv.reader([text]), [])
    except csv.Error as exc:
        raise _err(path, line_no, f"malformed CSV line ({exc})") from None


def _unique(names: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            out.append(f"{n}#{seen[n]}")
        else:
            seen[n] = 0
            out.append(n)
    return out


#: a line that does not start with a quote, or a second header; a header in another column
#: order is found by ``"Process ID"`` anywhere (a plain ``find``: as one alternative of this
#: pattern it would make the regex try every position instead of every line end, 4x slower)
_CLEAN_QUOTED_BREAK = re.compile(rb'\n(?:[^"]|"ID","Process ID",)')
_ANOTHER_HEADER = b'"Process ID"'


class _NotClean(Exception):
    """The table taken for the only one, quoted and without noise lines, is not."""


#: :func:`_lines_quoted` walks this many lines, then leaves the rest to the regex when they
#: are shorter than ``_LONG_LINE`` bytes on average
_LONG_LINES_SAMPLE = 256
_LONG_LINE = 1024


def _lines_quoted(data: bytes, begin: int, end: int) -> bool:
    """Whether every newline in ``data[begin:end]`` with a byte after it is followed by a
    quote (no match of :data:`_CLEAN_QUOTED_BREAK`'s first alternative; its second, a
    second header, is looked for apart). A raw page has few long lines: jumping from newline
    to newline with ``bytes.find`` is 4x faster than the regex there; short lines are left
    to the regex."""
    at = begin
    for _ in range(_LONG_LINES_SAMPLE):
        nl = data.find(b"\n", at, end - 1)
        if nl < 0:
            return True
        if data[nl + 1] != 0x22:  # '"'
            return False
        at = nl + 1
    if at - begin < _LONG_LINES_SAMPLE * _LONG_LINE:
        return _CLEAN_QUOTED_BREAK.search(data, at, end) is None
    while True:
        nl = data.find(b"\n", at, end - 1)
        if nl < 0:
            return True
        if data[nl + 1] != 0x22:
            return False
        at = nl + 1


class _Check:
    """Whether the file is one quoted table whose every line after the header starts with a
    quote (no program output or profiler lines to skip, no second table). That takes a pass
    over the data: it is answered when first asked, which the raw-page reader does while
    pyarrow parses the rows in another thread."""

    def __init__(self, data: bytes, begin: int, end: int) -> None:
        self._args = (data, begin, end)
        self._answer: bool | None = None

    def __call__(self) -> bool:
        if self._answer is None:
            data, begin, end = self._args
            self._answer = _lines_quoted(data, begin, end) and data.find(_ANOTHER_HEADER, begin, end) < 0
        return self._answer

    def require(self) -> None:
        if not self():
            raise _NotClean

    def confirm(self) -> None:
        """The parse showed the table clean (see :func:`_launch_ids_only`): no scan needed."""
        self._answer = True


def _launch_ids_only(table: Any, names: list[str]) -> bool:
    """Whether every row of a parsed raw page has a launch ID of digits only: a line of
    program output or a second table's header or units row that pyarrow took for a row of
    the header's width would have text, or nothing, there."""
    import pyarrow.compute as pc

    if "ID" not in names:
        return False
    col = table.column("ID")
    if col.null_count:
        return False
    return bool(pc.all(pc.match_substring_regex(col, r"^[0-9]+$")).as_py() is not False)


def _header_starts(data: bytes) -> tuple[list[int], _Check | None]:
    """Offsets of every CSV header line (a log may hold several tables); or, when the first
    header is quoted, ``([its offset], check)``: the caller must :meth:`_Check.require` that
    it is the only table, or read again from :func:`_all_header_starts`."""
    at = data.find(b"Process ID")
    first = _header_at(data, at) if at >= 0 else None
    if first is not None and data.startswith(b'"', first + (3 if data.startswith(_BOM, first) else 0)):
        nl = data.find(b"\n", first)
        end = len(data)
        while end > first and data[end - 1] in b"\r\n":
            end -= 1
        if nl >= 0:
            return [first], _Check(data, nl, end)
    return _all_header_starts(data), None


def _all_header_starts(data: bytes) -> list[int]:
    """Offsets of every CSV header line (one pass over the data, however big)."""
    starts = []
    at = data.find(b"Process ID")
    while at >= 0:
        line_start = _header_at(data, at)
        if line_start is not None:
            starts.append(line_start)
        at = data.find(b"Process ID", at + 10)
    return starts


_BOM = b"\xef\xbb\xbf"


def _header_at(data: bytes, at: int) -> int | None:
    """Start of the header line whose ``Process ID`` is at ``at``, if it is one: a CSV line
    with an ``ID``, a ``Process ID`` and a ``Kernel Name`` (or ``Range Name``) cell, in any
    order (another ncu version, or a table re-saved by a spreadsheet, may move them)."""
    for before, after in ((b'"ID","', b'",'), (b"ID,", b",")):
        begin = at - len(before)
        if begin >= 0 and data.startswith(before, begin) and data.startswith(after, at + 10):
            line_start = data.rfind(b"\n", 0, begin) + 1
            if data[line_start:begin] in (b"", _BOM):
                return line_start
    # the columns in another order: parse the line (short lines only: a header, not a row)
    line_start = data.rfind(b"\n", 0, at) + 1
    line_end = data.find(b"\n", at)
    line = data[line_start : len(data) if line_end < 0 else line_end]
    if len(line) > 1 << 20 or line.startswith(b"=="):
        return None
    try:
        cells = next(csv.reader([line.decode("utf-8", errors="replace").lstrip("\ufeff").rstrip("\r")]), [])
    except csv.Error:
        return None
    names = {c.strip() for c in cells}
    if {"ID", "Process ID"} <= names and names & {"Kernel Name", "Range Name"}:
        return line_start
    if names >= _SUMMARY_COLUMNS and names & {"Kernel Name", "Range Name"}:
        return line_start  # ``--print-summary per-kernel --csv``: no ``ID`` column
    return None


#: the columns of a ``--csv --print-summary`` table (one row per kernel x metric)
_SUMMARY_COLUMNS = frozenset({"Process ID", "Invocations", "Metric Name", "Minimum", "Maximum", "Average"})


def _read_csv(
    path: str, data: bytes, starts: list[int], clean: _Check | None, arrow: bool = False
) -> Iterator[Report]:
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(data)
        line_no = data.count(b"\n", 0, start) + 1
        nl = data.find(b"\n", start, end)
        header_end = end if nl < 0 else nl
        header_line = data[start:header_end].decode("utf-8", errors="replace").rstrip("\r")
        header_line = header_line.lstrip("\ufeff")
        quoted = header_line.startswith('"')
        header = _split(path, line_no, header_line)
        if nl < 0 and end == len(data) and not data.endswith(b"\n"):
            raise _err(
                path, line_no, "the file ends inside the CSV header line: it is cut off before any row"
            )
        if set(header) >= _SUMMARY_COLUMNS and "ID" not in header:
            if clean is not None:
                clean.require()
            body = data[header_end + 1 : end] if nl >= 0 else b""
            yield _read_summary_csv(path, line_no, header, body, quoted)
        elif "Metric Name" in header or "Metric Value" in header:
            if clean is not None:
                clean.require()
            body = data[header_end + 1 : end] if nl >= 0 else b""
            yield _read_details(path, line_no, header, body, quoted)
        else:  # the raw page body is read in place: it can be most of a big file
            begin = header_end + 1 if nl >= 0 else end
            yield _read_raw(path, line_no, header, _Span(data, begin, end), quoted, clean, arrow)


def _body_lines(body: bytes, first_line: int, quoted: bool) -> Iterator[tuple[int, str]]:
    """(line number, text) of table rows: profiler lines, blank lines and, when the header is
    quoted, lines that do not start with a quote (program output) are skipped."""
    for i, raw in enumerate(body.decode("utf-8", errors="replace").splitlines()):
        if not raw.strip() or raw.startswith("=="):
            continue
        if quoted and not raw.startswith('"'):
            continue
        yield first_line + i, raw


def _rows(path: str, lines: Iterator[tuple[int, str]]) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) with one csv reader over all lines; errors name the line."""
    current = [0]

    def texts() -> Iterator[str]:
        for lno, text in lines:
            current[0] = lno
            yield text

    reader = csv.reader(texts())
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise _err(path, current[0], f"malformed CSV line ({exc})") from None
        yield current[0], row


def _index(header: Sequence[str]) -> dict[str, int]:
    """Column name -> its first position. A report of ranges (range replay, range
    profiling) names its workloads in a ``Range Name`` column: read as the kernel name."""
    idx: dict[str, int] = {}
    for i, name in enumerate(header):
        idx.setdefault(name, i)
    if "Kernel Name" not in idx and "Range Name" in idx:
        idx["Kernel Name"] = idx["Range Name"]
    return idx


def _cell(row: Sequence[str], i: int | None) -> str:
    if i is None or i >= len(row):
        return ""
    return row[i]


def _new_launch(row: Sequence[str], idx: dict[str, int]) -> Launch:
    g = idx.get
    launch = Launch(
        id=_cell(row, g("ID")).strip(),
        name=_cell(row, g("Kernel Name")),
        pid=_cell(row, g("Process ID")).strip() or None,
        process_name=_cell(row, g("Process Name")).strip() or None,
        stream=_cell(row, g("Stream")).strip() or None,
        grid=parse_dims(_cell(row, g("Grid Size"))),
        block=parse_dims(_cell(row, g("Block Size"))),
        cc=_cell(row, g("CC")).strip() or None,
    )
    launch.device = parse_count(_cell(row, g("Device")))
    for col in _KEEP_AS_RAW:
        v = _cell(row, g(col)).strip()
        if v:
            launch.raw[col] = (v, None)
    return launch


def _nvtx_columns(header: Sequence[str]) -> list[tuple[str, int]]:
    """Columns ncu inserts for ``--nvtx`` (names hold ``:``, metric names never do)."""
    return [
        (n, i) for i, n in enumerate(header) if n not in ID_COLUMNS and n not in DETAILS_COLUMNS and ":" in n
    ]


def _read_details(path: str, line_no: int, header: list[str], body: bytes, quoted: bool) -> Report:
    idx = _index(header)
    for need in ("ID", "Kernel Name", "Metric Name", "Metric Value"):
        if need not in idx:
            what = "`Kernel Name` (or `Range Name`)" if need == "Kernel Name" else f"`{need}`"
            raise _err(path, line_no, f"details-page CSV header has no {what} column; got {header[:16]}")
    nvtx = _nvtx_columns(header)
    i_id, i_pid = idx["ID"], idx.get("Process ID")
    i_sec, i_name, i_unit, i_val = (
        idx.get("Section Name"),
        idx["Metric Name"],
        idx.get("Metric Unit"),
        idx["Metric Value"],
    )
    i_rule, i_rtype, i_rdesc = (
        idx.get("Rule Name"),
        idx.get("Rule Type"),
        idx.get("Rule Description"),
    )
    i_stype, i_sval = idx.get("Estimated Speedup Type"), idx.get("Estimated Speedup")
    width = len(header)
    launches: dict[tuple[str | None, str], Launch] = {}
    warnings: list[str] = []
    decimal_commas: list[str] = []
    skipped = 0
    values: dict[tuple[str, str], Any] = {}  # (unit, cell) -> (value, unit): cells repeat a lot
    rule_results: dict[tuple[Any, str], int] = {}  # ((process, launch ID), rule key) -> results so far
    cut = _cut_line(body, line_no + 1)
    counted = 0
    lengths: Counter[int] = Counter()
    repeats = 0
    first_repeat = ""
    current: tuple[object, str] | None = None  # the launch and section of the rows being read
    current_names: set[str] = set()
    for lno, row in _rows(path, _body_lines(body, line_no + 1, quoted=quoted)):
        if cut is not None and lno == cut.line:
            have = len(row)
            dropped = _cut_cell(row, cut, width, quoted)
            if dropped is not None or have <= i_val:
                # no value, or a value (or whatever cell the file ends in) that may be cut short
                cut_id = row[i_id].strip() if len(row) > i_id else ""
                warnings.append(
                    f"the file ends inside line {lno}"
                    + (f" (launch ID {cut_id})" if cut_id else "")
                    + (
                        f": the row is cut off in its cell {have} (`{dropped}`, maybe cut short)"
                        if dropped
                        else f": the row is cut off after {have} of {width} cells, before its value"
                    )
                    + "; it was skipped"
                )
                continue
        n_cells = len(row)
        if n_cells < width:
            row.extend([""] * (width - n_cells))  # ragged rows (trailing comma) are padded
        launch_id = row[i_id].strip()
        if not launch_id or launch_id == "ID":
            skipped += 1
            continue
        if cut is None or lno != cut.line:
            counted += 1
            # a row must reach the value column; cells past the header may only be empty
            if n_cells <= i_val or (n_cells > width and any(c.strip() for c in row[width:])):
                lengths[n_cells] += 1
        key = (row[i_pid].strip() if i_pid is not None else None, launch_id)
        launch = launches.get(key)
        if launch is None:
            launch = launches[key] = _new_launch(row, idx)
            for col, i in nvtx:
                v = row[i].strip()
                if v:
                    launch.raw[col] = (v, None)
        name = row[i_name].strip()
        section = row[i_sec].strip() if i_sec is not None else ""
        if name:
            unit = row[i_unit].strip() if i_unit is not None else ""
            cell = (unit, row[i_val])
            metric = values.get(cell)
            if metric is None:
                metric = values[cell] = (parse_value(cell[1], decimal_commas), unit or None)
            if current is None or current[0] is not launch or current[1] != section:
                current, current_names = (launch, section), set()
            elif name in current_names:
                repeats += 1  # the same metric twice in one section of one launch
                first_repeat = first_repeat or f"launch ID {launch_id}'s `{name}` at line {lno}"
            current_names.add(name)
            launch.raw[name if name not in launch.raw else f"{section}/{name}"] = metric
        elif i_rule is not None and row[i_rule].strip():
            rule = row[i_rule].strip()
            rtype = row[i_rtype].strip() if i_rtype is not None else ""
            desc = row[i_rdesc].strip() if i_rdesc is not None else ""
            # one rule can give several results for one launch (ncu 2025: a
            # WorkloadImbalance result per unit, SM, SMSP, L1, L2): the N-th is kept as
            # `rule:<Section>/<Rule>#N`, none overwrites another
            rule_key = f"rule:{section}/{rule}"
            nth = rule_results[(key, rule_key)] = rule_results.get((key, rule_key), 0) + 1
            if nth > 1:  # counted, not searched: a hostile file may repeat one rule 10^6 times
                rule_key += f"#{nth}"
            launch.raw[rule_key] = (desc, rtype or None)
            speedup = parse_value(row[i_sval]) if i_sval is not None else None
            if speedup is not None:
                stype = row[i_stype].strip() if i_stype is not None else ""
                unit = f"% ({stype})" if stype else "%"
                launch.raw[f"{rule_key}:estimated_speedup"] = (speedup, unit or None)
        else:
            skipped += 1
    error = _disagree(path, line_no, "details-page", width, lengths, counted)
    if error is not None:
        raise error
    comma = decimal_comma_locale(cell for _unit, cell in values)
    if comma is not None:  # read again: "117.344" ns is 117,344 ns there
        remap = {id(m): (parse_value(cell, comma_decimal=True), m[1]) for (_u, cell), m in values.items()}
        for launch in launches.values():
            for metric_key, m in launch.raw.items():
                launch.raw[metric_key] = remap.get(id(m), m)
        decimal_commas.clear()
        warnings.append(_comma_locale_warning(comma))
    if lengths:
        warnings.append(
            f"{sum(lengths.values())} row(s) did not match the header's {width} columns (no value cell, or "
            "extra cells); they were read by position"
        )
    if repeats:
        warnings.append(
            f"{repeats} metric row(s) repeat a metric already read for the same launch and section "
            f"(first: {first_repeat}); a repeat is kept as `<Section>/<name>` (a repeated row?)"
        )
    if decimal_commas:
        warnings.append(
            f"{len(decimal_commas)} value(s) written with a decimal comma (e.g. `{decimal_commas[0]}`) were read as decimals"
        )
    if skipped:
        warnings.append(f"{skipped} row(s) without a launch ID or metric were skipped")
    if not launches:
        raise _err(path, line_no, "the details-page CSV has a header but no metric rows")
    return Report(
        page="details",
        launches=list(launches.values()),
        location=f"line {line_no}",
        warnings=warnings,
    )


def _read_summary_csv(path: str, line_no: int, header: list[str], body: bytes, quoted: bool) -> Report:
    """``--csv --print-summary per-kernel``: one row per (kernel x launch shape) x metric with
    ``Invocations`` and ``Minimum``/``Maximum``/``Average`` instead of ``ID``/``Metric Value``.
    One record per kernel and shape, like the text summary page."""
    idx = _index(header)
    if "Kernel Name" not in idx:
        raise _err(path, line_no, f"summary CSV header has no `Kernel Name` column; got {header[:16]}")
    g = idx.get
    width = len(header)
    keys = ("Process ID", "Kernel Name", "Block Size", "Grid Size", "Device", "CC")
    records: dict[tuple[str, ...], Launch] = {}
    pending: list[tuple[dict[str, Any], str, str, str | None]] = []
    skipped = 0
    for _lno, row in _rows(path, _body_lines(body, line_no + 1, quoted=quoted)):
        if len(row) < width:
            row.extend([""] * (width - len(row)))
        name = row[idx["Metric Name"]].strip()
        kernel = _cell(row, g("Kernel Name"))
        if not name or not kernel or kernel == "Kernel Name":
            skipped += 1
            continue
        key = tuple(_cell(row, g(k)).strip() for k in keys)
        launch = records.get(key)
        if launch is None:
            launch = records[key] = _new_launch(row, idx)
            launch.id = str(len(records) - 1)
            inv = parse_count(_cell(row, g("Invocations")).replace(",", ""))
            if inv is not None:
                launch.raw["invocations"] = (float(inv), None)
        unit = _cell(row, g("Metric Unit")).strip() or None
        metric = name if name not in launch.raw else f"{_cell(row, g('Section Name')).strip()}/{name}"
        for k, col in (
            (metric, "Average"),
            (f"{metric}.minimum", "Minimum"),
            (f"{metric}.maximum", "Maximum"),
        ):
            launch.raw[k] = (None, unit)
            pending.append((launch.raw, k, row[idx[col]], unit))
    if not records:
        raise _err(path, line_no, "the summary CSV has a header but no metric rows")
    warnings: list[str] = []
    warnings.extend(_parse_pending(pending))
    if skipped:
        warnings.append(f"{skipped} row(s) without a kernel name or metric were skipped")
    warnings.append(
        "a --print-summary page: one record per kernel name, metric values are averages over its invocations"
    )
    return Report(
        page="summary", launches=list(records.values()), location=f"line {line_no}", warnings=warnings
    )


def _parse_pending(pending: list[tuple[dict[str, Any], str, str, str | None]]) -> list[str]:
    """Parse the cells a page collected, once its locale is known (decimal comma or point,
    judged on all of them), into their raw dicts; returns the warnings to add."""
    comma = decimal_comma_locale(cell for _raw, _key, cell, _unit in pending)
    decimal_commas: list[str] = []
    for raw, raw_key, cell, cell_unit in pending:
        raw[raw_key] = (parse_value(cell, decimal_commas, comma is not None), cell_unit)
    if comma is not None:
        return [_comma_locale_warning(comma)]
    if decimal_commas:
        return [
            f"{len(decimal_commas)} value(s) written with a decimal comma (e.g. `{decimal_commas[0]}`) were read as decimals"
        ]
    return []


def _comma_locale_warning(example: str) -> str:
    return (
        f"the values are written in a decimal-comma locale (e.g. `{example}`): `.` was read as the "
        "thousands separator and `,` as the decimal point"
    )


@dataclass(frozen=True)
class _Span:
    """``data[begin:end]`` without copying it."""

    data: bytes
    begin: int
    end: int


def _read_raw(
    path: str,
    line_no: int,
    header: list[str],
    body: _Span,
    quoted: bool,
    clean: _Check | None,
    arrow: bool = False,
) -> Report:
    idx = _index(header)
    for need in ("ID", "Kernel Name"):
        if need not in idx:
            what = "`Kernel Name` (or `Range Name`)" if need == "Kernel Name" else f"`{need}`"
            raise _err(path, line_no, f"raw-page CSV header has no {what} column; got {header[:12]}")
    names = _unique(header)
    warnings: list[str] = []
    # the units row: the first row after the header whose ID cell is empty
    data, begin, end = body.data, body.begin, body.end
    nl = data.find(b"\n", begin, end)
    first = data[begin : nl if nl >= 0 else end].decode("utf-8", errors="replace").rstrip("\r")
    units: list[str]
    rows_start, body_line = begin, line_no + 1  # where the launch rows start in `data`
    if first.startswith("==") or not first.strip():
        units = []  # profiler lines right after the header: the slow path filters them
    else:
        cells = _split(path, line_no + 1, first)
        if cells and cells[idx["ID"]].strip() == "":
            units = cells
            rows_start, body_line = (nl + 1 if nl >= 0 else end), line_no + 2
        else:
            units = []
            warnings.append("raw-page CSV has no units row after the header; units unknown")
    comma = _raw_comma_locale(data, rows_start, end, names, quoted)
    columns = (
        None
        if comma is not None
        else _columns_fast(_Span(data, rows_start, end), names, quoted, clean, arrow)
    )
    if clean is not None:
        clean.require()  # answered during the parse, unless that did not happen
    if columns is None:
        rows = data[rows_start:end]
        columns, units = _columns_slow(
            path, line_no, rows, body_line, names, units, warnings, quoted, comma is not None
        )
        if comma is not None:
            warnings.append(_comma_locale_warning(comma))
    if len(units) < len(names):
        units = list(units) + [""] * (len(names) - len(units))
    return _launches_from_columns(path, line_no, header, names, units, columns, warnings)


_NOISE_QUOTED = re.compile(rb'\n[^"]')
_NOISE_PLAIN = re.compile(rb"\n(?:==|\r?\n)")


def _columns_fast(
    rows: _Span, names: list[str], quoted: bool, clean: _Check | None, arrow: bool = False
) -> dict[str, Column] | None:
    """Column -> values of the ``rows`` with pyarrow.csv (read in place, no copy); None when
    they need the tolerant path. With ``clean``, the check that every line starts with a
    quote runs while pyarrow parses (it raises _NotClean when they do not).

    Metric columns that look numeric in a few sample rows are parsed as float64 by pyarrow
    itself (in its threads); a column where another row is not a finite number is read again
    as text and converted cell by cell like the others, so the values are the same either way.
    With ``arrow``, a metric column of finite numbers stays the float64 Arrow array (the
    list it stands for is :func:`~._common.column_values` of it); text and id columns
    are lists either way.
    """
    body, start, end = rows.data, rows.begin, rows.end
    if end > start and body[end - 1] != 0x0A:
        return None  # the file ends inside a row: its last cell may be cut (the tolerant path says so)
    while end > start and body[end - 1] in b"\r\n":
        end -= 1
    if end == start or (end - start < 4096 and not body[start:end].strip()):
        return {n: [] for n in names}
    if clean is None:
        if quoted:
            noisy = body[start : start + 1] != b'"' or _NOISE_QUOTED.search(body, start, end) is not None
        else:
            noisy = body.startswith(b"==", start) or _NOISE_PLAIN.search(body, start, end) is not None
        if noisy:
            return None  # noise lines (program output, ==PROF==) inside the body
    import pyarrow as pa
    import pyarrow.compute as pc

    buf = pa.py_buffer(body)[start:end]  # without the trailing newlines
    text = {n for n in names if n in ID_COLUMNS or ":" in n}
    floats = _number_columns(body, start, end, names) - text
    for attempt in range(_MAX_RETYPES + 1):
        if attempt == _MAX_RETYPES:
            floats = set()  # many columns hold text after all: read them all as text
        if clean is not None and attempt == 0:
            table, bad = _arrow_read(buf, names, floats)
            if table is not None and _launch_ids_only(table, names):
                # every line parsed as a row of the header's width with a launch ID first:
                # no noise line and no second header among them (those have another width,
                # or text where the ID is), so the table is clean without a scan of its lines
                clean.confirm()
            else:
                clean.require()  # the exact scan decides (raises _NotClean)
        else:
            table, bad = _arrow_read(buf, names, floats)
        if table is None:
            if bad is None or bad not in floats:
                return None  # ragged rows and the like
            floats.discard(bad)  # text further down a column that started with a number
            continue
        # pyarrow reads "inf", "nan" and overflowing numbers as floats; parse_value keeps them
        # as text. A sum is finite only when every value is (a sum that overflows has the
        # column read again as text, which gives the same floats)
        not_finite = {n for n in floats if not math.isfinite(pc.sum(table.column(n)).as_py() or 0.0)}
        if not_finite:
            floats -= not_finite
            continue
        out: dict[str, Column] = {}
        for name in names:
            col = table.column(name)
            if name in text:
                out[name] = col.to_pylist()
            elif name in floats:
                out[name] = col if arrow else column_values(col)
            else:
                out[name] = _numeric(col, arrow)
        return out
    return None


#: how many times columns may turn out to hold text before every metric column is read as text
_MAX_RETYPES = 4
_COLUMN_IN_ERROR = re.compile(r"In CSV column #(\d+)")


def _sample_lines(body: bytes, start: int, end: int) -> Iterator[bytes]:
    """A few lines of the rows in ``body[start:end]``: the first, three inside, the last."""
    offsets = {start}
    for k in range(1, 5):
        nl = body.rfind(b"\n", start, start + (end - start) * k // 4)
        if nl >= 0:
            offsets.add(nl + 1)
    for at in sorted(offsets):
        nl = body.find(b"\n", at, end)
        yield body[at : nl if nl >= 0 else end]


def _sample_metric_cells(body: bytes, start: int, end: int, names: list[str]) -> list[str]:
    """The metric cells (not identification or NVTX columns) of a few sampled rows."""
    out: list[str] = []
    for line in _sample_lines(body, start, end):
        if len(line) > 1 << 20 or line.startswith(b"=="):
            continue
        try:
            cells = next(csv.reader([line.decode("utf-8", errors="replace").rstrip("\r")]), [])
        except csv.Error:
            continue
        out.extend(c for n, c in zip(names, cells, strict=False) if n not in ID_COLUMNS and ":" not in n)
    return out


def _raw_comma_locale(data: bytes, start: int, end: int, names: list[str], quoted: bool) -> str | None:
    """An example cell when the raw page's metric values are written in a decimal-comma
    locale (see :func:`decimal_comma_locale`), judged on every row. A few sampled rows settle
    it for nearly every file (a value such as ``"46.47"`` shows a decimal point); only when
    they do not are the other rows read, up to the first value that settles it."""
    comma, point = locale_evidence(_sample_metric_cells(data, start, end, names))
    if point:
        return None
    metric = [j for j, n in enumerate(names) if n not in ID_COLUMNS and ":" not in n]

    def cells() -> Iterator[str]:
        for _lno, row in _rows("", _body_lines(data[start:end], 1, quoted=quoted)):
            yield from (row[j] for j in metric if j < len(row))

    try:
        comma, point = locale_evidence(cells())
    except InputError:
        return None  # a malformed line: the parse that follows names it
    return None if point else comma


def _number_columns(body: bytes, start: int, end: int, names: list[str]) -> set[str]:
    """Columns that look numeric in a few sample rows (the first, three inside, the last):
    every sampled cell is a plain finite number or empty. pyarrow parses those as float64."""
    offsets = {start}
    for k in range(1, 5):
        nl = body.rfind(b"\n", start, start + (end - start) * k // 4)
        if nl >= 0:
            offsets.add(nl + 1)
    out = set(names)
    for at in sorted(offsets):
        nl = body.find(b"\n", at, end)
        line = body[at : nl if nl >= 0 else end]
        if len(line) > 1 << 20:
            return set()  # not a table of metric rows: let pyarrow read text
        try:
            cells = next(csv.reader([line.decode("utf-8", errors="replace").rstrip("\r")]), [])
        except csv.Error:
            return set()
        out.intersection_update(n for n, cell in zip(names, cells, strict=False) if _plain_number(cell))
    return out


def _plain_number(cell: str) -> bool:
    s = cell.strip()
    if s in ("", "n/a", "N/A"):
        return True
    if "_" in s or "," in s:
        return False
    try:
        return math.isfinite(float(s))
    except ValueError:
        return False


#: pyarrow parses blocks of this size in parallel (a few per core keeps every core busy)
_BLOCK_BYTES = 4 << 20


def _arrow_read(buf: Any, names: list[str], floats: set[str]) -> tuple[Any, str | None]:
    """(table, None): the rows in ``buf`` as an Arrow table, float64 for the columns in
    ``floats`` and strings for the others (nulls for empty and ``n/a`` cells);
    (None, column) when a float column holds something else, (None, None) when the rows do
    not parse as a CSV table of that width."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        table = pacsv.read_csv(
            pa.BufferReader(buf),
            read_options=pacsv.ReadOptions(column_names=names, block_size=_BLOCK_BYTES),
            parse_options=pacsv.ParseOptions(newlines_in_values=False),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.float64() if n in floats else pa.string() for n in names},
                strings_can_be_null=True,
                null_values=["", "n/a", "N/A"],
                quoted_strings_can_be_null=True,
            ),
        )
    except pa.ArrowInvalid as exc:
        m = _COLUMN_IN_ERROR.search(str(exc))
        if m is not None and "conversion error" in str(exc) and int(m[1]) < len(names):
            return None, names[int(m[1])]
        return None, None
    except pa.ArrowTypeError:
        return None, None
    return table, None


_THOUSANDS_OR_PLAIN = r"^[+-]?(\d{1,3}(,\d{3})+|\d*)(\.\d*)?([eE][+-]?\d+)?$"


def _numeric(col: Any, arrow: bool = False) -> Column:
    """A string column -> floats where every cell is a finite number (with ``arrow``: as a
    float64 Arrow array), else cell by cell."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if col.null_count == len(col):
        return [None] * len(col)
    try:
        f = pc.cast(col, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        f = None
        try:
            if pc.all(pc.match_substring_regex(col, _THOUSANDS_OR_PLAIN)).as_py():
                f = pc.cast(pc.replace_substring(col, ",", ""), pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            f = None
    if f is not None and pc.all(pc.is_finite(f)).as_py() is not False:  # nulls are skipped
        if arrow:
            return f
        values: list[Any] = f.to_pylist()
        return values
    # cell by cell, each distinct text parsed once (a device name repeats in every row)
    cells = col.to_pylist()
    parsed = {c: parse_value(c) for c in set(cells) if c is not None}
    return [None if c is None else parsed[c] for c in cells]


@dataclass(frozen=True)
class _Cut:
    """The last line of a body that does not end with a newline: the file was cut there."""

    line: int
    #: the line ends with a closing quote, so its last cell is whole (a quoted table)
    whole_last_cell: bool


def _cut_line(body: bytes, first_line: int) -> _Cut | None:
    """Where the file ends inside a line (ncu ends every line with a newline), if it does."""
    if not body or body.endswith(b"\n"):
        return None
    start = body.rfind(b"\n") + 1
    last = body[start:].rstrip(b"\r")
    if not last.strip():
        return None
    return _Cut(first_line + body.count(b"\n", 0, start), last.endswith(b'"'))


def _cut_cell(row: list[str], cut: _Cut, width: int, quoted: bool) -> str | None:
    """Blank the last cell of the row the file ends in when it may be cut short (no closing
    quote; unquoted: a row shorter than the header) and return what it held."""
    cut_short = not cut.whole_last_cell if quoted else len(row) < width
    if not cut_short or not row or not row[-1].strip():
        return None
    dropped = row[-1]
    row[-1] = ""
    return dropped


def _disagree(
    path: str, line_no: int, page: str, width: int, lengths: Counter[int], counted: int
) -> InputError | None:
    """The error for a header and rows that disagree: most rows have another number of
    cells (a column missing from the header, or from the rows), so no value can be put in
    its column by position. A few ragged rows are padded or cut with a warning instead."""
    mismatched = sum(lengths.values())
    if not counted or mismatched * 2 <= counted:
        return None
    common = lengths.most_common(1)[0][0]
    return _err(
        path,
        line_no,
        f"the {page} header has {width} columns but rows have {common} ({mismatched} of {counted} "
        "rows): header and rows disagree, so values cannot be assigned to columns; expected one cell "
        "per header column",
    )


def _columns_slow(
    path: str,
    line_no: int,
    body: bytes,
    first_line: int,
    names: list[str],
    units: list[str],
    warnings: list[str],
    quoted: bool,
    comma_decimal: bool = False,
) -> tuple[dict[str, list[Any]], list[str]]:
    """The tolerant path: csv module, noise lines skipped, short rows padded; a header the
    rows disagree with (most rows longer or shorter) is an error. ``comma_decimal``: the
    values are written in a decimal-comma locale."""
    width = len(names)
    cols: list[list[Any]] = [[] for _ in names]
    padded = 0
    long_rows = 0
    counted = 0
    lengths: Counter[int] = Counter()
    decimal_commas: list[str] = []
    cut = _cut_line(body, first_line)
    for lno, row in _rows(path, _body_lines(body, first_line, quoted=quoted)):
        if not units and row and row[0].strip() == "":
            units = row  # units row after profiler lines
            continue
        if cut is not None and lno == cut.line:
            have = len(row)
            dropped = _cut_cell(row, cut, width, quoted)
            if have < width or dropped is not None:
                launch = row[0].strip() if row else ""
                warnings.append(
                    f"the file ends inside line {lno}"
                    + (f" (launch ID {launch})" if launch else "")
                    + f": the row is cut off after {have} of {width} cells"
                    + (f"; its last cell `{dropped}` may be cut short and was dropped" if dropped else "")
                )
                row.extend([""] * (width - len(row)))
        else:
            counted += 1
        if len(row) < width:
            padded += 1
            lengths[len(row)] += 1
            row.extend([""] * (width - len(row)))
        elif len(row) > width:
            if any(c.strip() for c in row[width:]):
                long_rows += 1
                lengths[len(row)] += 1
            del row[width:]
        for j, cell in enumerate(row):
            name = names[j]
            if name in ID_COLUMNS or ":" in name:
                cols[j].append(cell if cell != "" else None)
            else:
                cols[j].append(parse_value(cell, decimal_commas, comma_decimal))
    error = _disagree(path, line_no, "raw-page", width, lengths, counted)
    if error is not None:
        raise error
    if padded:
        warnings.append(f"{padded} short row(s) were padded with empty cells")
    if long_rows:
        warnings.append(f"{long_rows} row(s) had more cells than the header; the extra cells were dropped")
    if decimal_commas:
        warnings.append(
            f"{len(decimal_commas)} value(s) written with a decimal comma (e.g. `{decimal_commas[0]}`) were read as decimals"
        )
    return dict(zip(names, cols, strict=True)), units


def _warn_duplicate_ids(keys: list[tuple[str | None, str]], warnings: list[str]) -> None:
    """A launch ID (within one process) on several rows: a row repeated by a damaged or
    concatenated file. Every row stays a launch, and the warning says which are counted twice."""
    if len(set(keys)) == len(keys):
        return
    repeated = [(key, n) for key, n in Counter(keys).items() if n > 1]
    several_processes = len({pid for pid, _id in keys}) > 1
    shown = ", ".join(
        f"{launch_id}" + (f" (process {pid})" if several_processes and pid else "") + f" x{n}"
        for (pid, launch_id), n in repeated[:5]
    )
    more = f", and {len(repeated) - 5} more" if len(repeated) > 5 else ""
    warnings.append(
        f"{len(repeated)} launch ID(s) appear on more than one row ({shown}{more}): each row is kept "
        "as a launch, so those launches are counted more than once (a repeated row?)"
    )


def _launches_from_columns(
    path: str,
    line_no: int,
    header: list[str],
    names: list[str],
    units: list[str],
    columns: dict[str, Column],
    warnings: list[str],
) -> Report:
    n_rows = len(columns[names[0]]) if names else 0
    idx = _index(header)

    def col(name: str) -> list[Any]:
        i = idx.get(name)
        return column_values(columns[names[i]]) if i is not None else [None] * n_rows

    ids, pids, pnames, kernels = col("ID"), col("Process ID"), col("Process Name"), col("Kernel Name")
    streams, grids, blocks, devs, ccs = (
        col("Stream"), col("Grid Size"), col("Block Size"), col("Device"), col("CC"),
    )  # fmt: skip
    keep = [i for i, launch_id in enumerate(ids) if launch_id is not None]
    if len(keep) < n_rows:
        warnings.append(f"{n_rows - len(keep)} row(s) without a launch ID were skipped")
    if not keep:
        raise _err(path, line_no, "the raw-page CSV has a header but no launch rows")
    _warn_duplicate_ids([(pids[i], str(ids[i]).strip()) for i in keep], warnings)
    metrics: dict[str, Column] = {}
    metric_units: dict[str, str | None] = {}
    for j, name in enumerate(names):
        if name in ID_COLUMNS and name not in _KEEP_AS_RAW:
            continue
        values = columns[name]
        if len(keep) < n_rows:
            values = [values[i] for i in keep] if isinstance(values, list) else values.take(keep)
        metrics[name] = values
        # id and NVTX columns are text without a unit
        metric_units[name] = None if name in ID_COLUMNS or ":" in name else (units[j].strip() or None)
    dims: dict[str | None, list[int] | None] = {}  # "(128, 1, 1)" repeats in most rows

    def parsed(text: str | None) -> list[int] | None:
        if text not in dims:
            dims[text] = parse_dims(text)
        return dims[text]

    launches = [
        Launch(
            id=str(ids[i]).strip(),
            name=kernels[i] or "",
            pid=pids[i],
            process_name=pnames[i],
            stream=streams[i],
            device=parse_count(devs[i]) if isinstance(devs[i], str) else None,
            grid=parsed(grids[i]),
            block=parsed(blocks[i]),
            cc=ccs[i],
        )
        for i in keep
    ]
    return Report(
        page="raw",
        launches=launches,
        location=f"line {line_no}",
        warnings=warnings,
        columns=metrics,
        units=metric_units,
        values_checked=True,  # text from the CSV, or floats checked finite (fast and slow path)
    )


# --------------------------------------------------------------------------- text page / summary

_PROCESS = re.compile(r"^\[(?P<pid>\d+)\]\s+(?P<name>.*?)(?:@(?P<host>\S+))?\s*$")
_KERNEL = re.compile(
    r"^ {1,3}(?P<name>\S.*?)"
    r"(?: \((?P<grid>\d+, \d+, \d+)\)x\((?P<block>\d+, \d+, \d+)\))?"
    r"(?:, (?P<time>\d{4}-[A-Za-z]{3}-\d{1,2} \d{2}:\d{2}:\d{2}))?"
    r", Context (?P<ctx>\d+), Stream (?P<stream>\d+)"
    r"(?:, Device (?P<dev>\d+), CC (?P<cc>\d+\.\d+))?\s*$"
)
_SUMMARY_KERNEL = re.compile(
    r"^\s{4}(?P<name>\S.*?), Block Size (?P<block>[\d,]+), Grid Size (?P<grid>[\d,]+), (?P<n>\d+) invocations?\s*$"
)
_DEVICE = re.compile(r"^\s+Device (?P<dev>\d+)\s*$")
_SECTION = re.compile(r"^\s+Section: (?P<name>.+?)\s*$")
_RULER = re.compile(r"^\s*-+(?: +-+)+\s*$")
#: a rule result line of a text page (``    OPT   Est. Speedup: 5.37%``); ncu separates
#: consecutive rule results by a ``----- ------...`` line that is no table ruler
_RULE_LINE = re.compile(r"^\s+(?:OPT|INF|WRN|WARN|ERR|ERROR)\s{2,}\S")


def _ruler_spans(line: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", line)]


def _split_row(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """Cells of a fixed-width row; falls back to runs of 2+ spaces when a cell overflows."""
    cuts = [e for _s, e in spans[:-1]]
    if all(c >= len(line) or line[c - 1 : c + 1].strip() == "" or line[c : c + 1] == " " for c in cuts):
        cells, prev = [], 0
        for c in cuts:
            cells.append(line[prev:c].strip())
            prev = c
        cells.append(line[prev:].strip())
        return cells
    parts = re.split(r"\s{2,}", line.strip())
    if len(parts) == len(spans) - 1:  # empty unit
        parts.insert(1, "")
    return parts


def _read_text_page(path: str, lines: list[str], cut: bool = False) -> list[Report]:
    """The default text page or a ``--print-summary`` page; ``cut``: the file ends inside its
    last line (no newline), which may then hold a value cut short."""
    launches: list[Launch] = []
    summary_mode = False
    pid: str | None = None
    pname: str | None = None
    device: int | None = None
    current: Launch | None = None
    section = ""
    spans: list[tuple[int, int]] | None = None
    in_table = False
    header_cells: list[str] = []
    header_only = False  # the open table has read its header line and no row yet
    table_rows = 0  # rows read in the open table
    counters: dict[str | None, int] = {}
    summaries: dict[tuple[str | None, int | None, str, str, str], Launch] = {}
    first_line: int | None = None
    warnings: list[str] = []
    cut_row = ""
    with_rows: set[int] = set()  # launches (by id()) with at least one metric row
    pending: list[tuple[dict[str, Any], str, str, str | None]] = []  # (raw, key, cell, unit)
    for lno, line in enumerate(lines, 1):
        if line.startswith("=="):
            continue
        m = _PROCESS.match(line)
        if m and not line.startswith(" "):
            pid, pname = m["pid"], m["name"]
            current, in_table = None, False
            continue
        m = _KERNEL.match(line)
        if m:
            n = counters.get(pid, 0)
            counters[pid] = n + 1
            current = Launch(
                id=str(n), name=m["name"], pid=pid, process_name=pname, stream=m["stream"],
                grid=parse_dims(f"({m['grid']})") if m["grid"] else None,
                block=parse_dims(f"({m['block']})") if m["block"] else None,
                cc=m["cc"], device=parse_count(m["dev"]),
            )  # fmt: skip
            current.raw["Context"] = (m["ctx"], None)
            if m["time"]:
                current.raw["Kernel Time"] = (m["time"], None)
            if m["cc"]:
                current.raw["CC"] = (m["cc"], None)
            launches.append(current)
            first_line = first_line or lno
            in_table = False
            continue
        m = _DEVICE.match(line)
        if m:
            device = parse_count(m["dev"])
            continue
        m = _SUMMARY_KERNEL.match(line)
        if m:
            # the summary repeats the kernel line before every section: one record per kernel
            summary_mode = True
            skey = (pid, device, m["name"], m["block"], m["grid"])
            current = summaries.get(skey)
            if current is None:
                n = counters.get(pid, 0)
                counters[pid] = n + 1
                current = Launch(id=str(n), name=m["name"], pid=pid, process_name=pname, device=device)
                for col, text in (("Block Size", m["block"]), ("Grid Size", m["grid"])):
                    count = parse_count(text.replace(",", ""))
                    if count is not None:  # not a run of 5000 digits
                        current.raw[col] = (float(count), None)
                inv = parse_count(m["n"])
                if inv is not None:
                    current.raw["invocations"] = (float(inv), None)
                summaries[skey] = current
                launches.append(current)
            first_line = first_line or lno
            in_table = False
            continue
        if current is None:
            continue
        m = _SECTION.match(line)
        if m:
            section, in_table, spans, header_only = m["name"], False, None, False
            continue
        if _RULER.match(line):
            if in_table and header_only:
                # ncu 2022+: a ruler above and below the `Metric Name` header line; the
                # table's rows start after the second one
                spans, header_only = _ruler_spans(line), False
            elif in_table:
                in_table = False
            else:
                spans, in_table, table_rows = _ruler_spans(line), True, 0
                prev = lines[lno - 2] if lno >= 2 else ""
                header_cells = _split_row(prev, spans) if "Metric Name" in prev else []
            continue
        if _RULE_LINE.match(line):
            # a rule result (its text follows, indented): the ruler that opened a "table"
            # right before it separates two rule results
            if in_table and table_rows == 0 and not header_only:
                in_table = False
            continue
        if in_table and spans and line.strip():
            if cut and lno == len(lines):
                # the file ends inside this row: its value (or name) may be cut short
                cut_row = f"`{line.strip()}`"
                continue
            cells = _split_row(line, spans)
            if cells and cells[0] == "Metric Name" and table_rows == 0:
                header_cells, header_only = cells, True
                continue
            if len(cells) < 3:
                continue
            table_rows += 1
            name, unit = cells[0], cells[1]
            with_rows.add(id(current))
            key = name if name not in current.raw else f"{section}/{name}"
            # values are parsed once the whole page is read (its locale is known then)
            cells_of: list[tuple[str, str]] = [(key, cells[-1])]
            if len(cells) >= 5 and header_cells[2:5] == ["Minimum", "Maximum", "Average"]:
                cells_of = [(key, cells[4]), (f"{key}.minimum", cells[2]), (f"{key}.maximum", cells[3])]
            for k, cell in cells_of:
                current.raw[k] = (None, unit or None)
                pending.append((current.raw, k, cell, unit or None))
    if not launches:
        return []
    warnings.extend(_parse_pending(pending))
    last = current or launches[-1]
    who = f"launch ID {last.id}" + (f" (process {last.pid})" if last.pid else "")
    if cut_row or (in_table and not summary_mode):
        # a text page closes every metric table with a ruler: one still open was cut off
        warnings.append(
            f"the {'summary' if summary_mode else 'text'} page ends inside {who}'s `{section}` table (line {len(lines)}): the file is cut "
            "off, so that launch's metrics are incomplete"
            + (f"; its last row {cut_row} may be cut short and was dropped" if cut_row else "")
        )
    elif id(last) not in with_rows and with_rows:
        warnings.append(f"the last launch, {who}, has no metric table: the file may be cut off after it")
    if not with_rows:
        warnings.append("the text page lists kernels but no metric tables")
    if summary_mode:
        warnings.append(
            "a --print-summary page: one record per kernel name, metric values are averages over its invocations"
        )
    return [
        Report(
            page="summary" if summary_mode else "text",
            launches=launches,
            location=f"line {first_line}",
            warnings=warnings,
        )
    ]
