"""One input file read for an adapter: capped whatever the file is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernel_evidence.adapters._read import max_bytes_option, read_capped
from kernel_evidence.errors import AdapterError


def test_regular_files_under_and_over_the_cap(tmp_path: Path) -> None:
    f = tmp_path / "a.csv"
    f.write_bytes(b"x" * 1000)
    assert read_capped(str(f), 1000) == b"x" * 1000
    with pytest.raises(AdapterError, match=r"a.csv: larger than the 999 bytes cap for one input; expected"):
        read_capped(str(f), 999)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_endless_device_stops_at_the_cap(tmp_path: Path) -> None:
    link = tmp_path / "raw.csv"
    link.symlink_to("/dev/zero")
    with pytest.raises(AdapterError, match=r"raw.csv: larger than the 1 MiB cap .* --opt max_bytes=N"):
        read_capped(str(link), 1 << 20)


def test_directories_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match="is a directory"):
        read_capped(str(tmp_path))
    with pytest.raises(AdapterError, match=r"nope.csv: could not be read \(No such file or directory\)"):
        read_capped(str(tmp_path / "nope.csv"))


def test_max_bytes_option() -> None:
    assert max_bytes_option({}) == 2 << 30
    assert max_bytes_option({"max_bytes": "4096"}) == 4096
    for bad in ("0", "-1", "lots"):
        with pytest.raises(AdapterError, match="option `max_bytes`: expected a positive integer"):
            max_bytes_option({"max_bytes": bad})
