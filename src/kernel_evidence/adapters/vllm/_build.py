"""Turning one serving-benchmark run record into an evidence packet (the vLLM adapter's core).

Every value is looked up by key name through the mapping table (``adapters/vllm.toml``);
every key is optional. Units are explicit: summary statistics are written in ms, per-request
arrays are read in seconds and converted, throughputs carry ``req/s`` / ``tok/s``.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import AdapterError
from ...models import (
    Artifact,
    ByteSize,
    Duration,
    EvidencePacket,
    Failure,
    FailureClass,
    Hardware,
    Replay,
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
from ...units import convert, dimension_of
from .._envelope import start_packet
from .._read import DEFAULT_MAX_BYTES, read_capped
from ._goodput import count_good, needed_arrays, slo_text
from ._map import LIST_PICKS, Mapping, mapping
from ._runs import RunRecord
from ._stats import RunSamples, Summary, close, collect_samples, summarize

__all__ = ["BuildContext", "build_packet", "classify"]

_STATS_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_")
_SERVE_STATS_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
#: result-like keys that are not workload settings (they stay in the raw extension)
_RESULT_PREFIXES = (
    "spec_decode_", "probe_", "diffusion_", "total_", "theoretical_", "server_", "kv_offload_",
    "cpu_kv_", "response_cache", "input_tput", "output_tput", "tput_per_gpu", "rps_change",
)  # fmt: skip
_RESULT_KEYS = frozenset(
    {
        "rtfx", "input_throughput", "concurrency", "accept_length", "input_sequence_throughput",
        "request_goodput", "request_goodput:", "max_output_tokens_per_s", "avg_latency",
        "std_latency", "num_requests_total", "num_requests_successful",
    }
)  # fmt: skip
_WORKLOADS = {
    "serve": "vllm bench serve",
    "sglang": "sglang bench_serving",
    "sglang_offline": "sglang bench_offline_throughput",
    "latency": "vllm bench latency",
    "throughput": "vllm bench throughput",
    "inferencex": "InferenceX serving benchmark",
    "aiperf": "aiperf profile",
}
_SAMPLE_METRICS = ("ttft", "tpot", "itl", "e2el")
#: the unit AIPerf / GenAI-Perf write for every latency metric object (``"unit": "ms"``)
_AIPERF_TIME_UNIT = "ms"
_DEFAULT_QS = (50.0, 90.0, 99.0)
#: why a metric has no per-request sample although the arrays are there
_NO_SAMPLES = {
    "tpot": "no successful request with output_len > 1",
    "itl": "no successful request with an inter-token gap",
}


@dataclass
class BuildContext:
    """What stays the same for every run of one ``read()`` call."""

    created_at: str
    extra: dict[str, Any]
    inline_max: int
    samples_dir: str | None
    use_numpy: bool | None
    #: SLOs (ms) of the ``goodput`` option: recompute goodput from the per-request arrays
    goodput: dict[str, float] | None = None
    warnings: list[str] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)
    _digests: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: (path, bytes) of the file being read, so that hashing it needs no second read
    current: tuple[str, bytes] | None = None
    #: the ``max_bytes`` cap on any file read (see :func:`.._read.read_capped`)
    max_bytes: int = DEFAULT_MAX_BYTES
    #: sidecar paths are recorded relative to this directory (where the packets go), if set
    side_base: str | None = None
    #: every sidecar written (``AdapterOptions.side_files``: removed if the ingest fails)
    side_files: list[str] = field(default_factory=list)

    def warn(self, message: str, *, once: str | None = None) -> None:
        """Record a warning (``once``: a key; the same key warns only once)."""
        if once is not None:
            if once in self._seen:
                return
            self._seen.add(once)
        self.warnings.append(message)

    def file_digest(self, path: str) -> tuple[str, int]:
        """sha256 and size of a source file, computed once."""
        if path not in self._digests and self.current is not None and self.current[0] == path:
            data = self.current[1]
            self._digests[path] = (f"sha256:{hashlib.sha256(data).hexdigest()}", len(data))
        if path not in self._digests:
            data = read_capped(path, self.max_bytes, what="a benchmark result")
            self._digests[path] = (f"sha256:{hashlib.sha256(data).hexdigest()}", len(data))
        return self._digests[path]


# ---------------------------------------------------------------------------------------
# recognising the output kind
# ---------------------------------------------------------------------------------------
_SUPPORTED = (
    "expected a vLLM `bench serve`/benchmark_serving.py result, a `vllm bench latency` or "
    "`vllm bench throughput` --output-json file, an SGLang bench_serving or "
    "bench_offline_throughput JSONL record, an InferenceX result or an AIPerf/GenAI-Perf "
    "profile export"
)


def _summary_table(v: dict[str, Any]) -> bool:
    """One of the summary tables of vLLM's (and vllm-ascend's) performance benchmarks: the
    ``{"latency": {...}, "throughput": {...}, "serving": {...}}`` pandas tables, or one row
    of the same table written as a list of rows keyed by display names (``Test name``,
    ``Tput (req/s)``, ``TTFT (ms)``)."""
    if v and set(v) <= {"latency", "throughput", "serving"} and all(isinstance(x, dict) for x in v.values()):
        return True
    return "Test name" in v and any(re.fullmatch(r".+ \([^()]+\)", k) for k in v)


def classify(rec: RunRecord) -> str:
    """The output kind of ``rec``: serve, sglang, latency, throughput, inferencex, aiperf,
    sweep_failure; raises :class:`AdapterError` naming what the file is when unsupported."""
    v = rec.values
    keys = set(v) | set(rec.arrays)
    if (
        "aiperf_version" in v
        or "genai_perf_version" in v
        or any(
            isinstance(v.get(k), dict) and "unit" in v[k]
            for k in ("time_to_first_token", "request_latency", "request_throughput")
        )
    ):
        return "aiperf"
    if "hw" in v and ({"tput_per_gpu", "conc", "infmax_model_prefix", "image"} & keys):
        return "inferencex"
    if "avg_latency" in v and ("percentiles" in v or "latencies" in rec.arrays):
        return "latency"
    if "elapsed_time" in v and ({"requests_per_second", "tokens_per_second"} & keys):
        return "throughput"
    if "successful_requests" in v and {"total_latency", "last_gen_throughput"} & keys:
        # SGLang bench_offline_throughput: bench_serving's key names, an offline engine
        return "sglang_offline"
    if {"total_output_tokens_retokenized", "server_info", "accept_length"} & keys or any(
        k.endswith("_e2e_latency_ms") for k in v
    ):
        return "sglang"
    if {"model_id", "request_throughput", "completed", "ttfts", "request_goodput:"} & keys or any(
        _SERVE_STATS_KEY.match(k) for k in v
    ):
        return "serve"
    if {"run_number", "error_type", "error"} <= keys:
        return "sweep_failure"
    if {"benchmark", "model", "metric"} <= keys:
        raise AdapterError(
            f"{rec.where()}: this is the PyTorch OSS benchmark-database record vLLM writes "
            "beside its result (`*.pytorch.json`), not the result itself; ingest the file of the "
            "same name without `.pytorch`"
        )
    if _summary_table(v):
        raise AdapterError(
            f"{rec.where()}: the summary tables of vLLM's performance benchmarks "
            "(convert-results-json-to-markdown.py: columns such as `Tput (req/s)`, one row per "
            "test), not a result; ingest the per-test result files those tables were made from "
            "(serving_*.json, latency_*.json, throughput_*.json in the benchmark's results folder)"
        )
    if isinstance(v.get("timeslices"), list):
        raise AdapterError(
            f"{rec.where()}: an AIPerf timeslices export (profile_export_aiperf_timeslices.json: "
            "the metrics of each time window), not a profile export; expected "
            "profile_export_aiperf.json (the whole run) from the same folder"
        )
    if "per_combination_metrics" in v:
        raise AdapterError(
            f"{rec.where()}: an AIPerf sweep aggregate (profile_export_aiperf_sweep.json: "
            "statistics across the sweep's runs), not a profile export; ingest each run's "
            "profile_export_aiperf.json (one folder per swept value)"
        )
    if {"input_config", "cli_command"} & keys and "schema_version" in v:
        raise AdapterError(
            f"{rec.where()}: an AIPerf file without metric objects (not a profile export); "
            "expected profile_export_aiperf.json"
        )
    shown = ", ".join(sorted(keys)[:8]) + (", ..." if len(keys) > 8 else "")
    raise AdapterError(
        f"{rec.where()}: top level: not a serving benchmark result (keys: {shown}); {_SUPPORTED}"
    )


# ---------------------------------------------------------------------------------------
# typed lookups
# ---------------------------------------------------------------------------------------
def _lookup(values: dict[str, Any], key: str) -> tuple[bool, Any]:
    if key in values:
        return True, values[key]
    if "." in key:
        cur: Any = values
        for part in key.split("."):
            if not isinstance(cur, dict) or part not in cur:
                return False, None
            cur = cur[part]
        return True, cur
    return False, None


def _type_name(x: Any) -> str:
    if isinstance(x, bool):
        return f"boolean {x!r}"
    if isinstance(x, str):
        return f"string {x[:40]!r}"
    if x is None:
        return "null"
    if isinstance(x, (list, dict)):
        return "a list" if isinstance(x, list) else "an object"
    if isinstance(x, int) and x.bit_length() > 64:  # repr() refuses over 4300 digits
        return f"an integer of {x.bit_length()} bits"
    return f"{type(x).__name__} {x!r}"


class _Reader:
    """Typed access to one record's values through the mapping table."""

    def __init__(
        self,
        rec: RunRecord,
        m: Mapping,
        ctx: BuildContext | None = None,
        view: dict[str, Any] | None = None,
    ) -> None:
        self.rec = rec
        self.m = m
        self.ctx = ctx
        #: what the lookups read: the record's values, or a view of them that fills in what
        #: the file keeps elsewhere (SGLang behind a prefill/decode router); ``rec.values``
        #: itself (the raw extension) is never changed
        self.view = rec.values if view is None else view
        self.used: set[str] = set()
        #: source key -> the unit the file itself states for it (AIPerf metric objects)
        self.declared: dict[str, str] = {}

    def raw(self, path: str, skip: frozenset[str] = frozenset()) -> tuple[str, Any, str | None] | None:
        """(source key, value, source unit) of the first present, non-null source of ``path``."""
        sources = [s for s in self.m.fields.get(path, ()) if s.key not in skip]
        for src in sources:  # every spelling present is consumed (the raw extension keeps them all)
            if _lookup(self.view, src.key)[0]:
                self.used.add(src.key.split(".", 1)[0])
        for src in sources:
            found, value = _lookup(self.view, src.key)
            if not found or value is None:
                continue
            unit = src.unit
            if isinstance(value, dict) and "avg" in value:  # AIPerf metric object
                unit = self._unit(src.key, value.get("unit"))
                if unit is not None:
                    self.declared[src.key] = unit
                value = value.get("avg")
                if value is None:
                    continue
            if isinstance(value, list) and src.pick is not None:  # AIPerf 0.11 lists of objects
                value = LIST_PICKS[src.pick](value)
                if value is None:
                    continue
            if isinstance(value, list) and path == "task.serving.model":  # AIPerf model_names
                value = value[0] if value else None
                if value is None:
                    continue
            return src.key, value, unit
        return None

    def _unit(self, key: str, unit: Any) -> str | None:
        if unit is None:
            return None
        mapped = self.m.units.get(str(unit))
        if mapped is None:
            raise AdapterError(
                f"{self.rec.where(key)}: unknown unit {unit!r}; expected one of {sorted(self.m.units)}"
            )
        return mapped[0]

    def text(self, path: str) -> str | None:
        got = self.raw(path)
        if got is None:
            return None
        key, value, _ = got
        if isinstance(value, (dict, list, bool)):
            raise AdapterError(f"{self.rec.where(key)}: expected a string, got {_type_name(value)}")
        text = str(value).strip()
        return text or None

    def integer(self, path: str, *, positive: bool = False, skip: frozenset[str] = frozenset()) -> int | None:
        got = self.raw(path, skip)
        if got is None:
            return None
        key, value, _ = got
        return _as_int(self.rec, key, value, positive=positive)

    def number(self, path: str, unit: str | None = None) -> float | None:
        got = self.raw(path)
        if got is None:
            return None
        key, value, src_unit = got
        x = _as_float(self.rec, key, value)
        if unit is not None and src_unit is not None and src_unit != unit:
            try:
                converted = convert(x, src_unit, unit)
            except ValueError:
                raise AdapterError(
                    f"{self.rec.where(key)}: unit `{src_unit}` where `{unit}` was expected"
                ) from None
            if key in self.declared and self.ctx is not None:
                _unit_warning(self.ctx, self.rec, key, src_unit, unit, x, converted)
            x = converted
        return x


