"""The rule engine: rule registry, findings, reports and evidence grades.

One engine serves the library, the CLI and CI. Rules are declared with their id, severity,
hint and documentation; :func:`kernel_evidence.rules._checks.check_packet` checks them all in
one pass over a decoded packet (:data:`kernel_evidence._codec.structs.PacketStruct`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Finding", "Grade", "Report", "Rule", "RULES", "declare", "finding", "iter_rules"]

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Rule:
    """A validation rule: stable id, severity, what it checks, what to do when it fires."""

    id: str
    severity: Severity
    title: str
    hint: str
    doc: str
    #: the best grade a packet with this warning can have (``B`` unless declared ``C``: a
    #: warning about a suspicious claim, not a missing record); None for errors and infos
    caps: Literal["B", "C"] | None = None


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


class Report:
    """Every finding for one packet (or one unreadable document), and its grade.

    The grade is computed when first read, so a batch that only needs the verdict does not
    pay for it.
    """

    __slots__ = ("source", "location", "packet_id", "findings", "_grade", "_packet")

    def __init__(
        self,
        source: str | None,
        location: str | None,
        packet_id: str | None,
        findings: list[Finding] | None = None,
        grade: Grade | None = None,
        packet: Any = None,
    ) -> None:
        self.source = source
        self.location = location
        self.packet_id = packet_id
        self.findings = findings if findings is not None else []
        self._grade = grade
        self._packet = packet

    @property
    def grade(self) -> Grade:
        if self._grade is None:
            if self._packet is None:
                self._grade = Grade("F", ("invalid: the document could not be read as a packet",))
            else:
                self._grade = grade_packet(self._packet, self.findings)
                self._packet = None
        return self._grade

    def __repr__(self) -> str:
        return f"Report(source={self.source!r}, location={self.location!r}, packet_id={self.packet_id!r}, findings={self.findings!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Report) and (
            self.source,
            self.location,
            self.packet_id,
            self.findings,
            self.grade,
        ) == (other.source, other.location, other.packet_id, other.findings, other.grade)

    @property
    def ok(self) -> bool:
        """True when no finding is an error."""
        findings = self.findings
        return not findings or not any(f.severity == "error" for f in findings)

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


#: every rule by id
RULES: dict[str, Rule] = {}


def declare(
    id: str, severity: Severity, title: str, hint: str, doc: str, *, caps: Literal["B", "C"] | None = None
) -> None:
    """Register a rule: its id, severity, title, hint and documentation; a warning's
    ``caps`` is the best grade a packet that has it can get (``B`` when not given)."""
    if id in RULES:
        raise ValueError(f"rule {id} registered twice")
    if severity == "warning":
        caps = caps or "B"
    elif caps is not None:
        raise ValueError(f"rule {id}: only warnings cap the grade (errors make it F)")
    RULES[id] = Rule(id, severity, title, hint, doc, caps)


def finding(rule_id: str, pointer: str, message: str) -> Finding:
    r = RULES[rule_id]
    return Finding(r.id, r.severity, pointer, message, r.hint)


def iter_rules() -> Iterator[Rule]:
    """Rules sorted by id, numerically (KE904 before KE1001)."""
    for k in sorted(RULES, key=lambda k: (len(k), k)):
        yield RULES[k]


# last: the grading module imports Finding and Grade from here (an import inside the
# ``grade`` property would run the import machinery for every packet)
from ._grade import grade_packet  # noqa: E402
