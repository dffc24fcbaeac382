"""Read exactly one packet from a file, with one-line errors (file, place, what was expected)."""

from __future__ import annotations

import os
from typing import Any

import msgspec
from pydantic import ValidationError

from ..errors import InputError
from ..io import iter_records
from ..models import EvidencePacket

__all__ = ["load_packet", "packet_from_data"]


def _pointer(loc: tuple[Any, ...]) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in loc) if loc else "/"


def packet_from_data(data: Any, source: str, location: str | None = None) -> EvidencePacket:
    """Validate JSON data as a packet; a refusal names the first problem and its JSON Pointer."""
    if not isinstance(data, dict):
        raise InputError(source, location, f"expected a JSON object (a packet), got {type(data).__name__}")
    try:
        return EvidencePacket.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InputError(source, location, f"not a valid packet: {first['msg']} - at `{_pointer(tuple(first['loc']))}`{more}") from None


def load_packet(path: str | os.PathLike[str]) -> EvidencePacket:
    """The single packet in ``path`` (``.json``, or a JSONL stream holding one record)."""
    name = os.fspath(path)
    found: list[tuple[str | None, Any]] = []
    for rec in iter_records(name):
        if rec.error is not None:
            raise rec.error
        assert rec.data is not None
        try:
            data = msgspec.json.decode(rec.data)
        except msgspec.DecodeError as exc:
            raise InputError(name, rec.location, f"not valid JSON ({exc})") from None
        items = data if isinstance(data, list) else [data]
        found.extend((rec.location, item) for item in items)
        if len(found) > 1:
            raise InputError(name, None, "expected one packet, found several; pass a file with a single packet")
    if not found:
        raise InputError(name, None, "empty input; expected a JSON packet")
    location, data = found[0]
    return packet_from_data(data, name, location)
