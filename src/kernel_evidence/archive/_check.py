"""The validator as the archive uses it: one call per packet, findings as plain tuples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..rules import validate, validate_struct

__all__ = ["Checked", "check", "check_fields"]


@dataclass(frozen=True)
class Checked:
    """What the archive keeps of a validation report."""

    ok: bool
    grade: str | None
    reasons: list[str]
    #: dicts with ``rule_id``, ``severity``, ``pointer``, ``message`` (the findings column)
    findings: list[dict[str, str]]
    #: one line per error finding, for refusals
    lines: list[str]


def _from_report(report: Any) -> Checked:
    findings = [
        {
            "rule_id": str(f.rule_id),
            "severity": str(f.severity),
            "pointer": str(f.pointer),
            "message": str(f.message),
        }
        for f in report.findings
    ]
    lines = [
        f"{f['rule_id']} {f['message']} - at `{f['pointer'] or '/'}`"
        for f in findings
        if f["severity"] == "error"
    ]
    grade = getattr(report, "grade", None)
    letter = getattr(grade, "letter", None)
    reasons = [str(r) for r in (getattr(grade, "reasons", None) or [])]
    return Checked(bool(report.ok), str(letter) if letter else None, reasons, findings, lines)


def check_fields(
    struct: Any, *, content_id: str | None
) -> tuple[bool, str | None, list[str], list[dict[str, str]], list[str]]:
    """Validate one packet decoded by :func:`kernel_evidence._codec.decode.decode_checked` (with
    the id its content gives): ``(ok, grade, reasons, findings, lines)`` as in
    :class:`Checked`, as a plain tuple for the analysis of a batch (one per packet: no
    dataclass to build, and nothing to format when there is no finding, the common case)."""
    report = validate_struct(struct, None, None, None, content_id=content_id)
    if report.findings:
        c = _from_report(report)
        return c.ok, c.grade, c.reasons, c.findings, c.lines
    grade = report.grade
    return True, grade.letter, list(grade.reasons), [], []


def check(data: dict[str, Any] | None, raw: bytes | None) -> Checked:
    """Validate one packet: its JSON bytes when we have them (the validator's fast path),
    else its decoded data."""
    if raw is not None:
        return _from_report(validate(raw))
    assert data is not None
    return _from_report(validate(data))
