"""Builders of honest, physically consistent schema 0.2 packets for the adversarial suite.

Every packet built here is something a careful harness could have written: both sides of a
comparison carry the same conditions, the defences it ran are recorded, samples jitter the
way device timers do, work figures follow from the shapes, every achieved rate stays below
the device's datasheet peak, and the replay pins a commit and a container digest.

The controls (``_adv_controls``) call these builders; the cheats (``_adv_cheats``) take a
control and change one thing. Helpers that keep a packet coherent after a change (rescaling
a side's timings, recomputing the claim and the id) live here too, so that a cheat lies
about exactly one thing, as a careful cheater would.
"""

from __future__ import annotations

import copy
import hashlib
import math
import random
import statistics
from typing import Any

from kernel_evidence.models import SCHEMA_VERSION, EvidencePacket

Packet = dict[str, Any]

#: the schema version of packets written before 0.2 (read through the migration chain)
LEGACY = "0.1"

CREATED_AT = "2026-11-20T09:30:00Z"
MEASURED_AT = "2026-11-20T09:12:41Z"

_TO_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_MIB = 1024 * 1024

#: bytes per element of the dtypes used here
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8_e4m3": 1, "fp8_e4m3fnuz": 1, "int8": 1}


def hex40(seed: str) -> str:
    """A real-looking git commit (40 hex digits), stable for a seed."""
    return hashlib.sha1(seed.encode()).hexdigest()


def digest(seed: str) -> str:
    """A real-looking ``sha256:`` digest, stable for a seed."""
    return "sha256:" + hashlib.sha256(seed.encode()).hexdigest()


# ---------------------------------------------------------------- devices


def _dev(**kw: Any) -> dict[str, Any]:
    return kw


