"""A correctness-gated reward for RL loops, computed from a packet alone.

The formula (also in ``docs/harness.md``)::

    not passed, or validation not passed         ->  penalty[failure_class]   (default 0.0;
                                                      reward_hack -1.0)
    passed, no speedup over a named baseline     ->  correct
    passed, speedup s over a named baseline      ->  max(floor, correct + speed_weight * clip(log2 s, -cap, cap))
                                                      + sol_weight * sol

``correct`` = 1.0, ``speed_weight`` = 1.0, ``cap`` = 4 (16x), ``floor`` = 0.1 by default:
any correct candidate scores above any failure, twice as fast as the baseline scores 2.0,
half as fast scores ``floor``. ``sol`` is the speed-of-light fraction in [0, 1]: achieved
over peak throughput (``task.work`` or the shape's ``work`` over the median time, against
``hardware.peak_bandwidth`` / ``hardware.peak_flop_rate``), the larger of the two; it is 0
when the packet lacks any of those. ``sol_weight`` is 0 by default.

A speedup counts only when the packet states it with a named baseline
(``timing.baseline.provider``) and, when validation is recorded, its verdict is passed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..models import EvidencePacket, FailureClass, Status
from ..units import to_base

__all__ = ["DEFAULT_PENALTIES", "RewardConfig", "reward", "speed_of_light_fraction"]

#: reward of a packet that did not pass, per failure class
DEFAULT_PENALTIES: Mapping[FailureClass, float] = {fc: 0.0 for fc in FailureClass} | {
    FailureClass.REWARD_HACK: -1.0
}


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the reward formula (see the module docstring)."""

    correct: float = 1.0
    speed_weight: float = 1.0
    cap: float = 4.0
    floor: float = 0.1
    sol_weight: float = 0.0
    #: reward of a status that is not passed and has no failure class (skipped)
    no_class: float = 0.0
    penalties: Mapping[FailureClass, float] = field(default_factory=lambda: dict(DEFAULT_PENALTIES))

    def __post_init__(self) -> None:
        # every reward is a finite number: so must every weight be
        for name in ("correct", "speed_weight", "cap", "floor", "sol_weight", "no_class"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise ValueError(f"RewardConfig.{name} must be a finite number, got {value}")
        if self.cap < 0:
            raise ValueError(f"RewardConfig.cap must be >= 0, got {self.cap}")
        for fc, value in self.penalties.items():
            if not math.isfinite(value):
                raise ValueError(
                    f"RewardConfig.penalties[{FailureClass(fc).value}] must be finite, got {value}"
                )


def _packet(p: EvidencePacket | Mapping[str, Any]) -> EvidencePacket:
    if isinstance(p, EvidencePacket):
        return p
    from .._codec.decode import model_from_data  # any supported version, migrated

    return model_from_data(dict(p))


def speed_of_light_fraction(packet: EvidencePacket | Mapping[str, Any]) -> float:
    """Achieved over peak throughput in [0, 1], or 0.0 when the packet lacks the data."""
    p = _packet(packet)
    t, hw, task = p.timing, p.hardware, p.task
    if t is None or t.stats is None or t.stats.median is None or hw is None or task is None:
        return 0.0
    seconds = to_base(t.stats.median, t.stats.unit)
    if seconds <= 0:
        return 0.0
    work = task.work
    if t.shape_id and task.shapes:
        for case in task.shapes:
            if case.id == t.shape_id and case.work is not None:
                work = case.work
    if work is None:
        return 0.0
    fractions = []
    if work.bytes is not None and hw.peak_bandwidth is not None:
        peak = to_base(hw.peak_bandwidth.value, hw.peak_bandwidth.unit)
        if peak > 0:
            fractions.append(to_base(work.bytes.value, work.bytes.unit) / seconds / peak)
    if work.flops is not None and hw.peak_flop_rate is not None:
        peak = to_base(hw.peak_flop_rate.value, hw.peak_flop_rate.unit)
        if peak > 0:
            fractions.append(to_base(work.flops.value, work.flops.unit) / seconds / peak)
    fractions = [f for f in fractions if math.isfinite(f)]  # an overflow is no measurement
    return min(1.0, max(fractions)) if fractions else 0.0


def reward(packet: EvidencePacket | Mapping[str, Any], config: RewardConfig | None = None) -> float:
    """The reward of one packet (see the module docstring for the formula).

    >>> reward({"schema_version": "0.2", "created_at": "2026-11-22T00:00:00Z",
    ...         "producer": {"name": "x", "version": "1"}, "subject": {"kind": "kernel", "name": "k"},
    ...         "status": "failed", "failure": {"failure_class": "nan_inf"}})
    0.0
    """
    cfg = config or RewardConfig()
    p = _packet(packet)
    if p.status is not Status.PASSED or (p.validation is not None and p.validation.verdict != "passed"):
        if p.failure is None:
            return cfg.no_class
        return float(cfg.penalties.get(p.failure.failure_class, 0.0))
    t = p.timing
    base = cfg.correct
    if (
        t is not None
        and t.speedup is not None
        and t.baseline is not None
        and t.baseline.provider
        and t.speedup.value > 0
    ):
        step = max(-cfg.cap, min(cfg.cap, math.log2(t.speedup.value)))
        base = max(cfg.floor, cfg.correct + cfg.speed_weight * step)
    if cfg.sol_weight:
        base += cfg.sol_weight * speed_of_light_fraction(p)
    return base
