"""The cheats: each takes one honest control and tells exactly one lie.

One entry per cheat: the function's name says the lie and the public incident it models,
its docstring says what the cheater did, and the decorator names the class of lie (item 3
of issue 16), the control it starts from and the JSON pointers of the lying fields. A rule
that catches the cheat must report a finding at one of those pointers (or a parent or child
of one) and leave the packet invalid or graded C or lower.

After the mutation the packet id is recomputed: a cheater hands in a self-consistent packet,
not one that KE004 rejects for a stale id. Likewise claims are recomputed from the changed
timings (the cheater keeps ``speedup`` consistent) unless the lie is the claim itself.

Incidents modelled (public issue threads):

- KernelBench #165: zeros pass an absolute tolerance when outputs are tiny.
- KernelBench #82: a kernel on a side stream that events do not wait for; inputs modified.
- GPU MODE reference-kernels #162: aggregator underflow to 0, cached outputs, lazy outputs,
  patched ``Event.elapsed_time`` / statistics.
- llm.c #851/#852: 3530 GB/s on an 864 GB/s L40S via persisting L2; outputs drifting after
  the pre-benchmark check.
- Sakana AI CUDA Engineer: a 150x claim for a kernel that was 3x slower.
- FlashInfer contest starter-kit #21: outputs cached by input fingerprint.
- AMD GEAK #254 (fake >100x speedups), #326 (hot candidate median against a cold single
  baseline round), #316 (self-reported speedups with correctness missing).
- triton #1252 / pytorch #127953: flush buffers against the L2 size; facebookexperimental
  triton #1679: a flush inside the timed region.
- vLLM #26478: failed requests missing from the benchmark report; tt-inference-server #4681:
  latencies of 0.02 ms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from _adv_build import (
    Packet,
    _latency,
    digest,
    recompute_speedup,
    scale_side,
    set_side_samples,
)

__all__ = ["CHEATS", "CLASSES", "Cheat"]

#: the classes of lie (issue 16, item 3, and the rule classes that existed before it)
CLASSES = {
    "degenerate_timings": "zero, sub-launch, identical or under-dispersed samples; one repeat or no warmup",
    "cherry_picked_statistics": "a basis the samples do not support; different sample handling per side",
    "mismatched_baseline": "other dtypes, shapes, device or timing conditions; other vendor; placeholders; id only",
    "correctness_gap": "the claim's shapes not validated, errors above their bound, failed defences",
    "work_figures": "FLOPs, dtypes, device count or device identity that the task and hardware contradict",
    "cost_physics": "energy or accelerator time that the power limit and the timed work rule out",
    "serving_arithmetic": "throughputs, tokens, request counts and latencies that do not add up",
    "hollow_replay": "replays that reproduce nothing: no-op programs, unpinned code or image",
    "profile_vs_claim": "a capture of the candidate that contradicts the claimed timing or kernel",
    "existing_rules": "speedup against timings, rates above peak, vacuous tolerance, identity",
}

_DEFENCE_INDEX = {
    "fresh_inputs": 0, "outputs_checked_after_timing": 1, "timer_integrity": 2, "unseen_inputs": 3,
    "candidate_kernel_profiled": 4, "hidden_workload": 5, "cache_flush": 6,
}  # fmt: skip


@dataclass(frozen=True)
class Cheat:
    name: str
    klass: str
    control: str
    pointers: tuple[str, ...]
    mutate: Callable[[Packet], None]
    lie: str
    #: the pointers the cheat names (``pointers`` adds the other side's twin where it compares)
    declared: tuple[str, ...] = ()
    #: true when the lie breaks the schema itself (KE001 must then report it at the field)
    structural: bool = False
    #: true when the cheater edited the packet after its id was computed (the id is kept)
    keeps_id: bool = False


CHEATS: dict[str, Cheat] = {}

#: classes whose lie is a difference between the two sides: a rule may point at either
_COMPARED = ("mismatched_baseline", "cherry_picked_statistics")
_SIDES = ("/timing/conditions", "/timing/baseline/conditions")


def _mirrored(pointers: tuple[str, ...]) -> tuple[str, ...]:
    """The pointers plus, for each side's conditions field, the same field of the other side."""
    out = list(pointers)
    for p in pointers:
        for mine, other in (_SIDES, _SIDES[::-1]):
            if p == mine or p.startswith(mine + "/"):
                twin = other + p[len(mine) :]
                if twin not in out:
                    out.append(twin)
    return tuple(out)


def cheat(
    klass: str, control: str, *pointers: str
) -> Callable[[Callable[[Packet], None]], Callable[[Packet], None]]:
    assert klass in CLASSES, klass
    return _register(klass, control, pointers, structural=False)


def structural_cheat(
    klass: str, control: str, *pointers: str
) -> Callable[[Callable[[Packet], None]], Callable[[Packet], None]]:
    """A cheat whose lie the schema itself refuses (the packet is not well formed)."""
    assert klass in CLASSES, klass
    return _register(klass, control, pointers, structural=True)


def edited_after_id_cheat(
    klass: str, control: str, *pointers: str
) -> Callable[[Callable[[Packet], None]], Callable[[Packet], None]]:
    """A cheat that edits a finished packet and keeps its (now stale) id."""
    assert klass in CLASSES, klass
    return _register(klass, control, pointers, structural=False, keeps_id=True)


def _register(
    klass: str, control: str, pointers: tuple[str, ...], *, structural: bool, keeps_id: bool = False
) -> Callable[[Callable[[Packet], None]], Callable[[Packet], None]]:
    def register(fn: Callable[[Packet], None]) -> Callable[[Packet], None]:
        assert fn.__name__ not in CHEATS, fn.__name__
        lie = " ".join((fn.__doc__ or "").split())
        ptrs = _mirrored(pointers) if klass in _COMPARED else pointers
        CHEATS[fn.__name__] = Cheat(
            fn.__name__,
            klass,
            control,
            ptrs,
            fn,
            lie,
            declared=pointers,
            structural=structural,
            keeps_id=keeps_id,
        )
        return fn

    return register


# ---------------------------------------------------------------- small helpers


def _timing(p: Packet) -> dict:
    return p["timing"]


def _base(p: Packet) -> dict:
    return p["timing"]["baseline"]


def _both_conditions(p: Packet) -> list[dict]:
    return [p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]]


def _defence(p: Packet, check: str, outcome: str, detail: str) -> None:
    d = p["defences"][_DEFENCE_INDEX[check]]
    assert d["check"] == check
    d["outcome"] = outcome
    d["detail"] = detail


def _in_unit(seconds: float, unit: str) -> float:
    """``seconds`` expressed in a statistics block's time unit."""
    return round(seconds / {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit], 4)


def _constant_samples(p: Packet, side: str) -> None:
    st = _timing(p)["stats"] if side == "candidate" else _base(p)["stats"]
    set_side_samples(p, side, [st["median"]] * st["n"], st["unit"])


def _scale_serving(p: Packet, key: str, factor: float) -> None:
    sv = _timing(p)["serving"]
    sv[key]["value"] = round(sv[key]["value"] * factor, 2)
    if _timing(p).get("speedup"):
        recompute_speedup(p)


def _serving_counts(p: Packet, *, completed: int, failed: int) -> None:
    """Set the request counts and keep tokens and throughputs consistent with ``completed``."""
    sv = _timing(p)["serving"]
    task = p["task"]["serving"]
    dur = sv["duration"]["value"]
    sv["completed"], sv["failed"] = completed, failed
    sv["total_input_tokens"] = completed * task["input_len"]
    sv["total_output_tokens"] = completed * task["output_len"]
    sv["request_throughput"]["value"] = round(completed / dur, 2)
    sv["output_throughput"]["value"] = round(sv["total_output_tokens"] / dur, 2)
    sv["total_token_throughput"]["value"] = round(
        (sv["total_input_tokens"] + sv["total_output_tokens"]) / dur, 2
    )
    for k in ("ttft", "tpot", "itl", "e2el"):
        sv[k]["n"] = completed
    _timing(p)["stats"]["n"] = completed
    if _timing(p).get("speedup"):
        recompute_speedup(p)


# ================================================================ degenerate timings


@cheat("degenerate_timings", "h100_gemm_suite_three_shapes", "/timing/stats", "/timing/speedup")
def zero_time_aggregator_underflow_gpumode_162(p: Packet) -> None:
    """Every candidate sample is 0 (the reported time driven to zero so a geometric mean
    collapses); the claim is the 'speedup' such a time gives."""
    set_side_samples(p, "candidate", [0.0] * 51, "us")


@cheat("degenerate_timings", "mi300x_fp8_gemm_vs_hipblaslt", "/timing/stats", "/timing/speedup")
def zero_median_summary_only_hip_events_mi300x(p: Packet) -> None:
    """Candidate statistics of all zeros with no samples kept, and a 500x claim."""
    _timing(p)["stats"] = {"unit": "us", "median": 0.0, "mean": 0.0, "min": 0.0, "max": 0.0, "n": 25}
    _timing(p)["speedup"]["value"] = 500.0
    p["profiler"][0]["kernels"][0]["metrics"]["duration"]["value"] = 0.0


@cheat("degenerate_timings", "h100_rmsnorm_decode_short_kernel", "/timing/stats")
def sub_launch_duration_patched_timer_gpumode_162(p: Packet) -> None:
    """CUDA-event times of 0.32 us for a kernel launch: faster than a launch can be, the
    mark of a timer that reports a fraction of the real time."""
    scale_side(p, "candidate", 0.15)


@cheat("degenerate_timings", "mi300x_rmsnorm_decode_vs_aiter", "/timing/stats")
def sub_launch_duration_hip_events_mi300x(p: Packet) -> None:
    """HIP-event times of 0.44 us on MI300X: below the launch latency."""
    scale_side(p, "candidate", 0.15)


@cheat("degenerate_timings", "h100_bf16_gemm_vs_cublaslt", "/timing/stats")
def identical_samples_patched_elapsed_time_gpumode_162(p: Packet) -> None:
    """51 candidate samples all exactly 1.8326 ms: a patched ``Event.elapsed_time`` returning
    a constant; no device timer repeats to 0.1 us over 51 runs."""
    _constant_samples(p, "candidate")


@cheat("degenerate_timings", "tpu_v6e_matmul_vs_xla", "/timing/stats")
def identical_samples_xprof_tpu_v6e(p: Packet) -> None:
    """21 identical xprof samples on a TPU: the timings were copied, not measured."""
    _constant_samples(p, "candidate")


@cheat("degenerate_timings", "cpu_epyc_sgemm_vs_openblas", "/timing/stats")
def identical_samples_host_clock_cpu(p: Packet) -> None:
    """31 identical host-clock samples of a 27 ms multi-threaded SGEMM."""
    _constant_samples(p, "candidate")


