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

from . import models
from ._version import __version__
from .errors import (
    AdapterError,
    ArchiveError,
    InputError,
    KernelEvidenceError,
    LimitExceeded,
    MigrationError,
    MissingExtra,
    PacketInvalid,
)
from ._codec.migrate import migrate_packet as migrate
from .io import Limits, read_packets, write_packets
from .models import SCHEMA_VERSION, EvidencePacket, FailureClass, Status
from .rules import Finding, Grade, Report, validate, validate_paths
from .schema import SchemaVersion, load_schema

_LAZY = {
    # name -> (module, attribute or None for the module itself); loaded on first use so that
    # `import kernel_evidence` stays light (strategies pulls in Hypothesis)
    "strategies": (".strategies", None),
    "harness": (".harness", None),
    "Recorder": (".harness", "Recorder"),
    "reward": (".harness", "reward"),
    "archive": (".archive", None),
    "devices": (".devices", None),
    "archive_packets": (".archive", "archive_packets"),
    "export_packets": (".archive", "export_packets"),
    "ingest": ("._ingest", "ingest"),
    "read_raw_table": (".rawtable", "read_raw_table"),
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        module_name, attr = _LAZY[name]
        module = importlib.import_module(module_name, __name__)
        value = module if attr is None else getattr(module, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "MigrationError",
    "MissingExtra",
    "PacketInvalid",
    "Recorder",
    "Report",
    "SCHEMA_VERSION",
    "SchemaVersion",
    "Status",
    "__version__",
    "archive",
    "archive_packets",
    "devices",
    "export_packets",
    "harness",
    "ingest",
    "load_schema",
    "migrate",
    "models",
    "read_packets",
    "read_raw_table",
    "reward",
    "strategies",
    "validate",
    "validate_paths",
    "write_packets",
]
