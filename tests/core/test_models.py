"""Packet models: ids, canonical form, units, defaults."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from pydantic import ValidationError

from kernel_evidence._codec.canonical import canonical_bytes, packet_id_for
from kernel_evidence._codec.structs import struct_for
from kernel_evidence.models import EvidencePacket, Stats
from kernel_evidence.strategies import example_packet, packets
from kernel_evidence.units import UnitError, convert, dimension_of


def _shuffle(obj, rng):
    if isinstance(obj, dict):
        items = list(obj.items())
        rng.shuffle(items)
        return {k: _shuffle(v, rng) for k, v in items}
    if isinstance(obj, list):
        return [_shuffle(v, rng) for v in obj]
    return obj


@settings(max_examples=60, deadline=None)
@given(packets())
def test_packet_id_ignores_key_order_and_nulls(packet: EvidencePacket) -> None:
    data = packet.to_dict()
    shuffled = _shuffle(data, random.Random(len(json.dumps(data))))
    shuffled["cost"] = None  # explicit nulls are not content
    assert packet_id_for(shuffled) == packet.packet_id == packet.compute_id()


def test_packet_id_changes_with_content() -> None:
    p = example_packet()
    d = p.to_dict()
    d["timing"]["stats"]["median"] = 181.0
    assert packet_id_for(d) != p.packet_id


def test_canonical_form_is_sorted_compact_and_excludes_the_id() -> None:
    b = canonical_bytes({"b": 1, "a": {"d": None, "c": [1, None]}, "packet_id": "x"})
    assert b == b'{"a":{"c":[1,null]},"b":1}'


def test_every_field_is_required_or_defaults_to_none() -> None:
    # struct_for raises for any other default; building the packet struct walks every model
    from kernel_evidence._codec.structs import PacketStruct

    assert PacketStruct is struct_for(EvidencePacket)


def test_unknown_fields_are_refused() -> None:
    d = example_packet().to_dict()
    d["replay_cmd"] = "python x.py"
    with pytest.raises(ValidationError, match="replay_cmd"):
        EvidencePacket.model_validate(d)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "1.0", True])
def test_time_statistics_must_be_finite_numbers(bad) -> None:
    with pytest.raises(ValidationError):
        Stats.model_validate({"unit": "ms", "median": bad})


def test_units_are_a_closed_set_per_dimension() -> None:
    with pytest.raises(ValidationError, match="'ns', 'us', 'ms' or 's'"):
        Stats.model_validate({"unit": "GB/s", "median": 1.0})


def test_unit_conversion() -> None:
    assert convert(1.5, "ms", "us") == 1500.0
    assert convert(1, "GiB", "B") == 1073741824
    assert dimension_of("TFLOP/s") == "flop_rate"
    with pytest.raises(UnitError, match="cannot convert `ms` \\(time\\) to `GB` \\(bytes\\)"):
        convert(1, "ms", "GB")
    with pytest.raises(UnitError, match="unknown unit `parsec`"):
        convert(1, "parsec", "s")


def test_with_id_round_trips_through_json() -> None:
    p = example_packet()
    again = EvidencePacket.model_validate_json(p.to_json())
    assert again == p and again.compute_id() == p.packet_id
