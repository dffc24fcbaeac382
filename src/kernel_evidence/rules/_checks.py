"""The dispatcher: every rule band, over every packet.

Rule ids are stable, one band per hundred: KE0xx input and identity (:mod:`.identity`),
KE1xx replay (:mod:`.replay`), KE2xx baseline (:mod:`.baseline`), KE3xx claim
(:mod:`.claim`), KE4xx status and correctness (:mod:`.status`), KE5xx timing statistics
(:mod:`.statistics`), KE6xx physical limits (:mod:`.physics`), KE7xx tolerance
(:mod:`.tolerance`), KE8xx hardware (:mod:`.hardware`), KE9xx raw profiler tables
(:mod:`.rawtable`), then the bands of later hundreds.

Each band module declares its rules beside their checks and offers ``check(p, ctx, add)``
(see :mod:`._context`). :func:`check_packet` builds the per-packet context once and calls
every band's ``check`` for every packet: it has no shortcut of its own, so a rule added to a
band cannot be skipped here. A band may skip its own work when it has nothing to say (its
guard sits beside the rules it guards). Adding a band is one line in :data:`BANDS`.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from . import (
    baseline,
    claim,
    cost,
    hardware,
    identity,
    physics,
    profile,
    rawtable,
    replay,
    serving,
    statistics,
    status,
    tolerance,
)
from ._common import CACHED_CHARS as _CACHED_CHARS  # noqa: F401  (the caches' bound, here too)
from ._context import Ctx
from .claim import computed_speedup
from .hardware import _UNIDENTIFIED_CACHE  # noqa: F401
from .identity import current_future, future_limit, identity_finding
from .statistics import _ORDER_CACHE, _PCT_CACHE  # noqa: F401

__all__ = ["BANDS", "check_batch", "check_packet", "computed_speedup", "future_limit", "identity_finding"]

#: every band, in the order its findings are reported
BANDS: tuple[ModuleType, ...] = (
    identity,
    replay,
    baseline,
    claim,
    status,
    statistics,
    physics,
    tolerance,
    hardware,
    rawtable,
    serving,
    profile,
    cost,
)

_CHECKS = tuple(band.check for band in BANDS)


def check_packet(p: Any, future: str | None = None) -> list[tuple[str, str, str]]:
    """Every rule over one decoded packet: ``(rule_id, pointer, message)`` triples.

    ``future`` is :func:`future_limit` when the caller has just read it (for a batch)."""
    out: list[tuple[str, str, str]] = []
    add = out.append
    t = p.timing
    ctx = Ctx(
        p.status._value_,  # not .value: the enum property costs a Python call
        t is not None and t.speedup is not None,
        future if future is not None else current_future(),
    )
    for check in _CHECKS:
        check(p, ctx, add)
    return out


def check_batch(packets: list[Any], future: str | None = None) -> list[list[tuple[str, str, str]]]:
    """:func:`check_packet` of each packet (None for a record that is not one), band by
    band: each band runs over the whole batch before the next, so its code stays warm in
    the processor's caches (about twice as fast as every band per packet in turn, with 13
    bands). Every band still checks every packet; the findings of a packet come in band
    order, as from :func:`check_packet`."""
    if future is None:
        future = current_future()
    outs: list[list[tuple[str, str, str]]] = []
    todo: list[tuple[Any, Ctx, Any]] = []
    for p in packets:
        out: list[tuple[str, str, str]] = []
        outs.append(out)
        if p is None:
            continue
        t = p.timing
        todo.append((p, Ctx(p.status._value_, t is not None and t.speedup is not None, future), out.append))
    for check in _CHECKS:
        for p, ctx, add in todo:
            check(p, ctx, add)
    return outs
