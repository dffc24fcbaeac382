"""The published JSON Schema: committed, in sync with the models, and in agreement with them."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel_evidence.schema import (
    CURRENT_VERSION,
    SchemaVersion,
    dumps_schema,
    generate_schema,
    load_schema,
    schema_path,
    write_schema,
)
from kernel_evidence.strategies import packets

VALIDATOR = jsonschema.Draft202012Validator(load_schema())


def test_committed_schema_matches_the_models() -> None:
    generated = dumps_schema(generate_schema())
    if os.environ.get("KEVIDENCE_REGENERATE_SCHEMA"):
        write_schema()
    committed = schema_path().read_text(encoding="utf-8")
    assert committed == generated, (
        "schema/v0.1/packet.schema.json drifted from the models; regenerate with "
        "KEVIDENCE_REGENERATE_SCHEMA=1 python -m pytest tests/core/test_schema.py"
    )


def test_schema_is_valid_draft_2020_12_with_a_stable_id() -> None:
    s = load_schema()
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["$id"] == "urn:kernel-evidence:packet:0.1"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packets())
def test_every_packet_the_models_accept_the_schema_accepts(packet) -> None:
    errors = list(VALIDATOR.iter_errors(packet.to_dict()))
    assert not errors, errors[0].message


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    packets(),
    st.sampled_from(["status", "timing", "hardware", "replay", "task", "created_at", "subject"]),
    _json,
)
def test_models_never_accept_what_the_schema_rejects(packet, key, value) -> None:
    from pydantic import ValidationError

    from kernel_evidence.models import EvidencePacket

    d = packet.to_dict()
    d[key] = value
    schema_ok = VALIDATOR.is_valid(d)
    try:
        EvidencePacket.model_validate(d)
        model_ok = True
    except ValidationError:
        model_ok = False
    assert not model_ok or schema_ok


def test_schema_versions_are_ordered_numerically_not_as_strings() -> None:
    assert SchemaVersion.parse("0.10") > SchemaVersion.parse("0.9")
    assert SchemaVersion.parse("1.0") > SchemaVersion.parse("0.99")
    assert str(CURRENT_VERSION) == "0.1"
    with pytest.raises(ValueError, match="expected a schema version like `0.1`, got `v1`"):
        SchemaVersion.parse("v1")


def test_schema_file_is_plain_json() -> None:
    json.loads(schema_path().read_text(encoding="utf-8"))
