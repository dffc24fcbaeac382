"""`read_packets` and `validate_paths` take one path on its own, not only a list: a string
was iterated character by character before."""

from __future__ import annotations

from pathlib import Path

import kernel_evidence as ke

VALID = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"


def test_one_file_as_str_and_as_path() -> None:
    one = sorted(VALID.glob("*.json"))[0]
    for arg in (str(one), one):
        packets = list(ke.read_packets(arg))
        assert len(packets) == 1 and packets[0].packet_id is not None
        reports = list(ke.validate_paths(arg))
        assert len(reports) == 1 and reports[0].ok, reports


def test_one_directory() -> None:
    assert len(list(ke.read_packets(VALID))) == len(list(VALID.glob("*.json")))
