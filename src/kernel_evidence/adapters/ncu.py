"""Nsight Compute (ncu) adapter: CSV, text and ``.ncu-rep`` reports -> evidence packets.

One packet per report, with one :class:`~kernel_evidence.models.ProfilerCapture` holding one
:class:`~kernel_evidence.models.KernelRecord` per launch (keyed by process and launch ID,
never merged by name). Canonical metrics are derived through ``adapters/ncu.toml``; every
metric ncu reported stays verbatim in ``KernelRecord.raw``. Hardware comes from the device
attributes (raw page and ``.ncu-rep``; the details page only knows the compute capability).

Supported inputs (see docs/adapters/ncu.md): ``--csv`` details page, ``--csv --page raw``,
the default text page, ``--print-summary`` text, and binary ``.ncu-rep`` reports (needs the
``ncu`` extra: ``pip install 'kernel-evidence[ncu]'``).
"""

from __future__ import annotations

import gc
import hashlib
import os
import statistics
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._resources import load_toml
from .._version import __version__
from ..errors import AdapterError, InputError, KernelEvidenceError, LimitExceeded, MissingExtra
from ..models import (
    Artifact,
    ByteSize,
    Clocks,
    EvidencePacket,
    Frequency,
    Hardware,
    KernelRecord,
    Producer,
    ProfilerCapture,
    Quantity,
    RawMetric,
    Stats,
    Subject,
    Timing,
)
from ..units import UnitError, convert, dimension_of
from . import AdapterOptions, AdapterResult
from ._ncu_common import Launch, RawCache, Report
from ._ncu_csv import read_text
from ._ncu_rep import REP_MAGIC, read_rep

__all__ = ["ADAPTER", "NcuAdapter", "canonical_metrics"]

#: largest text export read (bytes); a bigger file is refused with a message
MAX_TEXT_BYTES = 4 << 30
_TEXT_SUFFIXES = (".csv", ".txt", ".log", ".out")


# ---------------------------------------------------------------------------- mapping table


@dataclass(frozen=True)
class _Source:
    metrics: tuple[str, ...]
    combine: str | None
    weights: tuple[float, ...] | None
    unit: str | None


@dataclass(frozen=True)
class _Canonical:
    name: str
    unit: str
    sources: tuple[_Source, ...]


@dataclass(frozen=True)
class _Table:
    metrics: tuple[_Canonical, ...]
    units: dict[str, tuple[str, float]]


@lru_cache(maxsize=1)
def _table() -> _Table:
    table = load_toml("ncu.toml")
    canon = load_toml("canonical_metrics.toml")["metrics"]
    metrics = []
    for name, spec in table.get("metrics", {}).items():
        if name not in canon:
            raise AdapterError(f"adapters/ncu.toml: metric `{name}` is not in canonical_metrics.toml")
        sources = []
        for src in spec.get("sources", []):
            m = src["metric"]
            names = (m,) if isinstance(m, str) else tuple(m)
            w = src.get("weights")
            if w is not None and len(w) != len(names):
                raise AdapterError(
                    f"adapters/ncu.toml: `{name}` has {len(names)} source metrics but {len(w)} weights"
                )
            combine = src.get("combine")
            if combine not in (None, "sum", "product", "ratio_pct") or (combine is None and len(names) != 1):
                raise AdapterError(
                    f"adapters/ncu.toml: `{name}`: several metrics need combine = sum|product|ratio_pct"
                )
            sources.append(
                _Source(
                    names,
                    src.get("combine"),
                    tuple(float(x) for x in w) if w else None,
                    src.get("unit"),
                )
            )
        metrics.append(_Canonical(name, canon[name]["unit"], tuple(sources)))
    units = {k: (v[0], float(v[1])) for k, v in table.get("units", {}).items()}
    return _Table(tuple(metrics), units)


