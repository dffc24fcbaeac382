# ruff: noqa: E501  (SVG and HTML markup reads best one element per line)
"""A self-contained HTML report of an archive: inline CSS, inline SVG charts, no network.

The measurements first: kernel durations per device and operator, serving latency
percentiles and throughput per engine, version and device, and throughput against
concurrency, each with the packets' validation verdicts and evidence grades beside them.
Then the claims: speedup against the named baseline per device and operator (with the
packets' confidence intervals), speed-of-light fraction per device, the failure-class
histogram, the pass rate over time of candidate streams (runs), replays under the packets
they replay, and the strongest and weakest evidence with the reasons for their grades.
All numbers are computed with pyarrow from the typed columns; the ``packet`` column is
never read.

The page's Content-Security-Policy names the sha256 of its one stylesheet and two scripts
(:func:`content_security_policy`): nothing else may run or style the page, so text from a
packet that escaped its escaping still could not execute.
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .._version import __version__
from ..io import write_output
from .reader import parse_where, read_table

__all__ = ["build_report", "content_security_policy", "write_report"]

_COLUMNS = [
    "packet_id", "created_at", "measured_at", "status", "failure_class", "run_id",
    "parent_packet_id", "relation", "subject_kind", "operator", "workload", "subject_name",
    "device", "device_id", "dtype", "vendor", "baseline_provider", "baseline_version",
    "speedup", "speedup_low", "speedup_high", "sol_fraction", "sol_bound", "grade", "valid",
    "shape", "validation_verdict", "kernel_median_us", "engine", "engine_version", "model",
    "ttft_median_ms", "ttft_p99_ms", "tpot_median_ms", "tpot_p99_ms", "itl_median_ms",
    "itl_p99_ms", "e2el_median_ms", "e2el_p99_ms", "serving_output_tok_per_s",
    "serving_request_per_s", "serving_completed", "serving_failed", "serving_max_concurrency",
    "serving_request_rate",
]  # fmt: skip
_LATENCIES = ("ttft", "tpot", "itl", "e2el")
_LATENCY_NAMES = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2el": "end-to-end"}
#: rows of the replay table (originals, each with its replays)
_MAX_REPLAYS = 40
_PALETTE = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"]
_TOP = 12
#: the speedup axis spans at most 2**-20 to 2**20 (a millionfold either way), and the
#: speed-of-light axis at most 400%: a packet claiming more (the validator does not know
#: every device's peaks) is drawn at the edge, with its value, never on an axis of
#: millions of grid lines
_SPEEDUP_LOG2_MAX = 20
_SOL_MAX = 4.0
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _nice(peak: float) -> float:
    """A round axis maximum at or above ``peak`` (1, 1.5, 2, ... 8 times a power of ten)."""
    if peak <= 0:
        return 1.0
    mag = float(10.0 ** math.floor(math.log10(peak)))
    return next(m * mag for m in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0) if m * mag >= peak)


def _e(x: object) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{digits}g}"


def _ms(x: float | None) -> str:
    """Milliseconds: three significant digits, whole numbers from 100 on (``1,912``)."""
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _duration(us: float | None) -> str:
    """A kernel time given in microseconds, in the unit that reads best (ns to s)."""
    if us is None or not math.isfinite(us):
        return "–"
    for unit, scale in (("s", 1e6), ("ms", 1e3), ("µs", 1.0)):
        if us >= scale:
            return f"{us / scale:.3g} {unit}"
    return f"{us * 1e3:.3g} ns"


def _cut(text: Any) -> str:
    """A name shown whole up to the cell's width, then cut with an ellipsis (CSS); the
    whole name stays in the title (shown on hover) and in the page's text."""
    t = _e(text if text is not None else "–")
    return f'<span class="cut" title="{t}">{t}</span>'


def _counted(pairs: Sequence[tuple[Any, int]]) -> str:
    return " ".join(f"{_e(v)}&nbsp;×{c}" for v, c in pairs) or "–"


# -- aggregation -------------------------------------------------------------------------


def _grouped(table: pa.Table, keys: list[str], value: str) -> list[dict[str, Any]]:
    """Per group of ``keys``: count, median, quartiles of ``value`` (nulls dropped)."""
    t = table.filter(pc.is_valid(table[value]))
    if t.num_rows == 0:
        return []
    g = t.group_by(keys).aggregate(
        [
            (value, "count"),
            (value, "approximate_median"),
            (value, "tdigest", pc.TDigestOptions(q=[0.25, 0.75])),
        ]
    )
    rows = g.to_pylist()
    out = []
    for r in rows:
        q = r[f"{value}_tdigest"] or [None, None]
        out.append(
            {
                **{k: r[k] for k in keys},
                "n": r[f"{value}_count"],
                "median": r[f"{value}_approximate_median"],
                "q1": q[0],
                "q3": q[1],
            }
        )
    return out


def _speedup_rows(table: pa.Table) -> list[dict[str, Any]]:
    t = table.filter(pc.and_(pc.equal(table["valid"], True), pc.is_valid(table["speedup"])))
    if t.num_rows == 0:
        return []
    # a serving packet has a workload (its model) where a kernel packet has an operator
    what = pc.coalesce(t["operator"], t["workload"])
    t = t.set_column(t.schema.get_field_index("operator"), "operator", what)
    keys = ["device", "operator", "baseline_provider", "baseline_version"]
    base = {tuple(r[k] for k in keys): r for r in _grouped(t, keys, "speedup")}
    ci = t.filter(pc.is_valid(t["speedup_low"]))
    bounds: dict[tuple[Any, ...], dict[str, Any]] = {}
    if ci.num_rows:
        g = ci.group_by(keys).aggregate(
            [
                ("speedup_low", "approximate_median"),
                ("speedup_high", "approximate_median"),
                ("speedup_low", "count"),
            ]
        )
        for r in g.to_pylist():
            bounds[tuple(r[k] for k in keys)] = r
    rows = []
    for key, r in base.items():
        b = bounds.get(key)
        r["low"] = b["speedup_low_approximate_median"] if b else None
        r["high"] = b["speedup_high_approximate_median"] if b else None
        r["n_ci"] = b["speedup_low_count"] if b else 0
        rows.append(r)
    rows.sort(key=lambda r: (str(r["device"]), str(r["operator"]), str(r["baseline_provider"])))
    return rows


def _counts(table: pa.Table, column: str) -> list[tuple[Any, int]]:
    t = table.filter(pc.is_valid(table[column]))
    if t.num_rows == 0:
        return []
    vc = pc.value_counts(t[column]).to_pylist()
    return sorted(((d["values"], d["counts"]) for d in vc), key=lambda x: (-x[1], str(x[0])))


_Series = dict[str, list[tuple[int, float, int]]]


