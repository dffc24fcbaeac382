"""Launch traces reduced to one kernel record per kernel name and device.

Tracing profilers (rocprofv3's JSON and rocpd database, Nsight Systems' SQLite export and
``cuda_gpu_trace`` report) list every launch: a training step is 10^4..10^5 of them. A packet
keeps one :class:`~kernel_evidence.models.KernelRecord` per (device, kernel): ``invocations``
= its launches, ``duration`` = the median launch duration (the per-launch figure the
profile rules compare with a claim), the launch shape when every launch had the same one,
and, in the capture's raw columns (one value per record), the duration statistics and every
launch-level value the trace gave: the value itself when all of the record's launches agree,
otherwise each launch's value, in start order, separated by spaces (``-`` where a launch has
none). Nothing a launch said is dropped, and a packet of a 50,000-launch trace still holds a few dozen records.

Launches whose end precedes their start, or whose timestamps are both 0 (CUPTI's "not
collected"), count as invocations but not in the duration statistics, with a warning.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..models import (
    Artifact,
    EvidencePacket,
    Hardware,
    KernelRecord,
    ProfilerCapture,
    Quantity,
    Stats,
    Timing,
)

if TYPE_CHECKING:  # pragma: no cover
    from . import AdapterOptions

__all__ = ["Launches", "Reduced", "Shape", "int_column", "reduce_launches", "trace_packet"]

#: integers at or beyond this are kept as text: a float would round them
_INT_EXACT = 2**53


@dataclass(frozen=True)
class Shape:
    """Which launch columns give the launch shape and the canonical launch metrics.

    ``grid``/``block``: the X, Y, Z columns. ``grid_in_blocks``: CUDA counts the grid in
    blocks (threads = grid x block); ROCm in work-items (threads = grid).
    ``shared_memory``: columns summed into bytes per block / workgroup."""

    grid: tuple[str, str, str] | None = None
    block: tuple[str, str, str] | None = None
    grid_in_blocks: bool = False
    registers: str | None = None
    scalar_registers: str | None = None
    shared_memory: tuple[str, ...] = ()
    #: the column naming the stream (or queue) a launch ran on: the record's ``stream`` when
    #: every launch of it agrees
    stream: str | None = None


@dataclass
class Launches:
    """Every launch of one run, column by column (one entry per launch).

    ``kernel`` holds a key into ``kernels`` (key -> (name, raw name or None)); ``device`` the
    device ordinal (-1 unknown); ``start``/``end`` ns on the profiler's clock. ``columns``
    are the launch-level values under their source names: int64/float64 arrays, or lists of
    text/None; ``units`` their units as the source spelled them."""

    source: str
    kernel: np.ndarray
    device: np.ndarray
    start: np.ndarray
    end: np.ndarray
    kernels: dict[int, tuple[str, str | None]]
    columns: dict[str, Any] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    #: key -> the source's own kernel id (for record ids), where it differs from the key
    kernel_ids: dict[int, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.start)


@dataclass
class Reduced:
    """The records made from a run's launches and what goes with them."""

    records: list[KernelRecord]
    raw_columns: dict[str, list[float | str | None]]
    raw_units: dict[str, str]
    warnings: list[str]
    #: (record index, statistics) of the kernel with the largest total time, or None
    top: tuple[int, Stats] | None
    launches: int
    devices: list[int]


_STAT_COLUMNS = (
    ("launches", None),
    ("duration_sum_ns", "ns"),
    ("duration_mean_ns", "ns"),
    ("duration_median_ns", "ns"),
    ("duration_min_ns", "ns"),
    ("duration_max_ns", "ns"),
    ("duration_std_ns", "ns"),
)


