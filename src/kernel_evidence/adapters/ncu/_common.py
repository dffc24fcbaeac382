"""Not public: what every Nsight Compute reader produces, and the small parsers they share.

A reader (CSV details page, CSV raw page, text page, ``.ncu-rep``) turns one report into a
:class:`Report`: the launches in report order with their identification fields, and every
metric exactly as ncu wrote it, as a table: one column per source metric name with one
value per launch (``None`` where a launch lacks it) and the unit ncu gave. The wide raw page
fills the table straight from its columns; the per-launch readers fill ``Launch.raw`` and
:meth:`Report.table` turns that into columns. The mapping to canonical metrics and packets
lives in :mod:`.ncu` and works on this shape only.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "Column",
    "Launch",
    "Report",
    "Value",
    "column_values",
    "decimal_comma_locale",
    "locale_evidence",
    "parse_count",
    "parse_dims",
    "parse_value",
]

#: a metric value as ncu wrote it: a number, text, or None (``n/a``, empty)
Value = float | str | None
#: one raw column, one value per launch: a list, or (raw page read for a side file, see
#: :mod:`kernel_evidence.rawtable`) the float64 Arrow array pyarrow parsed, which stands for
#: the list :func:`column_values` makes of it (floats, None for nulls)
Column: TypeAlias = "list[Value] | pa.ChunkedArray | pa.Array"


def column_values(col: Column) -> list[Value]:
    """A raw column as a list: floats (None for nulls) of a float64 Arrow column straight
    from its buffer; a list as it is."""
    if isinstance(col, list):
        return col
    import pyarrow as pa
    import pyarrow.compute as pc

    array = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    n = len(array)
    if n == 0:
        return []
    if not pa.types.is_float64(array.type):
        texts: list[Value] = array.to_pylist()
        return texts
    if array.null_count == n:
        return [None] * n
    data = memoryview(array.buffers()[1])[array.offset * 8 : (array.offset + n) * 8]
    if array.null_count == 0 and data[:8] == data[-8:]:
        raw = data.tobytes()
        if raw == raw[:8] * n:  # bit for bit: 0.0 and -0.0 differ
            return [data.cast("d")[0]] * n  # a device attribute: one value in every row
    values: list[Any] = data.cast("d").tolist()
    if array.null_count:
        for i in pc.indices_nonzero(array.is_null()).to_pylist():
            values[i] = None
    return values


@dataclass
class Launch:
    """One kernel launch as the report describes it.

    ``raw`` (name -> (value, unit)) is filled by the per-launch readers only; the raw page
    reader puts its metrics in :attr:`Report.columns` directly.
    """

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
    raw: dict[str, tuple[Value, str | None]] = field(default_factory=dict)


_ABSENT = object()  # unit of a launch that lacks the metric (None is "no unit")


@dataclass
class Report:
    """One ncu report: its launches, the output kind it came from, and reader warnings."""

    page: str  # "details" | "raw" | "text" | "summary" | "ncu-rep"
    launches: list[Launch]
    location: str | None = None  # where the table started ("line 108"), for messages
    tool_version: str | None = None
    reader: str | None = None  # the library that decoded a binary report, with its version
    warnings: list[str] = field(default_factory=list)
    summary: dict[str, float] = field(default_factory=dict)  # e.g. SASS instruction-mix totals
    #: raw page: source metric -> one value per launch (a list, or an Arrow float64 array
    #: when the reader was asked to keep them: see :data:`Column`), and its unit (None: no unit)
    columns: dict[str, Column] | None = None
    units: dict[str, str | None] = field(default_factory=dict)
    #: the reader made every value of ``columns`` a finite float, a str or None itself (the
    #: packet models would accept them), so they need not be validated again one by one
    values_checked: bool = False

    def table(self) -> tuple[dict[str, Column], dict[str, Any]]:
        """(columns, units): the raw metrics as columns, one value per launch.

        A unit is a string or None when the whole column shares it; the per-launch readers
        can give a list (one unit per launch, as ncu's pages scale units per launch).
        """
        if self.columns is not None:
            return self.columns, self.units
        n = len(self.launches)
        values: dict[str, list[Value]] = {}
        units: dict[str, list[Any]] = {}
        for i, la in enumerate(self.launches):
            for key, (v, u) in la.raw.items():
                col = values.get(key)
                if col is None:
                    col = values[key] = [None] * n
                    units[key] = [_ABSENT] * n
                col[i] = v
                units[key][i] = u
        out_units: dict[str, Any] = {}
        for key, us in units.items():
            present = set(us)
            present.discard(_ABSENT)
            if len(present) == 1:
                out_units[key] = present.pop()
            else:  # absent launches have no unit: say None, the values are None there too
                out_units[key] = [None if u is _ABSENT else u for u in us]
        return values, out_units


def split_by_unit(
    columns: dict[str, Column], units: dict[str, Any]
) -> tuple[dict[str, Column], dict[str, str]]:
    """Columns whose unit differs between launches are split, so each column has one unit:
    the launches in the column's most common unit keep the name, the others move to
    ``<name> [<unit>]``. Returns (raw_columns, raw_units) as the packet stores them (an
    Arrow column has one unit: it is passed through as it is)."""
    out: dict[str, Column] = {}
    out_units: dict[str, str] = {}
    for key in sorted(columns):
        values, unit = columns[key], units.get(key)
        if not isinstance(unit, list):
            out[key] = values
            if unit:
                out_units[key] = unit
            continue
        assert isinstance(values, list)  # per-launch units come from the per-launch readers
        # the units of the launches that have the metric (absent ones are (None, None))
        counts = Counter(u for u, v in zip(unit, values, strict=True) if v is not None or u is not None)
        if len(counts) <= 1:
            out[key] = values
            only = next(iter(counts), None)
            if only:
                out_units[key] = only
            continue
        main = counts.most_common(1)[0][0]
        for u in counts:
            name = key if u == main else f"{key} [{u or ''}]"
            out[name] = [v if ui == u else None for v, ui in zip(values, unit, strict=True)]
            if u:
                out_units[name] = u
    return dict(sorted(out.items())), out_units


_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][+-]?\d+)?\Z")
_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d{1,2}\Z")
_NULLS = frozenset({"", "n/a", "N/A", "na", "NA", "-", "--"})


#: a value only a decimal-comma locale writes: dots grouping thousands twice or more
#: (``27.595.520``), dot groups before a decimal comma (``1.234,5``), or a comma followed by
#: other than three digits (``65,77``)
_COMMA_LOCALE = re.compile(
    r"[+-]?(?:\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?|\d{1,3}(?:\.\d{3})+,\d+|\d+,(?:\d{1,2}|\d{4,}))\Z"
)
#: a value only a decimal-point locale writes: commas grouping thousands twice or more, comma
#: groups before a decimal point, or a point followed by other than three digits
_POINT_LOCALE = re.compile(
    r"[+-]?(?:\d{1,3}(?:,\d{3}){2,}(?:\.\d+)?|\d{1,3}(?:,\d{3})+\.\d+|\d*\.(?:\d{1,2}|\d{4,})|\d*\.\d+[eE][+-]?\d+)\Z"
)
_COMMA_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:\.\d{3})+|\d+)(?:,\d+)?\Z")


def decimal_comma_locale(cells: Iterable[str]) -> str | None:
    """An example cell when the metric values were written in a decimal-comma locale (some
    cell can only be read that way and none only the other way), else None.

    ncu formats numbers in the user's locale on some systems: ``"117.344"`` ns is then
    117,344 ns, not 117.344. A report that shows no sign either way is read with a decimal
    point.

    >>> decimal_comma_locale(["117.344", "65,77"]), decimal_comma_locale(["117.344", "9.5"])
    ('65,77', None)
    """
    example, point = locale_evidence(cells)
    return None if point else example


def locale_evidence(cells: Iterable[str]) -> tuple[str | None, bool]:
    """(a cell only a decimal-comma locale writes, or None; whether some cell can only have
    been written with a decimal point). Stops at the first cell of the second kind."""
    example = None
    for cell in cells:
        s = cell.strip()
        if not s or not s[-1].isdigit():
            continue
        if _POINT_LOCALE.match(s):
            return example, True
        if example is None and _COMMA_LOCALE.match(s):
            example = s
    return example, False


def parse_value(
    text: str, on_decimal_comma: list[str] | None = None, comma_decimal: bool = False
) -> float | str | None:
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
    if comma_decimal:  # a decimal-comma locale: "1.234,5" is 1234.5, "117.344" is 117344
        if _COMMA_NUMBER.match(s):
            return float(s.replace(".", "").replace(",", "."))
        if any(c in s for c in ".,"):
            return s  # not a number of that locale
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

#: the most digits a count (device index, grid or block dimension) is read from: more than
#: fits in a 64-bit integer is no count ncu writes (and ``int()`` refuses over 4300 digits)
_MAX_COUNT_DIGITS = 18


def parse_count(text: str | None) -> int | None:
    """``"3"`` -> ``3``; anything but ASCII digits (at most 18 of them) -> None.

    ``str.isdigit`` alone is not enough: it holds for ``"²"``, which ``int()`` refuses.
    """
    s = text.strip() if text else ""
    if not s or len(s) > _MAX_COUNT_DIGITS or not (s.isascii() and s.isdigit()):
        return None
    return int(s)


def parse_dims(text: str | None) -> list[int] | None:
    """``"(128, 1, 1)"`` -> ``[128, 1, 1]``; anything else -> None."""
    if not text:
        return None
    m = _DIMS.match(text.strip())
    if m is None:
        return None
    dims = [parse_count(g.replace(",", "")) for g in m.groups()]
    return None if None in dims else dims  # type: ignore[return-value]
