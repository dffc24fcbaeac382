"""Rough edges of the command line met with the start-up work: progress for `archive` and
`validate`, `schema --schema-version` (the old `--version` spelling kept), and `compare`
saying which packets it compared."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from kernel_evidence.cli import main
from kernel_evidence.cli._progress import Counter, known_total
from kernel_evidence.cli.validate import _shown_count

ROOT = Path(__file__).resolve().parents[2]
VALID = ROOT / "examples" / "packets" / "valid"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_counter_shows_count_total_and_rate() -> None:
    stream = _Tty()
    c = Counter("archiving", 4000, stream=stream)
    c.add(1200)
    text = stream.getvalue()
    assert text.startswith("\rarchiving: 1,200 of 4,000 packets (30%)")
    assert text.rstrip().endswith("/s")
    c.close()
    assert stream.getvalue().endswith("\r")
    # past a wrong total (a JSON array of several packets): the count alone
    c = Counter("archiving", 1, stream=_Tty())
    c.count = 3
    assert c.line().startswith("archiving: 3 packets")


def test_counter_is_silent_off_a_terminal() -> None:
    stream = io.StringIO()
    c = Counter("archiving", None, stream=stream)
    c.add(10)
    c.close()
    assert stream.getvalue() == "" and c.count == 10


def test_known_total(tmp_path: Path) -> None:
    for p in VALID.glob("*.json"):
        shutil.copy(p, tmp_path / p.name)
    n = len(list(VALID.glob("*.json")))
    assert known_total([str(tmp_path)]) == n
    (tmp_path / "more.jsonl").write_text("")
    assert known_total([str(tmp_path)]) is None  # JSONL: only reading tells
    assert known_total(["-"]) is None
    assert _shown_count(3, None) == "3 packets" and _shown_count(1200, 4000) == "1,200 of 4,000 packets"


def test_archive_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n = len(list(VALID.glob("*.json")))
    code, out, err = _run(capsys, "archive", "--progress", str(VALID), "--to", str(tmp_path / "a"))
    assert code == 0, err
    assert out.startswith(f"{tmp_path / 'a'}: {n} added")
    assert f"archiving: {n} of {n} packets (100%)" in err
    code, out, err = _run(capsys, "archive", str(VALID), "--to", str(tmp_path / "b"))
    assert code == 0 and "archiving" not in err  # not a terminal: no progress line


def test_validate_progress_runs_with_and_without_a_total(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    array = tmp_path / "array.json"
    packets = [json.loads(p.read_text()) for p in sorted(VALID.glob("*.json"))[:2]]
    array.write_text(json.dumps(packets))  # two packets in a file counted as one
    for paths in ([str(VALID)], [str(array)]):
        code, out, _ = _run(capsys, "validate", "--progress", *paths)
        assert code == 0 and out.startswith("ok: ")


def test_schema_version_option_and_its_old_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    code, new, err = _run(capsys, "schema", "--schema-version", "0.1")
    assert code == 0 and err == ""
    code, short, _ = _run(capsys, "schema", "-s", "0.1")
    code_old, old, err_old = _run(capsys, "schema", "--version", "0.1")
    assert code == code_old == 0 and new == short == old
    assert err_old == "kevidence: note: `schema --version` is now `schema --schema-version`\n"
    assert json.loads(new) != json.loads(_run(capsys, "schema")[1])  # 0.1, not the current one
    code, _, err = _run(capsys, "schema", "--version", "0.1", "--schema-version", "0.2")
    assert code == 2 and "once" in err
    code, out, _ = _run(capsys, "--version")
    assert code == 0 and out.startswith("kevidence ")


def test_compare_names_the_packets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = VALID / "nvidia_h100_gemm_vs_cublaslt.json"
    data = json.loads(a.read_text())
    code, out, _ = _run(capsys, "compare", str(a), str(a))
    lines = out.splitlines()
    want = f"{data['subject']['name']} {data['packet_id'][:19]}…, {data['status']}"
    assert lines[0] == f"A: {a}: {want}"
    assert lines[1] == f"B: {a}: {want}"
    code, out, _ = _run(capsys, "compare", "--format", "json", str(a), str(a))
    doc = json.loads(out)
    assert doc["a_packet"]["packet_id"] == data["packet_id"]
    assert doc["b_packet"]["subject"] == data["subject"]["name"]
