"""Timer integrity: the clock functions are the harness's own, and a known delay measures as one.

A candidate runs in the harness's process, so it can replace ``time.perf_counter_ns`` or
``torch.cuda.Event.elapsed_time`` and report any time it likes (GPU MODE reference-kernels
#162 was such a patch). :class:`ClockGuard` keeps the functions a timer depends on as they
were when this module was imported (the ``time`` functions) or when the timer was made
(``torch.cuda``), says which were replaced, and puts them back so that later candidates are
timed with the real clock. A calibration times a busy-wait of known length, ended by a
reference clock held here, through the timer's own path: a clock that runs slow, or one
replaced where no identity check looks, measures it short.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["CALIBRATION_NS", "ClockGuard", "busy_wait", "calibration_problem", "put_back_time_functions"]

#: the ``time`` functions a timer reads, as they were when the harness was imported
_TIME_FUNCTIONS: dict[str, Any] = {
    name: inspect.getattr_static(time, name) for name in ("perf_counter_ns", "perf_counter", "monotonic_ns")
}
#: the reference clock of the calibration; a private reference, so a patch of
#: ``time.monotonic_ns`` does not change it
_reference_ns: Callable[[], int] = time.monotonic_ns

#: length of the calibration busy-wait
CALIBRATION_NS = 2_000_000
#: a calibration passes when the timer measures the busy-wait within these bounds: at
#: least 0.8 of it (a clock that runs slow or stands still) and at most 50 times it plus
#: half a second (preemption of a loaded machine adds time, never removes it)
_LOW = 0.8
_HIGH_FACTOR, _HIGH_EXTRA_NS = 50.0, 500_000_000


def busy_wait(ns: int = CALIBRATION_NS) -> Callable[..., None]:
    """A function that spins until ``ns`` nanoseconds have passed on the reference clock."""

    def spin(*_: Any) -> None:
        end = _reference_ns() + ns
        while _reference_ns() < end:
            pass

    return spin


def calibration_problem(measured_ns: float, ns: int = CALIBRATION_NS) -> str | None:
    """What is wrong with a busy-wait of ``ns`` measured as ``measured_ns``, or None."""
    if measured_ns < _LOW * ns:
        return f"a {ns / 1e6:g} ms busy-wait measured {measured_ns / 1e6:.3g} ms (the clock runs slow or stands still)"
    if measured_ns > _HIGH_FACTOR * ns + _HIGH_EXTRA_NS:
        return f"a {ns / 1e6:g} ms busy-wait measured {measured_ns / 1e6:.3g} ms (the clock runs fast)"
    return None


#: ``torch.cuda``'s timing functions as first seen with torch imported (by the recorder,
#: when a candidate's block starts: before any candidate of that block ran)
_TORCH_CLOCKS: list[tuple[Any, str, Any, str]] | None = None


def _torch_clocks() -> list[tuple[Any, str, Any, str]]:
    """``(owner, attribute, original, label)`` of torch's CUDA timing functions, once torch
    has been imported by the harness (never imported here); empty before that."""
    global _TORCH_CLOCKS
    if _TORCH_CLOCKS is None:
        torch = sys.modules.get("torch")
        cuda = getattr(torch, "cuda", None)
        event = getattr(cuda, "Event", None)
        if cuda is None or event is None:
            return []  # not cached: torch may be imported later
        _TORCH_CLOCKS = [
            (owner, attr, inspect.getattr_static(owner, attr), label)
            for owner, attr, label in (
                (cuda, "synchronize", "torch.cuda.synchronize"),
                (event, "record", "torch.cuda.Event.record"),
                (event, "synchronize", "torch.cuda.Event.synchronize"),
                (event, "elapsed_time", "torch.cuda.Event.elapsed_time"),
            )
            if hasattr(owner, attr)
        ]
    return _TORCH_CLOCKS


def put_back_time_functions() -> list[str]:
    """The clock functions a timer reads (``time``'s, and ``torch.cuda``'s once torch is
    imported) that are no longer the originals, each put back (the recorder calls this when
    a candidate's block starts and ends, so that a patch made outside a measurement is
    neither missed nor blamed on the next candidate)."""
    out = []
    for name, original in _TIME_FUNCTIONS.items():
        if inspect.getattr_static(time, name, None) is not original:
            setattr(time, name, original)
            out.append(f"time.{name}")
    for owner, attr, original, label in _torch_clocks():
        if inspect.getattr_static(owner, attr, None) is not original:
            setattr(owner, attr, original)
            out.append(label)
    return out


class ClockGuard:
    """Watches the functions a timer depends on: ``time.perf_counter_ns``, ``perf_counter``,
    ``monotonic_ns``, the timer module's own ``time``, and with CUDA events
    ``torch.cuda.synchronize`` and ``torch.cuda.Event.record`` / ``synchronize`` /
    ``elapsed_time``."""

    def __init__(self, *, module: Any, torch: Any | None = None) -> None:
        # (owner, attribute, original, label, restore?)
        self._watched: list[tuple[Any, str, Any, str, bool]] = [
            (time, name, fn, f"time.{name}", True) for name, fn in _TIME_FUNCTIONS.items()
        ]
        # the timer module's binding of `time` is reported, not put back: a test that swaps
        # in a fake clock there is, to this guard, a patched timer like any other
        self._watched.append((module, "time", time, f"{module.__name__}.time", False))
        if torch is not None:
            cuda = torch.cuda
            for owner, attr, label in (
                (cuda, "synchronize", "torch.cuda.synchronize"),
                (cuda.Event, "record", "torch.cuda.Event.record"),
                (cuda.Event, "synchronize", "torch.cuda.Event.synchronize"),
                (cuda.Event, "elapsed_time", "torch.cuda.Event.elapsed_time"),
            ):
                self._watched.append((owner, attr, inspect.getattr_static(owner, attr), label, True))

    @property
    def labels(self) -> list[str]:
        """The names of the watched functions."""
        return [label for *_, label, _restore in self._watched]

    def replaced(self) -> list[str]:
        """The watched functions that are no longer the originals; each one that can be is
        put back."""
        out = []
        for owner, attr, original, label, restore in self._watched:
            try:
                now = inspect.getattr_static(owner, attr)
            except AttributeError:
                now = None
            if now is not original:
                out.append(label)
                if restore:
                    setattr(owner, attr, original)
        return out
