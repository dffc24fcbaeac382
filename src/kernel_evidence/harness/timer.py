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
  cannot pass. :meth:`Timer.compare` calls it once per side in every round: an in-place
  candidate cannot hand its output to the baseline as input.
* **Interleaving**: :meth:`Timer.compare` runs candidate and baseline alternately
  (ABBA order), so drift (thermal, clocks, other tenants) hits both alike.
* **Cache**: ``flush`` (a :class:`~kernel_evidence.harness.flush.CacheFlush`) writes a buffer
  larger than the last-level cache before every timed call, outside the timed window.
* **Clock**: CUDA events when the harness already imported ``torch`` and CUDA is
  available (the timer never imports torch itself); ``time.perf_counter_ns`` otherwise.
* **Timer integrity**: the clock functions must be the ones the harness imported, checked
  before, after every call and after the measurement (a replaced one is put back), and a
  known busy-wait must measure as such (see :mod:`._integrity`).
* **Outputs kept for checking**: with ``keep_outputs=k``, the inputs and the output of
  ``k`` timed calls chosen at random are copied (outside the timed window) the moment the
  clock stops, so a harness can check them after timing: work deferred past the timed
  window leaves an unfinished output.
* **Statistics**: median, percentiles, and a distribution-free confidence interval of the
  median from order statistics; every sample is kept.
