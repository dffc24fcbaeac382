"""Reading a GuideLLM report (``benchmarks.json`` / ``.yaml``) into benchmarks, any version.

GuideLLM 0.3 writes ``{"benchmarks": [...]}``, each benchmark with ``args`` (profile and
strategy), ``run_stats``, ``worker`` (backend and model), ``request_loader`` (data) and
``request_totals``. From 0.4 the report adds ``metadata`` and ``args`` (0.4-0.6) or ``config``
(0.7+) at the top, and each benchmark has ``config`` (strategy, backend, requests),
``scheduler_state``, ``scheduler_metrics`` and ``metrics.request_totals``. Every key is read
as optional; :class:`Benchmark` is what the packet builder needs, found wherever the
version put it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ...errors import AdapterError

__all__ = ["Benchmark", "Dist", "parse_report"]

WHAT = "a GuideLLM benchmarks report (`guidellm benchmark --output-path benchmarks.json|.yaml`)"

#: the most benchmarks read from one report
MAX_BENCHMARKS = 10_000

#: keys whose values are never copied into a packet (credentials a report may hold)
_SECRET = re.compile(r"api[_-]?key|authori[sz]ation|token$|secret|password|headers|cookie", re.IGNORECASE)

_ANY = msgspec.json.Decoder()
#: the request statuses of a StatusDistributionSummary
_STATUSES = frozenset({"successful", "errored", "incomplete", "total"})


def _kind(x: Any) -> str:
    if x is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}.get(
        type(x), "an object"
    )


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def number(x: Any) -> float | None:
    """A finite number, else None (a boolean is not a number)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    f = float(x)
    return f if math.isfinite(f) else None


@dataclass
class Dist:
    """One status of one GuideLLM distribution summary (``metrics.<name>.successful``)."""

    mean: float | None = None
    median: float | None = None
    std: float | None = None
    min: float | None = None
    max: float | None = None
    count: int | None = None
    total_sum: float | None = None
    #: GuideLLM's keys (``p001``, ``p99``) -> value
    percentiles: dict[str, float] = field(default_factory=dict)


def _dist(x: Any) -> Dist | None:
    if not isinstance(x, dict):
        return None
    pct = x.get("percentiles")
    count = number(x.get("count"))
    return Dist(
        mean=number(x.get("mean")),
        median=number(x.get("median")),
        std=number(x.get("std_dev")),
        min=number(x.get("min")),
        max=number(x.get("max")),
        count=int(count) if count is not None and count >= 0 and count.is_integer() else None,
        total_sum=number(x.get("total_sum")),
        percentiles={k: v for k, val in pct.items() if (v := number(val)) is not None}
        if isinstance(pct, dict)
        else {},
    )


@dataclass
class Benchmark:
    """What one benchmark (one rate or concurrency step) of a report says."""

    index: int
    raw: dict[str, Any]
    report: dict[str, Any]
    #: GuideLLM's version where the report says it (``metadata.guidellm_version``, 0.5+)
    version: str | None
    #: the report layout: ``0.2-0.3``, ``0.4-0.6`` or ``0.7+``
    layout: str
    metrics: dict[str, dict[str, Dist]] = field(default_factory=dict)

    def dist(self, name: str, status: str = "successful") -> Dist | None:
        return self.metrics.get(name, {}).get(status)

    @property
    def where(self) -> str:
        return f"benchmarks[{self.index}]"

    def totals(self) -> dict[str, int]:
        """successful / errored / incomplete / total request counts."""
        t = _get(self.raw, "metrics", "request_totals") or self.raw.get("request_totals")
        if not isinstance(t, dict):
            state = self.raw.get("scheduler_state")
            if isinstance(state, dict):
                t = {
                    "successful": state.get("successful_requests"),
                    "errored": state.get("errored_requests"),
                    "incomplete": state.get("cancelled_requests"),
                }
        out: dict[str, int] = {}
        if isinstance(t, dict):
            for k in ("successful", "errored", "incomplete", "total"):
                v = number(t.get(k))
                if v is not None and v >= 0 and v.is_integer():
                    out[k] = int(v)
        return out

    def times(self) -> tuple[float | None, float | None, float | None]:
        """(start, end, duration) in seconds (epoch for start and end)."""
        start = number(self.raw.get("start_time"))
        end = number(self.raw.get("end_time"))
        sm = self.raw.get("scheduler_metrics")
        if start is None and isinstance(sm, dict):
            start = number(sm.get("measure_start_time"))
            end = number(sm.get("measure_end_time"))
        dur = number(self.raw.get("duration"))
        if dur is None and start is not None and end is not None:
            dur = end - start
        return start, end, dur

    def strategy(self) -> dict[str, Any]:
        s = _get(self.raw, "config", "strategy") or _get(self.raw, "args", "strategy")
        return s if isinstance(s, dict) else {}

    def profile(self) -> dict[str, Any]:
        p = _get(self.raw, "config", "profile") or _get(self.raw, "args", "profile")
        return p if isinstance(p, dict) else {}

    def backend(self) -> dict[str, Any]:
        """The backend's settings, credentials left out: 0.3 ``worker``, 0.4+ ``config.backend``."""
        b = _get(self.raw, "config", "backend")
        if not isinstance(b, dict):
            w = self.raw.get("worker")
            b = {}
            if isinstance(w, dict):
                b = {k.removeprefix("backend_"): v for k, v in w.items() if k.startswith("backend_")}
                info = w.get("backend_info")
                if isinstance(info, dict):
                    b.update(info)
                b.pop("info", None)
        return {k: v for k, v in b.items() if not _SECRET.search(str(k))}

    def model(self) -> str | None:
        for v in (
            self.backend().get("model"),
            _get(self.report, "args", "model"),
            _get(self.report, "config", "model"),
            _get(self.raw, "config", "requests", "model"),
        ):
            if isinstance(v, str) and v.strip():
                return v.strip()
        return None

    def data(self) -> str | None:
        """The data argument (a synthetic spec ``prompt_tokens=256,output_tokens=128``, a file
        or a dataset name)."""
        for v in (
            _get(self.raw, "request_loader", "data"),
            _get(self.raw, "config", "requests", "data"),
            _get(self.report, "args", "data"),
            _get(self.report, "config", "data"),
        ):
            if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
                return ";".join(v)
            if isinstance(v, str) and v.strip():
                return v.strip()
        return None


