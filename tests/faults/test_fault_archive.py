"""Fault suite: the archive under crashes, full disks, concurrent writers and damage.

Also held elsewhere (``tests/archive/test_errors.py``): a full disk mid-write and a
permission error while renaming roll back, a SIGKILL after the first row group, a corrupt
Parquet file is named, a newer layout is refused, the validator process dying.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from _faults import GOOD, packet, run, write

from kernel_evidence.archive import (
    ARCHIVE_LAYOUT_VERSION,
    archive_packets,
    export_packets,
    open_archive,
    read_table,
)
from kernel_evidence.errors import ArchiveError
from kernel_evidence.models import EvidencePacket

_CURRENT = "{}.{}".format(*ARCHIVE_LAYOUT_VERSION)
VENDORS = [
    ("nvidia", "NVIDIA H100 80GB HBM3", "sm_90a", "cuBLASLt", "12.4.5"),
    ("amd", "AMD Instinct MI300X", "gfx942", "hipBLASLt", "0.10.0"),  # (a version of its own: KE210)
]


def _packets(first: int, n: int) -> bytes:
    """JSONL of ``n`` distinct valid packets over four partitions (two vendors, two months)."""
    lines = []
    for i in range(first, first + n):
        vendor, device, arch, library, version = VENDORS[i % 2]
        d = json.loads(GOOD)
        d.pop("packet_id")
        d["subject"]["name"] = f"kernel_{i}"
        d["hardware"].update(vendor=vendor, device=device, arch=arch)
        d["timing"]["baseline"].update(provider=library, version=version)
        d["created_at"] = f"2026-{'10' if i % 4 < 2 else '11'}-01T12:00:00Z"
        lines.append(EvidencePacket.model_validate(d).with_id().to_json())
    return b"\n".join(lines) + b"\n"


@pytest.fixture
def old(tmp_path: Path) -> Path:
    """An archive of 40 packets in four partitions."""
    src = write(tmp_path / "old.jsonl", _packets(0, 40))
    summary = archive_packets([src], tmp_path / "arch")
    assert summary.added == 40, [r.line() for r in summary.refused]
    assert len(summary.files) == 4
    return tmp_path / "arch"


def _ids(root: Path) -> set[str]:
    return set(read_table(root, ["packet_id"]).column(0).to_pylist())


# -- kill -9 at several points of a run ------------------------------------------------------

#: where the child kills itself: (the call it patches, which call, done before dying)
POINTS = {
    "first-row-group": "write",
    "first-rename": "rename:1",
    "last-rename": "rename:4",
    "commit-list-written": "commit",
}


def _kill_at(point: str, src: str, root: Path) -> subprocess.CompletedProcess[bytes]:
    script = textwrap.dedent(
        f"""
        import os, signal
        from kernel_evidence.archive import writer
        point = {point!r}
        def die():
            os.kill(os.getpid(), signal.SIGKILL)
        if point == "write":
            real_write = writer._PartFile.write
            def write(self, table):
                real_write(self, table)
                self._buf.flush()
                die()
            writer._PartFile.write = write
        else:
            real_replace = os.replace
            seen = [0]
            def replace(a, b):
                real_replace(a, b)
                name = os.fspath(b)
                if name.endswith(".parquet"):
                    seen[0] += 1
                    if point == "rename:" + str(seen[0]):
                        die()
                if point == "commit" and name.endswith("_kevidence_commits.json") and seen[0]:
                    die()
            os.replace = replace
        writer.archive_packets([{src!r}], {str(root)!r}, parallel=False)
        """
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, check=False)


@pytest.mark.parametrize("point", sorted(POINTS))
def test_a_killed_run_shows_all_of_itself_or_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, old: Path, point: str
) -> None:
    before = _ids(old)
    new = write(tmp_path / "new.jsonl", _packets(100, 40))
    done = _kill_at(POINTS[point], new, old)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    after = _ids(old)
    # the run is visible whole (killed after its commit) or not at all
    assert after == before or (after > before and len(after) == 80), (len(before), len(after))
    assert (after == before) == (point != "commit-list-written")
    assert open_archive(old).count_rows() == len(after)
    # the next run removes what the killed one left and adds what is missing
    if point != "commit-list-written":
        code, _, err = run(capsys, "archive", new, "--to", str(old))
        assert code == 0 and "kevidence: note: removed " in err and "an interrupted run had left" in err
    summary = archive_packets([new], old)
    assert summary.added + summary.duplicates == 40 and len(_ids(old)) == 80
    assert not list(old.rglob(".*.tmp")) and not (old / "_kevidence_pending.json").exists()
    on_disk = {p.relative_to(old).as_posix() for p in old.rglob("*.parquet")}
    assert on_disk == set(json.loads((old / "_kevidence_commits.json").read_text())["files"])


def test_an_archive_without_a_commit_list_is_read_whole_and_upgraded(tmp_path: Path, old: Path) -> None:
    # as layout 1.0 wrote it: no commit list, the marker at 1.0
    (old / "_kevidence_commits.json").unlink()
    marker = old / "_kevidence_archive.json"
    meta = json.loads(marker.read_text())
    marker.write_text(json.dumps({**meta, "layout_version": "1.0"}, indent=2) + "\n")
    assert len(_ids(old)) == 40
    archive_packets([write(tmp_path / "n.jsonl", _packets(200, 8))], old)
    assert len(_ids(old)) == 48
    assert json.loads(marker.read_text())["layout_version"] == _CURRENT
    assert len(json.loads((old / "_kevidence_commits.json").read_text())["files"]) == len(
        list(old.rglob("*.parquet"))
    )


def test_files_no_commit_names_are_not_removed_unless_a_killed_run_named_them(
    tmp_path: Path, old: Path
) -> None:
    # a file put there by hand is not read, and not removed either
    stray = old / "vendor=amd" / "month=2026-10" / "part-20260101T000000-0123456789abcdef.parquet"
    stray.write_bytes((next(old.rglob("*.parquet"))).read_bytes())
    archive_packets([write(tmp_path / "n.jsonl", _packets(300, 4))], old)
    assert stray.exists() and len(_ids(old)) == 44


# -- concurrent writers ---------------------------------------------------------------------


def test_two_concurrent_writers_take_turns(tmp_path: Path, old: Path) -> None:
    a = write(tmp_path / "a.jsonl", _packets(400, 60))
    b = write(tmp_path / "b.jsonl", _packets(430, 60))  # 30 packets in common with a
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "kernel_evidence", "archive", src, "--to", str(old)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for src in (a, b)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert len(_ids(old)) == 40 + 90  # every packet once
    assert read_table(old, ["packet_id"]).num_rows == 130


# -- damaged and read-only archives --------------------------------------------------------


def test_a_corrupt_parquet_footer_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, old: Path
) -> None:
    victim = sorted(old.rglob("*.parquet"))[0]
    data = victim.read_bytes()
    victim.write_bytes(data[:-12] + b"\x00" * 12)  # footer length and magic destroyed
    for args in (
        ["export", str(old), "-o", str(tmp_path / "o.jsonl")],
        ["report", str(old), "-o", str(tmp_path / "r.html")],
        ["archive", write(tmp_path / "n.jsonl", _packets(500, 4)), "--to", str(old)],
    ):
        code, out, err = run(capsys, *args)
        assert code == 1 and err.startswith("kevidence: error: ") and str(victim) in err, (args, err)
        assert len(err.splitlines()) == 1
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "r.html").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_archive_for_real(capsys: pytest.CaptureFixture[str], tmp_path: Path, old: Path) -> None:
    for p in [old, *old.rglob("*")]:
        if p.is_dir():
            p.chmod(0o555)
    try:
        code, _, err = run(capsys, "archive", write(tmp_path / "n.jsonl", _packets(600, 4)), "--to", str(old))
    finally:
        for p in [old, *old.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)
    assert code == 1 and "Permission denied" in err


def test_a_read_only_archive_is_read_and_refuses_writes_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, old: Path
) -> None:
    before = {p: p.read_bytes() for p in old.rglob("*") if p.is_file()}
    real_open = os.open

    def read_only(path: object, flags: int, *args: object, **kw: object) -> int:
        inside = os.path.abspath(os.fspath(path)).startswith(str(old))  # type: ignore[arg-type]
        if inside and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))  # type: ignore[arg-type]
        return real_open(path, flags, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", read_only)
    code, _, err = run(capsys, "archive", write(tmp_path / "n.jsonl", _packets(700, 4)), "--to", str(old))
    assert code == 1 and "Read-only file system" in err and len(err.splitlines()) == 1
    code, _, err = run(capsys, "export", str(old), "-o", str(tmp_path / "o.jsonl"))
    assert code == 0, err
    monkeypatch.undo()
    assert {p: p.read_bytes() for p in old.rglob("*") if p.is_file()} == before


# -- full disk on export, and what refusal lines show ----------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on an 8 KiB tmpfs (needs the right to mount: root)."""
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(small)], capture_output=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        yield small
    finally:
        if subprocess.run(["umount", str(small)], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "-l", str(small)], capture_output=True, check=False)


