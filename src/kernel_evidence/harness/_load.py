"""Read exactly one packet from a file, with one-line errors (file, place, what was expected)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import msgspec
from pydantic import ValidationError

from .._codec.canonical import packet_id_for
from .._codec.decode import find_duplicate_key, maybe_duplicates, model_from_data
from .._codec.messages import from_pydantic
from .._codec.migrate import migrate
from ..errors import InputError, MigrationError
from ..io import iter_records
from ..models import EvidencePacket

__all__ = ["load_packet", "packet_from_data"]


def packet_from_data(data: Any, source: str, location: str | None = None) -> EvidencePacket:
    """Validate JSON data (of any supported schema version, migrated to the current one) as
    a packet; a refusal names the first problem and its JSON Pointer."""
    if not isinstance(data, dict):
        raise InputError(source, location, f"expected a JSON object (a packet), got {type(data).__name__}")
    try:
        return model_from_data(data)
    except MigrationError as exc:
        raise InputError(source, location, f"not a valid packet: {exc}") from None
    except ValidationError as exc:
        msg, pointer = from_pydantic(exc, data)[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InputError(
            source, location, f"not a valid packet: {msg} - at `{pointer or '/'}`{more}"
        ) from None


def _matches(data: Any, select: str) -> bool:
    if not isinstance(data, dict):
        return False
    subject = data.get("subject")
    name = subject.get("name") if isinstance(subject, dict) else None
    lineage = data.get("lineage")
    cand = lineage.get("candidate_id") if isinstance(lineage, dict) else None
    if select in (name, cand):
        return True
    if len(select) < 6:
        return False
    want = select if select.startswith("sha256:") else "sha256:" + select
    if data.get("packet_id"):
        return str(data["packet_id"]).startswith(want)
    return any(pid.startswith(want) for pid in _content_ids(data))


def _content_ids(data: dict[str, Any]) -> Iterator[str]:
    """The content id of a packet without ``packet_id`` (as ``kevidence id`` and ``replay``
    show it: the packet read with its types, at the current version)."""
    try:
        yield packet_id_for(migrate(data))
    except MigrationError:
        yield packet_id_for(data)


def _repeats_a_key(data: Any, raw: bytes) -> bool:
    """Cheap screen: decoded data without a repeated key re-encodes with as many quotes."""
    return maybe_duplicates(raw, msgspec.json.encode(data).count(b'"'))


def load_packet(path: str | os.PathLike[str], select: str | None = None) -> EvidencePacket:
    """The single packet in ``path`` (``.json``, or a JSONL stream holding one record).

    With ``select`` (a packet id or its first hex digits, a subject name or a candidate id),
    the one matching packet of a stream holding many; the last one when several match. A
    packet without ``packet_id`` matches by its content id, as ``kevidence id`` or
    ``kevidence replay`` show it.
    """
    name = os.fspath(path)
    found: list[tuple[str | None, Any]] = []
    for rec in iter_records(name):
        if rec.error is not None:
            raise rec.error
        assert rec.data is not None
        try:
            data = msgspec.json.decode(rec.data)
        except (msgspec.DecodeError, RecursionError) as exc:
            if select is not None:
                continue  # a torn or broken line in a stream we only pick from
            why = "nested too deeply to be a packet" if isinstance(exc, RecursionError) else str(exc)
            raise InputError(name, rec.location, f"not valid JSON ({why})") from None
        if _repeats_a_key(data, rec.data):
            dup = find_duplicate_key(rec.data)
            if dup is not None:  # which value would count? the validator refuses it too (KE003)
                if select is not None:
                    continue
                raise InputError(
                    name,
                    rec.location,
                    f"duplicate key `{dup}` in one object; a JSON object must not repeat a key",
                )
        items = data if isinstance(data, list) else [data]
        if select is not None:
            found.extend((rec.location, item) for item in items if _matches(item, select))
            continue
        found.extend((rec.location, item) for item in items)
        if len(found) > 1:
            raise InputError(name, None, "expected one packet, found several; pick one with --select ID|NAME")
    if not found:
        if select is not None:
            raise InputError(
                name, None, f"no packet matches `{select}` (packet id prefix, subject name or candidate id)"
            )
        raise InputError(name, None, "empty input; expected a JSON packet")
    location, data = found[-1]
    return packet_from_data(data, name, location)
