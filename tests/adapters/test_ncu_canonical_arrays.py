"""The ncu adapter's canonical metrics computed on Arrow arrays (a raw page read for a side
file) equal those the list code computes, bit for bit, with the same warnings."""

from __future__ import annotations

import dataclasses
import struct
from typing import Any
from unittest import mock

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel_evidence.adapters import ncu
from kernel_evidence.units import dimension_of

_TABLE = ncu._table()
_SOURCES = [src.metrics for canon in _TABLE.metrics for src in canon.sources]
_SOURCE_METRICS = sorted({m for metrics in _SOURCES for m in metrics})
# the shipped table converts every spelling with factor 1.0; this one exercises the others
_SCALED = dataclasses.replace(
    _TABLE,
    units={k: (unit, 1.0 if i % 2 else 1000.0) for i, (k, (unit, _f)) in enumerate(_TABLE.units.items())},
)
# spellings the table knows, none, an empty one, one it does not know, and one of another dimension
_UNITS = [*sorted(_TABLE.units), "", None, "furlong"]


def _fitting(metric: str) -> list[str]:
    """The spellings of the table that convert to a unit of the canonical metrics ``metric`` feeds."""
    dims = {
        dimension_of("count" if src.combine == "product" else canon.unit)
        for canon in _TABLE.metrics
        for src in canon.sources
        if metric in src.metrics
    }
    return [k for k, (unit, _f) in _TABLE.units.items() if dimension_of(unit) in dims] or _UNITS


_values = st.one_of(
    st.none(),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 100.0, 1e308, -1e308, 5e-324]),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
)


def _bits(values: Any) -> list[Any]:
    if not isinstance(values, list):
        values = values.to_pylist()
    return [None if v is None else struct.pack("<d", v) for v in values]


@st.composite
def _reports(draw: st.DrawFn) -> tuple[int, dict[str, list[float | None]], dict[str, Any], set[str]]:
    n = draw(st.integers(1, 6))
    # whole sources (all metrics of a sum, a product, a ratio) and single metrics
    names = list(
        dict.fromkeys(m for src in draw(st.lists(st.sampled_from(_SOURCES), max_size=4)) for m in src)
    )
    names += draw(st.lists(st.sampled_from(_SOURCE_METRICS), min_size=1 - min(len(names), 1), max_size=6))
    names = list(dict.fromkeys(names))
    zero_one = st.sampled_from([None, 0.0, -0.0, 1.0, -1.0])  # sums of -0.0, ratios over 0
    columns = {
        m: draw(st.lists(draw(st.sampled_from([_values, zero_one])), min_size=n, max_size=n)) for m in names
    }
    units: dict[str, Any] = {}
    for m in names:
        if draw(st.integers(0, 9)) == 0:  # one unit per launch: the list code's case
            units[m] = draw(st.lists(st.sampled_from(_UNITS), min_size=n, max_size=n))
        else:
            units[m] = draw(st.sampled_from(_fitting(m) if draw(st.booleans()) else _UNITS))
    as_lists = set(draw(st.lists(st.sampled_from(names), unique=True, max_size=3)))
    return n, columns, units, as_lists


@settings(max_examples=500, deadline=None)
@given(_reports(), st.booleans())
def test_arrow_and_list_code_agree(
    report: tuple[int, dict[str, list[float | None]], dict[str, Any], set[str]], scaled: bool
) -> None:
    if scaled:
        with mock.patch.object(ncu, "_table", lambda: _SCALED):
            _agree(*report)
    else:
        _agree(*report)


def _agree(n: int, columns: dict[str, list[float | None]], units: dict[str, Any], as_lists: set[str]) -> None:
    arrays = {
        m: (list(values) if m in as_lists else pa.array(values, type=pa.float64()))
        for m, values in columns.items()
    }
    warned_lists: set[str] = set()
    warned_arrays: set[str] = set()
    from_lists = ncu.canonical_columns(columns, units, n, warned_lists)
    from_arrays = ncu.canonical_columns(columns, units, n, warned_arrays, arrays)
    assert from_arrays.keys() == from_lists.keys()
    for name, (values, unit) in from_lists.items():
        assert from_arrays[name][1] == unit
        assert _bits(from_arrays[name][0]) == _bits(values), name
    assert warned_arrays == warned_lists


def test_arrays_are_used_for_float_columns_with_one_unit() -> None:
    """The Arrow code runs (and gives an Arrow array) when it can: the test above would
    pass with the list code alone."""
    arrays = {"gpu__time_duration.sum": pa.array([1.5, None, -0.0], type=pa.float64())}
    lists = {"gpu__time_duration.sum": [1.5, None, -0.0]}
    out = ncu.canonical_columns(lists, {"gpu__time_duration.sum": "usecond"}, 3, set(), arrays)
    values, unit = out["duration"]
    assert isinstance(values, pa.Array)
    assert unit == "ns" and _bits(values) == _bits([1500.0, None, -0.0])
    # one unit per launch: the list code
    out = ncu.canonical_columns(lists, {"gpu__time_duration.sum": ["usecond", "ns", "ns"]}, 3, set(), arrays)
    assert isinstance(out["duration"][0], list)


def test_edge_cases_agree() -> None:
    """Cases the random reports above seldom reach, each compared as there."""
    # a sum of -0.0 and -0.0 is 0.0 (0.0 + -0.0), as the list code adds from 0.0
    static, dynamic = "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic"
    _agree(
        2, {static: [-0.0, 1.0], dynamic: [-0.0, -0.0]}, {static: "byte/block", dynamic: "Kbyte/block"}, set()
    )
    units = {static: "byte/block", dynamic: "byte/block"}
    out = ncu.canonical_columns({}, units, 1, set(), {static: pa.array([-0.0]), dynamic: pa.array([-0.0])})
    assert _bits(out["shared_memory_per_block"][0]) == _bits([0.0])
    # a later source in a unit that does not convert: a warning only when a launch that
    # still needs a value has one there
    first, later = "gpu__time_duration.sum", "gpu__time_duration"
    units = {first: "ns", later: "furlong"}
    for durations, warns in (([1.0, None], False), ([None, 2.0], True)):
        _agree(2, {first: durations, later: [3.0, None]}, units, set())
        warned: set[str] = set()
        arrays = {first: pa.array(durations, pa.float64()), later: pa.array([3.0, None], pa.float64())}
        ncu.canonical_columns({}, units, 2, warned, arrays)
        assert bool(warned) is warns
    # an earlier source in a unit that does not convert: no warning when later sources give
    # every launch its value (the canonical metric is whole), one when a launch lacks it
    units = {first: "furlong", later: "ns"}
    for later_values, warns in (([3.0, 4.0], False), ([3.0, None], True)):
        columns = {first: [1.0, 2.0], later: later_values}
        _agree(2, columns, units, set())
        for arrays in (None, {k: pa.array(v, pa.float64()) for k, v in columns.items()}):
            warned = set()
            ncu.canonical_columns(columns, units, 2, warned, arrays)
            assert bool(warned) is warns, (arrays, warned)
