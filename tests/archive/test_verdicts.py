"""Verdicts beside an archive: appended, validated, filtered; the packets never rewritten."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import kernel_evidence as ke
from kernel_evidence.archive import iter_packets
from kernel_evidence.archive.verdicts import (
    VERDICTS,
    Verdict,
    VerdictError,
    add_verdict,
    current_verdicts,
    iter_verdicts,
    packet_ids_with,
    verdicts_by_packet,
    verdicts_path,
)
from kernel_evidence.cli import main
from kernel_evidence.errors import ArchiveError

AT = "2026-11-27T10:00:00Z"


def _ids(root: Path) -> list[str]:
    return [json.loads(b)["packet_id"] for b in iter_packets(root)]


def _digest(root: Path) -> dict[str, str]:
    """sha256 of every archive file except the verdicts (what verdicts must never change)."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            if "_verdicts" not in p.parts:
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def test_round_trip_through_an_archive(archive: Path) -> None:
    ids = _ids(archive)
    before = _digest(archive)
    a, b, c = ids[0], ids[1], ids[2]
    add_verdict(archive, a, "hacked", by="alice", why="output cached by input pointer", at=AT)
    add_verdict(archive, b, "reproduced", by="bob", why="rerun on the same H100", evidence=c, at=AT)
    add_verdict(
        archive,
        a,
        "confirmed",
        by="carol",
        why="re-checked: the cache was the harness's",
        at="2026-11-28T09:30:00Z",
    )

    got = list(iter_verdicts(archive))
    assert [(v.packet_id, v.verdict, v.by) for v in got] == [
        (a, "hacked", "alice"),
        (b, "reproduced", "bob"),
        (a, "confirmed", "carol"),
    ]
    assert got[1].evidence == c and got[1].at == AT
    assert [v.verdict for v in verdicts_by_packet(archive)[a]] == ["hacked", "confirmed"]
    assert current_verdicts(archive)[a].verdict == "confirmed"
    # the latest verdict decides the filter; any verdict when asked
    assert packet_ids_with(archive, "hacked") == set()
    assert packet_ids_with(archive, "hacked", latest=False) == {a}
    assert packet_ids_with(archive, ["reproduced", "confirmed"]) == {a, b}
    # the archive's reader filters by verdict
    assert _ids_of(iter_packets(archive, verdict="reproduced")) == [b]
    assert sorted(_ids_of(iter_packets(archive, verdict=("confirmed", "reproduced")))) == sorted([a, b])
    status = next(json.loads(x)["status"] for x in iter_packets(archive) if json.loads(x)["packet_id"] == b)
    assert _ids_of(iter_packets(archive, [f"status={status}"], verdict="reproduced")) == [b]
    assert _ids_of(iter_packets(archive, [f"status!={status}"], verdict="reproduced")) == []
    # nothing of the archive itself changed
    assert _digest(archive) == before
    lines = verdicts_path(archive).read_bytes().splitlines()
    assert len(lines) == 3 and json.loads(lines[0]) == {
        "record_version": 1, "packet_id": a, "verdict": "hacked", "by": "alice", "at": AT,
        "why": "output cached by input pointer",
    }  # fmt: skip


def _ids_of(blobs: object) -> list[str]:
    return [json.loads(b)["packet_id"] for b in blobs]  # type: ignore[attr-defined]


def test_a_verdict_is_checked_before_it_is_written(archive: Path) -> None:
    pid = _ids(archive)[0]
    with pytest.raises(
        VerdictError,
        match="`verdict` must be one of confirmed, reproduced, drifted, hacked, retracted, got 'fishy'",
    ):
        add_verdict(archive, pid, "fishy", by="x", why="y")
    with pytest.raises(
        VerdictError, match="a `drifted` verdict rests on a rerun: give the rerun's packet id as `evidence`"
    ):
        add_verdict(archive, pid, "drifted", by="x", why="slower now")
    with pytest.raises(VerdictError, match="`by` must name who"):
        add_verdict(archive, pid, "hacked", by="  ", why="y")
    with pytest.raises(VerdictError, match="`at` must be an RFC 3339 UTC time"):
        add_verdict(archive, pid, "hacked", by="x", why="y", at="2026-02-30T00:00:00Z")
    with pytest.raises(VerdictError, match="`evidence` is the packet itself"):
        add_verdict(archive, pid, "reproduced", by="x", why="y", evidence=pid)
    with pytest.raises(VerdictError, match="`packet_id` must be a packet id"):
        add_verdict(archive, "abc", "hacked", by="x", why="y")
    other = "sha256:" + "0" * 64
    with pytest.raises(VerdictError, match="not in the archive"):
        add_verdict(archive, other, "hacked", by="x", why="y")
    assert add_verdict(archive, other, "hacked", by="x", why="y", require_archived=False).packet_id == other
    assert len(list(iter_verdicts(archive))) == 1


