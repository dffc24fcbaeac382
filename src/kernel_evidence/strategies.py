"""Hypothesis strategies for valid evidence packets, for fuzzing harness code.

>>> from hypothesis import given
>>> from kernel_evidence.strategies import packets
>>> @given(packets())
... def test_my_sink(packet):
...     assert packet.packet_id.startswith("sha256:")

Every packet drawn from :func:`packets` passes :func:`kernel_evidence.validate` with no
error findings: passed kernel claims against registered baselines with consistent
speedups and statistics, serving runs, and failures of every class.
"""

from __future__ import annotations

from typing import Any

from .errors import MissingExtra

try:
    from hypothesis import strategies as st
except ImportError as exc:  # Hypothesis comes with the `test` extra
    raise MissingExtra("hypothesis", "test", "kernel_evidence.strategies") from exc

from ._version import __version__
from .models import SCHEMA_VERSION, EvidencePacket
from .rules.replay import _placeholder

__all__ = ["example_packet", "failure_packets", "kernel_claim_packets", "packets", "serving_packets"]

_DEVICES = [
    ("nvidia", "NVIDIA H100 80GB HBM3", "sm_90a", "cuBLASLt", "12.4.5"),
    ("nvidia", "NVIDIA A100-SXM4-80GB", "sm_80", "cuBLAS", "12.1.3"),
    ("amd", "AMD Instinct MI300X", "gfx942", "hipBLASLt", "0.10.0"),
    ("google", "TPU v5e", "TPU v5e", "XLA", "jax 0.4.35"),
    ("nvidia", "NVIDIA L4", "sm_89", "torch eager", "2.5.1"),
]
_TIME_UNITS = ["ns", "us", "ms"]
_UNIT_SCALE = {"ns": 1e6, "us": 1e3, "ms": 1.0}
_text = st.text(
    st.characters(min_codepoint=32, max_codepoint=0x2FFF, exclude_categories=["Cs"]), min_size=1, max_size=24
)
_ident = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)
_ts = st.datetimes(
    min_value=__import__("datetime").datetime(2020, 1, 1),
    max_value=__import__("datetime").datetime(2026, 1, 1),
).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))
#: a digest of something: not one digit repeated, nor the SHA-256 of empty input (KE105)
_hex64 = (
    st.binary(min_size=32, max_size=32)
    .map(lambda b: "sha256:" + b.hex())
    .filter(
        lambda d: (
            len(set(d[7:])) > 1 and not d.startswith("sha256:e3b0c44298fc") and _placeholder(d[7:]) is None
        )
    )
)


def _envelope(draw: Any, kind: str, status: str) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "created_at": draw(_ts),
        "producer": {
            "name": draw(st.sampled_from(["kernel-evidence", "my-harness", "kb-eval"])),
            "version": __version__,
        },
        "subject": {"kind": kind, "name": draw(_ident)},
        "status": status,
        "replay": {
            "command": draw(st.lists(_text, min_size=1, max_size=4).map(lambda xs: ["python", *xs])),
            "repository": draw(
                st.none()
                | st.builds(
                    lambda c: {"url": "https://example.org/repo.git", "commit": c, "dirty": False},
                    # a hash of something: not one digit repeated, nor git's empty tree or blob (KE104)
                    st.from_regex(r"[0-9a-f]{40}", fullmatch=True).filter(
                        lambda c: (
                            len(set(c)) > 1
                            and c[:12] not in ("4b825dc642cb", "e69de29bb2d1")
                            and _placeholder(c) is None
                        )
                    ),
                )
            ),
            "container": draw(
                st.none() | _hex64.map(lambda d: {"image": "ghcr.io/example/bench:1", "digest": d})
            ),
            "seeds": draw(st.none() | st.dictionaries(_ident, st.integers(0, 2**31 - 1), max_size=2)),
        },
        "lineage": draw(
            st.none()
            | st.builds(
                lambda r, c, i: {"run_id": r, "candidate_id": c, "iteration": i},
                _ident,
                _ident,
                st.integers(0, 10**6),
            )
        ),
        "extensions": draw(st.none() | st.just({"https://example.org/ext/v1": {"note": "x", "n": 1}})),
    }


def _stats(draw: Any, unit: str, center: float, with_samples: bool) -> dict[str, Any]:
    n = draw(st.integers(3, 30))
    spread = draw(st.floats(0.005, 0.2))  # timers never repeat one value to the ns (KE507)
    # each side its own jitter: a timer's readings are neither evenly spaced nor the other
    # side's scaled (KE507)
    rng = draw(st.randoms(use_true_random=False))
    samples = sorted(center * (1 + spread * (rng.betavariate(2.0, 2.0) - 0.5)) for _ in range(n))
    mid = n // 2
    median = samples[mid] if n % 2 else (samples[mid - 1] + samples[mid]) / 2
    s: dict[str, Any] = {
        "unit": unit,
        "median": median,
        "mean": sum(samples) / n,
        "min": samples[0],
        "max": samples[-1],
        "n": n,
        "percentiles": {"p50": median, "p90": samples[min(n - 1, int(0.9 * n))], "p99": samples[-1]},
    }
    if with_samples:
        s["samples"] = samples
    return s


