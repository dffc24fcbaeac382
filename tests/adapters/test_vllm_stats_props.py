"""Property tests: per-request arrays written the way vLLM's ``vllm bench serve`` writes them.

A reference ``calculate_metrics`` (vLLM ``vllm/benchmarks/serve.py``, same as the older
``benchmarks/benchmark_serving.py``) computes the summary exactly as vLLM does: numpy's
default (linear) percentiles, population std (``ddof=0``), ``np.mean(x or 0)`` (so a metric
without samples is written as zeros), TPOT ``(latency - ttft) / (output_len - 1)`` over
successful requests with ``output_len > 1``, ITL the pooled chunk gaps of successful
requests, failed requests excluded everywhere and given ``output_len`` 0, throughputs
``completed / duration``, ``sum(output_lens) / duration``,
``(total_input + total_output) / duration``, goodput the successful requests meeting every
SLO (``metric <= slo``; TPOT 0 when ``output_len <= 1``) per second. The adapter must
recompute the same statistics from the arrays (numpy and pure-Python paths alike), warn on
nothing, keep the samples exactly, and state units.
"""

from __future__ import annotations

import json
import math
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.vllm import ADAPTER
from kernel_evidence.errors import AdapterError
from kernel_evidence.models import EvidencePacket, ServingMetrics, Stats, Status

T0 = "2026-01-01T00:00:00Z"
METRICS = ("ttft", "tpot", "itl", "e2el")
PROPS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass
class Req:
    ok: bool
    prompt_len: int
    output_len: int
    ttft: float
    itl: list[float]
    latency: float
    error: str


def p_word(p: float) -> str:
    # vLLM: p_word = str(int(p)) if int(p) == p else str(p)
    return str(int(p)) if int(p) == p else str(p)


def vllm_result(
    reqs: list[Req],
    *,
    duration: float,
    percentiles: list[float],
    metrics: tuple[str, ...] = ("ttft", "tpot", "itl"),
    detailed: bool = True,
    scale_arrays: float = 1.0,
    goodput_slos_ms: dict[str, float] | None = None,
) -> dict[str, Any]:
    """A result dict as ``vllm bench serve --save-result [--save-detailed]`` writes it."""
    ttfts: list[float] = []
    tpots: list[float] = []
    all_tpots: list[float] = []
    itls: list[float] = []
    e2els: list[float] = []
    actual_output_lens: list[int] = []
    total_input = 0
    completed = 0
    for r in reqs:
        if r.ok:
            actual_output_lens.append(r.output_len)
            total_input += r.prompt_len
            tpot = 0.0
            if r.output_len > 1:
                tpot = (r.latency - r.ttft) / (r.output_len - 1)
                tpots.append(tpot)
            all_tpots.append(tpot)
            itls += r.itl
            ttfts.append(r.ttft)
            e2els.append(r.latency)
            completed += 1
        else:
            actual_output_lens.append(0)
    good = 0
    if goodput_slos_ms:
        valid: list[list[float]] = []
        slo: list[float] = []
        for key, data in (("ttft", ttfts), ("tpot", all_tpots), ("e2el", e2els)):
            if key in goodput_slos_ms:
                valid.append(data)
                slo.append(goodput_slos_ms[key] / 1000.0)
        for req_metric in zip(*valid, strict=True):
            if all(s >= x for s, x in zip(slo, req_metric, strict=True)):
                good += 1
    total_output = sum(actual_output_lens)
    out: dict[str, Any] = {
        "date": "20260101-000000",
        "backend": "vllm",
        "model_id": "facebook/opt-125m",
        "tokenizer_id": "facebook/opt-125m",
        "num_prompts": len(reqs),
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": None,
        "duration": duration,
        "completed": completed,
        "failed": len(reqs) - completed,
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "request_throughput": completed / duration,
        "request_goodput": good / duration if goodput_slos_ms else None,
        "output_throughput": total_output / duration,
        "total_token_throughput": (total_input + total_output) / duration,
    }
    if detailed:
        out.update(
            input_lens=[r.prompt_len for r in reqs],
            output_lens=actual_output_lens,
            ttfts=[r.ttft * scale_arrays for r in reqs],
            itls=[[g * scale_arrays for g in r.itl] for r in reqs],
            latencies=[r.latency * scale_arrays for r in reqs],
            errors=[r.error for r in reqs],
        )
    data = {"ttft": ttfts, "tpot": tpots, "itl": itls, "e2el": e2els}
    for name in metrics:
        values: Any = data[name] or 0  # vLLM: np.mean(ttfts or 0)
        out[f"mean_{name}_ms"] = float(np.mean(values) * 1000)
        out[f"median_{name}_ms"] = float(np.median(values) * 1000)
        out[f"std_{name}_ms"] = float(np.std(values) * 1000)
        for p in percentiles:
            out[f"p{p_word(p)}_{name}_ms"] = float(np.percentile(values, p) * 1000)
    return out


