"""Nsight Systems adapter: the SQLite export and ``nsys stats`` CSV reports, one packet per run.

Inputs (paths; a folder is searched one level down):

* the **SQLite export** (``nsys export --type sqlite``, or the ``.sqlite`` that ``nsys stats``
  leaves beside the report), recognised by SQLite's header: one packet per profiled process,
  one record per kernel per GPU (:mod:`._export`);
* **``nsys stats --format csv``** output (the text it prints, or the
  ``<prefix>_<report>.csv`` files of ``-o <prefix>``): ``cuda_gpu_kern_sum``,
  ``cuda_gpu_trace``, ``cuda_gpu_mem_time_sum``, ``nvtx_sum``; the files of one prefix make
  one packet (:mod:`._stats`);
* a ``.nsys-rep`` (or ``.qdrep``) is nsys's own binary format: a one-line error says how to
  export it.

Export metadata holds the profiled user's environment, command line, user and host names:
none of it is read (see :mod:`._export`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._gc import paused_gc
from ...devices import canonical_id
from ...errors import AdapterError, InputError
from ...models import (
    EvidencePacket,
    Hardware,
    KernelRecord,
    ProfilerCapture,
    Quantity,
    Stats,
    Timing,
)
from .. import AdapterOptions, AdapterResult, AdapterWarning
from .._envelope import start_packet
from .._launches import Reduced, Shape, reduce_launches, trace_packet
from .._read import file_artifact, is_junk_entry, max_bytes_option, read_capped
from .._sqlite import is_sqlite
from ._export import CUDA_SHAPE, read_export
from ._stats import Section, number, parse_stats, time_factor, trace_launches

__all__ = ["ADAPTER", "NsysAdapter"]

_REPORTS = ("cuda_gpu_kern_sum", "cuda_gpu_trace", "cuda_gpu_mem_time_sum", "nvtx_sum")
_TRACE_SHAPE = Shape(
    grid=("GrdX", "GrdY", "GrdZ"),
    block=("BlkX", "BlkY", "BlkZ"),
    grid_in_blocks=True,
    registers="Reg/Trd",
    shared_memory=("StcSMem (bytes)", "DymSMem (bytes)"),
    stream="Strm",
)
_WHAT_CSV = (
    "nsys stats --format csv output (cuda_gpu_kern_sum, cuda_gpu_trace, cuda_gpu_mem_time_sum, nvtx_sum)"
)


def _rep_error(path: Path) -> AdapterError:
    name = path.name
    stem = name.rsplit(".", 1)[0]
    return AdapterError(
        f"{path}: an Nsight Systems report is nsys's own binary format; export it first with "
        f"`nsys export --type sqlite -o {stem}.sqlite {name}` (or `nsys stats --format csv "
        f"--report cuda_gpu_kern_sum,cuda_gpu_trace -o {stem} {name}`) and ingest what it writes"
    )


@dataclass
class _Job:
    kind: str  # export | stats
    label: str
    paths: list[Path] = field(default_factory=list)


def _report_of(name: str) -> tuple[str, str] | None:
    """(prefix, report) of ``<prefix>_<report>.csv``."""
    low = name.lower()
    for ext in (".csv", ".txt"):
        if low.endswith(ext):
            stem = name[: -len(ext)]
            for r in (*_REPORTS, "cuda_api_sum", "cuda_gpu_mem_size_sum"):
                if stem.lower().endswith(r):
                    return stem[: -len(r)].rstrip("_") or stem, r
    return None


def _discover(path: Path) -> list[_Job]:
    if path.is_dir():
        try:
            entries = sorted(e for e in path.iterdir() if not is_junk_entry(e, path) and e.is_file())
        except OSError as exc:
            raise InputError(str(path), None, f"cannot list: {exc.strerror or exc}") from None
        jobs = [_Job("export", p.name, [p]) for p in entries if is_sqlite(str(p))]
        exported = {p.name.rsplit(".", 1)[0] for j in jobs for p in j.paths}
        groups: dict[str, list[Path]] = {}
        for p in entries:
            rep = _report_of(p.name)
            if rep is not None and rep[0] not in exported:
                groups.setdefault(rep[0], []).append(p)
        jobs.extend(_Job("stats", prefix, files) for prefix, files in sorted(groups.items()))
        if not jobs:
            reps = [p for p in entries if p.suffix in (".nsys-rep", ".qdrep")]
            if reps:
                raise _rep_error(reps[0])
        return jobs
    if not path.exists() and not path.is_symlink():
        raise InputError(str(path), None, "no such file or folder")
    if path.suffix in (".nsys-rep", ".qdrep"):
        raise _rep_error(path)
    if not path.is_file():  # a pipe or a device would block or never end: refused unopened
        raise AdapterError(f"{path}: is not a regular file; expected {_WHAT_CSV} or an SQLite export")
    if is_sqlite(str(path)):
        return [_Job("export", path.name, [path])]
    return [_Job("stats", path.name, [path])]


# --------------------------------------------------------------------------- export


def _read_export(job: _Job, options: AdapterOptions) -> tuple[list[EvidencePacket], list[str]]:
    path = job.paths[0]
    runs = read_export(str(path), max_bytes_option(options.extra))
    source = file_artifact(path, "application/vnd.sqlite3")
    packets: list[EvidencePacket] = []
    warnings: list[str] = []
    stem = path.name.split(".")[0] or "nsys"
    for i, run in enumerate(runs):
        pid = run.attributes.get("pid")
        reduced = reduce_launches(run.launches, CUDA_SHAPE, process=str(pid) if pid is not None else None)
        packet = trace_packet(
            reduced,
            options=options,
            tool="nsys",
            version=run.version,
            source=source,
            run=run.label,
            hardware=run.hardware,
            attributes=run.attributes,
            warnings=run.warnings,
            measured_at=run.measured_at,
            stem=f"{stem}-{i}" if len(runs) > 1 else stem,
        )
        packets.append(packet)
        warnings.extend(f"{path}: {w}" for w in (packet.profiler or [])[0].warnings or [])
        if run.hardware is None:
            warnings.append(
                AdapterWarning(
                    f"{path}: no GPU description for {run.label}", {"hardware.device": "<GPU model>"}
                )
            )
    return packets, warnings


# --------------------------------------------------------------------------- stats CSV


def _text(path: Path, cap: int) -> tuple[str, bytes]:
    raw = read_capped(str(path), cap, what=_WHAT_CSV)
    if raw[:2] == b"\x1f\x8b":
        raise AdapterError(f"{path}: gzip-compressed; expected {_WHAT_CSV}: decompress it first")
    if b"\x00" in raw[:4096]:
        raise InputError(str(path), None, f"binary data (NUL bytes); expected {_WHAT_CSV}")
    return raw.decode("utf-8", errors="replace").removeprefix("\ufeff"), raw


def _cell(section: Section, i: int, row: list[str]) -> float | str | None:
    x = number(row[i])
    if x is not None:
        return x
    text = row[i].strip()
    return text or None


def _dims(cell: str | None) -> list[int] | None:
    parts = (cell or "").replace("x", " ").split()
    if len(parts) != 3:
        return None
    out = [number(p) for p in parts]
    dims = [int(x) for x in out if x is not None and x.is_integer() and x >= 0]
    return dims if len(dims) == 3 else None


def _summary(
    section: Section,
) -> tuple[list[KernelRecord], list[dict[str, Any]], list[tuple[float, Stats]], list[str]]:
    """Records of a per-name summary table (kernels, memory operations, NVTX ranges)."""
    i_name = section.index("Name", "Operation", "Range")
    i_count = section.index("Instances", "Count", "Num Calls", "Calls")
    if i_name is None:
        raise InputError(
            section.source, f"line {section.line}", f"{section.report} header without a Name column"
        )
    times = {k: section.index(*names) for k, names in {
        "total": ("Total Time",), "mean": ("Avg", "Average"), "median": ("Med", "Median"),
        "min": ("Min", "Minimum"), "max": ("Max", "Maximum"), "std": ("StdDev",),
    }.items()}  # fmt: skip
    factors = {k: (time_factor(section, i) if i is not None else None) for k, i in times.items()}
    bad_units = sorted(
        {str(section.units[i]) for k, i in times.items() if i is not None and factors[k] is None}
    )
    if bad_units:
        raise InputError(
            section.source,
            f"line {section.line}",
            f"time unit `{bad_units[0]}` not understood; expected ns, us, ms or s",
        )
    records: list[KernelRecord] = []
    rows: list[dict[str, Any]] = []
    stats: list[tuple[float, Stats]] = []
    warnings: list[str] = []
    for row in section.rows:
        name = row[i_name].strip()
        if not name:
            continue
        v: dict[str, float | None] = {}
        for k, i in times.items():
            x, f = (number(row[i]) if i is not None else None), factors[k]
            v[k] = x * f if x is not None and f is not None else None
        count = number(row[i_count]) if i_count is not None else None
        n = int(count) if count is not None and count.is_integer() and count >= 0 else None
        typical = v["median"] if v["median"] is not None else v["mean"]
        metrics = (
            {"duration": Quantity(value=typical, unit="ns")} if typical is not None and typical >= 0 else None
        )
        category = None
        if section.report == "nvtx_sum":
            category = "nvtx"
        elif section.report == "cuda_gpu_mem_time_sum":
            category = "memset" if "memset" in name.lower() else "memcpy"
        grid = _dims(row[section.index("GridXYZ")]) if section.index("GridXYZ") is not None else None  # type: ignore[index]
        block = _dims(row[section.index("BlockXYZ")]) if section.index("BlockXYZ") is not None else None  # type: ignore[index]
        records.append(
            KernelRecord(name=name, invocations=n, category=category, metrics=metrics, grid=grid, block=block)
        )
        rows.append({h: _cell(section, i, row) for i, h in enumerate(section.header)})
        if typical is not None and all(x is None or x >= 0 for x in v.values()):
            total = v["total"] if v["total"] is not None else typical * (n or 1)
            stats.append(
                (
                    total,
                    Stats(
                        unit="ns",
                        median=v["median"],
                        mean=v["mean"],
                        min=v["min"],
                        max=v["max"],
                        std=v["std"],
                        n=n,
                    ),
                )
            )
        else:
            stats.append((-1.0, Stats(unit="ns")))
    return records, rows, stats, warnings


def _merge_columns(parts: list[tuple[int, dict[str, list[Any]]]], total: int) -> dict[str, list[Any]]:
    """Raw columns of record blocks (offset, columns) as one table of ``total`` rows."""
    names = list(dict.fromkeys(c for _off, cols in parts for c in cols))
    out: dict[str, list[Any]] = {c: [None] * total for c in names}
    for off, cols in parts:
        for c, values in cols.items():
            out[c][off : off + len(values)] = values
    return out


def _stats_hardware(devices: dict[int, str], label: str) -> tuple[Hardware | None, list[str]]:
    names = sorted(set(devices.values()))
    if not names:
        return None, [
            AdapterWarning(f"{label}: the reports do not name the GPU", {"hardware.device": "<GPU model>"})
        ]
    warnings: list[str] = []
    if len(names) > 1:
        warnings.append(
            f"{label}: kernels ran on different GPU models ({', '.join(names)}); hardware describes {names[0]}"
        )
    name = names[0]
    return (
        Hardware(
            vendor="nvidia",
            device=name,
            device_id=canonical_id(name) if len(name) <= 256 else None,
            count=len(devices) if len(names) == 1 else None,
        ),
        warnings,
    )


@dataclass
class _Collected:
    """The records of one report set and what goes with them, gathered table by table."""

    label: str
    records: list[KernelRecord] = field(default_factory=list)
    #: (first record, raw columns of the table's records)
    parts: list[tuple[int, dict[str, list[Any]]]] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)
    #: subject candidates: (priority: kernel 0, NVTX 1, memory 2; total ns; stats; record; where)
    ranking: list[tuple[int, float, Stats, int, str]] = field(default_factory=list)
    devices: dict[int, str] = field(default_factory=dict)
    attrs: dict[str, str | float | int | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add_trace(self, section: Section) -> None:
        """A ``cuda_gpu_trace`` table: its launches, one record per kernel per device."""
        launches, devices, memops, warnings = trace_launches(section, self.label)
        self.devices.update(devices)
        self.warnings.extend(warnings)
        self.attrs.update({f"trace.{k}": (int(v) if float(v).is_integer() else v) for k, v in memops.items()})
        reduced: Reduced = reduce_launches(launches, _TRACE_SHAPE)
        self.warnings.extend(reduced.warnings)
        if reduced.top is not None:
            i, st = reduced.top
            total = (st.mean or 0.0) * (st.n or 0)
            self.ranking.append((0, total, st, len(self.records) + i, "its launches in cuda_gpu_trace"))
        self.parts.append((len(self.records), reduced.raw_columns))
        self.units.update(reduced.raw_units)
        self.records.extend(reduced.records)

    def add_summary(self, section: Section, priority: int) -> None:
        """A per-name summary table: one record per row."""
        recs, rows, stats, warnings = _summary(section)
        self.warnings.extend(warnings)
        first = len(self.records)
        self.ranking.extend(
            (priority, t, st, first + j, section.report) for j, (t, st) in enumerate(stats) if t >= 0
        )
        self.parts.append((first, {h: [r.get(h) for r in rows] for h in section.header}))
        self.units.update({h: u for h, u in zip(section.header, section.units, strict=True) if u})
        self.records.extend(recs)

    def timing(self) -> tuple[str | None, Timing | None]:
        """The subject (the kernel, else NVTX range, else memory operation with the largest
        total time) and its statistics as the timing."""
        if not self.ranking:
            return None, None
        priority, _total, stats, index, where = min(self.ranking, key=lambda r: (r[0], -r[1]))
        what = {0: "kernel", 1: "NVTX range (host time between push and pop)", 2: "memory operation"}[
            priority
        ]
        timing = Timing(
            method="profiler",
            stats=stats,
            clock_policy="unknown",
            notes=f"nsys stats: the {what} with the largest total time ({where})",
        )
        return self.records[index].name, timing


def _collect(sections: list[Section], label: str, first: Path) -> _Collected:
    by_kind: dict[str, list[Section]] = {}
    for s in sections:
        by_kind.setdefault(s.report, []).append(s)
    if not any(k in by_kind for k in _REPORTS):
        raise InputError(str(first), None, f"no report table found; expected {_WHAT_CSV}")
    got = _Collected(label)
    got.attrs.update(format="nsys stats csv", reports=" ".join(k for k in _REPORTS if k in by_kind))
    skipped = sorted(k for k in by_kind if k not in _REPORTS)
    if skipped:
        got.warnings.append(
            f"{label}: report(s) {', '.join(skipped)} not read (no kernel, memory-operation or NVTX records)"
        )
    if "cuda_gpu_trace" in by_kind:
        if "cuda_gpu_kern_sum" in by_kind:
            got.warnings.append(
                f"{label}: kernels from cuda_gpu_trace (every launch); cuda_gpu_kern_sum not used for records"
            )
        for s in by_kind["cuda_gpu_trace"]:
            got.add_trace(s)
    else:
        for s in by_kind.get("cuda_gpu_kern_sum", []):
            got.add_summary(s, 0)
    for kind, priority in (("cuda_gpu_mem_time_sum", 2), ("nvtx_sum", 1)):
        for s in by_kind.get(kind, []):
            got.add_summary(s, priority)
    if not got.records:
        raise InputError(str(first), None, f"the report tables hold no rows; expected {_WHAT_CSV}")
    return got


def _read_stats(job: _Job, options: AdapterOptions) -> tuple[list[EvidencePacket], list[str]]:
    cap = max_bytes_option(options.extra)
    sections: list[Section] = []
    raws: list[bytes] = []
    for p in job.paths:
        text, raw = _text(p, cap)
        raws.append(raw)
        sections.extend(parse_stats(text, str(p)))
    got = _collect(sections, job.label, job.paths[0])
    n = len(got.records)
    raw_columns = _merge_columns(got.parts, n)
    raw_table = options.raw_table(raw_columns, got.units or None, n, job.label[:64] or "nsys")
    hardware, hw_warnings = _stats_hardware(got.devices, job.label)
    warnings = [*got.warnings, *hw_warnings]
    subject, timing = got.timing()
    capture = ProfilerCapture(
        tool="nsys",
        source=file_artifact(job.paths[0], "text/csv", raws[0]),
        kernels=got.records,
        raw_columns=None if raw_table is not None else raw_columns,
        raw_table=raw_table,
        raw_units=got.units or None,
        attributes={
            k: v
            for k, v in got.attrs.items()
            if v is not None and not (isinstance(v, float) and not math.isfinite(v))
        },
        warnings=[str(w) for w in warnings] or None,
    )
    packet = start_packet(
        subject_kind="kernel",
        subject_name=subject or job.label,
        description=f"nsys stats `{job.label}`: {n} record(s) from {got.attrs['reports']}",
        created_at=options.created_at,
        timing=timing,
        profiler=[capture],
        hardware=hardware,
    )
    return [packet], [w if isinstance(w, AdapterWarning) else f"{job.paths[0]}: {w}" for w in warnings]


class NsysAdapter:
    """Nsight Systems SQLite exports and ``nsys stats`` CSV reports."""

    name = "nsys"
    aliases: tuple[str, ...] = ("nsight-systems",)
    #: the keys ``--opt KEY=VALUE`` may set (any other is a usage error)
    options: tuple[str, ...] = ("max_bytes",)
    description = (
        "NVIDIA Nsight Systems: the SQLite export (nsys export --type sqlite) and nsys stats CSV "
        "reports (cuda_gpu_kern_sum, cuda_gpu_trace, cuda_gpu_mem_time_sum, nvtx_sum)"
    )

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        """One packet per profiled process of each export, one per stats report set."""
        packets: list[EvidencePacket] = []
        warnings: list[str] = []
        ids = options.extra.get("packet_ids", True) is not False
        for item in inputs:
            jobs = _discover(Path(item))
            if not jobs:
                raise AdapterError(
                    f"{item}: no Nsight Systems SQLite export (.sqlite) or nsys stats CSV report found"
                )
            for job in jobs:
                with paused_gc():
                    found, w = (_read_export if job.kind == "export" else _read_stats)(job, options)
                packets.extend(p.with_id() if ids else p for p in found)
                warnings.extend(w)
        return AdapterResult(packets=packets, warnings=warnings)


ADAPTER = NsysAdapter()
