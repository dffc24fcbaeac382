"""Rule review: false positives and false negatives found on realistic packets.

Each test builds a variant of a shipped valid packet and checks the findings on both the
model path (a dict) and the fast path (bytes).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kernel_evidence import validate

_ROOT = Path(__file__).resolve().parents[2]
_H100 = json.loads((_ROOT / "examples/packets/valid/nvidia_h100_gemm_vs_cublaslt.json").read_text())
_H100.pop("packet_id")


def _packet() -> dict[str, Any]:
    return copy.deepcopy(_H100)


def _findings(d: dict[str, Any]) -> list[tuple[str, str]]:
    """(rule, pointer) of every finding but KE005; asserts both paths agree."""
    model = sorted((f.rule_id, f.pointer, f.message) for f in validate(d).findings)
    fast = sorted((f.rule_id, f.pointer, f.message) for f in validate(msgspec.json.encode(d)).findings)
    assert model == fast
    return [(r, p) for r, p, _ in model if r != "KE005"]


def _flat_timing(d: dict[str, Any], cand: float, base: float) -> None:
    """Five repeats each side, no spread, no work figures (only the claim is under test)."""
    t = d["timing"]
    t["repeats"] = 5
    t["stats"] = {"unit": "us", "median": cand, "mean": cand, "min": cand, "max": cand, "n": 5}
    t["baseline"]["stats"] = {"unit": "us", "median": base, "mean": base, "min": base, "max": base, "n": 5}
    del d["task"]["shapes"][0]["work"]


# ---------------------------------------------------------------- KE301: the boundary is inside


@pytest.mark.parametrize(
    ("cand", "base", "claim", "tol"),
    [
        (100.0, 100.0, 1.02, 0.02),
        (100.0, 100.0, 0.98, 0.02),
        (100.0, 300.0, 3.06, 0.02),
        (100.0, 110.0, 1.1 * 1.05, 0.05),
    ],
)
def test_ke301_claim_exactly_at_the_tolerance_matches(
    cand: float, base: float, claim: float, tol: float
) -> None:
    d = _packet()
    _flat_timing(d, cand, base)
    d["timing"]["speedup"].update(value=claim, tolerance=tol)
    found = _findings(d)
    assert not [f for f in found if f[0] == "KE301"]
    # a claim above its timings by more than the default 2% is within a wider stated
    # tolerance (no KE301), but an inflated claim all the same (KE304, grade C)
    inflated = claim > base / cand * 1.021
    assert found == ([("KE304", "/timing/speedup/value")] if inflated else [])


def test_ke301_claim_just_outside_the_tolerance_fails() -> None:
    d = _packet()
    _flat_timing(d, 100.0, 100.0)
    d["timing"]["speedup"].update(value=1.0201, tolerance=0.02)
    assert _findings(d) == [("KE301", "/timing/speedup/value")]


def test_ke301_slowdown_claim_is_legitimate() -> None:
    d = _packet()
    _flat_timing(d, 125.0, 100.0)
    d["timing"]["speedup"]["value"] = 0.8
    assert _findings(d) == []


# ---------------------------------------------------------------- KE701: all-zeros output


@pytest.mark.parametrize(
    ("ref", "atol", "rtol"),
    [(0.01, 0.01, 0.01), (0.0101, 0.01, 0.01), (1.5, 1.0, 0.5), (0.01, 0.01, None), (0.0, None, 0.01)],
)
def test_ke701_all_zeros_output_would_pass(ref: float, atol: float | None, rtol: float | None) -> None:
    d = _packet()
    del d["task"]["tolerance"]
    shape = d["validation"]["shapes"][0]
    shape.update(reference_max_abs=ref, atol=atol, rtol=rtol)
    assert _findings(d) == [("KE701", "/validation/shapes/0")]


@pytest.mark.parametrize(
    ("ref", "atol", "rtol"), [(187.5, 0.01, 0.99), (0.02, 0.01, 0.0), (0.0102, 0.01, 0.01)]
)
def test_ke701_tolerance_that_can_fail(ref: float, atol: float, rtol: float) -> None:
    d = _packet()
    d["validation"]["shapes"][0].update(reference_max_abs=ref, atol=atol, rtol=rtol)
    assert _findings(d) == []


# ---------------------------------------------------------------- KE601: JAX's "TPU v5" is a v5p


def _scale_times(d: dict[str, Any], factor: float) -> None:
    """Every time of both sides times ``factor`` (the claim is unchanged): a faster or slower
    run of the same work, whose FLOPs still follow from the shape (KE605)."""
    for st in (d["timing"]["stats"], d["timing"]["baseline"]["stats"]):
        for k in ("median", "mean", "min", "max", "std"):
            if k in st:
                st[k] *= factor
        if "percentiles" in st:
            st["percentiles"] = {k: v * factor for k, v in st["percentiles"].items()}
        if "samples" in st:
            st["samples"] = [x * factor for x in st["samples"]]


def _tpu(device: str, tflops: float) -> dict[str, Any]:
    """The GEMM timed on a TPU so that its (unchanged, shape-derived) FLOPs run at ``tflops``."""
    d = _packet()
    d["hardware"] = {"vendor": "google", "device": device, "count": 1, "clocks": {"locked": True}}
    d["timing"]["baseline"]["provider"] = "XLA"
    median_s = d["timing"]["stats"]["median"] * 1e-6
    flops = d["task"]["shapes"][0]["work"]["flops"]["value"]
    _scale_times(d, flops / (tflops * 1e12) / median_s)
    del d["task"]["shapes"][0]["work"]["bytes"]  # the H100's byte count says nothing of a TPU here
    d.pop("profiler", None)  # nor does its ncu capture (held to the TPU's peak: KE601)
    return d


def test_ke601_tpu_v5_device_kind_is_a_v5p() -> None:
    # 400 TFLOP/s bf16: possible on a v5p (459), not on a v5e (197)
    assert _findings(_tpu("TPU v5", 400.0)) == []
    assert _findings(_tpu("TPU v5p", 400.0)) == []
    assert _findings(_tpu("TPU v5 lite", 400.0)) == [("KE601", "/timing/stats/median")]
    assert _findings(_tpu("TPU v5e", 400.0)) == [("KE601", "/timing/stats/median")]
    assert _findings(_tpu("TPU v5", 600.0)) == [("KE601", "/timing/stats/median")]


# ---------------------------------------------------------------- KE601: a block without a median


def test_ke601_mean_only_statistics_are_checked_on_the_mean() -> None:
    d = _packet()
    for k in ("median", "samples", "percentiles"):
        del d["timing"]["stats"][k]
    d["timing"]["speedup"].update(basis="mean", value=round(170.889677 / 151.901935, 4))
    assert _findings(d) == []
    _scale_times(d, 0.1)  # both sides 10x faster: ~9000 TFLOP/s and ~6.6 TB/s on an H100
    assert _findings(d) == [("KE601", "/timing/stats/mean"), ("KE602", "/timing/stats/mean")]


# ---------------------------------------------------------------- KE801: names with no model


@pytest.mark.parametrize(
    "device", ["NVIDIA GPU", "NVIDIA", "AMD GPU", "Google TPU", "Unknown GPU", "GPU 0", "cuda:0"]
)
def test_ke801_vendor_and_generic_words_name_no_model(device: str) -> None:
    d = _packet()
    d["hardware"]["device"] = device
    assert ("KE801", "/hardware/device") in _findings(d)


@pytest.mark.parametrize("device", ["NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB", "NVIDIA GH200 480GB"])
def test_ke801_model_names_are_identified(device: str) -> None:
    d = _packet()
    d["hardware"]["device"] = device
    assert _findings(d) == []


@pytest.mark.parametrize("device", ["AMD Radeon Graphics", "AMD Instinct MI300X", "AMD Instinct MI300X VF"])
def test_ke801_amd_names_are_identified(device: str) -> None:
    d = _packet()
    # an MI300X's own CU count and memory (the H100's 132 SMs and 80 GiB would be KE806)
    d["hardware"].update(vendor="amd", device=device, arch="gfx942", compute_units=304)
    d["hardware"]["memory"] = {"value": 192.0, "unit": "GB"}
    d["timing"]["baseline"].update(provider="hipBLASLt", version="0.10.0")  # its own version (KE210)
    assert _findings(d) == []


def test_cpu_vendor_needs_no_model_name() -> None:
    d = _packet()
    d["hardware"] = {"vendor": "cpu", "device": "cpu", "count": 1, "clocks": {"locked": True}}
    # cuBLASLt on a CPU would be KE209; OpenBLAS with a version of its own (KE210)
    d["timing"]["baseline"].update(provider="OpenBLAS", version="0.3.28", call="cblas_sbgemm(m=n=k=4096)")
    assert _findings(d) == [("KE604", "/hardware/device")]
