"""Regenerate the example packets in valid/ and invalid/ (the current schema version).

    python examples/packets/generate.py

Valid examples pass `kevidence validate`; each invalid example is named after the rule it
breaks (KE101_..., KE301_...) and fails with that rule. A test checks both, and that the
files match what this script writes. The examples of older schema versions (v0.1/) are
kept as they were released, not written here; a test checks they migrate and keep their
verdicts.
"""

from __future__ import annotations

import copy
import json
import random
import sys
from pathlib import Path
from typing import Any

from kernel_evidence.models import SCHEMA_VERSION, EvidencePacket

HERE = Path(__file__).resolve().parent
VERSION = "0.1.0"
COMMIT = "3f9c2a7e5b1d4c8a9e0f6b2d7c1a5e3f9b8d4c2a"
DIGEST = "sha256:" + "7d2f" * 16


def samples(center: float, n: int, spread: float) -> list[float]:
    """``n`` timings around ``center``, each side its own noise (seeded, so the examples are
    reproducible): a timer's jitter is neither evenly spaced nor shared by the two sides."""
    rng = random.Random(f"{center}/{n}/{spread}")
    return [round(center * (1 + spread * (rng.betavariate(2.0, 2.0) - 0.5)), 4) for _ in range(n)]


def stats(xs: list[float], unit: str) -> dict[str, Any]:
    ys = sorted(xs)
    n = len(ys)
    med = ys[n // 2] if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2
    return {
        "unit": unit,
        "median": med,
        "mean": round(sum(ys) / n, 6),
        "min": ys[0],
        "max": ys[-1],
        "n": n,
        "percentiles": {"p10": ys[int(0.1 * (n - 1))], "p50": med, "p90": ys[int(0.9 * (n - 1))]},
        "samples": xs,
    }


def envelope(name: str, kind: str = "kernel", status: str = "passed") -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "created_at": "2026-11-20T09:30:00Z",
        "producer": {"name": "kernel-evidence-examples", "version": VERSION},
        "subject": {"kind": kind, "name": name},
        "status": status,
    }


def replay(argv: list[str]) -> dict[str, Any]:
    return {
        "command": argv,
        "cwd": ".",
        "env": {"CUDA_VISIBLE_DEVICES": "0"},
        "repository": {"url": "https://example.org/kernels.git", "commit": COMMIT, "dirty": False},
        "container": {"image": "ghcr.io/example/kernels:2026.11", "digest": DIGEST},
        "seeds": {"inputs": 1234},
    }


def nvidia_gemm() -> dict[str, Any]:
    d = envelope("gemm_bf16_tn_4096")
    cand = samples(152.0, 31, 0.04)
    base = samples(171.0, 31, 0.04)
    cs, bs = stats(cand, "us"), stats(base, "us")
    d["task"] = {
        "operator": "gemm",
        "description": "C = A @ B^T, bf16 in, fp32 accumulate, bf16 out",
        "dtypes": ["bf16"],
        "shapes": [
            {
                "id": "m4096n4096k4096",
                "dims": {"m": 4096, "n": 4096, "k": 4096},
                "tensors": [
                    {"name": "A", "shape": [4096, 4096], "dtype": "bf16", "layout": "row"},
                    {"name": "B", "shape": [4096, 4096], "dtype": "bf16", "layout": "row"},
                ],
                "work": {
                    "flops": {"value": 137438953472.0, "unit": "FLOP"},
                    "bytes": {"value": 100663296.0, "unit": "B"},
                },
            }
        ],
        "reference": {"name": "torch.matmul", "kind": "torch_eager", "version": "2.5.1"},
        "tolerance": {"atol": 0.01, "rtol": 0.01},
    }
    d["compile"] = {
        "compiler": {"name": "nvcc", "version": "12.4.131"},
        "language": "cuda",
        "target_arch": "sm_90a",
        "flags": ["-O3", "-arch=sm_90a", "--use_fast_math"],
        "source_digest": "sha256:" + "a1b2" * 16,
        "succeeded": True,
        "artifacts": [
            {
                "kind": "ptx",
                "name": "gemm.ptx",
                "sha256": "sha256:" + "c3d4" * 16,
                "size": {"value": 48213, "unit": "B"},
                "media_type": "text/plain",
                "path": "build/gemm.ptx",
            },
            {
                "kind": "sass",
                "name": "gemm.sass",
                "sha256": "sha256:" + "e5f6" * 16,
                "size": {"value": 120544, "unit": "B"},
                "media_type": "text/plain",
                "path": "build/gemm.sass",
            },
        ],
    }
    d["validation"] = {
        "verdict": "passed",
        "inputs_regenerated": True,
        "seeds": [1234, 1235],
        "shapes": [
            {
                "shape_id": "m4096n4096k4096",
                "passed": True,
                "max_abs_error": 0.0039,
                "max_rel_error": 0.0021,
                "atol": 0.01,
                "rtol": 0.01,
                "matched_ratio": 1.0,
                "reference_max_abs": 187.5,
                "nan_seen": False,
                "inf_seen": False,
                "elements": 16777216,
            }
        ],
    }
    d["timing"] = {
        "method": "cuda_events",
        "warmup": 10,
        "repeats": 31,
        "shape_id": "m4096n4096k4096",
        "stats": cs,
        "cache_policy": "flushed",
        "clock_policy": "locked",
        "synchronized": True,
        "interleaved": True,
        "stop_rule": "fixed 31 repeats after 10 warmup",
        "baseline": {
            "provider": "cuBLASLt",
            "version": "12.4.5.8",
            "call": "cublasLtMatmul(bf16, transa=N, transb=T, m=4096, n=4096, k=4096, compute=CUBLAS_COMPUTE_32F, heuristic=0)",
            "same_session": True,
            "interleaved": True,
            "stats": bs,
        },
        "speedup": {"value": round(bs["median"] / cs["median"], 4), "basis": "median"},
    }
    d["profiler"] = [
        {
            "tool": "ncu",
            "version": "2024.1.1",
            "source": {
                "kind": "profile",
                "name": "gemm.ncu-rep",
                "sha256": "sha256:" + "0a1b" * 16,
                "size": {"value": 2351120, "unit": "B"},
                "path": "profiles/gemm.ncu-rep",
            },
            "kernels": [
                {
                    "name": "gemm_bf16_tn_128x256_warpspecialized",
                    "id": "0",
                    "process": "41233",
                    "grid": [16, 32, 1],
                    "block": [384, 1, 1],
                    "metrics": {
                        "duration": {"value": 151360.0, "unit": "ns"},
                        "sm_throughput": {"value": 87.4, "unit": "%"},
                        "tensor_pipe_utilization": {"value": 91.2, "unit": "%"},
                        "registers_per_thread": {"value": 168, "unit": "count"},
                    },
                    "raw": {
                        "gpu__time_duration.sum": {"value": 151.36, "unit": "usecond"},
                        "sm__throughput.avg.pct_of_peak_sustained_elapsed": {"value": 87.4, "unit": "%"},
                    },
                }
            ],
        }
    ]
    d["hardware"] = {
        "vendor": "nvidia",
        "device": "NVIDIA H100 80GB HBM3",
        "arch": "sm_90a",
        "count": 1,
        "compute_units": 132,
        "memory": {"value": 80, "unit": "GiB"},
        "driver": {"name": "nvidia", "version": "550.54.15"},
        "runtime": {"name": "CUDA", "version": "12.4"},
        "clocks": {
            "locked": True,
            "sm_requested": {"value": 1755, "unit": "MHz"},
            "sm_observed": {"value": 1755, "unit": "MHz"},
            "memory_observed": {"value": 2619, "unit": "MHz"},
        },
        "power_limit": {"value": 700, "unit": "W"},
    }
    d["replay"] = replay(
        ["python", "bench/gemm.py", "--m", "4096", "--n", "4096", "--k", "4096", "--dtype", "bf16"]
    )
    d["cost"] = {
        "gpu_time": {"value": 14.2, "unit": "s"},
        "energy": {
            "energy": {"value": 6120.0, "unit": "J"},
            "window": {"value": 14.2, "unit": "s"},
            "source": "nvml",
        },
        "money": {
            "amount": 0.0118,
            "currency": "USD",
            "price_source": "on-demand list price, 1x H100 at 2.99 USD/h",
            "price_date": "2026-11-01",
        },
    }
    return d


