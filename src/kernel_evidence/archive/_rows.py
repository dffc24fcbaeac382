"""From a decoded packet (plain JSON data) to the typed column values and the partition.

Reads defensively: with ``--allow-invalid`` any member may be missing or of the wrong type,
and a wrong type gives a null column value, never an exception. Units are normalised
(times to ns, work to FLOP and bytes, rates to per-second) with the factors of
:mod:`kernel_evidence.units`.
"""

from __future__ import annotations

import calendar
import math
import re
from typing import Any, Final

import msgspec

from ..units import UNIT_FACTORS, Dimension, convert

__all__ = [
    "VENDORS",
    "PacketView",
    "decode_view",
    "extract",
    "extract_view",
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
_TO_S: Final = _factors(Dimension.TIME, "s")
_TO_FLOP: Final = _factors(Dimension.FLOP, "FLOP")
_TO_B: Final = _factors(Dimension.BYTES, "B")
_TO_FLOPS: Final = _factors(Dimension.FLOP_RATE, "FLOP/s")
_TO_BPS: Final = _factors(Dimension.BANDWIDTH, "B/s")
_TO_J: Final = _factors(Dimension.ENERGY, "J")

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


def _qty(q: Any, table: dict[str, float]) -> float | None:
    """A ``{value, unit}`` quantity in the table's base unit, or ``None``."""
    if not isinstance(q, dict):
        return None
    v = _num(q.get("value"))
    f = _factor(table, q.get("unit"))
    return None if v is None or f is None else v * f


def _factor(table: dict[str, float], unit: Any) -> float | None:
    return table.get(unit) if isinstance(unit, str) else None


def _stat(stats: dict[str, Any], key: str, factor: float | None) -> float | None:
    v = _num(stats.get(key))
    return None if v is None or factor is None else v * factor


def created_micros(s: Any) -> int | None:
    """Microseconds since the epoch of an RFC 3339 UTC timestamp, or ``None``."""
    if not isinstance(s, str):
        return None
    m = _TS_RE.match(s)
    if m is None:
        return None
    y, mo, d, h, mi, se, frac = m.groups()
    try:
        secs = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(se), 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    if not (1 <= int(mo) <= 12 and 1 <= int(d) <= 31 and int(h) < 24 and int(mi) < 60):
        return None
    micros = int((frac or "0").ljust(6, "0")[:6])
    return secs * 1_000_000 + micros


def partition_of(data: dict[str, Any]) -> tuple[str, str]:
    """``(vendor, month)`` directory values. Never free text: safe as a path component."""
    return partition_from(_d(data.get("hardware")).get("vendor"), data.get("created_at"))


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
    sol_fraction, sol_bound]``.
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
            sp_low, sp_high = b_low / ci_high, b_high / ci_low
    w_flop, w_bytes = work
    p_flops, p_bw = peak
    if peaks is not None and (p_flops is None or p_bw is None):
        known = peaks(hw[0], hw[1], tuple(dtypes or ()))
        if known is not None:
            count = hw[2] or 1
            p_flops = p_flops if p_flops is not None else known[0] * count
            p_bw = p_bw if p_bw is not None else known[1] * count
    sol = bound = None
    if median_ns:
        t_flop = w_flop / p_flops if w_flop is not None and p_flops else None
        t_bytes = w_bytes / p_bw if w_bytes is not None and p_bw else None
        if t_flop is not None or t_bytes is not None:
            if (t_flop or 0.0) >= (t_bytes or 0.0):
                bound, t_sol = "compute", t_flop or 0.0
            else:
                bound, t_sol = "memory", t_bytes or 0.0
            sol = t_sol / (median_ns * 1e-9)
    return [sp_low, sp_high, p_flops, p_bw, sol, bound]


