"""Packet ids: the id of a model, of JSON data, and of a packet an adapter just built.

The id is ``sha256:`` + the hex SHA-256 of the canonical form (:mod:`.canonical`, spec
§1.1). A packet read at an older schema version is migrated first (:mod:`.decode`), and its
id is that of its migrated content; the id it stated is checked against its content at the
version it stated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .canonical import packet_id_for
from .encode import packet_id, record_kernels

if TYPE_CHECKING:
    from ..models import EvidencePacket
    from ..models._base import Artifact

__all__ = ["finish_packet", "packet_id", "packet_id_for"]


def finish_packet(
    packet: EvidencePacket,
    index: int,
    *,
    kernels_json: bytes | None = None,
    raw_table: Artifact | None = None,
    with_id: bool = True,
) -> EvidencePacket:
    """A copy of an adapter's packet whose ``profiler[index]`` references the side file
    ``raw_table`` (when given; the capture must then hold neither ``raw_columns`` nor
    ``raw_table``), with its ``packet_id`` when ``with_id``.

    ``kernels_json`` is the canonical JSON of ``profiler[index].kernels`` (an array of the
    records' data, nulls omitted, keys sorted, each number of its field's type): an adapter
    that built the records from plain values encodes those values once with msgspec, and
    the id is computed with them spliced in, instead of encoding 10^4..10^5 record objects
    again through pydantic. It must be the encoding of exactly those records; the tests
    compare such ids with :meth:`EvidencePacket.compute_id`. A caller recording the records'
    JSON (:func:`.encode.recording_kernels`) gets it too.
    """
    captures = list(packet.profiler or [])
    cap = captures[index]
    if raw_table is not None:
        if cap.raw_columns is not None or cap.raw_table is not None:
            raise ValueError("the capture already holds its raw metrics")
        cap = captures[index] = cap.model_copy(update={"raw_table": raw_table})
    update: dict[str, Any] = {"profiler": captures}
    kernels = {index: kernels_json} if kernels_json is not None and cap.kernels else None
    if with_id:
        update["packet_id"] = packet_id(packet.model_copy(update={"profiler": captures}), kernels)
    out = packet.model_copy(update=update)
    if kernels is not None:
        record_kernels(out.profiler[index].kernels, kernels[index])  # type: ignore[index,arg-type]
    return out
