"""Red team 5k, classes 2, 4 and 5: a claim inflated by its tolerance (KE301, KE304), a
device count understated (KE805, KE808), a tolerance that passed wrong outputs (KE702) and an
unbelievable exact match (KE704). Each beside an honest twin that must still pass."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_build import finalize, recompute_speedup, scale_side  # noqa: E402
from _adv_controls import CONTROLS  # noqa: E402
from _adv_kit import control  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
SLOW = "h100_honest_slowdown"
LN = "h100_layernorm_vs_transformer_engine"
TPU = "tpu_v6e_matmul_vs_xla"
TOPK = "h100_topk_rows_with_m_n_k_dims"


def report(p: dict[str, Any]) -> Any:
    return validate(finalize(copy.deepcopy(p)))


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in report(p).findings}


def rules(p: dict[str, Any]) -> set[str]:
    return {r for r, _ in found(p)}


def _assert_honest(p: dict[str, Any], base: str = GEMM) -> None:
    r = report(p)
    ctl = validate(CONTROLS[base].build()).grade.letter
    assert r.ok and r.grade.letter <= ctl, r.findings


# ---------------------------------------------------------------- class 2: the claim


def test_a_slowdown_claimed_as_a_speedup_is_ke301() -> None:
    p = control()
    scale_side(p, "candidate", 1.0537 / 0.985)
    recompute_speedup(p)
    p["timing"]["speedup"]["value"] = 1.004  # within the default 2%, but the sign flips
    assert ("KE301", "/timing/speedup/value") in found(p)
    assert not report(p).ok


def test_a_speedup_of_one_rounded_from_a_near_tie_passes() -> None:
    p = control()
    scale_side(p, "candidate", 1.0537 / 0.9985)
    recompute_speedup(p)
    p["timing"]["speedup"]["value"] = 1.0  # 0.9985 rounded to 3 digits
    assert "KE301" not in rules(p)
    _assert_honest(p)


@pytest.mark.parametrize("base", [GEMM, SLOW])
def test_a_claim_raised_to_its_stated_tolerance_is_graded_c(base: str) -> None:
    p = control(base)
    sp = p["timing"]["speedup"]
    sp["tolerance"] = 0.05
    sp["value"] = round(sp["value"] * 1.049, 4)
    assert ("KE304", "/timing/speedup/value") in found(p)
    assert report(p).grade.letter == "C"


@pytest.mark.parametrize(
    ("base", "value", "tol"), [(GEMM, 1.054, None), (SLOW, None, 0.05), (GEMM, 1.05, 0.05)]
)
def test_a_claim_rounded_or_with_a_tolerance_stated_exactly_passes(
    base: str, value: float | None, tol: float | None
) -> None:
    p = control(base)
    sp = p["timing"]["speedup"]
    if value is not None:
        sp["value"] = value
    if tol is not None:
        sp["tolerance"] = tol
    assert not rules(p) & {"KE301", "KE304"}
    _assert_honest(p, base)


def test_a_claim_below_the_timings_within_a_stated_tolerance_passes() -> None:
    p = control()
    sp = p["timing"]["speedup"]
    sp["tolerance"] = 0.05
    sp["value"] = round(sp["value"] * 0.96, 4)  # understated: harms nobody
    assert not rules(p) & {"KE301", "KE304"}


# ---------------------------------------------------------------- class 4: the device count


def _two_gpus(p: dict[str, Any]) -> None:
    p["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1"
    p["hardware"]["count"] = 2


def test_a_capture_on_two_devices_under_a_count_of_one_is_ke805() -> None:
    p = control()
    _two_gpus(p)
    k1 = copy.deepcopy(p["profiler"][0]["kernels"][0])
    k1["device"] = 1
    k1["id"] = "1"
    p["profiler"][0]["kernels"].append(k1)
    assert ("KE805", "/timing/conditions/device_count") in found(p)
    assert not report(p).ok


def test_a_capture_on_two_devices_with_a_count_of_two_passes_ke805() -> None:
    p = control()
    _two_gpus(p)
    k1 = copy.deepcopy(p["profiler"][0]["kernels"][0])
    k1["device"] = 1
    k1["id"] = "1"
    p["profiler"][0]["kernels"].append(k1)
    for c in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        c["device_count"] = 2
    assert ("KE805", "/timing/conditions/device_count") not in found(p)


def test_another_kernel_on_another_device_is_not_the_candidates() -> None:
    p = control()
    _two_gpus(p)
    p["hardware"]["count"] = 1
    p["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0"
    k1 = copy.deepcopy(p["profiler"][0]["kernels"][0])
    k1.update(device=1, id="1", name="vectorized_elementwise_kernel")
    p["profiler"][0]["kernels"].append(k1)
    assert "KE805" not in rules(p)


@pytest.mark.parametrize(
    "launcher",
    [
        ["torchrun", "--nproc_per_node=2"],
        ["torchrun", "--standalone", "--nproc-per-node", "2"],
        ["mpirun", "-np", "2"],
        ["srun", "--ntasks=2"],
        ["accelerate", "launch", "--num_processes", "2"],
    ],
)
def test_a_launcher_of_two_processes_under_a_count_of_one_is_ke805(launcher: list[str]) -> None:
    p = control()
    _two_gpus(p)
    p["replay"]["command"] = launcher + p["replay"]["command"][1:]
    assert ("KE805", "/timing/conditions/device_count") in found(p)


def test_a_launcher_on_one_visible_device_or_the_programs_own_n_passes() -> None:
    p = control()
    p["replay"]["command"] = ["torchrun", "--nproc_per_node=2"] + p["replay"]["command"][1:]
    assert "KE805" not in rules(p)  # both processes see the one device
    q = control()
    _two_gpus(q)
    q["hardware"]["count"] = 1
    q["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0"
    q["replay"]["command"] = ["mpirun", "python", "bench/run.py", "-n", "4"]
    assert "KE805" not in rules(q)  # -n is the program's, not mpirun's


def test_four_visible_chips_counted_as_one_is_graded_c() -> None:
    p = control(TPU)
    p["hardware"]["count"] = 4
    p["replay"]["env"]["TPU_VISIBLE_CHIPS"] = "0,1,2,3"
    assert ("KE808", "/timing/conditions/device_count") in found(p)
    assert report(p).grade.letter == "C"


def test_one_device_of_another_index_passes() -> None:
    p = control()
    p["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "3"
    assert not rules(p) & {"KE805", "KE808"}
    _assert_honest(p)


# ---------------------------------------------------------------- class 5: tolerances


def test_a_loose_atol_that_passed_a_large_error_is_graded_c() -> None:
    p = control()
    p["task"]["tolerance"]["atol"] = 60.0
    p["validation"]["shapes"][0].update(atol=60.0, max_abs_error=40.0, max_rel_error=0.25)
    assert ("KE702", "/validation/shapes/0/atol") in found(p)
    assert report(p).grade.letter == "C"


def test_a_half_rtol_on_layernorm_that_passed_a_large_error_is_graded_c() -> None:
    p = control(LN)
    p["task"]["tolerance"]["rtol"] = 0.5
    p["validation"]["shapes"][0].update(rtol=0.5, max_abs_error=2.4, max_rel_error=0.4)
    assert ("KE702", "/validation/shapes/0/rtol") in found(p)
    assert report(p).grade.letter == "C"


def test_a_loose_task_rtol_points_at_the_task() -> None:
    p = control(LN)
    p["task"]["tolerance"]["rtol"] = 0.5
    v = p["validation"]["shapes"][0]
    del v["rtol"]
    v.update(max_abs_error=2.4, max_rel_error=0.4)
    assert ("KE702", "/task/tolerance/rtol") in found(p)


def test_a_loose_tolerance_an_accurate_kernel_did_not_need_passes() -> None:
    p = control(LN)
    p["task"]["tolerance"]["rtol"] = 0.5
    p["validation"]["shapes"][0]["rtol"] = 0.5  # its recorded error stays 0.5% of the range
    assert "KE702" not in rules(p)
    q = control(LN)
    q["task"]["tolerance"]["rtol"] = 0.01
    q["validation"]["shapes"][0]["rtol"] = 0.01
    _assert_honest(q, LN)


def test_an_exact_match_of_a_bf16_gemm_without_a_tolerance_is_ke704() -> None:
    p = control()
    del p["task"]["tolerance"]
    v = p["validation"]["shapes"][0]
    del v["atol"], v["rtol"]
    v.update(max_abs_error=0.0, max_rel_error=0.0)
    assert ("KE704", "/validation/shapes/0") in found(p)
    assert report(p).grade.letter == "C"


def test_an_exact_match_with_its_tolerance_or_of_a_selection_passes() -> None:
    p = control()
    p["validation"]["shapes"][0].update(max_abs_error=0.0, max_rel_error=0.0)
    assert "KE704" not in rules(p)  # checked under atol/rtol 0.01
    q = control(TOPK)  # top-k selects values: its `k` is no reduction
    q["task"].pop("tolerance", None)
    for v in q["validation"]["shapes"]:
        v.pop("atol", None)
        v.pop("rtol", None)
        v.update(max_abs_error=0.0, max_rel_error=0.0)
    assert "KE704" not in rules(q)
