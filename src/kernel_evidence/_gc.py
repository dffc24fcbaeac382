"""Pause Python's cyclic garbage collector around bulk object construction."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


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
