"""What the XProf readers extract, before it becomes a packet.

Every reader (XSpace protobuf, trace-event JSON, xprof tool JSON) fills a
:class:`ProfileData`; :mod:`.xprof` turns it into one packet. Times are picoseconds, sizes
bytes, rates per second, as in the XSpace itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DeviceInfo", "OpAgg", "OpRuns", "ProfileData", "Step"]


@dataclass
class OpAgg:
    """One HLO op (or kernel) aggregated over all its occurrences on all devices.

    ``flops``, ``model_flops``, ``bytes_accessed`` and ``hbm_bytes`` are TOTALS over the
    occurrences (per-occurrence cost times occurrences), like xprof's OpMetrics.
    """

    name: str
    key: str
    program_id: str | None = None
    module: str | None = None
    category: str | None = None
    raw_name: str | None = None
    occurrences: int = 0
    time_ps: float = 0.0
    children_ps: float = 0.0
    flops: float | None = None
    model_flops: float | None = None
    bytes_accessed: float | None = None
    hbm_bytes: float | None = None
    #: (host index, device ordinal) of every device the op ran on; ordinals repeat across
    #: the hosts of a multi-host run
    devices: set[tuple[int, int]] = field(default_factory=set)
    grid: list[int] | None = None
    block: list[int] | None = None
    kind: str = "hlo"  # "hlo" | "kernel" | "memcpy" | "framework"
    #: source stats kept verbatim (first occurrence), name -> (value, unit)
    raw: dict[str, tuple[Any, str | None]] = field(default_factory=dict)
    #: pre-computed totals when the source is an xprof table (no events to add up)
    given: dict[str, float] = field(default_factory=dict)
    #: figures the source has for this op but that could not be read ("time_ps",
    #: "occurrences"): left out of the packet, never taken as 0
    unknown: set[str] = field(default_factory=set)
    #: GPU kernels the op launched, name -> time (ps), in the order first seen
    kernel_time: dict[str, float] = field(default_factory=dict)

    @property
    def self_ps(self) -> float:
        return max(self.time_ps - self.children_ps, 0.0)

    def add_kernel(self, name: str, time_ps: float) -> None:
        """Count ``time_ps`` of one kernel launch of this op."""
        self.kernel_time[name] = self.kernel_time.get(name, 0.0) + time_ps

    def dominant_kernel(self) -> str | None:
        """The kernel that took most of the op's time (the first seen among equals), or None."""
        if not self.kernel_time:
            return None
        return max(self.kernel_time, key=self.kernel_time.__getitem__)


class OpRuns:
    """Where one execution of an HLO op ends, on one GPU stream.

    A kernel event starts a new execution of its op when the op changes, when the
    profile's execution marks change (``group_id``, ``run_id``, and the host module
    execution its launch's correlation id leads to), or when the kernel is one this
    execution has already launched: an op's execution launches each of its kernels once,
    so the same GEMM kernel three times in a row is three calls, however close together.
    Kernels of one op that follow each other without these marks (a fusion's two kernels)
    stay one execution.
    """

    __slots__ = ("_kernels", "_key", "_mark")

    def __init__(self) -> None:
        self._key: str | None = None
        self._mark: Any = None
        self._kernels: set[str] = set()

    def new_execution(self, key: str, mark: Any, kernel: str) -> bool:
        """Whether this kernel of op ``key`` starts one more execution of it."""
        if key != self._key or mark != self._mark or kernel in self._kernels:
            self._key, self._mark, self._kernels = key, mark, {kernel}
            return True
        self._kernels.add(kernel)
        return False

    def end(self) -> None:
        """A framework op or other event between two kernels: the run of the op is over."""
        self._key, self._mark, self._kernels = None, None, set()


@dataclass
class DeviceInfo:
    """The accelerator as the profile describes it (plane stats or tool tables)."""

    kind: str = "unknown"  # "tpu" | "gpu" | "cpu" | "unknown"
    vendor: str | None = None  # packet vendor: google, nvidia, amd, cpu
    device_type: str | None = None  # the source's own string (device_type_string, xprof device_type)
    count: int = 0  # device planes (TPU cores / GPUs)
    active: int = 0  # device planes holding events
    peak_flop_rate: float | None = None  # FLOP/s per device
    peak_flop_rate_derived: bool = False
    peak_hbm_bandwidth: float | None = None  # B/s per device
    clock_rate_hz: float | None = None
    core_count: int | None = None
    memory_bytes: float | None = None
    compute_capability: tuple[int, int] | None = None
    gpu_device_name: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)  # plane stats of the first device, verbatim


@dataclass
class Step:
    """One training/inference step as a Steps line or a step annotation records it."""

    name: str
    duration_ps: float
    device: int | None = None


@dataclass
class ProfileData:
    """Everything one profile (one run: one or more hosts, or a set of tool outputs) says."""

    sources: list[str]
    input_kind: str  # "xplane" | "trace_json" | "tool_json"
    ops: dict[str, OpAgg] = field(default_factory=dict)
    device: DeviceInfo = field(default_factory=DeviceInfo)
    steps: list[Step] = field(default_factory=list)
    program_time_ps: float = 0.0  # sum of XLA Modules events (all program executions, all cores)
    #: per device, last op end - first op start on the op timeline, summed over devices
    #: (xprof's "Program" total_time in roofline_model)
    device_time_ps: float = 0.0
    programs: dict[str, int] = field(default_factory=dict)  # module name -> executions
    hostnames: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)  # xprof tool outputs that were read
