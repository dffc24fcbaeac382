"""Raw metric side files (``raw_table``) travel with their packets into and out of the archive."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import kernel_evidence as ke
from kernel_evidence.archive import (
    RawTableWarning,
    archive_packets,
    export_packets,
    open_archive,
    read_raw_table,
    read_table,
)
from kernel_evidence.archive import writer as writer_mod
from kernel_evidence.cli import main
from kernel_evidence.errors import ArchiveError, InputError
from kernel_evidence.io import write_packets
from kernel_evidence.models import Artifact, ProfilerCapture
from kernel_evidence.rawtable import write_raw_table

from ._factory import make_packets

COLUMNS = {
    "gpu__time_duration.sum": [1200.0, 1300.5, None],
    "Kernel Name": ["gemm", "gemm, <T>", None],
    "sm__warps_active.avg.pct_of_peak_sustained_active": [41.5, "n/a", None],
}
UNITS = {"gpu__time_duration.sum": "nsecond"}


def _table(seed: float = 0.0, rows: int = 3) -> dict[str, list[Any]]:
    return {"gpu__time_duration.sum": [1000.0 + seed + i for i in range(rows)], "name": ["k"] * rows}


def _packet(
    ref: Artifact | None, *, name: str = "gemm_bf16_4096", rows: int = 3, **cap: Any
) -> ke.EvidencePacket:
    """The example packet with one profiler capture of ``rows`` launches whose raw metrics
    are in the side file ``ref`` (or inline, given as ``raw_columns=``)."""
    data = ke.strategies.example_packet().to_dict()
    data.pop("packet_id", None)
    data["subject"]["name"] = name
    capture = ProfilerCapture(
        tool="ncu", kernels=[{"name": f"k{i}"} for i in range(rows)], raw_table=ref, **cap
    )
    data["profiler"] = [capture.model_dump(mode="json", exclude_none=True)]
    packet = ke.EvidencePacket.model_validate(data).with_id()
    assert ke.validate(packet).ok
    return packet


def _hex(ref: Artifact) -> str:
    assert ref.sha256 is not None
    return ref.sha256.removeprefix("sha256:")


def _raw_files(root: Path) -> list[str]:
    """Every file under ``root/_raw``, hidden ones too."""
    raw = root / "_raw"
    return sorted(p.name for p in raw.iterdir()) if raw.is_dir() else []


@pytest.fixture
def side(tmp_path: Path) -> tuple[Path, Artifact]:
    """A packet file ``in/p.jsonl`` of two packets sharing one raw table beside it."""
    d = tmp_path / "in"
    ref = write_raw_table(COLUMNS, UNITS, 3, d, "report", relative_to=d)
    assert ref.path == ref.name  # a plain file name, beside the packet
    write_packets(d / "p.jsonl", [_packet(ref), _packet(ref, name="gemm_bf16_other")])
    return d / "p.jsonl", ref


@pytest.fixture
def lost(side: tuple[Path, Artifact]) -> tuple[Path, Artifact]:
    """:func:`side` with its raw table gone from beside the packets."""
    src, ref = side
    (src.parent / str(ref.name)).unlink()
    return src, ref


def _archived(tmp_path: Path, src: Path) -> Path:
    """An archive of the packets in ``src`` (with the raw tables found beside them)."""
    root = tmp_path / "archive"
    archive_packets([src], root)
    return root


# -- archiving -------------------------------------------------------------------------


def test_raw_table_is_copied_into_the_archive_and_verified(
    tmp_path: Path, side: tuple[Path, Artifact]
) -> None:
    src, ref = side
    root = tmp_path / "archive"
    summary = archive_packets([src], root)
    assert summary.added == 2 and summary.warning_count == 0 and summary.warnings == []
    h = _hex(ref)
    assert summary.raw_files == [f"_raw/{h}.arrow"]  # once, for two packets
    assert _raw_files(root) == [f"{h}.arrow"]  # no temporary file left
    copy = (root / "_raw" / f"{h}.arrow").read_bytes()
    assert copy == (src.parent / str(ref.name)).read_bytes()
    assert "sha256:" + hashlib.sha256(copy).hexdigest() == ref.sha256


def test_identical_raw_table_is_not_copied_again(tmp_path: Path, side: tuple[Path, Artifact]) -> None:
    src, ref = side
    root = tmp_path / "archive"
    assert len(archive_packets([src], root).raw_files) == 1
    stored = root / "_raw" / f"{_hex(ref)}.arrow"
    before = stored.stat()
    # new packets naming the same raw table, from another folder with its own copy
    other = tmp_path / "other"
    ref2 = write_raw_table(COLUMNS, UNITS, 3, other, "again", relative_to=other)
    assert ref2.sha256 == ref.sha256
    write_packets(other / "q.json", [_packet(ref2, name="third")])
    summary = archive_packets([other / "q.json"], root)
    assert summary.added == 1 and summary.raw_files == [] and summary.warnings == []
    assert _raw_files(root) == [stored.name]
    after = stored.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_absolute_path_is_read_from_an_allowed_folder_only(tmp_path: Path) -> None:
    ref = write_raw_table(COLUMNS, UNITS, 3, tmp_path / "side", "abs")
    assert ref.path is not None and os.path.isabs(ref.path)
    write_packets(tmp_path / "in" / "p.json", [_packet(ref)])
    summary = archive_packets([tmp_path / "in" / "p.json"], tmp_path / "a")
    assert summary.raw_files == [] and "outside the packet's folder" in summary.warnings[0].reason
    summary = archive_packets(
        [tmp_path / "in" / "p.json"], tmp_path / "a", side_files_from=[tmp_path / "side"]
    )
    assert summary.raw_files == [f"_raw/{_hex(ref)}.arrow"] and summary.warnings == []


@pytest.mark.parametrize("damage", ["missing", "flipped", "longer", "shorter"])
def test_missing_or_tampered_raw_table_warns_and_the_packet_is_archived(
    tmp_path: Path, side: tuple[Path, Artifact], damage: str
) -> None:
    src, ref = side
    path = src.parent / str(ref.name)
    data = bytearray(path.read_bytes())
    if damage == "missing":
        path.unlink()
        expect = "no such file"
    elif damage == "flipped":
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
        expect = f"its sha256 is not the packet's {ref.sha256}"
    elif damage == "longer":
        path.write_bytes(bytes(data) + b"x")
        expect = f"is {len(data) + 1} bytes; the packet says {len(data)}"
    else:
        path.write_bytes(bytes(data[:-1]))
        expect = f"is {len(data) - 1} bytes; the packet says {len(data)}"
    root = tmp_path / "archive"
    summary = archive_packets([src], root)
    assert summary.added == 2 and summary.refused_count == 0
    assert read_table(root, ["packet_id"]).num_rows == 2
    # one warning for the file, though two packets name it
    assert summary.warning_count == 1
    (w,) = summary.warnings
    assert isinstance(w, RawTableWarning)
    assert (w.source, w.location, w.table) == (str(src), "line 1", ref.path)
    assert w.line() == f"{src}:line 1: raw table {ref.path} not archived: {path}: {expect}"
    assert summary.raw_files == [] and not (root / "_raw").exists()


def test_cli_warns_one_line_per_raw_table_and_exits_0(
    tmp_path: Path, lost: tuple[Path, Artifact], capsys: pytest.CaptureFixture[str]
) -> None:
    src, ref = lost
    root = tmp_path / "archive"
    code = main(["archive", str(src), "--to", str(root)])
    out, err = capsys.readouterr()
    assert code == 0
    path = src.parent / str(ref.name)
    assert (
        err == f"kevidence: warning: {src}:line 1: raw table {ref.path} not archived: {path}: no such file\n"
    )
    assert out == (
        f"{root}: 2 added, 0 already present, 0 refused, 1 files written; raw tables: 0 copied, 1 not archived\n"
    )
    # the file found again: the next run adds it, though its packets are archived already
    write_raw_table(COLUMNS, UNITS, 3, src.parent, "report")
    code = main(["archive", str(src), "--to", str(root)])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert out == (
        f"{root}: 0 added, 2 already present, 0 refused, 0 files written; raw tables: 1 copied, 0 not archived\n"
    )
    assert _raw_files(root) == [f"{_hex(ref)}.arrow"]


def test_uri_only_stdin_and_hostile_digest_are_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = tmp_path / "in"
    ref = write_raw_table(COLUMNS, UNITS, 3, d, "report", relative_to=d)
    by_uri = ref.model_copy(update={"path": None, "uri": "s3://bucket/report.arrow"})
    write_packets(d / "uri.json", [_packet(by_uri, name="by_uri")])
    # a digest that would name a path outside _raw/, stored with --allow-invalid
    hostile = json.loads(_packet(ref, name="hostile").to_json())
    hostile["profiler"][0]["raw_table"]["sha256"] = "sha256:../../../../etc/x"
    del hostile["packet_id"]
    (d / "hostile.json").write_text(json.dumps(hostile))
    root = tmp_path / "archive"
    summary = archive_packets([d / "uri.json", d / "hostile.json"], root, allow_invalid=True)
    assert summary.added == 2
    lines = [w.line() for w in summary.warnings]
    assert lines == [
        f"{d / 'uri.json'}: raw table s3://bucket/report.arrow not archived: the packet gives only a uri "
        "(s3://bucket/report.arrow); fetch the file and archive again",
        f"{d / 'hostile.json'}: raw table {ref.path} not archived: no valid sha256 in the reference",
    ]
    assert _raw_files(root) == []
    # from standard input there is no packet directory
    data = _packet(ref, name="from_stdin").to_json() + b"\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    summary = archive_packets(["-"], root)
    assert summary.added == 1
    (w,) = summary.warnings
    assert w.source == "-" and "read from standard input" in w.line()
    assert _raw_files(root) == []


def test_failed_run_leaves_no_raw_files(
    tmp_path: Path, side: tuple[Path, Artifact], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, ref = side
    staged: list[list[str]] = []

    def full_disk(self: object, table: object) -> None:
        staged.append(_raw_files(root))  # the raw table is staged by now
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writer_mod._PartFile, "write", full_disk)
    # into a new archive: nothing is left at all
    root = tmp_path / "new"
    with pytest.raises(ArchiveError, match="No space left on device; nothing was added"):
        archive_packets([src], root)
    assert staged and len(staged[0]) == 1 and staged[0][0].startswith(f".{_hex(ref)}.")
    assert not root.exists()
    # into an existing archive: it is as it was
    root = tmp_path / "old"
    monkeypatch.undo()
    archive_packets(make_packets_file(tmp_path), root)
    before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    monkeypatch.setattr(writer_mod._PartFile, "write", full_disk)
    staged.clear()
    with pytest.raises(ArchiveError, match="nothing was added"):
        archive_packets([src], root)
    assert staged and len(staged[0]) == 1
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == before
    assert not (root / "_raw").exists()


def make_packets_file(tmp_path: Path) -> list[Path]:
    path = tmp_path / "plain.jsonl"
    write_packets(path, make_packets(5, month=12))
    return [path]


def test_failed_rename_removes_the_raw_tables_renamed_already(
    tmp_path: Path, side: tuple[Path, Artifact], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, _ = side
    real_replace = os.replace
    calls: list[str] = []

    def deny_parquet(a: Any, b: Any) -> None:
        calls.append(str(b))
        if str(b).endswith(".parquet"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(b))
        real_replace(a, b)

    monkeypatch.setattr(writer_mod.os, "replace", deny_parquet)
    root = tmp_path / "archive"
    with pytest.raises(ArchiveError, match="Permission denied"):
        archive_packets([src], root)
    monkeypatch.undo()
    renamed = [c for c in calls if c.endswith((".arrow", ".parquet"))]
    assert renamed[0].endswith(".arrow")  # the raw table is renamed before the packets
    assert not root.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_fifo_in_place_of_a_raw_table_does_not_hang(tmp_path: Path) -> None:
    d = tmp_path / "in"
    ref = write_raw_table(COLUMNS, UNITS, 3, d, "report", relative_to=d)
    fifo = d / str(ref.name)
    fifo.unlink()
    os.mkfifo(fifo)
    write_packets(d / "p.json", [_packet(ref)])
    # in a child process, so that a regression hangs it, not the test run; the second run
    # makes os.stat say "regular file": the non-blocking open and fstat must still refuse it
    size = int(ref.size.value) if ref.size else 0
    script = textwrap.dedent(
        f"""
        import os, stat
        from kernel_evidence.archive import archive_packets
        for fake in (False, True):
            if fake:
                real = os.stat
                def lying(p, *a, **k):
                    st = real(p, *a, **k)
                    if os.fspath(p) == {str(fifo)!r}:
                        return os.stat_result((stat.S_IFREG | 0o644,) + tuple(st)[1:6] + ({size},) + tuple(st)[7:10])
                    return st
                os.stat = lying
            s = archive_packets([{str(d / "p.json")!r}], {str(tmp_path)!r} + f"/a{{int(fake)}}")
            for w in s.warnings:
                print(w.line())
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.splitlines()
        == [f"{d / 'p.json'}: raw table {ref.path} not archived: {fifo}: not a regular file"] * 2
    )


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_symlink_to_a_device_is_not_read(tmp_path: Path) -> None:
    d = tmp_path / "in"
    ref = write_raw_table(COLUMNS, UNITS, 3, d, "report", relative_to=d)
    (d / str(ref.name)).unlink()
    os.symlink(os.devnull, d / str(ref.name))
    write_packets(d / "p.json", [_packet(ref)])
    # the device's folder allowed: the link is followed, and the device still not read
    devices = os.path.dirname(os.path.realpath(os.devnull))
    summary = archive_packets([d / "p.json"], tmp_path / "a", side_files_from=[devices])
    assert summary.added == 1
    assert [w.reason for w in summary.warnings] == [f"{d / str(ref.name)}: not a regular file"]


