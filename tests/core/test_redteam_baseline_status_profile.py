"""Red-team cheats of the baseline, status, profile and tolerance bands, each caught (rule
and pointer) beside its honest near-twin, which is let through.

The packets are the adversarial suite's A-grade controls (read-only use of its builders),
with one field changed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))

from _adv_build import finalize  # noqa: E402
from _adv_controls import control  # noqa: E402

from kernel_evidence.rules.profile import _utility  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"  # conditions equal on both sides, flushed, locked, cuda_events
RMS = "h100_rmsnorm_decode_short_kernel"


def report(p: dict[str, Any]) -> Any:
    return validate(finalize(p))


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in report(p).findings}


def rules_at(p: dict[str, Any], prefix: str) -> set[str]:
    return {r for r, ptr in found(p) if ptr.startswith(prefix)}


def cond(p: dict[str, Any], side: str) -> dict[str, Any]:
    t = p["timing"]
    return t["conditions"] if side == "candidate" else t["baseline"]["conditions"]


def test_the_controls_are_clean() -> None:
    for name in (GEMM, RMS):
        r = report(control(name))
        assert r.ok and r.grade.letter == "A", [f.line() for f in r.findings]


# ---------------------------------------------------------------- KE208: timers, caches, clocks


def test_a_timer_written_other_against_a_named_one() -> None:
    p = control(RMS)
    cond(p, "baseline")["method"] = "other"  # the host clock, relabelled
    assert ("KE208", "/timing/baseline/conditions/method") in found(p)
    p = control(RMS)
    cond(p, "candidate")["method"] = "other"
    p["timing"]["method"] = "other"
    assert ("KE208", "/timing/conditions/method") in found(p)
    # `other` on both sides: nothing tells them apart
    cond(p, "baseline")["method"] = "other"
    assert not rules_at(p, "/timing/baseline/conditions/method") | rules_at(p, "/timing/conditions/method")


def test_kernel_durations_against_call_times() -> None:
    p = control(RMS)
    cond(p, "candidate")["method"] = "cupti"
    p["timing"]["method"] = "cupti"
    assert ("KE208", "/timing/conditions/method") in found(p)
    # the baseline timed by a profiler, the candidate by events: the baseline is the side
    p = control(RMS)
    cond(p, "baseline")["method"] = "torch_profiler"
    assert ("KE208", "/timing/baseline/conditions/method") in found(p)
    # kernel durations on both sides, or call timers on both sides: alike
    for a, b in (("cupti", "cupti"), ("cupti", "profiler"), ("triton_do_bench", "cuda_events")):
        p = control(RMS)
        cond(p, "candidate")["method"] = a
        p["timing"]["method"] = a
        cond(p, "baseline")["method"] = b
        assert "KE208" not in {r for r, _ in found(p)}, (a, b)


def test_an_unknown_cache_mode_against_a_flushed_one() -> None:
    p = control(RMS)
    cond(p, "candidate")["cache"] = {"mode": "unknown"}
    p["timing"]["cache_policy"] = "unknown"
    got = found(p)
    assert ("KE208", "/timing/conditions/cache/mode") in got
    assert ("KE412", "/defences/6") in got  # cache_flush passed beside an unknown cache
    p = control(RMS)
    cond(p, "baseline")["cache"] = {"mode": "unknown"}
    assert ("KE208", "/timing/baseline/conditions/cache/mode") in found(p)
    # unknown on both sides, the flush defence not claimed: no mismatch
    p = control(RMS)
    for side in ("candidate", "baseline"):
        cond(p, side)["cache"] = {"mode": "unknown"}
    p["timing"]["cache_policy"] = "unknown"
    next(d for d in p["defences"] if d["check"] == "cache_flush")["outcome"] = "skipped"
    got = found(p)
    assert not {r for r, ptr in got if "cache" in ptr or ptr.startswith("/defences")}, got


def test_an_unknown_clock_policy_against_a_locked_one() -> None:
    p = control(GEMM)
    cond(p, "candidate")["clock_policy"] = "unknown"
    p["timing"]["clock_policy"] = "unknown"
    assert ("KE208", "/timing/conditions/clock_policy") in found(p)
    p = control(GEMM)
    cond(p, "baseline")["clock_policy"] = "unknown"
    assert ("KE208", "/timing/baseline/conditions/clock_policy") in found(p)
    # unknown on both sides
    cond(p, "candidate")["clock_policy"] = "unknown"
    p["timing"]["clock_policy"] = "unknown"
    assert not rules_at(p, "/timing/conditions/clock_policy") | rules_at(
        p, "/timing/baseline/conditions/clock_policy"
    )


# ---------------------------------------------------------------- KE207: the same device


def _baseline_device(p: dict[str, Any], name: str) -> dict[str, Any]:
    c = cond(p, "baseline")
    c["device"] = name
    c.pop("device_id", None)
    return p


def test_a_baseline_device_name_less_specific_than_the_candidates() -> None:
    p = _baseline_device(control(GEMM), "NVIDIA H100")  # SXM5, PCIe or NVL
    assert ("KE207", "/timing/baseline/conditions/device") in found(p)
    # not said to be the same session: the name cannot be told apart (KE206 warns instead)
    p["timing"]["baseline"]["same_session"] = False
    assert ("KE207", "/timing/baseline/conditions/device") not in found(p)
    # another spelling of the one model the candidate ran on
    p = _baseline_device(control(GEMM), "H100 SXM5 80GB")
    assert "KE207" not in {r for r, _ in found(p)}
    p = _baseline_device(control(GEMM), "  nvidia h100 80gb  HBM3 ")
    assert "KE207" not in {r for r, _ in found(p)}


def test_a_baseline_on_a_mig_slice_of_the_candidates_gpu() -> None:
    p = _baseline_device(control(GEMM), "NVIDIA H100 80GB HBM3 MIG 3g.40gb")
    assert ("KE207", "/timing/baseline/conditions/device") in found(p)
    p["timing"]["baseline"]["same_session"] = False
    assert ("KE207", "/timing/baseline/conditions/device") in found(p)
    # both sides on the same slice
    p = _baseline_device(control(GEMM), "NVIDIA H100 80GB HBM3 MIG 3g.40gb")
    c = cond(p, "candidate")
    c["device"] = "NVIDIA H100 80GB HBM3 MIG 3g.40gb"
    c.pop("device_id", None)
    assert ("KE207", "/timing/baseline/conditions/device") not in found(p)


# ---------------------------------------------------------------- KE412, KE1105: defences


def test_fresh_inputs_passed_while_validation_inputs_were_reused() -> None:
    p = control(GEMM)
    p["validation"]["inputs_regenerated"] = False
    assert ("KE412", "/defences/0") in found(p)
    p = control(GEMM)
    del p["validation"]["inputs_regenerated"]
    assert "KE412" not in {r for r, _ in found(p)}


def test_candidate_kernel_profiled_passed_without_a_capture() -> None:
    p = control(GEMM)
    del p["profiler"]
    r = report(p)
    assert ("KE1105", "/defences/4") in {(f.rule_id, f.pointer) for f in r.findings}
    assert r.ok and r.grade.letter == "C"
    # the defence recorded as skipped: nothing vouches for a capture
    p = control(GEMM)
    del p["profiler"]
    p["defences"][4]["outcome"] = "skipped"
    assert "KE1105" not in {r for r, _ in found(p)}


# ---------------------------------------------------------------- KE1101: the capture


@pytest.mark.parametrize(
    "name",
    [
        "fill_kernel",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, ...>",
        "void at::native::vectorized_elementwise_kernel<FillFunctor>",
        "[CUDA memset]",
        "Memset (Device)",
        "Memcpy HtoD (Pageable -> Device)",
        "cudaMemsetAsync",
        "CUDAMemcpy32",
        "l2_flush_kernel",
        "zero_",
        "zeros_like_kernel",
    ],
)
def test_utility_kernels(name: str) -> None:
    assert _utility(name)


@pytest.mark.parametrize(
    "name",
    ["attn_fwd_prefill_causal", "flash_fwd_Prefill", "gemm_bf16_tn_128x256_warpspecialized", "filter_topk"],
)
def test_not_utility_kernels(name: str) -> None:
    assert not _utility(name)


def _capture_shows(p: dict[str, Any], factor: float) -> None:
    """The candidate's capture showing its kernel at ``factor`` x the claimed median."""
    st = p["timing"]["stats"]
    ns = st["median"] * {"us": 1e3, "ms": 1e6, "s": 1e9}[st["unit"]] * factor
    for k in p["profiler"][0]["kernels"]:
        k["metrics"]["duration"] = {"value": round(ns, 1), "unit": "ns"}


