"""``--where`` filters: parsed, typed, never evaluated as code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_evidence.archive import WhereError, export_packets, iter_packets, parse_where


def _ids(archive: Path, *where: str) -> list[dict]:
    return [json.loads(b) for b in iter_packets(archive, list(where))]


def test_filters(archive: Path) -> None:
    failed = _ids(archive, "status=failed")
    assert failed and all(p["status"] == "failed" for p in failed)
    amd = _ids(archive, "vendor=amd", "month=2026-10")
    assert amd and all(
        p["hardware"]["vendor"] == "amd" and p["created_at"].startswith("2026-10") for p in amd
    )
    fast = _ids(archive, "speedup>=1.5")
    assert fast and all(p["timing"]["speedup"]["value"] >= 1.5 for p in fast)
    either = _ids(archive, "failure_class=nan_inf|timeout")
    assert {p["failure"]["failure_class"] for p in either} == {"nan_inf", "timeout"}
    late = _ids(archive, "created_at>=2026-11-15")
    assert late and all(p["created_at"] >= "2026-11-15" for p in late)
    no_fail = _ids(archive, "failure_class=null")
    assert all("failure" not in p for p in no_fail) and len(no_fail) == 96
    assert len(_ids(archive, "failure_class!=null")) == 24
    assert _ids(archive, "run_id=nope") == []


def test_export_where_writes_only_matches(archive: Path, tmp_path: Path) -> None:
    n = export_packets(archive, tmp_path / "f.jsonl", where=["status=error"])
    lines = (tmp_path / "f.jsonl").read_bytes().splitlines()
    assert n == len(lines) == 6  # make_packets: every 20th packet is an error
    assert all(json.loads(x)["status"] == "error" for x in lines)
    with pytest.raises(FileExistsError):
        export_packets(archive, tmp_path / "f.jsonl")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "status",
            "cannot read filter `status`; expected COLUMN OP VALUE with OP one of = != < <= > >=",
        ),
        (
            "__import__('os')=1",
            "cannot read filter `__import__('os')=1`; expected COLUMN OP VALUE with OP one of = != < <= > >=",
        ),
        ("nope=1", "unknown column `nope` in filter `nope=1`; see docs/archive.md for the columns"),
        ("speedup>fast", "`speedup` holds double values; cannot read `fast` as one"),
        (
            "dtypes=bf16",
            "cannot filter on `dtypes` (list<item: string>); filter on a scalar column",
        ),
        ("speedup>null", "`null` only goes with = or != in filter `speedup>null`"),
        ("valid=maybe", "`valid` holds bool values; cannot read `maybe` as one"),
        (
            "created_at>yesterday",
            "`created_at` holds timestamp[us, tz=UTC] values; cannot read `yesterday` as one",
        ),
    ],
)
def test_bad_filters(text: str, message: str) -> None:
    with pytest.raises(WhereError) as exc:
        parse_where([text])
    assert str(exc.value) == message


def test_cli_where_usage_error(archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernel_evidence.cli import main

    assert main(["export", str(archive), "-o", str(tmp_path / "x.jsonl"), "--where", "nope=1"]) == 2
    assert capsys.readouterr().err == (
        "kevidence: error: --where: unknown column `nope` in filter `nope=1`; "
        "see docs/archive.md for the columns\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "iteration>-9223372036854775809",  # one past int64
        "iteration=1|99999999999999999999999",
        "subject_name=\udcff",  # a lone surrogate: not Unicode text
    ],
)
def test_values_that_do_not_fit_the_column(text: str) -> None:
    with pytest.raises(WhereError, match=r"the value does not fit `(iteration|subject_name)`"):
        parse_where([text])
