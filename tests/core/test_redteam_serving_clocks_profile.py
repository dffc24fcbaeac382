"""Red-team fixes in the serving, hardware and profile bands: each cheat is caught where it
lies, and its honest near-twin is let through.

- KE1007: with every request of `output_len` tokens, TPOT is (e2el - TTFT) / (tokens - 1)
  exactly (up to the clients' definitions and rounding): a TPOT cut just inside the 3x band,
  or an e2el shortened under TTFT + decode, is caught.
- KE1001: a run at a finite request rate cannot finish before its requests arrive; a
  candidate's throughputs are its counts over its duration (2% and rounding).
- KE807: clocks recorded locked whose observed SM clock is above the lock.
- KE1101/KE1105: a capture without `of` that the passed candidate_kernel_profiled defence
  vouches for is the candidate's: held against its claim, and not only a library's kernels.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate

VALID = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"


def _example(name: str) -> dict[str, Any]:
    d: dict[str, Any] = json.loads((VALID / f"{name}.json").read_text(encoding="utf-8"))
    d.pop("packet_id")
    return d


def serving() -> dict[str, Any]:
    """The vLLM example: 1000 requests of 128 tokens, concurrency 64, 31.4 s; mean TTFT 95.3
    ms, mean e2el 1950.4 ms, mean TPOT 14.6 ms = (1950.4 - 95.3) / 127."""
    return _example("serving_vllm_llama8b_h100")


def gemm() -> dict[str, Any]:
    """The H100 GEMM example: one shape, one ncu capture without `of` (151.36 us), claim 151.9 us."""
    return _example("nvidia_h100_gemm_vs_cublaslt")


def found(d: dict[str, Any], rule: str) -> set[str]:
    return {f.pointer for f in validate(d).findings if f.rule_id == rule}


def _scale(st: dict[str, Any], f: float) -> None:
    for k in ("median", "mean", "std", "min", "max"):
        if k in st:
            st[k] = round(st[k] * f, 6)
    if "percentiles" in st:
        st["percentiles"] = {k: round(v * f, 6) for k, v in st["percentiles"].items()}
    if "samples" in st:
        st["samples"] = [round(x * f, 6) for x in st["samples"]]


def _set_duration(s: dict[str, Any], sec: float, boost: float = 1.0) -> None:
    """A duration and throughputs that are its counts over it (x boost)."""
    s["duration"] = {"value": sec, "unit": "s"}
    s["request_throughput"]["value"] = round(s["completed"] / sec * boost, 4)
    s["output_throughput"]["value"] = round(s["total_output_tokens"] / sec * boost, 2)
    s["total_token_throughput"]["value"] = round(
        (s["total_input_tokens"] + s["total_output_tokens"]) / sec * boost, 1
    )


def test_the_examples_are_clean() -> None:
    assert validate(serving()).ok and validate(gemm()).ok
    for rule in ("KE1001", "KE1007"):
        assert not found(serving(), rule)
    for rule in ("KE807", "KE1101", "KE1105"):
        assert not found(gemm(), rule)


# ---------------------------------------------------------------- KE1007


def test_tpot_cut_inside_the_3x_band_is_caught_when_every_request_has_output_len_tokens() -> None:
    d = serving()
    _scale(d["timing"]["serving"]["tpot"], 1 / 2.85)  # 5.1 ms where the latencies give 14.6
    assert found(d, "KE1007") == {"/timing/serving/tpot/mean"}
    # requests of several lengths (EOS, a range ratio): only the 3x band holds
    e = copy.deepcopy(d)
    e["timing"]["serving"]["total_output_tokens"] = 127000
    e["timing"]["serving"]["output_throughput"]["value"] = round(127000 / 31.4, 1)
    e["timing"]["serving"]["total_token_throughput"]["value"] = round((1024000 + 127000) / 31.4, 1)
    assert not found(e, "KE1007")
    e = copy.deepcopy(d)
    e["task"]["serving"]["settings"]["random_range_ratio"] = 0.5
    assert not found(e, "KE1007")


def test_e2el_shorter_than_ttft_plus_decode_is_caught_at_the_e2el() -> None:
    d = serving()
    _scale(d["timing"]["serving"]["e2el"], 0.7)
    d["timing"]["serving"]["e2el"]["max"] = 3404.0 * 0.7
    # the mean against TTFT + decode, and the max against the slowest request's decode steps
    assert found(d, "KE1007") == {"/timing/serving/e2el/mean", "/timing/serving/e2el/max"}


@pytest.mark.parametrize(
    "tpot",
    [
        14.6,  # vLLM, SGLang, AIPerf: (e2el - TTFT) / (tokens - 1)
        14.49,  # GuideLLM: (e2el - TTFT) / tokens
        15.24,  # e2el / tokens
        13.0,  # 11% below: noise in what the client timed
        17.0,  # 12% above
    ],
)
def test_tpot_by_any_client_definition_passes(tpot: float) -> None:
    d = serving()
    t = d["timing"]["serving"]["tpot"]
    _scale(t, tpot / t["mean"])
    assert not found(d, "KE1007")


def test_real_exact_length_runs_pass() -> None:
    """A real `vllm bench serve` sweep run (opt-125m, 8 x 16 tokens) and the GuideLLM
    report's numbers (46 x 128 tokens, TPOT over the tokens): the identity holds."""
    d = serving()
    d["task"]["serving"].update(num_prompts=8, input_len=32, output_len=16, max_concurrency=2)
    d["timing"]["serving"] = {
        "completed": 8,
        "failed": 0,
        "duration": {"value": 1.3653671270003542, "unit": "s"},
        "request_throughput": {"value": 5.859229976904171, "unit": "req/s"},
        "output_throughput": {"value": 93.74767963046673, "unit": "tok/s"},
        "total_token_throughput": {"value": 281.2430388914002, "unit": "tok/s"},
        "total_input_tokens": 256,
        "total_output_tokens": 128,
        "ttft": {"unit": "ms", "median": 44.92285849846667, "mean": 217.27289337468392},
        "tpot": {"unit": "ms", "median": 8.323490332986694, "mean": 8.204553624697533},
        "e2el": {"unit": "ms", "median": 166.47808399284258, "mean": 340.3411977451469},
    }
    d["timing"]["stats"] = {"unit": "ms", "median": 166.47808399284258, "mean": 340.3411977451469}
    d["timing"]["baseline"]["serving"]["output_throughput"]["value"] = 80.0
    d["timing"]["speedup"]["value"] = 93.74767963046673 / 80.0
    assert not found(d, "KE1007") and not found(d, "KE1001")
    d["timing"]["serving"]["tpot"]["mean"] = 8.204553624697533 / 1.3  # 30% off an exact identity
    assert found(d, "KE1007") == {"/timing/serving/tpot/mean"}
    g = serving()
    g["task"]["serving"].update(output_len=128)
    s = g["timing"]["serving"]
    s.update(completed=46, total_output_tokens=46 * 128)
    s["ttft"].update(mean=16.792535781860348, median=16.38054847717285)
    s["tpot"].update(mean=4.90300272307966, median=4.885653033852577)
    s["e2el"].update(mean=644.4743664368339, median=642.4565315246582)
    found_rules = {f.rule_id for f in validate(g).findings}
    assert "KE1007" not in found_rules


