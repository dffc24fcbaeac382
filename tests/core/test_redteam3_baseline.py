"""Red-team cheats of the baseline band (KE207, KE208, KE210), third round: each cheat caught
(rule and pointer) beside its honest near-twin, which is let through.

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

from _adv_build import finalize, scale_side  # noqa: E402
from _adv_controls import control  # noqa: E402

from kernel_evidence.rules.baseline import _call_more, _foreign  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"  # bf16 m=n=k=8192 against cuBLASLt 12.4.5.8, conditions alike
FP8 = "h100_fp8_gemm_vs_cublaslt"  # fp8_e4m3 in, bf16 out, both sides' dtypes [fp8_e4m3, bf16]
SUITE = "h100_gemm_suite_three_shapes"  # timed m8192n8192k8192
ROCBLAS = "mi300x_bf16_gemm_vs_rocblas"
MI250 = "mi250x_one_gcd_fp16_gemm_vs_rocblas"
TPU = "tpu_v6e_matmul_vs_xla"
ATTN = "h200_attention_vs_flashattention"
SERVING = "serving_vllm_llama8b_h100"  # settings max_num_seqs 256; conditions dtypes bf16


def report(p: dict[str, Any]) -> Any:
    return validate(finalize(p))


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in report(p).findings}


def rules(p: dict[str, Any]) -> set[str]:
    return {r for r, _ in found(p)}


def B(p: dict[str, Any]) -> dict[str, Any]:
    return p["timing"]["baseline"]  # type: ignore[no-any-return]


def test_the_controls_are_clean() -> None:
    for name in (GEMM, FP8, SUITE, ROCBLAS, MI250, TPU, ATTN, SERVING):
        r = report(control(name))
        assert r.ok and r.grade.letter in ("A", "B"), (name, [f.line() for f in r.findings])


# ---------------------------------------------------------------- KE207: more work on the baseline


@pytest.mark.parametrize("batch", ["batch_count=2", "batchCount=4", "batch=2", "batch_size: 8"])
def test_a_baseline_call_of_a_batch(batch: str) -> None:
    p = control(GEMM)
    B(p)["call"] = B(p)["call"].replace("m=n=k=8192", f"m=n=k=8192, {batch}")
    scale_side(p, "baseline", 2.0)
    assert ("KE207", "/timing/baseline/call") in found(p)


def test_a_baseline_call_of_the_candidates_batch() -> None:
    # batch 1, or the batch the timed shape has (an attention shape of batch 4)
    p = control(GEMM)
    B(p)["call"] = B(p)["call"].replace("m=n=k=8192", "m=n=k=8192, batch_count=1")
    assert ("KE207", "/timing/baseline/call") not in found(p)
    p = control(ATTN)
    b = p["timing"]["conditions"]["dims"]["batch"]
    B(p)["call"] = B(p)["call"] + f" batch={b}"
    assert ("KE207", "/timing/baseline/call") not in found(p)
    B(p)["call"] = B(p)["call"].replace(f"batch={b}", f"batch={2 * b}")
    assert ("KE207", "/timing/baseline/call") in found(p)


def test_baseline_dims_with_a_batch_the_candidate_lacks() -> None:
    p = control(GEMM)
    B(p)["conditions"]["dims"]["batch"] = 2
    scale_side(p, "baseline", 2.0)
    assert ("KE207", "/timing/baseline/conditions/dims/batch") in found(p)


def test_baseline_dims_with_an_extra_dimension_of_one_or_another_name() -> None:
    p = control(GEMM)
    B(p)["conditions"]["dims"]["batch"] = 1
    assert "KE207" not in rules(p)
    # the candidate's conditions call it `b`, the baseline's `batch`: the same 2
    p = control(GEMM)
    p["timing"]["conditions"]["dims"]["b"] = 2
    B(p)["conditions"]["dims"]["batch"] = 2
    assert ("KE207", "/timing/baseline/conditions/dims/batch") not in found(p)


# ---------------------------------------------------------------- KE207: another precision


@pytest.mark.parametrize(
    "call",
    [
        "cublasLtMatmul(bf16, TN, m=n=k=8192, scaleD=bf16, compute=CUBLAS_COMPUTE_32F)",
        "cublasLtMatmul(CUDA_R_16BF, TN, m=n=k=8192, compute=CUBLAS_COMPUTE_32F)",
        "cublasLtMatmul(fp16, TN, m=n=k=8192)",
        "torch.matmul(a.to(torch.bfloat16), b.to(torch.bfloat16))",
    ],
)
def test_an_fp8_candidate_against_a_wider_baseline_call(call: str) -> None:
    p = control(FP8)
    B(p)["call"] = call
    assert ("KE207", "/timing/baseline/call") in found(p)


@pytest.mark.parametrize(
    "call",
    [
        "cublasLtMatmul(fp8_e4m3, TN, m=n=k=8192, scaleD=bf16, compute=CUBLAS_COMPUTE_32F)",
        "cublasLtMatmul(A/B CUDA_R_8F_E4M3, D CUDA_R_16BF, TN, m=n=k=8192)",
        "cublasLtMatmul(TN, m=n=k=8192, out_dtype=bf16)",  # only the output's type: not judged
        "cublasLtMatmul(TN, m=n=k=8192, compute=CUBLAS_COMPUTE_32F)",
    ],
)
def test_an_fp8_candidate_against_an_fp8_baseline_call(call: str) -> None:
    p = control(FP8)
    B(p)["call"] = call
    assert ("KE207", "/timing/baseline/call") not in found(p)


def test_an_fp8_output_against_the_baselines_bf16_output() -> None:
    p = control(FP8)
    p["task"]["shapes"][0]["tensors"][2]["dtype"] = "fp8_e4m3"
    p["task"]["shapes"][0]["work"]["bytes"]["value"] -= 8192 * 8192
    p["task"]["dtypes"] = ["fp8_e4m3"]
    p["timing"]["conditions"]["dtypes"] = ["fp8_e4m3"]
    assert ("KE207", "/timing/conditions/dtypes") in found(p)
    # fp8 out on both sides: alike
    B(p)["conditions"]["dtypes"] = ["fp8_e4m3"]
    B(p)["call"] = B(p)["call"].replace("scaleD=bf16", "D=fp8_e4m3, scaleD=fp32 per-tensor")
    assert "KE207" not in rules(p)


def test_an_fp32_accumulator_on_one_side_only_is_the_same_problem() -> None:
    p = control(GEMM)
    B(p)["conditions"]["dtypes"] = ["bf16", "fp32"]
    assert "KE207" not in rules(p)


# ---------------------------------------------------------------- KE207: device count, shape id


def _two_gpus(p: dict[str, Any]) -> None:
    p["hardware"]["count"] = 2
    p["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1"
    p["timing"]["conditions"]["device_count"] = 2


def test_a_two_gpu_candidate_against_a_baseline_without_device_count() -> None:
    p = control(GEMM)
    _two_gpus(p)
    del B(p)["conditions"]["device_count"]
    assert ("KE207", "/timing/baseline/conditions/device_count") in found(p)


def test_a_two_gpu_candidate_against_two_gpus_or_one_gpu_without_device_count() -> None:
    p = control(GEMM)
    _two_gpus(p)
    B(p)["conditions"]["device_count"] = 2
    assert ("KE207", "/timing/baseline/conditions/device_count") not in found(p)
    p = control(GEMM)
    del B(p)["conditions"]["device_count"]
    assert ("KE207", "/timing/baseline/conditions/device_count") not in found(p)


def test_a_flat_shape_id_of_another_shape_than_the_conditions() -> None:
    p = control(SUITE)
    p["timing"]["shape_id"] = "m4096n4096k4096"
    assert ("KE207", "/timing/shape_id") in found(p)
    p = control(SUITE)
    assert p["timing"]["shape_id"] == p["timing"]["conditions"]["shape_id"]
    assert ("KE207", "/timing/shape_id") not in found(p)


# ---------------------------------------------------------------- KE208: the environment


@pytest.mark.parametrize(
    "name, env, var, value",
    [
        ("cublas", GEMM, "CUBLAS_WORKSPACE_CONFIG", ":0:0"),
        ("cublas", GEMM, "CUBLASLT_LOG_LEVEL", "5"),
        ("cublas", GEMM, "CUBLAS_LOGINFO_DBG", "1"),
        ("cublas", GEMM, "CUDA_LAUNCH_BLOCKING", "1"),
        ("rocblas", ROCBLAS, "ROCBLAS_USE_HIPBLASLT", "0"),
        ("rocblas", ROCBLAS, "HIPBLASLT_LOG_LEVEL", "3"),
        ("xla", TPU, "XLA_FLAGS", "--xla_dump_to=/tmp/x --xla_backend_optimization_level=0"),
    ],
)
def test_an_environment_that_slows_the_baseline_library(name: str, env: str, var: str, value: str) -> None:
    p = control(env)
    p["replay"]["env"][var] = value
    assert ("KE208", f"/replay/env/{var}") in found(p), name


@pytest.mark.parametrize(
    "env, var, value",
    [
        (GEMM, "CUBLAS_WORKSPACE_CONFIG", ":4096:8"),  # deterministic mode: a workspace
        (GEMM, "CUBLASLT_LOG_LEVEL", "0"),
        (GEMM, "CUDA_LAUNCH_BLOCKING", "0"),
        (GEMM, "ROCBLAS_USE_HIPBLASLT", "0"),  # not the baseline's library
        (GEMM, "NVIDIA_TF32_OVERRIDE", "0"),  # a bf16 candidate: no tf32 to turn off
        (ROCBLAS, "ROCBLAS_USE_HIPBLASLT", "1"),
        (ROCBLAS, "CUBLAS_WORKSPACE_CONFIG", ":0:0"),
        (MI250, "ROCBLAS_USE_HIPBLASLT", "0"),  # no hipBLASLt kernels before the MI300
        (TPU, "XLA_FLAGS", "--xla_dump_to=/tmp/x"),
    ],
)
def test_an_environment_that_does_not(env: str, var: str, value: str) -> None:
    p = control(env)
    p["replay"]["env"][var] = value
    assert ("KE208", f"/replay/env/{var}") not in found(p)


def test_tf32_turned_off_under_a_tf32_candidate() -> None:
    p = control(GEMM)
    p["replay"]["env"]["NVIDIA_TF32_OVERRIDE"] = "0"
    p["timing"]["conditions"]["dtypes"] = ["tf32"]
    assert ("KE208", "/replay/env/NVIDIA_TF32_OVERRIDE") in found(p)


# ---------------------------------------------------------------- KE210: versions


@pytest.mark.parametrize("version", ["2.5.1", "0.10.0", "r550", "2024.1"])
def test_a_cublaslt_version_of_another_package(version: str) -> None:
    p = control(GEMM)
    B(p)["version"] = version
    assert ("KE210", "/timing/baseline/version") in found(p)


@pytest.mark.parametrize(
    "version", ["12.4.5.8", "12.4", "120405", "CUDA 12.4", "torch 2.5.1+cu124", "nvidia-cublas-cu12 12.4.5.8"]
)
def test_a_cublaslt_version(version: str) -> None:
    p = control(GEMM)
    B(p)["version"] = version
    assert ("KE210", "/timing/baseline/version") not in found(p)


def test_version_schemes() -> None:
    assert _foreign("rocblas", "12.4.5.8") and not _foreign("rocblas", "4.2.4")
    assert not _foreign("rocblas", "6.2.4")  # the ROCm release
    assert _foreign("hipblaslt", "2.5.1") and not _foreign("hipblaslt", "0.10.0")
    assert _foreign("openblas", "2.0") and not _foreign("openblas", "0.3.28")


def test_a_baseline_version_the_replay_packages_contradict() -> None:
    p = control(GEMM)
    p["replay"]["packages"] = {"torch": "2.4.0", "nvidia-cublas-cu12": "12.1.3.1"}
    assert ("KE210", "/timing/baseline/version") in found(p)


@pytest.mark.parametrize(
    "packages",
    [
        {"torch": "2.4.0", "nvidia-cublas-cu12": "12.4.5.8"},
        {"nvidia_cublas_cu12": "12.4.5.8.post1"},
        {"nvidia-cublas-cu11": "11.11.3.6", "nvidia-cublas-cu12": "12.4.5.8"},
        {"torch": "2.4.0"},  # no package of the library: nothing to compare
    ],
)
def test_a_baseline_version_the_replay_packages_agree_with(packages: dict[str, str]) -> None:
    p = control(GEMM)
    p["replay"]["packages"] = packages
    assert ("KE210", "/timing/baseline/version") not in found(p)


# ---------------------------------------------------------------- KE207: the candidate's parent


PARENT = "sha256:" + "3c9e51d0a4b7f2e8" * 4


def _lineage(p: dict[str, Any], relation: str) -> None:
    p["lineage"] = {"run_id": "rl-1", "parent_packet_id": PARENT, "iteration": 7, "relation": relation}


def test_a_vendor_baseline_that_is_the_candidates_parent() -> None:
    p = control(GEMM)
    _lineage(p, "mutation")
    B(p)["packet_id"] = PARENT
    assert ("KE207", "/timing/baseline/packet_id") in found(p)


def test_a_baseline_packet_that_is_not_the_parent_or_not_a_library() -> None:
    p = control(GEMM)
    _lineage(p, "mutation")
    B(p)["packet_id"] = "sha256:" + "77" * 32
    assert ("KE207", "/timing/baseline/packet_id") not in found(p)
    # the parent under relation `baseline`: the loop's own notion of a baseline packet
    p = control(GEMM)
    _lineage(p, "baseline")
    B(p)["packet_id"] = PARENT
    assert ("KE207", "/timing/baseline/packet_id") not in found(p)
    # a library a loop mutates (FlashAttention's source): the parent may be it
    p = control(ATTN)
    _lineage(p, "mutation")
    B(p)["packet_id"] = PARENT
    assert ("KE207", "/timing/baseline/packet_id") not in found(p)


# ---------------------------------------------------------------- KE207: serving settings


@pytest.mark.parametrize(
    "key, value",
    [
        ("dtype", "float32"),
        ("cpu_offload_gb", 40),
        ("use_beam_search", True),
        ("best_of", 4),
        ("attention_backend", "TORCH_SDPA"),
    ],
)
def test_a_serving_baseline_handicapped_by_its_own_settings(key: str, value: Any) -> None:
    p = control(SERVING)
    B(p)["settings"][key] = value
    assert ("KE207", f"/timing/baseline/settings/{key}") in found(p)


@pytest.mark.parametrize(
    "key, value, mine",
    [
        ("dtype", "bfloat16", None),
        ("dtype", "float16", None),  # 16 bits: no slower
        ("dtype", "auto", None),
        ("cpu_offload_gb", 0, None),
        ("cpu_offload_gb", 8, 8),  # both sides offload alike
        ("use_beam_search", False, None),
        ("best_of", 1, None),
        ("attention_backend", "FLASHINFER", "FLASH_ATTN"),  # each side its own: the comparison
        ("attention_backend", "auto", None),
    ],
)
def test_a_serving_baseline_setting_that_does_not_handicap(key: str, value: Any, mine: Any) -> None:
    p = control(SERVING)
    B(p)["settings"][key] = value
    if mine is not None:
        p["task"]["serving"]["settings"][key] = mine
    assert ("KE207", f"/timing/baseline/settings/{key}") not in found(p)


def test_an_attention_backend_the_candidate_set_through_its_environment() -> None:
    p = control(SERVING)
    B(p)["settings"]["attention_backend"] = "TORCH_SDPA"
    assert ("KE207", "/timing/baseline/settings/attention_backend") in found(p)
    p["replay"]["env"]["VLLM_ATTENTION_BACKEND"] = "FLASH_ATTN"
    assert ("KE207", "/timing/baseline/settings/attention_backend") not in found(p)


def test_a_fast_backend_written_out_on_the_baseline_alone_is_not_a_handicap() -> None:
    """The engine's own default (FLASH_ATTN, FLASHINFER) recorded on one side only is no
    handicap: only a fallback backend forced on the baseline is."""
    p = control(SERVING)
    B(p)["settings"]["attention_backend"] = "FLASH_ATTN"
    assert ("KE207", "/timing/baseline/settings/attention_backend") not in found(p)


def test_a_setting_given_twice_under_two_spellings() -> None:
    p = control(SERVING)
    B(p)["settings"]["max-num-seqs"] = 16
    assert ("KE207", "/timing/baseline/settings/max-num-seqs") in found(p)
    p = control(SERVING)
    p["task"]["serving"]["settings"]["Max-Num-Seqs"] = 1024
    assert ("KE207", "/task/serving/settings/Max-Num-Seqs") in found(p)
    # the same value twice: nothing to choose between
    p = control(SERVING)
    B(p)["settings"]["max-num-seqs"] = 256
    assert "KE207" not in rules(p)


# ---------------------------------------------------------------- call parsing


def test_call_more() -> None:
    assert _call_more("cublasLtMatmul(fp8_e4m3, TN, scaleD=bf16, compute=CUBLAS_COMPUTE_32F)") == (
        frozenset({"fp8"}),
        None,
    )
    assert _call_more("cublasGemmEx(h, N, T, 8, 8, 8, A, CUDA_R_16F, 8, B, CUDA_R_16F)") == (
        frozenset({"fp16"}),
        None,
    )
    assert _call_more("rocblas_gemm_ex(rocblas_datatype_bf16_r, ..., compute=f32)") == (
        frozenset({"bf16"}),
        None,
    )
    # a 32-bit type named is not judged (a compute or scale type), an operand cast to it is
    assert _call_more("gemm(a, b, CUDA_R_32F)") == (frozenset(), None)
    assert _call_more("x.to(torch.float32)") == (frozenset({"fp32"}), None)
    assert _call_more("gemm(batch_count=2, batchCount=2)")[1] == 2
    assert _call_more("gemm(batch_count=2, batchCount=4)")[1] is None  # two counts: not judged
    assert _call_more("cudnn sdpa forward (bf16, b=4, h=32)") == (frozenset({"bf16"}), None)
