"""Bad input and failures: one clear line, exit 1, and the existing dataset unchanged."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from kernel_evidence._codec.canonical import packet_id_for
from kernel_evidence.archive import archive_packets, open_archive, read_table
from kernel_evidence.archive import writer as writer_mod
from kernel_evidence.cli import main
from kernel_evidence.errors import ArchiveError
from kernel_evidence.io import write_packets

from ._factory import make_packets


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (hidden ones too) and the digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def more(tmp_path: Path) -> Path:
    """Packets not yet in the archive, in two partitions."""
    path = tmp_path / "more.jsonl"
    write_packets(path, make_packets(30, month=12, run="rl-c"))
    return path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


# -- not an archive, newer layout ------------------------------------------------------


def test_directory_that_is_not_an_archive(
    tmp_path: Path, more: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_bytes(b"\xff\xd8")
    code, _, err = run(["archive", str(more), "--to", str(other)], capsys)
    assert code == 1
    assert err == (
        f"kevidence: error: {other}: not a kevidence archive (no _kevidence_archive.json) and not "
        "empty; archive into a new or empty directory\n"
    )
    assert snapshot(other) == {"cat.jpg": hashlib.sha256(b"\xff\xd8").hexdigest()}
    code, _, err = run(["export", str(other), "-o", str(tmp_path / "x.jsonl")], capsys)
    assert code == 1
    assert err == (
        f"kevidence: error: {other}: not a kevidence archive (no _kevidence_archive.json); "
        "expected a folder `kevidence archive` wrote\n"
    )
    assert not (tmp_path / "x.jsonl").exists()


def _set_layout(archive: Path, version: str) -> None:
    marker = archive / "_kevidence_archive.json"
    meta = json.loads(marker.read_text())
    meta["layout_version"] = version
    marker.write_text(json.dumps(meta))


def test_archive_of_a_newer_layout(
    archive: Path, more: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _set_layout(archive, "2.0")
    before = snapshot(archive)
    for args in (
        ["archive", str(more), "--to", str(archive)],
        ["export", str(archive), "-o", str(tmp_path / "o.jsonl")],
        ["report", str(archive), "-o", str(tmp_path / "r.html")],
    ):
        code, _, err = run(args, capsys)
        assert code == 1
        assert err == (
            f"kevidence: error: {archive}: archive layout 2.0 is newer than this kevidence "
            "supports (1.2); upgrade kernel-evidence\n"
        )
    assert snapshot(archive) == before


def test_newer_minor_layout_is_read_but_not_appended_to(archive: Path, more: Path) -> None:
    _set_layout(archive, "1.7")
    assert read_table(archive, ["packet_id"]).num_rows == 120
    with pytest.raises(ArchiveError, match=r"archive layout 1\.7 is newer"):
        archive_packets([more], archive)


def test_layout_version_is_compared_as_numbers(archive: Path) -> None:
    _set_layout(archive, "1.10")
    with pytest.raises(ArchiveError, match=r"archive layout 1\.10 is newer"):
        archive_packets([], archive)


# -- corrupt file ----------------------------------------------------------------------


def test_corrupt_parquet_file(
    archive: Path, packets_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = sorted(archive.glob("vendor=amd/month=2026-10/*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[:200])  # truncated: no footer
    before = snapshot(archive)
    code, _, err = run(["export", str(archive), "-o", str(tmp_path / "o.jsonl")], capsys)
    assert code == 1
    assert err.startswith(f"kevidence: error: {victim}: not a readable Parquet file (")
    assert err.count("\n") == 1
    assert not (tmp_path / "o.jsonl").exists()
    # appending into the damaged partition fails the same way, and changes nothing
    code, _, err = run(["archive", str(packets_file), "--to", str(archive)], capsys)
    assert code == 1
    assert err.startswith(f"kevidence: error: {victim}: not a readable archive file (")
    assert snapshot(archive) == before


def test_export_to_stdout_checks_every_file_before_writing(
    archive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """stdout cannot be taken back: a truncated file in a later partition fails the export
    before the first packet is written, not halfway through."""
    victims = sorted(archive.glob("vendor=*/month=*/*.parquet"))
    victim = victims[-1]  # the last one read
    victim.write_bytes(victim.read_bytes()[:200])
    code, out, err = run(["export", str(archive), "-o", "-"], capsys)
    assert code == 1
    assert err.startswith(f"kevidence: error: {victim}: not a readable Parquet file (")
    assert out == ""


def test_parquet_file_without_our_metadata(archive: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    stray = archive / "vendor=amd" / "month=2026-10" / "stray.parquet"
    pq.write_table(pa.table({"packet_id": ["x"]}), stray)
    # a file the commit list does not name is not part of the archive
    assert read_table(archive, ["packet_id"]).num_rows == 120
    commits = archive / "_kevidence_commits.json"
    listed = json.loads(commits.read_text())
    listed["files"].append("vendor=amd/month=2026-10/stray.parquet")
    commits.write_text(json.dumps(listed))
    with pytest.raises(ArchiveError, match="not a kevidence archive file"):
        read_table(archive, ["packet_id"])


# -- failures while writing ------------------------------------------------------------


def test_full_disk_mid_write_leaves_the_dataset_unchanged(
    archive: Path, more: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(archive)
    real_write = os.write
    written = {"n": 0}

    def full_disk(fd: int, data: object) -> int:
        written["n"] += len(data)  # type: ignore[arg-type]
        if written["n"] > 3000:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)  # type: ignore[arg-type]

    monkeypatch.setattr(writer_mod.os, "write", full_disk)
    monkeypatch.setattr(writer_mod, "ROW_GROUP_ROWS", 8)  # several row groups: fail mid-file
    code, _, err = run(["archive", str(more), "--to", str(archive)], capsys)
    monkeypatch.undo()
    assert written["n"] > 3000
    assert code == 1
    assert err == (
        f"kevidence: error: {archive}: could not write the archive: No space left on device; "
        "nothing was added\n"
    )
    assert snapshot(archive) == before
    assert read_table(archive, ["packet_id"]).num_rows == 120


def test_permission_error_while_renaming_rolls_back(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # packets over two vendors: two files; the second rename fails after the first happened
    src = tmp_path / "two.jsonl"
    write_packets(src, make_packets(6, month=12, run="rl-d"))
    before = snapshot(archive)
    real_replace = os.replace
    calls = {"n": 0}

    def deny_second(a: object, b: object) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(b))
        real_replace(a, b)  # type: ignore[arg-type]

    monkeypatch.setattr(writer_mod.os, "replace", deny_second)
    with pytest.raises(
        ArchiveError,
        match=r"could not write the archive: Permission denied \(.*\.parquet\); nothing was added$",
    ):
        archive_packets([src], archive)
    monkeypatch.undo()
    assert calls["n"] == 2
    assert snapshot(archive) == before


def test_killed_process_leaves_no_visible_partial_file(archive: Path, more: Path) -> None:
    """A real SIGKILL after the first row group: readers see exactly the old dataset."""
    script = textwrap.dedent(
        f"""
        import os, signal
        from kernel_evidence.archive import writer
        writer.ROW_GROUP_ROWS = 5
        real = writer._PartFile.write
        def write_then_die(self, table):
            real(self, table)
            self._buf.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        writer._PartFile.write = write_then_die
        writer.archive_packets([{str(more)!r}], {str(archive)!r})
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -9
    hidden = [p for p in archive.rglob(".*.tmp")]
    assert hidden, "the killed writer left its temporary file"
    assert all(p.stat().st_size > 0 for p in hidden)
    assert ds.dataset(archive, format="parquet", partitioning="hive").count_rows() == 120
    assert open_archive(archive).count_rows() == 120
    duckdb = pytest.importorskip("duckdb")
    n = duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{archive}/**/*.parquet')").fetchone()[0]
    assert n == 120
    pl = pytest.importorskip("polars")
    assert (
        pl.scan_parquet(archive / "**" / "*.parquet", hive_partitioning=True)
        .select(pl.len())
        .collect()
        .item()
        == 120
    )
    # and the next run adds the packets
    assert archive_packets([more], archive).added == 30


