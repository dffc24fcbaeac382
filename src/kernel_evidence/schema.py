"""The published JSON Schema: generated from the models, committed under ``schema/``.

>>> load_schema()["$id"]
'urn:kernel-evidence:packet:0.1'

Regenerate the committed file after a model change with
``KEVIDENCE_REGENERATE_SCHEMA=1 python -m pytest tests/core/test_schema.py``
(or :func:`write_schema`); a test fails while the committed file and the models differ.
"""

from __future__ import annotations

import json
from functools import lru_cache, total_ordering
from pathlib import Path
from typing import Any

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


@total_ordering
class SchemaVersion:
    """An ordered schema version (``0.1`` < ``0.2`` < ``0.10`` < ``1.0``), never compared as a string."""

    __slots__ = ("major", "minor")

    def __init__(self, major: int, minor: int) -> None:
        self.major = major
        self.minor = minor

    @classmethod
    def parse(cls, text: str) -> SchemaVersion:
        """``"0.1"`` -> ``SchemaVersion(0, 1)``; anything else raises ValueError."""
        parts = text.split(".")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValueError(f"expected a schema version like `0.1`, got `{text}`")
        return cls(int(parts[0]), int(parts[1]))

    def _key(self) -> tuple[int, int]:
        return (self.major, self.minor)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SchemaVersion) and self._key() == other._key()

    def __lt__(self, other: SchemaVersion) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def __repr__(self) -> str:
        return f"SchemaVersion({self.major}, {self.minor})"


CURRENT_VERSION = SchemaVersion(0, 1)
SUPPORTED_VERSIONS = (CURRENT_VERSION,)


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