"""

from __future__ import annotations

import inspect
import itertools
import math
import random
import secrets
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..models import Baseline, ByteSize, CachePolicy, Conditions, Defence, Speedup, Stats, Timing
from ..units import convert, to_base
from ._check import snapshot
from ._integrity import CALIBRATION_NS, ClockGuard, busy_wait, calibration_problem
from ._stats import Summary, summarize

__all__ = ["SESSION", "KeptCall", "Measurement", "MeasurementTimeout", "StopRule", "Timer"]

#: one id per process: measurements with the same session ran in the same process
SESSION = uuid.uuid4().hex

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


@dataclass(frozen=True)
class KeptCall:
    """One timed call kept for checking: its inputs as they were before the call, and its
    output as it was when the clock stopped (copies, taken outside the timed window)."""

    index: int
    inputs: tuple[Any, ...]
    output: Any


@dataclass
class Measurement:
    """Samples of one timed function and how they were taken. Samples are in nanoseconds.

    Besides the samples it knows the conditions it ran under (:meth:`conditions`) and the
    defences the timer ran (:meth:`defences`): fresh inputs, the cache flush with its size,
    and timer integrity (``integrity`` is ``passed``, ``failed`` or ``skipped`` for a
    measurement made by hand, with ``integrity_detail`` saying what was seen).
    """

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
    #: bytes the flush wrote before each timed call, and the last-level cache size (None: unknown)
    flush_bytes: int | None = None
    last_level_cache: int | None = None
    #: the process that measured (:data:`SESSION` for the timer's measurements)
    session: str | None = None
    integrity: Literal["passed", "failed", "skipped"] = "skipped"
    integrity_detail: str | None = None
    #: timed calls kept for checking after timing (``keep_outputs``), in call order
    kept: list[KeptCall] = field(default_factory=list, repr=False)
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

    def cache(self) -> CachePolicy:
        """The cache policy with its evidence: flush size against the last-level cache."""
        if self.cache_policy != "flushed":
            return CachePolicy(mode=self.cache_policy)
        return CachePolicy(
            mode="flushed",
            flush_bytes=_bytes(self.flush_bytes),
            last_level_cache=_bytes(self.last_level_cache),
            flush_in_timed_window=False,
        )

    def conditions(
        self,
        *,
        shape_id: str | None = None,
        dims: Mapping[str, int] | None = None,
        dtypes: Sequence[str] | None = None,
        device: str | None = None,
        device_id: str | None = None,
        interleaved: bool | None = None,
    ) -> Conditions:
        """The conditions this side was measured under, in the structure the rules compare.

        The timer supplies method, warmup, repeats, synchronisation, the cache policy with
        its evidence, the session, fresh inputs and the sample handling (every sample kept:
        ``all``); the caller the workload (``shape_id``, ``dims``, ``dtypes``) and the
        ``device``. ``interleaved`` defaults to the measurement's own flag.
        """
        return Conditions(
            dtypes=list(dtypes) if dtypes else None,
            shape_id=shape_id,
            dims=dict(dims) if dims else None,
            device=device,
            device_id=device_id,
            method=self.method,
            warmup=self.warmup,
            repeats=self.repeats,
            synchronized=self.synchronized,
            cache=self.cache(),
            session=self.session,
            interleaved=self.interleaved if interleaved is None else interleaved,
            fresh_inputs=self.inputs_regenerated,
            sample_handling="all",
        )

    def defences(self) -> list[Defence]:
        """The defences the timer ran for this measurement: fresh inputs, cache flush, timer
        integrity (``skipped`` where it did not run one)."""
        by_timer = self.session is not None  # made by the Timer (hand-built ones have no session)
        if self.inputs_regenerated:
            fresh = Defence(
                check="fresh_inputs",
                outcome="passed",
                detail="setup made new inputs before every call, for each side separately"
                if by_timer
                else "the harness states that new inputs were made before every call",
                tool="kernel-evidence Timer" if by_timer else None,
            )
        else:
            fresh = Defence(
                check="fresh_inputs", outcome="skipped", detail="no setup: every call got the same arguments"
            )
        if self.cache_policy != "flushed":
            flush = Defence(
                check="cache_flush", outcome="skipped", detail=f"cache {self.cache_policy}: nothing flushed"
            )
        elif self.flush_bytes is None or self.last_level_cache is None:
            flush = Defence(
                check="cache_flush",
                outcome="skipped",
                detail="a flush ran between timed calls, but its size or the cache size is unknown",
            )
        else:
            flush = Defence(
                check="cache_flush",
                outcome="passed" if self.flush_bytes >= self.last_level_cache else "failed",
                detail=f"{self.flush_bytes} bytes written before every timed call, outside the timed"
                f" window; last-level cache {self.last_level_cache} bytes",
                tool="kernel-evidence CacheFlush",
            )
        integrity = Defence(
            check="timer_integrity",
            outcome=self.integrity,
            detail=self.integrity_detail
            or (
                "not checked: the measurement was not made by the timer"
                if self.integrity == "skipped"
                else None
            ),
            tool="kernel-evidence Timer" if self.integrity != "skipped" else None,
        )
        return [fresh, flush, integrity]

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
        dims: Mapping[str, int] | None = None,
        dtypes: Sequence[str] | None = None,
        device: str | None = None,
        device_id: str | None = None,
    ) -> Timing:
        """The ``timing`` category; with a baseline measurement, the baseline and the speedup.

        The speedup (``baseline median / candidate median``) is only stated when the
        baseline is named (``provider``) and ``claim_speedup`` is true; the recorder drops
        it from any packet that did not pass. Both sides carry their :meth:`conditions`
        (``dims``, ``dtypes`` and ``device`` describe the workload and device of both).
        """
        base = None
        speedup = None
        stats = self.stats(unit)
        interleaved = self.interleaved
        if baseline is not None:
            interleaved = self.interleaved_with(baseline)
        workload: dict[str, Any] = {
            "shape_id": shape_id, "dims": dims, "dtypes": dtypes, "device": device, "device_id": device_id,
        }  # fmt: skip
        if baseline is not None or provider is not None:
            base_stats = baseline.stats(unit) if baseline is not None else None
            base = Baseline(
                provider=provider,
                version=version,
                call=call,
                same_session=self.session == baseline.session
                if baseline is not None and self.session is not None and baseline.session is not None
                else None,
                interleaved=interleaved if baseline is not None else None,
                stats=base_stats,
                conditions=baseline.conditions(interleaved=interleaved, **workload)
                if baseline is not None
                else None,
            )
            if base_stats is not None and provider and claim_speedup:
                value = _median_ratio(base_stats, stats)
                if value is not None:
                    speedup = Speedup(value=value, basis="median")
        notes = f"stopped: {self.stop_reason}"
        if self.inputs_regenerated:
            notes += "; inputs regenerated before every timed call"
        if self.integrity == "failed":
            notes += f"; timer integrity failed: {self.integrity_detail}"
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
            conditions=self.conditions(interleaved=interleaved, **workload),
        )


def _bytes(n: int | None) -> ByteSize | None:
    return ByteSize(value=float(n), unit="B") if n is not None else None


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


class _Side:
    """What one side of a measurement collects: its samples, what the integrity checks saw
    after its calls, and the timed calls kept for checking (a reservoir sample: every timed
    call is equally likely to be kept, and which ones is decided before each call from the
    timer's private random source)."""

    def __init__(self, name: str, keep: int, rng: random.Random) -> None:
        self.name = name
        self.samples: list[float] = []
        #: the functions found replaced (as one text) -> the calls after which they were
        self.replaced: dict[str, list[str]] = {}
        self.kept: list[KeptCall] = []
        self._keep = keep
        self._rng = rng
        self._seen = 0

    def slot(self) -> int | None:
        """Where the next timed call goes in :attr:`kept`, or None when it is not kept."""
        self._seen += 1
        if len(self.kept) < self._keep:
            return len(self.kept)
        j = self._rng.randrange(self._seen) if self._keep else self._keep
        return j if j < self._keep else None

    @property
    def problems(self) -> list[str]:
        """One line per set of replaced functions: after which call first, and how often."""
        out = []
        for labels, calls in self.replaced.items():
            more = f" and {len(calls) - 1} later calls" if len(calls) > 1 else ""
            out.append(f"{labels} replaced during {self.name}{calls[0]}{more} (put back)")
        return out

    def keep(self, slot: int, call: KeptCall) -> None:
        if slot == len(self.kept):
            self.kept.append(call)
        else:
            self.kept[slot] = call


class Timer:
    """Measures a function under the rules in the module docstring.

    ``setup`` (per call) returns the arguments for the timed function, regenerated every
    time; ``flush`` runs before every timed call, outside the timed window, and makes the
    cache policy ``flushed``: a :class:`~kernel_evidence.harness.flush.CacheFlush` (``True``
    makes one sized from the device's last-level cache) records its size against the cache,
    any other callable is run as given. ``synchronize`` is called before and after a
    host-clock measurement (a device sync); without it the timed function is taken to be
    synchronous (CPU code), which is what ``synchronized`` records. ``clock`` is ``"auto"``,
    ``"host"`` or ``"cuda_events"``. ``call_timeout_s`` raises :class:`MeasurementTimeout`
    (a :class:`TimeoutError`) after any call that took longer.
    """

    def __init__(
        self,
        *,
        warmup: int = 3,
        stop: StopRule | None = None,
        clock: Literal["auto", "host", "cuda_events"] = "auto",
        flush: Callable[[], Any] | bool | None = None,
        synchronize: Callable[[], None] | None = None,
        call_timeout_s: float | None = None,
    ) -> None:
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"expected warmup to be an int >= 0, got {warmup!r}")
        if call_timeout_s is not None and not (call_timeout_s > 0 and math.isfinite(call_timeout_s)):
            raise ValueError(
                f"expected call_timeout_s to be a finite number > 0 or None, got {call_timeout_s}"
            )
        if flush is True:
            from .flush import CacheFlush

            flush = CacheFlush()
        size, cache = getattr(flush, "flush_bytes", None), getattr(flush, "last_level_cache", None)
        if isinstance(size, int) and isinstance(cache, int) and size < cache:
            raise ValueError(f"a flush of {size} bytes cannot evict a last-level cache of {cache} bytes")
        self.warmup = warmup
        self.stop = stop or StopRule()
        self.flush: Callable[[], Any] | None = flush or None
        self.call_timeout_s = call_timeout_s
        self._lazy_warned: set[int] = set()  # functions warned about in the current call
        torch = _torch_cuda() if clock in ("auto", "cuda_events") else None
        if clock == "cuda_events" and torch is None:
            raise ValueError("clock='cuda_events' needs torch (already imported) with CUDA available")
        self._clock: _Clock = _CudaEventClock(torch) if torch is not None else _Clock(synchronize)
        self._guard = ClockGuard(module=sys.modules[__name__], torch=torch)
        self._rng = random.Random(secrets.randbits(64))
        self._calibrated: list[float] = []

    @property
    def method(self) -> str:
        """``cuda_events`` or ``host_clock``."""
        return self._clock.method

    @property
    def session(self) -> str:
        """The id of this process (:data:`SESSION`), recorded with every measurement."""
        return SESSION

    def _one(self, fn: Fn, args: tuple[Any, ...], what: str, side: _Side, *, timed: bool = True) -> float:
        """One flushed, timed call; ``what`` ("warmup call 1 of 3", "timed call 4") is
        added as a note to an exception it raises (Python 3.11+), so a failure packet says
        whether warmup or a timed repeat failed. After the call (outside the timed window)
        the output of a kept call is copied, and the clock functions are checked."""
        try:
            slot = side.slot() if timed else None
            inputs = snapshot(args) if slot is not None else ()
            if self.flush is not None:
                self.flush()
            ns, result = self._clock.time_ns(fn, args)
            if slot is not None:
                side.keep(slot, KeptCall(index=len(side.samples), inputs=inputs, output=snapshot(result)))
            replaced = self._guard.replaced()
            if replaced:
                side.replaced.setdefault(", ".join(replaced), []).append(what)
            if self.call_timeout_s is not None and ns > self.call_timeout_s * 1e9:
                raise MeasurementTimeout(
                    f"one call took {ns / 1e9:.3g} s, over the {self.call_timeout_s:g} s limit per call"
                    f" ({what})"
                )
        except Exception as exc:
            if hasattr(exc, "add_note") and not isinstance(exc, MeasurementTimeout):
                exc.add_note(f"raised by the timer during {side.name}{what}")
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

    def _integrity(self, when: str) -> list[str]:
        """Problems seen by the clock checks ``when`` ("before"/"after") the measurement: a
        replaced clock function, or a busy-wait of known length measured wrongly."""
        problems = []
        replaced = self._guard.replaced()
        if replaced:
            problems.append(f"{', '.join(replaced)} replaced {when} the measurement (put back)")
        ns, _ = self._clock.time_ns(busy_wait(CALIBRATION_NS), ())
        self._calibrated.append(ns)
        wrong = calibration_problem(ns)
        if wrong:
            problems.append(f"{wrong} {when} the measurement")
        return problems

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
        side: _Side,
        reason: str,
        *,
        shared: list[str],
        interleaved: bool,
        regenerated: bool,
        pair: int | None = None,
    ) -> Measurement:
        # CUDA events synchronise; a host clock is synchronised by the hook, or needs none
        # when no device framework is in use (the call is CPU work, done when it returns)
        sync = (
            isinstance(self._clock, _CudaEventClock) or self._clock._sync is not None or _torch_cuda() is None
        )
        problems = shared + side.problems
        if problems:
            detail = "; ".join(problems)
        else:
            measured = ", ".join(f"{ns / 1e6:.3f} ms" for ns in self._calibrated[-2:])
            detail = (
                f"{', '.join(self._guard.labels)} unchanged before, after every call and after the"
                f" measurement; a {CALIBRATION_NS / 1e6:g} ms busy-wait measured {measured} before"
                " and after"
            )
        return Measurement(
            samples_ns=side.samples,
            method=self.method,
            warmup=self.warmup,
            stop_rule=self.stop.describe(),
            stop_reason=reason,
            cache_policy="flushed" if self.flush is not None else "warm",
            synchronized=sync,
            interleaved=interleaved,
            inputs_regenerated=regenerated,
            ci_level=self.stop.ci_level,
            flush_bytes=getattr(self.flush, "flush_bytes", None),
            last_level_cache=getattr(self.flush, "last_level_cache", None),
            session=SESSION,
            integrity="failed" if problems else "passed",
            integrity_detail=detail[:2000],
            kept=sorted(side.kept, key=lambda k: k.index),
            pair=pair,
        )

    def measure(
        self, fn: Fn, *, setup: Callable[[], Any] | None = None, keep_outputs: int = 0
    ) -> Measurement:
        """Time ``fn(*setup())`` (or ``fn()``) under the stop rule.

        ``keep_outputs``: how many timed calls (chosen at random) keep a copy of their
        inputs and of their output as it was when the clock stopped
        (:attr:`Measurement.kept`), for a check after timing. A function that returns a
        generator or coroutine (work that runs lazily, after the timed region) gets a
        ``RuntimeWarning``: its time is not the time of that work.
        """
        self._lazy_warned = set()
        side = _Side("", _keep_count(keep_outputs), self._rng)
        shared = self._integrity("before")
        for i in range(self.warmup):
            self._one(fn, self._args(setup), f"warmup call {i + 1} of {self.warmup}", side, timed=False)
        started = time.perf_counter()
        while True:
            side.samples.append(self._one(fn, self._args(setup), f"timed call {len(side.samples) + 1}", side))
            reason = self._should_stop([side.samples], started)
            if reason:
                shared += self._integrity("after")
                return self._measurement(
                    side, reason, shared=shared, interleaved=False, regenerated=setup is not None
                )

    def compare(
        self,
        candidate: Fn,
        baseline: Fn,
        *,
        setup: Callable[[], Any] | None = None,
        keep_outputs: int = 0,
    ) -> tuple[Measurement, Measurement]:
        """Time candidate and baseline interleaved (ABBA), each on its own fresh inputs.

        ``setup`` is called once per side in every round, before either runs, so a
        candidate that works in place cannot pass its output to the baseline as input. The
        stop rule applies to both: it stops when both medians are tight enough, or at the
        shared budget or repeat cap. ``keep_outputs`` keeps that many of the candidate's
        timed calls for checking (see :meth:`measure`). Returns ``(candidate, baseline)``,
        paired: their :attr:`Measurement.pair` is the same, so :meth:`Measurement.timing`
        records them as interleaved with each other (and a measurement from another call
        as not).
        """
        self._lazy_warned = set()
        cand = _Side("candidate ", _keep_count(keep_outputs), self._rng)
        base = _Side("baseline ", 0, self._rng)
        shared = self._integrity("before")
        for i in range(self.warmup):
            cand_args, base_args = self._args(setup), self._args(setup)
            what = f"warmup call {i + 1} of {self.warmup}"
            self._one(candidate, cand_args, what, cand, timed=False)
            self._one(baseline, base_args, what, base, timed=False)
        started = time.perf_counter()
        rnd = 0
        while True:
            cand_args, base_args = self._args(setup), self._args(setup)
            what = f"timed call {rnd + 1}"
            if rnd % 2 == 0:
                cand.samples.append(self._one(candidate, cand_args, what, cand))
                base.samples.append(self._one(baseline, base_args, what, base))
            else:
                base.samples.append(self._one(baseline, base_args, what, base))
                cand.samples.append(self._one(candidate, cand_args, what, cand))
            rnd += 1
            reason = self._should_stop([cand.samples, base.samples], started)
            if reason:
                shared += self._integrity("after")
                regen = setup is not None
                pair = next(_PAIRS)
                common: dict[str, Any] = {
                    "shared": shared, "interleaved": True, "regenerated": regen, "pair": pair,
                }  # fmt: skip
                return self._measurement(cand, reason, **common), self._measurement(base, reason, **common)


def _keep_count(keep: int) -> int:
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise ValueError(f"expected keep_outputs to be an int >= 0, got {keep!r}")
    return keep