def _pass_rate_series(table: pa.Table, bins: int = 24) -> tuple[list[str], str, int, _Series]:
    """Pass rate per time bin of the six largest runs, by when each packet was measured
    (``measured_at``, else ``created_at``); the tick labels and their caption."""
    if table.num_rows == 0:
        return [], "", 1, {}
    when = pc.coalesce(table["measured_at"], table["created_at"])
    table = table.set_column(table.schema.get_field_index("created_at"), "created_at", when)
    t = table.filter(
        pc.and_(
            pc.is_valid(table["created_at"]),
            pc.is_in(table["status"], pa.array(["passed", "failed", "error"])),
        )
    )
    if t.num_rows == 0:
        return [], "", 1, {}
    runs = t["run_id"].fill_null("(no run id)")
    t = t.set_column(t.schema.get_field_index("run_id"), "run_id", runs)
    top = [r for r, _ in _counts(t, "run_id")[:6]]
    t = t.filter(pc.is_in(t["run_id"], pa.array(top)))
    micros = pc.cast(t["created_at"], pa.int64())
    lo_v, hi_v = pc.min(micros).as_py(), pc.max(micros).as_py()
    span = max(hi_v - lo_v, 1)
    # no more bins than distinct times: a short run of a few packets is a few points
    distinct = pc.count_distinct(micros).as_py()
    nb = min(bins, distinct) if hi_v > lo_v else 1
    idx = pc.min_element_wise(pc.divide(pc.multiply(pc.subtract(micros, lo_v), nb), span), nb - 1)
    t = t.append_column("bin", pc.cast(idx, pa.int64()))
    t = t.append_column("ok", pc.cast(pc.equal(t["status"], "passed"), pa.int64()))
    g = t.group_by(["run_id", "bin"]).aggregate([("ok", "sum"), ("ok", "count")]).to_pylist()
    series: dict[str, list[tuple[int, float, int]]] = {r: [] for r in top}
    for r in sorted(g, key=lambda r: r["bin"]):
        series[r["run_id"]].append((r["bin"], r["ok_sum"] / r["ok_count"], r["ok_count"]))
    labels, caption = _time_labels(lo_v, hi_v, 4)
    return labels, caption, nb, series


