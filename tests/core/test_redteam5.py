"""A fifth red-team round: lies in digests, defence details, a profiler's own metric names,
baseline calls and serving baselines that earlier fixes did not read. Each beside an honest
twin that must still pass."""

from __future__ import annotations

import copy
import hashlib
import sys
from pathlib import Path
from typing import Any

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_build import finalize, recompute_speedup, scale_side  # noqa: E402
from _adv_kit import control, found, grade, rules  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
SERV = "serving_vllm_llama8b_h100"
LN = "h100_layernorm_vs_transformer_engine"


def _real(label: str) -> str:
    return "sha256:" + hashlib.sha256(label.encode()).hexdigest()


# ---------------------------------------------------------------- KE107: made-up digests


def test_a_source_digest_of_one_digit_is_made_up() -> None:
    p = control()
    p["compile"]["source_digest"] = "sha256:" + "0" * 64
    assert ("KE107", "/compile/source_digest") in found(p)
    assert grade(p) == "C"
    p = control()
    p["compile"]["source_digest"] = _real("kernel.cu")
    assert "KE107" not in rules(p)


def test_the_hash_of_empty_input_names_no_file() -> None:
    p = control()
    p["compile"]["source_digest"] = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert ("KE107", "/compile/source_digest") in found(p)


def test_a_profile_digest_filled_with_a_word_is_made_up() -> None:
    p = control()
    p["profiler"][0].setdefault("source", {"path": "profile.ncu-rep"})["sha256"] = "sha256:" + "deadbeef" * 8
    assert ("KE107", "/profiler/0/source/sha256") in found(p)
    p = control()
    p["profiler"][0].setdefault("source", {"path": "profile.ncu-rep"})["sha256"] = _real("profile")
    assert "KE107" not in rules(p)


# ---------------------------------------------------------------- KE412: defences not run


def _defence(p: dict[str, Any], check: str) -> dict[str, Any]:
    return next(d for d in p["defences"] if d["check"] == check)


def test_a_defence_disabled_by_a_flag_did_not_run() -> None:
    p = control()
    _defence(p, "unseen_inputs")["detail"] = "disabled via --no-unseen"
    assert any(r == "KE412" and ptr.startswith("/defences/") for r, ptr in found(p))
    p = control()
    _defence(p, "timer_integrity")["detail"] = "bypassed by the harness config"
    assert "KE412" in rules(p)
    p = control()
    _defence(p, "unseen_inputs")["detail"] = "turned off: no spare inputs"
    assert "KE412" in rules(p)


def test_a_defence_detail_naming_what_it_disabled_is_honest() -> None:
    p = control()
    _defence(p, "cache_flush")["detail"] = (
        "disabled L2 persistence via cudaCtxResetPersistingL2Cache, then flushed"
    )
    assert "KE412" not in rules(p)
    p = control()
    _defence(p, "unseen_inputs")["detail"] = (
        "disabled by default in the candidate's config, run here on 8 new seeds"
    )
    assert "KE412" not in rules(p)


# ---------------------------------------------------------------- KE602: a profiler's own names


def test_nsight_compute_metric_names_are_held_to_the_peaks() -> None:
    p = control(LN)
    m = p["profiler"][0]["kernels"][0]["metrics"]
    m["dram__bytes.sum.per_second"] = {"value": 5900.0, "unit": "GB/s"}
    assert ("KE602", "/profiler/0/kernels/0/metrics/dram__bytes.sum.per_second") in found(p)
    p = control(LN)
    m = p["profiler"][0]["kernels"][0]["metrics"]
    m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = {"value": 142.0, "unit": "%"}
    assert (
        "KE601",
        "/profiler/0/kernels/0/metrics/sm__throughput.avg.pct_of_peak_sustained_elapsed",
    ) in found(p)
    p = control(LN)
    m = p["profiler"][0]["kernels"][0]["metrics"]
    m["lts__t_sector_hit_rate.pct"] = {"value": 180.0, "unit": "%"}
    assert ("KE602", "/profiler/0/kernels/0/metrics/lts__t_sector_hit_rate.pct") in found(p)


