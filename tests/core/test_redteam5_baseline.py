"""Red team 5s, classes 1, 2 and 12 (KE207): serving baseline handicaps beyond the named
settings (quantization, KV cache, CUDA graphs, compilation, chunked prefill, scheduler delay,
parallel sampling, a command line nested in one setting, a client held below the benchmark's
concurrency), a candidate quantized outside its dtypes, and a baseline call's precision in
prose. Each beside an honest twin that must still pass."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

from kernel_evidence import validate
from kernel_evidence._codec.canonical import packet_id_for
from kernel_evidence.rules.baseline import _call_more, _cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_controls import CONTROLS  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
SERV = "serving_vllm_llama8b_h100"
SGL = "serving_sglang_tp8_llama70b"
V01S = "migrated_v01_serving_minimal"
S = "/timing/baseline/settings/"


def control(name: str = SERV) -> dict[str, Any]:
    return copy.deepcopy(CONTROLS[name].build())


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    p = copy.deepcopy(p)
    p.pop("packet_id", None)
    p["packet_id"] = packet_id_for(p)  # any schema version (0.1 included)
    return {(f.rule_id, f.pointer) for f in validate(p).findings}


def ke207(p: dict[str, Any]) -> set[str]:
    return {ptr for r, ptr in found(p) if r == "KE207"}


def base(p: dict[str, Any]) -> dict[str, Any]:
    return p["timing"]["baseline"]["settings"]  # type: ignore[no-any-return]


def cand(p: dict[str, Any]) -> dict[str, Any]:
    return p["task"]["serving"]["settings"]  # type: ignore[no-any-return]


def with_base(name: str = SERV, **kv: Any) -> dict[str, Any]:
    p = control(name)
    base(p).update(kv)
    return p


def test_the_controls_have_no_ke207() -> None:
    for name in (SERV, SGL, V01S, GEMM):
        assert not ke207(control(name)), name


# ---------------------------------------------------------------- quantization


def test_a_baseline_quantized_alone_is_another_problem() -> None:
    assert S + "quantization" in ke207(with_base(quantization="bitsandbytes"))
    assert S + "quantization" in ke207(with_base(V01S, quantization="bitsandbytes"))
    assert S + "quantization" in ke207(with_base(quantization="fp8"))
    # both sides the same method, or none written out
    for q in ("none", "fp8", "AUTO"):
        p = with_base(quantization=q)
        cand(p)["quantization"] = q
        assert not ke207(p), q
    assert not ke207(with_base(quantization="none"))
    assert not ke207(with_base(quantization=None))
    # a quantized checkpoint's own method, stated on one side: the other side loads it so too
    assert not ke207(with_base(quantization="awq"))
    # two methods stated
    p = with_base(quantization="awq")
    cand(p)["quantization"] = "awq_marlin"
    assert S + "quantization" in ke207(p)


def test_a_candidate_quantized_outside_its_dtypes() -> None:
    p = control()
    cand(p)["quantization"] = "fp8"
    assert "/task/serving/settings/quantization" in ke207(p)
    p = control()
    cand(p)["quantization"] = "fp8"
    base(p)["quantization"] = "fp8"
    assert not ke207(p)
    # the checkpoint is an FP8 one: both sides load it in fp8
    p = control()
    cand(p)["quantization"] = "fp8"
    p["task"]["serving"]["model"] = "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8"
    assert "/task/serving/settings/quantization" not in ke207(p)


# ---------------------------------------------------------------- capacity and graphs


def test_kv_cache_too_small_for_the_benchmark() -> None:
    # 512 blocks of 16 tokens: 8192 tokens against 64 prompts of 1024
    assert S + "num_gpu_blocks_override" in ke207(with_base(num_gpu_blocks_override=512))
    assert S + "num_gpu_blocks_override" in ke207(with_base(num_gpu_blocks_override="512"))
    assert not ke207(with_base(num_gpu_blocks_override=8192))
    # a block size stated: 512 blocks of 256 tokens hold 131072
    assert not ke207(with_base(num_gpu_blocks_override=512, block_size=256))
    # both sides stated: the baseline's is compared with the candidate's
    p = with_base(num_gpu_blocks_override=8192)
    cand(p)["num_gpu_blocks_override"] = 16384
    assert S + "num_gpu_blocks_override" in ke207(p)
    p = with_base(kv_cache_memory_bytes=4 << 30)
    cand(p)["kv_cache_memory_bytes"] = 8 << 30
    assert S + "kv_cache_memory_bytes" in ke207(p)
    p = with_base(kv_cache_memory_bytes=8 << 30)
    cand(p)["kv_cache_memory_bytes"] = 8 << 30
    assert not ke207(p)
    # SGLang's token count
    assert S + "max_total_tokens" in ke207(with_base(SGL, max_total_tokens=4096))
    assert not ke207(with_base(SGL, max_total_tokens=1_000_000))


def test_cuda_graphs_for_fewer_sequences_than_the_benchmark_runs() -> None:
    assert S + "cuda_graph_sizes" in ke207(with_base(cuda_graph_sizes="1"))
    assert S + "cuda_graph_sizes" in ke207(with_base(cuda_graph_sizes="1 2 4"))
    assert not ke207(with_base(cuda_graph_sizes="[1, 2, 4, 8, 16, 32, 64, 128, 256, 512]"))
    assert not ke207(with_base(cuda_graph_sizes="512"))
    assert S + "cuda_graph_max_bs" in ke207(with_base(SGL, cuda_graph_max_bs=1))
    assert not ke207(with_base(SGL, cuda_graph_max_bs=160))  # SGLang's own default on an H100
    # the engine's prefix on the name
    assert S + "SGLANG_CUDA_GRAPH_MAX_BS" in ke207(with_base(SGL, SGLANG_CUDA_GRAPH_MAX_BS=1))
    # both stated: compared
    p = with_base(SGL, cuda_graph_max_bs=128)
    cand(p)["cuda_graph_max_bs"] = 256
    assert S + "cuda_graph_max_bs" in ke207(p)
    # sequences longer than the graphs cover (1024 + 128 tokens)
    assert S + "max_seq_len_to_capture" in ke207(with_base(max_seq_len_to_capture=512))
    assert not ke207(with_base(max_seq_len_to_capture=8192))


def test_compilation_off_on_the_baseline_alone() -> None:
    for v in ("0", 0, "-O0", '{"level": 0}', '{"mode": "none"}'):
        assert S + "compilation_config" in ke207(with_base(compilation_config=v)), v
    assert S + "O" in ke207(with_base(O=0))
    for v in ("3", 3, '{"level": 3}'):
        assert not ke207(with_base(compilation_config=v)), v
    p = with_base(compilation_config="0")
    cand(p)["compilation_config"] = 0
    assert not ke207(p)


def test_chunked_prefill_off_against_the_candidates_on() -> None:
    assert S + "enable_chunked_prefill" in ke207(with_base(enable_chunked_prefill=False))
    assert S + "enable_chunked_prefill" in ke207(with_base(enable_chunked_prefill="false"))
    p = with_base(enable_chunked_prefill=False)
    del cand(p)["enable_chunked_prefill"]  # the candidate states none: not judged
    assert not ke207(p)
    p = with_base(enable_chunked_prefill=False)
    cand(p)["enable_chunked_prefill"] = False
    assert not ke207(p)


def test_parallel_sampling_and_scheduler_delay_on_the_baseline_alone() -> None:
    assert S + "n" in ke207(with_base(n=4))
    assert not ke207(with_base(n=1))
    p = with_base(n=4)
    cand(p)["n"] = 4
    assert not ke207(p)
    assert S + "scheduler_delay_factor" in ke207(with_base(scheduler_delay_factor=5.0))
    assert not ke207(with_base(scheduler_delay_factor=0))


# ---------------------------------------------------------------- a command line in one setting


def test_a_command_line_nested_in_one_setting() -> None:
    p = with_base(extra_args="--max-num-seqs 16 --enforce-eager")
    assert S + "extra_args" in ke207(p)
    p = with_base(extra_args="--enforce-eager")
    assert S + "extra_args" in ke207(p)
    p = with_base(extra_args="-O0")
    assert S + "extra_args" in ke207(p)
    for honest in ("--disable-log-requests", "--max-num-seqs 256", "-1", "fast mode"):
        assert not ke207(with_base(extra_args=honest)), honest
    assert _cli("--max-num-seqs 16 --enforce-eager") == (("--max-num-seqs", "16"), ("--enforce-eager", True))
    assert _cli("-1") is None
    assert _cli("model --x 1") is None


# ---------------------------------------------------------------- observed concurrency


def test_the_baseline_client_held_below_the_benchmarks_concurrency() -> None:
    ptr = "/timing/baseline/serving/max_concurrent_requests"
    p = control()
    p["timing"]["baseline"]["serving"]["max_concurrent_requests"] = 16
    assert ptr in ke207(p)
    p["timing"]["baseline"]["serving"]["max_concurrent_requests"] = 64
    assert not ke207(p)
    # requests that arrive over time: fewer in flight is the arrival rate
    p = control()
    p["timing"]["baseline"]["serving"]["max_concurrent_requests"] = 16
    p["task"]["serving"]["request_rate"] = 4.0
    assert ptr not in ke207(p)


# ---------------------------------------------------------------- the call's precision in prose


def test_a_baseline_call_in_single_precision_prose() -> None:
    p = control(GEMM)
    p["timing"]["baseline"]["call"] = "cublasLtMatmul, single precision, m=n=k=8192"
    assert "/timing/baseline/call" in ke207(p)
    p["timing"]["baseline"]["call"] = "cublasLtMatmul, FP32 operands, m=n=k=8192"
    assert "/timing/baseline/call" in ke207(p)
    for honest in (
        "cublasLtMatmul(bf16, TN, m=n=k=8192), accumulating in single precision",
        "cublasLtMatmul(CUDA_R_16BF, TN, m=n=k=8192, compute=fp32)",
        "cublasLtMatmul, fp32 accumulate, m=n=k=8192",
    ):
        p["timing"]["baseline"]["call"] = honest
        assert "/timing/baseline/call" not in ke207(p), honest
    assert _call_more("cublasLtMatmul, single precision")[0] == frozenset({"fp32"})
    assert _call_more("gemm in double precision")[0] == frozenset({"fp64"})
    assert _call_more("gemm, single precision accumulation")[0] == frozenset()
    assert _call_more("gemm(float alpha, CUDA_R_32F)")[0] == frozenset()
