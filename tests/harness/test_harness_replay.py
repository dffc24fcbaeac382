"""replay: shows without running; runs only with --execute; judges reproduced / drifted / failed."""

from __future__ import annotations

import json
import math
import os
import sys
import textwrap
from pathlib import Path

import pytest
from _harness_packets import lognormal, timed_packet

from kernel_evidence.cli import main
from kernel_evidence.errors import InputError
from kernel_evidence.harness import execute_replay
from kernel_evidence.harness._load import load_packet
from kernel_evidence.rules import validate

# A tiny "harness": records one packet whose samples have the median given as argv[1] (us),
# through the Recorder, which honours KEVIDENCE_OUT.
BENCH = textwrap.dedent(
    """
    import random, sys
    from kernel_evidence.harness import Recorder
    from kernel_evidence.harness.timer import Measurement
    median_us = float(sys.argv[1])
    rng = random.Random(int(sys.argv[2]))
    samples = [median_us * 1000 * rng.lognormvariate(0, 0.03) for _ in range(40)]
    m = Measurement(samples_ns=samples, method="host_clock", warmup=2, stop_rule="fixed 40",
                    stop_reason="fixed", cache_policy="warm", synchronized=True)
    with Recorder(operator="softmax") as rec:
        with rec.candidate("softmax_v1") as c:
            c.timing(m, shape_id="s1")
    """
)


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    p = tmp_path / "bench.py"
    p.write_text(BENCH)
    return p


def _record(tmp_path: Path, bench: Path, median: str, seed: str, name: str) -> Path:
    import subprocess

    out = tmp_path / name
    env = dict(os.environ, KEVIDENCE_OUT=str(out))
    subprocess.run([sys.executable, str(bench), median, seed], env=env, check=True, cwd=tmp_path)
    return out


def _packet_file(tmp_path: Path, command: list[str], name: str = "p.json", **kw: object) -> Path:
    p = tmp_path / name
    packet = timed_packet(lognormal(100.0, 20, seed=1), command=command, **kw)  # type: ignore[arg-type]
    p.write_bytes(packet.to_json())
    return p


def test_replay_without_execute_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "marker"
    code = f"open({str(marker)!r}, 'w').write('ran')"
    p = _packet_file(tmp_path, [sys.executable, "-c", code])
    assert main(["replay", str(p)]) == 0
    out = capsys.readouterr().out
    assert "nothing was run; pass --execute" in out
    assert "differences from this machine:" in out and "hardware.device" in out
    assert not marker.exists()
    assert main(["replay", str(p), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["command"][0] == sys.executable and not marker.exists()


def test_replay_execute_runs_argv_and_records_a_failed_child(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "marker"
    # a benchmark script (a `python -c` that only writes a file out is a no-op replay, KE103)
    script = tmp_path / "bench.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    p = _packet_file(tmp_path, [sys.executable, str(script)])
    child = tmp_path / "child.json"
    # the command runs (marker appears) but writes no packet: the replay failed
    assert main(["replay", str(p), "--execute", "--out", str(child)]) == 1
    assert marker.read_text() == "ran"
    c = load_packet(child)
    assert c.status.value == "error" and c.failure is not None
    assert (
        c.failure.message
        == "the replay command wrote no packet (to KEVIDENCE_OUT or as a JSON line on stdout)"
    )
    assert c.lineage is not None and c.lineage.relation == "replay"
    assert c.lineage.parent_packet_id == load_packet(p).packet_id
    assert c.extensions is not None and c.extensions["kevidence:replay"]["verdict"] == "failed"
    assert validate(c).ok


def test_replay_reproduced_and_drifted(
    tmp_path: Path, bench: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = _record(tmp_path, bench, "100", "1", "parent.json")
    child = tmp_path / "child.json"
    assert main(["replay", str(parent), "--execute", "--out", str(child)]) == 0
    assert "reproduced:" in capsys.readouterr().out
    c = load_packet(child)
    info = c.extensions["kevidence:replay"]  # type: ignore[index]
    assert info["verdict"] == "reproduced" and info["returncode"] == 0
    assert c.lineage is not None and c.lineage.parent_packet_id == load_packet(parent).packet_id
    assert validate(c).ok
    # the same command recorded with a different median: the replay drifts
    drifted_parent = tmp_path / "slow.json"
    data = json.loads(parent.read_bytes())
    data["timing"]["stats"]["samples"] = [v * 0.5 for v in data["timing"]["stats"]["samples"]]
    for k in ("median", "min", "max", "mean", "std", "ci_low", "ci_high"):
        data["timing"]["stats"][k] *= 0.5
    data["timing"]["stats"]["percentiles"] = {
        k: v * 0.5 for k, v in data["timing"]["stats"]["percentiles"].items()
    }
    data.pop("packet_id")
    drifted_parent.write_text(json.dumps(data))
    assert main(["replay", str(drifted_parent), "--execute", "--out", str(tmp_path / "c2.json")]) == 3
    assert "drifted:" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            ["kevidence-no-such-program-xyz", "--run"],
            "the replay command refers to a missing program `kevidence-no-such-program-xyz` (not found on PATH)",
        ),
        (
            ["./missing/bench.sh"],
            "the replay command refers to a missing program `./missing/bench.sh` (no such file)",
        ),
        ([""], "the replay command is malformed: expected a non-empty argv list, got an empty one"),
    ],
)
def test_unrunnable_commands_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], message: str
) -> None:
    p = tmp_path / "p.json"
    data = timed_packet([1.0, 2.0]).to_dict()
    data["replay"] = {"command": command}
    data.pop("packet_id")
    p.write_text(json.dumps(data))
    assert main(["replay", str(p), "--execute"]) == 1
    assert capsys.readouterr().err == f"kevidence: error: {p}: {message}\n"


