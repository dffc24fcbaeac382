"""Red team: cheats and controls written apart from ``_adv_cheats`` / ``_adv_controls``.

The lies here take other forms than the main suite's: another unit on one side (stats in
seconds, energy in kWh, work in TFLOP, a duration in minutes), the lie carried by a field
the main suite leaves alone (a capture's side, a stated tolerance, a partition count, a
replay that only prints what it would run), placed on the baseline or in one side's
conditions only, and packets migrated from 0.1. The controls look odd and are honest: a
sub-microsecond kernel replayed from CUDA graphs, a 400x speedup over a per-row reference
loop (graded C, never rejected), one XCD partition of an MI300X, an eight-chip TPU host,
an Arm CPU, a serving run with 0.5% failed requests, sizes given in other units.

Same convention as ``test_adversarial``: a cheat is caught when a finding points at a lying
field (or a non-root parent, or a child) and the packet is invalid or graded C or lower; a
control has no error finding, on the model path and on the fast path (file bytes).
"""

from __future__ import annotations

import copy
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from _adv_build import (
    DEVICES,
    LEGACY,
    Packet,
    finalize,
    gemm,
    kernel_claim,
    recompute_speedup,
    rowwise,
    scale_side,
    serving_claim,
    set_side_samples,
)
from _adv_cheats import CLASSES
from _adv_controls import CONTROLS
from _adv_judge import Verdict, judge

from kernel_evidence.models import EvidencePacket

# ================================================================ registries


@dataclass(frozen=True)
class RedControl:
    name: str
    build: Callable[[], Packet]
    grades: str  # the letters it may get ("" for any)
    about: str


@dataclass(frozen=True)
class RedCheat:
    name: str
    klass: str
    control: str
    pointers: tuple[str, ...]
    mutate: Callable[[Packet], None]
    lie: str
    structural: bool = False


RED_CONTROLS: dict[str, RedControl] = {}
RED_CHEATS: dict[str, RedCheat] = {}


def red_control(grades: str, about: str) -> Callable[[Callable[[], Packet]], Callable[[], Packet]]:
    def register(fn: Callable[[], Packet]) -> Callable[[], Packet]:
        assert fn.__name__ not in RED_CONTROLS and fn.__name__ not in CONTROLS, fn.__name__
        RED_CONTROLS[fn.__name__] = RedControl(fn.__name__, fn, grades, about)
        return fn

    return register


def red_cheat(
    klass: str, control: str, *pointers: str, structural: bool = False
) -> Callable[[Callable[[Packet], None]], Callable[[Packet], None]]:
    assert klass in CLASSES, klass

    def register(fn: Callable[[Packet], None]) -> Callable[[Packet], None]:
        assert fn.__name__ not in RED_CHEATS, fn.__name__
        lie = " ".join((fn.__doc__ or "").split())
        RED_CHEATS[fn.__name__] = RedCheat(fn.__name__, klass, control, pointers, fn, lie, structural)
        return fn

    return register


def _control_packet(name: str) -> Packet:
    c = RED_CONTROLS.get(name)
    return copy.deepcopy(c.build() if c is not None else CONTROLS[name].build())


def build_red_cheat(c: RedCheat) -> Packet:
    """The control with its one lie and, as a cheater would hand it in, a fresh id."""
    p = _control_packet(c.control)
    c.mutate(p)
    if c.structural or p["schema_version"] == LEGACY:
        p.pop("packet_id", None)
        return p
    return finalize(p)


# ================================================================ small helpers


def _t(p: Packet) -> dict[str, Any]:
    return p["timing"]


def _b(p: Packet) -> dict[str, Any]:
    return p["timing"]["baseline"]


def _both(p: Packet) -> list[dict[str, Any]]:
    t = p["timing"]
    return [c for c in (t.get("conditions"), t.get("baseline", {}).get("conditions")) if c]


def _restate(st: dict[str, Any], unit: str, factor: float) -> None:
    """Every time of a statistics block times ``factor``, in ``unit`` (an honest conversion
    when ``factor`` is the units' ratio; a lie when it is not)."""
    st["unit"] = unit
    for k in ("median", "mean", "min", "max", "std", "ci_low", "ci_high"):
        if k in st:
            st[k] = st[k] * factor
    if "percentiles" in st:
        st["percentiles"] = {k: v * factor for k, v in st["percentiles"].items()}
    if "samples" in st:
        st["samples"] = [x * factor for x in st["samples"]]


def _on_device(key: str, dev: dict[str, Any], build: Callable[[], Packet]) -> Packet:
    """``build()`` with ``dev`` lent to the shared device table under ``key`` (and taken back)."""
    assert key not in DEVICES, key
    DEVICES[key] = dev
    try:
        return build()
    finally:
        del DEVICES[key]


def _defence(p: Packet, check: str) -> dict[str, Any]:
    return next(d for d in p["defences"] if d["check"] == check)


# ================================================================ honest controls


@red_control(
    "A", "both sides' statistics in seconds, the baseline's in milliseconds: units differ, times agree"
)
def h100_gemm_stats_in_other_units() -> Packet:
    p = _control_packet("h100_bf16_gemm_vs_cublaslt")
    _restate(_t(p)["stats"], "s", 1e-3)
    _restate(_b(p)["stats"], "us", 1e3)
    return finalize(p)


@red_control(
    "AB", "a 0.8 us copy kernel of one decode row replayed 1000 times from CUDA graphs on both sides (A100)"
)
def a100_sub_microsecond_kernel_cuda_graphs() -> Packet:
    op = rowwise("rmsnorm", 1, 4096, ref_max=4.2)
    p = kernel_claim(
        "rmsnorm_decode_row_a100_graphs", "a100", op,
        cand_s=0.81e-6, base_s=1.12e-6, provider="Transformer Engine", version="1.7.0",
        call="transformer_engine.pytorch.RMSNorm(4096)(x) captured in a CUDA graph",
        kernel="rmsnorm_one_row_vec8", repeats=101, sigma=0.03,
    )  # fmt: skip
    p.pop("packet_id")
    for c in _both(p):
        c["cache"] = {"mode": "warm", "cuda_graph_replays": 1000}
    _t(p)["cache_policy"] = "warm"
    for d in p["defences"]:
        if d["check"] == "cache_flush":
            d["outcome"] = "not_applicable"
            d["detail"] = "a decode row stays in L2 in a model too: warm on both sides, said so"
    return finalize(p)


@red_control(
    "C", "a real 400x over a per-row Python loop reference: huge, honest, and graded C (a reference)"
)
def h100_400x_over_naive_loop_reference() -> Packet:
    op = rowwise("softmax", 8192, 1024, ref_max=0.021, atol=0.0, rtol=0.01)
    return kernel_claim(
        "softmax_rows_vs_python_loop", "h100", op,
        cand_s=11.8e-6, base_s=4.72e-3, provider="torch eager", version="2.5.1",
        call="torch.stack([torch.softmax(row, -1) for row in x])",
        kernel="softmax_rows_1024_warp_per_row",
    )  # fmt: skip