def test_rounded_figures_of_a_two_token_run_pass() -> None:
    """Two tokens per request, latencies written in seconds to one decimal: e2el 0.2 s
    (0.24 s measured) - TTFT 0.1 s is 0.1 s, TPOT 140 ms; the rounding of e2el and TTFT
    (0.05 s each) is most of the decode step, and is allowed."""
    d = serving()
    d["task"]["serving"]["output_len"] = 2
    s = d["timing"]["serving"]
    s["total_output_tokens"] = 2000
    s["output_throughput"]["value"] = round(2000 / 31.4, 2)
    s["total_token_throughput"]["value"] = round((1024000 + 2000) / 31.4, 1)
    s["ttft"] = {"unit": "s", "median": 0.1, "mean": 0.1}
    s["e2el"] = {"unit": "s", "median": 0.2, "mean": 0.2, "max": 0.3}
    s["tpot"] = {"unit": "ms", "median": 140.0, "mean": 140.0}
    d["timing"]["stats"] = {"unit": "s", "median": 0.2, "mean": 0.2}
    assert not found(d, "KE1007")
    # written to three decimals, the same figures do not fit
    s["ttft"] = {"unit": "s", "median": 0.1, "mean": 0.104}
    s["e2el"] = {"unit": "s", "median": 0.2, "mean": 0.204, "max": 0.3}
    assert found(d, "KE1007") == {"/timing/serving/e2el/mean"}


# ---------------------------------------------------------------- KE1001


def finite_rate(duration: float) -> dict[str, Any]:
    """The example as an open-loop run at 20 req/s without a concurrency bound."""
    d = serving()
    sv = d["task"]["serving"]
    del sv["max_concurrency"]
    sv["request_rate"] = 20.0
    _set_duration(d["timing"]["serving"], duration)
    d["timing"]["speedup"]["value"] = round(
        d["timing"]["serving"]["output_throughput"]["value"]
        / d["timing"]["baseline"]["serving"]["output_throughput"]["value"],
        4,
    )
    return d