def _decode_yaml(path: str, data: bytes) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(data, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise AdapterError(f"{path}: not valid YAML{where} ({problem}); expected {WHAT}") from None
    except RecursionError:
        raise AdapterError(f"{path}: YAML nested too deeply; expected {WHAT}") from None


def parse_report(path: str, data: bytes) -> list[Benchmark]:
    """The benchmarks of one report file (JSON, or YAML when the name says so)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if path.lower().endswith((".yaml", ".yml")):
        doc = _decode_yaml(path, data)
    else:
        try:
            doc = _ANY.decode(data)
        except msgspec.DecodeError as exc:
            raise AdapterError(f"{path}: not valid JSON ({exc}); expected {WHAT}") from None
        except RecursionError:
            raise AdapterError(f"{path}: JSON nested too deeply; expected {WHAT}") from None
    if not isinstance(doc, dict):
        raise AdapterError(
            f"{path}: top level is {_kind(doc)}, not an object with `benchmarks`; expected {WHAT}"
        )
    items = doc.get("benchmarks")
    if not isinstance(items, list):
        raise AdapterError(f"{path}: no `benchmarks` array (got {_kind(items)}); expected {WHAT}")
    if not items:
        raise AdapterError(f"{path}: `benchmarks` is empty; expected {WHAT} with at least one benchmark")
    if len(items) > MAX_BENCHMARKS:  # a YAML alias bomb repeats one benchmark without bytes
        raise AdapterError(
            f"{path}: {len(items)} benchmarks, more than the {MAX_BENCHMARKS} one report can hold "
            f"(a sweep writes about ten); expected {WHAT}"
        )
    version, layout = _version(doc)
    out: list[Benchmark] = []
    for i, b in enumerate(items):
        if not isinstance(b, dict):
            raise AdapterError(
                f"{path}: benchmarks[{i}] is {_kind(b)}, not a benchmark object; expected {WHAT}"
            )
        metrics = b.get("metrics")
        if not isinstance(metrics, dict):
            raise AdapterError(f"{path}: benchmarks[{i}] has no `metrics` object; expected {WHAT}")
        parsed: dict[str, dict[str, Dist]] = {}
        for name, by_status in metrics.items():
            if isinstance(by_status, dict):
                parsed[name] = {
                    s: d for s, v in by_status.items() if s in _STATUSES and (d := _dist(v)) is not None
                }
        out.append(Benchmark(i, b, doc, version, layout, parsed))
    return out


def _version(doc: dict[str, Any]) -> tuple[str | None, str]:
    """(GuideLLM's version where the report says it, the report layout)."""
    meta = doc.get("metadata")
    version = None
    if isinstance(meta, dict) and isinstance(meta.get("guidellm_version"), str):
        version = str(meta["guidellm_version"])
    if "config" in doc and "args" not in doc:
        return version, "0.7+"
    if "args" in doc or version is not None:
        return version, "0.4-0.6"
    return version, "0.2-0.3"