# -- invalid and unreadable packets ----------------------------------------------------


def _broken(tmp_path: Path) -> Path:
    good = make_packets(3, month=12, run="rl-e")
    bad = good[1].to_dict()
    bad["status"] = "failed"  # a failed packet with a speedup and no failure class
    bad["packet_id"] = packet_id_for(bad)  # its own id: a stale one is refused even with --allow-invalid
    lines = [good[0].to_json(), json.dumps(bad).encode(), b"{not json", good[2].to_json()]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_invalid_packets_are_refused_with_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _broken(tmp_path)
    code, out, err = run(["archive", str(src), "--to", str(tmp_path / "a")], capsys)
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"refused: {src}:line 2: KE")
    assert "/failure" in lines[0] or "/timing/speedup" in lines[0]
    assert lines[1].startswith(f"refused: {src}:line 3: not valid JSON (")
    assert out == f"{tmp_path / 'a'}: 2 added, 0 already present, 2 refused, 1 files written\n"


def test_allow_invalid_stores_findings_and_grade(tmp_path: Path) -> None:
    src = _broken(tmp_path)
    summary = archive_packets([src], tmp_path / "a", allow_invalid=True)
    assert (summary.added, summary.refused_count) == (3, 1)  # the non-JSON line is still refused
    t = read_table(tmp_path / "a", ["valid", "grade", "findings", "status"]).to_pylist()
    bad = [r for r in t if not r["valid"]]
    assert len(bad) == 1 and bad[0]["status"] == "failed"
    assert bad[0]["grade"] == "F"
    assert any(f["severity"] == "error" and f["rule_id"].startswith("KE") for f in bad[0]["findings"])


