"""What every rule band receives: the packet (a decoded struct), a context of values computed
once per packet, and ``add`` to report a finding.

A band module declares its rules beside its checks and offers ``check(p, ctx, add)``; the
dispatcher in :mod:`._checks` calls every band's ``check`` for every packet, with no guard
of its own, so a new rule cannot be skipped by a shortcut elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Add", "Ctx"]

#: reports one finding: ``(rule_id, json_pointer, message)``
Add = Callable[[tuple[str, str, str]], None]


@dataclass(slots=True)
class Ctx:
    """Values several bands share, computed once per packet."""

    #: the packet's status value (``passed``, ``failed``, ``error``, ``skipped``)
    status: str
    #: whether the packet claims a speedup (``timing.speedup`` present)
    claim: bool
    #: now + 1 day as ``YYYY-MM-DDTHH:MM:SS`` (UTC): later timestamps are in the future
    future: str
