"""Kernel records built from checked values (``adapters._objects.Records``): the records are
the ones pydantic makes of the same data, and the canonical JSON made without an object per
value is the records' own canonical encoding."""

from __future__ import annotations

import math

import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kernel_evidence._codec.structs import columns_encoder
from kernel_evidence.adapters._objects import Records
from kernel_evidence.models import KernelRecord

_value = st.one_of(
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 5e-324, 1e16, 1e-7, 123456789.0, 2.0**53 + 2]),
)
# names in an order that is not code point order, one that JSON must escape, and units
_names = ["duration", "Zeta", 'a"quoted\\name', "dram_bytes", "é_metric"]
_units = ["ns", "count", "%", "B", "GB/s"]


@settings(max_examples=200, deadline=None)
@example((2, [[None, 0.0]]))  # a record without any metric (Arrow's join once dropped it)
@example((3, [[None, 1.0, None], [None, None, -0.0], [None, 2.0, None]]))
@given(st.integers(0, 6).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.lists(_value, min_size=n, max_size=n), min_size=1, max_size=5))))  # fmt: skip
def test_the_json_is_the_records_canonical_encoding(case: tuple[int, list[list[float | None]]]) -> None:
    n, columns = case
    metrics = [(_names[j], values, _units[j]) for j, values in enumerate(columns)]
    # as a list for some columns, an Arrow array for the others (both are given by adapters)
    metrics = [(m, pa.array(v, type=pa.float64()) if j % 2 else v, u) for j, (m, v, u) in enumerate(metrics)]
    out = Records(metrics, n, encode=True)
    for i in range(n):
        out.add({"name": f"k{i}", "id": str(i), "grid": [i + 1, 1, 1]}, i)
    records, encoded = out.result()
    assert encoded == columns_encoder.encode([r.model_dump(exclude_none=True) for r in records])
    for i, r in enumerate(records):
        assert r == KernelRecord.model_validate(r.model_dump(exclude_none=True))
        want = {_names[j]: c[i] for j, c in enumerate(columns) if c[i] is not None}
        got = {k: q.value for k, q in (r.metrics or {}).items()}
        assert got.keys() == want.keys()
        assert all(
            math.copysign(1.0, got[k]) == math.copysign(1.0, want[k]) and got[k] == want[k] for k in want
        )


def test_no_json_without_encode_and_validated_records_are_encoded_too() -> None:
    out = Records([("duration", [1.0, None], "ns")], 2, encode=False)
    out.add({"name": "a"}, 0)
    out.add({"name": "b"}, 1)
    records, encoded = out.result()
    assert encoded is None and records[0].metrics is not None and records[1].metrics is None
    out = Records([("duration", [1.0], "ns")], 1, encode=True)
    out.add_validated(KernelRecord.model_validate({"name": "odd", "metrics": out.metrics_of(0)}))
    records, encoded = out.result()
    assert encoded == columns_encoder.encode([records[0].model_dump(exclude_none=True)])
