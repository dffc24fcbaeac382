"""Third red team, physics and hardware bands: each cheat caught where it lies, beside its
honest near-twin, which is let through.

- KE601/KE602: a profiler capture's canonical metrics beyond the device (a percentage of
  peak above 100, `dram_bandwidth` above the HBM peak, `achieved_flop_rate` above the peak
  for the task's precision), profile-only packets too; XProf's cost-model rates are not held.
- KE607: a declared peak far below the table's (an understated peak inflates the
  speed-of-light fraction), but not a partition's share, a low locked clock or a peak for
  the task's own precision.
- KE605: a non-causal attention core held to 1.25x its 4 b h q kv d.
- KE806: a device name spelled with look-alike characters; a CPU whose compute units are its
  SMT threads, not the cores its name states.

The packets are the adversarial suite's builders (read-only use), with one field changed.
"""

from __future__ import annotations

import glob
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate
from kernel_evidence.rules import hardware as hw

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))

from _adv_build import finalize, scale_side  # noqa: E402
from _adv_controls import control  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"  # bf16 8192^3 at ~600 TFLOP/s (H100 bf16 peak 989)
FP8 = "h100_fp8_gemm_vs_cublaslt"
LN = "h100_layernorm_vs_transformer_engine"  # 2.8 TB/s, flushed (H100 HBM 3.35 TB/s)
ATTN = "h200_attention_vs_flashattention"  # non-causal 8 x 32 x 4096^2 x 128
CPU = "cpu_epyc_sgemm_vs_openblas"  # `AMD EPYC 9654 96-Core Processor`, 96 compute units
ONLY = "h100_profile_only"  # a capture, no timing, no claim
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def report(p: dict[str, Any]) -> Any:
    return validate(finalize(p))


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in report(p).findings}


def rules_at(p: dict[str, Any], ptr: str) -> set[str]:
    return {r for r, q in found(p) if q == ptr}


def clean(p: dict[str, Any], grade: str = "A") -> None:
    r = report(p)
    assert r.ok and r.grade.letter == grade, [f.line() for f in r.findings]


def metric(p: dict[str, Any], name: str, value: float, unit: str, cap: int = 0) -> str:
    """Put a canonical metric on the first kernel record of capture ``cap``; its pointer."""
    p["profiler"][cap]["kernels"][0]["metrics"][name] = {"value": value, "unit": unit}
    return f"/profiler/{cap}/kernels/0/metrics/{name}"


# ---------------------------------------------------------------- KE601/KE602: capture metrics


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("sm_throughput", "KE601"),
        ("tensor_pipe_utilization", "KE601"),
        ("achieved_occupancy", "KE601"),
        ("memory_throughput", "KE602"),
        ("l2_hit_rate", "KE602"),
    ],
)
def test_capture_percentage_above_100_is_caught(name: str, rule: str) -> None:
    p = control(GEMM)
    ptr = metric(p, name, 142.0, "%")
    r = report(p)
    assert not r.ok
    assert (rule, ptr) in {(f.rule_id, f.pointer) for f in r.findings}


@pytest.mark.parametrize("value", [94.5, 100.0, 100.6])
def test_capture_percentage_up_to_100_and_rounding_passes(value: float) -> None:
    p = control(GEMM)
    metric(p, "sm_throughput", value, "%")
    metric(p, "memory_throughput", value, "%")
    clean(p)


def test_capture_dram_bandwidth_above_hbm_peak_is_caught() -> None:
    p = control(LN)
    ptr = metric(p, "dram_bandwidth", 5900.0, "GB/s")
    assert ("KE602", ptr) in found(p)
    # device-memory traffic: warm caches are no excuse (no KE603 downgrade)
    p2 = control(LN)
    p2["timing"]["cache_policy"] = "warm"
    p2["timing"]["conditions"]["cache"] = {"mode": "warm"}
    p2["timing"]["baseline"]["conditions"]["cache"] = {"mode": "warm"}
    ptr = metric(p2, "dram_bandwidth", 5900.0, "GB/s")
    assert "KE602" in rules_at(p2, ptr)