def _unit_warning(
    ctx: BuildContext, rec: RunRecord, key: str, found: str, expected: str, value: float, converted: float
) -> None:
    """The file states a unit other than the one AIPerf writes for ``key``: the value is
    converted as stated, and the user told so (a wrong unit would scale it silently)."""
    ctx.warn(
        f"{rec.where(key)}: unit `{found}` where AIPerf writes `{expected}`; converted as "
        f"stated (avg {value:.6g} {found} = {converted:.6g} {expected}) - check the file's unit",
        once=f"{rec.where(key)}:unit",
    )


#: the largest count read (a signed 64-bit integer); larger is no count a benchmark writes
_MAX_COUNT = 2**63 - 1


def _as_int(rec: RunRecord, key: str, value: Any, *, positive: bool = False) -> int:
    out: int | None = None
    if isinstance(value, bool):
        out = None
    elif isinstance(value, int):
        out = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        out = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):  # --metadata strings
        # more than 19 digits is out of range (and int() refuses over 4300 of them)
        out = int(value) if len(value.strip()) <= 19 else _MAX_COUNT + 1
    what = "a positive integer" if positive else "a non-negative integer"
    if out is not None and out > _MAX_COUNT:
        raise AdapterError(
            f"{rec.where(key)}: expected {what} below 2^63, got {_type_name(value)}; out of range"
        )
    if out is None or out < 0 or (positive and out == 0):
        raise AdapterError(f"{rec.where(key)}: expected {what}, got {_type_name(value)}")
    return out


