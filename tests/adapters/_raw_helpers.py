"""Helpers the raw-table tests of several adapters share."""

from __future__ import annotations

from typing import Any

from kernel_evidence.models import EvidencePacket


def without_raw(packet: EvidencePacket) -> dict[str, Any]:
    """The packet as data without its id and its captures' raw values (inline or side
    file): what must not change when the raw values move to a side file."""
    data = packet.to_dict()
    data.pop("packet_id", None)
    for cap in data.get("profiler", []):
        cap.pop("raw_columns", None)
        cap.pop("raw_table", None)
    return data
