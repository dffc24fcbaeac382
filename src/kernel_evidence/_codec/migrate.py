"""Migration of older packets to the current schema version: a table of small steps.

>>> old = {"schema_version": str(SchemaVersion(0, 1)), "status": "passed"}
>>> migrate(old)["schema_version"], old["schema_version"]
('0.2', '0.1')
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
    """``(pointer, message)`` for the first member of ``data`` that the published JSON
    Schema of ``version`` does not define, or the first value it does not allow that the
    current version does (a value wrong at both is left to the current models, whose
    message says what is expected); None when there is none.

    Only names and enumerated values are looked at: the rest of the structure is checked
    after migration, by the current models, which accept all that the older version did.
    """
    old, new = _schema(version), _schema(CURRENT)
    return _walk(_Roots(old, new, version), old, new, data, "")


class _Roots:
    __slots__ = ("new", "old", "version")

    def __init__(self, old: dict[str, Any], new: dict[str, Any], version: SchemaVersion) -> None:
        self.old, self.new, self.version = old, new, version


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _members(root: dict[str, Any], node: dict[str, Any] | None) -> list[dict[str, Any]]:
    if node is None:
        return []
    node = _resolve(root, node)
    return [_resolve(root, m) for m in node["anyOf"]] if "anyOf" in node else [node]


def _branch(root: dict[str, Any], node: dict[str, Any] | None, want: str) -> dict[str, Any] | None:
    """The member of ``node`` (itself or one of its ``anyOf``) for data of JSON type ``want``."""
    for m in _members(root, node):
        if m.get("type") == want or (want == "object" and "properties" in m):
            return m
    return None


def _strings(root: dict[str, Any], node: dict[str, Any] | None) -> list[Any] | None:
    """The strings ``node`` allows, or None when it allows any string."""
    allowed: list[Any] = []
    for m in _members(root, node):
        if m.get("type", "string") != "string":
            continue
        values = m.get("enum", [m["const"]] if "const" in m else None)
        if values is None:
            return None
        allowed.extend(values)
    return allowed


def _child(schema: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    if schema is None:
        return None
    props = schema.get("properties")
    if props is not None and key in props:
        sub: dict[str, Any] = props[key]
        return sub
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _walk(
    r: _Roots, old: dict[str, Any], new: dict[str, Any] | None, data: Any, pointer: str
) -> tuple[str, str] | None:
    if isinstance(data, dict):
        so, sn = _branch(r.old, old, "object"), _branch(r.new, new, "object")
        if so is None:
            return None
        props = so.get("properties")
        for key, value in data.items():
            sub = _child(so, key)
            if sub is None:
                if props is None or so.get("additionalProperties") is not False:
                    continue  # free-form (extensions, maps of any value)
                if _child(sn, key) is not None:
                    return pointer, (
                        f"field `{key}` is new in schema {CURRENT}; a {r.version} packet must not "
                        f"carry it (set schema_version to {CURRENT}, or remove it)"
                    )
                return pointer, (
                    f"unknown field `{key}` (not in schema {r.version}; put tool-specific data under /extensions)"
                )
            at = pointer + "/" + str(key).replace("~", "~0").replace("/", "~1")
            found = _walk(r, sub, _child(sn, key), value, at)
            if found is not None:
                return found
        return None
    if isinstance(data, list):
        so, sn = _branch(r.old, old, "array"), _branch(r.new, new, "array")
        items = so.get("items") if so is not None else None
        if isinstance(items, dict):
            new_items = sn.get("items") if sn is not None else None
            for i, value in enumerate(data):
                found = _walk(r, items, new_items, value, f"{pointer}/{i}")
                if found is not None:
                    return found
        return None
    if isinstance(data, str) and pointer != "/schema_version":
        allowed = _strings(r.old, old)
        if allowed is not None and data not in allowed:
            now = _strings(r.new, new)
            if now is None or data in now:
                return pointer, (
                    f"`{data}` is new in schema {CURRENT}; a {r.version} packet must not use it "
                    f"(expected one of {', '.join(map(str, allowed))}, or set schema_version to {CURRENT})"
                )
    return None