def amd_gemm() -> dict[str, Any]:
    d = envelope("gemm_fp8_mi300x_8192")
    cand = samples(1.212, 25, 0.03)
    base = samples(1.318, 25, 0.03)
    cs, bs = stats(cand, "ms"), stats(base, "ms")
    d["task"] = {
        "operator": "gemm",
        "dtypes": ["fp8_e4m3fnuz", "bf16"],
        "shapes": [
            {
                "id": "m8192n8192k8192",
                "dims": {"m": 8192, "n": 8192, "k": 8192},
                "work": {"flops": {"value": 1099511627776.0, "unit": "FLOP"}},
            }
        ],
        "reference": {"name": "torch._scaled_mm", "kind": "torch_eager", "version": "2.5.1+rocm6.2"},
        "tolerance": {"atol": 0.05, "rtol": 0.02},
    }
    d["compile"] = {
        "compiler": {"name": "hipcc", "version": "6.2.41133"},
        "language": "hip",
        "target_arch": "gfx942",
        "flags": ["-O3", "--offload-arch=gfx942"],
        "succeeded": True,
    }
    d["validation"] = {
        "verdict": "passed",
        "shapes": [
            {
                "shape_id": "m8192n8192k8192",
                "passed": True,
                "max_abs_error": 0.031,
                "atol": 0.05,
                "rtol": 0.02,
                "reference_max_abs": 412.0,
                "nan_seen": False,
            }
        ],
    }
    d["timing"] = {
        "method": "hip_events",
        "warmup": 20,
        "repeats": 25,
        "shape_id": "m8192n8192k8192",
        "stats": cs,
        "cache_policy": "flushed",
        "synchronized": True,
        "baseline": {
            "provider": "hipBLASLt",
            "version": "0.10.0",
            "call": "hipblasLtMatmul(fp8_e4m3fnuz, TN, m=n=k=8192, algo=heuristic top-1)",
            "same_session": True,
            "stats": bs,
        },
        "speedup": {"value": round(bs["median"] / cs["median"], 4), "basis": "median"},
    }
    d["hardware"] = {
        "vendor": "amd",
        "device": "AMD Instinct MI300X",
        "arch": "gfx942",
        "count": 1,
        "compute_units": 304,
        "partitions": 8,
        "memory": {"value": 192, "unit": "GiB"},
        "runtime": {"name": "ROCm", "version": "6.2.4"},
        "clocks": {"locked": False, "sm_observed": {"value": 2100, "unit": "MHz"}},
    }
    d["replay"] = replay(["python", "bench/gemm_fp8.py", "--size", "8192"])
    return d


def tpu_op() -> dict[str, Any]:
    d = envelope("ragged_paged_attention_pallas")
    cand = samples(0.842, 21, 0.02)
    base = samples(1.071, 21, 0.02)
    cs, bs = stats(cand, "ms"), stats(base, "ms")
    d["task"] = {
        "operator": "paged_attention_decode",
        "dtypes": ["bf16"],
        "shapes": [
            {
                "id": "b64_h32_d128_ctx4096",
                "dims": {"batch": 64, "heads": 32, "head_dim": 128, "context": 4096},
                "work": {
                    "flops": {"value": 8589934592.0, "unit": "FLOP"},
                    "bytes": {"value": 536870912.0, "unit": "B"},
                },
            }
        ],
        "reference": {"name": "jnp reference attention", "kind": "jax", "version": "0.4.35"},
        "tolerance": {"atol": 0.02, "rtol": 0.02},
    }
    d["compile"] = {
        "compiler": {"name": "XLA (jax)", "version": "jaxlib 0.4.35"},
        "language": "pallas",
        "target_arch": "TPU v5e",
        "succeeded": True,
    }
    d["validation"] = {
        "verdict": "passed",
        "shapes": [
            {
                "shape_id": "b64_h32_d128_ctx4096",
                "passed": True,
                "max_abs_error": 0.0078,
                "atol": 0.02,
                "rtol": 0.02,
                "reference_max_abs": 6.2,
            }
        ],
    }
    d["timing"] = {
        "method": "xprof",
        "warmup": 5,
        "repeats": 21,
        "shape_id": "b64_h32_d128_ctx4096",
        "stats": cs,
        "cache_policy": "unknown",
        "baseline": {
            "provider": "XLA",
            "version": "jaxlib 0.4.35",
            "call": "jax.jit(reference_paged_attention)(q, k_pages, v_pages, lengths, page_indices)",
            "same_session": True,
            "stats": bs,
        },
        "speedup": {"value": round(bs["median"] / cs["median"], 4), "basis": "median"},
    }
    d["hardware"] = {
        "vendor": "google",
        "device": "TPU v5e",
        "arch": "TPU v5 lite",
        "count": 1,
        "memory": {"value": 16, "unit": "GiB"},
        "clocks": {"locked": False, "sm_observed": {"value": 1500, "unit": "MHz"}},
    }
    d["replay"] = replay(["python", "bench/paged_attention.py", "--batch", "64"])
    return d


