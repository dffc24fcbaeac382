"""Red team 6a, the status band (KE412): a defence certified by the candidate's own tool, a
check restricted to one rank of a multi-process run, Python startup hooks and injection
variables by pattern beside a passed timer_integrity, an output buffer shared with the
reference, a pool of inputs cycled, unseen seeds that are the validation's, a seed drawn
twice, and a replay switch that turns input reuse on. Each beside an honest twin."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_kit import control, found  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
TP2 = "serving_mixtral_moe_low_concurrency_tp2"


def ke412(p: dict[str, Any]) -> set[str]:
    return {ptr for r, ptr in found(p) if r == "KE412"}


def defence(p: dict[str, Any], check: str) -> tuple[int, dict[str, Any]]:
    for i, d in enumerate(p["defences"]):
        if d["check"] == check:
            return i, d
    raise KeyError(check)


def test_the_controls_are_clean() -> None:
    for name in (GEMM, TP2):
        assert not ke412(control(name)), name


# ---------------------------------------------------------------- the tool names the candidate


@pytest.mark.parametrize(
    "tool",
    [
        "gemm_bf16_tn_8192_ws.selftest",
        "GEMM_BF16_TN_8192_WS selftest",
        "gemm_bf16_tn_128x256_warpspecialized",
    ],
)
def test_a_defence_certified_by_the_candidate(tool: str) -> None:
    p = control()
    i, d = defence(p, "timer_integrity")
    d["tool"] = tool
    assert f"/defences/{i}/tool" in ke412(p)


@pytest.mark.parametrize("tool", ["acme-bench 3.3.0", "acme-bench gemm_bf16_tn_8192_wsx", "ncu 2024.1"])
def test_a_harness_tool_is_independent(tool: str) -> None:
    p = control()
    i, d = defence(p, "timer_integrity")
    d["tool"] = tool
    assert not ke412(p)


# ---------------------------------------------------------------- one rank of several


def _rank0(p: dict[str, Any], detail: str) -> int:
    i, d = defence(p, "timer_integrity")
    d["detail"] = detail
    return i


@pytest.mark.parametrize(
    "detail",
    [
        "timer functions checked unpatched on rank 0 only; a 1 ms spin measured 1.00 ms",
        "timer checked only on GPU 0; a 1 ms spin measured 1.00 ms",
        "timer functions checked on the first rank only",
    ],
)
def test_a_check_on_one_rank_of_two(detail: str) -> None:
    p = control()
    i = _rank0(p, detail)
    p["replay"]["command"] = ["torchrun", "--nproc_per_node=2"] + p["replay"]["command"][1:]
    assert f"/defences/{i}" in ke412(p)
    q = control()  # device_count says so too
    i = _rank0(q, detail)
    q["timing"]["conditions"]["device_count"] = 2
    q["timing"]["baseline"]["conditions"]["device_count"] = 2
    assert f"/defences/{i}" in ke412(q)


def test_one_rank_of_one_or_every_rank() -> None:
    p = control()  # one process: rank 0 is the run
    _rank0(p, "timer functions checked unpatched on rank 0 only; a 1 ms spin measured 1.00 ms")
    assert not ke412(p)
    q = control()
    _rank0(q, "timer functions checked unpatched on every rank, not rank 0 only")
    q["replay"]["command"] = ["torchrun", "--nproc_per_node=2"] + q["replay"]["command"][1:]
    assert not ke412(q)
    s = control(TP2)  # a two-GPU serving run whose detail restricts nothing
    assert not ke412(s)


# ---------------------------------------------------------------- Python startup hooks, injection


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"PYTHONSTARTUP": "./candidate_site/patch_timer.py"}, "PYTHONSTARTUP"),
        ({"PYTHONPATH": "./candidate_site"}, "PYTHONPATH"),
        ({"PYTHONPATH": "src:/work/submissions/team7"}, "PYTHONPATH"),
        ({"PYTHONPATH": "./gemm_bf16_tn_8192_ws"}, "PYTHONPATH"),
        ({"NVTX_INJECTION64_PATH": "/opt/shim/libevent_shift.so"}, "NVTX_INJECTION64_PATH"),
        ({"ACME_INJECTION32_PATH": "/opt/shim/libx.so"}, "ACME_INJECTION32_PATH"),
    ],
)
def test_code_run_before_the_harness(env: dict[str, str], var: str) -> None:
    p = control()
    p["replay"]["env"].update(env)
    assert f"/replay/env/{var}" in ke412(p)


@pytest.mark.parametrize(
    "env",
    [
        {"PYTHONPATH": "src"},
        {"PYTHONPATH": "."},
        {"PYTHONPATH": "/opt/lib/python:bench"},
        {"NVTX_INJECTION64_PATH": "/opt/nvidia/nsight-systems/lib/libToolsInjection64.so"},
    ],
)
def test_an_honest_path_or_profiler(env: dict[str, str]) -> None:
    p = control()
    p["replay"]["env"].update(env)
    assert not ke412(p)


# ---------------------------------------------------------------- output buffer, pool, seeds


@pytest.mark.parametrize(
    "detail",
    [
        "output buffer shared with the reference call; compared after the reference ran",
        "compared in the same buffer as the reference",
        "the candidate's output buffer was written by the reference",
    ],
)
def test_the_output_buffer_is_the_references(detail: str) -> None:
    p = control()
    i, d = defence(p, "outputs_checked_after_timing")
    d["detail"] = detail
    assert f"/defences/{i}" in ke412(p)


@pytest.mark.parametrize(
    "detail",
    [
        "outputs of the last timed call compared with the reference",
        "separate output buffers; the output buffer is not shared with the reference",
        "outputs compared after the reference ran in its own buffer",
    ],
)
def test_separate_output_buffers(detail: str) -> None:
    p = control()
    _, d = defence(p, "outputs_checked_after_timing")
    d["detail"] = detail
    assert not ke412(p)


@pytest.mark.parametrize(
    "detail",
    [
        "inputs drawn round-robin from a pool of 2 pre-generated tensors",
        "inputs cycled through 4 input sets",
        "an 8-entry ring of inputs",
    ],
)
def test_a_pool_of_inputs_below_the_repeats(detail: str) -> None:
    p = control()
    i, d = defence(p, "fresh_inputs")
    d["detail"] = detail
    assert f"/defences/{i}" in ke412(p)


@pytest.mark.parametrize(
    "detail",
    [
        "new inputs for each side in every round",
        "inputs drawn from a pool of 100 pre-generated tensors",  # above the 51 repeats
        "a pool of 2 buffers refilled with new random values each round",
    ],
)
def test_a_pool_above_the_repeats_or_refilled(detail: str) -> None:
    p = control()
    _, d = defence(p, "fresh_inputs")
    d["detail"] = detail
    assert not ke412(p)


def test_unseen_seeds_that_the_validation_drew() -> None:
    p = control()
    i, d = defence(p, "unseen_inputs")
    d["detail"] = "re-run on 2 input sets (seeds 20261120, 20261121), all matched"
    assert f"/defences/{i}" in ke412(p)
    q = control()  # seeds of its own
    _, d = defence(q, "unseen_inputs")
    d["detail"] = "re-run on 2 input sets (seeds 777, 778), all matched"
    assert not ke412(q)
    s = control()  # one of its own beside a validation seed: not only the validation's
    _, d = defence(s, "unseen_inputs")
    d["detail"] = "re-run on 2 input sets (seeds 20261121, 778), all matched"
    assert not ke412(s)


def test_a_seed_drawn_twice() -> None:
    p = control()
    p["validation"]["seeds"] = [20261120, 20261120]
    assert "/validation/seeds" in ke412(p)
    q = control()
    q["validation"]["seeds"] = [20261120, 20261121, 20261122]
    assert not ke412(q)
    s = control()  # not said to be regenerated: the same seed twice claims nothing
    s["validation"]["seeds"] = [20261120, 20261120]
    s["validation"]["inputs_regenerated"] = None
    del s["validation"]["inputs_regenerated"]
    assert "/validation/seeds" not in ke412(s)


# ---------------------------------------------------------------- a replay switch of reuse


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"BENCH_INPUT_POOL": "1"}, "BENCH_INPUT_POOL"),
        ({"REUSE_INPUTS": "true"}, "REUSE_INPUTS"),
        ({"CACHE_OUTPUTS": "on"}, "CACHE_OUTPUTS"),
        ({"INPUT_POOL_SIZE": "4"}, "INPUT_POOL_SIZE"),
    ],
)
def test_an_env_switch_of_reuse(env: dict[str, str], var: str) -> None:
    p = control()
    p["replay"]["env"].update(env)
    assert f"/replay/env/{var}" in ke412(p)


@pytest.mark.parametrize(
    "env",
    [
        {"BENCH_INPUT_POOL": "0"},
        {"REUSE_INPUTS": "false"},
        {"INPUT_POOL_SIZE": "1000"},
        {"OUTPUT_CACHE_DIR": "/tmp/cache"},
        {"DISABLE_INPUT_CACHE": "1"},
        {"TRITON_CACHE_DIR": "/tmp/triton"},
    ],
)
def test_an_env_switch_off(env: dict[str, str]) -> None:
    p = control()
    p["replay"]["env"].update(env)
    assert not ke412(p)


@pytest.mark.parametrize(
    "args", [["--reuse-inputs"], ["--reuse_inputs=1"], ["--input-pool", "2"], ["--cache-outputs", "--x"]]
)
def test_a_flag_of_reuse(args: list[str]) -> None:
    p = control()
    p["replay"]["command"] = p["replay"]["command"] + args
    assert "/replay/command" in ke412(p)


@pytest.mark.parametrize(
    "args",
    [
        ["--no-reuse-inputs"],
        ["--reuse-inputs=false"],
        ["--input-pool", "100"],
        ["--output-cache-dir", "/tmp/c"],
    ],
)
def test_a_flag_of_no_reuse(args: list[str]) -> None:
    p = control()
    p["replay"]["command"] = p["replay"]["command"] + args
    assert not ke412(p)
