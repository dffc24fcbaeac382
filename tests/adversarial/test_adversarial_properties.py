"""Honest packets drawn at random must be accepted: a guard against rules that fit the
hand-written controls and reject the honest packets around them.

Each drawn packet is physically possible by construction: its rates stay below the device's
datasheet peaks (at most 85% of them), no kernel is faster than a launch, serving latencies
respect the prefill's FLOPs and the decode's weight reads, and Little's law holds between
requests in flight, latency and duration.
"""

from __future__ import annotations

import math

from _adv_build import (
    DEVICES,
    _latency,
    finalize,
    gemm,
    kernel_claim,
    median_s,
    recompute_speedup,
    scale_side,
    serving_claim,
    set_side_samples,
)
from _adv_cheats import _serving_counts
from _adv_judge import judge
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

#: dense datasheet peaks (TFLOP/s per dtype, GB/s) of the suite's devices, and the baseline
#: library a GEMM on each is compared with
_GEMM_DEVICES = {
    "h100": ({"bf16": 989.4, "fp16": 989.4, "fp8_e4m3": 1978.9}, 3350, ("cuBLASLt", "12.4.5.8")),
    "h200": ({"bf16": 989.4, "fp8_e4m3": 1978.9}, 4800, ("cuBLASLt", "12.6.4.1")),
    "a100": ({"bf16": 312, "fp16": 312}, 2039, ("cuBLAS", "12.2.5.6")),
    "b200": ({"bf16": 2250, "fp8_e4m3": 4500}, 8000, ("cuBLASLt", "12.8.3.14")),
    "l40s": ({"bf16": 362, "fp8_e4m3": 733}, 864, ("cuBLASLt", "12.4.5.8")),
    "h100_pcie": ({"bf16": 756, "fp8_e4m3": 1513}, 2000, ("cuBLASLt", "12.4.5.8")),
    "rtx4090": ({"fp16": 330.3}, 1008, ("cuBLAS", "12.6.3.3")),
    "mi300x": ({"bf16": 1307.4, "fp8_e4m3fnuz": 2614.9}, 5300, ("hipBLASLt", "0.10.0")),
    "mi355x": ({"bf16": 2516.6, "fp8_e4m3": 5033.2}, 8000, ("hipBLASLt", "1.0.0")),
    "tpu_v6e": ({"bf16": 918}, 1640, ("XLA", "jaxlib 0.5.1")),
    "tpu_v5e": ({"bf16": 197}, 819, ("XLA", "jaxlib 0.4.35")),
    "epyc": ({"fp32": 7.37}, 460.8, ("OpenBLAS", "0.3.28")),
    "xeon": ({"bf16": 114.7}, 307.2, ("oneDNN", "3.6.1")),
}

_SETTINGS = settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def honest_gemm_claims(draw: st.DrawFn) -> dict:
    key = draw(st.sampled_from(sorted(_GEMM_DEVICES)))
    peaks, bw, (provider, version) = _GEMM_DEVICES[key]
    dtype = draw(st.sampled_from(sorted(peaks)))
    m = draw(st.sampled_from([16, 64, 256, 1024, 4096, 8192]))
    n = draw(st.sampled_from([1024, 2048, 4096, 8192, 16384]))
    k = draw(st.sampled_from([1024, 2048, 4096, 8192, 16384]))
    out = "bf16" if dtype.startswith("fp8") else dtype
    op = gemm(m, n, k, dtype, out, ref_max=draw(st.floats(8.0, 500.0)))
    flops = 2.0 * m * n * k
    nbytes = op["shape"]["work"]["bytes"]["value"]
    eff = draw(st.floats(0.05, 0.85))
    fast = max(flops / (eff * peaks[dtype] * 1e12), nbytes / (eff * bw * 1e9), 3e-6)
    ratio = draw(st.floats(0.6, 4.0))
    cand, base = (fast, fast * ratio) if ratio >= 1 else (fast / ratio, fast)
    repeats = draw(st.integers(5, 100)) * 2 + 1
    return kernel_claim(
        f"gemm_{key}_{dtype}_{m}x{n}x{k}",
        key,
        op,
        cand_s=cand,
        base_s=base,
        provider=provider,
        version=version,
        call=f"gemm({dtype}, m={m}, n={n}, k={k}) via {provider}",
        kernel=f"gemm_{dtype}_tile_128x128",
        warmup=draw(st.integers(1, 50)),
        repeats=repeats,
        sigma=draw(st.floats(0.002, 0.04)),
    )