def _groups(launches: Launches) -> list[np.ndarray]:
    """Launch indices per (device, kernel), each in start order; groups by device, then by
    first launch."""
    dev = launches.device.astype(np.int64)
    ker = launches.kernel.astype(np.int64)
    if not len(ker):
        return []
    # one integer per (device, kernel): kernels are numbered from 0 by the readers
    span = int(ker.max()) - int(ker.min()) + 1
    _, inverse = np.unique((dev - int(dev.min())) * span + (ker - int(ker.min())), return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.lexsort((launches.start, inverse))
    cuts = np.flatnonzero(np.diff(inverse[order])) + 1
    groups = np.split(order, cuts)
    groups.sort(key=lambda g: (int(dev[g[0]]), int(launches.start[g[0]])))
    return groups


def _number(v: Any) -> float | str | None:
    """A raw cell: a finite number as float (an integer beyond 2**53 as its text), else None."""
    if v is None:
        return None
    if isinstance(v, (int, np.integer)):
        v = int(v)
        return float(v) if -_INT_EXACT < v < _INT_EXACT else str(v)
    f = float(v)
    return f if math.isfinite(f) else None


def _cell(values: Any) -> float | str | None:
    """One record's cell for a launch-level column: the value when every launch agrees,
    else each launch's value, space-separated (None where a launch has none: ``-``)."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "f":
            finite = np.isfinite(values)
            if not finite.any():
                return None
            if finite.all() and values.min() == values.max():
                return _number(values[0])
            return " ".join(repr(float(x)) if math.isfinite(x) else "-" for x in values.tolist())
        # integer columns use -1 for "not given" (ids, sizes and timestamps are never negative)
        lo, hi = int(values.min()), int(values.max())
        if hi < 0:
            return None
        if lo == hi:
            return _number(lo)
        if lo >= 0:
            return " ".join(map(str, values.tolist()))
        return " ".join(str(x) if x >= 0 else "-" for x in values.tolist())
    first = values[0]
    if all(v == first for v in values):
        return first if first is None or isinstance(first, str) else _number(first)
    return " ".join("-" if v is None else str(v) for v in values)


def _uniform(values: Any) -> int | None:
    """The one non-negative integer every launch has in this column, or None."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu" and len(values):
        lo, hi = int(values.min()), int(values.max())
        return lo if lo == hi and lo >= 0 else None
    return None


def _stats(d: np.ndarray) -> Stats | None:
    if not len(d):
        return None
    s = np.sort(d).astype(np.float64)
    n = len(s)
    median = float(s[n // 2]) if n % 2 else float((s[n // 2 - 1] + s[n // 2]) / 2)
    return Stats(
        unit="ns",
        median=median,
        mean=float(s.mean()),
        min=float(s[0]),
        max=float(s[-1]),
        std=float(s.std(ddof=1)) if n > 1 else None,
        n=n,
    )


def _shape_fields(
    launches: Launches, idx: np.ndarray, shape: Shape
) -> tuple[dict[str, Any], dict[str, Quantity]]:
    """The record's grid/block and launch metrics, where every launch of it agrees."""
    cols = launches.columns
    fields: dict[str, Any] = {}
    metrics: dict[str, Quantity] = {}

    def dims(names: tuple[str, str, str] | None) -> list[int] | None:
        if names is None or any(c not in cols for c in names):
            return None
        out = [_uniform(cols[c][idx]) for c in names]
        return None if any(v is None for v in out) else out  # type: ignore[return-value]

    grid, block = dims(shape.grid), dims(shape.block)
    if shape.stream is not None and shape.stream in cols:
        stream = _uniform(cols[shape.stream][idx])
        if stream is not None:
            fields["stream"] = str(stream)
    if grid is not None:
        fields["grid"] = grid
    if block is not None:
        fields["block"] = block
        metrics["block_size"] = Quantity(value=float(math.prod(block)), unit="count")
    if grid is not None and (not shape.grid_in_blocks or block is not None):
        threads = math.prod(grid) * (math.prod(block) if shape.grid_in_blocks and block else 1)
        metrics["grid_size"] = Quantity(value=float(threads), unit="count")
    for metric, col in (
        ("registers_per_thread", shape.registers),
        ("scalar_registers", shape.scalar_registers),
    ):
        if col is not None and col in cols:
            v = _uniform(cols[col][idx])
            if v is not None:
                metrics[metric] = Quantity(value=float(v), unit="count")
    if shape.shared_memory and all(c in cols for c in shape.shared_memory):
        parts = [_uniform(cols[c][idx]) for c in shape.shared_memory]
        if all(p is not None for p in parts):
            metrics["shared_memory_per_block"] = Quantity(value=float(sum(parts)), unit="B")  # type: ignore[arg-type]
    return fields, metrics


def reduce_launches(
    launches: Launches,
    shape: Shape,
    *,
    id_prefix: Mapping[int, str] | None = None,
    process: str | None = None,
) -> Reduced:
    """One record per (device, kernel) of ``launches``, in device order and then by first
    launch. A record's id is ``<device>/<kernel id>``; ``id_prefix`` names a device there
    (default: its ordinal); ``process`` is every record's process (the run's pid)."""
    groups = _groups(launches)
    duration = launches.end - launches.start
    start, end = launches.start, launches.end
    valid = (start >= 0) & (end >= start) & ~((start == 0) & (end == 0))
    bad = int((~valid).sum())
    names = list(launches.columns)
    raw: dict[str, list[float | str | None]] = {c: [] for c, _ in _STAT_COLUMNS}
    raw.update({c: [] for c in names})
    records: list[KernelRecord] = []
    top: tuple[int, Stats] | None = None
    best = -1.0
    for idx in groups:
        key = int(launches.kernel[idx[0]])
        dev = int(launches.device[idx[0]])
        name, raw_name = launches.kernels.get(key, (f"kernel {key}", None))
        d = duration[idx][valid[idx]]
        stats = _stats(d)
        total = float(d.sum()) if len(d) else 0.0
        fields, metrics = _shape_fields(launches, idx, shape)
        if stats is not None:
            metrics = {"duration": Quantity(value=stats.median or 0.0, unit="ns"), **metrics}
        prefix = (id_prefix or {}).get(dev, str(dev)) if dev >= 0 else "?"
        records.append(
            KernelRecord(
                name=name,
                raw_name=raw_name if raw_name and raw_name != name else None,
                id=f"{prefix}/{launches.kernel_ids.get(key, key)}",
                device=dev if dev >= 0 else None,
                process=process,
                invocations=len(idx),
                metrics=metrics or None,
                **fields,
            )
        )
        values = (
            [float(len(idx)), total, stats.mean, stats.median, stats.min, stats.max, stats.std]
            if stats is not None
            else [float(len(idx)), None, None, None, None, None, None]
        )
        for (col, _unit), v in zip(_STAT_COLUMNS, values, strict=True):
            raw[col].append(v)
        for c in names:
            col = launches.columns[c]
            raw[c].append(_cell(col[idx] if isinstance(col, np.ndarray) else [col[i] for i in idx.tolist()]))
        if stats is not None and total > best:
            best, top = total, (len(records) - 1, stats)
    units = {c: u for c, u in _STAT_COLUMNS if u}
    units.update({c: u for c, u in launches.units.items() if c in raw})
    warnings = []
    if bad:
        warnings.append(
            f"{launches.source}: {bad} of {launches.n} launches have no usable timestamps (end before start, "
            "or both 0: not collected); counted as invocations, left out of the duration statistics"
        )
    devices = sorted({int(x) for x in np.unique(launches.device) if int(x) >= 0}) if launches.n else []
    return Reduced(records, raw, units, warnings, top, launches.n, devices)


def int_column(values: Sequence[Any]) -> np.ndarray:
    """Integers as an int64 array, None as -1 (what :func:`reduce_launches` reads as "not
    given": the ids, sizes and timestamps of a launch are never negative)."""
    return np.fromiter((-1 if v is None else v for v in values), dtype=np.int64, count=len(values))


def trace_packet(
    reduced: Reduced,
    *,
    options: AdapterOptions,
    tool: str,
    version: str | None,
    source: Artifact | None,
    run: str,
    hardware: Hardware | None,
    attributes: Mapping[str, str | float | int | None],
    warnings: Sequence[str],
    measured_at: str | None = None,
    stem: str,
) -> EvidencePacket:
    """The packet of one traced run: its records in one capture (raw values inline, or in a
    side file when ``options`` asks for one), the subject = the kernel with the largest total
    time and the timing = that record's launch statistics."""
    from ._envelope import start_packet

    n = len(reduced.records)
    raw_columns: dict[str, list[float | str | None]] | None = reduced.raw_columns if n else None
    raw_table = None
    if raw_columns:
        raw_table = options.raw_table(raw_columns, reduced.raw_units, n, stem)
        if raw_table is not None:
            raw_columns = None
    names = {r.name for r in reduced.records}
    attrs = {
        **attributes,
        "launches": reduced.launches,
        "kernels": len(names),
        "records": n,
        "devices_used": " ".join(map(str, reduced.devices)) or None,
    }
    capture = ProfilerCapture(
        tool=tool,
        version=version,
        source=source,
        kernels=reduced.records or None,
        raw_columns=raw_columns,
        raw_table=raw_table,
        raw_units=(reduced.raw_units or None) if n else None,
        attributes={k: v for k, v in attrs.items() if v is not None} or None,
        warnings=[*warnings, *reduced.warnings] or None,
    )
    timing = None
    subject = run
    if reduced.top is not None:
        i, stats = reduced.top
        subject = reduced.records[i].name
        timing = Timing(
            method="profiler",
            stats=stats,
            clock_policy="unknown",
            notes=(
                f"end - start of the {stats.n} launches of the subject kernel on device "
                f"{reduced.records[i].device if reduced.records[i].device is not None else '?'} in the {tool} trace "
                "(the kernel with the largest total time)"
            ),
        )
    description = f"{tool} trace `{run}`: {reduced.launches} launch(es) of {len(names)} kernel(s)" + (
        f" on {hardware.device}" if hardware is not None else ""
    )
    return start_packet(
        subject_kind="kernel",
        subject_name=subject,
        description=description,
        created_at=options.created_at,
        measured_at=measured_at,
        timing=timing,
        profiler=[capture],
        hardware=hardware,
    )
