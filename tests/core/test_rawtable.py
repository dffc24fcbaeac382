"""Raw metrics in an Arrow IPC side file: written, referenced by sha256, read back checked."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import kernel_evidence as ke
from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.errors import InputError
from kernel_evidence.models import ProfilerCapture
from kernel_evidence.rawtable import (
    RAW_TABLE_MEDIA_TYPE,
    raw_columns_of,
    read_raw_table,
    write_raw_table,
)

COLUMNS = {
    "gpu__time_duration.sum": [1200.0, 1300.5, None],
    "launch__grid_size": [128.0, 128.0, 256.0],
    "Kernel Name": ["gemm", "gemm, <T>", None],
    "sm__warps_active.avg.pct_of_peak_sustained_active": [41.5, "n/a", None],
    "empty": [None, None, None],
}
UNITS = {"gpu__time_duration.sum": "nsecond", "sm__warps_active.avg.pct_of_peak_sustained_active": "%"}


def _capture(ref: ke.models.Artifact, rows: int = 3) -> ProfilerCapture:
    return ProfilerCapture(tool="ncu", kernels=[{"name": f"k{i}"} for i in range(rows)], raw_table=ref)


def test_round_trip_keeps_names_values_types_and_units(tmp_path: Path) -> None:
    ref = write_raw_table(COLUMNS, UNITS, 3, tmp_path, "report")
    assert ref.media_type == RAW_TABLE_MEDIA_TYPE
    assert ref.sha256 is not None and ref.name is not None
    assert ref.name.startswith("report.raw-") and ref.name.endswith(".arrow")
    assert ref.size is not None and ref.size.value == os.path.getsize(tmp_path / ref.name)
    table = read_raw_table(_capture(ref))
    assert table.schema.field("gpu__time_duration.sum").type == pa.float64()
    assert table.schema.field("Kernel Name").type == pa.string()
    columns, units = raw_columns_of(table)
    assert columns == COLUMNS
    assert list(columns) == list(COLUMNS)  # column order kept
    assert units == UNITS
    # the mixed column keeps 41.5 a number and "n/a" text
    assert columns["sm__warps_active.avg.pct_of_peak_sustained_active"][:2] == [41.5, "n/a"]


def test_arrow_arrays_are_written_as_they_are(tmp_path: Path) -> None:
    arrays = {"a": pa.array([1.0, 2.0]), "b": pa.chunked_array([["x"], ["y"]]), "c": pa.nulls(2)}
    ref = write_raw_table(arrays, None, 2, tmp_path, "arr")
    columns, _ = raw_columns_of(read_raw_table(_capture(ref, 2)))
    assert columns == {"a": [1.0, 2.0], "b": ["x", "y"], "c": [None, None]}


def test_inline_columns_read_as_the_same_table(tmp_path: Path) -> None:
    inline = ProfilerCapture(tool="ncu", kernels=[{"name": "k"}] * 3, raw_columns=COLUMNS, raw_units=UNITS)
    ref = write_raw_table(COLUMNS, UNITS, 3, tmp_path, "r")
    assert read_raw_table(inline).equals(read_raw_table(_capture(ref)))


def test_a_file_already_there_is_kept_when_the_same_and_replaced_when_not(tmp_path: Path) -> None:
    from kernel_evidence.rawtable import _write

    ref, made = _write(COLUMNS, UNITS, 3, tmp_path, "r", None)
    path = tmp_path / str(ref.name)
    inode = path.stat().st_ino
    again, made_again = _write(COLUMNS, UNITS, 3, tmp_path, "r", None)
    assert made and not made_again and again == ref
    assert path.stat().st_ino == inode  # left as it was: an earlier run's file
    path.write_bytes(path.read_bytes()[:-1] + b"\0")  # damaged, same name
    fixed, made_fixed = _write(COLUMNS, UNITS, 3, tmp_path, "r", None)
    assert made_fixed and fixed == ref
    assert read_raw_table(_capture(fixed), tmp_path).num_rows == 3
    opts = AdapterOptions(side_dir=str(tmp_path), side_base=str(tmp_path), inline_max_cells=0)
    again_ref = opts.raw_table(COLUMNS, UNITS, 3, "r")
    assert again_ref is not None and (again_ref.name, again_ref.sha256) == (ref.name, ref.sha256)
    assert opts.side_files == []  # not this call's file: a failed ingest must not remove it


def test_same_content_same_name_and_no_temp_files_left(tmp_path: Path) -> None:
    a = write_raw_table(COLUMNS, UNITS, 3, tmp_path, "r")
    b = write_raw_table(COLUMNS, UNITS, 3, tmp_path, "r")
    assert a == b
    changed = dict(COLUMNS, launch__grid_size=[128.0, 128.0, 512.0])
    c = write_raw_table(changed, UNITS, 3, tmp_path, "r")
    assert c.sha256 != a.sha256 and c.name != a.name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([a.name, c.name])


def test_the_same_bytes_whether_compressed_in_threads_or_not(tmp_path: Path) -> None:
    # the packet id covers the file's sha256: how it was compressed must not change it
    from kernel_evidence.rawtable import _write

    big = {f"m{j}": [float(i * j % 97) for i in range(5000)] for j in range(40)}
    threaded, _ = _write(big, None, 5000, tmp_path / "a", "r", None, threads=True)
    single, _ = _write(big, None, 5000, tmp_path / "b", "r", None, threads=False)
    assert threaded.sha256 == single.sha256 and threaded.name == single.name


def test_a_changed_value_changes_the_packet_id(tmp_path: Path) -> None:
    def packet(ref: ke.models.Artifact) -> ke.EvidencePacket:
        base = ke.strategies.example_packet().to_dict()
        base.pop("packet_id", None)
        base["profiler"] = [_capture(ref).model_dump(mode="json", exclude_none=True)]
        return ke.EvidencePacket.model_validate(base)

    a = write_raw_table(COLUMNS, UNITS, 3, tmp_path / "a", "r")
    b = write_raw_table(dict(COLUMNS, launch__grid_size=[1.0, 1.0, 1.0]), UNITS, 3, tmp_path / "b", "r")
    assert packet(a).compute_id() != packet(b).compute_id()
    assert ke.validate(packet(a)).ok


def test_a_finished_packet_has_the_id_compute_id_gives(tmp_path: Path) -> None:
    """Adapters add the side file's reference and compute the id from the records'
    canonical JSON they made themselves (``finish_packet``): the id is the one the finished
    packet computes, and the JSON given is what it is computed from."""
    from kernel_evidence._codec.ids import finish_packet
    from kernel_evidence._codec.structs import columns_encoder

    base = ke.strategies.example_packet().to_dict()
    base.pop("packet_id", None)
    kernels = [{"name": f"k{i}", "grid": [i + 1, 1, 1], "metrics": {"duration": {"value": 1.5 * i, "unit": "ns"}}}
               for i in range(3)]  # fmt: skip
    base["profiler"] = [ProfilerCapture(tool="ncu", kernels=kernels).model_dump(exclude_none=True)]
    bare = ke.EvidencePacket.model_validate(base)
    records = bare.profiler[0].kernels  # type: ignore[index]
    encoded = columns_encoder.encode([r.model_dump(exclude_none=True) for r in records or []])
    ref = write_raw_table(COLUMNS, UNITS, 3, tmp_path, "r")
    done = finish_packet(bare, 0, kernels_json=encoded, raw_table=ref)
    assert done.profiler is not None and done.profiler[0].raw_table == ref
    assert bare.profiler is not None and bare.profiler[0].raw_table is None  # a copy
    assert (
        done.packet_id == done.compute_id() == ke.EvidencePacket.model_validate(done.to_dict()).compute_id()
    )
    assert done.packet_id == finish_packet(bare, 0, raw_table=ref).packet_id  # records encoded anew
    inline = finish_packet(bare, 0, kernels_json=encoded)
    assert inline.packet_id == bare.compute_id() != done.packet_id
    # the JSON given is what the id covers (an adapter must give the records' own)
    assert finish_packet(bare, 0, kernels_json=encoded.replace(b'"k1"', b'"k9"')).packet_id != bare.compute_id()
    no_id = finish_packet(bare, 0, raw_table=ref, with_id=False)
    assert no_id.packet_id is None and no_id.profiler == done.profiler
    with pytest.raises(ValueError, match="already holds"):
        finish_packet(done, 0, raw_table=ref)


def test_relative_paths_are_read_from_the_packet_directory(tmp_path: Path) -> None:
    ref = write_raw_table(COLUMNS, UNITS, 3, tmp_path / "out", "r", relative_to=tmp_path / "out")
    assert ref.path == ref.name  # beside the packet
    with pytest.raises(InputError, match="cannot be read"):
        read_raw_table(_capture(ref))  # not found from the current directory
    assert read_raw_table(_capture(ref), tmp_path / "out").num_rows == 3


@pytest.mark.parametrize("damage", ["flip", "truncate", "rows", "not_arrow", "layout"])
def test_a_damaged_or_substituted_file_is_refused(tmp_path: Path, damage: str) -> None:
    ref = write_raw_table(COLUMNS, UNITS, 3, tmp_path, "r")
    path = tmp_path / str(ref.name)
    data = bytearray(path.read_bytes())
    capture = _capture(ref)
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
        expect = "sha256"
    elif damage == "truncate":
        del data[-10:]
        expect = "bytes; the packet says"
    elif damage == "rows":
        capture = _capture(ref, rows=4)
        expect = "3 rows for 4 kernel records"
    elif damage == "not_arrow":
        data = bytearray(b"x" * len(data))
        ref2 = ref.model_copy(update={"sha256": None})
        capture = _capture(ref2)
        expect = "not an Arrow IPC file"
    else:  # a valid Arrow file without our layout marker, digest and size made to match
        import hashlib

        table = pa.table({"a": [1.0, 2.0, 3.0]})
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
        data = bytearray(sink.getvalue().to_pybytes())
        ref2 = ref.model_copy(
            update={
                "sha256": "sha256:" + hashlib.sha256(data).hexdigest(),
                "size": ke.models.ByteSize(value=float(len(data)), unit="B"),
            }
        )
        capture = _capture(ref2)
        expect = "raw table layout none"
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=expect):
        read_raw_table(capture)


def test_a_uri_only_reference_says_to_fetch_it(tmp_path: Path) -> None:
    ref = write_raw_table(COLUMNS, UNITS, 3, tmp_path, "r")
    remote = ref.model_copy(update={"path": None, "uri": "s3://bucket/r.arrow"})
    with pytest.raises(InputError, match="only a uri"):
        read_raw_table(_capture(remote))


def test_a_column_of_the_wrong_length_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="has 2 values for 3 rows"):
        write_raw_table({"a": [1.0, 2.0]}, None, 3, tmp_path, "r")
    assert list(tmp_path.iterdir()) == []


def test_adapter_options_write_only_above_the_threshold_and_only_with_a_directory(tmp_path: Path) -> None:
    cols = {"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0]}  # 6 cells
    assert AdapterOptions().raw_table(cols, None, 3, "r") is None  # no side_dir: inline
    opts = AdapterOptions(side_dir=str(tmp_path), side_base=str(tmp_path), inline_max_cells=6)
    assert opts.raw_table(cols, None, 3, "r") is None  # at the threshold: inline
    assert not opts.wants_raw_table(3, 2) and not AdapterOptions().wants_raw_table(10**6, 10)
    opts.inline_max_cells = 5
    assert opts.wants_raw_table(3, 2)
    ref = opts.raw_table(cols, None, 3, "r")
    assert ref is not None and ref.path == ref.name
    assert opts.side_files == [str(tmp_path / str(ref.name))]


def test_side_files_get_the_usual_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        ref = write_raw_table(COLUMNS, UNITS, 3, tmp_path, "r")
    finally:
        os.umask(old)
    assert (tmp_path / str(ref.name)).stat().st_mode & 0o777 == 0o644


def test_a_side_directory_that_cannot_be_written_is_one_adapter_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    opts = AdapterOptions(side_dir=str(tmp_path / "file" / "sub"), inline_max_cells=0)
    with pytest.raises(ke.AdapterError, match="cannot write the raw metrics side file for r: "):
        opts.raw_table({"a": [1.0]}, None, 1, "r")
    assert opts.side_files == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_a_path_to_something_other_than_a_file_is_refused_not_read(tmp_path: Path, kind: str) -> None:
    """A packet's path is untrusted: /dev/zero would never end, a FIFO would block."""
    ref = write_raw_table(COLUMNS, UNITS, 3, tmp_path, "r")
    target = tmp_path / str(ref.name)
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        target.symlink_to("/dev/zero")
    else:
        target.mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        read_raw_table(_capture(ref))


def test_the_stem_names_a_file_in_the_directory_never_a_path(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ref = write_raw_table(COLUMNS, UNITS, 3, out, "../../escape/run")
    assert str(ref.name).startswith("escape_run.raw-")
    assert sorted(p.name for p in out.iterdir()) == [ref.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
