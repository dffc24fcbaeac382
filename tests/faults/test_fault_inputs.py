"""Fault suite: hostile or damaged packet inputs, for every command that reads packets.

Each class gets one line naming the file and the place, exit code 1, no traceback, and the
rest of the input still read. Classes that `validate` alone was tested for elsewhere
(``tests/core/test_cli.py::test_bad_input_gets_one_line_and_exit_one``: truncated, NaN,
duplicate keys, deep nesting, non-UTF-8, empty; ``test_zstd_bomb_is_capped``;
``test_corrupt_zstd``) are extended here to ``id`` and ``archive``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import zstandard
from _faults import GOOD, child, one_line_each, packet, run, write

BAD = {
    "empty": b"",
    "truncated": GOOD[: len(GOOD) // 2],
    "nan": GOOD.replace(b'"median":180.0', b'"median":NaN'),
    "duplicate-key": GOOD.replace(b'"status":"passed"', b'"status":"passed","status":"failed"'),
    "deep": GOOD[:-1] + b',"extensions":{"urn:x:y":{"a":' + b"[" * 50000 + b"]" * 50000 + b"}}}",
    "not-utf8": GOOD.replace(b'"name":"gemm_bf16_4096"', b'"name":"\xff\xfe"'),
    "bom": b"\xef\xbb\xbf" + GOOD,
}


@pytest.mark.parametrize("kind", sorted(BAD))
@pytest.mark.parametrize("command", ["validate", "id", "archive"])
def test_each_bad_document_is_one_line_and_the_rest_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, command: str
) -> None:
    bad = write(tmp_path / "in" / "a_bad.json", BAD[kind])
    write(tmp_path / "in" / "b_good.json", packet(1))
    args = [command, str(tmp_path / "in")]
    if command == "archive":
        args += ["--to", str(tmp_path / "arch")]
    code, out, err = run(capsys, *args)
    assert code == 1
    named = [ln for ln in one_line_each(out + err) if bad in ln]
    assert len(named) == 1, out + err
    if command == "validate":
        assert "2 packet(s) in 2 file(s): 1 valid, 1 invalid" in out
    elif command == "archive":
        assert "1 added" in out and "1 refused" in out
    else:
        assert out.count("sha256:") == 1


def test_a_byte_order_mark_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path / "bom.json", BAD["bom"])
    code, out, _ = run(capsys, "validate", path)
    assert code == 1
    assert "starts with a UTF-8 byte order mark" in out


@pytest.mark.parametrize("command", ["id", "archive"])
def test_a_zstd_bomb_is_capped(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    bomb = zstandard.ZstdCompressor(level=19).compress(b" " * (64 << 20))
    path = write(tmp_path / "bomb.jsonl.zst", bomb)
    args = [command, path] + (["--to", str(tmp_path / "arch")] if command == "archive" else [])
    if command == "archive":
        args += ["--max-decompressed-bytes", "1000000"]
        code, out, err = run(capsys, *args)
        assert code == 1 and "decompresses to more than 1000000 bytes" in err
    else:
        # id has no cap option: the default (8 GiB) is never reached by 64 MiB of blanks
        code, out, err = run(capsys, *args)
        assert code == 1 and "empty input" in err
    one_line_each(out + err)


def test_one_bad_line_in_100000_is_the_one_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    lines = [GOOD] * 100_000
    lines[73_210] = GOOD[:-2]  # line 73,211 is cut short
    path = write(tmp_path / "big.jsonl.zst", zstandard.ZstdCompressor(level=1).compress(b"\n".join(lines)))
    code, out, _ = run(capsys, "validate", "--quiet", path)
    assert code == 1 and "100000 packet(s) in 1 file(s): 99999 valid, 1 invalid" in out
    code, out, _ = run(capsys, "validate", path)
    bad = [ln for ln in out.splitlines() if "KE0" in ln]
    assert len(bad) == 1 and bad[0].startswith(f"{path}:line 73211: KE001 error: JSON truncated")


# -- zstd: bytes after a valid frame -------------------------------------------------------


def _damaged_stream(tmp_path: Path) -> tuple[str, int]:
    frame = zstandard.ZstdCompressor().compress(b"\n".join(packet(i) for i in range(3)) + b"\n")
    return write(tmp_path / "run.jsonl.zst", frame + b"not a zstd frame at all"), len(frame)


def test_zstd_bytes_after_a_frame_keep_every_record_and_name_the_offset(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, offset = _damaged_stream(tmp_path)
    code, out, _ = run(capsys, "validate", path)
    assert code == 1
    assert "4 packet(s) in 1 file(s): 3 valid, 1 invalid" in out
    assert f"{path}:line 4: KE000 error: zstd stream damaged at byte {offset} of the compressed file" in out


def test_zstd_damage_in_a_single_document_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    frame = zstandard.ZstdCompressor().compress(GOOD)
    path = write(tmp_path / "one.json.zst", frame + b"\x00" * 9)
    code, out, _ = run(capsys, "validate", path)
    # the document decompressed before the damage is checked too
    assert code == 1 and f"zstd stream damaged at byte {len(frame)}" in out
    assert "2 packet(s) in 1 file(s): 1 valid, 1 invalid" in out


@pytest.mark.parametrize("command", ["id", "archive"])
def test_zstd_damage_keeps_the_records_before_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    path, offset = _damaged_stream(tmp_path)
    args = [command, path] + (["--to", str(tmp_path / "arch")] if command == "archive" else [])
    code, out, err = run(capsys, *args)
    assert code == 1
    assert f"{path}:line 4" in err and f"damaged at byte {offset}" in err
    assert ("3 added" in out) if command == "archive" else (out.count("sha256:") == 3)


# -- JSON arrays -------------------------------------------------------------------------


def test_every_bad_item_of_an_array_is_reported_and_counted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    items = [packet(0), b'{"bad": 1}', packet(2), b'{"bad": 2}', b"[1]"]
    path = write(tmp_path / "arr.json", b"[" + b",\n".join(items) + b"]")
    code, out, _ = run(capsys, "validate", path)
    assert code == 1
    assert "5 packet(s) in 1 file(s): 2 valid, 3 invalid" in out
    for i in (1, 3, 4):
        assert f"{path}:item {i}: KE0" in out
    assert f"{path}:item 4: KE000 error: expected a JSON object (a packet), got an array" in out


def test_items_of_an_array_on_a_jsonl_line_are_reported_and_counted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    line = b"[" + packet(0) + b', {"bad": 1}, ' + packet(2) + b', {"bad": 2}]'
    path = write(tmp_path / "a.jsonl", packet(9) + b"\n" + line + b"\n")
    code, out, _ = run(capsys, "validate", path)
    assert code == 1 and "5 packet(s) in 1 file(s): 3 valid, 2 invalid" in out
    assert f"{path}:line 2, item 1: KE001" in out and f"{path}:line 2, item 3: KE001" in out


# -- unreadable files and directories -----------------------------------------------------


def _deny(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    """Listing ``denied`` fails as it does for a user without permission (tests may run as
    root, for whom a mode of 000 blocks nothing)."""
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if os.path.abspath(os.fspath(path)) == str(denied):  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", os.fspath(path))  # type: ignore[arg-type]
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)


def _tree(tmp_path: Path) -> Path:
    top = tmp_path / "in"
    write(top / "a.json", packet(1))
    write(top / "locked" / "b.json", packet(2))
    write(top / "z" / "c.json", packet(3))
    return top


@pytest.mark.parametrize("command", ["validate", "id", "archive"])
def test_an_unreadable_subdirectory_is_a_finding_and_the_rest_is_checked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: str
) -> None:
    top = _tree(tmp_path)
    _deny(monkeypatch, top / "locked")
    args = [command, str(top)] + (["--to", str(tmp_path / "arch")] if command == "archive" else [])
    code, out, err = run(capsys, *args)
    assert code == 1
    lines = [ln for ln in one_line_each(out + err) if "locked" in ln]
    assert len(lines) == 1 and "directory cannot be listed (Permission denied)" in lines[0]
    if command == "validate":
        assert "3 packet(s) in 3 file(s): 2 valid, 1 invalid" in out
    elif command == "archive":
        assert "2 added" in out and "1 refused" in out
    else:
        assert out.count("sha256:") == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a directory of mode 000")
def test_an_unreadable_subdirectory_for_real(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    top = _tree(tmp_path)
    os.chmod(top / "locked", 0)
    try:
        code, out, _ = run(capsys, "validate", str(top))
    finally:
        os.chmod(top / "locked", 0o755)
    assert code == 1 and "directory cannot be listed" in out


def test_an_unreadable_file_is_a_finding(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    top = _tree(tmp_path)
    denied = str(top / "a.json")
    real_open = open

    def fake_open(file: object, *args: object, **kw: object) -> object:
        if file == denied:
            raise PermissionError(13, "Permission denied", denied)
        return real_open(file, *args, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", fake_open)
    code, out, _ = run(capsys, "validate", str(top))
    assert code == 1 and f"{denied}: KE000 error: permission denied" in out
    assert "3 packet(s) in 3 file(s): 2 valid, 1 invalid" in out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("command", ["validate", "id", "archive"])
def test_a_fifo_inside_a_directory_is_not_waited_on(tmp_path: Path, command: str) -> None:
    top = tmp_path / "in"
    write(top / "a.json", packet(1))
    os.mkfifo(top / "pipe.json")  # nobody ever writes to it
    args = [command, str(top)] + (["--to", str(tmp_path / "arch")] if command == "archive" else [])
    done = child(*args, timeout=30)
    assert done.returncode == 0, done.stderr
    one_line_each(done.stdout + done.stderr)


# -- symbolic link loops -------------------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "id", "replay", "compare"])
def test_a_symlink_loop_on_the_command_line_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    good = write(tmp_path / "good.json", packet(1))
    args = [command, str(loop)] + ([good] if command in ("validate", "compare", "id") else [])
    code, out, err = run(capsys, *args)
    assert code == 1
    lines = [ln for ln in one_line_each(out + err) if "loop.json" in ln]
    assert len(lines) == 1 and "a loop of symbolic links" in lines[0]
    if command == "validate":
        assert "1 valid, 1 invalid" in out


def test_a_symlink_loop_does_not_abort_an_archive_batch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    good = write(tmp_path / "good.json", packet(1))
    code, out, err = run(capsys, "archive", str(loop), good, "--to", str(tmp_path / "arch"))
    assert code == 1
    assert f"refused: {loop}: cannot be opened: a loop of symbolic links" in err
    assert "1 added, 0 already present, 1 refused" in out
