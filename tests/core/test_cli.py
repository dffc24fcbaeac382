"""`kevidence validate`, `rules`, `schema`, `id`: exit codes, formats and hostile input."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from kernel_evidence.cli import main
from kernel_evidence.strategies import example_packet

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "packets"
GOOD = example_packet().to_json()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, data: bytes) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def test_valid_examples_exit_zero(capsys) -> None:
    code, out, _ = run(capsys, "validate", str(EXAMPLES / "valid"))
    assert code == 0
    assert out.strip().splitlines()[-1].startswith("ok: 7 packet(s) in 7 file(s): 7 valid, 0 invalid")


def test_each_invalid_example_exits_one_naming_its_rule(capsys) -> None:
    for path in sorted((EXAMPLES / "invalid").glob("*.json")):
        code, out, _ = run(capsys, "validate", str(path))
        assert code == 1, path.name
        assert path.name.split("_")[0] in out, (path.name, out)


def test_mixed_directory_checks_every_file(capsys, tmp_path: Path) -> None:
    write(tmp_path, "a.json", GOOD)
    write(tmp_path, "b.json", b"{not json")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "c.json", GOOD)
    write(tmp_path, "ignored.txt", b"whatever")
    code, out, err = run(capsys, "validate", str(tmp_path))
    assert code == 1
    assert "b.json: KE001 error: malformed JSON at line 1, column 2" in out
    assert "3 packet(s) in 3 file(s): 2 valid, 1 invalid" in out
    assert "Traceback" not in out + err


@pytest.mark.parametrize(
    "data,expected",
    [
        (GOOD[: len(GOOD) // 2], "JSON truncated after"),
        (GOOD.replace(b'"median":180.0', b'"median":NaN'), "NaN/Infinity at line 1, column"),
        (GOOD.replace(b'"median":180.0', b'"median":Infinity'), "NaN/Infinity at line 1, column"),
        (
            GOOD.replace(b'"median":180.0', b'"median":"fast"'),
            "KE001 error at /timing/stats/median: Expected `float | null`, got `str`",
        ),
        (GOOD.replace(b'"median":180.0', b'"median":1e400'), "number too large or too small"),
        (
            GOOD.replace(b'"repeats":50', b'"repeats":' + b"9" * 40),
            "KE001 error at /timing/repeats: Expected `int` <= 9223372036854775807",
        ),
        (
            GOOD.replace(b'"status":"passed"', b'"status":"passed","status":"failed"'),
            "KE003 error: duplicate key `status`",
        ),
        (
            GOOD[:-1] + b',"extensions":{"urn:x:y":{"a":' + b"[" * 50000 + b"]" * 50000 + b"}}}",
            "nested too deeply",
        ),
        (GOOD.replace(b'"name":"gemm_bf16_4096"', b'"name":"\xff\xfe"'), "not valid UTF-8 at line 1, column"),
        (b"", "empty file; expected a JSON packet"),
        (b"   \n", "empty file; expected a JSON packet"),
        (GOOD.replace(b'"schema_version":"0.2"', b'"schema_version":"9.0"'), "unsupported schema_version"),
        (b'"just a string"', "KE001"),
    ],
    ids=[
        "truncated",
        "nan",
        "infinity",
        "wrong-type",
        "huge-float",
        "huge-int",
        "duplicate",
        "deep",
        "utf8",
        "empty",
        "blank",
        "version",
        "not-object",
    ],
)
def test_bad_input_gets_one_line_and_exit_one(capsys, tmp_path: Path, data: bytes, expected: str) -> None:
    path = write(tmp_path, "bad.json", data)
    code, out, err = run(capsys, "validate", path)
    assert code == 1
    lines = [ln for ln in out.splitlines() if ln.startswith(path)]
    assert len(lines) == 1, out
    assert expected in lines[0], lines[0]
    assert "Traceback" not in out + err


def test_missing_file_is_invalid_input_not_a_crash(capsys, tmp_path: Path) -> None:
    code, out, _ = run(capsys, "validate", str(tmp_path / "nope.json"))
    assert code == 1
    assert "nope.json: KE000 error: no such file" in out


def test_jsonl_and_zstd_streams(capsys, tmp_path: Path) -> None:
    lines = b"\n".join([GOOD, GOOD, b"{broken", GOOD]) + b"\n"
    write(tmp_path, "p.jsonl", lines)
    write(tmp_path, "p.jsonl.zst", zstandard.ZstdCompressor().compress(lines))
    write(tmp_path, "one.json.zst", zstandard.ZstdCompressor().compress(GOOD))
    code, out, _ = run(capsys, "validate", str(tmp_path))
    assert code == 1
    assert "p.jsonl:line 3: KE001 error: malformed JSON" in out
    assert "p.jsonl.zst:line 3: KE001" in out
    assert "9 packet(s) in 3 file(s): 7 valid, 2 invalid" in out


def test_json_array_of_packets(capsys, tmp_path: Path) -> None:
    path = write(tmp_path, "arr.json", b"[" + GOOD + b"," + GOOD + b"]")
    code, out, _ = run(capsys, "validate", path)
    assert code == 0 and "2 packet(s)" in out


def test_zstd_bomb_is_capped(capsys, tmp_path: Path) -> None:
    bomb = zstandard.ZstdCompressor(level=19).compress(b" " * (64 << 20))
    assert len(bomb) < 100_000
    path = write(tmp_path, "bomb.jsonl.zst", bomb)
    code, out, _ = run(capsys, "validate", "--max-decompressed-bytes", "1000000", path)
    assert code == 1
    assert "decompresses to more than 1000000 bytes (the cap)" in out


def test_overlong_jsonl_line_is_refused_without_reading_it_whole(capsys, tmp_path: Path) -> None:
    path = write(tmp_path, "long.jsonl", GOOD + b"\n" + b"x" * 3_000_000 + b"\n" + GOOD + b"\n")
    code, out, _ = run(capsys, "validate", "--max-record-bytes", "1000000", path)
    assert code == 1
    assert "long.jsonl:line 2: KE000 error: line longer than 1000000 bytes" in out
    assert "3 packet(s) in 1 file(s): 2 valid, 1 invalid" in out


def test_corrupt_zstd(capsys, tmp_path: Path) -> None:
    good = zstandard.ZstdCompressor().compress(GOOD + b"\n" + GOOD + b"\n")
    path = write(tmp_path, "cut.jsonl.zst", good[:-6])
    code, out, _ = run(capsys, "validate", path)
    assert code == 1
    assert "cut.jsonl.zst" in out and "Traceback" not in out


def test_stdin(capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(GOOD + b"\n" + GOOD + b"\n")))
    code, out, _ = run(capsys, "validate", "-")
    assert code == 0 and "2 packet(s)" in out


def test_stdin_zstd(capsys, monkeypatch) -> None:
    data = zstandard.ZstdCompressor().compress(GOOD + b"\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run(capsys, "validate", "-")
    assert code == 0 and "1 packet(s)" in out


def test_stdin_holds_a_pretty_printed_packet_or_a_jsonl_stream(capsys, monkeypatch) -> None:
    pretty = json.dumps(json.loads(GOOD), indent=2).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n" + pretty + b"\n")))
    code, out, _ = run(capsys, "validate", "-")
    assert code == 0 and "1 packet(s)" in out and "1 valid" in out
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n" + GOOD + b"\n{broken\n" + GOOD + b"\n"))
    )
    code, out, _ = run(capsys, "validate", "-")
    assert code == 1 and "3 packet(s)" in out and "-:line 3: KE001" in out


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("long", [300_000, 2_500_000])  # within one read chunk, and across several
def test_lines_after_an_overlong_line_are_read_one_by_one(
    capsys, tmp_path: Path, jobs: str, long: int
) -> None:
    """The line after one longer than the cap starts fresh: the rest of the chunk it ended
    in is cut into lines like any other."""
    bad = GOOD.replace(b'"median":180.0', b'"median":1.0')
    lines = [GOOD, b"x" * long, GOOD, bad, b"{broken", GOOD]
    path = write(tmp_path, "a.jsonl", b"\n".join(lines) + b"\n")
    code, out, _ = run(capsys, "validate", "--max-record-bytes", "100000", "--jobs", jobs, path)
    assert code == 1 and "6 packet(s)" in out and "3 valid, 3 invalid" in out
    assert ":line 2: KE000" in out and ":line 4: invalid" in out and ":line 5: KE001" in out


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_of_overlong_lines_is_not_also_empty(capsys, tmp_path: Path, jobs: str) -> None:
    path = write(tmp_path, "long.jsonl", b"x" * 300 + b"\n" + b"y" * 300 + b"\n")
    code, out, _ = run(capsys, "validate", "--max-record-bytes", "100", "--jobs", jobs, path)
    assert code == 1 and "2 packet(s)" in out and "empty" not in out


def test_strict_fails_on_warnings(capsys, tmp_path: Path) -> None:
    d = json.loads(GOOD)
    d["replay"].pop("repository")
    d.pop("packet_id")
    path = write(tmp_path, "w.json", json.dumps(d).encode())
    assert run(capsys, "validate", path)[0] == 0
    code, out, _ = run(capsys, "validate", "--strict", path)
    assert code == 1 and "KE102 warning" in out and "KE005 warning" in out
    # the JSON report agrees with the exit code and the summary
    code, out, _ = run(capsys, "validate", "--strict", "--format", "json", path)
    doc = json.loads(out)
    assert code == 1 and doc["summary"]["invalid"] == 1 and doc["reports"][0]["valid"] is False
    doc = json.loads(run(capsys, "validate", "--format", "json", path)[1])
    assert doc["reports"][0]["valid"] is True


def test_quiet_json_is_the_summary_only(capsys) -> None:
    code, out, _ = run(capsys, "validate", "--quiet", "--format", "json", str(EXAMPLES / "valid"))
    assert code == 0 and json.loads(out) == {"summary": json.loads(out)["summary"]}
    assert json.loads(out)["summary"]["packets"] == 7


@pytest.mark.parametrize("option", ["--max-record-bytes", "--max-decompressed-bytes"])
@pytest.mark.parametrize("value", ["0", "-5"])
def test_limits_must_be_positive(capsys, option: str, value: str) -> None:
    code, _, err = run(capsys, "validate", option, value, str(EXAMPLES / "valid"))
    assert code == 2 and "Traceback" not in err


def test_json_format_is_one_parseable_document(capsys) -> None:
    code, out, _ = run(
        capsys,
        "validate",
        "--format",
        "json",
        str(EXAMPLES / "invalid" / "KE301_speedup_does_not_match_timings.json"),
        str(EXAMPLES / "valid"),
    )
    assert code == 1
    doc = json.loads(out)
    assert doc["summary"]["packets"] == 8 and doc["summary"]["invalid"] == 1
    bad = [r for r in doc["reports"] if not r["valid"]][0]
    assert bad["findings"][0]["rule_id"] == "KE301" and bad["grade"]["letter"] == "F"


def test_usage_errors_exit_two(capsys) -> None:
    assert run(capsys, "validate")[0] == 2
    assert run(capsys, "validate", "--format", "xml", "x.json")[0] == 2
    assert run(capsys, "no-such-command")[0] == 2


@pytest.mark.parametrize("table", ["--baselines", "--peaks", None])
def test_rules_markdown_tables(capsys, table: str | None) -> None:
    code, out, _ = run(capsys, "rules", *([table] if table else []), "--format", "markdown")
    lines = out.splitlines()
    assert code == 0 and lines[1].startswith("|---|") and all(line.startswith("| ") for line in lines[2:])
    cells = {len(line.replace("\\|", "").split("|")) for line in lines}
    assert len(cells) == 1  # every row has the header's number of cells
    first = {None: "| KE000 |", "--baselines": "| AITER |", "--peaks": "| nvidia-b200 |"}[table]
    assert lines[2].startswith(first)


def test_rules_tables_one_at_a_time(capsys) -> None:
    code, _, err = run(capsys, "rules", "--baselines", "--peaks")
    assert code == 2 and "one of them" in err


def test_id_of_several_packets_into_a_json_name_is_a_usage_error(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "id", str(EXAMPLES / "valid"), "-o", str(tmp_path / "ids.json"))
    assert code == 2 and "7 packets need a .jsonl" in err and not (tmp_path / "ids.json").exists()


def test_id_of_nothing_fails(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "id", str(tmp_path))
    assert code == 1 and "no packets found" in err


def test_rules_and_schema_and_id(capsys, tmp_path: Path) -> None:
    code, out, _ = run(capsys, "rules")
    assert code == 0 and "KE101 error" in out and "KE602 error" in out
    code, out, _ = run(capsys, "rules", "--format", "json")
    assert {r["id"] for r in json.loads(out)} >= {"KE101", "KE201", "KE301", "KE601", "KE701", "KE801"}
    code, out, _ = run(capsys, "rules", "--baselines")
    assert "cuBLASLt" in out and "hipBLASLt" in out
    code, out, _ = run(capsys, "schema")
    assert json.loads(out)["$id"] == "urn:kernel-evidence:packet:0.2"
    d = json.loads(GOOD)
    d.pop("packet_id")
    src = write(tmp_path, "noid.json", json.dumps(d).encode())
    code, out, _ = run(capsys, "id", src, "-o", str(tmp_path / "withid.json"))
    assert code == 0 and out.startswith(example_packet().packet_id)
    assert json.loads((tmp_path / "withid.json").read_text())["packet_id"] == example_packet().packet_id
    # never overwrites
    code, _, err = run(capsys, "id", src, "-o", str(tmp_path / "withid.json"))
    assert code == 1 and "already exists" in err


def test_entry_points_run_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"{")
    for argv in (["kevidence"], [sys.executable, "-m", "kernel_evidence"]):
        r = subprocess.run([*argv, "validate", str(bad)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1
        assert "Traceback" not in r.stdout + r.stderr
        assert "bad.json: KE001 error: JSON truncated" in r.stdout
    r = subprocess.run(["kevidence", "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("kevidence ")
    r = subprocess.run(
        ["kevidence", "validate", "-"], input=GOOD.decode(), capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_torn_zstd_stream_keeps_complete_records_and_reports_the_tear(capsys, tmp_path: Path) -> None:
    c = zstandard.ZstdCompressor()
    data = b"".join(c.compress(GOOD + b"\n") for _ in range(3))[:-20]
    path = write(tmp_path, "torn.jsonl.zst", data)
    code, out, _ = run(capsys, "validate", path)
    assert code == 1
    assert "torn.jsonl.zst:line 3: KE000 error: zstd stream ends inside a frame" in out
    assert "3 packet(s) in 1 file(s): 2 valid, 1 invalid" in out


def test_worker_processes_give_the_same_reports_in_the_same_order(tmp_path: Path) -> None:
    from kernel_evidence.rules import validate_paths

    lines = [
        GOOD,
        b"{broken",
        GOOD.replace(b'"median":180.0', b'"median":1.0'),
        b"[" + GOOD + b"," + GOOD + b"]",
    ]
    write(tmp_path, "a.jsonl", b"\n".join(lines * 300) + b"\n")
    write(tmp_path, "b.json", GOOD)
    write(tmp_path, "c.json", b"")
    one = [r.to_dict() for r in validate_paths([str(tmp_path)])]
    two = [r.to_dict() for r in validate_paths([str(tmp_path)], jobs=2)]
    assert len(one) == 1500 + 2
    assert two == one


@pytest.mark.parametrize(
    ("range_bytes", "probe_bytes"), [(700, 100), (5000, 1 << 16), (1 << 20, 1 << 16), (5000, 333)]
)
def test_workers_reading_file_ranges_give_the_same_reports(
    tmp_path: Path, monkeypatch, range_bytes, probe_bytes
) -> None:
    """Large JSONL files are cut into ranges that workers read themselves: ranges smaller
    than a line, blank and over-long lines, non-UTF-8 bytes, a line holding an array, a last
    line without a line end, empty and blank-only files must all come out as in one
    process, line numbers included. (This test process may run threads, so its workers come
    from the forkserver; the next test forks them.)"""
    from kernel_evidence.io import Limits
    from kernel_evidence.rules import _parallel, validate_paths

    monkeypatch.setattr(_parallel, "_RANGE_BYTES", range_bytes)
    monkeypatch.setattr(_parallel, "_PROBE_BYTES", probe_bytes)
    bad = GOOD.replace(b'"median":180.0', b'"median":1.0')
    array = b"[" + GOOD + b"," + bad + b"]"
    lines = [GOOD, b"", b"  ", bad, b"{broken", b"x" * 9000, b'{"a": "\xff"}', array, GOOD]
    write(tmp_path, "a.jsonl", b"\n".join(lines * 40) + b"\n")
    write(tmp_path, "b.jsonl", b"\n".join(lines * 3))  # no final line end
    write(tmp_path, "c.jsonl", b"")
    write(tmp_path, "d.jsonl", b"\n \n\n")
    write(tmp_path, "e.json", GOOD)
    limits = Limits(max_record_bytes=8000)
    one = [r.to_dict() for r in validate_paths([str(tmp_path)], limits)]
    two = [r.to_dict() for r in validate_paths([str(tmp_path)], limits, jobs=2)]
    assert len(one) == 8 * 40 + 8 * 3 + 1 + 1 + 1  # seven non-blank lines, eight reports per group
    assert one[-5]["location"] == "line 26, item 1"  # b.jsonl: the array, 8th line of the third group
    assert [r["location"] for r in two] == [r["location"] for r in one]
    assert two == one
    assert any("line longer than 8000 bytes" in f["message"] for r in one for f in r["findings"])
    assert sum(1 for r in one for f in r["findings"] if "empty input" in f["message"]) == 2


_FORKED_WORKERS = """
import sys
from kernel_evidence.rules import _parallel, validate_paths

