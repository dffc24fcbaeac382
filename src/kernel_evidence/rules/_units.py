"""Unit helpers for rules: which dimension a unit field expects, normalised values."""

from __future__ import annotations

from ..units import UNIT_FACTORS

_DIMENSION_TEXT = {
    "time": "a time unit (ns, us, ms, s)",
    "bytes": "a byte unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)",
    "bandwidth": "a bandwidth unit (B/s, KB/s, MB/s, GB/s, TB/s, GiB/s)",
    "flop": "a FLOP unit (FLOP, GFLOP, TFLOP)",
    "flop_rate": "a FLOP-rate unit (FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s)",
    "energy": "an energy unit (J, kJ, Wh, kWh)",
    "power": "a power unit (mW, W, kW)",
    "frequency": "a frequency unit (Hz, kHz, MHz, GHz)",
    "request_rate": "the request-rate unit `req/s`",
    "token_rate": "the token-rate unit `tok/s`",
}

# which dimension each unit-carrying field expects, by the last named segment before /unit
_FIELD_DIMENSION = {
    "stats": "time", "ttft": "time", "tpot": "time", "itl": "time", "e2el": "time",
    "duration": "time", "window": "time", "gpu_time": "time", "cpu_time": "time", "wall_time": "time",
    "size": "bytes", "memory": "bytes", "bytes": "bytes",
    "peak_bandwidth": "bandwidth", "flops": "flop", "peak_flop_rate": "flop_rate",
    "energy": "energy", "power_limit": "power",
    "sm_requested": "frequency", "sm_observed": "frequency",
    "memory_requested": "frequency", "memory_observed": "frequency",
    "request_throughput": "request_rate", "request_goodput": "request_rate",
    "output_throughput": "token_rate", "total_token_throughput": "token_rate",
    "max_output_throughput": "token_rate",
}  # fmt: skip


def expected_unit_text(pointer: str) -> str:
    """'expected a time unit (ns, us, ms, s)' for a pointer ending in ``/unit``."""
    parts = [p for p in pointer.split("/") if p and not p.isdigit()]
    owner = parts[-2] if len(parts) >= 2 else ""
    dim = _FIELD_DIMENSION.get(owner)
    if dim is None:
        return f"expected one of the units {sorted(UNIT_FACTORS)}"
    return f"expected {_DIMENSION_TEXT[dim]}"


#: unit -> the factor to its dimension's base unit (what :func:`base` multiplies by)
FACTOR: dict[str, float] = {u: f for u, (_, f) in UNIT_FACTORS.items()}


def seconds(value: float, unit: str) -> float:
    """A time value in seconds."""
    return value * UNIT_FACTORS[unit][1]


def base(value: float, unit: str) -> float:
    """A value in its dimension's base unit."""
    return value * UNIT_FACTORS[unit][1]
