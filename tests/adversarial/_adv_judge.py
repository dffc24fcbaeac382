"""How the suite judges a packet: caught, or accepted, and by which rules.

A cheat is caught when the validator reports a finding at one of the lying fields (the
pointer itself, a parent other than the root, or a child) and the packet ends invalid or
graded C or lower. A finding elsewhere does not count: a rule that fires on a side effect
of the mutation has not caught the lie.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from _adv_build import LEGACY, finalize
from _adv_cheats import CHEATS, Cheat
from _adv_controls import CONTROLS

import kernel_evidence

__all__ = ["Verdict", "build_cheat", "judge_cheat", "related"]

_LOW = {"C", "D", "F"}


def related(found: str, lie: str) -> bool:
    """True when JSON pointer ``found`` is ``lie``, a non-root parent of it, or a child of it."""
    if found in ("", "/"):
        return False
    return found == lie or lie.startswith(found + "/") or found.startswith(lie + "/")


@dataclass(frozen=True)
class Verdict:
    ok: bool
    grade: str
    reasons: tuple[str, ...]
    findings: tuple[tuple[str, str, str, str], ...]  # (rule_id, severity, pointer, message)
    on_lie: tuple[str, ...]  # rule ids with a finding at a lying pointer

    @property
    def caught(self) -> bool:
        return bool(self.on_lie) and (not self.ok or self.grade in _LOW)


def build_cheat(c: Cheat) -> dict[str, Any]:
    """The control of ``c`` with its one lie, and the id recomputed as a cheater would."""
    p = copy.deepcopy(CONTROLS[c.control].build())
    c.mutate(p)
    if c.keeps_id:
        return p
    if c.structural or p["schema_version"] == LEGACY:  # the 0.2 models cannot give its id
        p.pop("packet_id", None)
        return p
    return finalize(p)


def judge(packet: dict[str, Any], pointers: tuple[str, ...] = (), *, as_bytes: bool = False) -> Verdict:
    """The validator's verdict on ``packet``, given as JSON data or (``as_bytes``) as the JSON
    bytes a file holds (the fast path the CLI and archives use)."""
    r = kernel_evidence.validate(json.dumps(packet).encode() if as_bytes else packet)
    findings = tuple((f.rule_id, f.severity, f.pointer, f.message) for f in r.findings)
    on_lie = tuple(sorted({f[0] for f in findings if any(related(f[2], lie) for lie in pointers)}))
    g = r.grade
    return Verdict(r.ok, g.letter, tuple(g.reasons), findings, on_lie)


def judge_cheat(name: str, *, as_bytes: bool = False) -> Verdict:
    c = CHEATS[name]
    return judge(build_cheat(c), c.pointers, as_bytes=as_bytes)