def test_missing_replay_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "p.json"
    data = timed_packet([1.0, 2.0]).to_dict()
    data["replay"] = {"notes": "run it somehow"}
    p.write_text(json.dumps(data))
    assert main(["replay", str(p)]) == 1
    assert (
        capsys.readouterr().err
        == f"kevidence: error: {p}: the packet records no replay command (replay.command is missing)\n"
    )


def test_shell_commands_need_allow_shell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "marker"
    p = tmp_path / "p.json"
    data = timed_packet([1.0, 2.0]).to_dict()
    data["replay"] = {"command": [f"touch {marker}"], "shell": True}
    p.write_text(json.dumps(data))
    assert main(["replay", str(p), "--execute"]) == 1
    assert "refusing without --allow-shell" in capsys.readouterr().err
    assert not marker.exists()
    assert (
        main(["replay", str(p), "--execute", "--allow-shell", "--out", str(tmp_path / "c.json")]) == 1
    )  # ran, no packet
    assert marker.exists()


def test_timeout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _packet_file(tmp_path, [sys.executable, "-c", "import time; time.sleep(30)"])
    assert main(["replay", str(p), "--execute", "--timeout", "0.5", "--out", str(tmp_path / "c.json")]) == 1
    c = load_packet(tmp_path / "c.json")
    assert c.failure is not None and c.failure.failure_class.value == "timeout"
    assert c.failure.message == "the replay command did not finish within 0.5 s"