def canonical_metrics(raw: dict[str, RawMetric], warnings: set[str] | None = None) -> dict[str, Quantity]:
    """Canonical metrics of one launch from its raw ncu metrics, through ``adapters/ncu.toml``.

    >>> from kernel_evidence.models import RawMetric
    >>> canonical_metrics({"gpu__time_duration.sum": RawMetric(value=5.15, unit="usecond")})["duration"]
    Quantity(value=5150.0, unit='ns')
    """
    table = _table()
    out: dict[str, Quantity] = {}
    for canon in table.metrics:
        for src in canon.sources:
            value = _evaluate(src, canon, raw, table.units, warnings)
            if value is not None:
                out[canon.name] = Quantity(value=value, unit=canon.unit)
                break
    return out


def _in_unit(
    metric: str,
    rm: RawMetric,
    target: str,
    src: _Source,
    units: dict[str, tuple[str, float]],
    warnings: set[str] | None,
) -> float | None:
    assert isinstance(rm.value, float)  # noqa: S101 - checked by the caller
    if src.unit is not None:
        unit, factor = src.unit, 1.0
    else:
        spelled = rm.unit or ""
        hit = units.get(spelled)
        if hit is None:
            if warnings is not None:
                warnings.add(
                    f"unit `{spelled}` of `{metric}` is not in adapters/ncu.toml [units]; left raw only"
                )
            return None
        unit, factor = hit
    try:
        return convert(rm.value * factor, unit, target)
    except UnitError:
        if warnings is not None:
            warnings.add(
                f"`{metric}` is in `{rm.unit}`, which cannot be expressed in `{target}`; left raw only"
            )
        return None


def _evaluate(
    src: _Source,
    canon: _Canonical,
    raw: dict[str, RawMetric],
    units: dict[str, tuple[str, float]],
    warnings: set[str] | None,
) -> float | None:
    found = []
    for m in src.metrics:
        rm = raw.get(m)
        if rm is None or not isinstance(rm.value, float):
            return None
        found.append((m, rm))
    if src.combine is None:
        m, rm = found[0]
        value = _in_unit(m, rm, canon.unit, src, units, warnings)
    elif src.combine == "sum":
        weights = src.weights or (1.0,) * len(found)
        total = 0.0
        for (m, rm), w in zip(found, weights, strict=True):
            v = _in_unit(m, rm, canon.unit, src, units, warnings)
            if v is None:
                return None
            total += w * v
        value = total
    elif src.combine == "product":
        value = 1.0
        for m, rm in found:
            v = _in_unit(m, rm, "count", src, units, warnings)
            if v is None:
                return None
            value *= v
    elif src.combine == "ratio_pct":
        (_ma, a), (_mb, b) = found[0], found[1]
        if (a.unit or "") != (b.unit or "") or b.value == 0:
            return None  # a ratio of two different things is not a rate
        value = 100.0 * a.value / b.value  # type: ignore[operator]
    else:
        raise AdapterError(f"adapters/ncu.toml: unknown combine `{src.combine}` for `{canon.name}`")
    if value is None or value != value or value in (float("inf"), float("-inf")):
        return None
    if value < 0 and dimension_of(canon.unit) not in ("ratio",):
        return None
    return value


# --------------------------------------------------------------------------------- reading


