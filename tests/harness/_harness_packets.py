"""Small packets built from generated samples, for the compare, reward and replay tests."""

from __future__ import annotations

import random
from typing import Any

from kernel_evidence.harness.timer import Measurement
from kernel_evidence.models import EvidencePacket

__all__ = ["fixed_measurement", "lognormal", "timed_packet"]


def fixed_measurement(samples: list[float], **fields: Any) -> Measurement:
    """A measurement of the given samples (ns) as the host clock would record it; ``fields``
    override any of its other fields."""
    given: dict[str, Any] = {
        "method": "host_clock",
        "warmup": 0,
        "stop_rule": "fixed",
        "stop_reason": "test",
        "cache_policy": "warm",
        "synchronized": True,
        "interleaved": True,
        **fields,
    }
    return Measurement(samples_ns=samples, **given)


def lognormal(median: float, n: int, seed: int, sigma: float = 0.05) -> list[float]:
    rng = random.Random(seed)
    return [median * rng.lognormvariate(0.0, sigma) for _ in range(n)]


def _stats(samples: list[float] | None, median: float, **extra: Any) -> dict[str, Any]:
    if samples is None:
        return {"unit": "us", "median": median, **extra}
    s = sorted(samples)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return {
        "unit": "us",
        "median": med,
        "min": s[0],
        "max": s[-1],
        "n": n,
        "samples": samples,
        **extra,
    }


def timed_packet(
    samples: list[float] | None,
    *,
    median: float | None = None,
    device: str = "NVIDIA H100 80GB HBM3",
    operator: str = "softmax",
    method: str = "cuda_events",
    shape: str = "s1",
    status: str = "passed",
    stats_extra: dict[str, Any] | None = None,
    command: list[str] | None = None,
    hardware: dict[str, Any] | None = None,
) -> EvidencePacket:
    data: dict[str, Any] = {
        "schema_version": "0.2",
        "created_at": "2026-11-22T01:02:03Z",
        "producer": {"name": "kernel-evidence", "version": "0.1.0"},
        "subject": {"kind": "kernel", "name": "softmax_v1"},
        "status": status,
        "task": {
            "operator": operator,
            "dtypes": ["float32"],
            "shapes": [{"id": shape, "dims": {"rows": 8, "cols": 128}}],
        },
        "hardware": hardware or {"vendor": "nvidia", "device": device, "arch": "sm_90"},
        "timing": {
            "method": method,
            "shape_id": shape,
            "stats": _stats(samples, median or 0.0, **(stats_extra or {})),
        },
        "replay": {"command": command or ["python", "bench.py"]},
    }
    if status != "passed":
        data["failure"] = {"failure_class": "runtime_error"}
    return EvidencePacket.model_validate(data).with_id()