@structural_cheat("degenerate_timings", "a100_fp16_gemm_vs_cublas", "/timing/stats")
def negative_duration_from_wrapped_timer(p: Packet) -> None:
    """A candidate sample of -3.2 us (end event recorded before start, a wrapped or patched
    timer) kept in the samples and the minimum."""
    st = _timing(p)["stats"]
    st["samples"][4] = -0.0032
    st["min"] = -0.0032


@cheat("degenerate_timings", "mi300x_bf16_gemm_vs_rocblas", "/timing/stats/std", "/timing/stats")
def std_understated_stats_patch_gpumode_162(p: Packet) -> None:
    """The candidate's std is reported 50x smaller than its samples give (a patched
    statistics function), to make the result look tight."""
    st = _timing(p)["stats"]
    st["std"] = round(st["std"] / 50, 6)


@cheat(
    "degenerate_timings",
    "a100_fp16_gemm_vs_cublas",
    "/timing/repeats",
    "/timing/stats",
    "/timing/conditions/repeats",
    "/timing/baseline/conditions/repeats",
    "/timing/baseline/stats",
)
def single_repeat_claim_kernelbench(p: Packet) -> None:
    """One timed run per side behind a speedup claim: noise decides the winner."""
    for side, key in (("candidate", "stats"), ("baseline", None)):
        st = _timing(p)["stats"] if key else _base(p)["stats"]
        set_side_samples(p, side, [st["samples"][0]], st["unit"])
    for c in _both_conditions(p):
        c["repeats"] = 1
    _timing(p)["repeats"] = 1
    _timing(p)["stop_rule"] = "one run"


@cheat(
    "degenerate_timings",
    "h200_attention_vs_flashattention",
    "/timing/warmup",
    "/timing/conditions/warmup",
    "/timing/baseline/conditions/warmup",
)
def no_warmup_behind_claim(p: Packet) -> None:
    """No warmup on either side: the first (compile, autotune, cold cache) call is timed."""
    _timing(p)["warmup"] = 0
    for c in _both_conditions(p):
        c["warmup"] = 0
    _timing(p)["stop_rule"] = "41 repeats, no warmup"


# ================================================================ cherry-picked statistics


@cheat(
    "cherry_picked_statistics",
    "h100_bf16_gemm_vs_cublaslt",
    "/timing/speedup/basis",
    "/timing/baseline/stats",
    "/timing/speedup",
)
def mean_basis_baseline_cold_outlier_geak_326(p: Packet) -> None:
    """The baseline's first call (autotuning, 120 ms) is kept and the claim switched to the
    mean: the baseline mean is 2.2x its median, the 'speedup' 2.3x instead of 1.05x."""
    st = _base(p)["stats"]
    xs = list(st["samples"])
    xs[0] = _in_unit(0.120, st["unit"])
    set_side_samples(p, "baseline", xs, st["unit"])
    _timing(p)["speedup"]["basis"] = "mean"
    recompute_speedup(p)


@cheat(
    "cherry_picked_statistics",
    "mi300x_fp8_gemm_vs_hipblaslt",
    "/timing/speedup/basis",
    "/timing/baseline/stats",
    "/timing/speedup",
)
def mean_basis_baseline_outliers_mi300x(p: Packet) -> None:
    """Three 25 ms baseline calls (first-touch page faults) kept, and a mean-basis claim."""
    st = _base(p)["stats"]
    xs = list(st["samples"])
    xs[0] = xs[1] = xs[2] = _in_unit(25e-3, st["unit"])
    set_side_samples(p, "baseline", xs, st["unit"])
    _timing(p)["speedup"]["basis"] = "mean"
    recompute_speedup(p)


@cheat(
    "cherry_picked_statistics",
    "b200_fp8_gemm_vs_cublaslt",
    "/timing/speedup/basis",
    "/timing/stats/min",
    "/timing/stats",
    "/timing/speedup",
)
def min_basis_one_lucky_candidate_sample(p: Packet) -> None:
    """One candidate sample at 0.6x the rest (a timer glitch) and the claim on the minimum."""
    st = _timing(p)["stats"]
    xs = list(st["samples"])
    xs[7] = round(st["median"] * 0.6, 4)
    set_side_samples(p, "candidate", xs, st["unit"])
    _timing(p)["speedup"]["basis"] = "min"
    recompute_speedup(p)


@cheat(
    "cherry_picked_statistics",
    "h100_fp8_gemm_vs_cublaslt",
    "/timing/conditions/sample_handling",
    "/timing/stats/dropped",
    "/timing/stats",
)
def candidate_best_of_baseline_all(p: Packet) -> None:
    """The candidate keeps its fastest third (34 of 51 dropped as 'outliers'); the baseline
    keeps every sample."""
    st = _timing(p)["stats"]
    keep = sorted(st["samples"])[:17]
    set_side_samples(p, "candidate", keep, st["unit"], dropped=34)
    _timing(p)["conditions"]["sample_handling"] = "best_of"


@cheat(
    "cherry_picked_statistics",
    "a100_mean_basis_symmetric",
    "/timing/conditions/sample_handling",
    "/timing/stats/dropped",
    "/timing/stats",
)
def candidate_trimmed_baseline_all_mean_basis(p: Packet) -> None:
    """The candidate's 10 slowest samples are trimmed before its mean; the baseline's are not."""
    st = _timing(p)["stats"]
    xs = list(st["samples"])
    for slow in sorted(xs)[-10:]:
        xs.remove(slow)
    set_side_samples(p, "candidate", xs, st["unit"], dropped=10)
    _timing(p)["conditions"]["sample_handling"] = "trimmed"


@cheat(
    "cherry_picked_statistics",
    "tpu_v5e_paged_attention_vs_xla",
    "/timing/conditions/sample_handling",
    "/timing/stats/dropped",
    "/timing/stats",
)
def candidate_trimmed_baseline_all_tpu(p: Packet) -> None:
    """On TPU: the candidate's 6 slowest xprof samples dropped, the baseline's all kept."""
    st = _timing(p)["stats"]
    xs = list(st["samples"])
    for slow in sorted(xs)[-6:]:
        xs.remove(slow)
    set_side_samples(p, "candidate", xs, st["unit"], dropped=6)
    _timing(p)["conditions"]["sample_handling"] = "trimmed"


# ================================================================ mismatched baselines


@cheat(
    "mismatched_baseline",
    "h100_bf16_gemm_vs_cublaslt",
    "/timing/baseline/conditions/dtypes",
    "/timing/baseline/call",
)
def baseline_fp32_candidate_bf16(p: Packet) -> None:
    """The baseline GEMM ran in fp32 (11.7x slower on tensor cores) against a bf16 candidate."""
    _base(p)["conditions"]["dtypes"] = ["fp32"]
    _base(p)["call"] = "cublasLtMatmul(fp32, transa=N, transb=T, m=n=k=8192, compute=CUBLAS_COMPUTE_32F)"
    scale_side(p, "baseline", 11.7)


@cheat("mismatched_baseline", "mi300x_fp8_gemm_vs_hipblaslt", "/timing/baseline/conditions/dtypes")
def baseline_bf16_candidate_fp8_mi300x(p: Packet) -> None:
    """The hipBLASLt baseline was timed in bf16 (half the fp8 rate) against an fp8 candidate."""
    _base(p)["conditions"]["dtypes"] = ["bf16"]
    scale_side(p, "baseline", 1.9)


@cheat(
    "mismatched_baseline",
    "mi300x_bf16_gemm_vs_rocblas",
    "/timing/baseline/conditions/dims",
    "/timing/baseline/conditions/shape_id",
)
def baseline_twice_the_k_dimension(p: Packet) -> None:
    """The baseline multiplied k=16384 (twice the work) while the candidate did k=8192."""
    c = _base(p)["conditions"]
    c["dims"]["k"] = 16384
    c["shape_id"] = "m8192n8192k16384"
    scale_side(p, "baseline", 2.0)


@cheat(
    "mismatched_baseline",
    "tpu_v5e_paged_attention_vs_xla",
    "/timing/baseline/conditions/dims",
    "/timing/baseline/conditions/shape_id",
)
def baseline_longer_context_tpu(p: Packet) -> None:
    """The XLA baseline attended over 8192 tokens of context, the candidate over 4096."""
    c = _base(p)["conditions"]
    c["dims"]["context"] = 8192
    c["shape_id"] = "b64_h32_kv8_d128_ctx8192"
    scale_side(p, "baseline", 1.95)


@cheat(
    "mismatched_baseline",
    "h100_bf16_gemm_vs_cublaslt",
    "/timing/baseline/conditions/device",
    "/timing/baseline/conditions/device_id",
)
def baseline_timed_on_a100_candidate_on_h100(p: Packet) -> None:
    """The cuBLASLt baseline was timed on an A100 (3.1x slower) and compared with the H100
    candidate."""
    c = _base(p)["conditions"]
    c["device"] = "NVIDIA A100-SXM4-80GB"
    c["device_id"] = "nvidia-a100-sxm4-80gb"
    scale_side(p, "baseline", 3.1)


@cheat("mismatched_baseline", "a100_fp16_gemm_vs_cublas", "/timing/baseline/conditions/method")
def baseline_host_clock_candidate_events(p: Packet) -> None:
    """The baseline was timed with the host clock (launch and synchronisation included),
    the candidate with CUDA events (kernel only)."""
    _base(p)["conditions"]["method"] = "host_clock"
    st = _base(p)["stats"]
    set_side_samples(p, "baseline", [round(x + 0.031, 4) for x in st["samples"]], st["unit"])


@cheat("mismatched_baseline", "tpu_v6e_paged_attention_vs_xla", "/timing/baseline/conditions/method")
def baseline_host_clock_candidate_xprof_tpu(p: Packet) -> None:
    """On TPU: the XLA baseline timed with the host clock around ``block_until_ready`` (dispatch
    included), the Pallas candidate from xprof device events."""
    _base(p)["conditions"]["method"] = "host_clock"
    st = _base(p)["stats"]
    set_side_samples(p, "baseline", [round(x + 0.085, 4) for x in st["samples"]], st["unit"])


@cheat(
    "mismatched_baseline",
    "mi300x_bf16_gemm_vs_rocblas",
    "/timing/baseline/conditions/cache/mode",
    "/timing/baseline/conditions/cache",
)
def baseline_cold_start_candidate_flushed_mi300x(p: Packet) -> None:
    """The rocBLAS baseline was timed cold (one call per fresh process, code objects loaded
    inside the window), the candidate hot with a flushed cache."""
    _base(p)["conditions"]["cache"] = {"mode": "cold_start"}
    scale_side(p, "baseline", 1.4)


