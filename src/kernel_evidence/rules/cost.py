"""KE12xx: the cost figures are physically possible.

Energy measured over a window is an average power, and no device draws more than its power
limit for long; accelerator time summed over devices covers at least the timed calls.
"""

from __future__ import annotations

from typing import Any

from ..devices import identify
from ._context import Add, Ctx
from ._engine import declare
from ._units import FACTOR

declare(
    "KE1201",
    "error",
    "energy fits the power limit",
    "record the energy of the devices that ran, over the window it was measured (and the device count)",
    "Energy over its measurement window (`cost.energy.energy` / `cost.energy.window`) is an "
    "average power, which MUST NOT exceed the power limit (`hardware.power_limit`, else the "
    "board power of the device in the device table) times the device count "
    "(`timing.conditions.device_count`, else `hardware.count`, else 1), with 10% slack. "
    "Energy whose source measures a whole node (IPMI, PDU, wall) is not bounded this way.",
)
declare(
    "KE1203",
    "warning",
    "energy is not below what a powered device draws",
    "record the total energy of the devices over the window (not the energy above idle), "
    "or say `above idle` in `cost.energy.source`",
    "Energy over its window SHOULD be at least 3% of one device's board power (the device "
    "table's, else `hardware.power_limit`): an accelerator that is on draws more than that "
    "idle, so less is an energy figure cut down to flatter efficiency (or one of another "
    "unit or window). A source that says it measures energy above idle (`above idle`, "
    "`dynamic`, `incremental`) is not bounded this way.",
    caps="C",
)
declare(
    "KE1202",
    "error",
    "accelerator time covers the timed work",
    "record gpu_time as accelerator-seconds summed over the devices, for the whole run",
    "`cost.gpu_time` (accelerator-seconds summed over devices) MUST be at least the time of "
    "the timed calls: the sum of the kept samples, else repeats x min, else half the repeats "
    "x median (half the calls took at least the median), times the device count; for a "
    "serving run (whose request latencies overlap), the benchmark duration times the device "
    "count (10% slack). It MUST NOT exceed `cost.wall_time` times the device count (the larger "
    "of `hardware.count` and `timing.conditions.device_count`; 10% slack): a device is busy "
    "at most the whole wall time; the finding then points at `cost.wall_time`.",
)

_SLACK = 1.10
#: the least share of its board power a device that is on draws (an H100 SXM idles near
#: 10% of its 700 W, consumer cards near 5%)
_IDLE_SHARE = 0.03
#: sources that measure energy above the idle draw (no lower bound then)
_ABOVE_IDLE = ("above idle", "dynamic", "incremental")
_NODE_WIDE = ("ipmi", "pdu", "wall", "node", "system", "bmc", "rack")
#: by source text (short ones only): whether an energy source measures a whole node, and
#: whether it measures energy above idle
_SOURCE_CACHE: dict[str, tuple[bool, bool]] = {}
#: :func:`identify` by (device, arch) (short ones only): a batch repeats a few devices
_DEVICE_CACHE: dict[tuple[str, str | None], Any] = {}
_UNSET: Any = object()


def check(p: Any, ctx: Ctx, add: Add) -> None:
    c = p.cost
    if c is None:
        return
    if c.energy is not None and c.energy.window is not None:
        _energy(p, c.energy, add)
    if c.wall_time is not None and c.gpu_time is not None:
        _wall_time(p, c.gpu_time, c.wall_time, add)
    t = p.timing
    if c.gpu_time is not None and t is not None:
        if p.subject.kind == "serving":
            # request latencies overlap: the run's duration on every device is the work
            if t.serving is not None and t.serving.duration is not None:
                _serving_gpu_time(p, c.gpu_time, t.serving.duration, add)
        elif t.stats is not None:
            _gpu_time(p, c.gpu_time, add)


def _devices(p: Any) -> int:
    t = p.timing
    cond = t.conditions if t is not None else None
    if cond is not None and cond.device_count:
        return int(cond.device_count)
    h = p.hardware
    return int(h.count) if h is not None and h.count else 1


