"""KE12xx: the cost figures are physically possible.

Energy measured over a window is an average power, and no device draws more than its power
limit for long; accelerator time summed over devices covers at least the timed calls.
"""

from __future__ import annotations

import re
from typing import Any

from ..devices import candidates, identify
from ._common import CACHED_CHARS
from ._context import Add, Ctx
from ._engine import declare
from ._tables import dtype_class
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
    "unit or window). Only a source that says it measures energy above idle (`above idle`, "
    "`idle-subtracted`, `net of idle`) is not bounded this way (`dynamic` or `incremental` "
    "alone does not say so). The window SHOULD NOT be longer than `cost.wall_time` (10% "
    "slack): energy averaged over time the run did not take is not the run's, and hides a "
    "figure cut down below the floor. On a run of more than one device (the larger of "
    "`hardware.count` and `timing.conditions.device_count`), a source naming a single device "
    "(`GPU 0`, `device 0`, `rank 0`, `cuda:0`) SHOULD NOT be recorded: the energy of one "
    "device is not the run's. Whatever the source says (above idle, dynamic, incremental), the "
    "energy SHOULD NOT be below the work its window holds at the device's own efficiency at "
    "peak: the timed calls (the kept samples, else `timing.repeats`, else `timing.stats.n`; "
    "only where the window is at least their time) x the timed shape's `work.flops` (else "
    "`task.work.flops`) x board power / peak FLOP/s for the work's dtype labels (the highest "
    "of them, any peak of the device where a label is unknown; the device table's figures, "
    "of the most efficient model the name could be; half that under a recorded "
    "`hardware.power_limit` below the board power), 10% slack: no device does a FLOP for "
    "less energy than at its peak. The finding points at `cost.energy.energy` (at "
    "`cost.energy.window` for the window).",
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

declare(
    "KE1204",
    "warning",
    "money is not below what the device time costs",
    "record the price of the accelerator time the run used, or say in `cost.money.price_source` "
    "that the amount is the electricity (or a free allocation) only",
    "`cost.money.amount` in USD, EUR, GBP or CHF, over the accelerator-hours of the run "
    "(`cost.gpu_time`, else `cost.wall_time` x device count), SHOULD be at least 0.05 per "
    "device-hour on a data-centre accelerator (one the device table knows with at least 40 GB "
    "of memory, or a TPU): no rental, list, spot or reserved price of such a device is that "
    "low, so less inflates every cost-per-work figure. A `price_source` that names "
    "electricity, power or energy, or a free or granted allocation, is not bounded this way.",
    caps="C",
)

_SLACK = 1.10
#: the least share of its board power a device that is on draws (an H100 SXM idles near
#: 10% of its 700 W, consumer cards near 5%)
_IDLE_SHARE = 0.03
#: sources that say they measure energy above the idle draw (no lower bound then); a bare
#: `dynamic` or `incremental` does not say what the energy is above
_ABOVE_IDLE = re.compile(
    r"above[\s_-]*(?:the\s+)?idle|(?:minus|net\s+of|excluding|less)\s+(?:the\s+)?idle|idle[\s_-]*subtracted"
)
_NODE_WIDE = ("ipmi", "pdu", "wall", "node", "system", "bmc", "rack")
#: a source naming one device by its index (`GPU 0`, `device 1`, `rank 0`, `cuda:0`), not
#: followed by another index (`GPU 0-1`, `GPUs 0,1`, `device 0 and 1`)
_ONE_DEVICE = re.compile(
    r"\b(?:(?:gpu|device|dev|rank|card|accelerator|npu)\s*[#_]?\s*|(?:cuda|hip|xpu|gpu):)\d+\b(?![.\d])"
    r"(?!\s*(?:[-,+&/]|and\b|to\b|through\b|\.\.)\s*\d)"
)
#: words of a source that speaks of several devices (a sum or a list of them)
_SEVERAL = re.compile(r"\b(?:gpus|devices|ranks|cards|all|sum|summed|total|aggregate|each|every)\b")
#: by source text (short ones only): whether an energy source measures a whole node,
#: whether it measures energy above idle, and the single device it names (else "")
_SOURCE_CACHE: dict[str, tuple[bool, bool, str]] = {}
#: :func:`identify` by (device, arch) (short ones only): a batch repeats a few devices
_DEVICE_CACHE: dict[tuple[str, str | None], Any] = {}
_UNSET: Any = object()


