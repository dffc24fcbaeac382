"""Dispatch tables from rocprof-compute / Omniperf / rocprof CSV files, read with pyarrow.

Every layout (rocprof v1 raw names, Omniperf 2.x renamed columns, rocprofv2, rocprofv3 CSV,
the rocpd long format, rocprofv3 ``kernel_trace.csv`` / ``counter_collection.csv``,
rocprof v1 ``results.csv``) becomes one :class:`Dispatches`: one row per dispatch, the
source columns kept under their source names (for ``ProfilerCapture.raw_columns``) and a few
launch columns resolved by name to the Omniperf 2.x spelling (``Grid_Size``,
``Arch_VGPR``...) so the mapping table can use one vocabulary. Columns are found by name,
case-insensitively, and every one is optional.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ...errors import InputError
from .._read import DEFAULT_MAX_BYTES
from ._io import Loaded, clean_csv, load, shown

__all__ = [
    "Dispatches",
    "adopt_pass_times",
    "id_offset",
    "merge_level_pass",
    "normalise_kernel_name",
    "read_dispatch_passes",
    "read_dispatches",
    "read_table",
]

#: lower-cased source column -> Omniperf 2.x name used by the mapping table
ALIASES: dict[str, str] = {
    "dispatch_id": "Dispatch_ID",
    "index": "Dispatch_ID",
    "kernel_name": "Kernel_Name",
    "kernelname": "Kernel_Name",
    "gpu_id": "GPU_ID",
    "gpu-id": "GPU_ID",
    "agent_id": "GPU_ID",
    "queue_id": "Queue_ID",
    "queue-id": "Queue_ID",
    "pid": "PID",
    "process_id": "PID",
    "tid": "TID",
    "thread_id": "TID",
    "correlation_id": "Correlation_ID",
    "kernel_id": "Kernel_ID",
    "grid_size": "Grid_Size",
    "grd": "Grid_Size",
    "workgroup_size": "Workgroup_Size",
    "wgr": "Workgroup_Size",
    "grid_size_x": "Grid_Size_X",
    "grid_size_y": "Grid_Size_Y",
    "grid_size_z": "Grid_Size_Z",
    "workgroup_size_x": "Workgroup_Size_X",
    "workgroup_size_y": "Workgroup_Size_Y",
    "workgroup_size_z": "Workgroup_Size_Z",
    "lds_per_workgroup": "LDS_Per_Workgroup",
    "lds": "LDS_Per_Workgroup",
    "lds_block_size": "LDS_Per_Workgroup",
    "group_segment_size": "LDS_Per_Workgroup",
    "scratch_per_workitem": "Scratch_Per_Workitem",
    "scr": "Scratch_Per_Workitem",
    "scratch_size": "Scratch_Per_Workitem",
    "private_segment_size": "Scratch_Per_Workitem",
    "arch_vgpr": "Arch_VGPR",
    "vgpr": "Arch_VGPR",
    "vgpr_count": "Arch_VGPR",
    "accum_vgpr": "Accum_VGPR",
    "accum_vgpr_count": "Accum_VGPR",
    "sgpr": "SGPR",
    "sgpr_count": "SGPR",
    "wave_size": "Wave_Size",
    "start_timestamp": "Start_Timestamp",
    "beginns": "Start_Timestamp",
    "end_timestamp": "End_Timestamp",
    "endns": "End_Timestamp",
    "durationns": "DurationNs",
    "counter_name": "Counter_Name",
    "counter_value": "Counter_Value",
}
_TIME_COLUMNS = ("Start_Timestamp", "End_Timestamp", "BeginNs", "EndNs", "DispatchNs", "CompleteNs",
                 "start_timestamp", "end_timestamp")  # fmt: skip
_STRING_COLUMNS = ("Kernel_Name", "KernelName", "kernel_name", "Counter_Name", "Agent_Id", "Kind",
                   "sig", "obj")  # fmt: skip
#: columns repeated by Omniperf's join of counter passes (``wave_size_3``, ``Correlation_ID_5``)
_JOIN_LEFTOVER = re.compile(
    r"^(wave_size|obj|sig|correlation_id|kernel_id|xcc_index|queue_id|queue-id|queue-index|pid|tid"
    r"|gpu_id|gpu-id|dispatch_id|kernel_name|grid_size|workgroup_size|lds_per_workgroup"
    r"|scratch_per_workitem|arch_vgpr|accum_vgpr|sgpr)_\d+$",
    re.IGNORECASE,
)
_KD_SUFFIX = re.compile(r"\s*(?:\[clone \.kd\]|\(\.kd\)|\.kd)\s*$")
_INT_EXACT = 2**53


def normalise_kernel_name(raw: str) -> str:
    """Kernel name without the profiler's code-object suffix (`` [clone .kd]``, `` (.kd)``, ``.kd``).

    >>> normalise_kernel_name("vecCopy(double*, int) [clone .kd]")
    'vecCopy(double*, int)'
    >>> normalise_kernel_name("__amd_rocclr_fillBufferAligned.kd")
    '__amd_rocclr_fillBufferAligned'
    """
    name = raw.replace("\r", "").replace("\n", "").strip()
    return _KD_SUFFIX.sub("", name).strip()


def read_table(path: Path, cap: int = DEFAULT_MAX_BYTES) -> pa.Table:
    """Parse a CSV file with pyarrow; times and names stay text (times can exceed 2**53)."""
    return read_loaded_table(path, cap)[0]


def read_loaded_table(path: Path, cap: int = DEFAULT_MAX_BYTES) -> tuple[pa.Table, Loaded]:
    """:func:`read_table`, and the file as read.

    The bytes are read capped and cleaned by :mod:`._io` (gzip, BOM, NULs, bytes
    that are not UTF-8); the file's own problems are in ``Loaded.warnings``.
    """
    loaded = load(path, cap, what="a rocprof / rocprof-compute dispatch CSV")
    data = clean_csv(loaded, strict_header=True)
    if not data or data.isspace():  # what `not data.strip()` says, without copying the file
        got = "an empty file" if not data else "only blank lines"
        raise InputError(str(path), None, f"expected a CSV header row, got {got}")
    if b"\n" not in data and b"\r" not in data:  # pyarrow: "Empty CSV file or block"
        raise InputError(
            str(path),
            "line 1",
            f"the file ends inside its header row ({len(data)} bytes, no line break); "
            "expected a CSV header row and data rows (truncated?)",
        )
    types = {c: pa.string() for c in (*_TIME_COLUMNS, *_STRING_COLUMNS)}
    convert = pacsv.ConvertOptions(
        column_types=types,
        null_values=["", "N/A", "n/a", "NA", "nan", "NaN", "None", "null"],
        strings_can_be_null=True,
    )
    read = pacsv.ReadOptions(block_size=8 << 20)
    buf = pa.py_buffer(data)
    try:
        try:  # fast, parallel parse; quoted newlines in values need the slower mode
            table = pacsv.read_csv(pa.BufferReader(buf), read_options=read, convert_options=convert)
        except pa.ArrowInvalid:
            table = pacsv.read_csv(
                pa.BufferReader(buf),
                read_options=read,
                parse_options=pacsv.ParseOptions(newlines_in_values=True),
                convert_options=convert,
            )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        m = re.search(r"Expected (\d+) columns, got (\d+)", first)
        if m:
            line = _bad_row(data, int(m.group(1)))
            raise InputError(
                str(path),
                f"line {line}" if line else None,
                f"expected {m.group(1)} fields as in the header, got {m.group(2)}",
            ) from None
        if first.startswith("Empty CSV file"):
            raise InputError(str(path), None, "expected a CSV header row, got an empty file") from None
        raise InputError(str(path), None, f"expected CSV: {first}") from None
    loaded.data = b""  # parsed: only the bytes as stored are kept, for the source's hash
    return _tidy_columns(table), loaded


def _tidy_columns(table: Any) -> Any:
    """Drop unnamed columns that hold nothing (a trailing comma on every line, as some
    spreadsheet exports write), and give every other all-empty column (pyarrow type ``null``)
    the string type, which grouping and the readers accept."""
    keep: list[str] = []
    cols: list[Any] = []
    for name, col in zip(table.column_names, table.columns, strict=True):
        empty = pa.types.is_null(col.type)
        if empty and not name.strip():
            continue
        keep.append(name)
        cols.append(pc.cast(col, pa.string()) if empty else col)
    if len(keep) == table.num_columns and not any(pa.types.is_null(c.type) for c in table.columns):
        return table
    return pa.table(cols, names=keep)


def _bad_row(data: bytes, ncols: int) -> int | None:
    """The line number of the first record whose field count differs from ``ncols``."""
    import csv
    import io

    try:
        reader = csv.reader(io.StringIO(data.decode("utf-8", errors="replace"), newline=""))
        for row in reader:
            if row and len(row) != ncols:
                return reader.line_num
    except csv.Error:
        return None
    return None


@dataclass
class Dispatches:
    """One row per dispatch: source columns, resolved launch columns, timestamps and durations."""

    source: str
    layout: str  # "wide" | "long"
    n: int
    #: source column name -> array, in file order (join leftovers dropped); what raw_columns keeps
    raw: dict[str, pa.Array] = field(default_factory=dict)
    #: Omniperf 2.x name -> source column name, for the launch columns found
    resolved: dict[str, str] = field(default_factory=dict)
    #: counter columns (and level-pass counters as ``PASS.COUNTER``) usable in formulas
    counters: dict[str, pa.Array] = field(default_factory=dict)
    start: list[int | None] = field(default_factory=list)
    end: list[int | None] = field(default_factory=list)
    duration: list[float | None] = field(default_factory=list)
    #: per dispatch, the duration of each run of it when the source ran it more than once
    #: (one counter pass each, see :func:`adopt_pass_times`); None: one run per dispatch
    samples: list[list[float]] | None = None
    #: timestamps the file wrote in rounded or non-integer notation (no duration from them)
    rounded_times: int = 0
    warnings: list[str] = field(default_factory=list)
    #: the file's own problems (NULs, bytes that are not UTF-8, repeated ids): also in
    #: ``warnings``, and carried over when this table is merged into another
    input_warnings: list[str] = field(default_factory=list)
    #: the file as read (its bytes as stored give the source artifact's hash and size)
    loaded: Loaded | None = None

    def column(self, name: str) -> pa.Array | None:
        """A launch column by its Omniperf 2.x name, or a counter, or None."""
        src = self.resolved.get(name)
        if src is not None:
            return self.raw[src]
        return self.counters.get(name)

    def values(self, name: str) -> list[object]:
        col = self.column(name)
        return col.to_pylist() if col is not None else [None] * self.n


def _combine(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _resolve(names: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        canon = ALIASES.get(name.strip().lower())
        if canon is not None and canon not in out:
            out[canon] = name
    return out


def _parse_times(col: pa.Array | None, n: int) -> tuple[list[int | None], list[str]]:
    """Timestamps as ints; values written in scientific notation are returned as None + examples."""
    if col is None:
        return [None] * n, []
    if pa.types.is_integer(col.type):
        return col.to_pylist(), []
    try:
        return pc.cast(col, pa.int64()).to_pylist(), []
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    out: list[int | None] = []
    rounded: list[str] = []
    for v in col.to_pylist():
        if v is None:
            out.append(None)
            continue
        s = str(v).strip()
        if s.isascii() and s.isdigit() and len(s) <= 20:  # int() refuses over 4300 digits
            out.append(int(s))
            continue
        try:
            x = float(s)
        except ValueError:
            out.append(None)
            rounded.append(s)
            continue
        if math.isfinite(x) and x.is_integer() and re.fullmatch(r"\d+\.0*", s):
            out.append(int(x))
        else:
            out.append(None)
            rounded.append(s)
    return out, rounded


def _empty_times(d: Dispatches, s_name: str, e_name: str) -> None:
    """Warn when a timestamp column exists but some of its cells are empty or ``nan``.

    Both are read as an empty cell (``raw_columns`` keeps ``null``), so duration and the
    per-second metrics cannot be derived for that dispatch: say so, as for ``abc``.
    """
    s_col, e_col = d.column("Start_Timestamp"), d.column("End_Timestamp")
    if s_col is None or e_col is None or "DurationNs" in d.resolved:
        return
    empty = [name for name, col in ((s_name, s_col), (e_name, e_col)) if col.null_count]
    if not empty:
        return
    n = pc.sum(pc.or_kleene(pc.is_null(s_col), pc.is_null(e_col))).as_py()
    d.warnings.append(
        f"{d.source}: {'/'.join(empty)} empty or `nan` in {n} of {d.n} dispatches; duration and "
        "per-second metrics not derived for them"
    )


def _durations(d: Dispatches, rounded: list[str], start_name: str, end_name: str) -> None:
    out: list[float | None] = []
    negative = 0
    for s, e in zip(d.start, d.end, strict=False):
        if s is None or e is None:
            out.append(None)
        elif e < s:
            negative += 1
            out.append(None)
        else:
            out.append(float(e - s))
    d.duration = out
    d.rounded_times = len(rounded)
    if rounded:
        d.warnings.append(
            f"{d.source}: {start_name}/{end_name} stored in rounded or non-integer notation "
            f"(e.g. `{rounded[0][:40]}`); duration and per-second metrics not derived for "
            f"{sum(1 for x in out if x is None)} of {d.n} dispatches"
        )
    if negative:
        d.warnings.append(
            f"{d.source}: {end_name} before {start_name} in {negative} dispatches; duration not derived"
        )


def adopt_pass_times(d: Dispatches, paths: list[Path], cap: int = DEFAULT_MAX_BYTES) -> str | None:
    """Durations from the per-pass files (``pmc_perf_N.csv``) when ``pmc_perf.csv`` has its
    timestamps averaged over the passes (non-integer: rocprof-compute 3.x on the rocprofv3
    CSV path, seen on MI350).

    Each pass ran every dispatch once more, with integer Start/End timestamps of its own:
    every pass's duration is kept as a sample of that dispatch (:attr:`Dispatches.samples`),
    and its start, end and duration are those of the pass of median duration (as for the
    long layout). Dispatches are matched by ``Dispatch_ID``. Returns the note to report, or
    None when no pass file gave a duration (``d`` unchanged)."""
    ids = d.values("Dispatch_ID")
    index = {v: i for i, v in enumerate(ids) if v is not None}
    runs: list[list[tuple[int, int, int]]] = [[] for _ in range(d.n)]  # (duration, start, end)
    used: list[str] = []
    for path in paths:
        try:
            one = read_dispatches(path, cap=cap)
        except (InputError, OSError, ValueError, pa.ArrowException):
            continue
        hit = False
        for did, s, e in zip(one.values("Dispatch_ID"), one.start, one.end, strict=False):
            i = index.get(did)
            if i is not None and s is not None and e is not None and e >= s:
                runs[i].append((e - s, s, e))
                hit = True
        if hit:
            used.append(path.name)
    if not used:
        return None
    d.samples = [[float(r[0]) for r in lst] for lst in runs]
    for i, lst in enumerate(runs):
        if lst:
            _, d.start[i], d.end[i] = sorted(lst)[(len(lst) - 1) // 2]
            d.duration[i] = float(d.end[i] - d.start[i])  # type: ignore[operator]
    s_name = d.resolved.get("Start_Timestamp", "Start_Timestamp")
    e_name = d.resolved.get("End_Timestamp", "End_Timestamp")
    d.warnings = [
        w for w in d.warnings if not w.startswith(f"{d.source}: {s_name}/{e_name} stored in rounded")
    ]
    missing = sum(1 for lst in runs if not lst)
    return (
        f"{d.source}: {s_name}/{e_name} averaged over the counter passes (non-integer); durations "
        f"from the integer timestamps of the {len(used)} per-pass file(s) {used[0]}"
        + (f" ... {used[-1]}" if len(used) > 1 else "")
        + ", each pass one more run of the dispatch (kept as samples; a dispatch's duration is its "
        "pass of median duration)"
        + (f"; {missing} of {d.n} dispatches in no pass file: no duration" if missing else "")
    )


#: per-dispatch fields that are neither launch columns nor counters
_NOT_COUNTERS = frozenset({
    "fbar", "dispatchns", "completens", "queue-index", "xcc_index", "stream_id", "kind", "sig",
    "obj", "node_id", "guid", "domain", "direction", "scratch_per_workitem",
})  # fmt: skip


def _is_counter(name: str) -> bool:
    low = name.strip().lower()
    return name not in ALIASES.values() and low not in ALIASES and low not in _NOT_COUNTERS


def read_dispatches(path: Path, *, label: str | None = None, cap: int = DEFAULT_MAX_BYTES) -> Dispatches:
    """Read a dispatch CSV in any of the wide or long layouts (at most ``cap`` bytes)."""
    table, loaded = read_loaded_table(path, cap)
    names = table.column_names
    resolved = _resolve(names)
    source = label or path.name
    if "Counter_Name" in resolved and "Counter_Value" in resolved:
        twice = [n for n, k in Counter(names).items() if k > 1]
        if twice:  # the pivot selects columns by name: pyarrow refuses a name held twice
            raise InputError(
                str(path),
                "line 1",
                f"column `{twice[0]}` appears more than once in the header; expected each once",
            )
        d = _from_long(table, resolved, source)
    else:
        d = _from_wide(table, resolved, source)
    d.loaded = loaded
    found = [*loaded.warnings, *d.input_warnings]
    d.input_warnings = found
    d.warnings[:0] = found
    return d


def read_dispatch_passes(
    paths: list[Path], *, label: str, cap: int = DEFAULT_MAX_BYTES
) -> tuple[Dispatches, list[str]]:
    """The per-pass long CSVs rocprof-compute >= 3.5 writes instead of ``pmc_perf.csv``
    (``results_pmc_perf_N.csv``, one per counter pass, each in the rocpd long layout), joined
    as analyze joins them: their rows concatenated into one long table. Files that are not in
    the long layout are left out, with a warning each; ``loaded`` is the first file read."""
    tables: list[pa.Table] = []
    warnings: list[str] = []
    first: Loaded | None = None
    found: list[str] = []
    for path in paths:
        table, loaded = read_loaded_table(path, cap)
        resolved = _resolve(table.column_names)
        if not ("Counter_Name" in resolved and "Counter_Value" in resolved and "Dispatch_ID" in resolved):
            warnings.append(
                f"{path.name}: not read as a counter pass (expected the long layout with "
                "Dispatch_ID, Counter_Name and Counter_Value columns)"
            )
            continue
        tables.append(table)
        found.extend(loaded.warnings)
        first = first or loaded
    if not tables:
        names = ", ".join(p.name for p in paths)
        raise InputError(label, None, f"expected counter passes in the long layout, none among {names}")
    table = pa.concat_tables(tables, promote_options="permissive")
    d = _from_long(table, _resolve(table.column_names), label)
    d.loaded = first
    found.extend(d.input_warnings)
    d.input_warnings = found
    d.warnings[:0] = found
    return d, warnings


def _repeated_ids(col: pa.Array | None, source: str, name: str) -> str | None:
    """A warning when ``Dispatch_ID`` values repeat (a duplicated row would count twice)."""
    if col is None or col.null_count == len(col):
        return None
    counts = pc.value_counts(col.drop_null())
    values, n = counts.field(0), counts.field(1)
    repeated = pc.filter(values, pc.greater(n, 1))
    if not len(repeated):
        return None
    extra = pc.sum(pc.subtract(pc.filter(n, pc.greater(n, 1)), 1)).as_py()
    some = ", ".join(shown(str(_text_id(v)), 24) for v in repeated.slice(0, 3).to_pylist())
    more = f" (+{len(repeated) - 3} more)" if len(repeated) > 3 else ""
    return (
        f"{source}: {extra} row(s) repeat a {name} already seen ({name} {some}{more}); every row is "
        "kept as its own dispatch, so counts and means include the repeats"
    )


def _text_id(v: object) -> object:
    return int(v) if isinstance(v, float) and v.is_integer() else v


def _from_wide(table: pa.Table, resolved: dict[str, str], source: str) -> Dispatches:
    d = Dispatches(source=source, layout="wide", n=table.num_rows)
    seen: set[str] = set()
    for i, name in enumerate(table.column_names):
        if name in seen or _JOIN_LEFTOVER.match(name):
            continue
        seen.add(name)
        col = _combine(table.column(i))
        d.raw[name] = col
        if _is_counter(name) and (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            d.counters[name] = col
    d.resolved = {k: v for k, v in resolved.items() if v in d.raw}
    repeated = _repeated_ids(d.column("Dispatch_ID"), source, d.resolved.get("Dispatch_ID", "Dispatch_ID"))
    if repeated:
        d.input_warnings.append(repeated)
    s_name = d.resolved.get("Start_Timestamp", "Start_Timestamp")
    e_name = d.resolved.get("End_Timestamp", "End_Timestamp")
    d.start, r1 = _parse_times(d.column("Start_Timestamp"), d.n)
    d.end, r2 = _parse_times(d.column("End_Timestamp"), d.n)
    _durations(d, r1 + r2, s_name, e_name)
    _empty_times(d, s_name, e_name)
    if "DurationNs" in d.resolved:  # rocprof v1 results.csv --timestamp on
        given = d.values("DurationNs")
        d.duration = [
            float(g) if isinstance(g, (int, float)) and math.isfinite(g) and g >= 0 else old
            for g, old in zip(given, d.duration, strict=False)
        ]
    return d


def _from_long(table: pa.Table, resolved: dict[str, str], source: str) -> Dispatches:
    """Pivot the long layout (one row per dispatch and counter) to one row per dispatch."""
    disp_name = resolved.get("Dispatch_ID")
    if disp_name is None:
        raise InputError(
            source,
            None,
            "expected a Dispatch_ID (or Dispatch_Id) column in the long counter layout",
        )
    cname, cval = resolved["Counter_Name"], resolved["Counter_Value"]
    s_name, e_name = resolved.get("Start_Timestamp"), resolved.get("End_Timestamp")
    table = table.filter(pc.is_valid(table[disp_name]))
    values = table[cval]
    if not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)):
        values = pa.chunked_array(
            [pa.array([_to_float(v) for v in values.to_pylist()], pa.float64())], pa.float64()
        )
    values = pc.cast(values, pa.float64())
    work = pa.table({"d": table[disp_name], "c": table[cname], "v": values})

    meta_names = [n for n in table.column_names if n not in (cname, cval, s_name, e_name)]
    meta_names = list(dict.fromkeys(meta_names))
    others = [n for n in meta_names if n != disp_name]
    grouped = (
        table.select([disp_name, *others])
        .group_by(disp_name, use_threads=False)
        .aggregate([(n, "first") for n in others])
    )
    grouped = grouped.take(pc.sort_indices(grouped[disp_name]))
    meta = {disp_name: grouped[disp_name], **{n: grouped[f"{n}_first"] for n in others}}
    ids = meta[disp_name].to_pylist()
    n = len(ids)
    index = {v: i for i, v in enumerate(ids)}
    d = Dispatches(source=source, layout="long", n=n)
    for name in meta_names:
        if _JOIN_LEFTOVER.match(name):
            continue
        d.raw[name] = _combine(meta[name])

    # timestamps: every counter pass has its own; keep the pass of median duration
    d.start, d.end = [None] * n, [None] * n
    rounded: list[str] = []
    if s_name and e_name:
        passes = table.select([disp_name, s_name, e_name]).group_by([disp_name, s_name, e_name]).aggregate([])
        starts, r1 = _parse_times(_combine(passes[s_name]), passes.num_rows)
        ends, r2 = _parse_times(_combine(passes[e_name]), passes.num_rows)
        rounded = r1 + r2
        empty = pc.sum(pc.or_kleene(pc.is_null(passes[s_name]), pc.is_null(passes[e_name]))).as_py()
        if empty:
            d.warnings.append(
                f"{source}: {s_name}/{e_name} empty or `nan` in {empty} counter pass(es) of "
                f"{passes.num_rows}; those passes not used for duration"
            )
        per: dict[int, list[tuple[int, int, int]]] = {}
        for did, s, e in zip(passes[disp_name].to_pylist(), starts, ends, strict=False):
            if did in index and s is not None and e is not None and e >= s:
                per.setdefault(index[did], []).append((e - s, s, e))
        npasses = 0
        for i, lst in per.items():
            lst.sort()
            _, d.start[i], d.end[i] = lst[(len(lst) - 1) // 2]
            npasses = max(npasses, len(lst))
        if npasses > 1:
            d.warnings.append(
                f"{source}: long counter layout with up to {npasses} counter passes per dispatch, each "
                f"with its own {s_name}/{e_name}; duration is the pass of median duration"
            )
        d.raw[s_name] = pa.array([None if s is None else str(s) for s in d.start], pa.string())
        d.raw[e_name] = pa.array([None if e is None else str(e) for e in d.end], pa.string())
    d.resolved = {k: v for k, v in resolved.items() if v in d.raw}
    _durations(d, rounded, s_name or "Start_Timestamp", e_name or "End_Timestamp")

    # counters: mean per (dispatch, counter), then one column per counter
    agg = (
        work.group_by(["c", "d"], use_threads=False)
        .aggregate([("v", "mean"), ("v", "count", pc.CountOptions(mode="all"))])
        .sort_by([("c", "ascending"), ("d", "ascending")])
    )
    repeats = pc.sum(pc.subtract(agg["v_count"], 1)).as_py() if agg.num_rows else 0
    if repeats:
        first = agg.filter(pc.greater(agg["v_count"], 1)).slice(0, 1).to_pylist()[0]
        d.input_warnings.append(
            f"{source}: {repeats} row(s) repeat a ({disp_name}, {cname}) pair already seen "
            f"(e.g. {disp_name} {shown(str(_text_id(first['d'])), 24)}, {shown(str(first['c']))}); "
            "their values are averaged"
        )
    cnames = agg["c"].to_pylist()
    dids = _combine(agg["d"])
    vals = _combine(agg["v_mean"])
    start = 0
    total = len(cnames)
    while start < total:
        name = cnames[start]
        stop = start
        while stop < total and cnames[stop] == name:
            stop += 1
        if name is not None:
            seg = vals.slice(start, stop - start)
            if stop - start == n and dids.slice(start, n).to_pylist() == ids:
                col = seg
            else:
                col_list: list[float | None] = [None] * n
                for did, v in zip(dids.slice(start, stop - start).to_pylist(), seg.to_pylist(), strict=False):
                    if did in index:
                        col_list[index[did]] = v
                col = pa.array(col_list, pa.float64())
            if name not in d.raw:
                d.raw[name] = col
                d.counters[name] = col
        start = stop
    return d


def _to_float(v: object) -> float | None:
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _whole_ids(values: list[object]) -> list[int] | None:
    """The values as ints when every one is a whole number (ids are read as floats), else None."""
    out: list[int] = []
    for v in values:
        if not isinstance(v, (int, float)) or not float(v).is_integer():
            return None
        out.append(int(v))
    return out


def id_offset(d: Dispatches, other: Dispatches) -> int:
    """How far ``d``'s ``Dispatch_ID`` numbering is ahead of ``other``'s for the same dispatches.

    rocprofv2 (Omniperf 2.x on MI300) numbers ``timestamps.csv`` from 1 and the counter passes
    (``pmc_perf.csv``, ``SQ_LEVEL_WAVES.csv``) from 0: matched by id, every dispatch would get
    its successor's counters. Non-zero only when both tables hold the same number of rows with
    whole, distinct ids, the ids differ by one constant, and the kernel names agree row by row
    under that offset but not without it (0 otherwise: the ids are taken as they are).
    """
    if d.n != other.n or not d.n:
        return 0
    ids, oids = _whole_ids(d.values("Dispatch_ID")), _whole_ids(other.values("Dispatch_ID"))
    if ids is None or oids is None or len(set(ids)) != len(ids) or len(set(oids)) != len(oids):
        return 0
    a, b = sorted(ids), sorted(oids)
    shift = a[0] - b[0]
    if shift == 0 or any(x - y != shift for x, y in zip(a, b, strict=True)):
        return 0
    kn, okn = d.values("Kernel_Name"), other.values("Kernel_Name")
    if not all(isinstance(k, str) for k in (*kn, *okn)):
        return 0  # no names to confirm the offset with
    names = {v: normalise_kernel_name(str(k)) for v, k in zip(ids, kn, strict=True)}
    onames = {v: normalise_kernel_name(str(k)) for v, k in zip(oids, okn, strict=True)}
    shifted = all(names[x] == onames[x - shift] for x in a)
    direct = all(names[x] == onames.get(x) for x in a)
    return shift if shifted and not direct else 0


def merge_level_pass(d: Dispatches, level: Dispatches, stem: str | None) -> str | None:
    """Add the counters of a level/accumulate pass (``SQ_LEVEL_WAVES.csv``) as ``STEM.COUNTER``.

    Rows are matched by dispatch id when both tables have one, else by position when the
    row counts agree. Returns a warning when they cannot be matched.
    """
    d.warnings.extend(level.input_warnings)
    ids = d.values("Dispatch_ID")
    lids = level.values("Dispatch_ID")
    order: list[int | None]
    if any(x is not None for x in ids) and any(x is not None for x in lids):
        where = {v: i for i, v in enumerate(lids)}
        order = [where.get(v) for v in ids]
        shift = id_offset(d, level)
        whole, lwhole = _whole_ids(ids), _whole_ids(lids)
        if shift and whole is not None and lwhole is not None:
            d.warnings.append(
                f"{level.source}: Dispatch_ID numbered from {min(lwhole)} where {d.source} numbers from "
                f"{min(whole)} (rocprofv2 writes timestamps.csv from 1, the counter passes from 0); rows "
                "matched with that offset"
            )
            lwhere = {v: i for i, v in enumerate(lwhole)}
            order = [lwhere.get(v - shift) for v in whole]
    elif level.n == d.n:
        order = list(range(d.n))
    else:
        return (
            f"{level.source}: {level.n} rows for {d.n} dispatches and no Dispatch_ID to match them; not used"
        )
    if all(o is None for o in order):
        return f"{level.source}: no Dispatch_ID in common with {d.source}; not used"
    take = pa.array(order, pa.int64())
    for name, col in level.counters.items():
        key = f"{stem}.{name}" if stem else name
        if key in d.counters:
            continue
        arr = col.take(take)
        d.counters[key] = arr
        d.raw[key] = arr
    return None