@given(honest_gemm_claims())
@_SETTINGS
def test_drawn_honest_gemm_claims_accepted(packet: dict) -> None:
    for as_bytes in (False, True):
        v = judge(packet, as_bytes=as_bytes)
        errors = [f for f in v.findings if f[1] == "error"]
        assert not errors, (packet["subject"]["name"], errors)
        assert v.grade in "AB", (packet["subject"]["name"], v.grade, v.reasons, v.findings)


#: model sizes (parameters) named as serving harnesses name them
_MODELS = [
    ("Qwen/Qwen2.5-0.5B-Instruct", 0.5e9),
    ("meta-llama/Llama-3.1-8B-Instruct", 8e9),
    ("Qwen/Qwen2.5-32B-Instruct", 32e9),
    ("meta-llama/Llama-3.1-70B-Instruct", 70e9),
]
_SERVING_DEVICES = {
    "h100": (989.4, 3350, 80e9),
    "h200": (989.4, 4800, 141e9),
    "mi300x": (1307.4, 5300, 206e9),
}


@st.composite
def honest_serving_claims(draw: st.DrawFn) -> dict:
    key = draw(st.sampled_from(sorted(_SERVING_DEVICES)))
    peak, bw, mem = _SERVING_DEVICES[key]
    model, params = draw(st.sampled_from(_MODELS))
    weights = 2 * params  # bf16
    tp = next(t for t in (1, 2, 4, 8) if weights / t < 0.7 * mem)
    input_len = draw(st.sampled_from([128, 512, 1024, 2048]))
    output_len = draw(st.sampled_from([64, 128, 256, 512]))
    concurrency = draw(st.sampled_from([1, 8, 64, 256]))
    prompts = draw(st.sampled_from([200, 500, 1000]))
    # prefill at no more than 40% of the peak, a decode step reads every weight once
    ttft = 2 * params * input_len / (tp * peak * 1e12 * 0.4) * 1e3 + draw(st.floats(5.0, 200.0))
    tpot = weights / (tp * bw * 1e9 * 0.6) * 1e3 * draw(st.floats(1.0, 3.0))
    e2el_mean = 1.04 * (ttft + tpot * (output_len - 1)) / 1e3
    # Little's law, and no shorter than the slowest request (1.9x the median, see _latency)
    e2el_max = 1.9 * (ttft + tpot * (output_len - 1)) / 1e3
    duration = max(prompts * e2el_mean / concurrency, 1.2 * e2el_max) * draw(st.floats(1.05, 1.5))
    slowdown = draw(st.floats(1.0, 1.6))
    return serving_claim(
        f"{model.rsplit('/', 1)[-1].lower()}-{key}-tp{tp}",
        key,
        model=model,
        engine=("vLLM", "0.11.0"),
        base_engine=("vLLM", "0.10.1"),
        prompts=prompts,
        input_len=input_len,
        output_len=output_len,
        duration_s=round(duration, 2),
        base_duration_s=round(duration * slowdown * 1.06, 2),
        ttft_ms=round(ttft, 2),
        tpot_ms=round(tpot, 3),
        devices=tp,
        concurrency=concurrency,
    )


@given(honest_serving_claims())
@_SETTINGS
def test_drawn_honest_serving_claims_accepted(packet: dict) -> None:
    for as_bytes in (False, True):
        v = judge(packet, as_bytes=as_bytes)
        errors = [f for f in v.findings if f[1] == "error"]
        assert not errors, (packet["subject"]["name"], errors)
        assert v.grade in "AB", (packet["subject"]["name"], v.grade, v.reasons, v.findings)


def test_peak_table_here_matches_the_devices() -> None:
    """The peaks above are the suite's devices (a renamed device would silently drop out)."""
    assert set(_GEMM_DEVICES) <= set(DEVICES)
    assert set(_SERVING_DEVICES) <= set(DEVICES)
    assert math.isclose(_GEMM_DEVICES["h100"][1], 3350)


# ---------------------------------------------------------------- one lie in a drawn packet