def serving() -> dict[str, Any]:
    d = envelope("llama-3.1-8b-random-1024-128", kind="serving")
    d["task"] = {
        "workload": "random 1024 in / 128 out",
        "serving": {
            "model": "meta-llama/Llama-3.1-8B-Instruct",
            "engine": {"name": "vLLM", "version": "0.11.0"},
            "dataset": "random",
            "num_prompts": 1000,
            "input_len": 1024,
            "output_len": 128,
            "max_concurrency": 64,
            "request_rate": "inf",
            "tensor_parallel_size": 1,
            "settings": {"max_num_seqs": 256, "enable_chunked_prefill": True, "kv_cache_dtype": "fp8"},
        },
    }
    ttft = {
        "unit": "ms",
        "median": 88.1,
        "mean": 95.3,
        "std": 21.4,
        "min": 41.2,
        "max": 210.7,
        "percentiles": {"p50": 88.1, "p90": 130.2, "p99": 190.4},
        "n": 1000,
    }
    tpot = {
        "unit": "ms",
        "median": 14.2,
        "mean": 14.6,
        "min": 9.8,
        "max": 26.0,
        "percentiles": {"p50": 14.2, "p99": 24.9},
        "n": 1000,
    }
    e2el = {
        "unit": "ms",
        "median": 1912.0,
        "mean": 1950.4,
        "min": 1202.0,
        "max": 3404.0,
        "percentiles": {"p50": 1912.0, "p99": 3120.0},
        "n": 1000,
    }
    d["timing"] = {
        "method": "serving_client",
        "stats": e2el,
        "serving": {
            "completed": 1000,
            "failed": 0,
            "duration": {"value": 31.4, "unit": "s"},
            "request_throughput": {"value": 31.85, "unit": "req/s"},
            "output_throughput": {"value": 4076.4, "unit": "tok/s"},
            "total_token_throughput": {"value": 36692.0, "unit": "tok/s"},
            "total_input_tokens": 1024000,
            "total_output_tokens": 128000,
            "ttft": ttft,
            "tpot": tpot,
            "e2el": e2el,
        },
        "baseline": {
            "engine": {"name": "vLLM", "version": "0.10.1"},
            "settings": {
                "max_num_seqs": 256,
                "enable_chunked_prefill": True,
                "kv_cache_dtype": "auto",
                "tensor_parallel_size": 1,
            },
            "same_session": True,
            "serving": {"output_throughput": {"value": 3520.1, "unit": "tok/s"}},
        },
        "speedup": {"value": round(4076.4 / 3520.1, 4), "basis": "output_throughput"},
    }
    d["hardware"] = {
        "vendor": "nvidia",
        "device": "NVIDIA H100 80GB HBM3",
        "arch": "sm_90",
        "count": 1,
        "clocks": {"locked": False, "sm_observed": {"value": 1980, "unit": "MHz"}},
    }
    d["replay"] = replay(
        [
            "vllm",
            "bench",
            "serve",
            "--model",
            "meta-llama/Llama-3.1-8B-Instruct",
            "--dataset-name",
            "random",
            "--random-input-len",
            "1024",
            "--random-output-len",
            "128",
            "--num-prompts",
            "1000",
            "--max-concurrency",
            "64",
            "--save-result",
        ]
    )
    return d


def failure_base(name: str, fc: str, message: str) -> dict[str, Any]:
    d = envelope(name, status="failed")
    d["failure"] = {"failure_class": fc, "message": message}
    d["lineage"] = {
        "run_id": "rl-run-2026-11-20",
        "candidate_id": name,
        "iteration": 412,
        "parent_packet_id": "sha256:" + "5e6f" * 16,
        "relation": "mutation",
    }
    d["task"] = {
        "operator": "softmax",
        "dtypes": ["fp16"],
        "shapes": [
            {"id": "b32_n4096", "dims": {"batch": 32, "n": 4096}},
            {"id": "b7_n1000", "dims": {"batch": 7, "n": 1000}},
        ],
        "reference": {"name": "torch.softmax", "kind": "torch_eager"},
        "tolerance": {"atol": 0.001, "rtol": 0.001},
    }
    d["hardware"] = {"vendor": "nvidia", "device": "NVIDIA L4", "arch": "sm_89", "count": 1}
    d["replay"] = replay(["python", "eval_candidate.py", "--candidate", f"candidates/{name}.py"])
    return d


def compile_error() -> dict[str, Any]:
    d = failure_base(
        "softmax_cand_0413",
        "compile_error",
        "triton.compiler.errors.CompilationError: at 12:8: unsupported tensor index",
    )
    d["compile"] = {
        "compiler": {"name": "triton", "version": "3.1.0"},
        "language": "triton",
        "target_arch": "sm_89",
        "succeeded": False,
        "log_excerpt": "at 12:8:\n    x = tl.load(ptr + offs[:, None, None])\n        ^\nunsupported tensor index",
        "duration": {"value": 0.84, "unit": "s"},
    }
    return d


def nan_failure() -> dict[str, Any]:
    d = failure_base(
        "softmax_cand_0414", "nan_inf", "output contains NaN for shape b32_n4096 (max subtraction skipped)"
    )
    d["failure"]["shape_id"] = "b32_n4096"
    d["validation"] = {
        "verdict": "failed",
        "inputs_regenerated": True,
        "shapes": [
            {
                "shape_id": "b32_n4096",
                "passed": False,
                "nan_seen": True,
                "inf_seen": True,
                "atol": 0.001,
                "rtol": 0.001,
                "elements": 131072,
                "message": "4096 NaN, 12 Inf",
            }
        ],
    }
    return d


