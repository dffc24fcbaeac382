"""The evidence grade: how strong a packet's performance evidence is, and why not stronger.

=====  ==============================================================================
A      a vendor-baseline claim, measured in the same session, with raw samples or a
       confidence interval, recorded clocks, pinned code (commit and container digest)
       and work figures or a profiler capture; no warnings
B      a vendor-baseline claim missing some of A's supporting records
C      a claim that rests on a reference implementation, a baseline from another
       session, or validation without per-shape results
D      a valid packet that makes no performance claim (failures, bare timings, profiles)
F      invalid: at least one error finding
=====  ==============================================================================
"""

from __future__ import annotations

from typing import Any

from ._engine import Finding, Grade
from ._tables import baseline_entry


def grade_packet(p: Any, findings: list[Finding]) -> Grade:
    """Grade a decoded packet given its findings."""
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        ids = sorted({f.rule_id for f in errors})
        return Grade("F", (f"invalid: {', '.join(ids)}",))
    caps: list[tuple[str, str]] = []
    t = p.timing
    if t is None or t.speedup is None:
        status = p.status._value_  # not .value: the enum property costs a Python call
        if status != "passed":
            caps.append(("D", f"a {status} packet: records a failure, makes no performance claim"))
        else:
            caps.append(("D", "makes no performance claim (no speedup over a named baseline)"))
    else:
        b = t.baseline
        entry = baseline_entry(b.provider) if b is not None and b.provider else None
        if entry is not None and entry.kind == "reference":
            caps.append(("C", f"baseline `{entry.name}` is a reference implementation, not a vendor library"))
        if b is not None and b.same_session is not True:
            caps.append(("C", "baseline not measured in the same session"))
        if p.subject.kind == "kernel" and (p.validation is None or not p.validation.shapes):
            caps.append(("C", "validation records no per-shape results"))
        st = t.stats
        if st is not None and not st.samples and st.ci_low is None:
            caps.append(("B", "no raw samples or confidence interval"))
        h = p.hardware
        if h is None or h.clocks is None or (h.clocks.locked is not True and h.clocks.sm_observed is None):
            caps.append(("B", "clock state not recorded (neither locked nor observed)"))
        r = p.replay
        if r is None or r.repository is None or not r.repository.commit:
            caps.append(("B", "replay pins no repository commit"))
        elif r.repository.dirty:
            caps.append(("B", "replay commit had uncommitted changes (dirty tree)"))
        if r is None or r.container is None or not r.container.digest:
            caps.append(("B", "replay pins no container digest"))
        work = p.task is not None and (
            p.task.work is not None or any(s.work is not None for s in p.task.shapes or ())
        )
        if not p.profiler and not work:
            caps.append(("B", "no profiler capture or work figures: the speed-of-light fraction is unknown"))
    if findings:
        warns = sorted({f.rule_id for f in findings if f.severity == "warning"})
        if warns:
            caps.append(("B", f"warnings: {', '.join(warns)}"))
    if not caps:
        return _grade("A", ())
    # the weakest letter; reasons weakest first, in the order found within a letter
    reasons: list[str] = []
    letter = ""
    for lt in "DCB":
        for c, r in caps:
            if c == lt:
                reasons.append(r)
                letter = letter or lt
    return _grade(letter, tuple(reasons))


_GRADES: dict[tuple[str, tuple[str, ...]], Grade] = {}


def _grade(letter: str, reasons: tuple[str, ...]) -> Grade:
    """Grades are immutable and a batch repeats a few: share them (bounded cache)."""
    key = (letter, reasons)
    g = _GRADES.get(key)
    if g is None:
        g = Grade(letter, reasons)  # type: ignore[arg-type]
        if len(_GRADES) < 1024:
            _GRADES[key] = g
    return g