def successful_samples(reqs: list[Req]) -> dict[str, list[float]]:
    good = [r for r in reqs if r.ok]
    return {
        "ttft": [r.ttft for r in good],
        "e2el": [r.latency for r in good],
        "tpot": [(r.latency - r.ttft) / (r.output_len - 1) for r in good if r.output_len > 1],
        "itl": [g for r in good for g in r.itl],
    }


# ---------------------------------------------------------------------------------------
# strategies
# ---------------------------------------------------------------------------------------
secs = st.floats(min_value=1e-4, max_value=5.0, allow_nan=False, allow_infinity=False)


@st.composite
def request(draw: st.DrawFn, *, may_fail: bool = True) -> Req:
    ok = draw(st.booleans()) if may_fail else True
    prompt_len = draw(st.integers(1, 4096))
    if not ok:  # vLLM's RequestFuncOutput defaults for a failed request
        return Req(False, prompt_len, 0, 0.0, [], 0.0, draw(st.sampled_from(["boom", "HTTP 500", "timeout"])))
    output_len = draw(st.integers(0, 40))
    ttft = draw(secs)
    n_chunks = draw(st.integers(0, max(output_len - 1, 0)))
    itl = draw(st.lists(secs, min_size=n_chunks, max_size=n_chunks))
    latency = ttft + math.fsum(itl) + draw(st.floats(0.0, 1.0))
    return Req(True, prompt_len, output_len, ttft, itl, latency, "")


PERCENTILE_SETS = st.lists(
    st.sampled_from([0.0, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0]),
    min_size=1,
    max_size=5,
    unique=True,
)
METRIC_SETS = st.lists(st.sampled_from(METRICS), min_size=1, max_size=4, unique=True).map(tuple)


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def ingest(path: Path, **extra: Any) -> tuple[EvidencePacket, list[str]]:
    res = ADAPTER.read([str(path)], AdapterOptions(created_at=T0, extra=extra))
    assert len(res.packets) == 1
    p = res.packets[0]
    again = EvidencePacket.model_validate(json.loads(p.to_json()))
    assert again.packet_id == p.packet_id
    return p, res.warnings


def serving(p: EvidencePacket) -> ServingMetrics:
    assert p.timing is not None and p.timing.serving is not None
    return p.timing.serving


def write(tmp: Path, name: str, obj: dict[str, Any]) -> Path:
    f = tmp / name
    f.write_text(json.dumps(obj))
    return f


def mismatches(warnings: list[str]) -> list[str]:
    return [
        w
        for w in warnings
        if "recomputed" in w
        or "the file says" in w
        or "sum to" in w
        or "own counts" in w
        or "arrays hold no " in w
        and " in the file" in w
    ]


def close(a: float | None, b: float | None) -> bool:
    assert a is not None and b is not None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def check_packet(
    p: EvidencePacket, warnings: list[str], reqs: list[Req], result: dict[str, Any], metrics: tuple[str, ...]
) -> None:
    s = serving(p)
    completed = sum(r.ok for r in reqs)
    assert mismatches(warnings) == [], warnings
    assert s.completed == completed
    assert s.failed == len(reqs) - completed
    if completed == 0:
        assert p.status == Status.FAILED
        assert p.failure is not None and "first error" in p.failure.message
        assert all(getattr(s, m) is None for m in METRICS)  # no 0.0 placeholders
        assert s.request_throughput is None and s.output_throughput is None
        return
    assert p.status == Status.PASSED
    assert s.total_output_tokens == sum(r.output_len for r in reqs if r.ok)
    if completed < len(reqs):
        assert any(f"{len(reqs) - completed} of {len(reqs)} requests failed" in w for w in warnings)
    samples = successful_samples(reqs)
    for m in METRICS:
        st_: Stats | None = getattr(s, m)
        if not samples[m]:
            # vLLM writes 0.0 for every statistic of a metric without samples: not a statistic
            assert st_ is None, (m, st_)
            continue
        assert st_ is not None
        assert st_.unit == "ms"
        assert st_.n == len(samples[m])
        # the samples kept are exactly the input's (converted s -> ms)
        assert st_.samples == [x * 1000.0 for x in samples[m]]
        assert st_.min == pytest.approx(min(samples[m]) * 1000, rel=1e-12)
        assert st_.max == pytest.approx(max(samples[m]) * 1000, rel=1e-12)
        if m in metrics:
            assert st_.mean == result[f"mean_{m}_ms"]
            assert st_.median == result[f"median_{m}_ms"]
            assert st_.std == result[f"std_{m}_ms"]
            for key, v in (st_.percentiles or {}).items():
                assert v == result[f"{key}_{m}_ms"]
        else:  # not in the file (--percentile-metrics subset): recomputed from the arrays
            assert close(st_.mean, float(np.mean(samples[m]) * 1000))
            assert close(st_.median, float(np.median(samples[m]) * 1000))
    assert p.timing is not None and p.timing.method == "serving_client"