def tolerance_miss() -> dict[str, Any]:
    d = failure_base(
        "softmax_cand_0415",
        "incorrect_numerical",
        "max abs error 0.0134 > atol 0.001 on shape b7_n1000 (off-by-one in the tail loop)",
    )
    d["failure"]["shape_id"] = "b7_n1000"
    d["validation"] = {
        "verdict": "failed",
        "inputs_regenerated": True,
        "shapes": [
            {
                "shape_id": "b32_n4096",
                "passed": True,
                "max_abs_error": 0.00021,
                "atol": 0.001,
                "rtol": 0.001,
                "matched_ratio": 1.0,
                "reference_max_abs": 0.031,
                "nan_seen": False,
            },
            {
                "shape_id": "b7_n1000",
                "passed": False,
                "max_abs_error": 0.0134,
                "atol": 0.001,
                "rtol": 0.001,
                "matched_ratio": 0.9986,
                "required_matched_ratio": 1.0,
                "reference_max_abs": 0.041,
                "nan_seen": False,
            },
        ],
    }
    return d


def _conditions(d: dict[str, Any]) -> dict[str, Any]:
    """The candidate's conditions of a timed kernel example (schema 0.2)."""
    t = d["timing"]
    shape = next(s for s in d["task"]["shapes"] if s["id"] == t["shape_id"])
    return {
        "dtypes": list(d["task"]["dtypes"]),
        "shape_id": t["shape_id"],
        "dims": dict(shape["dims"]),
        "device": d["hardware"]["device"],
        "device_count": 1,
        "method": t["method"],
        "warmup": t["warmup"],
        "repeats": t["repeats"],
        "synchronized": True,
        "cache": {
            "mode": "flushed",
            "flush_bytes": {"value": 256, "unit": "MiB"},
            "last_level_cache": {"value": 50, "unit": "MiB"},
            "flush_in_timed_window": False,
        },
        "clock_policy": "locked",
        "session": "run-2026-11-20-0930",
        "interleaved": True,
        "fresh_inputs": True,
        "sample_handling": "all",
    }


def nvidia_gemm_recorded() -> dict[str, Any]:
    """The H100 GEMM as a 0.2 harness records it: both sides' conditions, the defences it
    ran, and when it was measured (grade A)."""
    d = nvidia_gemm()
    d["subject"]["name"] = "gemm_bf16_tn_4096_recorded"
    d["measured_at"] = "2026-11-20T09:12:41Z"
    d["hardware"]["device_id"] = "nvidia-h100-sxm5-80gb"
    d["hardware"]["last_level_cache"] = {"value": 50, "unit": "MiB"}
    d["timing"]["conditions"] = _conditions(d)
    d["timing"]["baseline"]["conditions"] = _conditions(d)
    d["profiler"][0]["of"] = {
        "side": "candidate",
        "shape_id": d["timing"]["shape_id"],
        "expected_kernels": ["gemm_bf16_tn_128x256_warpspecialized"],
    }
    d["defences"] = [
        {"check": "fresh_inputs", "outcome": "passed", "detail": "new inputs for each side in every round"},
        {
            "check": "outputs_checked_after_timing",
            "outcome": "passed",
            "detail": "outputs of the timed calls compared",
        },
        {"check": "timer_integrity", "outcome": "passed", "detail": "a 1 ms spin measured 1.00 ms"},
        {"check": "unseen_inputs", "outcome": "passed", "detail": "re-run on 4 unseen input sets"},
        {
            "check": "candidate_kernel_profiled",
            "outcome": "passed",
            "detail": "ncu shows the candidate's kernel",
        },
        {
            "check": "hidden_workload",
            "outcome": "passed",
            "detail": "shapes and seeds drawn after submission",
        },
        {"check": "cache_flush", "outcome": "passed", "detail": "256 MiB written between calls (L2 50 MiB)"},
    ]
    return d


VALID = {
    "nvidia_h100_gemm_vs_cublaslt.json": nvidia_gemm,
    "amd_mi300x_gemm_fp8_vs_hipblaslt.json": amd_gemm,
    "tpu_v5e_paged_attention_vs_xla.json": tpu_op,
    "serving_vllm_llama8b_h100.json": serving,
    "failed_compile_error.json": compile_error,
    "failed_nan_inf.json": nan_failure,
    "failed_tolerance_miss.json": tolerance_miss,
}


def _without(path: list[str]) -> Any:
    def edit(d: dict[str, Any]) -> None:
        obj = d
        for k in path[:-1]:
            obj = obj[k]
        del obj[path[-1]]

    return edit


def _set(path: list[str], value: Any) -> Any:
    def edit(d: dict[str, Any]) -> None:
        obj = d
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value

    return edit


def _bandwidth_cheat(d: dict[str, Any]) -> None:
    # a copy kernel claiming 256 MiB in 48 us on an H100: ~5.6 TB/s, above the 3.35 TB/s peak
    d["task"]["operator"] = "copy"
    d["task"]["shapes"][0]["work"] = {"bytes": {"value": 268435456.0, "unit": "B"}}
    d["timing"]["stats"] = {"unit": "us", "median": 48.0, "min": 47.1, "max": 49.0, "n": 31}
    d["timing"]["baseline"]["stats"] = {"unit": "us", "median": 96.0, "n": 31}
    d["timing"]["speedup"] = {"value": 2.0, "basis": "median"}
    d["profiler"] = None


def _flops_cheat(d: dict[str, Any]) -> None:
    # 137 GFLOP in 40 us = 3.4 PFLOP/s of bf16 on an H100 (peak 989 TFLOP/s)
    d["timing"]["stats"] = {"unit": "us", "median": 40.0, "min": 39.0, "max": 41.0, "n": 31}
    d["timing"]["speedup"] = {
        "value": round(d["timing"]["baseline"]["stats"]["median"] / 40.0, 4),
        "basis": "median",
    }