def extract(data: dict[str, Any], peaks: Any = None) -> list[Any]:
    """The typed column values of one packet, in :data:`~.schema.COLUMNS` order, without
    the last five (``valid``, ``grade``, ``grade_reasons``, ``findings``, ``packet``).

    The reference path, for any JSON data; :func:`extract_view` is the fast path for
    packets that decode into :class:`PacketView`, and gives the same values.
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
    if workload is None:
        workload = _s(_d(task.get("serving")).get("model"))
    w = derived
    return [
        _s(data.get("packet_id")),
        created_micros(data.get("created_at")),
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
        _int(lineage.get("iteration")),
        _s(task.get("operator")),
        workload,
        dtypes,
        shape_ids,
        shape,
        device,
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
        _qty(serving.get("output_throughput"), {"tok/s": 1.0}),
        _qty(serving.get("request_throughput"), {"req/s": 1.0}),
        _qty(cost.get("gpu_time"), _TO_S),
        _qty(energy.get("energy"), _TO_J),
    ]


# -- fast path: a typed view of only the members the columns need -------------------------
#
# msgspec decodes straight into these structs in C, skipping every other member. A member
# of the wrong JSON type makes the decode fail, and the caller falls back to ``extract``.

_Opt = msgspec.Struct


class _Q(_Opt, frozen=True):
    value: float | None = None
    unit: str | None = None


class _Named(_Opt, frozen=True):
    name: str | None = None
    version: str | None = None


class _Subject(_Opt, frozen=True):
    kind: str | None = None
    name: str | None = None


class _Failure(_Opt, frozen=True):
    failure_class: str | None = None


class _Lineage(_Opt, frozen=True):
    run_id: str | None = None
    candidate_id: str | None = None
    parent_packet_id: str | None = None
    iteration: int | None = None


class _Work(_Opt, frozen=True):
    flops: _Q | None = None
    bytes: _Q | None = None


class _Shape(_Opt, frozen=True):
    id: str | None = None
    work: _Work | None = None


class _ServingTask(_Opt, frozen=True):
    model: str | None = None


class _Task(_Opt, frozen=True):
    operator: str | None = None
    workload: str | None = None
    dtypes: list[str] | None = None
    shapes: list[_Shape] | None = None
    work: _Work | None = None
    serving: _ServingTask | None = None


class _Hardware(_Opt, frozen=True):
    vendor: str | None = None
    device: str | None = None
    arch: str | None = None
    count: int | None = None
    peak_flop_rate: _Q | None = None
    peak_bandwidth: _Q | None = None


class _Stats(_Opt, frozen=True):
    unit: str | None = None
    median: float | None = None
    mean: float | None = None
    min: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    samples: list[Any] | None = None


class _Baseline(_Opt, frozen=True):
    provider: str | None = None
    version: str | None = None
    call: str | None = None
    engine: _Named | None = None
    stats: _Stats | None = None


class _Speedup(_Opt, frozen=True):
    value: float | None = None
    basis: str | None = None


class _ServingMetrics(_Opt, frozen=True):
    output_throughput: _Q | None = None
    request_throughput: _Q | None = None


class _Timing(_Opt, frozen=True):
    method: str | None = None
    shape_id: str | None = None
    stats: _Stats | None = None
    baseline: _Baseline | None = None
    speedup: _Speedup | None = None
    serving: _ServingMetrics | None = None


class _Verdict(_Opt, frozen=True):
    verdict: str | None = None


class _EnergyMeasurement(_Opt, frozen=True):
    energy: _Q | None = None


class _Cost(_Opt, frozen=True):
    gpu_time: _Q | None = None
    energy: _EnergyMeasurement | None = None


class PacketView(_Opt, frozen=True):
    """The members of a packet that the typed columns are made of."""

    packet_id: str | None = None
    created_at: str | None = None
    schema_version: str | None = None
    status: str | None = None
    producer: _Named | None = None
    subject: _Subject | None = None
    failure: _Failure | None = None
    lineage: _Lineage | None = None
    task: _Task | None = None
    hardware: _Hardware | None = None
    timing: _Timing | None = None
    validation: _Verdict | None = None
    cost: _Cost | None = None


_view_decoder = msgspec.json.Decoder(PacketView)
_NO_Q = _Q()
_NO_STATS = _Stats()
_NO_TASK = _Task()
_NO_HW = _Hardware()
_NO_TIMING = _Timing()
_NO_BASE = _Baseline()
_NO_WORK = _Work()


def decode_view(raw: bytes) -> PacketView | None:
    """The packet's view, or ``None`` when it is not JSON of the expected shape."""
    try:
        return _view_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _vq(q: _Q | None, table: dict[str, float]) -> float | None:
    if q is None or q.value is None or not math.isfinite(q.value):
        return None
    f = _factor(table, q.unit)
    return None if f is None else q.value * f


def _vs(v: float | None, f: float | None) -> float | None:
    return None if v is None or f is None else v * f