def test_select_one_packet_of_a_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stream = tmp_path / "many.jsonl"
    a = timed_packet([1.0, 2.0], command=["python", "a.py"])
    b = timed_packet([1.0, 3.0], command=["python", "b.py"])
    stream.write_bytes(a.to_json() + b"\n" + b.to_json() + b"\n")
    assert main(["replay", str(stream)]) == 1
    assert capsys.readouterr().err == (
        f"kevidence: error: {stream}: expected one packet, found several; pick one with --select ID|NAME\n"
    )
    assert b.packet_id is not None
    assert main(["replay", str(stream), "--select", b.packet_id[7:19], "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["command"] == ["python", "b.py"]
    assert main(["replay", str(stream), "--select", "nope"]) == 1
    assert "no packet matches `nope`" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--timeout", "nan", "--timeout must be a finite number of seconds > 0, got nan"),
        ("--timeout", "inf", "--timeout must be a finite number of seconds > 0, got inf"),
        ("--timeout", "0", "--timeout must be a finite number of seconds > 0, got 0"),
        ("--tolerance", "nan", "--tolerance must be a finite number >= 0, got nan"),
        ("--tolerance", "-1", "--tolerance must be a finite number >= 0, got -1"),
    ],
)
def test_non_finite_numbers_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    marker = tmp_path / "marker"
    p = _packet_file(tmp_path, [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ran')"])
    assert main(["replay", str(p), "--execute", option, value, "--out", str(tmp_path / "c.json")]) == 2
    assert capsys.readouterr().err == f"kevidence: error: {message}\n"
    assert not marker.exists()
    with pytest.raises(ValueError, match="timeout must be a finite number of seconds > 0, got nan"):
        execute_replay(load_packet(p), timeout=math.nan)
    with pytest.raises(ValueError, match="tolerance must be a finite number >= 0, got nan"):
        execute_replay(load_packet(p), tolerance=math.nan)


def _cwd_packet(tmp_path: Path, recorded_cwd: str | None) -> tuple[Path, Path]:
    """A packet whose command writes the folder it runs in to a file."""
    seen = tmp_path / "seen"
    p = tmp_path / "p.json"
    data = timed_packet([1.0, 2.0]).to_dict()
    data["replay"] = {
        "command": [sys.executable, "-c", f"import os; open({str(seen)!r}, 'w').write(os.getcwd())"]
    }
    if recorded_cwd is not None:
        data["replay"]["cwd"] = recorded_cwd
    data.pop("packet_id")
    p.write_text(json.dumps(data))
    return p, seen


def test_cwd_is_where_the_command_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, here = tmp_path / "work", tmp_path / "here"
    work.mkdir()
    here.mkdir()
    monkeypatch.chdir(here)
    # a --cwd that does not exist: usage error, nothing runs
    p, seen = _cwd_packet(tmp_path, str(work))
    missing = tmp_path / "missing"
    assert main(["replay", str(p), "--execute", "--cwd", str(missing)]) == 2
    assert capsys.readouterr().err == f"kevidence: error: --cwd must be an existing folder, got `{missing}`\n"
    assert not seen.exists()
    # the recorded folder: shown, and the command runs there
    assert main(["replay", str(p), "--execute", "--out", str(tmp_path / "c1.json")]) == 1  # no packet
    assert f"cwd        {work}\n" in capsys.readouterr().out
    assert seen.read_text() == str(work)
    # --cwd replaces it, in the display too
    other = tmp_path / "other"
    other.mkdir()
    assert main(["replay", str(p), "--execute", "--cwd", str(other), "--out", str(tmp_path / "c2.json")]) == 1
    assert f"cwd        {other}\n" in capsys.readouterr().out
    assert seen.read_text() == str(other)
    # no recorded folder: the current one, shown by its path
    p2, seen2 = _cwd_packet(tmp_path / "work", None)
    assert main(["replay", str(p2), "--execute", "--out", str(tmp_path / "c3.json")]) == 1
    assert f"cwd        {here} (current folder)\n" in capsys.readouterr().out
    assert seen2.read_text() == str(here)


def test_a_recorded_cwd_that_does_not_exist_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    gone = tmp_path / "gone"
    p, seen = _cwd_packet(tmp_path, str(gone))
    message = f"the recorded working folder `{gone}` (replay.cwd) does not exist here; pass --cwd DIR to run elsewhere"
    for args in ([], ["--execute"]):
        assert main(["replay", str(p), *args]) == 1
        captured = capsys.readouterr()
        assert captured.err == f"kevidence: error: {p}: {message}\n"
        assert f"cwd        {gone}\n" in captured.out
    assert not seen.exists()
    with pytest.raises(InputError, match="does not exist here"):
        execute_replay(load_packet(p))
    assert not seen.exists()
    # --cwd makes it runnable
    assert (
        main(["replay", str(p), "--execute", "--cwd", str(tmp_path), "--out", str(tmp_path / "c.json")]) == 1
    )
    assert seen.read_text() == str(tmp_path)


def test_existing_outputs_are_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "marker"
    p = _packet_file(tmp_path, [sys.executable, "-c", f"open({str(marker)!r}, 'a').write('ran ')"])
    original = p.read_bytes()
    default = tmp_path / "p.replay.json"
    assert main(["replay", str(p), "--execute"]) == 1  # ran, no packet: a failed child
    first = default.read_bytes()
    # run again: refused before anything runs
    assert main(["replay", str(p), "--execute"]) == 1
    assert capsys.readouterr().err == (
        f"kevidence: error: {default}: already exists; refusing to overwrite it (use --force)\n"
    )
    assert marker.read_text() == "ran " and default.read_bytes() == first
    assert main(["replay", str(p), "--execute", "--force"]) == 1
    assert marker.read_text() == "ran ran "
    assert load_packet(default).lineage.parent_packet_id == load_packet(p).packet_id  # type: ignore[union-attr]
    # the input packet is never the output, --force or not, by any name
    link = tmp_path / "link.json"
    link.symlink_to(p)
    for out in (str(p), "./p.json", str(link)):
        for force in ([], ["--force"]):
            assert main(["replay", str(p), "--execute", "--out", out, *force]) == 2
            assert capsys.readouterr().err == (
                f"kevidence: error: {out}: is the packet being replayed; refusing to write the child "
                "packet over it (choose another --out)\n"
            )
    assert p.read_bytes() == original and marker.read_text() == "ran ran "


def test_shell_refusal_says_allow_shell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "p.json"
    data = timed_packet([1.0, 2.0]).to_dict()
    data["replay"] = {"command": ["echo hi"], "shell": True}
    p.write_text(json.dumps(data))
    assert main(["replay", str(p), "--execute", "--out", str(tmp_path / "c.json")]) == 1
    out = capsys.readouterr().out
    assert "pass --execute" not in out
    assert (
        "nothing was run; the recorded command needs a shell: pass --allow-shell as well to run it "
        "through one (with a timeout)"
    ) in out
    assert main(["replay", str(p)]) == 0
    assert "the recorded command needs a shell: pass --execute --allow-shell" in capsys.readouterr().out


def test_select_by_computed_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # no packet_id, and an integer in a float field: `kevidence id` and `replay` show the
    # same content id (the packet read with its types), which selects it
    stream = tmp_path / "many.jsonl"
    lines = []
    for script in ("a.py", "b.py"):
        data = timed_packet(None, median=100.0, command=["python", script]).to_dict()
        del data["packet_id"]
        data["timing"]["stats"]["median"] = 100
        lines.append(json.dumps(data))
    stream.write_text("\n".join(lines) + "\n")
    assert main(["id", str(stream)]) == 0
    by_id = capsys.readouterr().out.splitlines()[1].split()[0]
    assert main(["replay", str(stream), "--select", "softmax_v1"]) == 0  # the last match
    shown = capsys.readouterr().out.splitlines()[0].split("(")[-1].rstrip(")")
    assert shown == by_id
    for pid in (by_id,):
        for select in (pid, pid[7:13]):
            assert main(["replay", str(stream), "--select", select, "--format", "json"]) == 0
            assert json.loads(capsys.readouterr().out)["command"] == ["python", "b.py"]
    assert main(["replay", str(stream), "--select", shown[7:12]]) == 1  # fewer than 6 digits
    assert "no packet matches" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["replay", "compare"])
def test_deeply_nested_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(timed_packet(None, median=100.0).to_dict()))
    argv = [command, str(deep)] if command == "replay" else [command, str(ok), str(deep)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err == f"kevidence: error: {deep}: not valid JSON (nested too deeply to be a packet)\n"


@pytest.mark.parametrize("command", ["replay", "compare"])
def test_a_repeated_key_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    good = json.dumps(timed_packet(None, median=100.0).to_dict())
    twice = tmp_path / "twice.json"
    twice.write_text(good.replace('"status": "passed"', '"status": "failed", "status": "passed"', 1))
    assert twice.read_text() != good
    ok = tmp_path / "ok.json"
    ok.write_text(good)
    argv = [command, str(twice)] if command == "replay" else [command, str(ok), str(twice)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert (
        err
        == f"kevidence: error: {twice}: duplicate key `status` in one object; a JSON object must not repeat a key\n"
    )
    assert main([command, str(ok)] if command == "replay" else [command, str(ok), str(ok), "--force"]) in (
        0,
        3,
    )


def test_json_plan_names_the_folder_it_runs_in(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A packet without replay.cwd runs in the current folder: the JSON plan says which
    (`runs_in`), as the text plan does, and keeps `cwd` null (nothing was recorded)."""
    import json as _json

    from kernel_evidence.cli import main as cli_main
    from kernel_evidence.strategies import example_packet

    d = example_packet().to_dict()
    d["replay"] = {"command": [sys.executable, "-c", "pass"], "repository": d["replay"]["repository"]}
    d.pop("packet_id", None)
    path = tmp_path / "p.json"
    path.write_text(_json.dumps(d))
    monkeypatch.chdir(tmp_path)
    assert cli_main(["replay", str(path), "--format", "json"]) == 0
    plan = _json.loads(capsys.readouterr().out)
    assert plan["cwd"] is None and plan["runs_in"] == str(tmp_path)