def _as_float(rec: RunRecord, key: str, value: Any, *, allow_negative: bool = False) -> float:
    x: float | None = None
    if isinstance(value, bool):
        x = None
    elif isinstance(value, (int, float)):
        try:
            x = float(value)
        except OverflowError:  # an integer beyond a 64-bit float
            raise AdapterError(
                f"{rec.where(key)}: integer of {int(value).bit_length()} bits is out of range; "
                "expected a finite number (at most about 1.8e308)"
            ) from None
    elif isinstance(value, str):
        try:
            x = float(value)
        except ValueError:
            x = None
    if x is None or not math.isfinite(x) or (x < 0 and not allow_negative):
        raise AdapterError(f"{rec.where(key)}: expected a non-negative number, got {_type_name(value)}")
    return x


# ---------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------
@dataclass
class _FileStats:
    """One metric's statistics as the file states them, in ms, with their source keys."""

    values: dict[str, float]  # mean / median / std / min / max / p<P>
    keys: dict[str, str]
    n: int | None = None


def _file_stats(r: _Reader, metric: str) -> _FileStats | None:
    rec = r.rec
    for src in r.m.stats.get(metric, ()):
        if src.regex is not None:
            found: dict[str, float] = {}
            keys: dict[str, str] = {}
            factor = convert(1.0, src.unit or "ms", "ms")
            for key, value in rec.values.items():
                mt = src.regex.match(key)
                if not mt or value is None:
                    continue
                stat = mt.group("stat")
                x = _as_float(rec, key, value)
                found[stat] = x * factor if factor != 1.0 else x
                keys[stat] = key
            if found:
                return _FileStats(found, keys)
        elif src.obj is not None:
            obj = rec.values.get(src.obj)
            if not isinstance(obj, dict):
                continue
            expected = src.unit or _AIPERF_TIME_UNIT
            stated = r._unit(src.obj, obj.get("unit"))
            unit = stated or expected
            if dimension_of(unit) != "time":
                raise AdapterError(f"{rec.where(src.obj)}: unit `{unit}` where a time unit was expected")
            factor = convert(1.0, unit, "ms")
            if r.ctx is not None and stated is None:
                r.ctx.warn(
                    f"{rec.where(src.obj)}: no `unit`; read as `{expected}`, the unit AIPerf writes",
                    once=f"{rec.where(src.obj)}:unit",
                )
            elif r.ctx is not None and unit != expected:
                mean = obj.get("avg")
                if isinstance(mean, (int, float)) and not isinstance(mean, bool) and math.isfinite(mean):
                    x = float(mean)
                    _unit_warning(r.ctx, rec, src.obj, unit, expected, x, convert(x, unit, expected))
                else:
                    r.ctx.warn(
                        f"{rec.where(src.obj)}: unit `{unit}` where AIPerf writes `{expected}`; "
                        "converted as stated - check the file's unit",
                        once=f"{rec.where(src.obj)}:unit",
                    )
            found = {}
            keys = {}
            for stat, value in obj.items():
                name = "mean" if stat == "avg" else stat
                if value is None or not (
                    name in ("mean", "std", "min", "max") or re.fullmatch(r"p\d+(?:\.\d+)?", name)
                ):
                    continue
                found[name] = _as_float(rec, f"{src.obj}.{stat}", value) * factor
                keys[name] = f"{src.obj}.{stat}"
            count = obj.get("count")
            n = _as_int(rec, f"{src.obj}.count", count) if count is not None else None
            if found:
                return _FileStats(found, keys, n)
    return None


def _q(stat: str) -> float:
    return float(stat[1:])


def _check(ctx: BuildContext, rec: RunRecord, fs: _FileStats, summary: Summary, factor: float) -> None:
    """Warn for every file statistic that disagrees with the recomputed one."""
    recomputed: dict[str, float] = {"mean": summary.mean * factor,
                                    "median": summary.median * factor,
                                    "std": summary.std * factor, "min": summary.min * factor,
                                    "max": summary.max * factor}  # fmt: skip
    for q, v in summary.percentiles.items():
        recomputed[_pkey(q)] = v * factor
    for stat, file_value in fs.values.items():
        if stat.startswith("p") and stat not in recomputed:
            recomputed[stat] = summary.percentiles.get(_q(stat), math.nan) * factor
        got = recomputed.get(stat)
        if got is None or math.isnan(got):
            continue
        if not close(file_value, got):
            ctx.warn(
                f"{rec.where()}: `{fs.keys[stat]}` is {file_value!r} in the file but {got!r} "
                "recomputed from the per-request arrays"
            )


def _pkey(q: float) -> str:
    return f"p{int(q)}" if float(q).is_integer() else f"p{q}"


#: why a latency can have no sample in a run that completed requests
_ZERO_REASONS = {
    "ttft": "no first-token time, e.g. a backend that does not stream",
    "tpot": "no successful request with output_len > 1",
    "itl": "no inter-token gap, e.g. each response arriving in one chunk",
    "e2el": "no successful request",
}


def _all_placeholders(metric: str, fs: _FileStats) -> bool:
    """Is every statistic the file states for ``metric`` exactly 0.0 (a placeholder)?"""
    return metric in _ZERO_REASONS and bool(fs.values) and all(v == 0.0 for v in fs.values.values())


def _stats(
    ctx: BuildContext,
    rec: RunRecord,
    metric: str,
    fs: _FileStats | None,
    samples: Any | None,
    *,
    sample_unit: str = "s",
    check: bool = True,
) -> tuple[Stats | None, Summary | None]:
    """A Stats in ms from the file's statistics and/or the samples (given in ``sample_unit``)."""
    summary = None
    factor = convert(1.0, sample_unit, "ms")
    if samples is not None and not len(samples) and fs is not None and check:
        # the arrays are there but give this metric no sample (no successful request with
        # output_len > 1 for tpot, no chunk gap for itl): vLLM then writes
        # `np.mean(x or 0)`, i.e. 0.0 placeholders, which are not statistics
        stated = {stat: v for stat, v in fs.values.items() if v != 0.0}
        if not stated:
            ctx.warn(
                f"{rec.where()}: `{metric}`: the per-request arrays hold no samples "
                f"({_NO_SAMPLES.get(metric, 'no successful request')}); the file's 0.0 "
                "placeholders are left out (kept in the `vllm:raw` extension)",
                once=f"{rec.source}:nosamples:{rec.location}:{metric}",
            )
            return None, None
        for stat, v in stated.items():
            ctx.warn(
                f"{rec.where()}: `{fs.keys[stat]}` is {v!r} in the file but the per-request "
                f"arrays hold no {metric} samples"
            )
    if samples is None and fs is not None and check and _all_placeholders(metric, fs):
        # no arrays to tell, but a latency whose every statistic is exactly 0.0 was not
        # measured: vLLM and SGLang write `np.mean(x or 0)` etc. when the run gave the metric
        # no sample (e.g. no inter-token gap when each response arrived in one chunk)
        ctx.warn(
            f"{rec.where()}: `{metric}`: every statistic in the file is 0.0 "
            f"({', '.join(f'`{k}`' for k in fs.keys.values())}), the placeholder vLLM and "
            f"SGLang write when the run gave the metric no sample ({_ZERO_REASONS[metric]}); "
            "left out (kept in the `vllm:raw` extension)",
            once=f"{rec.source}:zeros:{rec.location}:{metric}",
        )
        return None, None
    if samples is not None and len(samples):
        qs = sorted({_q(s) for s in (fs.values if fs else {}) if s.startswith("p")} or set(_DEFAULT_QS))
        summary = summarize(samples, qs, use_numpy=ctx.use_numpy)
        if summary is not None and fs is not None and check:
            _check(ctx, rec, fs, summary, factor)
    if fs is None and summary is None:
        return None, None
    vals = dict(fs.values) if fs else {}
    median = vals.get("median", vals.get("p50"))
    if median is None and summary is not None:
        median = summary.median * factor
    if median is None:
        ctx.warn(
            f"{rec.where()}: {metric} statistics have no median (keys: "
            f"{', '.join(sorted(fs.keys.values())) if fs else '-'}); "
            "kept only in the `vllm:raw` extension",
            once=f"{rec.source}:nomedian:{metric}",
        )
        return None, summary
    pct = {s: v for s, v in vals.items() if s.startswith("p")}
    if not pct and summary is not None:
        pct = {_pkey(q): v * factor for q, v in summary.percentiles.items()}
    stats = Stats(
        unit="ms",
        median=median,
        mean=vals.get("mean", summary.mean * factor if summary else None),
        std=vals.get("std", summary.std * factor if summary else None),
        min=vals.get("min", summary.min * factor if summary else None),
        max=vals.get("max", summary.max * factor if summary else None),
        percentiles=dict(sorted(pct.items(), key=lambda kv: _q(kv[0]))) or None,
        n=summary.n if summary else (fs.n if fs else None),
    )
    return stats, summary


