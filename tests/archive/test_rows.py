"""The typed columns: the fast path (the core packet struct) gives exactly what the reference
path (plain JSON data) gives."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel_evidence._codec.canonical import packet_id_for
from kernel_evidence._codec.decode import decode_one
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
        struct.hardware.vendor if struct.hardware else None, struct.created_at, struct.measured_at
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


# -- the writer: one decode per packet, same archive as the reference path ---------------


def _archive_both(tmp: Path, lines: list[bytes], monkeypatch: Any) -> tuple[list[Any], list[Any], int]:
    """The same packets archived as JSON objects (one decode into the core struct each) and
    as the items of one JSON array (decoded data: the reference path). Returns both archives'
    rows, sorted, and how often the JSON-object run fell back to the reference path."""
    from kernel_evidence.archive import archive_packets, read_table
    from kernel_evidence.archive import writer as writer_mod

    calls = {"n": 0}
    real = writer_mod.extract

    def counting(data: Any, peaks: Any = None) -> list[Any]:
        calls["n"] += 1
        return real(data, peaks)

    (tmp / "objects.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (tmp / "array.json").write_bytes(b"[" + b",".join(lines) + b"]")
    with monkeypatch.context() as m:
        m.setattr(writer_mod, "extract", counting)
        archive_packets([tmp / "objects.jsonl"], tmp / "fast", allow_invalid=True, parallel=False)
    fallbacks = calls["n"]
    archive_packets([tmp / "array.json"], tmp / "slow", allow_invalid=True, parallel=False)
    rows = [sorted(read_table(tmp / d).to_pylist(), key=lambda r: r["packet_id"]) for d in ("fast", "slow")]
    return rows[0], rows[1], fallbacks


def test_writer_struct_path_equals_reference_path_on_examples(tmp_path: Path, monkeypatch: Any) -> None:
    lines = [msgspec.json.format(p.read_bytes(), indent=-1) for p in sorted(EXAMPLES.glob("*.json"))]
    lines += [make_packet(i).to_json() for i in range(12)]
    # kept with --allow-invalid: a failed packet with a speedup (decodes, breaks a rule) and
    # one with an unknown member (does not decode into the struct: the reference path)
    bad = make_packet(0).to_dict()
    bad.pop("packet_id")
    bad["status"] = "failed"
    odd = make_packet(1).to_dict()
    odd.pop("packet_id")
    odd["task"]["colour"] = "blue"
    lines += [msgspec.json.encode({"packet_id": packet_id_for(d), **d}) for d in (bad, odd)]
    fast, slow, fallbacks = _archive_both(tmp_path, lines, monkeypatch)
    assert len(fast) == len(lines) and fallbacks == 1  # only the packet with an unknown member
    assert [r["valid"] for r in fast].count(False) == 2
    assert fast == slow
    assert sorted(r["packet"] for r in fast) == sorted(lines)  # lossless, byte for byte


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(packets(), min_size=1, max_size=6))
def test_writer_struct_path_equals_reference_path_on_generated_packets(
    tmp_path_factory: Any, monkeypatch: Any, generated: list[Any]
) -> None:
    lines = list(dict.fromkeys(p.to_json() for p in generated))
    fast, slow, fallbacks = _archive_both(tmp_path_factory.mktemp("gen"), lines, monkeypatch)
    assert fallbacks == 0
    assert fast == slow and len(fast) == len({r["packet_id"] for r in fast})


def test_every_unit_the_models_allow_has_a_factor() -> None:
    """The struct path looks factors up without a fallback: a unit added to a model must
    get a factor here too (else this fails, not an archive run)."""
    from typing import get_args

    from kernel_evidence.archive import _rows
    from kernel_evidence.models import (
        Bandwidth,
        ByteSize,
        Duration,
        Energy,
        FlopCount,
        FlopRate,
        RequestRate,
        TokenRate,
    )

    tables = [
        (Duration, _rows._TO_NS),
        (Duration, _rows._TO_S),
        (ByteSize, _rows._TO_B),
        (FlopCount, _rows._TO_FLOP),
        (FlopRate, _rows._TO_FLOPS),
        (Bandwidth, _rows._TO_BPS),
        (Energy, _rows._TO_J),
        (TokenRate, _rows._TO_TOKS),
        (RequestRate, _rows._TO_REQS),
    ]
    for model, table in tables:
        units = get_args(model.model_fields["unit"].annotation)
        assert units and set(units) <= set(table), (model.__name__, set(units) - set(table))