def test_nsight_compute_metric_names_within_the_peaks_pass() -> None:
    p = control(LN)
    m = p["profiler"][0]["kernels"][0]["metrics"]
    m["dram__bytes.sum.per_second"] = {"value": 2900.0, "unit": "GB/s"}
    m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = {"value": 61.5, "unit": "%"}
    m["lts__t_sector_hit_rate.pct"] = {"value": 88.0, "unit": "%"}
    m["dram__bytes.sum"] = {"value": 512.0, "unit": "MB"}  # a byte count, not a rate
    assert not rules(p) & {"KE601", "KE602"}


# ---------------------------------------------------------------- KE207: calls and serving


def test_a_baseline_call_that_casts_its_operands_up() -> None:
    for call in (
        "torch.matmul(a.float(), b.float().t())",
        "torch.mm(a.to(torch.float32), b.to(dtype=torch.float32))",
    ):
        p = control()
        p["timing"]["baseline"]["call"] = call
        scale_side(p, "baseline", 3.0)
        recompute_speedup(p)
        assert ("KE207", "/timing/baseline/call") in found(p), call


def test_a_baseline_call_that_casts_its_result_or_keeps_bf16_passes() -> None:
    for call in (
        "torch.matmul(a, b.t()).float()",
        "torch.matmul(a.bfloat16(), b.t())",
        "torch.matmul(a, b.t())",
    ):
        p = control()
        p["timing"]["baseline"]["call"] = call
        assert "KE207" not in rules(p), call


def _thin(p: dict[str, Any], f: float) -> None:
    b = p["timing"]["baseline"]["serving"]
    for k in ("output_throughput", "request_throughput", "total_token_throughput"):
        if k in b:
            b[k]["value"] = round(b[k]["value"] * f, 3)
    b["duration"]["value"] = round(b["duration"]["value"] / f, 2)
    p["timing"]["speedup"]["value"] = round(
        p["timing"]["serving"]["output_throughput"]["value"] / b["output_throughput"]["value"], 4
    )


def test_a_serving_baseline_given_less_memory_than_the_default() -> None:
    p = control(SERV)
    p["timing"]["baseline"].setdefault("settings", {})["gpu_memory_utilization"] = 0.3
    _thin(p, 0.6)
    assert ("KE207", "/timing/baseline/settings/gpu_memory_utilization") in found(p)
    p = control(SERV)
    p["timing"]["baseline"].setdefault("settings", {})["gpu_memory_utilization"] = 0.85
    assert "KE207" not in rules(p)


def test_a_serving_baseline_that_cannot_hold_the_benchmarks_concurrency() -> None:
    p = control(SERV)
    conc = p["task"]["serving"]["max_concurrency"]
    p["timing"]["baseline"].setdefault("settings", {})["max_num_seqs"] = conc // 4
    _thin(p, 0.5)
    assert ("KE207", "/timing/baseline/settings/max_num_seqs") in found(p)
    p = control(SERV)
    p["timing"]["baseline"].setdefault("settings", {})["max_num_seqs"] = conc * 4
    assert "KE207" not in rules(p)


# ---------------------------------------------------------------- grades: a pass no tool ran


def test_a_defence_passed_by_no_tool_is_the_producers_word() -> None:
    p = control()
    _defence(p, "timer_integrity")["tool"] = "none (self-reported)"
    r = validate(finalize(copy.deepcopy(p)))
    assert r.ok and r.grade.letter == "B"
    assert any("timer_integrity" in reason for reason in r.grade.reasons), r.grade.reasons
    p = control()
    _defence(p, "timer_integrity")["tool"] = "kernel-evidence Recorder"
    assert grade(p) == "A"