def test_capture_dram_bandwidth_below_peak_passes() -> None:
    p = control(LN)
    metric(p, "dram_bandwidth", 2900.0, "GB/s")
    metric(p, "dram_bandwidth", 3.3, "TB/s")  # the peak itself, in another unit
    clean(p)


def test_capture_flop_rate_above_the_task_precision_peak_is_caught() -> None:
    p = control(GEMM)  # bf16: 989 TFLOP/s, while the H100's highest (fp8) is 1979
    ptr = metric(p, "achieved_flop_rate", 1.65e15, "FLOP/s")
    assert ("KE601", ptr) in found(p)


def test_capture_flop_rate_within_the_precision_peak_passes() -> None:
    p = control(GEMM)
    metric(p, "achieved_flop_rate", 605.0, "TFLOP/s")
    clean(p)
    p = control(FP8)  # fp8: 1.5 PFLOP/s is within its 1979
    metric(p, "achieved_flop_rate", 1.5e15, "FLOP/s")
    clean(p)


def test_profile_only_packet_capture_metrics_are_held() -> None:
    p = control(ONLY)
    ptr = metric(p, "sm_throughput", 142.0, "%")
    assert ("KE601", ptr) in found(p)
    p = control(ONLY)
    ptr = metric(p, "dram_bandwidth", 5900.0, "GB/s")
    assert ("KE602", ptr) in found(p)
    p = control(ONLY)
    metric(p, "sm_throughput", 88.0, "%")
    metric(p, "dram_bandwidth", 1200.0, "GB/s")
    assert not report(p).findings


def test_cost_model_capture_rates_are_not_held() -> None:
    """XProf's rates are the compiler's FLOPs and bytes_accessed (on-chip traffic too) over
    an op's time: real TPU captures state bandwidths far above HBM; an ncu capture is held."""
    p = control(ONLY)
    p["profiler"][0]["tool"] = "xprof"
    metric(p, "dram_bandwidth", 9.0e6, "GB/s")
    assert not [f for f in report(p).findings if f.pointer.startswith("/profiler")]
    # off a TPU its FLOP rate is still held to the device's highest peak (an ncu capture
    # relabelled xprof: test_redteam5_physics.py); 3 PFLOP/s is above an H100's any precision
    metric(p, "achieved_flop_rate", 3.0e15, "FLOP/s")
    assert ("KE601", "/profiler/0/kernels/0/metrics/achieved_flop_rate") in found(p)
    p["profiler"][0]["tool"] = "ncu"
    assert {"KE601", "KE602"} <= {r for r, q in found(p) if q.startswith("/profiler/0/kernels/0/metrics/")}


def _ingest(tool: str, path: str, out: Path) -> list[dict[str, Any]]:
    subprocess.run(
        [sys.executable, "-m", "kernel_evidence", "ingest", tool, path, "-o", str(out)],
        check=True,
        capture_output=True,
    )
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


@pytest.mark.skipif(not (CORPUS / "ncu").is_dir(), reason="the shared corpus is not present")
@pytest.mark.parametrize(
    ("tool", "pattern"),
    [("ncu", "ncu/*.ncu-rep"), ("ncu", "ncu/*.csv"), ("rocprof", "rocprof/*"), ("xprof", "xprof/*.pb")],
)
def test_real_captures_stay_clean(tool: str, pattern: str, tmp_path: Path) -> None:
    files = sorted(f for f in glob.glob(str(CORPUS / pattern)) if tool != "rocprof" or Path(f).is_dir())
    assert files
    for i, f in enumerate(files):
        for pk in _ingest(tool, f, tmp_path / f"{i}.jsonl"):
            bad = [
                x.line()
                for x in validate(pk).findings
                if x.rule_id in ("KE601", "KE602") and x.pointer.startswith("/profiler")
            ]
            assert not bad, (f, bad)