def _failed_claims(d: dict[str, Any]) -> None:
    d["timing"] = {
        "method": "cuda_events",
        "repeats": 10,
        "stats": {"unit": "us", "median": 20.0},
        "baseline": {
            "provider": "torch eager",
            "version": "2.5.1",
            "call": "torch.softmax(x, -1)",
            "stats": {"unit": "us", "median": 30.0},
        },
        "speedup": {"value": 1.5, "basis": "median"},
    }


def _bad_stats(d: dict[str, Any]) -> None:
    m = d["timing"]["stats"]["median"]
    d["timing"]["stats"] = {
        "unit": "ms",
        "median": m,
        "min": round(m * 1.05, 4),
        "max": round(m * 0.95, 4),
        "percentiles": {"p50": m, "p90": round(m * 0.9, 4)},
        "n": 25,
    }


def _vacuous(d: dict[str, Any]) -> None:
    d["validation"]["shapes"][0]["reference_max_abs"] = 0.004


def _unidentified(d: dict[str, Any]) -> None:
    d["hardware"] = {"vendor": "nvidia", "device": "GPU"}


def _no_validation(d: dict[str, Any]) -> None:
    del d["validation"]


def _unit(d: dict[str, Any]) -> None:
    d["timing"]["stats"]["unit"] = "GB/s"


def _raw_table_without_digest(d: dict[str, Any]) -> None:
    # raw metrics said to be in a side file that the packet does not pin by digest: anyone
    # could swap the file, and the packet id would not change
    d["profiler"][0]["raw_table"] = {
        "kind": "profile",
        "name": "gemm.ncu-rep.raw-5d41402abc4b2a76.arrow",
        "path": "gemm.ncu-rep.raw-5d41402abc4b2a76.arrow",
        "media_type": "application/vnd.apache.arrow.file",
    }


def _reference_claim_failed_shape(d: dict[str, Any]) -> None:
    d["validation"]["shapes"][0]["passed"] = False


def _inflated_output_throughput(d: dict[str, Any]) -> None:
    # 128000 output tokens in 31.4 s are 4076 tok/s; the packet claims 5200
    d["timing"]["serving"]["output_throughput"]["value"] = 5200.0
    d["timing"]["speedup"]["value"] = round(5200.0 / 3520.1, 4)


def _dropped_requests(d: dict[str, Any]) -> None:
    # 1000 prompts sent, 940 completed, the 60 failures left out of `failed`
    s = d["timing"]["serving"]
    s["completed"] = 940
    s["request_throughput"]["value"] = round(940 / 31.4, 2)
    s["total_input_tokens"] = 940 * 1024
    s["total_output_tokens"] = 940 * 128
    s["output_throughput"]["value"] = round(940 * 128 / 31.4, 1)
    s["total_token_throughput"]["value"] = round(940 * (1024 + 128) / 31.4, 1)
    d["timing"]["speedup"]["value"] = round(s["output_throughput"]["value"] / 3520.1, 4)


def _profiled_kernel_slower_than_claim(d: dict[str, Any]) -> None:
    # the candidate's own ncu capture shows its GEMM running 400 us per call, the claim
    # 151.9 us: the timer stopped before the kernel's work was done
    cap = d["profiler"][0]
    cap["of"] = {"side": "candidate", "shape_id": "m4096n4096k4096", "expected_kernels": ["gemm_bf16_tn"]}
    cap["kernels"][0]["metrics"]["duration"]["value"] = 400000.0
    cap["kernels"][0]["raw"]["gpu__time_duration.sum"]["value"] = 400.0


def _capture_without_candidate_kernel(d: dict[str, Any]) -> None:
    # the capture said to be of the candidate holds only a cuBLAS kernel
    d["profiler"][0]["of"] = {
        "side": "candidate",
        "shape_id": "m4096n4096k4096",
        "expected_kernels": ["gemm_bf16_tn"],
    }
    d["profiler"][0]["kernels"][0]["name"] = (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_cublas"
    )


def _capture_of_a_shape_the_task_lacks(d: dict[str, Any]) -> None:
    # a capture 3x slower than the claim, said to hold a shape the task does not list (so
    # that no timing is held against it)
    cap = d["profiler"][0]
    cap["of"] = {"side": "candidate", "shape_id": "m4096n4096k1024", "expected_kernels": ["gemm_bf16_tn"]}
    cap["kernels"][0]["metrics"]["duration"]["value"] *= 3


def _candidate_capture_marked_baseline(d: dict[str, Any]) -> None:
    # the candidate's capture relabelled as the baseline's, the defence still passed
    d["profiler"][0]["of"]["side"] = "baseline"


def _flops_four_times_the_dims(d: dict[str, Any]) -> None:
    # 8*m*n*k counted for a 4096^3 GEMM (2*m*n*k is 137 GFLOP): the TFLOP/s look 4x better
    d["task"]["shapes"][0]["work"]["flops"]["value"] = 8.0 * 4096**3
    d["task"]["shapes"][0]["work"].pop("bytes")


def _bytes_below_the_tensors(d: dict[str, Any]) -> None:
    # 24 MiB stated for a GEMM whose two 4096^2 bf16 operands alone hold 64 MiB: a bandwidth
    # figure that fits under the peak only because the data was not counted
    d["task"]["shapes"][0]["work"]["bytes"]["value"] = 24.0 * 2**20


def _fp8_label_on_bf16_tensors(d: dict[str, Any]) -> None:
    # labelled fp8 (a 2x higher peak) while both tensors are bf16
    d["task"]["dtypes"] = ["fp8_e4m3"]


def _count_eight_one_device_exposed(d: dict[str, Any]) -> None:
    # eight devices claimed (eight times the peak) for a replay that exposes one GPU
    d["hardware"]["count"] = 8
    d["replay"]["env"] = {"CUDA_VISIBLE_DEVICES": "0"}


def _h100_name_with_sm80(d: dict[str, Any]) -> None:
    # an A100's arch and SM count under an H100's name
    d["hardware"]["arch"] = "sm_80"
    d["hardware"]["compute_units"] = 108


def _energy_above_power_limit(d: dict[str, Any]) -> None:
    # 15 kJ over 14.2 s is 1056 W on one 700 W H100
    d["cost"]["energy"]["energy"]["value"] = 15000.0


def _measured_after_made(d: dict[str, Any]) -> None:
    # the measurement dated a day after the packet was made from it
    d["measured_at"] = "2026-11-21T08:00:00Z"


