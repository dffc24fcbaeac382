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
    "KE1202",
    "error",
    "accelerator time covers the timed work",
    "record gpu_time as accelerator-seconds summed over the devices, for the whole run",
    "`cost.gpu_time` (accelerator-seconds summed over devices) MUST be at least the time of "
    "the timed calls: the sum of the kept samples, else repeats x min, else half the repeats "
    "x median (half the calls took at least the median), times the device count; for a "
    "serving run (whose request latencies overlap), the benchmark duration times the device "
    "count (10% slack).",
)

_SLACK = 1.10
_NODE_WIDE = ("ipmi", "pdu", "wall", "node", "system", "bmc", "rack")
#: whether an energy source measures a whole node, by source text (short ones only)
_NODE_WIDE_CACHE: dict[str, bool] = {}


def check(p: Any, ctx: Ctx, add: Add) -> None:
    c = p.cost
    if c is None:
        return
    if c.energy is not None and c.energy.window is not None:
        _energy(p, c.energy, add)
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
    node = _NODE_WIDE_CACHE.get(e.source)
    if node is None:
        src = e.source.casefold()
        node = any(w in src for w in _NODE_WIDE)
        if len(_NODE_WIDE_CACHE) < 1024 and len(src) <= 256:
            _NODE_WIDE_CACHE[e.source] = node
    if node:
        return
    window = e.window.value * FACTOR[e.window.unit]
    if window <= 0:
        return
    h = p.hardware
    if h is None:
        return
    entry = None
    if h.power_limit is not None:
        limit = h.power_limit.value * FACTOR[h.power_limit.unit]
    else:
        entry = identify(h.device, arch=h.arch) if len(h.device) <= 256 else None
        if entry is None or entry.tdp_watts is None:
            return
        limit = entry.tdp_watts
    n = _devices(p)
    watts = e.energy.value * FACTOR[e.energy.unit] / window
    if watts > limit * n * _SLACK:
        where = "power_limit" if entry is None else f"{entry.id} board power"
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
