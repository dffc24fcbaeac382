"""How fast: the timing method, statistics, the baseline it is compared with, the claim."""

from __future__ import annotations

from typing import Literal

from ._base import (
    Artifact,
    Bool,
    Digest,
    Duration,
    Float,
    Int,
    Model,
    NonEmptyStr,
    NonNegFloat,
    NonNegInt,
    Software,
    Str,
    TimeUnit,
)
from .conditions import Conditions, TimingMethod

__all__ = [
    "Baseline",
    "RequestRate",
    "ServingMetrics",
    "Speedup",
    "Stats",
    "Timing",
    "TokenRate",
]


class Stats(Model):
    """Summary statistics of repeated measurements, all in ``unit``.

    ``percentiles`` maps a percentile (``"p50"``, ``"p99"``, ``"p99.9"``) to its value. A
    block carries a median or at least a mean (rule KE501); the median is the statistic
    claims and physical checks use.
    """

    unit: TimeUnit
    median: NonNegFloat | None = None
    mean: NonNegFloat | None = None
    std: NonNegFloat | None = None
    min: NonNegFloat | None = None
    max: NonNegFloat | None = None
    percentiles: dict[str, NonNegFloat] | None = None
    n: NonNegInt | None = None
    samples: list[NonNegFloat] | None = None
    ci_low: NonNegFloat | None = None
    ci_high: NonNegFloat | None = None
    ci_level: NonNegFloat | None = None
    #: how many samples were dropped (as outliers, or warm-up) before these statistics
    dropped: NonNegInt | None = None


class RequestRate(Model):
    """Requests per second."""

    value: NonNegFloat
    unit: Literal["req/s"]


class TokenRate(Model):
    """Tokens per second."""

    value: NonNegFloat
    unit: Literal["tok/s"]


class ServingMetrics(Model):
    """Serving-level results of a benchmark run (one summary per latency metric)."""

    completed: NonNegInt | None = None
    failed: NonNegInt | None = None
    duration: Duration | None = None
    request_throughput: RequestRate | None = None
    request_goodput: RequestRate | None = None
    output_throughput: TokenRate | None = None
    total_token_throughput: TokenRate | None = None
    max_output_throughput: TokenRate | None = None
    total_input_tokens: NonNegInt | None = None
    total_output_tokens: NonNegInt | None = None
    max_concurrent_requests: NonNegInt | None = None
    ttft: Stats | None = None
    tpot: Stats | None = None
    itl: Stats | None = None
    e2el: Stats | None = None
    samples_artifact: Artifact | None = None


class Baseline(Model):
    """What the candidate is compared with.

    ``provider`` names a library from the baseline registry (``cuBLASLt``, ``hipBLASLt``,
    ``XLA``, ``torch eager``, ...); ``call`` is the exact call or configuration. For a serving
    workload, ``engine`` and ``settings`` name the reference configuration, or
    ``packet_id`` references another packet.
    """

    provider: Str | None = None
    version: Str | None = None
    call: Str | None = None
    engine: Software | None = None
    settings: dict[str, Str | Float | Int | Bool] | None = None
    packet_id: Digest | None = None
    same_session: Bool | None = None
    interleaved: Bool | None = None
    stats: Stats | None = None
    serving: ServingMetrics | None = None
    #: schema 0.2: the conditions the baseline was measured under (compared with the
    #: candidate's ``Timing.conditions`` by the rules)
    conditions: Conditions | None = None


class Speedup(Model):
    """The claim: how much faster the candidate is than the baseline.

    ``basis`` says which statistic: for time statistics, ``baseline / candidate``; for
    throughputs, ``candidate / baseline``.
    """

    value: NonNegFloat
    basis: (
        Literal["median", "mean", "min", "output_throughput", "request_throughput", "total_token_throughput"]
        | None
    ) = None
    tolerance: NonNegFloat | None = None


class Timing(Model):
    """The timing category of a packet."""

    method: TimingMethod
    warmup: NonNegInt | None = None
    repeats: Int | None = None
    shape_id: NonEmptyStr | None = None
    stats: Stats | None = None
    serving: ServingMetrics | None = None
    cache_policy: Literal["flushed", "warm", "cold_start", "unknown"] | None = None
    clock_policy: Literal["locked", "unlocked", "unknown"] | None = None
    synchronized: Bool | None = None
    interleaved: Bool | None = None
    stop_rule: Str | None = None
    notes: Str | None = None
    baseline: Baseline | None = None
    speedup: Speedup | None = None
    #: schema 0.2: the candidate's conditions, in the structure of ``Baseline.conditions``
    conditions: Conditions | None = None
