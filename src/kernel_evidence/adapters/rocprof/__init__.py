"""rocprof-compute / Omniperf / rocprof adapter: one packet per workload.

Inputs (paths; folders are searched for what they hold, up to four levels down):

* a **workload folder** of Omniperf 1.x/2.x or rocprof-compute 3.x (``pmc_perf.csv`` wide or
  rocpd long, ``sysinfo.csv`` in any layout, the ``SQ_*LEVEL*.csv`` level passes,
  ``timestamps.csv``, ``roofline.csv``, ``profiling_config.yaml``, ``log.txt``);
* an **analyze export**: Omniperf 1.x numbered tables (``prev_analysis/201.csv``...) or a
  2.x/3.x ``--save-dfs`` folder (``2.1_System_Speed-of-Light.csv``...);
* **rocprofv3** ``kernel_trace.csv`` / ``counter_collection.csv`` (with ``agent_info.csv``
  when present) and **rocprof v1** ``results.csv`` on their own;
* **rocprofv3 traces read whole**, chosen by content: the JSON output (``results.json``,
  plain or gzip) and the rocpd SQLite database, one packet per profiled process with one
  record per kernel per GPU (see ``_traces``).

Each dispatch becomes a :class:`~kernel_evidence.models.KernelRecord` with the canonical
metrics of ``adapters/rocprof.toml`` computed with rocprof-compute's published formulas;
every source column is kept, one value per record, in ``ProfilerCapture.raw_columns``, or,
for a capture of more than ``AdapterOptions.inline_max_cells`` values when the caller gives a
``side_dir``, in an Arrow IPC side file (``ProfilerCapture.raw_table``) written from the
Arrow columns in a worker thread, so no raw cell becomes a Python object. What cannot be
derived (rounded timestamps, zero clocks, missing files or counters) becomes a warning
naming it; partial inputs never crash.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
import shlex
import statistics
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..._codec.ids import finish_packet
from ..._gc import PROMOTE_CELLS, paused_gc, promote_survivors, raw_cell_count
from ..._resources import load_toml
from ...errors import AdapterError, InputError
from ...models import (
    Artifact,
    ByteSize,
    EvidencePacket,
    Hardware,
    KernelRecord,
    ProfilerCapture,
    Quantity,
    Replay,
    Stats,
    Task,
    Timing,
)
from ...units import convert
from .. import AdapterOptions, AdapterResult
from .._envelope import start_packet
from .._objects import Records
from .._objects import floats as _floats
from .._read import is_junk_entry, max_bytes_option
from ._analyze import AnalyzeTables, is_analyze_dir, number
from ._formula import Formula
from ._io import Loaded, decode_text, load, shown
from ._sysinfo import (
    SysInfo,
    read_agent_info,
    read_log,
    read_profiling_config,
    read_rocminfo,
    read_roofline,
    read_sysinfo,
)
from ._tables import (
    Dispatches,
    adopt_pass_times,
    id_offset,
    merge_level_pass,
    normalise_kernel_name,
    read_dispatch_passes,
    read_dispatches,
)
from ._traces import TRACE_KINDS, read_traces, sniff_trace

__all__ = ["ADAPTER", "RocprofAdapter", "load_mapping"]

_MAX_DEPTH = 4
_PMC_NAMES = ("pmc_perf.csv", "pmc_perf.csv.gz")


# --------------------------------------------------------------------------- mapping table


@dataclass(frozen=True)
class Source:
    """One way to obtain a canonical metric (a row of ``sources`` in rocprof.toml)."""

    metrics: tuple[str, ...]
    unit: str
    formula: Formula | None = None
    table: str | None = None
    column: str | None = None
    scale: float = 1.0
    combine: str | None = None


@dataclass(frozen=True)
class MetricMap:
    name: str
    unit: str
    equivalence: str
    sources: tuple[Source, ...]


@lru_cache(maxsize=1)
def load_mapping() -> tuple[MetricMap, ...]:
    """The canonical metrics of ``adapters/rocprof.toml``, in file order, formulas parsed."""
    table = load_toml("rocprof.toml")
    canon = load_toml("canonical_metrics.toml")["metrics"]
    out = []
    for name, spec in table.get("metrics", {}).items():
        if name not in canon:
            raise AdapterError(f"rocprof.toml: `{name}` is not a canonical metric (canonical_metrics.toml)")
        sources = []
        for s in spec.get("sources", []):
            metric = s.get("metric", ())
            metrics = (metric,) if isinstance(metric, str) else tuple(metric)
            formula = Formula.parse(s["formula"]) if "formula" in s else None
            sources.append(
                Source(
                    metrics=metrics,
                    unit=s.get("unit", canon[name]["unit"]),
                    formula=formula,
                    table=s.get("table"),
                    column=s.get("column"),
                    scale=float(s.get("scale", 1.0)),
                    combine=s.get("combine"),
                )
            )
        out.append(MetricMap(name, canon[name]["unit"], spec.get("equivalence", "none"), tuple(sources)))
    return _dependency_order(out)


def _dependency_order(maps: list[MetricMap]) -> tuple[MetricMap, ...]:
    """File order, except that a metric comes after the ``metrics.X`` its formulas read."""
    deps = {
        m.name: {
            c.split(".", 1)[1]
            for s in m.sources
            if s.formula
            for c in s.formula.columns
            if c.startswith("metrics.")
        }
        for m in maps
    }
    done: list[MetricMap] = []
    pending = list(maps)
    while pending:
        ready = [m for m in pending if deps[m.name] <= {d.name for d in done}]
        if not ready:
            raise AdapterError(
                f"rocprof.toml: circular metrics.* references among {[m.name for m in pending]}"
            )
        done.extend(ready)
        pending = [m for m in pending if m not in ready]
    return tuple(done)


# --------------------------------------------------------------------------- discovery


@dataclass
class _Job:
    kind: str  # workload | analyze | v3 | file
    path: Path
    files: dict[str, Path] = field(default_factory=dict)


def _sniff(path: Path) -> str | None:
    """What a CSV under another name holds, from its first 4 KiB (gunzipped if need be).

    Only the head is read, so the cap does not apply here: the file is read in full, capped,
    by the reader its kind selects.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read(4096)
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, 4096)
        except zlib.error:
            return None
    if trace := sniff_trace(raw):  # rocpd database, rocprofv3 JSON
        return trace
    head = raw.removeprefix(b"\xef\xbb\xbf").replace(b"\x00", b"").decode("utf-8", errors="replace")
    first = head.splitlines()[0] if head else ""
    cols = {c.strip().strip('"').lower() for c in first.split(",")}
    if {"metric"} <= cols and ({"pct of peak", "pop"} & cols or {"avg", "value"} & cols):
        return "analyze"
    if {"count", "sum(ns)"} <= cols:
        return "analyze"
    if {"name", "calls", "totaldurationns"} <= cols:
        return "stats"
    if ({"kernel_name", "kernelname"} & cols) or ({"counter_name", "counter_value"} <= cols):
        return "file"
    return None


