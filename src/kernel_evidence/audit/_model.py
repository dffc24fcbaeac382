"""What an audit finds: reasons, suspects, group summaries and the result, as plain data."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["LEVELS", "Level", "Reason", "Suspect", "GroupSummary", "AuditResult", "level_rank"]

Level = Literal["low", "medium", "high", "critical"]

#: the levels of a reason, weakest first: ``low`` is a gap in the evidence (no replay
#: command, no recorded tolerance), ``medium`` a rule broken in a way that does not change
#: the number, ``high`` a result that should not be believed as it stands, ``critical`` a
#: result that cannot be true (faster than the device allows, a claim its own timings
#: contradict, one output for different inputs)
LEVELS: tuple[Level, ...] = ("low", "medium", "high", "critical")
_RANK: dict[str, int] = {name: i for i, name in enumerate(LEVELS)}
#: what one reason of each level adds to a suspect's score (a critical reason outweighs
#: any number of gaps a set of a hundred thousand packets could give one packet)
_WEIGHT = {"low": 1, "medium": 10, "high": 100, "critical": 1000}


def level_rank(level: str) -> int:
    """The position of ``level`` in :data:`LEVELS` (``low`` is 0); ValueError for another word."""
    try:
        return _RANK[level]
    except KeyError:
        raise ValueError(f"expected one of {', '.join(LEVELS)}, got {level!r}") from None


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a packet is suspect: a stable code (a rule id ``KE301`` or an audit check
    ``AU201``), its level, what was found, and the JSON Pointer of the field concerned."""

    code: str
    level: Level
    message: str
    pointer: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "level": self.level, "message": self.message, "pointer": self.pointer}


@dataclass(slots=True)
class Suspect:
    """One packet with at least one reason, and what identifies it in the set."""

    packet_id: str | None
    source: str | None
    location: str | None
    subject: str | None
    candidate: str | None
    model: str | None
    submitter: str | None
    device: str | None
    status: str | None
    shape_id: str | None
    claimed_speedup: float | None
    recomputed_speedup: float | None
    reasons: list[Reason] = field(default_factory=list)

    @property
    def level(self) -> Level:
        """The highest level among the reasons."""
        return max((r.level for r in self.reasons), key=_RANK.__getitem__, default="low")

    @property
    def score(self) -> int:
        """The reasons' weights summed (critical 1000, high 100, medium 10, low 1)."""
        return sum(_WEIGHT[r.level] for r in self.reasons)

    def where(self) -> str:
        if self.source is None:
            return "<packet>"
        if not self.location:
            return self.source
        # a file's own place (``line 3``) follows its name; an adapter's description is set apart
        sep = ":" if self.location.startswith(("line ", "item ")) else ": "
        return f"{self.source}{sep}{self.location}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "packet_id": self.packet_id,
            "source": self.source,
            "location": self.location,
            "subject": self.subject,
            "candidate": self.candidate,
            "model": self.model,
            "submitter": self.submitter,
            "device": self.device,
            "status": self.status,
            "shape_id": self.shape_id,
            "claimed_speedup": self.claimed_speedup,
            "recomputed_speedup": self.recomputed_speedup,
            "level": self.level,
            "score": self.score,
            "reasons": [r.to_dict() for r in self.reasons],
        }


@dataclass
class GroupSummary:
    """The packets of one candidate, model or submitter: counts, speedups, suspects."""

    key: str
    packets: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    speedups: list[float] = field(default_factory=list)
    by_level: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LEVELS, 0))
    notes: list[str] = field(default_factory=list)

    @property
    def worst(self) -> Level | None:
        for name in reversed(LEVELS):
            if self.by_level[name]:
                return name
        return None

    def median_speedup(self) -> float | None:
        return statistics.median(self.speedups) if self.speedups else None

    def best_speedup(self) -> float | None:
        return max(self.speedups) if self.speedups else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "packets": self.packets,
            "passed": self.passed,
            "failed": self.failed,
            "errored": self.errored,
            "speedup_median": self.median_speedup(),
            "speedup_best": self.best_speedup(),
            "suspects_by_level": dict(self.by_level),
            "worst": self.worst,
            "notes": list(self.notes),
        }


@dataclass
class AuditResult:
    """The whole audit: the suspects ranked (worst first), summaries per candidate, model
    and submitter, the documents that could not be read, and the adapters' warnings."""

    packets: int
    suspects: list[Suspect]
    candidates: dict[str, GroupSummary]
    models: dict[str, GroupSummary]
    submitters: dict[str, GroupSummary]
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Suspects by their (highest) level."""
        out: dict[str, int] = dict.fromkeys(LEVELS, 0)
        for s in self.suspects:
            out[s.level] += 1
        return out

    def at_least(self, level: str) -> list[Suspect]:
        """The suspects whose level is ``level`` or higher."""
        floor = level_rank(level)
        return [s for s in self.suspects if _RANK[s.level] >= floor]

    def fails(self, threshold: str) -> bool:
        """Whether a CI gate at ``threshold`` (a level, or ``never``) fails: a suspect at or
        above it, or a document that could not be read (unless ``never``)."""
        if threshold == "never":
            return False
        return bool(self.unreadable) or bool(self.at_least(threshold))

    def to_dict(self) -> dict[str, Any]:
        return {
            "inputs": list(self.inputs),
            "packets": self.packets,
            "suspects_by_level": self.counts(),
            "unreadable": [{"where": w, "error": e} for w, e in self.unreadable],
            "suspects": [s.to_dict() for s in self.suspects],
            "candidates": [g.to_dict() for g in _ordered(self.candidates.values())],
            "models": [g.to_dict() for g in _ordered(self.models.values())],
            "submitters": [g.to_dict() for g in _ordered(self.submitters.values())],
            "warnings": list(self.warnings),
        }


def _ordered(groups: Iterable[GroupSummary]) -> list[GroupSummary]:
    """Worst groups first, then by name."""
    return sorted(groups, key=lambda g: (-(_RANK[g.worst] + 1 if g.worst else 0), g.key))
