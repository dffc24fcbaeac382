"""Robustness fixes from the audit: hostile numbers in the typed columns and the report, ids
that are not the content's with ``--allow-invalid``, an archive inside its own inputs, and
export to a stream that is not a regular file."""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pytest

from kernel_evidence._codec.canonical import packet_id_for
from kernel_evidence._codec.decode import decode_one
from kernel_evidence.archive import archive_packets, build_report, read_table
from kernel_evidence.archive._rows import extract, extract_struct
from kernel_evidence.archive.schema import COLUMNS
from kernel_evidence.archive.writer import _peak_lookup
from kernel_evidence.cli import main
from kernel_evidence.io import write_packets

from ._factory import make_packet, make_packets

#: the float columns :func:`extract` fills (the last five columns come from the validator)
_FLOATS = [i for i, c in enumerate(COLUMNS[:-5]) if pa.types.is_floating(c.type)]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _with_id(d: dict[str, Any]) -> dict[str, Any]:
    d.pop("packet_id", None)
    d["packet_id"] = packet_id_for(d)
    return d


# -- hostile numbers: every typed column is finite or null ---------------------------------


def _times(value: float, unit: str = "us") -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        stats = d["timing"]["stats"]
        stats["unit"] = unit
        for k in ("median", "mean", "min", "ci_low", "ci_high"):
            stats[k] = value

    return edit


def _peaks(value: float) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        d["hardware"]["peak_flop_rate"] = {"value": value, "unit": "PFLOP/s"}
        d["hardware"]["peak_bandwidth"] = {"value": value, "unit": "TB/s"}

    return edit


def _work(value: float) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        d["task"]["work"] = {
            "flops": {"value": value, "unit": "TFLOP"},
            "bytes": {"value": value, "unit": "TB"},
        }

    return edit


def _baseline(value: float) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        b = d["timing"]["baseline"]["stats"]
        b["unit"] = "s"
        for k in ("median", "ci_low", "ci_high"):
            b[k] = value

    return edit


