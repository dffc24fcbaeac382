"""Third red-team round, status band (KE403, KE405, KE412) and extensions (KE009): each
cheat caught (rule and pointer) beside its honest near-twin, which is let through.

The packets are the adversarial suite's controls (read-only use of its builders), with one
field changed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))

from _adv_build import finalize  # noqa: E402
from _adv_controls import control  # noqa: E402

from kernel_evidence.rules.status import _says_not_run  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"  # passed, grade A, every defence passed
HACK = "failed_reward_hack_caught"  # failed/reward_hack, unseen_inputs failed, verdict failed
MISS = "failed_tolerance_miss_timed"  # failed/incorrect_numerical, shape r7c1000 failed
NAN = "failed_nan_inf_mi300x"  # failed/nan_inf, nan_seen on the only shape
COMPILE = "failed_compile_error"  # failed/compile_error, compile.succeeded false
TIMEOUT = "error_timeout_tpu"  # error/timeout, no validation


def report(p: dict[str, Any]) -> Any:
    return validate(finalize(p))


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in report(p).findings}


def rules(p: dict[str, Any]) -> set[str]:
    return {r for r, _ in found(p)}


def defence(p: dict[str, Any], check: str) -> tuple[int, dict[str, Any]]:
    return next((i, d) for i, d in enumerate(p["defences"]) if d["check"] == check)


def as_error(p: dict[str, Any], fc: str) -> dict[str, Any]:
    p["status"] = "error"
    p["failure"]["failure_class"] = fc
    return p


def test_the_controls_are_clean() -> None:
    for name in (GEMM, HACK, MISS, NAN, COMPILE, TIMEOUT):
        r = report(control(name))
        assert r.ok, [f.line() for f in r.findings]
        assert not r.findings, [f.line() for f in r.findings]


# ---------------------------------------------------------------- KE403: a caught hack relabelled


@pytest.mark.parametrize("fc", ["incorrect_numerical", "incorrect_shape", "nan_inf"])
def test_a_caught_reward_hack_relabelled_as_a_correctness_failure(fc: str) -> None:
    p = control(HACK)
    p["failure"]["failure_class"] = fc
    if fc == "nan_inf":
        p["validation"]["shapes"][0]["nan_seen"] = True
    assert ("KE403", "/failure/failure_class") in found(p)


def test_a_correctness_failure_beside_no_failed_defence_or_a_failed_flush() -> None:
    p = control(HACK)
    p["failure"]["failure_class"] = "incorrect_numerical"
    # an honest tolerance miss's message (the hack control's own text says cached outputs: KE403)
    p["failure"]["message"] = "max abs error 0.0134 > bound 0.00104 on shape m4096n4096k4096"
    defence(p, "unseen_inputs")[1]["outcome"] = "passed"
    defence(p, "unseen_inputs")[1]["detail"] = "8 unseen input sets checked"
    assert "KE403" not in rules(p)
    # a failed cache flush is the harness's flush, not the candidate caught
    defence(p, "unseen_inputs")[1]["check"] = "cache_flush"
    defence(p, "cache_flush")[1]["outcome"] = "failed"
    assert "KE403" not in rules(p)


def test_a_runtime_error_or_compile_error_beside_a_failed_defence_is_a_reward_hack() -> None:
    # the recorder files a failed defence's reward_hack before the exception the block
    # raised after it: any other class beside it is a relabel
    for fc in ("runtime_error", "compile_error", "timeout"):
        p = control(HACK)
        p["failure"]["failure_class"] = fc
        p.pop("validation")
        assert ("KE403", "/failure/failure_class") in found(p), fc


# ---------------------------------------------------------------- KE403: the candidate's fault filed as error


def test_a_caught_reward_hack_filed_as_an_infra_error() -> None:
    p = as_error(control(HACK), "infra_error")
    assert ("KE403", "/failure/failure_class") in found(p)
    # without the failed validation, the failed defence alone says so
    p = as_error(control(HACK), "infra_error")
    p.pop("validation")
    assert ("KE403", "/failure/failure_class") in found(p)


@pytest.mark.parametrize("fc", ["infra_error", "timeout", "runtime_error", "invalid_reference"])
def test_a_tolerance_miss_filed_as_an_error(fc: str) -> None:
    p = as_error(control(MISS), fc)
    assert ("KE403", "/failure/failure_class") in found(p)


def test_an_infra_error_after_the_validation_passed() -> None:
    p = as_error(control(MISS), "infra_error")
    p["failure"]["message"] = "node drained after validation, before timing finished"
    p["failure"].pop("shape_id", None)
    shape = p["validation"]["shapes"][1]
    shape.update({"passed": True, "max_abs_error": 0.0002, "max_rel_error": 0.005, "matched_ratio": 1.0})
    p["validation"]["verdict"] = "passed"
    assert "KE403" not in rules(p), found(p)


def test_nan_output_blamed_on_the_reference() -> None:
    p = as_error(control(NAN), "invalid_reference")
    p["failure"]["message"] = "reference produced NaN for the fp8 inputs"
    assert ("KE403", "/failure/failure_class") in found(p)
    # the same as infra_error
    p = as_error(control(NAN), "infra_error")
    assert ("KE403", "/failure/failure_class") in found(p)


@pytest.mark.parametrize(
    "message",
    [
        "the reference produced NaN for fp8 inputs (torch fp8 matmul overflows)",
        "NaN in the reference output: the comparison is meaningless",
        "reference implementation raised RuntimeError: CUBLAS_STATUS_NOT_SUPPORTED",
    ],
)
def test_an_invalid_reference_whose_validation_says_the_reference_broke(message: str) -> None:
    p = as_error(control(NAN), "invalid_reference")
    p["validation"]["message"] = message
    assert "KE403" not in rules(p), found(p)
    # the same message does not excuse an infra_error
    p = as_error(control(NAN), "infra_error")
    p["validation"]["message"] = message
    assert ("KE403", "/failure/failure_class") in found(p)
    # nor a message about the candidate's outputs
    p = as_error(control(NAN), "invalid_reference")
    p["validation"]["message"] = "max abs error 312 from the reference"
    assert ("KE403", "/failure/failure_class") in found(p)


# ---------------------------------------------------------------- KE403: a failure recorded as skipped


def test_a_compile_error_recorded_as_skipped() -> None:
    p = control(COMPILE)
    p["status"] = "skipped"
    assert ("KE403", "/status") in found(p)
    # the class dropped, the failed compile kept: still a built candidate that failed
    p.pop("failure")
    assert ("KE403", "/status") in found(p)


@pytest.mark.parametrize("fc", ["timeout", "runtime_error", "reward_hack", "incorrect_numerical"])
def test_a_failure_class_recorded_as_skipped(fc: str) -> None:
    p = control(TIMEOUT)
    p["status"] = "skipped"
    p["failure"]["failure_class"] = fc
    assert ("KE403", "/status") in found(p)


@pytest.mark.parametrize("fc", ["infra_error", "invalid_reference", None])
def test_a_skipped_packet_with_a_reason_it_did_not_run(fc: str | None) -> None:
    p = control(TIMEOUT)
    p["status"] = "skipped"
    if fc is None:
        p.pop("failure")
    else:
        p["failure"] = {"failure_class": fc, "message": "fp8 is not supported on this device: not run"}
    assert "KE403" not in rules(p), found(p)
    assert report(p).ok


# ---------------------------------------------------------------- KE405: passed with a failed compile


def test_a_passed_claim_whose_compile_failed() -> None:
    p = control(GEMM)
    p["compile"]["succeeded"] = False
    assert ("KE405", "/compile/succeeded") in found(p)
    p = control(GEMM)
    p["compile"].pop("succeeded", None)
    assert "KE405" not in rules(p)
    assert report(p).ok


# ---------------------------------------------------------------- KE412: a passed defence not checked


@pytest.mark.parametrize(
    "detail",
    [
        "timer not checked: the harness is trusted",
        "assumed (same harness as the last run)",
        "the harness is trusted",
        "clock assumed unpatched",
        "passed on assumption",
        "outputs not verified against the reference",
        "Unverified",
        "8 sets checked; skipped: no GPU",
        "timer check was skipped because no GPU was free",
        "never verified",
    ],
)
def test_a_passed_defence_whose_detail_says_it_was_not_checked(detail: str) -> None:
    assert _says_not_run(detail)
    p = control(GEMM)
    i, d = defence(p, "timer_integrity")
    d["detail"] = detail
    assert ("KE412", f"/defences/{i}") in found(p)


@pytest.mark.parametrize(
    "detail",
    [
        "checked 3 shapes; none skipped",
        "8 sets checked; skipped: none",
        "8 sets checked, 2 not verified (padding rows)",
        "no shape was not checked",
        "a trusted timer measured a 1 ms spin as 1.00 ms",
        "fails the run if not verified",
        "L2 is assumed 50 MiB; a 256 MiB buffer flushed",
        "random dataset drawn with a seed the server never saw",
        "re-run on 8 input sets the candidate was not tested on before",
        "timer functions checked unpatched; a 1 ms spin measured 1.00 ms",
    ],
)
def test_a_passed_defence_whose_detail_mentions_checking_honestly(detail: str) -> None:
    assert not _says_not_run(detail)
    p = control(GEMM)
    defence(p, "timer_integrity")[1]["detail"] = detail
    assert "KE412" not in rules(p)


@pytest.mark.parametrize(
    "var, lib",
    [
        ("CUDA_INJECTION64_PATH", "/opt/shim/libtimer.so"),
        ("CUDA_INJECTION32_PATH", "/opt/shim/libtimer32.so"),
        ("LD_AUDIT", "./libcudart_timer.so"),
        ("HSA_TOOLS_LIB", "/opt/shim/libhsa_clock.so"),
        ("ROCP_TOOL_LIBRARIES", "/opt/shim/libclock_tool.so"),
    ],
)
def test_timer_integrity_passed_beside_an_injected_library(var: str, lib: str) -> None:
    p = control(GEMM)
    p["replay"]["env"][var] = lib
    assert ("KE412", f"/replay/env/{var}") in found(p)
    # the defence not recorded passed: nothing to contradict
    p = control(GEMM)
    p["replay"]["env"][var] = lib
    defence(p, "timer_integrity")[1]["outcome"] = "skipped"
    assert "KE412" not in rules(p)


def test_a_vendor_profilers_own_injection_library() -> None:
    p = control(GEMM)
    p["replay"]["env"]["CUDA_INJECTION64_PATH"] = (
        "/opt/nvidia/nsight-systems/2024.5.1/target-linux-x64/libToolsInjection64.so"
    )
    assert "KE412" not in rules(p)
    p = control(GEMM)
    p["replay"]["env"]["HSA_TOOLS_LIB"] = "/opt/rocm/lib/librocprofiler64.so.1"
    assert "KE412" not in rules(p)


# ---------------------------------------------------------------- KE009: extensions restating a claim


def test_an_extension_that_smuggles_a_speedup() -> None:
    p = control(GEMM)
    p["extensions"] = {"https://leaderboard.example/v1": {"speedup": 1.35, "basis": "min", "verified": True}}
    r = report(p)
    got = {(f.rule_id, f.pointer) for f in r.findings}
    assert ("KE009", "/extensions/https:~1~1leaderboard.example~1v1/speedup") in got
    assert ("KE009", "/extensions/https:~1~1leaderboard.example~1v1/verified") in got
    assert r.ok and r.grade.letter == "C"


@pytest.mark.parametrize("key", ["grade", "Grade", "STATUS", "valid", "verdict", "speed_up", "Speed-Up"])
def test_an_extension_that_impersonates_the_validator(key: str) -> None:
    p = control(GEMM)
    p["extensions"] = {"urn:kernel-evidence:grade": {key: "A", "verified_by": "kevidence 0.2.0"}}
    assert ("KE009", f"/extensions/urn:kernel-evidence:grade/{key}") in found(p)
    assert report(p).grade.letter == "C"


def test_extensions_with_other_members_and_the_projects_own() -> None:
    p = control(GEMM)
    # the project's replay verdict stands on a replay of a parent (KE009)
    p["lineage"] = {"relation": "replay", "parent_packet_id": "sha256:" + "3f" * 32}
    p["extensions"] = {
        "https://acme.example/bench/v3": {"scheduler": "slurm", "job": 881273, "queue_wait_s": 41.2},
        # a claim word below the top level is the tool's own data, not a restated claim
        "kernelbench:raw": {"entry": "level1/1", "metadata": {"status": "ok"}, "correctness": True},
        "gpu-mode:kernelbot": {"mode": "leaderboard", "score_s": 0.0012, "speedup_vs_ref_pct": 12.0},
        # the replay verdict the project writes itself
        "kevidence:replay": {"verdict": "reproduced", "reason": "within 5%", "tolerance": 0.05},
    }
    r = report(p)
    assert "KE009" not in {f.rule_id for f in r.findings}, [f.line() for f in r.findings]
    assert r.grade.letter == "A"
