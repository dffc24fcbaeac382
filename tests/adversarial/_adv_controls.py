"""Honest controls: packets a careful harness writes, some of which look suspicious.

Each control is built fresh by a small function (so a cheat can mutate its own copy) and
names the grade it should get when that is meaningful: ``A`` for complete evidence over a
vendor library (``AB`` where the device leaves a check open: TPUs have no cache to flush,
serving runs no work figures), ``B`` where something A needs is honestly absent (a migrated packet without
conditions), ``C`` for a claim over a reference implementation, ``D`` for packets that make
no claim (failures, bare timings, profiles), ``None`` where the suite only requires
validity.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

from _adv_build import (
    DEVICES,
    LEGACY,
    Packet,
    attention,
    capture,
    digest,
    envelope,
    failure_packet,
    finalize,
    gemm,
    hex40,
    kernel_claim,
    replay,
    rowwise,
    serving_claim,
    set_side_samples,
    shape_result,
)

__all__ = ["CONTROLS", "Control", "control"]


@dataclass(frozen=True)
class Control:
    name: str
    build: Callable[[], Packet]
    grade: str | None
    about: str


CONTROLS: dict[str, Control] = {}


def _control(grade: str | None, about: str) -> Callable[[Callable[[], Packet]], Callable[[], Packet]]:
    def register(fn: Callable[[], Packet]) -> Callable[[], Packet]:
        CONTROLS[fn.__name__] = Control(fn.__name__, fn, grade, about)
        return fn

    return register


def control(name: str) -> Packet:
    """A fresh copy of the named control packet."""
    return CONTROLS[name].build()


# ---------------------------------------------------------------- NVIDIA


@_control("A", "bf16 GEMM 8192^3 on H100 at ~600 TFLOP/s (1.83 ms) over cuBLASLt (1.93 ms)")
def h100_bf16_gemm_vs_cublaslt() -> Packet:
    return kernel_claim(
        "gemm_bf16_tn_8192_ws", "h100", gemm(8192, 8192, 8192),
        cand_s=1.8326e-3, base_s=1.9310e-3, provider="cuBLASLt", version="12.4.5.8",
        call="cublasLtMatmul(bf16, transa=N, transb=T, m=n=k=8192, compute=CUBLAS_COMPUTE_32F, heuristic=0)",
        kernel="gemm_bf16_tn_128x256_warpspecialized",
    )  # fmt: skip


@_control("A", "fp8 GEMM 8192^3 on H100 at ~1.25 PFLOP/s over cuBLASLt, below the 1979 TFLOP/s fp8 peak")
def h100_fp8_gemm_vs_cublaslt() -> Packet:
    return kernel_claim(
        "gemm_fp8_e4m3_8192", "h100", gemm(8192, 8192, 8192, "fp8_e4m3", "bf16", ref_max=96.0),
        cand_s=0.8790e-3, base_s=0.9120e-3, provider="cuBLASLt", version="12.4.5.8",
        call="cublasLtMatmul(fp8_e4m3, TN, m=n=k=8192, scaleD=bf16, compute=CUBLAS_COMPUTE_32F)",
        kernel="gemm_fp8_e4m3_tn_persistent_pingpong",
    )  # fmt: skip


@_control("A", "fp16 GEMM 4096^3 on A100 at 250 TFLOP/s over cuBLAS")
def a100_fp16_gemm_vs_cublas() -> Packet:
    return kernel_claim(
        "gemm_fp16_a100_4096", "a100", gemm(4096, 4096, 4096, "fp16", ref_max=141.0),
        cand_s=0.5498e-3, base_s=0.5731e-3, provider="cuBLAS", version="12.2.5.6",
        call="cublasGemmEx(fp16, N, T, 4096, 4096, 4096, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)",
        kernel="gemm_fp16_sm80_128x128x32_stages4",
    )  # fmt: skip


@_control("A", "attention forward on H200 at ~550 TFLOP/s over FlashAttention 2.6.3")
def h200_attention_vs_flashattention() -> Packet:
    return kernel_claim(
        "attn_fwd_h200_s4096", "h200", attention(8, 32, 4096, 128),
        cand_s=3.998e-3, base_s=4.412e-3, provider="FlashAttention", version="2.6.3",
        call="flash_attn_func(q, k, v, causal=False, softmax_scale=0.08839)",
        kernel="attn_fwd_ws_h200_128x128", repeats=41,
    )  # fmt: skip


@_control("A", "fp8 GEMM 16384x16384x8192 on B200 at ~3.2 PFLOP/s over cuBLASLt, below the 4.5 PFLOP/s peak")
def b200_fp8_gemm_vs_cublaslt() -> Packet:
    return kernel_claim(
        "gemm_fp8_b200_16k", "b200", gemm(16384, 16384, 8192, "fp8_e4m3", "bf16", ref_max=122.0),
        cand_s=1.3744e-3, base_s=1.4410e-3, provider="cuBLASLt", version="12.8.3.14",
        call="cublasLtMatmul(fp8_e4m3, TN, m=16384, n=16384, k=8192, scaleD=bf16, compute=CUBLAS_COMPUTE_32F)",
        kernel="gemm_fp8_sm100_2sm_256x256_tma",
    )  # fmt: skip


@_control("A", "layernorm on H100 at 2.8 TB/s (below the 3.35 TB/s HBM peak) over Transformer Engine")
def h100_layernorm_vs_transformer_engine() -> Packet:
    return kernel_claim(
        "layernorm_bf16_16k_8k", "h100", rowwise("layernorm", 16384, 8192),
        cand_s=0.19174e-3, base_s=0.2201e-3, provider="Transformer Engine", version="1.11.0",
        call="transformer_engine.pytorch.LayerNorm(8192, eps=1e-5, params_dtype=bf16)(x)",
        kernel="layernorm_fwd_tuned_8192_vec8", repeats=101,
    )  # fmt: skip


@_control("A", "layernorm on an H100 PCIe at 1.7 TB/s (its HBM2e peak is 2.0 TB/s, not the SXM's 3.35)")
def h100_pcie_layernorm_vs_transformer_engine() -> Packet:
    return kernel_claim(
        "layernorm_bf16_pcie", "h100_pcie", rowwise("layernorm", 16384, 8192),
        cand_s=0.3158e-3, base_s=0.3377e-3, provider="Transformer Engine", version="1.11.0",
        call="transformer_engine.pytorch.LayerNorm(8192, eps=1e-5, params_dtype=bf16)(x)",
        kernel="layernorm_fwd_tuned_8192_vec8", repeats=101,
    )  # fmt: skip


@_control("A", "a consumer card: fp16 GEMM on an RTX 4090 at 140 TFLOP/s over cuBLAS")
def rtx4090_fp16_gemm_vs_cublas() -> Packet:
    return kernel_claim(
        "gemm_fp16_rtx4090", "rtx4090", gemm(4096, 4096, 4096, "fp16", ref_max=141.0),
        cand_s=0.9817e-3, base_s=1.0420e-3, provider="cuBLAS", version="12.6.3.3",
        call="cublasGemmEx(fp16, N, T, 4096, 4096, 4096, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)",
        kernel="gemm_fp16_sm89_128x256x32_stages3",
    )  # fmt: skip


@_control("A", "a genuinely short kernel: rmsnorm of one decode token, 2.1 us with CUDA events")
def h100_rmsnorm_decode_short_kernel() -> Packet:
    return kernel_claim(
        "rmsnorm_decode_1x8192", "h100", rowwise("rmsnorm", 1, 8192, ref_max=3.9),
        cand_s=2.112e-6, base_s=2.816e-6, provider="Transformer Engine", version="1.11.0",
        call="transformer_engine.pytorch.RMSNorm(8192, eps=1e-6)(x[1, 8192])",
        kernel="rmsnorm_fwd_single_row_8192", repeats=201, sigma=0.03,
    )  # fmt: skip


@_control("A", "llm.c-style layernorm on L40S at 714 GB/s (below the 864 GB/s peak) over Transformer Engine")
def l40s_layernorm_llmc_vs_transformer_engine() -> Packet:
    # B*T*C = 8*1024*768 fp32, read once and written once: 50.3 MB, flushed from the 96 MiB L2
    return kernel_claim(
        "layernorm_forward_llmc", "l40s", rowwise("layernorm", 8 * 1024, 768, "fp32", ref_max=5.2, atol=1e-5, rtol=1e-5),
        cand_s=70.48e-6, base_s=81.12e-6, provider="Transformer Engine", version="1.11.0",
        call="transformer_engine.pytorch.LayerNorm(768, eps=1e-5, params_dtype=fp32)(x[8192, 768])",
        kernel="layernorm_forward_kernel5", repeats=101, sigma=0.015,
    )  # fmt: skip


@_control("A", "a short decode kernel on MI300X: rmsnorm of 8 tokens, 2.9 us with HIP events, over AITER")
def mi300x_rmsnorm_decode_vs_aiter() -> Packet:
    return kernel_claim(
        "rmsnorm_decode_mi300x", "mi300x", rowwise("rmsnorm", 8, 8192, ref_max=4.4),
        cand_s=2.904e-6, base_s=3.712e-6, provider="AITER", version="0.1.4",
        call="aiter.rms_norm(x[8, 8192], weight, eps=1e-6)",
        kernel="rmsnorm_fwd_gfx942_8x8192", repeats=201, sigma=0.03,
    )  # fmt: skip


@_control(
    "A", "softmax over 393216 columns on H100 (outputs ~2.5e-6): a relative tolerance, not an absolute one"
)
def h100_softmax_wide_rows_vs_cudnn() -> Packet:
    return kernel_claim(
        "softmax_bf16_4096x393216", "h100", rowwise("softmax", 4096, 393216, ref_max=4.02e-6, atol=1e-8, rtol=0.016),
        cand_s=2.2207e-3, base_s=2.6134e-3, provider="cuDNN", version="9.1.0.70",
        call="cudnnSoftmaxForward(CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, bf16 x[4096, 393216])",
        kernel="softmax_online_bf16_row_393216", repeats=31,
    )  # fmt: skip


@_control("C", "a real 30x over torch eager: a fused softmax+mask+dropout chain replacing 9 eager kernels")
def l40s_fused_elementwise_30x_over_eager() -> Packet:
    p = kernel_claim(
        "fused_mask_softmax_dropout", "l40s", rowwise("fused_mask_softmax_dropout", 8192, 8192, ref_max=0.94),
        cand_s=0.3834e-3, base_s=11.502e-3, provider="torch eager", version="2.5.1",
        call="F.dropout(F.softmax(x.masked_fill(mask, -inf) * scale, dim=-1), p=0.1) (9 eager kernels)",
        kernel="fused_mask_softmax_dropout_8192",
    )  # fmt: skip
    return p


@_control("A", "an honest large speedup over a vendor library: skinny GEMM (m=16) via split-K, 3.1x cuBLAS")
def h100_skinny_gemm_splitk_3x() -> Packet:
    return kernel_claim(
        "gemm_bf16_m16_splitk", "h100", gemm(16, 4096, 4096, ref_max=92.0),
        cand_s=12.61e-6, base_s=38.14e-6, provider="cuBLAS", version="12.4.5.8",
        call="cublasGemmEx(bf16, T, N, 4096, 16, 4096, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)",
        kernel="gemm_bf16_splitk16_m16_decode", repeats=101, sigma=0.02,
    )  # fmt: skip


@_control("A", "an honest slowdown reported as such: 0.93x cuBLASLt (speedup below 1 is a claim too)")
def h100_honest_slowdown() -> Packet:
    return kernel_claim(
        "gemm_bf16_tn_4096_triton_port", "h100", gemm(4096, 4096, 4096),
        cand_s=0.2310e-3, base_s=0.2149e-3, provider="cuBLASLt", version="12.4.5.8",
        call="cublasLtMatmul(bf16, transa=N, transb=T, m=n=k=4096, compute=CUBLAS_COMPUTE_32F, heuristic=0)",
        kernel="matmul_kernel_persistent",
    )  # fmt: skip


@_control(
    "A", "both sides trimmed the same way (the 5 slowest of 51 dropped on each side): not cherry-picking"
)
def h100_both_sides_trimmed() -> Packet:
    p = h100_bf16_gemm_vs_cublaslt()
    p.pop("packet_id")
    for side in ("candidate", "baseline"):
        st = p["timing"]["stats"] if side == "candidate" else p["timing"]["baseline"]["stats"]
        kept = list(st["samples"])
        for slow in sorted(kept)[-5:]:
            kept.remove(slow)
        set_side_samples(p, side, kept, st["unit"], dropped=5)
    for c in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        c["sample_handling"] = "trimmed"
    p["timing"]["stop_rule"] = "51 repeats; the 5 slowest of each side dropped as outliers"
    return finalize(p)


@_control("A", "a mean-basis claim where both sides' samples are symmetric: mean and median agree")
def a100_mean_basis_symmetric() -> Packet:
    return kernel_claim(
        "gemm_fp16_a100_mean", "a100", gemm(4096, 4096, 4096, "fp16", ref_max=141.0),
        cand_s=0.5512e-3, base_s=0.5744e-3, provider="cuBLAS", version="12.2.5.6",
        call="cublasGemmEx(fp16, N, T, 4096, 4096, 4096, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)",
        kernel="gemm_fp16_sm80_128x256x32_stages3", basis="mean",
    )  # fmt: skip


@_control("A", "rotating input buffers instead of a flush: 4 copies of 402 MB exceed the 50 MiB L2")
def h100_rotating_buffers() -> Packet:
    p = h100_bf16_gemm_vs_cublaslt()
    p.pop("packet_id")
    rot = {
        "mode": "rotating",
        "rotating_buffers": 4,
        "last_level_cache": {"value": 50.0, "unit": "MiB"},
        "flush_in_timed_window": False,
    }
    for c in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        c["cache"] = copy.deepcopy(rot)
    del p["timing"]["cache_policy"]
    for d in p["defences"]:
        if d["check"] == "cache_flush":
            d["detail"] = "inputs rotated over 4 copies (1.6 GB in all) against a 50 MiB L2"
    return finalize(p)


@_control("A", "a multi-shape suite, every shape validated, the timed one among them")
def h100_gemm_suite_three_shapes() -> Packet:
    return kernel_claim(
        "gemm_bf16_suite", "h100", gemm(8192, 8192, 8192),
        cand_s=1.8411e-3, base_s=1.9302e-3, provider="cuBLASLt", version="12.4.5.8",
        call="cublasLtMatmul(bf16, transa=N, transb=T, m=n=k=8192, compute=CUBLAS_COMPUTE_32F, heuristic=0)",
        kernel="gemm_bf16_tn_128x256_warpspecialized",
        extra_shapes=[gemm(4096, 4096, 4096), gemm(2048, 8192, 1024)],
    )  # fmt: skip


@_control("A", "an ingested historical result: measured in March, packet made in November")
def h100_ingested_historical_result() -> Packet:
    p = h100_bf16_gemm_vs_cublaslt()
    p.pop("packet_id")
    p["measured_at"] = "2026-03-04T17:20:05Z"
    p["producer"] = {"name": "kernel-evidence-ingest", "version": "0.2.0"}
    return finalize(p)


@_control("C", "a baseline from another session, declared as such (same_session false, sessions differ)")
def h100_baseline_other_session_declared() -> Packet:
    p = h100_bf16_gemm_vs_cublaslt()
    p.pop("packet_id")
    b = p["timing"]["baseline"]
    b["same_session"] = False
    b["interleaved"] = False
    b["conditions"]["session"] = "sess-20261119-77c2"
    b["conditions"]["interleaved"] = False
    p["timing"]["conditions"]["interleaved"] = False
    p["timing"]["interleaved"] = False
    return finalize(p)


@_control("AB", "both sides timed L2-warm on purpose (a decode kernel whose weights stay cached), said so")
def h100_both_sides_warm_declared() -> Packet:
    p = h100_rmsnorm_decode_short_kernel()
    p.pop("packet_id")
    for c in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        c["cache"] = {"mode": "warm", "last_level_cache": {"value": 50.0, "unit": "MiB"}}
    p["timing"]["cache_policy"] = "warm"
    for d in p["defences"]:
        if d["check"] == "cache_flush":
            d["outcome"] = "not_applicable"
            d["detail"] = "the production call is L2-warm; both sides timed warm"
    return finalize(p)


@_control("A", "both sides replayed from CUDA graphs (100 replays each): launch overhead removed on both")
def h100_both_sides_cuda_graphs() -> Packet:
    p = h100_rmsnorm_decode_short_kernel()
    p.pop("packet_id")
    for c in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        c["cache"]["cuda_graph_replays"] = 100
    return finalize(p)


@_control(
    "A",
    "ncu's capture runs at base clocks: its kernel time is 18% above the timed median, within the stated 0.25",
)
def h100_ncu_base_clock_capture_within_tolerance() -> Packet:
    p = h100_bf16_gemm_vs_cublaslt()
    p.pop("packet_id")
    d = p["profiler"][0]["kernels"][0]["metrics"]["duration"]
    d["value"] = round(d["value"] * 1.18, 1)
    p["profiler"][0]["attributes"] = {"clock_control": "base", "sm_clock_mhz": 1485.0}
    return finalize(p)


@_control("A", "a second capture, of the baseline: it shows cuBLAS's kernel, as it should")
def h100_capture_of_baseline_shows_cublas() -> Packet:
    p = h100_bf16_gemm_vs_cublaslt()
    p.pop("packet_id")
    base = copy.deepcopy(p["profiler"][0])
    base["source"] = {
        "kind": "profile",
        "name": "baseline.ncu-rep",
        "sha256": digest("baseline.ncu-rep"),
        "path": "profiles/baseline.ncu-rep",
    }
    k = base["kernels"][0]
    k["name"] = "nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNN"
    k["metrics"]["duration"]["value"] = round(1.931e6 * 0.993, 1)
    base["of"] = {"side": "baseline", "shape_id": "m8192n8192k8192"}
    p["profiler"].append(base)
    return finalize(p)


@_control("A", "a split-K candidate launching two kernels per call; the capture sums both")
def h100_two_kernel_candidate_capture() -> Packet:
    p = h100_bf16_gemm_vs_cublaslt()
    p.pop("packet_id")
    cap = p["profiler"][0]
    main = cap["kernels"][0]
    main["name"] = "gemm_bf16_splitk2_main"
    main["metrics"]["duration"]["value"] = 1.2208e6
    cap["kernels"].append(
        {"name": "gemm_bf16_splitk2_reduce", "id": "1", "device": 0, "grid": [512, 1, 1], "block": [256, 1, 1],
         "metrics": {"duration": {"value": 0.5988e6, "unit": "ns"}}}
    )  # fmt: skip
    cap["of"]["expected_kernels"] = ["gemm_bf16_splitk2_main", "gemm_bf16_splitk2_reduce"]
    for d in p["defences"]:
        if d["check"] == "candidate_kernel_profiled":
            d["detail"] = "both split-K kernels seen in the capture of the timed call"
    return finalize(p)


@_control(
    "A",
    "the capture also holds the harness's own L2-flush kernel (a FillFunctor, 80 us per call), not the candidate's",
)
def h100_capture_with_harness_flush_kernel() -> Packet:
    p = h100_bf16_gemm_vs_cublaslt()
    p.pop("packet_id")
    p["profiler"][0]["kernels"].append(
        {"name": "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<int>, at::detail::Array<char*, 1>)",
         "id": "1", "device": 0, "grid": [65536, 1, 1], "block": [128, 1, 1],
         "metrics": {"duration": {"value": 80450.0, "unit": "ns"}}}
    )  # fmt: skip
    return finalize(p)


@_control("A", "a GEMM named `dense_layer_forward` whose dims are spelled M, N, K on every side")
def a100_dense_layer_uppercase_dims() -> Packet:
    op = gemm(4096, 4096, 4096, "fp16", ref_max=141.0)
    op["operator"] = "dense_layer_forward"
    op["shape"]["dims"] = {"M": 4096, "N": 4096, "K": 4096}
    return kernel_claim(
        "dense_fp16_a100_4096", "a100", op,
        cand_s=0.5521e-3, base_s=0.5733e-3, provider="cuBLAS", version="12.2.5.6",
        call="cublasGemmEx(fp16, N, T, 4096, 4096, 4096, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)",
        kernel="dense_fp16_sm80_128x128x32",
    )  # fmt: skip


@_control(
    "C",
    "top-k per row with dims named m, n, k (k is the k of top-k): FLOPs are comparisons, not 2mnk; over torch eager",
)
def h100_topk_rows_with_m_n_k_dims() -> Packet:
    m, n, k = 4096, 32768, 8
    op = {
        "operator": "topk_per_row",
        "description": "the k largest values of each row, and their indices",
        "shape": {
            "id": f"m{m}n{n}k{k}", "dims": {"m": m, "n": n, "k": k},
            "tensors": [
                {"name": "x", "shape": [m, n], "dtype": "bf16"},
                {"name": "values", "shape": [m, k], "dtype": "bf16"},
                {"name": "indices", "shape": [m, k], "dtype": "int64"},
            ],
            # about log2(k) comparisons per element: 3 * m * n
            "work": {"flops": {"value": float(3 * m * n), "unit": "FLOP"}, "bytes": {"value": float(m * n * 2 + m * k * 10), "unit": "B"}},
        },
        "dtypes": ["bf16"], "elements": m * k, "ref_max": 5.4, "atol": 0.0, "rtol": 0.0,
    }  # fmt: skip
    return kernel_claim(
        "topk8_rows_4096x32768", "h100", op,
        cand_s=0.1161e-3, base_s=0.1690e-3, provider="torch eager", version="2.5.1",
        call="torch.topk(x, k=8, dim=-1, sorted=True)",
        kernel="topk_radix_select_rows_k8",
    )  # fmt: skip


@_control(
    "A", "an nsys capture of the candidate that also holds the input upload (a 21 ms memcpy) and a memset"
)
def h100_nsys_capture_with_memcpy_and_memset() -> Packet:
    p = h100_bf16_gemm_vs_cublaslt()
    p.pop("packet_id")
    cap = p["profiler"][0]
    cap["tool"] = "nsys"
    cap["version"] = "2024.2.1"
    cap["source"] = {
        "kind": "trace",
        "name": "gemm.nsys-rep",
        "sha256": digest("gemm.nsys-rep"),
        "path": "profiles/gemm.nsys-rep",
    }
    cap["kernels"] = [
        {"name": "[CUDA memcpy Host-to-Device]", "id": "0", "device": 0, "category": "memcpy",
         "metrics": {"duration": {"value": 21.3e6, "unit": "ns"}}},
        {"name": "[CUDA memset]", "id": "1", "device": 0, "category": "memset",
         "metrics": {"duration": {"value": 6.1e3, "unit": "ns"}}},
        {**cap["kernels"][0], "id": "2"},
    ]  # fmt: skip
    return finalize(p)


# ---------------------------------------------------------------- AMD


@_control("A", "fp8 GEMM 8192^3 on MI300X at ~1.3 PFLOP/s over hipBLASLt, below the 2.6 PFLOP/s peak")
def mi300x_fp8_gemm_vs_hipblaslt() -> Packet:
    return kernel_claim(
        "gemm_fp8_mi300x_8192", "mi300x", gemm(8192, 8192, 8192, "fp8_e4m3fnuz", "bf16", ref_max=412.0),
        cand_s=0.8460e-3, base_s=0.9201e-3, provider="hipBLASLt", version="0.10.0",
        call="hipblasLtMatmul(fp8_e4m3fnuz, TN, m=n=k=8192, algo=heuristic top-1)",
        kernel="gemm_fp8_gfx942_256x256x128_mfma32", repeats=25,
    )  # fmt: skip


@_control("A", "bf16 GEMM on MI300X at ~700 TFLOP/s over rocBLAS")
def mi300x_bf16_gemm_vs_rocblas() -> Packet:
    return kernel_claim(
        "gemm_bf16_mi300x_8192", "mi300x", gemm(8192, 8192, 8192, ref_max=233.0),
        cand_s=1.5707e-3, base_s=1.6913e-3, provider="rocBLAS", version="4.2.4",
        call="rocblas_gemm_ex(bf16, N, T, 8192, 8192, 8192, compute=f32, algo=standard)",
        kernel="gemm_bf16_gfx942_256x128x64_mfma16",
    )  # fmt: skip


@_control("A", "attention forward on MI355X over AITER")
def mi355x_attention_vs_aiter() -> Packet:
    return kernel_claim(
        "attn_fwd_mi355x_s8192", "mi355x", attention(4, 32, 8192, 128),
        cand_s=3.0510e-3, base_s=3.3120e-3, provider="AITER", version="0.1.4",
        call="aiter.flash_attn_func(q, k, v, causal=False)",
        kernel="attn_fwd_gfx950_ws_256x128", repeats=41,
    )  # fmt: skip


@_control(
    "A", "one GCD of an MI250X (110 of the package's 220 CUs, 64 GiB): a partition, not a smaller device"
)
def mi250x_one_gcd_fp16_gemm_vs_rocblas() -> Packet:
    return kernel_claim(
        "gemm_fp16_mi250x_gcd0", "mi250x_gcd", gemm(4096, 4096, 4096, "fp16", ref_max=141.0),
        cand_s=1.0571e-3, base_s=1.1204e-3, provider="rocBLAS", version="4.1.2",
        call="rocblas_gemm_ex(f16, N, T, 4096, 4096, 4096, compute=f32, algo=standard)",
        kernel="gemm_fp16_gfx90a_128x128x32_mfma",
    )  # fmt: skip


# ---------------------------------------------------------------- TPU


def _tpu_paged(dev_key: str, name: str, cand_s: float, base_s: float, version: str) -> Packet:
    # decode with grouped KV heads: the KV cache (64 sequences x 4096 tokens x 8 KV heads x
    # 128 x bf16, K and V) is read once: 1.07 GB, the bulk of the bytes
    kv = 2 * 64 * 4096 * 8 * 128 * 2
    op = {
        "operator": "paged_attention_decode",
        "description": "ragged paged attention, one query token per sequence, 32 query / 8 KV heads",
        "shape": {
            "id": "b64_h32_kv8_d128_ctx4096",
            "dims": {"batch": 64, "heads": 32, "kv_heads": 8, "head_dim": 128, "context": 4096},
            "tensors": [
                {"name": "q", "shape": [64, 32, 128], "dtype": "bf16"},
                {"name": "k_pages", "shape": [8, 16384, 16, 128], "dtype": "bf16"},
                {"name": "v_pages", "shape": [8, 16384, 16, 128], "dtype": "bf16"},
            ],
            "work": {"flops": {"value": 4.0 * 64 * 32 * 4096 * 128, "unit": "FLOP"}, "bytes": {"value": float(kv + 2 * 64 * 32 * 128 * 2), "unit": "B"}},
        },
        "dtypes": ["bf16"], "elements": 64 * 32 * 128, "ref_max": 6.2, "atol": 0.02, "rtol": 0.02,
    }  # fmt: skip
    return kernel_claim(
        name, dev_key, op, cand_s=cand_s, base_s=base_s, provider="XLA", version=version,
        call="jax.jit(reference_paged_attention)(q, k_pages, v_pages, lengths, page_indices)",
        kernel="ragged_paged_attention_pallas", warmup=5, repeats=21, sigma=0.006,
        reference={"name": "jnp reference attention", "kind": "jax", "version": version.split()[-1]},
        argv=["python", "bench/paged_attention.py", "--batch", "64", "--context", "4096"],
    )  # fmt: skip


@_control("AB", "Pallas paged attention on TPU v5e over XLA, timed with xprof (no cache to flush)")
def tpu_v5e_paged_attention_vs_xla() -> Packet:
    return _tpu_paged("tpu_v5e", "ragged_paged_attention_v5e", 1.6211e-3, 2.0634e-3, "jaxlib 0.4.35")


@_control("AB", "Pallas paged attention on TPU v6e over XLA")
def tpu_v6e_paged_attention_vs_xla() -> Packet:
    return _tpu_paged("tpu_v6e", "ragged_paged_attention_v6e", 0.8107e-3, 1.0291e-3, "jaxlib 0.5.1")


@_control("AB", "bf16 matmul 8192^3 on TPU v6e at ~690 TFLOP/s (below 918) over XLA's jnp.dot")
def tpu_v6e_matmul_vs_xla() -> Packet:
    return kernel_claim(
        "pallas_matmul_v6e_8192", "tpu_v6e", gemm(8192, 8192, 8192, ref_max=181.0),
        cand_s=1.5935e-3, base_s=1.6610e-3, provider="XLA", version="jaxlib 0.5.1",
        call="jax.jit(jnp.dot, preferred_element_type=jnp.float32)(a, b.T).astype(jnp.bfloat16)",
        kernel="pallas_matmul_bf16_512x512x512", warmup=5, repeats=21, sigma=0.006,
        reference={"name": "jnp.dot", "kind": "jax", "version": "0.5.1"},
    )  # fmt: skip


# ---------------------------------------------------------------- CPU


@_control("A", "fp32 SGEMM on a 96-core EPYC at 5.1 TFLOP/s over OpenBLAS, peaks declared (no table entry)")
def cpu_epyc_sgemm_vs_openblas() -> Packet:
    return kernel_claim(
        "sgemm_znver4_4096", "epyc", gemm(4096, 4096, 4096, "fp32", ref_max=128.0),
        cand_s=26.95e-3, base_s=29.31e-3, provider="OpenBLAS", version="0.3.28",
        call="cblas_sgemm(RowMajor, NoTrans, Trans, 4096, 4096, 4096, 1.0, A, 4096, B, 4096, 0.0, C, 4096) with 96 threads",
        kernel="sgemm_avx512_6x64", warmup=5, repeats=31, sigma=0.02,
        reference={"name": "numpy.matmul (float64)", "kind": "numpy", "version": "2.1.3"},
    )  # fmt: skip


@_control("A", "bf16 AMX GEMM on a Xeon 8480+ at 40 TFLOP/s over oneDNN")
def cpu_xeon_amx_gemm_vs_onednn() -> Packet:
    return kernel_claim(
        "gemm_bf16_amx_4096", "xeon", gemm(4096, 4096, 4096, ref_max=131.0),
        cand_s=3.4360e-3, base_s=3.7904e-3, provider="oneDNN", version="3.6.1",
        call="dnnl::matmul(bf16, src 4096x4096, weights 4096x4096, dst bf16) on 56 threads",
        kernel="brgemm_amx_bf16_32x32", warmup=5, repeats=31, sigma=0.02,
    )  # fmt: skip


# ---------------------------------------------------------------- serving


@_control("AB", "vLLM 0.11 over vLLM 0.10.1 on one H100: Llama-3.1-8B, 1000 prompts, every request completed")
def serving_vllm_llama8b_h100() -> Packet:
    return serving_claim(
        "llama-3.1-8b-random-1024-128", "h100", model="meta-llama/Llama-3.1-8B-Instruct",
        engine=("vLLM", "0.11.0"), base_engine=("vLLM", "0.10.1"),
    )  # fmt: skip


@_control(
    "AB", "SGLang with tensor parallelism 8 on 8 H100s over vLLM, Llama-3.1-70B, 256 requests in flight"
)
def serving_sglang_tp8_llama70b() -> Packet:
    return serving_claim(
        "llama-3.1-70b-tp8-random", "h100", model="meta-llama/Llama-3.1-70B-Instruct",
        engine=("SGLang", "0.4.3"), base_engine=("vLLM", "0.11.0"), devices=8,
        prompts=2000, input_len=2048, output_len=256, duration_s=118.6, base_duration_s=131.9,
        ttft_ms=412.0, tpot_ms=31.5, settings={"mem_fraction_static": 0.88, "chunked_prefill_size": 8192},
        concurrency=256,
    )  # fmt: skip


@_control("AB", "vLLM on MI300X over an older vLLM ROCm build")
def serving_vllm_mi300x() -> Packet:
    return serving_claim(
        "qwen2.5-32b-mi300x-random", "mi300x", model="Qwen/Qwen2.5-32B-Instruct",
        engine=("vLLM", "0.11.0+rocm642"), base_engine=("vLLM", "0.9.2+rocm642"),
        prompts=500, input_len=1024, output_len=512, duration_s=92.4, base_duration_s=108.8,
        ttft_ms=236.0, tpot_ms=21.7,
    )  # fmt: skip


@_control(
    "AB", "a 0.5B model answers in 4 ms: a short prompt on a small model has a tiny prefill (0.13 GFLOP)"
)
def serving_small_model_fast_ttft() -> Packet:
    return serving_claim(
        "qwen2.5-0.5b-random-128-64", "h100", model="Qwen/Qwen2.5-0.5B-Instruct",
        engine=("vLLM", "0.11.0"), base_engine=("vLLM", "0.10.1"), input_len=128, output_len=64,
        duration_s=3.42, base_duration_s=3.97, ttft_ms=4.1, tpot_ms=2.9,
    )  # fmt: skip


@_control(
    "AB", "Mixtral-8x7B on two H100s, one request at a time: a 41 ms TTFT is possible (13B active, not 47B)"
)
def serving_mixtral_moe_low_concurrency_tp2() -> Packet:
    return serving_claim(
        "mixtral-8x7b-tp2-c1", "h100", model="mistralai/Mixtral-8x7B-Instruct-v0.1",
        engine=("vLLM", "0.11.0"), base_engine=("vLLM", "0.10.1"), devices=2, prompts=200,
        input_len=1024, output_len=128, duration_s=217.5, base_duration_s=241.0, ttft_ms=41.0,
        tpot_ms=7.9, concurrency=1, settings={"max_num_seqs": 8, "enable_chunked_prefill": True},
    )  # fmt: skip


@_control(
    "AB",
    "Qwen3-30B-A3B on one H100, one request at a time: 3B active parameters prefill 1024 tokens in 24 ms",
)
def serving_qwen3_moe_a3b_low_concurrency() -> Packet:
    return serving_claim(
        "qwen3-30b-a3b-c1", "h100", model="Qwen/Qwen3-30B-A3B", engine=("SGLang", "0.4.9"),
        base_engine=("vLLM", "0.11.0"), prompts=200, input_len=1024, output_len=256,
        duration_s=232.0, base_duration_s=262.0, ttft_ms=24.3, tpot_ms=4.3, concurrency=1,
        settings={"mem_fraction_static": 0.85},
    )  # fmt: skip


@_control(None, "2 of 1000 requests timed out behind a throughput claim, recorded as failed (0.2%)")
def serving_claim_with_two_timeouts() -> Packet:
    return serving_claim(
        "llama-3.1-8b-two-timeouts", "h100", model="meta-llama/Llama-3.1-8B-Instruct",
        engine=("vLLM", "0.11.0"), base_engine=("vLLM", "0.10.1"), failed=2,
    )  # fmt: skip


@_control("D", "a serving run with 23 failed requests that makes no claim: honest, and not a passed claim")
def serving_run_with_failures_no_claim() -> Packet:
    return serving_claim(
        "llama-3.1-8b-overload-probe", "h100", model="meta-llama/Llama-3.1-8B-Instruct",
        engine=("vLLM", "0.11.0"), base_engine=("vLLM", "0.11.0"), failed=23, claim=False,
        duration_s=44.8,
    )  # fmt: skip


@_control("D", "a serving run whose server crashed mid-run: status error, partial counts, no claim")
def serving_error_server_crashed() -> Packet:
    p = serving_claim(
        "llama-3.1-8b-crash", "h100", model="meta-llama/Llama-3.1-8B-Instruct",
        engine=("vLLM", "0.11.0"), base_engine=("vLLM", "0.11.0"), failed=688, claim=False,
        duration_s=12.9,
    )  # fmt: skip
    p.pop("packet_id")
    p["status"] = "error"
    p["failure"] = {
        "failure_class": "infra_error",
        "message": "engine core died: CUDA out of memory in the sampler after 312 requests",
    }
    return finalize(p)


# ---------------------------------------------------------------- honest failures and packets without claims


@_control("D", "a candidate that did not compile")
def failed_compile_error() -> Packet:
    op = gemm(4096, 4096, 4096)
    p = failure_packet(
        "gemm_cand_0093", "h100", op, status="failed", failure_class="compile_error",
        message="error: identifier \"__shfl_sync_bf16\" is undefined (gemm.cu:211)", compile_ok=False,
    )  # fmt: skip
    p.pop("packet_id")
    p["compile"]["log_excerpt"] = 'gemm.cu(211): error: identifier "__shfl_sync_bf16" is undefined'
    return finalize(p)


@_control("D", "a tolerance miss on one of two shapes, timed but claiming nothing")
def failed_tolerance_miss_timed() -> Packet:
    op = rowwise("softmax", 32, 4096, "fp16", ref_max=0.031, atol=0.001, rtol=0.001)
    tail = rowwise("softmax", 7, 1000, "fp16", ref_max=0.041, atol=0.001, rtol=0.001)
    bad = shape_result(tail)
    bad.update(
        {
            "passed": False,
            "max_abs_error": 0.0134,
            "max_rel_error": 0.33,
            "matched_ratio": 0.9986,
            "required_matched_ratio": 1.0,
        }
    )
    p = failure_packet(
        "softmax_cand_0415", "l40s", op, status="failed", failure_class="incorrect_numerical",
        message="max abs error 0.0134 > bound 0.00104 on shape r7c1000 (off-by-one in the tail loop)",
        shapes=[shape_result(op), bad], timed=True,
    )  # fmt: skip
    p.pop("packet_id")
    p["task"]["shapes"].append(copy.deepcopy(tail["shape"]))
    p["failure"]["shape_id"] = tail["shape"]["id"]
    return finalize(p)


@_control("D", "NaNs in the output of an fp8 candidate on MI300X")
def failed_nan_inf_mi300x() -> Packet:
    op = gemm(8192, 8192, 8192, "fp8_e4m3fnuz", "bf16", ref_max=412.0)
    bad = shape_result(op)
    bad.update(
        {
            "passed": False,
            "nan_seen": True,
            "max_abs_error": None,
            "max_rel_error": None,
            "matched_ratio": 0.874,
        }
    )
    bad = {k: v for k, v in bad.items() if v is not None}
    return failure_packet(
        "gemm_fp8_cand_0211", "mi300x", op, status="failed", failure_class="nan_inf",
        message="NaN in 12.6% of C: scale factor applied after the fp8 cast overflows", shapes=[bad],
    )  # fmt: skip


@_control(
    "D", "a candidate caught caching outputs by input fingerprint: the harness failed it, honestly recorded"
)
def failed_reward_hack_caught() -> Packet:
    op = gemm(4096, 4096, 4096)
    bad = shape_result(op)
    bad.update(
        {
            "passed": False,
            "max_abs_error": 312.0,
            "max_rel_error": 1.0,
            "matched_ratio": 0.0,
            "message": "unseen inputs: outputs of the previous inputs returned",
        }
    )
    p = failure_packet(
        "gemm_cand_0734", "h100", op, status="failed", failure_class="reward_hack",
        message="returned cached outputs keyed by a hash of the first 64 input bytes", shapes=[bad],
    )  # fmt: skip
    p.pop("packet_id")
    p["defences"] = [
        {
            "check": "unseen_inputs",
            "outcome": "failed",
            "detail": "8 of 8 unseen input sets got stale outputs",
            "tool": "acme-bench 3.2.0",
        },
        {"check": "fresh_inputs", "outcome": "passed", "tool": "acme-bench 3.2.0"},
    ]
    return finalize(p)


@_control("D", "the harness timed out the candidate on TPU")
def error_timeout_tpu() -> Packet:
    op = gemm(8192, 8192, 8192, ref_max=181.0)
    return failure_packet(
        "pallas_matmul_cand_0017", "tpu_v6e", op, status="error", failure_class="timeout",
        message="no result after 600 s (compilation did not finish)",
    )  # fmt: skip


@_control("D", "a profile-only packet: one ncu capture, no timing claim")
def h100_profile_only() -> Packet:
    dev = DEVICES["h100"]
    p = envelope("gemm_profile_8192", "kernel", "passed")
    p["task"] = {"operator": "gemm", "dtypes": ["bf16"]}
    p["profiler"] = [
        capture(dev, "gemm_bf16_tn_128x256_warpspecialized", "m8192n8192k8192", 1.83e-3, "gemm_profile_8192")
    ]
    p["hardware"] = copy.deepcopy(dev["hardware"])
    p["replay"] = replay(
        "gemm_profile_8192", dev, ["ncu", "--set", "full", "-o", "gemm", "python", "bench/run.py"]
    )
    return finalize(p)


@_control("D", "bare timings without a baseline or claim (a CPU micro-benchmark)")
def cpu_bare_timing_no_claim() -> Packet:
    p = cpu_epyc_sgemm_vs_openblas()
    p.pop("packet_id")
    t = p["timing"]
    del t["baseline"], t["speedup"]
    p.pop("profiler", None)
    return finalize(p)


# ---------------------------------------------------------------- migrated-looking (schema 0.1)


def _as_v01(p: Packet) -> Packet:
    """A packet as a 0.1 producer wrote it: no 0.2 fields, version 0.1, no id."""
    p = copy.deepcopy(p)
    p["schema_version"] = LEGACY
    for k in ("packet_id", "measured_at", "defences"):
        p.pop(k, None)
    t = p.get("timing") or {}
    t.pop("conditions", None)
    if "baseline" in t:
        t["baseline"].pop("conditions", None)
    for s in (t.get("stats"), (t.get("baseline") or {}).get("stats")):
        if s:
            s.pop("dropped", None)
    for cap in p.get("profiler") or []:
        cap.pop("of", None)
    hw = p.get("hardware") or {}
    hw.pop("device_id", None)
    hw.pop("last_level_cache", None)
    return p


@_control(None, "a 0.1 packet (no conditions, no defences, no id) as an old harness wrote it")
def migrated_v01_h100_gemm() -> Packet:
    return _as_v01(h100_bf16_gemm_vs_cublaslt())


@_control(None, "a minimal 0.1 serving packet: no conditions, summary statistics only")
def migrated_v01_serving_minimal() -> Packet:
    p = _as_v01(serving_vllm_llama8b_h100())
    del (
        p["cost"],
        p["timing"]["stats"]["ci_low"],
        p["timing"]["stats"]["ci_high"],
        p["timing"]["stats"]["ci_level"],
    )
    return p


@_control(None, "a minimal 0.1 failure: status, failure, hardware and replay, nothing else")
def migrated_v01_minimal_failure() -> Packet:
    return {
        "schema_version": LEGACY,
        "created_at": "2025-06-02T14:00:00Z",
        "producer": {"name": "kb-eval", "version": "0.0.9"},
        "subject": {"kind": "kernel", "name": "level1_23_softmax_cand_7"},
        "status": "error",
        "failure": {
            "failure_class": "runtime_error",
            "message": "CUDA error: an illegal memory access was encountered",
        },
        "hardware": {"vendor": "nvidia", "device": "NVIDIA L40S", "arch": "sm_89", "count": 1},
        "replay": {
            "command": ["python", "scripts/run_and_check.py", "level=1", "problem_id=23"],
            "repository": {"commit": hex40("kb-eval")},
        },
    }