@contextmanager
def _no_gc() -> Iterator[None]:
    """Building hundreds of thousands of small models triggers the cyclic collector over and
    over (5x slower); nothing built here forms cycles, so pause it while building."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _expand(inputs: Sequence[str]) -> list[tuple[str, bool]]:
    """(path, found in a directory) for every input; ``-`` is stdin."""
    out: list[tuple[str, bool]] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            found = sorted(
                str(f)
                for f in p.rglob("*")
                if f.is_file() and (f.suffix == ".ncu-rep" or f.suffix.lower() in _TEXT_SUFFIXES)
            )
            if not found:
                raise InputError(item, None, "directory holds no .csv, .txt, .log or .ncu-rep files")
            out.extend((f, True) for f in found)
        else:
            out.append((item, False))
    return out


def read_reports(path: str, cache: RawCache | None = None) -> tuple[list[Report], bytes | None]:
    """Every report in one file (several when one log holds several CSV tables)."""
    cache = cache or RawCache()
    if path == "-":
        data = sys.stdin.buffer.read(MAX_TEXT_BYTES + 1)
        if data[:4] == REP_MAGIC:
            raise InputError("<stdin>", None, "an .ncu-rep report cannot be read from stdin; give its path")
        if len(data) > MAX_TEXT_BYTES:
            raise LimitExceeded(
                "<stdin>", None, f"larger than {MAX_TEXT_BYTES} bytes (the cap for ncu text exports)"
            )
        return _read_text_data("<stdin>", data, cache), data
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(4)
    except FileNotFoundError:
        raise InputError(path, None, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, None, "is a directory") from None
    except PermissionError:
        raise InputError(path, None, "permission denied") from None
    if head == REP_MAGIC or path.endswith(".ncu-rep"):
        if head != REP_MAGIC:
            raise InputError(
                path,
                None,
                f"not an Nsight Compute report (expected the bytes NVR\\0 at offset 0, got {head!r})",
            )
        return [read_rep(path, cache)], None
    if size > MAX_TEXT_BYTES:
        raise LimitExceeded(path, None, f"larger than {MAX_TEXT_BYTES} bytes (the cap for ncu text exports)")
    with open(path, "rb") as fh:
        data = fh.read()
    return _read_text_data(path, data, cache), data


def _read_text_data(path: str, data: bytes, cache: RawCache) -> list[Report]:
    if not data.strip():
        raise InputError(
            path, None, "empty file; expected ncu --csv output, a text page or an .ncu-rep report"
        )
    if b"\x00" in data[:4096]:
        raise InputError(path, None, "binary file that is not an .ncu-rep report (no NVR\\0 header)")
    return read_text(path, data, cache)


# ---------------------------------------------------------------------------- building packets


def _num(launch: Launch, key: str) -> float | None:
    m = launch.raw.get(key)
    return m.value if m is not None and isinstance(m.value, float) else None


def _device_attr(report: Report, key: str) -> float | str | None:
    """A device attribute of the first launch, wherever the reader put it."""
    if key in report.device_attributes:
        return report.device_attributes[key]
    m = report.launches[0].raw.get(key)
    return m.value if m is not None else None


def _arch(cc: str | None, major: Any, minor: Any) -> str | None:
    if isinstance(major, float) and isinstance(minor, float):
        return f"sm_{int(major)}{int(minor)}"
    if cc and "." in cc:
        a, _, b = cc.strip().partition(".")
        if a.isdigit() and b.isdigit():
            return f"sm_{int(a)}{int(b)}"
    return None


def _median_frequency(
    launches: list[Launch], keys: Sequence[str], units: dict[str, tuple[str, float]]
) -> Frequency | None:
    values = []
    for la in launches:
        for key in keys:
            m = la.raw.get(key)
            if m is None or not isinstance(m.value, float):
                continue
            hit = units.get(m.unit or "")
            if hit is None:
                continue
            try:
                values.append(convert(m.value * hit[1], hit[0], "MHz"))
            except UnitError:
                continue
            break
    if not values:
        return None
    return Frequency(value=round(statistics.median(values), 3), unit="MHz")


def _hardware(report: Report, warnings: list[str]) -> Hardware | None:
    first = report.launches[0]
    name = _device_attr(report, "device__attribute_display_name")
    name = name.strip() if isinstance(name, str) else None
    arch = _arch(
        first.cc,
        _device_attr(report, "device__attribute_compute_capability_major"),
        _device_attr(report, "device__attribute_compute_capability_minor"),
    )
    if not name:
        cc = f"; compute capability {arch}" if arch else ""
        warnings.append(
            f"device name not in this export ({report.page} page{cc}); hardware left empty: "
            "add --set hardware.vendor=nvidia --set 'hardware.device=<GPU model>'"
        )
        return None
    sms = _device_attr(report, "device__attribute_multiprocessor_count")
    if not isinstance(sms, float):
        sms = _num(first, "launch__sm_count")
    memory = _device_attr(report, "device__attribute_total_memory")
    memory = memory if isinstance(memory, float) and memory > 0 else None
    devices = {la.device for la in report.launches if la.device is not None}
    if not devices:
        devices = {_num(la, "device__attribute_device_index") for la in report.launches} - {None}  # type: ignore[assignment]
    units = _table().units
    sm_clock = _median_frequency(
        report.launches, ("sm__cycles_elapsed.avg.per_second", "SM Frequency"), units
    )
    mem_clock = _median_frequency(
        report.launches, ("dram__cycles_elapsed.avg.per_second", "DRAM Frequency"), units
    )
    clocks = Clocks(sm_observed=sm_clock, memory_observed=mem_clock) if sm_clock or mem_clock else None
    return Hardware(
        vendor="nvidia",
        device=name,
        arch=arch,
        count=len(devices) if devices else None,
        compute_units=int(sms) if sms and sms >= 1 else None,
        memory=ByteSize(value=memory, unit="B") if memory else None,
        clocks=clocks,
    )


def _attributes(report: Report, device_attributes: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {"page": report.page, "launches": len(report.launches)}
    if report.reader:
        attrs["reader"] = report.reader
    first = report.launches[0]
    if first.cc:
        attrs["compute_capability"] = first.cc
    for key, m in first.raw.items():  # attributes that differ between launches: first device's
        if key.startswith("device__attribute_") and m.value is not None:
            attrs[key] = m.value
    attrs.update(device_attributes)
    return attrs


def _artifact(path: str, data: bytes | None) -> Artifact:
    h = hashlib.sha256()
    size = 0
    if data is not None:
        h.update(data)
        size = len(data)
    else:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
                size += len(chunk)
    media = (
        "application/octet-stream"
        if path.endswith(".ncu-rep")
        else ("text/csv" if path.lower().endswith(".csv") else "text/plain")
    )
    stdin = path == "<stdin>"
    return Artifact(
        kind="profile",
        name=path if stdin else os.path.basename(path),
        sha256=f"sha256:{h.hexdigest()}",
        size=ByteSize(value=float(size), unit="B"),
        media_type=media,
        path=None if stdin else path,
    )


def _hoist_device_attributes(report: Report) -> dict[str, Any]:
    """Device attributes that are identical in every launch move out of each launch's raw
    metrics into the capture's attributes (kept once, verbatim, instead of once per launch)."""
    first = report.launches[0].raw
    keys = [k for k, m in first.items() if k.startswith("device__attribute_") and not m.unit]
    same = [
        k
        for k in keys
        if all(la.raw.get(k) is first[k] or la.raw.get(k) == first[k] for la in report.launches)
    ]
    hoisted: dict[str, Any] = dict(report.device_attributes)
    hoisted.update({k: first[k].value for k in same if first[k].value is not None})
    drop = set(same)
    if drop:
        for la in report.launches:
            la.raw = {k: v for k, v in la.raw.items() if k not in drop}
    return hoisted


