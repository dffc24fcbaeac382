"""Red team 5, physics: GEMM tensors smaller than the dims (KE605), a kernel, an expected
kernel, a compile flag or a serving `quantization` setting narrower than every dtype the
packet records (KE606), and profiler rates that escaped the peaks: a cost-model tool's name
on a GPU, a FLOP/s metric under another name, the capture's summary (KE601/KE602). Each
beside an honest twin that must still pass."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_kit import control, found  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
FP8 = "h100_fp8_gemm_vs_cublaslt"
SUITE = "h100_gemm_suite_three_shapes"
TPU = "tpu_v6e_matmul_vs_xla"
SERV = "serving_vllm_llama8b_h100"


def under(p: dict[str, Any], prefix: str) -> set[tuple[str, str]]:
    return {(r, q) for r, q in found(p) if q.startswith(prefix)}


# ---------------------------------------------------------------- KE605: tensors vs dims


def test_gemm_tensors_smaller_than_the_dims() -> None:
    p = control()
    for t in p["task"]["shapes"][0]["tensors"]:
        if t["name"] in ("A", "B"):
            t["shape"] = [8192, 6144]  # k = 6144 while dims and work say 8192
    assert ("KE605", "/task/shapes/0/tensors/0/shape") in found(p)
    p = control()
    p["task"]["shapes"][0]["tensors"][2]["shape"] = [8192, 4096]  # C: half of n
    assert ("KE605", "/task/shapes/0/tensors/2/shape") in found(p)


def test_gemm_tensors_that_hold_the_dims_pass() -> None:
    # B stored (n, k) on a non-square shape; and padding (larger than the dims)
    p = control(SUITE)
    assert p["task"]["shapes"][2]["tensors"][1]["shape"] == [8192, 1024]
    assert not under(p, "/task/shapes")
    p = control()
    p["task"]["shapes"][0]["tensors"][0]["shape"] = [8256, 8192]
    assert not under(p, "/task/shapes/0/tensors")
    # a packed int4 weight holds half its logical extent: not judged
    p = control()
    p["task"]["shapes"][0]["tensors"][1]["shape"] = [4096, 8192]
    p["task"]["shapes"][0]["tensors"][1]["dtype"] = "int8"
    assert ("KE605", "/task/shapes/0/tensors/1/shape") not in found(p)
    # an operand not named as A/B/C is not mapped to the dims
    p = control()
    p["task"]["shapes"][0]["tensors"][0]["name"] = "activations"
    p["task"]["shapes"][0]["tensors"][0]["shape"] = [8192, 6144]
    assert ("KE605", "/task/shapes/0/tensors/0/shape") not in found(p)


# ---------------------------------------------------------------- KE606: narrow kernels


def test_fp8_kernel_under_bf16_labels() -> None:
    p = control()
    name = "gemm_e4m3_tn_128x256_warpspecialized_fp8"
    p["profiler"][0]["kernels"][0]["name"] = name
    p["profiler"][0]["of"]["expected_kernels"] = [name]
    assert ("KE606", "/profiler/0/kernels/0/name") in found(p)
    p = control()
    p["profiler"][0]["kernels"][0]["raw_name"] = "void gemm<cutlass::float_e4m3_t>(Params)"
    assert ("KE606", "/profiler/0/kernels/0/raw_name") in found(p)
    p = control()
    p["profiler"][0]["of"]["expected_kernels"] = [
        "gemm_bf16_tn_128x256_warpspecialized",
        "quantize_to_f8_kernel",
    ]
    assert ("KE606", "/profiler/0/of/expected_kernels/1") in found(p)


def test_narrow_kernel_names_that_are_honest() -> None:
    # an fp8 task's own fp8 kernel
    p = control(FP8)
    assert not under(p, "/profiler")
    # `f8` inside a hex id, `uint8` in a mask kernel, a baseline capture: not a precision
    p = control()
    p["profiler"][0]["kernels"][0]["raw_name"] = "gemm_bf16_tn_kernel_0x3f8a_uint8_mask"
    assert not [f for f in found(p) if f[0] == "KE606"]
    p = control()
    p["profiler"][0]["of"]["side"] = "baseline"
    p["profiler"][0]["kernels"][0]["name"] = "sm90_gemm_e4m3_tn"
    assert ("KE606", "/profiler/0/kernels/0/name") not in found(p)


def test_fp8_compile_flag_under_bf16_labels() -> None:
    p = control()
    p["compile"]["flags"] = ["-O3", "-DGEMM_INPUT_E4M3=1", "-DQUANTIZE_INPUTS_ON_LOAD"]
    assert ("KE606", "/compile/flags/1") in found(p)
    # flags that turn fp8 off, or only build support for it, say nothing of the inputs
    p = control()
    p["compile"]["flags"] = ["-O3", "-DFLASHATTENTION_DISABLE_FP8", "-DUSE_FP8=0", "-DENABLE_FP8_SUPPORT"]
    assert not [f for f in found(p) if f[0] == "KE606"]
    # an fp8 task may build its fp8 path
    p = control(FP8)
    p["compile"]["flags"] = ["-O3", "-DGEMM_INPUT_E4M3=1"]
    assert not [f for f in found(p) if f[0] == "KE606"]


# ---------------------------------------------------------------- KE606: serving quantization


def test_quantization_setting_under_16_bit_dtypes() -> None:
    p = control(SERV)
    p["task"]["serving"]["settings"]["quantization"] = "fp8"
    assert ("KE606", "/task/serving/settings/quantization") in found(p)
    p = control(SERV)
    p["timing"]["baseline"]["settings"]["quantization"] = "bitsandbytes"
    assert ("KE606", "/timing/baseline/settings/quantization") in found(p)


def test_quantization_settings_that_are_honest() -> None:
    p = control(SERV)
    p["task"]["serving"]["settings"]["quantization"] = "none"
    p["timing"]["baseline"]["settings"]["quantization"] = "none"
    p["task"]["serving"]["settings"]["kv_cache_dtype"] = "fp8"
    assert not [f for f in found(p) if f[0] == "KE606"]
    p = control(SERV)
    p["task"]["serving"]["settings"]["quantization"] = "fp8"
    p["timing"]["conditions"]["dtypes"] = ["fp8"]
    assert ("KE606", "/task/serving/settings/quantization") not in found(p)


# ---------------------------------------------------------------- KE601/KE602: capture rates


def _metric(p: dict[str, Any], name: str, value: float, unit: str) -> str:
    p["profiler"][0]["kernels"][0]["metrics"][name] = {"value": value, "unit": unit}
    return f"/profiler/0/kernels/0/metrics/{name}"


def test_cost_model_tool_name_on_a_gpu_is_held_to_the_highest_peak() -> None:
    p = control()
    p["profiler"][0]["tool"] = "xprof"
    ptr = _metric(p, "achieved_flop_rate", 2500.0, "TFLOP/s")  # H100's highest is 1979 (fp8)
    assert ("KE601", ptr) in found(p)


def test_cost_model_rates_that_are_honest() -> None:
    # XProf on a GPU: its bytes count on-chip traffic; its FLOPs may be in a precision the
    # labels do not say (up to the device's highest peak)
    p = control()
    p["profiler"][0]["tool"] = "xprof"
    _metric(p, "dram_bandwidth", 9.0e6, "GB/s")
    _metric(p, "achieved_flop_rate", 1500.0, "TFLOP/s")
    assert not under(p, "/profiler/0/kernels/0/metrics")
    # on a TPU the cost model is not held at all
    p = control(TPU)
    _metric(p, "achieved_flop_rate", 5.0e15, "FLOP/s")
    assert not under(p, "/profiler/0/kernels/0/metrics")
    # a counter tool on the GPU is held to the task's precision (bf16: 989)
    p = control()
    ptr = _metric(p, "achieved_flop_rate", 1500.0, "TFLOP/s")
    assert ("KE601", ptr) in found(p)


def test_flop_rate_under_another_name() -> None:
    p = control()
    ptr = _metric(p, "tflops", 2500.0, "TFLOP/s")
    assert ("KE601", ptr) in found(p)
    p = control()
    _metric(p, "tflops", 600.0, "TFLOP/s")
    _metric(p, "issue_rate", 5.0e12, "1/s")  # not a FLOP/s unit
    assert not under(p, "/profiler/0/kernels/0/metrics")


def test_capture_summary_is_held() -> None:
    p = control()
    p["profiler"][0]["summary"] = {"achieved_flop_rate": {"value": 2500.0, "unit": "TFLOP/s"}}
    assert ("KE601", "/profiler/0/summary/achieved_flop_rate") in found(p)
    p = control()
    p["profiler"][0]["summary"] = {"dram_bandwidth": {"value": 9000.0, "unit": "GB/s"}}
    assert ("KE602", "/profiler/0/summary/dram_bandwidth") in found(p)
    p = control()
    p["profiler"][0]["summary"] = {"sm_throughput": {"value": 140.0, "unit": "%"}}
    assert ("KE601", "/profiler/0/summary/sm_throughput") in found(p)
    p = control()
    p["profiler"][0]["summary"] = {
        "achieved_flop_rate": {"value": 600.0, "unit": "TFLOP/s"},
        "dram_bandwidth": {"value": 1200.0, "unit": "GB/s"},
        "sm_throughput": {"value": 88.0, "unit": "%"},
        "tensor_core_inst_executed": {"value": 1.0e9, "unit": "count"},
    }
    assert not under(p, "/profiler/0/summary")