def test_a_prefill_kernel_is_the_candidates_time() -> None:
    p = control(GEMM)
    cap = p["profiler"][0]
    cap["kernels"][0]["name"] = "attn_fwd_prefill_causal"
    cap["of"]["expected_kernels"] = ["attn_fwd_prefill"]
    _capture_shows(p, 1.43)
    assert ("KE1101", "/timing/stats/median") in found(p)
    # without an expected kernel the name is still no fill kernel
    del cap["of"]["expected_kernels"]
    assert ("KE1101", "/timing/stats/median") in found(p)


def test_a_stated_tolerance_above_the_cap() -> None:
    p = control(GEMM)
    p["profiler"][0]["of"]["claim_tolerance"] = 0.95
    _capture_shows(p, 1.8)
    got = found(p)
    assert ("KE1101", "/profiler/0/of/claim_tolerance") in got
    assert ("KE1101", "/timing/stats/median") not in got
    # beyond even the stated tolerance: the claim itself
    p = control(GEMM)
    p["profiler"][0]["of"]["claim_tolerance"] = 0.95
    _capture_shows(p, 2.5)
    assert ("KE1101", "/timing/stats/median") in found(p)
    # within the cap: a stated wide tolerance harms nothing
    p = control(GEMM)
    p["profiler"][0]["of"]["claim_tolerance"] = 0.95
    _capture_shows(p, 1.4)
    assert "KE1101" not in {r for r, _ in found(p)}


# ---------------------------------------------------------------- KE411: the task's tolerance


def test_a_shape_tolerance_looser_than_the_tasks() -> None:
    p = control(GEMM)  # task: atol 0.01, rtol 0.01; reference 187.5: the task's bound is 1.885
    s = p["validation"]["shapes"][0]
    s["atol"] = 2.0
    s["max_abs_error"] = 3.0
    s["max_rel_error"] = round(3.0 / 187.5, 6)
    assert ("KE411", "/validation/shapes/0/atol") in found(p)
    s["atol"], s["rtol"] = 0.01, 0.2
    assert ("KE411", "/validation/shapes/0/rtol") in found(p)
    # looser than the task's, but the error is within the task's bound too
    s["atol"], s["rtol"] = 2.0, 0.01
    s["max_abs_error"] = 1.5
    s["max_rel_error"] = round(1.5 / 187.5, 6)
    assert "KE411" not in {r for r, _ in found(p)}
    # a tighter shape tolerance than the task's is the shape's own business
    s["atol"], s["rtol"] = 0.001, 0.009
    assert "KE411" not in {r for r, _ in found(p)}
