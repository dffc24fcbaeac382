"""Red-team cheats of the profile (KE1101, KE1102, KE1104, KE1105), status (KE412) and
baseline (KE207, KE210) bands, second round: each cheat caught (rule and pointer) beside its
honest near-twin, which is let through.

The packets are the adversarial suite's controls (read-only use of its builders), with one
field changed.
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

from kernel_evidence.rules.baseline import _call_states  # noqa: E402
from kernel_evidence.rules.profile import _vendor  # noqa: E402
from kernel_evidence.rules.status import _says_not_run  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"  # one shape, m=n=k=8192, bf16, ncu capture of the candidate
SUITE = "h100_gemm_suite_three_shapes"  # three shapes, the capture of the timed m8192n8192k8192
SERVING = "serving_vllm_llama8b_h100"  # timer_integrity passed; task.serving.settings max_num_seqs 256
CUBLAS = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"


def report(p: dict[str, Any]) -> Any:
    return validate(finalize(p))


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in report(p).findings}


def rules(p: dict[str, Any]) -> set[str]:
    return {r for r, _ in found(p)}


def defence(p: dict[str, Any], check: str) -> tuple[int, dict[str, Any]]:
    return next((i, d) for i, d in enumerate(p["defences"]) if d["check"] == check)


def test_the_controls_are_clean() -> None:
    for name in (GEMM, SUITE, SERVING):
        r = report(control(name))
        assert r.ok and r.grade.letter in ("A", "B"), [f.line() for f in r.findings]


# ---------------------------------------------------------------- KE1104/KE1105: the timed shape


def test_a_capture_relabelled_to_another_suite_shape() -> None:
    p = control(SUITE)
    p["profiler"][0]["of"]["shape_id"] = "m4096n4096k4096"
    assert ("KE1104", "/profiler/0/of/shape_id") in found(p)
    # a second capture of the candidate at the timed shape: the timed call was profiled
    p = control(SUITE)
    extra = {**p["profiler"][0], "of": {**p["profiler"][0]["of"], "shape_id": "m4096n4096k4096"}}
    p["profiler"].append(extra)
    assert not rules(p) & {"KE1104", "KE1105"}
    # the defence not recorded passed: nothing vouches for the timed call
    p = control(SUITE)
    p["profiler"][0]["of"]["shape_id"] = "m4096n4096k4096"
    defence(p, "candidate_kernel_profiled")[1]["outcome"] = "skipped"
    assert "KE1104" not in rules(p)


def test_a_capture_stripped_of_its_shape_on_a_task_of_several() -> None:
    p = control(SUITE)
    del p["profiler"][0]["of"]["shape_id"]
    r = report(p)
    assert ("KE1105", "/profiler/0/of") in {(f.rule_id, f.pointer) for f in r.findings}
    assert r.grade.letter in ("C", "D", "F")
    # a task of one shape: a capture naming none is of the timed one
    p = control(GEMM)
    del p["profiler"][0]["of"]["shape_id"]
    assert not rules(p) & {"KE1104", "KE1105"}


# ---------------------------------------------------------------- KE1101: fill kernels, raw durations


def _two_kernels(p: dict[str, Any], reduce_name: str, raw_name: str | None) -> None:
    """The candidate's capture with a second kernel (a split-K reduce at half the main
    kernel's time), the candidate's claim cut to 0.8x the main kernel's."""
    cap = p["profiler"][0]
    main = cap["kernels"][0]
    ns = main["metrics"]["duration"]["value"]
    rec = {
        **main,
        "id": "1",
        "name": reduce_name,
        "metrics": {"duration": {"value": round(ns / 2, 1), "unit": "ns"}},
    }
    if raw_name is not None:
        rec["raw_name"] = raw_name
    cap["kernels"].append(rec)
    st = p["timing"]["stats"]
    # the claim: the main kernel's time alone (1.25x below both kernels even at 0.25 tolerance)
    st["median"] = round(ns * 1.0 / {"us": 1e3, "ms": 1e6, "s": 1e9}[st["unit"]], 6)


def test_a_reduce_kernel_renamed_as_a_fill_keeps_its_raw_name() -> None:
    p = control(GEMM)
    _two_kernels(
        p,
        "fill_splitk_partials_bf16",
        "void splitk_reduce_bf16_kernel<256>(float const*, __nv_bfloat16*, int)",
    )
    assert ("KE1101", "/timing/stats/median") in found(p)
    # a real fill kernel, by both names: the harness's, not the candidate's time
    p = control(GEMM)
    _two_kernels(p, "fill_kernel", "void fill_kernel<float>(float*, float, int)")
    assert ("KE1101", "/timing/stats/median") not in found(p)
    p = control(GEMM)
    _two_kernels(p, "fill_kernel", None)
    assert ("KE1101", "/timing/stats/median") not in found(p)


