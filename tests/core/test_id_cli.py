"""`kevidence id` on hostile input: repeated keys, documents that are not objects, and floods
of bad lines (one line each, naming file, line and item; at most 1,000 of them)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from kernel_evidence.cli import main
from kernel_evidence.strategies import example_packet

GOOD = example_packet().to_json()
PID = example_packet().packet_id
REPEATED = GOOD.replace(b'"status":"passed"', b'"status":"passed","status":"failed"', 1)
NESTED = GOOD.replace(b'"unit":"us"', b'"unit":"us","unit":"ms"', 1)
_DUP = "in one object; a JSON object must not repeat a key"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_fixtures_repeat_keys() -> None:
    assert REPEATED != GOOD and NESTED != GOOD
    assert msgspec.json.decode(REPEATED)["status"] == "failed"  # the last one wins


@pytest.mark.parametrize(("raw", "key"), [(REPEATED, "status"), (NESTED, "unit")])
def test_a_repeated_key_is_refused_like_validate_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], raw: bytes, key: str
) -> None:
    src = tmp_path / "dup.json"
    src.write_bytes(raw)
    out_file = tmp_path / "withid.json"
    code, out, err = run(capsys, "id", str(src), "-o", str(out_file))
    assert (code, out) == (1, "")
    assert err == f"kevidence: error: {src}: duplicate key `{key}` {_DUP}\n"
    assert not out_file.exists()
    code, out, _ = run(capsys, "validate", str(src))
    assert code == 1 and "KE003" in out


def test_lines_and_items_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "mixed.jsonl"
    lines = [GOOD, b"5", b"[" + GOOD + b", " + REPEATED + b', "x", ' + GOOD + b"]", REPEATED, b"[1, null]"]
    src.write_bytes(b"\n".join(lines) + b"\n")
    code, out, err = run(capsys, "id", str(src))
    assert code == 1
    assert out.splitlines() == [f"{PID}  {src}:line {n}" for n in ("1", "3, item 0", "3, item 3")]
    assert err.splitlines() == [
        f"kevidence: error: {src}:line 2: expected a JSON object (a packet), got int",
        f"kevidence: error: {src}:line 3, item 1: duplicate key `status` {_DUP}",
        f"kevidence: error: {src}:line 3, item 2: expected a JSON object (a packet), got str",
        f"kevidence: error: {src}:line 4: duplicate key `status` {_DUP}",
        f"kevidence: error: {src}:line 5, item 0: expected a JSON object (a packet), got int",
        f"kevidence: error: {src}:line 5, item 1: expected a JSON object (a packet), got NoneType",
    ]


def test_items_of_a_json_file_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "array.json"
    src.write_bytes(b"[\n  " + GOOD + b",\n  [],\n  " + NESTED + b"\n]\n")
    code, out, err = run(capsys, "id", str(src))
    assert code == 1 and out == f"{PID}  {src}:item 0\n"
    assert err.splitlines() == [
        f"kevidence: error: {src}:item 1: expected a JSON object (a packet), got an array",
        f"kevidence: error: {src}:item 2: duplicate key `unit` {_DUP}",
    ]


def test_escaped_text_is_not_taken_for_a_repeated_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # \u escapes trip the cheap screen; the exact search then finds no repeated key
    data = json.loads(GOOD)
    data["subject"]["name"] = 'caf\u00e9 "quoted"'
    src = tmp_path / "escaped.json"
    src.write_text(json.dumps(data, ensure_ascii=True))
    assert b"\\u00e9" in src.read_bytes()
    code, out, err = run(capsys, "id", str(src))
    assert (code, err) == (0, "") and out.startswith("sha256:")


def test_error_lines_are_capped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "ints.json"
    src.write_text(json.dumps(list(range(2500))))
    code, out, err = run(capsys, "id", str(src))
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert len(lines) == 1001
    assert lines[0] == f"kevidence: error: {src}:item 0: expected a JSON object (a packet), got int"
    assert lines[999] == f"kevidence: error: {src}:item 999: expected a JSON object (a packet), got int"
    assert lines[1000] == "kevidence: error: ... and 1500 more errors (not listed)"