def _echo_replay(d: dict[str, Any]) -> None:
    # the replay prints the benchmark command instead of running it
    d["replay"]["command"] = ["echo", "python", "bench/gemm.py", "--m", "4096"]


def _branch_commit(d: dict[str, Any]) -> None:
    d["replay"]["repository"]["commit"] = "main"


def _baseline_in_fp32(d: dict[str, Any]) -> None:
    # the cuBLASLt baseline ran in fp32 against the bf16 candidate
    d["timing"]["baseline"]["conditions"]["dtypes"] = ["fp32"]


def _baseline_host_clock(d: dict[str, Any]) -> None:
    # the baseline timed with the host clock (launch and sync included), the candidate with events
    d["timing"]["baseline"]["conditions"]["method"] = "host_clock"


def _cublaslt_on_amd(d: dict[str, Any]) -> None:
    d["timing"]["baseline"]["provider"] = "cuBLASLt"


def _placeholder_version(d: dict[str, Any]) -> None:
    d["timing"]["baseline"]["version"] = "latest"


def _zero_candidate_time(d: dict[str, Any]) -> None:
    # a candidate time of 0 (a timer that underflowed) behind a claim
    st = d["timing"]["stats"]
    for k in ("median", "mean", "min", "max"):
        st[k] = 0.0
    st["percentiles"] = {"p10": 0.0, "p50": 0.0, "p90": 0.0}
    st["samples"] = [0.0] * len(st["samples"])


def _timed_shape_not_validated(d: dict[str, Any]) -> None:
    # timed at a shape the validation never checked
    d["task"]["shapes"].append({"id": "m8192n8192k8192", "dims": {"m": 8192, "n": 8192, "k": 8192}})
    d["timing"]["shape_id"] = "m4096n4096k4096"
    d["validation"]["shapes"][0]["shape_id"] = "m8192n8192k8192"


def _error_above_bound(d: dict[str, Any]) -> None:
    # max error 2.5 against atol 0.01 + rtol 0.01 x 187.5 = 1.885, marked passed
    d["validation"]["shapes"][0]["max_abs_error"] = 2.5


def _failed_defence(d: dict[str, Any]) -> None:
    # the unseen-inputs re-run failed (outputs cached by input fingerprint), yet passed
    d["defences"][3]["outcome"] = "failed"
    d["defences"][3]["detail"] = "2 of 4 unseen input sets gave the outputs of earlier inputs"


def _faster_than_a_launch(d: dict[str, Any]) -> None:
    # CUDA-event times of a few hundred nanoseconds: faster than a kernel launch
    t = d["timing"]
    t["stats"] = stats([round(x / 400, 4) for x in t["stats"]["samples"]], "us")
    t["speedup"]["value"] = round(t["baseline"]["stats"]["median"] / t["stats"]["median"], 4)
    del d["task"]["shapes"][0]["work"]
    del d["profiler"]


def _std_understated(d: dict[str, Any]) -> None:
    # the std reported 50x smaller than the samples give
    d["timing"]["stats"]["std"] = 0.05


def _identical_samples(d: dict[str, Any]) -> None:
    # 31 samples all exactly 152.0137 us: a timer patched to return a constant
    t = d["timing"]
    t["stats"] = stats([152.0137] * len(t["stats"]["samples"]), "us")
    t["speedup"]["value"] = round(t["baseline"]["stats"]["median"] / t["stats"]["median"], 4)


def _output_tokens_counted_twice(d: dict[str, Any]) -> None:
    # each streamed token counted twice (the deltas and the final message both summed):
    # 256000 output tokens from 1000 requests of at most 128, and the throughput from them
    s = d["timing"]["serving"]
    s["total_output_tokens"] = 256000
    s["output_throughput"]["value"] = round(256000 / 31.4, 1)
    s["total_token_throughput"]["value"] = round((1024000 + 256000) / 31.4, 1)
    d["timing"]["speedup"]["value"] = round(s["output_throughput"]["value"] / 3520.1, 4)


def _ttft_above_e2el(d: dict[str, Any]) -> None:
    # a first token 4.2 s after the request in a run whose longest request took 3.4 s in
    # all: the TTFT block came from another (cold-server) run
    d["timing"]["serving"]["ttft"]["max"] = 4210.7


def _ttft_below_the_prefill(d: dict[str, Any]) -> None:
    # a 2.1 ms median TTFT for 1024-token prompts on an 8B model (the prefill alone is 16 TFLOP,
    # 16.6 ms at the H100's bf16 peak): the client stamped the response headers, not the
    # first token
    d["timing"]["serving"]["ttft"] = {
        "unit": "ms",
        "median": 2.1,
        "mean": 2.3,
        "std": 0.5,
        "min": 1.4,
        "max": 4.8,
        "percentiles": {"p50": 2.1, "p90": 3.0, "p99": 4.4},
        "n": 1000,
    }


def _claim_on_failed_requests(d: dict[str, Any]) -> None:
    # 60 of 1000 requests failed (6%, out-of-memory under load), counted honestly, and the
    # throughput of the 940 that completed still claimed as a passed speedup
    s = d["timing"]["serving"]
    s["completed"] = 940
    s["failed"] = 60
    s["request_throughput"]["value"] = round(940 / 31.4, 2)
    s["total_input_tokens"] = 940 * 1024
    s["total_output_tokens"] = 940 * 128
    s["output_throughput"]["value"] = round(940 * 128 / 31.4, 1)
    s["total_token_throughput"]["value"] = round(940 * (1024 + 128) / 31.4, 1)
    for k in ("ttft", "tpot", "e2el"):
        s[k]["n"] = 940
    d["timing"]["speedup"]["value"] = round(s["output_throughput"]["value"] / 3520.1, 4)


def _tpot_halved(d: dict[str, Any]) -> None:
    # a mean TPOT of 7.3 ms where every request produced its 128 tokens in 1950.4 ms, 95.3 ms
    # of them to the first: 14.5 ms a token; the TPOT block came from a run at lower concurrency
    t = d["timing"]["serving"]["tpot"]
    for k in ("median", "mean", "min", "max"):
        t[k] = round(t[k] / 2, 2)
    t["percentiles"] = {k: round(v / 2, 2) for k, v in t["percentiles"].items()}