#: one entry per device: the hardware block, and how a harness on it times and profiles
DEVICES: dict[str, dict[str, Any]] = {
    "h100": _dev(
        hardware={
            "vendor": "nvidia",
            "device": "NVIDIA H100 80GB HBM3",
            "device_id": "nvidia-h100-sxm5-80gb",
            "arch": "sm_90a",
            "count": 1,
            "compute_units": 132,
            "memory": {"value": 80.0, "unit": "GiB"},
            "last_level_cache": {"value": 50.0, "unit": "MiB"},
            "driver": {"name": "nvidia", "version": "550.54.15"},
            "runtime": {"name": "CUDA", "version": "12.4"},
            "clocks": {
                "locked": True,
                "sm_requested": {"value": 1755.0, "unit": "MHz"},
                "sm_observed": {"value": 1755.0, "unit": "MHz"},
                "memory_observed": {"value": 2619.0, "unit": "MHz"},
            },
            "power_limit": {"value": 700.0, "unit": "W"},
            "host": {
                "hostname": "gpu-node-17",
                "os": "Ubuntu 22.04.4 LTS",
                "cpu": "Intel(R) Xeon(R) Platinum 8480+",
            },
        },
        method="cuda_events",
        profiler=("ncu", "2024.1.1"),
        llc_mib=50,
        flush_mib=256,
        compiler={"name": "nvcc", "version": "12.4.131"},
        language="cuda",
        target="sm_90a",
        image="nvcr.io/nvidia/pytorch:24.05-py3",
        power_avg=520.0,
        visible="CUDA_VISIBLE_DEVICES",
    ),  # fmt: skip
    "h200": _dev(
        hardware={
            "vendor": "nvidia",
            "device": "NVIDIA H200",
            "device_id": "nvidia-h200-sxm-141gb",
            "arch": "sm_90a",
            "count": 1,
            "compute_units": 132,
            "memory": {"value": 141.0, "unit": "GB"},
            "last_level_cache": {"value": 50.0, "unit": "MiB"},
            "driver": {"name": "nvidia", "version": "560.35.03"},
            "runtime": {"name": "CUDA", "version": "12.6"},
            "clocks": {
                "locked": True,
                "sm_requested": {"value": 1830.0, "unit": "MHz"},
                "sm_observed": {"value": 1830.0, "unit": "MHz"},
            },
            "power_limit": {"value": 700.0, "unit": "W"},
        },
        method="cuda_events",
        profiler=("ncu", "2024.3.2"),
        llc_mib=50,
        flush_mib=256,
        compiler={"name": "nvcc", "version": "12.6.77"},
        language="cuda",
        target="sm_90a",
        image="nvcr.io/nvidia/pytorch:24.10-py3",
        power_avg=560.0,
        visible="CUDA_VISIBLE_DEVICES",
    ),  # fmt: skip
    "a100": _dev(
        hardware={
            "vendor": "nvidia",
            "device": "NVIDIA A100-SXM4-80GB",
            "device_id": "nvidia-a100-sxm4-80gb",
            "arch": "sm_80",
            "count": 1,
            "compute_units": 108,
            "memory": {"value": 80.0, "unit": "GiB"},
            "last_level_cache": {"value": 40.0, "unit": "MiB"},
            "driver": {"name": "nvidia", "version": "535.183.01"},
            "runtime": {"name": "CUDA", "version": "12.2"},
            "clocks": {
                "locked": True,
                "sm_requested": {"value": 1410.0, "unit": "MHz"},
                "sm_observed": {"value": 1410.0, "unit": "MHz"},
            },
            "power_limit": {"value": 400.0, "unit": "W"},
        },
        method="cuda_events",
        profiler=("ncu", "2023.3.1"),
        llc_mib=40,
        flush_mib=256,
        compiler={"name": "nvcc", "version": "12.2.140"},
        language="cuda",
        target="sm_80",
        image="nvcr.io/nvidia/pytorch:23.10-py3",
        power_avg=330.0,
        visible="CUDA_VISIBLE_DEVICES",
    ),  # fmt: skip
    "b200": _dev(
        hardware={
            "vendor": "nvidia",
            "device": "NVIDIA B200",
            "device_id": "nvidia-b200",
            "arch": "sm_100a",
            "count": 1,
            "compute_units": 148,
            "memory": {"value": 180.0, "unit": "GB"},
            "last_level_cache": {"value": 126.0, "unit": "MiB"},
            "driver": {"name": "nvidia", "version": "570.86.15"},
            "runtime": {"name": "CUDA", "version": "12.8"},
            "clocks": {
                "locked": True,
                "sm_requested": {"value": 1965.0, "unit": "MHz"},
                "sm_observed": {"value": 1965.0, "unit": "MHz"},
            },
            "power_limit": {"value": 1000.0, "unit": "W"},
        },
        method="cuda_events",
        profiler=("ncu", "2025.1.0"),
        llc_mib=126,
        flush_mib=512,
        compiler={"name": "nvcc", "version": "12.8.61"},
        language="cuda",
        target="sm_100a",
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        power_avg=820.0,
        visible="CUDA_VISIBLE_DEVICES",
    ),  # fmt: skip
    "l40s": _dev(
        hardware={
            "vendor": "nvidia",
            "device": "NVIDIA L40S",
            "device_id": "nvidia-l40s",
            "arch": "sm_89",
            "count": 1,
            "compute_units": 142,
            "memory": {"value": 48.0, "unit": "GB"},
            "last_level_cache": {"value": 96.0, "unit": "MiB"},
            "driver": {"name": "nvidia", "version": "550.90.07"},
            "runtime": {"name": "CUDA", "version": "12.4"},
            "clocks": {"locked": False, "sm_observed": {"value": 2520.0, "unit": "MHz"}},
            "power_limit": {"value": 350.0, "unit": "W"},
        },
        method="cuda_events",
        profiler=("ncu", "2024.1.1"),
        llc_mib=96,
        flush_mib=256,
        compiler={"name": "nvcc", "version": "12.4.131"},
        language="cuda",
        target="sm_89",
        image="nvcr.io/nvidia/pytorch:24.05-py3",
        power_avg=290.0,
        visible="CUDA_VISIBLE_DEVICES",
    ),  # fmt: skip
    "mi300x": _dev(
        hardware={
            "vendor": "amd",
            "device": "AMD Instinct MI300X",
            "device_id": "amd-mi300x",
            "arch": "gfx942",
            "count": 1,
            "compute_units": 304,
            "memory": {"value": 192.0, "unit": "GiB"},
            "last_level_cache": {"value": 256.0, "unit": "MiB"},
            "driver": {"name": "amdgpu", "version": "6.8.5"},
            "runtime": {"name": "ROCm", "version": "6.2.4"},
            "clocks": {"locked": False, "sm_observed": {"value": 2100.0, "unit": "MHz"}},
            "power_limit": {"value": 750.0, "unit": "W"},
        },
        method="hip_events",
        profiler=("rocprofv3", "0.4.0"),
        llc_mib=256,
        flush_mib=512,
        compiler={"name": "hipcc", "version": "6.2.41133"},
        language="hip",
        target="gfx942",
        image="rocm/pytorch:rocm6.2.4_ubuntu22.04_py3.10_pytorch_release_2.5.1",
        power_avg=610.0,
        visible="HIP_VISIBLE_DEVICES",
    ),  # fmt: skip
    "mi355x": _dev(
        hardware={
            "vendor": "amd",
            "device": "AMD Instinct MI355X",
            "device_id": "amd-mi355x",
            "arch": "gfx950",
            "count": 1,
            "compute_units": 256,
            "memory": {"value": 288.0, "unit": "GB"},
            "last_level_cache": {"value": 256.0, "unit": "MiB"},
            "driver": {"name": "amdgpu", "version": "6.12.12"},
            "runtime": {"name": "ROCm", "version": "7.0.1"},
            "clocks": {"locked": False, "sm_observed": {"value": 2400.0, "unit": "MHz"}},
            "power_limit": {"value": 1400.0, "unit": "W"},
        },
        method="hip_events",
        profiler=("rocprofv3", "1.0.0"),
        llc_mib=256,
        flush_mib=512,
        compiler={"name": "hipcc", "version": "7.0.51831"},
        language="hip",
        target="gfx950",
        image="rocm/pytorch:rocm7.0_ubuntu24.04_py3.12_pytorch_release_2.7.1",
        power_avg=1120.0,
        visible="HIP_VISIBLE_DEVICES",
    ),  # fmt: skip
    "mi250x_gcd": _dev(
        hardware={
            "vendor": "amd",
            "device": "AMD Instinct MI250X",
            "device_id": "amd-mi250x",
            "arch": "gfx90a",
            "count": 1,
            "compute_units": 110,
            "partitions": 2,
            "memory": {"value": 64.0, "unit": "GiB"},
            "last_level_cache": {"value": 8.0, "unit": "MiB"},
            "driver": {"name": "amdgpu", "version": "6.3.6"},
            "runtime": {"name": "ROCm", "version": "6.1.3"},
            "clocks": {"locked": False, "sm_observed": {"value": 1700.0, "unit": "MHz"}},
            "power_limit": {"value": 560.0, "unit": "W"},
        },
        method="hip_events",
        profiler=("rocprofv3", "0.3.0"),
        llc_mib=8,
        flush_mib=256,
        compiler={"name": "hipcc", "version": "6.1.40093"},
        language="hip",
        target="gfx90a",
        image="rocm/pytorch:rocm6.1.3_ubuntu22.04_py3.10_pytorch_release_2.4.0",
        power_avg=260.0,
        visible="HIP_VISIBLE_DEVICES",
    ),  # fmt: skip
    "h100_pcie": _dev(
        hardware={
            "vendor": "nvidia",
            "device": "NVIDIA H100 PCIe",
            "device_id": "nvidia-h100-pcie-80gb",
            "arch": "sm_90",
            "count": 1,
            "compute_units": 114,
            "memory": {"value": 81559.0, "unit": "MiB"},
            "last_level_cache": {"value": 50.0, "unit": "MiB"},
            "driver": {"name": "nvidia", "version": "550.54.15"},
            "runtime": {"name": "CUDA", "version": "12.4"},
            "clocks": {
                "locked": True,
                "sm_requested": {"value": 1620.0, "unit": "MHz"},
                "sm_observed": {"value": 1620.0, "unit": "MHz"},
            },
            "power_limit": {"value": 350.0, "unit": "W"},
        },
        method="cuda_events",
        profiler=("ncu", "2024.1.1"),
        llc_mib=50,
        flush_mib=256,
        compiler={"name": "nvcc", "version": "12.4.131"},
        language="cuda",
        target="sm_90",
        image="nvcr.io/nvidia/pytorch:24.05-py3",
        power_avg=300.0,
        visible="CUDA_VISIBLE_DEVICES",
    ),  # fmt: skip
    "rtx4090": _dev(
        hardware={
            "vendor": "nvidia",
            "device": "NVIDIA GeForce RTX 4090",
            "device_id": "nvidia-rtx-4090",
            "arch": "sm_89",
            "count": 1,
            "compute_units": 128,
            "memory": {"value": 24564.0, "unit": "MiB"},
            "last_level_cache": {"value": 72.0, "unit": "MiB"},
            "driver": {"name": "nvidia", "version": "560.35.03"},
            "runtime": {"name": "CUDA", "version": "12.6"},
            "clocks": {"locked": False, "sm_observed": {"value": 2520.0, "unit": "MHz"}},
            "power_limit": {"value": 450.0, "unit": "W"},
        },
        method="cuda_events",
        profiler=("ncu", "2024.3.2"),
        llc_mib=72,
        flush_mib=256,
        compiler={"name": "nvcc", "version": "12.6.77"},
        language="cuda",
        target="sm_89",
        image="ghcr.io/acme/kernels-consumer:2026.10",
        power_avg=390.0,
        visible="CUDA_VISIBLE_DEVICES",
    ),  # fmt: skip
    "tpu_v5e": _dev(
        hardware={
            "vendor": "google",
            "device": "TPU v5 lite",
            "device_id": "google-tpu-v5e",
            "arch": "TPU v5 lite",
            "count": 1,
            "memory": {"value": 16.0, "unit": "GiB"},
            "runtime": {"name": "libtpu", "version": "0.0.5"},
            "clocks": {"locked": False, "sm_observed": {"value": 1500.0, "unit": "MHz"}},
        },
        method="xprof",
        profiler=("xprof", "2.18.0"),
        llc_mib=None,
        flush_mib=None,
        compiler={"name": "XLA (jax)", "version": "jaxlib 0.4.35"},
        language="pallas",
        target="TPU v5 lite",
        image="us-docker.pkg.dev/acme/tpu/jax:0.4.35",
        power_avg=None,
        visible="TPU_VISIBLE_CHIPS",
    ),  # fmt: skip
    "tpu_v6e": _dev(
        hardware={
            "vendor": "google",
            "device": "TPU v6e",
            "device_id": "google-tpu-v6e",
            "arch": "TPU v6e",
            "count": 1,
            "memory": {"value": 32.0, "unit": "GiB"},
            "runtime": {"name": "libtpu", "version": "0.0.9"},
            "clocks": {"locked": False, "sm_observed": {"value": 1750.0, "unit": "MHz"}},
        },
        method="xprof",
        profiler=("xprof", "2.19.0"),
        llc_mib=None,
        flush_mib=None,
        compiler={"name": "XLA (jax)", "version": "jaxlib 0.5.1"},
        language="pallas",
        target="TPU v6e",
        image="us-docker.pkg.dev/acme/tpu/jax:0.5.1",
        power_avg=None,
        visible="TPU_VISIBLE_CHIPS",
    ),  # fmt: skip
    "epyc": _dev(
        hardware={
            "vendor": "cpu",
            "device": "AMD EPYC 9654 96-Core Processor",
            "arch": "x86_64 (znver4)",
            "count": 1,
            "compute_units": 96,
            "memory": {"value": 768.0, "unit": "GiB"},
            "last_level_cache": {"value": 384.0, "unit": "MiB"},
            # 96 cores x 2.4 GHz x 32 fp32 FLOP/cycle (two 256-bit FMA pipes); 12 x DDR5-4800
            "peak_flop_rate": {"value": 7.37, "unit": "TFLOP/s"},
            "peak_bandwidth": {"value": 460.8, "unit": "GB/s"},
            "clocks": {"locked": False, "sm_observed": {"value": 3100.0, "unit": "MHz"}},
            "host": {"hostname": "cpu-bench-03", "os": "Ubuntu 24.04.1 LTS"},
        },
        method="host_clock",
        profiler=None,
        llc_mib=384,
        flush_mib=1024,
        compiler={"name": "gcc", "version": "13.2.0"},
        language="c++",
        target="znver4",
        image="ghcr.io/acme/cpu-bench:2026.10",
        power_avg=None,
        visible="OMP_NUM_THREADS",
    ),  # fmt: skip
    "xeon": _dev(
        hardware={
            "vendor": "intel",
            "device": "Intel(R) Xeon(R) Platinum 8480+",
            "arch": "x86_64 (sapphirerapids)",
            "count": 1,
            "compute_units": 56,
            "memory": {"value": 512.0, "unit": "GiB"},
            "last_level_cache": {"value": 105.0, "unit": "MiB"},
            # AMX: 56 cores x 2.0 GHz x 1024 bf16 FLOP/cycle; 8 x DDR5-4800
            "peak_flop_rate": {"value": 114.7, "unit": "TFLOP/s"},
            "peak_bandwidth": {"value": 307.2, "unit": "GB/s"},
            "clocks": {"locked": False, "sm_observed": {"value": 2000.0, "unit": "MHz"}},
        },
        method="host_clock",
        profiler=None,
        llc_mib=105,
        flush_mib=512,
        compiler={"name": "icpx", "version": "2024.2.1"},
        language="c++",
        target="sapphirerapids",
        image="intel/oneapi-basekit:2024.2.1-devel-ubuntu22.04",
        power_avg=None,
        visible="OMP_NUM_THREADS",
    ),  # fmt: skip
}