def _evidence_rows(
    root: str | os.PathLike[str], table: pa.Table, where: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The strongest and the weakest graded packets: two lists that never share a packet
    (with fewer than ``2 * _TOP`` graded packets, the strongest half and the rest)."""
    if table.num_rows == 0:
        return [], []
    t = table.filter(pc.is_valid(table["grade"]))
    if t.num_rows == 0:
        return [], []
    t = t.append_column("gkey", pc.utf8_lower(t["grade"]))
    n_best = min(_TOP, (t.num_rows + 1) // 2)
    best = t.sort_by([("gkey", "ascending"), ("created_at", "descending")]).slice(0, n_best)
    rest = t.filter(pc.invert(pc.is_in(t["packet_id"], best["packet_id"].combine_chunks())))
    worst = rest.sort_by([("gkey", "descending"), ("created_at", "descending")]).slice(0, _TOP)
    ids = pa.concat_arrays([best["packet_id"].combine_chunks(), worst["packet_id"].combine_chunks()])
    expr = pc.field("packet_id").isin(ids)
    if where is not None:
        expr = expr & where
    reasons = {
        r["packet_id"]: r["grade_reasons"] or []
        for r in read_table(root, ["packet_id", "grade_reasons"], expr).to_pylist()
    }

    def rows(part: pa.Table) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = part.drop_columns(["gkey"]).to_pylist()
        for r in out:
            r["reasons"] = reasons.get(r["packet_id"], [])
        return out

    return rows(best), rows(worst)


def _with_dev(t: pa.Table) -> pa.Table:
    """``dev``: the canonical device id, else the device string the tool wrote."""
    return t.append_column("dev", pc.coalesce(t["device_id"], t["device"]))


def _tally(t: pa.Table, keys: list[str], column: str) -> dict[tuple[Any, ...], list[tuple[str, int]]]:
    """Per group of ``keys``: each value of ``column`` with its count (nulls left out)."""
    t = t.filter(pc.is_valid(t[column]))
    if t.num_rows == 0:
        return {}
    out: dict[tuple[Any, ...], list[tuple[str, int]]] = {}
    for r in t.group_by([*keys, column]).aggregate([("packet_id", "count")]).to_pylist():
        out.setdefault(tuple(r[k] for k in keys), []).append((r[column], r["packet_id_count"]))
    for v in out.values():
        v.sort(key=lambda x: (-x[1], str(x[0])))
    return out


def _judged(t: pa.Table, keys: list[str], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adds each group's grades, validation verdicts and third-party verdicts (value:
    count) to its row."""
    grades, verdicts = _tally(t, keys, "grade"), _tally(t, keys, "validation_verdict")
    third = _tally(t, keys, "third_party") if "third_party" in t.column_names else {}
    for r in rows:
        key = tuple(r[k] for k in keys)
        r["grades"] = sorted(grades.get(key, []), key=lambda x: str(x[0]))
        r["verdicts"] = verdicts.get(key, [])
        r["third_party"] = third.get(key, [])
    return rows


def _quantile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile of sorted ``values``, interpolated between the two nearest (the
    median of two values is their mean, as DuckDB's ``median``)."""
    if not values:
        return None
    at = (len(values) - 1) * q
    lo = math.floor(at)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (at - lo)


def _exact(t: pa.Table, keys: list[str], cols: list[str]) -> dict[tuple[Any, ...], dict[str, list[float]]]:
    """Per group, each column's non-null values, sorted (for exact medians: the groups of
    a report are measurements of one device and operator, or one engine version, and
    their lists together hold each packet's value once)."""
    g = t.group_by(keys).aggregate([(c, "list") for c in cols]).to_pylist()
    return {
        tuple(r[k] for k in keys): {c: sorted(v for v in r[f"{c}_list"] if v is not None) for c in cols}
        for r in g
    }


def _kernel_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Kernel durations (``kernel_median_us``) per device and operator: the median, the
    quartiles and the fastest of the packets' medians."""
    t = table.filter(pc.is_valid(table["kernel_median_us"])) if table.num_rows else table
    if t.num_rows == 0:
        return []
    t = _with_dev(t)
    keys = ["dev", "operator"]
    dtypes = _tally(t, keys, "dtype")
    rows = []
    for key, v in _exact(t, keys, ["kernel_median_us", "sol_fraction"]).items():
        times = v["kernel_median_us"]
        rows.append(
            {
                "dev": key[0],
                "operator": key[1],
                "n": len(times),
                "median": _quantile(times, 0.5),
                "q1": _quantile(times, 0.25),
                "q3": _quantile(times, 0.75),
                "best": times[0],
                "sol": _quantile(v["sol_fraction"], 0.5),
                "dtypes": [d for d, _ in dtypes.get(key, [])],
            }
        )
    rows.sort(key=lambda r: (str(r["dev"]), str(r["operator"])))
    return _judged(t, keys, rows)


_SERVING_VALUES = [f"{k}_{s}_ms" for k in _LATENCIES for s in ("median", "p99")] + [
    "serving_output_tok_per_s",
    "serving_request_per_s",
]


def _serving_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Serving latency percentiles and throughput per engine, version and device (the
    median over the group's runs of each run's figure)."""
    t = table.filter(pc.equal(table["subject_kind"], "serving")) if table.num_rows else table
    if t.num_rows == 0:
        return []
    t = _with_dev(t)
    keys = ["engine", "engine_version", "dev"]
    aggs: list[Any] = [("packet_id", "count"), ("serving_completed", "sum"), ("serving_failed", "sum")]
    models = _tally(t, keys, "model")
    values = _exact(t, keys, _SERVING_VALUES)
    rows = []
    for r in t.group_by(keys).aggregate(aggs).to_pylist():
        row = {k: r[k] for k in keys}
        row.update({c: _quantile(v, 0.5) for c, v in values[tuple(r[k] for k in keys)].items()})
        row["n"] = r["packet_id_count"]
        row["completed"], row["failed"] = r["serving_completed_sum"], r["serving_failed_sum"]
        row["models"] = [m for m, _ in models.get(tuple(r[k] for k in keys), [])]
        rows.append(row)
    rows.sort(key=lambda r: (str(r["engine"]), str(r["engine_version"]), str(r["dev"])))
    return _judged(t, keys, rows)


def _concurrency_series(table: pa.Table) -> dict[str, list[tuple[int, float, int]]]:
    """Output throughput against ``serving_max_concurrency``: per engine, version and
    device, the median tok/s of the runs at each concurrency (the eight largest series)."""
    if table.num_rows == 0:
        return {}
    t = table.filter(
        pc.and_(pc.is_valid(table["serving_max_concurrency"]), pc.is_valid(table["serving_output_tok_per_s"]))
    )
    if t.num_rows == 0:
        return {}
    t = _with_dev(t)
    keys = ["engine", "engine_version", "dev", "serving_max_concurrency"]
    g = t.group_by(keys).aggregate(
        [("serving_output_tok_per_s", "approximate_median"), ("serving_output_tok_per_s", "count")]
    )
    series: dict[str, list[tuple[int, float, int]]] = {}
    for r in g.to_pylist():
        name = f"{r['engine'] or '?'} {r['engine_version'] or ''} · {r['dev'] or '?'}"
        series.setdefault(name, []).append(
            (
                r["serving_max_concurrency"],
                r["serving_output_tok_per_s_approximate_median"],
                r["serving_output_tok_per_s_count"],
            )
        )
    largest = sorted(series, key=lambda k: (-sum(c for _, _, c in series[k]), k))[: len(_PALETTE)]
    return {k: sorted(series[k]) for k in sorted(largest)}


def _replay_groups(table: pa.Table) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Packets with ``relation = replay`` under the packet they replay (the newest
    :data:`_MAX_REPLAYS` replays); an original the archive (or ``--where``) lacks is shown
    by its id alone."""
    if table.num_rows == 0:
        return []
    t = table.filter(pc.and_(pc.equal(table["relation"], "replay"), pc.is_valid(table["parent_packet_id"])))
    if t.num_rows == 0:
        return []
    t = t.sort_by([("created_at", "descending")]).slice(0, _MAX_REPLAYS)
    children: dict[str, list[dict[str, Any]]] = {}
    for r in t.to_pylist():
        children.setdefault(r["parent_packet_id"], []).append(r)
    originals = table.filter(pc.is_in(table["packet_id"], pa.array(list(children), pa.string())))
    known = {r["packet_id"]: r for r in originals.to_pylist()}
    return [(known.get(pid, {"packet_id": pid, "missing": True}), kids) for pid, kids in children.items()]


def _time_labels(lo: int, hi: int, ticks: int) -> tuple[list[str], str]:
    """Tick labels (UTC) for microseconds ``lo`` to ``hi`` and the axis caption: the date
    once in the caption when the span is within a day, and as fine a clock as the span
    needs (a run of seconds shows seconds, of milliseconds milliseconds)."""

    def at(us: int) -> datetime:
        return _EPOCH + timedelta(microseconds=us)

    def day(d: datetime) -> str:
        return f"{d.year:04d}-{d:%m-%d}"  # %Y does not pad years before 1000

    span = hi - lo
    first, last = at(lo), at(hi)
    if span >= 2 * 86_400_000_000:
        clock, caption = "date", "UTC"
    elif span >= 3_600_000_000 or first.date() != last.date():
        clock, caption = "%m-%d %H:%M", f"UTC, {first.year:04d}"
    else:
        clock = "%H:%M" if span >= 120_000_000 else "%H:%M:%S" if span >= 2_000_000 or span == 0 else "ms"
        caption = f"UTC, {day(first)}"

    def fmt(d: datetime) -> str:
        if clock == "date":
            return day(d)
        if clock == "ms":
            return f"{d:%H:%M:%S}.{d.microsecond // 1000:03d}"
        return format(d, clock)

    n = max(ticks, 1)
    labels = [fmt(at(lo + span * i // n)) for i in range(n + 1)] if span else [fmt(first)]
    return labels, caption


# -- SVG -------------------------------------------------------------------------------


def _svg(width: int, height: int, body: str, label: str) -> str:
    return (
        f'<svg class="kev-chart" role="img" aria-label="{_e(label)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">{body}</svg>'
    )


def _speedup_chart(rows: list[dict[str, Any]]) -> str:
    values = [v for r in rows for v in (r["median"], r["low"], r["high"], r["q1"], r["q3"]) if v]
    lo = min([*values, 0.5])
    hi = max([*values, 2.0])
    l2lo = max(math.floor(math.log2(lo)), -_SPEEDUP_LOG2_MAX) if lo > 0 else -_SPEEDUP_LOG2_MAX
    l2hi = min(math.ceil(math.log2(hi)), _SPEEDUP_LOG2_MAX)
    left, right, row_h, top = 420, 30, 26, 30
    width = 940
    plot_w = width - left - right
    height = top + row_h * len(rows) + 40

    def x(v: float) -> float:
        at = math.log2(v) if v > 0 else l2lo
        return left + (min(max(at, l2lo), l2hi) - l2lo) / max(l2hi - l2lo, 1) * plot_w

    parts = []
    for k in range(l2lo, l2hi + 1):
        v = 2.0**k
        xx = x(v)
        strong = " kev-ref" if k == 0 else ""
        parts.append(
            f'<line class="kev-grid{strong}" x1="{xx:.1f}" x2="{xx:.1f}" y1="{top - 8}" y2="{height - 30}"/>'
        )
        parts.append(
            f'<text class="kev-tick" x="{xx:.1f}" y="{height - 12}" text-anchor="middle">{_fmt(v)}×</text>'
        )
    for i, r in enumerate(rows):
        y = top + i * row_h + row_h / 2
        label = f"{r['device'] or '?'} · {r['operator'] or '?'} vs {r['baseline_provider'] or '?'} {r['baseline_version'] or ''}"
        parts.append(
            f'<text class="kev-label" x="{left - 10}" y="{y + 4:.1f}" text-anchor="end">{_e(_clip(label, 64))}</text>'
        )
        if r["q1"] is not None and r["q3"] is not None and r["n"] > 1:
            parts.append(
                f'<rect class="kev-iqr" x="{x(r["q1"]):.1f}" y="{y - 7:.1f}" width="{max(x(r["q3"]) - x(r["q1"]), 1):.1f}" height="14"/>'
            )
        if r["low"] is not None and r["high"] is not None:
            parts.append(
                f'<line class="kev-ci" x1="{x(r["low"]):.1f}" x2="{x(r["high"]):.1f}" y1="{y:.1f}" y2="{y:.1f}"/>'
            )
            for v in (r["low"], r["high"]):
                parts.append(
                    f'<line class="kev-ci" x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{y - 5:.1f}" y2="{y + 5:.1f}"/>'
                )
        cls = "kev-dot kev-win" if (r["median"] or 0) >= 1 else "kev-dot kev-loss"
        tip = f"{label}: median {_fmt(r['median'])}× over {r['n']} packets"
        parts.append(
            f'<circle class="{cls}" cx="{x(r["median"]):.1f}" cy="{y:.1f}" r="5"><title>{_e(tip)}</title></circle>'
        )
    parts.append(
        f'<text class="kev-axis" x="{left}" y="16">median speedup (log scale); bar: interquartile range; whiskers: confidence interval</text>'
    )
    return _svg(width, height, "".join(parts), "speedup against the named baseline per device and operator")


def _sol_chart(rows: list[dict[str, Any]]) -> str:
    left, right, row_h, top, width = 330, 60, 26, 30, 900
    plot_w = width - left - right
    hi = min(max([1.0, *[r["q3"] or 0 for r in rows], *[r["median"] or 0 for r in rows]]), _SOL_MAX)
    height = top + row_h * len(rows) + 40

    def x(v: float) -> float:
        return left + min(max(v, 0.0), hi) / hi * plot_w

    parts = []
    for k in range(0, int(math.ceil(hi * 4)) + 1):
        v = k / 4
        parts.append(
            f'<line class="kev-grid{" kev-ref" if v == 1 else ""}" x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{top - 8}" y2="{height - 30}"/>'
        )
        parts.append(
            f'<text class="kev-tick" x="{x(v):.1f}" y="{height - 12}" text-anchor="middle">{v:.0%}</text>'
        )
    for i, r in enumerate(rows):
        y = top + i * row_h + row_h / 2
        color = _PALETTE[i % len(_PALETTE)]
        label = f"{r['vendor'] or '?'} · {r['device'] or '?'}"
        parts.append(
            f'<text class="kev-label" x="{left - 10}" y="{y + 4:.1f}" text-anchor="end">{_e(_clip(label, 50))}</text>'
        )
        med = r["median"] or 0.0
        tip = f"{label}: median {med:.1%} of speed of light over {r['n']} packets"
        parts.append(
            f'<rect class="kev-bar" fill="{color}" x="{left}" y="{y - 8:.1f}" width="{max(x(med) - left, 1):.1f}" height="16"><title>{_e(tip)}</title></rect>'
        )
        if r["q1"] is not None and r["q3"] is not None and r["n"] > 1:
            parts.append(
                f'<line class="kev-ci" x1="{x(r["q1"]):.1f}" x2="{x(r["q3"]):.1f}" y1="{y:.1f}" y2="{y:.1f}"/>'
            )
        end = max(med, r["q3"] or 0.0) if r["n"] > 1 else med
        parts.append(f'<text class="kev-value" x="{x(end) + 6:.1f}" y="{y + 4:.1f}">{med:.0%}</text>')
    parts.append(
        f'<text class="kev-axis" x="{left}" y="16">median fraction of the speed of light; line: interquartile range</text>'
    )
    return _svg(width, height, "".join(parts), "speed-of-light fraction per device")


def _log_axis(values: list[float]) -> tuple[int, int]:
    """Decades (powers of ten) spanning the positive values, at most 12 of them."""
    pos = [v for v in values if v > 0 and math.isfinite(v)] or [1.0]
    lo = math.floor(math.log10(min(pos)))
    hi = max(math.ceil(math.log10(max(pos))), lo + 1)
    return max(lo, hi - 12), hi


def _kernel_chart(rows: list[dict[str, Any]]) -> str:
    """Median kernel time per device and operator, log scale, with the interquartile
    range of the packets' medians."""
    values = [v for r in rows for v in (r["median"], r["q1"], r["q3"]) if v is not None]
    d_lo, d_hi = _log_axis(values)
    left, right, row_h, top, width = 360, 70, 26, 30, 940
    plot_w = width - left - right
    height = top + row_h * len(rows) + 40

    def x(v: float) -> float:
        at = math.log10(v) if v > 0 else d_lo
        return left + (min(max(at, d_lo), d_hi) - d_lo) / (d_hi - d_lo) * plot_w

    parts = []
    for k in range(d_lo, d_hi + 1):
        xx = x(10.0**k)
        parts.append(
            f'<line class="kev-grid" x1="{xx:.1f}" x2="{xx:.1f}" y1="{top - 8}" y2="{height - 30}"/>'
        )
        parts.append(
            f'<text class="kev-tick" x="{xx:.1f}" y="{height - 12}" text-anchor="middle">{_duration(10.0**k)}</text>'
        )
    for i, r in enumerate(rows):
        y = top + i * row_h + row_h / 2
        label = f"{r['dev'] or '?'} · {r['operator'] or '?'}"
        parts.append(
            f'<text class="kev-label" x="{left - 10}" y="{y + 4:.1f}" text-anchor="end">{_e(_clip(label, 52))}<title>{_e(label)}</title></text>'
        )
        if r["q1"] is not None and r["q3"] is not None and r["n"] > 1:
            parts.append(
                f'<rect class="kev-iqr" x="{x(r["q1"]):.1f}" y="{y - 7:.1f}" width="{max(x(r["q3"]) - x(r["q1"]), 1):.1f}" height="14"/>'
            )
        tip = f"{label}: median {_duration(r['median'])} over {r['n']} packets"
        parts.append(
            f'<circle class="kev-dot kev-time" cx="{x(r["median"]):.1f}" cy="{y:.1f}" r="5"><title>{_e(tip)}</title></circle>'
        )
        parts.append(
            f'<text class="kev-value" x="{x(max(r["median"], r["q3"] or 0)) + 8:.1f}" y="{y + 4:.1f}">{_duration(r["median"])}</text>'
        )
    parts.append(
        f'<text class="kev-axis" x="{left}" y="16">median kernel time (log scale; shorter is faster); bar: interquartile range</text>'
    )
    return _svg(width, height, "".join(parts), "median kernel time per device and operator")


def _concurrency_chart(series: _Series) -> str:
    """Output tokens per second against the client's maximum concurrency (log2 scale)."""
    width, height, left, right, top, bottom = 900, 340, 70, 230, 24, 56
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [c for pts in series.values() for c, _, _ in pts]
    x_lo, x_hi = math.floor(math.log2(max(min(xs), 1))), math.ceil(math.log2(max(max(xs), 1)))
    x_hi = max(x_hi, x_lo + 1)
    y_hi = _nice(max([v for pts in series.values() for _, v, _ in pts] or [1.0]))

    def x(c: float) -> float:
        return left + (math.log2(max(c, 1)) - x_lo) / (x_hi - x_lo) * plot_w

    def y(v: float) -> float:
        return top + plot_h * (1 - v / y_hi)

    parts = []
    for k in range(5):
        v = y_hi * k / 4
        parts.append(
            f'<line class="kev-grid" x1="{left}" x2="{left + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
        )
        parts.append(
            f'<text class="kev-tick" x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:,.0f}</text>'
        )
    for k in range(x_lo, x_hi + 1):
        xx = x(2.0**k)
        parts.append(f'<line class="kev-grid" x1="{xx:.1f}" x2="{xx:.1f}" y1="{top}" y2="{top + plot_h}"/>')
        parts.append(
            f'<text class="kev-tick" x="{xx:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{2**k}</text>'
        )
    parts.append(
        f'<text class="kev-axis" x="{left + plot_w / 2:.1f}" y="{height - 12}" text-anchor="middle">maximum concurrent requests (log scale)</text>'
    )
    parts.append(
        f'<text class="kev-axis" x="{left}" y="14">output tokens per second (median of the runs)</text>'
    )
    for s, (name, pts) in enumerate(series.items()):
        color = _PALETTE[s % len(_PALETTE)]
        path = " ".join(f"{x(c):.1f},{y(v):.1f}" for c, v, _ in pts)
        parts.append(f'<polyline class="kev-line" stroke="{color}" points="{path}"/>')
        for c, v, n in pts:
            parts.append(
                f'<circle fill="{color}" cx="{x(c):.1f}" cy="{y(v):.1f}" r="4"><title>{_e(name)}: {v:,.0f} tok/s at concurrency {c} ({n} runs)</title></circle>'
            )
        ly = top + 14 + 20 * s
        parts.append(f'<rect fill="{color}" x="{width - right + 16}" y="{ly - 9}" width="12" height="12"/>')
        parts.append(
            f'<text class="kev-label" x="{width - right + 34}" y="{ly + 1}">{_e(_clip(name, 30))}<title>{_e(name)}</title></text>'
        )
    return _svg(width, height, "".join(parts), "output throughput against concurrency")


def _histogram(counts: Sequence[tuple[Any, int]], label: str) -> str:
    width, height, left, bottom, top = 900, 300, 50, 90, 20
    n = max(len(counts), 1)
    plot_w = width - left - 20
    bw = plot_w / n
    peak = _nice(max([c for _, c in counts] or [1]))
    plot_h = height - top - bottom
    parts = []
    for k in range(5):
        v = peak * k / 4
        yy = top + plot_h - plot_h * k / 4
        parts.append(f'<line class="kev-grid" x1="{left}" x2="{width - 20}" y1="{yy:.1f}" y2="{yy:.1f}"/>')
        parts.append(f'<text class="kev-tick" x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{v:g}</text>')
    for i, (name, c) in enumerate(counts):
        h = plot_h * c / peak
        xx = left + i * bw + bw * 0.15
        parts.append(
            f'<rect class="kev-bar" fill="{_PALETTE[i % len(_PALETTE)]}" x="{xx:.1f}" y="{top + plot_h - h:.1f}" width="{bw * 0.7:.1f}" height="{max(h, 1):.1f}"><title>{_e(name)}: {c}</title></rect>'
        )
        parts.append(
            f'<text class="kev-value" x="{xx + bw * 0.35:.1f}" y="{top + plot_h - h - 4:.1f}" text-anchor="middle">{c}</text>'
        )
        cx, cy = xx + bw * 0.35, top + plot_h + 14
        parts.append(
            f'<text class="kev-label" x="{cx:.1f}" y="{cy:.1f}" text-anchor="end" transform="rotate(-30 {cx:.1f} {cy:.1f})">{_e(name)}</text>'
        )
    return _svg(width, height, "".join(parts), label)


def _line_chart(labels: list[str], caption: str, nb: int, series: _Series) -> str:
    """Pass rate per time bin (``nb`` bins over the span), ticks at even times between the
    first and the last packet (one tick, at the middle, for a single time)."""
    width, height, left, right, top, bottom = 900, 320, 60, 190, 20, 60
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(b: float) -> float:
        return left + (b + 0.5) / nb * plot_w

    def y(v: float) -> float:
        return top + plot_h * (1 - v)

    parts = []
    for k in range(5):
        v = k / 4
        parts.append(
            f'<line class="kev-grid" x1="{left}" x2="{left + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
        )
        parts.append(
            f'<text class="kev-tick" x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.0%}</text>'
        )
    ticks = len(labels) - 1
    for i, text in enumerate(labels):
        xx = left + (i / ticks if ticks else 0.5) * plot_w
        anchor = "middle" if 0 < i < ticks or not ticks else ("start" if i == 0 else "end")
        parts.append(
            f'<line class="kev-grid" x1="{xx:.1f}" x2="{xx:.1f}" y1="{top + plot_h}" y2="{top + plot_h + 5}"/>'
            f'<text class="kev-tick" x="{xx:.1f}" y="{height - bottom + 18}" text-anchor="{anchor}">{_e(text)}</text>'
        )
    parts.append(
        f'<text class="kev-axis" x="{left + plot_w / 2:.1f}" y="{height - bottom + 38}" text-anchor="middle">time measured ({_e(caption)})</text>'
    )
    for s, (name, pts) in enumerate(series.items()):
        color = _PALETTE[s % len(_PALETTE)]
        if not pts:
            continue
        path = " ".join(f"{x(b):.1f},{y(v):.1f}" for b, v, _ in pts)
        parts.append(f'<polyline class="kev-line" stroke="{color}" points="{path}"/>')
        for b, v, c in pts:
            parts.append(
                f'<circle fill="{color}" cx="{x(b):.1f}" cy="{y(v):.1f}" r="3.5"><title>{_e(name)}: {v:.0%} of {c} passed</title></circle>'
            )
        ly = top + 14 + 20 * s
        parts.append(f'<rect fill="{color}" x="{width - right + 16}" y="{ly - 9}" width="12" height="12"/>')
        parts.append(
            f'<text class="kev-label" x="{width - right + 34}" y="{ly + 1}">{_e(_clip(name, 24))}<title>{_e(name)}</title></text>'
        )
    return _svg(width, height, "".join(parts), "pass rate over time per run")


# -- page ------------------------------------------------------------------------------

_CSS = """
:root{--fg:#111827;--muted:#6b7280;--line:#e5e7eb;--bg:#fff;--card:#f9fafb}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:980px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.sub{color:var(--muted);margin:0 0 16px}
.tiles{display:flex;flex-wrap:wrap;gap:12px}.tile{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px;min-width:120px}
.tile b{display:block;font-size:20px}.tile span{color:var(--muted);font-size:12px}
table{border-collapse:collapse;width:100%;font-size:13px;margin:8px 0}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--card);font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.g{display:inline-block;min-width:22px;text-align:center;border-radius:4px;font-weight:700;color:#fff}
.gA{background:#059669}.gB{background:#65a30d}.gC{background:#d97706}.gD{background:#ea580c}.gE,.gF{background:#dc2626}
code{font-size:12px;color:var(--muted)}ul.r{margin:0;padding-left:16px;min-width:240px}.empty{color:var(--muted);font-style:italic}
svg.kev-chart{display:block;max-width:100%;height:auto;margin:8px 0}
.kev-grid{stroke:#e5e7eb;stroke-width:1}.kev-ref{stroke:#111827;stroke-dasharray:4 3}
.kev-tick,.kev-axis{fill:#6b7280;font-size:11px}.kev-label{fill:#111827;font-size:12px}.kev-value{fill:#374151;font-size:11px}
.kev-iqr{fill:#bfdbfe}.kev-ci{stroke:#1f2937;stroke-width:1.5}.kev-dot{stroke:#fff;stroke-width:1.5}
.kev-win{fill:#059669}.kev-loss{fill:#dc2626}.kev-line{fill:none;stroke-width:2}
footer{color:var(--muted);font-size:12px;margin-top:40px}
.scroll{overflow-x:auto}table.wide{font-size:12px}table.wide .cut,table.ev .cut{max-width:16ch}
.cut{display:inline-block;max-width:26ch;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;vertical-align:bottom}
tr.orig td{background:#f3f4f6}tr.child td:first-child{padding-left:28px}.rel{color:var(--muted);font-size:12px}
.kev-time{fill:#2563eb}.tp{font-weight:600}.tp-hacked,.tp-retracted,.tp-drifted{color:#dc2626}.tp-confirmed,.tp-reproduced{color:#059669}
"""

_HEAD_JS = "window.__kevErrors=[];window.addEventListener('error',function(e){window.__kevErrors.push(String(e.message))});"
_TAIL_JS = """(function(){var c=document.querySelectorAll('svg.kev-chart'),w=1e9;
for(var i=0;i<c.length;i++){var r=c[i].getBoundingClientRect();w=Math.min(w,r.width*r.height)}
var m=document.getElementById('kev-render');m.setAttribute('data-charts',String(c.length));
m.setAttribute('data-min-area',String(c.length?Math.round(w):0));
m.setAttribute('data-errors',String(window.__kevErrors.length));
m.textContent='rendered '+c.length+' charts';m.setAttribute('data-rendered','ok')})();"""


def _source_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy() -> str:
    """The report's Content-Security-Policy: no fetch of any kind, and only the page's own
    stylesheet and two scripts, named by their sha256 (no ``unsafe-inline``)."""
    return (
        f"default-src 'none'; style-src {_source_hash(_CSS)}; "
        f"script-src {_source_hash(_HEAD_JS)} {_source_hash(_TAIL_JS)}; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )


def _grade(letter: Any) -> str:
    s = _e(letter or "?")
    return f'<span class="g g{s}">{s}</span>'


def _evidence_table(rows: list[dict[str, Any]], verdicts: Mapping[str, Any], empty: str) -> str:
    if not rows:
        return f'<p class="empty">{_e(empty)}</p>'
    out = [
        '<table class="ev"><tr><th>grade</th><th>packet</th><th>device · operator</th><th>status</th><th>verdict</th>'
        "<th>measured</th><th>speedup</th><th>reasons</th></tr>"
    ]
    for r in rows:
        reasons = "".join(f"<li>{_e(x)}</li>" for x in r["reasons"]) or "<li>no reservations</li>"
        replay = ""
        if r.get("relation") == "replay":
            replay = f'<br><span class="rel">↳ replay of</span> {_short_id(r.get("parent_packet_id"))}'
        what = r["operator"] or r.get("model") or r["workload"]
        out.append(
            f"<tr><td>{_grade(r['grade'])}</td><td>{_cut(r['subject_name'])}<br>{_short_id(r['packet_id'])}{replay}</td>"
            f"<td>{_cut(r.get('device_id') or r['device'])} · {_cut(what)}</td><td>{_e(r['status'])}</td>"
            f'<td>{_verdict_cell(r, verdicts)}</td><td class="num">{_measure(r)[0]}</td>'
            f'<td class="num">{_fmt(r["speedup"])}</td><td><ul class="r">{reasons}</ul></td></tr>'
        )
    out.append("</table>")
    return "".join(out)


def _grades(pairs: Sequence[tuple[Any, int]]) -> str:
    return " ".join(f"{_grade(g)}&nbsp;×{c}" for g, c in pairs) or "–"


def _kernel_table(rows: list[dict[str, Any]]) -> str:
    out = [
        "<table><tr><th>device</th><th>operator</th><th>dtype</th><th>packets</th><th>median time</th><th>IQR</th><th>fastest</th>"
        "<th>speed of light</th><th>verdicts</th><th>grades</th></tr>"
    ]
    for r in rows:
        sol = f"{r['sol']:.0%}" if r["sol"] is not None and math.isfinite(r["sol"]) else "–"
        out.append(
            f"<tr><td>{_cut(r['dev'])}</td><td>{_cut(r['operator'])}</td><td>{_cut(', '.join(r['dtypes']) or None)}</td>"
            f'<td class="num">{r["n"]:,}</td><td class="num">{_duration(r["median"])}</td>'
            f'<td class="num">{_duration(r["q1"])} – {_duration(r["q3"])}</td><td class="num">{_duration(r["best"])}</td>'
            f'<td class="num">{sol}</td><td>{_counted(r["verdicts"])}{_third(r)}</td><td>{_grades(r["grades"])}</td></tr>'
        )
    out.append("</table>")
    return "".join(out)


def _third(r: Mapping[str, Any]) -> str:
    if not r.get("third_party"):
        return ""
    return '<br><b class="tp">' + _counted(r["third_party"]) + "</b>"


def _serving_table(rows: list[dict[str, Any]]) -> str:
    head = "".join(f"<th>{_LATENCY_NAMES[k]} p50 / p99 (ms)</th>" for k in _LATENCIES)
    out = [
        f'<table class="wide"><tr><th>engine</th><th>version</th><th>device</th><th>model</th><th>runs</th>{head}'
        "<th>output tok/s</th><th>req/s</th><th>requests done / failed</th><th>verdicts</th><th>grades</th></tr>"
    ]
    for r in rows:
        lat = "".join(
            f'<td class="num">{_ms(r[f"{k}_median_ms"])} / {_ms(r[f"{k}_p99_ms"])}</td>' for k in _LATENCIES
        )
        done = "–" if r["completed"] is None else f"{r['completed']:,}"
        failed = "–" if r["failed"] is None else f"{r['failed']:,}"
        out.append(
            f"<tr><td>{_cut(r['engine'])}</td><td>{_cut(r['engine_version'])}</td><td>{_cut(r['dev'])}</td>"
            f'<td>{_cut(", ".join(r["models"]) or None)}</td><td class="num">{r["n"]:,}</td>{lat}'
            f'<td class="num">{_ms(r["serving_output_tok_per_s"])}</td><td class="num">{_fmt(r["serving_request_per_s"])}</td>'
            f'<td class="num">{done} / {failed}</td><td>{_counted(r["verdicts"])}{_third(r)}</td><td>{_grades(r["grades"])}</td></tr>'
        )
    out.append("</table>")
    return "".join(out)


def _measure(r: Mapping[str, Any]) -> tuple[str, float | None]:
    """The packet's headline measurement as text, and its value for ratios."""
    if r.get("kernel_median_us") is not None:
        return _duration(r["kernel_median_us"]), r["kernel_median_us"]
    if r.get("e2el_median_ms") is not None:
        return f"{_ms(r['e2el_median_ms'])} ms end-to-end", r["e2el_median_ms"]
    if r.get("ttft_median_ms") is not None:
        return f"{_ms(r['ttft_median_ms'])} ms TTFT", r["ttft_median_ms"]
    return "–", None


def _verdict_cell(r: Mapping[str, Any], verdicts: Mapping[str, Any]) -> str:
    """The packet's own validation verdict, and beside it the latest third-party verdict
    (``archive/_verdicts``: confirmed, reproduced, drifted, hacked, retracted) with who
    gave it and why in its title."""
    own = _e(r.get("validation_verdict") or "–")
    tp = verdicts.get(r.get("packet_id") or "")
    if tp is None:
        return own
    word = getattr(tp, "verdict", tp)
    why = " ".join(
        str(x) for x in (getattr(tp, "by", ""), getattr(tp, "at", ""), getattr(tp, "why", "")) if x
    )
    return f'{own} · <b class="tp tp-{_e(word)}" title="{_e(why or word)}">{_e(word)}</b>'


def _short_id(pid: Any) -> str:
    return f"<code>{_e(str(pid or '')[:19])}…</code>"


def _replay_table(
    groups: list[tuple[dict[str, Any], list[dict[str, Any]]]], verdicts: Mapping[str, Any]
) -> str:
    out = [
        '<table class="ev"><tr><th>packet</th><th>device · operator</th><th>status</th><th>verdict</th><th>grade</th>'
        "<th>measured</th><th>against the original</th></tr>"
    ]
    for parent, kids in groups:
        if parent.get("missing"):
            out.append(
                f'<tr class="orig"><td colspan="7">original {_short_id(parent["packet_id"])} (not in this report)</td></tr>'
            )
            base = None
        else:
            text, base = _measure(parent)
            out.append(
                f'<tr class="orig">{_packet_cells(parent, verdicts)}<td class="num">{text}</td><td>original</td></tr>'
            )
        for kid in kids:
            text, value = _measure(kid)
            ratio = f"{value / base:.3g}× the original's time" if value is not None and base else "–"
            out.append(
                f'<tr class="child">{_packet_cells(kid, verdicts, replay=True)}<td class="num">{text}</td><td class="num">{ratio}</td></tr>'
            )
    out.append("</table>")
    return "".join(out)


def _packet_cells(r: Mapping[str, Any], verdicts: Mapping[str, Any], *, replay: bool = False) -> str:
    mark = '<span class="rel">↳ replay</span> ' if replay else ""
    what = r.get("operator") or r.get("model") or r.get("workload")
    return (
        f"<td>{mark}{_cut(r.get('subject_name'))}<br>{_short_id(r.get('packet_id'))}</td>"
        f"<td>{_cut(r.get('device_id') or r.get('device'))} · {_cut(what)}</td><td>{_e(r.get('status'))}</td>"
        f"<td>{_verdict_cell(r, verdicts)}</td><td>{_grade(r.get('grade'))}</td>"
    )


def _speedup_table(rows: list[dict[str, Any]]) -> str:
    out = [
        "<table><tr><th>device</th><th>operator</th><th>baseline</th><th>packets</th><th>median</th><th>IQR</th><th>confidence interval</th></tr>"
    ]
    for r in rows:
        ci = f"{_fmt(r['low'])} – {_fmt(r['high'])} ({r['n_ci']} pk.)" if r["low"] is not None else "–"
        out.append(
            f"<tr><td>{_e(r['device'])}</td><td>{_e(r['operator'])}</td><td>{_e(r['baseline_provider'])} {_e(r['baseline_version'])}</td>"
            f'<td class="num">{r["n"]}</td><td class="num">{_fmt(r["median"])}×</td>'
            f'<td class="num">{_fmt(r["q1"])} – {_fmt(r["q3"])}</td><td class="num">{ci}</td></tr>'
        )
    out.append("</table>")
    return "".join(out)


def _vendor_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Packets per vendor partition: every vendor in the archive, also those without a
    speedup or a speed-of-light fraction (serving, failed or unidentified packets), which
    no chart shows."""
    if table.num_rows == 0:
        return []
    t = table.select(["vendor", "status", "valid", "device"])
    t = t.append_column("passed", pc.equal(t["status"], "passed"))
    t = t.append_column("failing", pc.is_in(t["status"], pa.array(["failed", "error"])))
    g = t.group_by("vendor").aggregate(
        [
            ("vendor", "count"),
            ("passed", "sum"),
            ("failing", "sum"),
            ("valid", "sum"),
            ("device", "count_distinct"),
        ]
    )
    rows = [
        {
            "vendor": r["vendor"],
            "n": r["vendor_count"],
            "passed": r["passed_sum"] or 0,
            "failing": r["failing_sum"] or 0,
            "valid": r["valid_sum"] or 0,
            "devices": r["device_count_distinct"],
        }
        for r in g.to_pylist()
    ]
    return sorted(rows, key=lambda r: (-r["n"], str(r["vendor"])))


def _vendor_table(rows: list[dict[str, Any]]) -> str:
    out = [
        "<table><tr><th>vendor</th><th>packets</th><th>passed</th><th>failed or error</th><th>valid</th><th>devices</th></tr>"
    ]
    for r in rows:
        out.append(
            f'<tr><td>{_e(r["vendor"])}</td><td class="num">{r["n"]:,}</td><td class="num">{r["passed"]:,}</td>'
            f'<td class="num">{r["failing"]:,}</td><td class="num">{r["valid"]:,}</td><td class="num">{r["devices"]}</td></tr>'
        )
    out.append("</table>")
    return "".join(out)


def _span(table: pa.Table) -> str:
    """First and last measurement (``measured_at``, else ``created_at``), UTC: the days,
    or the day once and the clock times when they fall on one day."""
    if table.num_rows == 0:
        return "–"
    ts = pc.coalesce(table["measured_at"], table["created_at"])
    if not pc.count(ts).as_py():
        return "–"
    lo, hi = pc.min(ts).as_py(), pc.max(ts).as_py()
    day = f"{lo.year:04d}-{lo:%m-%d}"
    if lo.date() != hi.date():
        return f"{day} → {hi.year:04d}-{hi:%m-%d}"
    if lo == hi:
        return f"{day} {lo:%H:%M:%S}"
    return f"{day} {lo:%H:%M:%S}–{hi:%H:%M:%S}"


def _tiles(table: pa.Table) -> str:
    statuses = dict(_counts(table, "status"))
    valid = pc.sum(pc.cast(table["valid"], pa.int64())).as_py() or 0 if table.num_rows else 0
    kinds = dict(_counts(table, "subject_kind"))
    span = _span(table)
    tiles = [
        ("packets", f"{table.num_rows:,}"),
        ("passed", f"{statuses.get('passed', 0):,}"),
        ("failed", f"{statuses.get('failed', 0):,}"),
        ("error", f"{statuses.get('error', 0):,}"),
        ("valid", f"{valid:,}"),
        ("kernel packets", f"{kinds.get('kernel', 0):,}"),
        ("serving runs", f"{kinds.get('serving', 0):,}"),
        ("devices", str(len(_counts(table, "device")))),
        ("runs", str(len(_counts(table, "run_id")))),
        ("time span (UTC)", span),
    ]
    return (
        '<div class="tiles">'
        + "".join(f'<div class="tile"><b>{_e(v)}</b><span>{_e(k)}</span></div>' for k, v in tiles)
        + "</div>"
    )


def build_report(
    root: str | os.PathLike[str],
    *,
    where: Iterable[str] | pc.Expression | None = None,
    title: str = "kernel-evidence report",
    generated_at: str | None = None,
    verdicts: Mapping[str, Any] | None = None,
) -> tuple[str, int]:
    """The report's HTML text and the number of packets it covers.

    Third-party verdicts (:mod:`kernel_evidence.archive.verdicts`, the latest per packet)
    are shown beside each packet's validation verdict and counted per group; ``verdicts``
    (packet id to a :class:`~.verdicts.Verdict` or a verdict word) replaces those the
    archive holds.
    """
    expr = where if isinstance(where, pc.Expression) or where is None else parse_where(where)
    table = read_table(root, _COLUMNS, expr)
    if verdicts is None:
        from .verdicts import current_verdicts

        verdicts = current_verdicts(root)
    if table.num_rows:
        lookup = {pid: getattr(v, "verdict", v) for pid, v in verdicts.items()}
        column = pa.array([lookup.get(pid) for pid in table["packet_id"].to_pylist()], pa.string())
        table = table.append_column("third_party", column)
    kernels = _kernel_rows(table)
    serving = _serving_rows(table)
    concurrency = _concurrency_series(table)
    replays = _replay_groups(table)
    speed = _speedup_rows(table)
    valid = table.filter(pc.equal(table["valid"], True)) if table.num_rows else table
    sol = sorted(
        _grouped(valid, ["vendor", "device"], "sol_fraction"),
        key=lambda r: (str(r["vendor"]), str(r["device"])),
    )
    failures = _counts(table, "failure_class")
    vendors = _vendor_rows(table)
    labels, caption, nb, series = _pass_rate_series(table)
    best, worst = _evidence_rows(root, table, expr)
    when = generated_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def section(h: str, body: str, empty: str) -> str:
        return f"<h2>{_e(h)}</h2>" + (
            f'<div class="scroll">{body}</div>' if body else f'<p class="empty">{_e(empty)}</p>'
        )

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy()}">',
        f"<title>{_e(title)}</title><style>{_CSS}</style><script>{_HEAD_JS}</script></head>",
        "<body><main>",
        f'<h1>{_e(title)}</h1><p class="sub">Archive <code>{_e(Path(root).name)}</code> · generated {_e(when)} by kernel-evidence {_e(__version__)}</p>',
        _tiles(table),
        section("Packets by vendor", _vendor_table(vendors) if vendors else "", "No packets."),
        section(
            "Kernel time per device and operator",
            (_kernel_chart(kernels) + _kernel_table(kernels)) if kernels else "",
            "No kernel packet states its time.",
        ),
        section(
            "Serving latency and throughput per engine, version and device",
            _serving_table(serving) if serving else "",
            "No serving packets.",
        ),
        section(
            "Throughput against concurrency",
            _concurrency_chart(concurrency) if concurrency else "",
            "No serving packet states both its concurrency and its output throughput.",
        ),
        section(
            "Speedup against the named baseline",
            (_speedup_chart(speed) + _speedup_table(speed)) if speed else "",
            "No valid packet claims a speedup.",
        ),
        section(
            "Speed-of-light fraction",
            _sol_chart(sol) if sol else "",
            "No packet states both its work and a known device peak.",
        ),
        section(
            "Failure classes",
            _histogram(failures, "failure-class histogram") if failures else "",
            "No failed or errored packets.",
        ),
        section(
            "Pass rate over time",
            _line_chart(labels, caption, nb, series) if series else "",
            "No timed candidate packets.",
        ),
        section(
            "Replays under their originals",
            _replay_table(replays, verdicts) if replays else "",
            "No packet replays another.",
        ),
        section(
            "Strongest evidence",
            _evidence_table(best, verdicts, "No graded packets."),
            "",
        ),
        section(
            "Weakest evidence",
            _evidence_table(worst, verdicts, "No other graded packets: each is in the list above."),
            "",
        ),
        '<footer><span id="kev-render" data-rendered="no">charts not rendered</span></footer>',
        f"</main><script>{_TAIL_JS}</script></body></html>",
    ]
    return "\n".join(parts), table.num_rows


def write_report(
    root: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    where: Iterable[str] | pc.Expression | None = None,
    title: str = "kernel-evidence report",
    overwrite: bool = False,
    generated_at: str | None = None,
    verdicts: Mapping[str, Any] | None = None,
) -> int:
    """Write the report to ``out`` atomically; returns the number of packets covered."""
    text, n = build_report(root, where=where, title=title, generated_at=generated_at, verdicts=verdicts)
    write_output(out, text.encode("utf-8"), overwrite=overwrite)
    return n
