"""A sixth red-team round (identity, replay, statistics): a shape id given twice, a digest
copied from another artifact, a container of another vendor's stack, a std below what its
range forces, and a one-call baseline's statistics. Each beside an honest twin that must
still pass."""

from __future__ import annotations

import copy
import hashlib
import statistics
import sys
from pathlib import Path
from typing import Any

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_build import finalize, recompute_speedup  # noqa: E402
from _adv_kit import control, found, rules  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
SUITE = "h100_gemm_suite_three_shapes"
MI = "mi300x_bf16_gemm_vs_rocblas"


def report(p: dict[str, Any]) -> Any:
    return validate(finalize(copy.deepcopy(p)))


def _real(label: str) -> str:
    return "sha256:" + hashlib.sha256(label.encode()).hexdigest()


# ---------------------------------------------------------------- KE003: one shape id twice


def test_two_task_shapes_with_one_id_are_ambiguous() -> None:
    p = control(SUITE)
    sh = p["task"]["shapes"]
    small = sh.pop(1)
    small["id"] = sh[0]["id"]
    sh.insert(0, small)  # the small shape first: a first-match lookup reads it
    r = report(p)
    assert ("KE003", "/task/shapes/1/id") in {(f.rule_id, f.pointer) for f in r.findings}
    assert not r.ok


def test_shape_ids_equal_only_folded_are_one_id() -> None:
    p = control(SUITE)
    p["task"]["shapes"][1]["id"] = " M8192N8192K8192 "
    assert ("KE003", "/task/shapes/1/id") in found(p)


def test_distinct_shape_ids_and_repeated_validation_ids_pass() -> None:
    p = control(SUITE)
    assert "KE003" not in rules(p)
    # one validation result per shape and seed (the harness's own output) repeats an id
    v = p["validation"]["shapes"]
    v.append(copy.deepcopy(v[0]))
    assert "KE003" not in rules(p)


# ---------------------------------------------------------------- KE107: a copied digest


def test_a_capture_hash_copied_from_the_source_digest() -> None:
    p = control()
    p["profiler"][0]["source"]["sha256"] = p["compile"]["source_digest"]
    r = report(p)
    assert ("KE107", "/profiler/0/source/sha256") in {(f.rule_id, f.pointer) for f in r.findings}
    assert r.grade.letter == "C"


def test_a_source_digest_copied_from_the_container() -> None:
    p = control()
    p["compile"]["source_digest"] = p["replay"]["container"]["digest"]
    assert ("KE107", "/compile/source_digest") in found(p)


def test_one_file_recorded_twice_as_one_kind_passes() -> None:
    p = control()
    # the report listed as a compiled artifact of kind profile too, and a second capture
    # of the same report: one file, one kind
    p["compile"].setdefault("artifacts", []).append(
        {"kind": "profile", "name": "r.ncu-rep", "sha256": p["profiler"][0]["source"]["sha256"]}
    )
    p["profiler"].append(copy.deepcopy(p["profiler"][0]))
    p["profiler"][1]["source"]["sha256"] = p["profiler"][0]["source"]["sha256"]
    assert "KE107" not in rules(p)
    # a replay input is any file: equal to the source, it says nothing
    q = control()
    q["replay"]["inputs"] = [{"kind": "source", "name": "k.cu", "sha256": q["compile"]["source_digest"]}]
    assert "KE107" not in rules(q)
    q = control()
    q["profiler"][0]["source"]["sha256"] = _real("report.ncu-rep")
    assert "KE107" not in rules(q)


# ---------------------------------------------------------------- KE108: another vendor's image


def test_a_rocm_image_on_an_nvidia_run() -> None:
    p = control()
    p["replay"]["container"]["image"] = "rocm/pytorch:rocm6.2_ubuntu22.04_py3.10_pytorch_release_2.3.0"
    r = report(p)
    assert ("KE108", "/replay/container/image") in {(f.rule_id, f.pointer) for f in r.findings}
    assert r.grade.letter == "C"
    p["replay"]["container"]["image"] = "lmsysorg/sglang:v0.4.1-rocm620"
    assert ("KE108", "/replay/container/image") in found(p)


