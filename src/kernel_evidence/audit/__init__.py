"""Audit a whole result set: which results cannot be trusted, and why.

>>> from kernel_evidence.audit import audit_packets
>>> from kernel_evidence.strategies import example_packet
>>> result = audit_packets([example_packet()])
>>> result.packets, result.fails("critical")
(1, False)

:func:`audit` reads packets (JSON, JSONL, zstd, folders of them) or any harness output an
adapter reads (named with ``adapter``, else recognised by content where that is cheap and
certain) and checks every packet:

- every validation rule (:mod:`kernel_evidence.rules`), each finding ranked by what it
  means for the result (:data:`~._packet.RULE_LEVELS`);
- every speedup recomputed from the raw candidate and baseline timings (AU201);
- the physical floor: no time below the speed-of-light time of its work on that device
  (AU301), work stated or derived from the operator and the shape;
- a harness's own reward-hack flag (AU101); tolerances so wide that a wrong output passes,
  or passes under a tolerance nobody recorded (AU401, AU402);

and then the set as a whole:

- one output digest for different inputs (AU501): an output that does not depend on its
  input was cached or is constant;
- a speedup that jumps more than ``lineage_jump`` times over the candidate's parent in one
  step (AU601): by ``lineage.parent_packet_id``, else the previous ``iteration`` of the
  same run or candidate on the same shape;
- a candidate that passes some workloads and fails others (AU701), or passes its public
  run and fails its secret one (AU702: an extension's ``secret`` flag, as kernelbot's).

The result ranks the suspects (worst level, then score) and sums up each candidate, model
and submitter. ``kevidence audit`` renders it as text, JSON, CSV or Markdown
(:mod:`._render`) and gates on it with ``--fail-on``. See ``docs/audit.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from .._codec.structs import PacketStruct
from .._gc import paused_gc
from ..io import Limits
from ..models import EvidencePacket
from ..rules import Report, validate_struct
from ._inputs import Item, detect, read_items
from ._model import LEVELS, AuditResult, GroupSummary, Level, Reason, Suspect, level_rank
from ._packet import RULE_LEVELS, Facts, inspect_packet, rule_level
from ._render import FORMATS, render

__all__ = [
    "FORMATS",
    "LEVELS",
    "LINEAGE_JUMP",
    "RULE_LEVELS",
    "AuditResult",
    "GroupSummary",
    "Level",
    "Reason",
    "Suspect",
    "audit",
    "audit_packets",
    "detect",
    "level_rank",
    "render",
]

#: the largest speedup over its parent a candidate is believed to make in one step
LINEAGE_JUMP = 10.0

Progress = Callable[[int], None]
_to_struct = msgspec.json.Decoder(PacketStruct)
#: call ``progress`` after this many packets
_PROGRESS_EVERY = 1000


def audit(
    paths: str | Sequence[str],
    *,
    adapter: str | None = None,
    options: dict[str, Any] | None = None,
    limits: Limits | None = None,
    lineage_jump: float = LINEAGE_JUMP,
    progress: Progress | None = None,
) -> AuditResult:
    """Audit every packet in ``paths`` (files or folders; ``-`` for standard input).

    ``adapter`` names the tool that wrote all of them (``options`` are its ``--opt``
    options); without it each file is read as packets or recognised by content
    (:func:`detect`). ``progress`` is called with the number of packets audited so far,
    every thousand packets. Raises a :class:`~kernel_evidence.errors.KernelEvidenceError`
    for an input that cannot be read at all; a document that is not a packet is listed in
    :attr:`AuditResult.unreadable` and the rest is audited.
    """
    names = [paths] if isinstance(paths, str) else list(paths)
    warnings: list[str] = []
    items = read_items(names, adapter=adapter, options=dict(options or {}), limits=limits, warnings=warnings)
    # a record per packet and a suspect per finding, none of them cyclic: no collection to run
    with paused_gc():
        result = _Auditor(lineage_jump, progress).run(items)
    result.warnings = warnings + result.warnings
    result.inputs = names
    return result


def audit_packets(
    packets: Iterable[EvidencePacket | dict[str, Any] | bytes],
    *,
    lineage_jump: float = LINEAGE_JUMP,
) -> AuditResult:
    """Audit packets already in memory (models, JSON data or JSON bytes)."""

    def items() -> Iterable[Item]:
        for i, p in enumerate(packets, 1):
            if isinstance(p, EvidencePacket):
                raw = p.to_json()
            elif isinstance(p, dict):
                raw = EvidencePacket.model_validate(p).to_json()
            else:
                raw = p
            struct = _to_struct.decode(raw)
            yield Item(struct, validate_struct(struct, "<packets>", f"item {i}"))

    with paused_gc():
        return _Auditor(lineage_jump, None).run(items())


class _Auditor:
    def __init__(self, lineage_jump: float, progress: Progress | None) -> None:
        self.jump = lineage_jump
        self.progress = progress
        self.suspects: list[Suspect] = []
        self.facts: list[tuple[Facts, Suspect | None, Report]] = []
        self.unreadable: list[tuple[str, str]] = []

    def run(self, items: Iterable[Item]) -> AuditResult:
        n = 0
        for item in items:
            if item.packet is None:
                f = item.report.findings[0] if item.report.findings else None
                self.unreadable.append((item.report.where(), f.message if f is not None else "unreadable"))
                continue
            self._one(item.packet, item.report)
            n += 1
            if self.progress is not None and n % _PROGRESS_EVERY == 0:
                self.progress(n)
        if self.progress is not None:
            self.progress(n)
        self._across()
        return self._result(n)

    def _one(self, p: Any, report: Report) -> None:
        reasons: list[Reason] = []
        for f in report.findings:
            level = rule_level(f.rule_id, f.severity)
            if level is not None:
                reasons.append(Reason(f.rule_id, level, f.message, f.pointer))
        own, facts = inspect_packet(p, frozenset(f.rule_id for f in report.findings))
        reasons.extend(own)
        suspect = self._suspect(facts, report, reasons) if reasons else None
        self.facts.append((facts, suspect, report))

    @staticmethod
    def _suspect(facts: Facts, report: Report, reasons: list[Reason]) -> Suspect:
        return Suspect(
            packet_id=facts.packet_id or report.packet_id,
            source=report.source,
            location=report.location,
            subject=facts.subject,
            candidate=facts.candidate,
            model=facts.model,
            submitter=facts.submitter,
            device=facts.device,
            status=facts.status,
            shape_id=facts.shape_id,
            claimed_speedup=facts.claimed,
            recomputed_speedup=facts.recomputed,
            reasons=reasons,
        )

    def _add(self, index: int, reason: Reason) -> None:
        facts, suspect, report = self.facts[index]
        if suspect is None:
            suspect = self._suspect(facts, report, [])
            self.facts[index] = (facts, suspect, report)
        suspect.reasons.append(reason)

    # ------------------------------------------------------------------ across packets

    def _across(self) -> None:
        self._same_outputs()
        self._lineage()
        self._mixed_candidates()

    def _mixed_candidates(self) -> None:
        """AU701: the passes of a candidate that fails other inputs numerically."""
        tally: dict[str, list[int]] = {}
        for f, _, _ in self.facts:
            if f.candidate is not None and f.status in ("passed", "failed"):
                tally.setdefault(f.candidate, [0, 0])[f.status == "failed"] += 1
        mixed = {k: v for k, v in tally.items() if v[0] and v[1]}
        if not mixed:
            return
        secret_failed = {
            f.candidate for f, _, _ in self.facts if f.secret is True and f.status == "failed" and f.candidate
        }
        for i, (f, _, _) in enumerate(self.facts):
            counts = mixed.get(f.candidate) if f.candidate is not None else None
            if (
                counts is not None
                and f.status == "passed"
                and f.secret is False
                and f.candidate in secret_failed
            ):
                self._add(
                    i,
                    Reason(
                        "AU702",
                        "high",
                        "passes its public run but fails the secret (held-back) run of the same candidate: "
                        "a result fitted to the public inputs",
                        "/status",
                    ),
                )
            elif counts is not None and f.status == "passed":
                self._add(
                    i,
                    Reason(
                        "AU701",
                        "medium",
                        f"its candidate fails {counts[1]} of its {sum(counts)} judged runs: a kernel "
                        "wrong on some inputs is not shown right on this one",
                        "/status",
                    ),
                )

    def _same_outputs(self) -> None:
        """AU501: one output digest for different inputs."""
        seen: dict[str, dict[tuple[Any, ...], int]] = {}
        for i, (f, _, _) in enumerate(self.facts):
            if f.input_key is None:
                continue
            for digest in f.outputs:
                seen.setdefault(digest, {}).setdefault(f.input_key, i)
        for digest, inputs in seen.items():
            if len(inputs) < 2:
                continue
            shapes = sorted(str(k[1] or dict(k[2])) for k in inputs)
            listed = ", ".join(shapes[:4]) + (f" and {len(shapes) - 4} more" if len(shapes) > 4 else "")
            for i in inputs.values():
                self._add(
                    i,
                    Reason(
                        "AU501",
                        "critical",
                        f"output {digest[:19]}... is the same for {len(inputs)} different inputs ({listed}): "
                        "an output that does not depend on its input was cached or is constant",
                        "",
                    ),
                )

    def _lineage(self) -> None:
        """AU601: a speedup far beyond the parent's in one step."""
        by_id = {f.packet_id: i for i, (f, _, _) in enumerate(self.facts) if f.packet_id}
        steps: dict[tuple[Any, ...], list[tuple[int, int]]] = {}
        for i, (f, _, _) in enumerate(self.facts):
            if f.parent is not None:
                j = by_id.get(f.parent)
                if j is not None:
                    self._jump(i, j, "its parent")
            elif f.iteration is not None and (f.run_id or f.candidate):
                key = (f.run_id or f.candidate, f.subject, f.shape_id)
                steps.setdefault(key, []).append((f.iteration, i))
        for chain in steps.values():
            chain.sort()
            for (it0, j), (it1, i) in zip(chain, chain[1:], strict=False):
                if it1 > it0:
                    self._jump(i, j, f"iteration {it0} of the same run")

    def _jump(self, i: int, j: int, what: str) -> None:
        child = self.facts[i][0]
        parent = self.facts[j][0]
        ratio = None
        if child.recomputed and parent.recomputed:
            ratio = child.recomputed / parent.recomputed
        elif child.seconds and parent.seconds and child.shape_id == parent.shape_id:
            ratio = parent.seconds / child.seconds
        if ratio is None or ratio <= self.jump:
            return
        pid = parent.packet_id or "?"
        self._add(
            i,
            Reason(
                "AU601",
                "high",
                f"{ratio:.3g}x faster than {what} ({pid[:19]}...) in one step; the audit believes at most "
                f"{self.jump:g}x",
                "/lineage",
            ),
        )

    # ------------------------------------------------------------------ summaries

    def _result(self, n: int) -> AuditResult:
        candidates: dict[str, GroupSummary] = {}
        models: dict[str, GroupSummary] = {}
        submitters: dict[str, GroupSummary] = {}
        suspects: list[Suspect] = []
        for f, s, _ in self.facts:
            if s is not None:
                suspects.append(s)
            for table, key in ((candidates, f.candidate), (models, f.model), (submitters, f.submitter)):
                if key is not None:
                    _count(table.setdefault(key, GroupSummary(key)), f, s)
        for g in candidates.values():
            if g.passed and g.failed:
                g.notes.append(f"AU701: passes {g.passed} and fails {g.failed} of its judged runs")
        suspects.sort(key=lambda s: (-level_rank(s.level), -s.score, s.where()))
        return AuditResult(
            packets=n,
            suspects=suspects,
            candidates=candidates,
            models=models,
            submitters=submitters,
            unreadable=self.unreadable,
        )


def _count(g: GroupSummary, f: Facts, s: Suspect | None) -> None:
    g.packets += 1
    if f.status == "passed":
        g.passed += 1
        sp = f.recomputed if f.recomputed is not None else f.claimed
        if sp is not None:
            g.speedups.append(sp)
    elif f.status == "failed":
        g.failed += 1
    elif f.status == "error":
        g.errored += 1
    if s is not None:
        g.by_level[s.level] += 1
