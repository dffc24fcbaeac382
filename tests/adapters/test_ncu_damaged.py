"""Nsight Compute adapter on damaged inputs (found by a fuzzing audit): a one-line error
naming file and place, or a packet whose warnings say what could not be read; never a
traceback and never numbers read from the wrong cell."""

from __future__ import annotations

import csv
import gzip
import hashlib
import importlib.util
import io
import os
import sys
from pathlib import Path

import pytest

from kernel_evidence._ingest import ingest
from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.ncu import ADAPTER
from kernel_evidence.errors import AdapterError, InputError, LimitExceeded
from kernel_evidence.models import EvidencePacket

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
T0 = "2026-11-22T00:00:00Z"
HAVE_NCU_REPORT = importlib.util.find_spec("ncu_report") is not None
DURATIONS = ["2,048.5", "2,050.25", "2,049.0", "2,051.0"]


def read(path: Path | str, **extra: object) -> EvidencePacket:
    packets = ADAPTER.read([str(path)], AdapterOptions(created_at=T0, extra=dict(extra))).packets
    assert len(packets) == 1
    EvidencePacket.model_validate(packets[0].to_dict())
    return packets[0]


def warnings(packet: EvidencePacket) -> list[str]:
    return list(packet.profiler[0].warnings or [])  # type: ignore[index]


