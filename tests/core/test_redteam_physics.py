"""Red-team fixes in the physics band (KE601-KE608), each cheat caught where it lies beside
its honest near-twin, which is let through.

- KE606: a mask, index or bias tensor (a uint8 padding mask) is not a contracted operand: its
  dtype is not a compute precision the labels must name.
- KE601: the peak is the operand tensors' precision (not a mask's, not an unknown or extra
  label's); mxfp8, nvfp4, mxfp4, mxfp6 are learnt as fp8, fp4, fp6.
- KE602: the structured conditions' cache mode wins over a flat `cache_policy: warm`.
- KE605: a causal attention counted in full; a plain GEMM stated 1.6x its 2mnk.
- KE608: a streaming operator's bytes far above what its tensors can move.

The packets are the adversarial suite's builders (read-only use), with one field changed.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate
from kernel_evidence.rules._tables import dtype_class

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))

from _adv_build import attention, finalize, gemm, kernel_claim, rowwise, scale_side  # noqa: E402
from _adv_controls import control  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"  # bf16 8192^3 at ~600 TFLOP/s (H100 bf16 peak 989)
LN = "h100_layernorm_vs_transformer_engine"  # 2.8 TB/s, flushed (H100 HBM 3.35 TB/s)
MEDIAN = "/timing/stats/median"


def report(p: dict[str, Any]) -> Any:
    return validate(finalize(p))


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in report(p).findings}


def clean(p: dict[str, Any]) -> None:
    r = report(p)
    assert r.ok and r.grade.letter == "A", [f.line() for f in r.findings]


def set_dtypes(p: dict[str, Any], dtypes: list[str]) -> None:
    """The task's labels and both sides' conditions (which KE207 holds to them)."""
    p["task"]["dtypes"] = list(dtypes)
    for c in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        c["dtypes"] = list(dtypes)


def masked_attention(mask_name: str = "mask", mask_dtype: str = "uint8") -> dict[str, Any]:
    """bf16 attention (4 x 16 x 2048^2 x 128: 137 GFLOP at ~560 TFLOP/s on an H100) with a
    [b, 1, s, s] padding mask, labelled bf16."""
    op = attention(4, 16, 2048, 128)
    sh = op["shape"]
    sh["tensors"].insert(3, {"name": mask_name, "shape": [4, 1, 2048, 2048], "dtype": mask_dtype})
    sh["work"]["bytes"]["value"] += 4 * 2048 * 2048
    op["operator"] = "attention_forward_masked"
    return kernel_claim(
        "attn_fwd_masked_h100", "h100", op, cand_s=245.0e-6, base_s=268.0e-6, provider="FlashAttention",
        version="2.6.3", call="flash_attn_func(q, k, v, attn_mask=mask, causal=False)",
        kernel="attn_fwd_masked_128x128",
    )  # fmt: skip


def causal_attention(flops_factor: float = 0.5, operator: str = "attention_forward_causal") -> dict[str, Any]:
    """Causal attention on an H200, 4 x 32 x 8192^2 x 128; the FLOPs stated are
    ``flops_factor`` x the full (non-causal) count; 4.58 ms."""
    op = attention(4, 32, 8192, 128)
    op["operator"] = operator
    op["description"] = "softmax(Q K^T / sqrt(d) + causal mask) V"
    op["shape"]["work"]["flops"]["value"] *= flops_factor
    return kernel_claim(
        "attn_fwd_causal_h200", "h200", op, cand_s=4.58e-3, base_s=4.92e-3, provider="FlashAttention",
        version="2.6.3", call="flash_attn_func(q, k, v, causal=True)", kernel="attn_fwd_causal_ws_h200_128x128",
        repeats=41,
    )  # fmt: skip


def strip(p: dict[str, Any]) -> dict[str, Any]:
    p = copy.deepcopy(p)
    p.pop("packet_id", None)
    return p


# ---------------------------------------------------------------- KE606: masks are not operands


@pytest.mark.parametrize(
    ("name", "dtype"),
    [("mask", "uint8"), ("attn_mask", "bool"), ("padding_mask", "int8"), ("key_padding_mask", "u8")],
)
def test_a_mask_tensor_dtype_is_not_a_compute_precision(name: str, dtype: str) -> None:
    clean(strip(masked_attention(name, dtype)))


def test_index_like_tensors_are_not_operands() -> None:
    p = strip(masked_attention())
    sh = p["task"]["shapes"][0]
    sh["tensors"][3] = {"name": "cu_seqlens", "shape": [4 * 2048 * 64], "dtype": "int8"}
    sh["tensors"].append({"name": "positionIds", "shape": [4, 2048, 8, 16], "dtype": "uint8"})
    assert not {r for r, _ in found(p)} & {"KE606", "KE601"}


def test_an_int8_operand_beside_bf16_labels_is_still_caught() -> None:
    p = strip(masked_attention())
    p["task"]["shapes"][0]["tensors"][1]["dtype"] = "int8"  # K, a contracted operand
    assert ("KE606", "/task/shapes/0/tensors/1/dtype") in found(p)


# ---------------------------------------------------------------- KE601: the peak of the operands


def int8_mask_gemm(halve: bool) -> dict[str, Any]:
    p = control(GEMM)
    p.pop("packet_id")
    p["task"]["shapes"][0]["tensors"].append({"name": "mask", "shape": [8192, 8192], "dtype": "int8"})
    set_dtypes(p, ["bf16", "int8"])
    if halve:
        scale_side(p, "candidate", 0.5)  # 1.2 PFLOP/s: above the bf16 peak, below the int8 one
    return p


def test_an_int8_mask_does_not_lift_the_peak_to_int8() -> None:
    assert ("KE601", MEDIAN) in found(int8_mask_gemm(halve=True))


def test_the_int8_mask_gemm_at_an_honest_rate_passes() -> None:
    assert not {r for r, _ in found(int8_mask_gemm(halve=False))} & {"KE601", "KE606"}


@pytest.mark.parametrize("label", ["mxfp8", "mxfp8_e4m3", "fp8_e4m3"])
def test_an_fp8_label_on_bf16_tensors_keeps_the_bf16_peak(label: str) -> None:
    p = control(GEMM)
    p.pop("packet_id")
    set_dtypes(p, [label])
    scale_side(p, "candidate", 0.5)
    got = found(p)
    assert ("KE601", MEDIAN) in got
    assert ("KE606", "/task/dtypes/0") in got


def test_an_unknown_label_beside_a_known_one_does_not_lift_the_peak() -> None:
    """Without tensors the labels decide: an unknown spelling adds nothing to the known ones."""
    p = control(GEMM)
    p.pop("packet_id")
    del p["task"]["shapes"][0]["tensors"]
    set_dtypes(p, ["bf16", "superfloat8"])
    scale_side(p, "candidate", 0.5)
    assert ("KE601", MEDIAN) in found(p)
    # the honest rate passes
    p = control(GEMM)
    p.pop("packet_id")
    del p["task"]["shapes"][0]["tensors"]
    set_dtypes(p, ["bf16", "superfloat8"])
    assert ("KE601", MEDIAN) not in found(p)


def test_real_mxfp8_tensors_get_the_fp8_peak() -> None:
    """An mxfp8 GEMM (bf16 out) at 1.2 PFLOP/s on an H100: above bf16's 989, under fp8's 1979."""
    op = gemm(8192, 8192, 8192, "bf16")
    for tn in op["shape"]["tensors"][:2]:
        tn["dtype"] = "mxfp8"
    op["shape"]["work"]["bytes"]["value"] = float(2 * 8192 * 8192 + 2 * 8192 * 8192)
    op["dtypes"] = ["mxfp8", "bf16"]
    p = kernel_claim(
        "mxfp8_gemm_h100", "h100", op, cand_s=0.916e-3, base_s=0.98e-3, provider="cuBLASLt",
        version="12.8.3.14", call="cublasLtMatmul(mxfp8 A/B, bf16 D, block scales, 8192^3)",
        kernel="gemm_mxfp8_tn_128x256",
    )  # fmt: skip
    assert not {r for r, _ in found(strip(p))} & {"KE601", "KE606"}


@pytest.mark.parametrize(
    ("spelling", "cls"),
    [("mxfp8", "fp8"), ("nvfp4", "fp4"), ("mxfp4", "fp4"), ("mxfp6_e3m2", "fp6"), ("float4_e2m1fn_x2", "fp4"),
     ("e2m1", "fp4"), ("e3m2", "fp6"), ("float8_e4m3fn", "fp8")],
)  # fmt: skip
def test_microscaling_spellings_are_known(spelling: str, cls: str) -> None:
    assert dtype_class(spelling) == cls


def test_honest_mixed_precision_gemms_pass() -> None:
    # bf16 in, fp32 out
    clean(
        strip(
            kernel_claim(
                "gemm_bf16_fp32out",
                "h100",
                gemm(8192, 8192, 8192, "bf16", "fp32"),
                cand_s=1.861e-3,
                base_s=1.962e-3,
                provider="cuBLASLt",
                version="12.4.5.8",
                call="cublasLtMatmul(A,B bf16, D fp32, N, T, m=n=k=8192)",
                kernel="gemm_bf16_f32out_128x256",
            )  # fmt: skip
        )
    )
    # int8 in, int32 out on an A100 at 500 TOPS (int8 peak 624; fp16 312)
    op = gemm(8192, 8192, 8192, "int8", "int8", ref_max=90000.0)
    op["shape"]["tensors"][2]["dtype"] = "int32"
    op["shape"]["work"]["bytes"]["value"] = float(2 * 8192 * 8192 + 4 * 8192 * 8192)
    op["dtypes"] = ["int8", "int32"]
    p = kernel_claim(
        "igemm_a100_8192", "a100", op, cand_s=2.199e-3, base_s=2.342e-3, provider="cuBLASLt", version="12.2.5.6",
        call="cublasLtMatmul(int8 A/B, int32 C, m=n=k=8192, CUBLAS_COMPUTE_32I)", kernel="igemm_int8_sm80_256x128",
    )  # fmt: skip
    assert not {r for r, _ in found(strip(p))} & {"KE601", "KE606"}
    # w4a16: int4 packed weights, bf16 activations
    op = gemm(16, 8192, 8192, ref_max=60.0)
    op["shape"]["tensors"][1] = {"name": "B", "shape": [8192, 4096], "dtype": "int4", "layout": "row"}
    op["shape"]["work"]["bytes"]["value"] = float(16 * 8192 * 2 + 8192 * 8192 // 2 + 16 * 8192 * 2)
    op["dtypes"] = ["bf16", "int4"]
    p = kernel_claim(
        "w4a16_gemm_m16", "h100", op, cand_s=14.1e-6, base_s=17.6e-6, provider="CUTLASS", version="3.5.1",
        call="cutlass mixed-input GEMM 16x8192x8192", kernel="w4a16_gemm_splitk_m16", repeats=101, sigma=0.02,
    )  # fmt: skip
    assert not {r for r, _ in found(strip(p))} & {"KE601", "KE606"}


def test_an_fp8_scale_tensor_does_not_lift_the_peak() -> None:
    """A small fp8 tensor (under 1% of the largest) beside bf16 operands: the bf16 peak."""
    p = control(GEMM)
    p.pop("packet_id")
    p["task"]["shapes"][0]["tensors"].append({"name": "D", "shape": [8192], "dtype": "fp8_e4m3"})
    set_dtypes(p, ["bf16", "fp8_e4m3"])
    scale_side(p, "candidate", 0.5)
    assert ("KE601", MEDIAN) in found(p)


# ---------------------------------------------------------------- KE602: the conditions' cache mode


def fast_layernorm(flat: str, mode: str) -> dict[str, Any]:
    p = control(LN)
    p.pop("packet_id")
    p["timing"]["cache_policy"] = flat
    p["timing"]["conditions"]["cache"]["mode"] = mode
    p["timing"]["baseline"]["conditions"]["cache"]["mode"] = mode
    scale_side(p, "candidate", 0.55)  # 5.1 TB/s: above the 3.35 TB/s HBM peak
    return p


def test_a_flat_warm_beside_flushed_conditions_is_held_to_the_peak() -> None:
    got = found(fast_layernorm("warm", "flushed"))
    assert ("KE602", MEDIAN) in got
    assert ("KE603", MEDIAN) not in got


@pytest.mark.parametrize(("flat", "mode"), [("warm", "warm"), ("warm", "unknown"), ("flushed", "warm")])
def test_warm_caches_in_the_conditions_warn(flat: str, mode: str) -> None:
    got = found(fast_layernorm(flat, mode))
    assert ("KE603", MEDIAN) in got
    assert ("KE602", MEDIAN) not in got


def test_a_flat_warm_without_conditions_warns() -> None:
    p = fast_layernorm("warm", "flushed")
    del p["timing"]["conditions"]["cache"]
    assert ("KE603", MEDIAN) in found(p)


# ---------------------------------------------------------------- KE605: exact counts


def test_a_causal_attention_counted_in_full_is_caught() -> None:
    assert ("KE605", "/task/shapes/0/work/flops") in found(strip(causal_attention(1.0)))


def test_the_causal_half_passes() -> None:
    clean(strip(causal_attention(0.5)))


@pytest.mark.parametrize("operator", ["attention_forward", "attention_forward_non_causal", "sdpa_noncausal"])
def test_the_full_count_of_a_non_causal_attention_passes(operator: str) -> None:
    assert ("KE605", "/task/shapes/0/work/flops") not in found(strip(causal_attention(1.0, operator)))


def test_a_causal_flag_in_the_dims_decides() -> None:
    p = strip(causal_attention(1.0, "attention_forward"))
    p["task"]["shapes"][0]["dims"]["causal"] = 1
    assert ("KE605", "/task/shapes/0/work/flops") in found(p)
    p["task"]["shapes"][0]["dims"]["causal"] = 0
    p["task"]["operator"] = "attention_forward_causal"
    assert ("KE605", "/task/shapes/0/work/flops") not in found(p)


def test_a_rectangular_causal_attention_may_count_more_than_half() -> None:
    """Chunked prefill, q 1024 against kv 8192 (bottom-right causal): 15/16 of the full count."""
    p = strip(causal_attention(1.0))
    dims = p["task"]["shapes"][0]["dims"]
    del dims["seq"]
    dims["q_len"], dims["kv_len"] = 1024, 8192
    p["task"]["shapes"][0]["work"]["flops"]["value"] = 4.0 * 4 * 32 * 1024 * 8192 * 128 * 15 / 16
    assert ("KE605", "/task/shapes/0/work/flops") not in found(p)


def test_a_plain_gemm_stated_1_6x_is_caught() -> None:
    p = control(GEMM)
    p.pop("packet_id")
    p["task"]["shapes"][0]["work"]["flops"]["value"] *= 1.6
    assert ("KE605", "/task/shapes/0/work/flops") in found(p)


@pytest.mark.parametrize(
    ("operator", "factor"),
    [("gemm", 1.08), ("gemm_bias_gelu", 1.08), ("dual_gemm", 2.0), ("cublasLtMatmul", 1.6)],
)
def test_gemm_counts_inside_their_slack_pass(operator: str, factor: float) -> None:
    """10% over 2mnk for a plain GEMM; 2x for a name that may be more than one contraction."""
    p = control(GEMM)
    p.pop("packet_id")
    p["task"]["operator"] = operator
    p["task"]["shapes"][0]["work"]["flops"]["value"] *= factor
    assert ("KE605", "/task/shapes/0/work/flops") not in found(p)


def test_a_plain_gemm_with_other_dims_keeps_the_2x_slack() -> None:
    p = control(GEMM)
    p.pop("packet_id")
    p["task"]["shapes"][0]["dims"]["split_k"] = 2
    p["task"]["shapes"][0]["work"]["flops"]["value"] *= 1.6
    assert ("KE605", "/task/shapes/0/work/flops") not in found(p)


# ---------------------------------------------------------------- KE608: an upper bound


def test_layernorm_bytes_far_above_its_tensors_are_caught() -> None:
    p = control(LN)
    p.pop("packet_id")
    p["task"]["shapes"][0]["work"]["bytes"]["value"] *= 3.2  # 2x + an fp32 copy is 3x for bf16 x, y
    assert ("KE608", "/task/shapes/0/work/bytes") in found(p)


@pytest.mark.parametrize("factor", [1.0, 1.2, 2.0, 2.95])
def test_layernorm_bytes_within_the_bound_pass(factor: float) -> None:
    p = control(LN)
    p.pop("packet_id")
    p["task"]["shapes"][0]["work"]["bytes"]["value"] *= factor
    assert ("KE608", "/task/shapes/0/work/bytes") not in found(p)


def test_one_tensor_listed_and_backward_passes_have_no_upper_bound() -> None:
    p = control(LN)
    p.pop("packet_id")
    p["task"]["shapes"][0]["tensors"].pop()  # x only (an in-place or fused op lists one)
    p["task"]["shapes"][0]["work"]["bytes"]["value"] *= 5
    assert ("KE608", "/task/shapes/0/work/bytes") not in found(p)
    p = control(LN)
    p.pop("packet_id")
    p["task"]["operator"] = "layernorm_backward"
    p["task"]["shapes"][0]["work"]["bytes"]["value"] *= 5
    assert ("KE608", "/task/shapes/0/work/bytes") not in found(p)


def test_rowwise_cast_to_fp32_passes() -> None:
    """fp8 in, fp32 out, listed: 5 bytes an element is under 2 x 5 + 4."""
    op = rowwise("cast", 16384, 8192)
    sh = op["shape"]
    sh["tensors"][0]["dtype"] = "fp8_e4m3"
    sh["tensors"][1]["dtype"] = "fp32"
    sh["work"]["bytes"]["value"] = float(5 * 16384 * 8192)
    op["dtypes"] = ["fp8_e4m3", "fp32"]
    p = kernel_claim(
        "cast_fp8_fp32", "h100", op, cand_s=0.25e-3, base_s=0.27e-3, provider="PyTorch", version="2.5.1",
        call="x.to(torch.float32)", kernel="cast_fp8_fp32_vec16",
    )  # fmt: skip
    assert ("KE608", "/task/shapes/0/work/bytes") not in found(strip(p))