def partition_from(vendor: object, created_at: object) -> tuple[str, str]:
    """``(vendor, month)`` directory values from the raw members (see :func:`partition_of`)."""
    if vendor is None:
        v = "unknown"
    else:
        v = vendor if isinstance(vendor, str) and vendor in VENDORS else "invalid"
    month = created_at[:7] if isinstance(created_at, str) and _TS_RE.match(created_at) else "unknown"
    return v, month


def extract_view(p: PacketView, peaks: Any = None) -> list[Any]:
    """:func:`extract` for a decoded :class:`PacketView` (same values, faster)."""
    task = p.task or _NO_TASK
    hw = p.hardware or _NO_HW
    timing = p.timing or _NO_TIMING
    stats = timing.stats or _NO_STATS
    baseline = timing.baseline or _NO_BASE
    bstats = baseline.stats or _NO_STATS
    speedup_s = timing.speedup
    serving = timing.serving
    cost = p.cost

    shape_ids = [c.id for c in task.shapes if c.id is not None] if task.shapes is not None else None
    shape = timing.shape_id
    if shape is None and shape_ids is not None and len(shape_ids) == 1:
        shape = shape_ids[0]
    f = _factor(_TO_NS, stats.unit)
    median_ns = _vs(_finite(stats.median), f)
    ci_low = _vs(_finite(stats.ci_low), f)
    ci_high = _vs(_finite(stats.ci_high), f)
    n = _int(stats.n)
    if n is None and stats.samples is not None:
        n = len(stats.samples)
    bf = _factor(_TO_NS, bstats.unit)
    b_median = _vs(_finite(bstats.median), bf)
    speedup = _finite(speedup_s.value) if speedup_s is not None else None
    basis = speedup_s.basis if speedup_s is not None else None
    work = _NO_WORK
    if task.shapes is not None:
        for case in task.shapes:
            if case.id == shape:
                work = case.work or _NO_WORK
                break
    if work is _NO_WORK or (work.flops is None and work.bytes is None):
        work = task.work or _NO_WORK
    w_flop, w_bytes = _vq(work.flops, _TO_FLOP), _vq(work.bytes, _TO_B)
    count = _int(hw.count)
    derived = _derived(
        (median_ns, ci_low, ci_high),
        (b_median, _vs(_finite(bstats.ci_low), bf), _vs(_finite(bstats.ci_high), bf)),
        speedup,
        basis,
        (w_flop, w_bytes),
        (_vq(hw.peak_flop_rate, _TO_FLOPS), _vq(hw.peak_bandwidth, _TO_BPS)),
        (hw.device, hw.arch, count),
        task.dtypes,
        peaks,
    )
    workload = task.workload
    if workload is None and task.serving is not None:
        workload = task.serving.model
    provider, provider_version = baseline.provider, baseline.version
    if provider is None and baseline.engine is not None:
        provider, provider_version = baseline.engine.name, baseline.engine.version
    producer, subject, lineage = p.producer, p.subject, p.lineage
    return [
        p.packet_id,
        created_micros(p.created_at),
        p.schema_version,
        producer.name if producer else None,
        producer.version if producer else None,
        subject.kind if subject else None,
        subject.name if subject else None,
        p.status or "",
        p.failure.failure_class if p.failure else None,
        lineage.run_id if lineage else None,
        lineage.candidate_id if lineage else None,
        lineage.parent_packet_id if lineage else None,
        _int(lineage.iteration) if lineage else None,
        task.operator,
        workload,
        task.dtypes,
        shape_ids,
        shape,
        hw.device,
        hw.arch,
        count,
        timing.method,
        median_ns,
        _vs(_finite(stats.mean), f),
        _vs(_finite(stats.min), f),
        ci_low,
        ci_high,
        n,
        provider,
        provider_version,
        baseline.call,
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
        p.validation.verdict if p.validation else None,
        _vq(serving.output_throughput, {"tok/s": 1.0}) if serving else None,
        _vq(serving.request_throughput, {"req/s": 1.0}) if serving else None,
        _vq(cost.gpu_time, _TO_S) if cost else None,
        _vq(cost.energy.energy, _TO_J) if cost and cost.energy else None,
    ]


def _finite(v: float | None) -> float | None:
    return v if v is None or math.isfinite(v) else None
