"""Where the archive commands write: output names, outputs inside the archive, new archives
that get nothing, and option values (one line, exit 1 or 2, nothing the user had lost)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kernel_evidence.archive import archive_packets
from kernel_evidence.cli import main
from kernel_evidence.io import write_packets

from ._factory import make_packets


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (hidden ones too) and the digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


# -- export: a .json name holds one packet ------------------------------------------------


def test_export_of_several_packets_to_a_json_name_is_refused(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("e.json", "e.json.zst"):
        out = tmp_path / name
        code, _, err = run(["export", str(archive), "-o", str(out)], capsys)
        assert code == 2
        assert err == (
            f"kevidence: error: {out}: 120 packets need a .jsonl (or .jsonl.zst) output name; "
            "a .json file holds one\n"
        )
        assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".e.json")]  # no temp file


def test_export_of_one_packet_to_a_json_name_validates(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = json.loads((tmp_path / "in" / "packets.jsonl").read_bytes().splitlines()[0])
    out = tmp_path / "one.json"
    code, _, _ = run(
        ["export", str(archive), "-o", str(out), "--where", f"packet_id={first['packet_id']}"], capsys
    )
    assert code == 0
    assert json.loads(out.read_bytes())["packet_id"] == first["packet_id"]
    code, _, _ = run(["validate", str(out)], capsys)
    assert code == 0


# -- no output inside the archive being read -------------------------------------------


def test_output_inside_the_archive_is_refused(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    part = sorted(archive.rglob("*.parquet"))[0]
    link = tmp_path / "link"
    link.symlink_to(archive)
    before = snapshot(archive)
    for args in (
        ["export", str(archive), "-o", str(part), "--force"],
        ["export", str(archive), "-o", str(archive / "all.jsonl")],
        ["export", str(archive), "-o", str(link / "all.jsonl")],
        ["report", str(archive), "-o", str(part), "--force"],
        ["report", str(archive), "-o", str(link / "vendor=amd" / "r.html")],
    ):
        code, _, err = run(args, capsys)
        assert code == 2, args
        assert err == (
            f"kevidence: error: {args[3]}: inside the archive {archive} being read; "
            "write the output outside it\n"
        )
    assert snapshot(archive) == before
    code, _, _ = run(["export", str(archive), "-o", str(tmp_path / "all.jsonl")], capsys)
    assert code == 0


# -- report to standard output ------------------------------------------------------------


def test_report_to_stdout(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["report", str(archive), "-o", "-", "--where", "vendor=amd"], capsys)
    assert code == 0
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert err == ""
    assert not (tmp_path / "-").exists()


# -- archive: the directory cannot be made ----------------------------------------------


def test_archive_into_a_directory_that_cannot_be_made(
    tmp_path: Path, packets_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"mine")
    to = blocker / "arch"
    code, out, err = run(["archive", str(packets_file), "--to", str(to)], capsys)
    assert code == 1
    assert out == ""
    assert err.startswith(f"kevidence: error: {to}: could not create the archive: ")
    assert err.count("\n") == 1
    assert blocker.read_bytes() == b"mine"


@pytest.mark.parametrize("option", ["--max-record-bytes", "--max-decompressed-bytes"])
@pytest.mark.parametrize("value", ["-5", "-1", "0"])
def test_size_limits_must_be_positive(
    tmp_path: Path, packets_file: Path, option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    to = tmp_path / "ar"
    code, _, err = run(["archive", str(packets_file), "--to", str(to), option, value], capsys)
    assert code == 2
    assert option in err and "Traceback" not in err
    assert not to.exists()


# -- archive: nothing found, nothing added ----------------------------------------------


def test_archive_of_an_empty_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "emptydir"
    empty.mkdir()
    to = tmp_path / "ar"
    code, out, err = run(["archive", str(empty), "--to", str(to)], capsys)
    assert code == 1
    assert out == ""
    assert err == (
        f"kevidence: error: {empty}: no packets found; expected .json, .jsonl or .ndjson files (zstd: .zst)\n"
    )
    assert not to.exists()


def test_archive_of_an_empty_directory_into_an_archive(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "emptydir"
    empty.mkdir()
    before = snapshot(archive)
    code, _, err = run(["archive", str(empty), "--to", str(archive)], capsys)
    assert code == 1 and "no packets found" in err
    assert snapshot(archive) == before


def test_run_that_adds_nothing_leaves_no_new_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.json"
    new = tmp_path / "new" / "deeper" / "ar"
    code, _, err = run(["archive", str(missing), "--to", str(new)], capsys)
    assert code == 1 and f"refused: {missing}: no such file" in err
    assert not (tmp_path / "new").exists()
    # a directory that existed (empty) stays, empty
    existing = tmp_path / "existing"
    existing.mkdir()
    code, _, _ = run(["archive", str(missing), "--to", str(existing)], capsys)
    assert code == 1
    assert existing.is_dir() and not any(existing.iterdir())
    # every packet invalid: the same
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"not json\n")
    summary = archive_packets([bad], tmp_path / "ar2")
    assert summary.refused_count == 1 and not (tmp_path / "ar2").exists()


def test_run_that_adds_nothing_keeps_an_existing_archive(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(archive)
    code, _, _ = run(["archive", str(tmp_path / "missing.json"), "--to", str(archive)], capsys)
    assert code == 1
    assert snapshot(archive) == before
    # an archive made empty on purpose is kept too
    archive_packets([], tmp_path / "empty")
    assert (tmp_path / "empty" / "_kevidence_archive.json").is_file()
    dup = tmp_path / "dup.jsonl"
    write_packets(dup, make_packets(3, month=10, run="rl-a"))
    archive_packets([dup], tmp_path / "empty")
    code, _, _ = run(["archive", str(dup), "--to", str(tmp_path / "empty")], capsys)
    assert code == 0  # all already present: nothing added, nothing removed
    assert snapshot(tmp_path / "empty") != {}


def test_a_null_packet_id_is_computed_like_a_missing_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernel_evidence.strategies import example_packet

    d = example_packet().to_dict()
    pid = d.pop("packet_id")
    src = tmp_path / "null_id.jsonl"
    src.write_text(json.dumps({**d, "packet_id": None}) + "\n" + json.dumps(d) + "\n")
    code, out, err = run(["archive", str(src), "--to", str(tmp_path / "ar")], capsys)
    assert code == 0 and "Traceback" not in err
    assert "1 added, 1 already present" in out  # both are the same packet, with its content id
    exported = tmp_path / "e.jsonl"
    assert run(["export", str(tmp_path / "ar"), "-o", str(exported)], capsys)[0] == 0
    assert json.loads(exported.read_text())["packet_id"] == pid


def test_refusals_are_listed_up_to_a_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "many.json"
    src.write_text(json.dumps(list(range(1500))))  # a top-level array: 1,500 documents, none a packet
    code, out, err = run(["archive", str(src), "--to", str(tmp_path / "ar")], capsys)
    assert code == 1 and "0 added, 0 already present, 1500 refused" in out
    lines = err.splitlines()
    assert len(lines) == 1001 and lines[-1] == "refused: ... and 500 more (not listed)"