def _raw_duration(p: dict[str, Any], value: Any, unit: str, key: str = "gpu__time_duration.sum") -> None:
    p["profiler"][0]["kernels"][0]["raw"] = {key: {"value": value, "unit": unit}}


def test_a_canonical_duration_edited_with_the_raw_one_kept() -> None:
    p = control(GEMM)
    rec = p["profiler"][0]["kernels"][0]
    ns = rec["metrics"]["duration"]["value"]
    _raw_duration(p, round(ns / 1000, 3), "usecond")
    assert "KE1101" not in rules(p)  # agrees
    rec["metrics"]["duration"]["value"] = round(ns * 0.6, 1)
    assert ("KE1101", "/profiler/0/kernels/0/metrics/duration") in found(p)
    # the same in msecond with ncu's two decimals, and as .avg: agrees within the rounding
    p = control(GEMM)
    ns = p["profiler"][0]["kernels"][0]["metrics"]["duration"]["value"]
    _raw_duration(p, round(ns / 1e6, 2), "msecond", "gpu__time_duration.avg")
    assert "KE1101" not in rules(p)
    # a unit the check does not know: nothing said
    p["profiler"][0]["kernels"][0]["metrics"]["duration"]["value"] = round(ns * 0.6, 1)
    _raw_duration(p, round(ns / 1000, 3), "cycles")
    assert ("KE1101", "/profiler/0/kernels/0/metrics/duration") not in found(p)


def test_a_canonical_duration_against_the_raw_columns() -> None:
    p = control(GEMM)
    cap = p["profiler"][0]
    ns = cap["kernels"][0]["metrics"]["duration"]["value"]
    cap["raw_columns"] = {"gpu__time_duration.sum": [ns]}
    cap["raw_units"] = {"gpu__time_duration.sum": "nsecond"}
    assert "KE1101" not in rules(p)
    cap["kernels"][0]["metrics"]["duration"]["value"] = round(ns * 0.6, 1)
    assert ("KE1101", "/profiler/0/kernels/0/metrics/duration") in found(p)


def test_a_summed_raw_duration_of_several_launches_is_not_compared() -> None:
    p = control(GEMM)
    rec = p["profiler"][0]["kernels"][0]
    ns = rec["metrics"]["duration"]["value"]
    rec["invocations"] = 4
    _raw_duration(p, round(4 * ns / 1000, 3), "usecond")  # the sum over the record's 4 launches
    assert ("KE1101", "/profiler/0/kernels/0/metrics/duration") not in found(p)


# ---------------------------------------------------------------- KE1102: vendor kernels


def test_an_expected_name_generic_enough_to_match_cublas() -> None:
    p = control(GEMM)
    cap = p["profiler"][0]
    cap["kernels"][0]["name"] = CUBLAS
    cap["of"]["expected_kernels"] = ["gemm"]
    assert ("KE1102", "/profiler/0/of/expected_kernels") in found(p)
    # the candidate's own kernel matched by the same generic name: shown
    p = control(GEMM)
    p["profiler"][0]["of"]["expected_kernels"] = ["gemm"]
    assert "KE1102" not in rules(p)
    # a capture that expects the library's kernel by its name (a CUTLASS/cuBLAS-built candidate)
    p = control(GEMM)
    cap = p["profiler"][0]
    cap["kernels"][0]["name"] = CUBLAS
    cap["of"]["expected_kernels"] = ["sm90_xmma_gemm"]
    assert "KE1102" not in rules(p)


@pytest.mark.parametrize(
    "name, vendor",
    [
        (CUBLAS, True),
        ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn", True),
        ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNT", True),
        (
            "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(T1::Params)",
            True,
        ),
        ("Cijk_Ailk_Bljk_BBS_BH_MT128x128x32_MI32x32x8x1", True),
        ("gemm_bf16_tn_128x256_warpspecialized", False),
        ("void cutlass::device_kernel<my_gemm::Kernel>(my_gemm::Kernel::Params)", False),
        ("fused_cublas_beater", False),
    ],
)
def test_vendor_kernel_names(name: str, vendor: bool) -> None:
    assert _vendor(name) is vendor


# ---------------------------------------------------------------- KE412: defences contradicted


