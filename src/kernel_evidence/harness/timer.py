"""Honest timing: warmup, repeats under a stop rule, fresh inputs, the baseline interleaved.

>>> timer = Timer(warmup=2, stop=StopRule(min_repeats=5, max_repeats=5))
>>> m = timer.measure(lambda: sum(range(100)))
>>> m.repeats, m.method
(5, 'host_clock')

The rules, and why (see ``docs/harness.md``):

* **Warmup** calls run first and are discarded (first-call compilation, lazy allocation,
  cold instruction caches).
* **Stop rule**: at least ``min_repeats``, at most ``max_repeats``; stop early once the
  relative half-width of the median's confidence interval is under ``target_rel_ci``, or
  when ``time_budget_s`` of wall time is spent. What stopped it is recorded.
* **Fresh inputs**: ``setup`` is called before every timed call, outside the timed region,
  and its result is passed to the function, so a candidate that caches its last output
  cannot pass.
* **Interleaving**: :meth:`Timer.compare` runs candidate and baseline alternately
  (ABBA order, same fresh inputs per round), so drift (thermal, clocks, other tenants)
  hits both alike.
* **Clock**: CUDA events when the harness already imported ``torch`` and CUDA is
  available (the timer never imports torch itself); ``time.perf_counter_ns`` otherwise.
* **Statistics**: median, percentiles, and a distribution-free confidence interval of the
  median from order statistics; every sample is kept.
"""

from __future__ import annotations

import inspect
import itertools
import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..models import Baseline, Speedup, Stats, Timing
from ..units import convert, to_base
from ._stats import Summary, summarize

__all__ = ["Measurement", "MeasurementTimeout", "StopRule", "Timer"]

TimeUnit = Literal["ns", "us", "ms", "s"]


class MeasurementTimeout(TimeoutError):
    """One call took longer than the timer's ``call_timeout_s``."""


@dataclass(frozen=True)
class StopRule:
    """When to stop repeating.

    Repeats continue until ``min_repeats`` are done, then stop at the first of: the
    median's CI half-width under ``target_rel_ci`` of the median; ``time_budget_s`` of
    measuring; ``max_repeats``.
    """

    min_repeats: int = 10
    max_repeats: int = 200
    target_rel_ci: float | None = 0.01
    time_budget_s: float | None = 2.0
    ci_level: float = 0.95

    def __post_init__(self) -> None:
        if self.min_repeats < 1 or self.max_repeats < self.min_repeats:
            raise ValueError(
                f"expected 1 <= min_repeats <= max_repeats, got {self.min_repeats} and {self.max_repeats}"
            )
        if not 0.0 < self.ci_level < 1.0:
            raise ValueError(f"expected 0 < ci_level < 1, got {self.ci_level}")
        for name in ("target_rel_ci", "time_budget_s"):
            value = getattr(self, name)
            if value is not None and not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"expected {name} to be a finite number >= 0 or None, got {value}")

    def describe(self) -> str:
        """One line for ``timing.stop_rule``."""
        parts = [f"min {self.min_repeats}", f"max {self.max_repeats} repeats"]
        if self.target_rel_ci is not None:
            parts.append(f"until {self.ci_level:.0%} CI half-width of the median < {self.target_rel_ci:.2%}")
        if self.time_budget_s is not None:
            parts.append(f"or {self.time_budget_s:g} s budget")
        return ", ".join(parts)


def _rel_half_width(s: Summary) -> float:
    if s.median <= 0:
        return math.inf
    return (s.ci_high - s.ci_low) / 2.0 / s.median


