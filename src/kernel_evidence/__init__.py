"""kernel-evidence: evidence packets for GPU and accelerator performance claims.

>>> import kernel_evidence as ke
>>> packet = ke.strategies.example_packet()
>>> report = ke.validate(packet)
>>> report.ok, report.grade.letter
(True, 'B')

The public surface is what ``__all__`` lists; modules whose names start with ``_`` are
private. Packet models live in :mod:`kernel_evidence.models`, rules in
:mod:`kernel_evidence.rules`, adapters in :mod:`kernel_evidence.adapters`.
"""

from . import models, strategies
from ._version import __version__
from .errors import (
    AdapterError,
    ArchiveError,
    InputError,
    KernelEvidenceError,
    LimitExceeded,
    MissingExtra,
    PacketInvalid,
)
from .io import Limits, read_packets, write_packets
from .models import SCHEMA_VERSION, EvidencePacket, FailureClass, Status
from .rules import Finding, Grade, Report, validate, validate_paths
from .schema import SchemaVersion, load_schema

__all__ = [
    "AdapterError",
    "ArchiveError",
    "EvidencePacket",
    "FailureClass",
    "Finding",
    "Grade",
    "InputError",
    "KernelEvidenceError",
    "LimitExceeded",
    "Limits",
    "MissingExtra",
    "PacketInvalid",
    "Report",
    "SCHEMA_VERSION",
    "SchemaVersion",
    "Status",
    "__version__",
    "load_schema",
    "models",
    "read_packets",
    "strategies",
    "validate",
    "validate_paths",
    "write_packets",
]