def test_hostile_vendor_and_time_cannot_escape_the_archive(tmp_path: Path) -> None:
    data = make_packets(1)[0].to_dict()
    data["hardware"]["vendor"] = "../../evil"
    data["created_at"] = "../x"
    data.pop("packet_id")
    src = tmp_path / "evil.json"
    src.write_text(json.dumps(data))
    summary = archive_packets([src], tmp_path / "a", allow_invalid=True)
    assert summary.files[0].startswith("vendor=invalid/month=unknown/part-")
    assert not (tmp_path / "evil").exists()


def test_archive_target_that_is_a_file(
    tmp_path: Path, more: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "file.txt"
    target.write_text("hello")
    code, _, err = run(["archive", str(more), "--to", str(target)], capsys)
    assert code == 1
    assert err == f"kevidence: error: {target}: not a directory; expected a kevidence archive\n"
    assert target.read_text() == "hello"


def test_validator_process_dying_leaves_the_dataset_unchanged(
    archive: Path, more: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernel_evidence.archive import _worker

    before = snapshot(archive)
    real = _worker.RemoteValidator.receive

    def die_first(self: _worker.RemoteValidator) -> list:
        self._proc.kill()
        self._proc.wait()
        return real(self)

    monkeypatch.setattr(_worker.RemoteValidator, "receive", die_first)
    monkeypatch.setattr(writer_mod, "BATCH", 4)
    monkeypatch.setattr(writer_mod, "PARALLEL_AFTER", 0)
    with pytest.raises(ArchiveError, match=r"^the validator process stopped unexpectedly \(exit code -9\)"):
        archive_packets([more], archive, parallel=True)
    assert snapshot(archive) == before


def test_document_with_bytes_that_are_not_utf8_is_refused_in_one_line(tmp_path) -> None:
    from kernel_evidence.archive import archive_packets
    from kernel_evidence.strategies import example_packet

    good = example_packet().to_json()
    bad = good.replace(b'"gemm_bf16_4096"', b'"gemm\xff4096"')
    src = tmp_path / "mixed.jsonl"
    src.write_bytes(good + b"\n" + bad + b"\n")
    for allow in (False, True):
        summary = archive_packets([str(src)], tmp_path / f"ds{allow}", allow_invalid=allow)
        assert summary.refused_count == 1
        assert summary.refused[0].location == "line 2"
        assert any("UTF-8" in r for r in summary.refused[0].reasons), summary.refused[0].reasons


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        ("1" + "0" * 5000 + ".0", "expected a layout version like `1.0`"),  # int() would refuse it
        ("\u0661.0", "expected a layout version like `1.0`"),  # an Arabic-Indic digit
        (None, "nested too deeply"),  # the whole marker nested 100,000 deep
    ],
)
def test_damaged_marker_is_one_line(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str | None, expected: str
) -> None:
    if layout is None:
        (archive / "_kevidence_archive.json").write_text("[" * 100_000 + "]" * 100_000)
    else:
        _set_layout(archive, layout)
    code, _, err = run(["export", str(archive), "-o", str(tmp_path / "o.jsonl")], capsys)
    assert code == 1 and expected in err and err.count("\n") == 1 and "Traceback" not in err
