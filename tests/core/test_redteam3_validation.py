"""Third red-team round, validation: KE411 (matched_ratio 1 beside an error above every
bound), KE701 (the reference is the candidate itself), KE702 (a floating-point pass with no
tolerance at all)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from kernel_evidence import validate

ROOT = Path(__file__).resolve().parents[2]
_GEMM = json.loads((ROOT / "examples/packets/valid/nvidia_h100_gemm_vs_cublaslt.json").read_text())


def _base() -> dict[str, Any]:
    d = copy.deepcopy(_GEMM)
    d.pop("packet_id", None)
    return d


def _hits(d: dict[str, Any], rule: str) -> list[str]:
    return [f.pointer for f in validate(d).findings if f.rule_id == rule]


def test_the_base_is_clean_of_these_rules() -> None:
    d = _base()
    assert d["timing"].get("speedup") is not None
    for rule in ("KE411", "KE701", "KE702"):
        assert _hits(d, rule) == []


# ---- KE411: matched_ratio 1 beside an error above the largest bound


def test_all_matched_beside_an_error_above_every_bound() -> None:
    d = _base()
    s = d["validation"]["shapes"][0]
    s["required_matched_ratio"] = 0.99
    s["max_abs_error"] = 40.0  # bound 0.01 + 0.01 * 187.5 = 1.885
    assert _hits(d, "KE411") == ["/validation/shapes/0/matched_ratio"]
    assert validate(d).ok is False


def test_task_ratio_below_one_and_all_matched_is_held_too() -> None:
    d = _base()
    d["task"]["tolerance"]["required_matched_ratio"] = 0.999
    d["validation"]["shapes"][0]["max_abs_error"] = 5.0
    assert _hits(d, "KE411") == ["/validation/shapes/0/matched_ratio"]


def test_some_elements_out_of_bound_with_a_ratio_below_one_passes() -> None:
    d = _base()
    s = d["validation"]["shapes"][0]
    s["required_matched_ratio"] = 0.99
    s["matched_ratio"] = 0.9995  # a few elements failed, as the big error says
    s["max_abs_error"] = 40.0
    assert _hits(d, "KE411") == []


def test_all_matched_with_an_error_within_the_bound_passes() -> None:
    d = _base()
    s = d["validation"]["shapes"][0]
    s["required_matched_ratio"] = 0.99
    s["max_abs_error"] = 1.5  # below 1.885
    assert _hits(d, "KE411") == []


# ---- KE701: the reference is the candidate itself


def _is_self(d: dict[str, Any]) -> list[str]:
    return _hits(d, "KE701")


def test_reference_named_as_the_subject_with_a_note() -> None:
    d = _base()
    d["task"]["reference"] = {"name": d["subject"]["name"] + " (fp32 epilogue)", "kind": "other"}
    assert _is_self(d) == ["/task/reference/name"]
    assert validate(d).ok is False


def test_reference_named_as_the_captured_candidate_kernel() -> None:
    d = _base()
    kernel = d["profiler"][0]["kernels"][0]["name"]
    d["profiler"][0]["of"] = {"side": "candidate", "expected_kernels": [kernel]}
    assert _is_self(d) == []
    d["task"]["reference"] = {"name": kernel, "kind": "triton"}
    assert _is_self(d) == ["/task/reference/name"]


def test_reference_named_as_the_lineage_candidate() -> None:
    d = _base()
    d["lineage"] = {"run_id": "r1", "candidate_id": "gemm_v7", "iteration": 7, "relation": "mutation"}
    d["task"]["reference"] = {"name": "GEMM_V7", "kind": "other"}
    assert _is_self(d) == ["/task/reference/name"]


def test_an_independent_reference_naming_the_candidate_in_its_text_passes() -> None:
    d = _base()
    name = d["subject"]["name"]
    d["task"]["reference"] = {"name": f"torch.matmul in fp32 (checks {name})", "kind": "torch_eager"}
    assert _is_self(d) == []
    d["task"]["reference"] = {"name": name + "_naive_fp32", "kind": "other"}
    assert _is_self(d) == []


def test_a_generic_operator_name_is_not_compared() -> None:
    d = _base()
    d["subject"]["name"] = "gemm"
    d["task"]["reference"] = {"name": "gemm (cuBLAS, fp32 accumulate)", "kind": "vendor_library"}
    assert _is_self(d) == []


def test_a_failed_validation_is_not_held_to_it() -> None:
    d = _base()
    d["task"]["reference"] = {"name": d["subject"]["name"], "kind": "other"}
    d["validation"]["verdict"] = "failed"
    assert _is_self(d) == []


# ---- KE702: a floating-point pass with no tolerance anywhere


def _no_tolerance(d: dict[str, Any]) -> dict[str, Any]:
    del d["task"]["tolerance"]
    s = d["validation"]["shapes"][0]
    s.pop("atol")
    s.pop("rtol")
    return d


def test_tolerance_deleted_behind_a_claim() -> None:
    d = _no_tolerance(_base())
    d["validation"]["shapes"][0]["max_abs_error"] = 40.0
    assert _hits(d, "KE702") == ["/validation/shapes/0"]
    assert validate(d).grade.letter == "C"


def test_tolerance_deleted_and_no_error_figures() -> None:
    d = _no_tolerance(_base())
    s = d["validation"]["shapes"][0]
    s.pop("max_abs_error")
    s.pop("max_rel_error")
    assert _hits(d, "KE702") == ["/validation/shapes/0"]


def test_an_exact_match_without_a_tolerance_passes() -> None:
    d = _no_tolerance(_base())
    s = d["validation"]["shapes"][0]
    s["max_abs_error"] = 0.0
    s["max_rel_error"] = 0.0
    assert _hits(d, "KE702") == []


def test_a_zero_tolerance_passes() -> None:
    d = _base()
    d["task"]["tolerance"] = {"atol": 0.0, "rtol": 0.0}
    s = d["validation"]["shapes"][0]
    s["atol"] = 0.0
    s["rtol"] = 0.0
    s["max_abs_error"] = 0.0
    s["max_rel_error"] = 0.0
    assert _hits(d, "KE702") == []


def test_an_integer_output_without_a_tolerance_passes() -> None:
    d = _no_tolerance(_base())
    d["task"]["shapes"][0].setdefault("tensors", []).append(
        {"name": "out", "shape": [8192, 8192], "dtype": "int32", "layout": "row"}
    )
    d["validation"]["shapes"][0]["max_abs_error"] = 1.0
    assert _hits(d, "KE702") == []
    # the same output in bf16 is held to it
    d["task"]["shapes"][0]["tensors"][-1]["dtype"] = "bf16"
    assert _hits(d, "KE702") == ["/validation/shapes/0"]


def test_no_claim_no_warning() -> None:
    d = _no_tolerance(_base())
    d["timing"].pop("speedup")
    assert _hits(d, "KE702") == []


def test_error_figures_dropped_behind_a_claim() -> None:
    d = _base()
    s = d["validation"]["shapes"][0]
    s.pop("max_abs_error")
    s.pop("max_rel_error")
    assert _hits(d, "KE702") == ["/validation/shapes/0/max_abs_error"]
    assert validate(d).grade.letter == "C"
    s["max_rel_error"] = 0.002  # one figure recorded is enough
    assert _hits(d, "KE702") == []
