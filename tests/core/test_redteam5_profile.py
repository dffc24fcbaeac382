"""Red team 5k, class 7: a candidate's capture that shows a library's kernel, not the
candidate's own (KE1102), and a working kernel named a fill to leave it out of the claim's
kernel time (KE1101). Each beside an honest twin that must still pass."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_build import finalize, recompute_speedup, scale_side  # noqa: E402
from _adv_kit import control, found, grade, rules  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
ATT = "h200_attention_vs_flashattention"
MI = "mi300x_bf16_gemm_vs_rocblas"
TWO = "h100_two_kernel_candidate_capture"
FLUSH = "h100_capture_with_harness_flush_kernel"

FA_KERNEL = (
    "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, "
    "false, false, false, false, true, true, false, false>(Flash_fwd_params)"
)
CK_RAW = (
    "_ZN2ck27kernel_gemm_xdl_cshuffle_v3INS_16tensor_operation6device30DeviceGemm_Xdl_CShuffleV3_bf16EEEvv"
)
CK_NAME = (
    "void ck::kernel_gemm_xdl_cshuffle_v3<ck::tensor_operation::device::DeviceGemm_Xdl_CShuffleV3_bf16>()"
)


def _kernel(p: dict[str, Any], j: int = 0) -> dict[str, Any]:
    return p["profiler"][0]["kernels"][j]


def _expect(p: dict[str, Any], *names: str) -> None:
    p["profiler"][0]["of"]["expected_kernels"] = list(names)
    for d in p["defences"]:
        if d["check"] == "candidate_kernel_profiled":
            d["detail"] = f"{names[0]} seen in the capture of the timed call"


# ---------------------------------------------------------------- KE1102: the baseline's own library


def test_flashattention_passed_off_as_the_candidate_against_flashattention() -> None:
    p = control(ATT)
    _kernel(p)["name"] = FA_KERNEL
    _expect(p, "flash_fwd_kernel")
    assert ("KE1102", "/profiler/0/of/expected_kernels") in found(p)
    assert not validate(finalize(copy.deepcopy(p))).ok


def test_a_flashattention_variant_against_cudnn_passes() -> None:
    p = control(ATT)
    _kernel(p)["name"] = FA_KERNEL
    _expect(p, "flash_fwd_kernel")
    p["timing"]["baseline"]["provider"] = "cuDNN"
    assert "KE1102" not in rules(p)


def test_a_subject_that_names_the_baseline_library_is_not_passing_it_off() -> None:
    p = control(ATT)
    _kernel(p)["name"] = FA_KERNEL
    _expect(p, "flash_fwd_kernel")
    p["subject"]["name"] = "flash_attn_fwd_patched_softmax"
    assert "KE1102" not in rules(p)


def test_the_baseline_library_by_the_raw_name_alone() -> None:
    # the mangled FlashInfer kernel under a demangled name that hides the namespace
    p = control(ATT)
    p["timing"]["baseline"]["provider"] = "FlashInfer"
    _kernel(p)["name"] = "BatchPrefillWithPagedKVCacheKernel"
    _kernel(p)["raw_name"] = "_ZN10flashinfer34BatchPrefillWithPagedKVCacheKernelILi128EEEvv"
    _expect(p, "BatchPrefillWithPagedKVCacheKernel")
    assert ("KE1102", "/profiler/0/of/expected_kernels") in found(p)
    p["timing"]["baseline"]["provider"] = "FlashAttention"
    assert "KE1102" not in rules(p)


def test_composable_kernel_against_composable_kernel() -> None:
    p = control(MI)
    _kernel(p)["name"] = CK_NAME
    _kernel(p)["raw_name"] = CK_RAW
    _expect(p, "gemm_xdl_cshuffle")
    p["timing"]["baseline"]["provider"] = "Composable Kernel"
    assert ("KE1102", "/profiler/0/of/expected_kernels") in found(p)


def test_a_ck_based_candidate_against_rocblas_passes() -> None:
    # the candidate instantiated CK's device GEMM itself: its kernel is CK's by name
    p = control(MI)
    _kernel(p)["name"] = CK_NAME
    _kernel(p)["raw_name"] = CK_RAW
    _expect(p, "gemm_xdl_cshuffle")
    assert "KE1102" not in rules(p)
    assert grade(p) == "A"


def test_a_candidate_named_like_a_library_kernel_but_not_in_its_namespace() -> None:
    p = control(ATT)
    _kernel(p)["name"] = "my_flash_fwd_kernel_v2"
    _expect(p, "flash_fwd_kernel")
    assert "KE1102" not in rules(p)


# ---------------------------------------------------------------- KE1102: the record's name against its raw name


def test_a_name_edited_over_a_cublas_raw_name() -> None:
    p = control(GEMM)
    _kernel(p)["raw_name"] = "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
    assert ("KE1102", "/profiler/0/kernels/0/name") in found(p)


def test_a_name_edited_over_a_torch_raw_name() -> None:
    p = control(GEMM)
    _kernel(p)["raw_name"] = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIiEEEEviT0_"
    assert ("KE1102", "/profiler/0/kernels/0/name") in found(p)


def test_the_mangled_raw_name_of_the_candidates_kernel_passes() -> None:
    p = control(GEMM)
    _kernel(p)["raw_name"] = "_Z36gemm_bf16_tn_128x256_warpspecializedPK13__nv_bfloat16S1_PS_iii"
    assert "KE1102" not in rules(p)
    # ncu's demangled name, templates, keywords and an anonymous namespace, beside the mangled one
    _kernel(p)["name"] = (
        "void (anonymous namespace)::gemm_bf16_tn_128x256_warpspecialized<128, true>"
        "(const __nv_bfloat16 *, const __nv_bfloat16 *, __nv_bfloat16 *, unsigned int, std::size_t)"
    )
    _kernel(p)["raw_name"] = (
        "_ZN12_GLOBAL__N_136gemm_bf16_tn_128x256_warpspecializedILi128ELb1EEEvPK13__nv_bfloat16S3_PS1_jm"
    )
    assert "KE1102" not in rules(p)
    assert grade(p) == "A"


# ---------------------------------------------------------------- KE1101: a working kernel named a fill


def _disguised(p: dict[str, Any], reduce_ns: float) -> dict[str, Any]:
    scale_side(p, "candidate", 0.68)
    recompute_speedup(p)
    k0, k1 = p["profiler"][0]["kernels"]
    k0["metrics"]["duration"]["value"] = 1220800.0
    k1["metrics"]["duration"]["value"] = reduce_ns
    k1["name"] = "memset_splitk_partials"
    of = p["profiler"][0]["of"]
    of["expected_kernels"] = ["gemm_bf16_splitk2_main"]
    # no tolerance: the main kernel alone fits the claim, the main kernel and the other do not
    of["claim_tolerance"] = 0.0
    return p


def test_a_split_k_reduce_named_a_memset_counts_as_work() -> None:
    p = _disguised(control(TWO), 598800.0)
    assert ("KE1101", "/profiler/0/kernels/1/name") in found(p)
    assert not validate(finalize(copy.deepcopy(p))).ok


def test_a_short_memset_of_the_partials_is_a_fill() -> None:
    # 30 us: under writing the 256 MiB flush (or the 128 MiB output) twice at 3.35 TB/s
    p = _disguised(control(TWO), 30000.0)
    assert "KE1101" not in rules(p)


def test_a_profilers_own_memset_form_is_a_fill_however_long() -> None:
    p = _disguised(control(TWO), 598800.0)
    p["profiler"][0]["kernels"][1]["name"] = "[CUDA memset]"
    assert "KE1101" not in rules(p)


def test_a_harness_flush_fill_kernel_stays_a_fill() -> None:
    # torch's FillFunctor flushing 256 MiB in 80 us: counted as work, the claim would not fit
    p = control(FLUSH)
    p["profiler"][0]["of"]["claim_tolerance"] = 0.0
    assert "KE1101" not in rules(p)
    assert grade(p) == "A"
    # the same fill kernel taking 0.5 ms (more than twice the flush at peak) does work
    p["profiler"][0]["kernels"][1]["metrics"]["duration"]["value"] = 500000.0
    assert ("KE1101", "/profiler/0/kernels/1/name") in found(p)
