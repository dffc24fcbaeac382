"""From a decoded packet to the typed column values and the partition.

Two paths with the same values (a test checks it): :func:`extract_struct` reads the core
packet struct (:class:`kernel_evidence._codec.structs.PacketStruct`, generated from the models, so
its attributes are the models' field names and its types are already checked), and
:func:`extract`, the reference path, reads plain JSON data defensively: with
``--allow-invalid`` any member may be missing or of the wrong type, and a wrong type gives
a null column value, never an exception. Units are normalised
(times to ns, work to FLOP and bytes, rates to per-second) with the factors of
:mod:`kernel_evidence.units`.
"""

from __future__ import annotations

import calendar
import math
import re
from functools import lru_cache
from typing import Any, Final

from .._codec.structs import struct_for
from ..devices import canonical_id
from ..models import Stats, Task, Timing
from ..units import UNIT_FACTORS, Dimension, convert

__all__ = [
    "VENDORS",
    "created_micros",
    "device_id_of",
    "extract",
    "extract_struct",
    "partition_from",
    "partition_of",
]

#: ``hardware.vendor`` values that become partition directories; anything else is ``invalid``.
VENDORS: Final = frozenset({"nvidia", "amd", "google", "intel", "apple", "aws", "huawei", "cpu", "other"})

_TS_RE: Final = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$")


def _factors(dim: Dimension, target: str) -> dict[str, float]:
    """Exact factors (``ms`` -> ``ns`` is 1e6, not 999999.9999) from every unit of ``dim``."""
    return {u: convert(1.0, u, target) for u, (d, _) in UNIT_FACTORS.items() if d is dim}


_TO_NS: Final = _factors(Dimension.TIME, "ns")
_TO_US: Final = _factors(Dimension.TIME, "us")
_TO_MS: Final = _factors(Dimension.TIME, "ms")
_TO_S: Final = _factors(Dimension.TIME, "s")
_TO_FLOP: Final = _factors(Dimension.FLOP, "FLOP")
_TO_B: Final = _factors(Dimension.BYTES, "B")
_TO_FLOPS: Final = _factors(Dimension.FLOP_RATE, "FLOP/s")
_TO_BPS: Final = _factors(Dimension.BANDWIDTH, "B/s")
_TO_J: Final = _factors(Dimension.ENERGY, "J")
_TO_TOKS: Final = {"tok/s": 1.0}
_TO_REQS: Final = {"req/s": 1.0}

_EMPTY: Final[dict[str, Any]] = {}


