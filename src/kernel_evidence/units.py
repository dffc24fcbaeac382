"""Units: the closed set every physical quantity in a packet is expressed in.

Each unit belongs to one dimension and has a factor to that dimension's base unit
(seconds, bytes, bytes/s, FLOP, FLOP/s, joules, watts, hertz, ...). Conversions go through
:func:`convert`; comparing two quantities of different dimensions is an error.

>>> convert(1.5, "ms", "us")
1500.0
>>> dimension_of("GB/s")
'bandwidth'
"""

from __future__ import annotations

from enum import Enum
from fractions import Fraction
from functools import cache
from typing import Final

__all__ = [
    "Dimension",
    "UNIT_FACTORS",
    "Unit",
    "UnitError",
    "convert",
    "dimension_of",
    "to_base",
]


class Dimension(str, Enum):
    """What a unit measures."""

    TIME = "time"
    BYTES = "bytes"
    BANDWIDTH = "bandwidth"
    FLOP = "flop"
    FLOP_RATE = "flop_rate"
    PERCENT = "percent"
    ENERGY = "energy"
    POWER = "power"
    FREQUENCY = "frequency"
    COUNT = "count"
    COUNT_RATE = "count_rate"
    TOKENS = "tokens"
    TOKEN_RATE = "token_rate"
    REQUEST_RATE = "request_rate"
    TEMPERATURE = "temperature"
    RATIO = "ratio"


class Unit(str, Enum):
    """The closed set of units. The value is the spelling used in packets."""

    # time
    NS = "ns"
    US = "us"
    MS = "ms"
    S = "s"
    CYCLE = "cycle"
    # bytes (decimal and binary prefixes)
    B = "B"
    KB = "KB"
    MB = "MB"
    GB = "GB"
    TB = "TB"
    KIB = "KiB"
    MIB = "MiB"
    GIB = "GiB"
    TIB = "TiB"
    # bandwidth
    B_PER_S = "B/s"
    KB_PER_S = "KB/s"
    MB_PER_S = "MB/s"
    GB_PER_S = "GB/s"
    TB_PER_S = "TB/s"
    GIB_PER_S = "GiB/s"
    # work
    FLOP = "FLOP"
    GFLOP = "GFLOP"
    TFLOP = "TFLOP"
    FLOP_PER_S = "FLOP/s"
    GFLOP_PER_S = "GFLOP/s"
    TFLOP_PER_S = "TFLOP/s"
    PFLOP_PER_S = "PFLOP/s"
    # ratios
    PERCENT = "%"
    RATIO = "ratio"
    # energy and power
    J = "J"
    KJ = "kJ"
    WH = "Wh"
    KWH = "kWh"
    MW = "mW"
    W = "W"
    KW = "kW"
    # frequency
    HZ = "Hz"
    KHZ = "kHz"
    MHZ = "MHz"
    GHZ = "GHz"
    # counts
    COUNT = "count"
    PER_S = "1/s"
    TOKENS = "tok"
    TOKENS_PER_S = "tok/s"
    REQUESTS_PER_S = "req/s"
    # temperature
    CELSIUS = "degC"


_D = Dimension
#: unit -> (dimension, factor to the dimension's base unit)
UNIT_FACTORS: Final[dict[str, tuple[Dimension, float]]] = {
    "ns": (_D.TIME, 1e-9),
    "us": (_D.TIME, 1e-6),
    "ms": (_D.TIME, 1e-3),
    "s": (_D.TIME, 1.0),
    "cycle": (_D.COUNT, 1.0),
    "B": (_D.BYTES, 1.0),
    "KB": (_D.BYTES, 1e3),
    "MB": (_D.BYTES, 1e6),
    "GB": (_D.BYTES, 1e9),
    "TB": (_D.BYTES, 1e12),
    "KiB": (_D.BYTES, 1024.0),
    "MiB": (_D.BYTES, 1024.0**2),
    "GiB": (_D.BYTES, 1024.0**3),
    "TiB": (_D.BYTES, 1024.0**4),
    "B/s": (_D.BANDWIDTH, 1.0),
    "KB/s": (_D.BANDWIDTH, 1e3),
    "MB/s": (_D.BANDWIDTH, 1e6),
    "GB/s": (_D.BANDWIDTH, 1e9),
    "TB/s": (_D.BANDWIDTH, 1e12),
    "GiB/s": (_D.BANDWIDTH, 1024.0**3),
    "FLOP": (_D.FLOP, 1.0),
    "GFLOP": (_D.FLOP, 1e9),
    "TFLOP": (_D.FLOP, 1e12),
    "FLOP/s": (_D.FLOP_RATE, 1.0),
    "GFLOP/s": (_D.FLOP_RATE, 1e9),
    "TFLOP/s": (_D.FLOP_RATE, 1e12),
    "PFLOP/s": (_D.FLOP_RATE, 1e15),
    "%": (_D.PERCENT, 1.0),
    "ratio": (_D.RATIO, 1.0),
    "J": (_D.ENERGY, 1.0),
    "kJ": (_D.ENERGY, 1e3),
    "Wh": (_D.ENERGY, 3600.0),
    "kWh": (_D.ENERGY, 3.6e6),
    "mW": (_D.POWER, 1e-3),
    "W": (_D.POWER, 1.0),
    "kW": (_D.POWER, 1e3),
    "Hz": (_D.FREQUENCY, 1.0),
    "kHz": (_D.FREQUENCY, 1e3),
    "MHz": (_D.FREQUENCY, 1e6),
    "GHz": (_D.FREQUENCY, 1e9),
    "count": (_D.COUNT, 1.0),
    "1/s": (_D.COUNT_RATE, 1.0),
    "tok": (_D.TOKENS, 1.0),
    "tok/s": (_D.TOKEN_RATE, 1.0),
    "req/s": (_D.REQUEST_RATE, 1.0),
    "degC": (_D.TEMPERATURE, 1.0),
}

assert set(UNIT_FACTORS) == {u.value for u in Unit}  # noqa: S101 - import-time invariant


class UnitError(ValueError):
    """A unit is unknown, or two units of different dimensions were mixed."""


def _lookup(unit: str | Unit) -> tuple[Dimension, float]:
    key = unit.value if isinstance(unit, Unit) else unit
    try:
        return UNIT_FACTORS[key]
    except KeyError:
        raise UnitError(f"unknown unit `{key}`; expected one of {sorted(UNIT_FACTORS)}") from None


def dimension_of(unit: str | Unit) -> str:
    """The dimension name of ``unit``."""
    return _lookup(unit)[0].value


def to_base(value: float, unit: str | Unit) -> float:
    """``value`` expressed in the base unit of its dimension (s, B, B/s, FLOP, ...)."""
    return value * _lookup(unit)[1]


@cache
def _ratio(from_unit: str, to_unit: str) -> float:
    d1, f1 = _lookup(from_unit)
    d2, f2 = _lookup(to_unit)
    if d1 is not d2:
        raise UnitError(f"cannot convert `{from_unit}` ({d1.value}) to `{to_unit}` ({d2.value})")
    # exact decimal ratio, so that ms -> us is exactly 1000
    return float(Fraction(repr(f1)) / Fraction(repr(f2)))


def convert(value: float, from_unit: str | Unit, to_unit: str | Unit) -> float:
    """Convert ``value`` between two units of the same dimension."""
    a = from_unit.value if isinstance(from_unit, Unit) else from_unit
    b = to_unit.value if isinstance(to_unit, Unit) else to_unit
    return value * _ratio(a, b)
