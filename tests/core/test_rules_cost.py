"""KE12xx: energy above the power limit and accelerator time below the timed work are caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernel_evidence import validate

EXAMPLE = (
    Path(__file__).resolve().parents[2]
    / "examples"
    / "packets"
    / "valid"
    / "nvidia_h100_gemm_vs_cublaslt.json"
)
BAND = {"KE1201", "KE1202", "KE1203"}


def honest() -> dict[str, Any]:
    """The H100 GEMM example: 6120 J over 14.2 s (431 W) on one 700 W device; 14.2 s of
    GPU time for 31 calls of ~152 us."""
    d = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    d.pop("packet_id")
    return d


def found(d: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in validate(d).findings if f.rule_id in BAND}


def test_the_honest_packet_passes() -> None:
    d = honest()
    assert validate(d).ok
    assert found(d) == set()


def test_energy_above_the_power_limit() -> None:
    d = honest()
    d["cost"]["energy"]["energy"]["value"] = 15000.0  # 1056 W on a 700 W device
    assert found(d) == {("KE1201", "/cost/energy/energy")}
    # the same energy on two devices is 528 W each
    d["hardware"]["count"] = 2
    assert found(d) == set()
    # within the 10% slack
    d["hardware"]["count"] = 1
    d["cost"]["energy"]["energy"] = {"value": 2.1, "unit": "Wh"}  # 7560 J: 532 W
    assert found(d) == set()


def test_the_device_table_supplies_the_board_power() -> None:
    d = honest()
    del d["hardware"]["power_limit"]
    d["cost"]["energy"]["energy"]["value"] = 12000.0  # 845 W; an H100 SXM5 board is 700 W
    assert found(d) == {("KE1201", "/cost/energy/energy")}
    d["hardware"]["device"] = "Some Accelerator X1"  # unknown: nothing to check against
    assert found(d) == set()


def test_energy_below_what_a_powered_device_draws() -> None:
    """An efficiency cheat: the energy cut 100x (4.3 W average on a 700 W H100)."""
    d = honest()
    d["cost"]["energy"]["energy"]["value"] = 61.2
    assert found(d) == {("KE1203", "/cost/energy/energy")}
    report = validate(d)
    assert report.ok and report.grade.letter == "C"
    # 21 W (3% of 700 W) is the floor; just above it is let through
    d["cost"]["energy"]["energy"]["value"] = 14.2 * 22
    assert found(d) == set()


def test_the_idle_floor_uses_the_board_power_not_a_lowered_cap() -> None:
    """A 100 W power cap does not lower what an H100 draws idle: the table's 700 W sets it."""
    d = honest()
    d["hardware"]["power_limit"] = {"value": 100.0, "unit": "W"}
    d["cost"]["energy"]["energy"]["value"] = 14.2 * 5  # 5 W: above 3% of the cap, below 3% of 700 W
    assert ("KE1203", "/cost/energy/energy") in found(d)
    d["hardware"]["device"] = "Some Accelerator X1"  # unknown: the cap is all there is (3 W)
    assert ("KE1203", "/cost/energy/energy") not in found(d)


def test_energy_above_idle_is_not_bounded_below() -> None:
    d = honest()
    d["cost"]["energy"]["energy"]["value"] = 6.12
    d["cost"]["energy"]["source"] = "NVML, energy above idle"
    assert found(d) == set()


def test_node_wide_energy_is_not_bounded_by_one_device() -> None:
    d = honest()
    d["cost"]["energy"]["energy"]["value"] = 60000.0
    d["cost"]["energy"]["source"] = "IPMI node power"
    assert found(d) == set()


def test_gpu_time_below_the_timed_work() -> None:
    d = honest()
    d["cost"]["gpu_time"] = {"value": 1.0, "unit": "ms"}  # 31 samples of ~152 us are 4.7 ms
    assert found(d) == {("KE1202", "/cost/gpu_time")}
    d["cost"]["gpu_time"] = {"value": 4.8, "unit": "ms"}
    assert found(d) == set()


def test_gpu_time_without_samples_uses_min_or_half_the_median() -> None:
    d = honest()
    del d["timing"]["stats"]["samples"]
    d["cost"]["gpu_time"] = {"value": 4.5, "unit": "ms"}  # 31 x min 148.96 us = 4.62 ms
    assert found(d) == {("KE1202", "/cost/gpu_time")}
    del d["timing"]["stats"]["min"]
    del d["timing"]["stats"]["percentiles"]["p10"]
    # half of 31 repeats (16) x median 151.9 us = 2.43 ms
    assert found(d) == set()
    d["cost"]["gpu_time"] = {"value": 2.0, "unit": "ms"}
    assert found(d) == {("KE1202", "/cost/gpu_time")}


def test_serving_gpu_time_is_the_duration_on_every_device() -> None:
    """Request latencies overlap: summing them would reject every honest serving run."""
    path = EXAMPLE.parent / "serving_vllm_llama8b_h100.json"
    d = json.loads(path.read_text(encoding="utf-8"))
    d.pop("packet_id")
    d["cost"] = {"gpu_time": {"value": 32.0, "unit": "s"}}  # a 31.4 s run on one GPU
    assert found(d) == set()
    d["hardware"]["count"] = 8
    d["task"]["serving"]["tensor_parallel_size"] = 8
    assert found(d) == {("KE1202", "/cost/gpu_time")}  # eight GPUs for 31.4 s are 251 s
