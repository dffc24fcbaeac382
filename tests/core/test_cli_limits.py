"""The command line at its limits: option bounds, a failing standard output, odd file names."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_evidence.cli import main
from kernel_evidence.cli._common import MAX_SIZE_LIMIT, shown
from kernel_evidence.strategies import example_packet

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "packets"
ONE = str(next(iter(sorted((EXAMPLES / "valid").glob("*.json")))))


@pytest.mark.parametrize("option", ["--max-record-bytes", "--max-decompressed-bytes"])
@pytest.mark.parametrize("value", [str(2**70), str(MAX_SIZE_LIMIT + 1), str(2**63)])
def test_size_limits_have_an_upper_bound(capsys, option: str, value: str) -> None:
    code = main(["validate", option, value, str(EXAMPLES / "valid")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and option in err


def test_the_largest_size_limit_is_accepted(capsys) -> None:
    code = main(["validate", "--max-decompressed-bytes", str(MAX_SIZE_LIMIT), str(EXAMPLES / "valid")])
    assert code == 0 and "7 valid" in capsys.readouterr().out


class _Full(io.StringIO):
    """A standard output on a full disk."""

    def write(self, s: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", str(EXAMPLES / "valid"), "--format", "json"],
        ["validate", "-v", str(EXAMPLES / "valid")],
        ["rules"],
        ["schema"],
        ["id", ONE],
        ["compare", ONE, ONE],
        ["replay", ONE],
        ["--version"],
    ],
)
def test_a_full_standard_output_is_one_line(capsys, monkeypatch, argv: list[str]) -> None:
    full = _Full()
    monkeypatch.setattr(sys, "stdout", full)
    assert main(argv) == 1
    assert sys.stdout is full  # put back
    assert capsys.readouterr().err == (
        "kevidence: error: cannot write to standard output: No space left on device\n"
    )


def _child(argv: list[str], stdout: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernel_evidence", *argv],
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", str(EXAMPLES / "valid"), "--format", "json"],
        ["rules"],
        ["schema"],
        ["id", ONE],  # one short line: it fails only when Python flushes it at exit
    ],
)
def test_dev_full_is_one_line_and_exit_1(argv: list[str]) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        proc = _child(argv, full)
    assert proc.returncode == 1
    assert proc.stderr == "kevidence: error: cannot write to standard output: No space left on device\n"


@pytest.mark.parametrize("argv", [["validate", "-v", str(EXAMPLES / "valid")], ["schema"], ["id", ONE]])
def test_a_closed_pipe_is_quiet(argv: list[str]) -> None:
    r, w = os.pipe()
    os.close(r)  # as `| head -0`: every write fails with EPIPE
    try:
        proc = _child(argv, w)
    finally:
        os.close(w)
    assert proc.returncode == 1 and proc.stderr == ""


def test_text_the_output_encoding_cannot_show_is_escaped(tmp_path: Path, monkeypatch) -> None:
    p = tmp_path / "µs.json"
    p.write_bytes(example_packet().to_json().replace(b'"median":180.0', b'"median":1.0'))
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="ascii", write_through=True))
    assert main(["validate", str(p)]) == 1
    assert "\\xb5s.json: invalid" in raw.getvalue().decode("ascii")


def test_shown_escapes_what_is_not_printable() -> None:
    assert shown("plain µ é/x.json") == "plain µ é/x.json"
    assert shown("a\nb\tc\x1b[31md\x00e\x7f") == "a\\nb\\tc\\x1b[31md\\x00e\\x7f"
    assert shown("rtl\u202eoverride") == "rtl\\u202eoverride"
    assert shown("bad\udcffbyte") == "bad\\xffbyte"  # a file name that is not UTF-8


def test_control_characters_in_file_names_stay_on_one_line(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "x\x1b[2J\ny.json"
    bad.write_bytes(b"{broken")
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and f"{tmp_path}/x\\x1b[2J\\ny.json: KE001" in out
    # an error message (through fail) keeps to one line and sends no escape sequence
    missing = str(tmp_path / "gone\x1b]0;title\x07\n.json")
    assert main(["compare", missing, missing]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err
    assert "gone\\x1b]0;title\\x07" in err


@pytest.mark.parametrize("command", ["validate", "archive"])
def test_the_largest_record_cap_reads_small_files(capsys, tmp_path: Path, command: str) -> None:
    """A read capped at --max-record-bytes does not set the cap aside first: a cap of
    2**62 bytes reads a small file (it asked for that much memory and ran out)."""
    argv = [command, "--max-record-bytes", str(MAX_SIZE_LIMIT), ONE]
    if command == "archive":
        argv += ["--to", str(tmp_path / "arch")]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "memory" not in err


def test_file_names_in_input_errors_and_id_lines_are_escaped(capsys, tmp_path: Path) -> None:
    """Every command's one-line errors show a file name with a newline or an escape
    sequence escaped, and `kevidence id` its output lines too."""
    good = tmp_path / "ok\x1b[2Jname.json"
    good.write_bytes(Path(ONE).read_bytes())
    bad = tmp_path / "bad\nname.json"
    bad.write_bytes(b'{"schema_version": ')
    code = main(["id", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "ok\\x1b[2Jname.json" in out and "\x1b" not in out
    assert "bad\\nname.json" in err and err.count("\n") == 1
    code = main(["validate", str(bad)])
    out, err = capsys.readouterr()
    assert code == 1 and "bad\\nname.json: KE001" in out
