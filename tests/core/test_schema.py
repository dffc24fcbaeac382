"""The published JSON Schema: committed, in sync with the models, and in agreement with them."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel_evidence import SchemaVersion as PublicSchemaVersion
from kernel_evidence._codec.versions import CURRENT, SUPPORTED
from kernel_evidence.schema import (
    CURRENT_VERSION,
    SUPPORTED_VERSIONS,
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
        f"schema/v{CURRENT_VERSION}/packet.schema.json drifted from the models; regenerate with "
        "KEVIDENCE_REGENERATE_SCHEMA=1 python -m pytest tests/core/test_schema.py"
    )


def test_schema_is_valid_draft_2020_12_with_a_stable_id() -> None:
    s = load_schema()
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["$id"] == "urn:kernel-evidence:packet:0.2"


def test_every_supported_version_has_its_committed_schema() -> None:
    for v in SUPPORTED_VERSIONS:
        s = load_schema(v)
        jsonschema.Draft202012Validator.check_schema(s)
        assert s["$id"] == f"urn:kernel-evidence:packet:{v}"
        assert schema_path(v).parent.name == f"v{v}"
    # the released 0.1 schema is kept as released: the current one only adds to it
    old, new = load_schema("0.1"), load_schema("0.2")
    assert old["properties"]["schema_version"]["const"] == "0.1"
    assert new["properties"]["schema_version"]["const"] == "0.2"
    for name, body in old["$defs"].items():
        if "properties" in body:
            assert set(body["properties"]) <= set(new["$defs"][name]["properties"]), name
    assert set(old["properties"]) <= set(new["properties"])


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
    assert SchemaVersion.parse("0.9") < SchemaVersion.parse("0.10") < SchemaVersion.parse("1.0")
    assert sorted(map(SchemaVersion.parse, ["0.10", "0.2", "0.9", "1.0"])) == [
        SchemaVersion(0, 2), SchemaVersion(0, 9), SchemaVersion(0, 10), SchemaVersion(1, 0)
    ]
    assert str(CURRENT_VERSION) == "0.2" and CURRENT_VERSION is CURRENT
    assert SUPPORTED_VERSIONS == SUPPORTED == (SchemaVersion(0, 1), SchemaVersion(0, 2))
    assert PublicSchemaVersion is SchemaVersion  # one class, re-exported
    for bad in ("v1", "0.1.0", "1", "", "0.-1", "١.٢"):
        with pytest.raises(ValueError, match="expected a schema version like `0.2`"):
            SchemaVersion.parse(bad)


def test_schema_file_is_plain_json() -> None:
    json.loads(schema_path().read_text(encoding="utf-8"))