# ---------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------
@PROPS
@given(
    reqs=st.lists(request(), min_size=1, max_size=30),
    duration=st.floats(0.5, 100.0),
    percentiles=PERCENTILE_SETS,
    metrics=METRIC_SETS,
)
def test_vllm_summary_matches_recomputed(
    tmp_path: Path, reqs: list[Req], duration: float, percentiles: list[float], metrics: tuple[str, ...]
) -> None:
    result = vllm_result(reqs, duration=duration, percentiles=percentiles, metrics=metrics)
    f = write(tmp_path, "r.json", result)
    packets = {}
    for use_numpy in ("1", "0"):
        p, warnings = ingest(f, use_numpy=use_numpy)
        check_packet(p, warnings, reqs, result, metrics)
        packets[use_numpy] = p
    # the numpy and pure-Python paths agree with each other
    a, b = serving(packets["1"]), serving(packets["0"])
    for m in METRICS:
        sa, sb = getattr(a, m), getattr(b, m)
        assert (sa is None) == (sb is None)
        if sa is None:
            continue
        assert sa.samples == sb.samples and sa.n == sb.n
        for field in ("mean", "median", "std", "min", "max"):
            assert math.isclose(getattr(sa, field), getattr(sb, field), rel_tol=1e-9, abs_tol=1e-9)
        assert sa.percentiles is not None and sb.percentiles is not None
        assert sa.percentiles.keys() == sb.percentiles.keys()
        for key in sa.percentiles:
            assert math.isclose(sa.percentiles[key], sb.percentiles[key], rel_tol=1e-9, abs_tol=1e-9)


@PROPS
@given(
    reqs=st.lists(request(may_fail=False), min_size=2, max_size=20),
    percentiles=PERCENTILE_SETS,
)
def test_arrays_in_ms_are_reported(tmp_path: Path, reqs: list[Req], percentiles: list[float]) -> None:
    """Arrays written in ms by mistake (1000x the summary): every statistic disagrees."""
    result = vllm_result(
        reqs, duration=10.0, percentiles=percentiles, metrics=("ttft", "e2el"), scale_arrays=1000.0
    )
    f = write(tmp_path, "r.json", result)
    for use_numpy in ("1", "0"):
        _, warnings = ingest(f, use_numpy=use_numpy)
        bad = mismatches(warnings)
        assert any("`mean_ttft_ms`" in w for w in bad), warnings
        assert any("`mean_e2el_ms`" in w for w in bad), warnings


@PROPS
@given(
    reqs=st.lists(request(), min_size=1, max_size=20),
    duration=st.floats(0.5, 100.0),
    slos=st.dictionaries(
        st.sampled_from(["ttft", "tpot", "e2el"]), st.sampled_from([1.0, 50.0, 500.0, 2000.0]), min_size=1
    ),
)
def test_goodput_as_vllm_counts_it(
    tmp_path: Path, reqs: list[Req], duration: float, slos: dict[str, float]
) -> None:
    result = vllm_result(reqs, duration=duration, percentiles=[99.0], goodput_slos_ms=slos)
    f = write(tmp_path, "r.json", result)
    option = ",".join(f"{k}:{v:g}" for k, v in slos.items())
    p, warnings = ingest(f, goodput=option)
    assert not [w for w in warnings if "goodput" in w and "recomputed" in w], warnings
    if result["completed"]:
        s = serving(p)
        assert s.request_goodput is not None
        assert s.request_goodput.value == result["request_goodput"]


# ---------------------------------------------------------------------------------------
# examples: edge cases
# ---------------------------------------------------------------------------------------
def ok_req(ttft: float, itl: list[float], output_len: int, extra: float = 0.01, prompt: int = 10) -> Req:
    return Req(True, prompt, output_len, ttft, itl, ttft + sum(itl) + extra, "")


