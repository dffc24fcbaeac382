"""Archive packets into a Parquet dataset, export them back, and report on them.

The pipeline: :func:`archive_packets` (packets in, typed columns plus the lossless packet
out, hive-partitioned by vendor and month), :func:`open_archive` (a ``pyarrow.dataset``
with the fixed schema), :func:`export_packets` (the packets back as JSONL, with their raw
tables beside), :func:`read_raw_table` (a capture's raw metrics from the archive's copy of
its side file), and :func:`write_report` (one self-contained HTML file). See
``docs/archive.md``.
"""

from __future__ import annotations

from ._raw import read_raw_table
from .reader import WhereError, export_packets, iter_packets, open_archive, parse_where, read_table
from .report import build_report, write_report
from .schema import ARCHIVE_LAYOUT_VERSION, COLUMNS, DATASET_SCHEMA, FILE_SCHEMA, PARTITION_SCHEMA
from .writer import ArchiveSummary, RawTableWarning, Refusal, archive_packets

__all__ = [
    "ARCHIVE_LAYOUT_VERSION",
    "COLUMNS",
    "DATASET_SCHEMA",
    "FILE_SCHEMA",
    "PARTITION_SCHEMA",
    "ArchiveSummary",
    "RawTableWarning",
    "Refusal",
    "WhereError",
    "archive_packets",
    "build_report",
    "export_packets",
    "iter_packets",
    "open_archive",
    "parse_where",
    "read_raw_table",
    "read_table",
    "write_report",
]