def _discover(path: Path, depth: int = 0) -> list[_Job]:
    if path.is_file():
        if path.name in _PMC_NAMES or path.name == "sysinfo.csv":
            return _discover(path.parent, depth)
        kind = _sniff(path)
        if kind == "analyze":
            return [_Job("analyze", path.parent)]
        if kind == "file":
            return [_Job("file", path)]
        if kind == "stats" and _is_kernel_stats(path.name):
            return [_Job("stats", path)]
        if kind in TRACE_KINDS:
            return [_Job(kind, path)]
        return []
    if not path.is_dir():
        if path.exists():
            raise InputError(str(path), None, "not a regular file or folder (a FIFO, socket or device)")
        raise InputError(str(path), None, "no such file or folder")
    try:
        # hidden files (.DS_Store, macOS ._name resource forks) and __MACOSX/ are never outputs
        entries = sorted(e for e in path.iterdir() if not is_junk_entry(e, path))
    except OSError as exc:
        raise InputError(str(path), None, f"cannot list: {exc.strerror or exc}") from None
    names = {p.name for p in entries}
    if (
        any(n in names for n in _PMC_NAMES)
        or "sysinfo.csv" in names
        or "timestamps.csv" in names
        or any(n.startswith("results_pmc_perf_") for n in names)
    ):
        return [_Job("workload", path)]
    if is_analyze_dir(path):
        return [_Job("analyze", path)]
    traces = [p for p in entries if p.name.endswith(("kernel_trace.csv", "counter_collection.csv"))]
    if traces:
        groups: dict[str, dict[str, Path]] = {}
        for p in traces:
            kind = "trace" if p.name.endswith("kernel_trace.csv") else "counters"
            prefix = p.name[: -len("kernel_trace.csv" if kind == "trace" else "counter_collection.csv")]
            groups.setdefault(prefix, {})[kind] = p
        return [_Job("v3", path, files) for _, files in sorted(groups.items())]
    if "results.csv" in names:
        return [_Job("file", path / "results.csv")]
    # rocprof v1 counter runs and other per-dispatch CSVs under their own names; per-kernel
    # statistics (rocprofv3 ``*kernel_stats.csv``, rocprof v1 ``results.stats.csv``) only
    # where no per-dispatch table sits beside them
    jobs: list[_Job] = []
    for p in entries:
        if p.name.endswith((".db", ".json", ".json.gz")) and p.is_file():
            if (kind := _sniff(p)) in TRACE_KINDS:  # rocpd `<pid>_results.db`, JSON `<pid>_results.json`
                jobs.append(_Job(kind, p))
            continue
        if p.suffix != ".csv" or not p.is_file():
            continue
        kind = _sniff(p)
        if kind == "file":
            jobs.append(_Job("file", p))
        elif kind == "stats" and _is_kernel_stats(p.name):
            jobs.append(_Job("stats", p))
    if depth >= _MAX_DEPTH:
        return jobs
    for p in entries:
        if p.is_dir() and not p.name.startswith("."):
            jobs.extend(_discover(p, depth + 1))
    return jobs


def _is_kernel_stats(name: str) -> bool:
    """rocprofv3 ``<prefix>kernel_stats.csv`` or rocprof v1 ``<prefix>.stats.csv``.

    The HIP/HSA API, memory-copy and domain statistics share the header
    (``Name,Calls,TotalDurationNs,...``) but list API calls, not kernels: v1 names them
    ``results.hip_stats.csv`` / ``.hsa_stats.csv`` / ``.copy_stats.csv``, v3
    ``*_hip_api_stats.csv``, ``*_domain_stats.csv``, ``*_memory_copy_stats.csv``.
    """
    low = name.lower().removesuffix(".gz")
    return low.endswith("kernel_stats.csv") or low == "stats.csv" or low.endswith(".stats.csv")


# --------------------------------------------------------------------------- helpers


def _artifact(path: Path, loaded: Loaded | None) -> Artifact:
    """The source file, hashed from the bytes the adapter read (the file is not read again)."""
    if loaded is None:
        return Artifact(kind="profile", name=path.name, path=str(path))
    return Artifact(
        kind="profile",
        name=path.name,
        path=str(path),
        sha256="sha256:" + hashlib.sha256(loaded.raw).hexdigest(),
        size=ByteSize(value=float(len(loaded.raw)), unit="B"),
        media_type="text/csv",
    )


def _raw_column(col: pa.Array) -> list[float | str | None]:
    """A source column as ``raw_columns`` keeps it: numbers as floats, the rest as text.

    Integers beyond 2**53 (which a float would round) and non-finite numbers (which JSON
    cannot hold) are kept as their text; empty cells are None.
    """
    t = col.type
    if pa.types.is_integer(t):
        if len(col) - col.null_count:
            lo, hi = pc.min_max(col).values()
            if max(-lo.as_py(), hi.as_py()) >= _INT_EXACT:
                return pc.cast(col, pa.string()).to_pylist()  # type: ignore[no-any-return]
        return _floats(pc.cast(col, pa.float64()))
    if pa.types.is_floating(t):
        if t != pa.float64():
            col = pc.cast(col, pa.float64())
        values: list[float | str | None] = _floats(col)
        if pc.all(pc.is_finite(col)).as_py() is False:  # null when every cell is empty
            values = [v if v is None or math.isfinite(v) else str(v) for v in values]  # type: ignore[arg-type]
        return values
    if pa.types.is_null(t):
        return [None] * len(col)
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        col = pc.cast(col, pa.string())  # booleans, dates, anything else pyarrow inferred
    return col.to_pylist()  # type: ignore[no-any-return]


_INT_EXACT = 2**53


def _raw_arrow(col: pa.Array) -> pa.Array | list[float | str | None]:
    """A source column for a raw-metrics side file: what :func:`_raw_column` gives, left in
    Arrow (float64 numbers, text as string), so no cell becomes a Python object.

    Only a float column with an infinite value (JSON text ``inf`` inline, a JSON cell in the
    side file) is made Python values, by :func:`_raw_column` itself.
    """
    t = col.type
    if pa.types.is_integer(t):
        if len(col) - col.null_count:
            lo, hi = pc.min_max(col).values()
            if max(-lo.as_py(), hi.as_py()) >= _INT_EXACT:
                return pc.cast(col, pa.string())
        return pc.cast(col, pa.float64())
    if pa.types.is_floating(t):
        if pc.all(pc.is_finite(col)).as_py() is False:
            return _raw_column(col)
        return col if t == pa.float64() else pc.cast(col, pa.float64())
    if pa.types.is_null(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        return col
    return pc.cast(col, pa.string())


_STEM_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]+")


def _side_stem(name: str) -> str:
    """The stem of an input's side file (``<stem>.raw-<digest>.arrow``): the input's name
    (workload folder, analyze folder, CSV file without ``.csv``), reduced to safe characters."""
    name = name.removesuffix(".gz").removesuffix(".csv")
    return _STEM_UNSAFE.sub("_", name).strip("._-")[:64] or "rocprof"