# ---------------------------------------------------------------- operators (task side)


def _tensor(name: str, shape: list[int], dtype: str, layout: str | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"name": name, "shape": shape, "dtype": dtype}
    if layout:
        t["layout"] = layout
    return t


def gemm(
    m: int, n: int, k: int, dtype: str = "bf16", out: str | None = None, ref_max: float = 187.5
) -> dict[str, Any]:
    """C[m,n] = A[m,k] @ B[n,k]^T: 2mnk FLOPs, every operand read or written once."""
    out = out or dtype
    sid = f"m{m}n{n}k{k}"
    nbytes = (m * k + n * k) * DTYPE_BYTES[dtype] + m * n * DTYPE_BYTES[out]
    return {
        "operator": "gemm",
        "description": f"C = A @ B^T, {dtype} in, fp32 accumulate, {out} out",
        "shape": {
            "id": sid, "dims": {"m": m, "n": n, "k": k},
            "tensors": [_tensor("A", [m, k], dtype, "row"), _tensor("B", [n, k], dtype, "row"), _tensor("C", [m, n], out, "row")],
            "work": {"flops": {"value": float(2 * m * n * k), "unit": "FLOP"}, "bytes": {"value": float(nbytes), "unit": "B"}},
        },
        "dtypes": [dtype] if out == dtype else [dtype, out],
        "elements": m * n, "ref_max": ref_max, "atol": 0.01, "rtol": 0.01,
    }  # fmt: skip


