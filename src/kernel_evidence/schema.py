"""The published JSON Schema: generated from the models, committed under ``schema/``.

>>> load_schema()["$id"] == f"urn:kernel-evidence:packet:{CURRENT_VERSION}"
True
>>> sorted(load_schema(v)["$id"] for v in SUPPORTED_VERSIONS)[0]
'urn:kernel-evidence:packet:0.1'

Every supported version's schema stays committed and shipped (``schema/v<X.Y>/``);
:class:`SchemaVersion` (ordered: ``0.9`` < ``0.10``) lives in the codec and is re-exported here.

Regenerate the committed file after a model change with
``KEVIDENCE_REGENERATE_SCHEMA=1 python -m pytest tests/core/test_schema.py``
(or :func:`write_schema`); a test fails while the committed file and the models differ.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from ._codec.versions import CURRENT, SUPPORTED, SchemaVersion
from ._resources import schema_dir
from .models import EvidencePacket

__all__ = [
    "CURRENT_VERSION",
    "SUPPORTED_VERSIONS",
    "SchemaVersion",
    "generate_schema",
    "load_schema",
    "schema_path",
    "write_schema",
]

DRAFT = "https://json-schema.org/draft/2020-12/schema"


CURRENT_VERSION = CURRENT
SUPPORTED_VERSIONS = SUPPORTED


def schema_id(version: SchemaVersion = CURRENT_VERSION) -> str:
    return f"urn:kernel-evidence:packet:{version}"


def generate_schema() -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12) of the current packet models."""
    body = EvidencePacket.model_json_schema(mode="validation")
    return {
        "$schema": DRAFT,
        "$id": schema_id(),
        "title": "kernel-evidence packet",
        "description": (
            f"Evidence packet, schema version {CURRENT_VERSION}. Generated from the pydantic "
            "models of kernel-evidence; the normative text is docs/spec.md."
        ),
        **{k: v for k, v in body.items() if k != "title"},
    }


def schema_path(version: SchemaVersion | str = CURRENT_VERSION) -> Path:
    """Path of the committed (or shipped) schema file of ``version``."""
    v = SchemaVersion.parse(version) if isinstance(version, str) else version
    return schema_dir() / f"v{v}" / "packet.schema.json"


def dumps_schema(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def load_schema(version: SchemaVersion | str = CURRENT_VERSION) -> dict[str, Any]:
    """The published schema of ``version``, read from the shipped file."""
    return _load(str(schema_path(version)))


def write_schema(path: Path | None = None) -> Path:
    """Write the generated schema to ``schema/v<current>/packet.schema.json`` (or ``path``)."""
    target = path or (schema_dir() / f"v{CURRENT_VERSION}" / "packet.schema.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dumps_schema(generate_schema()), encoding="utf-8")
    return target
