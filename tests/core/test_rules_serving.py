"""KE10xx: serving figures that do not add up are caught; honest runs pass."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid" / "serving_vllm_llama8b_h100.json"
)
BAND = {"KE1001", "KE1002", "KE1003", "KE1004", "KE1005", "KE1006", "KE1007"}


def honest() -> dict[str, Any]:
    d = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    d.pop("packet_id")  # edited below: the content id would no longer match
    return d


def found(d: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in validate(d).findings if f.rule_id in BAND}


def test_the_honest_run_passes() -> None:
    d = honest()
    report = validate(d)
    assert report.ok, [f.line() for f in report.errors]
    assert found(d) == set()


def test_a_vllm_sweep_run_passes() -> None:
    """The figures of a real `vllm bench serve` sweep run (opt-125m, concurrency 2): Little's
    law is tight there (8 x 0.340 s / 2 = 1.361 s of 1.365 s) and must hold."""
    d = honest()
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
        "ttft": {
            "unit": "ms",
            "median": 44.92285849846667,
            "mean": 217.27289337468392,
            "percentiles": {"p99": 762.4942294094944},
        },
        "e2el": {
            "unit": "ms",
            "median": 166.47808399284258,
            "mean": 340.3411977451469,
            "percentiles": {"p99": 876.8009717071254},
        },
    }
    d["timing"]["stats"] = {"unit": "ms", "median": 166.47808399284258, "mean": 340.3411977451469}
    d["timing"]["baseline"]["serving"]["output_throughput"]["value"] = 80.0
    d["timing"]["speedup"]["value"] = 93.74767963046673 / 80.0
    assert found(d) == set()


@pytest.mark.parametrize(
    ("field", "value", "pointer"),
    [
        ("output_throughput", 5200.0, "/timing/serving/output_throughput"),
        ("request_throughput", 45.0, "/timing/serving/request_throughput"),
        ("total_token_throughput", 50000.0, "/timing/serving/total_token_throughput"),
    ],
)
def test_inflated_throughput(field: str, value: float, pointer: str) -> None:
    d = honest()
    d["timing"]["serving"][field]["value"] = value
    assert ("KE1001", pointer) in found(d)


def test_a_lower_candidate_throughput_is_not_a_lie() -> None:
    d = honest()
    d["timing"]["serving"]["output_throughput"]["value"] = 3800.0  # steady-state window, say
    assert found(d) == set()


def test_deflated_baseline_throughput_inflates_the_speedup() -> None:
    d = honest()
    b = d["timing"]["baseline"]["serving"]
    b.update(duration={"value": 30.0, "unit": "s"}, total_output_tokens=128000)
    b["output_throughput"]["value"] = 3520.1  # 128000 / 30 s is 4267 tok/s
    assert ("KE1001", "/timing/baseline/serving/output_throughput") in found(d)
    b["output_throughput"]["value"] = 4266.0
    d["timing"]["speedup"]["value"] = 4076.4 / 4266.0
    assert found(d) == set()


def test_duration_shorter_than_the_requests() -> None:
    d = honest()
    # a shortened duration with throughputs recomputed to match it
    s = d["timing"]["serving"]
    s["duration"]["value"] = 20.0
    s["output_throughput"]["value"] = 128000 / 20.0
    s["request_throughput"]["value"] = 1000 / 20.0
    s["total_token_throughput"]["value"] = 1152000 / 20.0
    d["timing"]["speedup"]["value"] = 6400.0 / 3520.1
    assert ("KE1001", "/timing/serving/duration") in found(d)
    # a single request longer than the whole run
    d = honest()
    d["timing"]["serving"]["e2el"]["max"] = 40000.0
    d["timing"]["stats"]["max"] = 40000.0
    assert ("KE1001", "/timing/serving/duration") in found(d)


def test_output_tokens_beyond_the_output_length() -> None:
    d = honest()
    s = d["timing"]["serving"]
    s["total_output_tokens"] = 256000
    s["output_throughput"]["value"] = 256000 / 31.4
    s["total_token_throughput"]["value"] = (1024000 + 256000) / 31.4
    d["timing"]["speedup"]["value"] = 256000 / 31.4 / 3520.1
    assert ("KE1002", "/timing/serving/total_output_tokens") in found(d)
    # a recorded range ratio widens the bound
    d["task"]["serving"]["settings"]["random_range_ratio"] = 1.0
    assert not {r for r, _ in found(d)} & {"KE1002"}


def test_fewer_output_tokens_than_completed_requests() -> None:
    d = honest()
    d["timing"]["serving"]["total_output_tokens"] = 10
    assert ("KE1002", "/timing/serving/total_output_tokens") in found(d)


def test_dropped_requests_are_missed() -> None:
    d = honest()
    d["timing"]["serving"]["completed"] = 950  # 50 failures left out of both counts
    assert ("KE1003", "/timing/serving/failed") in found(d)
    d["timing"]["serving"]["completed"] = 1100
    assert ("KE1003", "/timing/serving/completed") in found(d)


def test_e2el_below_ttft() -> None:
    d = honest()
    d["timing"]["serving"]["ttft"].update(median=2000.0, mean=2100.0, max=2500.0, min=1500.0)
    d["timing"]["serving"]["ttft"]["percentiles"] = {"p50": 2000.0, "p90": 2300.0, "p99": 2450.0}
    assert ("KE1004", "/timing/serving/e2el/median") in found(d)
    # units differ: 1.912 s is above 88 ms
    d = honest()
    e = d["timing"]["serving"]["e2el"]
    e.update(
        unit="s", median=1.912, mean=1.9504, min=1.202, max=3.404, percentiles={"p50": 1.912, "p99": 3.12}
    )
    assert found(d) == set()


def test_ttft_below_a_physical_floor() -> None:
    d = honest()
    d["timing"]["serving"]["ttft"] = {"unit": "us", "median": 120.0, "mean": 130.0}
    assert ("KE1005", "/timing/serving/ttft/median") in found(d)
    d["timing"]["serving"]["ttft"] = {"unit": "ms", "mean": 0.4}
    assert ("KE1005", "/timing/serving/ttft/mean") in found(d)


def test_failed_requests_behind_a_passed_claim() -> None:
    d = honest()
    s = d["timing"]["serving"]
    s.update(completed=900, failed=100)
    s["request_throughput"]["value"] = 900 / 31.4
    s["total_output_tokens"] = 115200
    s["total_input_tokens"] = 921600
    s["output_throughput"]["value"] = 115200 / 31.4
    s["total_token_throughput"]["value"] = (921600 + 115200) / 31.4
    d["timing"]["speedup"]["value"] = 115200 / 31.4 / 3520.1
    assert found(d) == {("KE1006", "/timing/serving/failed")}
    # a few failures (1%) do not invalidate the claim
    s.update(completed=990, failed=10)
    s["request_throughput"]["value"] = 990 / 31.4
    s["total_output_tokens"] = 126720
    s["total_input_tokens"] = 1013760
    s["output_throughput"]["value"] = 126720 / 31.4
    s["total_token_throughput"]["value"] = (1013760 + 126720) / 31.4
    d["timing"]["speedup"]["value"] = 126720 / 31.4 / 3520.1
    assert found(d) == set()


def test_an_honest_failure_with_every_request_failed_passes() -> None:
    """vLLM 0.25's all-failed run (the corpus file's figures), recorded as failed."""
    d = honest()
    d["status"] = "failed"
    d["failure"] = {"failure_class": "runtime_error", "message": "every request failed"}
    del d["timing"]["speedup"]
    d["task"]["serving"].update(num_prompts=8)
    d["timing"]["serving"] = {
        "completed": 0,
        "failed": 8,
        "duration": {"value": 0.00503263997961767, "unit": "s"},
        "request_throughput": {"value": 0.0, "unit": "req/s"},
        "output_throughput": {"value": 0.0, "unit": "tok/s"},
        "total_input_tokens": 0,
        "total_output_tokens": 0,
    }
    assert found(d) == set()
    d2 = copy.deepcopy(d)
    d2["status"] = "passed"
    del d2["failure"]
    assert ("KE1006", "/timing/serving/failed") in found(d2)


def test_three_percent_failed_behind_a_claim() -> None:
    d = honest()
    s = d["timing"]["serving"]
    s.update(completed=970, failed=30, total_output_tokens=970 * 128, total_input_tokens=970 * 1024)
    s["request_throughput"]["value"] = 970 / 31.4
    s["output_throughput"]["value"] = 970 * 128 / 31.4
    s["total_token_throughput"]["value"] = 970 * 1152 / 31.4
    d["timing"]["speedup"]["value"] = 970 * 128 / 31.4 / 3520.1
    assert found(d) == {("KE1006", "/timing/serving/failed")}


def test_tpot_that_the_latencies_do_not_give() -> None:
    d = honest()
    # (1950.4 - 95.3) ms over 127 tokens is 14.6 ms per token
    d["timing"]["serving"]["tpot"].update(
        mean=1.46, median=1.42, min=0.98, max=3.1, percentiles={"p50": 1.42, "p99": 2.49}
    )
    assert found(d) == {("KE1007", "/timing/serving/tpot/mean")}
    d["timing"]["serving"]["tpot"].update(
        mean=146.0, median=142.0, min=98.0, max=310.0, percentiles={"p50": 142.0, "p99": 249.0}
    )
    # 127 steps at the largest TPOT are also longer than the largest e2el
    assert found(d) == {("KE1007", "/timing/serving/tpot/mean"), ("KE1007", "/timing/serving/e2el/max")}


def test_ttft_faster_than_the_prefill() -> None:
    """3 ms for a 1024-token prompt on an 8B model: 2 x 8e9 x 1024 FLOP is 8.3 ms even at the
    H100's fp8 peak."""
    d = honest()
    d["timing"]["serving"]["ttft"].update(
        median=3.0, mean=3.2, min=2.5, max=4.0, percentiles={"p50": 3.0, "p90": 3.5, "p99": 3.9}
    )
    assert ("KE1005", "/timing/serving/ttft/median") in found(d)
    # eight GPUs share the prefill: 1 ms of FLOPs each
    d["hardware"]["count"] = 8
    d["task"]["serving"]["tensor_parallel_size"] = 8
    d["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1,2,3,4,5,6,7"
    assert not {r for r, _ in found(d)} & {"KE1005"}
    # a model whose size the name does not give, or a prefix setting, is not judged
    d = honest()
    d["timing"]["serving"]["ttft"].update(
        median=3.0, mean=3.2, min=2.5, max=4.0, percentiles={"p50": 3.0, "p90": 3.5, "p99": 3.9}
    )
    d["task"]["serving"]["settings"]["enable_prefix_caching"] = True
    assert not {r for r, _ in found(d)} & {"KE1005"}
    del d["task"]["serving"]["settings"]["enable_prefix_caching"]
    d["task"]["serving"]["model"] = "mistralai/Mixtral-8x7B-Instruct-v0.1"
    assert not {r for r, _ in found(d)} & {"KE1005"}


# ---------------------------------------------------------------- red-team gaps (issue 16)


def test_goodput_above_request_throughput() -> None:
    d = honest()
    s = d["timing"]["serving"]
    s["request_goodput"] = {"value": 40.2, "unit": "req/s"}  # above 31.85 req/s of completed requests
    assert ("KE1001", "/timing/serving/request_goodput") in found(d)
    s["request_goodput"] = {"value": 29.0, "unit": "req/s"}  # most requests met their targets
    assert found(d) == set()


def test_input_tokens_padded_beyond_the_input_length() -> None:
    d = honest()
    s = d["timing"]["serving"]
    s["total_input_tokens"] = 1_331_000  # 1331 per request for input_len 1024
    s["total_token_throughput"]["value"] = (1_331_000 + 128_000) / 31.4
    assert ("KE1002", "/timing/serving/total_input_tokens") in found(d)
    # a recorded prefix prepended to every prompt accounts for them
    d["task"]["serving"]["settings"]["random_prefix_len"] = 307
    assert ("KE1002", "/timing/serving/total_input_tokens") not in found(d)


def test_the_baseline_ran_fewer_prompts() -> None:
    d = honest()
    d["timing"]["baseline"]["serving"].update(completed=100, failed=0)
    assert ("KE1003", "/timing/baseline/serving/failed") in found(d)
    # a baseline run told to send 100 prompts (a dashed setting name too) is accounted for
    d["timing"]["baseline"]["settings"]["num-prompts"] = 100
    assert ("KE1003", "/timing/baseline/serving/failed") not in found(d)


def test_latency_statistics_over_part_of_the_requests() -> None:
    d = honest()
    d["timing"]["serving"]["e2el"]["n"] = 700  # the fastest 700 of 1000 completed
    assert ("KE1003", "/timing/serving/e2el/n") in found(d)
    d["timing"]["serving"]["e2el"]["n"] = 1000
    d["timing"]["serving"]["tpot"]["n"] = 990  # TPOT leaves out one-token requests: fine
    assert found(d) == set()


def test_tpot_faster_than_reading_the_weights() -> None:
    """A fabricated run: 3.2 ms per token for an 8B 16-bit model on one H100 (reading 16 GB
    of weights at 3.35 TB/s takes 4.8 ms a step)."""
    d = honest()
    tp = d["timing"]["serving"]["tpot"]
    scale = 3.2 / tp["median"]
    for k in ("median", "mean", "min", "max"):
        if k in tp:
            tp[k] *= scale
    tp["percentiles"] = {k: v * scale for k, v in tp.get("percentiles", {}).items()}
    found_all = {(f.rule_id, f.pointer) for f in validate(d).findings}
    assert ("KE1008", "/timing/serving/tpot/median") in found_all
    assert validate(d).grade.letter in "CDF"
    # the same TPOT from an FP8 checkpoint (8 GB of weights: 2.1 ms) is let through
    d["task"]["serving"]["model"] = "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8"
    assert "KE1008" not in {f.rule_id for f in validate(d).findings}
    # ... and from a 16-bit one with speculative decoding recorded
    d["task"]["serving"]["model"] = "meta-llama/Llama-3.1-8B-Instruct"
    d["task"]["serving"]["settings"]["num_speculative_tokens"] = 3
    assert "KE1008" not in {f.rule_id for f in validate(d).findings}
    # ... and from a recorded on-the-fly quantization
    del d["task"]["serving"]["settings"]["num_speculative_tokens"]
    d["task"]["serving"]["settings"]["quantization"] = "fp8"
    assert "KE1008" not in {f.rule_id for f in validate(d).findings}


def test_prefill_floor_at_the_weights_precision_not_the_fastest_peak() -> None:
    """4.3 ms for 1024 tokens of an 8B 16-bit model on one H100: the bf16 prefill alone takes
    16.6 ms at the peak (half of it is the floor); an FP8 checkpoint halves it again."""
    d = honest()
    ttft = d["timing"]["serving"]["ttft"]
    scale = 4.3 / ttft["median"]
    for k in ("median", "mean", "min", "max"):
        ttft[k] *= scale
    ttft["percentiles"] = {k: v * scale for k, v in ttft["percentiles"].items()}
    assert ("KE1005", "/timing/serving/ttft/median") in found(d)
    d["task"]["serving"]["model"] = "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8"
    assert ("KE1005", "/timing/serving/ttft/median") not in found(d)  # 4.14 ms floor at fp8
    ttft.update(median=3.5, mean=3.5 * 95.3 / 88.1)
    assert ("KE1005", "/timing/serving/ttft/median") in found(d)
