"""The rule engine: rule registry, findings, reports and evidence grades.

One engine serves the library, the CLI and CI. A rule is a function over a decoded packet
(:data:`kernel_evidence._fast.PacketStruct`) that yields ``(pointer, message)`` pairs; the
registry adds its id, severity and hint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Finding", "Grade", "Report", "Rule", "RULES", "rule"]

Severity = Literal["error", "warning", "info"]
Check = Callable[[Any], Iterable[tuple[str, str]] | None]


@dataclass(frozen=True)
class Rule:
    """A validation rule: stable id, severity, what it checks, what to do when it fires."""

    id: str
    severity: Severity
    title: str
    hint: str
    doc: str
    check: Check | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found in a packet, with the JSON Pointer of the field concerned."""

    rule_id: str
    severity: Severity
    pointer: str
    message: str
    hint: str

    def to_dict(self) -> dict[str, str]:
        return {
            "rule_id": self.rule_id,
            "severity": self.severity,
            "pointer": self.pointer,
            "message": self.message,
            "hint": self.hint,
        }

    def line(self) -> str:
        """``KE101 error at /replay/command: message (hint: ...)``."""
        at = self.pointer or "/"
        return f"{self.rule_id} {self.severity} at {at}: {self.message}"


@dataclass(frozen=True)
class Grade:
    """How strong the evidence is, A (strongest) to F (invalid), and why it is not higher."""

    letter: Literal["A", "B", "C", "D", "F"]
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"letter": self.letter, "reasons": list(self.reasons)}


@dataclass
class Report:
    """Every finding for one packet (or one unreadable document), and its grade."""

    source: str | None
    location: str | None
    packet_id: str | None
    findings: list[Finding] = field(default_factory=list)
    grade: Grade = field(default_factory=lambda: Grade("F"))

    @property
    def ok(self) -> bool:
        """True when no finding is an error."""
        return not any(f.severity == "error" for f in self.findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def passes(self, *, strict: bool = False) -> bool:
        """Valid; with ``strict``, warnings count as failures too."""
        if strict:
            return not any(f.severity in ("error", "warning") for f in self.findings)
        return self.ok

    def where(self) -> str:
        if self.source is None:
            return "<packet>"
        return f"{self.source}:{self.location}" if self.location else self.source

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "location": self.location,
            "packet_id": self.packet_id,
            "valid": self.ok,
            "grade": self.grade.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
        }


#: every rule by id, in id order once all rule modules are imported
RULES: dict[str, Rule] = {}
_CHECKS: list[Rule] = []


def rule(id: str, severity: Severity, title: str, hint: str) -> Callable[[Check], Check]:
    """Register a check function as rule ``id``; its docstring is the rule's documentation."""

    def deco(fn: Check) -> Check:
        r = Rule(id, severity, title, hint, (fn.__doc__ or "").strip(), fn)
        if id in RULES:
            raise ValueError(f"rule {id} registered twice")
        RULES[id] = r
        _CHECKS.append(r)
        return fn

    return deco


def declare(id: str, severity: Severity, title: str, hint: str, doc: str) -> None:
    """Register a rule that is enforced outside the check functions (decoding, structure)."""
    if id in RULES:
        raise ValueError(f"rule {id} registered twice")
    RULES[id] = Rule(id, severity, title, hint, doc)


def run_checks(packet: Any) -> list[Finding]:
    """Run every registered check over a decoded packet."""
    out: list[Finding] = []
    for r in _CHECKS:
        res = r.check(packet)  # type: ignore[misc]
        if res:
            for pointer, message in res:
                out.append(Finding(r.id, r.severity, pointer, message, r.hint))
    return out


def finding(rule_id: str, pointer: str, message: str) -> Finding:
    r = RULES[rule_id]
    return Finding(r.id, r.severity, pointer, message, r.hint)


def iter_rules() -> Iterator[Rule]:
    """Rules sorted by id."""
    for k in sorted(RULES):
        yield RULES[k]
