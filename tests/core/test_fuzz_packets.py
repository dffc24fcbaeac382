"""Regressions found by mutation-fuzzing the packet-level commands (validate, id, archive,
export, report) and the library calls behind them: small inline inputs, one per defect."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli import GOOD, run, write

import kernel_evidence as ke
from kernel_evidence.errors import ArchiveError

EMPTY = "empty JSON array; expected a packet or an array of packets"


def test_validate_bytes_of_an_empty_array_is_a_finding_not_stop_iteration() -> None:
    report = ke.validate(b"[]")
    assert not report.ok
    assert [f.rule_id for f in report.findings] == ["KE001"]
    assert "empty JSON array" in report.findings[0].message


def test_validate_cli_names_a_file_holding_an_empty_array(tmp_path, capsys) -> None:
    path = write(tmp_path, "empty.json", b"[]\n")
    code, out, err = run(capsys, "validate", path)
    assert code == 1
    assert f"{path}: KE001 error: empty JSON array; expected a packet" in out
    assert "1 file(s)" in out and "Traceback" not in out + err


def test_id_refuses_an_empty_array_and_writes_nothing(tmp_path, capsys) -> None:
    path = write(tmp_path, "empty.json", b"[]")
    out_path = tmp_path / "out.jsonl"
    code, out, err = run(capsys, "id", path, "-o", str(out_path))
    assert code == 1
    assert err == f"kevidence: error: {path}: empty JSON array; expected a packet or an array of packets\n"
    assert not out_path.exists()


def test_archive_refuses_an_empty_array_instead_of_skipping_it(tmp_path) -> None:
    empty = write(tmp_path, "empty.json", b"[]")
    good = write(tmp_path, "good.json", GOOD)
    refused: list[ke.archive.Refusal] = []
    summary = ke.archive.archive_packets([empty, good], tmp_path / "arch", on_refusal=refused.append)
    assert summary.added == 1
    assert [(r.source, r.reasons) for r in refused] == [(empty, [EMPTY])]


def _archive_with_dangling_file(tmp_path: Path) -> Path:
    root = tmp_path / "arch"
    ke.archive.archive_packets([write(tmp_path, "good.json", GOOD)], root)
    (part,) = root.rglob("*.parquet")
    part.unlink()
    part.symlink_to(tmp_path / "gone.parquet")
    return part


def test_archive_with_a_dangling_data_file_is_an_archive_error(tmp_path) -> None:
    part = _archive_with_dangling_file(tmp_path)
    with pytest.raises(ArchiveError, match="no such file"):
        ke.archive.read_table(tmp_path / "arch")
    assert str(part) in str(pytest.raises(ArchiveError, ke.archive.open_archive, tmp_path / "arch").value)


def test_export_of_an_archive_with_a_dangling_data_file_says_what_is_wrong(tmp_path, capsys) -> None:
    part = _archive_with_dangling_file(tmp_path)
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"kept\n")
    code, _, err = run(capsys, "export", str(tmp_path / "arch"), "-o", str(out), "--force")
    assert code == 1
    assert err == f"kevidence: error: {part}: no such file (a missing data file or a broken link)\n"
    assert out.read_bytes() == b"kept\n"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"a":', "JSON truncated after 5 bytes"),
        (b'{"schema_version": 1, "x": [', "JSON truncated after 28 bytes"),
        (b'{"a": 1,}', "malformed JSON at line 1, column 9 (byte 8)"),
        (b'[{"a": 1}, {', "JSON truncated after 12 bytes"),
    ],
)
def test_truncated_or_malformed_json_is_reported_before_an_unknown_field(data, expected) -> None:
    report = ke.validate(data)
    assert [f.rule_id for f in report.findings] == ["KE001"]
    assert report.findings[0].message.startswith(expected)


def test_validate_bytes_of_several_packets_is_a_finding_not_the_first_alone() -> None:
    # validate() checks one packet: an array of two was reported on its first packet only,
    # the second never looked at; an array of one is that packet
    import json

    import kernel_evidence as ke
    from kernel_evidence.strategies import example_packet

    good = example_packet().to_dict()
    report = ke.validate(json.dumps([good, good]).encode())
    assert not report.ok
    assert [f.rule_id for f in report.findings] == ["KE001"]
    assert "an array of 2 packets" in report.findings[0].message
    assert ke.validate(json.dumps([good]).encode()).ok
