"""Not public: what every Nsight Compute reader produces, and the small parsers they share.

A reader (CSV details page, CSV raw page, text page, ``.ncu-rep``) turns one report into a
:class:`Report`: the launches in report order, each with its identification fields and
every metric exactly as ncu wrote it (:class:`~kernel_evidence.models.RawMetric`). The
mapping to canonical metrics and packets lives in :mod:`.ncu` and works on this shape only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..models import RawMetric

__all__ = ["Launch", "RawCache", "Report", "parse_dims", "parse_value"]


@dataclass
class Launch:
    """One kernel launch as the report describes it."""

    id: str
    name: str
    pid: str | None = None
    process_name: str | None = None
    stream: str | None = None
    device: int | None = None
    grid: list[int] | None = None
    block: list[int] | None = None
    cc: str | None = None
    raw_name: str | None = None
    raw: dict[str, RawMetric] = field(default_factory=dict)


@dataclass
class Report:
    """One ncu report: its launches, the output kind it came from, and reader warnings."""

    page: str  # "details" | "raw" | "text" | "ncu-rep"
    launches: list[Launch]
    location: str | None = None  # where the table started ("line 108"), for messages
    tool_version: str | None = None
    reader: str | None = None  # the library that decoded a binary report, with its version
    warnings: list[str] = field(default_factory=list)
    summary: dict[str, float] = field(default_factory=dict)  # e.g. SASS instruction-mix totals
    #: device attributes identical in every launch, taken out of the launches' raw metrics
    device_attributes: dict[str, float | str] = field(default_factory=dict)


class _PerUnit(dict):  # type: ignore[type-arg]
    """value -> RawMetric for one unit; a missing value is built on first use."""

    __slots__ = ("unit",)

    def __init__(self, unit: str | None) -> None:
        super().__init__()
        self.unit = unit

    def __missing__(self, value: float | str | None) -> RawMetric:
        made = self[value] = RawMetric(value=value, unit=self.unit)
        return made


class RawCache:
    """Shares one immutable :class:`RawMetric` per distinct (value, unit): real reports repeat
    device attributes and launch settings in every row, and building models is the slow part."""

    __slots__ = ("_by_unit", "_cache")

    def __init__(self) -> None:
        self._cache: dict[tuple[object, object, type], RawMetric] = {}
        self._by_unit: dict[str | None, _PerUnit] = {}

    def column(self, values: list[float | str | None], unit: str | None) -> list[RawMetric]:
        """One shared RawMetric per value of a column whose cells all have ``unit``."""
        known = self._by_unit.get(unit or None)
        if known is None:
            known = self._by_unit[unit or None] = _PerUnit(unit or None)
        return list(map(known.__getitem__, values))

    def get(self, value: float | str | None, unit: str | None) -> RawMetric:
        key = (value, unit, type(value))
        hit = self._cache.get(key)
        if hit is None:
            hit = RawMetric(value=value, unit=unit or None)
            if len(self._cache) < 2_000_000:
                self._cache[key] = hit
        return hit


_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][+-]?\d+)?\Z")
_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d{1,2}\Z")
_NULLS = frozenset({"", "n/a", "N/A", "na", "NA", "-", "--"})


def parse_value(text: str, on_decimal_comma: list[str] | None = None) -> float | str | None:
    """A metric value cell as ncu wrote it -> float, text, or None (empty / ``n/a``).

    Thousands separators (``"1,759,000.00"``) are removed. A single comma followed by one or
    two digits (``"9,00"``) can only be a decimal comma (ncu groups thousands by three): it
    is read as a decimal point and reported through ``on_decimal_comma``. NaN and infinities
    stay text: packets refuse them as numbers.

    >>> parse_value("1,759,000.00"), parse_value("n/a"), parse_value("PolicySpread")
    (1759000.0, None, 'PolicySpread')
    """
    s = text.strip()
    if s in _NULLS:
        return None
    try:
        v = float(s)
    except ValueError:
        if "," not in s:
            return s
        if _THOUSANDS.match(s):
            v = float(s.replace(",", ""))
        elif _DECIMAL_COMMA.match(s):
            v = float(s.replace(",", "."))
            if on_decimal_comma is not None:
                on_decimal_comma.append(s)
        else:
            return s
    else:
        if "_" in s:  # float() accepts "1_000"; ncu never writes it, so it is text
            return s
    if not math.isfinite(v):
        return s
    return v


_DIMS = re.compile(r"\(\s*(\d[\d,]*)\s*,\s*(\d[\d,]*)\s*,\s*(\d[\d,]*)\s*\)\Z")


def parse_dims(text: str | None) -> list[int] | None:
    """``"(128, 1, 1)"`` -> ``[128, 1, 1]``; anything else -> None."""
    if not text:
        return None
    m = _DIMS.match(text.strip())
    if m is None:
        return None
    return [int(g.replace(",", "")) for g in m.groups()]
