"""A packet from the launches of one trace: kernel records per name and device, launch records.

``profiler[0]`` holds one record per kernel name per device: its launches (``invocations``),
the median launch time as the canonical ``duration`` (what the profile rules read as one
launch), the launch shape where every launch had the same, and the other statistics raw.
``profiler[1]`` holds one record per launch, in trace order, with its raw values
(start, launching operator, correlation ids, occupancy estimate) as columns, in a side file
when the caller gives a place for one and they are many.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ...devices import identify
from ...models import (
    Artifact,
    ByteSize,
    EvidencePacket,
    Hardware,
    KernelRecord,
    ProfilerCapture,
    Quantity,
    RawMetric,
)
from .. import AdapterOptions, AdapterWarning
from .._envelope import start_packet
from .._objects import Records
from ._events import DeviceProps, Trace
from ._link import Launch, Scan

__all__ = ["TOOL", "build_packet"]

TOOL = "torch-profiler"

#: launch-level raw columns: name -> unit
_LAUNCH_UNITS = {
    "ts": "us",
    "dur": "us",
    "correlation": "id",
    "External id": "id",
    "cpu_op": "name",
    "cpu_op_link": "text",
    "registers per thread": "count",
    "shared memory": "B",
    "blocks per SM": "count",
    "warps per SM": "count",
    "est. achieved occupancy %": "%",
    "queued": "count",
}
#: measured_at is set only when the trace's clock reads as a date in this range (a trace on
#: a monotonic clock gives no date)
_EPOCH_FROM = datetime(2015, 1, 1, tzinfo=timezone.utc).timestamp()


def _ns(us: float) -> float:
    return round(us * 1000.0, 3)


def _q(value: float, unit: str) -> Quantity:
    return Quantity(value=float(value), unit=unit)


def _raw(value: float | str, unit: str | None = None) -> RawMetric:
    return RawMetric(value=value, unit=unit)


def _same(values: list[Any]) -> Any:
    """The one value every launch had, else None."""
    first = values[0]
    for v in values:
        if v != first:
            return None
    return first


def _prod(v: list[int]) -> int:
    return math.prod(v)


@dataclass
class _Group:
    device: int | None
    name: str
    launches: list[Launch]


def _groups(launches: list[Launch]) -> list[_Group]:
    by_key: dict[tuple[int | None, str], list[Launch]] = {}
    for x in launches:
        by_key.setdefault((x.device, x.event.name), []).append(x)
    groups = [_Group(d, n, xs) for (d, n), xs in by_key.items()]
    groups.sort(
        key=lambda g: (-math.fsum(x.dur for x in g.launches), g.device is None, g.device or 0, g.name)
    )
    return groups


def _kernel_record(g: _Group) -> KernelRecord:
    xs = g.launches
    durs = sorted(_ns(x.dur) for x in xs)
    n = len(durs)
    total = math.fsum(durs)
    metrics: dict[str, Quantity] = {"duration": _q(statistics.median(durs), "ns")}
    raw: dict[str, RawMetric] = {
        "duration_mean": _raw(total / n, "ns"),
        "duration_min": _raw(durs[0], "ns"),
        "duration_max": _raw(durs[-1], "ns"),
        "duration_total": _raw(total, "ns"),
    }
    if n > 1:
        raw["duration_std"] = _raw(statistics.pstdev(durs), "ns")
    grid = _same([x.grid for x in xs])
    block = _same([x.block for x in xs])
    if block is not None:
        metrics["block_size"] = _q(_prod(block), "count")
        if grid is not None:
            metrics["grid_size"] = _q(_prod(grid) * _prod(block), "count")
    shapes = {(tuple(x.grid or ()), tuple(x.block or ())) for x in xs if x.grid or x.block}
    if len(shapes) > 1:
        raw["launch_shapes"] = _raw(float(len(shapes)), "count")
    regs = _same([x.args.registers for x in xs])
    if regs is not None:
        metrics["registers_per_thread"] = _q(regs, "count")
    shm = _same([x.shared_memory for x in xs])
    if shm is not None:
        metrics["shared_memory_per_block"] = _q(shm, "B")
    occ = [x.args.occupancy for x in xs if x.args.occupancy is not None]
    if occ:
        # Kineto's estimate from the launch shape and the occupancy calculator, not a
        # measurement: raw only
        raw["est. achieved occupancy %"] = _raw(statistics.median(occ), "%")
    ops = Counter(x.op for x in xs if x.op is not None)
    if ops:
        top, count = ops.most_common(1)[0]
        raw["cpu_op"] = _raw(top, "name")
        raw["cpu_op_launches"] = _raw(float(count), "count")
        if len(ops) > 1:
            raw["cpu_ops"] = _raw(float(len(ops)), "count")
    streams = sorted({str(x.args.stream) for x in xs if x.args.stream is not None})
    if len(streams) > 1:
        raw["streams"] = _raw(",".join(streams))
    return KernelRecord(
        name=g.name,
        device=g.device,
        stream=streams[0] if len(streams) == 1 else None,
        grid=grid,
        block=block,
        invocations=n,
        category="kernel",
        metrics=metrics,
        raw=raw,
    )


def _launch_capture(
    launches: list[Launch], options: AdapterOptions, stem: str, encode: bool
) -> tuple[ProfilerCapture, bytes | None, Artifact | None]:
    """One record per launch (identity, shape, ``duration``) and the raw columns."""
    n = len(launches)
    out = Records([("duration", [_ns(x.dur) for x in launches], "ns")], n, encode)
    for i, x in enumerate(launches):
        fields: dict[str, Any] = {"name": x.event.name, "category": "kernel"}
        if x.device is not None:
            fields["device"] = x.device
        if x.args.stream is not None:
            fields["stream"] = str(x.args.stream)
        if x.args.correlation is not None:
            fields["id"] = str(x.args.correlation)
        if x.grid is not None:
            fields["grid"] = x.grid
        if x.block is not None:
            fields["block"] = x.block
        out.add(fields, i)
    records, kernels_json = out.result()
    cols: dict[str, list[float | str | None]] = {
        "ts": [x.ts for x in launches],
        "dur": [x.dur for x in launches],
        "correlation": [_f(x.args.correlation) for x in launches],
        "External id": [_f(x.args.external_id) for x in launches],
        "cpu_op": [x.op for x in launches],
        "cpu_op_link": [x.op_link for x in launches],
        "registers per thread": [x.args.registers for x in launches],
        "shared memory": [x.shared_memory for x in launches],
        "blocks per SM": [x.args.blocks_per_sm for x in launches],
        "warps per SM": [x.args.warps_per_sm for x in launches],
        "est. achieved occupancy %": [x.args.occupancy for x in launches],
        "queued": [x.args.queued for x in launches],
    }
    cols = {k: v for k, v in cols.items() if any(c is not None for c in v)}
    units = {k: _LAUNCH_UNITS[k] for k in cols}
    ref = options.raw_table(cols, units, n, f"{stem}.launches") if cols else None
    capture = ProfilerCapture(
        tool=TOOL,
        kernels=records or None,
        raw_columns=None if ref is not None or not cols else cols,
        raw_units=units or None,
        attributes={"records": "launches", "launches": n},
    )
    return capture, kernels_json, ref


def _f(v: int | None) -> float | str | None:
    if v is None:
        return None
    return float(v) if abs(v) < 2**53 else str(v)


_NVIDIA_WORDS = ("nvidia", "tesla", "geforce", "quadro", "rtx")
_AMD_WORDS = ("amd", "radeon", "instinct")


def _vendor(props: DeviceProps | None, trace: Trace, scan: Scan) -> str | None:
    name = (props.name or "").lower() if props is not None else ""
    if any(w in name for w in _NVIDIA_WORDS):
        return "nvidia"
    if any(w in name for w in _AMD_WORDS):
        return "amd"
    if trace.cupti_version is not None or trace.cuda_runtime_version is not None:
        return "nvidia"
    if trace.hip_runtime_version is not None or trace.roctracer_version is not None:
        return "amd"
    if props is not None and props.warpSize == 64:
        return "amd"
    return scan.vendor_hint


def _arch(vendor: str | None, props: DeviceProps) -> str | None:
    major, minor = props.computeMajor, props.computeMinor
    if major is None or minor is None:
        return None
    if vendor == "nvidia":
        return f"sm_{major}{minor}"
    if vendor == "amd":
        # hipDeviceProp major.minor names the gfx family only where one product line has it
        return {(9, 4): "gfx942", (9, 5): "gfx950"}.get((major, minor))
    return None


def hardware(
    trace: Trace, scan: Scan, groups: list[_Group], options: AdapterOptions, warnings: list[str], label: str
) -> Hardware | None:
    """The device that ran the kernels (the one with the most kernel time where they ran on
    devices of several models), from ``deviceProperties``; the ``device``/``vendor`` options
    win."""
    props = {p.id: p for p in trace.deviceProperties or [] if p.id is not None}
    used = [g.device for g in groups if g.device is not None]
    ran = sorted(set(used))
    main = props.get(used[0]) if used else None
    opt_device = options.extra.get("device")
    opt_vendor = options.extra.get("vendor")
    if main is None and trace.deviceProperties and not props:
        main = trace.deviceProperties[0]
    vendor = str(opt_vendor) if opt_vendor else _vendor(main, trace, scan)
    name = str(opt_device) if opt_device else (main.name if main is not None and main.name else None)
    if not name:
        warnings.append(
            AdapterWarning(
                f"{label}: the trace has no `deviceProperties` naming the GPU; hardware left out",
                {"hardware.device": "<GPU model>"},
            )
        )
        return None
    if vendor not in ("nvidia", "amd"):
        vendor = "other"
    names = {props[d].name for d in ran if d in props}
    if len(names) > 1:
        warnings.append(
            f"{label}: kernels ran on devices of {len(names)} models ({', '.join(sorted(map(str, names)))}); hardware names {name}"
        )
    arch = _arch(vendor, main) if main is not None and not opt_device else None
    units = main.numSms if main is not None and not opt_device else None
    memory = main.totalGlobalMem if main is not None and not opt_device else None
    entry = identify(name, arch=arch, compute_units=units, memory_bytes=float(memory) if memory else None)
    return Hardware(
        vendor=vendor,
        device=name,
        device_id=entry.id if entry is not None else None,
        arch=arch,
        count=len(ran) or None,
        compute_units=units or None,
        memory=ByteSize(value=float(memory), unit="B") if memory else None,
    )


def _measured_at(trace: Trace, launches: list[Launch]) -> str | None:
    """The first kernel's start as a date: ``ts`` counts from ``baseTimeNanoseconds`` in
    traces that have it, from the epoch in older ones; neither reading a date (a monotonic
    clock) gives None."""
    first = min(x.ts for x in launches)
    base = trace.baseTimeNanoseconds
    now = datetime.now(timezone.utc).timestamp() + 86400
    for sec in ((base / 1e9 + first / 1e6) if base else None, first / 1e6):
        if sec is not None and _EPOCH_FROM <= sec <= now:
            return datetime.fromtimestamp(sec, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


def _summary(scan: Scan, groups: list[_Group]) -> dict[str, Quantity]:
    out = {
        "kernel_time": _q(math.fsum(_ns(x.dur) for x in scan.launches), "ns"),
        "kernel_launches": _q(len(scan.launches), "count"),
        "kernels": _q(len(groups), "count"),
    }
    if scan.memcpy:
        out["memcpy_time"] = _q(math.fsum(map(_ns, scan.memcpy)), "ns")
        out["memcpy_count"] = _q(len(scan.memcpy), "count")
    if scan.memset:
        out["memset_time"] = _q(math.fsum(map(_ns, scan.memset)), "ns")
        out["memset_count"] = _q(len(scan.memset), "count")
    if scan.steps:
        out["profiler_steps"] = _q(len(scan.steps), "count")
        out["step_time_median"] = _q(_ns(statistics.median(scan.steps)), "ns")
    return out


def _attributes(trace: Trace, scan: Scan) -> dict[str, str | float | int]:
    attrs: dict[str, str | float | int] = {"records": "kernels per name and device"}
    for key in ("schemaVersion", "cupti_version", "cuda_runtime_version", "cuda_driver_version",
                "hip_runtime_version", "roctracer_version", "traceName"):  # fmt: skip
        v = getattr(trace, key)
        if v is not None:
            attrs[key] = v if isinstance(v, str) or abs(v) < 2**53 else str(v)
    dist = trace.distributedInfo
    if dist is not None:
        for key in ("rank", "world_size", "backend", "nccl_version"):
            v = getattr(dist, key)
            if v is not None:
                attrs[f"distributed_{key}"] = v
    linked = sum(1 for x in scan.launches if x.op is not None)
    attrs["launches_with_cpu_op"] = linked
    attrs["runtime_calls"] = scan.runtime_calls
    attrs["cpu_ops"] = scan.cpu_ops
    return attrs


def _artifact(path: str, blob: bytes) -> Artifact:
    gz = blob[:2] == b"\x1f\x8b"
    return Artifact(
        kind="trace",
        name=path.rsplit("/", 1)[-1],
        sha256="sha256:" + hashlib.sha256(blob).hexdigest(),
        size=ByteSize(value=float(len(blob)), unit="B"),
        media_type="application/gzip" if gz else "application/json",
        path=path,
    )


def build_packet(
    path: str,
    blob: bytes,
    trace: Trace,
    scan: Scan,
    options: AdapterOptions,
    warnings: list[str],
    stem: str,
) -> EvidencePacket:
    """The packet of one trace (with its id)."""
    from ..._codec.encode import kernels_json_wanted
    from ..._codec.ids import finish_packet

    groups = _groups(scan.launches)
    records = [_kernel_record(g) for g in groups]
    hw = hardware(trace, scan, groups, options, warnings, path)
    with_id = bool(options.extra.get("packet_ids", True))
    launch_cap, kernels_json, ref = _launch_capture(
        scan.launches, options, stem, with_id or kernels_json_wanted()
    )
    rank = trace.distributedInfo.rank if trace.distributedInfo is not None else None
    capture = ProfilerCapture(
        tool=TOOL,
        version=str(trace.schemaVersion) if trace.schemaVersion is not None else None,
        source=_artifact(path, blob),
        kernels=records,
        summary=_summary(scan, groups),
        attributes=_attributes(trace, scan),
        warnings=[str(w) for w in warnings] or None,
    )
    subject = str(options.extra.get("subject") or stem)
    packet = start_packet(
        subject_kind="kernel",
        subject_name=subject,
        description=f"PyTorch profiler trace {path}" + (f" (rank {rank})" if rank is not None else ""),
        created_at=options.created_at,
        measured_at=_measured_at(trace, scan.launches),
        hardware=hw,
        profiler=[capture, launch_cap],
    )
    return finish_packet(packet, 1, kernels_json=kernels_json, raw_table=ref, with_id=with_id)