def _records(report: Report, warnings: set[str]) -> list[KernelRecord]:
    records = []
    for la in report.launches:
        metrics = canonical_metrics(la.raw, warnings)
        process = (
            la.pid if not la.process_name else (f"{la.pid} {la.process_name}" if la.pid else la.process_name)
        )
        invocations = la.raw.get("invocations")
        records.append(
            KernelRecord(
                name=la.name or "<unnamed>",
                raw_name=la.raw_name,
                id=la.id,
                process=process,
                stream=la.stream,
                device=la.device,
                grid=la.grid or _dims(la, "grid"),
                block=la.block or _dims(la, "block"),
                invocations=int(invocations.value)
                if invocations is not None and isinstance(invocations.value, float)
                else None,
                metrics=metrics or None,
                raw=la.raw or None,
            )
        )
    return records


def _dims(la: Launch, kind: str) -> list[int] | None:
    vals = [_num(la, f"launch__{kind}_dim_{c}") for c in "xyz"]
    if any(v is None or v < 0 for v in vals):
        return None
    return [int(v) for v in vals]  # type: ignore[arg-type]


def _timing(records: list[KernelRecord]) -> Timing:
    names = {r.name for r in records}
    durations = [r.metrics["duration"].value for r in records if r.metrics and "duration" in r.metrics]
    per_launch = all(r.invocations is None for r in records)  # a summary page holds averages
    if len(names) == 1 and durations and per_launch:
        return Timing(
            method="profiler",
            stats=Stats(
                unit="ns",
                median=statistics.median(durations),
                mean=statistics.fmean(durations),
                min=min(durations),
                max=max(durations),
                n=len(durations),
                std=statistics.stdev(durations) if len(durations) > 1 else None,
            ),
            notes="per-launch gpu__time_duration under the profiler (ncu serialises launches and may lock clocks)",
        )
    return Timing(
        method="profiler",
        notes="per-launch durations of several kernels are in profiler[0].kernels[*].metrics.duration",
    )


