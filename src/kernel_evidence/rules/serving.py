"""KE10xx: the serving figures add up.

A serving benchmark reports counts (requests completed and failed, tokens in and out), a
duration, throughputs and latency distributions. Each throughput is a count over the
duration; each request's end-to-end latency contains its time to first token; requests cannot
take longer in sum than the run's concurrency allows. A figure edited on its own breaks one of
these identities, and that is what this band looks for, on the candidate's side
(``timing.serving``) and the baseline's (``timing.baseline.serving``).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from ._common import CACHED_CHARS, lazy_re
from ._context import Add, Ctx
from ._engine import declare
from ._tables import device_peaks, dtype_class
from ._units import FACTOR

declare(
    "KE1001",
    "error",
    "serving throughputs follow from tokens, requests and duration",
    "recompute the throughputs as counts over the benchmark duration, or fix the counts and the duration",
    "Where a serving block gives both, `output_throughput` MUST NOT exceed `total_output_tokens` / "
    "`duration`, `request_throughput` `completed` / `duration` and `total_token_throughput` "
    "(`total_input_tokens` + `total_output_tokens`) / `duration` by more than 2% plus the "
    "rounding of the duration and the rate as written, 10% at most (serving clients divide the "
    "counts by the duration exactly); on the baseline's side they MUST NOT fall short of them "
    "by more than 10%, which would inflate the speedup. The "
    "duration MUST cover the requests: at least the largest end-to-end latency given (max or "
    "a percentile), and, where the concurrency is bounded (`task.serving.max_concurrency`), at "
    "least completed x mean end-to-end latency / concurrency (10% slack). Where the candidate's "
    "requests arrived at a finite `task.serving.request_rate` r (Poisson arrivals, or gamma "
    "ones of a recorded `burstiness` b), the n = completed + failed requests took about "
    "(n - 1) / r to arrive: its duration MUST NOT be below (n - 1 - 5 sqrt(n / b)) / r. Where "
    "every request was sent at once (`task.serving.request_rate` `inf`) and none failed, the "
    "duration MUST NOT exceed the rounds the concurrency allows (completed / `max_concurrency`, "
    "rounded up; one round without a bound) x the largest end-to-end latency, x 1.5 + 2 s: a "
    "side whose requests all finished fast did not take minutes (a duration in the wrong unit "
    "deflates a baseline's throughputs). `request_goodput` (requests that met their targets) "
    "MUST NOT exceed `request_throughput`.",
)
declare(
    "KE1002",
    "error",
    "output tokens fit the requests and the output length",
    "record the tokens the completed requests really produced",
    "Where `task.serving.output_len` is set (the requested output length), the candidate's "
    "`total_output_tokens` MUST NOT exceed `completed` x `output_len` by more than 5% (widened "
    "by a `random_range_ratio`-like setting when one is recorded), and a run that completed "
    "requests produced at least one token for each. Likewise, where `input_len` is set, "
    "`total_input_tokens` MUST NOT exceed `completed` (+ `failed`) x (`input_len` + a "
    "recorded `*prefix_len` setting) by more than 5% (widened by the range ratio): padded "
    "input tokens inflate a total-token throughput.",
)
declare(
    "KE1003",
    "error",
    "every prompt is accounted for",
    "record every request sent: completed + failed equals the number of prompts",
    "Where `task.serving.num_prompts` is given, the candidate's `completed` + `failed` MUST "
    "equal it: requests that vanish from both counts hide failures (a missing `failed` counts "
    "as 0). The baseline's MUST equal the prompts it was sent (its `num_prompts` setting, else "
    "the task's). The TTFT and end-to-end latency statistics of a side cover every completed "
    "request: their `n`, where given, MUST NOT be below `completed` (latencies of the "
    "fastest requests only are cherry-picked).",
)
declare(
    "KE1004",
    "error",
    "end-to-end latency contains the time to first token",
    "take TTFT and end-to-end latency from the same requests and units",
    "Every request's end-to-end latency includes its time to first token, so each statistic "
    "of `e2el` (median, mean, min, max, each percentile both give) MUST be at least the same "
    "statistic of `ttft` (1% slack).",
)
declare(
    "KE1005",
    "error",
    "time to first token above a physical floor",
    "measure TTFT at the client, from sending the request to receiving the first token",
    "A served model's time to first token includes a network round trip and a prefill: a "
    "median (else mean) TTFT below 1 ms is not a measurement of a real serving stack. Where the "
    "model's parameter count is in its name (`Llama-3.1-8B`, `opt-125m`; the active count of an "
    "MoE named `...-A22B`; other MoE names are not judged), the prompt length is known "
    "(`input_len`, else total input tokens / completed) and the device's peak is in the device "
    "table, the median TTFT MUST be at least half of 2 x parameters x prompt tokens / (the "
    "peak for the weights' precision (as for KE1008; 16-bit unless a narrower one is named) x "
    "its count): the prefill's FLOPs at the peak. Runs that record a "
    "prefix setting (`settings` key naming a prefix, e.g. prefix caching) are not judged.",
)
declare(
    "KE1007",
    "error",
    "time per output token follows from the latencies",
    "take TPOT from the same requests as TTFT and end-to-end latency",
    "Where the mean TTFT, end-to-end latency and TPOT are given and the output tokens per "
    "request are known (total output tokens / completed, else `task.serving.output_len`, at "
    "least 2), the mean TPOT MUST be within 3x either way of (mean e2el - mean TTFT) / (tokens "
    "per request - 1): the decode time spread over the tokens after the first. Where every "
    "completed request produced exactly `task.serving.output_len` tokens (`total_output_tokens` "
    "= completed x `output_len`, no `range_ratio` setting), that identity is exact: the mean TPOT "
    "MUST lie within 15% (plus the rounding of the figures as written) of the span from (mean "
    "e2el - mean TTFT) / tokens to the larger of (mean e2el - mean TTFT) / (tokens - 1) and mean "
    "e2el / tokens (the definitions clients use). A request's TPOT is the mean of its gaps "
    "between tokens, so the largest ITL MUST be at least the largest TPOT (5%, plus rounding). "
    "Where every request produced exactly `output_len` tokens, the request with the largest "
    "TPOT took at least its (tokens - 1) decode steps and a first token, so the largest e2el "
    "MUST be at least (tokens - 1) x max TPOT + the lesser of min TTFT and max TPOT, within the "
    "15% the clients' definitions of TPOT differ by (plus rounding).",
)
declare(
    "KE1008",
    "warning",
    "time per output token above the time to read the weights",
    "record the weights' precision (`task.dtypes`, a quantized model name, or a `quantization` "
    "setting) and any speculative decoding setting; else measure TPOT at the client",
    "Every decode step reads every weight of the model once, whatever the batch: where the "
    "model's parameter count is in its name (as for KE1005), the device's memory bandwidth "
    "is in the device table, and no speculative-decoding setting is recorded, the median "
    "(else mean) TPOT SHOULD be at least 0.9 x parameters x bytes per parameter / (bandwidth x "
    "tensor-parallel devices). Bytes per parameter come from the narrowest precision that "
    "`task.dtypes`, the model name (`FP8`, `AWQ`, `INT4`, `NVFP4`...) or a `quantization`/"
    "`dtype` setting names, else 2 (a 16-bit checkpoint). A faster TPOT is a fabricated run, "
    "or a quantized or speculative one that does not say so (grade C at best).",
    caps="C",
)
declare(
    "KE1006",
    "error",
    "a passed claim does not rest on failed requests",
    "fix the failing requests, or record the run as failed",
    "A `passed` packet that claims a speedup MUST NOT have more than 1% of its candidate's (or "
    "baseline's) requests failed, and a `passed` packet MUST NOT have every request failed: "
    "the throughput of a run that dropped requests is not comparable.",
)

_SLACK = 1.10
_TTFT_FLOOR_S = 1e-3
_FAILED_SHARE = 0.01


def check(p: Any, ctx: Ctx, add: Add) -> None:
    t = p.timing
    if t is None:
        return
    s = t.serving
    b = t.baseline
    bs = b.serving if b is not None else None
    if s is None and bs is None:
        return
    task = p.task
    st = task.serving if task is not None else None
    if s is not None:
        _side("/timing/serving", s, st, False, ctx, add)
        if st is not None:
            _counts(s, st, add)
            if st.model and (s.ttft is not None or s.tpot is not None):
                _floors(p, s, st, add)
    if bs is not None:
        _side("/timing/baseline/serving", bs, st, True, ctx, add)
        if st is not None and bs.completed is not None:
            _baseline_counts(bs, st, b.settings, add)


def _side(ptr: str, s: Any, st: Any, baseline: bool, ctx: Ctx, add: Add) -> None:
    dur = s.duration
    sec = dur.value * FACTOR[dur.unit] if dur is not None else None
    if sec is not None and sec > 0:
        _throughputs(ptr, s, sec, dur.value, baseline, add)
        _duration_covers(ptr, s, st, sec, add)
        if not baseline and st is not None and st.request_rate is not None:
            _arrivals(ptr, s, st, sec, add)
    ttft, e2el = s.ttft, s.e2el
    if ttft is not None and e2el is not None:
        _e2el_contains_ttft(ptr, ttft, e2el, add)
        if s.tpot is not None:
            _tpot(ptr, s, st, add)
            if s.tpot.max is not None:
                _tails(ptr, s, st, add)
    if ttft is not None:
        typical = ttft.median if ttft.median is not None else ttft.mean
        if typical is not None and typical * FACTOR[ttft.unit] < _TTFT_FLOOR_S:
            which = "median" if ttft.median is not None else "mean"
            add(
                (
                    "KE1005",
                    f"{ptr}/ttft/{which}",
                    f"{which} time to first token {typical:g} {ttft.unit} is below 1 ms",
                )
            )
    done = s.completed
    if done:
        for name in ("ttft", "e2el"):
            lat = getattr(s, name)
            if lat is not None and lat.n is not None and lat.n < done:
                add(
                    (
                        "KE1003",
                        f"{ptr}/{name}/n",
                        f"{name} statistics over {lat.n} requests of {done} completed: the rest left out",
                    )
                )
    good = s.request_goodput
    if (
        good is not None
        and s.request_throughput is not None
        and good.value > s.request_throughput.value * 1.001
    ):
        add(
            (
                "KE1001",
                f"{ptr}/request_goodput",
                f"request_goodput {good.value:g} req/s exceeds request_throughput "
                f"{s.request_throughput.value:g} req/s: goodput counts a subset of the completed requests",
            )
        )
    if ctx.status == "passed" and s.failed:
        done = s.completed or 0
        share = s.failed / (s.failed + done)
        if done == 0 or (ctx.claim and share > _FAILED_SHARE):
            add(
                (
                    "KE1006",
                    f"{ptr}/failed",
                    f"{s.failed} of {s.failed + done} requests failed ({share:.0%}) behind a passed packet",
                )
            )


_RATES = (
    ("output_throughput", "total_output_tokens", "output tokens"),
    ("request_throughput", "completed", "completed requests"),
)


def _throughputs(ptr: str, s: Any, sec: float, written: float, baseline: bool, add: Add) -> None:
    for rate_name, count_name, what in _RATES:
        rate = getattr(s, rate_name)
        count = getattr(s, count_name)
        if rate is not None and count is not None:
            _rate(ptr, rate_name, rate.value, count, sec, written, what, baseline, add)
    tot = s.total_token_throughput
    if tot is not None and s.total_input_tokens is not None and s.total_output_tokens is not None:
        count = s.total_input_tokens + s.total_output_tokens
        _rate(ptr, "total_token_throughput", tot.value, count, sec, written, "tokens", baseline, add)


def _rate(
    ptr: str,
    name: str,
    value: float,
    count: int,
    sec: float,
    written: float,
    what: str,
    baseline: bool,
    add: Add,
) -> None:
    implied = count / sec
    if baseline:
        if value * _SLACK < implied:
            add(
                (
                    "KE1001",
                    f"{ptr}/{name}",
                    f"{name} {value:g} is below {count} {what} over {sec:g} s = {implied:.4g}/s",
                )
            )
    elif value > implied * _EXACT_SLACK and (
        value > implied * _SLACK
        # clients divide the counts by the duration (`written`, as the packet gives it): only
        # the rounding of the figures differs
        or value > implied * (_EXACT_SLACK + _rounding(written) / written) + _rounding(value)
    ):
        add(
            (
                "KE1001",
                f"{ptr}/{name}",
                f"{name} {value:g} exceeds {count} {what} over {sec:g} s = {implied:.4g}/s",
            )
        )


#: a candidate's throughput over its counts / duration: the rounding of the figures and 2%
_EXACT_SLACK = 1.02


def _rounding(x: float) -> float:
    """Half the last digit a number is written to: 0.05 for 31.4, 0.5 for 1912 (or 1912.0),
    5e-7 for 1.5e-05."""
    text = repr(abs(x))
    mant, _, exp = text.partition("e")
    frac = mant.partition(".")[2]
    q = 10.0 ** -len(frac) if frac and frac != "0" else 1.0
    if exp:
        q *= 10.0 ** max(-300, min(int(exp), 300))
    return 0.5 * q


def _arrivals(ptr: str, s: Any, st: Any, sec: float, add: Add) -> None:
    """KE1001: at a finite request rate r, n requests take (n - 1) / r to arrive (Poisson, or
    gamma of shape `burstiness` b: that sum's standard deviation is sqrt(n / b) / r)."""
    rate = st.request_rate
    if type(rate) is not float and type(rate) is not int:
        return
    if not 0 < rate < float("inf") or s.completed is None:
        return
    settings = st.settings
    b = 1.0
    if settings:
        if any("ramp" in k.casefold() for k in settings):
            return  # a ramp-up changes the rate during the run
        got = _setting(settings, "burstiness")
        if got is not None:
            if type(got) is not float and type(got) is not int:
                return
            b = float(got)
            if not b > 0:
                return
    n = s.completed + (s.failed or 0)
    spread = 5.0 * math.sqrt(n / b) if b < float("inf") else 0.0
    least = (n - 1 - spread) / rate
    if least > 0 and sec < least:
        add(
            (
                "KE1001",
                f"{ptr}/duration",
                f"duration {sec:g} s is shorter than {n} requests take to arrive at request_rate {rate:g}/s "
                f"(at least {least:.4g} s, {n - 1} gaps of mean {1 / rate:.3g} s, burstiness {b:g})",
            )
        )


def _duration_covers(ptr: str, s: Any, st: Any, sec: float, add: Add) -> None:
    e2el = s.e2el
    if e2el is None:
        return
    f = FACTOR[e2el.unit]
    longest = e2el.max
    if longest is None and e2el.percentiles:
        longest = max(e2el.percentiles.values(), default=None)
    if longest is not None and longest * f > sec * _SLACK:
        add(
            (
                "KE1001",
                f"{ptr}/duration",
                f"duration {sec:g} s is shorter than a request's end-to-end latency {longest * f:g} s",
            )
        )
        return
    conc = st.max_concurrency if st is not None else None
    if longest is not None and e2el.max is not None and s.completed and not s.failed and st is not None:
        rate = st.request_rate
        if rate == "inf" or (isinstance(rate, float) and rate == float("inf")):
            rounds = -(-s.completed // conc) if conc else 1
            most = rounds * e2el.max * f * _ROUNDS_SLACK + _ROUNDS_EXTRA_S
            if sec > most:
                add(
                    (
                        "KE1001",
                        f"{ptr}/duration",
                        f"duration {sec:g} s is longer than {rounds} round(s) of requests of at most "
                        f"{e2el.max * f:g} s each can take (at most {most:.4g} s)",
                    )
                )
                return
    if conc and s.completed and e2el.mean is not None:
        # Little's law: the requests' latencies sum to at most concurrency x duration
        busy = s.completed * e2el.mean * f
        if busy > conc * sec * _SLACK:
            add(
                (
                    "KE1001",
                    f"{ptr}/duration",
                    f"duration {sec:g} s is too short for {s.completed} requests of mean latency "
                    f"{e2el.mean * f:g} s at concurrency {conc} (needs at least {busy / conc:.4g} s)",
                )
            )


#: the upper bound on a saturated run's duration: rounds x the longest request, x this + that
_ROUNDS_SLACK = 1.5
_ROUNDS_EXTRA_S = 2.0

_PAIRED = ("median", "mean", "min", "max")


def _e2el_contains_ttft(ptr: str, ttft: Any, e2el: Any, add: Add) -> None:
    ft, fe = FACTOR[ttft.unit], FACTOR[e2el.unit]
    for k in _PAIRED:
        a, b = getattr(ttft, k), getattr(e2el, k)
        if a is not None and b is not None and b * fe < a * ft * 0.99:
            add(
                (
                    "KE1004",
                    f"{ptr}/e2el/{k}",
                    f"end-to-end latency {k} {b:g} {e2el.unit} is below the time to first token {k} {a:g} {ttft.unit}",
                )
            )
            return
    pa, pb = ttft.percentiles, e2el.percentiles
    if pa and pb:
        for k, a in pa.items():
            b = pb.get(k)
            if b is not None and b * fe < a * ft * 0.99:
                add(
                    (
                        "KE1004",
                        f"{ptr}/e2el/percentiles/{k}",
                        f"end-to-end latency {k} {b:g} {e2el.unit} is below the time to first token {k} {a:g} {ttft.unit}",
                    )
                )
                return


def _range_ratio(st: Any) -> float:
    """The output-length spread a recorded setting allows (``random_range_ratio: 0.1``)."""
    settings = st.settings
    if not settings:
        return 0.0
    for k, v in settings.items():
        if "range_ratio" in k and isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1:
            return float(v)
    return 0.0


def _counts(s: Any, st: Any, add: Add) -> None:
    done = s.completed
    n = st.num_prompts
    if n is not None and done is not None:
        failed = s.failed or 0
        if done + failed != n:
            ptr = "/timing/serving/failed" if done + failed < n else "/timing/serving/completed"
            add(
                (
                    "KE1003",
                    ptr,
                    f"completed {done} + failed {failed} = {done + failed} requests, but {n} prompts were sent",
                )
            )
    out = s.total_output_tokens
    if out is None or not done:
        return
    if out < done:
        add(
            (
                "KE1002",
                "/timing/serving/total_output_tokens",
                f"{out} output tokens for {done} completed requests: fewer than one each",
            )
        )
        return
    ilen = st.input_len
    tin = s.total_input_tokens
    if ilen and tin is not None:
        sent = done + (s.failed or 0)
        most_in = sent * (ilen + _prefix_len(st)) * (1 + _range_ratio(st))
        if tin > most_in * 1.05:
            add(
                (
                    "KE1002",
                    "/timing/serving/total_input_tokens",
                    f"{tin} input tokens exceed {sent} requests x input_len {ilen} = {most_in:.0f}",
                )
            )
    olen = st.output_len
    if olen:
        most = done * olen * (1 + _range_ratio(st))
        if out > most * 1.05:
            add(
                (
                    "KE1002",
                    "/timing/serving/total_output_tokens",
                    f"{out} output tokens exceed {done} completed requests x output_len {olen} = {most:.0f}",
                )
            )


def _setting(settings: Any, name: str) -> Any:
    """A setting by name, `-` and `_` alike (``num-prompts`` is ``num_prompts``)."""
    if not settings:
        return None
    if name in settings:
        return settings[name]
    for k, v in settings.items():
        if k.replace("-", "_").strip().casefold() == name:
            return v
    return None


def _baseline_counts(bs: Any, st: Any, settings: Any, add: Add) -> None:
    n = _setting(settings, "num_prompts")
    if not (isinstance(n, int) and not isinstance(n, bool)):
        n = st.num_prompts
    if n is None:
        return
    done, failed = bs.completed, bs.failed or 0
    if done + failed != n:
        ptr = "/timing/baseline/serving/failed" if done + failed < n else "/timing/baseline/serving/completed"
        add(
            (
                "KE1003",
                ptr,
                f"the baseline's completed {done} + failed {failed} = {done + failed} requests, but {n} prompts were sent",
            )
        )


def _prefix_len(st: Any) -> int:
    """Tokens a recorded setting prepends to every prompt (``random_prefix_len: 64``)."""
    settings = st.settings
    if not settings:
        return 0
    for k, v in settings.items():
        if "prefix_len" in k and isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return 0


def _tpot(ptr: str, s: Any, st: Any, add: Add) -> None:
    ttft, e2el, tpot = s.ttft, s.e2el, s.tpot
    if ttft.mean is None or e2el.mean is None or tpot.mean is None:
        return
    if s.completed and s.total_output_tokens:
        per_request = s.total_output_tokens / s.completed
    elif st is not None and st.output_len:
        per_request = float(st.output_len)
    else:
        return
    if per_request < 2:
        return
    decode = e2el.mean * FACTOR[e2el.unit] - ttft.mean * FACTOR[ttft.unit]
    if decode <= 0:
        return  # KE1004's to say
    want = decode / (per_request - 1)
    got = tpot.mean * FACTOR[tpot.unit]
    if got * 3 >= want and got <= want * 3:
        olen = st.output_len if st is not None else None
        if olen and s.completed and s.total_output_tokens == s.completed * olen and not _range_ratio(st):
            # every request produced `olen` tokens: the mean of per-request TPOTs is the means'
            _exact_tpot(ptr, s, decode, float(olen), got, add)
    else:
        add(
            (
                "KE1007",
                f"{ptr}/tpot/mean",
                f"mean TPOT {tpot.mean:g} {tpot.unit}; mean e2el - mean TTFT over {per_request - 1:.4g} tokens "
                f"gives {want * 1e3:.4g} ms",
            )
        )


def _tails(ptr: str, s: Any, st: Any, add: Add) -> None:
    """KE1007: the largest TPOT against the largest ITL (a TPOT is the mean of a request's
    gaps, or less where a chunk carries several tokens) and, with every request the same
    length, against the largest e2el (that request's decode steps plus a first token)."""
    tpot = s.tpot
    ft = FACTOR[tpot.unit]
    top = tpot.max * ft
    itl = s.itl
    if itl is not None and itl.max is not None:
        fi = FACTOR[itl.unit]
        if itl.max * fi * 1.05 + (_rounding(itl.max) * fi + _rounding(tpot.max) * ft) < top:
            add(
                (
                    "KE1007",
                    f"{ptr}/itl/max",
                    f"max ITL {itl.max:g} {itl.unit} is below max TPOT {tpot.max:g} {tpot.unit}: a request's "
                    "TPOT is the mean of its gaps between tokens, never above the largest gap",
                )
            )
    olen = st.output_len if st is not None else None
    e2el, ttft = s.e2el, s.ttft
    if (
        olen
        and olen >= 2
        and e2el.max is not None
        and ttft.min is not None
        and s.completed
        and s.total_output_tokens == s.completed * olen
        and not _range_ratio(st)
    ):
        fe = FACTOR[e2el.unit]
        first = min(ttft.min * FACTOR[ttft.unit], top)
        least = (olen - 1) * top + first
        slack = (olen - 1) * _rounding(tpot.max) * ft + _rounding(ttft.min) * FACTOR[ttft.unit]
        if e2el.max * fe * _TPOT_SLACK + _rounding(e2el.max) * fe + slack < least:
            add(
                (
                    "KE1007",
                    f"{ptr}/e2el/max",
                    f"max e2el {e2el.max:g} {e2el.unit} is below {olen - 1} x max TPOT {tpot.max:g} {tpot.unit} + "
                    f"a first token ({least * 1e3:.5g} ms): every request produced {olen} tokens, so the "
                    "request with the largest TPOT took longer than the largest e2el",
                )
            )


#: TPOT against the latencies when every request produced the same number of tokens
_TPOT_SLACK = 1.15


def _exact_tpot(ptr: str, s: Any, decode: float, tokens: float, got: float, add: Add) -> None:
    """KE1007 for requests of one length: vLLM's, SGLang's and AIPerf's TPOT is (e2el - TTFT)
    / (tokens - 1) per request, GuideLLM's over the tokens, some clients' e2el / tokens; with
    every request the same length the mean TPOT is that of the means (up to rounding)."""
    ttft, e2el, tpot = s.ttft, s.e2el, s.tpot
    fe = FACTOR[e2el.unit]
    lo = decode / tokens
    hi = max(decode / (tokens - 1), e2el.mean * fe / tokens)
    rounding = (_rounding(e2el.mean) * fe + _rounding(ttft.mean) * FACTOR[ttft.unit]) / (
        tokens - 1
    ) + _rounding(tpot.mean) * FACTOR[tpot.unit]
    if got * _TPOT_SLACK + rounding < lo:
        add(
            (
                "KE1007",
                f"{ptr}/tpot/mean",
                f"mean TPOT {tpot.mean:g} {tpot.unit}; every request produced {tokens:.0f} tokens, so mean e2el "
                f"{e2el.mean:g} {e2el.unit} - mean TTFT {ttft.mean:g} {ttft.unit} gives {lo * 1e3:.4g} to "
                f"{hi * 1e3:.4g} ms per token (15% slack)",
            )
        )
    elif got > hi * _TPOT_SLACK + rounding:
        # the decode the TPOT says does not fit in the end-to-end latency: a shortened e2el
        add(
            (
                "KE1007",
                f"{ptr}/e2el/mean",
                f"mean e2el {e2el.mean:g} {e2el.unit} is shorter than mean TTFT {ttft.mean:g} {ttft.unit} + "
                f"{tokens - 1:.0f} x mean TPOT {tpot.mean:g} {tpot.unit} = "
                f"{(ttft.mean * FACTOR[ttft.unit] + (tokens - 1) * got) * 1e3:.4g} ms, with every request "
                f"{tokens:.0f} tokens (15% slack)",
            )
        )


_PARAMS = lazy_re(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z0-9])")
_ACTIVE = lazy_re(r"(?<![a-z0-9])a(\d+(?:\.\d+)?)b(?![a-z0-9])")
_MOE = lazy_re(
    r"\d+x\d+(?:\.\d+)?[bm]|\bmoe\b|mixtral|deepseek|kimi|qwen3.?\d+b.?a\d|\bgpt.?oss|dbrx|grok|arctic"
)


@lru_cache(maxsize=1024)
def _model_params(model: str) -> float | None:
    """Parameters a model name states (active ones for `...-A22B`), or None."""
    m = model.casefold().replace("_", "-")
    active = _ACTIVE.search(m)
    if active:
        return float(active.group(1)) * 1e9
    if _MOE.search(m):
        return None
    found = _PARAMS.findall(m.rsplit("/", 1)[-1])
    if len(found) != 1:
        return None
    n, scale = found[0]
    return float(n) * (1e9 if scale == "b" else 1e6)


#: precision hints in a model name or a quantization setting, narrowest first: (pattern,
#: the class its matmuls run in, bytes per weight)
_PRECISION_HINTS = (
    (lazy_re(r"nvfp4|mxfp4|(?<![a-z])fp4"), "fp4", 0.5),
    (lazy_re(r"awq|gptq|int4|w4a16|(?<![a-z0-9])q4|nf4|4bit|bnb|gguf|exl2|marlin"), "bf16", 0.5),
    (lazy_re(r"mxfp6|(?<![a-z])fp6"), "fp6", 0.75),
    (lazy_re(r"fp8|e4m3|e5m2|mxfp8"), "fp8", 1.0),
    (lazy_re(r"int8|w8a8|w8a16|8bit|smoothquant"), "int8", 1.0),
    (lazy_re(r"fp32|float32"), "fp32", 4.0),
)
#: a served model's name that says its weights are narrower than 16 bits (KE606), and the
#: precision each word names; not `gguf` (a GGUF repository holds f16 files too), not a
#: setting (a `kv_cache_dtype: fp8` is the cache, not the weights)
_NARROW_NAME = lazy_re(
    r"(?<![a-z0-9])(nvfp4|mxfp4|mxfp6|mxfp8|fp4|fp6|fp8|e4m3|e5m2|int4|int8|w4a16|w4a8|w8a8|"
    r"w8a16|awq|gptq|nf4|bnb|4bit|8bit|exl2|marlin|smoothquant)"
)
_NARROW_WORD = {
    "nvfp4": "fp4", "mxfp4": "fp4", "fp4": "fp4", "mxfp6": "fp6", "fp6": "fp6", "mxfp8": "fp8",
    "fp8": "fp8", "e4m3": "fp8", "e5m2": "fp8", "int8": "int8", "w8a8": "int8", "w8a16": "int8",
    "8bit": "int8", "smoothquant": "int8",
}  # fmt: skip


@lru_cache(maxsize=1024)
def narrow_weights(model: str) -> str | None:
    """The precision a served model's name gives its weights where it is narrower than 16
    bits (`fp8`, `fp4`, `fp6`, `int8`, `int4` for AWQ/GPTQ/W4A16 and the like), else None."""
    m = _NARROW_NAME.search(model.casefold())
    if m is None:
        return None
    return _NARROW_WORD.get(m.group(1), "int4")


_CLASS_BYTES = {"fp4": 0.5, "fp6": 0.75, "fp8": 1.0, "int8": 1.0, "bf16": 2.0, "fp16": 2.0, "fp32": 4.0}
#: settings that make several tokens per decode step
_SPECULATIVE = lazy_re(r"specul|draft|eagle|medusa|mtp|ngram|lookahead|num_spec")


@lru_cache(maxsize=1024)
def _precision(model: str, hints: str, dtypes: tuple[str, ...]) -> tuple[str, float]:
    """The class the model's matmuls run in and its bytes per weight: the narrowest that the
    dtypes, the model name or the settings' quantization/dtype values name; 16-bit else."""
    found: list[tuple[float, str]] = []
    for d in dtypes:
        c = dtype_class(d) if len(d) <= 64 else None
        if c in _CLASS_BYTES:
            found.append((_CLASS_BYTES[c], c))
    text = f"{model.casefold()} {hints}"
    for pat, cls, size in _PRECISION_HINTS:
        if pat.search(text):
            found.append((size, cls))
    if not found:
        return "bf16", 2.0
    size, cls = min(found)
    return cls, size


def _floors(p: Any, s: Any, st: Any, add: Add) -> None:
    """KE1005 (prefill) and KE1008 (decode): what the model's size allows on its devices."""
    h = p.hardware
    if h is None:
        return
    settings = st.settings
    dtypes = p.task.dtypes if p.task is not None else None
    key = (st.model, h.device, h.arch, tuple(settings.items()) if settings else (), tuple(dtypes or ()))
    known = _FLOORS_CACHE.get(key)
    if known is None:
        known = _floor_inputs(st.model, h.device, h.arch, settings or {}, tuple(dtypes or ()))
        chars = len(st.model) + len(h.device) + len(h.arch or "")
        chars += sum(len(k) + len(str(v)) for k, v in key[3]) + sum(map(len, key[4]))
        if len(_FLOORS_CACHE) < 1024 and chars <= CACHED_CHARS:
            _FLOORS_CACHE[key] = known
    params, peaks, cls, size, speculative = known
    if peaks is None:
        return
    if s.ttft is not None and peaks.flops:
        _prefill_floor(s, st, h, peaks, params, cls, add)
    tp = s.tpot
    if tp is not None and peaks.bandwidth and not speculative:
        typical = tp.median if tp.median is not None else tp.mean
        if typical is None:
            return
        # tensor parallelism splits the weights; pipeline stages read theirs one after another
        devices = st.tensor_parallel_size or h.count or 1
        floor = 0.9 * params * size / (peaks.bandwidth * devices)
        sec = typical * FACTOR[tp.unit]
        if sec < floor:
            which = "median" if tp.median is not None else "mean"
            add(
                (
                    "KE1008",
                    f"/timing/serving/tpot/{which}",
                    f"{which} TPOT {typical:g} {tp.unit} is below the time to read {params / 1e9:.3g}B "
                    f"weights of {size:g} byte(s) at {peaks.key}'s {peaks.bandwidth / 1e12:.3g} TB/s x "
                    f"{devices} ({floor * 1e3:.3g} ms at 90%)",
                )
            )


#: what the floors need, by (model, device, arch, settings, dtypes): a batch repeats a few
_FLOORS_CACHE: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def _floor_inputs(
    model: str, device: str, arch: str | None, settings: dict[str, Any], dtypes: tuple[str, ...]
) -> tuple[float, Any, str, float, bool]:
    """The model's parameters, the device's peaks (None when either is unknown), the
    precision class and bytes of its weights, and whether decoding is speculative."""
    params = _model_params(model) if len(model) <= 256 else None
    if params is None or len(device) + len(arch or "") > 256:
        return 0.0, None, "", 0.0, False
    peaks = device_peaks(device, arch)
    hints = " ".join(
        str(v).casefold()
        for k, v in settings.items()
        if "quant" in k or k.casefold() in ("dtype", "weight_dtype")
    )
    cls, size = _precision(model, hints[:256], dtypes[:8])
    speculative = any(_SPECULATIVE.search(k.casefold()) for k in settings)
    return params, peaks, cls, size, speculative


def _prefill_floor(s: Any, st: Any, h: Any, peaks: Any, params: float, cls: str, add: Add) -> None:
    ttft = s.ttft
    typical = ttft.median if ttft.median is not None else ttft.mean
    if typical is None:
        return
    if st.settings and any(
        "prefix" in k.casefold() and v not in (False, 0, None, "") for k, v in st.settings.items()
    ):
        return
    if st.input_len:
        tokens = float(st.input_len)
    elif s.total_input_tokens and s.completed:
        tokens = s.total_input_tokens / s.completed
    else:
        return
    devices = max(h.count or 1, (st.tensor_parallel_size or 1) * (st.pipeline_parallel_size or 1))
    # the peak of the weights' class (fp4 falls back to the device's highest where it has none)
    peak = peaks.flops.get(cls) or max(peaks.flops.values())
    floor = 2.0 * params * tokens / (peak * devices)
    sec = typical * FACTOR[ttft.unit]
    if sec < floor / 2:
        which = "median" if ttft.median is not None else "mean"
        add(
            (
                "KE1005",
                f"/timing/serving/ttft/{which}",
                f"{which} TTFT {typical:g} {ttft.unit} is below half the prefill of {tokens:.0f} tokens on "
                f"{params / 1e9:.3g}B parameters at {peaks.key}'s {cls} peak x {devices} ({floor * 1e3:.3g} ms)",
            )
        )