def attention(b: int, h: int, s: int, d: int, dtype: str = "bf16") -> dict[str, Any]:
    """Non-causal attention forward: 4*b*h*s^2*d FLOPs (QK^T and PV)."""
    sid = f"b{b}h{h}s{s}d{d}"
    qkv = [b, h, s, d]
    nbytes = 4 * b * h * s * d * DTYPE_BYTES[dtype]
    return {
        "operator": "attention_forward",
        "description": "softmax(Q K^T / sqrt(d)) V, non-causal",
        "shape": {
            "id": sid, "dims": {"batch": b, "heads": h, "seq": s, "head_dim": d},
            "tensors": [_tensor(x, qkv, dtype) for x in ("Q", "K", "V", "O")],
            "work": {"flops": {"value": float(4 * b * h * s * s * d), "unit": "FLOP"}, "bytes": {"value": float(nbytes), "unit": "B"}},
        },
        "dtypes": [dtype], "elements": b * h * s * d, "ref_max": 4.6, "atol": 0.02, "rtol": 0.02,
    }  # fmt: skip


def rowwise(
    op: str,
    rows: int,
    cols: int,
    dtype: str = "bf16",
    ref_max: float = 6.1,
    atol: float = 0.02,
    rtol: float = 0.02,
) -> dict[str, Any]:
    """A memory-bound row-wise operator (layernorm, rmsnorm, softmax, fused elementwise):
    reads the input once and writes the output once; no FLOP figure is claimed."""
    sid = f"r{rows}c{cols}"
    nbytes = 2 * rows * cols * DTYPE_BYTES[dtype]
    return {
        "operator": op,
        "description": f"{op} over the last dimension",
        "shape": {
            "id": sid, "dims": {"rows": rows, "cols": cols},
            "tensors": [_tensor("x", [rows, cols], dtype), _tensor("y", [rows, cols], dtype)],
            "work": {"bytes": {"value": float(nbytes), "unit": "B"}},
        },
        "dtypes": [dtype], "elements": rows * cols, "ref_max": ref_max, "atol": atol, "rtol": rtol,
    }  # fmt: skip


def task_of(
    op: dict[str, Any],
    extra_shapes: list[dict[str, Any]] | None = None,
    reference: dict[str, Any] | None = None,
) -> dict[str, Any]:
    shapes = [op["shape"], *(s["shape"] for s in extra_shapes or [])]
    return {
        "operator": op["operator"],
        "description": op["description"],
        "shapes": copy.deepcopy(shapes),
        "dtypes": list(op["dtypes"]),
        "reference": reference or {"name": "torch reference", "kind": "torch_eager", "version": "2.5.1"},
        "tolerance": {"atol": op["atol"], "rtol": op["rtol"]},
    }