def _mi300x_cpx() -> dict[str, Any]:
    """One XCD of an MI300X in CPX mode: 38 CUs, an eighth of the memory and of the peak."""
    dev = copy.deepcopy(DEVICES["mi300x"])
    hw = dev["hardware"]
    hw["compute_units"] = 38
    hw["partitions"] = 8
    hw["memory"] = {"value": 24.0, "unit": "GiB"}
    dev["power_avg"] = 80.0
    return dev


@red_control(
    "AB", "one CPX partition of an MI300X (38 CUs, 24 GiB): fp16 GEMM at 130 TFLOP/s, an eighth's share"
)
def mi300x_cpx_partition_gemm() -> Packet:
    return _on_device("mi300x_cpx", _mi300x_cpx(), lambda: kernel_claim(
        "gemm_fp16_mi300x_cpx_4096", "mi300x_cpx", gemm(4096, 4096, 4096, "fp16", ref_max=129.0),
        cand_s=1.0573e-3, base_s=1.1412e-3, provider="hipBLASLt", version="0.10.0",
        call="hipblasLtMatmul(fp16, TN, m=n=k=4096, algo=heuristic top-1) on one CPX partition",
        kernel="gemm_fp16_gfx942_cpx_128x128x64", repeats=31,
    ))  # fmt: skip


@red_control("AB", "the CPX partition again, its split not recorded: 38 CUs and 24 GiB say it is an eighth")
def mi300x_cpx_partition_split_unrecorded() -> Packet:
    p = mi300x_cpx_partition_gemm()
    p.pop("packet_id")
    del p["hardware"]["partitions"]
    return finalize(p)