@dataclass
class Measurement:
    """Samples of one timed function and how they were taken. Samples are in nanoseconds."""

    samples_ns: list[float]
    method: str
    warmup: int
    stop_rule: str
    stop_reason: str
    cache_policy: Literal["flushed", "warm", "cold_start", "unknown"]
    synchronized: bool
    interleaved: bool = False
    inputs_regenerated: bool = False
    ci_level: float = 0.95
    #: which :meth:`Timer.compare` call measured this (set by the timer; None when unknown)
    pair: int | None = field(default=None, repr=False)
    _summary: Summary | None = field(default=None, repr=False)

    @property
    def repeats(self) -> int:
        """Number of timed calls."""
        return len(self.samples_ns)

    @property
    def summary(self) -> Summary:
        """Summary statistics in nanoseconds (computed once)."""
        if self._summary is None:
            self._summary = summarize(self.samples_ns, self.ci_level)
        return self._summary

    @property
    def median_ns(self) -> float:
        """Median time per call in nanoseconds."""
        return self.summary.median

    def stats(self, unit: TimeUnit = "us", *, keep_samples: bool = True) -> Stats:
        """The ``timing.stats`` model in ``unit``, with every sample unless told otherwise."""
        s = self.summary
        f = convert(1.0, "ns", unit)
        return Stats(
            unit=unit,
            median=s.median * f,
            mean=s.mean * f,
            std=s.std * f,
            min=s.min * f,
            max=s.max * f,
            percentiles={k: v * f for k, v in s.percentiles.items()},
            n=s.n,
            samples=[v * f for v in self.samples_ns] if keep_samples else None,
            ci_low=s.ci_low * f,
            ci_high=s.ci_high * f,
            ci_level=round(s.ci_level, 6),
        )

    def interleaved_with(self, baseline: Measurement) -> bool:
        """True when this measurement and ``baseline`` were interleaved with each other.

        Both must say so, and when the timer paired them (:meth:`Timer.compare` sets
        :attr:`pair`), it must be the same :meth:`Timer.compare` call: two measurements
        each interleaved with something else were not interleaved with each other.
        """
        if baseline is self or not (self.interleaved and baseline.interleaved):
            return False
        if self.pair is None and baseline.pair is None:
            return True  # built by hand: the flags are all there is
        return self.pair == baseline.pair

    def timing(
        self,
        *,
        shape_id: str | None = None,
        baseline: Measurement | None = None,
        provider: str | None = None,
        version: str | None = None,
        call: str | None = None,
        unit: TimeUnit = "us",
        claim_speedup: bool = True,
    ) -> Timing:
        """The ``timing`` category; with a baseline measurement, the baseline and the speedup.

        The speedup (``baseline median / candidate median``) is only stated when the
        baseline is named (``provider``) and ``claim_speedup`` is true; the recorder drops
        it from any packet that did not pass.
        """
        base = None
        speedup = None
        stats = self.stats(unit)
        interleaved = self.interleaved
        if baseline is not None:
            interleaved = self.interleaved_with(baseline)
        if baseline is not None or provider is not None:
            base_stats = baseline.stats(unit) if baseline is not None else None
            base = Baseline(
                provider=provider,
                version=version,
                call=call,
                same_session=True if baseline is not None else None,
                interleaved=interleaved if baseline is not None else None,
                stats=base_stats,
            )
            if base_stats is not None and provider and claim_speedup:
                value = _median_ratio(base_stats, stats)
                if value is not None:
                    speedup = Speedup(value=value, basis="median")
        notes = f"stopped: {self.stop_reason}"
        if self.inputs_regenerated:
            notes += "; inputs regenerated before every timed call"
        return Timing(
            method=self.method,
            warmup=self.warmup,
            repeats=self.repeats,
            shape_id=shape_id,
            stats=stats,
            cache_policy=self.cache_policy,
            clock_policy="unknown",
            synchronized=self.synchronized,
            interleaved=interleaved,
            stop_rule=self.stop_rule,
            notes=notes,
            baseline=base,
            speedup=speedup,
        )


def _median_ratio(base: Stats, cand: Stats) -> float | None:
    """``baseline median / candidate median`` from the recorded statistics, in seconds (as
    the validator's KE301 check computes it); None when that is not a positive finite number
    (a median of zero, or one that underflows)."""
    if base.median is None or cand.median is None:
        return None
    den = to_base(cand.median, cand.unit)
    num = to_base(base.median, base.unit)
    if not (den > 0 and num > 0):
        return None
    value = num / den
    return value if 0 < value < math.inf else None


Fn = Callable[..., Any]

#: a distinct number per :meth:`Timer.compare` call, to pair its two measurements
_PAIRS = itertools.count(1)


def _is_lazy(result: Any) -> bool:
    """A result whose work has not run yet: a generator, coroutine or async generator."""
    return inspect.isgenerator(result) or inspect.iscoroutine(result) or inspect.isasyncgen(result)


class _Clock:
    """Times one call: CUDA events around it, or the host clock."""

    method = "host_clock"

    def __init__(self, synchronize: Callable[[], None] | None) -> None:
        self._sync = synchronize

    def time_ns(self, fn: Fn, args: tuple[Any, ...]) -> tuple[float, Any]:
        """The time of one call in nanoseconds, and what it returned."""
        sync = self._sync
        if sync is not None:
            sync()
        t0 = time.perf_counter_ns()
        result = fn(*args)
        if sync is not None:
            sync()
        return float(time.perf_counter_ns() - t0), result


