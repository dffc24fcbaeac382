"""Hostile and unusual values for the options of `kevidence ingest` and `kevidence schema`:
one-line errors with the right exit code, never a traceback, and packets that hold what
the user asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_evidence._ingest import OptionError, ingest, parse_set
from kernel_evidence.cli import main

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
RAW = str(FIX / "raw_clean.csv")
T0 = "2026-11-22T00:00:00Z"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, code: int, expected: int, *needles: str) -> None:
    assert code == expected, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kevidence: error: "), err
    for needle in needles:
        assert needle in lines[0], err


def _base(tmp_path: Path, **fields: object) -> Path:
    (p,) = ingest("ncu", [RAW], created_at=T0, replay_cmd="python b.py").packets
    data = p.to_dict()
    data.pop("packet_id", None)
    for key, value in fields.items():
        if key == "baseline":
            data["timing"]["baseline"] = value
        else:
            data[key] = value
    path = tmp_path / "base.json"
    path.write_text(json.dumps(data))
    return path


# ------------------------------------------------------------------------------ --replay-cmd


@pytest.mark.parametrize(
    "cmd",
    [
        "python x.py | tee log",
        "python x.py > log 2>&1",
        "make && ./bench",
        "CUDA_VISIBLE_DEVICES=0 python x.py",
        'python "$HOME/x.py"',
        "python x.py $(cat args)",
        "python a.py\npython b.py",
        "python x.py  # comment",
    ],
)
def test_replay_cmd_with_shell_syntax_is_recorded_as_a_shell_command(cmd: str) -> None:
    (p,) = ingest("ncu", [RAW], replay_cmd=cmd, created_at=T0).packets
    assert p.replay is not None
    assert p.replay.command == [cmd.strip()]
    assert p.replay.shell is True


def test_replay_cmd_with_quoted_operators_stays_an_argv() -> None:
    cmd = "python x.py --msg 'a | b' \"c > d\" e\\;f x#y"
    (p,) = ingest("ncu", [RAW], replay_cmd=cmd, created_at=T0).packets
    assert p.replay is not None
    assert p.replay.command == ["python", "x.py", "--msg", "a | b", "c > d", "e;f", "x#y"]
    assert not p.replay.shell


def test_replay_cmd_nul_byte_is_a_usage_error() -> None:
    with pytest.raises(OptionError, match="NUL"):
        ingest("ncu", [RAW], replay_cmd=["python", "a\0b"])


# ------------------------------------------------------------- text that is not UTF-8 (argv)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--replay-cmd", "python \udcff.py"),
        ("--baseline", "cuBLAS\udcff:12:gemm"),
        ("--set", "subject.name=\udcff"),
        ("--set", 'extensions.org:x.y="\\udcff"'),
        ("--opt", "max_bytes=\udcff"),
    ],
)
def test_option_text_that_is_not_utf8_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    code, out, err = run(capsys, "ingest", "ncu", RAW, option, value)
    one_line_error(err, code, 2, option)
    assert out == ""


# ------------------------------------------------------------------------------------- --set


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_set_nan_is_text_not_null(value: str) -> None:
    (p,) = ingest("ncu", [RAW], sets=[f"extensions.org:x.y={value}"], created_at=T0).packets
    assert p.extensions == {"org:x": {"y": value}}


def test_set_number_beyond_float_range_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "ingest", "ncu", RAW, "--set", "extensions.org:x.y=[1e400]")
    one_line_error(err, code, 2, "--set extensions.org:x.y", "too large")


@pytest.mark.parametrize("depth", [100, 2000])
def test_set_deeply_nested_value_is_a_usage_error(capsys: pytest.CaptureFixture[str], depth: int) -> None:
    value = "[" * depth + "]" * depth
    code, out, err = run(capsys, "ingest", "ncu", RAW, "--set", f"extensions.org:x.y={value}")
    one_line_error(err, code, 2, "--set extensions.org:x.y", "nested too deeply")
    assert out == ""


def test_set_nested_value_within_the_limit_is_kept() -> None:
    (p,) = ingest("ncu", [RAW], sets=["extensions.org:x.y=" + "[" * 40 + "]" * 40], created_at=T0).packets
    assert p.extensions is not None
    assert json.dumps(p.extensions["org:x"]["y"]) == "[" * 40 + "]" * 40


def test_set_through_a_list_item_that_is_a_value(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = _base(tmp_path, profiler=[1])
    code, _, err = run(capsys, "ingest", "ncu", RAW, "--into", str(base), "--set", "profiler.0.x=1")
    one_line_error(err, code, 2, "--set profiler.0.x", "`profiler.0` is a value")


def test_set_path_length_is_capped() -> None:
    with pytest.raises(OptionError, match="nested too deeply"):
        parse_set("extensions.org:x." + ".".join(["a"] * 100) + "=1")


# ------------------------------------------------------------------------------------ --into


def test_into_base_with_a_baseline_that_is_not_an_object(tmp_path: Path) -> None:
    base = _base(tmp_path, baseline="cuBLAS")
    (p,) = ingest("ncu", [RAW], into=str(base), baseline="cuBLASLt:12.4:cublasLtMatmul(a:b)").packets
    assert p.timing is not None and p.timing.baseline is not None
    assert (p.timing.baseline.provider, p.timing.baseline.version, p.timing.baseline.call) == (
        "cuBLASLt",
        "12.4",
        "cublasLtMatmul(a:b)",
    )


@pytest.mark.parametrize("with_set", [False, True])
def test_into_invalid_base_names_the_file_and_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, with_set: bool
) -> None:
    base = _base(tmp_path, bogus=1)
    extra = ["--set", "subject.name=x"] if with_set else []
    code, out, err = run(capsys, "ingest", "ncu", RAW, "--into", str(base), *extra)
    one_line_error(err, code, 1, str(base), "/bogus")
    assert out == ""


def test_into_base_nested_too_deeply_for_the_encoder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = _base(tmp_path, extensions={"org:x": {"y": 0}})
    text = base.read_text().replace('"y": 0', '"y": ' + "[" * 400 + "]" * 400)
    base.write_text(text)
    code, out, err = run(capsys, "ingest", "ncu", RAW, "--into", str(base))
    one_line_error(err, code, 1, str(base), "nested too deeply")
    assert out == ""


def test_into_stdin_and_input_stdin_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "ingest", "ncu", "-", "--into", "-")
    one_line_error(err, code, 2, "--into -")


# ------------------------------------------------------------------------------- --created-at


@pytest.mark.parametrize(
    "value",
    ["2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T01:61:00Z",
     "2026-11-22T01:02:60Z", "1900-02-29T00:00:00Z", "2026-00-10T00:00:00Z"],
)  # fmt: skip
def test_created_at_that_is_not_a_real_time_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code, out, err = run(capsys, "ingest", "ncu", RAW, "--created-at", value)
    one_line_error(err, code, 2, "--created-at", value)
    assert out == ""


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("2016-12-31T23:59:60Z", "2016-12-31T23:59:60Z"),  # a leap second
        ("2024-02-29T01:02:03.123456789Z", "2024-02-29T01:02:03.123456789Z"),
        ("2026-11-22t01:02:03z", "2026-11-22T01:02:03Z"),  # RFC 3339 allows lowercase
    ],
)
def test_created_at_rfc3339_forms(value: str, written: str) -> None:
    (p,) = ingest("ncu", [RAW], created_at=value).packets
    assert p.created_at == written


# ------------------------------------------------------------------------------- -o / --output


@pytest.mark.parametrize("command", [["ingest", "ncu", RAW], ["schema"]])
def test_empty_output_name_is_a_usage_error(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    code, out, err = run(capsys, *command, "-o", "")
    one_line_error(err, code, 2, "-o")
    assert "already exists" not in err