def _narrowest_is_fp32(p: dict) -> bool:
    return p["task"]["dtypes"] == ["fp32"]


def _speedup_x10(p: dict) -> None:
    p["timing"]["speedup"]["value"] = round(p["timing"]["speedup"]["value"] * 10, 4)


def _baseline_in_a_wider_dtype(p: dict) -> None:
    p["timing"]["baseline"]["conditions"]["dtypes"] = ["fp64" if _narrowest_is_fp32(p) else "fp32"]
    scale_side(p, "baseline", 4.0)


def _replay_true(p: dict) -> None:
    p["replay"]["command"] = ["true"]


def _commit_main(p: dict) -> None:
    p["replay"]["repository"]["commit"] = "main"


def _zero_time(p: dict) -> None:
    st = p["timing"]["stats"]
    set_side_samples(p, "candidate", [0.0] * st["n"], st["unit"])


def _identical_samples(p: dict) -> None:
    # a value with digits below the timer's resolution (a round 3.0 us could be a coarse clock)
    st = p["timing"]["stats"]
    set_side_samples(p, "candidate", [round(st["median"] * 1.0001234, 4)] * st["n"], st["unit"])


def _above_peak(p: dict) -> None:
    dev = next(k for k in _GEMM_DEVICES if DEVICES[k]["hardware"]["device"] == p["hardware"]["device"])
    peaks, _, _ = _GEMM_DEVICES[dev]
    flops = p["task"]["shapes"][0]["work"]["flops"]["value"]
    want = flops / (1.5 * max(peaks.values()) * 1e12)
    st = p["timing"]["stats"]
    scale_side(p, "candidate", want / median_s(st))


def _profile_3x(p: dict) -> None:
    d = p["profiler"][0]["kernels"][0]["metrics"]["duration"]
    d["value"] = round(d["value"] * 3, 1)


def _unseen_inputs_failed(p: dict) -> None:
    for d in p["defences"]:
        if d["check"] == "unseen_inputs":
            d["outcome"] = "failed"


def _placeholder_version(p: dict) -> None:
    p["timing"]["baseline"]["version"] = "unknown"


def _energy_x10(p: dict) -> None:
    p["cost"]["energy"]["energy"]["value"] *= 10


def _gpu_time_tiny(p: dict) -> None:
    p["cost"]["gpu_time"] = {"value": 1.0, "unit": "us"}


def _error_above_bound(p: dict) -> None:
    s = p["validation"]["shapes"][0]
    s["max_abs_error"] = round(3 * (s["atol"] + s["rtol"] * s["reference_max_abs"]), 6)


def _candidate_warm(p: dict) -> None:
    p["timing"]["conditions"]["cache"] = {"mode": "warm"}
    p["timing"]["cache_policy"] = "warm"
    scale_side(p, "candidate", 0.97)


def _baseline_other_session(p: dict) -> None:
    p["timing"]["baseline"]["conditions"]["session"] = "sess-elsewhere"


