"""From trace events to kernel launches, each with the CPU operator that launched it.

Kineto links a GPU kernel to its launch through a correlation id: the kernel's
``args.correlation`` equals that of the runtime or driver call that launched it
(``cudaLaunchKernel``, ``cuLaunchKernel``, ``hipLaunchKernel``); the ``ac2g`` flow events
carry the same id, for traces whose kernels lack ``args.correlation``. The CPU operator is
the innermost ``cpu_op`` of the launching call's thread whose span contains the call's start.
Where that finds none, a kernel's ``External id`` naming a CPU operator's own is used.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ._events import KERNEL_ARGS, OP_ARGS, RUNTIME_ARGS, Event, KernelArgs, decode_args

__all__ = ["Launch", "Scan", "scan"]

#: category spellings: current Kineto (lower case) and PyTorch 1.8-1.9 (capitalised)
_KERNEL = frozenset({"kernel", "Kernel"})
_RUNTIME = frozenset(
    {
        "cuda_runtime",
        "cuda_driver",
        "Runtime",
        "Driver",
        "privateuse1_runtime",
        "privateuse1_driver",
        "xpu_runtime",
    }
)
_OP = frozenset({"cpu_op", "Operator"})
_MEMCPY = frozenset({"gpu_memcpy", "Memcpy"})
_MEMSET = frozenset({"gpu_memset", "Memset"})
_STEP = "ProfilerStep#"
#: HIP launch calls whose size arguments are the global work size in work-items
#: (``globalWorkSizeX``...), not a count of blocks; Kineto (roctracer and rocprofiler-sdk
#: loggers alike) writes that value as the call's ``grid``
_GLOBAL_WORK_SIZE = frozenset({"hipExtModuleLaunchKernel", "hipHccModuleLaunchKernel"})


@dataclass
class Launch:
    """One kernel launch: the event, its decoded arguments, and the launching operator."""

    event: Event
    args: KernelArgs
    device: int | None
    ts: float
    dur: float
    grid: list[int] | None
    block: list[int] | None
    shared_memory: float | None
    op: str | None = None
    #: how the operator was found: "correlation" (the runtime call's enclosing cpu_op) or
    #: "external id"
    op_link: str | None = None


@dataclass
class Scan:
    """What one pass over the events found."""

    launches: list[Launch] = field(default_factory=list)
    memcpy: list[float] = field(default_factory=list)
    memset: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)
    #: events left out, by reason -> (count, first place)
    skipped: dict[str, tuple[int, str]] = field(default_factory=dict)
    args_dropped: int = 0
    runtime_calls: int = 0
    cpu_ops: int = 0
    linked_by_flow: int = 0
    vendor_hint: str | None = None

    def skip(self, why: str, where: str) -> None:
        n, first = self.skipped.get(why, (0, where))
        self.skipped[why] = (n + 1, first)


def _place(i: int, ev: Event) -> str:
    return f"traceEvents[{i}] `{ev.name[:60]}`"


def _dims(v: list[int] | None) -> list[int] | None:
    if v is None or len(v) != 3 or any(x < 0 for x in v):
        return None
    return v


def _blocks(work_items: list[int], block: list[int] | None) -> list[int] | None:
    """Blocks per dimension from a global work size (rounded up, as HIP launches a partial
    last block); unknown without the block shape."""
    if block is None or any(b <= 0 for b in block):
        return None
    return [-(-g // b) for g, b in zip(work_items, block, strict=True)]


def scan(events: list[Event]) -> Scan:
    """Find the kernel launches (with their launching operators), memory copies and sets,
    and profiler steps of a trace."""
    out = Scan()
    kernels: list[tuple[int, Event]] = []
    runtime: list[Event] = []
    ops: dict[tuple[Any, Any], list[tuple[float, float, str, Event]]] = defaultdict(list)
    flow_ends: dict[tuple[Any, Any, float], Any] = {}
    flow_starts: dict[Any, tuple[Any, Any, float]] = {}
    for i, ev in enumerate(events):
        ph = ev.ph
        if ph != "X":
            if ev.cat == "ac2g" and ev.ts is not None:
                if ph == "f":
                    flow_ends[(ev.pid, ev.tid, ev.ts)] = ev.id
                elif ph == "s":
                    flow_starts[ev.id] = (ev.pid, ev.tid, ev.ts)
            continue
        cat = ev.cat
        if cat in _KERNEL:
            kernels.append((i, ev))
        elif cat in _RUNTIME:
            runtime.append(ev)
        elif cat in _OP:
            if ev.ts is not None and ev.dur is not None and ev.dur >= 0:
                ops[(ev.pid, ev.tid)].append((ev.ts, ev.ts + ev.dur, ev.name, ev))
        elif cat in _MEMCPY:
            if ev.dur is not None and ev.dur >= 0:
                out.memcpy.append(ev.dur)
        elif cat in _MEMSET:
            if ev.dur is not None and ev.dur >= 0:
                out.memset.append(ev.dur)
        elif cat == "user_annotation" and ev.name.startswith(_STEP) and ev.dur is not None and ev.dur >= 0:
            out.steps.append(ev.dur)
    out.runtime_calls = len(runtime)
    out.cpu_ops = sum(len(v) for v in ops.values())
    by_corr: dict[int, Event] = {}
    rt_args: dict[int, tuple[Any, str]] = {}
    for ev in runtime:
        a, clean = decode_args(RUNTIME_ARGS, ev.args)
        if not clean:
            out.args_dropped += 1
        if a.correlation is not None:
            by_corr[a.correlation] = ev
            if a.grid is not None or a.block is not None:
                rt_args[a.correlation] = (a, ev.name)
    queries: dict[tuple[Any, Any], list[tuple[float, int]]] = defaultdict(list)
    for i, ev in kernels:
        launch = _launch(out, i, ev, rt_args, flow_ends)
        if launch is None:
            continue
        k = len(out.launches)
        out.launches.append(launch)
        corr = launch.args.correlation
        rt = by_corr.get(corr) if corr is not None else None
        if rt is not None and rt.ts is not None:
            queries[(rt.pid, rt.tid)].append((rt.ts, k))
        elif corr is not None and corr in flow_starts:
            pid, tid, ts = flow_starts[corr]
            queries[(pid, tid)].append((ts, k))
    for key, qs in queries.items():
        _innermost(out.launches, ops.get(key, []), qs)
    _by_external_id(out.launches, ops)
    return out


def _launch(
    out: Scan,
    i: int,
    ev: Event,
    rt_args: dict[int, tuple[Any, str]],
    flow_ends: dict[tuple[Any, Any, float], Any],
) -> Launch | None:
    if not ev.name:
        out.skip("no name", _place(i, ev))
        return None
    if ev.ts is None or ev.dur is None:
        out.skip("no `ts` or `dur`", _place(i, ev))
        return None
    if ev.dur < 0 or ev.dur != ev.dur or ev.dur == float("inf"):
        out.skip("negative or non-finite `dur`", f"{_place(i, ev)} dur {ev.dur!r}")
        return None
    a, clean = decode_args(KERNEL_ARGS, ev.args)
    if not clean:
        out.args_dropped += 1
    if a.correlation is None:
        corr = flow_ends.get((ev.pid, ev.tid, ev.ts))
        if isinstance(corr, int):
            a.correlation = corr
            out.linked_by_flow += 1
    if a.kind is not None and out.vendor_hint is None:
        out.vendor_hint = "amd"
    elif a.registers is not None and out.vendor_hint is None:
        out.vendor_hint = "nvidia"
    device = a.device if a.device is not None else (ev.pid if isinstance(ev.pid, int) else None)
    grid, block, shm = _dims(a.grid), _dims(a.block), a.shared_memory
    if (grid is None or block is None) and a.correlation is not None:
        # ROCm: the launch shape is on the runtime call (hipLaunchKernel's numBlocks and
        # dimBlocks), not on the dispatch
        found = rt_args.get(a.correlation)
        if found is not None:
            r, call = found
            block = block or _dims(r.block)
            if grid is None:
                grid = _dims(r.grid)
                if grid is not None and call in _GLOBAL_WORK_SIZE:
                    grid = _blocks(grid, block)
            shm = shm if shm is not None else r.shared_memory
    return Launch(ev, a, device, ev.ts, ev.dur, grid, block, shm)


def _innermost(
    launches: list[Launch], ops: list[tuple[float, float, str, Event]], queries: list[tuple[float, int]]
) -> None:
    """Give each query (a launching call's start, a launch index) the innermost operator of
    the thread whose span contains it (operators on one thread nest)."""
    if not ops:
        return
    ordered = sorted(ops, key=lambda o: (o[0], -o[1]))
    stack: list[tuple[float, float, str, Event]] = []
    j = 0
    for t, k in sorted(queries):
        while j < len(ordered) and ordered[j][0] <= t:
            op = ordered[j]
            while stack and stack[-1][1] < op[0]:
                stack.pop()
            stack.append(op)
            j += 1
        while stack and stack[-1][1] < t:
            stack.pop()
        if stack:
            launches[k].op = stack[-1][2]
            launches[k].op_link = "correlation"


def _by_external_id(
    launches: list[Launch], ops: dict[tuple[Any, Any], list[tuple[float, float, str, Event]]]
) -> None:
    """Launches still without an operator: the operator whose ``External id`` the kernel's
    names (Kineto writes the linked operator's id there)."""
    # (older Kineto wrote a kernel's own correlation id there when it had no linked operator:
    # such an id names no operator and is not looked up)
    wanted = {
        x.args.external_id
        for x in launches
        if x.op is None and x.args.external_id is not None and x.args.external_id != x.args.correlation
    }
    if not wanted:
        return
    names: dict[int, str] = {}
    for per_thread in ops.values():
        for _s, _e, name, ev in per_thread:
            a, _clean = decode_args(OP_ARGS, ev.args)
            if a.external_id in wanted:
                names[a.external_id] = name
    for x in launches:
        if x.op is None and x.args.external_id is not None and x.args.external_id in names:
            x.op = names[x.args.external_id]
            x.op_link = "external id"