def test_a_cuda_image_on_an_amd_gpu() -> None:
    p = control(MI)
    p["replay"]["container"]["image"] = "nvcr.io/nvidia/pytorch:24.05-py3"
    assert ("KE108", "/replay/container/image") in found(p)
    p["replay"]["container"]["image"] = "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"
    assert ("KE108", "/replay/container/image") in found(p)


def test_images_of_the_vendors_own_stack_or_none_pass() -> None:
    assert "KE108" not in rules(control())  # nvcr.io on an H100
    assert "KE108" not in rules(control(MI))  # rocm/pytorch on an MI300X
    for image in ("python:3.11", "vllm/vllm-openai:v0.6.3", "ghcr.io/example/kernels:2026.11"):
        for name in (GEMM, MI):
            p = control(name)
            p["replay"]["container"]["image"] = image
            assert "KE108" not in rules(p), (image, name)


# ---------------------------------------------------------------- KE506: std below the range


def test_a_std_below_what_the_range_forces() -> None:
    p = control()
    st = p["timing"]["stats"]
    m = st["median"]
    st.pop("samples")
    st["ci_low"], st["ci_high"], st["ci_level"] = round(m * 0.9999, 5), round(m * 1.0001, 5), 0.95
    st["std"] = 0.0001  # 51 values over 1.7894..1.8869 ms: std >= 0.0097
    r = report(p)
    assert ("KE506", "/timing/stats/std") in {(f.rule_id, f.pointer) for f in r.findings}
    assert not r.ok


def test_the_least_std_a_range_allows_passes() -> None:
    # 49 values at the midpoint and the two extremes: the smallest std of that range
    n, lo, hi = 51, 1.7894, 1.8869
    xs = [lo, hi] + [(lo + hi) / 2] * (n - 2)
    pop = statistics.pstdev(xs)
    assert abs(pop - (hi - lo) / (2 * n) ** 0.5) < 1e-12
    p = control()
    st = p["timing"]["stats"]
    st.pop("samples")
    st.pop("percentiles", None)
    st["std"] = round(pop, 6)  # the population std, at the bound
    st["mean"] = round(statistics.fmean(xs), 6)
    assert "KE506" not in rules(p)
    st["std"] = round(pop * 0.5, 6)
    assert ("KE506", "/timing/stats/std") in found(p)
    # a block that dropped samples may state min and max of them all: not bounded
    st["dropped"] = 2
    assert ("KE506", "/timing/stats/std") not in found(p)


# ---------------------------------------------------------------- KE508: a one-call baseline


def test_a_one_sample_baseline_is_flagged_at_its_statistics() -> None:
    p = control()
    b = p["timing"]["baseline"]
    m = round(b["stats"]["median"] * 4, 4)
    b["stats"] = {
        "unit": b["stats"]["unit"],
        "median": m,
        "mean": m,
        "min": m,
        "max": m,
        "n": 1,
        "samples": [m],
    }
    b["conditions"]["repeats"] = 1
    recompute_speedup(p)
    r = report(p)
    got = {(f.rule_id, f.pointer) for f in r.findings}
    assert ("KE508", "/timing/baseline/stats/n") in got
    assert ("KE508", "/timing/baseline/conditions/repeats") in got
    assert r.grade.letter == "C"


def test_a_candidate_stats_block_of_two_calls_is_flagged() -> None:
    p = control()
    st = p["timing"]["stats"]
    xs = sorted(st["samples"])[24:26]
    p["timing"]["stats"] = {
        "unit": st["unit"],
        "median": round(sum(xs) / 2, 6),
        "mean": round(sum(xs) / 2, 6),
        "min": xs[0],
        "max": xs[1],
        "n": 2,
        "samples": xs,
    }
    recompute_speedup(p)
    assert ("KE508", "/timing/stats/n") in found(p)


def test_three_calls_per_side_pass_ke508() -> None:
    p = control()
    b = p["timing"]["baseline"]
    xs = sorted(b["stats"]["samples"])[24:27]
    b["stats"] = {
        "unit": b["stats"]["unit"],
        "median": xs[1],
        "mean": round(sum(xs) / 3, 6),
        "min": xs[0],
        "max": xs[2],
        "n": 3,
        "samples": xs,
    }
    b["conditions"]["repeats"] = 3
    recompute_speedup(p)
    assert "KE508" not in rules(p)