@cheat(
    "mismatched_baseline",
    "h100_bf16_gemm_vs_cublaslt",
    "/timing/conditions/synchronized",
    "/timing/synchronized",
)
def candidate_unsynchronized_side_stream_kernelbench_82(p: Packet) -> None:
    """The candidate launched on a side stream its events do not wait for (synchronized:
    false), the baseline was synchronised: the candidate's time misses part of its work."""
    _timing(p)["conditions"]["synchronized"] = False
    _timing(p)["synchronized"] = False
    scale_side(p, "candidate", 0.9)


@cheat(
    "mismatched_baseline",
    "h100_bf16_gemm_vs_cublaslt",
    "/timing/conditions/cache/mode",
    "/timing/cache_policy",
    "/timing/conditions/cache",
)
def candidate_warm_l2_baseline_flushed_llmc_851(p: Packet) -> None:
    """The candidate ran with warm caches (its working set pinned in L2), the baseline with
    the L2 flushed between calls."""
    _timing(p)["conditions"]["cache"] = {"mode": "warm"}
    _timing(p)["cache_policy"] = "warm"
    scale_side(p, "candidate", 0.96)


@cheat(
    "mismatched_baseline",
    "h100_layernorm_vs_transformer_engine",
    "/timing/conditions/cache/flush_bytes",
    "/timing/conditions/cache",
)
def candidate_flush_smaller_than_l2_triton_1252(p: Packet) -> None:
    """The candidate's 'flush' wrote 4 MiB against a 50 MiB L2 (so it evicted nothing); the
    baseline's wrote 256 MiB."""
    _timing(p)["conditions"]["cache"]["flush_bytes"] = {"value": 4.0, "unit": "MiB"}
    scale_side(p, "candidate", 0.9)


@cheat(
    "mismatched_baseline",
    "a100_fp16_gemm_vs_cublas",
    "/timing/baseline/conditions/cache/flush_in_timed_window",
    "/timing/baseline/conditions/cache",
)
def baseline_flush_inside_timed_window_triton_1679(p: Packet) -> None:
    """The baseline's 256 MiB flush sat inside its timed window, adding 0.18 ms to every
    baseline sample; the candidate's did not."""
    _base(p)["conditions"]["cache"]["flush_in_timed_window"] = True
    st = _base(p)["stats"]
    set_side_samples(p, "baseline", [round(x + 0.18, 4) for x in st["samples"]], st["unit"])


@cheat(
    "mismatched_baseline",
    "h100_rmsnorm_decode_short_kernel",
    "/timing/conditions/cache/cuda_graph_replays",
    "/timing/conditions/cache",
)
def candidate_cuda_graph_baseline_eager_launches(p: Packet) -> None:
    """The candidate was replayed from a CUDA graph (launch overhead amortised over 1000
    replays), the baseline launched eagerly."""
    _timing(p)["conditions"]["cache"]["cuda_graph_replays"] = 1000
    scale_side(p, "candidate", 0.7)


@cheat(
    "mismatched_baseline",
    "h200_attention_vs_flashattention",
    "/timing/baseline/conditions/warmup",
    "/timing/baseline/conditions/repeats",
    "/timing/baseline/stats",
)
def hot_candidate_vs_cold_single_baseline_geak_326(p: Packet) -> None:
    """Hot candidate median (20 warmup, 41 repeats) against one cold baseline call (no
    warmup, one repeat)."""
    st = _base(p)["stats"]
    set_side_samples(p, "baseline", [round(st["median"] * 1.35, 4)], st["unit"])
    _base(p)["conditions"]["warmup"] = 0
    _base(p)["conditions"]["repeats"] = 1


@cheat(
    "mismatched_baseline",
    "mi300x_fp8_gemm_vs_hipblaslt",
    "/timing/baseline/same_session",
    "/timing/baseline/conditions/session",
)
def same_session_claimed_sessions_differ(p: Packet) -> None:
    """``same_session: true`` while the baseline's session is a run from two weeks earlier
    (other driver state, other clocks)."""
    _base(p)["conditions"]["session"] = "sess-20261106-a41f"
    scale_side(p, "baseline", 1.06)


@cheat(
    "mismatched_baseline",
    "b200_fp8_gemm_vs_cublaslt",
    "/timing/interleaved",
    "/timing/baseline/interleaved",
    "/timing/conditions/interleaved",
    "/timing/baseline/conditions/interleaved",
)
def interleaved_claimed_conditions_say_not(p: Packet) -> None:
    """``interleaved: true`` on both flags while both sides' conditions record that all
    candidate runs came first, then all baseline runs (thermal drift favours the first)."""
    for c in _both_conditions(p):
        c["interleaved"] = False


