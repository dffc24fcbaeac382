# ruff: noqa: E501  (SVG and HTML markup reads best one element per line)
"""A self-contained HTML report of an archive: inline CSS, inline SVG charts, no network.

Charts: speedup against the named baseline per device and operator (with the packets'
confidence intervals), speed-of-light fraction per device, the failure-class histogram,
the pass rate over time of candidate streams (runs), and the strongest and weakest evidence
with the reasons for their grades. All numbers are computed with pyarrow from the typed
columns; the ``packet`` column is never read.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .._version import __version__
from ..io import write_output
from .reader import parse_where, read_table

__all__ = ["build_report", "write_report"]

_COLUMNS = [
    "packet_id", "created_at", "status", "failure_class", "run_id", "operator", "workload",
    "subject_name", "device", "vendor", "baseline_provider", "baseline_version", "speedup",
    "speedup_low", "speedup_high", "sol_fraction", "sol_bound", "grade", "valid", "shape",
]  # fmt: skip
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


def _pass_rate_series(
    table: pa.Table, bins: int = 24
) -> tuple[list[str], dict[str, list[tuple[int, float, int]]]]:
    t = table.filter(
        pc.and_(
            pc.is_valid(table["created_at"]),
            pc.is_in(table["status"], pa.array(["passed", "failed", "error"])),
        )
    )
    if t.num_rows == 0:
        return [], {}
    runs = t["run_id"].fill_null("(no run id)")
    t = t.set_column(t.schema.get_field_index("run_id"), "run_id", runs)
    top = [r for r, _ in _counts(t, "run_id")[:6]]
    t = t.filter(pc.is_in(t["run_id"], pa.array(top)))
    micros = pc.cast(t["created_at"], pa.int64())
    lo_v, hi_v = pc.min(micros).as_py(), pc.max(micros).as_py()
    span = max(hi_v - lo_v, 1)
    nb = bins if hi_v > lo_v else 1
    idx = pc.min_element_wise(pc.divide(pc.multiply(pc.subtract(micros, lo_v), nb), span), nb - 1)
    t = t.append_column("bin", pc.cast(idx, pa.int64()))
    t = t.append_column("ok", pc.cast(pc.equal(t["status"], "passed"), pa.int64()))
    g = t.group_by(["run_id", "bin"]).aggregate([("ok", "sum"), ("ok", "count")]).to_pylist()
    series: dict[str, list[tuple[int, float, int]]] = {r: [] for r in top}
    for r in sorted(g, key=lambda r: r["bin"]):
        series[r["run_id"]].append((r["bin"], r["ok_sum"] / r["ok_count"], r["ok_count"]))
    labels = []
    for i in range(nb + 1):
        # whole microseconds: a float of a time near year 9999 rounds past it
        ts = _EPOCH + timedelta(microseconds=lo_v + span * i // nb)
        labels.append(f"{ts.year:04d}-{ts:%m-%d %H:%M}")  # %Y does not pad years before 1000
    return labels, series


def _evidence_rows(
    root: str | os.PathLike[str], table: pa.Table, where: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if table.num_rows == 0:
        return [], []
    t = table.filter(pc.is_valid(table["grade"]))
    if t.num_rows == 0:
        return [], []
    t = t.append_column("gkey", pc.utf8_lower(t["grade"]))
    best = t.sort_by([("gkey", "ascending"), ("created_at", "descending")]).slice(0, _TOP)
    worst = t.sort_by([("gkey", "descending"), ("created_at", "descending")]).slice(0, _TOP)
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


def _line_chart(labels: list[str], series: dict[str, list[tuple[int, float, int]]]) -> str:
    width, height, left, right, top, bottom = 900, 320, 60, 190, 20, 60
    nb = max(len(labels) - 1, 1)
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
    for i in (0, nb):
        xx = left + i / nb * plot_w
        anchor = "start" if i == 0 else "end"
        parts.append(
            f'<text class="kev-tick" x="{xx:.1f}" y="{height - bottom + 18}" text-anchor="{anchor}">{_e(labels[i])} UTC</text>'
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
        parts.append(f'<text class="kev-label" x="{width - right + 34}" y="{ly + 1}">{_e(name[:24])}</text>')
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
th{background:var(--card);font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.g{display:inline-block;min-width:22px;text-align:center;border-radius:4px;font-weight:700;color:#fff}
.gA{background:#059669}.gB{background:#65a30d}.gC{background:#d97706}.gD{background:#ea580c}.gE,.gF{background:#dc2626}
code{font-size:12px;color:var(--muted)}ul.r{margin:0;padding-left:16px}.empty{color:var(--muted);font-style:italic}
svg.kev-chart{display:block;max-width:100%;height:auto;margin:8px 0}
.kev-grid{stroke:#e5e7eb;stroke-width:1}.kev-ref{stroke:#111827;stroke-dasharray:4 3}
.kev-tick,.kev-axis{fill:#6b7280;font-size:11px}.kev-label{fill:#111827;font-size:12px}.kev-value{fill:#374151;font-size:11px}
.kev-iqr{fill:#bfdbfe}.kev-ci{stroke:#1f2937;stroke-width:1.5}.kev-dot{stroke:#fff;stroke-width:1.5}
.kev-win{fill:#059669}.kev-loss{fill:#dc2626}.kev-line{fill:none;stroke-width:2}
footer{color:var(--muted);font-size:12px;margin-top:40px}
"""

