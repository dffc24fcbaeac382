"""Small, varied, valid packets built with the models, for the archive tests."""

from __future__ import annotations

from typing import Any

from kernel_evidence._version import __version__
from kernel_evidence.models import (
    Bandwidth,
    Baseline,
    ByteSize,
    EvidencePacket,
    Failure,
    FailureClass,
    FlopCount,
    FlopRate,
    Hardware,
    Lineage,
    Producer,
    Replay,
    ShapeCase,
    Speedup,
    Stats,
    Status,
    Subject,
    Task,
    Timing,
    Validation,
    Work,
)

DEVICES = [
    ("nvidia", "NVIDIA H100 80GB HBM3", "sm_90", 989e12, 3.35e12, "cuBLASLt", "12.4.5"),
    ("amd", "AMD Instinct MI300X", "gfx942", 1307e12, 5.3e12, "hipBLASLt", "0.10.0"),
    ("nvidia", "NVIDIA A100-SXM4-80GB", "sm_80", 312e12, 2.0e12, "cuBLAS", "12.1.3"),
]
OPERATORS = ["gemm", "softmax", "layernorm", "attention"]
FAILURES = [
    (Status.FAILED, FailureClass.INCORRECT_NUMERICAL),
    (Status.FAILED, FailureClass.NAN_INF),
    (Status.FAILED, FailureClass.COMPILE_ERROR),
    (Status.ERROR, FailureClass.TIMEOUT),
]


def make_packet(i: int, *, month: int = 11, run: str = "run-a") -> EvidencePacket:
    """The ``i``-th packet of a candidate stream: mostly passing, some failures."""
    vendor, device, arch, peak_f, peak_b, provider, pversion = DEVICES[i % len(DEVICES)]
    op = OPERATORS[(i // 3) % len(OPERATORS)]
    m, n, k = 1024 * (1 + i % 4), 2048, 512 * (1 + i % 3)
    flops = 2.0 * m * n * k
    nbytes = 2.0 * (m * k + k * n + m * n)
    frac = 0.15 + (i * 7919 % 1000) / 1600.0  # fraction of the compute peak reached
    median_us = flops / (peak_f * frac) * 1e6
    base_us = median_us * (0.8 + (i % 11) / 10.0)
    fail = i % 5 == 4
    status, fclass = FAILURES[i % len(FAILURES)] if fail else (Status.PASSED, None)
    timing = Timing(
        method="cuda_events" if vendor == "nvidia" else "hip_events",
        warmup=10,
        repeats=100,
        shape_id=f"m{m}n{n}k{k}",
        stats=Stats(
            unit="us",
            median=median_us,
            mean=median_us * 1.01,
            min=median_us * 0.97,
            n=100,
            ci_low=median_us * 0.99,
            ci_high=median_us * 1.02,
            ci_level=0.95,
        ),
    )
    if not fail:
        timing = timing.model_copy(
            update={
                "baseline": Baseline(
                    provider=provider,
                    version=pversion,
                    call=f"{provider}Matmul(m={m}, n={n}, k={k}, bf16)",
                    stats=Stats(
                        unit="us",
                        median=base_us,
                        ci_low=base_us * 0.98,
                        ci_high=base_us * 1.01,
                    ),
                ),
                "speedup": Speedup(value=round(base_us / median_us, 6), basis="median"),
            }
        )
    return EvidencePacket(
        schema_version="0.2",
        created_at=f"2026-{month:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{i * 7 % 60:02d}Z",
        producer=Producer(name="kernel-evidence", version=__version__),
        subject=Subject(kind="kernel", name=f"{op}_candidate_{i}"),
        status=status,
        failure=Failure(failure_class=fclass, message=f"case {i} failed") if fail else None,
        lineage=Lineage(run_id=run, candidate_id=f"c{i}", iteration=i),
        task=Task(
            operator=op,
            dtypes=["bf16", "fp32"] if i % 2 else ["bf16"],
            shapes=[ShapeCase(id=f"m{m}n{n}k{k}", dims={"m": m, "n": n, "k": k})],
            work=Work(flops=FlopCount(value=flops, unit="FLOP"), bytes=ByteSize(value=nbytes, unit="B")),
        ),
        # a run that timed out (status error) validated nothing: a failed verdict beside an
        # error would blame the candidate (KE403)
        validation=None if status is Status.ERROR else Validation(verdict="failed" if fail else "passed"),
        timing=timing,
        hardware=Hardware(
            vendor=vendor,  # type: ignore[arg-type]
            device=device,
            arch=arch,
            peak_flop_rate=FlopRate(value=peak_f / 1e12, unit="TFLOP/s"),
            peak_bandwidth=Bandwidth(value=peak_b / 1e9, unit="GB/s"),
        ),
        replay=Replay(command=["python", "bench.py", "--case", str(i)]),
    ).with_id()


def make_packets(n: int, **kw: Any) -> list[EvidencePacket]:
    return [make_packet(i, **kw) for i in range(n)]
