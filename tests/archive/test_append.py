"""Appending: existing files are never rewritten, known ids are skipped, layout and metadata."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq

from kernel_evidence._codec.canonical import packet_id_for
from kernel_evidence.archive import ARCHIVE_LAYOUT_VERSION, FILE_SCHEMA, archive_packets, read_table
from kernel_evidence.archive import writer as writer_mod
from kernel_evidence.io import write_packets
from kernel_evidence.models import SCHEMA_VERSION

from ._factory import make_packets


def _files(root: Path) -> dict[Path, tuple[int, int, bytes]]:
    return {p: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in root.rglob("*.parquet")}


def test_layout_partitions_and_metadata(archive: Path) -> None:
    marker = json.loads((archive / "_kevidence_archive.json").read_text())
    assert marker["layout_version"] == "{}.{}".format(*ARCHIVE_LAYOUT_VERSION)
    assert marker["partitioning"] == ["vendor", "month"]
    dirs = sorted(str(p.parent.relative_to(archive)) for p in archive.rglob("*.parquet"))
    assert dirs == [
        "vendor=amd/month=2026-10",
        "vendor=amd/month=2026-11",
        "vendor=nvidia/month=2026-10",
        "vendor=nvidia/month=2026-11",
    ]
    for path in archive.rglob("*.parquet"):
        meta = pq.read_metadata(path)
        kv = meta.metadata
        assert kv[b"kevidence.archive_layout_version"] == b"%d.%d" % ARCHIVE_LAYOUT_VERSION
        assert kv[b"kevidence.packet_schema_version"] == SCHEMA_VERSION.encode()
        assert kv[b"kevidence.producer"].startswith(b"kernel-evidence ")
        assert meta.row_group(0).column(0).compression == "ZSTD"
        assert pq.read_schema(path).remove_metadata() == FILE_SCHEMA


def test_append_adds_files_and_skips_known_ids(archive: Path, packets_file: Path, tmp_path: Path) -> None:
    before = _files(archive)
    again = archive_packets([packets_file], archive)
    assert (again.added, again.duplicates, again.files) == (0, 120, [])
    assert _files(archive) == before

    new = tmp_path / "new.jsonl"
    old = make_packets(10, month=10, run="rl-a")  # already archived
    fresh = make_packets(15, month=12, run="rl-z")
    write_packets(new, old + fresh + fresh[:5])  # duplicates inside the input too
    summary = archive_packets([new], archive)
    assert (summary.added, summary.duplicates) == (15, 15)
    after = _files(archive)
    assert {p: after[p] for p in before} == before  # untouched, same inode, same bytes
    assert len(after) == len(before) + len(summary.files)
    ids = read_table(archive, ["packet_id"])["packet_id"].to_pylist()
    assert len(ids) == len(set(ids)) == 135


def test_row_groups_and_file_roll_over(tmp_path: Path, packets_file: Path, monkeypatch) -> None:
    monkeypatch.setattr(writer_mod, "ROW_GROUP_ROWS", 16)
    monkeypatch.setattr(writer_mod, "FILE_ROWS", 40)
    archive_packets([packets_file], tmp_path / "a")
    files = sorted((tmp_path / "a").rglob("*.parquet"))
    # nvidia/2026-10 holds 54 packets: 40 + 14 over two files
    sizes = sorted(pq.read_metadata(p).num_rows for p in files)
    assert sum(sizes) == 120 and max(sizes) <= 48  # a file closes at the first row group past 40
    for p in files:
        md = pq.read_metadata(p)
        assert all(md.row_group(i).num_rows <= 16 for i in range(md.num_row_groups))


def test_interleaved_partitions_still_fill_row_groups(
    tmp_path: Path, packets_file: Path, monkeypatch
) -> None:
    # the input alternates vendors packet by packet; a tiny buffer forces constant spills
    monkeypatch.setattr(writer_mod, "BUFFER_BYTES", 5_000)
    monkeypatch.setattr(writer_mod, "STAGE_ROWS", 3)
    monkeypatch.setattr(writer_mod, "ROW_GROUP_ROWS", 16)
    archive_packets([packets_file], tmp_path / "a")
    for path in (tmp_path / "a").rglob("*.parquet"):
        md = pq.read_metadata(path)
        sizes = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
        assert all(n == 16 for n in sizes[:-1]) and 0 < sizes[-1] <= 16, (path, sizes)
    assert read_table(tmp_path / "a", ["packet_id"]).num_rows == 120
    assert not list((tmp_path / "a").glob(".spill-*"))


def test_typed_columns(archive: Path) -> None:
    t = read_table(archive, None).to_pylist()
    by_status = {r["status"] for r in t}
    assert by_status == {"passed", "failed", "error"}
    passed = next(r for r in t if r["status"] == "passed" and r["device"].startswith("AMD"))
    data = json.loads(passed["packet"])
    stats = data["timing"]["stats"]
    assert stats["unit"] == "us" and passed["median_ns"] == stats["median"] * 1000
    assert passed["baseline_provider"] == "hipBLASLt" and passed["vendor"] == "amd"
    assert passed["speedup"] == data["timing"]["speedup"]["value"]
    assert passed["speedup_low"] < passed["speedup"] < passed["speedup_high"]
    flop = data["task"]["work"]["flops"]["value"]
    peak = data["hardware"]["peak_flop_rate"]["value"] * 1e12
    assert abs(passed["sol_fraction"] - flop / peak / (passed["median_ns"] * 1e-9)) < 1e-9
    assert passed["sol_bound"] == "compute"
    assert passed["created_at"].isoformat().startswith(data["created_at"][:19])
    assert passed["grade"] in "ABCDEF" and passed["valid"] is True
    failed = next(r for r in t if r["status"] == "failed")
    assert failed["failure_class"] and failed["speedup"] is None


def test_hidden_files_are_ignored(archive: Path) -> None:
    leftover = archive / "vendor=amd" / "month=2026-10" / ".part-x.parquet.tmp"
    leftover.write_bytes(b"partial")
    (archive / "_scratch.parquet").write_bytes(b"junk")
    assert read_table(archive, ["packet_id"]).num_rows == 120
    os.unlink(leftover)


def test_parallel_validation_gives_the_same_archive(tmp_path: Path, monkeypatch) -> None:
    good = make_packets(60, month=12, run="rl-p")
    bad = good[7].to_dict()
    bad["status"] = "failed"  # invalid (a failed packet with a speedup): refused
    bad.pop("packet_id")
    bad["packet_id"] = packet_id_for(bad)  # its own id: it is validated, not skipped
    lines = [p.to_json() for p in good[:30]]
    lines += [json.dumps(bad).encode(), b"{broken", good[3].to_json()]  # + a duplicate
    lines += [p.to_json() for p in good[30:]] + [json.dumps(bad).encode()]
    src = tmp_path / "mixed.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setattr(writer_mod, "BATCH", 8)
    monkeypatch.setattr(writer_mod, "PARALLEL_AFTER", 0)
    results = {}
    for parallel in (False, True):
        refusals: list[str] = []
        s = archive_packets(
            [src],
            tmp_path / f"a{parallel}",
            parallel=parallel,
            on_refusal=lambda r, out=refusals: out.append(r.line()),
        )
        t = read_table(tmp_path / f"a{parallel}", ["packet_id", "grade", "findings", "packet"])
        results[parallel] = (s.added, s.duplicates, s.refused_count, refusals, sorted(t.to_pylist(), key=str))
    assert results[True] == results[False]
    added, dups, refused, refusals, _ = results[True]
    assert (added, dups, refused) == (60, 1, 3)
    assert [r.split(": ")[0].rsplit(":", 1)[1] for r in refusals] == ["line 31", "line 32", "line 64"]


def test_a_packet_with_a_stolen_id_is_refused_not_skipped(tmp_path) -> None:
    import json

    from kernel_evidence.archive import archive_packets
    from kernel_evidence.strategies import example_packet

    good = example_packet()
    src = tmp_path / "good.jsonl"
    src.write_bytes(good.to_json() + b"\n")
    archive_packets([str(src)], tmp_path / "ds")
    forged = json.loads(good.to_json())
    forged["timing"]["speedup"]["value"] = 9.0  # new content, the archived packet's id
    bad = tmp_path / "forged.jsonl"
    bad.write_text(json.dumps(forged) + "\n")
    summary = archive_packets([str(bad)], tmp_path / "ds")
    assert summary.duplicates == 0
    assert summary.refused_count == 1
    assert any("KE004" in line for line in summary.refused[0].reasons)


def test_concurrent_runs_into_one_archive_take_turns(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Two runs archiving the same packets into one archive at the same time: the second
    waits for the first (a lock on the marker), then finds every packet already present.
    Without the lock both read an empty index and both wrote every packet."""
    import threading

    from ._factory import make_packets

    src = tmp_path / "in.jsonl"
    write_packets(src, make_packets(40))
    root = tmp_path / "arch"
    archive_packets([], root)  # the archive exists; both runs append to it
    inside = threading.Event()
    release = threading.Event()
    real_commit = writer_mod._Writer.commit

    def slow_commit(self):  # type: ignore[no-untyped-def]
        if not inside.is_set():  # the first run to commit waits until the other has started
            inside.set()
            release.wait(10)
        return real_commit(self)

    monkeypatch.setattr(writer_mod._Writer, "commit", slow_commit)
    results = []

    def run() -> None:
        results.append(archive_packets([src], root, parallel=False))

    first = threading.Thread(target=run)
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=run)
    second.start()
    second.join(0.5)  # the second run waits for the lock (or, without it, runs to the end)
    release.set()
    first.join(20)
    second.join(20)
    assert sorted(r.added for r in results) == [0, 40]
    assert sorted(r.duplicates for r in results) == [0, 40]
    assert read_table(root).num_rows == 40