def check(p: Any, ctx: Ctx, add: Add) -> None:
    c = p.cost
    if c is None:
        return
    t = p.timing
    e = c.energy
    if e is not None and e.window is not None:
        _energy(p, e, add)
        if t is not None and t.stats is not None and p.task is not None:
            _work_floor(p, e, add)
        if c.wall_time is not None:
            _window(e.window, c.wall_time, add)
    if c.money is not None:
        _money(p, c, add)
    if c.wall_time is not None and c.gpu_time is not None:
        _wall_time(p, c.gpu_time, c.wall_time, add)
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


def _source_kind(src: str) -> tuple[bool, bool, str]:
    """Whether an energy source measures a whole node, whether it says it measures energy
    above idle, and the one device it names ("" when none, or several)."""
    folded = src.casefold()
    one = _ONE_DEVICE.findall(folded)
    single = one[0] if len(one) == 1 and not _SEVERAL.search(folded) else ""
    return (
        any(w in folded for w in _NODE_WIDE),
        _ABOVE_IDLE.search(folded) is not None,
        single,
    )


def _window(win: Any, wall: Any, add: Add) -> None:
    """KE1203: energy measured over more time than the run took is not the run's."""
    window = win.value * FACTOR[win.unit]
    w = wall.value * FACTOR[wall.unit]
    if window > w * _SLACK:
        add(
            (
                "KE1203",
                "/cost/energy/window",
                f"energy window {win.value:g} {win.unit} is longer than wall_time {wall.value:g} {wall.unit}: "
                "energy averaged over time the run did not take is not the run's",
            )
        )


def _energy(p: Any, e: Any, add: Add) -> None:
    src = e.source
    kind = _SOURCE_CACHE.get(src)
    if kind is None:
        kind = _source_kind(src[:4096])
        if len(_SOURCE_CACHE) < 1024 and len(src) <= CACHED_CHARS:
            _SOURCE_CACHE[src] = kind
    window = e.window.value * FACTOR[e.window.unit]
    if window <= 0:
        return
    h = p.hardware
    if h is None:
        return
    node, above_idle, single = kind
    if single:
        t = p.timing
        cond = t.conditions if t is not None else None
        n = max(
            int(cond.device_count) if cond is not None and cond.device_count else 1,
            int(h.count) if h.count else 1,
        )
        if n > 1:
            add(
                (
                    "KE1203",
                    "/cost/energy/energy",
                    f"energy source {src[:80]!r} names one device ({single}) of a {n}-device run: the "
                    "energy of one device is not the run's",
                )
            )
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
    if not watts > limit * _SLACK:
        return  # within one device's limit (the common case): n >= 1 and limit >= 0 by the schema
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


#: by (device, arch, dtype labels) (short ones only): the least energy per FLOP of the
#: device at its peak and the lowest board power, over the models the name could be (None
#: where the table has no model, or one lacks a figure)
_JOULES_CACHE: dict[tuple[str, str | None, tuple[str, ...]], tuple[float, float] | None] = {}