@red_control("AB", "all eight CPX partitions of one MI300X (count 8, 38 CUs each): the whole device's rate")
def mi300x_all_eight_cpx_partitions() -> Packet:
    p = mi300x_cpx_partition_gemm()
    p.pop("packet_id")
    p["hardware"]["count"] = 8
    for c in _both(p):
        c["device_count"] = 8
    p["replay"]["env"] = {"HIP_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    scale_side(p, "candidate", 1 / 7)
    scale_side(p, "baseline", 1 / 7)
    return finalize(p)


@red_control("AB", "sixteen H100s on two nodes (eight visible on each, NNODES=2), profiled on rank 0")
def h100_two_nodes_sixteen_gpus() -> Packet:
    p = h100_eight_gpus_rank0_profiled()
    p.pop("packet_id")
    p["hardware"]["count"] = 16
    for c in _both(p):
        c["device_count"] = 16
    p["replay"]["env"] = {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "NNODES": "2", "NODE_RANK": "0"}
    scale_side(p, "candidate", 0.5)
    scale_side(p, "baseline", 0.5)
    return finalize(p)


@red_control(
    "AB", "a TPU v5e slice of four hosts (TPU_WORKER_HOSTNAMES), four chips visible on each: 16 chips"
)
def tpu_v5e_four_hosts() -> Packet:
    p = tpu_v5e_eight_chips_visible()
    p.pop("packet_id")
    p["hardware"]["count"] = 16
    for c in _both(p):
        c["device_count"] = 16
    p["replay"]["env"] = {
        "TPU_WORKER_HOSTNAMES": "t0,t1,t2,t3",
        "TPU_WORKER_ID": "0",
        "TPU_VISIBLE_CHIPS": "0,1,2,3",
    }
    p["profiler"][0]["kernels"] = p["profiler"][0]["kernels"][:4]
    scale_side(p, "candidate", 0.5)
    scale_side(p, "baseline", 0.5)
    return finalize(p)


@red_control("AB", "a TPU v5e host of eight chips, all eight visible and counted: a matmul sharded over them")
def tpu_v5e_eight_chips_visible() -> Packet:
    p = kernel_claim(
        "pallas_matmul_v5e_8chips", "tpu_v5e", gemm(16384, 16384, 16384, ref_max=254.0),
        cand_s=7.9e-3, base_s=8.4e-3, provider="XLA", version="jaxlib 0.4.35",
        call="jax.jit(jnp.dot, in_shardings=NamedSharding(mesh8, P('x', None)))(a, b.T)",
        kernel="pallas_matmul_sharded_x8", warmup=5, repeats=21, sigma=0.006,
        reference={"name": "jnp.dot", "kind": "jax", "version": "0.4.35"},
    )  # fmt: skip
    p.pop("packet_id")
    p["hardware"]["count"] = 8
    for c in _both(p):
        c["device_count"] = 8
    p["replay"]["env"] = {"TPU_VISIBLE_CHIPS": "0,1,2,3,4,5,6,7", "TPU_CHIPS_PER_PROCESS_BOUNDS": "2,4,1"}
    cap = p["profiler"][0]
    k0 = cap["kernels"][0]
    cap["kernels"] = [{**copy.deepcopy(k0), "id": str(i), "device": i} for i in range(8)]
    return finalize(p)


@red_control("AB", "a GEMM sharded over eight H100s, all eight visible, profiled on rank 0 only (as usual)")
def h100_eight_gpus_rank0_profiled() -> Packet:
    p = kernel_claim(
        "gemm_bf16_tp8_32768", "h100", gemm(32768, 32768, 8192, ref_max=201.0),
        cand_s=2.61e-3, base_s=2.84e-3, provider="cuBLASLt", version="12.4.5.8",
        call="cublasLtMatmul(bf16, m=4096 per rank, n=32768, k=8192) on each of 8 ranks",
        kernel="gemm_bf16_tn_128x256_warpspecialized",
    )  # fmt: skip
    p.pop("packet_id")
    p["hardware"]["count"] = 8
    for c in _both(p):
        c["device_count"] = 8
    p["replay"]["env"] = {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    p["profiler"][0]["attributes"] = {"ranks_profiled": "0"}
    return finalize(p)


@red_control(
    "AB", "an Arm server CPU (Graviton3, 64 cores) with its peaks declared, over OpenBLAS, host clock"
)
def cpu_graviton3_sgemm_vs_openblas() -> Packet:
    graviton3 = {
        **copy.deepcopy(DEVICES["epyc"]),
        "hardware": {
            "vendor": "cpu",
            "device": "AWS Graviton3 (Neoverse V1)",
            "arch": "aarch64 (neoverse-v1)",
            "count": 1,
            "compute_units": 64,
            "memory": {"value": 256.0, "unit": "GiB"},
            "last_level_cache": {"value": 32.0, "unit": "MiB"},
            # 64 cores x 2.6 GHz x 32 fp32 FLOP/cycle (two 256-bit SVE FMA pipes); 8 x DDR5-4800
            "peak_flop_rate": {"value": 5.32, "unit": "TFLOP/s"},
            "peak_bandwidth": {"value": 307.2, "unit": "GB/s"},
            "clocks": {"locked": False, "sm_observed": {"value": 2600.0, "unit": "MHz"}},
        },
        "llc_mib": 32,
        "flush_mib": 128,
        "compiler": {"name": "gcc", "version": "13.2.0"},
        "target": "neoverse-v1",
        "image": "ghcr.io/acme/cpu-bench-arm64:2026.10",
    }
    return _on_device("graviton3", graviton3, lambda: kernel_claim(
        "sgemm_neoverse_v1_4096", "graviton3", gemm(4096, 4096, 4096, "fp32", ref_max=128.0),
        cand_s=41.3e-3, base_s=44.9e-3, provider="OpenBLAS", version="0.3.28",
        call="cblas_sgemm(RowMajor, NoTrans, Trans, 4096, 4096, 4096, 1.0, A, 4096, B, 4096, 0.0, C, 4096) with 64 threads",
        kernel="sgemm_sve_8x24", warmup=5, repeats=31, sigma=0.02,
        reference={"name": "numpy.matmul (float64)", "kind": "numpy", "version": "2.1.3"},
    ))  # fmt: skip


@red_control("AB", "5 of 1000 requests failed (0.5%) behind a throughput claim, and said so")
def serving_half_percent_failed() -> Packet:
    return serving_claim(
        "llama-3.1-8b-five-failed", "h100", model="meta-llama/Llama-3.1-8B-Instruct",
        engine=("vLLM", "0.11.0"), base_engine=("vLLM", "0.10.1"), failed=5,
    )  # fmt: skip


@red_control(
    "AB", "a serving baseline whose settings name the model by its local path and restate the workload"
)
def serving_baseline_settings_local_model_path() -> Packet:
    p = _control_packet("serving_vllm_llama8b_h100")
    p.pop("packet_id")
    _b(p)["settings"].update(model="/models/llama-3.1-8b-instruct", max_concurrency=64, request_rate="inf")
    return finalize(p)


@red_control("AB", "a serving run with its durations and latencies in milliseconds and energy in Wh")
def serving_in_milliseconds_and_wh() -> Packet:
    p = _control_packet("serving_vllm_llama8b_h100")
    p.pop("packet_id")
    for sv in (_t(p)["serving"], _b(p)["serving"]):
        sv["duration"] = {"value": sv["duration"]["value"] * 1e3, "unit": "ms"}
    _restate(_t(p)["serving"]["ttft"], "s", 1e-3)
    en = p["cost"]["energy"]
    en["energy"] = {"value": en["energy"]["value"] / 3600.0, "unit": "Wh"}
    en["window"] = {"value": en["window"]["value"] * 1e3, "unit": "ms"}
    return finalize(p)


@red_control("AB", "a conv2d (NHWC, 3x3) on A100 over cuDNN, its FLOPs from the conv dims")
def a100_conv2d_vs_cudnn() -> Packet:
    n, c, k, hw, r = 32, 256, 256, 56, 3
    flops = 2.0 * n * k * hw * hw * c * r * r
    op = {
        "operator": "conv2d",
        "description": "3x3 convolution, stride 1, pad 1, NHWC, fp16 in, fp32 accumulate",
        "shape": {
            "id": "n32c256k256hw56r3", "dims": {"n": n, "c": c, "k": k, "p": hw, "q": hw, "r": r, "s": r},
            "tensors": [
                {"name": "x", "shape": [n, hw, hw, c], "dtype": "fp16"},
                {"name": "w", "shape": [k, r, r, c], "dtype": "fp16"},
                {"name": "y", "shape": [n, hw, hw, k], "dtype": "fp16"},
            ],
            "work": {"flops": {"value": flops, "unit": "FLOP"}},
        },
        "dtypes": ["fp16"], "elements": n * hw * hw * k, "ref_max": 61.0, "atol": 0.01, "rtol": 0.01,
    }  # fmt: skip
    return kernel_claim(
        "conv3x3_nhwc_fp16_a100", "a100", op,
        cand_s=0.641e-3, base_s=0.702e-3, provider="cuDNN", version="9.1.0",
        call="cudnnConvolutionForward(NHWC fp16, 3x3, pad 1, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)",
        kernel="conv3x3_implicit_gemm_nhwc_128x128",
    )  # fmt: skip


@red_control("", "a 0.1 packet of a CPU benchmark (no conditions, no defences), migrated as it is read")
def migrated_v01_cpu_timing() -> Packet:
    p = _control_packet("migrated_v01_h100_gemm")
    src = _control_packet("cpu_epyc_sgemm_vs_openblas")
    for k in ("task", "hardware", "validation", "compile"):
        p[k] = src[k]
    del p["hardware"]["last_level_cache"]  # a 0.2 field
    t = src["timing"]
    t.pop("conditions", None)
    t["baseline"].pop("conditions", None)
    p["timing"] = t
    p.pop("profiler", None)
    p["replay"] = {"command": src["replay"]["command"], "repository": src["replay"]["repository"]}
    return p


@red_control("A", "a 2-D GEMM whose FLOPs are given in TFLOP and whose bytes in MiB")
def h100_gemm_work_in_tflop_and_mib() -> Packet:
    p = _control_packet("h100_bf16_gemm_vs_cublaslt")
    w = p["task"]["shapes"][0]["work"]
    w["flops"] = {"value": w["flops"]["value"] / 1e12, "unit": "TFLOP"}
    w["bytes"] = {"value": w["bytes"]["value"] / 2**20, "unit": "MiB"}
    return finalize(p)


@red_control("AB", "a fused gated MLP (x, W_gate, W_up, out): two contractions, so twice one GEMM's FLOPs")
def h100_fused_gated_mlp_two_contractions() -> Packet:
    m, n, k = 256, 14336, 4096
    op = {
        "operator": "fused_gate_up_mlp",
        "description": "silu(x @ Wg^T) * (x @ Wu^T), bf16",
        "shape": {
            "id": f"m{m}n{n}k{k}", "dims": {"m": m, "n": n, "k": k},
            "tensors": [
                {"name": "x", "shape": [m, k], "dtype": "bf16"},
                {"name": "w_gate", "shape": [n, k], "dtype": "bf16"},
                {"name": "w_up", "shape": [n, k], "dtype": "bf16"},
                {"name": "out", "shape": [m, n], "dtype": "bf16"},
            ],
            "work": {"flops": {"value": float(2 * 2 * m * n * k), "unit": "FLOP"}},
        },
        "dtypes": ["bf16"], "elements": m * n, "ref_max": 9.5, "atol": 0.02, "rtol": 0.02,
    }  # fmt: skip
    return kernel_claim(
        "gated_mlp_up_m256", "h100", op,
        cand_s=0.1071e-3, base_s=0.1297e-3, provider="cuBLASLt", version="12.4.5.8",
        call="two cublasLtMatmul(bf16, m=256, n=14336, k=4096) and a silu-mul epilogue kernel",
        kernel="gated_mlp_bf16_persistent",
    )  # fmt: skip


# ================================================================ cheats: degenerate timings


@red_cheat("degenerate_timings", "h100_bf16_gemm_vs_cublaslt", "/timing/stats/unit", "/timing/stats")
def candidate_ms_relabelled_us(p: Packet) -> None:
    """The candidate's statistics block says ``us`` over numbers measured in ms: the kernel
    is 1000x faster on paper and the claim becomes 1054x."""
    _t(p)["stats"]["unit"] = "us"
    recompute_speedup(p)


@red_cheat(
    "degenerate_timings", "a100_fp16_gemm_vs_cublas", "/timing/baseline/stats/unit", "/timing/baseline/stats",
    "/timing/speedup",
)  # fmt: skip
def baseline_ms_relabelled_seconds(p: Packet) -> None:
    """The baseline's block says ``s`` over its millisecond numbers: cuBLAS took 0.57 s a call
    on paper, and the claim is over 1000x."""
    _b(p)["stats"]["unit"] = "s"
    recompute_speedup(p)
    p["cost"]["gpu_time"]["value"] = round(p["cost"]["gpu_time"]["value"] * 1000, 1)
    p["cost"]["wall_time"]["value"] = round(p["cost"]["wall_time"]["value"] * 1000, 1)
    p["cost"]["energy"]["window"]["value"] = p["cost"]["gpu_time"]["value"]
    p["cost"]["energy"]["energy"]["value"] = round(p["cost"]["energy"]["energy"]["value"] * 1000, 1)


@red_cheat("degenerate_timings", "h100_rmsnorm_decode_short_kernel", "/timing/stats")
def candidate_in_seconds_below_a_launch(p: Packet) -> None:
    """The candidate's time written in seconds (4e-7 s): a 0.4 us kernel timed with CUDA
    events and no graph, below what a launch costs."""
    st = _t(p)["stats"]
    xs = [round(x * 0.19e-6, 12) for x in st["samples"]]  # us -> s, and 5x faster
    set_side_samples(p, "candidate", xs, "s")


@red_cheat("degenerate_timings", "mi300x_bf16_gemm_vs_rocblas", "/timing/stats/samples", "/timing/stats")
def candidate_samples_one_value_in_ns(p: Packet) -> None:
    """Every candidate sample is the same number of nanoseconds to a tenth of a ns: a timer
    returning a constant (a patched ``elapsed_time``) written in ns."""
    st = _t(p)["stats"]
    v = round(st["median"] * {"us": 1e3, "ms": 1e6}[st["unit"]], 1)
    set_side_samples(p, "candidate", [v] * st["n"], "ns")


@red_cheat(
    "degenerate_timings",
    "h100_bf16_gemm_vs_cublaslt",
    "/timing/stats/samples",
    "/timing/stats/min",
    "/timing/stats",
)
def two_calls_timed_at_zero(p: Packet) -> None:
    """Two candidate calls recorded as 0 ms (an aggregator underflow, GPU MODE #162); the
    median of the rest still looks plausible."""
    st = _t(p)["stats"]
    xs = list(st["samples"])
    xs[3] = xs[9] = 0.0
    set_side_samples(p, "candidate", xs, st["unit"])


@red_cheat(
    "degenerate_timings",
    "h200_attention_vs_flashattention",
    "/timing/conditions/warmup",
    "/timing/baseline/conditions/warmup",
)
def no_warmup_in_the_conditions_only(p: Packet) -> None:
    """The flat ``warmup`` still says 20; both sides' conditions record none (the first,
    compiling call of each side is timed)."""
    for c in _both(p):
        c["warmup"] = 0


@red_cheat(
    "degenerate_timings", "b200_fp8_gemm_vs_cublaslt", "/timing/baseline/stats", "/timing/baseline/stats/n",
    "/timing/baseline/conditions/repeats",
)  # fmt: skip
def baseline_timed_once(p: Packet) -> None:
    """The baseline was timed once (its first call), the candidate 51 times."""
    st = _b(p)["stats"]
    set_side_samples(p, "baseline", [round(st["max"] * 1.4, 4)], st["unit"])


# ================================================================ cheats: cherry-picked statistics


@red_cheat(
    "cherry_picked_statistics", "a100_fp16_gemm_vs_cublas", "/timing/stats/dropped", "/timing/stats",
    "/timing/conditions/sample_handling",
)  # fmt: skip
def candidate_drops_slowest_tenth_says_all(p: Packet) -> None:
    """The candidate's 5 slowest of 51 samples dropped (``dropped: 5``), while both sides'
    conditions say every sample was kept."""
    st = _t(p)["stats"]
    kept = sorted(st["samples"])[:-5]
    set_side_samples(p, "candidate", kept, st["unit"], dropped=5)


@red_cheat(
    "cherry_picked_statistics", "h100_fp8_gemm_vs_cublaslt", "/timing/speedup/basis", "/timing/stats",
    "/timing/speedup",
)  # fmt: skip
def min_basis_in_seconds(p: Packet) -> None:
    """Statistics restated in seconds, one candidate sample at 0.55x the rest, and the claim
    moved to the minimum."""
    _restate(_t(p)["stats"], "s", 1e-3)
    _restate(_b(p)["stats"], "s", 1e-3)
    st = _t(p)["stats"]
    xs = list(st["samples"])
    xs[11] = xs[11] * 0.55
    set_side_samples(p, "candidate", xs, "s")
    _t(p)["speedup"]["basis"] = "min"
    recompute_speedup(p)


@red_cheat(
    "cherry_picked_statistics", "h100_bf16_gemm_vs_cublaslt", "/timing/speedup/basis",
    "/timing/baseline/stats/mean", "/timing/baseline/stats", "/timing/speedup",
)  # fmt: skip
def mean_basis_baseline_summary_without_samples(p: Packet) -> None:
    """The baseline keeps only a summary whose mean is 1.9x its median (a few multi-ms
    stalls it will not show) and the claim is on the mean."""
    st = _b(p)["stats"]
    for k in ("samples", "std"):
        st.pop(k, None)
    st["mean"] = round(st["median"] * 1.9, 4)
    st["max"] = round(st["median"] * 30, 4)
    _t(p)["speedup"]["basis"] = "mean"
    recompute_speedup(p)


# ================================================================ cheats: mismatched baseline


@red_cheat(
    "mismatched_baseline", "h100_bf16_gemm_vs_cublaslt", "/timing/conditions/device_count",
    "/timing/baseline/conditions/device_count",
)  # fmt: skip
def candidate_on_two_gpus_baseline_on_one(p: Packet) -> None:
    """The candidate split the GEMM over two H100s (its time halves); the baseline ran on one;
    the packet says so only in the device counts."""
    p["hardware"]["count"] = 2
    p["replay"]["env"] = {"CUDA_VISIBLE_DEVICES": "0,1"}
    _t(p)["conditions"]["device_count"] = 2
    scale_side(p, "candidate", 0.52)
    cap = p["profiler"][0]
    cap["kernels"].append({**copy.deepcopy(cap["kernels"][0]), "id": "1", "device": 1})


@red_cheat("mismatched_baseline", "h100_bf16_gemm_vs_cublaslt", "/timing/baseline/conditions/dtypes")
def baseline_dtype_spelled_torch_float32(p: Packet) -> None:
    """The baseline ran in fp32, written as ``torch.float32`` beside the candidate's ``bf16``."""
    _b(p)["conditions"]["dtypes"] = ["torch.float32"]
    scale_side(p, "baseline", 3.1)


@red_cheat(
    "mismatched_baseline", "h100_bf16_gemm_vs_cublaslt", "/timing/baseline/conditions/device_id",
    "/timing/baseline/conditions",
)  # fmt: skip
def baseline_device_only_as_an_a100_id(p: Packet) -> None:
    """The baseline's conditions name no device, only the id of an A100 (where it was timed)."""
    c = _b(p)["conditions"]
    del c["device"]
    c["device_id"] = "nvidia-a100-sxm4-80gb"
    scale_side(p, "baseline", 2.4)


@red_cheat(
    "mismatched_baseline", "mi300x_bf16_gemm_vs_rocblas", "/timing/baseline/conditions/warmup",
    "/timing/baseline/conditions",
)  # fmt: skip
def baseline_without_warmup_candidate_warm(p: Packet) -> None:
    """The baseline's conditions record no warmup (each call paid rocBLAS's first-call
    setup); the candidate had 20."""
    _b(p)["conditions"]["warmup"] = 0
    scale_side(p, "baseline", 1.6)


@red_cheat(
    "mismatched_baseline", "h100_bf16_gemm_vs_cublaslt", "/timing/conditions/cache",
    "/timing/conditions/cache/rotating_buffers", "/timing/conditions/cache/mode",
)  # fmt: skip
def candidate_rotates_one_buffer(p: Packet) -> None:
    """The candidate 'rotates' through one input buffer (so its inputs stay in L2) against a
    flushed baseline."""
    _t(p)["conditions"]["cache"] = {"mode": "rotating", "rotating_buffers": 1}
    _t(p).pop("cache_policy", None)
    scale_side(p, "candidate", 0.8)


@red_cheat(
    "mismatched_baseline", "mi300x_bf16_gemm_vs_rocblas", "/timing/baseline/provider", "/timing/baseline"
)
def onednn_baseline_on_an_mi300x(p: Packet) -> None:
    """The baseline is Intel's oneDNN, named on an AMD GPU: it ran on the host CPU."""
    b = _b(p)
    b["provider"] = "oneDNN"
    b["version"] = "3.6.1"
    b["call"] = "dnnl::matmul(bf16, 8192x8192x8192)"


@red_cheat(
    "mismatched_baseline", "serving_vllm_mi300x", "/timing/baseline/engine/version", "/timing/baseline/engine"
)
def serving_baseline_engine_version_main(p: Packet) -> None:
    """The baseline engine's version is ``main`` (whatever the branch held that day)."""
    _b(p)["engine"]["version"] = "main"


@red_cheat(
    "mismatched_baseline", "serving_vllm_llama8b_h100", "/timing/baseline/serving/total_output_tokens",
    "/timing/baseline/serving",
)  # fmt: skip
def serving_baseline_stopped_early_on_eos(p: Packet) -> None:
    """The baseline's requests stopped at EOS after ~70 tokens (the candidate's ran the full
    128 with ``ignore_eos``): fewer tokens per second from the same server."""
    sv = _b(p)["serving"]
    dur = sv["duration"]["value"]
    sv["total_output_tokens"] = 1000 * 70
    sv["output_throughput"]["value"] = round(70000 / dur, 2)
    sv["total_token_throughput"]["value"] = round((sv["total_input_tokens"] + 70000) / dur, 2)
    recompute_speedup(p)


@red_cheat(
    "mismatched_baseline", "h100_bf16_gemm_vs_cublaslt", "/timing/conditions/clock_policy",
    "/timing/baseline/conditions/clock_policy",
)  # fmt: skip
def candidate_boosting_baseline_pinned(p: Packet) -> None:
    """The baseline ran with clocks locked (1755 MHz), the candidate with them free to boost
    (1980 MHz): a tenth of the 'speedup' is the clock."""
    _t(p)["conditions"]["clock_policy"] = "unlocked"
    _t(p)["clock_policy"] = "unlocked"
    scale_side(p, "candidate", 0.89)


@red_cheat(
    "cherry_picked_statistics", "h100_bf16_gemm_vs_cublaslt", "/timing/stats/n", "/timing/stats",
    "/timing/stats/samples",
)  # fmt: skip
def candidate_keeps_its_fastest_21_of_51_unsaid(p: Packet) -> None:
    """The candidate timed 51 calls and kept its 21 fastest, with no ``dropped`` and every
    side saying ``sample_handling: all``; the baseline kept all 51."""
    st = _t(p)["stats"]
    set_side_samples(p, "candidate", sorted(st["samples"])[:21], st["unit"])
    _t(p)["repeats"] = 51
    _t(p)["conditions"]["repeats"] = 51


@red_cheat(
    "mismatched_baseline", "serving_vllm_llama8b_h100", "/timing/baseline/settings/max_concurrency",
    "/timing/baseline/settings",
)  # fmt: skip
def serving_baseline_capped_at_concurrency_16(p: Packet) -> None:
    """The baseline engine was driven with 16 requests in flight, the candidate with 64: its
    own settings say so."""
    _b(p)["settings"]["max_concurrency"] = 16


@red_cheat(
    "mismatched_baseline",
    "serving_vllm_mi300x",
    "/timing/baseline/settings/model",
    "/timing/baseline/settings",
)
def serving_baseline_served_a_larger_model(p: Packet) -> None:
    """The baseline engine served the 70B model (its settings name it) against the
    candidate's 8B."""
    _b(p)["settings"]["model"] = "meta-llama/Llama-3.1-70B-Instruct"


# ================================================================ cheats: correctness gaps


@red_cheat(
    "correctness_gap", "h100_bf16_gemm_vs_cublaslt", "/timing/shape_id", "/timing/conditions/shape_id",
    "/validation/shapes/0/shape_id",
)  # fmt: skip
def timed_shape_id_in_upper_case(p: Packet) -> None:
    """The timed shape is ``M8192N8192K4096`` (upper case, half the k): not the validated one."""
    sid = "M8192N8192K4096"
    _t(p)["shape_id"] = sid
    for c in _both(p):
        c["shape_id"] = sid


@red_cheat(
    "correctness_gap", "h100_gemm_suite_three_shapes", "/validation/shapes/2", "/validation/shapes/2/atol",
    "/validation/shapes/2/reference_max_abs",
)  # fmt: skip
def zeros_pass_on_the_last_suite_shape(p: Packet) -> None:
    """The last shape of the suite has outputs of ~3e-4 and an absolute tolerance of 1e-3:
    an all-zeros output passes it (KernelBench #165, on a shape that is not timed)."""
    s = p["validation"]["shapes"][2]
    s.update(atol=1e-3, rtol=0.0, reference_max_abs=3.1e-4, max_abs_error=2.9e-4, max_rel_error=0.93)


@red_cheat(
    "correctness_gap", "h100_fp8_gemm_vs_cublaslt", "/validation/shapes/0/inf_seen", "/validation/shapes/0"
)
def inf_seen_on_a_passed_shape(p: Packet) -> None:
    """A passed shape whose output held an inf (the check compared finite elements only)."""
    p["validation"]["shapes"][0]["inf_seen"] = True


@red_cheat("correctness_gap", "a100_fp16_gemm_vs_cublas", "/defences/3", "/defences")
def unseen_inputs_failed_on_a_passed_packet(p: Packet) -> None:
    """The unseen-inputs re-run failed (2 of 8 input sets got stale outputs: FlashInfer #21),
    and the packet is still ``passed``."""
    d = _defence(p, "unseen_inputs")
    d["outcome"] = "failed"
    d["detail"] = "2 of 8 unseen input sets returned the outputs of earlier inputs"


# ================================================================ cheats: work figures


@red_cheat("work_figures", "h100_bf16_gemm_vs_cublaslt", "/task/shapes/0/work/flops")
def flops_4x_written_in_tflop(p: Packet) -> None:
    """The GEMM's FLOPs written in TFLOP, 4x what m, n, k give (4.4 TFLOP for 1.1)."""
    p["task"]["shapes"][0]["work"]["flops"] = {"value": 4.398, "unit": "TFLOP"}


@red_cheat(
    "work_figures", "h100_layernorm_vs_transformer_engine", "/task/shapes/0/work/bytes", "/timing/stats"
)
def layernorm_bytes_cut_to_hide_its_bandwidth(p: Packet) -> None:
    """The layernorm 'runs' in 45% of its time, and its bytes are cut to 45% of what x and y
    hold, so that 6 TB/s of traffic reads as 2.8 TB/s (llm.c #851, with the bytes moved)."""
    scale_side(p, "candidate", 0.45)
    p["task"]["shapes"][0]["work"]["bytes"]["value"] *= 0.45


@red_cheat("work_figures", "a100_conv2d_vs_cudnn", "/task/shapes/0/work/flops")
def conv_flops_counted_for_a_7x7_filter(p: Packet) -> None:
    """The 3x3 convolution's FLOPs counted as if it were 7x7 (5.4x)."""
    p["task"]["shapes"][0]["work"]["flops"]["value"] *= 49 / 9


@red_cheat(
    "work_figures",
    "mi300x_cpx_partition_gemm",
    "/hardware/partitions",
    "/hardware/compute_units",
    "/timing/stats",
)
def cpx_partition_at_the_whole_device_rate(p: Packet) -> None:
    """One CPX partition (38 of 304 CUs) claims 700 TFLOP/s: the whole MI300X's rate, five
    times what an eighth of it can do."""
    scale_side(p, "candidate", 0.185)
    scale_side(p, "baseline", 0.185)


@red_cheat("work_figures", "h100_bf16_gemm_vs_cublaslt", "/task/dtypes/0", "/task/dtypes")
def fp8_label_spelled_float8_e4m3fn(p: Packet) -> None:
    """The task labelled ``float8_e4m3fn`` over bf16 tensors (the fp8 peak is then the limit)."""
    p["task"]["dtypes"] = ["float8_e4m3fn"]


@red_cheat(
    "work_figures", "mi300x_bf16_gemm_vs_rocblas", "/hardware/count", "/timing/conditions/device_count",
)  # fmt: skip
def eight_mi300x_claimed_one_exposed_by_rocr(p: Packet) -> None:
    """Eight MI300X claimed; ``ROCR_VISIBLE_DEVICES=3`` exposed one."""
    p["hardware"]["count"] = 8
    _t(p)["conditions"]["device_count"] = 8
    _b(p)["conditions"]["device_count"] = 8
    p["replay"]["env"] = {"ROCR_VISIBLE_DEVICES": "3"}
    del p["profiler"]


@red_cheat("work_figures", "cpu_epyc_sgemm_vs_openblas", "/hardware/peak_flop_rate", "/timing/stats")
def cpu_declares_ten_times_its_peak(p: Packet) -> None:
    """A 96-core EPYC declares 73.7 TFLOP/s fp32 (10x what its cores can retire), so that its
    10x faster 'timings' stay below the packet's own peak."""
    p["hardware"]["peak_flop_rate"]["value"] = 73.7
    scale_side(p, "candidate", 0.1)
    scale_side(p, "baseline", 0.1)
    p["cost"]["gpu_time"]["value"] = round(p["cost"]["gpu_time"]["value"] * 0.1, 2)


# ================================================================ cheats: physics of cost


@red_cheat("cost_physics", "h100_bf16_gemm_vs_cublaslt", "/cost/energy/energy", "/cost/energy")
def energy_in_kwh_implies_8kw(p: Packet) -> None:
    """0.02 kWh over the 9.3 s window: 7.8 kW from one 700 W H100."""
    p["cost"]["energy"]["energy"] = {"value": 0.02, "unit": "kWh"}


@red_cheat("cost_physics", "a100_fp16_gemm_vs_cublas", "/cost/gpu_time")
def gpu_time_in_milliseconds(p: Packet) -> None:
    """The accelerator time written in ms with its seconds figure: a thousandth of the timed work."""
    p["cost"]["gpu_time"]["unit"] = "ms"


@red_cheat("cost_physics", "mi300x_fp8_gemm_vs_hipblaslt", "/cost/energy/window", "/cost/energy")
def energy_window_in_microseconds(p: Packet) -> None:
    """The energy window's number given in microseconds of a run that lasted seconds: the
    joules then went into 9 ms, 600 kW from one 750 W MI300X."""
    en = p["cost"]["energy"]
    en["window"] = {"value": round(en["window"]["value"] * 1e3, 1), "unit": "us"}


# ================================================================ cheats: serving arithmetic


@red_cheat(
    "serving_arithmetic",
    "serving_vllm_llama8b_h100",
    "/timing/serving/request_throughput/unit",
    structural=True,
)
def request_rate_in_req_per_min(p: Packet) -> None:
    """The request throughput given per minute (``req/min``), so it reads 60x larger."""
    rt = _t(p)["serving"]["request_throughput"]
    rt["value"] = round(rt["value"] * 60, 2)
    rt["unit"] = "req/min"


@red_cheat(
    "serving_arithmetic", "serving_vllm_mi300x", "/timing/baseline/serving/duration",
    "/timing/baseline/serving",
)  # fmt: skip
def baseline_duration_minutes_as_seconds(p: Packet) -> None:
    """The baseline's duration written in seconds from a minutes figure (60x), its rates
    recomputed from it: the baseline served at a 60th of its real pace on paper, while its
    own latencies show requests finishing as fast as the candidate's."""
    sv = _b(p)["serving"]
    dur = sv["duration"]["value"] = round(sv["duration"]["value"] * 60, 1)
    sv["request_throughput"]["value"] = round(sv["completed"] / dur, 3)
    sv["output_throughput"]["value"] = round(sv["total_output_tokens"] / dur, 2)
    sv["total_token_throughput"]["value"] = round(
        (sv["total_input_tokens"] + sv["total_output_tokens"]) / dur, 2
    )
    recompute_speedup(p)
    p["cost"]["gpu_time"]["value"] = round(p["cost"]["gpu_time"]["value"] + dur, 1)
    p["cost"]["wall_time"]["value"] = round(p["cost"]["wall_time"]["value"] + dur, 1)
    en = p["cost"].get("energy")
    if en:
        en["energy"]["value"] = round(
            en["energy"]["value"] * p["cost"]["gpu_time"]["value"] / en["window"]["value"], 1
        )
        en["window"]["value"] = p["cost"]["gpu_time"]["value"]


@red_cheat(
    "serving_arithmetic", "serving_sglang_tp8_llama70b", "/timing/serving/ttft", "/timing/serving/ttft/unit"
)
def ttft_ms_relabelled_us(p: Packet) -> None:
    """The TTFT block says ``us`` over millisecond numbers: a 70B model's first token in
    0.1 ms."""
    ttft = _t(p)["serving"]["ttft"]
    ttft["unit"] = "us"


@red_cheat(
    "serving_arithmetic", "serving_vllm_llama8b_h100", "/timing/serving/tpot", "/timing/serving/tpot/unit"
)
def tpot_ms_relabelled_us(p: Packet) -> None:
    """TPOT in ``us`` over millisecond numbers: 14 us per output token from an 8B model."""
    _t(p)["serving"]["tpot"]["unit"] = "us"


@red_cheat(
    "serving_arithmetic", "serving_vllm_mi300x", "/timing/baseline/serving/e2el", "/timing/baseline/serving"
)
def baseline_e2el_below_its_ttft(p: Packet) -> None:
    """The baseline's end-to-end latencies shrunk to a tenth (below its own TTFT)."""
    _restate(_b(p)["serving"]["e2el"], "ms", 0.05)


# ================================================================ cheats: hollow replays


def _argv(argv: list[str]) -> Callable[[Packet], None]:
    def set_argv(p: Packet) -> None:
        p["replay"]["command"] = argv

    return set_argv


@red_cheat("hollow_replay", "h100_bf16_gemm_vs_cublaslt", "/replay/command")
def replay_make_dry_run(p: Packet) -> None:
    """``make -n bench``: make prints the recipe and runs none of it."""
    _argv(["make", "-n", "bench"])(p)


@red_cheat("hollow_replay", "mi300x_bf16_gemm_vs_rocblas", "/replay/command")
def replay_env_wrapper_around_true(p: Packet) -> None:
    """``env HIP_VISIBLE_DEVICES=0 true``: an environment set for a program that does nothing."""
    _argv(["env", "HIP_VISIBLE_DEVICES=0", "true"])(p)


@red_cheat("hollow_replay", "a100_fp16_gemm_vs_cublas", "/replay/command")
def replay_python_c_empty(p: Packet) -> None:
    """``python3 -c ''``: the interpreter starts and exits."""
    _argv(["python3", "-c", ""])(p)


@red_cheat("hollow_replay", "h200_attention_vs_flashattention", "/replay/command")
def replay_timeout_around_colon(p: Packet) -> None:
    """``timeout 600 :``: a time limit on the shell's no-op."""
    _argv(["timeout", "600", ":"])(p)


@red_cheat("hollow_replay", "tpu_v6e_matmul_vs_xla", "/replay/command")
def replay_pytest_collect_only(p: Packet) -> None:
    """``python -m pytest --collect-only``: lists the benchmarks, runs none."""
    _argv(["python", "-m", "pytest", "bench/", "--collect-only", "-q"])(p)


@red_cheat(
    "hollow_replay", "h100_layernorm_vs_transformer_engine", "/replay/container/digest", "/replay/container"
)
def container_digest_of_zeros(p: Packet) -> None:
    """The container 'pinned' by a digest of 64 zeros, which names no image."""
    p["replay"]["container"]["digest"] = "sha256:" + "0" * 64


@red_cheat("hollow_replay", "h100_fp8_gemm_vs_cublaslt", "/replay/command")
def replay_prints_the_stored_result(p: Packet) -> None:
    """``python -c`` that loads the stored result file and prints it."""
    _argv(["python", "-c", "import json; r = json.load(open('results/gemm.json')); print(r)"])(p)


@red_cheat("hollow_replay", "rtx4090_fp16_gemm_vs_cublas", "/replay/command")
def replay_nvidia_smi(p: Packet) -> None:
    """``nvidia-smi``: shows the card, measures nothing."""
    _argv(["nvidia-smi", "--query-gpu=name,clocks.sm", "--format=csv"])(p)


@red_cheat("hollow_replay", "b200_fp8_gemm_vs_cublaslt", "/replay/command")
def replay_jq_of_the_results(p: Packet) -> None:
    """``jq .speedup results.json``: shows the number, measures nothing."""
    _argv(["jq", ".speedup", "results/gemm_fp8.json"])(p)


@red_cheat("hollow_replay", "a100_fp16_gemm_vs_cublas", "/replay/command")
def replay_with_help_flag(p: Packet) -> None:
    """The benchmark script with ``--help``: it prints its usage and times nothing."""
    _argv(["python", "bench/run.py", "--kernel", "gemm_fp16", "--help"])(p)


@red_cheat("hollow_replay", "mi355x_attention_vs_aiter", "/replay/command")
def replay_docker_run_true(p: Packet) -> None:
    """``docker run --rm IMAGE true``: the image starts and runs the no-op."""
    _argv(["docker", "run", "--rm", "--device=/dev/kfd", "rocm/pytorch:latest", "true"])(p)


# ================================================================ cheats: profile against claim


@red_cheat("profile_vs_claim", "h100_bf16_gemm_vs_cublaslt", "/profiler/0/of/side", "/profiler/0/of")
def candidate_capture_relabelled_baseline(p: Packet) -> None:
    """The candidate's own capture (its kernel 1.26x slower than claimed, outside the 0.25
    tolerance) is marked ``side: baseline``, where cuBLASLt's slower time covers it; the
    defence record still says the candidate's kernel was profiled."""
    cap = p["profiler"][0]
    cap["of"]["side"] = "baseline"
    d = cap["kernels"][0]["metrics"]["duration"]
    d["value"] = round(d["value"] * 1.26, 1)


@red_cheat("profile_vs_claim", "a100_fp16_gemm_vs_cublas", "/profiler/0/of/shape_id", "/profiler/0/of")
def capture_names_a_shape_the_task_lacks(p: Packet) -> None:
    """The capture (3x slower than the claim) says it holds a shape the task does not have,
    so no rule compares it with the timed shape."""
    cap = p["profiler"][0]
    cap["of"]["shape_id"] = "m4096n4096k2048"
    d = cap["kernels"][0]["metrics"]["duration"]
    d["value"] = round(d["value"] * 3, 1)


@red_cheat(
    "profile_vs_claim", "mi300x_fp8_gemm_vs_hipblaslt", "/profiler/0/of/claim_tolerance", "/profiler/0/of",
    "/timing/stats",
)  # fmt: skip
def capture_with_a_tolerance_of_ten(p: Packet) -> None:
    """The capture shows the kernel 3x slower than claimed; its stated tolerance is 10 (1000%)."""
    cap = p["profiler"][0]
    cap["of"]["claim_tolerance"] = 10.0
    d = cap["kernels"][0]["metrics"]["duration"]
    d["value"] = round(d["value"] * 3, 1)


# ================================================================ cheats: the claim itself, and 0.1 packets


@red_cheat("existing_rules", "h100_bf16_gemm_vs_cublaslt", "/timing/speedup/tolerance", "/timing/speedup")
def claim_150x_with_a_tolerance_of_200(p: Packet) -> None:
    """A 150x claim over timings that give 1.05x, with ``tolerance: 200`` beside it (Sakana)."""
    _t(p)["speedup"].update(value=150.0, tolerance=200.0)


@red_cheat("existing_rules", "mi300x_fp8_gemm_vs_hipblaslt", "/timing/speedup/value", "/timing/speedup")
def speedup_written_as_percent(p: Packet) -> None:
    """``8.76`` written for an 8.76% gain (1.0876x): read as a speedup it is 8.76x."""
    v = _t(p)["speedup"]["value"]
    _t(p)["speedup"]["value"] = round((v - 1) * 100, 2)


@red_cheat("existing_rules", "migrated_v01_h100_gemm", "/timing/speedup/value", "/timing/speedup")
def v01_claim_150x(p: Packet) -> None:
    """A 0.1 packet (no conditions, no id) claiming 150x over timings that give 1.05x."""
    _t(p)["speedup"]["value"] = 150.0


@red_cheat("work_figures", "migrated_v01_h100_gemm", "/task/shapes/0/work/flops")
def v01_flops_in_tflop_10x(p: Packet) -> None:
    """A 0.1 packet whose GEMM FLOPs are written as 11 TFLOP (10x the dims)."""
    p["task"]["shapes"][0]["work"]["flops"] = {"value": 11.0, "unit": "TFLOP"}


@red_cheat("mismatched_baseline", "migrated_v01_h100_gemm", "/timing/baseline/version", "/timing/baseline")
def v01_baseline_version_latest(p: Packet) -> None:
    """A 0.1 packet's baseline version ``latest``."""
    _b(p)["version"] = "latest"


# ================================================================ the tests


def _describe(v: Verdict) -> str:
    lines = [f"ok={v.ok} grade={v.grade} reasons={list(v.reasons)}"]
    lines += [f"  {rid} {sev} at {ptr}: {msg}" for rid, sev, ptr, msg in v.findings]
    return "\n".join(lines)


@pytest.mark.parametrize("name", sorted(RED_CONTROLS))
def test_red_control_accepted(name: str) -> None:
    c = RED_CONTROLS[name]
    packet = c.build()
    if packet["schema_version"] != LEGACY:
        EvidencePacket.model_validate(packet)
        assert finalize(dict(packet))["packet_id"] == packet["packet_id"]
    for as_bytes in (False, True):
        v = judge(packet, as_bytes=as_bytes)
        errors = [f for f in v.findings if f[1] == "error"]
        assert not errors, f"honest control `{name}` falsely rejected ({c.about}):\n{_describe(v)}"
        if c.grades:
            assert v.grade in c.grades, f"`{name}` graded {v.grade}, expected {c.grades}:\n{_describe(v)}"


@pytest.mark.parametrize("name", sorted(RED_CHEATS))
def test_red_cheat_caught(name: str) -> None:
    c = RED_CHEATS[name]
    packet = build_red_cheat(c)
    if not c.structural and packet["schema_version"] != LEGACY:
        EvidencePacket.model_validate(packet)  # the lie hides in a well-formed packet
    for as_bytes in (False, True):
        v = judge(packet, c.pointers, as_bytes=as_bytes)
        assert v.caught, (
            f"cheat `{name}` ({c.klass}) not caught: {c.lie}\nlying: {c.pointers}\n{_describe(v)}"
        )


@pytest.mark.parametrize("name", sorted(RED_CHEATS))
def test_red_cheat_changes_its_control(name: str) -> None:
    c = RED_CHEATS[name]
    assert build_red_cheat(c) != _control_packet(c.control)


def test_red_team_covers_every_class() -> None:
    per_class = Counter(c.klass for c in RED_CHEATS.values())
    assert set(per_class) == set(CLASSES), set(CLASSES) - set(per_class)
    assert len(RED_CONTROLS) >= 10


def test_partition_control_is_an_eighth_of_the_device() -> None:
    """The CPX control's rate is below an eighth of the MI300X's fp16 peak (1307 TFLOP/s),
    so its cheat (five times the rate) lies about the partition, not about the device."""
    p = RED_CONTROLS["mi300x_cpx_partition_gemm"].build()
    flops = p["task"]["shapes"][0]["work"]["flops"]["value"]
    rate = flops / (p["timing"]["stats"]["median"] * 1e-3)
    assert rate < 1307e12 / 8 and not math.isclose(rate, 0.0)