def _ms_list(values: Any, factor: float = 1000.0) -> list[float]:
    if hasattr(values, "tolist"):
        return (values * factor).tolist()  # type: ignore[no-any-return]
    return [v * factor for v in values]


# ---------------------------------------------------------------------------------------
# SGLang behind a prefill/decode router
# ---------------------------------------------------------------------------------------
#: where SGLang's router puts each server's ``get_server_info`` when bench_serving runs
#: against a prefill/decode (PD) deployment: ``server_info`` then has no ``model_path`` of its
#: own, only lists of per-server dicts under these keys
_PD_ROLES = ("prefill", "decode", "internal_states")
#: the server facts read from ``server_info`` (see ``vllm.toml``), taken from those servers
_PD_KEYS = ("model_path", "version", "tp_size", "pp_size")


def _sglang_server_view(ctx: BuildContext, rec: RunRecord) -> dict[str, Any] | None:
    """The record's values with ``server_info`` completed from the servers behind a PD
    router (model, version, TP/PP sizes), or ``None`` when there is nothing to complete.
    A fact the servers disagree on (prefill and decode on different SGLang versions, or
    different TP sizes) is left out with a warning naming each server's value."""
    info = rec.values.get("server_info")
    if not isinstance(info, dict) or "model_path" in info:
        return None
    servers = [
        (role, server)
        for role in _PD_ROLES
        if isinstance(info.get(role), list)
        for server in info[role]
        if isinstance(server, dict)
    ]
    if not servers:
        return None
    merged = dict(info)
    for key in _PD_KEYS:
        if key in info:
            continue
        found: dict[Any, list[str]] = {}
        for role, server in servers:
            value = server.get(key)
            if value is None or isinstance(value, (bool, dict, list)):
                continue
            roles = found.setdefault(value, [])
            if role not in roles:
                roles.append(role)
        if len(found) == 1:
            merged[key] = next(iter(found))
        elif found:
            shown = ", ".join(f"{value!r} ({'/'.join(roles)})" for value, roles in found.items())
            ctx.warn(
                f"{rec.where('server_info')}: the servers behind the prefill/decode router "
                f"report different `{key}` values ({shown}); left out"
            )
    return {**rec.values, "server_info": merged}


# ---------------------------------------------------------------------------------------
# hardware, engine
# ---------------------------------------------------------------------------------------
_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*[xX×*]\s*(.+?)\s*$")


def _opt(ctx: BuildContext, *names: str) -> Any:
    for n in names:
        v = ctx.extra.get(n)
        if v is not None and v != "":
            return v
    return None


def _hardware(ctx: BuildContext, r: _Reader, missing: list[str]) -> Hardware | None:
    rec = r.rec
    opt_device = _opt(ctx, "device", "hardware", "gpu")
    got = r.raw("hardware.device")
    file_device = str(got[1]).strip() if got is not None and not isinstance(got[1], (dict, list)) else None
    device = str(opt_device).strip() if opt_device is not None else file_device
    if opt_device is not None and file_device and file_device != device:
        ctx.warn(
            f"{rec.where()}: the `device` option ({device!r}) overrides the file's "
            f"{got[0] if got else ''}={file_device!r}",
            once=f"{rec.source}:device-override",
        )
    if not device:
        missing.append("hardware")
        return None
    count: int | None = None
    mt = _COUNT_PREFIX.match(device)
    if mt:
        count, device = int(mt.group(1)), mt.group(2)
    opt_count = _opt(ctx, "gpu_count", "device_count", "count")
    if opt_count is not None:
        count = _as_int(rec, "option gpu_count", opt_count, positive=True)
    elif count is None:
        count = r.integer("hardware.count", positive=True)
    vendor = _opt(ctx, "vendor")
    if vendor is None:
        for name, patterns in r.m.vendors.items():
            if any(p.search(device) for p in patterns):
                vendor = name
                break
    if vendor is None:
        vendor = "other"
        ctx.warn(f"{rec.where()}: vendor of device {device!r} not recognised; written as `other`",
                 once=f"{rec.source}:vendor")  # fmt: skip
    try:
        return Hardware(vendor=vendor, device=device, count=count or None)
    except ValueError as exc:
        raise AdapterError(
            f"{rec.where()}: hardware option or metadata rejected ({_first_line(exc)})"
        ) from None


#: the engine version in a container image tag: the release (``v0.22.0``, ``v0.10.1rc1``,
#: ``v0.5.12.post1``); a build suffix after it (``-rocm720-mi35x-20260529``, ``-cu129``)
#: names the image, not the engine, and stays out (the image is kept in the raw extension)
_IMAGE_TAG = re.compile(
    r":v?(\d+(?:\.\d+)+(?:(?:a|b|rc)\d+)?(?:\.?post\d+)?(?:\.?dev\d+)?(?:\+[\w.]+)?)(?:[-_][\w.+-]*)?$"
)


def _engine(ctx: BuildContext, r: _Reader, fmt: str, missing: list[str]) -> Software | None:
    name = _opt(ctx, "engine")
    version = _opt(ctx, "engine_version")
    got_name = r.raw("task.serving.engine.name")
    got_version = r.raw("task.serving.engine.version")
    if name is None and got_name is not None:
        key, value, _ = got_name
        name = "sglang" if key == "server_info.version" else str(value)
    if version is None and got_version is not None:
        key, value, _ = got_version
        if key == "image":
            mt = _IMAGE_TAG.search(str(value))
            version = mt.group(1) if mt else None
        else:
            version = str(value).lstrip("v") if isinstance(value, str) else str(value)
        if name is None and key in ("vllm_version", "sglang_version", "server_info.version"):
            name = "sglang" if key != "vllm_version" else "vllm"
    if name is None and r.view is not r.rec.values:
        name = "sglang"  # server_info listing the SGLang servers behind a PD router
    if name is None:
        missing.append("engine")
        return None
    if version is None:
        missing.append("engine version")
    return Software(name=str(name), version=None if version is None else str(version))


