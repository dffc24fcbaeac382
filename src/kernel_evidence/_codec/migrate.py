"""Migration of older packets to the current schema version: a table of small steps.

>>> migrate({"schema_version": "0.1", "status": "passed"})["schema_version"]
'0.2'
>>> migrate({"schema_version": "9.0"})
Traceback (most recent call last):
...
kernel_evidence.errors.MigrationError: unsupported schema_version `9.0`; this reader reads 0.1, 0.2 (a newer packet needs a newer kernel-evidence) - at `/schema_version`

Each step takes a packet's JSON data at one version and returns it at the next; it works
on a deep copy of its input and changes nothing else. :func:`migrate` applies them in order
from the packet's ``schema_version`` up to :data:`~.versions.CURRENT`; the single decode
entry point (:mod:`.decode`) calls it, so every reader accepts every supported version.

Within a major version new fields are optional and no field changes meaning (docs/spec.md
§9), so a step within it only restates the version. Before migrating, :func:`not_in_version`
checks that an older packet holds nothing its own version does not define (a field or a
value added later), against that version's committed JSON Schema: migration must not turn
a packet that was invalid at its version into a valid one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from ..errors import MigrationError
from .messages import unsupported_version
from .versions import CURRENT, SUPPORTED, SchemaVersion, parse_pair

__all__ = [
    "STEPS",
    "MigrationError",
    "migrate",
    "migrate_packet",
    "not_in_version",
    "step_0_1_to_0_2",
    "version_of",
]


def step_0_1_to_0_2(data: Mapping[str, Any]) -> dict[str, Any]:
    """0.1 -> 0.2: 0.2 only adds optional fields, so the version is all that changes."""
    out = copy.deepcopy(dict(data))
    out["schema_version"] = "0.2"
    return out


#: version -> the step from it to the next version
STEPS: dict[SchemaVersion, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    SchemaVersion(0, 1): step_0_1_to_0_2,
}


def version_of(data: Mapping[str, Any]) -> SchemaVersion:
    """The supported version ``data`` states; a :class:`MigrationError` otherwise."""
    value = data.get("schema_version")
    if value is None:
        raise MigrationError("/schema_version", "missing required field `schema_version`")
    pair = parse_pair(value)
    if pair is None or SchemaVersion(*pair) not in SUPPORTED:
        raise MigrationError("/schema_version", unsupported_version(value))
    return SchemaVersion(*pair)


def migrate(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` at the current version: the steps from its stated version applied in order.

    Data already at the current version is returned as it is (not copied); migration is
    idempotent. Raises :class:`MigrationError` for an unsupported version or for content
    its stated version does not define (see :func:`not_in_version`).
    """
    version = version_of(data)
    if version == CURRENT:
        return data if isinstance(data, dict) else dict(data)
    wrong = not_in_version(data, version)
    if wrong is not None:
        raise MigrationError(*wrong)
    out: Mapping[str, Any] = data
    while version != CURRENT:
        out = STEPS[version](out)
        version = SchemaVersion.parse(out["schema_version"])
    return dict(out)


def migrate_packet(data: Mapping[str, Any]) -> dict[str, Any]:
    """A packet (JSON data) at the current version, with the id of its migrated content.

    A packet already current is returned as it is. An older one is migrated
    (:func:`migrate`) and gets the ``packet_id`` its new content gives, once the id it
    stated, if any, is checked against its content at the stated version: a packet whose id
    does not match its own content raises :class:`MigrationError` (migrating must not give
    a forged id a valid successor). The old id is not kept in the packet: within a major
    version it is the id of the migrated content with the old ``schema_version`` put back.
    """
    from .canonical import packet_id_for

    if version_of(data) == CURRENT:
        return data if isinstance(data, dict) else dict(data)
    stated = data.get("packet_id")
    if stated is not None:
        want = packet_id_for(data)
        if stated != want:
            raise MigrationError(
                "/packet_id",
                f"packet_id does not match the content at schema {data['schema_version']} "
                f"(expected {want}); not migrated",
            )
    out = migrate(data)
    out["packet_id"] = packet_id_for(out)
    return out


# ---------------------------------------------------------------- content of an older version


@cache
def _schema(version: SchemaVersion) -> dict[str, Any]:
    from ..schema import load_schema

    return load_schema(version)


def not_in_version(data: Mapping[str, Any], version: SchemaVersion) -> tuple[str, str] | None:
    """``(pointer, message)`` for the first member or value of ``data`` that the published
    JSON Schema of ``version`` does not define, or None.

    Only names and enumerated values are looked at: the rest of the structure is checked
    after migration, by the current models, which accept all that the older version did.
    """
    root = _schema(version)
    return _walk(root, root, data, "", version)


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        node = root["$defs"][ref.rsplit("/", 1)[1]]
    return node


def _branch(root: dict[str, Any], node: dict[str, Any], want: str) -> dict[str, Any] | None:
    """The schema of ``node`` (or of the first of its ``anyOf`` members) for data of JSON type ``want``."""
    node = _resolve(root, node)
    if "anyOf" not in node:
        return node
    for member in node["anyOf"]:
        m = _resolve(root, member)
        if m.get("type") == want or (want == "object" and "properties" in m):
            return m
    return None


def _members(root: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    node = _resolve(root, node)
    return [_resolve(root, m) for m in node["anyOf"]] if "anyOf" in node else [node]


def _walk(
    root: dict[str, Any], node: dict[str, Any], data: Any, pointer: str, version: SchemaVersion
) -> tuple[str, str] | None:
    if isinstance(data, dict):
        schema = _branch(root, node, "object")
        if schema is None:
            return None
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, value in data.items():
            at = pointer + "/" + str(key).replace("~", "~0").replace("/", "~1")
            if props is not None and key in props:
                sub = props[key]
            elif isinstance(extra, dict):
                sub = extra
            elif props is not None and extra is False:
                return pointer, (
                    f"unknown field `{key}` (not in schema {version}; a {version} packet must not "
                    f"carry it: set schema_version to {CURRENT} or remove it)"
                )
            else:
                continue
            found = _walk(root, sub, value, at, version)
            if found is not None:
                return found
        return None
    if isinstance(data, list):
        schema = _branch(root, node, "array")
        items = schema.get("items") if schema is not None else None
        if isinstance(items, dict):
            for i, value in enumerate(data):
                found = _walk(root, items, value, f"{pointer}/{i}", version)
                if found is not None:
                    return found
        return None
    if isinstance(data, str):
        allowed: list[Any] = []
        for member in _members(root, node):
            if member.get("type", "string") != "string":
                continue
            values = member.get("enum", [member["const"]] if "const" in member else None)
            if values is None:
                return None  # a member that takes any string
            allowed.extend(values)
        if allowed and data not in allowed and pointer != "/schema_version":
            return pointer, (
                f"`{data}` is not a value of schema {version} (expected one of "
                f"{', '.join(map(str, allowed))}; set schema_version to {CURRENT} to use it)"
            )
    return None