_HEAD_JS = "window.__kevErrors=[];window.addEventListener('error',function(e){window.__kevErrors.push(String(e.message))});"
_TAIL_JS = """(function(){var c=document.querySelectorAll('svg.kev-chart'),w=1e9;
for(var i=0;i<c.length;i++){var r=c[i].getBoundingClientRect();w=Math.min(w,r.width*r.height)}
var m=document.getElementById('kev-render');m.setAttribute('data-charts',String(c.length));
m.setAttribute('data-min-area',String(c.length?Math.round(w):0));
m.setAttribute('data-errors',String(window.__kevErrors.length));
m.textContent='rendered '+c.length+' charts';m.setAttribute('data-rendered','ok')})();"""


def _grade(letter: Any) -> str:
    s = _e(letter or "?")
    return f'<span class="g g{s}">{s}</span>'


def _evidence_table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return '<p class="empty">No graded packets.</p>'
    out = [
        "<table><tr><th>grade</th><th>packet</th><th>device · operator</th><th>status</th><th>speedup</th><th>reasons</th></tr>"
    ]
    for r in rows:
        reasons = "".join(f"<li>{_e(x)}</li>" for x in r["reasons"]) or "<li>no reservations</li>"
        out.append(
            f"<tr><td>{_grade(r['grade'])}</td><td>{_e(r['subject_name'])}<br><code>{_e((r['packet_id'] or '')[:19])}…</code></td>"
            f"<td>{_e(r['device'])} · {_e(r['operator'] or r['workload'])}</td><td>{_e(r['status'])}</td>"
            f'<td class="num">{_fmt(r["speedup"])}</td><td><ul class="r">{reasons}</ul></td></tr>'
        )
    out.append("</table>")
    return "".join(out)


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


def _tiles(table: pa.Table) -> str:
    statuses = dict(_counts(table, "status"))
    valid = pc.sum(pc.cast(table["valid"], pa.int64())).as_py() or 0 if table.num_rows else 0
    ts = table["created_at"]
    span = "–"
    if table.num_rows and pc.count(ts).as_py():
        span = f"{pc.min(ts).as_py():%Y-%m-%d} → {pc.max(ts).as_py():%Y-%m-%d}"
    tiles = [
        ("packets", f"{table.num_rows:,}"),
        ("passed", f"{statuses.get('passed', 0):,}"),
        ("failed", f"{statuses.get('failed', 0):,}"),
        ("error", f"{statuses.get('error', 0):,}"),
        ("valid", f"{valid:,}"),
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
) -> tuple[str, int]:
    """The report's HTML text and the number of packets it covers."""
    expr = where if isinstance(where, pc.Expression) or where is None else parse_where(where)
    table = read_table(root, _COLUMNS, expr)
    speed = _speedup_rows(table)
    valid = table.filter(pc.equal(table["valid"], True)) if table.num_rows else table
    sol = sorted(
        _grouped(valid, ["vendor", "device"], "sol_fraction"),
        key=lambda r: (str(r["vendor"]), str(r["device"])),
    )
    failures = _counts(table, "failure_class")
    vendors = _vendor_rows(table)
    labels, series = _pass_rate_series(table)
    best, worst = _evidence_rows(root, table, expr)
    when = generated_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def section(h: str, body: str, empty: str) -> str:
        return f"<h2>{_e(h)}</h2>" + (body if body else f'<p class="empty">{_e(empty)}</p>')

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
        f"<title>{_e(title)}</title><style>{_CSS}</style><script>{_HEAD_JS}</script></head>",
        "<body><main>",
        f'<h1>{_e(title)}</h1><p class="sub">Archive <code>{_e(Path(root).name)}</code> · generated {_e(when)} by kernel-evidence {_e(__version__)}</p>',
        _tiles(table),
        section("Packets by vendor", _vendor_table(vendors) if vendors else "", "No packets."),
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
            _line_chart(labels, series) if series else "",
            "No timed candidate packets.",
        ),
        "<h2>Strongest evidence</h2>",
        _evidence_table(best),
        "<h2>Weakest evidence</h2>",
        _evidence_table(worst),
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
) -> int:
    """Write the report to ``out`` atomically; returns the number of packets covered."""
    text, n = build_report(root, where=where, title=title, generated_at=generated_at)
    write_output(out, text.encode("utf-8"), overwrite=overwrite)
    return n