def _energy(p: Any, e: Any, add: Add) -> None:
    src = e.source
    kind = _SOURCE_CACHE.get(src)
    if kind is None:
        folded = src.casefold()
        kind = (any(w in folded for w in _NODE_WIDE), any(w in folded for w in _ABOVE_IDLE))
        if len(_SOURCE_CACHE) < 1024 and len(src) <= 256:
            _SOURCE_CACHE[src] = kind
    window = e.window.value * FACTOR[e.window.unit]
    if window <= 0:
        return
    h = p.hardware
    if h is None:
        return
    node, above_idle = kind
    key = (h.device, h.arch)
    entry = _DEVICE_CACHE.get(key, _UNSET)
    if entry is _UNSET:
        entry = identify(h.device, arch=h.arch) if len(h.device) <= 256 else None
        if len(_DEVICE_CACHE) < 1024 and len(h.device) + len(h.arch or "") <= 256:
            _DEVICE_CACHE[key] = entry
    board = entry.tdp_watts if entry is not None else None
    watts = e.energy.value * FACTOR[e.energy.unit] / window
    if not above_idle:
        # KE1203: the floor, from the device's own board power where the table knows it (a
        # power cap lowers what a device may draw, not what it draws idle)
        floor = (
            board
            if board is not None
            else (h.power_limit.value * FACTOR[h.power_limit.unit] if h.power_limit is not None else None)
        )
        if floor is not None and watts < floor * _IDLE_SHARE:
            add(
                (
                    "KE1203",
                    "/cost/energy/energy",
                    f"{e.energy.value:g} {e.energy.unit} over {e.window.value:g} {e.window.unit} is "
                    f"{watts:.3g} W, below {_IDLE_SHARE:.0%} of one device's {floor:g} W: less than "
                    "a device that is on draws",
                )
            )
    if node:
        return
    if h.power_limit is not None:
        limit = h.power_limit.value * FACTOR[h.power_limit.unit]
        where = "power_limit"
    elif board is not None and entry is not None:
        limit = board
        where = f"{entry.id} board power"
    else:
        return
    n = _devices(p)
    if watts > limit * n * _SLACK:
        add(
            (
                "KE1201",
                "/cost/energy/energy",
                f"{e.energy.value:g} {e.energy.unit} over {e.window.value:g} {e.window.unit} is {watts:.4g} W, "
                f"above {n} x {limit:g} W ({where})",
            )
        )


def _gpu_time(p: Any, g: Any, add: Add) -> None:
    t = p.timing
    st = t.stats
    f = FACTOR[st.unit]
    reps = 0
    if st.samples:
        work = sum(st.samples) * f
    else:
        reps = t.repeats if t.repeats is not None else st.n
        if not reps or reps < 1:
            return
        if st.min is not None:
            work = reps * st.min * f
        elif st.median is not None:
            work = (reps + 1) // 2 * st.median * f
        else:
            return
    n = _devices(p)
    have = g.value * FACTOR[g.unit]
    need = work * n
    if have * (1 + 1e-9) < need:
        # what the work was computed from, worded only when reported
        if st.samples:
            how = f"{len(st.samples)} samples"
        elif st.min is not None:
            how = f"{reps} repeats x min"
        else:
            how = f"half of {reps} repeats x median"
        add(
            (
                "KE1202",
                "/cost/gpu_time",
                f"gpu_time {g.value:g} {g.unit} is below the timed work: {how} x {n} device(s) = {need:.4g} s",
            )
        )


def _serving_gpu_time(p: Any, g: Any, dur: Any, add: Add) -> None:
    n = _devices(p)
    need = dur.value * FACTOR[dur.unit] * n
    have = g.value * FACTOR[g.unit]
    if have * _SLACK < need:
        add(
            (
                "KE1202",
                "/cost/gpu_time",
                f"gpu_time {g.value:g} {g.unit} is below the run's duration {dur.value:g} {dur.unit} x {n} device(s)",
            )
        )


def _wall_time(p: Any, g: Any, w: Any, add: Add) -> None:
    """KE1202: accelerator-seconds summed over the devices fit in the wall time on each."""
    wall = w.value * FACTOR[w.unit]
    have = g.value * FACTOR[g.unit]
    if have <= wall * _SLACK:
        return  # one device busy the whole run at most (the common case)
    t = p.timing
    cond = t.conditions if t is not None else None
    h = p.hardware
    n = max(
        int(cond.device_count) if cond is not None and cond.device_count else 1,
        int(h.count) if h is not None and h.count else 1,
    )
    if have > wall * n * _SLACK:
        add(
            (
                "KE1202",
                "/cost/wall_time",
                f"wall_time {w.value:g} {w.unit} x {n} device(s) is below gpu_time {g.value:g} {g.unit}: "
                "a device is busy at most the whole wall time",
            )
        )