def test_export_on_a_full_disk_names_the_output(
    capsys: pytest.CaptureFixture[str], small_disk: Path, old: Path
) -> None:
    out = small_disk / "o.jsonl"
    code, _, err = run(capsys, "export", str(old), "-o", str(out))
    assert code == 1
    assert err == f"kevidence: error: {out}: cannot be written (No space left on device)\n"
    assert list(small_disk.iterdir()) == []  # no temporary file left


def test_archive_on_a_full_disk_is_one_line_and_adds_nothing(
    capsys: pytest.CaptureFixture[str], small_disk: Path, tmp_path: Path
) -> None:
    src = write(tmp_path / "n.jsonl", _packets(800, 40))
    code, out, err = run(capsys, "archive", src, "--to", str(small_disk / "arch"))
    assert code == 1 and out == ""
    assert err == (
        f"kevidence: error: {small_disk / 'arch'}: could not write the archive: "
        "No space left on device; nothing was added\n"
    )
    assert list(small_disk.iterdir()) == []  # the new archive is removed whole


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_export_to_a_full_device_names_it(capsys: pytest.CaptureFixture[str], old: Path) -> None:
    code, _, err = run(capsys, "export", str(old), "-o", "/dev/full")
    assert code == 1
    assert err == "kevidence: error: /dev/full: cannot be written (No space left on device)\n"


