"""One serving packet per GuideLLM benchmark (one rate or concurrency step).

Units are made explicit here: GuideLLM writes ``request_latency`` in seconds and the
``*_ms`` metrics in milliseconds; every latency :class:`Stats` of the packet is in ms. The
statistics are those of the *successful* requests: GuideLLM's ``total`` mixes successful,
errored and incomplete requests, and ``incomplete`` ones (cancelled when the benchmark's
time or request limit was reached) are neither completed nor failed. Throughputs are the
successful requests' counts over the benchmark's duration (the definition vLLM uses and the
serving rules check); GuideLLM's own ``*_per_second`` distributions (rates over time windows)
are kept, with every other figure, in the ``guidellm:raw`` extension.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from ...devices import identify
from ...models import (
    Duration,
    EvidencePacket,
    Failure,
    FailureClass,
    Hardware,
    RequestRate,
    ServingMetrics,
    ServingTask,
    Software,
    Stats,
    Status,
    Task,
    Timing,
    TokenRate,
)
from .. import AdapterOptions, AdapterWarning
from .._envelope import start_packet
from ..vllm._map import mapping as vllm_mapping
from ._report import Benchmark, Dist, number

__all__ = ["build_packet"]

#: packet latency -> (GuideLLM metric, factor to ms)
LATENCIES = {
    "ttft": ("time_to_first_token_ms", 1.0),
    "itl": ("inter_token_latency_ms", 1.0),
    "tpot": ("time_per_output_token_ms", 1.0),
    "e2el": ("request_latency", 1000.0),
}
#: GuideLLM percentile keys -> the packet's (``p001`` is the 0.1th percentile)
_PKEY = re.compile(r"^p(\d+)$")


def percentile_key(key: str) -> str | None:
    """``p001`` -> ``p0.1``, ``p01`` -> ``p1``, ``p05`` -> ``p5``, ``p50`` -> ``p50``,
    ``p999`` -> ``p99.9`` (GuideLLM's spelling: digits after ``p`` with a leading 0 for
    fractions below 10, a third digit for a tenth)."""
    m = _PKEY.match(key)
    if m is None:
        return None
    digits = m.group(1)
    if len(digits) == 2:
        return f"p{int(digits)}"
    if len(digits) == 3:
        value = int(digits) / 10
        return f"p{value:g}"
    return None


def _stats(d: Dist | None, factor: float) -> Stats | None:
    # a summary of no requests (count 0) says nothing; one without a count still does
    if d is None or (d.median is None and d.mean is None) or d.count == 0:
        return None
    pct: dict[str, float] = {}
    for k, v in d.percentiles.items():
        key = percentile_key(k)
        if key is not None and v >= 0:
            pct[key] = v * factor

    def scaled(x: float | None) -> float | None:
        return None if x is None or x < 0 else x * factor

    return Stats(
        unit="ms",
        median=scaled(d.median),
        mean=scaled(d.mean),
        std=scaled(d.std),
        min=scaled(d.min),
        max=scaled(d.max),
        percentiles=dict(sorted(pct.items(), key=lambda kv: float(kv[0][1:]))) or None,
        n=d.count,
    )


def _int_sum(d: Dist | None) -> int | None:
    if d is None or d.total_sum is None or d.total_sum < 0:
        return None
    return round(d.total_sum)


_SPEC = re.compile(r"(\w+)\s*=\s*([^,;\s]+)")


def _data_spec(data: str | None) -> dict[str, str]:
    """``prompt_tokens=256,output_tokens=128`` -> its keys (a synthetic-data spec); {} otherwise."""
    if not data or "=" not in data or "/" in data.split("=", 1)[0]:
        return {}
    return {k: v for k, v in _SPEC.findall(data)}


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        v = float(text)
    except ValueError:
        return None
    return int(v) if v >= 0 and v.is_integer() else None


def _task(b: Benchmark, options: AdapterOptions, raw: dict[str, Any]) -> ServingTask | None:
    strat = b.strategy()
    kind = strat.get("type_")
    model = str(options.extra.get("model") or "") or b.model()
    data = b.data()
    spec = _data_spec(data)
    settings: dict[str, str | float | int | bool] = {}
    if isinstance(kind, str):
        settings["strategy"] = kind
    profile = b.profile()
    # the profile's discriminator: `type_` up to 0.6, `kind` from 0.7 (benchmark/profiles/)
    prof = profile.get("type_") or profile.get("kind")
    if isinstance(prof, str):
        settings["profile"] = prof
    backend = b.backend()
    if isinstance(backend.get("type"), str):
        settings["backend"] = backend["type"]
    for k, v in spec.items():
        num = number(_num(v))
        settings[f"data_{k}"] = num if num is not None else v
    conc: int | None = None
    rate: float | str | None = None
    if kind == "synchronous":
        conc = 1
    elif kind == "concurrent":
        conc = _pos_int(strat.get("streams"))
    else:
        conc = _pos_int(strat.get("max_concurrency"))
    if kind in ("constant", "poisson"):
        r = number(strat.get("rate"))
        rate = r if r is not None and r >= 0 else None
    elif kind == "throughput":
        rate = "inf"
    input_len = _int(spec.get("prompt_tokens")) if "prompt_tokens_stdev" not in spec else None
    # the requested output length bounds the tokens (rule KE1002) only when it is fixed
    output_len = _int(
        spec.get("output_tokens_max")
        or (spec.get("output_tokens") if "output_tokens_stdev" not in spec else None)
    )
    engine = None
    if options.extra.get("engine"):
        ev = options.extra.get("engine_version")
        engine = Software(name=str(options.extra["engine"]), version=str(ev) if ev else None)
    if not model:
        return None
    return ServingTask(
        model=model,
        engine=engine,
        dataset=str(options.extra.get("dataset") or "") or (("synthetic" if spec else data) or None),
        input_len=input_len,
        output_len=output_len,
        max_concurrency=conc,
        request_rate=rate,
        settings=settings or None,
    )


def _num(v: str) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


def _pos_int(x: Any) -> int | None:
    v = number(x)
    return int(v) if v is not None and v >= 1 and v.is_integer() else None


def _hardware(options: AdapterOptions) -> Hardware | None:
    device = options.extra.get("device")
    if not device:
        return None
    vendor = options.extra.get("vendor")
    if not vendor:
        for name, patterns in vllm_mapping("serve").vendors.items():
            if any(p.search(str(device)) for p in patterns):
                vendor = name
                break
    count = _pos_int(
        number(_num(str(options.extra.get("gpu_count") or ""))) if options.extra.get("gpu_count") else None
    )
    entry = identify(str(device))
    return Hardware(
        vendor=vendor or "other",
        device=str(device),
        device_id=entry.id if entry is not None else None,
        count=count,
    )


def _raw_dist(d: Dist, factor: float = 1.0) -> dict[str, Any]:
    out: dict[str, Any] = {k: v * factor if k != "count" and v is not None else v for k, v in (
        ("mean", d.mean), ("median", d.median), ("std_dev", d.std), ("min", d.min), ("max", d.max),
        ("count", d.count), ("total_sum", d.total_sum),
    ) if v is not None}  # fmt: skip
    if d.percentiles:
        out["percentiles"] = {k: v * factor for k, v in d.percentiles.items()}
    return out


def _raw(b: Benchmark, totals: dict[str, int]) -> dict[str, Any]:
    """What the packet keeps of GuideLLM's own figures: ids, request counts by status, the
    rate and concurrency distributions, every metric by status (units in the key names)."""
    raw: dict[str, Any] = {"report_layout": b.layout, "benchmark": b.where}
    if b.version is not None:
        raw["guidellm_version"] = b.version
    for key in ("id_", "run_id", "run_index"):
        v = b.raw.get(key) if key in b.raw else (b.raw.get("config") or {}).get(key)
        if isinstance(v, (str, int)) and not isinstance(v, bool):
            raw[key] = v
    raw["requests"] = totals
    metrics: dict[str, Any] = {}
    for name, by_status in b.metrics.items():
        metrics[name] = {s: _raw_dist(d) for s, d in by_status.items()}
    raw["metrics"] = metrics
    strat = {k: v for k, v in b.strategy().items() if isinstance(v, (str, int, float, bool)) or v is None}
    if strat:
        raw["strategy"] = strat
    backend = {k: v for k, v in b.backend().items() if isinstance(v, (str, int, float, bool))}
    backend.pop("target", None)  # an endpoint URL (host names), not a setting
    if backend:
        raw["backend"] = backend
    return raw


def _measured_at(start: float | None) -> str | None:
    if start is None or not 1e9 <= start <= datetime.now(timezone.utc).timestamp() + 86400:
        return None
    return datetime.fromtimestamp(start, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_packet(path: str, b: Benchmark, options: AdapterOptions, warnings: list[str]) -> EvidencePacket:
    """The packet of one benchmark (with its id)."""
    totals = b.totals()
    start, _end, dur = b.times()
    where = f"{path}: {b.where}"
    if dur is not None and dur <= 0:
        warnings.append(f"{where}: duration {dur:g} s is not positive; throughputs left out")
        dur = None
    done = totals.get("successful")
    failed = totals.get("errored")
    incomplete = totals.get("incomplete")
    if incomplete:
        warnings.append(
            f"{where}: {incomplete} request(s) incomplete (cancelled at the benchmark's end); "
            "counted neither as completed nor as failed (kept under guidellm:raw)"
        )
    if failed:
        warnings.append(f"{where}: {failed} of {(done or 0) + failed} finished request(s) errored")
    total_in = _int_sum(b.dist("prompt_token_count"))
    total_out = _int_sum(b.dist("output_token_count"))
    all_failed = done == 0
    stats = {} if all_failed else {k: _stats(b.dist(m), f) for k, (m, f) in LATENCIES.items()}

    def rate(count: int | None, cls: type) -> Any:
        if count is None or dur is None or all_failed:
            return None
        return cls(value=count / dur, unit="req/s" if cls is RequestRate else "tok/s")

    conc = b.dist("request_concurrency")
    serving = ServingMetrics(
        completed=done,
        failed=failed,
        duration=Duration(value=dur, unit="s") if dur is not None else None,
        request_throughput=rate(done, RequestRate),
        output_throughput=rate(total_out, TokenRate),
        total_token_throughput=rate(
            total_in + total_out if total_in is not None and total_out is not None else None, TokenRate
        ),
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        max_concurrent_requests=round(conc.max)
        if conc is not None and conc.max is not None and conc.max >= 0
        else None,
        ttft=stats.get("ttft"),
        itl=stats.get("itl"),
        tpot=stats.get("tpot"),
        e2el=stats.get("e2el"),
    )
    task = _task(b, options, {})
    if task is None:
        warnings.append(
            AdapterWarning(
                f"{where}: the model is not recorded in the report; task.serving left out",
                {"task.serving.model": None},
            )
        )
    hw = _hardware(options)
    if hw is None:
        warnings.append(
            AdapterWarning(
                f"{path}: GuideLLM reports do not name the server's hardware; hardware left out",
                {"hardware.device": "<GPU model>"},
            )
        )
    status = Status.PASSED
    failure = None
    if all_failed:
        status = Status.FAILED
        failure = Failure(
            failure_class=FailureClass.RUNTIME_ERROR,
            message=f"no request succeeded ({failed or 0} errored, {incomplete or 0} incomplete)",
        )
    strat = b.strategy().get("type_")
    label = f"{strat} " if isinstance(strat, str) else ""
    packet = start_packet(
        subject_kind="serving",
        subject_name=(task.model if task is not None and task.model else "GuideLLM benchmark"),
        description=f"GuideLLM {label}benchmark {b.where} of {path}",
        status=status,
        failure=failure,
        created_at=options.created_at,
        measured_at=_measured_at(start),
        task=Task(workload="serving benchmark (GuideLLM)", serving=task),
        timing=Timing(method="serving_client", stats=stats.get("e2el"), serving=serving),
        hardware=hw,
        extensions={"guidellm:raw": _raw(b, totals)},
    )
    return packet.with_id()