def _joules_per_flop(device: str, arch: str | None, dtypes: tuple[str, ...]) -> tuple[float, float] | None:
    """The least J/FLOP of any model ``device`` could name, at its peak for ``dtypes`` (the
    highest peak among their classes; an unknown or absent label allows the device's
    highest), and the lowest board power among those models."""
    models = candidates(device, arch=arch)
    if not models:
        return None
    classes: list[str] = []
    for d in dtypes:
        c = dtype_class(d) if len(d) <= 64 else None
        if c is None:
            classes = []  # an unknown label: the device's highest peak
            break
        classes.append(c)
    if "fp32" in classes:
        classes.append("tf32")  # fp32 inputs on TF32 math
    best = board = float("inf")
    for e in models:
        if not e.tdp_watts or not e.flops:
            return None
        # the highest peak among the labels' classes; the device's highest where the table
        # has no figure for one of them (or there is no label)
        peaks = [e.flops[c] for c in classes if c in e.flops]
        missing = any(c not in e.flops for c in classes if c != "tf32")
        peak = max(peaks) if peaks and not missing else max(e.flops.values())
        best = min(best, e.tdp_watts / peak)
        board = min(board, e.tdp_watts)
    return best, board


#: by (device, arch) (short ones only): the most J/FLOP :func:`_joules_per_flop` can give
#: for any dtype labels (None where it gives None for all of them)
_CEILING_CACHE: dict[tuple[str, str | None], float | None] = {}


def _joules_ceiling(device: str, arch: str | None) -> float | None:
    """An upper bound of :func:`_joules_per_flop`'s J/FLOP over every ``dtypes``: the peak it
    divides by is one of each model's figures, so at least the lowest of them."""
    models = candidates(device, arch=arch)
    if not models:
        return None
    best = float("inf")
    for e in models:
        if not e.tdp_watts or not e.flops:
            return None
        lowest = min(e.flops.values())
        best = min(best, e.tdp_watts / lowest if lowest > 0 else float("inf"))
    return best