def _int_or_none(v: object) -> int | None:
    """An integer a packet can hold (64-bit: ``1e308`` is integral, but no device or size)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        v = int(v)
    if isinstance(v, int):
        return v if -(2**63) <= v < 2**63 else None
    if isinstance(v, str):
        digits = "".join(ch for ch in v if ch.isascii() and ch.isdigit())  # int() refuses "²"
        return int(digits) if digits and len(digits) < 19 else None
    return None


def _text(v: object) -> str | None:
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _float_column(col: pa.Array) -> pa.Array | None:
    if pa.types.is_floating(col.type):
        return col
    if pa.types.is_integer(col.type):  # counters beyond 2**53 are rounded for the formulas only
        return pc.cast(col, pa.float64(), safe=False)
    return None


# --------------------------------------------------------------------------- derivation

#: canonical metrics a kernel trace gives without counters
_LAUNCH_METRICS = frozenset({
    "duration", "grid_size", "block_size", "registers_per_thread", "scalar_registers",
    "shared_memory_per_block",
})  # fmt: skip


@lru_cache(maxsize=1)
def _dispatch_columns() -> frozenset[str]:
    """Every column a per-dispatch source of the mapping table reads (formula or direct)."""
    return frozenset(
        c
        for m in load_mapping()
        for s in m.sources
        if s.table is None
        for c in (s.formula.columns if s.formula is not None else s.metrics)
    )


def _derive(d: Dispatches, sysinfo: SysInfo) -> tuple[dict[str, tuple[pa.Array, str]], list[str]]:
    """Canonical metric columns for every dispatch (float64, null where not derived) with
    their units, and what could not be derived."""
    variables = sysinfo.variables()
    names: dict[str, pa.Array] = {}
    read = _dispatch_columns()
    for name, col in d.counters.items():
        # only the counters a formula reads are cast (a workload has hundreds of counters);
        # formulas look up no other name, so the result is as if every one were there
        f = _float_column(col) if name in read else None
        if f is not None:
            names[name] = f
    for canon in d.resolved:
        col = d.column(canon)
        f = _float_column(col) if col is not None else None
        if f is not None:
            names[canon] = f
    names["Duration"] = pa.array(d.duration, pa.float64())
    hardware_counters = any(
        n[:3] in {"SQ_", "TCC", "GRB", "TCP", "TA_", "TD_", "SPI", "CPC", "CPF"} for n in d.counters
    )
    out: dict[str, tuple[pa.Array, str]] = {}
    warnings: list[str] = []
    no_duration = all(x is None for x in d.duration)
    lacking: list[tuple[str, str]] = []
    for m in load_mapping():
        dispatch_sources = [s for s in m.sources if s.table is None]
        if not dispatch_sources:
            continue
        reason = None
        for s in dispatch_sources:
            if s.formula is None:
                col = names.get(s.metrics[0]) if len(s.metrics) == 1 else None
                if col is None:
                    reason = reason or f"{d.source} has no {s.metrics[0]}"
                    continue
                result: Any = pc.if_else(pc.is_finite(col), col, pa.scalar(None, pa.float64()))
            else:
                missing_cols = sorted(s.formula.columns - names.keys())
                missing_vars = sorted(s.formula.variables - variables.keys())
                if missing_cols:
                    empty = [c for c in missing_cols if c in d.raw]
                    if empty:  # the column is there, but no cell holds a number
                        reason = (
                            reason or f"{empty[0]} is empty or not numeric in every dispatch of {d.source}"
                        )
                        continue
                    shown = [c for c in missing_cols if not c.startswith("metrics.")] or missing_cols
                    reason = reason or f"{d.source} has no {', '.join(shown[:3])}" + (
                        f" (+{len(shown) - 3} more)" if len(shown) > 3 else ""
                    )
                    continue
                if missing_vars:
                    if reason is not None and reason.startswith(f"{d.source} has no"):
                        reason = None  # the counters of this source are there: name the variable
                    if "hbm_bw" in missing_vars:
                        reason = reason or sysinfo.peak_hbm()[1]
                    elif "num_xcd" in missing_vars and sysinfo.xcd_unknown():
                        reason = reason or sysinfo.xcd_unknown()
                    else:
                        reason = (
                            reason
                            or f"{sysinfo.source or 'sysinfo.csv'} has no usable {', '.join('$' + v for v in missing_vars)}"
                        )
                    continue
                result = s.formula.evaluate(names, variables)
                if isinstance(result, float):
                    result = pa.array([result if math.isfinite(result) else None] * d.n, pa.float64())
            factor = convert(1.0, s.unit, m.unit) * s.scale if s.unit != m.unit else s.scale
            if factor != 1.0:
                result = pc.multiply(result, factor)
            result, problem = _in_range(m.name, m.unit, result, d)
            if problem:
                warnings.append(problem)
            result = pc.add(result, 0.0)  # -0.0 + 0.0 is 0.0: one zero per metric
            if result.null_count == len(result):
                if s.formula is None:
                    reason = f"{s.metrics[0]} is empty or not finite in every dispatch of {d.source}"
                elif "Duration" in s.formula.columns and no_duration:
                    reason = "no dispatch has a duration"
                else:
                    reason = f"zero denominators or empty counters in every dispatch of {d.source}"
                continue
            out[m.name] = (result, m.unit)
            names[f"metrics.{m.name}"] = result
            reason = None
            break
        if m.name not in out and reason and d.n:
            if reason.startswith(f"{d.source} has no"):
                lacking.append((m.name, reason))
            else:
                warnings.append(f"{m.name} not derived: {reason}")
    if not hardware_counters and d.n:
        counter_based = [name for name, _ in lacking if name not in _LAUNCH_METRICS]
        lacking = [(name, r) for name, r in lacking if name in _LAUNCH_METRICS]
        if counter_based and d.counters:
            # rocprof v1 derived metrics (GPUBusy, Wavefronts, VALUUtilization...) are counters
            # too, only not the ones the formulas read; their names are the file's text, put on
            # one line whatever they hold (a quoted line break)
            some = ", ".join(" ".join(c.split()) for c in list(d.counters)[:4]) + (
                f" (+{len(d.counters) - 4} more)" if len(d.counters) > 4 else ""
            )
            warnings.append(
                f"{d.source}: none of the hardware counters the formulas read (the file's {some} are "
                f"kept in raw_columns); not derived: {', '.join(counter_based)}"
            )
        elif counter_based:
            warnings.append(f"{d.source}: no hardware counters; not derived: {', '.join(counter_based)}")
    if len(lacking) > 3:
        names_ = ", ".join(name for name, _ in lacking)
        warnings.append(f"not derived for lack of counters in {d.source}: {names_} ({lacking[0][1]}, ...)")
    else:
        warnings.extend(f"{name} not derived: {r}" for name, r in lacking)
    return out, warnings


def _in_range(name: str, unit: str, result: Any, d: Dispatches) -> tuple[Any, str | None]:
    """Null the values no dispatch can physically have, with a warning saying how many.

    Every canonical metric derived from counters is a count, a size, a time or a rate, so
    never negative; a percentage (a utilisation, occupancy, hit rate or fraction of peak) is
    at most 100. Values outside come from inconsistent inputs (counters of different passes,
    a wrong ``cu_per_gpu``/``num_xcd``, a damaged cell) and are left out, not clipped.
    """
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    low = pc.less(result, 0.0)
    high = pc.greater(result, 100.0) if unit == "%" else None
    n_low = pc.sum(low).as_py() or 0
    n_high = (pc.sum(high).as_py() or 0) if high is not None else 0
    if not n_low and not n_high:
        return result, None
    bad = pc.or_kleene(low, high) if high is not None else low
    parts = []
    if n_low:
        parts.append(f"negative in {n_low} (min {pc.min(result).as_py():.6g} {unit})")
    if n_high:
        parts.append(f"above 100 % in {n_high} (max {pc.max(result).as_py():.6g} %)")
    out = pc.if_else(bad, pa.scalar(None, pa.float64()), result)
    return out, (
        f"{name}: {' and '.join(parts)} of {d.n} dispatches of {d.source}, which is not physically "
        "possible (inconsistent counters or sysinfo values); left out for them"
    )


def _texts(col: pa.Array | None, n: int) -> list[str | None]:
    """A column as the text a record keeps (:func:`_text` of each cell, None where empty);
    integers are formatted by Arrow, as ``str()`` would."""
    if col is None:
        return [None] * n
    if pa.types.is_integer(col.type):
        return pc.cast(col, pa.string()).to_pylist()  # type: ignore[no-any-return]
    return [_text(v) for v in col.to_pylist()]


def _kernel_records(
    d: Dispatches, derived: dict[str, tuple[pa.Array, str]], encode: bool = True
) -> tuple[list[KernelRecord], bytes | None]:
    """(One record per dispatch: identity, launch shape and canonical metrics (raw is
    columnar), the records' canonical JSON if ``encode``, else None): the same values, as
    plain data, encoded once for the packet id (see ``kernel_evidence._codec.ids.finish_packet``)."""
    n = d.n
    kernel = d.values("Kernel_Name")
    ids = _texts(d.column("Dispatch_ID"), n)
    gpus = d.values("GPU_ID")
    pids = _texts(d.column("PID"), n)
    queues = _texts(d.column("Queue_ID"), n)
    if "Grid_Size_X" in d.resolved:
        gx, gy, gz = (d.values(f"Grid_Size_{a}") for a in "XYZ")
        grids: list[list[int] | None] = [_dims(x, y, z) for x, y, z in zip(gx, gy, gz, strict=False)]
    else:
        grids = _dims_column(d.values("Grid_Size"))
    if "Workgroup_Size_X" in d.resolved:
        bx, by, bz = (d.values(f"Workgroup_Size_{a}") for a in "XYZ")
        blocks: list[list[int] | None] = [_dims(x, y, z) for x, y, z in zip(bx, by, bz, strict=False)]
    else:
        blocks = _dims_column(d.values("Workgroup_Size"))
    out = Records([(name, col, unit) for name, (col, unit) in derived.items()], n, encode)
    names: dict[str, str] = {}
    devices: dict[object, int | None] = {}
    for i in range(n):
        raw_name = kernel[i]
        raw_text = raw_name if isinstance(raw_name, str) else None
        name = ""
        if raw_text:
            name = names.get(raw_text) or names.setdefault(raw_text, normalise_kernel_name(raw_text))
        ident = ids[i]
        if not name:
            name = f"dispatch {ident or i}"
        fields: dict[str, Any] = {"name": name}
        if raw_text is not None and raw_text != name:
            fields["raw_name"] = raw_text
        if ident is not None:
            fields["id"] = ident
        g = gpus[i]
        if g is not None:
            dev = devices[g] if g in devices else devices.setdefault(g, _int_or_none(g))
            if dev is not None:
                fields["device"] = dev
        if pids[i] is not None:
            fields["process"] = pids[i]
        if queues[i] is not None:
            fields["stream"] = queues[i]
        if grids[i] is not None:
            fields["grid"] = grids[i]
        if blocks[i] is not None:
            fields["block"] = blocks[i]
        out.add(fields, i)
    return out.result()


def _dims_column(values: list[object]) -> list[list[int] | None]:
    """``[v]`` per cell (equal cells share one list: records never mutate it), None if not a size."""
    cache: dict[object, list[int] | None] = {}
    out: list[list[int] | None] = []
    for v in values:
        hit = cache.get(v, False) if isinstance(v, (int, float, str)) else _dims(v)
        if hit is False:
            hit = cache[v] = _dims(v)
        out.append(hit)  # type: ignore[arg-type]
    return out


def _dims(*vals: object) -> list[int] | None:
    out = [_int_or_none(v) for v in vals]
    if any(v is None or v < 0 for v in out):
        return None
    return out  # type: ignore[return-value]


def _summary(derived: dict[str, tuple[pa.Array, str]]) -> dict[str, Quantity]:
    out = {}
    for name, (col, unit) in derived.items():
        xs: list[float] = _floats(col.drop_null())  # float64: no text
        if xs:
            out[name] = Quantity(value=float(statistics.fmean(xs)), unit=unit)
    return out


def _top_kernel(d: Dispatches) -> tuple[str | None, list[float]]:
    totals: dict[str, float] = {}
    per: dict[str, list[float]] = {}
    names: dict[str, str] = {}
    runs = d.samples or [[]] * d.n
    for k, dur, more in zip(d.values("Kernel_Name"), d.duration, runs, strict=False):
        if not isinstance(k, str) or dur is None:
            continue
        name = names.get(k) or names.setdefault(k, normalise_kernel_name(k))
        if not name:
            continue
        totals[name] = totals.get(name, 0.0) + dur
        per.setdefault(name, []).extend(more or [dur])  # each counter pass: one more run
    if not totals:
        return None, []
    top = max(sorted(totals), key=lambda n: totals[n])
    return top, per[top]


def _stats(samples: list[float]) -> Stats | None:
    if not samples:
        return None
    return Stats(
        unit="ns",
        median=float(statistics.median(samples)),
        mean=float(statistics.fmean(samples)),
        min=float(min(samples)),
        max=float(max(samples)),
        std=float(statistics.stdev(samples)) if len(samples) > 1 else None,
        n=len(samples),
    )


def _attr_value(v: object) -> str | float | int | None:
    if v is None or isinstance(v, (str, int)) and not isinstance(v, bool):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (list, tuple)):
        return " ".join(str(x) for x in v)
    return str(v)


# --------------------------------------------------------------------------- packets


def _packet(
    *,
    options: AdapterOptions,
    subject: str,
    description: str,
    capture: ProfilerCapture,
    hardware: Hardware | None,
    timing: Timing | None,
    workload: str | None,
    command: list[str] | None,
    notes: str | None,
) -> EvidencePacket:
    return start_packet(
        subject_kind="kernel",
        subject_name=subject,
        description=description,
        created_at=options.created_at,
        task=Task(workload=workload) if workload else None,
        timing=timing,
        profiler=[capture],
        hardware=hardware,
        replay=Replay(command=command, notes=notes) if command else None,
    )


def _app_command(config: dict[str, Any], sysinfo: SysInfo) -> list[str] | None:
    rem = config.get("remaining")
    if isinstance(rem, list) and rem:
        argv = [str(x) for x in rem]
        if argv and argv[0] == "--":
            argv = argv[1:]
        if argv:
            return argv
    cmd = sysinfo.text("command")
    if cmd:
        try:
            return shlex.split(cmd)
        except ValueError:
            return [cmd]
    return None


def _dispatch_packet(
    d: Dispatches,
    sysinfo: SysInfo,
    *,
    options: AdapterOptions,
    tool: str,
    version: str | None,
    source: Path | None,
    workload: str,
    attributes: dict[str, str | float | int | None],
    warnings: list[str],
    command: list[str] | None,
    command_note: str | None,
    input_name: str,
) -> EvidencePacket:
    stem = _side_stem(input_name)
    raw_columns: dict[str, list[float | str | None]] | None = None
    raw_ref: Artifact | None = None
    with ThreadPoolExecutor(max_workers=2) as pool:
        # the source's SHA-256 is computed, and a raw-metrics side file written, while the
        # records are built (hashlib, Arrow's IPC writer and zstd drop the GIL)
        artifact = pool.submit(_artifact, source, d.loaded) if source is not None else None
        side = None
        if d.n and d.raw and options.wants_raw_table(d.n, len(d.raw)):
            # the columns are made ready here: the worker then needs the GIL only a few times
            # (a worker waiting for it behind this loop of Python would wait 5 ms each time)
            columns = {name: _raw_arrow(col) for name, col in d.raw.items()}
            side = pool.submit(options.raw_table, columns, None, d.n, stem)
        derived, derive_warnings = _derive(d, sysinfo)
        with_id = bool(options.extra.get("packet_ids", True))
        from ..._codec.encode import kernels_json_wanted

        encode = with_id or kernels_json_wanted()  # the caller writes the packet at once
        records, kernels_json = _kernel_records(d, derived, encode=encode)
        if side is None and d.n:
            raw_columns = {name: _raw_column(col) for name, col in d.raw.items()}
            if raw_columns:
                raw_ref = options.raw_table(raw_columns, None, d.n, stem)
                if raw_ref is not None:
                    raw_columns = None
        source_artifact = artifact.result() if artifact is not None else None
        warnings = [*warnings, *d.warnings, *derive_warnings]
        top, samples = _top_kernel(d)
        if top is None and records:
            counts: dict[str, int] = {}
            for r in records:
                counts[r.name] = counts.get(r.name, 0) + 1
            if len(counts) == 1:
                top = next(iter(counts))
        kernels = {r.name for r in records}
        attrs = dict(attributes)
        attrs.update(dispatches=d.n, kernels=len(kernels), layout=d.layout)
        capture = ProfilerCapture(
            tool=tool,
            version=version,
            source=source_artifact,
            kernels=records or None,
            summary=_summary(derived) or None,
            attributes={k: a for k, v in attrs.items() if (a := _attr_value(v)) is not None} or None,
            warnings=warnings or None,
        )
        if raw_columns:  # values converted by _raw_column to the field's types: not validated again
            capture = capture.model_copy(update={"raw_columns": raw_columns})
        elif raw_ref is not None:
            capture = capture.model_copy(update={"raw_table": raw_ref})
        stats = _stats(samples)
        timing = None
        if stats is not None:
            timing = Timing(
                method="profiler",
                stats=stats,
                clock_policy="unknown",
                notes=(
                    (
                        f"durations (End - Start timestamps) of the {stats.n} runs (one per counter "
                        "pass) of the dispatches of the subject kernel "
                        if d.samples
                        else f"durations (End - Start timestamps) of the {stats.n} dispatches of the subject kernel "
                    )
                    + (
                        f"under {tool} counter collection"
                        if d.counters
                        else f"in the {tool} kernel trace (no counters collected)"
                    )
                ),
            )
        device = sysinfo.text("gpu_model") or sysinfo.text("product_name") or sysinfo.text("gpu_arch")
        description = f"{tool} workload `{workload}`: {d.n} dispatch(es) of {len(kernels)} kernel(s)" + (
            f" on {device}" if device else ""
        )
        packet = _packet(
            options=options,
            subject=top or workload,
            description=description,
            capture=capture,
            hardware=sysinfo.hardware(),
            timing=timing,
            workload=workload,
            command=command,
            notes=command_note,
        )
        if side is None:
            return finish_packet(packet, 0, kernels_json=kernels_json, with_id=with_id)
        ref = side.result()
        if ref is None:  # options that keep the values inline after all (a subclass's choice)
            inline = capture.model_copy(update={"raw_columns": {n: _raw_column(c) for n, c in d.raw.items()}})
            packet = packet.model_copy(update={"profiler": [inline]})
            return finish_packet(packet, 0, kernels_json=kernels_json, with_id=with_id)
        return finish_packet(packet, 0, kernels_json=kernels_json, raw_table=ref, with_id=with_id)


def _read_workload(job: _Job, options: AdapterOptions) -> EvidencePacket:
    folder = job.path
    cap = max_bytes_option(options.extra)
    warnings: list[str] = []
    attributes: dict[str, str | float | int | None] = {}

    # exists(), not is_file(): a directory or a device under an input's name is an error
    # (read_capped says which), not a file silently taken as missing
    sysinfo = SysInfo()
    if _present(folder / "sysinfo.csv"):
        sysinfo = read_sysinfo(folder / "sysinfo.csv", cap)
        warnings.extend(sysinfo.warnings)
        if sysinfo.layout is not None:
            attributes["sysinfo_layout"] = sysinfo.layout
    else:
        warnings.append("sysinfo.csv missing: no hardware, peaks or XCD count (num_xcd taken as 1)")

    log: dict[str, str] = {}
    if _present(folder / "log.txt"):
        log, w = read_log(folder / "log.txt", cap)
        warnings.extend(w)
    config: dict[str, Any] = {}
    if _present(folder / "profiling_config.yaml"):
        config, w = read_profiling_config(folder / "profiling_config.yaml", cap)
        warnings.extend(w)
        for key in (
            "format_rocprof_output",
            "join_type",
            "kernel",
            "dispatch",
            "no_roof",
            "roof_only",
        ):
            if config.get(key) is not None:
                attributes[f"config.{key}"] = _attr_value(config[key])
    if _present(folder / "roofline.csv"):
        peaks, w = read_roofline(folder / "roofline.csv", cap)
        warnings.extend(w)
        for key in (
            "HBMBw",
            "L2Bw",
            "L1Bw",
            "LDSBw",
            "FP32Flops",
            "FP64Flops",
            "MFMAF16Flops",
            "MFMABF16Flops",
            "MFMAF64Flops",
        ):
            if key in peaks:
                attributes[f"roofline.{key}"] = peaks[key]

    # which tool wrote it
    tool = log.get("tool")
    if tool is None:
        ver = sysinfo.number("version")
        tool = "rocprof-compute" if (ver is not None and ver >= 3) or config else "omniperf"
    version = log.get("version")
    backend = log.get("profiler") or (
        "rocprofv3" if config.get("format_rocprof_output") or log.get("profiler_hint") else None
    )

    pmc = next((folder / n for n in _PMC_NAMES if _present(folder / n)), None)
    d: Dispatches | None = None
    source: Path | None = None
    if pmc is not None:
        d = read_dispatches(pmc, cap=cap)
        source = pmc
        if "Start_Timestamp" not in d.resolved and _present(folder / "timestamps.csv"):
            ts = read_dispatches(folder / "timestamps.csv", cap=cap)
            _adopt_times(d, ts)
        elif d.rounded_times and (per_pass := _pmc_passes(folder)):
            note = adopt_pass_times(d, per_pass, cap)
            if note is not None:
                warnings.append(note)
                attributes["pass_files"] = len(per_pass)
    elif _present(folder / "timestamps.csv"):
        warnings.append("pmc_perf.csv missing: dispatches from timestamps.csv, no counters")
        d = read_dispatches(folder / "timestamps.csv", cap=cap)
        source = folder / "timestamps.csv"
    elif passes := _pass_files(folder):
        label = passes[0].name if len(passes) == 1 else f"results_*.csv ({len(passes)} passes)"
        d, w = read_dispatch_passes(passes, label=label, cap=cap)
        warnings.extend(w)
        source = passes[0]
        attributes["pass_files"] = len(passes)
        warnings.append(
            f"pmc_perf.csv missing: dispatches and counters joined from the {len(passes)} per-pass "
            f"file(s) {passes[0].name} ... {passes[-1].name} (as analyze joins them); the source "
            f"artifact is {passes[0].name}"
            if len(passes) > 1
            else f"pmc_perf.csv missing: dispatches and counters from {passes[0].name}"
        )
    else:
        warnings.append("pmc_perf.csv missing: no dispatches")
    if d is not None:
        for level in sorted(folder.glob("SQ_*LEVEL*.csv")):
            try:
                lvl = read_dispatches(level, cap=cap)
            except InputError as exc:
                warnings.append(f"{level.name}: not read ({exc.message})")
                continue
            except AdapterError as exc:
                warnings.append(f"{level.name}: not read ({str(exc).removeprefix(f'{level}: ')})")
                continue
            problem = merge_level_pass(d, lvl, level.stem)
            if problem:
                warnings.append(problem)
        if backend is None:
            backend = _guess_backend(d)
    if backend:
        attributes["backend"] = backend
    attributes.update(sysinfo.attributes())

    workload = str(config.get("name") or sysinfo.text("workload_name") or folder.name)
    command = _app_command(config, sysinfo)
    note = "the profiled application's argv, from " + (
        "profiling_config.yaml"
        if isinstance(config.get("remaining"), list) and config["remaining"]
        else "sysinfo.csv"
    )
    if d is None:
        d = Dispatches(source="pmc_perf.csv", layout="none", n=0)
    return _dispatch_packet(
        d,
        sysinfo,
        options=options,
        tool=tool,
        version=version,
        source=source,
        workload=workload,
        attributes=attributes,
        warnings=warnings,
        command=command,
        command_note=note if command else None,
        input_name=folder.name,
    )


def _pass_files(folder: Path) -> list[Path]:
    """rocprof-compute >= 3.5 per-pass counter CSVs (``results_pmc_perf_N.csv``, also
    ``.csv.gz``), in pass order; what analyze joins into ``pmc_perf.csv.gz``."""
    found = [
        p
        for p in folder.glob("results_*.csv*")
        if p.name.endswith((".csv", ".csv.gz")) and p.is_file() and not is_junk_entry(p, folder)
    ]

    def order(p: Path) -> tuple[str, int, str]:
        m = re.match(r"(.*?)(\d+)\.csv(?:\.gz)?$", p.name)
        return (m.group(1), int(m.group(2)), p.name) if m else (p.name, -1, p.name)

    return sorted(found, key=order)


def _pmc_passes(folder: Path) -> list[Path]:
    """rocprof-compute 3.x per-pass counter CSVs beside ``pmc_perf.csv`` (``pmc_perf_N.csv``),
    in pass order."""
    found: list[tuple[int, Path]] = []
    for p in folder.glob("pmc_perf_*.csv*"):
        m = re.fullmatch(r"pmc_perf_(\d+)\.csv(?:\.gz)?", p.name)
        if m and p.is_file() and not is_junk_entry(p, folder):
            found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def _present(path: Path) -> bool:
    """Whether anything (a file, a folder, a device, a dangling link) has this name."""
    return path.exists() or path.is_symlink()


def _guess_backend(d: Dispatches) -> str | None:
    if d.layout == "long":
        return "rocprofv3 (rocpd)"
    k = next((x for x in d.values("Kernel_Name") if isinstance(x, str)), "")
    if k.endswith("(.kd)"):
        return "rocprofv2"
    if k.endswith(".kd") or k.endswith("[clone .kd]"):
        return "rocprofv1"
    if "Kernel_ID" in d.resolved:
        return "rocprofv3"
    return None


def _adopt_times(d: Dispatches, ts: Dispatches) -> None:
    """Take Start/End from timestamps.csv when pmc_perf.csv has none (matched by Dispatch_ID)."""
    where = {v: i for i, v in enumerate(ts.values("Dispatch_ID")) if v is not None}
    ids = d.values("Dispatch_ID")
    shift = id_offset(d, ts)
    if shift:
        d.warnings.append(
            f"{ts.source}: Dispatch_ID numbered {-shift:+d} from {d.source} (rocprofv2 writes "
            "timestamps.csv from 1, the counter passes from 0); timestamps matched with that offset"
        )
        ids = [float(v) - shift if isinstance(v, (int, float)) else None for v in ids]
    d.start = [ts.start[where[v]] if v in where else None for v in ids]
    d.end = [ts.end[where[v]] if v in where else None for v in ids]
    d.duration = [ts.duration[where[v]] if v in where else None for v in ids]
    d.warnings.extend(ts.warnings)


def _read_file(job: _Job, options: AdapterOptions) -> EvidencePacket:
    cap = max_bytes_option(options.extra)
    d = read_dispatches(job.path, cap=cap)
    folder = job.path.parent
    sysinfo, warnings = _side_sysinfo(folder, job.path.name, d, cap)
    is_v1 = "DurationNs" in d.resolved or d.resolved.get("Kernel_Name") == "KernelName"
    tool = "rocprof" if is_v1 else "rocprofv3"
    attributes: dict[str, str | float | int | None] = {"backend": _guess_backend(d) or tool}
    attributes.update(sysinfo.attributes())
    return _dispatch_packet(
        d,
        sysinfo,
        options=options,
        tool=tool,
        version=None,
        source=job.path,
        workload=job.path.stem,
        attributes=attributes,
        warnings=warnings,
        command=None,
        command_note=None,
        input_name=job.path.name,
    )


def _side_sysinfo(folder: Path, name: str, d: Dispatches, cap: int) -> tuple[SysInfo, list[str]]:
    prefix = (
        name.rsplit("kernel_trace.csv", 1)[0]
        if name.endswith("kernel_trace.csv")
        else (name.rsplit("counter_collection.csv", 1)[0] if name.endswith("counter_collection.csv") else "")
    )
    agent = next((x for x in (_int_or_none(v) for v in d.values("GPU_ID")) if x is not None), None)
    for cand in (folder / f"{prefix}agent_info.csv", folder / "agent_info.csv"):
        if cand.is_file():
            info = read_agent_info(cand, agent, cap)
            return info, list(info.warnings)
    for cand in (folder / "results.sysinfo.txt", folder / "sysinfo.txt"):
        if cand.is_file():
            info = read_rocminfo(cand, cap)
            return info, list(info.warnings)
    return SysInfo(), ["no agent_info.csv or sysinfo next to the trace: hardware unknown, num_xcd taken as 1"]


def _read_v3(job: _Job, options: AdapterOptions) -> EvidencePacket:
    trace, counters = job.files.get("trace"), job.files.get("counters")
    base_path = trace or counters
    assert base_path is not None  # noqa: S101 - discovery only makes jobs with a file
    cap = max_bytes_option(options.extra)
    d = read_dispatches(base_path, cap=cap)
    warnings: list[str] = []
    if trace is not None and counters is not None:
        c = read_dispatches(counters, cap=cap)
        w = merge_level_pass(d, c, None)
        if w:
            warnings.append(w)
        for name in c.counters:
            if name in d.counters and name not in d.raw:
                d.raw[name] = d.counters[name]
    sysinfo, w2 = _side_sysinfo(job.path, base_path.name, d, cap)
    warnings.extend(w2)
    attributes: dict[str, str | float | int | None] = {"backend": "rocprofv3"}
    attributes.update(sysinfo.attributes())
    return _dispatch_packet(
        d,
        sysinfo,
        options=options,
        tool="rocprofv3",
        version=None,
        source=base_path,
        workload=job.path.name,
        attributes=attributes,
        warnings=warnings,
        command=None,
        command_note=None,
        input_name=base_path.name,
    )


def _stats_sysinfo(path: Path, cap: int) -> tuple[SysInfo, list[str]]:
    """The ``agent_info.csv`` (rocprofv3) or rocminfo dump (rocprof v1) beside a stats file."""
    name = path.name.removesuffix(".gz")
    prefix = name[: -len("kernel_stats.csv")] if name.lower().endswith("kernel_stats.csv") else ""
    folder = path.parent
    for cand in (folder / f"{prefix}agent_info.csv", folder / "agent_info.csv"):
        if cand.is_file():
            info = read_agent_info(cand, None, cap)
            return info, list(info.warnings)
    stem = name[: -len(".stats.csv")] if name.lower().endswith(".stats.csv") else "results"
    for cand in (folder / f"{stem}.sysinfo.txt", folder / "results.sysinfo.txt", folder / "sysinfo.txt"):
        if cand.is_file():
            info = read_rocminfo(cand, cap)
            return info, list(info.warnings)
    return SysInfo(), ["no agent_info.csv or sysinfo next to the statistics: hardware unknown"]


def _read_stats(job: _Job, options: AdapterOptions) -> EvidencePacket:
    """Per-kernel statistics: rocprofv3 ``kernel_stats.csv``, rocprof v1 ``results.stats.csv``.

    ``Name,Calls,TotalDurationNs,AverageNs,Percentage`` (v1; v3 adds ``MinNs,MaxNs,StdDev``):
    one :class:`KernelRecord` per kernel, ``invocations`` = ``Calls``, ``duration`` =
    ``AverageNs`` (as the analyze top-kernels ``Mean(ns)``); the subject is the kernel with
    the largest ``TotalDurationNs`` and its mean/min/max/std are the timing.
    """
    cap = max_bytes_option(options.extra)
    loaded = load(job.path, cap, what="a rocprof kernel statistics CSV (Name,Calls,TotalDurationNs,...)")
    text = decode_text(loaded)
    warnings: list[str] = list(loaded.warnings)
    fname = job.path.name
    try:
        table = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    except csv.Error as exc:
        raise InputError(str(job.path), None, f"expected a CSV of per-kernel statistics: {exc}") from None
    header = [h.strip() for h in table[0]] if table else []
    rows: list[dict[str, str]] = []
    rejoined: list[int] = []
    for line, fields in enumerate(table[1:], start=2):
        extra = len(fields) - len(header)
        if extra > 0 and header[:1] == ["Name"]:
            # older rocprof v1 wrote the kernel name unquoted: its commas split it into
            # several fields, and only the trailing numeric columns keep their places
            fields = [",".join(fields[: extra + 1]), *fields[extra + 1 :]]
            rejoined.append(line)
        rows.append({k: (fields[i] if i < len(fields) else "") for i, k in enumerate(header)})
    if rejoined:
        warnings.append(
            f"{fname}: {len(rejoined)} row(s) have more fields than the header (first on line "
            f"{rejoined[0]}): an unquoted kernel name with commas, as older rocprof v1 wrote; the "
            "leading fields were joined back into `Name`"
        )
    is_v3 = any(k in (rows[0] if rows else {}) for k in ("MinNs", "MaxNs", "StdDev")) or (
        fname.lower().removesuffix(".gz").endswith("kernel_stats.csv")
    )
    tool = "rocprofv3" if is_v3 else "rocprof"
    records: list[KernelRecord] = []
    kept: list[dict[str, str]] = []
    bad: dict[str, list[str]] = {}
    top_row: dict[str, str] | None = None
    top_name: str | None = None
    best = -1.0
    for row in rows:
        raw_text = (row.get("Name") or "").replace("\n", "")
        name = normalise_kernel_name(raw_text)
        if not name:
            continue
        calls = number(row.get("Calls"))
        mean = number(row.get("AverageNs"))
        total = number(row.get("TotalDurationNs"))
        for col, val in (("Calls", calls), ("AverageNs", mean), ("TotalDurationNs", total)):
            cell = (row.get(col) or "").strip()
            if val is None or val < 0:
                bad.setdefault(col, []).append(cell)
        count = _int_or_none(calls)
        records.append(
            KernelRecord(
                name=name,
                raw_name=raw_text if raw_text != name else None,
                invocations=count if count is not None and count >= 0 else None,
                metrics={"duration": Quantity(value=mean, unit="ns")}
                if mean is not None and mean >= 0
                else None,
            )
        )
        kept.append(row)
        if total is not None and total > best:
            best, top_name, top_row = total, name, row
    for col, texts in bad.items():
        warnings.append(
            f"{fname}: `{col}` is empty or not a non-negative number in {len(texts)} row(s) "
            f"(e.g. `{shown(texts[0])}`); left out for those kernels"
        )
    if not records:
        raise InputError(
            str(job.path),
            None,
            "no kernel rows; expected per-kernel statistics rows (Name,Calls,TotalDurationNs,...)",
        )
    sysinfo, side = _stats_sysinfo(job.path, cap)
    warnings.extend(side)
    warnings.append(
        f"{fname}: per-kernel statistics only: no per-dispatch durations, launch shapes or counters"
    )
    timing = None
    if top_row is not None:
        vals = {k: number(top_row.get(k)) for k in ("AverageNs", "MinNs", "MaxNs", "StdDev", "Calls")}
        ok = {k: v for k, v in vals.items() if v is not None and v >= 0}
        if "AverageNs" in ok:
            timing = Timing(
                method="profiler",
                stats=Stats(
                    unit="ns",
                    mean=ok["AverageNs"],
                    min=ok.get("MinNs"),
                    max=ok.get("MaxNs"),
                    std=ok.get("StdDev"),
                    n=_int_or_none(ok.get("Calls")),
                ),
                clock_policy="unknown",
                notes=f"{tool} per-kernel statistics of the subject kernel ({fname}); no median in the file",
            )
    attrs: dict[str, str | float | int | None] = {
        "backend": tool,
        "layout": "kernel_stats",
        "kernels": len(records),
    }
    attrs.update(sysinfo.attributes())
    raw_columns, raw_ref = _table_raw(kept, options, job.path.name)
    capture = ProfilerCapture(
        tool=tool,
        source=_artifact(job.path, loaded),
        kernels=records,
        raw_columns=raw_columns,
        raw_table=raw_ref,
        attributes={k: a for k, v in attrs.items() if (a := _attr_value(v)) is not None} or None,
        warnings=warnings or None,
    )
    workload = job.path.parent.name or job.path.stem
    return _packet(
        options=options,
        subject=top_name or workload,
        description=f"{tool} per-kernel statistics `{fname}`: {len(records)} kernel(s)",
        capture=capture,
        hardware=sysinfo.hardware(),
        timing=timing,
        workload=workload,
        command=None,
        notes=None,
    )


#: unit labels of analyze rows whose value is rescaled: the label is the unit before ``scale``
_SCALED_UNIT_LABELS = {
    "LDS Bank Conflicts/Access": frozenset({"conflicts/access"}),
    "LDS Bank Conflict": frozenset({"conflicts/access"}),
}


@lru_cache(maxsize=1)
def _unit_labels() -> dict[str, str]:
    """Analyze unit label (lower case) -> the unit it means (``[units]`` of rocprof.toml)."""
    return {k.lower(): str(v[0]) for k, v in load_toml("rocprof.toml").get("units", {}).items()}


def _unit_problem(metric: str, label: str | None, s: Source) -> str | None:
    """Why the unit label of an analyze row does not fit the mapping source, or None.

    An empty or absent label is accepted (nothing to disagree with); ``Pct of Peak`` values are
    percentages whatever the row's own unit says, so they are not checked.
    """
    if s.column == "pct" or label is None or not label.strip():
        return None
    low = label.strip().lower()
    if metric in _SCALED_UNIT_LABELS:
        ok = low in _SCALED_UNIT_LABELS[metric]
        expected = ", ".join(sorted(_SCALED_UNIT_LABELS[metric]))
    else:
        ok = _unit_labels().get(low) == s.unit
        expected = ", ".join(sorted({k for k, v in _unit_labels().items() if v == s.unit and k}))
    if ok:
        return None
    return f"`{metric}` has unit `{shown(label)}`, expected one meaning {s.unit} ({expected})"


_ABSENT, _EMPTY, _UNUSABLE = 0, 1, 2


def _analyze_value(t: AnalyzeTables, s: Source) -> tuple[float | None, str, int]:
    """The (summed, scaled) value of one mapping source in the analyze tables.

    Returns ``(value, why not, how bad)``. A row that is there but unusable (a unit that
    disagrees, text that is not a finite number) is ``_UNUSABLE``: no other source of the
    metric is tried, since it would be a partial sum (e.g. the FLOP rate without one of its
    rows). An absent row or an empty cell (analyze could not compute it) lets the next
    source be tried; the worst reason is the one reported.
    """
    assert s.table is not None  # noqa: S101 - only table sources come here
    name = t.files[s.table].name
    total = 0.0
    for metric in s.metrics:
        found = t.cell(s.table, metric, s.column)
        if found is None:
            return None, f"{name} has no `{metric}` row", _ABSENT
        text, unit = found
        problem = _unit_problem(metric, unit, s)
        if problem:
            return None, f"{name}: {problem}", _UNUSABLE
        if not text.strip():
            return None, f"`{metric}` is empty in {name} (not computed by analyze)", _EMPTY
        x = number(text)
        if x is None:
            col = "Pct of Peak" if s.column == "pct" else "value"
            return None, f"{name}: `{metric}` {col} is `{shown(text)}`, not a finite number", _UNUSABLE
        total += x
    return total * s.scale, "", _ABSENT


def _analyze_summary(t: AnalyzeTables) -> tuple[dict[str, Quantity], list[str]]:
    """Workload-level canonical metrics from the speed-of-light and launch tables, and a
    warning for each one a table that is there could not give."""
    summary: dict[str, Quantity] = {}
    warnings: list[str] = []
    lost: dict[str, list[str]] = {}
    for m in load_mapping():
        sources = [s for s in m.sources if s.table in ("speed-of-light", "launch") and s.table in t.files]
        reason, worst = None, -1
        for s in sources:
            assert s.table is not None  # noqa: S101 - filtered above
            if s.table in t.unusable:
                lost.setdefault(s.table, []).append(m.name)
                reason = None
                break
            value, why, bad = _analyze_value(t, s)
            if value is None:
                if bad > worst:
                    reason, worst = why, bad
                if bad == _UNUSABLE:
                    break
                continue
            value = convert(value, s.unit, m.unit) if s.unit != m.unit else value
            summary[m.name] = Quantity(value=float(value), unit=m.unit)
            reason = None
            break
        if m.name not in summary and reason:
            warnings.append(f"{m.name} not derived: {reason}")
    whole = [f"{t.files[k].name}: {t.unusable[k]}; not derived: {', '.join(n)}" for k, n in lost.items()]
    return summary, [*whole, *warnings]


def _read_analyze(job: _Job, options: AdapterOptions) -> EvidencePacket:
    t = AnalyzeTables.read(job.path, max_bytes_option(options.extra))
    warnings: list[str] = list(t.warnings)
    numbered = any(p.name[0].isdigit() and p.stem.isdigit() for p in t.files.values())
    sol = t.files.get("speed-of-light")
    tool = (
        "omniperf"
        if numbered or (sol is not None and sol.name == "2.1_Speed-of-Light.csv")
        else "rocprof-compute"
    )

    summary, summary_warnings = _analyze_summary(t)
    warnings.extend(summary_warnings)
    if "speed-of-light" not in t.files:
        warnings.append("no speed-of-light table: utilisation and bandwidth metrics not derived")

    records: list[KernelRecord] = []
    kept_rows: list[dict[str, str]] = []
    top_name, top_row = None, None
    best = -1.0
    bad: dict[str, list[str]] = {}
    for row in t.top_kernels:
        raw_text = row.get("Kernel_Name") or row.get("KernelName") or ""
        name = normalise_kernel_name(raw_text)
        if not name:
            continue
        count = _int_or_none(number(row.get("Count")))
        mean = number(row.get("Mean(ns)"))
        total = number(row.get("Sum(ns)"))
        rec = KernelRecord(
            name=name,
            raw_name=raw_text if raw_text != name else None,
            invocations=count if count is not None and count >= 0 else None,
            metrics={"duration": Quantity(value=mean, unit="ns")} if mean is not None and mean >= 0 else None,
        )
        records.append(rec)
        kept_rows.append(row)
        if total is not None and total > best:
            best, top_name, top_row = total, name, row
        for col in ("Count", "Mean(ns)", "Sum(ns)"):
            text = (row.get(col) or "").strip()
            if text and number(text) is None:
                bad.setdefault(col, []).append(text)
    for col, texts in bad.items():
        kfile = t.files["top-kernels"].name
        warnings.append(
            f"{kfile}: `{col}` is not a finite number in {len(texts)} row(s) (e.g. `{shown(texts[0])}`); "
            f"left out for those kernels"
        )
    if not t.top_kernels:
        warnings.append("no top-kernels table: no kernel records")

    guess = t.guess_hardware()
    hardware = None
    if guess.get("gpu_model") or guess.get("gpu_arch"):
        hardware = Hardware(
            vendor="amd",
            device=guess.get("gpu_model") or guess["gpu_arch"],
            arch=guess.get("gpu_arch"),
        )
    timing = None
    if top_row is not None:
        med, avg, cnt = (number(top_row.get(k)) for k in ("Median(ns)", "Mean(ns)", "Count"))
        if med is not None and med >= 0:
            timing = Timing(
                method="profiler",
                stats=Stats(
                    unit="ns",
                    median=med,
                    mean=avg if avg is not None and avg >= 0 else None,
                    n=_int_or_none(cnt),
                ),
                clock_policy="unknown",
                notes=f"{tool} analyze top-kernels table (values rounded to the analyze --decimal setting)",
            )
    workload = guess.get("workload_name") or job.path.name
    attrs: dict[str, str | float | int | None] = {"export": "numbered tables" if numbered else "save-dfs"}
    if t.dispatches is not None:
        attrs["dispatches"] = t.dispatches
    for kind, p in sorted(t.files.items()):
        attrs[f"table.{kind}"] = p.name
    raw_columns, raw_ref = _table_raw(kept_rows, options, job.path.name)
    capture = ProfilerCapture(
        tool=tool,
        source=Artifact(kind="profile", name=job.path.name, path=str(job.path)),
        kernels=records or None,
        raw_columns=raw_columns,
        raw_table=raw_ref,
        summary=summary or None,
        attributes=attrs,
        warnings=warnings or None,
    )
    return _packet(
        options=options,
        subject=top_name or workload,
        description=f"{tool} analyze export `{job.path.name}`: {len(records)} kernel(s)",
        capture=capture,
        hardware=hardware,
        timing=timing,
        workload=workload,
        command=None,
        notes=None,
    )


def _table_columns(rows: list[dict[str, str]]) -> dict[str, list[float | str | None]]:
    """The rows of an analyze table as raw columns: numbers as floats, the rest as text."""
    names = list(dict.fromkeys(k for row in rows for k in row if k))
    out: dict[str, list[float | str | None]] = {}
    for name in names:
        col: list[float | str | None] = []
        for row in rows:
            v = row.get(name)
            x = number(v)
            col.append(x if x is not None else (v.replace("\n", "") if v else None))
        out[name] = col
    return out


def _table_raw(
    rows: list[dict[str, str]], options: AdapterOptions, name: str
) -> tuple[dict[str, list[float | str | None]] | None, Artifact | None]:
    """``(raw_columns, raw_table)`` of a table's rows: inline, or in a side file when
    :meth:`AdapterOptions.raw_table` writes one (then ``raw_columns`` is None)."""
    columns = _table_columns(rows) or None
    if columns is None:
        return None, None
    ref = options.raw_table(columns, None, len(rows), _side_stem(name))
    return (None, ref) if ref is not None else (columns, None)


def _read_job(job: _Job, options: AdapterOptions) -> EvidencePacket:
    """Read one job with the cyclic garbage collector paused, and give the packet its id.

    A large workload creates millions of small, acyclic objects (raw cells, records and
    their metric quantities); letting the collector rescan them on every allocation burst
    costs a third of the time; a large packet's objects (raw cells inline, or records alone
    when the raw values went to a side file) are then promoted to the oldest generation
    unscanned (:func:`kernel_evidence._gc.promote_survivors`). ``AdapterOptions.extra["packet_ids"] =
    False`` leaves the id to the caller (``ingest`` does when it edits the packet afterwards).
    """
    with paused_gc():
        packet = _READERS[job.kind](job, options)
        if packet.packet_id is None and options.extra.get("packet_ids", True):
            packet = packet.with_id()
        if raw_cell_count([packet]) + _record_objects(packet) >= PROMOTE_CELLS:
            promote_survivors()
        return packet


def _record_objects(packet: EvidencePacket) -> int:
    """About how many objects the packet's kernel records hold (each record, its metrics
    dict and about one quantity per summarised metric): with the raw values in a side file,
    they are what the collector would rescan."""
    return sum(len(cap.kernels or ()) * (2 + len(cap.summary or ())) for cap in packet.profiler or ())


_READERS = {
    "workload": _read_workload,
    "analyze": _read_analyze,
    "v3": _read_v3,
    "file": _read_file,
    "stats": _read_stats,
}


class RocprofAdapter:
    """rocprof-compute / Omniperf workloads, analyze exports, rocprofv3 and rocprof v1 CSVs."""

    name = "rocprof"
    aliases: tuple[str, ...] = ("rocprof-compute", "omniperf")
    #: the keys ``--opt KEY=VALUE`` may set (any other is a usage error)
    options: tuple[str, ...] = ("max_bytes",)
    description = (
        "AMD rocprof-compute / Omniperf workload folders (pmc_perf.csv, sysinfo.csv, ...), "
        "analyze exports, rocprofv3 kernel_trace/counter_collection CSVs, JSON output and rocpd "
        "databases, rocprof v1 results.csv"
    )

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        """One packet per workload found under ``inputs``; raise AdapterError when none is."""
        packets: list[EvidencePacket] = []
        warnings: list[str] = []
        for item in inputs:
            path = Path(item)
            jobs = _discover(path)
            if not jobs:
                raise AdapterError(
                    f"{item}: no rocprof-compute/Omniperf workload (pmc_perf.csv, sysinfo.csv), analyze "
                    "export, rocprofv3 kernel_trace/counter_collection CSV or rocprof results.csv found"
                )
            for job in jobs:
                found = (
                    read_traces(job.kind, job.path, options)
                    if job.kind in TRACE_KINDS
                    else [_read_job(job, options)]
                )
                for packet in found:
                    packets.append(packet)
                    for w in (packet.profiler or [ProfilerCapture(tool="-")])[0].warnings or []:
                        warnings.append(f"{job.path}: {w}")
        return AdapterResult(packets=packets, warnings=warnings)


ADAPTER = RocprofAdapter()
