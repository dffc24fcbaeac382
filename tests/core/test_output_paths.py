"""Where written packets land: links written through, devices and pipes written in place,
directories refused, and no temp file left behind when a write fails."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from kernel_evidence.cli import main
from kernel_evidence.io import open_output, write_packets
from kernel_evidence.strategies import example_packet

POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX files")


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@POSIX
def test_a_link_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(real.name)
    with pytest.raises(FileExistsError, match="link.json: already exists"):
        write_packets(link, [example_packet()])
    write_packets(link, [example_packet()], overwrite=True)
    assert link.is_symlink() and real.read_bytes().startswith(b'{"created_at"')
    assert leftovers(tmp_path) == []


def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(FileExistsError, match="is a directory"):
        write_packets(tmp_path / "d", [example_packet()], overwrite=True)
    assert (tmp_path / "d").is_dir() and leftovers(tmp_path) == []


@POSIX
def test_a_pipe_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_packets(fifo, [example_packet()])  # no --force needed: nothing is replaced
    reader.join(10)
    assert got and got[0].startswith(b'{"created_at"') and fifo.exists() and leftovers(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_device_gives_a_one_line_error_and_stays_a_device() -> None:
    with pytest.raises(OSError, match=r"^/dev/full: cannot be written \(No space left on device\)$"):
        write_packets("/dev/full", [example_packet()])
    assert not Path("/dev/full").is_file()


def test_a_failed_rename_leaves_no_temp_file(tmp_path: Path, monkeypatch) -> None:
    def refuse(src: str, dst: object) -> None:
        raise PermissionError(13, "Permission denied")

    fh, commit = open_output(tmp_path / "out.json")
    fh.write(b"{}")
    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match=r"out.json: cannot be written \(Permission denied\)"):
        commit(True)
    assert list(tmp_path.iterdir()) == []


def test_schema_output_errors_are_one_line(capsys, tmp_path: Path) -> None:
    assert main(["schema", "-o", str(tmp_path / "new" / "dir" / "s.json")]) == 0
    assert (tmp_path / "new" / "dir" / "s.json").read_text().startswith("{")
    assert main(["schema", "-o", str(tmp_path / "new" / "dir" / "s.json")]) == 1
    (tmp_path / "file").write_text("x")
    assert main(["schema", "-o", str(tmp_path / "file" / "s.json")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 2 and "refusing to overwrite" in err
    assert "file/s.json: cannot be written" in err and (tmp_path / "file").read_text() == "x"


@POSIX
@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="needs /dev/stdout")
@pytest.mark.parametrize("command", ["id", "export"])
def test_dev_stdout_redirected_to_a_file_is_appended_to_not_replaced(tmp_path: Path, command: str) -> None:
    """`-o /dev/stdout` with stdout sent to a regular file (`>> log`) writes through the
    open descriptor: what the file held stays, and several packets are JSONL whatever the
    name says. Writing the file through a temp file and a rename lost its content."""
    import json
    import subprocess

    src = tmp_path / "in.jsonl"
    one = example_packet()
    two = one.model_copy(update={"created_at": "2025-01-01T00:00:00Z"})
    packets = [one.with_id(), two.with_id()]
    write_packets(src, packets)
    target = src
    if command == "export":
        target = tmp_path / "arch"
        subprocess.run(
            [sys.executable, "-m", "kernel_evidence", "archive", str(src), "--to", str(target)],
            check=True,
            capture_output=True,
        )
    log = tmp_path / "log"
    log.write_bytes(b"kept\n")
    argv = [sys.executable, "-m", "kernel_evidence", command, str(target), "-o", "/dev/stdout", "--force"]
    with open(log, "ab") as out:
        r = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, check=False)
    assert r.returncode == 0, r.stderr
    lines = log.read_bytes().splitlines()
    assert lines[0] == b"kept"
    docs = [json.loads(line) for line in lines[1:] if line.startswith(b"{")]
    assert sorted(d["packet_id"] for d in docs) == sorted(p.packet_id for p in packets)