if __name__ == "__main__":
    _parallel._RANGE_BYTES = 900
    method = _parallel._context().get_start_method()
    one = [r.to_dict() for r in validate_paths([sys.argv[1]])]
    two = [r.to_dict() for r in validate_paths([sys.argv[1]], jobs=2)]
    assert two == one and len(one) == 4 * 30, len(one)
    print(method, one[-1]["location"])
"""


def test_workers_forked_from_a_single_threaded_process(tmp_path: Path) -> None:
    """A process that runs one thread (a fresh interpreter here) forks its workers: same
    reports, same line numbers."""
    bad = GOOD.replace(b'"median":180.0', b'"median":1.0')
    src = write(tmp_path, "a.jsonl", b"\n".join([GOOD, b"", bad, b"{broken", GOOD] * 30) + b"\n")
    script = tmp_path / "forked.py"
    script.write_text(_FORKED_WORKERS)
    out = subprocess.run([sys.executable, str(script), src], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    method, location = out.stdout.split(maxsplit=1)
    assert method == ("fork" if sys.platform == "linux" else "forkserver")
    assert location.strip() == "line 150"


def test_jobs_option(capsys, monkeypatch) -> None:
    code, out, _ = run(capsys, "validate", "--jobs", "2", str(EXAMPLES / "valid"))
    assert code == 0 and "7 packet(s) in 7 file(s): 7 valid" in out
    # the option reaches the engine (it was once parsed and then dropped)
    import kernel_evidence.cli.validate as cli_validate

    asked: list[int] = []
    real = cli_validate.validate_paths

    def spy(paths, limits=None, *, jobs=1):  # type: ignore[no-untyped-def]
        asked.append(jobs)
        return real(
            paths, limits, jobs=min(jobs, 2)
        )  # a regression fails below, not by starting 2**40 workers

    monkeypatch.setattr(cli_validate, "validate_paths", spy)
    monkeypatch.setattr(cli_validate, "_cpus", lambda: 2)  # the same on a machine of one CPU
    # more workers than CPUs are never started (a huge N was taken as it was)
    for argv in (
        ["--jobs", "100000"],
        ["--jobs", str(2**40)],
        ["--jobs", "3"],
        ["--jobs", "2"],
        ["-j", "1"],
        [],
    ):
        assert run(capsys, "validate", *argv, str(EXAMPLES / "valid"))[0] == 0
    assert asked == [2, 2, 2, 2, 1, 0]


def test_out_of_memory_is_one_line(tmp_path: Path) -> None:
    """A real allocation failure under a lowered address-space limit (Linux), in a child."""
    if sys.platform != "linux":
        pytest.skip("RLIMIT_AS is Linux-specific here")
    big = tmp_path / "big.json"
    big.write_bytes(b'{"schema_version": "' + b"x" * (200 << 20) + b'"}')  # a 200 MiB string to decode
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))\n"
        "from kernel_evidence.cli import main\n"
        f"sys.exit(main(['validate', '--jobs', '1', {str(big)!r}]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr and "out of memory" in out.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_endless_input_without_line_ends_stops(tmp_path: Path) -> None:
    """A JSONL input that never ends and has no line end (a link to /dev/zero) stops at the
    decompressed-size cap; run in a child with a timeout, so that a regression fails, not hangs."""
    link = tmp_path / "zeros.jsonl"
    link.symlink_to("/dev/zero")
    argv = ["validate", "--jobs", "1", "--max-record-bytes", "1000", "--max-decompressed-bytes", "5000000"]
    code = f"import sys; from kernel_evidence.cli import main; sys.exit(main({[*argv, str(link)]!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "no line end in" in out.stdout and "stopped reading" in out.stdout


@pytest.mark.parametrize("blank", [1, 4095, 4096, 4097, 3 * 4096 + 5, (1 << 20) + 7, 3 << 20])
@pytest.mark.parametrize("zst", [False, True])
def test_line_numbers_after_runs_of_empty_lines(capsys, tmp_path: Path, blank: int, zst: bool) -> None:
    """Runs of empty lines (stepped over in blocks, across read chunks) still count every
    line: the broken document after them is reported at its own line."""
    data = GOOD + b"\n" + b"\n" * blank + b"{broken\n" + b"\n" * blank + GOOD + b"\n"
    name = "blank.jsonl"
    if zst:
        data, name = zstandard.ZstdCompressor().compress(data), name + ".zst"
    path = write(tmp_path, name, data)
    code, out, _ = run(capsys, "validate", path)
    assert code == 1 and "3 packet(s)" in out and "2 valid, 1 invalid" in out
    assert f":line {blank + 2}: KE001" in out
