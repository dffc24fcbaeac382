"""An audit as text, JSON, CSV or Markdown.

Text and Markdown list the suspects worst first (``top`` of them, at ``min_level`` or
above), each with its reasons, then a table per candidate, model and submitter. JSON holds
everything (:meth:`AuditResult.to_dict`, suspects filtered the same way). CSV has one row
per reason of each listed suspect, so a spreadsheet can sort and filter them.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable

from ..errors import shown
from ._model import LEVELS, AuditResult, GroupSummary, Suspect, _ordered, level_rank

__all__ = ["FORMATS", "render"]

FORMATS = ("text", "json", "csv", "md")

_CSV_COLUMNS = (
    "rank", "level", "score", "packet_id", "source", "location", "subject", "candidate", "model",
    "submitter", "device", "status", "shape_id", "claimed_speedup", "recomputed_speedup", "code",
    "reason_level", "pointer", "message",
)  # fmt: skip


def render(result: AuditResult, fmt: str = "text", *, top: int | None = None, min_level: str = "low") -> str:
    """``result`` in ``fmt`` (one of :data:`FORMATS`): the suspects at ``min_level`` or
    above, the ``top`` worst of them (all when None)."""
    floor = level_rank(min_level)
    listed = [s for s in result.suspects if level_rank(s.level) >= floor]
    if top is not None:
        listed = listed[:top]
    if fmt == "json":
        body = result.to_dict()
        body["suspects"] = [s.to_dict() for s in listed]
        return json.dumps(body, indent=1, allow_nan=False, default=str) + "\n"
    if fmt == "csv":
        return _csv(listed)
    rows = top if top is not None else None
    if fmt == "md":
        return _markdown(result, listed, rows)
    if fmt == "text":
        return _text(result, listed, rows)
    raise ValueError(f"expected one of the formats {', '.join(FORMATS)}, got {fmt!r}")


def _headline(result: AuditResult) -> str:
    counts = result.counts()
    by = ", ".join(f"{counts[name]} {name}" for name in reversed(LEVELS))
    n_in = len(result.inputs)
    src = f" from {n_in} input{'s' if n_in != 1 else ''}" if n_in else ""
    bad = f"; {len(result.unreadable)} unreadable documents" if result.unreadable else ""
    return f"audited {result.packets} packets{src}: {len(result.suspects)} suspects ({by}){bad}"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def _short_id(pid: str | None) -> str:
    return (pid[:19] + "...") if pid and len(pid) > 22 else (pid or "(no id)")


def _text(result: AuditResult, listed: list[Suspect], rows: int | None) -> str:
    out = [_headline(result)]
    for where, error in result.unreadable[:20]:
        out.append(f"  unreadable: {shown(where)}: {shown(error)}")
    if listed:
        more = len(result.suspects) - len(listed)
        out.append("")
        out.append(f"suspects, worst first{f' ({more} more not shown)' if more > 0 else ''}:")
    for rank, s in enumerate(listed, 1):
        sp = ""
        if s.claimed_speedup is not None or s.recomputed_speedup is not None:
            sp = f"  speedup claimed {_num(s.claimed_speedup)} / recomputed {_num(s.recomputed_speedup)}"
        out.append(
            f"{rank:>4}. {s.level.upper():<8} score {s.score:<5} {_short_id(s.packet_id)}  "
            f"{shown(s.subject or '-')}  [{shown(s.candidate or '-')}]{sp}"
        )
        out.append(f"        at {shown(s.where())}")
        for r in s.reasons:
            at = f" at {r.pointer}" if r.pointer else ""
            out.append(f"        {r.code} {r.level}{at}: {shown(r.message)}")
    for title, groups in (
        ("candidates", result.candidates),
        ("models", result.models),
        ("submitters", result.submitters),
    ):
        if groups:
            out.append("")
            out.extend(_group_text(title, groups.values(), rows))
    if result.warnings:
        out.append("")
        n = len(result.warnings)
        out.append(f"{n} warning{'s' if n != 1 else ''} while reading the inputs (printed on stderr)")
    return "\n".join(out) + "\n"


def _group_text(title: str, groups: Iterable[GroupSummary], most: int | None) -> list[str]:
    """A table of the groups, worst first: the ``most`` worst of them, and how many more."""
    rows, more = _cut_groups(groups, most)
    width = min(60, max([len(title)] + [len(g.key) for g in rows]))
    head = f"{title:<{width}}  packets  passed  failed  error  speedup med/best  suspects c/h/m/l"
    lines = [head]
    for g in rows:
        lv = "/".join(str(g.by_level[name]) for name in reversed(LEVELS))
        sp = f"{_num(g.median_speedup())}/{_num(g.best_speedup())}"
        key = shown(g.key)
        key = key if len(key) <= width else key[: width - 3] + "..."
        lines.append(
            f"{key:<{width}}  {g.packets:>7}  {g.passed:>6}  {g.failed:>6}  {g.errored:>5}  {sp:>16}  {lv:>17}"
        )
        lines.extend(f"{'':<{width}}  {shown(note)}" for note in g.notes)
    if more:
        lines.append(f"({more} more {title}: --top N lists more, --format json lists all)")
    return lines


def _cut_groups(groups: Iterable[GroupSummary], most: int | None) -> tuple[list[GroupSummary], int]:
    rows = _ordered(groups)
    if most is None or len(rows) <= most:
        return rows, 0
    return rows[:most], len(rows) - most


def _csv(listed: list[Suspect]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(_CSV_COLUMNS)
    for rank, s in enumerate(listed, 1):
        for r in s.reasons:
            w.writerow(
                (
                    rank, s.level, s.score, s.packet_id or "", s.source or "", s.location or "",
                    s.subject or "", s.candidate or "", s.model or "", s.submitter or "", s.device or "",
                    s.status or "", s.shape_id or "", _csv_num(s.claimed_speedup),
                    _csv_num(s.recomputed_speedup), r.code, r.level, r.pointer, r.message,
                )
            )  # fmt: skip
    return buf.getvalue()


def _csv_num(x: float | None) -> str:
    return "" if x is None else repr(x)


def _md_cell(text: str) -> str:
    return shown(text).replace("|", "\\|")


def _markdown(result: AuditResult, listed: list[Suspect], rows: int | None) -> str:
    out = ["# Audit", "", _headline(result), ""]
    if listed:
        out += [
            "## Suspects",
            "",
            "| # | level | score | packet | subject | candidate | reasons |",
            "|---|---|---|---|---|---|---|",
        ]
        for rank, s in enumerate(listed, 1):
            reasons = "<br>".join(_md_cell(f"{r.code} {r.level}: {r.message}") for r in s.reasons)
            out.append(
                f"| {rank} | {s.level} | {s.score} | `{_short_id(s.packet_id)}` | {_md_cell(s.subject or '-')} "
                f"| {_md_cell(s.candidate or '-')} | {reasons} |"
            )
        out.append("")
    for title, groups in (
        ("Candidates", result.candidates),
        ("Models", result.models),
        ("Submitters", result.submitters),
    ):
        if not groups:
            continue
        out += [
            f"## {title}",
            "",
            "| name | packets | passed | failed | error | speedup median | speedup best | critical | high | medium | low | notes |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        shown_groups, more = _cut_groups(groups.values(), rows)
        for g in shown_groups:
            lv = " | ".join(str(g.by_level[name]) for name in reversed(LEVELS))
            notes = "<br>".join(_md_cell(n) for n in g.notes)
            out.append(
                f"| {_md_cell(g.key)} | {g.packets} | {g.passed} | {g.failed} | {g.errored} | "
                f"{_num(g.median_speedup())} | {_num(g.best_speedup())} | {lv} | {notes} |"
            )
        if more:
            out.append(
                f"\n{more} more {title.lower()} not listed (--top N lists more, --format json lists all)."
            )
        out.append("")
    return "\n".join(out)