def shape_result(op: dict[str, Any], frac: float = 0.2) -> dict[str, Any]:
    """A passed shape whose error is ``frac`` of its own bound (atol + rtol * |ref|)."""
    bound = op["atol"] + op["rtol"] * op["ref_max"]
    err = round(bound * frac, 6)
    return {
        "shape_id": op["shape"]["id"], "passed": True, "max_abs_error": err,
        "max_rel_error": round(err / op["ref_max"], 6), "atol": op["atol"], "rtol": op["rtol"],
        "matched_ratio": 1.0, "reference_max_abs": op["ref_max"], "nan_seen": False, "inf_seen": False,
        "elements": op["elements"],
    }  # fmt: skip


# ---------------------------------------------------------------- statistics


def unit_for(seconds: float) -> str:
    if seconds < 1e-3:
        return "us"
    if seconds < 1.0:
        return "ms"
    return "s"


def stats_from(samples: list[float], unit: str, dropped: int | None = None) -> dict[str, Any]:
    """A statistics block that agrees with its samples (odd count: the median is a sample)."""
    xs = sorted(samples)
    n = len(xs)
    out: dict[str, Any] = {
        "unit": unit,
        "median": xs[n // 2] if n % 2 else round((xs[n // 2 - 1] + xs[n // 2]) / 2, 6),
        "mean": round(statistics.fmean(xs), 6),
        "min": xs[0],
        "max": xs[-1],
        "n": n,
        "samples": list(samples),
    }
    if n > 1:
        out["std"] = round(statistics.stdev(xs), 6)
    if n >= 10:
        out["percentiles"] = {"p10": xs[n // 10], "p50": out["median"], "p90": xs[(9 * n) // 10]}
    if dropped is not None:
        out["dropped"] = dropped
    return out


def jitter(median_s: float, n: int, seed: str, sigma: float = 0.012) -> tuple[list[float], str]:
    """``n`` timer samples around ``median_s`` seconds, right-skewed like real device timers,
    in a unit suited to their size; the sample median is exactly ``median_s`` (rounded)."""
    unit = unit_for(median_s)
    scale = 1.0 / _TO_S[unit]
    rng = random.Random(seed)
    raw = [math.exp(rng.gauss(0.0, sigma)) * (1.0 + abs(rng.gauss(0.0, sigma / 2))) for _ in range(n)]
    mid = sorted(raw)[n // 2]
    xs = [round(median_s * scale * r / mid, 4) for r in raw]
    return xs, unit


def time_stats(median_s: float, n: int, seed: str, sigma: float = 0.012) -> dict[str, Any]:
    xs, unit = jitter(median_s, n, seed, sigma)
    return stats_from(xs, unit)


def median_s(stats: dict[str, Any]) -> float:
    return float(stats["median"]) * _TO_S[stats["unit"]]


def mean_s(stats: dict[str, Any]) -> float:
    return float(stats["mean"]) * _TO_S[stats["unit"]]


# ---------------------------------------------------------------- sides and defences


def conditions(
    dev: dict[str, Any],
    op: dict[str, Any],
    *,
    warmup: int,
    repeats: int,
    session: str,
    method: str | None = None,
    cache: dict[str, Any] | None = None,
) -> dict[str, Any]:
    hw = dev["hardware"]
    c: dict[str, Any] = {
        "dtypes": list(op["dtypes"]), "shape_id": op["shape"]["id"], "dims": dict(op["shape"]["dims"]),
        "device": hw["device"], "device_count": 1, "method": method or dev["method"],
        "warmup": warmup, "repeats": repeats, "synchronized": True,
        "clock_policy": "locked" if hw.get("clocks", {}).get("locked") else "unlocked",
        "session": session, "interleaved": True, "fresh_inputs": True, "sample_handling": "all",
    }  # fmt: skip
    if "device_id" in hw:
        c["device_id"] = hw["device_id"]
    c["cache"] = copy.deepcopy(cache) if cache is not None else cache_policy(dev)
    return c


def cache_policy(dev: dict[str, Any]) -> dict[str, Any]:
    if dev["llc_mib"] is None:  # TPUs: no last-level cache between calls to flush
        return {"mode": "unknown"}
    return {
        "mode": "flushed",
        "flush_bytes": {"value": float(dev["flush_mib"]), "unit": "MiB"},
        "last_level_cache": {"value": float(dev["llc_mib"]), "unit": "MiB"},
        "flush_in_timed_window": False,
    }


def defences(dev: dict[str, Any], kernel_name: str, *, serving: bool = False) -> list[dict[str, Any]]:
    """The defence record of a harness that ran every check that applies to the device."""
    tool = "acme-bench 3.2.0"
    if serving:
        return [
            {"check": "fresh_inputs", "outcome": "not_applicable", "detail": "serving: every request is a new prompt", "tool": tool},
            {"check": "outputs_checked_after_timing", "outcome": "passed", "detail": "completions compared with a reference run on 64 sampled requests", "tool": tool},
            {"check": "timer_integrity", "outcome": "passed", "detail": "client clock checked against a 250 ms sleep", "tool": tool},
            {"check": "unseen_inputs", "outcome": "passed", "detail": "random dataset drawn with a seed the server never saw", "tool": tool},
            {"check": "candidate_kernel_profiled", "outcome": "not_applicable", "tool": tool},
            {"check": "hidden_workload", "outcome": "passed", "detail": "seed released after the server started", "tool": tool},
            {"check": "cache_flush", "outcome": "not_applicable", "detail": "prefix caching disabled on both sides", "tool": tool},
        ]  # fmt: skip
    flush = (
        {"check": "cache_flush", "outcome": "passed", "detail": f"{dev['flush_mib']} MiB buffer written between calls; last-level cache {dev['llc_mib']} MiB", "tool": tool}
        if dev["llc_mib"] is not None
        else {"check": "cache_flush", "outcome": "not_applicable", "detail": "no last-level cache between calls on this device", "tool": tool}
    )  # fmt: skip
    prof = (
        {"check": "candidate_kernel_profiled", "outcome": "passed", "detail": f"{kernel_name} seen in the capture of the timed call", "tool": tool}
        if dev["profiler"] is not None
        else {"check": "candidate_kernel_profiled", "outcome": "not_applicable", "detail": "host code: no kernel launch to profile", "tool": tool}
    )  # fmt: skip
    return [
        {"check": "fresh_inputs", "outcome": "passed", "detail": "new inputs for each side in every round", "tool": tool},
        {"check": "outputs_checked_after_timing", "outcome": "passed", "detail": "outputs of the last timed call compared with the reference", "tool": tool},
        {"check": "timer_integrity", "outcome": "passed", "detail": "timer functions checked unpatched; a 1 ms spin measured 1.00 ms", "tool": tool},
        {"check": "unseen_inputs", "outcome": "passed", "detail": "re-run on 8 unseen input sets, all matched", "tool": tool},
        prof,
        {"check": "hidden_workload", "outcome": "passed", "detail": "input seed drawn after the candidate was loaded", "tool": tool},
        flush,
    ]  # fmt: skip


def capture(
    dev: dict[str, Any], kernel_name: str, shape_id: str, per_call_s: float, seed: str
) -> dict[str, Any]:
    """A profiler capture of the candidate at the timed shape: one launch per call."""
    tool, version = dev["profiler"]
    ns = round(per_call_s * 1e9 * 0.993, 1)  # profilers time the kernel alone: a hair less
    rec: dict[str, Any] = {
        "name": kernel_name, "id": "0", "device": 0,
        "metrics": {"duration": {"value": ns, "unit": "ns"}},
    }  # fmt: skip
    if tool != "xprof":
        rec["grid"] = [132, 1, 1]
        rec["block"] = [384, 1, 1]
    ext = {"ncu": "ncu-rep", "rocprofv3": "csv", "xprof": "xplane.pb"}[tool]
    return {
        "tool": tool,
        "version": version,
        "source": {
            "kind": "profile",
            "name": f"{seed}.{ext}",
            "sha256": digest(seed + ext),
            "path": f"profiles/{seed}.{ext}",
        },
        "kernels": [rec],
        "of": {
            "side": "candidate",
            "shape_id": shape_id,
            "expected_kernels": [kernel_name],
            "claim_tolerance": 0.25,
        },
    }


# ---------------------------------------------------------------- whole packets


def envelope(name: str, kind: str, status: str) -> Packet:
    return {
        "schema_version": SCHEMA_VERSION,
        "created_at": CREATED_AT,
        "measured_at": MEASURED_AT,
        "producer": {"name": "acme-bench", "version": "3.2.0"},
        "subject": {"kind": kind, "name": name},
        "status": status,
    }


def replay(name: str, dev: dict[str, Any], argv: list[str]) -> dict[str, Any]:
    return {
        "command": argv,
        "cwd": ".",
        "env": {dev["visible"]: "0"},
        "repository": {
            "url": "https://github.com/acme-ai/kernels",
            "commit": hex40(name),
            "dirty": False,
            "branch": "main",
        },
        "container": {"image": dev["image"], "digest": digest("image:" + dev["image"])},
        "seeds": {"inputs": 20261120},
    }


def cost(dev: dict[str, Any], seconds: float, devices: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {
        "gpu_time": {"value": round(seconds * devices, 2), "unit": "s"},
        "wall_time": {"value": round(seconds + 7.5, 2), "unit": "s"},
    }
    if dev.get("power_avg"):
        out["energy"] = {
            "energy": {"value": round(dev["power_avg"] * seconds * devices, 1), "unit": "J"},
            "window": {"value": round(seconds, 2), "unit": "s"},
            "source": "nvml" if dev["hardware"]["vendor"] == "nvidia" else "amd-smi",
        }
    return out


def kernel_claim(
    name: str,
    dev_key: str,
    op: dict[str, Any],
    *,
    cand_s: float,
    base_s: float,
    provider: str,
    version: str,
    call: str,
    kernel: str,
    warmup: int = 20,
    repeats: int = 51,
    sigma: float = 0.012,
    reference: dict[str, Any] | None = None,
    extra_shapes: list[dict[str, Any]] | None = None,
    basis: str = "median",
    argv: list[str] | None = None,
) -> Packet:
    """A passed kernel packet claiming ``base_s / cand_s`` over a library baseline, with
    everything a strong claim needs (both sides' conditions, defences, capture, cost)."""
    dev = DEVICES[dev_key]
    p = envelope(name, "kernel", "passed")
    sid = op["shape"]["id"]
    p["task"] = task_of(op, extra_shapes, reference)
    p["compile"] = {
        "compiler": dict(dev["compiler"]), "language": dev["language"], "target_arch": dev["target"],
        "flags": ["-O3"], "source_digest": digest("src:" + name), "succeeded": True,
    }  # fmt: skip
    p["validation"] = {
        "verdict": "passed",
        "shapes": [shape_result(op)] + [shape_result(s) for s in extra_shapes or []],
        "seeds": [20261120, 20261121],
        "inputs_regenerated": True,
    }
    session = "sess-" + hex40(name)[:12]
    cand = time_stats(cand_s, repeats, name + "/cand", sigma)
    base = time_stats(base_s, repeats, name + "/base", sigma)
    cond = conditions(dev, op, warmup=warmup, repeats=repeats, session=session)
    locked = bool(dev["hardware"].get("clocks", {}).get("locked"))
    timing: dict[str, Any] = {
        "method": dev["method"], "warmup": warmup, "repeats": repeats, "shape_id": sid, "stats": cand,
        "clock_policy": "locked" if locked else "unlocked", "synchronized": True, "interleaved": True,
        "stop_rule": f"fixed {repeats} repeats after {warmup} warmup",
        "baseline": {
            "provider": provider, "version": version, "call": call, "same_session": True,
            "interleaved": True, "stats": base, "conditions": copy.deepcopy(cond),
        },
        "speedup": {"value": 1.0, "basis": basis},
        "conditions": cond,
    }  # fmt: skip
    mode = cond["cache"]["mode"]
    if mode in ("flushed", "warm", "cold_start", "unknown"):
        timing["cache_policy"] = mode
    p["timing"] = timing
    recompute_speedup(p)
    if dev["profiler"] is not None:
        p["profiler"] = [capture(dev, kernel, sid, median_s(cand), name)]
    p["hardware"] = copy.deepcopy(dev["hardware"])
    p["replay"] = replay(name, dev, argv or ["python", "bench/run.py", "--kernel", name, "--shape", sid])
    total = (warmup + repeats) * (mean_s(cand) + mean_s(base)) + 9.0  # timed calls, flushes, checks
    p["cost"] = cost(dev, total)
    p["defences"] = defences(dev, kernel)
    return finalize(p)


def serving_claim(
    name: str,
    dev_key: str,
    *,
    model: str,
    engine: tuple[str, str],
    base_engine: tuple[str, str],
    prompts: int = 1000,
    input_len: int = 1024,
    output_len: int = 128,
    duration_s: float = 31.4,
    base_duration_s: float = 36.4,
    ttft_ms: float = 88.1,
    tpot_ms: float = 14.2,
    failed: int = 0,
    devices: int = 1,
    claim: bool = True,
    settings: dict[str, Any] | None = None,
    concurrency: int = 64,
) -> Packet:
    """A serving benchmark run (vLLM-style client) with consistent token arithmetic, and, when
    ``claim``, an output-throughput claim over a named engine configuration."""
    dev = DEVICES[dev_key]
    p = envelope(name, "serving", "passed")
    completed = prompts - failed
    settings = dict(settings or {"max_num_seqs": 256, "enable_chunked_prefill": True})
    p["task"] = {
        "workload": f"random {input_len} in / {output_len} out",
        "serving": {
            "model": model, "engine": {"name": engine[0], "version": engine[1]}, "dataset": "random",
            "num_prompts": prompts, "input_len": input_len, "output_len": output_len,
            "max_concurrency": concurrency, "request_rate": "inf", "tensor_parallel_size": devices,
            "settings": settings,
        },
    }  # fmt: skip
    p["timing"] = {
        "method": "serving_client",
        "stats": _latency(ttft_ms + tpot_ms * (output_len - 1), completed, ci=True),
        "serving": _serving(completed, failed, input_len, output_len, duration_s, ttft_ms, tpot_ms),
    }
    session = "sess-" + hex40(name)[:12]
    cond = {
        "dtypes": ["bf16"], "device": dev["hardware"]["device"], "device_count": devices,
        "method": "serving_client", "warmup": 16, "synchronized": True, "session": session,
        "clock_policy": "unlocked", "fresh_inputs": True, "sample_handling": "all",
    }  # fmt: skip
    if "device_id" in dev["hardware"]:
        cond["device_id"] = dev["hardware"]["device_id"]
    p["timing"]["conditions"] = cond
    if claim:
        base_tokens = prompts * output_len
        p["timing"]["baseline"] = {
            "engine": {"name": base_engine[0], "version": base_engine[1]},
            "settings": {**settings, "tensor_parallel_size": devices},
            "same_session": True,
            "serving": _serving(prompts, 0, input_len, output_len, base_duration_s, ttft_ms * 1.1, tpot_ms * base_duration_s / duration_s),
            "conditions": copy.deepcopy(cond),
        }  # fmt: skip
        out = p["timing"]["serving"]["output_throughput"]["value"]
        base_out = _sig(base_tokens / base_duration_s)
        p["timing"]["speedup"] = {"value": round(out / base_out, 4), "basis": "output_throughput"}
    hw = copy.deepcopy(dev["hardware"])
    hw["count"] = devices
    hw["clocks"] = (
        {"locked": False, "sm_observed": {"value": 1980.0, "unit": "MHz"}}
        if hw["vendor"] == "nvidia"
        else hw["clocks"]
    )
    p["hardware"] = hw
    visible = ",".join(str(i) for i in range(devices))
    p["replay"] = replay(name, dev, [
        "vllm", "bench", "serve", "--model", model, "--dataset-name", "random",
        "--random-input-len", str(input_len), "--random-output-len", str(output_len),
        "--num-prompts", str(prompts), "--max-concurrency", str(concurrency), "--seed", "20261120", "--save-result",
    ])  # fmt: skip
    p["replay"]["env"] = {dev["visible"]: visible}
    p["cost"] = cost(dev, duration_s + (base_duration_s if claim else 0.0) + 60.0, devices)
    p["defences"] = defences(dev, "", serving=True)
    return finalize(p)


def _latency(median_ms: float, n: int, ci: bool = False) -> dict[str, Any]:
    """A latency summary (no per-request samples) with a right tail, as benchmark clients print."""
    m = round(median_ms, 2)
    s: dict[str, Any] = {
        "unit": "ms", "median": m, "mean": round(m * 1.04, 2), "std": round(m * 0.21, 2),
        "min": round(m * 0.55, 2), "max": round(m * 1.9, 2),
        "percentiles": {"p50": m, "p90": round(m * 1.38, 2), "p99": round(m * 1.72, 2)}, "n": n,
    }  # fmt: skip
    if ci:
        s["ci_low"] = round(m * 0.985, 2)
        s["ci_high"] = round(m * 1.015, 2)
        s["ci_level"] = 0.95
    return s


def _sig(x: float) -> float:
    """A rate to 5 significant digits (as a benchmark client stores it)."""
    return float(f"{x:.5g}")


def _serving(
    completed: int,
    failed: int,
    input_len: int,
    output_len: int,
    duration_s: float,
    ttft_ms: float,
    tpot_ms: float,
) -> dict[str, Any]:
    tin = completed * input_len
    tout = completed * output_len
    return {
        "completed": completed, "failed": failed, "duration": {"value": duration_s, "unit": "s"},
        "request_throughput": {"value": _sig(completed / duration_s), "unit": "req/s"},
        "output_throughput": {"value": _sig(tout / duration_s), "unit": "tok/s"},
        "total_token_throughput": {"value": _sig((tin + tout) / duration_s), "unit": "tok/s"},
        "total_input_tokens": tin, "total_output_tokens": tout,
        "ttft": _latency(ttft_ms, completed), "tpot": _latency(tpot_ms, completed),
        "itl": _latency(tpot_ms * 0.98, completed),
        "e2el": _latency(ttft_ms + tpot_ms * (output_len - 1), completed),
    }  # fmt: skip


def failure_packet(
    name: str,
    dev_key: str,
    op: dict[str, Any],
    *,
    status: str,
    failure_class: str,
    message: str,
    shapes: list[dict[str, Any]] | None = None,
    timed: bool = False,
    compile_ok: bool = True,
) -> Packet:
    """An honest failure: what failed, on which shape, with the per-shape results."""
    dev = DEVICES[dev_key]
    p = envelope(name, "kernel", status)
    p["failure"] = {"failure_class": failure_class, "message": message, "shape_id": op["shape"]["id"]}
    p["lineage"] = {
        "run_id": "rl-run-2026-11-20",
        "candidate_id": name,
        "iteration": 412,
        "relation": "mutation",
    }
    p["task"] = task_of(op)
    p["compile"] = {
        "compiler": dict(dev["compiler"]), "language": dev["language"], "target_arch": dev["target"],
        "succeeded": compile_ok,
    }  # fmt: skip
    if shapes is not None:
        p["validation"] = {"verdict": "failed", "shapes": shapes, "inputs_regenerated": True}
    if timed:
        st = time_stats(0.4e-3, 21, name)
        p["timing"] = {
            "method": dev["method"], "warmup": 5, "repeats": 21, "shape_id": op["shape"]["id"], "stats": st,
            "conditions": conditions(dev, op, warmup=5, repeats=21, session="sess-" + hex40(name)[:12]),
        }  # fmt: skip
    p["hardware"] = copy.deepcopy(dev["hardware"])
    p["replay"] = replay(name, dev, ["python", "eval_candidate.py", "--candidate", f"candidates/{name}.py"])
    return finalize(p)


# ---------------------------------------------------------------- keeping a packet coherent


def recompute_speedup(p: Packet) -> Packet:
    """Set the claim to what the recorded statistics give (a cheater keeps this consistent)."""
    t = p["timing"]
    sp = t["speedup"]
    basis = sp.get("basis") or "median"
    if basis in ("median", "mean", "min"):
        c = float(t["stats"][basis]) * _TO_S[t["stats"]["unit"]]
        b = float(t["baseline"]["stats"][basis]) * _TO_S[t["baseline"]["stats"]["unit"]]
        sp["value"] = round(b / c, 4) if c > 0 else 1e9
    else:
        c = t["serving"][basis]["value"]
        b = t["baseline"]["serving"][basis]["value"]
        sp["value"] = round(c / b, 4)
    return p


def set_side_samples(
    p: Packet, side: str, samples: list[float], unit: str, *, dropped: int | None = None
) -> None:
    """Replace one side's samples (``candidate`` or ``baseline``) and its statistics, keeping
    repeats, the claim and the candidate's capture in step with them."""
    t = p["timing"]
    st = stats_from(samples, unit, dropped)
    if side == "candidate":
        t["stats"] = st
        t["repeats"] = st["n"] + (dropped or 0)
        if "conditions" in t:
            t["conditions"]["repeats"] = t["repeats"]
        for cap in p.get("profiler") or []:
            if (cap.get("of") or {}).get("side") == "candidate":
                for k in cap["kernels"]:
                    k["metrics"]["duration"]["value"] = round(median_s(st) * 1e9 * 0.993, 1)
    else:
        t["baseline"]["stats"] = st
        if "conditions" in t["baseline"]:
            t["baseline"]["conditions"]["repeats"] = st["n"] + (dropped or 0)
    recompute_speedup(p)


def scale_side(p: Packet, side: str, factor: float) -> None:
    """Multiply every timing of one side by ``factor`` (a cheater shrinking their time)."""
    t = p["timing"]
    st = t["stats"] if side == "candidate" else t["baseline"]["stats"]
    xs = [round(x * factor, 4 if factor >= 0.01 else 6) for x in st["samples"]]
    set_side_samples(p, side, xs, st["unit"], dropped=st.get("dropped"))


def finalize(p: Packet) -> Packet:
    """The packet with its content-addressed id (computed by the models, as a producer would)."""
    p.pop("packet_id", None)
    pid = EvidencePacket.model_validate(p).compute_id()
    return {"packet_id": pid, **p}