def test_not_an_archive(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="not a kevidence archive"):
        add_verdict(tmp_path, "sha256:" + "a" * 64, "hacked", by="x", why="y")
    assert list(iter_verdicts(tmp_path)) == []


def test_torn_last_line_is_left_out_then_cut(archive: Path) -> None:
    pid = _ids(archive)[0]
    add_verdict(archive, pid, "hacked", by="a", why="first", at=AT)
    path = verdicts_path(archive)
    with open(path, "ab") as fh:
        fh.write(b'{"record_version":1,"packet_id":"sha2')  # a crash inside a write
    assert [v.why for v in iter_verdicts(archive)] == ["first"]
    add_verdict(archive, pid, "confirmed", by="b", why="second", at=AT)
    assert [v.why for v in iter_verdicts(archive)] == ["first", "second"]
    assert path.read_bytes().count(b"\n") == 2 and b'sha2"' not in path.read_bytes()


def test_a_damaged_record_is_named(archive: Path) -> None:
    pid = _ids(archive)[0]
    add_verdict(archive, pid, "hacked", by="a", why="first", at=AT)
    path = verdicts_path(archive)
    with open(path, "ab") as fh:
        fh.write(
            json.dumps({"packet_id": pid, "verdict": "pwned", "by": "a", "at": AT, "why": "w"}).encode()
            + b"\n"
        )
    with pytest.raises(ArchiveError, match=r"verdicts\.jsonl:2: `verdict` must be one of"):
        list(iter_verdicts(archive))
    path.write_bytes(b"[1, 2]\n")
    with pytest.raises(ArchiveError, match=r"verdicts\.jsonl:1: expected a JSON object, got list"):
        list(iter_verdicts(archive))


def test_record_version_from_the_future() -> None:
    data = {
        "record_version": 2,
        "packet_id": "sha256:" + "a" * 64,
        "verdict": "hacked",
        "by": "a",
        "at": AT,
        "why": "w",
    }
    with pytest.raises(VerdictError, match="record_version 2 is newer than this version reads"):
        Verdict.parse(data, "x")
    data["record_version"] = 1
    data["extra"] = 1
    with pytest.raises(VerdictError, match="unknown field `extra`"):
        Verdict.parse(data, "x")


def test_cli_add_and_list(archive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _ids(archive)[:2]
    assert main(["verdict", "add", str(archive), a, "hacked", "--by", "alice", "--why", "cached"]) == 0
    assert (
        main(
            [
                "verdict",
                "add",
                str(archive),
                b,
                "drifted",
                "--by",
                "bob",
                "--why",
                "2x slower",
                "--evidence",
                a,
                "--at",
                AT,
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["verdict", "list", str(archive), "--verdict", "drifted", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows == [
        {
            "record_version": 1,
            "packet_id": b,
            "verdict": "drifted",
            "by": "bob",
            "at": AT,
            "why": "2x slower",
            "evidence": a,
        }
    ]
    assert main(["verdict", "list", str(archive)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and out[0].endswith(f"{a}  hacked      by alice: cached")
    # usage errors: 2; a missing archive: 1; never a traceback
    assert main(["verdict", "add", str(archive), a, "odd", "--by", "x", "--why", "y"]) == 2
    assert "kevidence: error: verdict: `verdict` must be one of" in capsys.readouterr().err
    assert main(["verdict", "list", str(archive), "--verdict", "odd"]) == 2
    assert main(["verdict", "list", str(archive / "nope")]) == 1
    assert "no such archive directory" in capsys.readouterr().err


def test_every_verdict_name_is_accepted(archive: Path) -> None:
    ids = _ids(archive)
    for pid, name in zip(ids, VERDICTS, strict=False):
        add_verdict(archive, pid, name, by="x", why="y", evidence=ids[-1], at=AT)
    assert sorted(v.verdict for v in iter_verdicts(archive)) == sorted(VERDICTS)
    assert ke.archive.verdicts.VERDICTS == VERDICTS