def bad_req(error: str = "boom") -> Req:
    return Req(False, 10, 0, 0.0, [], 0.0, error)


def test_one_request(tmp_path: Path) -> None:
    reqs = [ok_req(0.2, [0.01, 0.02, 0.03], 4)]
    result = vllm_result(reqs, duration=1.0, percentiles=[50.0, 99.0, 99.9, 100.0], metrics=METRICS)
    p, warnings = ingest(write(tmp_path, "r.json", result))
    check_packet(p, warnings, reqs, result, METRICS)
    ttft = serving(p).ttft
    assert ttft is not None and ttft.std == 0.0 and ttft.percentiles == {
        "p50": 200.0, "p99": 200.0, "p99.9": 200.0, "p100": 200.0
    }  # fmt: skip


@pytest.mark.parametrize("use_numpy", ["1", "0"])
def test_all_failed_is_a_failed_packet(tmp_path: Path, use_numpy: str) -> None:
    reqs = [bad_req("HTTP 500: overloaded"), bad_req("timeout")]
    result = vllm_result(reqs, duration=3.0, percentiles=[99.0], metrics=METRICS)
    assert result["mean_ttft_ms"] == 0.0  # vLLM's placeholders
    p, warnings = ingest(write(tmp_path, "r.json", result), use_numpy=use_numpy)
    check_packet(p, warnings, reqs, result, METRICS)
    assert p.failure is not None
    assert p.failure.message.startswith("all 2 requests failed (completed = 0); first error: HTTP 500")


def test_some_failed(tmp_path: Path) -> None:
    reqs = [ok_req(0.1, [0.01], 2), bad_req("boom"), ok_req(0.3, [0.02, 0.02], 3), bad_req("boom")]
    result = vllm_result(reqs, duration=2.0, percentiles=[99.0], metrics=METRICS)
    p, warnings = ingest(write(tmp_path, "r.json", result))
    check_packet(p, warnings, reqs, result, METRICS)
    assert any("2 of 4 requests failed; first error: boom" in w for w in warnings)
    raw = p.extensions["vllm:raw"]
    assert raw["error_counts"] == {"boom": 2}


@pytest.mark.parametrize("use_numpy", ["1", "0"])
def test_no_tpot_and_no_itl_samples(tmp_path: Path, use_numpy: str) -> None:
    """Every request has output_len 0 or 1 and no chunk gaps: vLLM writes TPOT and ITL as
    0.0 (``np.mean(tpots or 0)``); those are placeholders, not measurements."""
    reqs = [ok_req(0.1, [], 1), ok_req(0.2, [], 0), ok_req(0.3, [], 1)]
    result = vllm_result(reqs, duration=1.0, percentiles=[99.0], metrics=METRICS)
    assert result["mean_tpot_ms"] == 0.0 and result["p99_itl_ms"] == 0.0
    p, warnings = ingest(write(tmp_path, "r.json", result), use_numpy=use_numpy)
    check_packet(p, warnings, reqs, result, METRICS)
    s = serving(p)
    assert s.tpot is None and s.itl is None
    assert s.ttft is not None and s.e2el is not None
    assert any("`tpot`" in w and "no samples" in w for w in warnings), warnings
    assert p.extensions["vllm:raw"]["values"]["mean_tpot_ms"] == 0.0  # kept raw


def test_nonzero_stats_without_samples_are_reported(tmp_path: Path) -> None:
    reqs = [ok_req(0.1, [], 1), ok_req(0.2, [], 1)]
    result = vllm_result(reqs, duration=1.0, percentiles=[99.0], metrics=METRICS)
    result["mean_tpot_ms"] = 12.5
    _, warnings = ingest(write(tmp_path, "r.json", result))
    assert any("`mean_tpot_ms` is 12.5 in the file" in w for w in warnings), warnings


def test_nan_inside_an_array_is_left_out_with_a_warning(tmp_path: Path) -> None:
    reqs = [ok_req(0.1, [0.01], 2), ok_req(0.2, [0.02], 2)]
    result = vllm_result(reqs, duration=1.0, percentiles=[99.0], metrics=METRICS)
    text = json.dumps(result).replace('"ttfts": [0.1', '"ttfts": [NaN')
    f = tmp_path / "r.json"
    f.write_text(text)
    p, warnings = ingest(f)
    assert any("key `ttfts`: NaN or infinite value left out" in w for w in warnings)
    s = serving(p)
    # the file's statistics are kept, nothing is recomputed from a partial array
    assert s.ttft is not None and s.ttft.mean == result["mean_ttft_ms"] and s.ttft.samples is None
    assert mismatches(warnings) == []


