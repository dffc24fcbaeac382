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

from ..units import UNIT_FACTORS, Dimension, convert

__all__ = ["VENDORS", "extract", "partition_of"]

#: ``hardware.vendor`` values that become partition directories; anything else is ``invalid``.
VENDORS: Final = frozenset(
    {"nvidia", "amd", "google", "intel", "apple", "aws", "huawei", "cpu", "other"}
)

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
    f = table.get(q.get("unit"))  # type: ignore[arg-type]
    return None if v is None or f is None else v * f


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
    v = _d(data.get("hardware")).get("vendor", None)
    vendor = "unknown" if v is None else (v if isinstance(v, str) and v in VENDORS else "invalid")
    c = data.get("created_at")
    month = c[:7] if isinstance(c, str) and _TS_RE.match(c) else "unknown"
    return vendor, month


def _shape_work(task: dict[str, Any], shape: str | None) -> dict[str, Any]:
    shapes = task.get("shapes")
    if not isinstance(shapes, list):
        return _EMPTY
    for case in shapes:
        case = _d(case)
        if case.get("id") == shape:
            return _d(case.get("work"))
    return _EMPTY


def extract(data: dict[str, Any], peaks: Any = None) -> list[Any]:
    """The typed column values of one packet, in :data:`~.schema.COLUMNS` order, without
    the last four (``valid``, ``grade``, ``grade_reasons``, ``findings``) and ``packet``."""
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

    f = _TO_NS.get(stats.get("unit"))  # type: ignore[arg-type]
    median_ns = _stat(stats, "median", f)
    ci_low = _stat(stats, "ci_low", f)
    ci_high = _stat(stats, "ci_high", f)
    n = _int(stats.get("n"))
    if n is None and isinstance(stats.get("samples"), list):
        n = len(stats["samples"])
    bf = _TO_NS.get(bstats.get("unit"))  # type: ignore[arg-type]
    b_median = _stat(bstats, "median", bf)

    speedup = _num(speedup_d.get("value"))
    basis = _s(speedup_d.get("basis"))
    sp_low = sp_high = None
    if speedup is not None and basis in (None, "median") and ci_low and ci_high:
        # baseline time / candidate time at the ends of both confidence intervals; a
        # baseline without an interval counts as exact
        b_low = _stat(bstats, "ci_low", bf)
        b_high = _stat(bstats, "ci_high", bf)
        if b_low is None or b_high is None:
            b_low = b_high = b_median
        if b_low is not None and b_high is not None:
            sp_low, sp_high = b_low / ci_high, b_high / ci_low

    work = _shape_work(task, shape) or _d(task.get("work"))
    w_flop = _qty(work.get("flops"), _TO_FLOP)
    w_bytes = _qty(work.get("bytes"), _TO_B)
    p_flops = _qty(hw.get("peak_flop_rate"), _TO_FLOPS)
    p_bw = _qty(hw.get("peak_bandwidth"), _TO_BPS)
    if peaks is not None and (p_flops is None or p_bw is None):
        known = peaks(
            _s(hw.get("device")), _s(hw.get("arch")), tuple(_strs(task.get("dtypes")) or ())
        )
        if known is not None:
            count = _int(hw.get("count")) or 1
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

    energy = _d(cost.get("energy"))
    workload = _s(task.get("workload"))
    if workload is None:
        workload = _s(_d(task.get("serving")).get("model"))

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
        _strs(task.get("dtypes")),
        shape_ids,
        shape,
        _s(hw.get("device")),
        _s(hw.get("arch")),
        _int(hw.get("count")),
        _s(timing.get("method")),
        median_ns,
        _stat(stats, "mean", f),
        _stat(stats, "min", f),
        ci_low,
        ci_high,
        n,
        _s(baseline.get("provider")),
        _s(baseline.get("version")),
        _s(baseline.get("call")),
        b_median,
        speedup,
        basis,
        sp_low,
        sp_high,
        w_flop,
        w_bytes,
        p_flops,
        p_bw,
        sol,
        bound,
        _s(_d(data.get("validation")).get("verdict")),
        _qty(serving.get("output_throughput"), {"tok/s": 1.0}),
        _qty(serving.get("request_throughput"), {"req/s": 1.0}),
        _qty(cost.get("gpu_time"), _TO_S),
        _qty(energy.get("energy"), _TO_J),
    ]