def raw_page(durations: list[str], *, prefix: str = "", kernel: str = "attn") -> str:
    """A quoted raw page: one kernel name, one row per duration (usecond)."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(["ID", "Process ID", "Kernel Name", "Block Size", "Grid Size", "gpu__time_duration.sum",
                "launch__registers_per_thread", "launch__block_size"])  # fmt: skip
    w.writerow(["", "", "", "", "", "usecond", "register/thread", ""])
    for i, d in enumerate(durations):
        w.writerow([str(i), "7", kernel, "(128, 1, 1)", "(64, 1, 1)", d, "255", "128"])
    return prefix + buf.getvalue()


# ------------------------------------------------------------------------- 1. read caps


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_input_linked_to_dev_zero_stops_at_the_cap(tmp_path: Path) -> None:
    link = tmp_path / "raw.csv"
    link.symlink_to("/dev/zero")
    with pytest.raises(AdapterError) as exc:
        ingest("ncu", [str(link)], created_at=T0, extra={"max_bytes": str(1 << 20)})
    assert str(exc.value).startswith(f"{link}: larger than the 1 MiB cap for one input; expected ncu --csv")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_report_name_on_a_device_is_refused_unread(tmp_path: Path) -> None:
    link = tmp_path / "run.ncu-rep"
    link.symlink_to("/dev/zero")
    with pytest.raises(InputError) as exc:
        read(link)
    assert (
        str(exc.value) == f"{link}: not a regular file (a device or a pipe); expected an .ncu-rep report file"
    )


def test_a_sparse_file_over_the_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "raw.csv"
    with open(big, "wb") as fh:
        fh.truncate((1 << 20) + 1)  # sparse: nothing is written, nothing should be read
    with pytest.raises(AdapterError, match=r"raw\.csv: larger than the 1 MiB cap for one input"):
        ingest("ncu", [str(big)], created_at=T0, extra={"max_bytes": str(1 << 20)})
    rep = tmp_path / "big.ncu-rep"
    with open(rep, "wb") as fh:
        fh.write(b"NVR\x00")
        fh.truncate((1 << 20) + 1)
    with pytest.raises(AdapterError, match=r"big\.ncu-rep: larger than the 1048576 bytes cap"):
        read(rep, max_bytes=str(1 << 20))


def test_the_cap_applies_to_stdin_and_hashing_still_runs_while_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (FIX / "raw_clean.csv").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    with pytest.raises(LimitExceeded, match=r"<stdin>: larger than the 100 bytes cap"):
        read("-", max_bytes="100")
    path = tmp_path / "raw.csv"
    path.write_bytes(data)
    p = read(path, max_bytes=str(len(data)))  # exactly at the cap: read
    source = p.profiler[0].source  # type: ignore[index]
    assert source is not None and source.sha256 == "sha256:" + hashlib.sha256(data).hexdigest()
    assert source.size is not None and source.size.value == len(data)


def test_an_empty_path_is_not_the_working_directory() -> None:
    with pytest.raises(InputError, match=r"^'': empty path; expected a file, a directory or - for stdin$"):
        read("")


# ------------------------------------------------------ 2. values that are not numbers


@pytest.mark.parametrize("bad", ["abc", "nan", "-inf", "1e999"])
@pytest.mark.parametrize("noise", [False, True], ids=["fast", "tolerant"])
def test_raw_page_value_that_is_not_a_number_is_named(tmp_path: Path, bad: str, noise: bool) -> None:
    path = tmp_path / "raw.csv"
    path.write_text(raw_page([bad, *DURATIONS[1:]], prefix="==PROF== Disconnected\n" if noise else ""))
    p = read(path)
    cap = p.profiler[0]  # type: ignore[index]
    assert cap.raw_columns is not None and cap.raw_columns["gpu__time_duration.sum"][0] == bad  # kept as text
    assert (
        f"`gpu__time_duration.sum` of launch ID 0 is `{bad}`, not a finite number: kept as text in "
        "raw_columns only; the duration of launch ID 0 could not be read, so the timing stats leave it out"
    ) in warnings(p)
    assert p.timing is not None and p.timing.stats is not None and p.timing.stats.n == 3


def test_details_and_text_page_values_that_are_not_numbers_are_named(tmp_path: Path) -> None:
    details = tmp_path / "details.csv"
    text = (FIX / "details_rules_ragged_two_processes.csv").read_text()
    details.write_text(text.replace('"Duration","us","0.25"', '"Duration","us","nan"'))
    w = warnings(read(details))
    assert any(
        x.startswith("`Duration` of launch ID 1 (process 4242) is `nan`, not a finite number")
        and "the duration of launch ID 1 (process 4242) could not be read" in x
        for x in w
    ), w
    page = tmp_path / "text.txt"
    page.write_text((FIX / "text_new_style.txt").read_text().replace("1.5\n", "1e999\n"))
    p = read(page)
    assert any(x.startswith("`Duration` of launch ID 1 is `1e999`, not a finite number") for x in warnings(p))
    assert p.timing is not None and p.timing.stats is not None and p.timing.stats.n == 1


def test_many_bad_values_are_counted_in_one_warning(tmp_path: Path) -> None:
    path = tmp_path / "raw.csv"
    path.write_text(raw_page(["x", "y", "z", "w", "2,051.0"]))
    (w,) = [x for x in warnings(read(path)) if "gpu__time_duration.sum" in x]
    assert w.startswith(
        "`gpu__time_duration.sum` is not a finite number in 4 launches (ID 0: `x`, ID 1: `y`, ID 2: `z` and 1 more)"
    )
    assert w.endswith("the duration of 4 launches could not be read, so the timing stats leave them out")


# --------------------------------------------------- 3. header and rows that disagree


def _drop_header_cell(text: str, name: str) -> str:
    at = text.index('"ID","Process ID"')
    end = text.index("\n", at)
    return text[:at] + text[at:end].replace(f'"{name}",', "", 1) + text[end:]


def test_raw_header_missing_a_column_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "raw.csv"
    path.write_text(_drop_header_cell((FIX / "raw_clean.csv").read_text(), "Grid Size"))
    with pytest.raises(InputError) as exc:
        read(path)
    assert str(exc.value) == (
        f"{path}:line 1: the raw-page header has 25 columns but rows have 26 (3 of 3 rows): header and "
        "rows disagree, so values cannot be assigned to columns; expected one cell per header column"
    )


def test_raw_rows_missing_a_column_are_an_error(tmp_path: Path) -> None:
    rows = list(csv.reader(io.StringIO((FIX / "raw_clean.csv").read_text())))
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(rows[0])
    w.writerow(rows[1])
    for r in rows[2:]:
        w.writerow(r[:9] + r[10:])  # one cell (Device) missing from every launch row
    path = tmp_path / "raw.csv"
    path.write_text(buf.getvalue())
    with pytest.raises(
        InputError, match=r"raw\.csv:line 1: the raw-page header has 26 columns but rows have 25"
    ):
        read(path)


def test_details_header_missing_a_column_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "details.csv"
    path.write_text(_drop_header_cell((FIX / "details_old_nvtx_units.csv").read_text(), "Metric Unit"))
    with pytest.raises(
        InputError,
        match=r"details\.csv:line 3: the details-page header has 13 columns but rows have 14 \(8 of 8 rows\)",
    ):
        read(path)


def test_a_few_ragged_raw_rows_are_still_padded(tmp_path: Path) -> None:
    text = raw_page(DURATIONS)
    lines = text.splitlines(keepends=True)
    lines[3] = lines[3].replace(',"255","128"\n', "\n")  # one short row of four
    path = tmp_path / "raw.csv"
    path.write_text("".join(lines))
    p = read(path)
    assert "1 short row(s) were padded with empty cells" in warnings(p)
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    assert kernels[1].metrics is not None and "registers_per_thread" not in kernels[1].metrics
    assert kernels[0].metrics is not None and kernels[0].metrics["registers_per_thread"].value == 255.0


def test_a_raw_row_cut_inside_a_cell_drops_that_cell(tmp_path: Path) -> None:
    text = raw_page(DURATIONS)
    cut = text[: text.rindex('"2,051.0"') + len('"2,05')]  # ncu killed mid-value
    path = tmp_path / "raw.csv"
    path.write_text(cut)
    p = read(path)
    assert (
        "the file ends inside line 6 (launch ID 3): the row is cut off after 6 of 8 cells; its last cell "
        "`2,05` may be cut short and was dropped"
    ) in warnings(p)
    cap = p.profiler[0]  # type: ignore[index]
    assert cap.raw_columns is not None and cap.raw_columns["gpu__time_duration.sum"][3] is None  # not 2.05


def test_a_details_row_cut_inside_its_value_is_skipped(tmp_path: Path) -> None:
    text = (FIX / "details_old_nvtx_units.csv").read_text()
    path = tmp_path / "details.csv"
    path.write_text(text[: text.index('"1,048,576"') + len('"1,048')])  # would read as 1,048
    p = read(path)
    assert (
        "the file ends inside line 9 (launch ID 0): the row is cut off in its cell 14 (`1,048`, maybe cut "
        "short); it was skipped"
    ) in warnings(p)
    assert "grid_size" not in (p.profiler[0].kernels[0].metrics or {})  # type: ignore[index]


# -------------------------------------------------------------- 4. damaged .ncu-rep


def _container(*blocks: tuple[bytes, int]) -> bytes:
    """An ncu report container: preamble, file header, blocks of (header, payload size)."""
    out = b"NVR\x00" + (2).to_bytes(4, "little") + b"\x08\x07"
    for header, payload in blocks:
        body = header + b"\x28" + bytes([payload])  # field 5 (payload size), a one-byte varint
        out += len(body).to_bytes(4, "little") + body + b"\x00" * payload
    return out


def test_container_check_finds_a_cut(tmp_path: Path) -> None:
    from kernel_evidence.adapters.ncu._rep import container_problem

    whole = _container((b"\x08\x00", 0), (b"\x08\x01", 100), (b"\x08\x00", 0))
    path = tmp_path / "r.ncu-rep"
    path.write_bytes(whole)
    assert container_problem(str(path)) is None
    path.write_bytes(whole[:-1])
    assert container_problem(str(path)) == (
        f"the file ends at byte {len(whole) - 1} but the header of the block that starts at byte "
        f"{len(whole) - 8} needs {len(whole)}"
    )
    path.write_bytes(whole[:60])
    assert (
        container_problem(str(path))
        == "the file ends at byte 60 but the block that starts at byte 18 needs 126"
    )
    path.write_bytes(whole[:10])
    assert container_problem(str(path)) == "the file holds nothing after its 10-byte header"
    path.write_bytes(b"NVR\x00" + (2).to_bytes(4, "little") + b"\x08\x07" + b"\xff" * 64)
    assert container_problem(str(path)) is None  # a layout this check does not know: no verdict


@pytest.mark.skipif(not HAVE_NCU_REPORT, reason="the ncu extra (ncu-report) is not installed")
@pytest.mark.parametrize("damage", ["cut25", "cut50", "zeros_mid", "bits", "cut10", "minus1"])
def test_damaged_report_is_refused(corpus: Path, tmp_path: Path, damage: str) -> None:
    data = bytearray((corpus / "ncu" / "speedy_scan_profile.ncu-rep").read_bytes())
    n = len(data)
    if damage == "cut25":
        data = data[: n // 4]
    elif damage == "cut50":
        data = data[: n // 2]
    elif damage == "cut10":
        data = data[:10]
    elif damage == "minus1":
        data = data[:-1]
    elif damage == "zeros_mid":
        data[n // 2 - 2048 : n // 2 + 2048] = bytes(4096)
    else:
        for k in range(20):  # the same 20 bits every run
            data[1000 + k * (n - 2000) // 20] ^= 1 << (k % 8)
    path = tmp_path / "speedy.ncu-rep"
    path.write_bytes(bytes(data))
    with pytest.raises(InputError) as exc:
        read(path)
    msg = str(exc.value)
    assert msg.startswith(f"{path}: the report is truncated or damaged") and "\n" not in msg


# ------------------------------------------------------------------- 5. cut text page


def test_text_page_cut_inside_a_table_says_so(tmp_path: Path) -> None:
    text = (FIX / "text_new_style.txt").read_text()
    path = tmp_path / "text.txt"
    path.write_text(text[: text.index("1.5\n") + 1])  # inside the last row: "...msecond   1"
    p = read(path)
    w = warnings(p)
    assert any(
        x.startswith(
            "the text page ends inside launch ID 1 (process 31337)'s `GPU Speed Of Light Throughput` table"
        )
        and x.endswith("may be cut short and was dropped")
        for x in w
    ), w
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    assert "duration" not in (kernels[1].metrics or {})  # not 1 ms
    path.write_text(text[: text.index("1.5\n") + 4])  # the row whole, the closing ruler missing
    assert any(x.startswith("the text page ends inside launch ID 1") for x in warnings(read(path)))
    after_kernel_line = text.index("\n", text.index("  k(float *, int) (2, 1, 1)")) + 1
    path.write_text(text[:after_kernel_line])
    assert (
        "the last launch, launch ID 1 (process 31337), has no metric table: the file may be cut off after it"
    ) in warnings(read(path))


@pytest.mark.parametrize(
    "name",
    [
        "raw_clean.csv",
        "raw_clean_with_noise.csv",
        "raw_units_nvtx_ragged.csv",
        "details_rules_ragged_two_processes.csv",
        "details_old_nvtx_units.csv",
        "text_new_style.txt",
        "summary_per_kernel.txt",
    ],
)
def test_whole_files_get_no_damage_warnings(name: str) -> None:
    damage = ("cut off", "NUL", "finite number", "more than one row", "repeat a metric", "did not match")
    assert not [w for w in warnings(read(FIX / name)) if any(d in w for d in damage)]


def test_text_page_cut_between_launches_is_caught_by_the_profiling_lines(tmp_path: Path) -> None:
    text = (FIX / "text_new_style.txt").read_text()
    text = text.replace(
        '==PROF== Profiling "k" - 0: 0%....50%....100% - 9 passes\n',
        '==PROF== Profiling "k" - 0: 0%....50%....100% - 9 passes\n'
        '==PROF== Profiling "k" - 1: 0%....50%....100% - 9 passes\n'
        '==PROF== Profiling "k" - 2: 0%....50%....100% - 9 passes\n',
    )
    path = tmp_path / "text.txt"
    path.write_text(text)
    assert (
        "the log announces 3 profiled kernel launches (`==PROF== Profiling` lines) but the text page "
        "holds 2: the others are missing (the file may be cut off)"
    ) in warnings(read(path))


# --------------------------------------------------------------- 6. NUL / not UTF-8


def test_nul_bytes_and_invalid_utf8_inside_rows_are_counted_and_stripped(tmp_path: Path) -> None:
    noise = "".join(f"program output line {i}\n" for i in range(300))  # past the first 4 KiB
    text = raw_page(DURATIONS, prefix=noise)
    data = text.encode().replace(b'"1","7","attn"', b'"1","7","at\x00\x00tn"', 1)
    data = data.replace(b'"register/thread"', b'"register/\xff\xfethread"', 1)
    data = data.replace(b'"usecond"', b'"use\x00cond"', 1)
    path = tmp_path / "raw.csv"
    path.write_bytes(data)
    p = read(path)
    assert (
        "3 cell(s) held NUL bytes or bytes that are not UTF-8 (first at line 302): NUL bytes were "
        "removed, other bytes read as U+FFFD; the file is damaged there"
    ) in warnings(p)
    kernels = p.profiler[0].kernels or []  # type: ignore[index]
    assert [k.name for k in kernels] == ["attn"] * 4
    units = p.profiler[0].raw_units or {}  # type: ignore[index]
    assert units["launch__registers_per_thread"] == "register/\ufffd\ufffdthread"
    assert units["gpu__time_duration.sum"] == "usecond"  # NUL removed: the unit converts
    assert kernels[0].metrics is not None and kernels[0].metrics["duration"].value == 2048500.0


# ------------------------------------------------------------------ 7. duplicate IDs


def test_duplicated_launch_rows_are_named(tmp_path: Path) -> None:
    lines = raw_page(DURATIONS).splitlines(keepends=True)
    path = tmp_path / "raw.csv"
    path.write_text("".join([*lines, lines[3], lines[4], lines[4]]))
    p = read(path)
    assert (
        "2 launch ID(s) appear on more than one row (1 x2, 2 x3): each row is kept as a launch, so those "
        "launches are counted more than once (a repeated row?)"
    ) in warnings(p)


def test_duplicated_details_rows_are_named(tmp_path: Path) -> None:
    lines = (FIX / "details_rules_ragged_two_processes.csv").read_text().splitlines(keepends=True)
    assert '"Duration"' in lines[7]
    path = tmp_path / "details.csv"
    path.write_text("".join([*lines[:8], lines[7], *lines[8:]]))
    assert (
        "1 metric row(s) repeat a metric already read for the same launch and section (first: launch ID "
        "0's `Duration` at line 9); a repeat is kept as `<Section>/<name>` (a repeated row?)"
    ) in warnings(read(path))


# ---------------------------------------------------------- 8. NUL bytes up front


def test_text_with_nul_bytes_up_front_is_not_called_binary(tmp_path: Path) -> None:
    data = (FIX / "text_new_style.txt").read_bytes()
    at = data.index(b"Context 1")
    path = tmp_path / "text.txt"
    path.write_bytes(data[:at] + b"\x00\x00\x00\x00" + data[at + 4 :])
    line = data.count(b"\n", 0, at) + 1
    with pytest.raises(InputError) as exc:
        read(path)
    assert str(exc.value) == (
        f"{path}:line {line}: text with NUL bytes (the first at byte {at}), not a binary report: the file "
        "is damaged; expected ncu --csv output, a text page or an .ncu-rep report"
    )
    packed = tmp_path / "raw.csv"
    packed.write_bytes(gzip.compress((FIX / "raw_clean.csv").read_bytes()))
    with pytest.raises(InputError, match=r"raw\.csv: binary file that is not an \.ncu-rep report"):
        read(packed)
    # UTF-16 (PowerShell's `>`) is not damage: it is decoded (tests/adapters/test_ncu.py)
    wide = tmp_path / "wide.csv"
    wide.write_bytes((FIX / "raw_clean.csv").read_text().encode("utf-16"))
    assert len(read(wide).profiler[0].kernels or []) == len(
        read(FIX / "raw_clean.csv").profiler[0].kernels or []
    )  # type: ignore[index]
    cut = tmp_path / "cut16.csv"
    cut.write_bytes(
        b"\xff\xfe" + "ID,".encode("utf-16-le") + b"\x00\xdc" + "x\n".encode("utf-16-le")
    )  # lone surrogate
    with pytest.raises(InputError, match=r"cut16\.csv:byte \d+: UTF-16 text that does not decode"):
        read(cut)