def _gpu_time_of_one_request(d: dict[str, Any]) -> None:
    # the cost reports 1.9 s of GPU time (one request's latency) for a 31.4 s run on one GPU
    d["cost"] = {"gpu_time": {"value": 1.9, "unit": "s"}}


def _locked_clock_boosting(d: dict[str, Any]) -> None:
    # clocks recorded locked at 1755 MHz while the SM clock was seen at 1980 MHz: the lock was
    # never applied and the GPU boosted
    d["hardware"]["clocks"]["sm_observed"]["value"] = 1980


def _created_on_31_september(d: dict[str, Any]) -> None:
    # backdated by hand to before a deadline, to a day that does not exist
    d["created_at"] = "2026-09-31T09:30:00Z"


def _h200_bandwidth_on_h100(d: dict[str, Any]) -> None:
    # the H200's 4.8 TB/s declared as the H100's peak bandwidth (the table's is 3.35 TB/s)
    d["hardware"]["peak_bandwidth"] = {"value": 4.8, "unit": "TB/s"}


def _raw_columns_of_three_launches(d: dict[str, Any]) -> None:
    # the capture's records trimmed to the one fast launch, while its raw columns still hold
    # all three launches (two of them 400 us)
    cap = d["profiler"][0]
    cap["kernels"][0].pop("raw")
    cap["raw_columns"] = {
        "gpu__time_duration.sum": [151.36, 402.71, 398.14],
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": [87.4, 41.2, 40.9],
    }
    cap["raw_units"] = {
        "gpu__time_duration.sum": "usecond",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": "%",
    }


def _replay_at_another_concurrency(d: dict[str, Any]) -> None:
    # measured at 256 concurrent requests, recorded (and compared with the baseline) as 64
    c = d["replay"]["command"]
    c[c.index("--max-concurrency") + 1] = "256"


def _passed_with_failed_validation(d: dict[str, Any]) -> None:
    # the candidate that missed its tolerance on b7_n1000 relabelled passed (status set, the
    # failure dropped), its failed validation kept
    d["status"] = "passed"
    del d["failure"]


def _compile_error_filed_as_numerical(d: dict[str, Any]) -> None:
    # a candidate that did not compile filed as incorrect_numerical (a closer miss, for the
    # reward): nothing ran, so there is no validation to show it
    d["failure"]["failure_class"] = "incorrect_numerical"


def _skipped_with_timing(d: dict[str, Any]) -> None:
    # a run that was timed relabelled skipped (so that its timings count for nothing), its
    # claim dropped with it
    d["status"] = "skipped"
    del d["timing"]["speedup"]


def _zero_repeats(d: dict[str, Any]) -> None:
    # repeats 0 beside 31 samples: the field written before the timing loop ran
    d["timing"]["repeats"] = 0


def _summary_without_the_slowest(d: dict[str, Any]) -> None:
    # the slowest call measured 412.7 us (a recompile); the samples keep it, the summary
    # (max, mean) was computed without it
    xs = d["timing"]["stats"]["samples"]
    xs[xs.index(max(xs))] = 412.7