class _CudaEventClock(_Clock):
    method = "cuda_events"

    def __init__(self, torch: Any) -> None:
        super().__init__(torch.cuda.synchronize)
        self._torch = torch

    def time_ns(self, fn: Fn, args: tuple[Any, ...]) -> tuple[float, Any]:
        cuda = self._torch.cuda
        start = cuda.Event(enable_timing=True)
        end = cuda.Event(enable_timing=True)
        cuda.synchronize()
        start.record()
        result = fn(*args)
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) * 1e6, result  # ms -> ns


def _torch_cuda() -> Any | None:
    torch = sys.modules.get("torch")  # only when the harness imported it already
    if torch is None:
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 - a broken torch install means "no CUDA"
        return None


class Timer:
    """Measures a function under the rules in the module docstring.

    ``setup`` (per call) returns the arguments for the timed function, regenerated every
    time; ``flush`` runs before every timed call (e.g. writes a buffer larger than the last
    level cache) and makes the cache policy ``flushed``; ``synchronize`` is called before
    and after a host-clock measurement (a device sync); without it the timed function is
    taken to be synchronous (CPU code), which is what ``synchronized`` records.
    ``clock`` is ``"auto"``, ``"host"`` or ``"cuda_events"``. ``call_timeout_s`` raises
    :class:`MeasurementTimeout` (a :class:`TimeoutError`) after any call that took longer.
    """

    def __init__(
        self,
        *,
        warmup: int = 3,
        stop: StopRule | None = None,
        clock: Literal["auto", "host", "cuda_events"] = "auto",
        flush: Callable[[], Any] | None = None,
        synchronize: Callable[[], None] | None = None,
        call_timeout_s: float | None = None,
    ) -> None:
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"expected warmup to be an int >= 0, got {warmup!r}")
        if call_timeout_s is not None and not (call_timeout_s > 0 and math.isfinite(call_timeout_s)):
            raise ValueError(
                f"expected call_timeout_s to be a finite number > 0 or None, got {call_timeout_s}"
            )
        self.warmup = warmup
        self.stop = stop or StopRule()
        self.flush = flush
        self.call_timeout_s = call_timeout_s
        self._lazy_warned: set[int] = set()  # functions warned about in the current call
        torch = _torch_cuda() if clock in ("auto", "cuda_events") else None
        if clock == "cuda_events" and torch is None:
            raise ValueError("clock='cuda_events' needs torch (already imported) with CUDA available")
        self._clock: _Clock = _CudaEventClock(torch) if torch is not None else _Clock(synchronize)

    @property
    def method(self) -> str:
        """``cuda_events`` or ``host_clock``."""
        return self._clock.method

    def _one(self, fn: Fn, args: tuple[Any, ...], what: str) -> float:
        """One flushed, timed call; ``what`` ("warmup call 1 of 3", "timed call 4") is
        added as a note to an exception it raises (Python 3.11+), so a failure packet says
        whether warmup or a timed repeat failed."""
        try:
            if self.flush is not None:
                self.flush()
            ns, result = self._clock.time_ns(fn, args)
            if self.call_timeout_s is not None and ns > self.call_timeout_s * 1e9:
                raise MeasurementTimeout(
                    f"one call took {ns / 1e9:.3g} s, over the {self.call_timeout_s:g} s limit per call"
                    f" ({what})"
                )
        except Exception as exc:
            if hasattr(exc, "add_note") and not isinstance(exc, MeasurementTimeout):
                exc.add_note(f"raised by the timer during {what}")
            raise
        if _is_lazy(result):
            if inspect.iscoroutine(result):
                result.close()  # never awaited: close it to avoid a second warning
            if id(fn) in self._lazy_warned:
                return ns
            self._lazy_warned.add(id(fn))
            name = getattr(fn, "__qualname__", None) or type(fn).__name__
            warnings.warn(
                f"{name} returned a {type(result).__name__}: its work runs lazily, after the"
                " timed region, so the time measured is not the time of that work",
                RuntimeWarning,
                stacklevel=3,
            )
        return ns

    @staticmethod
    def _args(setup: Callable[[], Any] | None) -> tuple[Any, ...]:
        if setup is None:
            return ()
        made = setup()
        return made if isinstance(made, tuple) else (made,)

    def _should_stop(self, series: list[list[float]], started: float) -> str | None:
        rule = self.stop
        n = len(series[0])
        if n >= rule.max_repeats:
            return f"max_repeats ({rule.max_repeats}) reached"
        if n < rule.min_repeats:
            return None
        if rule.time_budget_s is not None and time.perf_counter() - started >= rule.time_budget_s:
            return f"time budget ({rule.time_budget_s:g} s) spent after {n} repeats"
        if rule.target_rel_ci is not None and (n == rule.min_repeats or n % 5 == 0):
            summaries = [summarize(s, rule.ci_level) for s in series]
            # too few samples for the level: the interval is the full range at a lower
            # level, and a narrow one (constant samples) says nothing at the asked level
            reached = all(sm.ci_level >= rule.ci_level - 1e-9 for sm in summaries)
            widths = [_rel_half_width(sm) for sm in summaries]
            if reached and max(widths) < rule.target_rel_ci:
                return f"CI half-width {max(widths):.2%} < {rule.target_rel_ci:.2%} after {n} repeats"
        return None

    def _measurement(
        self,
        samples: list[float],
        reason: str,
        *,
        interleaved: bool,
        regenerated: bool,
        pair: int | None = None,
    ) -> Measurement:
        # CUDA events synchronise; a host clock is synchronised by the hook, or needs none
        # when no device framework is in use (the call is CPU work, done when it returns)
        sync = (
            isinstance(self._clock, _CudaEventClock) or self._clock._sync is not None or _torch_cuda() is None
        )
        return Measurement(
            samples_ns=samples,
            method=self.method,
            warmup=self.warmup,
            stop_rule=self.stop.describe(),
            stop_reason=reason,
            cache_policy="flushed" if self.flush is not None else "warm",
            synchronized=sync,
            interleaved=interleaved,
            inputs_regenerated=regenerated,
            ci_level=self.stop.ci_level,
            pair=pair,
        )

    def measure(self, fn: Fn, *, setup: Callable[[], Any] | None = None) -> Measurement:
        """Time ``fn(*setup())`` (or ``fn()``) under the stop rule.

        A function that returns a generator or coroutine (work that runs lazily, after the
        timed region) gets a ``RuntimeWarning``: its time is not the time of that work.
        """
        self._lazy_warned = set()
        for i in range(self.warmup):
            self._one(fn, self._args(setup), f"warmup call {i + 1} of {self.warmup}")
        samples: list[float] = []
        started = time.perf_counter()
        while True:
            samples.append(self._one(fn, self._args(setup), f"timed call {len(samples) + 1}"))
            reason = self._should_stop([samples], started)
            if reason:
                return self._measurement(samples, reason, interleaved=False, regenerated=setup is not None)

    def compare(
        self, candidate: Fn, baseline: Fn, *, setup: Callable[[], Any] | None = None
    ) -> tuple[Measurement, Measurement]:
        """Time candidate and baseline interleaved (ABBA), each round on the same fresh inputs.

        The stop rule applies to both: it stops when both medians are tight enough, or at
        the shared budget or repeat cap. Returns ``(candidate, baseline)``, paired: their
        :attr:`Measurement.pair` is the same, so :meth:`Measurement.timing` records them as
        interleaved with each other (and a measurement from another call as not).
        """
        self._lazy_warned = set()
        for i in range(self.warmup):
            args = self._args(setup)
            what = f"warmup call {i + 1} of {self.warmup}"
            self._one(candidate, args, f"candidate {what}")
            self._one(baseline, args, f"baseline {what}")
        cand: list[float] = []
        base: list[float] = []
        started = time.perf_counter()
        rnd = 0
        while True:
            args = self._args(setup)
            what = f"timed call {rnd + 1}"
            if rnd % 2 == 0:
                cand.append(self._one(candidate, args, f"candidate {what}"))
                base.append(self._one(baseline, args, f"baseline {what}"))
            else:
                base.append(self._one(baseline, args, f"baseline {what}"))
                cand.append(self._one(candidate, args, f"candidate {what}"))
            rnd += 1
            reason = self._should_stop([cand, base], started)
            if reason:
                regen = setup is not None
                pair = next(_PAIRS)
                return (
                    self._measurement(cand, reason, interleaved=True, regenerated=regen, pair=pair),
                    self._measurement(base, reason, interleaved=True, regenerated=regen, pair=pair),
                )
