"""The typed columns: the fast path (the core packet struct) gives exactly what the reference
path (plain JSON data) gives."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel_evidence._decode import decode_one
from kernel_evidence.archive._rows import extract, extract_struct, partition_from, partition_of
from kernel_evidence.archive.schema import COLUMNS
from kernel_evidence.archive.writer import _peak_lookup
from kernel_evidence.strategies import packets

from ._factory import make_packet

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"


def _same(a: list[Any], b: list[Any]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, float) and isinstance(y, float):
            if not (x == y or (math.isnan(x) and math.isnan(y))):
                return False
        elif x != y or type(x) is not type(y):
            return False
    return True


def _both(raw: bytes) -> tuple[list[Any], list[Any]]:
    data = msgspec.json.decode(raw)
    one = decode_one(raw)
    assert one is not None
    struct = one[0]
    peaks = _peak_lookup()
    slow, fast = extract(data, peaks), extract_struct(struct, peaks)
    assert partition_of(data) == partition_from(
        struct.hardware.vendor if struct.hardware else None, struct.created_at
    )
    return slow, fast


@settings(max_examples=60, deadline=None)
@given(packets())
def test_fast_path_equals_reference_path(packet: Any) -> None:
    slow, fast = _both(packet.to_json())
    assert len(slow) == len(COLUMNS) - 5
    assert _same(slow, fast), [(c.name, x, y) for c, x, y in zip(COLUMNS, slow, fast, strict=False) if x != y]


def test_fast_path_on_examples_and_factory() -> None:
    raws = [p.read_bytes() for p in sorted(EXAMPLES.glob("*.json"))]
    raws += [make_packet(i).to_json() for i in range(10)]
    for raw in raws:
        slow, fast = _both(msgspec.json.format(raw, indent=-1))
        assert _same(slow, fast)


@settings(max_examples=60, deadline=None)
@given(
    packets(),
    st.sampled_from(["hardware", "timing", "task", "lineage", "cost"]),
    st.sampled_from([1, "x", [], True, None]),
)
def test_wrong_types_fall_back_and_never_crash(packet: Any, member: str, value: Any) -> None:
    data = packet.to_dict()
    target = data.get(member)
    if isinstance(target, dict) and target:
        key = sorted(target)[0]
        target[key] = value
    else:
        data[member] = value
    raw = json.dumps(data).encode()
    row = extract(json.loads(raw), _peak_lookup())  # the reference path takes anything
    assert len(row) == len(COLUMNS) - 5
    one = decode_one(raw)
    if one is not None:  # the fast path accepted it: then it must agree
        assert _same(row, extract_struct(one[0], _peak_lookup()))


def test_hostile_units_and_numbers_give_nulls() -> None:
    data = make_packet(0).to_dict()
    data["timing"]["stats"]["unit"] = ["us"]
    data["hardware"]["peak_flop_rate"] = {"value": "fast", "unit": {}}
    data["lineage"]["iteration"] = 2**70
    row = extract(data)
    cols = dict(zip([c.name for c in COLUMNS], row, strict=False))
    assert cols["median_ns"] is None and cols["iteration"] is None
    assert cols["peak_flop_per_s"] is None
    assert decode_one(json.dumps(data).encode()) is None


def test_serving_baseline_names_its_engine() -> None:
    data = make_packet(0).to_dict()
    data["timing"]["baseline"] = {
        "engine": {"name": "vLLM", "version": "0.6.3"},
        "settings": {"max_num_seqs": 256},
    }
    raw = msgspec.json.encode(data)
    slow, fast = _both(raw)
    cols = dict(zip([c.name for c in COLUMNS], slow, strict=False))
    assert (cols["baseline_provider"], cols["baseline_version"]) == ("vLLM", "0.6.3")
    assert _same(slow, fast)