def _d(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else _EMPTY


def _s(x: Any) -> str | None:
    return x if isinstance(x, str) else None


def _num(x: Any) -> float | None:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        v = float(x)
        return v if math.isfinite(v) else None
    return None


def _int(x: Any) -> int | None:
    if isinstance(x, int) and not isinstance(x, bool) and -(2**63) <= x < 2**63:
        return x
    return None


def _strs(x: Any) -> list[str] | None:
    if not isinstance(x, list):
        return None
    return [v for v in x if isinstance(v, str)]


def _finite(x: float) -> float | None:
    """``x``, or ``None`` when it is not finite (a product or quotient that overflowed)."""
    return x if math.isfinite(x) else None


def _ratio(a: float, b: float) -> float | None:
    """``a / b`` when it is a finite number; ``None`` for a zero divisor (also one that
    underflowed to zero) or a quotient that overflows."""
    return _finite(a / b) if b else None


def _qty(q: Any, table: dict[str, float]) -> float | None:
    """A ``{value, unit}`` quantity in the table's base unit, or ``None`` (also when the
    conversion overflows)."""
    if not isinstance(q, dict):
        return None
    v = _num(q.get("value"))
    f = _factor(table, q.get("unit"))
    return None if v is None or f is None else _finite(v * f)


def _factor(table: dict[str, float], unit: Any) -> float | None:
    return table.get(unit) if isinstance(unit, str) else None


def _stat(stats: dict[str, Any], key: str, factor: float | None) -> float | None:
    v = _num(stats.get(key))
    return None if v is None or factor is None else _finite(v * factor)


#: timestamps already converted (a batch repeats its seconds); cleared when full
_MICROS: dict[str, int | None] = {}


def created_micros(s: Any) -> int | None:
    """Microseconds since the epoch of an RFC 3339 UTC timestamp, or ``None``."""
    if not isinstance(s, str):
        return None
    try:
        return _MICROS[s]
    except KeyError:
        pass
    out = _created_micros(s)
    if len(s) <= 40:  # a timestamp; anything longer is not one, and is not held
        if len(_MICROS) >= 8192:
            _MICROS.clear()
        _MICROS[s] = out
    return out


def _created_micros(s: str) -> int | None:
    m = _TS_RE.match(s)
    if m is None:
        return None
    y, mo, d, h, mi, se, frac = m.groups()
    day = _day_seconds(y, mo, d)
    if day is None or not (int(h) < 24 and int(mi) < 60 and int(se) <= 60):
        return None
    # a leap second (:60) stays in its minute, as :59, so the time stays in its month
    micros = int(frac.ljust(6, "0")[:6]) if frac else 0
    # what calendar.timegm gives for the whole time: linear in hours, minutes and seconds
    return (day + int(h) * 3600 + int(mi) * 60 + min(int(se), 59)) * 1_000_000 + micros


@lru_cache(maxsize=4096)
def _day_seconds(y: str, mo: str, d: str) -> int | None:
    """Seconds since the epoch at the start of a day (a few distinct days per archive), or
    ``None`` for a day the month does not have (``2026-02-30``: ``timegm`` would quietly
    make it the 2nd of March, a time the packet never states)."""
    year, month, day = int(y), int(mo), int(d)
    if not 1 <= month <= 12:
        return None
    days = (31, 29 if calendar.isleap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[month - 1]
    if not 1 <= day <= days:
        return None
    try:
        return calendar.timegm((year, month, day, 0, 0, 0, 0, 0, 0))
    except (ValueError, OverflowError):
        return None


def partition_of(data: dict[str, Any]) -> tuple[str, str]:
    """``(vendor, month)`` directory values. Never free text: safe as a path component.

    The month is the measurement's (``measured_at``) where the packet gives a well-formed
    one, else the packet's creation month: an ingested result from August lands in August.
    """
    return partition_from(
        _d(data.get("hardware")).get("vendor"), data.get("created_at"), data.get("measured_at")
    )


@lru_cache(maxsize=4096)
def _device_id(device: str, arch: str | None) -> str | None:
    return canonical_id(device, arch=arch)


def device_id_of(given: object, device: object, arch: object) -> str | None:
    """The canonical device id: ``hardware.device_id`` when the packet gives one, else the
    device table's id for the device string and arch (``None`` when unknown or ambiguous).
    Long strings, which no device has, are not looked up (nor held in the cache)."""
    if isinstance(given, str):
        return given
    if not isinstance(device, str) or len(device) > 256:
        return None
    a = arch if isinstance(arch, str) and len(arch) <= 64 else None
    return _device_id(device, a)


def _dtype(dtypes: list[str] | None) -> str | None:
    """One value to group by: the task's dtypes joined with ``,`` in their order."""
    return ",".join(dtypes) if dtypes else None


def _shape_work(task: dict[str, Any], shape: str | None) -> dict[str, Any]:
    shapes = task.get("shapes")
    if not isinstance(shapes, list):
        return _EMPTY
    for case in shapes:
        case = _d(case)
        if case.get("id") == shape:
            return _d(case.get("work"))
    return _EMPTY


def _derived(
    stats: tuple[float | None, float | None, float | None],
    base: tuple[float | None, float | None, float | None],
    speedup: float | None,
    basis: str | None,
    work: tuple[float | None, float | None],
    peak: tuple[float | None, float | None],
    hw: tuple[str | None, str | None, int | None],
    dtypes: list[str] | None,
    peaks: Any,
) -> list[Any]:
    """Speedup bounds, peaks and the speed-of-light fraction, from normalised values.

    ``stats`` and ``base`` are (median, ci_low, ci_high) in ns of the candidate and the
    baseline; returns ``[speedup_low, speedup_high, peak_flop_per_s, peak_bytes_per_s,
    sol_fraction, sol_bound]``. Every value is finite or ``None``: a quotient by zero (or
    by a subnormal time that underflows to zero) or one that overflows gives ``None``,
    never an exception or an infinity (with ``--allow-invalid`` any number may come in).
    """
    median_ns, ci_low, ci_high = stats
    b_median, b_low, b_high = base
    sp_low = sp_high = None
    if speedup is not None and basis in (None, "median") and ci_low and ci_high:
        # baseline time / candidate time at the ends of both confidence intervals; a
        # baseline without an interval counts as exact
        if b_low is None or b_high is None:
            b_low = b_high = b_median
        if b_low is not None and b_high is not None:
            sp_low, sp_high = _ratio(b_low, ci_high), _ratio(b_high, ci_low)
            if sp_low is None or sp_high is None:  # a bound is both ends or none
                sp_low = sp_high = None
    w_flop, w_bytes = work
    p_flops, p_bw = peak
    if peaks is not None and (p_flops is None or p_bw is None):
        known = peaks(hw[0], hw[1], tuple(dtypes or ()))
        if known is not None:
            count = hw[2] or 1
            p_flops = p_flops if p_flops is not None else _finite(known[0] * count)
            p_bw = p_bw if p_bw is not None else _finite(known[1] * count)
    sol = bound = None
    if median_ns:
        # a time that overflows (huge work over a tiny peak) is compared as it is, so the
        # roof is still the right one; its fraction is not finite, and both are None below
        t_flop = w_flop / p_flops if w_flop is not None and p_flops else None
        t_bytes = w_bytes / p_bw if w_bytes is not None and p_bw else None
        if t_flop is not None or t_bytes is not None:
            if (t_flop or 0.0) >= (t_bytes or 0.0):
                bound, t_sol = "compute", t_flop or 0.0
            else:
                bound, t_sol = "memory", t_bytes or 0.0
            sol = _ratio(t_sol, median_ns * 1e-9)
            if sol is None:  # no finite fraction: no roof named either
                bound = None
    return [sp_low, sp_high, p_flops, p_bw, sol, bound]


def _latency(stats: Any) -> tuple[float | None, float | None]:
    """(median, p99) in ms of a serving latency :class:`~kernel_evidence.models.Stats` as
    JSON data; the median falls back on the ``p50`` percentile."""
    stats = _d(stats)
    f = _factor(_TO_MS, stats.get("unit"))
    pct = _d(stats.get("percentiles"))
    median = _num(stats.get("median"))
    if median is None:
        median = _num(pct.get("p50"))
    p99 = _num(pct.get("p99"))
    if f is None:
        return None, None
    return (
        None if median is None else _finite(median * f),
        None if p99 is None else _finite(p99 * f),
    )


def _rate(x: Any) -> float | None:
    """``task.serving.request_rate`` in requests/s; ``None`` for ``"inf"`` (all at once: the
    number columns hold finite numbers only)."""
    return _num(x)


def _serving_cols(task_serving: dict[str, Any], serving: dict[str, Any]) -> list[Any]:
    engine = _d(task_serving.get("engine"))
    out: list[Any] = [_s(engine.get("name")), _s(engine.get("version")), _s(task_serving.get("model"))]
    for key in ("ttft", "tpot", "itl", "e2el"):
        out.extend(_latency(serving.get(key)))
    out += [
        _qty(serving.get("total_token_throughput"), _TO_TOKS),
        _int(serving.get("completed")),
        _int(serving.get("failed")),
        _int(task_serving.get("max_concurrency")),
        _rate(task_serving.get("request_rate")),
    ]
    return out


def extract(data: dict[str, Any], peaks: Any = None) -> list[Any]:
    """The typed column values of one packet, in :data:`~.schema.COLUMNS` order, without
    the last five (``valid``, ``grade``, ``grade_reasons``, ``findings``, ``packet``).

    The reference path, for any JSON data; :func:`extract_struct` is the fast path for
    packets decoded into the core packet struct, and gives the same values.
    """
    producer = _d(data.get("producer"))
    subject = _d(data.get("subject"))
    failure = _d(data.get("failure"))
    lineage = _d(data.get("lineage"))
    task = _d(data.get("task"))
    hw = _d(data.get("hardware"))
    timing = _d(data.get("timing"))
    stats = _d(timing.get("stats"))
    baseline = _d(timing.get("baseline"))
    bstats = _d(baseline.get("stats"))
    speedup_d = _d(timing.get("speedup"))
    serving = _d(timing.get("serving"))
    cost = _d(data.get("cost"))

    shapes = task.get("shapes")
    shape_ids = (
        [c["id"] for c in shapes if isinstance(c, dict) and isinstance(c.get("id"), str)]
        if isinstance(shapes, list)
        else None
    )
    shape = _s(timing.get("shape_id"))
    if shape is None and shape_ids is not None and len(shape_ids) == 1:
        shape = shape_ids[0]

    f = _factor(_TO_NS, stats.get("unit"))
    median_ns = _stat(stats, "median", f)
    ci_low = _stat(stats, "ci_low", f)
    ci_high = _stat(stats, "ci_high", f)
    n = _int(stats.get("n"))
    if n is None and isinstance(stats.get("samples"), list):
        n = len(stats["samples"])
    bf = _factor(_TO_NS, bstats.get("unit"))
    b_median = _stat(bstats, "median", bf)
    speedup = _num(speedup_d.get("value"))
    basis = _s(speedup_d.get("basis"))
    work = _shape_work(task, shape)
    if work.get("flops") is None and work.get("bytes") is None:
        work = _d(task.get("work"))
    dtypes = _strs(task.get("dtypes"))
    device, arch, count = _s(hw.get("device")), _s(hw.get("arch")), _int(hw.get("count"))
    derived = _derived(
        (median_ns, ci_low, ci_high),
        (b_median, _stat(bstats, "ci_low", bf), _stat(bstats, "ci_high", bf)),
        speedup,
        basis,
        (_qty(work.get("flops"), _TO_FLOP), _qty(work.get("bytes"), _TO_B)),
        (_qty(hw.get("peak_flop_rate"), _TO_FLOPS), _qty(hw.get("peak_bandwidth"), _TO_BPS)),
        (device, arch, count),
        dtypes,
        peaks,
    )
    energy = _d(cost.get("energy"))
    provider, provider_version = _s(baseline.get("provider")), _s(baseline.get("version"))
    if provider is None:  # a serving baseline names its engine instead
        engine = _d(baseline.get("engine"))
        provider, provider_version = _s(engine.get("name")), _s(engine.get("version"))
    workload = _s(task.get("workload"))
    task_serving = _d(task.get("serving"))
    if workload is None:
        workload = _s(task_serving.get("model"))
    w = derived
    kernel = subject.get("kind") == "kernel"
    return [
        _s(data.get("packet_id")),
        created_micros(data.get("created_at")),
        created_micros(data.get("measured_at")),
        _s(data.get("schema_version")),
        _s(producer.get("name")),
        _s(producer.get("version")),
        _s(subject.get("kind")),
        _s(subject.get("name")),
        _s(data.get("status")) or "",
        _s(failure.get("failure_class")),
        _s(lineage.get("run_id")),
        _s(lineage.get("candidate_id")),
        _s(lineage.get("parent_packet_id")),
        _s(lineage.get("relation")),
        _int(lineage.get("iteration")),
        _s(task.get("operator")),
        workload,
        dtypes,
        _dtype(dtypes),
        shape_ids,
        shape,
        device,
        device_id_of(hw.get("device_id"), device, arch),
        arch,
        count,
        _s(timing.get("method")),
        median_ns,
        _stat(stats, "mean", f),
        _stat(stats, "min", f),
        ci_low,
        ci_high,
        n,
        provider,
        provider_version,
        _s(baseline.get("call")),
        b_median,
        speedup,
        basis,
        w[0],
        w[1],
        _qty(work.get("flops"), _TO_FLOP),
        _qty(work.get("bytes"), _TO_B),
        w[2],
        w[3],
        w[4],
        w[5],
        _s(_d(data.get("validation")).get("verdict")),
        _qty(serving.get("output_throughput"), _TO_TOKS),
        _qty(serving.get("request_throughput"), _TO_REQS),
        _qty(cost.get("gpu_time"), _TO_S),
        _qty(energy.get("energy"), _TO_J),
        _stat(stats, "median", _factor(_TO_US, stats.get("unit"))) if kernel else None,
        *_serving_cols(task_serving, serving),
    ]


# -- fast path: the core packet struct -------------------------------------------------
#
# A packet that decodes into :class:`kernel_evidence._codec.structs.PacketStruct` (generated from the
# models) is already checked for structure: every member has its model type, numbers are
# finite (msgspec refuses out-of-range numbers) and integers fit 64 bits. Its columns are
# read straight from its attributes, which are the models' field names.

_NO_TASK: Final[Any] = struct_for(Task)()
_NO_TIMING: Final[Any] = struct_for(Timing)(method="other")
_NO_STATS: Final[Any] = struct_for(Stats)(unit="ns")


def _sq(q: Any, table: dict[str, float]) -> float | None:
    """A quantity struct in the table's base unit (its unit is always in the table), or
    ``None`` when the conversion overflows."""
    return None if q is None else _finite(q.value * table[q.unit])


def _sv(v: float | None, f: float | None) -> float | None:
    return None if v is None or f is None else _finite(v * f)


def partition_from(vendor: object, created_at: object, measured_at: object = None) -> tuple[str, str]:
    """``(vendor, month)`` directory values from the raw members (see :func:`partition_of`)."""
    if isinstance(measured_at, str) and created_micros(measured_at) is not None:
        created_at = measured_at
    if vendor is None:
        v = "unknown"
    else:
        v = vendor if isinstance(vendor, str) and vendor in VENDORS else "invalid"
    # the month of a time that the created_at column holds too: a string that only looks
    # like one (``2026-02-30``, ``25:00``) is in neither
    month = (
        created_at[:7]
        if isinstance(created_at, str) and created_micros(created_at) is not None
        else "unknown"
    )
    return v, month


_NO_SERVING: Final = (None,) * 16


def _sl(stats: Any) -> tuple[float | None, float | None]:
    """:func:`_latency` for a stats struct."""
    if stats is None:
        return None, None
    f = _TO_MS[stats.unit]
    pct = stats.percentiles
    median = stats.median
    if median is None and pct is not None:
        median = pct.get("p50")
    p99 = pct.get("p99") if pct is not None else None
    return _sv(median, f), _sv(p99, f)


def _serving_struct(ts: Any, serving: Any) -> tuple[Any, ...] | list[Any]:
    if ts is None and serving is None:
        return _NO_SERVING
    out: list[Any] = (
        [None, None, None]
        if ts is None
        else [
            ts.engine.name if ts.engine is not None else None,
            ts.engine.version if ts.engine is not None else None,
            ts.model,
        ]
    )
    if serving is None:
        out += [None] * 8 + [None, None, None]
    else:
        out += [*_sl(serving.ttft), *_sl(serving.tpot), *_sl(serving.itl), *_sl(serving.e2el)]
        out += [_sq(serving.total_token_throughput, _TO_TOKS), serving.completed, serving.failed]
    if ts is None:
        out += [None, None]
    else:
        rate = ts.request_rate
        out += [ts.max_concurrency, None if rate is None or rate == "inf" else float(rate)]
    return out


def extract_struct(p: Any, peaks: Any = None) -> list[Any]:
    """:func:`extract` for a decoded :class:`~kernel_evidence._codec.structs.PacketStruct` (same
    values, faster)."""
    task = p.task or _NO_TASK
    hw = p.hardware
    timing = p.timing or _NO_TIMING
    stats = timing.stats or _NO_STATS
    baseline = timing.baseline
    bstats = (baseline.stats if baseline is not None else None) or _NO_STATS
    speedup_s = timing.speedup
    serving = timing.serving
    cost = p.cost

    shapes = task.shapes
    shape_ids = [c.id for c in shapes] if shapes is not None else None
    shape = timing.shape_id
    if shape is None and shape_ids is not None and len(shape_ids) == 1:
        shape = shape_ids[0]
    f = _TO_NS[stats.unit] if timing.stats is not None else None
    median_ns = _sv(stats.median, f)
    ci_low = _sv(stats.ci_low, f)
    ci_high = _sv(stats.ci_high, f)
    n = stats.n
    if n is None and stats.samples is not None:
        n = len(stats.samples)
    bf = _TO_NS[bstats.unit] if bstats is not _NO_STATS else None
    b_median = _sv(bstats.median, bf)
    speedup = speedup_s.value if speedup_s is not None else None
    basis = speedup_s.basis if speedup_s is not None else None
    work = None
    if shapes is not None:
        for case in shapes:
            if case.id == shape:
                work = case.work
                break
    if work is None or (work.flops is None and work.bytes is None):
        work = task.work
    w_flop = _sq(work.flops, _TO_FLOP) if work is not None else None
    w_bytes = _sq(work.bytes, _TO_B) if work is not None else None
    if hw is not None:
        device, arch, count = hw.device, hw.arch, hw.count
        peak = (_sq(hw.peak_flop_rate, _TO_FLOPS), _sq(hw.peak_bandwidth, _TO_BPS))
    else:
        device = arch = count = None
        peak = (None, None)
    derived = _derived(
        (median_ns, ci_low, ci_high),
        (b_median, _sv(bstats.ci_low, bf), _sv(bstats.ci_high, bf)),
        speedup,
        basis,
        (w_flop, w_bytes),
        peak,
        (device, arch, count),
        task.dtypes,
        peaks,
    )
    workload = task.workload
    if workload is None and task.serving is not None:
        workload = task.serving.model
    provider = provider_version = call = None
    if baseline is not None:
        provider, provider_version, call = baseline.provider, baseline.version, baseline.call
        if provider is None and baseline.engine is not None:  # a serving baseline names its engine
            provider, provider_version = baseline.engine.name, baseline.engine.version
    producer, subject, lineage = p.producer, p.subject, p.lineage
    energy = cost.energy if cost is not None else None
    return [
        p.packet_id,
        created_micros(p.created_at),
        created_micros(p.measured_at) if p.measured_at is not None else None,
        p.schema_version,
        producer.name,
        producer.version,
        subject.kind,
        subject.name,
        p.status.value,
        p.failure.failure_class.value if p.failure is not None else None,
        lineage.run_id if lineage is not None else None,
        lineage.candidate_id if lineage is not None else None,
        lineage.parent_packet_id if lineage is not None else None,
        lineage.relation if lineage is not None else None,
        lineage.iteration if lineage is not None else None,
        task.operator,
        workload,
        task.dtypes,
        _dtype(task.dtypes),
        shape_ids,
        shape,
        device,
        None if hw is None else device_id_of(hw.device_id, device, arch),
        arch,
        count,
        timing.method if p.timing is not None else None,
        median_ns,
        _sv(stats.mean, f),
        _sv(stats.min, f),
        ci_low,
        ci_high,
        n,
        provider,
        provider_version,
        call,
        b_median,
        speedup,
        basis,
        derived[0],
        derived[1],
        w_flop,
        w_bytes,
        derived[2],
        derived[3],
        derived[4],
        derived[5],
        p.validation.verdict if p.validation is not None else None,
        _sq(serving.output_throughput, _TO_TOKS) if serving is not None else None,
        _sq(serving.request_throughput, _TO_REQS) if serving is not None else None,
        _sq(cost.gpu_time, _TO_S) if cost is not None else None,
        _sq(energy.energy, _TO_J) if energy is not None else None,
        _sv(stats.median, _TO_US[stats.unit]) if subject.kind == "kernel" and p.timing is not None else None,
        *_serving_struct(task.serving, serving),
    ]
