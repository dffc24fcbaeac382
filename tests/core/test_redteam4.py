"""Variants of the red-team lies in other surface forms (a fourth, independent round):
look-alike model numbers, more baseline-handicapping environment variables, and a failure
relabelled as a compile error beside the defence that caught it. Each beside an honest
twin that must still pass."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_build import finalize  # noqa: E402
from _adv_controls import CONTROLS  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"


def control(name: str = GEMM) -> dict[str, Any]:
    return copy.deepcopy(CONTROLS[name].build())


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in validate(finalize(copy.deepcopy(p))).findings}


def _rename(p: dict[str, Any], name: str) -> None:
    p["hardware"]["device"] = name
    p["hardware"].pop("device_id", None)
    for side in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        side["device"] = name
        side.pop("device_id", None)


def test_a_model_number_spelled_with_letters() -> None:
    p = control()
    _rename(p, "NVIDIA H1OO 80GB HBM3")  # the letter O for zero: not in the table
    assert ("KE806", "/hardware/device") in found(p)
    p = control()
    _rename(p, "NVIDIA H100 80GB HBM3")
    assert ("KE806", "/hardware/device") not in found(p)


def _env(p: dict[str, Any], **kv: str) -> None:
    p["replay"].setdefault("env", {}).update(kv)


def test_pytorch_kept_off_cublaslt_for_the_baseline() -> None:
    p = control()
    _env(p, DISABLE_ADDMM_CUDA_LT="1")
    assert ("KE208", "/replay/env/DISABLE_ADDMM_CUDA_LT") in found(p)
    p = control()
    _env(p, TORCH_BLAS_PREFER_CUBLASLT="0")
    assert ("KE208", "/replay/env/TORCH_BLAS_PREFER_CUBLASLT") in found(p)
    p = control()
    _env(p, DISABLE_ADDMM_CUDA_LT="0")
    assert not {r for r, _ in found(p)} & {"KE208"}


def test_libtpu_flags_that_turn_optimisation_off() -> None:
    p = control("tpu_v5e_paged_attention_vs_xla")
    _env(p, LIBTPU_INIT_ARGS="--xla_tpu_enable_latency_hiding_scheduler=true --xla_llo_opt_level=0")
    assert ("KE208", "/replay/env/LIBTPU_INIT_ARGS") in found(p)
    p = control("tpu_v5e_paged_attention_vs_xla")
    _env(p, LIBTPU_INIT_ARGS="--xla_tpu_enable_latency_hiding_scheduler=true")
    assert ("KE208", "/replay/env/LIBTPU_INIT_ARGS") not in found(p)


def test_thread_counts_in_the_replay_environment_are_not_a_baseline_handicap() -> None:
    """The replay's environment holds for the candidate too: `OMP_NUM_THREADS=1` (set by many
    CI and container setups) says nothing about one side (the GPU example's dry run records
    it from its environment)."""
    name = next(n for n in sorted(CONTROLS) if "openblas" in n)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        p = control(name)
        _env(p, **{var: "1"})
        assert ("KE208", f"/replay/env/{var}") not in found(p)
