"""Pause Python's cyclic garbage collector around bulk object construction."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["PROMOTE_CELLS", "paused_gc", "promote_survivors", "raw_cell_count"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic collector while building or dumping big packets.

    Hundreds of thousands of small acyclic objects (records, metric quantities, raw cells)
    otherwise trigger collections over and over, each rescanning the young objects; nothing
    built there forms cycles. The previous state is restored on exit.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


#: raw cells from which a freshly built packet's objects are promoted (see below)
PROMOTE_CELLS = 100_000


def raw_cell_count(packets: Any) -> int:
    """How many raw metric values the packets' profiler captures hold."""
    return sum(
        len(col) for p in packets for cap in p.profiler or () for col in (cap.raw_columns or {}).values()
    )


def promote_survivors() -> None:
    """Move what was just built to the collector's oldest generation without scanning it.

    Everything made while the collector was paused is young: the first allocation after the
    pause would scan all of it (~0.1 s for 8,000,000 raw cells in 400 lists), and the
    middle-generation pass soon after would scan it again, to find no cycle.
    ``gc.freeze()`` then ``gc.unfreeze()`` moves every tracked object of the process to the
    oldest generation in one step instead (so the host's own young objects wait for the next
    full collection too). Skipped when the host keeps objects frozen: unfreezing would undo
    that.
    """
    if hasattr(gc, "freeze") and gc.get_freeze_count() == 0:  # CPython only
        gc.freeze()
        gc.unfreeze()