def test_dataset_readers_ignore_the_raw_folder(tmp_path: Path, side: tuple[Path, Artifact]) -> None:
    src, ref = side
    root = tmp_path / "archive"
    summary = archive_packets([src], root)
    assert _raw_files(root) == [f"{_hex(ref)}.arrow"]
    assert summary.added == 2
    # a leftover temporary copy (a killed run) too
    (root / "_raw" / f".{_hex(ref)}.0123.arrow.tmp").write_bytes(b"partial")
    table = ds.dataset(root, partitioning="hive").to_table()
    assert table.num_rows == 2
    assert sorted(table.column("packet_id").to_pylist()) == sorted(
        json.loads(line)["packet_id"] for line in src.read_text().splitlines()
    )
    assert ds.dataset(str(root), format="parquet", partitioning="hive").count_rows() == 2
    assert open_archive(root).count_rows() == 2
    assert read_table(root, ["packet_id"]).num_rows == 2


# -- the reader helper -----------------------------------------------------------------


def test_read_raw_table_from_the_archive(tmp_path: Path, side: tuple[Path, Artifact]) -> None:
    src, ref = side
    root = _archived(tmp_path, src)
    (src.parent / str(ref.name)).unlink()  # the archive's copy is what is read
    packet = ke.EvidencePacket.model_validate_json(next(iter(export_lines(root))))
    capture = packet.profiler[0]  # type: ignore[index]
    expected = write_raw_table(COLUMNS, UNITS, 3, tmp_path / "again", "x")
    table = read_raw_table(root, capture)
    assert table.equals(ke.read_raw_table(_capture(expected)))
    # inline metrics: the same table from them
    inline = ProfilerCapture(tool="ncu", kernels=[{"name": "k"}] * 3, raw_columns=COLUMNS, raw_units=UNITS)
    assert read_raw_table(root, inline).equals(table)
    # damaged in the archive: refused
    stored = root / "_raw" / f"{_hex(ref)}.arrow"
    data = bytearray(stored.read_bytes())
    data[len(data) // 2] ^= 0xFF
    stored.write_bytes(bytes(data))
    with pytest.raises(InputError, match="sha256"):
        read_raw_table(root, capture)
    # not in the archive
    other = _capture(write_raw_table(_table(7.0), None, 3, tmp_path / "elsewhere", "y"))
    with pytest.raises(InputError, match="not in the archive"):
        read_raw_table(root, other)
    with pytest.raises(ArchiveError, match="no such archive"):
        read_raw_table(tmp_path / "nope", capture)


def _capture(ref: Artifact) -> ProfilerCapture:
    return ProfilerCapture(tool="ncu", kernels=[{"name": f"k{i}"} for i in range(3)], raw_table=ref)


def export_lines(root: Path) -> list[bytes]:
    from kernel_evidence.archive import iter_packets

    return list(iter_packets(root))


# -- export ----------------------------------------------------------------------------


def test_export_copies_raw_tables_beside_the_output(tmp_path: Path, side: tuple[Path, Artifact]) -> None:
    src, ref = side
    root = _archived(tmp_path, src)
    out = tmp_path / "out" / "e.jsonl"
    warned: list[str] = []
    assert export_packets(root, out, on_warning=warned.append) == 2
    assert warned == []
    beside = out.parent / str(ref.path)
    assert beside.read_bytes() == (src.parent / str(ref.name)).read_bytes()
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([out.name, beside.name])
    # readable where the packets now are
    packet = next(ke.read_packets(out))
    assert ke.read_raw_table(packet.profiler[0], out.parent).num_rows == 3
    # again, with the same file there: skipped silently
    mtime = beside.stat().st_mtime_ns
    assert export_packets(root, out, overwrite=True, on_warning=warned.append) == 2
    assert warned == [] and beside.stat().st_mtime_ns == mtime
    # a different file of that name is left as it is
    beside.write_bytes(b"mine")
    assert export_packets(root, out, overwrite=True, on_warning=warned.append) == 2
    assert beside.read_bytes() == b"mine"
    assert len(warned) == 1 and warned[0].startswith(f"{beside}: exists with other content; left as it is")


@pytest.mark.parametrize(
    "path", ["../escape.arrow", "sub/dir.arrow", "/tmp/abs.arrow", "..", ".hidden.arrow", "Makefile"]
)
def test_export_refuses_a_raw_table_path_that_is_not_a_plain_name(tmp_path: Path, path: str) -> None:
    d = tmp_path / "in"
    ref = write_raw_table(_table(), None, 3, d, "report")
    moved = ref.model_copy(update={"path": path})
    # the side file where the packet says, so that it is archived
    where = Path(path) if os.path.isabs(path) else d / path
    if path not in ("..", "/tmp/abs.arrow"):
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_bytes((d / str(ref.name)).read_bytes())
    write_packets(d / "p.json", [_packet(moved)])
    root = tmp_path / "archive"
    archive_packets([d / "p.json"], root)
    out = tmp_path / "x" / "y" / "e.jsonl"
    warned: list[str] = []
    assert export_packets(root, out, on_warning=warned.append) == 1
    assert len(warned) == 1
    assert f"raw table {path} of packet " in warned[0]
    assert "not copied" in warned[0]
    assert sorted(p.name for p in out.parent.iterdir()) == ["e.jsonl"]
    assert not (tmp_path / "x" / "escape.arrow").exists()


def test_export_to_stdout_warns_once(
    tmp_path: Path, side: tuple[Path, Artifact], capsys: pytest.CaptureFixture[str]
) -> None:
    src, _ = side
    root = _archived(tmp_path, src)
    code = main(["export", str(root), "-o", "-"])
    out, err = capsys.readouterr()
    assert code == 0
    assert len(out.splitlines()) == 2
    assert err == (
        "kevidence: warning: standard output: raw tables of the exported packets were not copied "
        f"(the output is a stream); they are in {root / '_raw'}{os.sep}, named by sha256\n"
    )
    # without a callback the library warns through the warnings module
    with pytest.warns(UserWarning, match="were not copied"):
        export_packets(root, "-")
    capsys.readouterr()


def test_export_cli_warns_about_a_raw_table_the_archive_lacks(
    tmp_path: Path, lost: tuple[Path, Artifact], capsys: pytest.CaptureFixture[str]
) -> None:
    src, ref = lost
    root = _archived(tmp_path, src)
    out = tmp_path / "e.jsonl"
    code = main(["export", str(root), "-o", str(out)])
    _, err = capsys.readouterr()
    assert code == 0
    raw = root / "_raw" / f"{_hex(ref)}.arrow"
    lines = err.splitlines()
    assert lines[0].startswith(f"kevidence: warning: raw table {ref.path} of packet sha256:")
    assert lines[0].endswith(f": not copied; the archive does not hold it ({raw})")
    assert lines[1:] == [f"{out}: 2 packets exported"]


def test_failed_export_removes_the_raw_tables_it_copied(
    tmp_path: Path, side: tuple[Path, Artifact], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, ref = side
    root = _archived(tmp_path, src)
    from kernel_evidence.archive import reader

    def fail_commit(*a: Any, **k: Any) -> Any:
        fh, commit = real_open(*a, **k)

        def commit_or_fail(ok: bool) -> None:
            if ok:
                copied.append((out.parent / str(ref.path)).is_file())  # copied by now
                commit(False)
                raise OSError(errno.ENOSPC, "cannot be written (No space left on device)")
            commit(ok)

        return fh, commit_or_fail

    copied: list[bool] = []
    real_open = reader.open_output
    monkeypatch.setattr(reader, "open_output", fail_commit)
    out = tmp_path / "out" / "e.jsonl"
    with pytest.raises(OSError, match="No space left"):
        export_packets(root, out, on_warning=pytest.fail)
    assert copied == [True]
    assert (out.parent / str(ref.path)).exists() is False
    assert list(out.parent.iterdir()) == []


def test_raw_table_arrow_file_is_any_arrow_reader_s(tmp_path: Path, side: tuple[Path, Artifact]) -> None:
    src, ref = side
    root = _archived(tmp_path, src)
    with pa.OSFile(str(root / "_raw" / f"{_hex(ref)}.arrow"), "rb") as fh:
        assert pa.ipc.open_file(fh).read_all().num_rows == 3