def test_a_finite_rate_run_cannot_finish_before_its_requests_arrive() -> None:
    # 1000 requests at 20/s: 999 gaps of 50 ms, at least (999 - 5 sqrt(1000)) / 20 = 42 s
    assert found(finite_rate(31.4), "KE1001") == {"/timing/serving/duration"}
    assert not found(finite_rate(51.2), "KE1001")
    assert not found(finite_rate(43.0), "KE1001")  # 5 standard deviations of Poisson gaps


def test_arrival_bound_widens_with_burstiness_and_gives_way_to_ramp_ups() -> None:
    d = finite_rate(31.4)
    d["task"]["serving"]["settings"]["burstiness"] = 0.1  # gaps of std 3x the mean
    assert not found(d, "KE1001")
    d["task"]["serving"]["settings"]["burstiness"] = 100.0  # nearly constant gaps: >= 49.2 s
    assert found(d, "KE1001") == {"/timing/serving/duration"}
    assert found(finite_rate(45.0), "KE1001") == set()
    e = finite_rate(45.0)
    e["task"]["serving"]["settings"]["burstiness"] = 100.0
    assert found(e, "KE1001") == {"/timing/serving/duration"}
    d["task"]["serving"]["settings"]["burstiness"] = 1.0
    d["task"]["serving"]["settings"]["ramp_up_strategy"] = "linear"
    assert not found(d, "KE1001")


def test_arrival_bound_needs_enough_requests() -> None:
    d = finite_rate(31.4)
    s = d["timing"]["serving"]
    # 20 requests at 0.5 req/s: 38 s of gaps on average, but 5 sqrt(20) = 22 gaps of slack
    d["task"]["serving"].update(request_rate=0.5, num_prompts=20)
    s.update(completed=20, total_input_tokens=20 * 1024, total_output_tokens=20 * 128)
    for k in ("ttft", "tpot", "e2el"):
        s[k]["n"] = 20
    _set_duration(s, 5.0)
    assert not found(d, "KE1001")
    d["task"]["serving"].update(request_rate=2.0, num_prompts=200)  # 200 at 2/s: >= 64 s
    s.update(completed=200, total_input_tokens=200 * 1024, total_output_tokens=200 * 128)
    for k in ("ttft", "tpot", "e2el"):
        s[k]["n"] = 200
    _set_duration(s, 5.0)
    assert found(d, "KE1001") == {"/timing/serving/duration"}


def test_real_finite_rate_runs_pass() -> None:
    """llm-d runs at 10 and 30 req/s (300 and 900 requests in 35.8 and 40.7 s)."""
    for rate, n, sec in ((10.0, 300, 35.84472489100017), (30.0, 900, 40.722225800999695)):
        d = finite_rate(51.2)
        d["task"]["serving"].update(request_rate=rate, num_prompts=n)
        s = d["timing"]["serving"]
        s.update(completed=n, total_input_tokens=n * 1000, total_output_tokens=n * 128)
        for k in ("ttft", "tpot", "e2el"):
            s[k]["n"] = n
        _set_duration(s, sec)
        assert not {p for p in found(d, "KE1001") if p.endswith("/duration")}


def test_candidate_throughputs_are_counts_over_the_duration() -> None:
    d = serving()
    _set_duration(d["timing"]["serving"], 31.4, boost=1.095)  # inside the old 10%
    assert found(d, "KE1001") == {
        "/timing/serving/output_throughput",
        "/timing/serving/request_throughput",
        "/timing/serving/total_token_throughput",
    }
    _set_duration(d["timing"]["serving"], 31.4, boost=1.015)
    assert not found(d, "KE1001")
    # a duration written to two digits: its rounding (1.6%) is allowed on top
    s = d["timing"]["serving"]
    s["duration"]["value"] = 31.0
    for k in ("request_throughput", "output_throughput", "total_token_throughput"):
        s[k]["value"] = round(s[k]["value"] / 1.015 * 31.4 / 30.6, 2)  # the true duration 30.6 s
    assert not found(d, "KE1001")


def test_baseline_throughputs_keep_the_wider_slack() -> None:
    d = serving()
    b = d["timing"]["baseline"]["serving"]
    b.update(duration={"value": 36.36, "unit": "s"}, completed=1000, total_output_tokens=128000)
    b["output_throughput"]["value"] = round(128000 / 36.36 * 0.95, 1)  # 5% low, as InferenceX writes it
    d["timing"]["speedup"]["value"] = round(4076.4 / b["output_throughput"]["value"], 4)
    assert not found(d, "KE1001")


