"""Harness integration: record a packet per candidate, time honestly, reward, replay, compare.

Three lines for a search loop::

    from kernel_evidence.harness import Recorder
    rec = Recorder("runs/packets.jsonl.zst")
    with rec.candidate("softmax_v3", operator="softmax") as c:
        ...  # build, check (c.check), time and check the timed outputs (c.time_and_check),
             # re-run on unseen inputs (c.check_unseen): an exception becomes a failure packet

See ``docs/harness.md`` for the failure taxonomy, the measurement rules and the reward.
"""

from ._check import compare_arrays as check_output
from .compare import EXIT_CODES, Comparison, compare_packets, compare_samples
from .environment import Environment, capture_environment
from .flush import CacheFlush
from .recorder import CandidateFailure, CandidateRecord, InfraError, Recorder, classify_exception
from .replay import ReplayPlan, ReplayResult, execute_replay, plan_replay
from .reward import RewardConfig, reward, speed_of_light_fraction
from .sink import open_sink
from .timer import Measurement, MeasurementTimeout, StopRule, Timer

__all__ = [
    "CacheFlush",
    "CandidateFailure",
    "CandidateRecord",
    "Comparison",
    "EXIT_CODES",
    "Environment",
    "InfraError",
    "Measurement",
    "MeasurementTimeout",
    "Recorder",
    "ReplayPlan",
    "ReplayResult",
    "RewardConfig",
    "StopRule",
    "Timer",
    "capture_environment",
    "check_output",
    "classify_exception",
    "compare_packets",
    "compare_samples",
    "execute_replay",
    "open_sink",
    "plan_replay",
    "reward",
    "speed_of_light_fraction",
]
