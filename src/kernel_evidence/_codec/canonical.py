"""Canonical JSON and content-addressed packet ids.

The canonical form of a packet is its JSON data with ``packet_id`` removed, every member
whose value is ``null`` removed (recursively, in objects only), object keys sorted by code
point, no insignificant whitespace, UTF-8, numbers as msgspec writes them (shortest
round-trip floats), each number written as the type its field has: a number field given
``155`` is written ``155.0``, as the packet models (and the validator) read it. The packet
id is ``sha256:`` + the hex SHA-256 of those bytes, so the same content in any key order,
and with any spelling of its numbers, has the same id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec

__all__ = ["canonical_bytes", "packet_id_for", "strip_nulls"]

_encoder = msgspec.json.Encoder(order="sorted")


def strip_nulls(obj: Any) -> Any:
    """A copy of ``obj`` with null-valued object members removed, at any depth."""
    if isinstance(obj, dict):
        return {k: strip_nulls(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [strip_nulls(v) for v in obj]
    return obj


def canonical_bytes(data: Mapping[str, Any]) -> bytes:
    """The canonical JSON bytes of a packet's data, without its ``packet_id``."""
    body = {k: v for k, v in data.items() if k != "packet_id"}
    return _encoder.encode(strip_nulls(body))


def packet_id_for(data: Mapping[str, Any]) -> str:
    """The content-addressed id of a packet given as JSON data (a dict), in the version it
    states (a 0.1 packet gets its 0.1 id: migrate it first for the id it has at the current
    version).

    The data is read with the packet's types first, so numbers are written as their fields'
    types (the id :meth:`EvidencePacket.compute_id` and the validator give). Data that is
    not a valid packet has no such reading: its id is that of the data as given."""
    from .structs import PacketStruct, canonical_struct_bytes
    from .versions import CURRENT, older_supported

    body = {k: v for k, v in data.items() if k != "packet_id"}
    older = older_supported(body.get("schema_version"))
    try:
        if older is None:
            typed = canonical_struct_bytes(msgspec.convert(body, PacketStruct))
        else:
            # the fields of an older version within this major version are a subset of the
            # current ones with the same types: read as current, written as stated
            st = msgspec.convert({**body, "schema_version": str(CURRENT)}, PacketStruct)
            typed = canonical_struct_bytes(msgspec.structs.replace(st, schema_version=str(older)))
    except (msgspec.ValidationError, RecursionError):
        typed = canonical_bytes(body)
    return "sha256:" + hashlib.sha256(typed).hexdigest()
