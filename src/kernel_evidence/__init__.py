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

import typing as _typing

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

if _typing.TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and editors
    from . import archive, devices, harness, models, strategies
    from ._codec.migrate import migrate_packet as migrate
    from ._ingest import ingest
    from .archive import archive_packets, export_packets
    from .harness import Recorder, reward
    from .io import Limits, read_packets, write_packets
    from .models import SCHEMA_VERSION, EvidencePacket, FailureClass, Status
    from .rawtable import read_raw_table
    from .rules import Finding, Grade, Report, validate, validate_paths
    from .schema import SchemaVersion, load_schema

_LAZY = {
    # name -> (module, attribute or None for the module itself); loaded on first use so that
    # `import kernel_evidence` stays light: a command line that validates one file never
    # builds the pydantic models, and strategies pulls in Hypothesis
    "models": (".models", None),
    "SCHEMA_VERSION": (".models", "SCHEMA_VERSION"),
    "EvidencePacket": (".models", "EvidencePacket"),
    "FailureClass": (".models", "FailureClass"),
    "Status": (".models", "Status"),
    "migrate": ("._codec.migrate", "migrate_packet"),
    "Limits": (".io", "Limits"),
    "read_packets": (".io", "read_packets"),
    "write_packets": (".io", "write_packets"),
    "Finding": (".rules", "Finding"),
    "Grade": (".rules", "Grade"),
    "Report": (".rules", "Report"),
    "validate": (".rules", "validate"),
    "validate_paths": (".rules", "validate_paths"),
    "SchemaVersion": (".schema", "SchemaVersion"),
    "load_schema": (".schema", "load_schema"),
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


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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