HOSTILE: dict[str, Callable[[dict[str, Any]], None]] = {
    "subnormal_times": _times(5e-324),  # the median underflows to 0 s: was a ZeroDivisionError
    "tiny_times": _times(1e-300),  # speedup bounds and the fraction overflow
    "zero_times": _times(0.0),
    "huge_times": _times(1e308, "s"),  # overflows in ns
    "subnormal_peaks": _peaks(5e-324),  # the roofline time overflows
    "huge_peaks": _peaks(1e308),  # overflows in FLOP/s
    "huge_work": _work(1e308),  # overflows in FLOP and bytes
    "tiny_work": _work(5e-324),
    "huge_baseline": _baseline(1e308),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_numbers_give_finite_or_null_columns(name: str) -> None:
    d = make_packet(0).to_dict()  # a passing packet with a baseline and a speedup
    HOSTILE[name](d)
    raw = msgspec.json.encode(_with_id(d))
    slow = extract(msgspec.json.decode(raw), _peak_lookup())
    one = decode_one(raw)
    assert one is not None  # every number is a finite float64: the struct path takes it
    fast = extract_struct(one[0], _peak_lookup())
    for i in _FLOATS:
        for row in (slow, fast):
            assert row[i] is None or math.isfinite(row[i]), (COLUMNS[i].name, row[i])
    assert slow == fast
    cols = dict(zip([c.name for c in COLUMNS], slow, strict=False))
    assert (cols["sol_fraction"] is None) == (cols["sol_bound"] is None)
    assert (cols["speedup_low"] is None) == (cols["speedup_high"] is None)


def test_batch_with_a_subnormal_median_keeps_every_packet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny = make_packet(0).to_dict()
    _times(5e-324)(tiny)
    tiny["timing"]["method"] = "host_clock"  # from CUDA events it is faster than a launch (KE505)
    del tiny["timing"]["speedup"]  # a claim over a time that underflows to 0 is infinite (KE303)
    (tmp_path / "tiny.json").write_bytes(msgspec.json.encode(_with_id(tiny)))
    write_packets(tmp_path / "good.json", [make_packet(1)])
    for inputs in ([tmp_path / "tiny.json", tmp_path / "good.json"], [tmp_path / "tiny.json"]):
        to = tmp_path / f"a{len(inputs)}"
        code, out, err = run(["archive", *map(str, inputs), "--to", str(to)], capsys)
        assert (code, err) == (0, "")
        assert out.startswith(f"{to}: {len(inputs)} added, 0 already present, 0 refused, ")
        rows = read_table(to, ["median_ns", "sol_fraction", "sol_bound"]).to_pylist()
        tiny_row = next(r for r in rows if r["median_ns"] < 1e-300)
        assert tiny_row["sol_fraction"] is None and tiny_row["sol_bound"] is None


def test_struct_and_reference_paths_agree_on_hostile_numbers(tmp_path: Path) -> None:
    """The same hostile packets as JSON objects (the core struct) and as the items of a
    JSON array (decoded data): the same archive."""
    lines = []
    for name in sorted(HOSTILE):
        d = make_packet(len(lines)).to_dict()
        HOSTILE[name](d)
        lines.append(msgspec.json.encode(_with_id(d)))
    (tmp_path / "objects.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "array.json").write_bytes(b"[" + b",".join(lines) + b"]")
    tables = []
    for src, to in (("objects.jsonl", "fast"), ("array.json", "slow")):
        summary = archive_packets([tmp_path / src], tmp_path / to, allow_invalid=True, parallel=False)
        assert (summary.added, summary.refused_count) == (len(lines), 0)
        tables.append(sorted(read_table(tmp_path / to).to_pylist(), key=lambda r: r["packet_id"]))
    assert tables[0] == tables[1]


# -- the report: absurd values of valid packets are drawn at the edge ----------------------


def _huge_speedup() -> dict[str, Any]:
    """A valid packet claiming a speedup near the float64 maximum (candidate 1e-8 ns,
    baseline 1.5e300 ns): its log2 axis ended at 2**1024, which overflows."""
    d = make_packet(3).to_dict()
    d["task"].pop("work")
    d["timing"]["method"] = "host_clock"  # from CUDA events 1e-8 ns is faster than a launch (KE505)
    stats = d["timing"]["stats"]
    stats["unit"] = "ns"
    for k in ("median", "mean", "min", "ci_low", "ci_high"):
        stats[k] = 1e-8
    base = d["timing"]["baseline"]["stats"]
    base["unit"] = "ns"
    for k in ("median", "ci_low", "ci_high"):
        base[k] = 1.5e300
    d["timing"]["speedup"]["value"] = 1.5e308
    return d


def _huge_sol() -> dict[str, Any]:
    """A packet of a known device with tiny peaks of its own (the archive reads the packet's
    peaks; a fraction of thousands drew a grid line every 25%, billions of them for a fraction
    of 1e9). KE607 now rejects a declared peak far below the table's, so it is archived with
    ``allow_invalid``, as a user may."""
    d = make_packet(6).to_dict()
    d["hardware"]["peak_flop_rate"] = {"value": 0.1, "unit": "TFLOP/s"}
    d["hardware"]["peak_bandwidth"] = {"value": 0.1, "unit": "GB/s"}
    return d


@pytest.mark.parametrize(
    ("make", "column", "least"), [(_huge_speedup, "speedup", 1e308), (_huge_sol, "sol_fraction", 1000)]
)
def test_report_axes_stay_bounded_for_absurd_valid_values(
    tmp_path: Path, make: Callable[[], dict[str, Any]], column: str, least: float
) -> None:
    src = tmp_path / "absurd.jsonl"
    src.write_bytes(msgspec.json.encode(_with_id(make())) + b"\n" + make_packet(0).to_json() + b"\n")
    summary = archive_packets([src], tmp_path / "a", allow_invalid=make is _huge_sol)
    assert (summary.added, summary.refused_count) == (2, 0)
    assert max(r[column] or 0 for r in read_table(tmp_path / "a", [column]).to_pylist()) > least
    html, n = build_report(tmp_path / "a")
    assert n == 2
    assert html.count('class="kev-grid') < 200  # a few dozen lines at most per chart


def test_report_time_axis_spans_years_1_to_9999(tmp_path: Path) -> None:
    # a float of the last microsecond of 9999 rounds into year 10000
    packets = []
    for i, when in enumerate(("0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z")):
        d = make_packet(i).to_dict()
        d["created_at"] = when
        packets.append(_with_id(d))
    src = tmp_path / "times.jsonl"
    src.write_bytes(b"".join(msgspec.json.encode(d) + b"\n" for d in packets))
    summary = archive_packets([src], tmp_path / "a", allow_invalid=True)  # a time far ahead is invalid
    assert summary.added == 2
    html, n = build_report(tmp_path / "a")
    # a span of years is labelled by dates (the clock only for spans within a day or two)
    assert n == 2 and ">0001-01-01</text>" in html and ">9999-12-31</text>" in html


# -- --allow-invalid: a packet under another packet's id is refused, not "already present"


def _forgeries(victim: dict[str, Any]) -> list[bytes]:
    """Three packets that carry ``victim``'s id and other content: one that decodes into the
    core struct (the validator finds KE004), one with a structural error and one that
    repeats a key (the validator stops before checking the id)."""
    decodes = dict(victim, status="failed")
    structural = dict(victim, status="x")
    text = msgspec.json.encode(victim)
    repeated = text.replace(b'"status":"passed"', b'"status":"passed","status":"failed"', 1)
    assert repeated != text
    return [msgspec.json.encode(decodes), msgspec.json.encode(structural), repeated]


def test_allow_invalid_refuses_a_packet_under_another_packets_id(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = json.loads((tmp_path / "in" / "packets.jsonl").read_bytes().splitlines()[0])
    assert victim["status"] == "passed"
    src = tmp_path / "forged.jsonl"
    src.write_bytes(b"\n".join(_forgeries(victim)) + b"\n")
    array = tmp_path / "forged.json"  # the same as the items of a JSON array: the reference path
    array.write_bytes(b"[" + b",".join(_forgeries(victim)) + b"]")
    before = snapshot(archive)
    for path, where in ((src, "line {}"), (array, "item {}")):
        code, out, err = run(["archive", "--allow-invalid", str(path), "--to", str(archive)], capsys)
        assert code == 1
        assert out == f"{archive}: 0 added, 0 already present, 3 refused, 0 files written\n"
        lines = err.splitlines()
        assert len(lines) == 3
        for i, line in enumerate(lines):
            loc = where.format(i + 1 if where.startswith("line") else i)
            assert line.startswith(f"refused: {path}:{loc}: KE004 packet_id does not match the content; ")
    assert snapshot(archive) == before


def test_allow_invalid_does_not_store_a_packet_under_an_id_that_is_not_its_own(tmp_path: Path) -> None:
    # the packet the id belongs to is not archived: the forgery would take its id
    victim = make_packet(0).to_dict()
    src = tmp_path / "forged.jsonl"
    src.write_bytes(b"\n".join(_forgeries(victim)) + b"\n")
    summary = archive_packets([src], tmp_path / "a", allow_invalid=True)
    assert (summary.added, summary.duplicates, summary.refused_count) == (0, 0, 3)
    assert all(r.reasons[0].startswith("KE004 ") for r in summary.refused)
    assert not (tmp_path / "a").exists()
    # with its own id, the invalid packet is stored (valid = false)
    own = tmp_path / "own.jsonl"
    own.write_bytes(b"\n".join(msgspec.json.encode(_with_id(json.loads(f))) for f in _forgeries(victim)[:2]))
    summary = archive_packets([own], tmp_path / "b", allow_invalid=True)
    assert (summary.added, summary.refused_count) == (2, 0)


def test_items_of_an_array_on_a_line_are_named_line_and_item(tmp_path: Path) -> None:
    src = tmp_path / "arrays.jsonl"
    src.write_bytes(b"[" + make_packet(0).to_json() + b", 5]\n")
    summary = archive_packets([src], tmp_path / "a")
    assert summary.added == 1
    assert [(r.location, r.reasons) for r in summary.refused] == [
        ("line 1, item 1", ["expected a JSON object (a packet), got int"])
    ]


# -- --to inside the inputs ----------------------------------------------------------------


def test_archive_inside_an_input_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = tmp_path / "runs"
    write_packets(inputs / "p.jsonl", make_packets(5))
    before = snapshot(inputs)
    to = inputs / "archive"
    code, out, err = run(["archive", str(inputs), "--to", str(to)], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"kevidence: error: {to}: inside the input directory {inputs}, which is read whole; "
        "put the archive outside the inputs\n"
    )
    # the archive as the input directory itself, and through a symbolic link
    code, _, err = run(["archive", str(inputs), "--to", str(inputs)], capsys)
    assert code == 2 and err.count("\n") == 1 and f"{inputs}: the archive {inputs} being written" in err
    (tmp_path / "link").symlink_to(inputs)
    code, _, err = run(["archive", str(tmp_path / "link"), "--to", str(inputs / "deep" / "er")], capsys)
    assert code == 2 and "inside the input directory" in err
    assert snapshot(inputs) == before and not to.exists()


def test_input_inside_the_archive_is_refused(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(archive)
    part = next(p for p in archive.iterdir() if p.is_dir())
    code, out, err = run(["archive", str(part), "--to", str(archive)], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"kevidence: error: {part}: inside the archive {archive} being written; archive packets from outside it\n"
    )
    assert snapshot(archive) == before
    # a file beside the archive, in the same parent directory, is fine
    write_packets(tmp_path / "more.jsonl", make_packets(2, month=12))
    code, _, _ = run(["archive", str(tmp_path / "more.jsonl"), "--to", str(archive)], capsys)
    assert code == 0


# -- export to a stream that is not a regular file ------------------------------------------


def test_export_to_a_named_pipe_is_a_jsonl_stream(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "out.json"  # a .json name: a regular file of that name holds one packet
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code, _, err = run(["export", str(archive), "-o", str(fifo)], capsys)
    finally:
        # a reader still waiting for a writer (the export refused before opening the pipe)
        # sees the end of the stream
        with contextlib.suppress(OSError):  # no reader waiting
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
    assert (code, err) == (0, f"{fifo}: 120 packets exported\n")
    lines = got[0].splitlines()
    assert len(lines) == 120 and all(json.loads(line)["packet_id"].startswith("sha256:") for line in lines)
    assert fifo.is_fifo()  # written in place, never replaced