# ---------------------------------------------------------------- KE607: understated peaks


def test_understated_flop_peak_is_caught() -> None:
    p = control(GEMM)
    p["hardware"]["peak_flop_rate"] = {"value": 400.0, "unit": "TFLOP/s"}
    assert ("KE607", "/hardware/peak_flop_rate") in found(p)


def test_understated_bandwidth_peak_is_caught() -> None:
    p = control(LN)
    p["hardware"]["peak_bandwidth"] = {"value": 1200.0, "unit": "GB/s"}
    assert ("KE607", "/hardware/peak_bandwidth") in found(p)


def test_datasheet_and_achievable_peaks_pass() -> None:
    for v in (989.4, 700.0):  # the datasheet's, a measured achievable peak
        p = control(GEMM)
        p["hardware"]["peak_flop_rate"] = {"value": v, "unit": "TFLOP/s"}
        p["hardware"]["peak_bandwidth"] = {"value": 3.0, "unit": "TB/s"}
        clean(p)


def test_peak_for_the_task_precision_passes() -> None:
    """An fp8 task's declared peak at the bf16 figure is half the fp8 one: not below it."""
    p = control(FP8)
    p["hardware"]["peak_flop_rate"] = {"value": 989.4, "unit": "TFLOP/s"}
    clean(p)


def test_fp32_task_declares_the_fp32_peak() -> None:
    """An fp32 task: the table's fp32 figure (67 TFLOP/s on an H100), not its tensor ones."""
    p = control(GEMM)
    p["task"]["dtypes"] = ["fp32"]
    p["hardware"]["peak_flop_rate"] = {"value": 60.0, "unit": "TFLOP/s"}
    assert "KE607" not in {r for r, _ in found(p)}
    p["hardware"]["peak_flop_rate"] = {"value": 25.0, "unit": "TFLOP/s"}
    assert ("KE607", "/hardware/peak_flop_rate") in found(p)


def test_partition_share_and_low_lock_pass() -> None:
    # an MI300X CPX partition (38 of 304 CUs): an eighth of the 1307 TFLOP/s bf16 peak
    p = control("mi300x_bf16_gemm_vs_rocblas")
    p["hardware"]["compute_units"] = 38
    p["hardware"]["peak_flop_rate"] = {"value": 163.4, "unit": "TFLOP/s"}
    assert "KE607" not in {r for r, _ in found(p)}
    p["hardware"]["peak_flop_rate"] = {"value": 60.0, "unit": "TFLOP/s"}
    assert ("KE607", "/hardware/peak_flop_rate") in found(p)
    # an H100 locked at 600 MHz: its peak at that clock is ~0.3 of the boost figure
    p = control(GEMM)
    p["hardware"]["clocks"]["sm_requested"] = {"value": 600.0, "unit": "MHz"}
    p["hardware"]["clocks"]["sm_observed"] = {"value": 600.0, "unit": "MHz"}
    p["hardware"]["peak_flop_rate"] = {"value": 300.0, "unit": "TFLOP/s"}
    assert "KE607" not in {r for r, _ in found(p)}


# ---------------------------------------------------------------- KE605: attention FLOPs


def test_non_causal_attention_inflated_inside_2x_is_caught() -> None:
    p = control(ATTN)
    p["task"]["shapes"][0]["work"]["flops"]["value"] *= 1.75
    scale_side(p, "candidate", 1.0)
    assert ("KE605", "/task/shapes/0/work/flops") in found(p)
    p = control(ATTN)
    p["task"]["shapes"][0]["work"]["flops"]["value"] *= 1.3
    assert ("KE605", "/task/shapes/0/work/flops") in found(p)