INVALID: dict[str, tuple[Any, Any]] = {
    "KE008_measured_after_the_packet_was_made.json": (nvidia_gemm_recorded, _measured_after_made),
    "KE103_replay_echoes_the_command.json": (nvidia_gemm, _echo_replay),
    "KE104_commit_is_a_branch_name.json": (nvidia_gemm, _branch_commit),
    "KE207_baseline_in_fp32_candidate_in_bf16.json": (nvidia_gemm_recorded, _baseline_in_fp32),
    "KE208_baseline_host_clock_candidate_events.json": (nvidia_gemm_recorded, _baseline_host_clock),
    "KE209_cublaslt_baseline_on_mi300x.json": (amd_gemm, _cublaslt_on_amd),
    "KE210_placeholder_baseline_version.json": (nvidia_gemm, _placeholder_version),
    "KE303_zero_candidate_time.json": (nvidia_gemm, _zero_candidate_time),
    "KE409_timed_shape_not_validated.json": (nvidia_gemm, _timed_shape_not_validated),
    "KE411_passed_shape_error_above_its_bound.json": (nvidia_gemm, _error_above_bound),
    "KE412_failed_defence_on_a_passed_packet.json": (nvidia_gemm_recorded, _failed_defence),
    "KE505_duration_faster_than_a_launch.json": (nvidia_gemm, _faster_than_a_launch),
    "KE506_std_does_not_match_samples.json": (nvidia_gemm, _std_understated),
    "KE507_identical_samples.json": (nvidia_gemm, _identical_samples),
    "KE101_no_replay_command.json": (nvidia_gemm, _without(["replay", "command"])),
    "KE101_no_replay.json": (compile_error, _without(["replay"])),
    "KE201_no_baseline.json": (nvidia_gemm, _without(["timing", "baseline"])),
    "KE202_unnamed_baseline.json": (
        nvidia_gemm,
        _set(["timing", "baseline", "provider"], "our previous kernel"),
    ),
    "KE203_baseline_without_version_and_call.json": (
        amd_gemm,
        lambda d: (d["timing"]["baseline"].pop("version"), d["timing"]["baseline"].pop("call")),
    ),
    "KE205_serving_baseline_without_configuration.json": (
        serving,
        lambda d: (d["timing"]["baseline"].pop("engine"), d["timing"]["baseline"].pop("settings")),
    ),
    "KE301_speedup_does_not_match_timings.json": (nvidia_gemm, _set(["timing", "speedup", "value"], 1.85)),
    "KE302_claim_cannot_be_checked.json": (tpu_op, _without(["timing", "baseline", "stats"])),
    "KE401_failed_packet_claims_speedup.json": (tolerance_miss, _failed_claims),
    "KE402_failed_without_failure_class.json": (nan_failure, _without(["failure"])),
    "KE403_failure_class_does_not_fit_status.json": (
        compile_error,
        _set(["failure", "failure_class"], "infra_error"),
    ),
    "KE404_claim_without_validation.json": (amd_gemm, _no_validation),
    "KE407_verdict_contradicts_shapes.json": (tpu_op, _reference_claim_failed_shape),
    "KE501_inconsistent_statistics.json": (amd_gemm, _bad_stats),
    "KE601_flops_above_device_peak.json": (nvidia_gemm, _flops_cheat),
    "KE602_bandwidth_above_device_peak.json": (nvidia_gemm, _bandwidth_cheat),
    "KE701_tolerance_cannot_fail.json": (tpu_op, _vacuous),
    "KE801_device_not_identified.json": (amd_gemm, _unidentified),
    "KE902_raw_table_without_digest.json": (nvidia_gemm, _raw_table_without_digest),
    "KE001_time_stats_in_bandwidth_unit.json": (nvidia_gemm, _unit),
    "KE1001_output_throughput_above_tokens_over_duration.json": (serving, _inflated_output_throughput),
    "KE1003_dropped_requests_unaccounted.json": (serving, _dropped_requests),
    "KE1101_claim_faster_than_its_profiled_kernel.json": (nvidia_gemm, _profiled_kernel_slower_than_claim),
    "KE1102_capture_without_the_candidate_kernel.json": (nvidia_gemm, _capture_without_candidate_kernel),
    "KE1103_capture_of_a_shape_the_task_lacks.json": (nvidia_gemm, _capture_of_a_shape_the_task_lacks),
    "KE1104_candidate_capture_marked_baseline.json": (
        nvidia_gemm_recorded,
        _candidate_capture_marked_baseline,
    ),
    "KE1201_energy_above_power_limit.json": (nvidia_gemm, _energy_above_power_limit),
    "KE605_flops_four_times_the_gemm_dims.json": (nvidia_gemm, _flops_four_times_the_dims),
    "KE606_fp8_label_on_bf16_tensors.json": (nvidia_gemm, _fp8_label_on_bf16_tensors),
    "KE608_bytes_below_the_tensors.json": (nvidia_gemm, _bytes_below_the_tensors),
    "KE805_count_8_one_device_exposed.json": (nvidia_gemm, _count_eight_one_device_exposed),
    "KE806_h100_name_with_sm80.json": (nvidia_gemm, _h100_name_with_sm80),
    "KE007_created_on_31_september.json": (nvidia_gemm, _created_on_31_september),
    "KE106_replay_runs_another_concurrency.json": (serving, _replay_at_another_concurrency),
    "KE405_passed_with_failed_validation.json": (tolerance_miss, _passed_with_failed_validation),
    "KE406_compile_error_filed_as_numerical.json": (compile_error, _compile_error_filed_as_numerical),
    "KE408_skipped_packet_with_timing.json": (nvidia_gemm, _skipped_with_timing),
    "KE502_zero_repeats.json": (nvidia_gemm, _zero_repeats),
    "KE503_summary_without_the_slowest_sample.json": (nvidia_gemm, _summary_without_the_slowest),
    "KE607_h200_bandwidth_declared_for_h100.json": (nvidia_gemm, _h200_bandwidth_on_h100),
    "KE807_locked_clock_observed_boosting.json": (nvidia_gemm, _locked_clock_boosting),
    "KE901_raw_columns_of_three_launches_one_record.json": (nvidia_gemm, _raw_columns_of_three_launches),
    "KE1002_output_tokens_above_output_len.json": (serving, _output_tokens_counted_twice),
    "KE1004_ttft_above_end_to_end_latency.json": (serving, _ttft_above_e2el),
    "KE1005_ttft_below_the_prefill.json": (serving, _ttft_below_the_prefill),
    "KE1006_passed_claim_on_failed_requests.json": (serving, _claim_on_failed_requests),
    "KE1007_tpot_half_what_the_latencies_give.json": (serving, _tpot_halved),
    "KE1202_gpu_time_of_one_request.json": (serving, _gpu_time_of_one_request),
}

# documents that are not even well-formed packets, written as raw text
RAW_INVALID = {
    "KE001_truncated_json.json": lambda: json.dumps(finish(nvidia_gemm()))[:900],
    "KE001_nan_token.json": lambda: json.dumps(finish(amd_gemm())).replace(
        '"median": ', '"median": NaN, "x": ', 1
    ),
    "KE003_duplicate_key.json": lambda: json.dumps(finish(amd_gemm())).replace(
        '"status": "passed"', '"status": "passed", "status": "failed"', 1
    ),
}

# these examples keep a correct packet_id for their tampered content, so they fail only
# their own rule; the tampered-id example keeps the original id on purpose
TAMPERED = {"KE004_packet_id_does_not_match_content.json": nvidia_gemm}


def finish(d: dict[str, Any]) -> dict[str, Any]:
    d = {k: v for k, v in d.items() if v is not None}
    for cat in list(d):
        if isinstance(d[cat], dict):
            d[cat] = {k: v for k, v in d[cat].items() if v is not None}
    return (
        EvidencePacket.model_validate(d).with_id().to_dict()
        if _models_ok(d)
        else {**d, "packet_id": _raw_id(d)}
    )


def _models_ok(d: dict[str, Any]) -> bool:
    try:
        EvidencePacket.model_validate(d)
    except Exception:  # noqa: BLE001 - structurally invalid examples keep their raw form
        return False
    return True


def _raw_id(d: dict[str, Any]) -> str:
    from kernel_evidence._codec.canonical import packet_id_for

    return packet_id_for(d)


def dump(d: Any) -> str:
    return json.dumps(d, indent=2, ensure_ascii=False) + "\n"


def render() -> dict[str, str]:
    """Every example file: relative path -> text."""
    files: dict[str, str] = {}
    for name, make in VALID.items():
        files[f"valid/{name}"] = dump(finish(make()))
    for name, (make, edit) in INVALID.items():
        d = copy.deepcopy(make())
        edit(d)
        files[f"invalid/{name}"] = dump(finish(d))
    for name, make_text in RAW_INVALID.items():
        files[f"invalid/{name}"] = make_text() + ("\n" if not name.startswith("KE001_truncated") else "")
    for name, make in TAMPERED.items():
        d = finish(make())
        d["timing"]["speedup"]["value"] = round(d["timing"]["speedup"]["value"], 2)
        d["status"] = "passed"
        d["timing"]["repeats"] = 100
        files[f"invalid/{name}"] = dump(d)
    return files


def main() -> int:
    for rel, text in render().items():
        path = HERE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(render())} example files under {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