def _candidate_trimmed(p: dict) -> None:
    st = p["timing"]["stats"]
    xs = sorted(st["samples"])[: st["n"] // 2]
    set_side_samples(p, "candidate", xs, st["unit"], dropped=st["n"] - len(xs))
    p["timing"]["conditions"]["sample_handling"] = "trimmed"


def _no_warmup(p: dict) -> None:
    p["timing"]["warmup"] = 0
    for c in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        c["warmup"] = 0


def _library_kernel_only(p: dict) -> None:
    p["profiler"][0]["kernels"][0]["name"] = "library_gemm_kernel_sm90_xyz"


def _baseline_bigger_shape(p: dict) -> None:
    c = p["timing"]["baseline"]["conditions"]
    c["dims"] = {**c["dims"], "k": c["dims"]["k"] * 2}
    scale_side(p, "baseline", 2.0)


#: name -> (mutation, pointers of the lie, which drawn packets it applies to)
_LIES = {
    "speedup_x10": (_speedup_x10, ("/timing/speedup",), None),
    "baseline_in_a_wider_dtype": (_baseline_in_a_wider_dtype, ("/timing/baseline/conditions/dtypes",), None),
    "replay_true": (_replay_true, ("/replay/command",), None),
    "commit_main": (_commit_main, ("/replay/repository/commit",), None),
    "zero_time": (_zero_time, ("/timing/stats", "/timing/speedup"), None),
    "identical_samples": (_identical_samples, ("/timing/stats",), None),
    "above_peak": (_above_peak, ("/timing/stats", "/task/shapes/0/work"), None),
    "profile_3x": (_profile_3x, ("/profiler/0", "/timing/stats"), lambda p: bool(p.get("profiler"))),
    "unseen_inputs_failed": (_unseen_inputs_failed, ("/defences/3",), None),
    "placeholder_version": (_placeholder_version, ("/timing/baseline/version",), None),
    "energy_x10": (_energy_x10, ("/cost/energy",), lambda p: "energy" in p.get("cost", {})),
    "gpu_time_tiny": (_gpu_time_tiny, ("/cost/gpu_time",), None),
    "error_above_bound": (_error_above_bound, ("/validation/shapes/0",), None),
    "candidate_warm": (
        _candidate_warm,
        ("/timing/conditions/cache", "/timing/cache_policy", "/timing/baseline/conditions/cache"),
        lambda p: p["timing"]["baseline"]["conditions"]["cache"]["mode"] == "flushed",
    ),
    "baseline_other_session": (
        _baseline_other_session,
        ("/timing/baseline/conditions/session", "/timing/baseline/same_session"),
        None,
    ),
    "candidate_trimmed": (_candidate_trimmed, ("/timing/conditions/sample_handling", "/timing/stats"), None),
    "no_warmup": (
        _no_warmup,
        ("/timing/warmup", "/timing/conditions/warmup", "/timing/baseline/conditions/warmup"),
        None,
    ),
    "library_kernel_only": (_library_kernel_only, ("/profiler/0",), lambda p: bool(p.get("profiler"))),
    "baseline_bigger_shape": (_baseline_bigger_shape, ("/timing/baseline/conditions/dims",), None),
}


@given(honest_gemm_claims(), st.sampled_from(sorted(_LIES)))
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
def test_one_lie_in_a_drawn_packet_is_caught(packet: dict, lie: str) -> None:
    mutate, pointers, applies = _LIES[lie]
    assume(applies is None or applies(packet))
    mutate(packet)
    packet = finalize(packet)
    for as_bytes in (False, True):
        v = judge(packet, pointers, as_bytes=as_bytes)
        assert v.caught, (lie, packet["subject"]["name"], v.grade, v.findings)


def _throughput_x2(p: dict) -> None:
    p["timing"]["serving"]["output_throughput"]["value"] *= 2
    recompute_speedup(p)


def _requests_vanish(p: dict) -> None:
    sv = p["timing"]["serving"]
    _serving_counts(p, completed=int(sv["completed"] * 0.85), failed=0)


def _e2el_below_ttft(p: dict) -> None:
    sv = p["timing"]["serving"]
    sv["e2el"] = _latency(sv["ttft"]["median"] * 0.5, sv["completed"])


def _five_percent_failed(p: dict) -> None:
    n = p["timing"]["serving"]["completed"]
    _serving_counts(p, completed=n - n // 20, failed=n // 20)


def _tpot_tenth(p: dict) -> None:
    sv = p["timing"]["serving"]
    sv["tpot"] = _latency(sv["tpot"]["median"] / 10, sv["completed"])


_SERVING_LIES = {
    "throughput_x2": (_throughput_x2, ("/timing/serving/output_throughput",)),
    "requests_vanish": (_requests_vanish, ("/timing/serving",)),
    "e2el_below_ttft": (_e2el_below_ttft, ("/timing/serving/e2el",)),
    "five_percent_failed": (_five_percent_failed, ("/timing/serving/failed", "/timing/speedup")),
    "tpot_tenth": (_tpot_tenth, ("/timing/serving/tpot", "/timing/serving/e2el")),
}


@given(honest_serving_claims(), st.sampled_from(sorted(_SERVING_LIES)))
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
def test_one_lie_in_a_drawn_serving_packet_is_caught(packet: dict, lie: str) -> None:
    mutate, pointers = _SERVING_LIES[lie]
    mutate(packet)
    packet = finalize(packet)
    for as_bytes in (False, True):
        v = judge(packet, pointers, as_bytes=as_bytes)
        assert v.caught, (lie, packet["subject"]["name"], v.grade, v.findings)
