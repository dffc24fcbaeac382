"""``nsys stats --format csv`` reports: the text nsys prints, or the ``<prefix>_<report>.csv``
files it writes with ``-o``.

Reports read, recognised by their header (the column names of Nsight Systems' report
scripts, ``<install>/host-linux-x64/reports/*.py``, as ``nsys stats`` 2023-2026 prints them;
a unit in parentheses may change with ``--timeunit``):

* ``cuda_gpu_kern_sum``: ``Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),
  Max (ns),StdDev (ns),Name`` (2022.4-2023.x ``--report gpukernsum`` also wrote
  ``GridXYZ,BlockXYZ`` before ``Name``): one record per kernel;
* ``cuda_gpu_trace``: ``Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,
  StcSMem (MB),DymSMem (MB),Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,
  GreenCtx,Strm,Name``: one row per kernel launch or memory operation; launches become one
  record per kernel per device;
* ``cuda_gpu_mem_time_sum``: ``...,Count,...,Operation`` (``[CUDA memcpy Host-to-Device]``,
  ``[CUDA memset]``): one record per operation, category ``memcpy`` / ``memset``;
* ``nvtx_sum``: ``Time (%),Total Time (ns),Instances,Avg (ns),...,Style,Range``: one record
  per NVTX range, category ``nvtx`` (host-side time between push and pop).

Other reports (``cuda_api_sum``, ``cuda_gpu_mem_size_sum``, ``osrt_sum``...) are named in a
warning and skipped. The banners nsys prints around the tables (``Processing [...] with
[...]...``, `` ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):``, ``SKIPPED: ...``) are
skipped; the console table format (``--format column``, the default) is refused with the
option that writes CSV.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import InputError
from .._launches import Launches, int_column

__all__ = ["Section", "parse_stats", "trace_launches"]

_UNIT = re.compile(r"^(?P<name>.*?)\s*\((?P<unit>[^()]*)\)\s*$")
_TIME_NS = {"ns": 1.0, "us": 1e3, "usec": 1e3, "ms": 1e6, "msec": 1e6, "s": 1e9, "sec": 1e9, "nsec": 1.0}
#: nsys prints memory in decimal units (MB = 10^6 B), rounded to 3 decimals
_BYTES = {
    "b": 1.0,
    "byte": 1.0,
    "bytes": 1.0,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "kib": 1024.0,
    "mib": 1048576.0,
    "gib": 1073741824.0,
}
_BANNERS = ("processing [", "** ", "generating ", "notice:", "skipped:", "warning:", "error:", "exporting ")
_DEVICE = re.compile(r"^(?P<name>.*?)\s*\(\s*(?P<ord>\d+)\s*\)\s*$|^(?P<bare>GPU)\s*(?P<n>\d+)$")


@dataclass
class Section:
    """One report table: its kind, header (names without units), units and rows."""

    report: str
    header: list[str]
    units: list[str | None]
    rows: list[list[str]]
    line: int
    source: str
    columns: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.columns = {h.lower(): i for i, h in enumerate(self.header)}

    def index(self, *names: str) -> int | None:
        for n in names:
            if n.lower() in self.columns:
                return self.columns[n.lower()]
        return None


def _split_unit(cell: str) -> tuple[str, str | None]:
    cell = cell.strip()
    m = _UNIT.match(cell)
    if m and m.group("name"):
        return m.group("name").strip(), m.group("unit").strip()
    return cell, None


def _kind(names: set[str]) -> str | None:
    if {"start", "duration", "name"} <= names and ({"grdx", "corrid"} & names):
        return "cuda_gpu_trace"
    if "range" in names and ({"instances", "total time"} & names):
        return "nvtx_sum"
    if "operation" in names and "total time" in names:
        return "cuda_gpu_mem_time_sum"
    if "operation" in names:
        return "cuda_gpu_mem_size_sum"
    if "num calls" in names:
        return "cuda_api_sum"
    if "name" in names and "instances" in names and "total time" in names:
        return "cuda_gpu_kern_sum"
    if "total time" in names or "instances" in names:
        return "other"
    return None


def _is_banner(line: str) -> bool:
    low = line.strip().lower()
    return not low or low.startswith(_BANNERS) or (low.startswith("**") and low.endswith(":"))


def parse_stats(text: str, source: str) -> list[Section]:
    """The report tables of an ``nsys stats --format csv`` output, in file order."""
    sections: list[Section] = []
    current: Section | None = None
    lines = text.splitlines()
    for n, line in enumerate(lines, start=1):
        stripped = line.strip()
        if set(stripped) <= {"-", " "} and stripped.count("-") >= 8:
            raise InputError(
                source,
                f"line {n}",
                "a console table (nsys stats --format column, the default); expected CSV: run `nsys stats --format csv`",
            )
        if _is_banner(line):
            current = None
            continue
        try:
            cells = next(csv.reader(io.StringIO(line)))
        except (csv.Error, StopIteration) as exc:
            raise InputError(source, f"line {n}", f"not a CSV row ({exc})") from None
        names_units = [_split_unit(c) for c in cells]
        kind = _kind({nm.lower() for nm, _ in names_units})
        if kind is not None and number(cells[0]) is None:  # a header: data rows start with a number
            current = Section(kind, [nm for nm, _ in names_units], [u for _, u in names_units], [], n, source)
            sections.append(current)
            continue
        if current is None:
            continue  # free text nsys printed before a table
        if len(cells) != len(current.header):
            raise InputError(
                source,
                f"line {n}",
                f"expected {len(current.header)} fields as in the {current.report} header (line {current.line}), got {len(cells)}",
            )
        current.rows.append(cells)
    return sections


def number(cell: str | None) -> float | None:
    """A finite number from a report cell (``3,481,709`` thousands separators allowed), else None."""
    if cell is None:
        return None
    text = cell.strip().replace(",", "")
    if not text or text in {"-", "N/A", "n/a"}:
        return None
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def time_factor(section: Section, col: int) -> float | None:
    """ns per unit of a time column, from its header unit (ns when it names none)."""
    unit = section.units[col]
    if unit is None:
        return 1.0
    return _TIME_NS.get(unit.strip().lower())


def byte_factor(section: Section, col: int) -> float | None:
    unit = section.units[col]
    if unit is None:
        return 1.0
    return _BYTES.get(unit.strip().lower())


def device_of(cell: str) -> tuple[str | None, int | None]:
    """``NVIDIA A100-SXM4-80GB (0)`` -> (name, 0); ``GPU (0)``/``GPU0`` -> (None, 0)."""
    m = _DEVICE.match(cell.strip())
    if not m:
        return (cell.strip() or None), None
    if m.group("bare"):
        return None, int(m.group("n"))
    name = m.group("name").strip()
    return (None if name.upper() in {"GPU", ""} else name), int(m.group("ord"))


def _memops(section: Section, rows: list[list[str]], f_dur: float) -> dict[str, float]:
    """Per memory operation (``[CUDA memcpy Host-to-Device]``...) of a trace: count, ns, bytes."""
    i_name, i_dur, i_bytes = section.index("Name"), section.index("Duration"), section.index("Bytes")
    fb = byte_factor(section, i_bytes) if i_bytes is not None else None
    out: dict[str, float] = {}
    for row in rows:
        op = (row[i_name].strip() if i_name is not None else "") or "memory operation"
        out[f"{op}.count"] = out.get(f"{op}.count", 0) + 1
        if i_dur is not None and (dur := number(row[i_dur])) is not None:
            out[f"{op}.ns"] = out.get(f"{op}.ns", 0.0) + dur * f_dur
        if i_bytes is not None and fb is not None and (b := number(row[i_bytes])) is not None:
            out[f"{op}.bytes"] = out.get(f"{op}.bytes", 0.0) + b * fb
    return out


#: trace columns kept raw as written (integers when every launch has one)
_PLAIN = ("Start", "CorrId", "Reg/Trd", "Ctx", "GreenCtx", "Strm")


def _launch_columns(section: Section, rows: list[list[str]], label: str) -> tuple[dict[str, Any], list[str]]:
    """The raw launch columns of a trace's kernel rows: as written, the grid and block as
    integers, the shared memory sizes in bytes."""
    cols: dict[str, Any] = {}
    warnings: list[str] = []
    for c in _PLAIN:
        i = section.index(c)
        if i is None:
            continue
        values = [row[i].replace(",", "").strip() or None for row in rows]
        nums = [number(v) for v in values]
        if all(v is None for v in values):
            continue
        ints = [int(x) for x in nums if x is not None and x.is_integer() and x >= 0]
        cols[c] = int_column(ints) if len(ints) == len(values) else values
    for c in ("GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ"):
        i = section.index(c)
        if i is not None:
            cols[c] = int_column([_int(r[i]) for r in rows])
    for c in ("StcSMem", "DymSMem"):
        i = section.index(c)
        if i is None:
            continue
        f = byte_factor(section, i)
        if f is None:
            warnings.append(f"{label}: `{c}` in unit `{section.units[i]}` not understood; kept as written")
            cols[c] = [r[i].strip() or None for r in rows]
            continue
        sizes = [number(r[i]) for r in rows]
        cols[f"{c} (bytes)"] = int_column([None if v is None else round(v * f) for v in sizes])
    return cols, warnings


def trace_launches(
    section: Section, label: str
) -> tuple[Launches, dict[int, str], dict[str, float], list[str]]:
    """The kernel launches of a ``cuda_gpu_trace`` table (rows with a grid), the device names
    by ordinal, and per memory operation its count, bytes and ns."""
    i_start, i_dur, i_name = section.index("Start"), section.index("Duration"), section.index("Name")
    assert i_start is not None and i_dur is not None and i_name is not None  # noqa: S101 - _kind checked
    f_start, f_dur = time_factor(section, i_start), time_factor(section, i_dur)
    if f_start is None or f_dur is None:
        raise InputError(
            section.source,
            f"line {section.line}",
            "expected a time unit (ns, us, ms, s) in the Start/Duration headers",
        )
    i_grid, i_dev = section.index("GrdX"), section.index("Device")
    kernel_rows = [r for r in section.rows if i_grid is not None and number(r[i_grid]) is not None]
    memops = _memops(section, [r for r in section.rows if i_grid is None or number(r[i_grid]) is None], f_dur)
    names: dict[str, int] = {}
    kernel, device, start, end = [], [], [], []
    devices: dict[int, str] = {}
    bad = 0
    for row in kernel_rows:
        s, d = number(row[i_start]), number(row[i_dur])
        if s is None or d is None or d < 0:
            bad += 1
            s, d = None, None
        kernel.append(names.setdefault(row[i_name], len(names)))
        dev_name, ordinal = device_of(row[i_dev]) if i_dev is not None else (None, None)
        if ordinal is not None and dev_name:
            devices.setdefault(ordinal, dev_name)
        device.append(ordinal)
        start.append(None if s is None else round(s * f_start))
        end.append(None if s is None or d is None else round(s * f_start + d * f_dur))
    cols, warnings = _launch_columns(section, kernel_rows, label)
    if bad:
        warnings.append(f"{label}: {bad} launch row(s) without a usable Start/Duration")
    launches = Launches(
        source=label,
        kernel=np.array(kernel, dtype=np.int64),
        device=int_column(device),
        start=int_column(start),
        end=int_column(end),
        kernels={k: (name.strip() or f"kernel {k}", None) for name, k in names.items()},
        columns=cols,
        units={"Start": section.units[i_start] or "ns", **{c: "B" for c in cols if c.endswith("(bytes)")}},
    )
    return launches, devices, memops, warnings


def _int(cell: str) -> int | None:
    x = number(cell)
    return int(x) if x is not None and x.is_integer() and x >= 0 else None