@pytest.mark.parametrize(
    "detail",
    [
        "skipped: no unseen input sets available for this shape",
        "Skipped",
        "not run: no GPU",
        "N/A",
        "not applicable to this kernel",
        "the check was skipped.",
        "disabled (no spare memory)",
    ],
)
def test_a_passed_defence_whose_detail_says_skipped(detail: str) -> None:
    p = control(GEMM)
    i, d = defence(p, "unseen_inputs")
    d["detail"] = detail
    assert ("KE412", f"/defences/{i}") in found(p)


@pytest.mark.parametrize(
    "detail",
    [
        "no kernel was skipped",
        "8 unseen input sets checked; none skipped",
        "disabled TF32 and checked 8 unseen input sets",
        "skipped 0 of 8 sets",
        "skip-list empty; 8 sets checked",
    ],
)
def test_a_passed_defence_whose_detail_mentions_skipping(detail: str) -> None:
    assert not _says_not_run(detail)
    p = control(GEMM)
    d = defence(p, "unseen_inputs")[1]
    d["detail"] = detail
    assert "KE412" not in rules(p)


def test_unseen_inputs_passed_while_the_validation_reused_the_replays_seed() -> None:
    p = control(GEMM)
    i, d = defence(p, "unseen_inputs")
    d["detail"] = "8 unseen input sets checked"
    p["validation"]["inputs_regenerated"] = False
    p["validation"]["seeds"] = [20261120]  # the replay's
    fresh = defence(p, "fresh_inputs")[1]
    fresh["outcome"] = "skipped"  # only unseen_inputs left to contradict
    assert ("KE412", f"/defences/{i}") in found(p)
    # the check names seeds of its own: the unseen inputs are on record
    d["detail"] = (
        "2 re-runs on inputs from seeds drawn after the candidate was built (1866402211, 90417733) matched"
    )
    assert ("KE412", f"/defences/{i}") not in found(p)
    # the validation has a seed of its own beyond the replay's
    d["detail"] = "8 unseen input sets checked"
    p["validation"]["seeds"] = [20261120, 20261121]
    assert ("KE412", f"/defences/{i}") not in found(p)
    # inputs regenerated
    p["validation"]["seeds"] = [20261120]
    p["validation"]["inputs_regenerated"] = True
    assert ("KE412", f"/defences/{i}") not in found(p)


def test_timer_integrity_passed_beside_a_preloaded_library() -> None:
    p = control(SERVING)
    p["replay"]["env"]["LD_PRELOAD"] = "/opt/shim/libfastclock.so"
    assert ("KE412", "/replay/env/LD_PRELOAD") in found(p)
    p = control(SERVING)
    p["replay"]["env"]["DYLD_INSERT_LIBRARIES"] = "/tmp/libclock.dylib"
    assert ("KE412", "/replay/env/DYLD_INSERT_LIBRARIES") in found(p)
    # a memory allocator preloaded (vLLM's TCMalloc advice): no clock
    p = control(SERVING)
    p["replay"]["env"]["LD_PRELOAD"] = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
    assert "KE412" not in rules(p)
    # the defence not recorded passed
    p = control(SERVING)
    p["replay"]["env"]["LD_PRELOAD"] = "/opt/shim/libfastclock.so"
    defence(p, "timer_integrity")[1]["outcome"] = "skipped"
    assert "KE412" not in rules(p)


# ---------------------------------------------------------------- KE207: serving settings


@pytest.mark.parametrize(
    "key, value",
    [("max-concurrency", 16), ("--max-concurrency", 16), ("Request-Rate", 8), ("random-input-len", 512)],
)
def test_a_workload_setting_under_another_spelling(key: str, value: Any) -> None:
    p = control(SERVING)
    p["timing"]["baseline"]["settings"][key] = value
    assert ("KE207", f"/timing/baseline/settings/{key}") in found(p)


def test_a_workload_setting_under_another_spelling_that_agrees() -> None:
    p = control(SERVING)
    p["timing"]["baseline"]["settings"].update(
        {"max-concurrency": 64, "request-rate": "inf", "Num-Prompts": 1000}
    )
    assert "KE207" not in rules(p)


def test_a_baseline_engine_given_less_capacity() -> None:
    p = control(SERVING)
    p["timing"]["baseline"]["settings"]["max_num_seqs"] = 16
    assert ("KE207", "/timing/baseline/settings/max_num_seqs") in found(p)
    p = control(SERVING)
    p["task"]["serving"]["settings"]["gpu_memory_utilization"] = 0.9
    p["timing"]["baseline"]["settings"]["gpu-memory-utilization"] = 0.5
    assert ("KE207", "/timing/baseline/settings/gpu-memory-utilization") in found(p)
    # more capacity on the baseline, or a setting only the baseline records: nothing said
    p = control(SERVING)
    p["timing"]["baseline"]["settings"]["max_num_seqs"] = 512
    p["timing"]["baseline"]["settings"]["max_num_batched_tokens"] = 2048
    assert "KE207" not in rules(p)