def _first_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200]


# ---------------------------------------------------------------------------------------
# samples: inline, sidecar, or a reference to the source file
# ---------------------------------------------------------------------------------------
def _request_arrays(cols: dict[str, Any]) -> dict[str, list[Any]]:
    """The per-request arrays the timing samples have no place for (``input_lens``,
    ``output_lens``, ``errors``), one entry per request as in the file, kept beside the
    inlined samples (the Parquet sidecar holds them as columns)."""
    out: dict[str, list[Any]] = {}
    for key in ("input_lens", "output_lens"):
        values = cols.get(key)
        if values is not None:
            out[key] = [
                int(v) if math.isfinite(v) and float(v).is_integer() else v if math.isfinite(v) else None
                for v in values
            ]
    errors = cols.get("errors")
    if errors is not None:
        out["errors"] = [str(e) if e is not None else "" for e in errors]
    return out


def _samples_artifact(
    ctx: BuildContext, rec: RunRecord, samples: RunSamples, cols: dict[str, Any]
) -> Artifact:
    if ctx.samples_dir:
        return _write_sidecar(ctx, rec, cols)
    digest, size = ctx.file_digest(rec.source)
    ctx.warn(
        f"{rec.source}: {samples.size()} per-request sample values are too many to inline "
        f"(cap {ctx.inline_max}); the packet references the source file by sha256 instead "
        "(set the `samples_dir` option to write a Parquet sidecar)",
        once=f"{rec.source}:samples-ref",
    )
    suffix = "" if rec.location is None else f"#{rec.location}"
    return Artifact(
        kind="output",
        name=os.path.basename(rec.source) + suffix,
        path=rec.source,
        sha256=digest,
        size=ByteSize(value=float(size), unit="B"),
        media_type=_media_type(rec),
    )


def _media_type(rec: RunRecord) -> str:
    if rec.source.lower().endswith(".csv"):
        return "text/csv"
    if rec.location and rec.location.startswith("line"):
        return "application/x-ndjson"
    return "application/json"