# ---------------------------------------------------------------- KE807


def test_clocks_locked_but_observed_above_the_lock() -> None:
    d = gemm()
    d["hardware"]["clocks"]["sm_observed"] = {"value": 1980.0, "unit": "MHz"}
    assert found(d, "KE807") == {"/hardware/clocks/sm_observed"}
    assert not validate(d).ok
    d["hardware"]["clocks"]["sm_observed"] = {"value": 1.98, "unit": "GHz"}
    assert found(d, "KE807") == {"/hardware/clocks/sm_observed"}


@pytest.mark.parametrize(
    ("locked", "observed"),
    [(True, 1755.0), (True, 1620.0), (True, 1830.0), (False, 1980.0), (None, 1980.0)],
)
def test_clocks_at_or_under_the_lock_or_not_locked_pass(locked: bool | None, observed: float) -> None:
    d = gemm()
    c = d["hardware"]["clocks"]
    if locked is None:
        del c["locked"]
    else:
        c["locked"] = locked
    c["sm_observed"] = {"value": observed, "unit": "MHz"}
    assert not found(d, "KE807")


# ---------------------------------------------------------------- KE1101, KE1105


def _profiled(d: dict[str, Any]) -> dict[str, Any]:
    d["defences"] = [
        {"check": "candidate_kernel_profiled", "outcome": "passed", "detail": "ncu, /profiler/0"}
    ]
    return d


def _claim_scaled(d: dict[str, Any], f: float) -> dict[str, Any]:
    t = d["timing"]
    _scale(t["stats"], f)
    t["speedup"]["value"] = round(t["baseline"]["stats"]["median"] / t["stats"]["median"], 4)
    return d


def test_a_capture_without_of_vouched_for_by_the_defence_is_held_against_the_claim() -> None:
    d = _claim_scaled(_profiled(gemm()), 0.6)  # 91 us claimed, 151 us captured
    assert "/timing/stats/median" in found(d, "KE1101")
    assert not found(_profiled(gemm()), "KE1101")  # the claim the capture shows
    # without the defence nothing says whose capture it is
    assert not found(_claim_scaled(gemm(), 0.6), "KE1101")


def test_an_unlabelled_capture_that_may_hold_other_calls_is_not_judged() -> None:
    d = _claim_scaled(_profiled(gemm()), 0.6)
    # a task of two shapes: which one the capture is of is unknown
    sh = copy.deepcopy(d["task"]["shapes"][0])
    sh["id"] = "m2048n2048k2048"
    d["task"]["shapes"].append(sh)
    assert not found(d, "KE1101")
    # a cuBLAS (the baseline's) or ATen kernel in the capture: it may hold the other side too
    for name in (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_cublas",
        "void at::native::elementwise_kernel",
    ):
        d = _claim_scaled(_profiled(gemm()), 0.6)
        extra = copy.deepcopy(d["profiler"][0]["kernels"][0])
        extra.update(name=name, id="1")
        del extra["raw"]
        d["profiler"][0]["kernels"].append(extra)
        assert not found(d, "KE1101")
    # a capture that says it is the baseline's is not the candidate's
    d = _claim_scaled(_profiled(gemm()), 0.6)
    d["profiler"][0]["of"] = {"side": "baseline", "shape_id": "m4096n4096k4096"}
    assert "/timing/stats/median" not in found(d, "KE1101")


CUBLAS = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_cublas"


def test_an_unlabelled_capture_of_only_the_baselines_library_is_caught() -> None:
    d = _profiled(gemm())
    d["profiler"][0]["kernels"][0]["name"] = CUBLAS
    assert found(d, "KE1105") == {"/profiler/0/kernels"}
    assert validate(d).grade.letter in {"C", "D", "F"}
    # a candidate that is itself the library's call (its name says so) shows its kernels
    e = copy.deepcopy(d)
    e["subject"]["name"] = "cublaslt_gemm_bf16_autotuned"
    assert not found(e, "KE1105")
    # a baseline that is not a vendor library: the library kernel may be the candidate's
    e = copy.deepcopy(d)
    e["timing"]["baseline"]["provider"] = "torch eager"
    assert not found(e, "KE1105")
    # the candidate's own kernel beside the library's
    e = copy.deepcopy(d)
    own = copy.deepcopy(gemm()["profiler"][0]["kernels"][0])
    own["id"] = "1"
    e["profiler"][0]["kernels"].append(own)
    assert not found(e, "KE1105")
    # the defence not recorded passed
    e = copy.deepcopy(d)
    e["defences"][0]["outcome"] = "skipped"
    assert not found(e, "KE1105")