def test_null_inside_an_array_is_refused_naming_the_key(tmp_path: Path) -> None:
    result = vllm_result([ok_req(0.1, [0.01], 2)], duration=1.0, percentiles=[99.0])
    result["latencies"] = [None]
    f = write(tmp_path, "r.json", result)
    with pytest.raises(AdapterError, match=r"key `latencies`: expected a list of numbers"):
        ingest(f)


def test_mismatched_lengths_are_refused(tmp_path: Path) -> None:
    result = vllm_result([ok_req(0.1, [0.01], 2), ok_req(0.2, [0.01], 2)], duration=1.0, percentiles=[99.0])
    result["ttfts"] = result["ttfts"][:1]
    f = write(tmp_path, "r.json", result)
    with pytest.raises(AdapterError, match=r"different lengths \(1, 2: `ttfts` 1, `itls` 2") as info:
        ingest(f)
    assert "\n" not in str(info.value)  # one line, naming each array with its length


def test_percentile_metrics_subset(tmp_path: Path) -> None:
    reqs = [ok_req(0.1 * i, [0.01] * i, i + 1) for i in range(1, 8)]
    result = vllm_result(reqs, duration=1.0, percentiles=[90.0, 99.9], metrics=("e2el",))
    p, warnings = ingest(write(tmp_path, "r.json", result))
    check_packet(p, warnings, reqs, result, ("e2el",))
    s = serving(p)
    assert s.e2el is not None and s.e2el.percentiles is not None
    assert set(s.e2el.percentiles) == {"p90", "p99.9"}


def test_summary_only_file(tmp_path: Path) -> None:
    reqs = [ok_req(0.1, [0.01], 2), ok_req(0.2, [0.02], 2)]
    result = vllm_result(reqs, duration=1.0, percentiles=[99.0], metrics=METRICS, detailed=False)
    p, warnings = ingest(write(tmp_path, "r.json", result))
    s = serving(p)
    assert s.ttft is not None and s.ttft.unit == "ms" and s.ttft.samples is None
    assert s.duration is not None and s.duration.unit == "s"
    assert mismatches(warnings) == []


def test_huge_file(tmp_path: Path) -> None:
    """100k requests, ~1M chunk gaps: the samples go to an artifact, memory stays bounded."""
    rng = np.random.default_rng(0)
    n = 100_000
    reqs = []
    ttfts = rng.uniform(0.01, 2.0, n)
    olens = rng.integers(0, 20, n)
    fails = rng.random(n) < 0.01
    for i in range(n):
        if fails[i]:
            reqs.append(bad_req("boom"))
            continue
        k = max(int(olens[i]) - 1, 0)
        itl = [0.01 + 0.0001 * j for j in range(k)]
        reqs.append(ok_req(float(ttfts[i]), itl, int(olens[i])))
    result = vllm_result(reqs, duration=600.0, percentiles=[50.0, 99.0, 99.9], metrics=METRICS)
    f = write(tmp_path, "big.json", result)
    size = f.stat().st_size
    tracemalloc.start()
    try:
        p, warnings = ingest(f)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert mismatches(warnings) == [], warnings[:5]
    s = serving(p)
    assert s.samples_artifact is not None
    assert s.completed == int((~fails).sum())
    assert s.itl is not None and s.itl.samples is None and s.itl.n == sum(len(r.itl) for r in reqs)
    assert peak < 40 * size, (peak, size)  # sane: a small multiple of the input


def test_counts_and_rates_disagreeing_with_the_arrays_are_reported(tmp_path: Path) -> None:
    reqs = [ok_req(0.1, [0.01], 2, prompt=7), bad_req(), ok_req(0.3, [0.02, 0.02], 3, prompt=5)]
    result = vllm_result(reqs, duration=2.0, percentiles=[99.0], metrics=METRICS)
    assert result["total_input_tokens"] == 12  # successful requests only
    result["total_input_tokens"] = 22  # counted the failed request too
    result["request_throughput"] = 3 / 2.0  # counted the failed request too
    _, warnings = ingest(write(tmp_path, "r.json", result))
    assert (
        f"{tmp_path / 'r.json'}: key `total_input_tokens`: the file says 22 but the per-request "
        "input_lens of successful requests sum to 12" in warnings
    )
    assert (
        f"{tmp_path / 'r.json'}: `request_throughput` is 1.5 in the file but 2 / 2.0 s = 1.0 "
        "from its own counts and duration" in warnings
    )
    assert any("`total_token_throughput`" in w and "own counts" in w for w in warnings)
