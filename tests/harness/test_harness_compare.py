"""compare: right verdicts on generated pairs with and without a difference, refusals, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _harness_packets import lognormal, timed_packet

from kernel_evidence.cli import main
from kernel_evidence.harness import compare_packets, compare_samples


def test_a_known_25_percent_speedup_is_found() -> None:
    a = timed_packet(lognormal(100.0, 60, seed=1))
    b = timed_packet(lognormal(80.0, 60, seed=2))
    r = compare_packets(a, b)
    assert r.verdict == "improved" and r.exit_code == 0
    assert r.ci_low is not None and r.ci_high is not None
    assert r.ci_low <= 1.25 <= r.ci_high
    assert r.speedup == pytest.approx(1.25, rel=0.03)
    assert r.p_value is not None and r.p_value < 1e-6


def test_a_known_slowdown_is_a_regression() -> None:
    r = compare_packets(
        timed_packet(lognormal(100.0, 40, seed=3)), timed_packet(lognormal(110.0, 40, seed=4))
    )
    assert r.verdict == "regressed" and r.exit_code == 4


@pytest.mark.parametrize("seed", range(5))
def test_no_difference_gives_no_significant_change(seed: int) -> None:
    a = timed_packet(lognormal(100.0, 50, seed=100 + seed))
    b = timed_packet(lognormal(100.0, 50, seed=200 + seed))
    r = compare_packets(a, b)
    assert r.verdict == "no_change" and r.exit_code == 3
    assert r.ci_low is not None and r.ci_high is not None and r.ci_low <= 1.0 <= r.ci_high


def test_tiny_significant_difference_below_min_effect_is_no_change() -> None:
    a = [100.0 + i * 1e-3 for i in range(200)]
    b = [99.7 + i * 1e-3 for i in range(200)]
    r = compare_samples(a, b, min_effect=0.01)
    assert r.verdict == "no_change"
    assert "the difference is significant but smaller than the 1.0% minimum effect" in r.notes


def test_zero_variance_says_what_it_cannot_conclude() -> None:
    r = compare_samples([100.0] * 10, [50.0] * 10)
    assert r.verdict == "improved" and r.speedup == 2.0
    assert any(n.startswith("both sample sets have zero spread") for n in r.notes)
    same = compare_samples([100.0] * 10, [100.0] * 10)
    assert same.verdict == "no_change" and same.p_value == 1.0


def test_too_few_samples_is_said() -> None:
    r = compare_samples([100.0, 101.0, 99.0], [50.0, 51.0, 49.0])
    assert r.verdict == "no_change"
    assert "too few samples (n=3 and 3) for any difference to be significant at alpha=0.05" in r.notes


@pytest.mark.parametrize(
    ("kw", "problem"),
    [
        (
            {"device": "NVIDIA A100-SXM4-80GB"},
            "different device: A `NVIDIA H100 80GB HBM3`, B `NVIDIA A100-SXM4-80GB`",
        ),
        ({"operator": "rmsnorm"}, "different operator: A `softmax`, B `rmsnorm`"),
        ({"method": "host_clock"}, "different timing method: A `cuda_events`, B `host_clock`"),
        (
            {"shape": "s2"},
            "different shapes: A `s1` {'cols': 128, 'rows': 8}, B `s2` {'cols': 128, 'rows': 8}",
        ),
        (
            {"status": "failed"},
            "B did not pass (status failed): its timing is not a valid measurement",
        ),
    ],
)
def test_incomparable_pairs_are_refused(kw: dict[str, str], problem: str) -> None:
    a = timed_packet(lognormal(100.0, 30, seed=1))
    b = timed_packet(lognormal(50.0, 30, seed=2), **kw)
    r = compare_packets(a, b)
    assert r.verdict == "incomparable" and r.exit_code == 1
    assert r.problems == [problem]
    forced = compare_packets(a, b, force=True)
    assert forced.verdict == "improved" and forced.forced and forced.problems == [problem]


def test_summary_statistics_only() -> None:
    a = timed_packet(None, median=100.0, stats_extra={"ci_low": 98.0, "ci_high": 102.0})
    b = timed_packet(None, median=80.0, stats_extra={"ci_low": 79.0, "ci_high": 81.0})
    r = compare_packets(a, b)
    assert r.verdict == "improved" and r.method == "summary: median CI overlap"
    assert r.notes[0] == "A and B have no raw samples: compared from summary statistics"
    bare = compare_packets(timed_packet(None, median=100.0), timed_packet(None, median=80.0))
    assert bare.verdict == "inconclusive" and bare.exit_code == 3
    assert any("the noise is unknown, so no significance can be claimed" in n for n in bare.notes)
    welch = compare_packets(
        timed_packet(None, median=100.0, stats_extra={"mean": 100.0, "std": 2.0, "n": 50}),
        timed_packet(None, median=100.5, stats_extra={"mean": 100.5, "std": 2.0, "n": 50}),
    )
    assert welch.verdict == "no_change" and welch.method == "summary: Welch z on means"


def _write(tmp_path: Path, name: str, packet: object) -> str:
    p = tmp_path / name
    p.write_bytes(packet.to_json())  # type: ignore[attr-defined]
    return str(p)


def test_cli_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path, "a.json", timed_packet(lognormal(100.0, 60, seed=1)))
    faster = _write(tmp_path, "b.json", timed_packet(lognormal(80.0, 60, seed=2)))
    same = _write(tmp_path, "c.json", timed_packet(lognormal(100.0, 60, seed=3)))
    slower = _write(tmp_path, "d.json", timed_packet(lognormal(125.0, 60, seed=4)))
    other = _write(
        tmp_path, "e.json", timed_packet(lognormal(80.0, 60, seed=5), device="AMD Instinct MI300X")
    )
    assert main(["compare", a, faster]) == 0
    out = capsys.readouterr().out
    assert "improved: B is" in out and "faster than A" in out
    assert main(["compare", a, same]) == 3
    assert main(["compare", a, slower]) == 4
    assert main(["compare", a, other]) == 1
    assert "different device" in capsys.readouterr().out
    assert main(["compare", a, other, "--force", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "improved" and data["forced"] is True and data["exit_code"] == 0


def test_cli_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path, "a.json", timed_packet(lognormal(100.0, 10, seed=1)))
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": "0.1"}')
    assert main(["compare", a, str(broken)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"kevidence: error: {broken}: not a valid packet: missing required field `created_at` - at `/created_at`"
    )
    assert main(["compare", a, str(tmp_path / "missing.json")]) == 1
    assert capsys.readouterr().err == f"kevidence: error: {tmp_path / 'missing.json'}: no such file\n"
    assert main(["compare", a, a, "--format", "yaml"]) == 2


def test_summary_lines() -> None:
    assert compare_samples([100.0] * 10, [50.0] * 10).summary() == (
        "improved: B is 2x faster than A (speedup 2x, 95% CI 2-2, p=1.59e-05)"
    )
    assert compare_samples([100.0] * 10, [120.0] * 10).summary() == (
        "regressed: B is 20.0% slower than A (speedup 0.8333x, 95% CI 0.8333-0.8333, p=1.59e-05)"
    )


def test_cli_select_from_streams(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stream = tmp_path / "run.jsonl"
    a = timed_packet(lognormal(100.0, 40, seed=1))
    b = timed_packet(lognormal(70.0, 40, seed=2)).model_copy(
        update={
            "subject": timed_packet(None).subject.model_copy(update={"name": "softmax_v2"}),
            "packet_id": None,
        }
    )
    stream.write_bytes(a.to_json() + b"\n" + b.with_id().to_json() + b"\n")
    assert main(["compare", str(stream), str(stream)]) == 1
    assert capsys.readouterr().err == (
        f"kevidence: error: {stream}: expected one packet, found several; pick one with --select-a / --select-b\n"
    )
    assert (
        main(["compare", str(stream), str(stream), "--select-a", "softmax_v1", "--select-b", "softmax_v2"])
        == 0
    )
    failed = tmp_path / "failed.json"
    failed.write_bytes(timed_packet(None, median=1.0, status="failed").to_json())
    data = json.loads(failed.read_bytes())
    del data["timing"], data["packet_id"]
    failed.write_text(json.dumps(data))
    assert main(["compare", str(stream), str(failed), "--select-a", "softmax_v1"]) == 1
    assert capsys.readouterr().err.endswith("B has no timing.stats (status failed): nothing to compare\n")


def test_alpha_sets_the_level_of_the_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # p = 0.059: the 95% interval of the speedup touches 1, the 90% one does not
    a = timed_packet(lognormal(100.0, 30, seed=1053))
    b = timed_packet(lognormal(98.0, 30, seed=2053))
    strict, lax = compare_packets(a, b), compare_packets(a, b, alpha=0.10)
    assert strict.verdict == "no_change" and strict.ci_level == 0.95
    assert lax.verdict == "improved" and lax.ci_level == 0.90
    assert lax.ci_low is not None and strict.ci_low is not None and lax.ci_low > 1.0 > strict.ci_low
    pa, pb = _write(tmp_path, "a.json", a), _write(tmp_path, "b.json", b)
    assert main(["compare", pa, pb, "--alpha", "0.10"]) == 0
    assert "improved: B is 3.2% faster than A (speedup 1.032x, 90% CI 1.006-1.057, p=0.0594)" in (
        capsys.readouterr().out
    )
    assert main(["compare", pa, pb, "--alpha", "0.000001", "--format", "json"]) == 3
    assert json.loads(capsys.readouterr().out)["ci_level"] == pytest.approx(0.999999)
    # a level that close to 1 is not rounded up to 100%, and its thin tails are said
    tiny = compare_samples([100.0] * 10, [50.0] * 10, alpha=1e-6)
    assert "99.9999% CI" in tiny.summary()
    assert any("fewer than 5 of the 2000 bootstrap resamples in each tail" in n for n in tiny.notes)


def test_alpha_sets_the_level_of_the_welch_interval() -> None:
    a = timed_packet(None, median=100.0, stats_extra={"mean": 100.0, "std": 2.0, "n": 50})
    b = timed_packet(None, median=99.0, stats_extra={"mean": 99.0, "std": 2.0, "n": 50})
    at95, at90 = compare_packets(a, b), compare_packets(a, b, alpha=0.10)
    assert at95.ci_level == 0.95 and at90.ci_level == 0.90
    assert at95.ci_low is not None and at95.ci_high is not None
    assert at90.ci_low is not None and at90.ci_high is not None
    # same centre, half-widths in the ratio of the normal quantiles z(0.95) / z(0.975)
    assert (at90.ci_high - at90.ci_low) / (at95.ci_high - at95.ci_low) == pytest.approx(
        1.6448536269514722 / 1.959963984540054, rel=1e-9
    )


def test_median_intervals_keep_the_packets_level(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # only medians and 95% intervals, which do not overlap: p < 0.05, nothing more is known
    a = timed_packet(None, median=100.0, stats_extra={"ci_low": 99.0, "ci_high": 101.0, "ci_level": 0.95})
    b = timed_packet(None, median=97.0, stats_extra={"ci_low": 96.0, "ci_high": 98.0, "ci_level": 0.95})
    own = (
        "significance from non-overlapping median confidence intervals at the packets' own 95% level "
        "(conservative: non-overlap means p < 0.05)"
    )
    for alpha in (0.05, 0.10):
        r = compare_packets(a, b, alpha=alpha)
        assert r.verdict == "improved" and r.ci_level == 0.95 and own in r.notes
    strict = compare_packets(a, b, alpha=1e-6)
    assert strict.verdict == "inconclusive" and strict.exit_code == 3
    assert strict.notes[-1] == (
        "the intervals do not overlap, which shows p < 0.05 but not p < alpha=1e-06; "
        "record timing.stats.samples to test at that alpha"
    )
    pa, pb = _write(tmp_path, "a.json", a), _write(tmp_path, "b.json", b)
    assert main(["compare", pa, pb, "--alpha", "0.000001"]) == 3
    out = capsys.readouterr().out
    assert "inconclusive: B is 3.1% faster than A (speedup 1.031x, 95% CI 1.01-1.052)" in out
    assert "not p < alpha=1e-06" in out
    # overlapping intervals stay no significant change at any alpha
    c = timed_packet(None, median=99.5, stats_extra={"ci_low": 98.5, "ci_high": 100.5, "ci_level": 0.95})
    assert compare_packets(a, c, alpha=1e-6).verdict == "no_change"
    # without a recorded level, 95% is assumed and said
    bare = compare_packets(
        timed_packet(None, median=100.0, stats_extra={"ci_low": 99.0, "ci_high": 101.0}),
        timed_packet(None, median=97.0, stats_extra={"ci_low": 96.0, "ci_high": 98.0}),
    )
    assert bare.notes[1].endswith("; ci_level not recorded, 95% assumed")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--min-effect", "nan", "--min-effect must be a finite number >= 0, got nan"),
        ("--min-effect", "inf", "--min-effect must be a finite number >= 0, got inf"),
        ("--min-effect", "-0.5", "--min-effect must be a finite number >= 0, got -0.5"),
        ("--alpha", "nan", "--alpha must be between 0 and 1, got nan"),
        ("--resamples", "10", "--resamples must be >= 100, got 10"),
    ],
)
def test_cli_rejects_non_finite_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    a = _write(tmp_path, "a.json", timed_packet(lognormal(100.0, 10, seed=1)))
    assert main(["compare", a, a, option, value]) == 2
    assert capsys.readouterr().err == f"kevidence: error: {message}\n"


def test_cli_select_by_computed_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # packets without packet_id are picked by the id `kevidence id` and `replay` show
    stream = tmp_path / "run.jsonl"
    a = timed_packet(lognormal(100.0, 40, seed=1)).to_dict()
    b = timed_packet(lognormal(70.0, 40, seed=2)).to_dict()
    del a["packet_id"], b["packet_id"]
    stream.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n")
    assert main(["id", str(stream)]) == 0
    ids = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    args = ["compare", str(stream), str(stream), "--format", "json"]
    assert main([*args, "--select-a", ids[0][7:19], "--select-b", ids[1][7:19]]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "improved"
    assert main([*args, "--select-a", ids[1][7:19], "--select-b", ids[0]]) == 4


def test_a_significant_test_with_an_interval_around_1_is_explained() -> None:
    # p = 0.009, but the bootstrap interval of the median ratio still includes 1
    r = compare_packets(
        timed_packet(lognormal(100.0, 30, seed=1035)), timed_packet(lognormal(98.0, 30, seed=2035))
    )
    assert r.verdict == "no_change" and r.p_value is not None and r.p_value < 0.05
    assert r.notes == [
        "the test is significant (p < 0.05) but the interval of the speedup includes 1: "
        "they disagree, so no change is claimed"
    ]


def test_compare_packets_takes_dicts_like_validate_and_reward() -> None:
    from kernel_evidence.harness.compare import compare_packets
    from kernel_evidence.strategies import example_packet

    d = example_packet().to_dict()
    assert compare_packets(d, d).verdict == compare_packets(example_packet(), example_packet()).verdict
    with pytest.raises(TypeError, match="B is str"):
        compare_packets(d, "packet.json")  # type: ignore[arg-type]
