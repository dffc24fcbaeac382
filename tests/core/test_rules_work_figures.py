"""KE605-KE607 and KE805-KE806: work figures and device facts that the task and the device
table contradict are caught; honest ones pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate

VALID = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"
BAND = {"KE605", "KE606", "KE607", "KE805", "KE806"}


def load(name: str) -> dict[str, Any]:
    d = json.loads((VALID / name).read_text(encoding="utf-8"))
    d.pop("packet_id")
    return d


def h100() -> dict[str, Any]:
    return load("nvidia_h100_gemm_vs_cublaslt.json")


def found(d: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in validate(d).findings if f.rule_id in BAND}


@pytest.mark.parametrize(
    "name",
    [
        "nvidia_h100_gemm_vs_cublaslt.json",
        "amd_mi300x_gemm_fp8_vs_hipblaslt.json",
        "tpu_v5e_paged_attention_vs_xla.json",
        "serving_vllm_llama8b_h100.json",
    ],
)
def test_the_valid_examples_pass(name: str) -> None:
    assert found(load(name)) == set()


# ------------------------------------------------------------------------------ KE605


@pytest.mark.parametrize("factor", [4.0, 0.25])
def test_gemm_flops_beyond_2x_of_the_dims(factor: float) -> None:
    d = h100()
    d["task"]["shapes"][0]["work"]["flops"]["value"] = 2.0 * 4096**3 * factor
    assert ("KE605", "/task/shapes/0/work/flops") in found(d)


def test_gemm_flops_within_2x_pass() -> None:
    d = h100()
    d["task"]["shapes"][0]["work"]["flops"]["value"] = 2.0 * 4096**3 * 1.05  # an epilogue's extra work
    assert found(d) == set()


def test_gemm_flops_from_tensors_without_dims() -> None:
    d = h100()
    sh = d["task"]["shapes"][0]
    del sh["dims"]
    # A is 4096 x 1024, B^T is 2048 x 1024: 2 * 4096 * 2048 * 1024 FLOPs
    sh["tensors"][0]["shape"] = [4096, 1024]
    sh["tensors"][1]["shape"] = [2048, 1024]
    sh["work"] = {"flops": {"value": 2.0 * 4096 * 2048 * 1024 * 3, "unit": "FLOP"}}
    assert ("KE605", "/task/shapes/0/work/flops") in found(d)
    sh["work"]["flops"]["value"] = 2.0 * 4096 * 2048 * 1024
    assert found(d) == set()


def test_batched_and_task_level_flops() -> None:
    d = h100()
    d["task"]["operator"] = "torch.bmm"
    d["task"]["shapes"][0]["dims"]["batch"] = 8
    d["task"]["shapes"][0]["work"]["flops"]["value"] = 2.0 * 8 * 4096**3
    d["task"]["shapes"][0]["work"].pop("bytes")
    st = d["timing"]["stats"]
    st.update({k: v * 8 for k, v in st.items() if isinstance(v, float)})
    st["samples"] = [x * 8 for x in st["samples"]]
    st["percentiles"] = {k: v * 8 for k, v in st["percentiles"].items()}
    b = d["timing"]["baseline"]["stats"]
    b.update({k: v * 8 for k, v in b.items() if isinstance(v, float)})
    if "samples" in b:
        b["samples"] = [x * 8 for x in b["samples"]]
    if "percentiles" in b:
        b["percentiles"] = {k: v * 8 for k, v in b["percentiles"].items()}
    assert found(d) == set()
    d["task"]["work"] = {"flops": {"value": 2.0 * 4096**3 / 4, "unit": "FLOP"}}  # the batch forgotten, twice
    assert ("KE605", "/task/work/flops") in found(d)


def test_attention_allows_a_causal_half_and_skips_decode() -> None:
    d = h100()
    d["task"]["operator"] = "flash_attention_forward"
    dims = {"batch": 4, "heads": 32, "seq_len": 4096, "head_dim": 128}
    full = 4.0 * 4 * 32 * 4096 * 4096 * 128
    sh = d["task"]["shapes"][0]
    sh.update(dims=dims, work={"flops": {"value": full / 2, "unit": "FLOP"}})
    del sh["tensors"]
    assert found(d) == set()  # causal
    sh["work"]["flops"]["value"] = full * 3
    assert ("KE605", "/task/shapes/0/work/flops") in found(d)
    d["task"]["operator"] = "paged_attention_decode"  # one query token: not derived here
    assert found(d) == set()


def test_operators_without_a_formula_are_not_judged() -> None:
    d = h100()
    for op in ("grouped_gemm", "moe_gemm", "rmsnorm", "softmax", None):
        if op is None:
            del d["task"]["operator"]
        else:
            d["task"]["operator"] = op
        d["task"]["shapes"][0]["work"]["flops"]["value"] = 2.0 * 4096**3 * 10
        assert not {r for r, _ in found(d)} & {"KE605"}, op


@pytest.mark.parametrize("op", ["dense_projection", "qkv_proj", "fused_gemm_bias_gelu", "aten::addmm"])
def test_gemms_under_other_names(op: str) -> None:
    d = h100()
    d["task"]["operator"] = op
    d["task"]["shapes"][0]["work"]["flops"]["value"] *= 4
    assert ("KE605", "/task/shapes/0/work/flops") in found(d)


def test_a_gemm_like_name_needs_gemm_dims() -> None:
    d = h100()
    d["task"]["operator"] = "dense_projection"
    d["task"]["shapes"][0]["dims"] = {"tokens": 4096, "hidden": 4096}
    d["task"]["shapes"][0]["work"]["flops"]["value"] *= 4
    assert not {r for r, _ in found(d)} & {"KE605"}


def test_conv_from_dims() -> None:
    d = h100()
    d["task"]["operator"] = "conv2d"
    sh = d["task"]["shapes"][0]
    del sh["tensors"]
    sh["dims"] = {"n": 32, "c": 256, "k": 256, "r": 3, "s": 3, "p": 56, "q": 56}
    f = 2.0 * 32 * 256 * 56 * 56 * 256 * 3 * 3
    sh["work"] = {"flops": {"value": f, "unit": "FLOP"}}
    assert found(d) == set()
    sh["work"]["flops"]["value"] = f * 2.5
    assert ("KE605", "/task/shapes/0/work/flops") in found(d)


# ------------------------------------------------------------------------------ KE606


def test_fp8_label_on_bf16_tensors() -> None:
    d = h100()
    d["task"]["dtypes"] = ["float8_e4m3fn"]
    assert ("KE606", "/task/dtypes/0") in found(d)


def test_a_tiny_fp8_tensor_does_not_justify_an_fp8_label() -> None:
    d = h100()
    d["task"]["shapes"][0]["tensors"].append({"name": "scale", "shape": [1], "dtype": "fp8_e4m3"})
    d["task"]["dtypes"] = ["fp8_e4m3"]
    assert ("KE606", "/task/dtypes/0") in found(d)
    # fp8 operands with a bf16 scale: honest
    for t in d["task"]["shapes"][0]["tensors"][:2]:
        t["dtype"] = "fp8_e4m3"
    d["task"]["shapes"][0]["tensors"][2]["dtype"] = "bf16"
    assert not {r for r, _ in found(d)} & {"KE606"}


def test_fp8_tensors_under_a_bf16_label() -> None:
    d = h100()
    d["task"]["shapes"][0]["tensors"][0]["dtype"] = "fp8_e4m3"
    assert ("KE606", "/task/shapes/0/tensors/0/dtype") in found(d)


@pytest.mark.parametrize(
    ("labels", "tensor_dtypes"),
    [
        (["fp8_e4m3", "bf16"], ["fp8_e4m3", "bf16"]),  # fp8 in, bf16 out
        (["fp8_e4m3"], ["fp8_e4m3", "bf16"]),  # output tensor slower than the label
        (["bf16", "fp32"], ["bf16", "bf16"]),  # an accumulate type listed
        (["tf32"], ["float32", "float32"]),  # tf32 math on fp32 tensors
        (["bf16"], ["int64", "bf16"]),  # an index tensor has no precision class
    ],
)
def test_honest_dtype_labels(labels: list[str], tensor_dtypes: list[str]) -> None:
    d = h100()
    d["task"]["dtypes"] = labels
    for t, dt in zip(d["task"]["shapes"][0]["tensors"], tensor_dtypes, strict=True):
        t["dtype"] = dt
    assert not {r for r, _ in found(d)} & {"KE606"}


# ------------------------------------------------------------------------------ KE607


def test_declared_peaks_above_the_table() -> None:
    d = h100()
    d["hardware"]["peak_flop_rate"] = {"value": 3000.0, "unit": "TFLOP/s"}
    d["hardware"]["peak_bandwidth"] = {"value": 3.35, "unit": "TB/s"}  # the datasheet's: fine
    assert found(d) == {("KE607", "/hardware/peak_flop_rate")}
    d["hardware"]["peak_flop_rate"] = {"value": 1978.9, "unit": "TFLOP/s"}  # its fp8 figure
    assert found(d) == set()


def test_a_declared_peak_of_an_unknown_device_is_not_judged() -> None:
    d = h100()
    d["hardware"].update(device="Acme Z9", arch=None, compute_units=None, memory=None)
    d["hardware"] = {k: v for k, v in d["hardware"].items() if v is not None}
    d["hardware"]["peak_flop_rate"] = {"value": 3000.0, "unit": "TFLOP/s"}
    assert found(d) == set()


# ------------------------------------------------------------------------------ KE805


def test_count_larger_than_the_replay_exposes() -> None:
    d = h100()
    d["hardware"]["count"] = 8
    assert found(d) == {("KE805", "/hardware/count")}
    d["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1,2,3,4,5,6,7"
    assert found(d) == set()


def test_count_larger_than_the_candidate_capture_shows() -> None:
    d = h100()
    d["replay"]["env"] = {}
    d["hardware"]["count"] = 4
    cap = d["profiler"][0]
    cap["of"] = {"side": "candidate", "shape_id": "m4096n4096k4096"}
    cap["kernels"][0]["device"] = 0
    assert found(d) == {("KE805", "/hardware/count")}
    # a replay that lists four visible devices outweighs a capture of one (rank 0 profiled)
    d["replay"]["env"] = {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert found(d) == set()
    d["replay"]["env"] = {}
    # a record without its device says nothing about the others
    del cap["kernels"][0]["device"]
    assert found(d) == set()


def test_conditions_device_count_above_hardware_count() -> None:
    d = h100()
    d["timing"]["conditions"] = {"device_count": 2}
    assert ("KE805", "/timing/conditions/device_count") in found(d)


def test_serving_parallel_sizes() -> None:
    d = load("serving_vllm_llama8b_h100.json")
    d["task"]["serving"]["tensor_parallel_size"] = 8
    assert ("KE805", "/hardware/count") in found(d)
    d = load("serving_vllm_llama8b_h100.json")
    d["hardware"]["count"] = 4
    d["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1,2,3"
    d["task"]["serving"]["settings"]["data_parallel_size"] = 2  # TP 1 x DP 2 = 2 devices
    assert found(d) == {("KE805", "/hardware/count")}
    d["task"]["serving"]["settings"]["data_parallel_size"] = 4
    assert found(d) == set()


# ------------------------------------------------------------------------------ KE806


@pytest.mark.parametrize(
    ("field", "value", "pointer"),
    [
        ("arch", "sm_80", "/hardware/arch"),
        ("compute_units", 108, "/hardware/compute_units"),
        ("memory", {"value": 192.0, "unit": "GiB"}, "/hardware/memory"),
        ("memory", {"value": 40.0, "unit": "GB"}, "/hardware/memory"),
        ("device_id", "nvidia-a100-sxm4-80gb", "/hardware/device_id"),
        ("device_id", "h100", "/hardware/device_id"),
    ],
)
def test_an_h100_name_contradicted(field: str, value: Any, pointer: str) -> None:
    d = h100()
    d["hardware"][field] = value
    assert ("KE806", pointer) in found(d)


def test_mi300x_with_80_compute_units_and_its_partitions() -> None:
    d = load("amd_mi300x_gemm_fp8_vs_hipblaslt.json")
    d["hardware"]["compute_units"] = 80
    assert found(d) == {("KE806", "/hardware/compute_units")}
    d["hardware"]["compute_units"] = 38  # one CPX partition
    d["hardware"]["memory"] = {"value": 24.0, "unit": "GiB"}  # NPS8... with partitions stated
    assert found(d) == set()


def test_honest_device_facts_pass() -> None:
    d = h100()
    d["hardware"].update(
        device_id="nvidia-h100-sxm5-80gb", arch="9.0", memory={"value": 81559.0, "unit": "MiB"}
    )
    assert found(d) == set()
    # a name the table cannot tell apart, with facts one of its models fits
    d["hardware"].update(device="H100", device_id="nvidia-h100-pcie-80gb", compute_units=114)
    assert found(d) == set()
    # an unknown device is not judged
    d["hardware"].update(device="Acme Z9", device_id=None, arch="sm_80", compute_units=3)
    d["hardware"] = {k: v for k, v in d["hardware"].items() if v is not None}
    assert not {r for r, _ in found(d)} & {"KE806"}


def test_a_tpu_relabelled() -> None:
    d = load("tpu_v5e_paged_attention_vs_xla.json")
    d["hardware"]["device"] = "TPU v6e"
    # arch `TPU v5 lite` and 16 GiB fit a v5e: the name is what lies
    assert ("KE806", "/hardware/device") in found(d)
    assert ("KE806", "/hardware/arch") not in found(d)


def test_a_fact_no_model_has_points_at_the_fact() -> None:
    """192 GiB under an H100's name fits no model of the table: the memory is what is wrong."""
    d = h100()
    d["hardware"]["memory"] = {"value": 192.0, "unit": "GiB"}
    assert ("KE806", "/hardware/memory") in found(d)
    assert ("KE806", "/hardware/device") not in found(d)


def test_a_table_device_id_sets_the_peak_an_ambiguous_name_cannot() -> None:
    """`A100` alone is checked against the highest A100 (2039 GB/s); with the 40 GB PCIe
    card's id, against its 1555 GB/s."""
    d = h100()
    hw = d["hardware"]
    hw.update(device="NVIDIA A100", arch="sm_80", compute_units=108, memory={"value": 40.0, "unit": "GiB"})
    hw.pop("power_limit")
    d["task"]["shapes"][0]["work"] = {"bytes": {"value": 1.8e12 * 151.9019e-6, "unit": "B"}}  # 1.8 TB/s
    d.pop("cost")  # the H100's 431 W would be above a 250 W PCIe A100 (KE1201)
    d["task"]["operator"] = "copy"
    assert not {r for r, _ in found_all(d)} & {"KE602"}
    hw["device_id"] = "nvidia-a100-pcie-40gb"
    assert ("KE602", "/timing/stats/median") in found_all(d)


def found_all(d: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in validate(d).findings}
