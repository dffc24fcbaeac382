"""Red team 5: energy below the work's physical floor whatever its source says (KE1203), and
a replay that starts its server with a sub-16-bit `--quantization` beside 16-bit dtypes
(KE106). Each beside an honest twin that must still pass."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_kit import control, found, grade  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
SERV = "serving_vllm_llama8b_h100"


FLOOR = ("KE1203", "/cost/energy/energy")


def _energy(p: dict[str, Any], joules: float, source: str = "nvml") -> dict[str, Any]:
    p["cost"]["energy"]["energy"]["value"] = joules
    p["cost"]["energy"]["source"] = source
    return p


# ---------------------------------------------------------------- KE1203: the work's energy floor
# the H100 GEMM: 51 timed calls of 1.1e12 FLOP in bf16; an H100 SXM at its peak (989.4 TFLOP/s
# at 700 W) spends 0.7075 pJ a FLOP: at least 39.7 J (36.1 J with 10% slack)


def test_dynamic_energy_below_the_work_at_peak_efficiency_is_caught() -> None:
    p = _energy(control(), 30.0, "nvml, dynamic (idle subtracted)")
    assert FLOOR in found(p)
    assert grade(p) == "C"


def test_dynamic_energy_above_the_work_floor_passes() -> None:
    p = _energy(control(), 45.0, "nvml, dynamic (idle subtracted)")
    assert FLOOR not in found(p)
    p = _energy(control(), 5200.0)
    assert FLOOR not in found(p)
    assert grade(p) == "A"


def test_a_name_of_several_models_is_held_to_the_most_efficient() -> None:
    # `H100` may be the PCIe card (756 TFLOP/s at 350 W: 0.463 pJ a FLOP, 26 J for the work)
    p = _energy(control(), 30.0, "nvml, above idle")
    p["hardware"]["device"] = "H100"
    p["hardware"].pop("device_id", None)
    assert FLOOR not in found(p)
    p = _energy(control(), 20.0, "nvml, above idle")
    p["hardware"]["device"] = "H100"
    p["hardware"].pop("device_id", None)
    assert FLOOR in found(p)


def test_a_power_cap_halves_the_floor() -> None:
    p = _energy(control(), 30.0, "nvml, above idle")
    p["hardware"]["power_limit"] = {"value": 300, "unit": "W"}
    assert FLOOR not in found(p)
    p = _energy(control(), 15.0, "nvml, above idle")
    p["hardware"]["power_limit"] = {"value": 300, "unit": "W"}
    assert FLOOR in found(p)


def test_an_unknown_dtype_label_allows_the_highest_peak() -> None:
    # an int4 label: the device's highest peak (fp8, 1978.9 TFLOP/s): 19.8 J for the work
    p = _energy(control(), 25.0, "nvml, above idle")
    p["task"]["dtypes"] = ["int4"]
    assert FLOOR not in found(p)
    p = _energy(control(), 25.0, "nvml, above idle")
    assert FLOOR in found(p)


def test_a_window_shorter_than_the_timed_calls_is_not_judged() -> None:
    # 51 calls of 1.83 ms take 93 ms: a 50 ms window need not hold them
    p = _energy(control(), 25.0, "nvml, above idle")
    p["cost"]["energy"]["window"] = {"value": 0.05, "unit": "s"}
    assert FLOOR not in found(p)


# ---------------------------------------------------------------- KE106: the server's quantization


def _serve(p: dict[str, Any], server: str) -> dict[str, Any]:
    client = " ".join(p["replay"]["command"])
    p["replay"]["command"] = ["bash", "-c", f"{server} & sleep 120; {client}"]
    return p


QUANT = ("KE106", "/replay/command")


def test_a_server_started_in_fp8_beside_bf16_dtypes_is_caught() -> None:
    p = _serve(control(SERV), "vllm serve meta-llama/Llama-3.1-8B-Instruct --quantization fp8")
    assert QUANT in found(p)
    p = _serve(control(SERV), "vllm serve meta-llama/Llama-3.1-8B-Instruct -q awq")
    assert QUANT in found(p)
    p = _serve(
        control(SERV),
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --quantization=bitsandbytes",
    )
    assert QUANT in found(p)


def test_kv_cache_and_activation_dtypes_are_no_weight_precision() -> None:
    p = _serve(
        control(SERV),
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype fp8 --dtype bfloat16",
    )
    assert QUANT not in found(p)
    assert grade(p) == grade(control(SERV))


def test_a_server_in_fp8_beside_fp8_dtypes_passes() -> None:
    p = _serve(control(SERV), "vllm serve meta-llama/Llama-3.1-8B-Instruct --quantization fp8")
    p["task"]["dtypes"] = ["fp8_e4m3", "bf16"]
    p["timing"]["conditions"]["dtypes"] = ["fp8_e4m3", "bf16"]
    assert QUANT not in found(p)
    p = _serve(control(SERV), "vllm serve meta-llama/Llama-3.1-8B-Instruct --quantization none")
    assert QUANT not in found(p)
