"""`kevidence validate` checks a packet's raw table file beside it: KE903 when it is not the
file the packet names, KE904 when it is not there; nothing for stdin or packet objects."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import kernel_evidence as ke
from kernel_evidence.cli import main
from kernel_evidence.rawtable import write_raw_table


def _packet_with_table(tmp_path: Path) -> tuple[Path, Path]:
    out = tmp_path / "out"
    ref = write_raw_table({"a": [1.0, 2.0], "b": ["x", None]}, {"a": "ns"}, 2, out, "r", relative_to=out)
    d = ke.strategies.example_packet().to_dict()
    d.pop("packet_id", None)
    d["profiler"] = [
        {
            "tool": "ncu",
            "kernels": [{"name": "k0"}, {"name": "k1"}],
            "raw_table": ref.model_dump(mode="json", exclude_none=True),
        }
    ]
    packet = ke.EvidencePacket.model_validate(d).with_id()
    path = out / "run.json"
    ke.write_packets(path, [packet])
    return path, out / str(ref.name)


def _rules(path: Path | str, jobs: int = 1) -> list[tuple[str, str]]:
    return [
        (f.rule_id, f.pointer)
        for r in ke.validate_paths([path], jobs=jobs)
        for f in r.findings
        if f.rule_id in ("KE903", "KE904")
    ]


def test_an_intact_side_file_passes(tmp_path: Path) -> None:
    path, _ = _packet_with_table(tmp_path)
    assert _rules(path) == []
    reports = list(ke.validate_paths([path]))
    assert reports[0].ok


def test_a_missing_side_file_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, side = _packet_with_table(tmp_path)
    side.unlink()
    assert _rules(path) == [("KE904", "/profiler/0/raw_table")]
    assert list(ke.validate_paths([path]))[0].ok  # a warning: the packet is still valid
    assert main(["validate", "--strict", str(path)]) == 1
    assert "KE904 warning at /profiler/0/raw_table: raw table" in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["flip", "grow"])
def test_a_changed_side_file_is_an_error(
    tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path, side = _packet_with_table(tmp_path)
    data = bytearray(side.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 1
    else:
        data += b"\0"
    side.write_bytes(bytes(data))
    assert _rules(path) == [("KE903", "/profiler/0/raw_table")]
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "KE903 error" in out and ("sha256" in out or "bytes" in out)
    # the digest of the file found is not shown: the path may name any file of the reader's
    assert hashlib.sha256(side.read_bytes()).hexdigest() not in out


def test_the_worker_path_checks_files_too(tmp_path: Path) -> None:
    path, side = _packet_with_table(tmp_path)
    side.unlink()
    assert _rules(path, jobs=2) == [("KE904", "/profiler/0/raw_table")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_place_of_the_side_file_does_not_hang(tmp_path: Path) -> None:
    path, side = _packet_with_table(tmp_path)
    side.unlink()
    os.mkfifo(side)
    assert _rules(path) == [("KE903", "/profiler/0/raw_table")]


def test_stdin_and_packet_objects_read_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    path, side = _packet_with_table(tmp_path)
    side.unlink()
    packet = next(ke.read_packets(path))
    assert not [f for f in ke.validate(packet).findings if f.rule_id in ("KE903", "KE904")]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    assert main(["validate", "-"]) == 0
    assert "KE904" not in capsys.readouterr().out
