"""Red team 6, physics: a streaming operator's bytes below its tensors' (a GiB figure under
a GB unit, KE608), a row-wise operator's dims against its tensors' extents (KE605), device-
memory reads and writes reported apart and summed (KE602), and a bare GEMM's timing without
a work figure held to the device's highest peak (KE601, the kernelbot adapter's packets).
Each beside an honest twin that must still pass."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

from kernel_evidence import validate
from kernel_evidence.adapters import AdapterOptions, get_adapter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_build import finalize  # noqa: E402
from _adv_controls import CONTROLS  # noqa: E402
from _adv_kit import found  # noqa: E402

LN = "h100_layernorm_vs_transformer_engine"
L40 = "l40s_layernorm_llmc_vs_transformer_engine"
KBOT = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbot"


def control(name: str = LN) -> dict[str, Any]:
    return copy.deepcopy(CONTROLS[name].build())


def rules(p: dict[str, Any], prefix: str = "KE6") -> set[tuple[str, str]]:
    return {(r, q) for r, q in found(p) if r.startswith(prefix)}


# ---------------------------------------------------------------- KE608: bytes from below


def test_streaming_bytes_as_gib_under_a_gb_unit() -> None:
    p = control()
    w = p["task"]["shapes"][0]["work"]["bytes"]
    w["value"], w["unit"] = w["value"] / 2**30, "GB"  # 7% fewer bytes than x and y hold
    assert ("KE608", "/task/shapes/0/work/bytes") in found(p)
    msg = next(f.message for f in validate(finalize(p)).findings if f.rule_id == "KE608")
    assert "1e9/2^30" in msg


def test_streaming_bytes_a_tenth_short() -> None:
    p = control(L40)
    p["task"]["shapes"][0]["work"]["bytes"]["value"] *= 0.9
    assert ("KE608", "/task/shapes/0/work/bytes") in found(p)


def test_streaming_bytes_at_the_tensors_or_within_two_percent_pass() -> None:
    p = control()
    assert not rules(p)
    p["task"]["shapes"][0]["work"]["bytes"]["value"] *= 0.985  # a rounded figure
    assert not rules(p)
    # a mask is not counted (it may be read in part): bytes of x and y only
    p = control()
    p["task"]["shapes"][0]["tensors"].append({"name": "mask", "shape": [16384, 8192], "dtype": "bf16"})
    assert not rules(p)
    # an operator whose name says part of a tensor is skipped is held to half only
    p = control()
    p["task"]["operator"] = "causal_softmax"
    p["task"]["shapes"][0]["work"]["bytes"]["value"] *= 0.7
    assert not {x for x in rules(p) if x[0] == "KE608"}


# ---------------------------------------------------------------- KE605: row-wise dims


def test_rowwise_dims_halved_against_the_tensors() -> None:
    p = control(L40)
    sh = p["task"]["shapes"][0]
    sh["dims"]["rows"] //= 2
    sh["work"]["bytes"]["value"] /= 2
    assert ("KE605", "/task/shapes/0/dims") in found(p)
    p = control(L40)
    p["task"]["shapes"][0]["dims"] = {"tokens": 4096, "hidden": 768}
    assert ("KE605", "/task/shapes/0/dims") in found(p)


def test_rowwise_dims_that_match_the_tensors_pass() -> None:
    # leading extents multiply to the rows; a tensor of another last extent is not judged
    p = control(L40)
    sh = p["task"]["shapes"][0]
    sh["tensors"][0]["shape"] = [8, 1024, 768]
    sh["tensors"].append({"name": "gamma", "shape": [768], "dtype": "fp32"})
    sh["tensors"].append({"name": "stats", "shape": [4096, 2], "dtype": "fp32"})
    sh["work"]["bytes"]["value"] += 768 * 4 + 4096 * 2 * 4
    assert not rules(p)
    # dims without a rows/cols pair are not read
    p = control(L40)
    p["task"]["shapes"][0]["dims"] = {"rows": 4096, "hidden": 768}
    assert ("KE605", "/task/shapes/0/dims") not in found(p)


# ---------------------------------------------------------------- KE602: reads + writes


def _metrics(p: dict[str, Any]) -> dict[str, Any]:
    return p["profiler"][0]["kernels"][0]["metrics"]


def test_split_read_write_each_and_summed() -> None:
    p = control(L40)  # 864 GB/s
    m = _metrics(p)
    m["dram_read_bandwidth"] = {"value": 1765.0, "unit": "GB/s"}
    m["dram_write_bandwidth"] = {"value": 1765.0, "unit": "GB/s"}
    assert ("KE602", "/profiler/0/kernels/0/metrics/dram_read_bandwidth") in found(p)
    p = control(L40)
    m = _metrics(p)
    m["dram_read_bandwidth"] = {"value": 600.0, "unit": "GB/s"}
    m["dram_write_bandwidth"] = {"value": 500.0, "unit": "GB/s"}
    assert ("KE602", "/profiler/0/kernels/0/metrics") in found(p)
    p = control(L40)
    m = _metrics(p)
    m["dram__bytes_read.sum.per_second"] = {"value": 6.0e11, "unit": "B/s"}
    m["dram__bytes_write.sum.per_second"] = {"value": 5.0e11, "unit": "B/s"}
    assert ("KE602", "/profiler/0/kernels/0/metrics") in found(p)
    p = control(L40)
    _metrics(p)["dram_write_throughput"] = {"value": 1.2, "unit": "TB/s"}
    assert ("KE602", "/profiler/0/kernels/0/metrics/dram_write_throughput") in found(p)


def test_split_read_write_within_the_peak_pass() -> None:
    p = control()  # H100: 3350 GB/s
    m = _metrics(p)
    m["dram_read_bandwidth"] = {"value": 1200.0, "unit": "GB/s"}
    m["dram_write_bandwidth"] = {"value": 900.0, "unit": "GB/s"}
    # the same read figure under two names is not counted twice
    m["dram__bytes_read.sum.per_second"] = {"value": 1.2e12, "unit": "B/s"}
    m["dram__bytes_write.sum.per_second"] = {"value": 9.0e11, "unit": "B/s"}
    m["dram_bandwidth"] = {"value": 2100.0, "unit": "GB/s"}
    assert not rules(p)
    # L1/L2/global-load throughputs may exceed the DRAM peak: not held
    p = control(L40)
    _metrics(p)["gld_throughput"] = {"value": 2000.0, "unit": "GB/s"}
    _metrics(p)["l2_read_throughput"] = {"value": 2000.0, "unit": "GB/s"}
    assert not rules(p)


# ---------------------------------------------------------------- KE601: a bare GEMM


def _kbot() -> dict[str, Any]:
    res = get_adapter("kernelbot").read(
        [str(KBOT / "full_result_leaderboard_h100.json")], AdapterOptions(created_at="2026-11-27T12:00:00Z")
    )
    p = next(x for x in res.packets if x.timing is not None)
    return p.to_dict()  # type: ignore[no-any-return]


def test_kernelbot_gemm_timed_impossibly_fast() -> None:
    p = _kbot()
    st = p["timing"]["stats"]
    for k in ("mean", "min", "max", "std"):
        st[k] /= 20  # a 4096^3 GEMM in ~9 us: 15 PFLOP/s
    assert ("KE601", "/timing/stats/mean") in found(p)
    p = _kbot()
    for d in (p["task"]["shapes"][0]["dims"], p["timing"]["conditions"]["dims"]):
        d.update(m=16384, n=16384, k=8192)
    assert ("KE601", "/timing/stats/mean") in found(p)


def test_kernelbot_gemm_as_ingested_passes() -> None:
    p = _kbot()
    assert not rules(p)
    # twice the fastest dense peak (structured sparsity) is allowed: 2.4x faster still is
    st = p["timing"]["stats"]
    for k in ("mean", "min", "max", "std"):
        st[k] /= 2.4
    assert not rules(p)
    # dims with a key a bare GEMM does not have (a group count) are not judged
    p = _kbot()
    p["task"]["shapes"][0]["dims"]["groups"] = 8
    for k in ("mean", "min", "max", "std"):
        p["timing"]["stats"][k] /= 20
    assert not rules(p, "KE601")