def test_a_baseline_engine_without_cuda_graphs() -> None:
    p = control(SERVING)
    p["timing"]["baseline"]["settings"]["enforce_eager"] = True
    assert ("KE207", "/timing/baseline/settings/enforce_eager") in found(p)
    # both sides eager: alike
    p["task"]["serving"]["settings"]["enforce-eager"] = True
    assert "KE207" not in rules(p)
    # eager off on the baseline
    p = control(SERVING)
    p["timing"]["baseline"]["settings"]["enforce_eager"] = False
    assert "KE207" not in rules(p)


def test_the_kv_cache_dtype_the_claim_is_about_is_not_compared() -> None:
    p = control(SERVING)
    p["task"]["serving"]["settings"]["kv_cache_dtype"] = "fp8"
    p["timing"]["baseline"]["settings"]["kv_cache_dtype"] = "auto"
    assert "KE207" not in rules(p)


# ---------------------------------------------------------------- KE210: the candidate's engine


@pytest.mark.parametrize("version", ["nightly", "latest", "main", "x.y.z"])
def test_a_placeholder_candidate_engine_version(version: str) -> None:
    p = control(SERVING)
    p["task"]["serving"]["engine"]["version"] = version
    assert ("KE210", "/task/serving/engine/version") in found(p)


@pytest.mark.parametrize("version", ["0.11.0", "0.11.1rc2.dev45+g1234abc", "nightly-2026-11-20"])
def test_a_real_candidate_engine_version(version: str) -> None:
    p = control(SERVING)
    p["task"]["serving"]["engine"]["version"] = version
    assert "KE210" not in rules(p)


# ---------------------------------------------------------------- KE207: the baseline's call


@pytest.mark.parametrize(
    "call",
    [
        "cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, 8192, 8192, 8192, &alpha, A, 8192, B, 8192, &beta, C, 8192)",
        "cublasHgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, 8192, 8192, 8192, ...)",
        "cublasLtMatmul(bf16, transa=N, transb=T, m=8192, n=8192, k=16384, compute=CUBLAS_COMPUTE_32F)",
        "cublasLtMatmul(bf16, TN, m=n=k=4096)",
        "cublasGemmEx(handle, N, T, 8192, 4096, 8192, ...)",
    ],
)
def test_a_baseline_call_of_another_problem(call: str) -> None:
    p = control(GEMM)
    p["timing"]["baseline"]["call"] = call
    assert ("KE207", "/timing/baseline/call") in found(p)


@pytest.mark.parametrize(
    "call",
    [
        "cublasLtMatmul(bf16, transa=N, transb=T, m=n=k=8192, compute=CUBLAS_COMPUTE_32F, heuristic=0)",
        "cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_T, 8192, 8192, 8192, &alpha, A, CUDA_R_16BF, 8192, "
        "B, CUDA_R_16BF, 8192, &beta, C, CUDA_R_16BF, 8192, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)",
        "cublasSgemmEx(handle, N, T, 8192, 8192, 8192, &alpha, A, CUDA_R_16BF, 8192, B, CUDA_R_16BF, ...)",
        "2x cublasLtMatmul(bf16, N, T, m=8192, n=4096, k=8192) column-split",
        "torch.matmul(a, b) with splitK=4",
    ],
)
def test_a_baseline_call_of_the_candidates_problem(call: str) -> None:
    p = control(GEMM)
    p["timing"]["baseline"]["call"] = call
    assert ("KE207", "/timing/baseline/call") not in found(p)


def test_call_parsing() -> None:
    assert _call_states("cublasSgemm(h, N, T, 64, 32, 16, ...)") == ("fp32", (64, 32, 16), False)
    assert _call_states("cublasSgemm with CUBLAS_TF32_TENSOR_OP_MATH") == (
        None,
        None,
        False,
    )  # sgemm under tf32
    assert _call_states("m=1, M=2") == (None, None, False)  # one letter, two values
    assert _call_states("hipblasLtMatmul(fp8, TN, m=n=k=8192)") == (None, (8192, 8192, 8192), False)
    assert _call_states("cublasLtMatmul(bf16, k=4096)") == (None, (None, None, 4096), False)
    assert _call_states("2x cublasLtMatmul(bf16, m=8192, n=4096, k=8192)")[2]  # run twice: a part each
