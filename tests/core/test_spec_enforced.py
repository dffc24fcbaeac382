"""Every MUST / MUST NOT of docs/spec.md is enforced: one minimal violation per statement,
built from ``example_packet()``, fails with the named rule at the right JSON Pointer, on the
model path (a dict) and on the fast path (JSON bytes)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from kernel_evidence import validate
from kernel_evidence.strategies import example_packet

_DEL = object()


def _base() -> dict[str, Any]:
    d = example_packet().to_dict()
    del d["packet_id"]  # every mutation changes the content; KE005 is filtered out
    return d


def _set(*path: Any, value: Any = _DEL) -> Callable[[dict[str, Any]], None]:
    def apply(d: dict[str, Any]) -> None:
        node: Any = d
        for k in path[:-1]:
            node = node[k]
        if value is _DEL:
            del node[path[-1]]
        else:
            node[path[-1]] = value

    return apply


def _raw_table(raw_columns: Any = None, **ref: Any) -> Callable[[dict[str, Any]], None]:
    """A one-kernel ncu capture whose raw table reference is complete but for ``ref``'s
    changes (a None removes the member), with ``raw_columns`` beside it when given."""
    table = {"kind": "profile", "path": "r.arrow", "sha256": "sha256:" + "0" * 64,
             "media_type": "application/vnd.apache.arrow.file"}  # fmt: skip
    table = {k: v for k, v in {**table, **ref}.items() if v is not None}
    cap: dict[str, Any] = {"tool": "ncu", "kernels": [{"name": "k"}], "raw_table": table}
    if raw_columns is not None:
        cap["raw_columns"] = raw_columns
    return _set("profiler", value=[cap])


def _all(*fs: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def apply(d: dict[str, Any]) -> None:
        for f in fs:
            f(d)

    return apply


def _fail(cls: str, status: str = "failed") -> Callable[[dict[str, Any]], None]:
    return _all(
        _set("status", value=status),
        _set("failure", value={"failure_class": cls}),
        _set("timing", "speedup"),
        _set("validation"),
    )


_S = ("timing", "stats")
_B = ("timing", "baseline")
_NO_CLAIM = _set("timing", "speedup")

# (spec statement, mutation, rule, pointer)
CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    (
        "7 KE104 a commit that is a placeholder",
        _set("replay", "repository", "commit", value="deadbeef" * 5),
        "KE104",
        "/replay/repository/commit",
    ),
    (
        "7 KE601 a capture's SM throughput is at most 100%",
        _set("profiler", value=[{"tool": "ncu", "kernels": [{"name": "k", "metrics": {"sm_throughput": {"value": 142.0, "unit": "%"}}}]}]),
        "KE601",
        "/profiler/0/kernels/0/metrics/sm_throughput",
    ),  # fmt: skip
    (
        "7 KE607 a declared peak not far below the table's",
        _set("hardware", "peak_flop_rate", value={"value": 100.0, "unit": "TFLOP/s"}),
        "KE607",
        "/hardware/peak_flop_rate",
    ),
    ("7 KE405 a passed packet compiled", _set("compile", value={"succeeded": False}), "KE405", "/compile/succeeded"),
    (
        "7 KE412 a passed defence that was not checked",
        _set("defences", value=[{"check": "timer_integrity", "outcome": "passed", "detail": "not checked: the harness is trusted"}]),
        "KE412",
        "/defences/0",
    ),  # fmt: skip
    (
        "7 KE807 locked clocks run at the lock",
        _set("hardware", "clocks", value={"locked": True, "sm_requested": {"value": 1755.0, "unit": "MHz"}, "sm_observed": {"value": 1980.0, "unit": "MHz"}}),
        "KE807",
        "/hardware/clocks/sm_observed",
    ),  # fmt: skip
    (
        "7 KE1001 a finite rate's requests take time to arrive",
        _all(
            _set("task", "serving", value={"request_rate": 10.0}),
            _set("timing", "serving", value={"completed": 1000, "duration": {"value": 60.0, "unit": "s"}}),
        ),
        "KE1001",
        "/timing/serving/duration",
    ),
    (
        "7 KE106 the replay runs another dtype than the task's",
        _set("replay", "command", value=["python", "bench.py", "--m", "4096", "--dtype", "fp16"]),
        "KE106",
        "/replay/command",
    ),
    (
        "7 KE103 an entrypoint that does nothing",
        _set("replay", "command", value=["docker", "run", "--entrypoint", "true", "img@sha256:" + "ab" * 32, "vllm", "bench", "serve"]),
        "KE103",
        "/replay/command",
    ),  # fmt: skip
    (
        "7 KE104 git's empty tree",
        _set("replay", "repository", "commit", value="4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
        "KE104",
        "/replay/repository/commit",
    ),
    (
        "7 KE503 a stated mean matches the samples'",
        _set(*_S, value={"unit": "us", "median": 180.0, "mean": 180.0, "min": 178.0, "max": 190.0, "n": 3, "samples": [178.0, 180.0, 190.0]}),
        "KE503",
        "/timing/stats/mean",
    ),  # fmt: skip
    (
        "7 KE507 samples not a nudged constant",
        _set(*_S, value={"unit": "us", "median": 180.0137, "min": 180.0137, "max": 180.0138, "n": 12, "samples": [180.0137] * 11 + [180.0138]}),
        "KE507",
        "/timing/stats/samples",
    ),  # fmt: skip
    (
        "7 KE501 a confidence interval as wide as the spread allows",
        _set(*_S, value={"unit": "us", "median": 180.0, "min": 178.0, "max": 190.0, "std": 3.0, "n": 50, "ci_low": 179.999, "ci_high": 180.001}),
        "KE501",
        "/timing/stats/ci_low",
    ),  # fmt: skip
    # §1 encoding
    ("1 integers fit in int64", _set("timing", "repeats", value=2**63), "KE001", "/timing/repeats"),
    ("1 unknown fields MUST NOT appear", _set("foo", value=1), "KE001", ""),
    ("1 unknown nested field", _set(*_S, "foo", value=1), "KE001", "/timing/stats"),
    (
        "1 extensions keyed by a URI",
        _set("extensions", value={"mine": {"a": 1}}),
        "KE001",
        "/extensions/mine",
    ),
    (
        "1.1 packet_id sha256 lowercase hex",
        _set("packet_id", value="sha256:" + "A" * 64),
        "KE001",
        "/packet_id",
    ),
    ("1.1 packet_id matches content", _set("packet_id", value="sha256:" + "0" * 64), "KE004", "/packet_id"),
    # §2 units
    ("2 stats unit is a time", _set(*_S, "unit", value="GB/s"), "KE001", "/timing/stats/unit"),
    (
        "2 flops unit is work",
        _set("task", "shapes", 0, "work", "flops", "unit", value="s"),
        "KE001",
        "/task/shapes/0/work/flops/unit",
    ),
    (
        "2 peak_bandwidth unit is bandwidth",
        _set("hardware", "peak_bandwidth", value={"value": 1.0, "unit": "GB"}),
        "KE001",
        "/hardware/peak_bandwidth/unit",
    ),
    (
        "2 request_throughput is req/s",
        _set("timing", "serving", value={"request_throughput": {"value": 1.0, "unit": "tok/s"}}),
        "KE001",
        "/timing/serving/request_throughput/unit",
    ),
    (
        "2 output_throughput is tok/s",
        _set("timing", "serving", value={"output_throughput": {"value": 1.0, "unit": "req/s"}}),
        "KE001",
        "/timing/serving/output_throughput/unit",
    ),
    # §3 envelope
    (
        "3 schema_version is 0.2 (or 0.1, migrated)",
        _set("schema_version", value="0.3"),
        "KE001",
        "/schema_version",
    ),
    ("3 created_at required", _set("created_at"), "KE001", "/created_at"),
    ("3 created_at ends in Z", _set("created_at", value="2026-11-01T12:00:00+00:00"), "KE001", "/created_at"),
    ("3 created_at day exists", _set("created_at", value="2026-02-30T12:00:00Z"), "KE007", "/created_at"),
    ("3 created_at leap second", _set("created_at", value="2026-06-30T12:00:60Z"), "KE007", "/created_at"),
    ("3 producer required", _set("producer"), "KE001", "/producer"),
    ("3 producer version", _set("producer", "version"), "KE001", "/producer/version"),
    ("3 subject required", _set("subject"), "KE001", "/subject"),
    ("3 subject kind", _set("subject", "kind", value="program"), "KE001", "/subject/kind"),
    ("3 subject name", _set("subject", "name"), "KE001", "/subject/name"),
    ("3 status required", _set("status"), "KE001", "/status"),
    ("3 status enum", _set("status", value="ok"), "KE001", "/status"),
    (
        "3.1 request_rate number or inf",
        _set("task", "serving", value={"request_rate": "fast"}),
        "KE001",
        "/task/serving/request_rate",
    ),
    ("3.4 stats median or mean", _set(*_B, "stats", "median"), "KE501", "/timing/baseline/stats"),
    (
        "3.5 raw_columns align",
        _set("profiler", value=[{"tool": "ncu", "kernels": [{"name": "k"}], "raw_columns": {"a/b": [1, 2]}}]),
        "KE901",
        "/profiler/0/raw_columns/a~1b",
    ),  # fmt: skip
    (
        "3.5 raw_table replaces raw_columns",
        _raw_table(raw_columns={"a": [1]}),
        "KE902",
        "/profiler/0/raw_columns",
    ),
    ("3.5 raw_table gives its sha256", _raw_table(sha256=None), "KE902", "/profiler/0/raw_table/sha256"),
    ("3.5 raw_table gives a path or uri", _raw_table(path=None), "KE902", "/profiler/0/raw_table"),
    (
        "3.5 raw_table is an Arrow IPC file",
        _raw_table(media_type="text/csv"),
        "KE902",
        "/profiler/0/raw_table/media_type",
    ),
    (
        "3.7 replay command is a list",
        _set("replay", "command", value="python b.py"),
        "KE001",
        "/replay/command",
    ),
    # §4 taxonomy
    (
        "4 error status takes no compile_error",
        _fail("compile_error", "error"),
        "KE403",
        "/failure/failure_class",
    ),
    ("4 failed status takes no infra_error", _fail("infra_error"), "KE403", "/failure/failure_class"),
    # §5 status table
    (
        "5 passed MUST NOT carry failure",
        _set("failure", value={"failure_class": "compile_error"}),
        "KE402",
        "/failure",
    ),
    (
        "5 failed MUST carry failure",
        _all(
            _set("status", value="failed"),
            _NO_CLAIM,
            _set("validation", "verdict", value="failed"),
            _set("validation", "shapes", 0, "passed", value=False),
        ),
        "KE402",
        "/failure",
    ),  # fmt: skip
    (
        "5 error MUST carry failure",
        _all(_set("status", value="error"), _NO_CLAIM, _set("validation")),
        "KE402",
        "/failure",
    ),  # fmt: skip
    ("5 replay MUST be present", _set("replay"), "KE101", "/replay"),
    ("5 replay.command MUST be present", _set("replay", "command"), "KE101", "/replay/command"),
    ("5 replay.command non-empty", _set("replay", "command", value=[]), "KE101", "/replay/command"),
    ("5 replay argv[0] non-blank", _set("replay", "command", value=[" ", "x"]), "KE101", "/replay/command/0"),
    (
        "5 skipped MUST carry replay",
        _all(_set("status", value="skipped"), _set("timing"), _set("validation"), _set("replay")),
        "KE101",
        "/replay",
    ),  # fmt: skip
    ("5 kernel claim MUST carry validation", _set("validation"), "KE404", "/validation"),
    (
        "5 passed MUST NOT carry failed validation",
        _all(
            _NO_CLAIM,
            _set("validation", "verdict", value="failed"),
            _set("validation", "shapes", 0, "passed", value=False),
        ),
        "KE405",
        "/validation/verdict",
    ),  # fmt: skip
    *[
        (f"5 {c} MUST carry failed validation", _fail(c), "KE406", "/validation")
        for c in ("incorrect_shape", "incorrect_dtype", "incorrect_numerical", "nan_inf")
    ],
    (
        "5 correctness failure verdict failed",
        _all(_fail("nan_inf"), _set("validation", value={"verdict": "passed"})),
        "KE406",
        "/validation/verdict",
    ),  # fmt: skip
    (
        "5 skipped MUST NOT carry timing",
        _all(_set("status", value="skipped"), _NO_CLAIM, _set("validation")),
        "KE408",
        "/timing",
    ),  # fmt: skip
    *[
        (
            f"5 {s} MUST NOT claim",
            _all(_set("status", value=s), _set("failure", value={"failure_class": "runtime_error"})),
            "KE401",
            "/timing/speedup",
        )  # fmt: skip
        for s in ("failed", "error", "skipped")
    ],
    ("5 claim MUST name a baseline", _set(*_B), "KE201", "/timing/baseline"),
    ("5 timing MUST identify hardware", _set("hardware"), "KE801", "/hardware"),
    (
        "5 profiler MUST identify hardware",
        _all(_set("timing"), _set("hardware"), _set("profiler", value=[{"tool": "ncu"}])),
        "KE801",
        "/hardware",
    ),  # fmt: skip
    (
        "5 device is a model, not a vendor",
        _set("hardware", "device", value="NVIDIA GPU"),
        "KE801",
        "/hardware/device",
    ),
    # §6 baselines and §7 rules
    (
        "6 kernel baseline in registry",
        _set(*_B, "provider", value="ours"),
        "KE202",
        "/timing/baseline/provider",
    ),
    ("6 kernel baseline has provider", _set(*_B, "provider"), "KE202", "/timing/baseline/provider"),
    ("7 KE203 baseline version", _set(*_B, "version"), "KE203", "/timing/baseline/version"),
    ("7 KE203 baseline call", _set(*_B, "call", value=" "), "KE203", "/timing/baseline/call"),
    (
        "7 KE205 serving baseline engine",
        _set("subject", "kind", value="serving"),
        "KE205",
        "/timing/baseline/engine",
    ),
    (
        "7 KE301 claim matches timings",
        _set("timing", "speedup", "value", value=1.85),
        "KE301",
        "/timing/speedup/value",
    ),
    (
        "7 KE301 a stated tolerance above 0.05 counts as 0.05",
        _set("timing", "speedup", value={"value": 150.0, "basis": "median", "tolerance": 200.0}),
        "KE301",
        "/timing/speedup/value",
    ),
    (
        "7 KE302 claim can be checked",
        _all(_set(*_B, "stats", "median"), _set(*_B, "stats", "mean", value=200.0)),
        "KE302",
        "/timing/speedup",
    ),  # fmt: skip
    (
        "7 KE407 passed verdict, failed shape",
        _set("validation", "shapes", 0, "passed", value=False),
        "KE407",
        "/validation/shapes/0",
    ),  # fmt: skip
    (
        "7 KE407 passed verdict, NaN seen",
        _set("validation", "shapes", 0, "nan_seen", value=True),
        "KE407",
        "/validation/shapes/0",
    ),  # fmt: skip
    (
        "7 KE407 failed verdict, no failed shape",
        _all(
            _NO_CLAIM,
            _set("status", value="failed"),
            _set("failure", value={"failure_class": "incorrect_numerical"}),
            _set("validation", "verdict", value="failed"),
        ),
        "KE407",
        "/validation/verdict",
    ),  # fmt: skip
    ("7 KE501 min <= median", _set(*_S, "min", value=185.0), "KE501", "/timing/stats/min"),
    ("7 KE501 median <= max", _set(*_S, "max", value=179.0), "KE501", "/timing/stats/max"),
    ("7 KE501 mean <= max", _set(*_S, "mean", value=200.0), "KE501", "/timing/stats/mean"),
    (
        "7 KE501 percentile keys",
        _set(*_S, "percentiles", value={"median": 180.0}),
        "KE501",
        "/timing/stats/percentiles/median",
    ),  # fmt: skip
    (
        "7 KE501 percentiles non-decreasing",
        _set(*_S, "percentiles", value={"p90": 185.0, "p99": 184.0}),
        "KE501",
        "/timing/stats/percentiles/p99",
    ),  # fmt: skip
    (
        "7 KE501 percentiles within max",
        _set(*_S, "percentiles", value={"p99": 191.0}),
        "KE501",
        "/timing/stats/percentiles/p99",
    ),  # fmt: skip
    (
        "7 KE501 p50 = median",
        _set(*_S, "percentiles", value={"p50": 185.0}),
        "KE501",
        "/timing/stats/percentiles/p50",
    ),  # fmt: skip
    ("7 KE501 ci_low <= median", _set(*_S, "ci_low", value=181.0), "KE501", "/timing/stats/ci_low"),
    ("7 KE501 median <= ci_high", _set(*_S, "ci_high", value=179.0), "KE501", "/timing/stats/ci_high"),
    (
        "7 KE501 ci_low <= ci_high without median",
        _all(
            _set(*_S, "median"),
            _set(*_S, "mean", value=180.0),
            _set(*_S, "ci_low", value=185.0),
            _set(*_S, "ci_high", value=182.0),
        ),
        "KE501",
        "/timing/stats/ci_low",
    ),  # fmt: skip
    (
        "7 KE501 serving latency blocks",
        _set("timing", "serving", value={"ttft": {"unit": "ms", "median": 5.0, "min": 6.0}}),
        "KE501",
        "/timing/serving/ttft/min",
    ),  # fmt: skip
    ("7 KE502 repeats >= 1", _set("timing", "repeats", value=0), "KE502", "/timing/repeats"),
    ("7 KE502 n >= 1", _set(*_S, "n", value=0), "KE502", "/timing/stats/n"),
    (
        "7 KE503 samples median",
        _set(*_S, "samples", value=[178.0, 190.0, 190.0]),
        "KE503",
        "/timing/stats/median",
    ),
    (
        "7 KE503 samples n",
        _all(_set(*_S, "samples", value=[178.0, 180.0, 190.0]), _set(*_S, "n", value=4)),
        "KE503",
        "/timing/stats/n",
    ),  # fmt: skip
    (
        "7 KE503 samples max without median",
        _all(
            _set(*_S, "median"),
            _set(*_S, "mean", value=182.0),
            _set(*_S, "samples", value=[178.0, 180.0, 195.0]),
        ),
        "KE503",
        "/timing/stats/max",
    ),  # fmt: skip
    (
        "7 KE601 FLOP/s within peak",
        _set("task", "shapes", 0, "work", "flops", "value", value=1.374e13),
        "KE601",
        "/timing/stats/median",
    ),  # fmt: skip
    (
        "7 KE601 a MIG slice gets its share of the peak",
        _all(
            _set("hardware", "device", value="NVIDIA H100 80GB HBM3 MIG 3g.40gb"),
            _set("hardware", "compute_units", value=60),
        ),  # 763 TFLOP/s: below the whole H100's 989, above 60/132 of it
        "KE601",
        "/timing/stats/median",
    ),
    (
        "7 KE602 bandwidth within peak",
        _set("task", "shapes", 0, "work", "bytes", value={"value": 1e9, "unit": "B"}),
        "KE602",
        "/timing/stats/median",
    ),  # fmt: skip
    (
        "7 KE701 reference below atol",
        _set("validation", "shapes", 0, "reference_max_abs", value=0.005),
        "KE701",
        "/validation/shapes/0",
    ),  # fmt: skip
    (
        "7 KE701 rtol >= 1",
        _set("validation", "shapes", 0, "rtol", value=1.0),
        "KE701",
        "/validation/shapes/0",
    ),
    # work figures (KE605-KE607, KE805, KE806)
    (
        "7 KE605 FLOPs follow from the dims",
        _set("task", "shapes", 0, "dims", value={"m": 4096, "n": 4096, "k": 16384}),
        "KE605",
        "/task/shapes/0/work/flops",
    ),
    (
        "7 KE605 a contraction under another name states at most 2x its FLOPs",
        _all(
            _set("task", "operator", value="mlp_up_proj"),
            _set(
                "task",
                "shapes",
                0,
                "tensors",
                value=[
                    {"name": "x", "shape": [1024, 4096], "dtype": "bf16"},
                    {"name": "w", "shape": [4096, 4096], "dtype": "bf16"},
                    {"name": "y", "shape": [1024, 4096], "dtype": "bf16"},
                ],  # one 2 x 1024 x 4096 x 4096 contraction: 34 GFLOP, a quarter of the stated
            ),
        ),
        "KE605",
        "/task/shapes/0/work/flops",
    ),
    (
        "7 KE606 dtype labels match the tensors",
        _all(
            _set(
                "task", "shapes", 0, "tensors", value=[{"name": "A", "shape": [4096, 4096], "dtype": "bf16"}]
            ),
            _set("task", "dtypes", value=["fp8"]),
        ),
        "KE606",
        "/task/dtypes/0",
    ),
    (
        "7 KE607 declared peak within the table",
        _set("hardware", "peak_bandwidth", value={"value": 9000.0, "unit": "GB/s"}),
        "KE607",
        "/hardware/peak_bandwidth",
    ),
    (
        "7 KE608 bytes cover the tensors",
        _set(
            "task",
            "shapes",
            0,
            value={
                "id": "4096",
                "tensors": [
                    {"name": "A", "shape": [4096, 4096], "dtype": "bf16"},
                    {"name": "B", "shape": [4096, 4096], "dtype": "bf16"},
                ],
                "work": {"bytes": {"value": 8.0, "unit": "MiB"}},
            },
        ),  # 64 MiB of operands
        "KE608",
        "/task/shapes/0/work/bytes",
    ),
    (
        "7 KE607 a CPU declares no more than its cores can retire",
        _all(
            _set(
                "hardware",
                value={
                    "vendor": "cpu",
                    "device": "AMD EPYC 9654 96-Core Processor",
                    "arch": "x86_64",
                    "compute_units": 96,
                    "clocks": {"locked": False, "sm_observed": {"value": 3100.0, "unit": "MHz"}},
                    "peak_flop_rate": {"value": 80.0, "unit": "TFLOP/s"},
                },
            ),
            _set("task", "dtypes", value=["fp32"]),
        ),  # 96 cores x 3.1 GHz x 64 fp32 FLOP/cycle = 19 TFLOP/s
        "KE607",
        "/hardware/peak_flop_rate",
    ),
    (
        "7 KE805 count within the devices that ran",
        _all(_set("hardware", "count", value=4), _set("replay", "env", value={"CUDA_VISIBLE_DEVICES": "0"})),
        "KE805",
        "/hardware/count",
    ),
    (
        "7 KE805 count within the TPU chips a replay exposes",
        _all(
            _set("hardware", "count", value=8), _set("replay", "env", value={"TPU_VISIBLE_CHIPS": "0,1,2,3"})
        ),
        "KE805",
        "/hardware/count",
    ),
    ("7 KE806 name agrees with the arch", _set("hardware", "arch", value="sm_80"), "KE806", "/hardware/device"),
    # serving arithmetic (KE10xx), profile against claim (KE11xx), cost (KE12xx)
    (
        "7 KE1001 throughput within tokens / duration",
        _set(
            "timing",
            "serving",
            value={
                "duration": {"value": 10.0, "unit": "s"},
                "total_output_tokens": 1000,
                "output_throughput": {"value": 500.0, "unit": "tok/s"},
            },
        ),
        "KE1001",
        "/timing/serving/output_throughput",
    ),  # fmt: skip
    (
        "7 KE1002 output tokens within completed x output_len",
        _all(
            _set("task", "serving", value={"output_len": 10}),
            _set("timing", "serving", value={"completed": 10, "total_output_tokens": 1000}),
        ),
        "KE1002",
        "/timing/serving/total_output_tokens",
    ),  # fmt: skip
    (
        "7 KE1001 a saturated run takes no longer than its rounds of requests",
        _all(
            _set("task", "serving", value={"max_concurrency": 10, "request_rate": "inf"}),
            _set(
                "timing",
                "serving",
                value={
                    "completed": 100,
                    "duration": {"value": 600.0, "unit": "s"},
                    "e2el": {"unit": "ms", "median": 900.0, "max": 2000.0},
                },
            ),
        ),  # 10 rounds of at most 2 s: 32 s at most, not 600
        "KE1001",
        "/timing/serving/duration",
    ),
    (
        "7 KE1003 completed + failed = prompts",
        _all(
            _set("task", "serving", value={"num_prompts": 10}),
            _set("timing", "serving", value={"completed": 8}),
        ),
        "KE1003",
        "/timing/serving/failed",
    ),  # fmt: skip
    (
        "7 KE1004 e2el >= ttft",
        _set(
            "timing",
            "serving",
            value={"ttft": {"unit": "ms", "median": 50.0}, "e2el": {"unit": "ms", "median": 40.0}},
        ),
        "KE1004",
        "/timing/serving/e2el/median",
    ),  # fmt: skip
    (
        "7 KE1005 ttft >= 1 ms",
        _set("timing", "serving", value={"ttft": {"unit": "us", "median": 100.0}}),
        "KE1005",
        "/timing/serving/ttft/median",
    ),  # fmt: skip
    (
        "7 KE1007 TPOT follows from e2el and TTFT",
        _set(
            "timing",
            "serving",
            value={
                "completed": 10,
                "total_output_tokens": 1010,
                "ttft": {"unit": "ms", "mean": 100.0},
                "e2el": {"unit": "ms", "mean": 1100.0},
                "tpot": {"unit": "ms", "mean": 1.0},
            },
        ),
        "KE1007",
        "/timing/serving/tpot/mean",
    ),
    (
        "7 KE1006 failed requests behind a passed claim",
        _set("timing", "serving", value={"completed": 5, "failed": 5}),
        "KE1006",
        "/timing/serving/failed",
    ),  # fmt: skip
    (
        "7 KE1101 claim not faster than the profiled kernels",
        _set(
            "profiler",
            value=[
                {
                    "tool": "ncu",
                    "of": {"side": "candidate", "shape_id": "4096"},
                    "kernels": [{"name": "k", "metrics": {"duration": {"value": 500.0, "unit": "us"}}}],
                }
            ],
        ),
        "KE1101",
        "/timing/stats/median",
    ),  # fmt: skip
    (
        "7 KE1102 the candidate's kernel in its capture",
        _set(
            "profiler",
            value=[
                {
                    "tool": "ncu",
                    "of": {"side": "candidate", "expected_kernels": ["mine"]},
                    "kernels": [{"name": "cublas_gemm"}],
                }
            ],
        ),
        "KE1102",
        "/profiler/0/kernels",
    ),  # fmt: skip
    (
        "7 KE1103 a capture's shape is one of the task's",
        _set(
            "profiler",
            value=[
                {
                    "tool": "ncu",
                    "of": {"side": "candidate", "shape_id": "8192"},
                    "kernels": [{"name": "k"}],
                }
            ],
        ),
        "KE1103",
        "/profiler/0/of/shape_id",
    ),
    (
        "7 KE1104 a profiled candidate kernel is in the captures",
        _all(
            _set(
                "profiler",
                value=[{"tool": "ncu", "of": {"side": "baseline"}, "kernels": [{"name": "cublas_gemm"}]}],
            ),
            _set("defences", value=[{"check": "candidate_kernel_profiled", "outcome": "passed"}]),
        ),
        "KE1104",
        "/profiler/0/of/side",
    ),
    (
        "7 KE1201 energy within power limit x devices",
        _all(
            _set("hardware", "power_limit", value={"value": 700.0, "unit": "W"}),
            _set(
                "cost",
                value={
                    "energy": {
                        "energy": {"value": 10000.0, "unit": "J"},
                        "window": {"value": 1.0, "unit": "s"},
                        "source": "nvml",
                    }
                },
            ),
        ),
        "KE1201",
        "/cost/energy/energy",
    ),  # fmt: skip
    (
        "7 KE1202 gpu_time covers the timed work",
        _set("cost", value={"gpu_time": {"value": 1.0, "unit": "us"}}),
        "KE1202",
        "/cost/gpu_time",
    ),
    # schema 0.2 rules of the identity, replay, baseline, claim, status and statistics bands
    (
        "7 KE008 measured_at not in the future",
        _set("measured_at", value="2099-01-01T00:00:00Z"),
        "KE008",
        "/measured_at",
    ),
    (
        "7 KE008 measured_at not after created_at",
        _set("measured_at", value="2026-11-02T12:00:00Z"),
        "KE008",
        "/measured_at",
    ),
    ("7 KE103 replay runs something", _set("replay", "command", value=["true"]), "KE103", "/replay/command"),
    (
        "7 KE103 sh -c exit 0",
        _set("replay", "command", value=["sh", "-c", "exit 0"]),
        "KE103",
        "/replay/command",
    ),
    (
        "7 KE103 a no-op inside a container",
        _set("replay", "command", value=["docker", "run", "--rm", "--gpus", "all", "img:1", "true"]),
        "KE103",
        "/replay/command",
    ),
    (
        "7 KE103 a --help run",
        _set("replay", "command", value=["python", "bench.py", "--m", "4096", "--help"]),
        "KE103",
        "/replay/command",
    ),
    (
        "7 KE103 a script that prints a stored result",
        _set("replay", "command", value=["python", "-c", "import json; print(json.load(open('r.json')))"]),
        "KE103",
        "/replay/command",
    ),
    (
        "7 KE103 a dry run",
        _set("replay", "command", value=["make", "-n", "bench"]),
        "KE103",
        "/replay/command",
    ),
    (
        "7 KE104 commit is a hash",
        _set("replay", "repository", "commit", value="main"),
        "KE104",
        "/replay/repository/commit",
    ),
    (
        "7 KE207 same dtypes both sides",
        _all(
            _set("timing", "conditions", value={"dtypes": ["bf16"]}),
            _set(*_B, "conditions", value={"dtypes": ["fp32"]}),
        ),
        "KE207",
        "/timing/baseline/conditions/dtypes",
    ),
    (
        "7 KE207 same shape both sides",
        _set(*_B, "conditions", value={"shape_id": "8192"}),
        "KE207",
        "/timing/baseline/conditions/shape_id",
    ),
    (
        "7 KE208 same kind of timer",
        _set(*_B, "conditions", value={"method": "host_clock"}),
        "KE208",
        "/timing/baseline/conditions/method",
    ),
    (
        "7 KE207 a serving baseline's answers as long as the candidate's",
        _all(
            _set("timing", "serving", value={"completed": 100, "total_output_tokens": 12800}),
            _set(*_B, "serving", value={"completed": 100, "total_output_tokens": 7000}),
        ),
        "KE207",
        "/timing/baseline/serving/total_output_tokens",
    ),
    (
        "7 KE208 clocks locked on both sides or neither",
        _all(
            _set("timing", "conditions", value={"clock_policy": "unlocked"}),
            _set(*_B, "conditions", value={"clock_policy": "locked"}),
        ),
        "KE208",
        "/timing/conditions/clock_policy",
    ),
    (
        "7 KE207 a serving baseline's settings restate the candidate's workload",
        _all(
            _set("task", "serving", value={"max_concurrency": 64}),
            _set(*_B, "settings", value={"max_concurrency": 16}),
        ),
        "KE207",
        "/timing/baseline/settings/max_concurrency",
    ),
    (
        "7 KE208 a rotation through one buffer is warm",
        _all(
            _set("timing", "conditions", value={"cache": {"mode": "rotating", "rotating_buffers": 1}}),
            _set(*_B, "conditions", value={"cache": {"mode": "flushed"}}),
        ),
        "KE208",
        "/timing/conditions/cache/rotating_buffers",
    ),
    (
        "7 KE208 same_session with two sessions",
        _all(
            _set("timing", "conditions", value={"session": "a"}),
            _set(*_B, "conditions", value={"session": "b"}),
        ),
        "KE208",
        "/timing/baseline/conditions/session",
    ),
    (
        "7 KE209 vendor library on its hardware",
        _set(*_B, "provider", value="hipBLASLt"),
        "KE209",
        "/timing/baseline/provider",
    ),
    (
        "7 KE210 no placeholder version",
        _set(*_B, "version", value="unknown"),
        "KE210",
        "/timing/baseline/version",
    ),
    ("7 KE210 no placeholder call", _set(*_B, "call", value="n/a"), "KE210", "/timing/baseline/call"),
    (
        "7 KE210 a version with a digit",
        _set(*_B, "version", value="system"),
        "KE210",
        "/timing/baseline/version",
    ),
    (
        "7 KE210 a version without a wildcard",
        _set(*_B, "version", value="12.x"),
        "KE210",
        "/timing/baseline/version",
    ),
    ("7 KE210 a call that names one", _set(*_B, "call", value="see code"), "KE210", "/timing/baseline/call"),
    (
        "7 KE303 finite speedup",
        _set(*_S, value={"unit": "us", "median": 0.0, "min": 0.0, "max": 0.0}),
        "KE303",
        "/timing/speedup/value",
    ),
    ("7 KE409 timed shape validated", _set("timing", "shape_id", value="8192"), "KE409", "/timing/shape_id"),
    (
        "7 KE411 passed shape within its bound",
        _set("validation", "shapes", 0, "max_abs_error", value=1.0),
        "KE411",
        "/validation/shapes/0/max_abs_error",
    ),
    (
        "7 KE411 matched ratio at least the required",
        _all(
            _set("validation", "shapes", 0, "matched_ratio", value=0.9),
            _set("validation", "shapes", 0, "required_matched_ratio", value=0.99),
        ),
        "KE411",
        "/validation/shapes/0/matched_ratio",
    ),
    (
        "7 KE412 no failed defence on a passed packet",
        _set("defences", value=[{"check": "unseen_inputs", "outcome": "failed"}]),
        "KE412",
        "/defences/0",
    ),
    (
        "7 KE505 no call timed at 0",
        _set("timing", "stats", "min", value=0.0),
        "KE505",
        "/timing/stats/min",
    ),
    (
        "7 KE505 no zero duration",
        _set(*_B, "stats", value={"unit": "us", "median": 0.0}),
        "KE505",
        "/timing/baseline/stats/median",
    ),
    (
        "7 KE505 events faster than a launch",
        _set(*_S, value={"unit": "us", "median": 0.5, "min": 0.4, "max": 0.6}),
        "KE505",
        "/timing/stats/median",
    ),
    ("7 KE506 std within the range", _set(*_S, "std", value=100.0), "KE506", "/timing/stats/std"),
    (
        "7 KE506 std of the samples",
        _all(
            _set(*_S, "samples", value=[178.0, 180.0, 190.0]),
            _set(*_S, "n", value=3),
            _set(*_S, "std", value=0.1),
        ),
        "KE506",
        "/timing/stats/std",
    ),
    (
        "7 KE507 samples vary",
        _set(
            *_S,
            value={
                "unit": "us",
                "median": 180.0137,
                "min": 180.0137,
                "max": 180.0137,
                "n": 12,
                "samples": [180.0137] * 12,
            },
        ),
        "KE507",
        "/timing/stats",
    ),
]

# SHOULD statements that have a warning
WARNINGS: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    (
        "7 KE009 an extension restates the speedup",
        _set("extensions", value={"https://example.org/leaderboard/v1": {"speedup": 9.9}}),
        "KE009",
        "/extensions/https:~1~1example.org~1leaderboard~1v1/speedup",
    ),
    ("7 KE508 three timed calls", _set("timing", "repeats", value=2), "KE508", "/timing/repeats"),
    (
        "7 KE1105 a profiled candidate kernel comes with its capture",
        _set("defences", value=[{"check": "candidate_kernel_profiled", "outcome": "passed"}]),
        "KE1105",
        "/defences/0",
    ),
    (
        "7 KE1008 TPOT not below the weights' read time",
        _all(
            _set("task", "serving", value={"model": "meta-llama/Llama-3.1-8B-Instruct"}),
            _set("timing", "serving", value={"tpot": {"unit": "ms", "median": 1.0}}),
        ),
        "KE1008",
        "/timing/serving/tpot/median",
    ),
    (
        "7 KE1203 energy not below what a powered device draws",
        _set(
            "cost",
            value={
                "energy": {
                    "energy": {"value": 2.0, "unit": "J"},
                    "window": {"value": 1.0, "unit": "s"},
                    "source": "nvml",
                }
            },
        ),
        "KE1203",
        "/cost/energy/energy",
    ),
    ("1.1 packet_id SHOULD be present", lambda d: None, "KE005", "/packet_id"),
    (
        "3 created_at SHOULD NOT be in the future",
        _set("created_at", value="2099-01-01T00:00:00Z"),
        "KE006",
        "/created_at",
    ),  # fmt: skip
    (
        "3.1 serving SHOULD carry task.serving",
        _all(_set("subject", "kind", value="serving"), _NO_CLAIM),
        "KE804",
        "/task/serving",
    ),  # fmt: skip
    ("5 hardware SHOULD otherwise", _all(_set("timing"), _set("hardware")), "KE802", "/hardware"),
    ("7 KE102 replay pins the code", _set("replay", "repository"), "KE102", "/replay"),
    ("7 KE206 same session", _set(*_B, "same_session"), "KE206", "/timing/baseline/same_session"),
    (
        "7 KE504 repeats = samples",
        _set(*_S, "samples", value=[178.0, 180.0, 190.0]),
        "KE504",
        "/timing/repeats",
    ),
    (
        "7 KE603 warm caches",
        _all(
            _set("task", "shapes", 0, "work", "bytes", value={"value": 1e9, "unit": "B"}),
            _set("timing", "cache_policy", value="warm"),
        ),
        "KE603",
        "/timing/stats/median",
    ),  # fmt: skip
    (
        "7 KE604 peaks known",
        _all(_set("hardware", "device", value="Acme Z9"), _set("hardware", "arch")),
        "KE604",
        "/hardware/device",
    ),  # fmt: skip
    ("7 KE803 clocks recorded", _set("hardware", "clocks"), "KE803", "/hardware/clocks"),
    (
        "7 KE105 container on a moving tag has a digest",
        _set("replay", "container", value={"image": "ghcr.io/acme/kernels:latest"}),
        "KE105",
        "/replay/container",
    ),
    (
        "7 KE305 a 10x gain over a vendor library is reproduced first",
        _all(
            _set("timing", "baseline", "provider", value="cuBLASLt"),
            _set("timing", "baseline", "stats", "median", value=2160.0),
            _set("timing", "speedup", value={"value": 12.0, "basis": "median"}),
        ),
        "KE305",
        "/timing/speedup/value",
    ),
    (
        "7 KE105 a digest of one repeated digit",
        _set(
            "replay", "container", value={"image": "ghcr.io/acme/kernels:1.0", "digest": "sha256:" + "0" * 64}
        ),
        "KE105",
        "/replay/container/digest",
    ),
    (
        "7 KE107 a source digest of one repeated digit",
        _set("compile", value={"succeeded": True, "source_digest": "sha256:" + "0" * 64}),
        "KE107",
        "/compile/source_digest",
    ),
    (
        "7 KE108 a repository URL nobody else can fetch",
        _set("replay", "repository", "url", value="file:///home/alice/kernels"),
        "KE108",
        "/replay/repository/url",
    ),
    (
        "7 KE704 exact match of a float reduction",
        _all(
            _set("validation", "shapes", 0, "atol"),
            _set("validation", "shapes", 0, "rtol"),
            _set("validation", "shapes", 0, "max_abs_error", value=0.0),
        ),
        "KE704",
        "/validation/shapes/0",
    ),
    (
        "7 KE808 more devices counted and exposed than the conditions state",
        _all(
            _set("hardware", "count", value=4),
            _set("timing", "conditions", value={"device_count": 1}),
            _set("replay", "env", value={"CUDA_VISIBLE_DEVICES": "0,1,2,3"}),
        ),
        "KE808",
        "/timing/conditions/device_count",
    ),
    (
        "7 KE1204 money not below what the device time costs",
        _set(
            "cost",
            value={
                "gpu_time": {"value": 3600.0, "unit": "s"},
                "money": {"amount": 0.01, "currency": "USD", "price_source": "on-demand list price"},
            },
        ),
        "KE1204",
        "/cost/money/amount",
    ),
    (
        "7 KE009 a kevidence namespace the project does not write",
        _set("extensions", value={"kevidence:grade": {"grade": "A"}}),
        "KE009",
        "/extensions/kevidence:grade",
    ),
    (
        "7 KE211 baseline measured in the packet",
        _all(_set(*_B, "packet_id", value="sha256:" + "1" * 64), _set(*_B, "stats")),
        "KE211",
        "/timing/baseline/packet_id",
    ),
    (
        "7 KE304 a candidate keeping fewer samples than it timed, unsaid",
        _all(
            _set("timing", "stats", "n", value=21),
            _set("timing", "conditions", value={"repeats": 51}),
            _set(*_B, "conditions", value={"repeats": 51}),
            _set(*_B, "stats", "n", value=51),
        ),
        "KE304",
        "/timing/stats/n",
    ),
    (
        "7 KE304 basis supported by the median",
        _all(
            _set(*_S, "mean", value=180.0),
            _set(
                *_B, "stats", value={"unit": "us", "median": 207.0, "mean": 300.0, "min": 200.0, "max": 900.0}
            ),
            _set("timing", "speedup", value={"value": 300.0 / 180.0, "basis": "mean"}),
        ),
        "KE304",
        "/timing/speedup/basis",
    ),
    (
        "7 KE410 suite validated",
        _set("task", "shapes", value=[{"id": "4096"}, {"id": "8192"}]),
        "KE410",
        "/validation/shapes",
    ),
    ("7 KE508 warmed up", _set("timing", "warmup", value=0), "KE508", "/timing/warmup"),
    (
        "7 KE413 the whole output validated",
        _all(
            _set(
                "task",
                "shapes",
                0,
                "tensors",
                value=[{"name": "out", "shape": [4096, 4096], "dtype": "bf16"}],
            ),
            _set("validation", "shapes", 0, "elements", value=4096),
        ),
        "KE413",
        "/validation/shapes/0/elements",
    ),
    (
        "7 KE703 matched ratio that checks the output",
        _set("validation", "shapes", 0, "required_matched_ratio", value=0.5),
        "KE703",
        "/validation/shapes/0/required_matched_ratio",
    ),
    (
        "7 KE702 reference magnitude recorded",
        _set("validation", "shapes", 0, "reference_max_abs"),
        "KE702",
        "/validation/shapes/0/reference_max_abs",
    ),
]


def _found(report: Any) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in report.findings}


def _check(mutate: Callable[[dict[str, Any]], None], rule: str, pointer: str, *, error: bool) -> None:
    d = _base()
    mutate(d)
    slow = validate(copy.deepcopy(d))
    fast = validate(json.dumps(d).encode())
    for report in (slow, fast):
        assert report.ok is not error, report.findings
    if rule == "KE001":
        # the two decoders word structural errors differently and msgspec stops at the first
        assert (rule, pointer) in _found(slow), slow.findings
        assert any(
            r == rule and (p == pointer or p.startswith(pointer + "/") or pointer.startswith(p + "/"))
            for r, p in _found(fast)
        ), fast.findings
    else:
        assert (rule, pointer) in _found(slow), slow.findings
        key = sorted((f.rule_id, f.pointer, f.message) for f in slow.findings)
        assert key == sorted((f.rule_id, f.pointer, f.message) for f in fast.findings)


def test_the_example_is_valid_and_clean() -> None:
    d = _base()
    assert [f.rule_id for f in validate(d).findings] == ["KE005"]


@pytest.mark.parametrize(("statement", "mutate", "rule", "pointer"), CASES, ids=[c[0] for c in CASES])
def test_must_is_enforced(statement: str, mutate: Any, rule: str, pointer: str) -> None:
    _check(mutate, rule, pointer, error=True)


@pytest.mark.parametrize(("statement", "mutate", "rule", "pointer"), WARNINGS, ids=[c[0] for c in WARNINGS])
def test_should_warns(statement: str, mutate: Any, rule: str, pointer: str) -> None:
    _check(mutate, rule, pointer, error=False)


@pytest.mark.parametrize(
    ("statement", "raw", "rule"),
    [
        (
            "1 UTF-8",
            json.dumps(_base()).replace("gemm_bf16", "gemm\\u00e9").encode().replace(b"\\u00e9", b"\xff"),
            "KE001",
        ),  # fmt: skip
        ("1 no NaN", json.dumps(_base()).replace("180.0", "NaN", 1).encode(), "KE001"),
        ("1 no Infinity", json.dumps(_base()).replace("190.0", "Infinity", 1).encode(), "KE001"),
        (
            "1 no duplicate keys",
            json.dumps(_base())
            .replace('"status": "passed"', '"status": "passed", "status": "passed"')
            .encode(),
            "KE003",
        ),  # fmt: skip
        ("1 a JSON object", b"[1]", "KE001"),
    ],
    ids=lambda x: x if isinstance(x, str) and x[:1].isdigit() else "",
)
def test_encoding_must_is_enforced(statement: str, raw: bytes, rule: str) -> None:
    report = validate(raw)
    assert not report.ok
    assert rule in {f.rule_id for f in report.findings}, report.findings


@pytest.mark.parametrize(("field", "given", "wanted"), [("request_throughput", "tok/s", "`req/s`"), ("output_throughput", "req/s", "`tok/s`")])  # fmt: skip
def test_serving_rate_unit_message_names_the_unit(field: str, given: str, wanted: str) -> None:
    d = _base()
    d["timing"]["serving"] = {field: {"value": 1.0, "unit": given}}
    for report in (validate(d), validate(json.dumps(d).encode())):
        (f,) = report.findings
        assert wanted in f.message and f"got `{given}`" in f.message, f.message