def _hardware(draw: Any, vendor: str, device: str, arch: str) -> dict[str, Any]:
    return {
        "vendor": vendor,
        "device": device,
        "arch": arch,
        "count": 1,
        "driver": {"name": "driver", "version": draw(st.sampled_from(["550.54.15", "6.8.5", "n/a"]))},
        "clocks": draw(
            st.none()
            | st.builds(
                lambda o: {"locked": False, "sm_observed": {"value": o, "unit": "MHz"}}, st.floats(500, 2500)
            )
        ),
    }


@st.composite
def kernel_claim_packets(draw: Any) -> EvidencePacket:
    """Passed kernel packets claiming a speedup over a registered baseline."""
    vendor, device, arch, provider, version = draw(st.sampled_from(_DEVICES))
    d = _envelope(draw, "kernel", "passed")
    unit = draw(st.sampled_from(_TIME_UNITS))
    cand_ms = draw(st.floats(0.01, 5.0))
    ratio = draw(st.floats(0.5, 4.0))
    samples = draw(st.booleans())
    cand = _stats(draw, unit, cand_ms * _UNIT_SCALE[unit], samples)
    base_unit = draw(st.sampled_from(_TIME_UNITS))
    basev = _stats(draw, base_unit, cand_ms * ratio * _UNIT_SCALE[base_unit], samples)
    speed = (basev["median"] / _UNIT_SCALE[base_unit]) / (cand["median"] / _UNIT_SCALE[unit])
    m = draw(st.sampled_from([1024, 2048, 4096]))
    # keep the achieved rate well under any listed peak (a smaller problem, not fewer FLOPs
    # than its dims give: KE605)
    while m > 16 and 2.0 * m**3 > 1e9 * cand_ms:
        m //= 2
    flops = 2.0 * m * m * m
    d["task"] = {
        "operator": draw(st.sampled_from(["gemm", "softmax", "rmsnorm", "flash_attention_fwd"])),
        "dtypes": [draw(st.sampled_from(["bf16", "fp16", "fp32", "fp8_e4m3"]))],
        "shapes": [
            {
                "id": f"m{m}",
                "dims": {"m": m, "n": m, "k": m},
                "work": {"flops": {"value": flops, "unit": "FLOP"}},
            }
        ],
        "reference": {"name": "torch.matmul", "kind": "torch_eager"},
        "tolerance": {"atol": 1e-2, "rtol": 1e-2},
    }
    d["validation"] = {
        "verdict": "passed",
        "shapes": [
            {
                "shape_id": f"m{m}",
                "passed": True,
                "max_abs_error": draw(st.floats(0, 1e-3)),
                "atol": 1e-2,
                "rtol": 1e-2,
                "reference_max_abs": draw(st.floats(1.0, 100.0)),
                "nan_seen": False,
            }
        ],
    }
    d["timing"] = {
        "method": draw(st.sampled_from(["cuda_events", "cupti", "hip_events", "xprof"])),
        "warmup": draw(st.integers(0, 50)),
        "repeats": cand["n"],
        "shape_id": f"m{m}",
        "stats": cand,
        "cache_policy": "flushed",
        "baseline": {
            "provider": provider,
            "version": version,
            "call": f"{provider}.matmul(m={m}, n={m}, k={m})",
            "same_session": draw(st.booleans()),
            "stats": basev,
        },
        "speedup": {"value": speed, "basis": "median"},
    }
    d["hardware"] = _hardware(draw, vendor, device, arch)
    return EvidencePacket.model_validate(d).with_id()


@st.composite
def serving_packets(draw: Any) -> EvidencePacket:
    """Passed serving runs, some with a throughput claim against a reference configuration."""
    d = _envelope(draw, "serving", "passed")
    tps = draw(st.floats(10.0, 20000.0))
    prompts = draw(st.integers(1, 5000))
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    rate = draw(st.sampled_from(["inf", 1.0, 8.0]))
    d["task"] = {
        "workload": "random",
        "serving": {
            "model": draw(st.sampled_from(["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B"])),
            "engine": {"name": "vLLM", "version": "0.11.0"},
            "num_prompts": prompts,
            "input_len": 1024,
            "output_len": 128,
            "max_concurrency": draw(st.integers(1, 256)),
            "request_rate": rate,
            "tensor_parallel_size": tp,
        },
    }
    serving = {
        "completed": prompts,  # every prompt answered (KE1003)
        "failed": 0,
        # at a finite rate the requests alone take prompts / rate to arrive (KE1001)
        "duration": {
            "value": draw(st.floats(1.0, 600.0)) + (prompts / rate if rate != "inf" else 0.0),
            "unit": "s",
        },
        "output_throughput": {"value": tps, "unit": "tok/s"},
        # a 1024-token prefill of an 8B model is >= 13 ms on the slowest device drawn (KE1005)
        "ttft": _stats(draw, "ms", draw(st.floats(30.0, 500.0)), False),
    }
    serving["ttft"]["n"] = prompts  # over every completed request (KE1003)
    timing: dict[str, Any] = {"method": "serving_client", "serving": serving}
    if draw(st.booleans()):
        ratio = draw(st.floats(0.5, 3.0))
        timing["baseline"] = {
            "engine": {"name": "vLLM", "version": "0.10.0"},
            "settings": {"tensor_parallel_size": 1, "max_num_seqs": 256},
            "same_session": True,
            "serving": {"output_throughput": {"value": tps / ratio, "unit": "tok/s"}},
        }
        timing["speedup"] = {"value": ratio, "basis": "output_throughput"}
    d["timing"] = timing
    vendor, device, arch, _, _ = draw(st.sampled_from(_DEVICES[:3]))
    d["hardware"] = {**_hardware(draw, vendor, device, arch), "count": tp}  # one device per TP rank
    return EvidencePacket.model_validate(d).with_id()