def _write_sidecar(ctx: BuildContext, rec: RunRecord, cols: dict[str, Any]) -> Artifact:
    """One Parquet row per request: ttft/e2el in ms, itl_ms list, lengths, error text."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a core dependency
        from ...errors import MissingExtra

        raise MissingExtra("pyarrow", "archive", "writing a per-request samples sidecar") from None
    table: dict[str, Any] = {}
    n = cols["n"]
    table["request"] = pa.array(range(n), type=pa.int64())
    if cols.get("errors") is not None:
        table["error"] = pa.array(cols["errors"], type=pa.string())
    for name, key in (("ttft_ms", "ttfts"), ("e2el_ms", "latencies")):
        if cols.get(key) is not None:
            table[name] = pa.array(_scaled(cols[key]), type=pa.float64())
    for name, key in (("input_len", "input_lens"), ("output_len", "output_lens")):
        if cols.get(key) is not None:
            table[name] = pa.array(cols[key], type=pa.float64()).cast(pa.int64())
    itls = cols.get("itls")
    if itls is not None:
        lengths = list(map(len, itls))
        try:
            import numpy as np

            offsets: Any = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
        except ImportError:  # pragma: no cover
            from itertools import accumulate

            offsets = [0, *accumulate(lengths)]
        flat = _flatten(itls, int(offsets[-1]))
        table["itl_ms"] = pa.LargeListArray.from_arrays(
            pa.array(offsets, type=pa.int64()), pa.array(_scaled(flat), type=pa.float64())
        )
    out_dir = Path(ctx.samples_dir or ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = Path(rec.source).name
    for suffix in (".jsonl", ".json", ".ndjson", ".csv"):
        stem = stem.removesuffix(suffix)
    if rec.location:
        stem += "." + re.sub(r"[^0-9A-Za-z]+", "", rec.location)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{stem}.", suffix=".samples.parquet.tmp", dir=out_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        pq.write_table(pa.table(table), tmp, compression="zstd")
        h = hashlib.sha256()
        size = 0
        with open(tmp, "rb") as fh:
            while chunk := fh.read(1 << 22):
                h.update(chunk)
                size += len(chunk)
        final = out_dir / f"{stem}.samples-{h.hexdigest()[:12]}.parquet"
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    ctx.side_files.append(str(final))
    return Artifact(
        kind="output",
        name=final.name,
        path=str(final) if ctx.side_base is None else os.path.relpath(final, ctx.side_base),
        sha256=f"sha256:{h.hexdigest()}",
        size=ByteSize(value=float(size), unit="B"),
        media_type="application/vnd.apache.parquet",
    )


def _scaled(values: Any, factor: float = 1000.0) -> Any:
    """``values * factor``: a numpy array if numpy is there (zero-copy into Arrow), else a list."""
    try:
        import numpy as np

        return np.asarray(values, dtype=np.float64) * factor
    except ImportError:  # pragma: no cover
        return [v * factor for v in values]


def _flatten(itls: list[list[float]], count: int) -> Any:
    from itertools import chain

    try:
        import numpy as np

        return np.fromiter(chain.from_iterable(itls), dtype=np.float64, count=count)
    except ImportError:  # pragma: no cover
        return list(chain.from_iterable(itls))


# ---------------------------------------------------------------------------------------
# packets
# ---------------------------------------------------------------------------------------
def _settings(r: _Reader, extra_used: set[str]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    used = r.used | extra_used
    for key, value in r.rec.values.items():
        if key in used or key in _RESULT_KEYS or key.startswith(_RESULT_PREFIXES):
            continue
        if _STATS_KEY.match(key) or r.m.is_stats_key(key):
            continue
        # null values are left out (they say nothing; the raw extension keeps them)
        if isinstance(value, (str, bool, int)) or (isinstance(value, float) and math.isfinite(value)):
            out[key] = value
    return out or None


def _raw_extension(rec: RunRecord, fmt: str, extra: dict[str, Any]) -> dict[str, Any]:
    # the file name, not its path: the same file read from anywhere gives the same packet id
    raw: dict[str, Any] = {"format": fmt, "source": os.path.basename(rec.source)}
    if rec.location is not None:
        raw["location"] = rec.location
    raw["values"] = rec.values
    if rec.non_finite:
        raw["non_finite_keys"] = list(rec.non_finite)
    raw.update(extra)
    return raw


def _subject_name(model: str | None, rec: RunRecord, fmt: str, task: ServingTask | None) -> str:
    base = model or Path(rec.source).name
    parts: list[str] = []
    label = rec.values.get("label") or rec.values.get("tag")
    if isinstance(label, (int, float)) and not isinstance(label, bool):
        label = str(label)  # a numeric label, typed back as a number from a CSV cell
    if isinstance(label, str) and label.strip():
        parts.append(label.strip())
    if task is not None:
        if task.request_rate is not None:
            parts.append(f"rate={task.request_rate}")
        if task.max_concurrency is not None:
            parts.append(f"concurrency={task.max_concurrency}")
    run_number = rec.values.get("run_number")
    if isinstance(run_number, float) and run_number.is_integer():
        run_number = int(run_number)  # a CSV column with gaps is written as float
    if isinstance(run_number, int) and not isinstance(run_number, bool):
        parts.append(f"run={run_number}")
    if fmt in ("latency", "throughput", "sglang_offline"):
        parts.append(_WORKLOADS[fmt])
    return " ".join([base, *parts])


def _rate(rec: RunRecord, r: _Reader) -> tuple[float | str | None, bool]:
    """(request_rate, representable) from the record."""
    got = r.raw("task.serving.request_rate")
    if got is None:
        return None, True
    key, value, _ = got
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity", "+inf"):
        return "inf", True
    if isinstance(value, str) and not re.fullmatch(r"\s*[0-9.eE+-]+\s*", value):
        return None, False  # e.g. SGLang "trace": kept in settings
    return _as_float(rec, key, value), True


def build_packet(rec: RunRecord, fmt: str, ctx: BuildContext) -> EvidencePacket:
    """The packet for one run record of output kind ``fmt``."""
    if fmt == "sweep_failure":
        return _sweep_failure(rec, ctx)
    try:
        return _build(rec, fmt, ctx)
    except AdapterError:
        raise
    except ValueError as exc:  # a model constraint the checks above did not anticipate
        raise AdapterError(
            f"{rec.where()}: values rejected by the packet model ({_first_line(exc)})"
        ) from None


def _build(rec: RunRecord, fmt: str, ctx: BuildContext) -> EvidencePacket:
    m = mapping(fmt)
    view = _sglang_server_view(ctx, rec) if fmt in ("sglang", "sglang_offline") else None
    r = _Reader(rec, m, ctx, view)
    missing: list[str] = []
    extra_used: set[str] = set()
    raw_extra: dict[str, Any] = {}
    derived: list[str] = []

    # --- task.serving ------------------------------------------------------------------
    model = r.text("task.serving.model") or (str(ctx.extra["model"]) if ctx.extra.get("model") else None)
    engine = _engine(ctx, r, fmt, missing)
    rate, rate_ok = _rate(rec, r)
    if not rate_ok:
        extra_used.discard("request_rate")
        r.used.discard("request_rate")
    tp_opt = _opt(ctx, "tensor_parallel_size", "tp")
    tp = (
        _as_int(rec, "option tensor_parallel_size", tp_opt, positive=True)
        if tp_opt is not None
        else r.integer("task.serving.tensor_parallel_size", positive=True)
    )
    if tp is None:
        missing.append("tensor_parallel_size")
    pp_opt = _opt(ctx, "pipeline_parallel_size", "pp")
    pp = (
        _as_int(rec, "option pipeline_parallel_size", pp_opt, positive=True)
        if pp_opt is not None
        else r.integer("task.serving.pipeline_parallel_size", positive=True)
    )
    max_conc = r.integer("task.serving.max_concurrency")
    dataset = r.text("task.serving.dataset") or _opt(ctx, "dataset")
    # random_* / sharegpt_* lengths are written whatever the dataset; they only apply to theirs
    skip = set()
    if not (dataset or "").lower().startswith("random"):
        skip |= {"random_input_len", "random_output_len"}
    if (dataset or "").lower() != "sharegpt":
        skip.add("sharegpt_output_len")
    task_fields = dict(
        engine=engine,
        dataset=dataset,
        num_prompts=r.integer("task.serving.num_prompts"),
        input_len=r.integer("task.serving.input_len", skip=frozenset(skip)),
        output_len=r.integer("task.serving.output_len", skip=frozenset(skip)),
        max_concurrency=max_conc or None,
        request_rate=rate,
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
    )
    hardware = _hardware(ctx, r, missing)

    # --- per-request samples -------------------------------------------------------------
    samples: RunSamples | None = None
    cols: dict[str, Any] = {}
    if fmt in ("serve", "sglang") and rec.arrays:
        cols = {
            "ttfts": rec.floats("ttfts"),
            "itls": rec.float_lists("itls"),
            "latencies": rec.floats("latencies"),
            "output_lens": rec.floats("output_lens"),
            "input_lens": rec.floats("input_lens"),
            "errors": rec.strings("errors"),
        }
        ok_mask = _ok_without_errors(rec, cols)
        try:
            samples = collect_samples(**cols, ok_mask=ok_mask, use_numpy=ctx.use_numpy)
        except ValueError as exc:
            raise AdapterError(
                f"{rec.where()}: {exc}; expected one entry per request in each array"
            ) from None
        if samples is not None:
            cols["n"] = samples.n_requests
    for key in rec.non_finite:
        ctx.warn(f"{rec.where(key)}: NaN or infinite value left out")

    # --- timing.serving ------------------------------------------------------------------
    completed = r.integer("timing.serving.completed")
    failed = r.integer("timing.serving.failed")
    if fmt == "inferencex" and failed is None:
        total = rec.values.get("num_requests_total")
        if completed is not None and total is not None:
            failed = max(_as_int(rec, "num_requests_total", total) - completed, 0)
            derived.append("failed")
    if samples is not None:
        if completed is not None and completed != samples.succeeded:
            ctx.warn(
                f"{rec.where('completed')}: the file says {completed} but the per-request "
                f"arrays hold {samples.succeeded} successful requests"
            )
        if failed is not None and failed != samples.n_requests - samples.succeeded:
            ctx.warn(
                f"{rec.where('failed')}: the file says {failed} but the per-request arrays hold "
                f"{samples.n_requests - samples.succeeded} failed requests"
            )
        if completed is None:
            completed = samples.succeeded
            derived.append("completed")
        if failed is None and rec.arrays.get("errors") is not None:
            failed = samples.n_requests - samples.succeeded
            derived.append("failed")
    unsent = None
    if fmt == "serve" and failed is None and samples is None and completed is not None:
        unsent = _unfinished_requests(task_fields.get("num_prompts"), completed)
        if unsent:
            failed = unsent
            derived.append("failed")
    all_failed = completed == 0
    duration = r.number("timing.serving.duration", "s")
    total_in = r.integer("timing.serving.total_input_tokens")
    total_out = r.integer("timing.serving.total_output_tokens")
    sample_out = samples.total_output_tokens if samples is not None else None
    if sample_out is not None and total_out is not None and sample_out != total_out:
        ctx.warn(
            f"{rec.where('total_output_tokens')}: the file says {total_out} but the per-request "
            f"output_lens of successful requests sum to {sample_out}"
        )
    sample_in = samples.total_input_tokens if samples is not None else None
    if sample_in is not None and total_in is not None and sample_in != total_in:
        ctx.warn(
            f"{rec.where('total_input_tokens')}: the file says {total_in} but the per-request "
            f"input_lens of successful requests sum to {sample_in}"
        )
    if fmt in ("serve", "sglang") and not all_failed and duration:
        _check_throughputs(ctx, rec, r, duration, completed, total_in, total_out)

    def rate_of(path: str, cls: type) -> Any:
        unit = "req/s" if cls is RequestRate else "tok/s"
        x = r.number(path, unit)
        return None if x is None or all_failed else cls(value=x, unit=unit)

    total_tput = rate_of("timing.serving.total_token_throughput", TokenRate)
    if total_tput is None and not all_failed and duration and total_in is not None and total_out is not None:
        total_tput = TokenRate(value=(total_in + total_out) / duration, unit="tok/s")
        derived.append("total_token_throughput")

    stats: dict[str, Stats | None] = {}
    summaries: dict[str, Summary | None] = {}
    if not all_failed:
        for metric in _SAMPLE_METRICS:
            fs = _file_stats(r, metric)
            smp = samples.metrics.get(metric) if samples is not None else None
            stats[metric], summaries[metric] = _stats(ctx, rec, metric, fs, smp)
    samples_artifact = None
    if samples is not None and not all_failed and samples.size():
        if samples.size() <= ctx.inline_max:
            for metric, st in stats.items():
                smp = samples.metrics.get(metric)
                if st is not None and smp is not None and len(smp):
                    stats[metric] = st.model_copy(update={"samples": _ms_list(smp)})
            requests = _request_arrays(cols)
            if requests:
                raw_extra["requests"] = requests
        else:
            samples_artifact = _samples_artifact(ctx, rec, samples, cols)
    if samples is not None and samples.errors:
        raw_extra["error_counts"] = dict(list(samples.errors.items())[:20])

    goodput = rate_of("timing.serving.request_goodput", RequestRate)
    recomputed_goodput = None
    if ctx.goodput is not None and not all_failed:
        recomputed_goodput = _recompute_goodput(ctx, rec, r, cols, samples, duration, goodput, raw_extra)
        if goodput is None and recomputed_goodput is not None:
            goodput = RequestRate(value=recomputed_goodput, unit="req/s")
            derived.append("request_goodput")

    serving = ServingMetrics(
        completed=completed,
        failed=failed,
        duration=Duration(value=duration, unit="s") if duration is not None else None,
        request_throughput=rate_of("timing.serving.request_throughput", RequestRate),
        request_goodput=goodput,
        output_throughput=rate_of("timing.serving.output_throughput", TokenRate),
        total_token_throughput=total_tput,
        max_output_throughput=rate_of("timing.serving.max_output_throughput", TokenRate),
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        max_concurrent_requests=r.integer("timing.serving.max_concurrent_requests"),
        ttft=stats.get("ttft"),
        tpot=stats.get("tpot"),
        itl=stats.get("itl"),
        e2el=stats.get("e2el"),
        samples_artifact=samples_artifact,
    )

    # --- failures ----------------------------------------------------------------------------
    first_error = _first_error(rec, fmt, samples)
    failure = None
    status = Status.PASSED
    if all_failed:
        status = Status.FAILED
        n_failed = failed if failed is not None else "all"
        message = (
            f"all {n_failed} requests failed (completed = 0); first error: {first_error}"
            if first_error
            else f"all {n_failed} requests failed (completed = 0); the result file keeps no error text"
        )
        failure = Failure(failure_class=FailureClass.RUNTIME_ERROR, message=message)
    elif failed:
        total_req = (completed or 0) + failed
        ctx.warn(
            f"{rec.where()}: {failed} of {total_req} requests failed"
            + (
                f" (the file keeps no `failed` count or error text: `num_prompts` {total_req} "
                f"- `completed` {completed}, taken as timing.serving.failed unless the dataset "
                "held fewer prompts)"
                if unsent
                else ""
            )
            + (f"; first error: {first_error}" if first_error else "")
        )

    # --- latency / throughput formats ---------------------------------------------------------
    timing_stats = stats.get("e2el")
    method = "serving_client"
    if fmt == "latency":
        timing_stats = _latency_stats(ctx, rec)
        method = "host_clock"
        serving = None  # type: ignore[assignment]
    elif fmt in ("throughput", "sglang_offline"):
        method = "host_clock"
    if timing_stats is not None and timing_stats.samples is not None and fmt != "latency":
        timing_stats = timing_stats.model_copy(update={"samples": None})

    replay = None
    if fmt == "aiperf":
        got = _lookup(rec.values, "input_config.cli_command")
        if not got[0]:  # AIPerf 0.11 (schema 1.3) keeps it under run_info
            got = _lookup(rec.values, "run_info.cli_command")
        if got[0] and isinstance(got[1], str) and got[1].strip():
            try:
                replay = Replay(command=shlex.split(got[1]))
            except ValueError:
                replay = Replay(command=[got[1]], shell=True)
        if isinstance(rec.values.get("input_config"), dict):
            extra_used.add("input_config")

    if missing:
        ctx.warn(
            f"{rec.source}: not recorded in the file: {', '.join(missing)}; left out (pass them as "
            "options, e.g. device=..., engine=..., engine_version=..., tensor_parallel_size=...)",
            once=f"{rec.source}:missing:{','.join(missing)}",
        )

    # the workload (rate, dataset, lengths, concurrency) is kept with or without a model id
    serving_task: ServingTask | None = ServingTask(model=model or None, settings=None, **task_fields)
    if model or any(v is not None for v in task_fields.values()):
        settings = _settings(r, extra_used)
        if not rate_ok:
            settings = {**(settings or {}), "request_rate": str(rec.values.get("request_rate"))}
        if recomputed_goodput is not None and ctx.goodput is not None:
            slos = {f"goodput_slo_{k}_ms": v for k, v in ctx.goodput.items()}
            settings = {**(settings or {}), **slos}
        if settings and serving_task is not None:
            serving_task = serving_task.model_copy(update={"settings": settings})
    else:
        serving_task = None
    if not model:
        ctx.warn(
            f"{rec.source}: the model is not recorded in the file; task.serving.model left out "
            "(pass the `model` option)",
            once=f"{rec.source}:nomodel",
        )
    if derived:
        raw_extra["derived"] = derived
    packet = start_packet(
        subject_kind="serving",
        subject_name=_subject_name(model, rec, fmt, serving_task),
        description=f"{_WORKLOADS[fmt]} result {_short_where(rec)}",
        status=status,
        created_at=ctx.created_at,
        failure=failure,
        task=Task(workload=_WORKLOADS[fmt], serving=serving_task),
        timing=Timing(
            method=method,
            repeats=timing_stats.n if fmt == "latency" and timing_stats is not None else None,
            stats=timing_stats,
            serving=serving,
        ),
        hardware=hardware,
        replay=replay,
        extensions={"vllm:raw": _raw_extension(rec, fmt, raw_extra)},
    )
    return packet.with_id()


def _check_throughputs(
    ctx: BuildContext,
    rec: RunRecord,
    r: _Reader,
    duration: float,
    completed: int | None,
    total_in: int | None,
    total_out: int | None,
) -> None:
    """vLLM and SGLang divide by the benchmark duration: ``request_throughput = completed /
    duration``, ``output_throughput = total_output_tokens / duration``,
    ``total_token_throughput = (total_input_tokens + total_output_tokens) / duration``.
    Warn when the file's rates disagree with its own counts."""
    expected = {
        "timing.serving.request_throughput": completed,
        "timing.serving.output_throughput": total_out,
        "timing.serving.total_token_throughput": (
            total_in + total_out if total_in is not None and total_out is not None else None
        ),
    }
    for path, count in expected.items():
        if count is None:
            continue
        got = r.raw(path)
        if got is None or isinstance(got[1], bool) or not isinstance(got[1], (int, float)):
            continue
        try:
            key, value = got[0], float(got[1])
        except OverflowError:  # an integer beyond a 64-bit float: no rate to compare
            continue
        want = count / duration
        if not close(value, want):
            ctx.warn(
                f"{rec.where()}: `{key}` is {value!r} in the file but {count} / {duration!r} s "
                f"= {want!r} from its own counts and duration"
            )


