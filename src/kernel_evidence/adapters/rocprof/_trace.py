"""What the rocprofv3 JSON and rocpd readers share: agents, the launch shape, one packet per run.

Both formats list every agent (CPU and GPU) of the node and every kernel dispatch with the
agent that ran it; most GPUs of a node often ran nothing. A run's hardware is the GPU
agents its dispatches ran on (their count, and the product name, gfx arch, CU count and XCD
count they report), never the node's whole list. ``Grid_Size`` is in work-items, as
rocprofv3 writes it (1024 x 1024 work-items in workgroups of 64 are 16,384 workgroups), and
the timestamps are absolute nanoseconds: a dispatch lasts ``end - start``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...devices import canonical_id
from ...models import Artifact, ByteSize, EvidencePacket, Hardware
from .. import AdapterOptions
from .._launches import Launches, Shape, reduce_launches, trace_packet

__all__ = ["AMD_SHAPE", "Agent", "Run", "amd_hardware", "run_packet", "source_artifact"]

#: the launch columns both readers name the same way (rocpd column names)
AMD_SHAPE = Shape(
    grid=("grid_size_x", "grid_size_y", "grid_size_z"),
    block=("workgroup_size_x", "workgroup_size_y", "workgroup_size_z"),
    grid_in_blocks=False,
    registers="arch_vgpr_count",
    scalar_registers="sgpr_count",
    shared_memory=("group_segment_size",),
    stream="queue_id",
)

#: units of the launch columns (bytes for the segment sizes, ns for the timestamps)
AMD_UNITS = {
    "start": "ns",
    "end": "ns",
    "start_timestamp": "ns",
    "end_timestamp": "ns",
    "group_segment_size": "B",
    "private_segment_size": "B",
}


@dataclass
class Agent:
    """One agent (device) as the trace describes it. ``index`` is the ordinal the records
    use: the GPU's index among the node's GPUs (rocpd ``type_index``, JSON
    ``logical_node_type_id``)."""

    index: int
    node_id: int | None = None
    gpu: bool = True
    name: str | None = None  # the gfx target, e.g. gfx942
    product: str | None = None  # e.g. AMD Instinct MI300X
    compute_units: int | None = None
    xcds: int | None = None


@dataclass
class Run:
    """One profiled process: its launches and the agents they ran on."""

    label: str
    launches: Launches
    agents: dict[int, Agent]
    attributes: dict[str, str | float | int | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    version: str | None = None


def _positive(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def amd_hardware(run: Run) -> tuple[Hardware | None, list[str]]:
    """The GPUs the run's dispatches ran on, as one Hardware; a warning when they differ
    (the device of most dispatches is described) or the trace names none."""
    ids, counts = np.unique(run.launches.device, return_counts=True)
    used = sorted(
        ((int(c), int(i)) for i, c in zip(ids, counts, strict=True) if i >= 0), key=lambda x: (-x[0], x[1])
    )
    gpus = [run.agents[i] for _, i in used if i in run.agents and run.agents[i].gpu]
    if not gpus:
        return None, (
            [f"{run.label}: the agents that ran the dispatches are not described; hardware unknown"]
            if run.launches.n
            else []
        )
    first = gpus[0]
    warnings = []
    kinds = {(a.product, a.name) for a in gpus}
    if len(kinds) > 1:
        shown = ", ".join(sorted(str(p or n) for p, n in kinds))
        warnings.append(
            f"{run.label}: dispatches ran on different GPU models ({shown}); hardware describes agent "
            f"{first.index} (most dispatches)"
        )
    device = first.product or first.name
    if not device:
        return None, [*warnings, f"{run.label}: GPU agent {first.index} has no name; hardware unknown"]
    return (
        Hardware(
            vendor="amd",
            device=device,
            device_id=canonical_id(device, arch=first.name, compute_units=first.compute_units)
            if len(device) <= 256
            else None,
            arch=first.name if first.name and first.name.startswith("gfx") else None,
            count=len(gpus) if len(kinds) == 1 else None,
            compute_units=first.compute_units,
            partitions=first.xcds,
        ),
        warnings,
    )


def source_artifact(path: Path, raw: bytes | None, media_type: str) -> Artifact:
    """The input file as the capture's source (hashed from the bytes read, when read whole)."""
    if raw is None:
        return Artifact(kind="profile", name=path.name, path=str(path), media_type=media_type)
    return Artifact(
        kind="profile",
        name=path.name,
        path=str(path),
        sha256="sha256:" + hashlib.sha256(raw).hexdigest(),
        size=ByteSize(value=float(len(raw)), unit="B"),
        media_type=media_type,
    )


def run_packet(
    run: Run, *, options: AdapterOptions, tool: str, source: Artifact, stem: str
) -> EvidencePacket:
    """One packet for one run: a record per kernel per GPU, the GPUs that ran them."""
    pid = run.attributes.get("pid")
    reduced = reduce_launches(run.launches, AMD_SHAPE, process=str(pid) if pid is not None else None)
    hardware, hw_warnings = amd_hardware(run)
    attrs = dict(run.attributes)
    attrs["agents_listed"] = len(run.agents)
    attrs["gpus_listed"] = sum(1 for a in run.agents.values() if a.gpu)
    return trace_packet(
        reduced,
        options=options,
        tool=tool,
        version=run.version,
        source=source,
        run=run.label,
        hardware=hardware,
        attributes=attrs,
        warnings=[*run.warnings, *hw_warnings],
        stem=stem,
    )
