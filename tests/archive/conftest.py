"""Fixtures of the archive tests: packets on disk and a small archive built from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_evidence.archive import archive_packets
from kernel_evidence.io import write_packets

from ._factory import make_packets


@pytest.fixture
def packets_file(tmp_path: Path) -> Path:
    """120 packets over two runs, two months, two vendors, as JSONL."""
    path = tmp_path / "in" / "packets.jsonl"
    write_packets(path, make_packets(80, month=10, run="rl-a") + make_packets(40, month=11, run="rl-b"))
    return path


@pytest.fixture
def archive(tmp_path: Path, packets_file: Path) -> Path:
    root = tmp_path / "archive"
    summary = archive_packets([packets_file], root)
    assert summary.added == 120 and summary.refused_count == 0
    return root
