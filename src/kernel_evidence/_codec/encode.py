"""Packet models to canonical JSON: the one way a model becomes bytes.

A model is converted into the checked msgspec struct (:mod:`.structs`) and encoded from
there, in canonical key order. Writers of big packets pass the records' JSON an adapter
encoded already (:func:`recording_kernels`), which is spliced in instead of encoding
10^4..10^5 record objects again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import msgspec

from .structs import PacketStruct, canonical_struct_bytes, columns_encoder, encode_struct, packet_decoder

if TYPE_CHECKING:
    from ..models import EvidencePacket

__all__ = [
    "kernels_json_wanted",
    "packet_id",
    "packet_json",
    "packet_json_with_id",
    "record_kernels",
    "recorded_kernels",
    "recording_kernels",
    "struct_of",
]

#: While set (by :func:`recording_kernels`): ``id(kernels) -> (kernels, their canonical
#: JSON)`` for the captures whose records an adapter encoded itself (registered by
#: :func:`.ids.finish_packet`). The list is kept with its JSON: a capture whose ``kernels``
#: is another list is encoded as usual.
_KERNELS: ContextVar[dict[int, tuple[list[Any], bytes]] | None] = ContextVar(
    "kernel_evidence_encoded_kernels", default=None
)


@contextmanager
def recording_kernels() -> Iterator[dict[int, tuple[list[Any], bytes]]]:
    """While in the block, the records' JSON adapters make is kept (see :func:`recorded_kernels`)."""
    registry: dict[int, tuple[list[Any], bytes]] = {}
    token = _KERNELS.set(registry)
    try:
        yield registry
    finally:
        _KERNELS.reset(token)


def kernels_json_wanted() -> bool:
    """Whether an adapter should make its records' canonical JSON even without a packet id
    to compute (a caller is in :func:`recording_kernels`)."""
    return _KERNELS.get() is not None


def record_kernels(kernels: list[Any], kernels_json: bytes) -> None:
    """Keep ``kernels_json`` as the JSON of the list ``kernels``, when a caller records them."""
    registry = _KERNELS.get()
    if registry is not None:
        registry[id(kernels)] = (kernels, kernels_json)


def recorded_kernels(
    packet: EvidencePacket, registry: dict[int, tuple[list[Any], bytes]]
) -> dict[int, bytes]:
    """Capture index -> the recorded JSON of its ``kernels``, for the captures of ``packet``
    whose ``kernels`` is still the very list that was recorded."""
    out: dict[int, bytes] = {}
    for i, cap in enumerate(packet.profiler or ()):
        hit = registry.get(id(cap.kernels)) if cap.kernels else None
        if hit is not None and hit[0] is cap.kernels:
            out[i] = hit[1]
    return out


def struct_of(packet: EvidencePacket, kernels: dict[int, bytes] | None = None) -> Any:
    """The packet as the checked msgspec struct that canonical encoding works from.

    msgspec converts the models' attributes into the structs (and checks them) in compiled
    code: twice as fast as pydantic's JSON decoded again, for 20,000 kernel records. A
    packet with ``extensions`` takes that JSON round trip, so their free-form values are
    written as pydantic writes them. Raw-column tables (millions of numbers the models
    validated already) are encoded once, as canonical JSON, and spliced in as
    ``msgspec.Raw``; so is ``kernels`` (capture index -> the canonical JSON of that
    capture's records, which must be exactly theirs).
    """
    captures = list(packet.profiler or [])
    columns = [c.raw_columns for c in captures]
    light = packet
    if kernels or any(c is not None for c in columns):
        slim: list[Any] = []
        for i, c in enumerate(captures):
            update: dict[str, Any] = {}
            if c.raw_columns is not None:
                update["raw_columns"] = None
            if kernels and i in kernels:
                update["kernels"] = None
            slim.append(c.model_copy(update=update) if update else c)
        light = packet.model_copy(update={"profiler": slim})
    struct: Any
    if packet.extensions is None:
        struct = msgspec.convert(light, PacketStruct, from_attributes=True)
    else:
        struct = packet_decoder.decode(light.model_dump_json(exclude_none=True))
    for i, cols in enumerate(columns):
        if cols is not None:
            struct.profiler[i].raw_columns = msgspec.Raw(columns_encoder.encode(cols))
    for i, data in (kernels or {}).items():
        struct.profiler[i].kernels = msgspec.Raw(data)
    return struct


def packet_json(packet: EvidencePacket) -> bytes:
    """The packet as compact JSON bytes in canonical key order, without null members."""
    return encode_struct(struct_of(packet))


def packet_id(packet: EvidencePacket, kernels: dict[int, bytes] | None = None) -> str:
    """The content-addressed id of ``packet`` (its ``packet_id`` is not part of it)."""
    return "sha256:" + hashlib.sha256(canonical_struct_bytes(struct_of(packet, kernels))).hexdigest()


def packet_json_with_id(
    packet: EvidencePacket, kernels: dict[int, bytes] | None = None
) -> tuple[EvidencePacket, bytes]:
    """``(packet.with_id(), its JSON)`` from one canonical struct: for writers of big packets
    (10^7 raw cells), which would otherwise build it twice. ``kernels`` as for
    :func:`struct_of`."""
    st = struct_of(packet, kernels)
    pid = "sha256:" + hashlib.sha256(canonical_struct_bytes(st)).hexdigest()
    st = msgspec.structs.replace(st, packet_id=pid)
    return packet.model_copy(update={"packet_id": pid}), encode_struct(st)
