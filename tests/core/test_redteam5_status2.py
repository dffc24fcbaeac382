"""Red team 5k class 6 and 5s `fail_hack_message`, the status band: a passed defence whose
own detail contradicts it (KE412: a spin measured off, inputs reused, the warm-up compared,
a flush below the cache, a public seed), and a correctness failure whose message says the
candidate returned cached outputs keyed by its inputs (KE403). Each beside an honest twin."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_kit import control, found, rules  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
SERV = "serving_vllm_llama8b_h100"
HACK = "failed_reward_hack_caught"


def defence(p: dict[str, Any], check: str) -> tuple[int, dict[str, Any]]:
    for i, d in enumerate(p["defences"]):
        if d["check"] == check:
            return i, d
    raise KeyError(check)


def detail_finds(check: str, text: str, name: str = GEMM) -> bool:
    """Whether KE412 points at the named defence once its detail is ``text``."""
    p = control(name)
    i, d = defence(p, check)
    d["detail"] = text
    return ("KE412", f"/defences/{i}") in found(p)


def test_the_controls_are_clean() -> None:
    for name in (GEMM, SERV):
        assert "KE412" not in rules(control(name)), name


# ---------------------------------------------------------------- timer_integrity


@pytest.mark.parametrize(
    "text",
    [
        "timer functions checked unpatched; a 1 ms spin measured 0.80 ms",
        "sleep(1 ms) measured 0.8 ms",
        "measured 800 us for a 1 ms sleep",
        "a 10 ms spin measured 11.2 ms",
    ],
)
def test_a_timer_whose_own_spin_measured_off(text: str) -> None:
    assert detail_finds("timer_integrity", text)


@pytest.mark.parametrize(
    "text",
    [
        "timer functions checked unpatched; a 1 ms spin measured 1.01 ms",
        "a 1 ms spin read 1000 us",
        "a 250 ms sleep measured 262 ms",  # a sleep overruns by the scheduler's slack
        "client clock checked against a 250 ms sleep",
    ],
)
def test_a_timer_that_keeps_time(text: str) -> None:
    assert not detail_finds("timer_integrity", text)


# ---------------------------------------------------------------- fresh_inputs


@pytest.mark.parametrize(
    "text",
    [
        "inputs allocated once before the loop and reused by every round",
        "the same inputs every round",
        "the same input tensors were used each iteration",
    ],
)
def test_fresh_inputs_whose_detail_says_reused(text: str) -> None:
    assert detail_finds("fresh_inputs", text)


@pytest.mark.parametrize(
    "text",
    [
        "new inputs for each side in every round",
        "fresh inputs each round, no input reused",
        "inputs never reused",
        "buffers allocated once, refilled with new random values each round",
        "output buffer reused; inputs regenerated",
        "the same inputs for both sides, new ones each round",
        "same input shape, new values each round",
    ],
)
def test_fresh_inputs_honestly_described(text: str) -> None:
    assert not detail_finds("fresh_inputs", text)


# ---------------------------------------------------------------- outputs_checked_after_timing


@pytest.mark.parametrize(
    "text",
    [
        "outputs of the first warm-up call compared with the reference before the timed loop",
        "only the first call compared",
        "outputs compared with the reference before timing",
    ],
)
def test_outputs_checked_on_the_warm_up_or_before_timing(text: str) -> None:
    assert detail_finds("outputs_checked_after_timing", text)


@pytest.mark.parametrize(
    "text",
    [
        "outputs of the last timed call compared with the reference",
        "3 warm-up runs, then outputs of the last timed call compared",
        "warm-up calls excluded; every timed call's output compared",
        "reference computed before the timed loop; outputs of the last timed call compared after it",
        "not only the first call: every timed call compared",
    ],
)
def test_outputs_checked_after_timing_honestly(text: str) -> None:
    assert not detail_finds("outputs_checked_after_timing", text)


# ---------------------------------------------------------------- cache_flush


def test_a_flush_detail_below_the_last_level_cache() -> None:
    assert detail_finds("cache_flush", "4 MiB memset between calls")
    assert detail_finds("cache_flush", "L2 is 50 MiB: a 4 MiB memset between calls")


def test_a_flush_detail_below_the_recorded_flush() -> None:
    # above the 50 MiB cache, but a quarter of the 256 MiB the conditions say
    p = control()
    assert p["timing"]["conditions"]["cache"]["flush_bytes"] == {"value": 256, "unit": "MiB"}
    assert detail_finds("cache_flush", "64 MiB buffer written between calls")


@pytest.mark.parametrize(
    "text",
    [
        "256 MiB buffer written between calls; last-level cache 50 MiB",
        "0.25 GiB buffer zeroed between calls",
        "256 MB buffer written between calls",  # MB read as MiB: rounding, not a smaller flush
        "wrote 256 MiB to evict the 50 MiB L2",
        "inputs rotated over 16 copies of 8 MiB against a 50 MiB L2",
        "L2 flushed between calls",
    ],
)
def test_a_flush_detail_that_covers_the_cache(text: str) -> None:
    assert not detail_finds("cache_flush", text)


# ---------------------------------------------------------------- hidden_workload


@pytest.mark.parametrize(
    "text",
    [
        "input seed 20261120, fixed in the public config",
        "public seed used for the prompts",
        "a fixed seed from the repository's config file",
    ],
)
def test_a_hidden_workload_whose_seed_was_public(text: str) -> None:
    assert detail_finds("hidden_workload", text)
    assert detail_finds("hidden_workload", text, SERV)


@pytest.mark.parametrize(
    "text",
    [
        "input seed drawn after the candidate was loaded",
        "seed made public after the run",
        "seed fixed at run time",
        "seed differs from the public config's",
        "seed not in the public config",
    ],
)
def test_a_hidden_workload_honestly_described(text: str) -> None:
    assert not detail_finds("hidden_workload", text)


def test_hidden_workload_naming_the_seed_released_later() -> None:
    p = control(SERV)
    seed = p["replay"]["seeds"]["inputs"]
    i, d = defence(p, "hidden_workload")
    d["detail"] = f"seed {seed} released after the server started"
    assert "KE412" not in rules(p)
    d["detail"] = f"seed {seed}, fixed in the public config"
    assert ("KE412", f"/defences/{i}") in found(p)


# ---------------------------------------------------------------- KE403: cached outputs in the message


def _relabelled(message: str) -> dict[str, Any]:
    p = control(HACK)
    p["failure"]["failure_class"] = "incorrect_numerical"
    p["failure"]["message"] = message
    p["defences"] = [d for d in p["defences"] if d["outcome"] != "failed"]
    return p


@pytest.mark.parametrize(
    "message",
    [
        "returned cached outputs keyed by a hash of the first 64 input bytes",
        "the kernel kept an output cache keyed on the input data_ptr",
        "results memoized by input pointer",
    ],
)
def test_a_relabelled_hack_whose_message_says_cached_outputs(message: str) -> None:
    assert ("KE403", "/failure/failure_class") in found(_relabelled(message))


@pytest.mark.parametrize(
    "message",
    [
        "max abs error 0.0134 > bound 0.00104 on shape m4096n4096k4096",
        "no cached outputs keyed by input hash; max error 0.3 above tolerance",
        "compared against cached reference results keyed by shape id and seed hash",
        "stale results from the previous shape due to a missing sync",
    ],
)
def test_a_correctness_failure_with_an_honest_message(message: str) -> None:
    assert "KE403" not in rules(_relabelled(message))


def test_cached_outputs_beside_a_passed_unseen_inputs_check() -> None:
    # the record says the unseen-inputs check passed: the message is the producer's account
    p = _relabelled("returned cached outputs keyed by a hash of the first 64 input bytes")
    p["defences"].append(
        {"check": "unseen_inputs", "outcome": "passed", "detail": "8 unseen input sets matched"}
    )
    assert "KE403" not in rules(p)
