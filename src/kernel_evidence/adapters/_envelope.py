"""The envelope every packet kernel-evidence writes starts with: one place for it.

Adapters and the harness (:mod:`kernel_evidence.harness.recorder`,
:mod:`kernel_evidence.harness.replay`) start their packets here instead of writing the
schema version, producer and creation time by hand::

    packet = start_packet(
        subject_kind="kernel",
        subject_name="gemm_bf16",
        created_at=options.created_at,  # None: now, in UTC
        timing=timing,
        profiler=[capture],
    )

The schema version is :data:`kernel_evidence.models.SCHEMA_VERSION`, the producer
``kernel-evidence`` at this package's version. ``measured_at`` (schema 0.2: when the
measurement was taken, for a result ingested later) is set only when given. A ``hardware``
without a ``device_id`` gets the device table's id for its device string when the table
names one model for it (:mod:`kernel_evidence.adapters._device`). Category
keyword arguments (``timing``, ``profiler``, ``hardware``, ``failure``, ...) whose value is
None are left out, so a caller can pass what it has without ``if``s.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal, cast

from .._version import __version__
from ..models import SCHEMA_VERSION, EvidencePacket, Hardware, Producer, Status, Subject
from ._device import hardware_with_id

__all__ = ["PRODUCER_NAME", "producer", "start_packet", "start_packet_data", "utc_now"]

#: what ``subject.kind`` may be (the model refuses anything else)
SubjectKind = Literal["kernel", "serving"]

#: the ``producer.name`` of every packet this package writes
PRODUCER_NAME = "kernel-evidence"


def utc_now() -> str:
    """Now, in UTC, to the second: ``2026-11-22T01:02:03Z``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def producer() -> Producer:
    """``kernel-evidence`` at this package's version."""
    return Producer(name=PRODUCER_NAME, version=__version__)


def start_packet_data(
    *,
    subject_kind: str,
    subject_name: str,
    description: str | None = None,
    status: Status | str = "passed",
    created_at: str | None = None,
    measured_at: str | None = None,
    **categories: Any,
) -> dict[str, Any]:
    """The envelope's members (and the given categories) as keyword data for
    :class:`~kernel_evidence.models.EvidencePacket`, for a caller that adds more before
    building it; :func:`start_packet` builds it at once.

    ``created_at`` None means now (:func:`utc_now`); ``measured_at`` and every category
    whose value is None are left out."""
    data: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "created_at": created_at or utc_now(),
        "producer": producer(),
        "subject": Subject(kind=cast(SubjectKind, subject_kind), name=subject_name, description=description),
        "status": status,
    }
    if measured_at is not None:
        data["measured_at"] = measured_at
    for key, value in categories.items():
        if value is not None:
            data[key] = value
    hardware = data.get("hardware")
    if isinstance(hardware, Hardware):  # the device table's id for the tool's device string
        data["hardware"] = hardware_with_id(hardware)
    return data


def start_packet(
    *,
    subject_kind: str,
    subject_name: str,
    description: str | None = None,
    status: Status | str = "passed",
    created_at: str | None = None,
    measured_at: str | None = None,
    **categories: Any,
) -> EvidencePacket:
    """A packet with the envelope filled in (schema version, producer, ``created_at``,
    subject, status) and the given categories (``timing=``, ``profiler=``, ...; None ones
    left out). Validated as :class:`~kernel_evidence.models.EvidencePacket` validates."""
    return EvidencePacket(
        **start_packet_data(
            subject_kind=subject_kind,
            subject_name=subject_name,
            description=description,
            status=status,
            created_at=created_at,
            measured_at=measured_at,
            **categories,
        )
    )
