"""The vLLM adapter's mapping table (``adapters/vllm.toml``) as lookup structures.

The table is data: which source keys (old and new spellings, per output kind) fill which
packet field, in which unit. This module turns it into per-format lists once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..._resources import load_toml

__all__ = ["FORMATS", "LIST_PICKS", "FieldSource", "Mapping", "StatsSource", "mapping"]

DEFAULT_FORMATS = ("serve", "sglang")
FORMATS = ("serve", "sglang", "latency", "throughput", "inferencex", "aiperf", "sglang_offline")

_STAT = r"(?P<stat>mean|median|std|min|max|p\d+(?:\.\d+)?)"


@dataclass(frozen=True)
class FieldSource:
    """One source key for a packet field."""

    key: str
    unit: str | None
    note: str | None
    pick: str | None = None  # a list-valued source: which of LIST_PICKS takes the value


@dataclass(frozen=True)
class StatsSource:
    """Where one latency metric's statistics come from in one format."""

    template: str | None  # "{stat}_ttft_ms"
    regex: re.Pattern[str] | None
    obj: str | None  # AIPerf metric object name
    unit: str | None


@dataclass(frozen=True)
class Mapping:
    """Lookups for one output format."""

    fields: dict[str, tuple[FieldSource, ...]]
    stats: dict[str, tuple[StatsSource, ...]]
    units: dict[str, tuple[str, float]]
    vendors: dict[str, tuple[re.Pattern[str], ...]]

    def consumed_keys(self) -> set[str]:
        """Top-level source keys read by a field mapping (for settings/raw bookkeeping)."""
        return {s.key.split(".", 1)[0] for sources in self.fields.values() for s in sources}

    def is_stats_key(self, key: str) -> bool:
        """Is ``key`` one of the summary-statistic keys this format maps?"""
        return any(s.regex is not None and s.regex.match(key) for ss in self.stats.values() for s in ss)


def _first_model_name(items: list[Any]) -> Any:
    first = items[0] if items else None
    return first.get("name") if isinstance(first, dict) else first


def _measured_concurrency(phases: list[Any]) -> Any:
    """The concurrency of the phases that count (not ``exclude_from_results``, e.g. not the
    warm-up) when they agree; ``None`` otherwise."""
    found = {
        ph.get("concurrency")
        for ph in phases
        if isinstance(ph, dict) and not ph.get("exclude_from_results") and ph.get("concurrency") is not None
    }
    return found.pop() if len(found) == 1 else None


#: how one value is taken from a list-valued source (``pick = "..."`` in vllm.toml)
LIST_PICKS = {
    "first_name": _first_model_name,
    "measured_concurrency": _measured_concurrency,
}


def _formats_of(entry: dict[str, Any]) -> tuple[str, ...]:
    return tuple(entry.get("formats", DEFAULT_FORMATS))


def _reads(entry: dict[str, Any], fmt: str, base: str | None) -> bool:
    """Whether a source applies to ``fmt`` (or to the kind ``fmt`` is read like)."""
    formats = _formats_of(entry)
    return fmt in formats or (base is not None and base in formats)


@cache
def mapping(fmt: str) -> Mapping:
    """The lookups for output format ``fmt`` (one of :data:`FORMATS`)."""
    table = load_toml("vllm.toml")
    base = table.get("read_like", {}).get(fmt)
    fields: dict[str, tuple[FieldSource, ...]] = {}
    for path, spec in table.get("fields", {}).items():
        chosen = tuple(
            FieldSource(src["key"], src.get("unit"), src.get("note"), src.get("pick"))
            for src in spec.get("sources", [])
            if _reads(src, fmt, base)
        )
        if chosen:
            fields[path] = chosen
    stats: dict[str, tuple[StatsSource, ...]] = {}
    for metric, spec in table.get("stats", {}).items():
        chosen_stats = []
        for src in spec.get("sources", []):
            if not _reads(src, fmt, base):
                continue
            template = src.get("template")
            regex = None
            if template:
                head, _, tail = template.partition("{stat}")
                regex = re.compile("^" + re.escape(head) + _STAT + re.escape(tail) + "$")
            chosen_stats.append(StatsSource(template, regex, src.get("object"), src.get("unit")))
        if chosen_stats:
            stats[metric] = tuple(chosen_stats)
    units = {k: (v[0], float(v[1])) for k, v in table.get("units", {}).items()}
    vendors = {
        name: tuple(re.compile(p, re.IGNORECASE) for p in patterns)
        for name, patterns in table.get("vendors", {}).items()
    }
    return Mapping(fields, stats, units, vendors)


def format_descriptions() -> dict[str, str]:
    """Output kind -> description, from the table."""
    return dict(load_toml("vllm.toml").get("formats", {}))
