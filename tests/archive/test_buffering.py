"""How the writer buffers: row groups written during the run, short row groups when memory is
short, spills after that; rows stay in input order within a partition whichever way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kernel_evidence.archive import archive_packets, read_table
from kernel_evidence.archive import writer as writer_mod


def _input_order(path: Path) -> dict[str, list[str]]:
    """Packet ids of each ``vendor=/month=`` directory, in input order."""
    out: dict[str, list[str]] = {}
    for line in path.read_bytes().splitlines():
        d = json.loads(line)
        key = f"vendor={d['hardware']['vendor']}/month={d['created_at'][:7]}"
        out.setdefault(key, []).append(d["packet_id"])
    return out


def _archived(root: Path) -> dict[str, tuple[list[str], list[int]]]:
    """Packet ids of each directory in file order, and the row group sizes."""
    out: dict[str, tuple[list[str], list[int]]] = {}
    for path in sorted(root.rglob("*.parquet")):
        key = str(path.parent.relative_to(root))
        assert key not in out, "one file per partition expected here"
        md = pq.read_metadata(path)
        ids = pq.read_table(path, columns=["packet_id"]).column(0).to_pylist()
        out[key] = (ids, [md.row_group(i).num_rows for i in range(md.num_row_groups)])
    return out


class _Spills:
    """Counts spill files made during a run."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made = 0
        real = writer_mod._Spill.__init__

        def counted(spill: Any, root: Path) -> None:
            self.made += 1
            real(spill, root)

        monkeypatch.setattr(writer_mod._Spill, "__init__", counted)


def _check_order(packets_file: Path, root: Path) -> dict[str, list[int]]:
    expected = _input_order(packets_file)
    got = _archived(root)
    assert {k: v[0] for k, v in got.items()} == expected
    assert not list(root.glob(".spill-*")) and not list(root.rglob(".*.tmp"))
    return {k: v[1] for k, v in got.items()}


def test_whole_row_groups_are_written_during_the_run(
    tmp_path: Path, packets_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_mod, "STAGE_ROWS", 3)
    monkeypatch.setattr(writer_mod, "ROW_GROUP_ROWS", 16)
    spills = _Spills(monkeypatch)
    during: list[int] = []
    real_commit = writer_mod._Writer.commit

    def commit(self: Any) -> None:
        during.extend(f.rows for part in self.parts.values() for f in part.files)
        real_commit(self)

    monkeypatch.setattr(writer_mod._Writer, "commit", commit)
    archive_packets([packets_file], tmp_path / "a")
    sizes = _check_order(packets_file, tmp_path / "a")
    assert spills.made == 0
    assert sum(during) >= 16 * 4  # most rows reached their files before the commit
    for groups in sizes.values():
        assert all(n == 16 for n in groups[:-1]) and 0 < groups[-1] <= 16


def test_short_of_memory_a_partition_writes_a_short_row_group(
    tmp_path: Path, packets_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_mod, "STAGE_ROWS", 3)
    monkeypatch.setattr(writer_mod, "ROW_GROUP_ROWS", 16)
    monkeypatch.setattr(writer_mod, "BUFFER_BYTES", 20_000)
    monkeypatch.setattr(writer_mod, "ROW_GROUP_MIN_BYTES", 1)
    spills = _Spills(monkeypatch)
    archive_packets([packets_file], tmp_path / "a")
    sizes = _check_order(packets_file, tmp_path / "a")
    assert spills.made == 0
    assert any(n < 16 for groups in sizes.values() for n in groups[:-1])
    assert read_table(tmp_path / "a", ["packet_id"]).num_rows == 120


def test_a_partition_that_spills_after_writing_keeps_input_order(
    tmp_path: Path, packets_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_mod, "STAGE_ROWS", 3)
    monkeypatch.setattr(writer_mod, "ROW_GROUP_ROWS", 16)
    spills = _Spills(monkeypatch)
    real_write = writer_mod._PartFile.write

    def write(self: Any, table: Any) -> None:
        real_write(self, table)
        # after the first row group, memory runs short: everything held from now on spills
        writer_mod.BUFFER_BYTES = 5_000
        writer_mod.ROW_GROUP_MIN_BYTES = 1 << 40

    monkeypatch.setattr(writer_mod._PartFile, "write", write)
    monkeypatch.setattr(writer_mod, "BUFFER_BYTES", writer_mod.BUFFER_BYTES)
    monkeypatch.setattr(writer_mod, "ROW_GROUP_MIN_BYTES", writer_mod.ROW_GROUP_MIN_BYTES)
    archive_packets([packets_file], tmp_path / "a")
    sizes = _check_order(packets_file, tmp_path / "a")
    assert spills.made >= 2
    for groups in sizes.values():  # spilled rows still fill whole row groups
        assert all(n == 16 for n in groups[:-1]) and 0 < groups[-1] <= 16


def test_a_large_input_file_starts_the_second_process_at_once(
    tmp_path: Path, packets_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernel_evidence.archive import _worker

    started: list[int] = []
    real_init = _worker.RemoteValidator.__init__

    def init(self: Any) -> None:
        started.append(1)
        real_init(self)

    monkeypatch.setattr(_worker.RemoteValidator, "__init__", init)
    monkeypatch.setattr(writer_mod, "BATCH", 8)
    monkeypatch.setattr(writer_mod, "PARALLEL_AFTER", 10**9)  # never by count
    archive_packets([packets_file], tmp_path / "small", parallel=True)
    assert started == []
    monkeypatch.setattr(writer_mod, "PARALLEL_BYTES", packets_file.stat().st_size)
    archive_packets([packets_file.parent], tmp_path / "dir", parallel=True)  # a directory: not counted
    assert started == []
    s = archive_packets([packets_file], tmp_path / "big", parallel=True)
    assert started == [1] and s.added == 120
    assert _archived(tmp_path / "big") == _archived(tmp_path / "small")


def test_analysis_makes_the_json_compact_and_says_what_is_not_json(tmp_path: Path) -> None:
    from kernel_evidence.archive._worker import analyse
    from kernel_evidence.archive.writer import _peak_lookup

    from ._factory import make_packet

    compact = make_packet(1).to_json()
    pretty = json.dumps(json.loads(compact), indent=2).encode()
    answers, fixes = analyse([compact, b"  " + pretty + b"\n", b'{"a": [1, 2}'], _peak_lookup())
    assert answers[0] is not None and answers[1] is not None and answers[2] is None
    assert answers[0][2] == answers[1][2]  # the same typed columns
    assert set(fixes) == {1, 2}  # the compact input is kept as it came
    assert fixes[1] == json.dumps(json.loads(compact), separators=(",", ":"), ensure_ascii=False).encode()
    assert fixes[2].startswith("not valid JSON (") and fixes[2].endswith(")")
    # end to end: the pretty document is archived compact, the broken one refused
    src = tmp_path / "in.jsonl"
    src.write_bytes(pretty.replace(b"\n", b"") + b"\n" + b'{"a": [1, 2}\n')
    refused: list[str] = []
    s = archive_packets([src], tmp_path / "a", on_refusal=lambda r: refused.append(r.line()))
    assert (s.added, s.refused_count) == (1, 1) and refused[0].startswith(f"{src}:line 2: not valid JSON (")
    assert read_table(tmp_path / "a", ["packet"])["packet"].to_pylist() == [fixes[1]]
