"""Grades mean what they say: records that only look complete do not earn an A (red-team
gaps of issue 16). Each case starts from an A-grade control."""

from __future__ import annotations

import copy

from _adv_build import finalize
from _adv_controls import CONTROLS
from _adv_judge import judge


def _control(name: str = "h100_bf16_gemm_vs_cublaslt") -> dict:
    p = copy.deepcopy(CONTROLS[name].build())
    assert judge(finalize(copy.deepcopy(p))).grade == "A"
    return p


def _defence(p: dict, check: str) -> dict:
    return next(d for d in p["defences"] if d["check"] == check)


def test_profiling_not_applicable_on_a_gpu_is_not_an_a() -> None:
    p = _control()
    _defence(p, "candidate_kernel_profiled")["outcome"] = "not_applicable"
    v = judge(finalize(p))
    assert v.ok and v.grade == "B" and any("candidate_kernel_profiled" in r for r in v.reasons)


def test_profiling_not_applicable_on_a_cpu_keeps_its_a() -> None:
    p = _control("cpu_xeon_amx_gemm_vs_onednn")
    assert _defence(p, "candidate_kernel_profiled")["outcome"] == "not_applicable"
    assert judge(finalize(p)).grade == "A"


def test_cache_flush_not_applicable_on_a_flushed_run_is_not_an_a() -> None:
    p = _control()
    assert p["timing"]["conditions"]["cache"]["mode"] == "flushed"
    _defence(p, "cache_flush")["outcome"] = "not_applicable"
    v = judge(finalize(p))
    assert v.ok and v.grade == "B" and any("cache_flush" in r for r in v.reasons)


def test_a_passed_copy_does_not_shadow_a_skipped_defence() -> None:
    p = _control()
    _defence(p, "timer_integrity")["outcome"] = "skipped"
    p["defences"].append({"check": "timer_integrity", "outcome": "passed"})
    v = judge(finalize(p))
    assert v.grade == "B" and any("timer_integrity" in r for r in v.reasons)


def test_an_empty_capture_is_no_capture() -> None:
    p = _control()
    for sh in p["task"]["shapes"]:
        sh.pop("work", None)
    p["task"].pop("work", None)
    p["profiler"] = [{"tool": "nsys"}]
    p["defences"] = [d for d in p["defences"] if d["check"] != "candidate_kernel_profiled"]
    p["defences"].append({"check": "candidate_kernel_profiled", "outcome": "skipped"})
    v = judge(finalize(p))
    assert any("no profiler capture or work figures" in r for r in v.reasons), v


def test_same_session_needs_both_session_ids() -> None:
    p = _control()
    del p["timing"]["baseline"]["conditions"]["session"]
    v = judge(finalize(p))
    assert v.grade != "A" and any("session" in r for r in v.reasons), v


def test_serving_claims_take_kernel_defences_as_not_applicable() -> None:
    p = copy.deepcopy(CONTROLS["serving_vllm_llama8b_h100"].build())
    for check in ("cache_flush", "candidate_kernel_profiled"):
        assert next(x for x in p["defences"] if x["check"] == check)["outcome"] == "not_applicable"
    v = judge(finalize(p))
    assert v.ok and not any("cache_flush" in r or "candidate_kernel_profiled" in r for r in v.reasons), v