def _recompute_goodput(
    ctx: BuildContext,
    rec: RunRecord,
    r: _Reader,
    cols: dict[str, Any],
    samples: RunSamples | None,
    duration: float | None,
    file_goodput: RequestRate | None,
    raw_extra: dict[str, Any],
) -> float | None:
    """Goodput (req/s) from the per-request arrays and the ``goodput`` option's SLOs; checks
    the file's ``request_goodput`` when it has one. ``None`` (with a warning) when it cannot."""
    slos = ctx.goodput or {}
    label = slo_text(slos)
    block: dict[str, Any] = {"slos_ms": dict(slos), "recomputed": False}
    raw_extra["goodput"] = block
    if samples is None or samples.ok is None:
        ctx.warn(
            f"{rec.source}: goodput cannot be recomputed with SLOs {label}: the file has no "
            "per-request arrays (`vllm bench serve --save-detailed` saves them)",
            once=f"{rec.source}:goodput-noarrays",
        )
        return None
    lacking = [name for name in needed_arrays(slos) if cols.get(name) is None]
    if lacking:
        ctx.warn(
            f"{rec.where()}: goodput cannot be recomputed with SLOs {label}: the per-request "
            f"arrays lack {', '.join(f'`{n}`' for n in lacking)}"
        )
        return None
    if not duration:
        ctx.warn(f"{rec.where()}: goodput cannot be recomputed with SLOs {label}: no benchmark `duration`")
        return None
    good = count_good(
        slos, ok=samples.ok, ttfts=cols.get("ttfts"), latencies=cols.get("latencies"),
        output_lens=cols.get("output_lens"),
    )  # fmt: skip
    value = good / duration
    block.update(recomputed=True, good_requests=good, duration_s=duration, request_goodput=value)
    if file_goodput is not None:
        got = r.raw("timing.serving.request_goodput")
        key = got[0] if got is not None else "request_goodput"
        agrees = close(file_goodput.value, value)
        block["file_agrees"] = agrees
        if not agrees:
            ctx.warn(
                f"{rec.where()}: `{key}` is {file_goodput.value!r} in the file but {value!r} "
                f"recomputed from the per-request arrays with SLOs {label} "
                f"({good} good requests / {duration!r} s)"
            )
    return value


