"""Archive packets into a Parquet dataset, export them back, and report on them.

>>> from kernel_evidence.archive import archive_packets, export_packets, open_archive
"""

from __future__ import annotations

from .schema import ARCHIVE_LAYOUT_VERSION, DATASET_SCHEMA, FILE_SCHEMA
from .writer import ArchiveSummary, Refusal, archive_packets

__all__ = [
    "ARCHIVE_LAYOUT_VERSION",
    "DATASET_SCHEMA",
    "FILE_SCHEMA",
    "ArchiveSummary",
    "Refusal",
    "archive_packets",
]