def test_attention_honest_variants_pass() -> None:
    # the softmax's FLOPs added (5 per score)
    p = control(ATTN)
    sh = p["task"]["shapes"][0]
    sh["work"]["flops"]["value"] += 5 * 8 * 32 * 4096 * 4096
    clean(p)
    # GQA: 8 kv heads beside 32 query heads, counted on the query heads
    p = control(ATTN)
    for d in (
        p["task"]["shapes"][0]["dims"],
        p["timing"]["conditions"]["dims"],
        p["timing"]["baseline"]["conditions"]["dims"],
    ):
        d["kv_heads"] = 8
    p["task"]["shapes"][0]["tensors"][1]["shape"][1] = 8
    p["task"]["shapes"][0]["tensors"][2]["shape"][1] = 8
    clean(p)


def test_attention_with_projections_keeps_the_2x_band() -> None:
    """A name that says more than the core (projections) is held only to 2x."""
    p = control(ATTN)
    p["task"]["operator"] = "attention_forward_with_qkv_projection"
    p["task"]["shapes"][0]["work"]["flops"]["value"] *= 1.75
    assert "KE605" not in {r for r, _ in found(p)}


# ---------------------------------------------------------------- KE806: look-alike names


def _rename(p: dict[str, Any], name: str) -> None:
    for x in (p["hardware"], p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        x["device"] = name
        x.pop("device_id", None)
    p["hardware"].pop("arch", None)


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA \u041d100 80GB HBM3",  # Cyrillic En
        "NVIDIA \uff28100 80GB HBM3",  # fullwidth H
        "NVIDIA H\u200b100 80GB HBM3",  # zero-width space
    ],
)
def test_lookalike_device_name_is_caught(name: str) -> None:
    p = control(GEMM)
    scale_side(p, "candidate", 0.55)
    _rename(p, name)
    r = report(p)
    assert not r.ok
    assert ("KE806", "/hardware/device") in {(f.rule_id, f.pointer) for f in r.findings}
    assert any("look-alike" in f.message for f in r.findings)


def test_non_lookalike_unicode_names_stay_as_before() -> None:
    assert hw._lookalike("NVIDIA H100 80GB HBM3 (東京)") is None
    assert hw._lookalike("Ascend 910B (Développement)") is None
    assert hw._lookalike("AMD Radeon\u2122 RX 7900 XTX") is None
    p = control(GEMM)
    _rename(p, "NVIDIA H100 80GB HBM3 東京")
    assert "KE806" not in {r for r, _ in found(p)}


# ---------------------------------------------------------------- KE806: CPU cores


def test_smt_threads_counted_as_cores_is_caught() -> None:
    p = control(CPU)
    scale_side(p, "candidate", 0.5)
    p["hardware"]["compute_units"] = 192
    p["hardware"]["peak_flop_rate"]["value"] = 14.74
    assert ("KE806", "/hardware/compute_units") in found(p)


def test_core_counts_that_fit_pass() -> None:
    p = control(CPU)
    clean(p)
    p = control(CPU)  # fewer cores in use (a cgroup, numactl) is not more than the part has
    p["hardware"]["compute_units"] = 64
    assert ("KE806", "/hardware/compute_units") not in found(p)
    p = control(CPU)  # two sockets
    p["hardware"]["count"] = 2
    p["hardware"]["compute_units"] = 192
    assert ("KE806", "/hardware/compute_units") not in found(p)


def test_named_cores_reads_only_one_cpu_count() -> None:
    assert hw._named_cores("AMD EPYC 9654 96-Core Processor") == 96
    assert hw._named_cores("AMD Ryzen Threadripper PRO 5995WX 64-Cores") == 64
    assert hw._named_cores("Ampere Altra Q80-30 80 cores") == 80
    assert hw._named_cores("Apple M2 Max 12-core CPU 38-core GPU") is None
    assert hw._named_cores("Intel(R) Core(TM) i9-13900K") is None
    assert hw._named_cores("13th Gen Intel(R) Core(TM) i7-13700") is None
