"""The RL-loop example runs on a CPU, writes a packet per candidate, and every packet validates."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from kernel_evidence.cli import main
from kernel_evidence.io import iter_records

pytest.importorskip("numpy")  # the example's kernels are numpy code

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rl_loop" / "run.py"


def test_rl_loop_example(tmp_path: Path, capsys: object) -> None:
    out = tmp_path / "packets.jsonl.zst"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--out", str(out), "--budget", "0.2"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    packets = [msgspec.json.decode(r.data) for r in iter_records(str(out)) if r.data is not None]
    assert len(packets) == 13
    outcomes = {p["subject"]["name"]: p.get("failure", {}).get("failure_class", p["status"]) for p in packets}
    assert outcomes == {
        "ref_copy": "passed",
        "inplace": "passed",
        "row_loop": "passed",
        "syntax_error": "compile_error",
        "no_max_shift": "nan_inf",
        "flat_output": "incorrect_shape",
        "float64_out": "incorrect_dtype",
        "tail_dropped": "incorrect_numerical",
        "typo_call": "runtime_error",
        "sleepy": "timeout",
        "cached": "incorrect_numerical",
        "patched_timer": "reward_hack",  # caught by timer integrity
        "deferred": "reward_hack",  # caught by the check of the timed calls' outputs
    }
    # the off-by-one only fails where cols % 128 != 0
    tail = next(p for p in packets if p["subject"]["name"] == "tail_dropped")
    assert tail["failure"]["shape_id"] == "s2"
    assert [s["passed"] for s in tail["validation"]["shapes"]] == [True, False, True, True]
    # passed candidates claim a reference speedup over numpy, measured in the same session
    for p in packets:
        if p["status"] == "passed":
            assert p["timing"]["baseline"]["provider"] == "numpy" and p["timing"]["baseline"]["same_session"]
            assert p["timing"]["speedup"]["value"] > 0
        else:
            assert "speedup" not in p.get("timing", {})
    assert Counter(p["status"] for p in packets) == {"passed": 3, "failed": 10}
    # timed packets carry both sides' conditions and the defence record
    for p in packets:
        if p["status"] == "passed":
            cand, base = p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]
            assert cand["dims"] == base["dims"] and cand["dtypes"] == base["dtypes"] == ["float32"]
            assert cand["session"] == base["session"] and cand["fresh_inputs"] and base["fresh_inputs"]
            outcomes = {d["check"]: d["outcome"] for d in p["defences"]}
            for check in ("fresh_inputs", "outputs_checked_after_timing", "timer_integrity", "unseen_inputs"):
                assert outcomes[check] == "passed", (p["subject"]["name"], check)
    cheats = {
        p["subject"]["name"]: p for p in packets if p["subject"]["name"] in ("patched_timer", "deferred")
    }
    failed = {n: {d["check"] for d in p["defences"] if d["outcome"] == "failed"} for n, p in cheats.items()}
    assert "timer_integrity" in failed["patched_timer"]
    assert (
        "outputs_checked_after_timing" in failed["deferred"] and "timer_integrity" not in failed["deferred"]
    )
    assert (
        "rejection histogram:" in proc.stdout and "best: " in proc.stdout and "evidence grade" in proc.stdout
    )
    # every packet passes `kevidence validate`
    assert main(["validate", str(out)]) == 0


def test_replaying_the_example_keeps_the_recorded_packets(tmp_path: Path) -> None:
    """`kevidence replay --execute` re-runs `run.py --out FILE`: the recorded file, which
    holds the packet being replayed, must not be replaced by the new run."""
    out = tmp_path / "packets.jsonl"
    argv = [sys.executable, str(EXAMPLE), "--out", str(out), "--budget", "0.05"]
    subprocess.run(argv, capture_output=True, timeout=120, cwd=tmp_path, check=True)
    before = out.read_bytes()
    replay = [sys.executable, "-m", "kernel_evidence", "replay", str(out), "--select", "inplace"]
    proc = subprocess.run(
        [*replay, "--execute", "--timeout", "120"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr  # reproduced, or drifted (noise)
    assert out.read_bytes() == before