def _packet(
    path: str, report: Report, data: bytes | None, options: AdapterOptions, index: int, count: int
) -> EvidencePacket:
    warnings = list(report.warnings)
    metric_warnings: set[str] = set()
    hardware = _hardware(report, warnings)
    device_attributes = _hoist_device_attributes(report)
    records = _records(report, metric_warnings)
    warnings.extend(sorted(metric_warnings))
    summary = None
    if report.summary:
        summary = {k: Quantity(value=v, unit="count") for k, v in report.summary.items()}
        if "tensor_core_inst_executed" in report.summary and report.summary["tensor_core_inst_executed"] == 0:
            warnings.append("no tensor-core (MMA) instruction executed in any launch")
    names = list(dict.fromkeys(r.name for r in records))
    base = os.path.basename(path) + (f"#{index + 1}" if count > 1 else "")
    subject_name = names[0] if len(names) == 1 else base
    description = (
        f"Nsight Compute {report.page} report {base}: {len(records)} launch(es) of {len(names)} kernel(s)"
    )
    capture = ProfilerCapture(
        tool="ncu",
        version=report.tool_version,
        source=_artifact(path, data),
        kernels=records,
        summary=summary,
        attributes=_attributes(report, device_attributes),
        warnings=warnings or None,
    )
    return EvidencePacket(
        schema_version="0.1",
        created_at=options.created_at or _now(),
        producer=Producer(name="kernel-evidence", version=__version__),
        subject=Subject(kind="kernel", name=subject_name, description=description),
        status="passed",
        timing=_timing(records),
        profiler=[capture],
        hardware=hardware,
    )


def _now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class NcuAdapter:
    """Nsight Compute: ``--csv`` (details or raw page), text page, summary, ``.ncu-rep``."""

    name = "ncu"
    aliases: tuple[str, ...] = ("nsight-compute", "ncu-rep", "nsight_compute")
    description = "NVIDIA Nsight Compute: --csv details/raw pages, text/summary pages, .ncu-rep reports"

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        from .._ingest import with_packet_id

        packets: list[EvidencePacket] = []
        warnings: list[str] = []
        cache = RawCache()
        with _no_gc():
            expanded = _expand(inputs)
            first_error: KernelEvidenceError | None = None
            for path, in_directory in expanded:
                try:
                    reports, data = read_reports(path, cache)
                except (InputError, MissingExtra) as exc:
                    if not in_directory:
                        raise
                    # a directory of results may hold a failed run's log: skip it, say so
                    warnings.append(f"skipped: {exc}")
                    first_error = first_error or exc
                    continue
                if path == "-":
                    path = "<stdin>"
                for i, report in enumerate(reports):
                    packet = _packet(path, report, data, options, i, len(reports))
                    want_id = options.extra.get("packet_ids", True)
                    packets.append(with_packet_id(packet) if want_id else packet)
                    for w in packet.profiler[0].warnings or ():  # type: ignore[index]
                        warnings.append(f"{path}: {w}")
        if not packets and first_error is not None:
            raise first_error
        return AdapterResult(packets=packets, warnings=warnings)


ADAPTER = NcuAdapter()