@cheat(
    "mismatched_baseline",
    "serving_vllm_llama8b_h100",
    "/timing/baseline/conditions/device_count",
    "/timing/conditions/device_count",
    "/timing/baseline/settings",
)
def serving_candidate_tp2_baseline_tp1(p: Packet) -> None:
    """The candidate served with tensor parallelism 2 on two GPUs, the baseline on one:
    the 'speedup' is the second GPU."""
    _timing(p)["conditions"]["device_count"] = 2
    p["task"]["serving"]["tensor_parallel_size"] = 2
    p["hardware"]["count"] = 2
    p["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1"
    sv = _timing(p)["serving"]
    sv["duration"]["value"] = round(sv["duration"]["value"] / 1.8, 2)
    for k in ("ttft", "tpot", "itl", "e2el"):  # twice the compute: every latency shorter too
        sv[k] = _latency(sv[k]["median"] / 1.8, sv["completed"])
    st = _timing(p)["stats"]
    _timing(p)["stats"] = {**_latency(st["median"] / 1.8, st["n"], ci=True)}
    _serving_counts(p, completed=sv["completed"], failed=sv["failed"])


@cheat("mismatched_baseline", "mi300x_bf16_gemm_vs_rocblas", "/timing/baseline/provider")
def cublaslt_baseline_on_mi300x(p: Packet) -> None:
    """An AMD packet whose baseline is NVIDIA's cuBLASLt (which cannot run on an MI300X)."""
    _base(p).update(provider="cuBLASLt", version="12.4.5.8", call="cublasLtMatmul(bf16, N, T, m=n=k=8192)")


@cheat("mismatched_baseline", "h100_fp8_gemm_vs_cublaslt", "/timing/baseline/provider")
def hipblaslt_baseline_on_h100(p: Packet) -> None:
    """An H100 packet whose baseline is AMD's hipBLASLt."""
    _base(p).update(provider="hipBLASLt", version="0.10.0", call="hipblasLtMatmul(fp8, TN, m=n=k=8192)")


@cheat("mismatched_baseline", "mi355x_attention_vs_aiter", "/timing/baseline/provider")
def cudnn_baseline_on_mi355x(p: Packet) -> None:
    """An MI355X attention packet whose baseline is cuDNN's fused attention."""
    _base(p).update(
        provider="cuDNN", version="9.5.0", call="cudnn sdpa forward (bf16, b=4, h=32, s=8192, d=128)"
    )


@cheat("mismatched_baseline", "tpu_v5e_paged_attention_vs_xla", "/timing/baseline/provider")
def miopen_baseline_on_tpu(p: Packet) -> None:
    """A TPU packet whose baseline is AMD's MIOpen."""
    _base(p).update(provider="MIOpen", version="3.2.0", call="miopenFindAttention(bf16)")


@cheat("mismatched_baseline", "h100_bf16_gemm_vs_cublaslt", "/timing/baseline/version")
def placeholder_version_unknown(p: Packet) -> None:
    """Baseline version ``unknown``: nobody can rerun the comparison."""
    _base(p)["version"] = "unknown"


@cheat("mismatched_baseline", "mi300x_fp8_gemm_vs_hipblaslt", "/timing/baseline/version")
def placeholder_version_latest(p: Packet) -> None:
    """Baseline version ``latest``: a moving target, not a version."""
    _base(p)["version"] = "latest"


@cheat("mismatched_baseline", "tpu_v6e_matmul_vs_xla", "/timing/baseline/version")
def placeholder_version_dash_tpu(p: Packet) -> None:
    """Baseline version ``-``."""
    _base(p)["version"] = "-"


@cheat("mismatched_baseline", "cpu_epyc_sgemm_vs_openblas", "/timing/baseline/version")
def placeholder_version_none_cpu(p: Packet) -> None:
    """Baseline version ``none``."""
    _base(p)["version"] = "none"


@cheat("mismatched_baseline", "a100_fp16_gemm_vs_cublas", "/timing/baseline/call")
def placeholder_call_na(p: Packet) -> None:
    """Baseline call ``n/a``: which cuBLAS routine, layout and algorithm is unknown."""
    _base(p)["call"] = "n/a"


@cheat("mismatched_baseline", "h200_attention_vs_flashattention", "/timing/baseline/call")
def placeholder_call_tbd(p: Packet) -> None:
    """Baseline call ``TBD``."""
    _base(p)["call"] = "TBD"


@cheat(
    "mismatched_baseline",
    "h100_bf16_gemm_vs_cublaslt",
    "/timing/baseline",
    "/timing/baseline/packet_id",
    "/timing/baseline/stats",
)
def baseline_packet_id_only_at_high_grade(p: Packet) -> None:
    """The baseline is only a reference to another packet (no statistics, no conditions),
    yet the packet would read as a strong same-session vendor comparison."""
    b = _base(p)
    for k in ("stats", "conditions"):
        del b[k]
    b["packet_id"] = digest("some-other-run")


@cheat("mismatched_baseline", "serving_vllm_llama8b_h100", "/timing/baseline", "/timing/baseline/packet_id")
def serving_baseline_packet_id_only(p: Packet) -> None:
    """A serving claim whose baseline is only another packet's id, no throughput of its own."""
    _timing(p)["baseline"] = {"packet_id": digest("vllm-0.10.1-run"), "same_session": True}


# ================================================================ correctness that does not cover the claim


@cheat("correctness_gap", "h100_gemm_suite_three_shapes", "/timing/shape_id", "/validation/shapes")
def timed_shape_not_validated(p: Packet) -> None:
    """The timed shape (8192^3) is missing from validation; only the two others were checked."""
    p["validation"]["shapes"] = p["validation"]["shapes"][1:]


@cheat("correctness_gap", "h100_gemm_suite_three_shapes", "/validation/shapes", "/task/shapes")
def suite_shapes_missing_from_validation(p: Packet) -> None:
    """Only the timed shape was validated; the two other suite shapes (where the kernel is
    wrong) were left out of the validation."""
    p["validation"]["shapes"] = p["validation"]["shapes"][:1]


@cheat(
    "correctness_gap",
    "mi300x_bf16_gemm_vs_rocblas",
    "/timing/shape_id",
    "/timing/conditions/shape_id",
    "/timing/conditions/dims",
    "/timing/baseline/conditions/shape_id",
    "/timing/baseline/conditions/dims",
)
def timed_a_smaller_shape_than_validated(p: Packet) -> None:
    """The candidate was timed at 4096^3 (1/8 of the work) under the validated 8192^3 suite;
    the baseline at 8192^3."""
    t = _timing(p)
    t["shape_id"] = "m4096n4096k4096"
    t["conditions"]["shape_id"] = "m4096n4096k4096"
    t["conditions"]["dims"] = {"m": 4096, "n": 4096, "k": 4096}
    scale_side(p, "candidate", 0.13)
    p["profiler"][0]["of"]["shape_id"] = "m4096n4096k4096"


@cheat(
    "correctness_gap",
    "a100_fp16_gemm_vs_cublas",
    "/validation/shapes/0/max_abs_error",
    "/validation/shapes/0/passed",
)
def passed_shape_error_exceeds_its_bound(p: Packet) -> None:
    """A shape marked passed whose max error (1.71) exceeds atol + rtol x |ref| (1.42)."""
    s = p["validation"]["shapes"][0]
    s["max_abs_error"] = round(1.2 * (s["atol"] + s["rtol"] * s["reference_max_abs"]), 4)
    s["max_rel_error"] = round(s["max_abs_error"] / s["reference_max_abs"], 6)


@cheat(
    "correctness_gap",
    "mi300x_fp8_gemm_vs_hipblaslt",
    "/validation/shapes/0/matched_ratio",
    "/validation/shapes/0/passed",
)
def passed_shape_matched_ratio_below_required(p: Packet) -> None:
    """A passed shape where 96.2% of elements matched against a required 99.9%."""
    s = p["validation"]["shapes"][0]
    s["matched_ratio"] = 0.962
    s["required_matched_ratio"] = 0.999
    p["task"]["tolerance"]["required_matched_ratio"] = 0.999


@cheat(
    "correctness_gap",
    "h200_attention_vs_flashattention",
    "/validation/shapes/0/reference_max_abs",
    "/validation/shapes/0",
)
def tolerance_judged_without_reference_magnitude(p: Packet) -> None:
    """atol/rtol judged with the reference magnitude left out, so nobody can tell whether
    zeros would have passed."""
    del p["validation"]["shapes"][0]["reference_max_abs"]


@cheat("correctness_gap", "h100_fp8_gemm_vs_cublaslt", "/defences/3")
def outputs_cached_by_fingerprint_flashinfer_21(p: Packet) -> None:
    """The unseen-inputs re-run failed (outputs cached by an input fingerprint) yet the
    packet passed and claims its speedup."""
    _defence(p, "unseen_inputs", "failed", "3 of 8 unseen input sets returned outputs of earlier inputs")


@cheat("correctness_gap", "a100_fp16_gemm_vs_cublas", "/defences/1")
def outputs_drift_after_check_llmc_852(p: Packet) -> None:
    """The check of the timed calls' outputs failed (correct for the first calls, corrupt
    afterwards) yet the packet passed."""
    _defence(
        p,
        "outputs_checked_after_timing",
        "failed",
        "out[0] differs from the reference after 2000 timed calls",
    )


@cheat("correctness_gap", "b200_fp8_gemm_vs_cublaslt", "/defences/2")
def timer_integrity_failed_gpumode_162(p: Packet) -> None:
    """The timer-integrity check found ``Event.elapsed_time`` replaced, yet the packet passed."""
    _defence(p, "timer_integrity", "failed", "torch.cuda.Event.elapsed_time is not the harness's function")


@cheat("correctness_gap", "tpu_v6e_matmul_vs_xla", "/defences/0")
def inputs_modified_in_place_kernelbench_82(p: Packet) -> None:
    """The fresh-inputs check failed (the candidate wrote into its inputs, so the reference
    saw modified data) yet the packet passed."""
    _defence(p, "fresh_inputs", "failed", "input a changed during the candidate's call")


@cheat(
    "correctness_gap",
    "h100_softmax_wide_rows_vs_cudnn",
    "/validation/shapes/0/atol",
    "/task/tolerance/atol",
    "/validation/shapes/0",
)
def zeros_pass_absolute_tolerance_kernelbench_165(p: Packet) -> None:
    """Softmax over 393216 columns (outputs ~2.5e-6) judged with atol 1e-2: an all-zeros
    output 'passes' with max error 4.02e-6."""
    s = p["validation"]["shapes"][0]
    s.update(atol=0.01, rtol=0.01, max_abs_error=4.02e-6, max_rel_error=1.0)
    p["task"]["tolerance"] = {"atol": 0.01, "rtol": 0.01}


@cheat(
    "correctness_gap",
    "mi300x_bf16_gemm_vs_rocblas",
    "/validation/shapes/0/rtol",
    "/task/tolerance/rtol",
    "/validation/shapes/0",
)
def relative_tolerance_of_one(p: Packet) -> None:
    """rtol = 1.0: any output between 0 and twice the reference passes, zeros included."""
    p["validation"]["shapes"][0]["rtol"] = 1.0
    p["task"]["tolerance"]["rtol"] = 1.0


@cheat("correctness_gap", "mi355x_attention_vs_aiter", "/validation/shapes/0/passed", "/validation/verdict")
def passed_verdict_with_failed_shape(p: Packet) -> None:
    """The only shape failed, the verdict says passed."""
    p["validation"]["shapes"][0]["passed"] = False


# ================================================================ work figures


@cheat("work_figures", "h100_skinny_gemm_splitk_3x", "/task/shapes/0/work/flops")
def flops_inflated_4x_against_gemm_dims(p: Packet) -> None:
    """The FLOP count is 4x 2*m*n*k (the achieved TFLOP/s looks 4x better, still below peak)."""
    w = p["task"]["shapes"][0]["work"]["flops"]
    w["value"] *= 4


@cheat("work_figures", "tpu_v6e_matmul_vs_xla", "/task/shapes/0/work/flops")
def flops_inflated_against_gemm_dims_tpu(p: Packet) -> None:
    """A TPU matmul whose FLOP count is 2.5x what its dims give."""
    p["task"]["shapes"][0]["work"]["flops"]["value"] *= 2.5


@cheat("work_figures", "cpu_xeon_amx_gemm_vs_onednn", "/task/shapes/0/work/flops")
def flops_counted_as_multiply_adds_twice_cpu(p: Packet) -> None:
    """A CPU GEMM counting 8*m*n*k FLOPs (each fused multiply-add counted four times over)."""
    p["task"]["shapes"][0]["work"]["flops"]["value"] *= 4


@cheat(
    "work_figures",
    "h100_bf16_gemm_vs_cublaslt",
    "/task/dtypes",
    "/task/shapes/0/tensors",
    "/timing/conditions/dtypes",
    "/timing/baseline/conditions/dtypes",
)
def fp8_label_on_bf16_tensors(p: Packet) -> None:
    """The task is labelled fp8 (peak 1979 TFLOP/s) while its tensors are bf16 (peak 989):
    a 1.2 PFLOP/s bf16 result slips under the fp8 peak."""
    p["task"]["dtypes"] = ["fp8_e4m3"]
    for c in _both_conditions(p):
        c["dtypes"] = ["fp8_e4m3"]
    scale_side(p, "candidate", 0.5)


@cheat(
    "work_figures",
    "a100_fp16_gemm_vs_cublas",
    "/task/dtypes",
    "/task/shapes/0/tensors",
    "/timing/conditions/dtypes",
    "/timing/baseline/conditions/dtypes",
)
def int8_label_on_fp16_tensors_a100(p: Packet) -> None:
    """An fp16 GEMM labelled int8 on A100 (624 vs 312 TOP/s) to admit a 550 TFLOP/s result."""
    p["task"]["dtypes"] = ["int8"]
    for c in _both_conditions(p):
        c["dtypes"] = ["int8"]
    scale_side(p, "candidate", 0.45)


@cheat(
    "work_figures",
    "h100_bf16_gemm_vs_cublaslt",
    "/hardware/count",
    "/timing/conditions/device_count",
    "/timing/baseline/conditions/device_count",
)
def device_count_8_one_device_ran(p: Packet) -> None:
    """``count: 8`` (so the peak check allows 8 devices' FLOP/s) while the capture shows device
    0 only and the replay exposes one GPU: 3 PFLOP/s on one H100."""
    p["hardware"]["count"] = 8
    for c in _both_conditions(p):
        c["device_count"] = 8
    scale_side(p, "candidate", 0.2)
    scale_side(p, "baseline", 0.2)


@cheat("work_figures", "serving_vllm_llama8b_h100", "/hardware/count", "/task/serving/tensor_parallel_size")
def serving_tensor_parallel_8_on_one_device(p: Packet) -> None:
    """A serving run described as tensor parallel 8 on hardware of one device."""
    p["task"]["serving"]["tensor_parallel_size"] = 8
    _base(p)["settings"]["tensor_parallel_size"] = 8


@cheat(
    "work_figures",
    "a100_fp16_gemm_vs_cublas",
    "/hardware/device",
    "/hardware/arch",
    "/hardware/compute_units",
    "/hardware/device_id",
)
def a100_relabelled_h100_sm80(p: Packet) -> None:
    """An A100 run relabelled ``NVIDIA H100 80GB HBM3`` (arch sm_80, 108 SMs give it away),
    so its results are checked against the H100's higher peaks."""
    hw = p["hardware"]
    hw["device"] = "NVIDIA H100 80GB HBM3"
    hw["device_id"] = "nvidia-h100-sxm5-80gb"
    for c in _both_conditions(p):
        c["device"] = hw["device"]
        c["device_id"] = "nvidia-h100-sxm5-80gb"


@cheat("work_figures", "mi300x_fp8_gemm_vs_hipblaslt", "/hardware/compute_units", "/hardware/device")
def mi300x_with_80_compute_units(p: Packet) -> None:
    """``AMD Instinct MI300X`` with 80 compute units (an MI300X has 304)."""
    p["hardware"]["compute_units"] = 80


@cheat("work_figures", "h100_fp8_gemm_vs_cublaslt", "/hardware/memory", "/hardware/device")
def h100_with_192_gib_memory(p: Packet) -> None:
    """``NVIDIA H100 80GB HBM3`` with 192 GiB of memory."""
    p["hardware"]["memory"] = {"value": 192.0, "unit": "GiB"}


@cheat(
    "work_figures",
    "tpu_v5e_paged_attention_vs_xla",
    "/hardware/device",
    "/hardware/arch",
    "/hardware/device_id",
)
def tpu_v5e_relabelled_v6e(p: Packet) -> None:
    """A v5e run (arch ``TPU v5 lite``, 16 GiB) relabelled ``TPU v6e`` for its 2x peaks."""
    p["hardware"]["device"] = "TPU v6e"
    p["hardware"]["device_id"] = "google-tpu-v6e"
    for c in _both_conditions(p):
        c["device"] = "TPU v6e"
        c["device_id"] = "google-tpu-v6e"


@cheat("work_figures", "h100_bf16_gemm_vs_cublaslt", "/hardware/peak_flop_rate", "/timing/stats")
def self_declared_peak_flop_rate_raises_limit(p: Packet) -> None:
    """``peak_flop_rate: 3 PFLOP/s`` declared for an H100 to admit a 1.5 PFLOP/s bf16 result."""
    p["hardware"]["peak_flop_rate"] = {"value": 3000.0, "unit": "TFLOP/s"}
    scale_side(p, "candidate", 0.4)


@cheat(
    "work_figures", "l40s_layernorm_llmc_vs_transformer_engine", "/hardware/peak_bandwidth", "/timing/stats"
)
def self_declared_bandwidth_llmc_851(p: Packet) -> None:
    """``peak_bandwidth: 4000 GB/s`` declared for an L40S (864 GB/s) to admit 3530 GB/s."""
    p["hardware"]["peak_bandwidth"] = {"value": 4000.0, "unit": "GB/s"}
    scale_side(p, "candidate", 714 / 3530)


# ================================================================ physics of cost


@cheat("cost_physics", "h100_bf16_gemm_vs_cublaslt", "/cost/energy")
def energy_implies_5kw_on_a_700w_gpu(p: Packet) -> None:
    """Energy of 10x the real figure over the same window: 5.2 kW average on a 700 W H100."""
    p["cost"]["energy"]["energy"]["value"] *= 10


@cheat("cost_physics", "mi300x_bf16_gemm_vs_rocblas", "/cost/energy", "/cost/energy/window")
def energy_window_shrunk_mi300x(p: Packet) -> None:
    """The energy window is cut to 1/8 of the run: 4.9 kW average on a 750 W MI300X."""
    w = p["cost"]["energy"]["window"]
    w["value"] = round(w["value"] / 8, 3)


@cheat("cost_physics", "mi300x_bf16_gemm_vs_rocblas", "/cost/energy")
def energy_understated_to_flatter_efficiency_mi300x(p: Packet) -> None:
    """Energy cut 200x over the same window (about 2 W on a 750 W MI300X), so the kernel
    looks frugal: less than the device draws idle."""
    p["cost"]["energy"]["energy"]["value"] = round(p["cost"]["energy"]["energy"]["value"] / 200, 3)


@cheat("cost_physics", "h100_bf16_gemm_vs_cublaslt", "/cost/energy", "/cost/energy/window")
def energy_window_stretched_h100(p: Packet) -> None:
    """The energy window stretched 100x (the run's energy spread over a day-long window),
    averaging a few watts on a 700 W H100."""
    w = p["cost"]["energy"]["window"]
    w["value"] = w["value"] * 100


@cheat("cost_physics", "a100_fp16_gemm_vs_cublas", "/cost/gpu_time")
def gpu_time_below_timed_work(p: Packet) -> None:
    """``gpu_time`` of 10 ms while 51 timed calls of 0.55 ms alone take 28 ms."""
    p["cost"]["gpu_time"] = {"value": 10.0, "unit": "ms"}


@cheat("cost_physics", "b200_fp8_gemm_vs_cublaslt", "/cost/gpu_time")
def gpu_time_below_timed_work_b200(p: Packet) -> None:
    """``gpu_time`` of 0.05 s while 51 calls of 1.37 ms take 70 ms."""
    p["cost"]["gpu_time"] = {"value": 0.05, "unit": "s"}


@cheat("cost_physics", "serving_sglang_tp8_llama70b", "/cost/gpu_time")
def serving_gpu_time_one_device_of_eight(p: Packet) -> None:
    """A TP-8 run billed 120 accelerator-seconds: the run's 119 s on one GPU, not eight."""
    p["cost"]["gpu_time"] = {"value": 120.0, "unit": "s"}


# ================================================================ serving arithmetic


@cheat("serving_arithmetic", "serving_vllm_llama8b_h100", "/timing/serving/output_throughput")
def output_throughput_doubled(p: Packet) -> None:
    """Output throughput 8153 tok/s from 128000 tokens in 31.4 s (which give 4076)."""
    _scale_serving(p, "output_throughput", 2.0)


@cheat("serving_arithmetic", "serving_vllm_mi300x", "/timing/serving/request_throughput", "/timing/speedup")
def request_throughput_inflated_mi300x(p: Packet) -> None:
    """Request throughput 1.6x what completed / duration gives, and the claim on it."""
    _timing(p)["speedup"]["basis"] = "request_throughput"
    _scale_serving(p, "request_throughput", 1.6)


@cheat(
    "serving_arithmetic",
    "serving_sglang_tp8_llama70b",
    "/timing/serving/total_token_throughput",
    "/timing/speedup",
)
def total_token_throughput_inflated(p: Packet) -> None:
    """Total token throughput 1.5x what the tokens and duration give, and the claim on it."""
    _timing(p)["speedup"]["basis"] = "total_token_throughput"
    _scale_serving(p, "total_token_throughput", 1.5)


@cheat(
    "serving_arithmetic",
    "serving_vllm_llama8b_h100",
    "/timing/serving/total_output_tokens",
    "/timing/serving",
)
def output_tokens_exceed_completed_times_length(p: Packet) -> None:
    """256000 output tokens from 1000 requests of at most 128 tokens (throughput to match)."""
    sv = _timing(p)["serving"]
    sv["total_output_tokens"] = 256000
    sv["output_throughput"]["value"] = round(256000 / sv["duration"]["value"], 2)
    sv["total_token_throughput"]["value"] = round(
        (sv["total_input_tokens"] + 256000) / sv["duration"]["value"], 2
    )
    recompute_speedup(p)


@cheat(
    "serving_arithmetic", "serving_vllm_llama8b_h100", "/timing/serving/completed", "/timing/serving/failed"
)
def failed_requests_vanish_from_counts_vllm_26478(p: Packet) -> None:
    """880 completed and 0 failed out of 1000 prompts: 120 failures dropped from the report."""
    _serving_counts(p, completed=880, failed=0)


@cheat("serving_arithmetic", "serving_vllm_mi300x", "/timing/serving/completed", "/task/serving/num_prompts")
def completed_exceeds_prompts_retries_counted(p: Packet) -> None:
    """600 completed requests out of 500 prompts (retries counted as completions)."""
    _serving_counts(p, completed=600, failed=0)


@cheat("serving_arithmetic", "serving_sglang_tp8_llama70b", "/timing/serving/failed", "/timing/speedup")
def failed_requests_behind_passed_claim_vllm_26478(p: Packet) -> None:
    """240 of 2000 requests failed (the server shed load) and the run still claims a
    throughput speedup."""
    _serving_counts(p, completed=1760, failed=240)


@cheat("serving_arithmetic", "serving_vllm_mi300x", "/timing/serving/e2el", "/timing/serving/ttft")
def e2el_below_ttft(p: Packet) -> None:
    """End-to-end latency (median 118 ms) below the time to the first token (236 ms)."""
    sv = _timing(p)["serving"]
    sv["e2el"] = _latency(sv["ttft"]["median"] * 0.5, sv["completed"])


@cheat("serving_arithmetic", "serving_vllm_llama8b_h100", "/timing/serving/ttft")
def ttft_below_physical_floor_tt_inference_4681(p: Packet) -> None:
    """Median TTFT of 0.02 ms for a 1024-token prompt on an 8B model (a prefill takes tens of
    milliseconds)."""
    sv = _timing(p)["serving"]
    sv["ttft"] = _latency(0.02, sv["completed"])


# ================================================================ replays that reproduce nothing


@cheat("hollow_replay", "h100_bf16_gemm_vs_cublaslt", "/replay/command")
def replay_echo_prints_the_command(p: Packet) -> None:
    """The replay ``echo``es the benchmark command instead of running it."""
    p["replay"]["command"] = ["echo", *p["replay"]["command"]]


@cheat("hollow_replay", "mi300x_fp8_gemm_vs_hipblaslt", "/replay/command")
def replay_true_noop(p: Packet) -> None:
    """The replay command is ``true``: it succeeds and does nothing."""
    p["replay"]["command"] = ["true"]


@cheat("hollow_replay", "a100_fp16_gemm_vs_cublas", "/replay/command")
def replay_sh_c_exit_0(p: Packet) -> None:
    """The replay command is ``sh -c 'exit 0'``."""
    p["replay"]["command"] = ["sh", "-c", "exit 0"]


@cheat("hollow_replay", "tpu_v6e_matmul_vs_xla", "/replay/command")
def replay_python_c_pass(p: Packet) -> None:
    """The replay command is ``python -c pass``."""
    p["replay"]["command"] = ["python", "-c", "pass"]


@cheat("hollow_replay", "cpu_epyc_sgemm_vs_openblas", "/replay/command")
def replay_bash_colon(p: Packet) -> None:
    """The replay command is ``bash -c :``."""
    p["replay"]["command"] = ["bash", "-c", ":"]


@cheat("hollow_replay", "h100_fp8_gemm_vs_cublaslt", "/replay/repository/commit")
def commit_is_a_branch_name(p: Packet) -> None:
    """The pinned 'commit' is ``main``: whatever the branch holds when someone replays."""
    p["replay"]["repository"]["commit"] = "main"


@cheat("hollow_replay", "mi300x_bf16_gemm_vs_rocblas", "/replay/repository/commit")
def commit_is_a_tag(p: Packet) -> None:
    """The pinned 'commit' is the tag ``v1.4.0`` (tags move)."""
    p["replay"]["repository"]["commit"] = "v1.4.0"


@cheat("hollow_replay", "tpu_v5e_paged_attention_vs_xla", "/replay/repository/commit")
def commit_is_head(p: Packet) -> None:
    """The pinned 'commit' is ``HEAD``."""
    p["replay"]["repository"]["commit"] = "HEAD"


@cheat("hollow_replay", "h100_layernorm_vs_transformer_engine", "/replay/container")
def container_latest_tag_without_digest(p: Packet) -> None:
    """The container is ``ghcr.io/acme/kernels:latest`` with no digest."""
    p["replay"]["container"] = {"image": "ghcr.io/acme/kernels:latest"}


@cheat("hollow_replay", "mi355x_attention_vs_aiter", "/replay/container")
def container_rocm_tag_without_digest(p: Packet) -> None:
    """The container is a mutable ``rocm/pytorch`` tag with no digest."""
    p["replay"]["container"] = {"image": "rocm/pytorch:latest"}


# ================================================================ profile against claim


@cheat("profile_vs_claim", "h100_bf16_gemm_vs_cublaslt", "/profiler/0", "/timing/stats")
def profiled_kernel_3x_slower_than_claim_sakana(p: Packet) -> None:
    """The capture of the candidate at the timed shape shows 5.5 ms per call while the claim
    rests on 1.83 ms (the claim 1.05x, the kernel 3x slower than the baseline)."""
    d = p["profiler"][0]["kernels"][0]["metrics"]["duration"]
    d["value"] = round(d["value"] * 3, 1)


@cheat("profile_vs_claim", "mi300x_fp8_gemm_vs_hipblaslt", "/profiler/0", "/timing/stats")
def profiled_kernel_2x_slower_than_claim_mi300x(p: Packet) -> None:
    """The rocprof capture of the candidate shows twice the claimed time."""
    d = p["profiler"][0]["kernels"][0]["metrics"]["duration"]
    d["value"] = round(d["value"] * 2, 1)


@cheat("profile_vs_claim", "tpu_v6e_matmul_vs_xla", "/profiler/0", "/timing/stats")
def profiled_kernel_slower_than_claim_tpu(p: Packet) -> None:
    """The xprof capture of the candidate shows 2.5x the claimed time."""
    d = p["profiler"][0]["kernels"][0]["metrics"]["duration"]
    d["value"] = round(d["value"] * 2.5, 1)


@cheat("profile_vs_claim", "a100_fp16_gemm_vs_cublas", "/profiler/0", "/timing/stats")
def profiled_time_outside_its_stated_tolerance(p: Packet) -> None:
    """The capture states ``claim_tolerance: 0.25`` and shows 1.4x the claimed time (inside the
    default 0.5, outside the tolerance the harness itself stated)."""
    d = p["profiler"][0]["kernels"][0]["metrics"]["duration"]
    d["value"] = round(d["value"] * 1.4, 1)


@cheat(
    "profile_vs_claim",
    "h100_bf16_gemm_vs_cublaslt",
    "/profiler/0/kernels",
    "/profiler/0/of/expected_kernels",
    "/profiler/0",
)
def candidate_capture_shows_only_cublas_kernel(p: Packet) -> None:
    """The candidate's capture shows only cuBLAS's own kernel: the 'candidate' calls the
    library it claims to beat."""
    p["profiler"][0]["kernels"][0]["name"] = "nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNN"


@cheat(
    "profile_vs_claim",
    "mi300x_fp8_gemm_vs_hipblaslt",
    "/profiler/0/kernels",
    "/profiler/0/of/expected_kernels",
    "/profiler/0",
)
def candidate_capture_shows_only_hipblaslt_kernel(p: Packet) -> None:
    """The candidate's capture shows only a hipBLASLt Tensile kernel."""
    p["profiler"][0]["kernels"][0]["name"] = "Cijk_Alik_Bljk_F8BS_BH_MT256x256x128_MI32x32x16x1_SN_K1"


@cheat(
    "profile_vs_claim",
    "tpu_v5e_paged_attention_vs_xla",
    "/profiler/0/kernels",
    "/profiler/0/of/expected_kernels",
    "/profiler/0",
)
def candidate_capture_shows_only_xla_fusion(p: Packet) -> None:
    """The Pallas candidate's capture shows only XLA fusions: the reference ran instead."""
    p["profiler"][0]["kernels"][0]["name"] = "fusion.42"


# ================================================================ the rule classes that existed before 0.2


@cheat("existing_rules", "h100_bf16_gemm_vs_cublaslt", "/timing/speedup/value", "/timing/speedup")
def claimed_150x_timings_give_1x_sakana(p: Packet) -> None:
    """A 150x claim on timings that give 1.05x."""
    _timing(p)["speedup"]["value"] = 150.0


@cheat("existing_rules", "mi300x_bf16_gemm_vs_rocblas", "/timing/speedup/value", "/timing/speedup")
def self_reported_104x_geak_254(p: Packet) -> None:
    """A 104x speedup scraped from the candidate's own log, timings giving 1.08x."""
    _timing(p)["speedup"]["value"] = 104.0


@cheat("existing_rules", "h100_honest_slowdown", "/timing/speedup/value", "/timing/speedup")
def slowdown_reported_as_speedup(p: Packet) -> None:
    """The candidate is 7% slower; the claim inverts the ratio to report 1.075x."""
    sp = _timing(p)["speedup"]
    sp["value"] = round(1 / sp["value"], 4)


@cheat("existing_rules", "h100_bf16_gemm_vs_cublaslt", "/timing/stats", "/task/shapes/0/work/flops")
def flops_above_h100_peak(p: Packet) -> None:
    """1.5 PFLOP/s of bf16 on one H100 (peak 989 TFLOP/s)."""
    scale_side(p, "candidate", 0.4)


@cheat(
    "existing_rules",
    "l40s_layernorm_llmc_vs_transformer_engine",
    "/timing/stats",
    "/task/shapes/0/work/bytes",
)
def bandwidth_3530_on_864_gbs_l40s_llmc_851(p: Packet) -> None:
    """3530 GB/s of 'HBM' bandwidth on an L40S (864 GB/s), caches said flushed: persisting L2
    lines the flush did not evict."""
    scale_side(p, "candidate", 714 / 3530)


@cheat("existing_rules", "h200_attention_vs_flashattention", "/measured_at")
def measured_after_the_packet_was_made(p: Packet) -> None:
    """``measured_at`` a day after ``created_at``: the packet was backdated."""
    p["measured_at"] = "2026-11-21T08:00:00Z"


# every cheat must name a real control (checked at import, so a typo fails loudly)
def _check_registry() -> None:
    from _adv_controls import CONTROLS

    for c in CHEATS.values():
        assert c.control in CONTROLS, (c.name, c.control)


_check_registry()


# ================================================================ round 2: the same classes, other disguises
#
# Variants of the lies above that a cheater who has read the rules would try: the lie moved
# to another field, another spelling, another side, or hidden behind a gap in the evidence.


@cheat(
    "mismatched_baseline",
    "h100_bf16_gemm_vs_cublaslt",
    "/timing/baseline/conditions/device",
    "/timing/baseline/conditions/device_id",
)
def baseline_a100_name_under_the_h100_id(p: Packet) -> None:
    """The baseline's conditions name an A100 but carry the candidate's H100 device id, so a
    comparison of ids alone sees one device."""
    c = _base(p)["conditions"]
    c["device"] = "NVIDIA A100-SXM4-80GB"
    scale_side(p, "baseline", 3.1)


@cheat("mismatched_baseline", "mi300x_bf16_gemm_vs_rocblas", "/timing/baseline/conditions/dims")
def baseline_twice_k_in_uppercase_dims(p: Packet) -> None:
    """The baseline's dims spelled ``M``/``N``/``K`` (with K=16384, twice the candidate's) and
    no shape id: the keys do not line up with the candidate's ``m``/``n``/``k``."""
    c = _base(p)["conditions"]
    c["dims"] = {"M": 8192, "N": 8192, "K": 16384}
    del c["shape_id"]
    scale_side(p, "baseline", 2.0)


@cheat(
    "mismatched_baseline",
    "h100_layernorm_vs_transformer_engine",
    "/timing/conditions/cache/last_level_cache",
    "/timing/conditions/cache/flush_bytes",
    "/timing/conditions/cache",
)
def candidate_flush_beside_an_understated_cache(p: Packet) -> None:
    """The candidate's 4 MiB 'flush' is recorded against a last-level cache of 4 MiB (the
    H100's is 50 MiB, as the hardware block says), so it looks like an eviction."""
    c = _timing(p)["conditions"]["cache"]
    c["flush_bytes"] = {"value": 4.0, "unit": "MiB"}
    c["last_level_cache"] = {"value": 4.0, "unit": "MiB"}
    scale_side(p, "candidate", 0.9)


@cheat(
    "mismatched_baseline",
    "h100_layernorm_vs_transformer_engine",
    "/timing/conditions/cache/flush_bytes",
    "/timing/baseline/conditions/cache/flush_bytes",
    "/defences/6",
)
def cache_flush_passed_with_a_flush_below_the_cache(p: Packet) -> None:
    """Both sides 'flushed' 4 MiB against a 50 MiB L2 (both timed warm) and the defence record
    says the cache flush passed."""
    for c in _both_conditions(p):
        c["cache"]["flush_bytes"] = {"value": 4.0, "unit": "MiB"}
    _defence(p, "cache_flush", "passed", "4 MiB buffer written between calls")
    scale_side(p, "candidate", 0.92)
    scale_side(p, "baseline", 0.95)


@cheat("mismatched_baseline", "h100_bf16_gemm_vs_cublaslt", "/timing/baseline/provider")
def cpu_openblas_baseline_for_a_gpu_kernel(p: Packet) -> None:
    """An H100 GEMM 'beats' OpenBLAS's bf16 GEMM on the host CPU by 120x; the baseline's
    conditions still name the GPU."""
    _base(p).update(
        provider="OpenBLAS",
        version="0.3.28",
        call="cblas_sbgemm(RowMajor, NoTrans, Trans, 8192, 8192, 8192, 1.0, A, 8192, B, 8192, 0.0, C, 8192), 96 threads",
    )
    scale_side(p, "baseline", 114.0)


@cheat("mismatched_baseline", "b200_fp8_gemm_vs_cublaslt", "/timing/baseline/version")
def placeholder_version_nightly(p: Packet) -> None:
    """Baseline version ``nightly``: whichever build ran that night."""
    _base(p)["version"] = "nightly"


@cheat("mismatched_baseline", "mi355x_attention_vs_aiter", "/timing/baseline/call")
def placeholder_call_arguments_elided(p: Packet) -> None:
    """Baseline call ``aiter.flash_attn_func(...)``: the arguments (causal or not, scale,
    layout) elided."""
    _base(p)["call"] = "aiter.flash_attn_func(...)"


@cheat("mismatched_baseline", "h100_bf16_gemm_vs_cublaslt", "/timing/cache_policy", "/timing/conditions")
def candidate_warm_in_the_flat_fields_only(p: Packet) -> None:
    """The candidate's side is written the 0.1 way (flat ``cache_policy: warm``, no
    conditions block) against a baseline whose conditions say flushed."""
    t = _timing(p)
    del t["conditions"]
    t["cache_policy"] = "warm"
    scale_side(p, "candidate", 0.96)


@cheat(
    "cherry_picked_statistics",
    "a100_fp16_gemm_vs_cublas",
    "/timing/stats/dropped",
    "/timing/stats",
    "/timing/baseline/stats",
)
def candidate_drops_slow_samples_handling_unstated(p: Packet) -> None:
    """The candidate's 10 slowest samples dropped (``dropped: 10``), the baseline's kept, and
    neither side says how it handled its samples."""
    for c in _both_conditions(p):
        del c["sample_handling"]
    st = _timing(p)["stats"]
    xs = list(st["samples"])
    for slow in sorted(xs)[-10:]:
        xs.remove(slow)
    set_side_samples(p, "candidate", xs, st["unit"], dropped=10)


@cheat("degenerate_timings", "h100_bf16_gemm_vs_cublaslt", "/timing/baseline/stats")
def baseline_samples_fabricated_constant(p: Packet) -> None:
    """51 baseline samples all exactly 2.2001 ms: the baseline was typed in, not measured."""
    st = _base(p)["stats"]
    set_side_samples(p, "baseline", [2.2001] * st["n"], st["unit"])


@cheat("degenerate_timings", "h100_rmsnorm_decode_short_kernel", "/timing/stats")
def sub_launch_duration_triton_do_bench(p: Packet) -> None:
    """0.32 us per call from ``triton.testing.do_bench`` (CUDA events around each call)."""
    _timing(p)["method"] = "triton_do_bench"
    for c in _both_conditions(p):
        c["method"] = "triton_do_bench"
    scale_side(p, "candidate", 0.15)


@cheat("degenerate_timings", "h100_both_sides_cuda_graphs", "/timing/stats")
def seventy_ns_kernel_behind_cuda_graphs(p: Packet) -> None:
    """74 ns per kernel 'measured' from CUDA-graph replays: graphs save the CPU launch, not the
    GPU's own microsecond to run a kernel node."""
    scale_side(p, "candidate", 0.035)


@cheat(
    "work_figures",
    "h100_bf16_gemm_vs_cublaslt",
    "/task/dtypes",
    "/task/shapes/0/tensors",
    "/timing/stats",
    "/timing/conditions/dtypes",
    "/timing/baseline/conditions/dtypes",
)
def fp8_label_justified_by_a_tiny_fp8_tensor(p: Packet) -> None:
    """A one-element fp8 'scale' tensor added so the fp8 label has a tensor to point at; A and
    B, the operands, are bf16: a 1.2 PFLOP/s bf16 result under the fp8 peak."""
    p["task"]["shapes"][0]["tensors"].append({"name": "scale", "shape": [1], "dtype": "fp8_e4m3"})
    p["task"]["dtypes"] = ["fp8_e4m3"]
    for c in _both_conditions(p):
        c["dtypes"] = ["fp8_e4m3"]
    scale_side(p, "candidate", 0.5)


@cheat("work_figures", "h100_skinny_gemm_splitk_3x", "/task/shapes/0/work/flops", "/task/operator")
def flops_inflated_under_another_operator_name(p: Packet) -> None:
    """The GEMM renamed ``dense_projection`` (dims still m, n, k) with 4x its FLOPs."""
    p["task"]["operator"] = "dense_projection"
    p["task"]["shapes"][0]["work"]["flops"]["value"] *= 4


@cheat("work_figures", "a100_fp16_gemm_vs_cublas", "/hardware/device_id", "/timing/stats", "/hardware")
def h100_device_id_on_an_a100(p: Packet) -> None:
    """An A100 (name, sm_80, 108 SMs) given the H100's device id, to be checked against the
    H100's peaks: 500 TFLOP/s of fp16 on an A100 (peak 312)."""
    p["hardware"]["device_id"] = "nvidia-h100-sxm5-80gb"
    for c in _both_conditions(p):
        c["device_id"] = "nvidia-h100-sxm5-80gb"
    scale_side(p, "candidate", 0.55)


@cheat(
    "correctness_gap",
    "a100_fp16_gemm_vs_cublas",
    "/validation/shapes/0/max_abs_error",
    "/validation/shapes/0/passed",
    "/validation/shapes/0",
)
def error_above_the_task_tolerance_shape_states_none(p: Packet) -> None:
    """The shape states no atol/rtol of its own; its error (1.71) exceeds the task's bound
    (0.01 + 0.01 x 141 = 1.42)."""
    s = p["validation"]["shapes"][0]
    del s["atol"], s["rtol"]
    s["max_abs_error"] = 1.71
    s["max_rel_error"] = round(1.71 / s["reference_max_abs"], 6)


@cheat(
    "correctness_gap",
    "h100_softmax_wide_rows_vs_cudnn",
    "/task/tolerance/atol",
    "/task/tolerance",
    "/validation/shapes/0",
)
def zeros_pass_the_task_level_absolute_tolerance(p: Packet) -> None:
    """Softmax outputs of ~2.5e-6 judged against the task's atol 1e-2 (the shape states none):
    zeros pass."""
    s = p["validation"]["shapes"][0]
    del s["atol"], s["rtol"]
    s.update(max_abs_error=4.02e-6, max_rel_error=1.0)
    p["task"]["tolerance"] = {"atol": 0.01, "rtol": 0.01}


@cheat(
    "correctness_gap",
    "a100_fp16_gemm_vs_cublas",
    "/validation/shapes/0/required_matched_ratio",
    "/task/tolerance/required_matched_ratio",
    "/validation/shapes/0/matched_ratio",
)
def half_the_elements_may_be_wrong(p: Packet) -> None:
    """``required_matched_ratio: 0.5``: 38% of the output wrong and the shape still passes."""
    s = p["validation"]["shapes"][0]
    s.update(matched_ratio=0.62, required_matched_ratio=0.5, max_abs_error=0.5, max_rel_error=1.0)
    p["task"]["tolerance"]["required_matched_ratio"] = 0.5


@cheat("serving_arithmetic", "serving_vllm_llama8b_h100", "/timing/serving/ttft")
def ttft_faster_than_the_prefill_can_run(p: Packet) -> None:
    """Median TTFT of 3 ms for a 1024-token prompt on an 8B model: the prefill alone is 16
    TFLOP, 17 ms at the H100's peak."""
    sv = _timing(p)["serving"]
    sv["ttft"] = _latency(3.0, sv["completed"])


@cheat("serving_arithmetic", "serving_vllm_llama8b_h100", "/timing/serving/tpot", "/timing/serving/e2el")
def tpot_a_tenth_of_what_e2el_gives(p: Packet) -> None:
    """TPOT (and ITL) reported at 1.4 ms while end-to-end latency minus TTFT over 127 tokens
    gives 14.2 ms per token."""
    sv = _timing(p)["serving"]
    sv["tpot"] = _latency(1.42, sv["completed"])
    sv["itl"] = _latency(1.39, sv["completed"])


@cheat("serving_arithmetic", "serving_vllm_llama8b_h100", "/timing/serving/failed", "/timing/speedup")
def three_percent_failed_behind_the_claim(p: Packet) -> None:
    """30 of 1000 requests failed (the longest prompts timed out) and the throughput claim
    stands on the 970 that finished."""
    _serving_counts(p, completed=970, failed=30)


@cheat("cost_physics", "h100_fp8_gemm_vs_cublaslt", "/cost/energy", "/hardware")
def energy_above_the_board_power_limit_omitted(p: Packet) -> None:
    """Energy 10x the real figure with ``power_limit`` left out, so only the device table's
    700 W can catch the 5 kW average."""
    del p["hardware"]["power_limit"]
    p["cost"]["energy"]["energy"]["value"] *= 10


@cheat("hollow_replay", "a100_fp16_gemm_vs_cublas", "/replay/command")
def replay_python_sys_exit_0(p: Packet) -> None:
    """The replay command is ``python -c 'import sys; sys.exit(0)'``."""
    p["replay"]["command"] = ["python", "-c", "import sys; sys.exit(0)"]


@cheat("hollow_replay", "h200_attention_vs_flashattention", "/replay/command")
def replay_srun_true(p: Packet) -> None:
    """The replay command is ``srun -N1 --gpus=1 true`` (a scheduler running a no-op)."""
    p["replay"]["command"] = ["srun", "-N1", "--gpus=1", "true"]


@cheat("hollow_replay", "mi300x_fp8_gemm_vs_hipblaslt", "/replay/repository/commit")
def commit_of_forty_zeros(p: Packet) -> None:
    """The pinned commit is 40 zeros (git's null object id), a hash of nothing."""
    p["replay"]["repository"]["commit"] = "0" * 40


@cheat("hollow_replay", "mi300x_bf16_gemm_vs_rocblas", "/replay/container")
def container_version_tag_without_digest(p: Packet) -> None:
    """A versioned but mutable tag, ``rocm/pytorch:rocm6.2.4_..._2.5.1``, with no digest
    (such tags are rebuilt in place)."""
    p["replay"]["container"] = {"image": "rocm/pytorch:rocm6.2.4_ubuntu22.04_py3.10_pytorch_release_2.5.1"}


@cheat("profile_vs_claim", "h100_bf16_gemm_vs_cublaslt", "/profiler/0", "/timing/stats")
def capture_3x_slower_without_its_shape_id(p: Packet) -> None:
    """The candidate's capture (3x the claimed time) leaves out which shape it holds; the task
    has one shape, the one timed."""
    cap = p["profiler"][0]
    del cap["of"]["shape_id"]
    d = cap["kernels"][0]["metrics"]["duration"]
    d["value"] = round(d["value"] * 3, 1)


@cheat(
    "profile_vs_claim",
    "h100_bf16_gemm_vs_cublaslt",
    "/profiler/0",
    "/timing/stats",
    "/profiler/0/of/expected_kernels",
)
def slow_second_kernel_left_out_of_expected(p: Packet) -> None:
    """Each call also launches a 4 ms ``weight_prepack_bf16`` kernel; the capture shows it, but
    ``expected_kernels`` names only the fast GEMM, so only the GEMM is summed."""
    cap = p["profiler"][0]
    main = cap["kernels"][0]
    cap["kernels"].append(
        {
            "name": "weight_prepack_bf16",
            "id": "1",
            "device": 0,
            "grid": [264, 1, 1],
            "block": [256, 1, 1],
            "metrics": {"duration": {"value": 4.0e6, "unit": "ns"}},
        }
    )
    main["id"] = "0"


# ================================================================ lies in packets written the 0.1 way
#
# Read through the migration chain: no conditions, no defences, only the flat fields.


@cheat("degenerate_timings", "migrated_v01_h100_gemm", "/timing/stats", "/timing/speedup")
def v01_zero_time_aggregator_underflow(p: Packet) -> None:
    """A 0.1 packet whose candidate samples are all 0."""
    set_side_samples(p, "candidate", [0.0] * 51, "us")


@cheat("hollow_replay", "migrated_v01_h100_gemm", "/replay/command")
def v01_replay_echo(p: Packet) -> None:
    """A 0.1 packet whose replay only echoes the benchmark command."""
    p["replay"]["command"] = ["echo", *p["replay"]["command"]]


@cheat("mismatched_baseline", "migrated_v01_h100_gemm", "/timing/baseline/version")
def v01_placeholder_version_unknown(p: Packet) -> None:
    """A 0.1 packet whose baseline version is ``unknown``."""
    _base(p)["version"] = "unknown"


@cheat(
    "correctness_gap",
    "migrated_v01_h100_gemm",
    "/validation/shapes/0/max_abs_error",
    "/validation/shapes/0/passed",
)
def v01_passed_shape_error_exceeds_its_bound(p: Packet) -> None:
    """A 0.1 packet with a passed shape whose error is 3x its own bound."""
    s = p["validation"]["shapes"][0]
    s["max_abs_error"] = round(3 * (s["atol"] + s["rtol"] * s["reference_max_abs"]), 4)


@cheat(
    "serving_arithmetic",
    "migrated_v01_serving_minimal",
    "/timing/serving/completed",
    "/timing/serving/failed",
)
def v01_serving_failures_vanish(p: Packet) -> None:
    """A minimal 0.1 serving packet: 880 completed, 0 failed, 1000 prompts."""
    _serving_counts(p, completed=880, failed=0)


@cheat(
    "existing_rules",
    "h100_pcie_layernorm_vs_transformer_engine",
    "/timing/stats",
    "/task/shapes/0/work/bytes",
)
def sxm_bandwidth_on_a_pcie_card(p: Packet) -> None:
    """2.8 TB/s on an H100 PCIe (HBM2e, 2.0 TB/s): a figure only the SXM part could reach."""
    scale_side(p, "candidate", 0.6)


@cheat(
    "work_figures",
    "h100_pcie_layernorm_vs_transformer_engine",
    "/hardware/device",
    "/hardware/compute_units",
    "/hardware/device_id",
    "/timing/stats",
)
def pcie_card_named_sxm(p: Packet) -> None:
    """The PCIe card (114 SMs, 350 W) written down as ``NVIDIA H100 80GB HBM3`` (the SXM part,
    132 SMs) so that its 2.8 TB/s is checked against the SXM's 3.35 TB/s."""
    hw = p["hardware"]
    hw["device"] = "NVIDIA H100 80GB HBM3"
    hw["device_id"] = "nvidia-h100-sxm5-80gb"
    for c in _both_conditions(p):
        c["device"] = hw["device"]
        c["device_id"] = hw["device_id"]
    scale_side(p, "candidate", 0.6)


# ================================================================ round 3: evidence that contradicts itself


@cheat(
    "correctness_gap", "h100_bf16_gemm_vs_cublaslt", "/validation/shapes/0/elements", "/validation/shapes/0"
)
def validated_a_sample_of_the_output(p: Packet) -> None:
    """The 'validated' shape compared 4096 of the 67,108,864 output elements (the first row);
    the rest were never checked."""
    p["validation"]["shapes"][0]["elements"] = 4096


@cheat(
    "correctness_gap",
    "mi300x_bf16_gemm_vs_rocblas",
    "/validation/shapes/0/nan_seen",
    "/validation/shapes/0/passed",
    "/validation/verdict",
)
def nan_seen_on_a_passed_shape(p: Packet) -> None:
    """A passed shape that saw NaN in its output (an all-close check that skips NaNs)."""
    p["validation"]["shapes"][0]["nan_seen"] = True


@cheat("correctness_gap", "a100_fp16_gemm_vs_cublas", "/timing/conditions/fresh_inputs", "/defences/0")
def fresh_inputs_passed_while_conditions_say_reused(p: Packet) -> None:
    """The defence record says fresh inputs passed; the candidate's own conditions record that
    its inputs were reused across calls (so an in-place or caching candidate went unseen)."""
    _timing(p)["conditions"]["fresh_inputs"] = False


@cheat("correctness_gap", "h100_fp8_gemm_vs_cublaslt", "/defences/3", "/defences/7", "/defences")
def failed_defence_shadowed_by_a_passed_copy(p: Packet) -> None:
    """The unseen-inputs check failed; a second ``unseen_inputs`` entry that passed is appended
    after it, for readers that keep the last entry per check."""
    _defence(p, "unseen_inputs", "failed", "3 of 8 unseen input sets returned outputs of earlier inputs")
    p["defences"].append(
        {"check": "unseen_inputs", "outcome": "passed", "detail": "re-run on 8 unseen input sets"}
    )


@cheat("work_figures", "h100_skinny_gemm_splitk_3x", "/task/shapes/0/work/flops", "/task/operator")
def flops_inflated_under_an_mlp_name(p: Packet) -> None:
    """The GEMM renamed ``mlp_w1_up`` (its tensors still A[16, 4096] x B[4096, 4096]) with 4x
    its FLOPs: the operands show a contraction whatever the operator is called."""
    p["task"]["operator"] = "mlp_w1_up"
    p["task"]["shapes"][0]["work"]["flops"]["value"] *= 4


# ================================================================ round 4


@edited_after_id_cheat("existing_rules", "h100_bf16_gemm_vs_cublaslt", "/packet_id", "/timing/speedup")
def speedup_edited_after_the_id(p: Packet) -> None:
    """The claim raised from 1.05x to 1.8x in a finished packet, timings and id left as they
    were (a hand edit of the JSON)."""
    _timing(p)["speedup"]["value"] = 1.8


@cheat(
    "serving_arithmetic",
    "serving_vllm_llama8b_h100",
    "/timing/baseline/serving/failed",
    "/timing/baseline/serving",
    "/timing/speedup",
)
def baseline_crippled_by_failed_requests(p: Packet) -> None:
    """The baseline run lost 300 of its 1000 requests (its server was misconfigured), so its
    throughput, counted on the 700 that finished, makes the candidate look 1.6x faster."""
    sv = _base(p)["serving"]
    sv["completed"], sv["failed"] = 700, 300
    dur = sv["duration"]["value"]
    sv["total_input_tokens"] = 700 * 1024
    sv["total_output_tokens"] = 700 * 128
    sv["request_throughput"]["value"] = round(700 / dur, 2)
    sv["output_throughput"]["value"] = round(700 * 128 / dur, 2)
    sv["total_token_throughput"]["value"] = round(700 * (1024 + 128) / dur, 2)
    recompute_speedup(p)


@cheat(
    "mismatched_baseline",
    "serving_vllm_llama8b_h100",
    "/timing/baseline/serving/total_input_tokens",
    "/timing/baseline/serving",
)
def baseline_served_twice_the_prompt_length(p: Packet) -> None:
    """The baseline's run served 2048-token prompts (its token counts say so: 2048 per request)
    against the candidate's 1024, so its output throughput is lower."""
    sv = _base(p)["serving"]
    dur = sv["duration"]["value"] = round(sv["duration"]["value"] * 1.15, 2)
    sv["total_input_tokens"] = 1000 * 2048
    sv["request_throughput"]["value"] = round(1000 / dur, 2)
    sv["output_throughput"]["value"] = round(sv["total_output_tokens"] / dur, 2)
    sv["total_token_throughput"]["value"] = round((1000 * 2048 + sv["total_output_tokens"]) / dur, 2)
    recompute_speedup(p)


@cheat(
    "work_figures",
    "tpu_v6e_matmul_vs_xla",
    "/hardware/count",
    "/timing/conditions/device_count",
    "/timing/baseline/conditions/device_count",
)
def tpu_count_8_one_chip_visible(p: Packet) -> None:
    """``count: 8`` on a TPU run whose replay exposes one chip (``TPU_VISIBLE_CHIPS=0``) and
    that kept no capture: 3.4 PFLOP/s on one v6e chip passes as eight chips' work."""
    p["hardware"]["count"] = 8
    for c in _both_conditions(p):
        c["device_count"] = 8
    del p["profiler"]
    scale_side(p, "candidate", 0.2)
    scale_side(p, "baseline", 0.2)


@cheat(
    "cherry_picked_statistics",
    "mi355x_attention_vs_aiter",
    "/timing/baseline/conditions/sample_handling",
    "/timing/baseline/stats/dropped",
    "/timing/baseline/stats",
)
def baseline_fastest_samples_dropped(p: Packet) -> None:
    """The baseline's 15 fastest samples dropped as 'outliers' (its median pushed up); the
    candidate keeps all of its samples."""
    st = _base(p)["stats"]
    xs = list(st["samples"])
    for fast in sorted(xs)[:15]:
        xs.remove(fast)
    set_side_samples(p, "baseline", xs, st["unit"], dropped=15)
    _base(p)["conditions"]["sample_handling"] = "trimmed"


@cheat(
    "cherry_picked_statistics",
    "tpu_v6e_paged_attention_vs_xla",
    "/timing/speedup/basis",
    "/timing/baseline/stats",
    "/timing/speedup",
)
def mean_basis_baseline_compile_kept_tpu(p: Packet) -> None:
    """The XLA baseline's first call (a 900 ms jit compile) kept among its 21 samples and the
    claim moved to the mean."""
    st = _base(p)["stats"]
    xs = list(st["samples"])
    xs[0] = _in_unit(0.9, st["unit"])
    set_side_samples(p, "baseline", xs, st["unit"])
    _timing(p)["speedup"]["basis"] = "mean"
    recompute_speedup(p)


@cheat("cost_physics", "tpu_v6e_matmul_vs_xla", "/cost/gpu_time")
def tpu_chip_time_below_timed_work(p: Packet) -> None:
    """``gpu_time`` (chip-seconds) of 5 ms for 21 timed calls of 1.6 ms each."""
    p["cost"]["gpu_time"] = {"value": 5.0, "unit": "ms"}


@cheat("cost_physics", "serving_vllm_mi300x", "/cost/energy")
def serving_energy_above_the_power_limit_mi300x(p: Packet) -> None:
    """A serving run's energy 3x what a 750 W MI300X can draw over the run."""
    p["cost"]["energy"]["energy"]["value"] *= 3


@cheat(
    "degenerate_timings",
    "serving_vllm_llama8b_h100",
    "/timing/speedup",
    "/timing/baseline/serving/output_throughput",
)
def serving_baseline_throughput_zero(p: Packet) -> None:
    """The baseline's output throughput recorded as 0 tok/s (its run produced nothing) and a
    50x claim: a ratio over zero is undefined, not a speedup."""
    _base(p)["serving"]["output_throughput"]["value"] = 0.0
    _timing(p)["speedup"]["value"] = 50.0