def _work_floor(p: Any, e: Any, add: Add) -> None:
    """KE1203: energy below the FLOPs its window holds at the device's efficiency at peak."""
    h = p.hardware
    if h is None or p.subject.kind == "serving":
        return
    t = p.timing
    task = p.task
    w = None
    sid = t.shape_id
    if sid and task.shapes:
        for sh in task.shapes:
            if sh.id == sid:
                w = sh.work
                break
    if w is None:
        w = task.work
    if w is None or w.flops is None:
        return
    flops = w.flops.value * FACTOR[w.flops.unit]
    if flops <= 0:
        return
    st = t.stats
    samples = st.samples
    if samples:
        calls = len(samples)
        low = 0.0  # unused: the samples give the timed total
    else:
        calls = t.repeats if t.repeats is not None else st.n
        low = st.min if st.min is not None else st.median
        if not calls or calls < 1 or low is None:
            return
    have = e.energy.value * FACTOR[e.energy.unit]
    if len(h.device) + len(h.arch or "") <= CACHED_CHARS:
        # the J/FLOP below is at most this ceiling, whatever the labels (and None for all of
        # them where it is): enough energy at the ceiling is enough (the common case)
        dev = (h.device, h.arch)
        top = _CEILING_CACHE.get(dev, _UNSET)
        if top is _UNSET:
            top = _joules_ceiling(h.device, h.arch)
            if len(_CEILING_CACHE) < 1024:
                _CEILING_CACHE[dev] = top
        if top is None or not have * _SLACK < calls * flops * top:
            return
    dtypes = tuple(task.dtypes) if task.dtypes else ()
    key = (h.device, h.arch, dtypes)
    hit = _JOULES_CACHE.get(key, _UNSET)
    if hit is _UNSET:
        size = len(h.device) + len(h.arch or "") + sum(map(len, dtypes))
        hit = _joules_per_flop(h.device, h.arch, dtypes) if size <= 512 else None
        if len(_JOULES_CACHE) < 1024 and size <= CACHED_CHARS:
            _JOULES_CACHE[key] = hit
    if hit is None:
        return
    per_flop, board = hit
    capped = ""
    if h.power_limit is not None and h.power_limit.value * FACTOR[h.power_limit.unit] < board * 0.9:
        # a power cap lowers the clock and the voltage: at most about twice as efficient
        per_flop /= 2
        capped = ", halved for the recorded power_limit"
    need = calls * flops * per_flop
    if not have * _SLACK < need:
        return  # enough energy (the common case): the window's test below only lets more through
    f = FACTOR[st.unit]
    timed = sum(samples) * f if samples else calls * low * f
    window = e.window.value * FACTOR[e.window.unit]
    if window <= 0 or window * _SLACK < timed:
        return  # a window shorter than the timed calls need not hold them
    how = f"{calls} samples" if samples else f"{calls} repeats"
    add(
        (
            "KE1203",
            "/cost/energy/energy",
            f"energy {e.energy.value:g} {e.energy.unit} is below the work its window holds: {how} x "
            f"{flops:.4g} FLOP x {per_flop * 1e12:.3g} pJ/FLOP (board power / peak FLOP/s{capped}) = "
            f"{need:.4g} J: no device does a FLOP for less energy than at its peak",
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


#: the least price of a device-hour of a data-centre accelerator (rental, list, spot or
#: reserved, in a currency worth about a US dollar or more): a sixth of the cheapest spot
#: rate of an A100-class device
_MONEY_FLOOR = 0.05
_DOLLAR_LIKE = frozenset({"USD", "EUR", "GBP", "CHF"})
#: a price_source that says the amount is not a price of device time
_NOT_RENTAL = re.compile(r"electric|power|energy|kwh|\bfree\b|no[\s-]charge|grant|allocation|credits?\b")
_PRICE_CACHE: dict[str, bool] = {}
#: the least memory of a device the floor holds for (A100 40 GB and up)
_DC_MEMORY = 40e9


def _money(p: Any, c: Any, add: Add) -> None:
    """KE1204: a price per device-hour no data-centre accelerator is rented for."""
    m = c.money
    # the rate first: a price at or above the floor (the common case) is never reported,
    # whatever the currency, the price source or the device
    if c.gpu_time is not None:
        hours = c.gpu_time.value * FACTOR[c.gpu_time.unit] / 3600
        n = 0
    elif c.wall_time is not None:
        n = _devices(p)
        hours = c.wall_time.value * FACTOR[c.wall_time.unit] * n / 3600
    else:
        return
    if hours <= 0 or not m.amount / hours < _MONEY_FLOOR:
        return
    if m.currency not in _DOLLAR_LIKE:
        return
    src = m.price_source
    if src is not None:
        exempt = _PRICE_CACHE.get(src)
        if exempt is None:
            exempt = _NOT_RENTAL.search(src[:4096].casefold()) is not None
            if len(_PRICE_CACHE) < 1024 and len(src) <= CACHED_CHARS:
                _PRICE_CACHE[src] = exempt
        if exempt:
            return
    h = p.hardware
    if h is None:
        return
    key = (h.device, h.arch)
    entry = _DEVICE_CACHE.get(key, _UNSET)
    if entry is _UNSET:
        entry = identify(h.device, arch=h.arch) if len(h.device) <= 256 else None
        if len(_DEVICE_CACHE) < 1024 and len(h.device) + len(h.arch or "") <= 256:
            _DEVICE_CACHE[key] = entry
    if entry is None:
        return
    if not (entry.id.startswith("google-tpu") or max(entry.memory_bytes or (0.0,)) >= _DC_MEMORY):
        return
    rate = m.amount / hours
    if c.gpu_time is not None:
        how = f"gpu_time {c.gpu_time.value:g} {c.gpu_time.unit}"
    else:
        how = f"wall_time {c.wall_time.value:g} {c.wall_time.unit} x {n} device(s)"
    add(
        (
            "KE1204",
            "/cost/money/amount",
            f"money {m.amount:g} {m.currency} over {how} is {rate:.3g} {m.currency} per "
            f"device-hour, below {_MONEY_FLOOR:g}: no {entry.id} is rented for that",
        )
    )