def test_export_api_on_a_full_disk_names_the_output(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, old: Path
) -> None:
    out = tmp_path / "o.jsonl.zst"

    class Full:
        def __init__(self, *a: object, **k: object) -> None:
            pass

        def stream_writer(self, fh: object, closefd: bool = True) -> object:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("kernel_evidence.archive.reader.zstandard.ZstdCompressor", Full)
    with pytest.raises(OSError, match=rf"^{out}: cannot be written \(No space left on device\)$"):
        export_packets(old, out)
    assert not out.exists()


def test_escape_bytes_in_refusal_lines_are_shown_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    d = json.loads(packet(1))
    d["subject"]["name"] = "\x1b]0;owned\x07\x1b[31mred"
    d["packet_id"] = "sha256:" + "0" * 64  # forged: refused, quoting the content
    d["status"] = "\x1b[2Jcleared"
    src = write(tmp_path / "evil\x1b[1m.jsonl", json.dumps(d).encode() + b"\n")
    code, out, err = run(capsys, "archive", src, "--to", str(tmp_path / "arch"))
    assert code == 1 and "refused: " in err
    assert "\x1b" not in out + err and "\\x1b" in err
    assert all(line.startswith(("refused: ", "kevidence: ")) for line in err.splitlines())


def test_a_broken_commit_list_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, old: Path
) -> None:
    (old / "_kevidence_commits.json").write_text('{"files": ["../../etc/passwd"]}')
    with pytest.raises(ArchiveError, match="is not a data file of the archive"):
        open_archive(old)
    (old / "_kevidence_commits.json").write_text("{not json")
    code, _, err = run(capsys, "export", str(old), "-o", str(tmp_path / "o.jsonl"))
    assert code == 1 and "unreadable list of archive files" in err and len(err.splitlines()) == 1
