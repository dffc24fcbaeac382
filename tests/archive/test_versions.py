"""Schema versions in the archive: an archive holding 0.1 packets (as kernel-evidence 0.1
wrote it) accepts 0.2 ones and reads both back; 0.1 packets archived now are kept in their
0.2 form, under the id of that form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_evidence import validate
from kernel_evidence._codec.migrate import migrate_packet
from kernel_evidence.archive import _worker, archive_packets, iter_packets, read_table

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "examples" / "packets" / "v0.1" / "valid"
NEW = ROOT / "examples" / "packets" / "valid"


def _pre_02_archive(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An archive as kernel-evidence 0.1 wrote it: the packets' 0.1 bytes under their 0.1 ids
    (the writer's reference path keeps the bytes it is given)."""
    real = _worker.decode_checked

    def before_migration(raw: bytes, **kw: bool) -> object:
        one = real(raw, **kw)
        return None if one is not None and one.migrated else one

    with monkeypatch.context() as m:
        m.setattr(_worker, "decode_checked", before_migration)
        summary = archive_packets([OLD], root)
    assert summary.added == len(list(OLD.glob("*.json"))) and summary.refused_count == 0


def _rows(root: Path) -> dict[str, str]:
    table = read_table(root, columns=["packet_id", "schema_version"]).to_pylist()
    return {r["packet_id"]: r["schema_version"] for r in table}


def test_an_archive_of_01_packets_accepts_02_ones_and_reads_both_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "a"
    _pre_02_archive(root, monkeypatch)
    olds = {json.loads(p.read_bytes())["packet_id"]: p for p in OLD.glob("*.json")}
    assert _rows(root) == dict.fromkeys(olds, "0.1")

    summary = archive_packets([NEW], root)
    assert summary.refused_count == 0 and summary.added == len(list(NEW.glob("*.json")))
    news = {json.loads(p.read_bytes())["packet_id"] for p in NEW.glob("*.json")}
    assert _rows(root) == {**dict.fromkeys(olds, "0.1"), **dict.fromkeys(news, "0.2")}

    back = list(iter_packets(root))
    assert len(back) == len(olds) + len(news)
    versions = sorted(json.loads(raw)["schema_version"] for raw in back)
    assert versions == ["0.1"] * len(olds) + ["0.2"] * len(news)
    for raw in back:
        report = validate(raw)
        assert report.ok, (report.packet_id, [f.message for f in report.findings])
        # a 0.1 packet read back is migrated: it carries the id of its 0.2 form
        data = json.loads(raw)
        want = migrate_packet(data)["packet_id"]
        assert report.packet_id == want
        assert want in news  # the current examples are the 0.2 forms of the 0.1 ones


def test_01_packets_archived_now_are_kept_in_their_02_form(tmp_path: Path) -> None:
    root = tmp_path / "a"
    summary = archive_packets([OLD], root)
    assert summary.refused_count == 0
    news = {json.loads(p.read_bytes())["packet_id"] for p in NEW.glob("*.json")}
    assert _rows(root) == dict.fromkeys(news, "0.2")
    for raw in iter_packets(root):
        assert json.loads(raw)["schema_version"] == "0.2" and validate(raw).ok
    # the same runs in their 0.2 form are the same packets
    again = archive_packets([NEW], root)
    assert again.added == 0 and again.duplicates == len(news)
