"""Red team 5: statistics that contradict themselves. A block of samples pasted again
(KE507), a mean above what the percentiles and max allow (KE501), and serving tails that
contradict the other latencies (KE1007). Each beside an honest twin that must still pass."""

from __future__ import annotations

import copy
import random
import sys
from pathlib import Path
from typing import Any

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_build import finalize, set_side_samples  # noqa: E402
from _adv_kit import control  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
SERV = "serving_vllm_llama8b_h100"


def found(p: dict[str, Any], rule: str) -> set[str]:
    return {f.pointer for f in validate(finalize(copy.deepcopy(p))).findings if f.rule_id == rule}


def _cand(p: dict[str, Any], xs: list[float]) -> None:
    st = p["timing"]["stats"]
    set_side_samples(p, "candidate", [round(x, 4) for x in xs], st["unit"], dropped=st.get("dropped"))


# ---------------------------------------------------------------- KE507: a pasted block


def test_a_block_of_samples_pasted_three_times_is_caught() -> None:
    p = control()
    s = p["timing"]["stats"]["samples"]
    _cand(p, s[:17] * 3)
    assert "/timing/stats/samples" in found(p, "KE507")


def test_a_block_pasted_twice_inside_other_samples_is_caught() -> None:
    p = control()
    s = list(p["timing"]["stats"]["samples"])
    _cand(p, s[:8] + s[10:30] + s[:8] + s[40:])
    assert "/timing/stats/samples" in found(p, "KE507")


def test_shuffled_or_coarse_samples_pass() -> None:
    p = control()
    xs = list(p["timing"]["stats"]["samples"])
    random.Random(3).shuffle(xs)
    _cand(p, xs)
    assert not found(p, "KE507")
    # a steady timer's few levels (3 significant digits) repeat runs by chance
    p = control()
    levels = [1.71, 1.72, 1.73]
    rng = random.Random(5)
    xs = [rng.choice(levels) for _ in range(51)]
    xs[:5] = xs[20:25] = [1.71, 1.72, 1.71, 1.73, 1.72]
    _cand(p, xs)
    assert not found(p, "KE507")
    # finely written levels that recur, but as a held stretch (overlapping), not a pasted block
    p = control()
    xs = list(p["timing"]["stats"]["samples"])
    xs[10:20] = [xs[10]] * 10
    _cand(p, xs)
    assert "/timing/stats/samples" not in found(p, "KE507")


# ---------------------------------------------------------------- KE501: mean against percentiles


def test_a_ttft_tail_cut_below_its_mean_is_caught() -> None:
    p = control(SERV)
    t = p["timing"]["serving"]["ttft"]
    t["percentiles"].update(p90=93.0, p99=95.0)
    t["max"] = 96.0
    assert "/timing/serving/ttft/mean" in found(p, "KE501")


def test_a_mean_below_what_the_percentiles_allow_is_caught() -> None:
    p = control(SERV)
    t = p["timing"]["serving"]["ttft"]
    t["min"] = 85.0
    t["mean"] = 86.0  # half the requests at least 85, the other half at least 88.1
    assert "/timing/serving/ttft/mean" in found(p, "KE501")


def test_the_honest_tails_and_a_longer_tail_pass() -> None:
    p = control(SERV)
    assert not found(p, "KE501")
    for blk in (p["timing"]["serving"]["e2el"], p["timing"]["stats"]):
        blk["max"] = 3700.0
        blk["percentiles"]["p99"] = 3400.0
    assert not found(p, "KE501")
    # a mean exactly at the bound (rounded percentiles, 1/n of the mass moved): still legal
    p = control(SERV)
    t = p["timing"]["serving"]["ttft"]
    t["percentiles"].update(p90=93.0, p99=95.0)
    t["max"] = 96.0
    t["mean"] = 91.0
    assert not found(p, "KE501")


# ---------------------------------------------------------------- KE1007: tails of one request


def test_an_itl_max_below_the_largest_tpot_is_caught() -> None:
    p = control(SERV)
    t = p["timing"]["serving"]["itl"]
    t["max"] = 15.0
    t["percentiles"].update(p90=14.6, p99=14.9)
    assert "/timing/serving/itl/max" in found(p, "KE1007")


def test_an_itl_max_near_the_largest_tpot_passes() -> None:
    p = control(SERV)
    assert not found(p, "KE1007")
    p["timing"]["serving"]["itl"]["max"] = 26.0  # a TPOT of 26.98 is a mean over 127 gaps
    assert "/timing/serving/itl/max" not in found(p, "KE1007")