def _ok_without_errors(rec: RunRecord, cols: dict[str, Any]) -> list[bool] | None:
    """Files without ``errors``: a failed request has output_len 0 (vLLM, SGLang); use that
    only when it accounts exactly for the file's ``completed``."""
    olens = cols.get("output_lens")
    completed = rec.values.get("completed")
    if isinstance(completed, float) and completed.is_integer():
        completed = int(completed)  # a CSV column with gaps is written as float
    if cols.get("errors") is not None or olens is None or not isinstance(completed, int):
        return None
    mask = [o > 0 for o in olens]
    return mask if sum(mask) == completed and completed < len(mask) else None


def _unfinished_requests(num_prompts: Any, completed: int) -> int | None:
    """Requests sent but not completed, for a ``vllm bench serve`` result that records neither
    ``failed`` nor per-request ``errors`` (benchmark_serving.py before the `failed` key): the
    benchmark sends ``num_prompts`` requests, so ``num_prompts - completed`` of them failed."""
    if not isinstance(num_prompts, int) or isinstance(num_prompts, bool) or num_prompts <= completed:
        return None
    return num_prompts - completed


def _short_where(rec: RunRecord) -> str:
    name = os.path.basename(rec.source)
    return name if rec.location is None else f"{name}:{rec.location}"


def _first_error(rec: RunRecord, fmt: str, samples: RunSamples | None) -> str | None:
    if samples is not None and samples.errors:
        return _one_line(next(iter(samples.errors)))
    if fmt == "aiperf":
        summary = rec.values.get("error_summary")
        if isinstance(summary, list) and summary and isinstance(summary[0], dict):
            details = summary[0].get("error_details")
            if isinstance(details, dict) and details.get("message"):
                return _one_line(str(details["message"]))
    return None


def _one_line(text: str, limit: int = 500) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _latency_stats(ctx: BuildContext, rec: RunRecord) -> Stats | None:
    """``vllm bench latency``: seconds per iteration -> a Stats in ms."""
    values: dict[str, float] = {}
    keys: dict[str, str] = {}
    if rec.values.get("avg_latency") is not None:
        values["mean"] = _as_float(rec, "avg_latency", rec.values["avg_latency"]) * 1000.0
        keys["mean"] = "avg_latency"
    if rec.values.get("std_latency") is not None:
        values["std"] = _as_float(rec, "std_latency", rec.values["std_latency"]) * 1000.0
        keys["std"] = "std_latency"
    pct = rec.values.get("percentiles")
    if pct is not None and not isinstance(pct, dict):
        raise AdapterError(
            f'{rec.where("percentiles")}: expected an object like {{"50": seconds}}, got {_type_name(pct)}'
        )
    for p, v in (pct or {}).items():
        try:
            q = float(p)
        except ValueError:
            raise AdapterError(
                f'{rec.where("percentiles")}: expected percentile keys like "50", got {p!r}'
            ) from None
        stat = _pkey(q)
        values[stat] = _as_float(rec, f"percentiles.{p}", v) * 1000.0
        keys[stat] = f"percentiles.{p}"
    fs = _FileStats(values, keys) if values else None
    lat = rec.floats("latencies")
    st, _ = _stats(ctx, rec, "latency", fs, lat, sample_unit="s")
    if st is not None and lat:
        st = st.model_copy(update={"samples": _ms_list(lat)} if len(lat) <= ctx.inline_max else {})
    return st


def _param_text(val: Any) -> str:
    """A parameter value as text; an integral float is written as the integer (a writer
    that stores 8 as 8.0 names the same run)."""
    if isinstance(val, float) and val.is_integer() and abs(val) < 2**53:
        return str(int(val))
    return str(val)


def _sweep_failure(rec: RunRecord, ctx: BuildContext) -> EvidencePacket:
    v = rec.values
    error = _one_line(f"{v.get('error_type') or 'error'}: {v.get('error') or ''}")
    for key in ("serve_overrides", "bench_overrides"):
        if v.get(key) is not None and not isinstance(v[key], dict):
            raise AdapterError(f"{rec.where(key)}: expected an object, got {_type_name(v[key])}")
    overrides = {**(v.get("serve_overrides") or {}), **(v.get("bench_overrides") or {})}
    desc = " ".join(f"{k}={_param_text(val)}" for k, val in overrides.items())
    settings = {k: val for k, val in overrides.items() if isinstance(val, (str, int, float, bool))}
    name = f"sweep run {_param_text(v.get('run_number'))}" + (f" {desc}" if desc else "")
    packet = start_packet(
        subject_kind="serving",
        subject_name=name,
        description=f"vllm bench sweep serve failure {_short_where(rec)}",
        status=Status.ERROR,
        created_at=ctx.created_at,
        failure=Failure(failure_class=FailureClass.RUNTIME_ERROR, message=error),
        task=Task(workload="vllm bench sweep serve", description=desc or None),
        timing=Timing(method="serving_client"),
        extensions={
            "vllm:raw": _raw_extension(rec, "sweep_failure", {"settings": settings} if settings else {})
        },
    )
    return packet.with_id()
