"""Red team 5k classes 8-10: handicaps written into a kernel baseline's call (KE207), a
cuBLAS of another CUDA major than the runtime or the library path (KE210), and CPU library
environment variables that slow the baseline's library (KE208). Each beside an honest twin."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_controls import CONTROLS  # noqa: E402
from _adv_kit import found  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
A100 = "a100_fp16_gemm_vs_cublas"
ATT = "h200_attention_vs_flashattention"
LN = "h100_layernorm_vs_transformer_engine"
TPU = "tpu_v6e_matmul_vs_xla"
AMX = "cpu_xeon_amx_gemm_vs_onednn"
EPYC = "cpu_epyc_sgemm_vs_openblas"
CALL = "/timing/baseline/call"

LT = "cublasLtMatmul(bf16, transa=N, transb=T, m=n=k=8192, compute=CUBLAS_COMPUTE_32F"
FA = "flash_attn_func(q, k, v, causal=False, softmax_scale=0.08839"
XLA = "jax.jit(partial(jnp.dot, precision=jax.lax.Precision.{}, preferred_element_type=jnp.float32))(a, b.T)"
LNC = "transformer_engine.pytorch.LayerNorm(8192, eps=1e-5, params_dtype=bf16)(x) with x = torch.randn({}, 8192, dtype=bf16)"


def control(name: str) -> dict[str, Any]:
    return copy.deepcopy(CONTROLS[name].build())


def with_call(name: str, call: str) -> dict[str, Any]:
    p = control(name)
    p["timing"]["baseline"]["call"] = call
    return p


# ------------------------------------------------------------- class 8: the call (KE207)

CHEAT_CALLS = [
    (GEMM, LT.replace("CUBLAS_COMPUTE_32F", "CUBLAS_COMPUTE_32F_PEDANTIC") + ", heuristic=0)"),
    (A100, "cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH); cublasGemmEx(fp16, N, T, 4096, 4096, 4096, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)"),
    (GEMM, LT + ", heuristic=0, workspace=NULL, workspaceSizeInBytes=0)"),
    (GEMM, LT + ", heuristic=0, workspace=nullptr)"),
    (GEMM, LT + ", requestedAlgoCount=8, algo=heuristicResult[7])"),
    (GEMM, LT + ", algo index 7 of 8)"),
    (GEMM, LT + ") on B.t().contiguous() made inside the timed call"),
    (GEMM, "torch.matmul(a, b.t().contiguous())"),
    (GEMM, "torch.matmul(a.clone(), b)"),
    (ATT, "flash_attn_func(q, k, v, dropout_p=0.1, causal=False, softmax_scale=0.08839)"),
    (ATT, FA + ", return_attn_probs=True)"),
    (ATT, "flash_attn_func(q[8,4096,32,128], k[8,4096,32,128], v[8,4096,32,128], causal=False)"
          .replace("k[8,4096,32,128]", "k[8,4096,16,128]")),
    (ATT, FA + ", num_heads=16)"),
    (LN, LNC.format(32768)),
    (TPU, XLA.format("HIGHEST")),
    (TPU, "jax.config.update('jax_default_matmul_precision', 'highest'); jnp.dot(a, b)"),
]  # fmt: skip

HONEST_CALLS = [
    (GEMM, LT + ", heuristic=0, workspaceSizeInBytes=33554432)"),
    (GEMM, LT + ", workspace=ws, workspaceSizeInBytes=33554432)"),
    (GEMM, LT + ", requestedAlgoCount=8, algo=heuristicResult[0])"),
    (GEMM, LT + ", algo=heuristicResult[3], the fastest of 8 timed)"),
    (GEMM, "torch.matmul(a, b_t) with b_t = b.t().contiguous() made once before timing"),
    (GEMM, "torch.matmul(a, b.contiguous())"),
    (ATT, "flash_attn_func(q, k, v, dropout_p=0.0, causal=False, softmax_scale=0.08839)"),
    (ATT, FA + ", return_softmax_lse=True)"),
    (ATT, "flash_attn_func(q[8,4096,32,128], k[8,4096,32,128], v[8,4096,32,128], causal=False)"),
    (ATT, FA + ", num_heads=32, head_dim=128)"),
    (LN, LNC.format(16384)),
    (LN, "transformer_engine.pytorch.LayerNorm(8192, eps=1e-5, params_dtype=bf16)(x) with x = torch.randn(8, 2048, 8192)"),
    (TPU, XLA.format("DEFAULT")),
]  # fmt: skip


@pytest.mark.parametrize(("name", "call"), CHEAT_CALLS)
def test_a_handicap_in_the_baseline_call_is_caught(name: str, call: str) -> None:
    assert ("KE207", CALL) in found(with_call(name, call))


@pytest.mark.parametrize(("name", "call"), HONEST_CALLS)
def test_an_honest_baseline_call_passes(name: str, call: str) -> None:
    assert ("KE207", CALL) not in found(with_call(name, call))


def test_pedantic_is_a_handicap_only_under_a_narrow_candidate() -> None:
    call = "cblas-like cublasSgemm(h, N, T, 4096, 4096, 4096) under CUBLAS_PEDANTIC_MATH"
    p = with_call(A100, call)
    for side in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        side["dtypes"] = ["fp32"]
    p["task"]["dtypes"] = ["fp32"]
    for t in p["task"]["shapes"][0].get("tensors", []):
        t["dtype"] = "fp32"
    assert ("KE207", CALL) not in found(p)
    assert ("KE207", CALL) in found(with_call(A100, call.replace("cublasSgemm", "cublasHgemm")))


def test_the_causal_flag_must_be_the_candidates() -> None:
    def causal(p: dict[str, Any], v: int) -> dict[str, Any]:
        p["task"]["shapes"][0]["dims"]["causal"] = v
        p["timing"]["conditions"]["dims"]["causal"] = v
        p["timing"]["baseline"]["conditions"]["dims"]["causal"] = v
        return p

    assert ("KE207", CALL) in found(causal(control(ATT), 1))  # the control's call: causal=False
    assert ("KE207", CALL) not in found(causal(with_call(ATT, FA.replace("False", "True") + ")"), 1))
    assert ("KE207", CALL) in found(causal(with_call(ATT, FA.replace("False", "True") + ")"), 0))


def test_gqa_extents_must_match_the_candidates_kv_heads() -> None:
    qkv = "flash_attn_func(q[8,4096,32,128], k[8,4096,{0},128], v[8,4096,{0},128], causal=False)"
    for kv, caught in ((32, True), (8, False)):
        p = with_call(ATT, qkv.format(kv))
        p["task"]["shapes"][0]["dims"]["kv_heads"] = 8
        p["timing"]["conditions"]["dims"]["kv_heads"] = 8
        p["timing"]["baseline"]["conditions"]["dims"]["kv_heads"] = 8
        assert (("KE207", CALL) in found(p)) is caught


def test_highest_precision_is_no_handicap_under_an_fp32_candidate() -> None:
    p = with_call(TPU, XLA.format("HIGHEST"))
    for side in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        side["dtypes"] = ["fp32"]
    p["task"]["dtypes"] = ["fp32"]
    for t in p["task"]["shapes"][0].get("tensors", []):
        t["dtype"] = "fp32"
    assert ("KE207", CALL) not in found(p)


# ------------------------------------------------------- class 9: the version (KE210)


def test_a_cublas_of_another_cuda_major_than_the_runtime() -> None:
    p = control(GEMM)
    p["timing"]["baseline"]["version"] = "11.11.3.6"
    assert ("KE210", "/timing/baseline/version") in found(p)
    p["timing"]["baseline"]["version"] = "111103"
    assert ("KE210", "/timing/baseline/version") in found(p)
    p = control(GEMM)  # 12.4.5.8 under CUDA 12.4
    p["timing"]["baseline"]["version"] = "12.1.3.1"
    assert ("KE210", "/timing/baseline/version") not in found(p)


def test_a_runtime_that_may_be_the_drivers_beside_a_matching_nvcc() -> None:
    p = control(GEMM)
    p["timing"]["baseline"]["version"] = "11.11.3.6"
    p["compile"]["compiler"]["version"] = "11.8.89"
    assert ("KE210", "/timing/baseline/version") not in found(p)


def test_cudnn_has_its_own_numbering() -> None:
    p = control(GEMM)
    b = p["timing"]["baseline"]
    b["provider"], b["version"] = "cuDNN", "9.1.0"
    assert ("KE210", "/timing/baseline/version") not in found(p)


def test_ld_library_path_of_another_toolkit_than_the_baseline_cublas() -> None:
    p = control(GEMM)
    p["replay"]["env"]["LD_LIBRARY_PATH"] = "/usr/local/cuda-11.0/lib64"
    assert ("KE210", "/replay/env/LD_LIBRARY_PATH") in found(p)
    for honest in (
        "/usr/local/cuda-12.4/lib64",
        "/usr/local/cuda/lib64",
        "/usr/local/cuda-12.4/lib64:/usr/local/cuda-11.8/extras/CUPTI/lib64",
    ):
        p["replay"]["env"]["LD_LIBRARY_PATH"] = honest
        assert ("KE210", "/replay/env/LD_LIBRARY_PATH") not in found(p)


# ------------------------------------------------------ class 10: CPU env (KE208)


@pytest.mark.parametrize(
    ("name", "var", "value", "caught"),
    [
        (AMX, "ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16", True),
        (AMX, "DNNL_MAX_CPU_ISA", "AVX2", True),
        (AMX, "ONEDNN_MAX_CPU_ISA", "AVX512_CORE_AMX", False),
        (AMX, "ONEDNN_MAX_CPU_ISA", "ALL", False),
        (AMX, "ONEDNN_VERBOSE", "all", True),
        (AMX, "DNNL_VERBOSE", "1", True),
        (AMX, "ONEDNN_VERBOSE", "0", False),
        (AMX, "ONEDNN_VERBOSE", "none", False),
        (EPYC, "OPENBLAS_CORETYPE", "Haswell", True),
        (EPYC, "OPENBLAS_CORETYPE", "SkylakeX", False),
        (EPYC, "OPENBLAS_VERBOSE", "2", False),
        (AMX, "OPENBLAS_CORETYPE", "Haswell", False),  # not the baseline's library
        (EPYC, "ONEDNN_MAX_CPU_ISA", "AVX2", False),  # not the baseline's library
    ],
)
def test_cpu_library_environment(name: str, var: str, value: str, caught: bool) -> None:
    p = control(name)
    p["replay"]["env"][var] = value
    assert (("KE208", "/replay/env/" + var) in found(p)) is caught


def test_an_isa_cap_below_amx_is_no_handicap_for_fp32() -> None:
    p = control(AMX)
    p["replay"]["env"]["ONEDNN_MAX_CPU_ISA"] = "AVX512_CORE_BF16"
    for side in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        side["dtypes"] = ["fp32"]
    p["task"]["dtypes"] = ["fp32"]
    for t in p["task"]["shapes"][0].get("tensors", []):
        t["dtype"] = "fp32"
    p["timing"]["baseline"]["call"] = (
        "dnnl::matmul(fp32, src 4096x4096, weights 4096x4096, dst fp32) on 56 threads"
    )
    assert ("KE208", "/replay/env/ONEDNN_MAX_CPU_ISA") not in found(p)
    p["replay"]["env"]["ONEDNN_MAX_CPU_ISA"] = "AVX2"  # below AVX-512 costs fp32 too
    assert ("KE208", "/replay/env/ONEDNN_MAX_CPU_ISA") in found(p)


def test_mkl_environment() -> None:
    p = control(AMX)
    b = p["timing"]["baseline"]
    b["provider"], b["version"] = "oneMKL", "2024.2"
    b["call"] = "cblas_gemm_bf16bf16f32(RowMajor, NoTrans, NoTrans, 4096, 4096, 4096) on 56 threads"
    for var, value, caught in (
        ("MKL_ENABLE_INSTRUCTIONS", "AVX2", True),
        ("MKL_ENABLE_INSTRUCTIONS", "AVX512_E4", False),
        ("MKL_CBWR", "COMPATIBLE", True),
        ("MKL_CBWR", "AUTO", False),
        ("MKL_VERBOSE", "1", True),
        ("MKL_VERBOSE", "0", False),
    ):
        q = copy.deepcopy(p)
        q["replay"]["env"][var] = value
        assert (("KE208", "/replay/env/" + var) in found(q)) is caught, (var, value)
