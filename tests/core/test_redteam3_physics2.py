"""Third red team, physics band (second pass): each cheat caught where it lies, beside its
honest near-twin, which is let through.

- KE601/KE602: a capture clearly of one task shape's kernel gives the shape's work over its
  kernel time per call; above the device's peaks is impossible, profile-only packets too.
- KE606: a served model whose name says FP8/FP4/INT4... weights beside dtype labels that are
  all 16-bit or wider (the precision recorded is not the one that ran).

The packets are the adversarial suite's builders (read-only use), with one field changed.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate
from kernel_evidence.rules.serving import narrow_weights

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))

from _adv_build import finalize  # noqa: E402
from _adv_controls import control  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"  # bf16 8192^3, ncu capture 1.82 ms (604 TFLOP/s; peak 989)
LN = "h100_layernorm_vs_transformer_engine"  # 2.8 TB/s flushed (H100 HBM 3.35 TB/s)
ONLY = "h100_profile_only"  # a capture of the 8192^3 GEMM, no timing, no claim
SERV = "serving_vllm_llama8b_h100"  # Llama-3.1-8B-Instruct, bf16 conditions
DUR = "/profiler/0/kernels/0/metrics/duration"


def report(p: dict[str, Any]) -> Any:
    return validate(finalize(p))


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in report(p).findings}


def profile_only_with_task() -> dict[str, Any]:
    """The profile-only packet given the GEMM task it captured (8192^3 bf16, 1.1 TFLOP)."""
    p = control(ONLY)
    p["task"] = control(GEMM)["task"]
    return p


def set_duration(p: dict[str, Any], ns: float, j: int = 0) -> None:
    p["profiler"][0]["kernels"][j]["metrics"]["duration"] = {"value": ns, "unit": "ns"}


# ---------------------------------------------------------------- KE601/KE602: capture time


def test_profile_only_capture_faster_than_physics_is_caught() -> None:
    p = profile_only_with_task()
    set_duration(p, 181719.0)  # 182 us: 6 PFLOP/s on a 989 TFLOP/s H100
    r = report(p)
    assert not r.ok
    assert ("KE601", DUR) in {(f.rule_id, f.pointer) for f in r.findings}


def test_profile_only_capture_at_a_possible_rate_passes() -> None:
    p = profile_only_with_task()
    set_duration(p, 1150000.0)  # 1.15 ms: 956 TFLOP/s, under the peak x 1.05
    r = report(p)
    assert r.ok, [f.line() for f in r.findings]
    assert not any(f.pointer.startswith("/profiler") for f in r.findings)


def test_timed_packet_capture_edited_below_physics_is_caught() -> None:
    p = control(GEMM)
    set_duration(p, 545951.4)  # 2 PFLOP/s; KE1101 does not mind a capture faster than the claim
    assert ("KE601", DUR) in found(p)


def test_capture_with_two_kernel_names_and_no_expected_is_not_judged() -> None:
    """A capture of several kernels that names no expected ones is not clearly of the shape."""
    p = profile_only_with_task()
    p["profiler"][0]["of"].pop("expected_kernels")
    set_duration(p, 181719.0)
    other = copy.deepcopy(p["profiler"][0]["kernels"][0])
    other["name"] = "elementwise_kernel"
    other["id"] = "1"
    p["profiler"][0]["kernels"].append(other)
    assert ("KE601", DUR) not in found(p)
    # the same capture with the expected kernel named is judged
    p["profiler"][0]["of"]["expected_kernels"] = ["gemm_bf16_tn_128x256_warpspecialized"]
    assert ("KE601", DUR) in found(p)


def test_capture_of_a_shape_the_task_lacks_or_of_other_is_not_judged() -> None:
    p = profile_only_with_task()
    set_duration(p, 181719.0)
    p["profiler"][0]["of"]["side"] = "other"
    assert ("KE601", DUR) not in found(p)


def test_capture_on_two_streams_is_not_judged() -> None:
    """Kernels on two streams may not overlap: their time per stream bounds nothing."""
    p = profile_only_with_task()
    set_duration(p, 181719.0)
    other = copy.deepcopy(p["profiler"][0]["kernels"][0])
    other["id"] = "1"
    p["profiler"][0]["kernels"][0]["stream"] = "7"
    other["stream"] = "13"
    p["profiler"][0]["kernels"].append(other)
    assert ("KE601", DUR) not in found(p)


def test_capture_bandwidth_above_hbm_is_caught_and_warm_timing_is_not() -> None:
    p = control(LN)
    ns = p["profiler"][0]["kernels"][0]["metrics"]["duration"]
    assert ns["unit"] == "ns"
    set_duration(p, ns["value"] / 2)  # twice the 2.8 TB/s
    assert ("KE602", DUR) in found(p)
    honest = control(LN)
    assert ("KE602", DUR) not in found(honest)


# ---------------------------------------------------------------- KE606: served precision


def serving(model: str) -> dict[str, Any]:
    p = control(SERV)
    p["task"]["serving"]["model"] = model
    c = p["replay"]["command"]
    c[c.index("--model") + 1] = model
    return p


def test_fp8_checkpoint_with_bf16_conditions_is_caught() -> None:
    p = serving("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8")
    r = report(p)
    assert not r.ok
    assert ("KE606", "/timing/conditions/dtypes") in {(f.rule_id, f.pointer) for f in r.findings}


@pytest.mark.parametrize(
    "model",
    [
        "nvidia/Llama-3.1-8B-Instruct-FP4",
        "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
        "neuralmagic/Meta-Llama-3.1-8B-Instruct-quantized.w8a8",
        "TheBloke/Llama-2-7B-GPTQ",
    ],
)
def test_narrow_checkpoints_with_16_bit_task_dtypes_are_caught(model: str) -> None:
    p = serving(model)
    p["task"]["dtypes"] = ["bf16"]
    got = found(p)
    assert ("KE606", "/task/dtypes") in got
    assert ("KE606", "/timing/conditions/dtypes") in got


def test_fp8_checkpoint_with_fp8_dtypes_passes() -> None:
    p = serving("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8")
    p["timing"]["conditions"]["dtypes"] = ["fp8", "bf16"]
    assert not any(r == "KE606" for r, _ in found(p))


def test_bf16_model_with_fp8_kv_cache_setting_passes() -> None:
    p = control(SERV)
    p["task"]["serving"]["settings"]["kv_cache_dtype"] = "fp8"
    p["task"]["dtypes"] = ["bf16"]
    r = report(p)
    assert not any(f.rule_id == "KE606" for f in r.findings), [f.line() for f in r.findings]


def test_narrow_weights_reads_the_name_only() -> None:
    assert narrow_weights("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8") == "fp8"
    assert narrow_weights("nvidia/DeepSeek-R1-NVFP4") == "fp4"
    assert narrow_weights("unsloth/llama-3-8b-bnb-4bit") == "int4"
    assert narrow_weights("meta-llama/Llama-3.1-8B-Instruct") is None
    assert narrow_weights("bartowski/Llama-3.2-1B-Instruct-GGUF") is None
    assert narrow_weights("Qwen/Qwen2.5-7B-Instruct") is None