_FAILED = [
    "compile_error",
    "runtime_error",
    "timeout",
    "incorrect_shape",
    "incorrect_dtype",
    "incorrect_numerical",
    "nan_inf",
    "reward_hack",
]
_ERROR = ["infra_error", "invalid_reference", "timeout", "runtime_error"]
_NEEDS_VALIDATION = {"incorrect_shape", "incorrect_dtype", "incorrect_numerical", "nan_inf"}


@st.composite
def failure_packets(draw: Any) -> EvidencePacket:
    """Failed and error packets of every failure class, with no performance claim."""
    status = draw(st.sampled_from(["failed", "error"]))
    fc = draw(st.sampled_from(_FAILED if status == "failed" else _ERROR))
    d = _envelope(draw, "kernel", status)
    d["failure"] = {"failure_class": fc, "message": draw(_text)}
    d["task"] = {"operator": draw(_ident), "dtypes": ["fp16"]}
    if fc == "compile_error":
        d["compile"] = {
            "compiler": {"name": "nvcc", "version": "12.4"},
            "target_arch": "sm_90a",
            "succeeded": False,
            "log_excerpt": draw(_text),
        }
    if fc in _NEEDS_VALIDATION:
        d["validation"] = {
            "verdict": "failed",
            "shapes": [
                {
                    "shape_id": "s0",
                    "passed": False,
                    "max_abs_error": draw(st.floats(0.1, 1e6)),
                    "nan_seen": fc == "nan_inf",
                }
            ],
        }
    vendor, device, arch, _, _ = draw(st.sampled_from(_DEVICES))
    d["hardware"] = _hardware(draw, vendor, device, arch)
    return EvidencePacket.model_validate(d).with_id()


def packets() -> st.SearchStrategy[EvidencePacket]:
    """Any valid packet: kernel claims, serving runs and failures."""
    return st.one_of(kernel_claim_packets(), serving_packets(), failure_packets())


def example_packet() -> EvidencePacket:
    """One fixed, valid kernel packet (deterministic; for docs and quick tests)."""
    d = {
        "schema_version": SCHEMA_VERSION,
        "created_at": "2026-11-01T12:00:00Z",
        "producer": {"name": "kernel-evidence", "version": __version__},
        "subject": {"kind": "kernel", "name": "gemm_bf16_4096"},
        "status": "passed",
        "task": {
            "operator": "gemm",
            "dtypes": ["bf16"],
            "shapes": [{"id": "4096", "work": {"flops": {"value": 1.374e11, "unit": "FLOP"}}}],
        },
        "validation": {
            "verdict": "passed",
            "shapes": [
                {
                    "shape_id": "4096",
                    "passed": True,
                    "atol": 0.01,
                    "rtol": 0.01,
                    "reference_max_abs": 41.0,
                    "max_abs_error": 0.004,
                }
            ],
        },
        "timing": {
            "method": "cuda_events",
            "repeats": 50,
            "shape_id": "4096",
            "stats": {"unit": "us", "median": 180.0, "min": 178.0, "max": 190.0},
            "baseline": {
                "provider": "cuBLASLt",
                "version": "12.4.5",
                "call": "cublasLtMatmul(bf16, m=n=k=4096)",
                "same_session": True,
                "stats": {"unit": "us", "median": 207.0},
            },
            "speedup": {"value": 1.15, "basis": "median"},
        },
        "hardware": {
            "vendor": "nvidia",
            "device": "NVIDIA H100 80GB HBM3",
            "arch": "sm_90a",
            "clocks": {"locked": True},
        },
        "replay": {
            "command": ["python", "bench.py", "--m", "4096"],
            "repository": {"commit": "3f9c2a7e5b1d4c8a9e0f6b2d7c1a5e3f9b8d4c2a"},
        },
    }
    return EvidencePacket.model_validate(d).with_id()
