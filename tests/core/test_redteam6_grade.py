"""Grade A on hollow records (a sixth red-team round): placeholder session ids, defences
passed with no detail or a vague one, a lock without its clock, a claim on three calls, a
confidence interval at 20%. Each earns B at best, with the reason; the honest twin keeps A."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_build import finalize, recompute_speedup, stats_from  # noqa: E402
from _adv_controls import CONTROLS  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"


def control() -> dict[str, Any]:
    return copy.deepcopy(CONTROLS[GEMM].build())


def graded(p: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    r = validate(finalize(copy.deepcopy(p)))
    assert r.ok, [f.line() for f in r.errors]
    return r.grade.letter, r.grade.reasons


def test_the_control_is_a() -> None:
    assert graded(control())[0] == "A"


@pytest.mark.parametrize("sid", ["unknown", "0", "same", "N/A", "session"])
def test_a_placeholder_session_id_shows_nothing(sid: str) -> None:
    p = control()
    p["timing"]["conditions"]["session"] = sid
    p["timing"]["baseline"]["conditions"]["session"] = sid
    letter, reasons = graded(p)
    assert letter == "B" and any("session (a placeholder id)" in r for r in reasons), reasons


def test_a_real_session_id_keeps_a() -> None:
    p = control()
    for c in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        c["session"] = "3f2c9a1e-7b4d-4e0a-9c55-1d2e3f4a5b6c"
    assert graded(p)[0] == "A"


@pytest.mark.parametrize("detail", [None, "ok", "passed", "Done."])
def test_a_defence_passed_with_no_word_of_what_it_checked(detail: str | None) -> None:
    p = control()
    d = next(x for x in p["defences"] if x["check"] == "timer_integrity")
    if detail is None:
        d.pop("detail", None)
    else:
        d["detail"] = detail
    letter, reasons = graded(p)
    assert letter == "B" and any("timer_integrity" in r for r in reasons), reasons


def test_a_tool_that_says_trust_me_ran_nothing() -> None:
    p = control()
    next(x for x in p["defences"] if x["check"] == "timer_integrity")["tool"] = "trust me"
    assert graded(p)[0] == "B"


def test_a_lock_without_its_clock_is_the_producers_word() -> None:
    p = control()
    p["hardware"]["clocks"] = {"locked": True}
    letter, reasons = graded(p)
    assert letter == "B" and any("clock" in r for r in reasons), reasons
    p["hardware"]["clocks"] = {"locked": True, "sm_requested": {"value": 1755.0, "unit": "MHz"}}
    assert graded(p)[0] == "A"


def _resample(p: dict[str, Any], side: str, n: int) -> None:
    block = p["timing"] if side == "candidate" else p["timing"]["baseline"]
    xs = sorted(block["stats"]["samples"])[:n]
    block["stats"] = stats_from(xs, block["stats"]["unit"])
    for c in (block.get("conditions") or {},):
        if "repeats" in c:
            c["repeats"] = n
    if "repeats" in block:
        block["repeats"] = n
    recompute_speedup(p)


def test_three_timed_calls_do_not_earn_a() -> None:
    p = control()
    _resample(p, "candidate", 3)
    r = validate(finalize(copy.deepcopy(p)))
    assert r.grade.letter in ("B", "C")
    assert any("timed 3 times" in x for x in r.grade.reasons), r.grade.reasons


def test_a_narrow_confidence_level_does_not_stand_in_for_samples() -> None:
    p = control()
    st = p["timing"]["stats"]
    st.pop("samples")
    lo, hi = st["min"], st["max"]
    st.update(ci_low=st["median"] * 0.999, ci_high=st["median"] * 1.001, ci_level=0.2)
    assert lo <= st["ci_low"] <= st["ci_high"] <= hi
    letter, reasons = graded(p)
    assert letter == "B" and any("confidence interval at 0.2" in r for r in reasons), reasons
