"""The archive schema is fixed: documented column by column, and tied to the layout version."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import zstandard

import kernel_evidence.archive as archive_api
from kernel_evidence.archive import (
    ARCHIVE_LAYOUT_VERSION,
    COLUMNS,
    FILE_SCHEMA,
    PARTITION_SCHEMA,
    read_table,
)
from kernel_evidence.io import write_packets

from ._factory import make_packets

DOC = Path(__file__).resolve().parents[2] / "docs" / "archive.md"

#: fingerprint of the file and partition schema for each layout version; a schema change
#: without a layout version bump (and a line here) fails this test
FINGERPRINTS = {
    (1, 0): "4de1c74065449c832dc82560db476c32517c8398e524b7713d8efa2c7b34164d",
    (1, 1): "4de1c74065449c832dc82560db476c32517c8398e524b7713d8efa2c7b34164d",  # + the commit list
    (1, 2): "49245adc722a83e7b642bc05c4c32d659cf29193d00ef4f2552686304bd79931",  # + grouping columns
}


def test_schema_change_needs_a_layout_bump() -> None:
    text = str(FILE_SCHEMA) + str(PARTITION_SCHEMA)
    assert hashlib.sha256(text.encode()).hexdigest() == FINGERPRINTS[ARCHIVE_LAYOUT_VERSION]


def test_docs_table_lists_every_column() -> None:
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| `([^`]+)`[^|]* \| (.+) \|$", DOC.read_text(), re.M)
    documented = {name: (typ, desc) for name, typ, desc in rows}
    for c in COLUMNS:
        assert c.name in documented, c.name
        assert documented[c.name] == (str(c.type), c.description), c.name
    for f in PARTITION_SCHEMA:
        assert documented[f.name][0] == "string"


def test_public_names() -> None:
    assert archive_api.__all__ == sorted(archive_api.__all__, key=lambda n: (not n.isupper(), n))
    assert {n for n in dir(archive_api) if not n.startswith("_")} >= set(archive_api.__all__)


def test_archive_from_zstd_stdin(tmp_path: Path) -> None:
    src = tmp_path / "p.jsonl"
    write_packets(src, make_packets(12))
    data = zstandard.ZstdCompressor().compress(src.read_bytes())
    root = tmp_path / "a"
    proc = subprocess.run(
        [sys.executable, "-m", "kernel_evidence", "archive", "-", "--to", str(root)],
        input=data,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == f"{root}: 12 added, 0 already present, 0 refused, 2 files written\n"
    assert read_table(root, ["packet_id"]).num_rows == 12
