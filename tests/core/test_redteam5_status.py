"""Red team 5s, the status band: defence records that were not really run (KE412: folded
forms, more not-run words, zero counts, the replay's public seed named as unseen), failure
text that says the harness caught the candidate (KE403), and clock-warping replays with or
without a timer_integrity record (KE412). Each beside an honest twin that must still pass."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate
from kernel_evidence._codec.canonical import packet_id_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_build import finalize  # noqa: E402
from _adv_kit import control  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
SERV = "serving_vllm_llama8b_h100"
V01 = "migrated_v01_h100_gemm"
FAIL = "failed_tolerance_miss_timed"
TIMEOUT = "error_timeout_tpu"


def _finish(p: dict[str, Any]) -> dict[str, Any]:
    p = copy.deepcopy(p)
    if p.get("schema_version") != "0.1":
        return finalize(p)
    p.pop("packet_id", None)  # a 0.1 packet is migrated as it is: only its id restated
    p["packet_id"] = packet_id_for(p)
    return p


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in validate(_finish(p)).findings}


def rules(p: dict[str, Any]) -> set[str]:
    return {r for r, _ in found(p)}


def defence(p: dict[str, Any], check: str) -> tuple[int, dict[str, Any]]:
    for i, d in enumerate(p["defences"]):
        if d["check"] == check:
            return i, d
    raise KeyError(check)


def test_the_controls_are_clean() -> None:
    for name in (GEMM, SERV, V01, FAIL, TIMEOUT):
        assert not rules(control(name)) & {"KE403", "KE412"}, name


# ---------------------------------------------------------------- KE412: not really run


@pytest.mark.parametrize(
    "detail",
    [
        "never executed (GPU budget exhausted)",
        "Never ran: the harness timed out",
        "TODO: wire up after the deadline",
        "TBD",
        "FIXME - hook the clock check",
        "pending (next CI run)",
        "deferred: no time before the deadline",
        "will run after the submission",
        "was not executed on this machine",
        "hasn't been run yet",
        "ｓｋｉｐｐｅｄ: no time",  # fullwidth: NFKC folds it
        "ＴＯＤＯ",
        "re-run on 0 unseen input sets, all matched",
        "compared with a reference on 0 of 1000 requests",
        "0/64 prompts compared",
        "clock checked; never executed",  # a clause after `;` is not a detail start
    ],
)
def test_a_defence_detail_that_says_it_did_not_run_or_checked_nothing(detail: str) -> None:
    p = control(GEMM)
    i, d = defence(p, "unseen_inputs")
    if detail == "clock checked; never executed":
        detail = "8 sets re-run; never executed on the baseline"
    d["detail"] = detail
    assert ("KE412", f"/defences/{i}") in found(p)


@pytest.mark.parametrize(
    "detail",
    [
        "re-run on 8 unseen input sets, all matched",
        "re-run on 8 unseen input sets, 0 of 8 mismatched",
        "64 requests compared, 0 stale outputs",
        "0 outputs differed from the reference over 8 draws",
        "re-run on seed 0 inputs and 7 more sets, all matched",
        "pending requests drained before the check; 8 sets re-run, all matched",
        "deferred work: none found, outputs synced before the clock stopped",
        "did not find a cached output in 8 re-runs",
        "re-run on 10 unseen input sets (1.0 ms each)",
        "８ unseen input sets re-run, all matched",  # fullwidth digit folds to 8
    ],
)
def test_an_honest_defence_detail_passes(detail: str) -> None:
    p = control(GEMM)
    defence(p, "unseen_inputs")[1]["detail"] = detail
    assert "KE412" not in rules(p)


def test_a_serving_output_check_on_zero_requests() -> None:
    p = control(SERV)
    i, d = defence(p, "outputs_checked_after_timing")
    d["detail"] = "completions compared with a reference run on 0 of 1000 requests"
    assert ("KE412", f"/defences/{i}") in found(p)
    d["detail"] = "completions compared with a reference run on 64 of 1000 requests"
    assert "KE412" not in rules(p)


# ---------------------------------------------------------------- KE412: the public seed


@pytest.mark.parametrize("name", [SERV, GEMM])
def test_unseen_inputs_naming_only_the_replays_seed(name: str) -> None:
    p = control(name)
    seed = p["replay"]["seeds"]["inputs"]
    i, d = defence(p, "unseen_inputs")
    d["detail"] = f"random dataset drawn with seed {seed}"
    assert ("KE412", f"/defences/{i}") in found(p)
    # a seed of its own, or no number at all: nothing to contradict
    d["detail"] = f"random dataset drawn with seed {seed + 7919}"
    assert "KE412" not in rules(p)
    d["detail"] = "random dataset drawn with a seed the server never saw"
    assert "KE412" not in rules(p)


def test_the_replays_argv_seed_named_as_unseen() -> None:
    p = control(SERV)
    p["replay"]["seeds"] = None
    cmd = p["replay"]["command"]
    argv_seed = int(cmd[cmd.index("--seed") + 1])
    i, d = defence(p, "unseen_inputs")
    d["detail"] = f"prompts drawn with seed {argv_seed}"
    assert ("KE412", f"/defences/{i}") in found(p)


def test_hidden_workload_may_name_the_released_seed() -> None:
    # hidden until the run, released for the replay afterwards: honest
    p = control(SERV)
    seed = p["replay"]["seeds"]["inputs"]
    defence(p, "hidden_workload")[1]["detail"] = f"seed {seed} released after the server started"
    assert "KE412" not in rules(p)


def test_a_seed_kept_for_the_unseen_check_itself() -> None:
    p = control(GEMM)
    p["replay"]["seeds"]["unseen"] = 918273645
    defence(p, "unseen_inputs")[1]["detail"] = "re-run on inputs from seed 918273645, drawn after the build"
    assert "KE412" not in rules(p)


# ---------------------------------------------------------------- KE403: the failure's own text


@pytest.mark.parametrize(
    ("field", "text"),
    [
        (
            "log_excerpt",
            "[acme-bench] timer_integrity FAILED: time.perf_counter replaced by a lambda returning 0.0",
        ),
        ("message", "max abs error 0.4; unseen_inputs check caught the candidate"),
        ("message", "the candidate monkeypatched time.perf_counter before the timed loop"),
        ("log_excerpt", "harness: the clock was patched during the run"),
        ("message", "flagged as a reward hack by the harness"),
    ],
)
def test_a_failure_whose_text_says_the_harness_caught_the_candidate(field: str, text: str) -> None:
    p = control(FAIL)
    p["failure"][field] = text
    assert ("KE403", "/failure/failure_class") in found(p)


def test_an_error_packet_whose_log_says_the_clock_was_replaced() -> None:
    p = control(TIMEOUT)
    p["failure"]["log_excerpt"] = "no result after 600 s; time.perf_counter was replaced by the candidate"
    assert ("KE403", "/failure/failure_class") in found(p)


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("log_excerpt", "shape m4096: max_abs_error 0.41 > atol 0.05 + rtol 0.01 x 12.5"),
        ("log_excerpt", "timer_integrity passed; shape r7c1000 failed the tolerance"),
        ("message", "outputs_checked_after_timing failed to run: CUDA out of memory"),
        ("message", "not a reward hack: an off-by-one in the tail loop"),
        ("log_excerpt", "no timer was patched; max abs error 0.0134"),
        ("message", "the clock rate was replaced in the config (boost off) and the tail loop is off by one"),
    ],
)
def test_an_honest_failure_text_passes(field: str, text: str) -> None:
    p = control(FAIL)
    p["failure"][field] = text
    assert "KE403" not in rules(p)


def test_a_failure_text_beside_that_check_recorded_passed() -> None:
    p = control(GEMM)
    p["status"] = "failed"
    p["timing"].pop("speedup", None)
    p["failure"] = {
        "failure_class": "incorrect_numerical",
        "log_excerpt": "timer_integrity FAILED: clock patched",
    }
    p["validation"]["verdict"] = "failed"
    p["validation"]["shapes"][0]["passed"] = False
    # the record says the timer check passed: the text is the producer's account
    assert "KE403" not in rules(p)
    defence(p, "timer_integrity")[1]["outcome"] = "skipped"
    defence(p, "timer_integrity")[1]["detail"] = "not run"
    assert ("KE403", "/failure/failure_class") in found(p)


# ---------------------------------------------------------------- KE412: a warped clock


@pytest.mark.parametrize("wrapper", [["faketime", "-f", "x0.5"], ["/usr/bin/datefudge", "2026-01-01"]])
def test_a_replay_under_a_clock_warping_wrapper(wrapper: list[str]) -> None:
    p = control(GEMM)
    p["replay"]["command"] = wrapper + p["replay"]["command"]
    assert ("KE412", "/replay/command") in found(p)
    p = control(GEMM)
    p["replay"]["command"] = ["nice", "-n", "5"] + p["replay"]["command"]
    assert "KE412" not in rules(p)


def test_faketime_inside_a_shell_script_and_in_the_env() -> None:
    p = control(GEMM)
    p["replay"]["command"] = ["bash", "-c", "FAKETIME=x0.5 " + " ".join(p["replay"]["command"])]
    assert ("KE412", "/replay/command") in found(p)
    p = control(GEMM)
    p["replay"]["env"]["FAKETIME"] = "x0.5"
    assert ("KE412", "/replay/env/FAKETIME") in found(p)


def test_a_preloaded_clock_library_without_a_timer_record() -> None:
    p = control(V01)
    p["replay"].setdefault("env", {})["LD_PRELOAD"] = "/opt/libfastclock.so"
    assert ("KE412", "/replay/env/LD_PRELOAD") in found(p)
    p = control(GEMM)
    p["defences"] = [d for d in p["defences"] if d["check"] != "timer_integrity"]
    p["replay"]["env"]["LD_PRELOAD"] = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
    assert ("KE412", "/replay/env/LD_PRELOAD") in found(p)


@pytest.mark.parametrize(
    "lib",
    ["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/opt/intel/lib/libiomp5.so", "libstdc++.so.6"],
)
def test_a_preloaded_library_that_is_no_clock(lib: str) -> None:
    p = control(V01)
    p["replay"].setdefault("env", {})["LD_PRELOAD"] = lib
    assert "KE412" not in rules(p)
