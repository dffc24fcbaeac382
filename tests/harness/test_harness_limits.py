"""compare and replay at the edges: medians a ratio cannot be taken of, and option bounds."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from _harness_packets import lognormal, timed_packet

from kernel_evidence.cli import main
from kernel_evidence.harness import compare_packets, compare_samples, execute_replay, plan_replay
from kernel_evidence.harness._load import load_packet
from kernel_evidence.harness.compare import MAX_RESAMPLES, Comparison
from kernel_evidence.harness.replay import MAX_TIMEOUT

TINY = 5e-324  # the smallest subnormal: 4.9e-321 ns once converted from us
HUGE = 1e308  # finite in us, infinite in ns


def _finite_numbers(r: Comparison) -> None:
    """Nothing the result carries is an infinity or a NaN, and its JSON is strict JSON."""
    for v in (r.speedup, r.ci_low, r.ci_high, r.p_value, r.median_a_ns, r.median_b_ns):
        assert v is None or math.isfinite(v)
    json.dumps(r.to_dict(), allow_nan=False)
    assert "inf" not in r.summary()


@pytest.mark.parametrize(
    ("a", "b", "note"),
    [
        (0.0, 100.0, "the median of A is zero: a ratio is undefined"),
        (100.0, 0.0, "the median of B is zero: a ratio is undefined"),
        (TINY, 100.0, "the median of A is 4.94e-321 ns, a subnormal number"),
        (100.0, TINY, "the median of B is 4.94e-321 ns, a subnormal number"),
        (HUGE, 100.0, "the median of A is too large to express in ns"),
        (100.0, HUGE, "the median of B is too large to express in ns"),
        (1e-290, 1e20, "are too far apart for their ratio to be a floating-point number"),
    ],
)
@pytest.mark.parametrize("with_samples", [True, False])
def test_a_median_no_ratio_can_be_taken_of_is_inconclusive(
    a: float, b: float, note: str, with_samples: bool
) -> None:
    pa = timed_packet([a] * 9) if with_samples else timed_packet(None, median=a)
    pb = timed_packet([b] * 9) if with_samples else timed_packet(None, median=b)
    r = compare_packets(pa, pb)
    assert r.verdict == "inconclusive" and r.exit_code == 3 and r.speedup is None
    assert any(note in n for n in r.notes), r.notes
    _finite_numbers(r)


def test_an_interval_out_of_floating_point_range_is_inconclusive() -> None:
    # medians 1 and 1, but a resample can take 1e308 / 1e-300: the interval overflows
    r = compare_samples([1.0, 1.0, 1e308], [1e-300, 1.0, 1.0])
    assert r.verdict == "inconclusive" and r.ci_low is None and r.ci_high is None
    assert "span more than the floating-point range" in r.notes[-1]
    _finite_numbers(r)


def test_summary_of_a_ratio_that_cannot_be_inverted_does_not_divide_by_zero() -> None:
    for speedup in (0.0, 5e-324, math.inf):
        line = Comparison(verdict="no_change", speedup=speedup, notes=["why"]).summary()
        assert line == "no_change: why"


@pytest.mark.parametrize(("a", "b"), [(0.0, 100.0), (TINY, 100.0), (100.0, HUGE)])
def test_cli_compare_says_why_in_one_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], a: float, b: float
) -> None:
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_bytes(timed_packet([a] * 9).to_json())
    pb.write_bytes(timed_packet([b] * 9).to_json())
    assert main(["compare", str(pa), str(pb)]) == 3
    out, err = capsys.readouterr()
    assert err == "" and "inconclusive: " in out and "a ratio is undefined" in out
    assert "inf" not in out
    assert main(["compare", str(pa), str(pb), "--format", "json"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "inconclusive" and "speedup" not in data


# (not much more: without the bound, a huge number runs for hours instead of failing)
@pytest.mark.parametrize("value", [str(MAX_RESAMPLES + 1), str(2 * MAX_RESAMPLES)])
def test_resamples_have_an_upper_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    a = tmp_path / "a.json"
    a.write_bytes(timed_packet(lognormal(100.0, 10, seed=1)).to_json())
    assert main(["compare", str(a), str(a), "--resamples", value]) == 2
    assert capsys.readouterr().err == f"kevidence: error: --resamples must be at most 1000000, got {value}\n"
    with pytest.raises(ValueError, match="resamples must be between 1 and 1000000, got 1000001"):
        compare_samples([1.0, 2.0], [1.0, 2.0], resamples=MAX_RESAMPLES + 1)


def _env_packet(tmp_path: Path, env: dict[str, str]) -> tuple[Path, Path]:
    marker = tmp_path / "marker"
    data = timed_packet(
        lognormal(100.0, 20, seed=1),
        command=[sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ran')"],
    ).to_dict()
    data["replay"]["env"] = env
    data.pop("packet_id")
    p = tmp_path / "p.json"
    p.write_text(json.dumps(data))
    return p, marker


def test_a_nul_byte_in_a_replay_env_value_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p, marker = _env_packet(tmp_path, {"CUDA_VISIBLE_DEVICES": "0\x001"})
    message = "the replay environment is malformed: replay.env `CUDA_VISIBLE_DEVICES` contains a NUL byte in its value"
    assert main(["replay", str(p), "--execute", "--out", str(tmp_path / "c.json")]) == 1
    assert capsys.readouterr().err == f"kevidence: error: {p}: {message}\n"
    assert not marker.exists() and not (tmp_path / "c.json").exists()
    assert plan_replay(load_packet(p)).problems == [message]
    # a variable off the allow-list is never applied, so it does not matter what it holds
    p, marker = _env_packet(tmp_path, {"NOT_ALLOWED": "0\x001"})
    assert plan_replay(load_packet(p)).problems == []


@pytest.mark.parametrize("value", ["1e308", "604801", "1e20"])
def test_replay_timeout_has_an_upper_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    p, marker = _env_packet(tmp_path, {})
    argv = ["replay", str(p), "--execute", "--timeout", value, "--out", str(tmp_path / "c.json")]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"kevidence: error: --timeout must be at most 604800 seconds (7 days), got {float(value):g}\n"
    )
    assert not marker.exists()
    with pytest.raises(ValueError, match="timeout must be at most 604800 seconds"):
        execute_replay(load_packet(p), timeout=float(value))


def test_the_longest_timeout_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p, marker = _env_packet(tmp_path, {})
    argv = ["replay", str(p), "--execute", "--timeout", f"{MAX_TIMEOUT:g}", "--out", str(tmp_path / "c.json")]
    assert main(argv) == 1  # ran (it writes no packet, so the replay failed)
    assert marker.read_text() == "ran"


def test_control_characters_of_names_and_packets_stay_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = tmp_path / "a.json"
    a.write_bytes(timed_packet(lognormal(100.0, 10, seed=1)).to_json())
    odd = tmp_path / "b\x1b[31m\nx.json"
    odd.write_bytes(timed_packet(lognormal(100.0, 10, seed=2)).to_json())
    main(["compare", str(a), str(odd)])
    out = capsys.readouterr().out
    # the name is shown escaped, followed by the packet it stood for
    assert "\x1b" not in out and f"B: {tmp_path}/b\\x1b[31m\\nx.json: softmax" in out
    main(["replay", str(odd)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and f"packet     {tmp_path}/b\\x1b[31m\\nx.json (" in out
    # a command recorded with an escape sequence is shown escaped, in the plan and the error
    data = timed_packet([1.0, 2.0], command=["no-such-\x1b[2J-program"]).to_dict()
    p = tmp_path / "p.json"
    p.write_text(json.dumps(data))
    assert main(["replay", str(p)]) == 1
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "no-such-\\x1b[2J-program" in out
    assert err.count("\n") == 1 and "no-such-\\x1b[2J-program" in err
