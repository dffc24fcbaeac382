"""KE2xx: a claim names a baseline worth beating, measured under the candidate's conditions."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import Any

from ._common import CACHED_CHARS, cache_mode, cand, is_placeholder, lazy_re
from ._context import Add, Ctx
from ._engine import declare
from ._tables import _load, baseline_entry, dtype_class
from ._units import FACTOR as _FACTOR
from .serving import _model_params as model_params

declare(
    "KE201",
    "error",
    "a performance claim names its baseline",
    "add /timing/baseline with provider, version and the exact call",
    "A packet that claims a speedup MUST name what it beat in `timing.baseline`.",
)
declare(
    "KE202",
    "error",
    "kernel baseline is a registered library",
    "use a provider from `kevidence rules --baselines` (cuBLASLt, hipBLASLt, XLA, torch eager, ...)",
    "For a kernel claim, `baseline.provider` MUST name a library from the baseline registry: "
    "vendor libraries (cuBLAS, cuBLASLt, cuDNN, CUTLASS, hipBLASLt, rocBLAS, MIOpen, Composable "
    "Kernel, AITER, FlashAttention, FlashInfer, XLA, ...) or reference implementations (torch "
    'eager, torch.compile, Triton, numpy, jax). "ours", "baseline" or "previous version" '
    "are not baselines. The call MUST NOT contradict the provider: a call whose namespaces "
    "(`np.`/`numpy.`, `torch.`, `jnp.`/`jax.`, `cublas...(`, `rocblas_...(`, `cblas_...(`, "
    "`mkl_...(`) all name libraries that cannot be built on the provider (a `np.` call "
    "under cuBLAS or torch, a `rocblas_` call under cuBLASLt) timed another library.",
)
declare(
    "KE203",
    "error",
    "baseline gives version and exact call",
    "set /timing/baseline/version and /timing/baseline/call (the exact function and arguments)",
    "A kernel baseline MUST state the library version and the exact call or configuration "
    "(e.g. `cublasLtMatmul(fp16, TN, m=4096, n=4096, k=4096, heuristic=0)`).",
)
declare(
    "KE204",
    "info",
    "reference baselines give reference speedups",
    "compare against a vendor library for a vendor speedup",
    "A speedup over a reference implementation (torch eager, torch.compile, Triton, numpy, "
    "jax) is reported as a reference speedup, never as a vendor speedup.",
)
declare(
    "KE205",
    "error",
    "serving baseline is a named reference configuration",
    "set /timing/baseline/engine (name, version) and /timing/baseline/settings, or /timing/baseline/packet_id",
    "For a serving workload the baseline MUST be a named reference configuration (engine with "
    "version, and its settings) or another packet referenced by id.",
)
declare(
    "KE206",
    "warning",
    "baseline measured in the same session",
    "time the baseline in the same process and session, interleaved with the candidate",
    "A baseline timed in another session (other day, other clocks, other machine state) makes "
    "a weak comparison; `baseline.same_session` SHOULD be true.",
    caps="C",
)
declare(
    "KE207",
    "error",
    "the baseline ran the candidate's problem on the candidate's device",
    "time the baseline with the candidate's dtypes, shape and device (and device count)",
    "Where both sides record them (`timing.conditions`, else the flat timing fields and the "
    "task; `timing.baseline.conditions`), the baseline MUST have run the same problem as "
    "the candidate: the same narrowest dtype, the same shape id and dimensions, the same "
    "device (by id, else by name where the device table tells the names apart; a MIG slice "
    "on one side only is another device; with `same_session: true`, names that are one "
    "spelling or resolve to the same single table model) and the same device count; a "
    "serving baseline's settings that restate the workload (`model`, "
    "`dataset`, `num_prompts`, input and output lengths, `max_concurrency`, `request_rate`; a "
    "model by the parameters its name states) the same as the candidate's `task.serving` "
    "(setting names compared without case, leading dashes or the `-`/`_` difference: "
    "`max-concurrency` is `max_concurrency`; one setting MUST NOT be given twice under such "
    "names with two values, on either side); no engine capacity that handicaps it against the "
    "candidate's `task.serving.settings` (`max_num_seqs`/`max_running_requests`, "
    "`max_num_batched_tokens`, `gpu_memory_utilization`/`mem_fraction_static` below the "
    "candidate's; `enforce_eager`/`disable_cuda_graph` true on the baseline only; where the "
    "candidate states none, a baseline `gpu_memory_utilization` below 0.8 (vLLM's default is "
    "0.9) or `max_num_seqs`/`max_running_requests` below `task.serving.max_concurrency`; "
    "`num_gpu_blocks_override`, `kv_cache_memory`/`kv_cache_memory_bytes`, `max_total_tokens`, "
    "`cuda_graph_max_bs`, the largest of `cuda_graph_sizes`, `max_seq_len_to_capture` below the "
    "candidate's; where the candidate states none, a KV cache (`num_gpu_blocks_override` x "
    "`block_size`, 16 unstated; `max_total_tokens`) below `max_concurrency` (or `num_prompts`, "
    "where fewer) x `input_len` tokens, CUDA graphs captured for fewer sequences than that "
    "concurrency (or 64, where it is more) or for sequences shorter than `input_len` + "
    "`output_len` (or 8192); compilation level 0 (`compilation_config: 0`, `-O0`) on the "
    "baseline only; `enable_chunked_prefill` false beside the candidate's true) and no "
    "setting of its own that slows it (a `dtype` wider than the candidate's narrowest, "
    "`cpu_offload_gb`, `best_of`, parallel sampling `n` or `scheduler_delay_factor` above the "
    "candidate's, `use_beam_search` on the baseline "
    "only, a fallback `attention_backend` such as `TORCH_SDPA` forced where the candidate sets none); "
    "setting names compared without an engine's `VLLM_`/`SGLANG_` prefix too, and a setting whose "
    'value is a command line (`extra_args: "--max-num-seqs 16 --enforce-eager"`) read as the '
    "settings it gives (one of them restating a setting beside it with another value is a "
    "setting given twice). Both sides' engines MUST quantize the weights alike: a "
    "`quantization` (`quantize`, `quant_method`) stated on both sides with two methods, or on one "
    "side against `none` or nothing on the other (where nothing: a method that quantizes a "
    "16-bit checkpoint as it loads, `fp8`, `bitsandbytes`, `int8`..., which the model name does "
    "not already state), is another precision. With every request sent at once (`request_rate` "
    "inf or unstated), the baseline's observed `serving.max_concurrent_requests` MUST be at "
    "least 80% of `max_concurrency` (or of the request count, where fewer). Its input "
    "tokens per completed request within 10% "
    "of the candidate's and its output tokens per request within 20%. Beside the same "
    "narrowest dtype, the 16-bit and narrower classes both sides' conditions record MUST be "
    "the same (an fp8 output against the baseline's bf16 one is another problem); a "
    "dimension in the baseline's `dims` that the candidate's shape lacks MUST be 1 (`batch: 2` "
    "is twice the work); a candidate on more than one device (`conditions.device_count`) "
    "MUST have a baseline whose conditions give its `device_count`; `timing.shape_id` MUST "
    "name the shape both sides' conditions name. A kernel baseline's "
    "`call`, where it states them unambiguously, MUST agree too: a BLAS routine of one "
    "precision (`cublasSgemm`, `hgemm`, `dgemm`; not the `...Ex` forms, and `sgemm` not "
    "against a tf32 candidate) is that dtype; the dtypes it names for its "
    "operands (`bf16`, `fp8_e4m3`, `CUDA_R_16BF`; `fp32`, `float64` and the prose `single "
    "precision`, `double precision` too; not a compute, accumulate, scale, bias or output "
    "type, by argument name or by a word of that clause: `fp32 accumulate`), "
    "and the types it casts its operands to (`a.float()`, `b.to(torch.float32)`: fp32, not "
    "against a tf32 candidate), include the candidate's narrowest class or are narrower; a batch count it names "
    "(`batch_count=2`) is one of the timed shape's dimensions; and the `m=`, `n=`, `k=` it names (a number with grouping separators, `16.384`, "
    "`16 384`, `16'384`, `16,384`, is one integer; a comma or a space may also end the number) (or the "
    "`m, n, k` of a `cublas<t>gemm(handle, opA, opB, m, n, k, ...)` call) are the timed "
    "shape's (m and n in either order: column-major calls swap them). The call MUST NOT "
    "handicap the baseline: cuBLAS's pedantic compute type or math mode (`CUBLAS_COMPUTE_32F_PEDANTIC`, "
    "`CUBLAS_PEDANTIC_MATH`) under a tf32 or narrower candidate, a zero workspace "
    "(`workspaceSizeInBytes=0`, `workspace=NULL` with no size), a heuristic result past the first "
    "forced (`heuristicResult[7]`, `algo index 7 of 8`; not one chosen as the fastest), an operand "
    "copied inside the call (`b.t().contiguous()`, `.clone()` as an argument or said to be in the "
    "timed call), on an accelerator and not a host library, a copy to the host or a host "
    "synchronisation in the call (`.cpu()`, `.item()`, `.numpy()`, `.tolist()`, "
    "`torch.cuda.synchronize()`; not one said to be after or outside the timed call), attention `dropout_p` above 0 or probabilities returned (`return_attn_probs=True`, "
    "`return_softmax=True`, `need_weights=True`), XLA's `Precision.HIGHEST` (or "
    "`jax_default_matmul_precision` `highest`) under a 16-bit or narrower candidate; and on one "
    "device, what it states of the problem MUST be the candidate's timed dims: `causal=` against "
    "the dims' `causal`, head counts (`num_kv_heads=`, `num_heads=`, `head_dim=`) and the extents "
    "of `q[...]`/`k[...]`/`v[...]` against batch, seq, heads, kv_heads and head_dim, the extents of "
    "a tensor it allocates (`torch.randn(32768, 8192)`) against a norm's rows and cols. A kernel baseline with "
    "a `packet_id` that is the candidate's `lineage.parent_packet_id` (relation mutation, "
    "replay or rerun) under a library's name (cuBLAS, hipBLASLt, XLA...; not one whose "
    "kernels a search loop rewrites, such as CUTLASS) is the candidate's own ancestor. A "
    "baseline in fp32 "
    "against a bf16 candidate, on twice the k, on an A100 against an H100, on one GPU "
    "against two, on a MIG slice of the candidate's GPU, or on an `NVIDIA H100` (which may be a "
    "PCIe) in the session of an `NVIDIA H100 80GB HBM3`, or stopping its answers at half the "
    "length, is not a baseline.",
)
declare(
    "KE208",
    "error",
    "the baseline was timed the way the candidate was",
    "time both sides with the same method, synchronisation, cache policy and launch mode, in the session and order stated",
    "Where both sides record them, the baseline MUST be timed like the candidate: timers of "
    "the same kind (device events around each call, `cuda_events`, `hip_events` and "
    "`triton_do_bench`, against each other; kernel durations from a profiler, `cupti`, "
    "`profiler`, `xprof` and `torch_profiler`, which leave out the launch, against each "
    "other; the host clock against the host clock; a timer `other` only against `other`), "
    "both synchronised or neither, the same cache state (flushed or "
    "rotating against flushed or rotating, warm against warm, cold against cold; `unknown` "
    "only against `unknown`), a flush "
    "that evicts the last-level cache on both sides or neither (`flush_bytes` below the "
    "cache size, the largest the conditions, hardware and device table give, evicts nothing, "
    "nor does rotating through one buffer, or through `rotating_buffers` x the timed shape's "
    "bytes below that size: that side was warm), a flush inside the timed window on both sides or neither, "
    "clocks locked on both sides or neither (`clock_policy`; `unknown` only against "
    "`unknown`), "
    "and CUDA-graph replays on both sides or neither; the candidate's warmup MUST NOT exceed "
    "twice the baseline's by more than 10 calls. `same_session: true` MUST NOT stand "
    "beside two different `session` ids, nor `interleaved: true` beside conditions that "
    "record `interleaved: false`. `replay.env` MUST NOT set what slows the baseline's "
    "library alone: `CUBLAS_WORKSPACE_CONFIG` of no workspace (`:0:0`), `CUBLASLT_LOG_LEVEL`/"
    "`CUBLASLT_LOG_MASK` above 0 or `CUBLAS_LOGINFO_DBG` on (cuBLAS, cuBLASLt), "
    "`NVIDIA_TF32_OVERRIDE=0` under a tf32 candidate (cuBLAS, cuBLASLt, cuDNN), "
    "`ROCBLAS_USE_HIPBLASLT=0` or `ROCBLAS_LAYER` above 0 (rocBLAS), "
    "`TORCH_BLAS_PREFER_HIPBLASLT=0` (hipBLASLt, torch; on an MI300 or later), "
    "`HIPBLASLT_LOG_LEVEL`/`HIPBLASLT_LOG_MASK` above 0 (hipBLASLt, hipBLAS, rocBLAS), "
    "`XLA_FLAGS` with `--xla_backend_optimization_level=0` or `--xla_gpu_autotune_level=0` "
    "(XLA, jax), `CUDA_LAUNCH_BLOCKING=1` / `HIP_LAUNCH_BLOCKING=1` (any baseline on that "
    "vendor's GPU), `LIBTPU_INIT_ARGS` with an optimisation level 0 (XLA, jax), "
    "`DISABLE_ADDMM_CUDA_LT=1` / `TORCH_BLAS_PREFER_CUBLASLT=0` (cuBLASLt, torch), "
    "`ONEDNN_MAX_CPU_ISA`/`DNNL_MAX_CPU_ISA` below the host CPU's best ISA (from `hardware.device` "
    "and `arch`: AMX on Sapphire Rapids and later Xeons under a 16-bit or narrower candidate, "
    "AVX-512 on Skylake-SP to Ice Lake Xeons and Zen 4 and later EPYCs) and `ONEDNN_VERBOSE`/"
    "`DNNL_VERBOSE` that logs each execution (`1`, `all`, `profile_exec`) (oneDNN), "
    "`MKL_ENABLE_INSTRUCTIONS` below that ISA, `MKL_CBWR` other than `AUTO` and `MKL_VERBOSE` "
    "above 0 (oneMKL), and `OPENBLAS_CORETYPE` naming a core without AVX-512 (Haswell, Zen, "
    "Sandybridge...) on an AVX-512 host (OpenBLAS). "
    "(Thread counts such as `OMP_NUM_THREADS=1` are not judged: the replay's environment "
    "holds for the candidate too.)",
)
declare(
    "KE209",
    "error",
    "a vendor library runs on the hardware",
    "compare against the library of the hardware's vendor (cuBLASLt on NVIDIA, hipBLASLt on AMD, ...)",
    "A baseline that is a vendor's library (cuBLAS, cuDNN, CUTLASS, TensorRT... for NVIDIA; "
    "hipBLASLt, rocBLAS, MIOpen, Composable Kernel, AITER... for AMD; oneDNN, oneMKL for "
    "Intel) MUST run on that vendor's hardware: cuBLASLt cannot have been timed on an MI300X; "
    "a CPU library (OpenBLAS) is no baseline for a kernel on an accelerator.",
)
declare(
    "KE210",
    "error",
    "the baseline's version and call are real",
    "record the library's exact version and the exact call, not a placeholder",
    "`baseline.version`, `baseline.call`, a serving baseline's `engine.version` and the "
    "candidate's own engine version (`task.serving.engine.version`) MUST NOT "
    "be placeholders (`unknown`, `n/a`, `latest`, `none`, `?`, `-`, `TBD`, `default`, `see "
    "code`, `same as candidate`...), and a version MUST name one: at least one digit, no "
    "wildcard (`1.x`, `x.y.z`, `*`, `?`, `<version>`). Nobody can rerun that comparison. "
    "Where the baseline registry gives a library's version scheme (cuBLAS 9-13, cuBLASLt "
    "10-13, hipBLASLt 0-1 or the ROCm release 5-7, rocBLAS 0-7, OpenBLAS 0.x), one of the "
    "version's numbers MUST fit it (cuBLASLt `2.5.1` is torch's version), and a version of "
    "three parts or more MUST agree (one a prefix of the other) with the version "
    "`replay.packages` records for a package of that library (`nvidia-cublas-cu12`, "
    "`hipblaslt`, `rocblas`...) where it records one; for a library without such a pattern, "
    "with `same_session: true`, a version of two parts or more MUST agree so with the version "
    "`replay.packages` records for a package named as the library (`numpy`, `torch`, `mkl`). A cuBLAS or cuBLASLt version MUST be of "
    "the CUDA major `hardware.runtime` records (cuBLAS 11.x ships with CUDA 11, 12.x with CUDA 12; "
    "not where the candidate's nvcc is of the library's major), and `replay.env` "
    "`LD_LIBRARY_PATH` MUST NOT name only CUDA toolkit directories (`/usr/local/cuda-11.0/lib64`) "
    "of another major than that version (cuDNN, with its own numbering, is not read so).",
)
declare("KE211", "warning", "the baseline is measured in the packet",
     "record the baseline's statistics (or serving metrics) and conditions beside its packet_id",
     "A baseline given only as another packet's id, with no statistics of its own, SHOULD "
     "be avoided: the comparison cannot be checked from this packet, and it grades C at best.", caps="C")  # fmt: skip


def check(p: Any, ctx: Ctx, add: Add) -> None:
    if not ctx.claim:
        return  # every rule of this band is about the baseline of a claim
    t = p.timing
    b = t.baseline
    if b is None:
        add(("KE201", "/timing/baseline", "claims a speedup but names no baseline"))
        return
    kernel = p.subject.kind == "kernel"
    provider = b.provider
    entry = baseline_entry(provider) if provider else None
    if kernel:
        # a provider the registry knows is not blank: no need to strip it
        if entry is not None:
            pass
        elif provider is None or not provider.strip():
            if b.packet_id is None:
                add(("KE202", "/timing/baseline/provider", "baseline has no provider"))
        else:
            add(
                (
                    "KE202",
                    "/timing/baseline/provider",
                    f"baseline provider `{provider}` is not a named library in the registry",
                )
            )
        if not (provider is None and b.packet_id is not None):
            if not (b.version and b.version.strip()):
                add(("KE203", "/timing/baseline/version", "baseline version is missing"))
            if not (b.call and b.call.strip()):
                add(("KE203", "/timing/baseline/call", "baseline exact call or configuration is missing"))
    elif b.packet_id is None:
        if b.engine is None or not b.engine.version:
            add(("KE205", "/timing/baseline/engine", "serving baseline names no engine with a version"))
        if not b.settings:
            add(
                (
                    "KE205",
                    "/timing/baseline/settings",
                    "serving baseline gives no settings (e.g. tensor_parallel_size, max_num_seqs)",
                )
            )
    if kernel:
        for field in ("version", "call"):
            val = getattr(b, field)
            if val and (is_placeholder(val) or (field == "version" and _no_version(val))):
                add(
                    (
                        "KE210",
                        f"/timing/baseline/{field}",
                        f"baseline {field} `{val.strip()[:80]}` is a placeholder",
                    )
                )
            elif field == "version" and val and entry is not None:
                if entry.key in _schemes():
                    if not _version_agrees(p, entry, val, add) and entry.key in _NV_BLAS:
                        _toolkit_major(p, entry, val, add)
                elif b.same_session is True and p.replay is not None and p.replay.packages:
                    _named_package(p.replay.packages, entry, val, add)
    elif (
        b.engine is not None
        and b.engine.version
        and (is_placeholder(b.engine.version) or _no_version(b.engine.version))
    ):
        add(
            (
                "KE210",
                "/timing/baseline/engine/version",
                f"baseline engine version `{b.engine.version.strip()[:80]}` is a placeholder",
            )
        )
    task = p.task
    ts = task.serving if task is not None else None
    ev = ts.engine.version if ts is not None and ts.engine is not None else None
    if ev and (is_placeholder(ev) or _no_version(ev)):
        add(
            (
                "KE210",
                "/task/serving/engine/version",
                f"the candidate's engine version `{ev.strip()[:80]}` is a placeholder: nobody can rerun it",
            )
        )
    if entry is not None and entry.vendor == "cpu":
        h = p.hardware
        if h is not None and h.vendor != "cpu" and _accelerator(h.device):
            add(
                (
                    "KE209",
                    "/timing/baseline/provider",
                    f"`{entry.name}` runs on the host CPU; the candidate ran on `{h.device}`: the baseline is not on the candidate's hardware",
                )
            )
    elif entry is not None and entry.vendor in _RUNS_ON:
        h = p.hardware
        if h is not None and h.vendor != "other" and h.vendor not in _RUNS_ON[entry.vendor]:
            add(
                (
                    "KE209",
                    "/timing/baseline/provider",
                    f"`{entry.name}` is {_VENDOR_NAME[entry.vendor]}'s library; it does not run on {h.vendor} hardware (`{h.device}`)",
                )
            )
    if b.packet_id is not None and b.stats is None and b.serving is None:
        add(
            (
                "KE211",
                "/timing/baseline/packet_id",
                "the baseline is only another packet's id: no statistics here to check the claim against",
            )
        )
    if b.packet_id is not None and entry is not None and entry.key in _LIBRARIES:
        lin = p.lineage
        if lin is not None and lin.parent_packet_id == b.packet_id and lin.relation in _OWN_LINE:
            add(
                (
                    "KE207",
                    "/timing/baseline/packet_id",
                    f"the baseline packet is lineage.parent_packet_id (relation {lin.relation}): the candidate's "
                    f"own {'ancestor' if lin.relation == 'mutation' else 'earlier run'}, not {entry.name}",
                )
            )
    r = p.replay
    if (
        kernel
        and entry is not None
        and entry.key in _NV_BLAS
        and r is not None
        and r.env
        and b.version
        and isinstance(lp := r.env.get("LD_LIBRARY_PATH"), str)
        and "cuda-" in lp
    ):
        _library_path(p, entry, b.version, lp, add)
    if entry is not None and r is not None and r.env and not _ENV_NAMES.isdisjoint(r.env):
        _env_handicaps(p, t, entry, r.env, add)
    bc = b.conditions
    if bc is not None:
        _compare(p, t, b, bc, add)
    if b.serving is not None and t.serving is not None:
        _same_requests(t.serving, b.serving, add)
    if b.serving is not None and b.serving.max_concurrent_requests is not None and ts is not None:
        _observed_concurrency(ts, b.serving, add)
    if b.settings:
        _twice(b.settings, _SETTINGS, add)
        if ts is not None:
            _same_workload(p, ts, b.settings, add)
    if ts is not None and ts.settings:
        _twice(ts.settings, "/task/serving/settings/", add)
    if kernel and b.call:
        if entry is not None:
            ns = _NAMESPACE_CACHE.get(b.call)
            if ns is None:
                ns = _namespaces(b.call)
            # ns[1]: the providers no namespace of the call can be built on (empty for a
            # call that names none), i.e. every one of them contradicts the provider
            if entry.key in ns[1]:
                _other_library(entry, b.call, ns[0], add)
        _call_problem(p, t, b.call, add)
        if _HANDICAP_CACHE.get(b.call) != ():  # () is a call known to state none: nothing to judge
            _handicapped_call(p, t, b.call, add)
    if entry is not None and entry.kind == "reference":
        add(
            (
                "KE204",
                "/timing/baseline/provider",
                f"`{entry.name}` is a reference implementation: this is a reference speedup, not a vendor speedup",
            )
        )
    if b.same_session is not True:
        add(
            (
                "KE206",
                "/timing/baseline/same_session",
                "baseline not stated to be measured in the same session",
            )
        )


_WILDCARD = lazy_re(r"[?*<>]|(^|[.\-_ ])[xX]([.\-_ ]|$)")


def _no_version(v: str) -> bool:
    """True for a version that names none: no digit at all, or a wildcard (``1.x``, ``*``).
    Cached: a batch repeats a few library versions."""
    hit = _NO_VERSION_CACHE.get(v)
    if hit is None:
        hit = not any(ch.isdigit() for ch in v) or bool(_WILDCARD.search(v))
        if len(_NO_VERSION_CACHE) < 4096 and len(v) <= CACHED_CHARS:
            _NO_VERSION_CACHE[v] = hit
    return hit


_NO_VERSION_CACHE: dict[str, bool] = {}

_SCHEMES: dict[str, tuple[re.Pattern[str] | None, re.Pattern[str] | None]] | None = None


def _schemes() -> dict[str, tuple[re.Pattern[str] | None, re.Pattern[str] | None]]:
    """The registry's version scheme and package names per library key (baselines.toml's
    `versions` and `packages`; only the libraries that give one), read once."""
    global _SCHEMES
    if _SCHEMES is None:
        out = {}
        for key, row in _load("baselines.toml")["providers"].items():
            v, pk = row.get("versions"), row.get("packages")
            if v or pk:
                out[key] = (re.compile(v) if v else None, re.compile(pk) if pk else None)
        _SCHEMES = out
    return _SCHEMES


_NUMBERS = lazy_re(r"\d+(?:\.\d+)*")
_FOREIGN: dict[tuple[str, str], bool] = {}


def _foreign(key: str, version: str) -> bool:
    """True when none of the numbers of a version (`12.4.5.8`, `cu124`: 124) fits the
    library's version scheme: the version of another package (torch's 2.5.1 as cuBLASLt's).
    Cached per library and version."""
    hit = _FOREIGN.get((key, version))
    if hit is None:
        pat = _schemes()[key][0]
        nums = _NUMBERS.findall(version[:200])
        hit = pat is not None and bool(nums) and not any(pat.fullmatch(x) for x in nums)
        if len(_FOREIGN) < 4096 and len(version) <= CACHED_CHARS:
            _FOREIGN[(key, version)] = hit
    return hit


def _parts(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _version_agrees(p: Any, entry: Any, version: str, add: Add) -> bool:
    """KE210: a baseline version that fits the library's scheme, and that agrees with the
    version `replay.packages` records for a package of that library (one a prefix of the
    other, compared where the baseline's names three parts or more: `12.4.5` and
    `12.4.5.8` agree, `12.4.5.8` and `12.1.3.1` do not)."""
    if _foreign(entry.key, version):
        add(
            (
                "KE210",
                "/timing/baseline/version",
                f"baseline version `{version.strip()[:40]}` is no {entry.name} version: it names another package",
            )
        )
        return True
    r = p.replay
    pk = r.packages if r is not None else None
    pat = _schemes()[entry.key][1]
    if not pk or pat is None:
        return False
    mine = [_parts(x) for x in _NUMBERS.findall(version[:200]) if x.count(".") >= 2 and len(x) <= 40]
    if not mine:
        return False
    seen = _disagreeing(
        pk,
        lambda name: (
            len(name) <= 128
            and pat.fullmatch(name.strip().casefold().replace("_", "-").replace(".", "-")) is not None
        ),
        mine,
    )
    if seen is not None:
        _disagrees(seen, entry, version, add)
        return True
    return False


def _disagreeing(
    packages: dict[str, str], ours: Callable[[str], bool], mine: list[tuple[int, ...]]
) -> tuple[str, str] | None:
    """The first package of ``packages`` that ``ours`` picks whose version agrees with none
    of the baseline's versions ``mine`` (one a prefix of the other), or None when one of them
    agrees (or none is read)."""
    seen = None
    for name, ver in packages.items():
        if not isinstance(ver, str) or not ours(name):
            continue
        m = _NUMBERS.search(ver[:200])
        if m is None or "." not in m.group() or len(m.group()) > 40:
            continue
        theirs = _parts(m.group())
        if any(a[: len(theirs)] == theirs[: len(a)] for a in mine):
            return None
        seen = seen or (name, ver)
    return seen


def _disagrees(seen: tuple[str, str], entry: Any, version: str, add: Add) -> None:
    add(
        (
            "KE210",
            "/timing/baseline/version",
            f"baseline version `{version.strip()[:40]}`, but replay.packages records {seen[0][:40]} "
            f"{seen[1].strip()[:40]}: the {entry.name} that ran is another",
        )
    )


def _named_package(packages: dict[str, str], entry: Any, version: str, add: Add) -> None:
    """KE210: a baseline version that disagrees with the version `replay.packages` records
    for a package named as the library itself (`numpy`, `torch` for torch eager, `mkl` for
    oneMKL, `flash-attn`: the registry's names and aliases), for a library the registry
    gives no package pattern of (one a prefix of the other, where the baseline's version
    has two parts or more: `2.4` and `2.4.6` agree, `2.1.0` and `2.4.6` do not)."""
    mine = [_parts(x) for x in _NUMBERS.findall(version[:200]) if "." in x and len(x) <= 40]
    if not mine:
        return
    seen = _disagreeing(
        packages,
        lambda name: len(name) <= 64 and getattr(baseline_entry(name), "key", None) == entry.key,
        mine,
    )
    if seen is not None:
        _disagrees(seen, entry, version, add)


#: the library a call's namespace names (`np.`, `torch.`, `jnp.`, `cublasLtMatmul(`,
#: `rocblas_sgemm(`, `cblas_sgemm(`, `mkl_...(`)
_NAMESPACE = lazy_re(
    r"(?<![\w.])(?:(np|numpy)\.(?=[A-Za-z_])|(torch)\.(?=[A-Za-z_])|(jnp|jax)\.(?=[A-Za-z_])"
    r"|(cublas)\w*\s*\(|(rocblas)_\w+\s*\(|(cblas)_\w+\s*\(|(mkl)_\w+\s*\()"
)
_NAMESPACE_FAMILY = ("numpy", "torch", "jax", "cublas", "rocblas", "cblas", "mkl")
_GPU_LIBRARIES = frozenset({
    "cublas", "cublaslt", "cudnn", "cutlass", "cusparse", "cufft", "tensorrt", "transformer_engine",
    "hipblaslt", "hipblas", "rocblas", "miopen", "composable_kernel", "aiter", "rocfft",
    "flashattention", "flashinfer", "xformers", "triton",
})  # fmt: skip
#: per namespace, the registry's libraries it cannot be built on (torch calls cuBLAS, XLA
#: calls cuBLAS and rocBLAS, numpy may call OpenBLAS or MKL, hipBLAS wraps cuBLAS on NVIDIA:
#: those are not here)
_NOT_BUILT_ON = {
    "numpy": _GPU_LIBRARIES | {"torch_eager", "torch_compile", "jax", "xla", "pallas_reference"},
    "torch": frozenset({"numpy", "jax", "pallas_reference"}),
    "jax": frozenset({"numpy", "torch_eager", "torch_compile", "openblas"}),
    "cublas": frozenset({"rocblas", "miopen", "composable_kernel", "aiter", "rocfft", "openblas", "onemkl", "onednn", "numpy"}),
    "rocblas": frozenset({"cublas", "cublaslt", "cudnn", "cutlass", "cusparse", "cufft", "tensorrt", "openblas", "onemkl", "onednn", "numpy"}),
    "cblas": _GPU_LIBRARIES,
    "mkl": _GPU_LIBRARIES | {"openblas"},
}  # fmt: skip
_NAMESPACE_CACHE: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def _namespaces(call: str) -> tuple[frozenset[str], frozenset[str]]:
    """The libraries a call's namespaces name (empty where none; none where it names
    `cupy`, whose API is numpy's), and the providers that none of them can be built on
    (those :data:`_NOT_BUILT_ON` lists for every one; empty where the call names none).
    Cached per call."""
    text = call[:2000]
    if "cupy" in text:
        fam: frozenset[str] = frozenset()
    else:
        fam = frozenset(_NAMESPACE_FAMILY[m.lastindex - 1] for m in _NAMESPACE.finditer(text) if m.lastindex)
    hit = (fam, frozenset.intersection(*(_NOT_BUILT_ON[x] for x in fam)) if fam else frozenset())
    if len(_NAMESPACE_CACHE) < 1024 and len(call) <= 4 * CACHED_CHARS:
        _NAMESPACE_CACHE[call] = hit
    return hit


def _other_library(entry: Any, call: str, fam: frozenset[str], add: Add) -> None:
    """KE202: a provider that the call's namespaces contradict: every library the call names
    is one that cannot be built on the provider (a `np.` call is not cuBLAS's)."""
    if entry.name.casefold() in call[:2000].casefold():
        return  # the call names the provider too
    add(
        (
            "KE202",
            "/timing/baseline/provider",
            f"the baseline call (`{call.strip()[:60]}`) is {', '.join(sorted(fam))} code, which does not run "
            f"{entry.name}: the provider is not the library that was timed",
        )
    )


#: the major of a CUDA version (`12.4`, `12.4.131`; `12040` as cudaRuntimeGetVersion gives it)
_CUDA_MAJOR = lazy_re(r"(?<![\d.])(\d{1,2})(?:\.\d+)+(?![\d.])|(?<![\d.])(\d{2})0\d0(?![\d.])")
#: cuBLAS's version as cublasGetVersion gives it (120405: 12.4.5)
_CUBLAS_INT = lazy_re(r"(?<![\d.])(1[0-3])\d{4}(?![\d.])")
#: a CUDA toolkit directory (`/usr/local/cuda-11.0/lib64`)
_TOOLKIT_DIR = lazy_re(r"cuda-(\d{1,2})(?:\.\d+)*(?![\d.])", re.IGNORECASE)


def _major(v: str | None, pat: re.Pattern[str]) -> int | None:
    """The first major ``pat`` finds in ``v`` (None where none)."""
    if not v:
        return None
    m = pat.search(v[:200])
    if m is None:
        return None
    return int(next(g for g in m.groups() if g is not None))


def _cublas_major(version: str) -> int | None:
    """The major of a cuBLAS version: the first of its dotted numbers that fits the
    registry's scheme (9 to 13), else its integer form (120405)."""
    for x in _NUMBERS.findall(version[:200]):
        if "." in x:
            head = x.split(".", 1)[0]
            if head.isdigit() and 9 <= int(head) <= 13:
                return int(head)
    return _major(version, _CUBLAS_INT)


_TOOLKIT_CACHE: dict[tuple[str, str, str | None], tuple[int, int] | None] = {}


def _toolkit_majors(version: str, runtime: str, rt_version: str | None) -> tuple[int, int] | None:
    """(the baseline's cuBLAS major, the CUDA runtime's major) where both are known and
    differ, else None."""
    mine = _cublas_major(version)
    if mine is None or "cuda" not in runtime.casefold():
        return None
    theirs = _major(rt_version, _CUDA_MAJOR)
    if theirs is None or theirs == mine:
        return None
    return mine, theirs


def _toolkit_major(p: Any, entry: Any, version: str, add: Add) -> None:
    """KE210: cuBLAS (and cuBLASLt, which ships in it) ships with the CUDA toolkit of its
    own major (cuBLAS 11.x with CUDA 11.x, 12.x with 12.x): a baseline version of another
    major than the CUDA runtime the hardware records (and than the nvcc the candidate was
    built with, where recorded) is an older or newer toolkit's library than the one that ran."""
    h = p.hardware
    rt = h.runtime if h is not None else None
    if rt is None or not rt.name:
        return
    # the two majors depend on three strings only: cached (a batch repeats a few)
    key = (version, rt.name, rt.version)
    hit = _TOOLKIT_CACHE.get(key, _UNSET)
    if hit is _UNSET:
        hit = _toolkit_majors(version, rt.name, rt.version)
        if (
            len(_TOOLKIT_CACHE) < 256
            and max(len(version), len(rt.name), len(rt.version or "")) <= CACHED_CHARS
        ):
            _TOOLKIT_CACHE[key] = hit
    if hit is None:
        return
    mine, _ = hit
    c = p.compile
    cc = c.compiler if c is not None else None
    if (
        cc is not None
        and cc.name
        and "nvcc" in cc.name.casefold()
        and _major(cc.version, _CUDA_MAJOR) == mine
    ):
        return  # built with that toolkit: the runtime recorded may be the driver's
    add(
        (
            "KE210",
            "/timing/baseline/version",
            f"baseline version `{version.strip()[:40]}` is a CUDA {mine} {entry.name}, but hardware.runtime is "
            f"CUDA {rt.version.strip()[:20] if rt.version else ''}: cuBLAS ships with the toolkit of its own major",
        )
    )


def _library_path(p: Any, entry: Any, version: str, path: str, add: Add) -> None:
    """KE210: an LD_LIBRARY_PATH whose CUDA toolkit directories (`/usr/local/cuda-11.0/lib64`)
    are all of another major than the baseline's cuBLAS version: the cuBLAS that loaded is
    that toolkit's, not the one the version names."""
    mine = _cublas_major(version)
    if mine is None:
        return
    majors = {int(x) for x in _TOOLKIT_DIR.findall(path[:2000])}
    if majors and mine not in majors:
        add(
            (
                "KE210",
                "/replay/env/LD_LIBRARY_PATH",
                f"replay.env LD_LIBRARY_PATH names CUDA {', '.join(map(str, sorted(majors)))} toolkit directories "
                f"(`{path.strip()[:60]}`), the baseline version `{version.strip()[:40]}` is CUDA {mine}'s {entry.name}",
            )
        )


#: libraries whose kernels a search loop does not rewrite as its own candidate: a baseline
#: packet that is the candidate's parent is not one of them
_LIBRARIES = frozenset({
    "cublas", "cublaslt", "cudnn", "cusparse", "cufft", "tensorrt", "hipblaslt", "hipblas",
    "rocblas", "miopen", "rocfft", "onednn", "onemkl", "openblas", "xla",
})  # fmt: skip
#: lineage relations whose parent is the candidate's own earlier packet
_OWN_LINE = ("mutation", "replay", "rerun")


def _positive(v: str) -> bool:
    v = v.strip()
    return v.isdigit() and int(v) > 0


def _on(v: str) -> bool:
    return v.strip().casefold() in ("1", "true", "yes", "on")


def _off(v: str) -> bool:
    return v.strip().casefold() in ("0", "false", "no", "off")


def _no_workspace(v: str) -> bool:
    """CUBLAS_WORKSPACE_CONFIG of zero bytes (`:0:0`, `:4096:0`)."""
    pairs = re.findall(r":\s*(\d+)\s*:\s*(\d+)", v[:200])
    return bool(pairs) and all(int(a) * int(b) == 0 for a, b in pairs)


#: an XLA or libtpu optimisation or autotuning level set to 0 (`--xla_backend_optimization_level`,
#: `--xla_gpu_autotune_level`, libtpu's `--xla_llo_opt_level`...)
_XLA_OFF = lazy_re(r"--xla_\w*(?:optimization|opt|autotune)\w*_level(?:=|\s+)0(?![\d.])")


def _xla_off(v: str) -> bool:
    return bool(_XLA_OFF.search(v[:4000]))


#: the best vector/matrix ISA of a host CPU, read from hardware.device and hardware.arch:
#: AMX (Sapphire Rapids and later Xeons), AVX-512 (Skylake-SP to Ice Lake Xeons, Zen 4 and
#: later EPYCs)
_HOST_AMX = lazy_re(
    r"sapphire\s*rapids|emerald\s*rapids|granite\s*rapids|diamond\s*rapids"
    r"|xeon(?:\(r\))?\s*(?:platinum|gold|silver|bronze)\s*[3-9][45]\d\d|xeon(?:\(r\))?\s*(?:6\d\d\dp|max\s*9\d\d\d)",
    re.IGNORECASE,
)
_HOST_AVX512 = lazy_re(
    r"znver[45]|\bzen\s*[45]\b|epyc\s*(?:9\d\d[45]|8\d\d4|4\d\d4)|skylake[-_ ]?avx512|\bskx\b|cascade\s*lake"
    r"|cooper\s*lake|ice\s*lake|xeon(?:\(r\))?\s*(?:platinum|gold|silver|bronze)\s*\d[1-3]\d\d",
    re.IGNORECASE,
)
_HOST_ISA: dict[str, int] = {}


def _host_isa(h: Any) -> int:
    """The host CPU's best ISA level: 3 AMX, 2 AVX-512, 0 not known. Cached per name."""
    if h is None:
        return 0
    key = f"{h.device} {h.arch or ''}"
    hit = _HOST_ISA.get(key)
    if hit is None:
        text = key[:512]
        hit = 3 if _HOST_AMX.search(text) else 2 if _HOST_AVX512.search(text) else 0
        if len(_HOST_ISA) < 256 and len(key) <= CACHED_CHARS:
            _HOST_ISA[key] = hit
    return hit


_NO_CAP = ("", "all", "default", "auto")


def _onednn_isa(v: str) -> int | None:
    """The ISA level a oneDNN ISA cap allows (3 AMX, 2 AVX-512/AVX10, 1 AVX2 or older; None
    for no cap or a name not known)."""
    v = v.strip().casefold()
    if v in _NO_CAP:
        return None
    if "amx" in v:
        return 3
    if "avx512" in v or "avx10" in v:
        return None if "mic" in v else 2
    return 1 if v in ("sse41", "avx", "avx2", "avx2_vnni", "avx2_vnni_2") else None


def _mkl_isa(v: str) -> int | None:
    """The ISA level MKL_ENABLE_INSTRUCTIONS allows (AVX512_E4 and later: AMX)."""
    v = v.strip().casefold()
    if v in _NO_CAP:
        return None
    if v.startswith("avx512"):
        return 3 if re.fullmatch(r"avx512_e[4-9]", v) else 2
    return 1 if v in ("sse4_2", "sse42", "avx", "avx2", "avx2_e1") else None


def _capped(v: str) -> bool:
    return v.strip().casefold() not in _NO_CAP


def _verbose(v: str) -> bool:
    """A oneDNN/MKL verbosity that prints at each execution (`1`, `2`, `all`, `profile_exec`)."""
    for x in v.strip().casefold().split(","):
        x = x.strip()
        if (x.isdigit() and int(x) > 0) or x in ("all", "exec", "profile", "profile_exec"):
            return True
    return False


def _cbwr(v: str) -> bool:
    """MKL_CBWR pinned to a code path (anything but AUTO)."""
    return not v.strip().casefold().startswith("auto") and bool(v.strip())


#: OpenBLAS cores without AVX-512
_OLD_CORES = frozenset({
    "haswell", "zen", "sandybridge", "nehalem", "core2", "penryn", "dunnington", "prescott", "atom",
    "barcelona", "bulldozer", "piledriver", "steamroller", "excavator", "opteron", "opteron_sse3",
    "katmai", "coppermine", "northwood", "banias", "athlon", "nano",
})  # fmt: skip


def _old_core(v: str) -> bool:
    return v.strip().casefold() in _OLD_CORES


_NV_BLAS = frozenset({"cublas", "cublaslt"})
_AMD_BLAS = frozenset({"hipblaslt", "hipblas", "rocblas"})
#: replay.env variables that handicap a baseline library: name -> (the value that does,
#: the registry keys of the libraries it slows ("*nvidia"/"*amd": any baseline on that
#: vendor's GPU), what it does)
_ENV: dict[str, tuple[Any, frozenset[str], str]] = {
    "CUBLAS_WORKSPACE_CONFIG": (_no_workspace, _NV_BLAS, "no cuBLAS workspace: no split-K, none of the kernels that need one"),
    "CUBLASLT_LOG_LEVEL": (_positive, _NV_BLAS, "cuBLASLt logs every call it serves"),
    "CUBLASLT_LOG_MASK": (_positive, _NV_BLAS, "cuBLASLt logs every call it serves"),
    "CUBLAS_LOGINFO_DBG": (_on, _NV_BLAS, "cuBLAS logs every call it serves"),
    "NVIDIA_TF32_OVERRIDE": (_off, frozenset({"cublas", "cublaslt", "cudnn"}), "TF32 off in NVIDIA's libraries while the candidate computes in tf32"),
    "ROCBLAS_USE_HIPBLASLT": (_off, frozenset({"rocblas"}), "rocBLAS kept off its hipBLASLt kernels"),
    "ROCBLAS_LAYER": (_positive, frozenset({"rocblas"}), "rocBLAS logs every call it serves"),
    "TORCH_BLAS_PREFER_HIPBLASLT": (_off, frozenset({"hipblaslt", "torch_eager", "torch_compile"}), "torch's GEMMs kept off hipBLASLt"),
    "HIPBLASLT_LOG_LEVEL": (_positive, _AMD_BLAS, "hipBLASLt logs every call it serves"),
    "HIPBLASLT_LOG_MASK": (_positive, _AMD_BLAS, "hipBLASLt logs every call it serves"),
    "XLA_FLAGS": (_xla_off, frozenset({"xla", "jax", "pallas_reference"}), "XLA compiles the baseline without its optimisations or autotuning"),
    "LIBTPU_INIT_ARGS": (_xla_off, frozenset({"xla", "jax", "pallas_reference"}), "libtpu compiles the baseline without its optimisations"),
    "DISABLE_ADDMM_CUDA_LT": (_on, frozenset({"cublaslt", "torch_eager", "torch_compile"}), "PyTorch's addmm kept off cuBLASLt"),
    "TORCH_BLAS_PREFER_CUBLASLT": (_off, frozenset({"cublaslt", "torch_eager", "torch_compile"}), "PyTorch's GEMMs kept off cuBLASLt"),
    "CUDA_LAUNCH_BLOCKING": (_on, frozenset({"*nvidia"}), "every launch waits for the kernel before it: a baseline of several launches pays a host round trip each"),
    "HIP_LAUNCH_BLOCKING": (_on, frozenset({"*amd"}), "every launch waits for the kernel before it: a baseline of several launches pays a host round trip each"),
    "ONEDNN_MAX_CPU_ISA": (_capped, frozenset({"onednn"}), "oneDNN kept below the host CPU's best instructions"),
    "DNNL_MAX_CPU_ISA": (_capped, frozenset({"onednn"}), "oneDNN kept below the host CPU's best instructions"),
    "ONEDNN_VERBOSE": (_verbose, frozenset({"onednn"}), "oneDNN logs every primitive it executes"),
    "DNNL_VERBOSE": (_verbose, frozenset({"onednn"}), "oneDNN logs every primitive it executes"),
    "MKL_VERBOSE": (_verbose, frozenset({"onemkl"}), "MKL logs every call it serves"),
    "MKL_ENABLE_INSTRUCTIONS": (_capped, frozenset({"onemkl"}), "MKL kept below the host CPU's best instructions"),
    "MKL_CBWR": (_cbwr, frozenset({"onemkl"}), "MKL pinned to one reproducible code path"),
    "OPENBLAS_CORETYPE": (_old_core, frozenset({"openblas"}), "OpenBLAS's kernels for an older core than the host's, without AVX-512"),
}  # fmt: skip
_ENV_NAMES = frozenset(_ENV)
_ISA_CAPS = {
    "ONEDNN_MAX_CPU_ISA": _onednn_isa,
    "DNNL_MAX_CPU_ISA": _onednn_isa,
    "MKL_ENABLE_INSTRUCTIONS": _mkl_isa,
}
#: AMD GPUs before the MI300 (gfx942): rocBLAS and torch do not use hipBLASLt there anyway
_PRE_MI300 = lazy_re(r"gfx(?:90[0-9a]|10|11|12)|\bmi\s?(?:[12]\d\d|50|60)\b|radeon", re.IGNORECASE)


def _env_handicaps(p: Any, t: Any, entry: Any, env: dict[str, str], add: Add) -> None:
    """KE208: replay.env variables that slow the baseline's library and not the candidate:
    a zero cuBLAS workspace, library call logging, rocBLAS or torch kept off hipBLASLt, XLA
    at optimisation level 0 or without autotuning, TF32 turned off under a tf32
    candidate, launches made blocking."""
    h = p.hardware
    hv = h.vendor if h is not None else None
    for name, value in env.items():
        spec = _ENV.get(name)
        if spec is None or not isinstance(value, str):
            continue
        test, libs, why = spec
        if entry.key not in libs:
            star = "*" + (entry.vendor or hv or "")
            if star not in libs or (hv is not None and hv != star[1:]):
                continue
        if not test(value):
            continue
        if name == "OPENBLAS_CORETYPE" and _host_isa(h) < 2:
            continue  # the host's own best core is not known to have AVX-512
        if name == "NVIDIA_TF32_OVERRIDE":
            cd, _ = cand(t, "dtypes")
            if not cd or "tf32" not in _narrowest(cd):
                continue
        elif name in _ISA_CAPS:
            host = _host_isa(h)
            allowed = _ISA_CAPS[name](value)
            if allowed is None or host == 0:
                continue
            if host == 3:
                # AMX multiplies 16-bit and 8-bit types only: an fp32 candidate loses nothing
                cd, _ = cand(t, "dtypes")
                if not cd and p.task is not None and p.task.dtypes:
                    cd = p.task.dtypes
                na = _narrowest(cd) if cd else frozenset()
                if not (na and na <= _WIDTH.keys() and max(_WIDTH[c] for c in na) <= 16):
                    host = 2
            if allowed >= host:
                continue
        elif (
            name in ("ROCBLAS_USE_HIPBLASLT", "TORCH_BLAS_PREFER_HIPBLASLT")
            and h is not None
            and len(h.device) + len(h.arch or "") <= 256
            and _PRE_MI300.search(f"{h.device} {h.arch or ''}")
        ):
            continue
        add(
            (
                "KE208",
                "/replay/env/" + _esc(name),
                f"replay.env sets {name}={value.strip()[:40]}: {why}, a handicap of {entry.name} (the baseline) alone",
            )
        )
        return


#: the hardware vendors a vendor's library runs on
_RUNS_ON = {"nvidia": ("nvidia",), "amd": ("amd",), "intel": ("intel", "cpu")}
_VENDOR_NAME = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}

#: dtype classes by width: the narrowest dtype of a side sets its speed
_WIDTH = {"fp4": 4, "fp6": 6, "fp8": 8, "int8": 8, "bf16": 16, "fp16": 16, "tf32": 19, "fp32": 32, "fp64": 64}


def _narrowest(dtypes: list[str]) -> frozenset[str]:
    """The dtype classes of the narrowest width among ``dtypes`` (unknown spellings kept as
    written, casefolded, at an unknown width: they must match as spelled). Cached per
    dtype list: a batch repeats a few."""
    key = tuple(dtypes)
    hit = _NARROWEST_CACHE.get(key)
    if hit is None:
        hit = _narrowest_of(key)
        if len(_NARROWEST_CACHE) < 1024 and len(key) <= 8 and all(len(d) <= CACHED_CHARS for d in key):
            _NARROWEST_CACHE[key] = hit
    return hit


_NARROWEST_CACHE: dict[tuple[str, ...], frozenset[str]] = {}


def _narrowest_of(dtypes: tuple[str, ...]) -> frozenset[str]:
    known: dict[int, set[str]] = {}
    other: set[str] = set()
    for d in dtypes:
        c = dtype_class(d) if len(d) <= 64 else None
        if c is None:
            other.add(d.strip().casefold())
        else:
            known.setdefault(_WIDTH[c], set()).add(c)
    if other:
        return frozenset(other | (known[min(known)] if known else set()))
    return frozenset(known[min(known)]) if known else frozenset()


def _accelerator(name: str) -> bool:
    """True when the device table knows ``name`` (its devices are all accelerators)."""
    from ..devices import candidates

    return bool(candidates(name)) if len(name) <= 256 else False


_MIG = lazy_re(r"(?:^|[\s_\-/(])mig(?:$|[\s_\-/)])|\b\d+g\.\d+gb\b")
_SPACES = lazy_re(r"\s+")


def _other_device(a: str, b: str, aid: str | None, bid: str | None, same_session: bool) -> str | None:
    """The reason (appended to the finding; empty where the table tells them apart) why two
    device names (the baseline's ``a``, the candidate's ``b``; ids where a side
    gives one) are not one device, or None: the device table tells them apart; a MIG slice
    (``... MIG 3g.40gb``) on one side only; or, where the sides say they ran in one session,
    names that are not one spelling and do not both resolve to the same single table model
    (`NVIDIA H100`, which may be a PCIe, against `NVIDIA H100 80GB HBM3`). Cached per pair."""
    key = (a, b, aid, bid, same_session)
    hit = _OTHER_DEVICE.get(key, _UNSET)
    if hit is not _UNSET:
        return hit  # type: ignore[no-any-return]
    why = None
    if len(a) <= 256 and len(b) <= 256:
        fa, fb = _SPACES.sub(" ", a.strip().casefold()), _SPACES.sub(" ", b.strip().casefold())
        if fa != fb:
            from ..devices import candidates

            ca = {e.id for e in candidates(a)}
            cb = {e.id for e in candidates(b)}
            if ca and cb and not (ca & cb):
                why = ""
            elif bool(_MIG.search(fa)) != bool(_MIG.search(fb)):
                why = ": a MIG slice is not the whole device"
            elif same_session:
                ra = {aid} if aid else ca
                rb = {bid} if bid else cb
                if (ra or rb) and not (len(ra) == 1 and ra == rb):
                    why = ": same_session is true but the names do not resolve to one device model"
    if len(_OTHER_DEVICE) < 1024 and len(a) + len(b) <= 2 * CACHED_CHARS:
        _OTHER_DEVICE[key] = why
    return why


_OTHER_DEVICE: dict[tuple[str, str, str | None, str | None, bool], str | None] = {}


#: timers by what they time: device events around each call (the launch included), the
#: kernels alone as a profiler records them (no launch), the host clock, a client
_TIMER_KIND = {
    "cuda_events": "call", "hip_events": "call", "triton_do_bench": "call",
    "cupti": "kernel", "profiler": "kernel", "xprof": "kernel", "torch_profiler": "kernel",
    "host_clock": "host", "serving_client": "client",
}  # fmt: skip
#: cache modes by the state they leave: flushing and rotating both evict
_CACHE_STATE = {"flushed": "evicted", "rotating": "evicted", "warm": "warm", "cold_start": "cold"}

_B = "/timing/baseline/conditions/"
#: KE208: a candidate's warmup more than twice the baseline's and more than this many
#: calls above it warmed the candidate alone
_WARMUP_MARGIN = 10


def _compare(p: Any, t: Any, b: Any, bc: Any, add: Add) -> None:
    """KE207/KE208: the baseline's conditions against the candidate's, field by field."""
    cc = t.conditions
    # both sides may record the same conditions (one comparison of the two structs): the
    # checks of a difference between the sides (under `if not same`) then have nothing to
    # say; a check that looks at a side's own values runs whatever `same` is
    same = cc is not None and cc == bc
    if not same:
        _problem(p, t, bc, add)
    elif bc.dims and _fold_clash(bc.dims):
        _dims(cc.dims, bc.dims, add)  # equal dims whose names differ only in case (M and m)
    if not same:
        _devices_and_timers(t, b, bc, cc, p.hardware, add)
    bcache = bc.cache
    mode, mode_ptr = cache_mode(t)
    if bcache is not None and mode is not None:
        sa, sb = _CACHE_STATE.get(mode), _CACHE_STATE.get(bcache.mode)
        if sa and sb and sa != sb:
            warm_ptr = mode_ptr if sa in ("warm",) or sb == "cold" else _B + "cache/mode"
            add(("KE208", warm_ptr, f"candidate timed with caches {mode}, the baseline {bcache.mode}"))
        elif (sa is None) != (sb is None):
            # `unknown` on one side only: that side may have been warm (or cold)
            ptr = mode_ptr if sa is None else _B + "cache/mode"
            add(
                (
                    "KE208",
                    ptr,
                    f"candidate timed with caches {mode}, the baseline {bcache.mode}: "
                    f"the {'candidate' if sa is None else 'baseline'}'s cache state is not known to be the other's",
                )
            )
        elif sa == sb == "evicted":
            _flushes(p, t.conditions.cache if cc is not None and cc.cache is not None else None, bcache, add)
    if not same:
        _windows_and_session(b, bc, cc, add)
        bw = bc.warmup
        cw = cc.warmup if cc is not None else None
        if bw is not None and (cw is None or cw > bw + _WARMUP_MARGIN):
            cw, cptr = cand(t, "warmup")
            if cw is not None and cw > 2 * bw and cw - bw > _WARMUP_MARGIN:
                add(
                    (
                        "KE208",
                        cptr,
                        f"the candidate was warmed with {cw} calls ({cptr}), the baseline with {bw}: "
                        "autotuning and caches warmed for the candidate only",
                    )
                )
    _interleaved(t, b, bc, cc, add)
    fs = t.shape_id
    if (
        fs is not None
        and bc.shape_id is not None
        and fs != bc.shape_id
        and cc is not None
        and cc.shape_id not in (None, fs)
    ):
        # the flat shape_id another side of the packet reads (physics, the replay) is not
        # the one both sides' conditions were compared under
        add(
            (
                "KE207",
                "/timing/shape_id",
                f"timing.shape_id is `{fs}` but the conditions of the candidate (`{cc.shape_id}`) and the "
                f"baseline (`{bc.shape_id}`) name another shape",
            )
        )


def _problem(p: Any, t: Any, bc: Any, add: Add) -> None:
    """KE207: the baseline's dtypes, shape and dims against the candidate's."""
    task = p.task
    if bc.dtypes:
        cd, cptr = cand(t, "dtypes")
        if not cd and task is not None and task.dtypes:
            cd, cptr = task.dtypes, "/task/dtypes"
        if cd:
            na, nb = _narrowest(cd), _narrowest(bc.dtypes)
            if na and nb and na != nb:
                add(
                    (
                        "KE207",
                        _B + "dtypes",
                        f"baseline ran in {', '.join(sorted(nb))}, the candidate in {', '.join(sorted(na))} ({cptr})",
                    )
                )
            elif na and na == nb and cptr.startswith("/timing/"):
                # both sides' own records (the task's list may describe more than was timed)
                sa, sb = _narrow_set(cd), _narrow_set(bc.dtypes)
                if sa != sb:
                    # one narrowest class, but a 16-bit (or narrower) tensor on one side only:
                    # an fp8 output against the baseline's bf16 one moves half the bytes
                    ptr = cptr if sa < sb else _B + "dtypes"
                    add(
                        (
                            "KE207",
                            ptr,
                            f"the candidate's dtypes are {', '.join(sorted(sa))} ({cptr}), the baseline's "
                            f"{', '.join(sorted(sb))}: a tensor of another precision on one side",
                        )
                    )
    sid, sptr = cand(t, "shape_id")
    if bc.shape_id is not None and sid is not None and bc.shape_id != sid:
        add(
            (
                "KE207",
                _B + "shape_id",
                f"baseline timed shape `{bc.shape_id}`, the candidate `{sid}` ({sptr})",
            )
        )
    if bc.dims:
        cdims, _ = cand(t, "dims")
        if cdims is None and sid is not None and task is not None and task.shapes:
            for sh in task.shapes:
                if sh.id == sid:
                    cdims = sh.dims
                    break
        if cdims and not _dims(cdims, bc.dims, add):
            _extra_dims(cdims, bc.dims, _shape_dims(task, sid), add)


def _shape_dims(task: Any, sid: str | None) -> dict[str, Any] | None:
    """The dims of the task's shape ``sid`` (None where the task has none of that id)."""
    if sid is None or task is None or not task.shapes:
        return None
    for sh in task.shapes:
        if sh.id == sid:
            return sh.dims  # type: ignore[no-any-return]
    return None


def _extra_dims(cdims: dict[str, Any], bdims: dict[str, Any], sdims: dict[str, Any] | None, add: Add) -> None:
    """KE207: a dimension the baseline ran with that the candidate's shape does not have
    (`batch: 2` beside the candidate's m, n, k): more than 1 of it is more work. Not where
    the task's shape gives it that value, nor where the candidate has a dimension of that
    value under a name the baseline lacks (another name for it)."""
    if len(bdims) <= len(cdims) and bdims.keys() == cdims.keys():
        return  # the common case: the same names
    folded = {str(k).casefold() for k in cdims}
    for k, v in bdims.items():
        if k.casefold() in folded or isinstance(v, bool) or not isinstance(v, (int, float)) or v == 1:
            continue
        if sdims is not None and any(str(x).casefold() == k.casefold() and w == v for x, w in sdims.items()):
            continue
        bfold = {str(x).casefold() for x in bdims}
        if any(w == v and str(x).casefold() not in bfold for x, w in cdims.items()):
            continue
        add(
            (
                "KE207",
                _B + "dims/" + _esc(k),
                f"baseline ran with {k}={v:g}, a dimension the candidate's shape does not have (1 where absent)",
            )
        )
        return


def _narrow_set(dtypes: list[str]) -> frozenset[str]:
    """The dtype classes of 16 bits or fewer among ``dtypes`` (the tensors whose width sets
    the bytes moved; fp32 accumulators and scales left out). Cached per list."""
    key = tuple(dtypes)
    hit = _NARROW_SET.get(key)
    if hit is None:
        hit = frozenset(
            c for d in dtypes if len(d) <= 64 and (c := dtype_class(d)) is not None and _WIDTH[c] <= 16
        )
        if len(_NARROW_SET) < 1024 and sum(map(len, key)) <= CACHED_CHARS:
            _NARROW_SET[key] = hit
    return hit


_NARROW_SET: dict[tuple[str, ...], frozenset[str]] = {}


_IDENT = lazy_re(r"[A-Za-z_][A-Za-z0-9_]*")
#: a BLAS routine of one precision: (c|hip)blas<S|D|H>gemm, rocblas_<s|d|h>gemm, a bare
#: sgemm/dgemm/hgemm (the batched forms too; not the `...Ex` forms, whose types are arguments)
_ROUTINE = lazy_re(
    r"(?:cublas|hipblas|rocblas_)?([sdh])gemm(?:_?strided_?batched|_?batched)?(?:_v2|_64)?", re.IGNORECASE
)
_ROUTINE_CLASS = {"s": "fp32", "d": "fp64", "h": "fp16"}
#: m=, n=, k= in a call (chained: m=n=k=8192; a number written with grouping separators,
#: `16.384`, `16,384`, `16 384`, `16'384`, is one integer: a dimension is never a fraction)
_KW_DIMS = lazy_re(
    r"(?<![A-Za-z0-9_])((?:[mnkMNK]\s*=\s*)+)(\d{1,3}([.,'\u2019\u00a0\u202f ])\d{3}(?:\3\d{3})*|\d+)(?![\d.])"
)
#: grouping separators that are also argument separators (`k=16,384` may be k=16 and 384)
_AMBIGUOUS_SEP = (",", " ")
#: the m, n, k of a classic BLAS gemm call: (handle, opA, opB, m, n, k, ...)
_POS_DIMS = lazy_re(
    r"(?<![A-Za-z0-9_])(?:cublas|hipblas|rocblas_)[A-Za-z0-9_]*gemm[A-Za-z0-9_]*\s*\(\s*[^,()]+,\s*[^,()]+,"
    r"\s*[^,()]+,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*[,)]",
    re.IGNORECASE,
)
_CallStates = tuple[str | None, tuple[int | None, int | None, int | None] | None, bool, dict[str, int] | None]
_CALL_CACHE: dict[str, _CallStates] = {}
#: a call run several times over parts of the problem (`2x cublasLtMatmul(...)`)
_REPEATED = lazy_re(r"(?<![A-Za-z0-9_.])\d+\s*[x\u00d7]\s+[A-Za-z]")


def _call_states(call: str) -> tuple[str | None, tuple[int | None, int | None, int | None] | None, bool]:
    """What a baseline call states unambiguously (:func:`_call_read`, without the other
    readings of grouped numbers)."""
    return _call_read(call)[:3]


def _call_read(call: str) -> _CallStates:
    """What a baseline call states unambiguously: the dtype class of its BLAS routine
    (None where it names none, or routines of two precisions, or an sgemm under tf32), its
    (m, n, k) (None for one it does not name; None where it names none, or one of them twice
    with two values; a number with grouping separators read as one integer, `k=16.384` is
    16384), whether it is stated as run several times (`2x ...`: each run a part of the
    problem), and the other reading of a number grouped with a comma or a space (`k=16,384`:
    16), or None. Cached."""
    hit = _CALL_CACHE.get(call)
    if hit is not None:
        return hit
    text = call[:2000]
    classes = set()
    for ident in _IDENT.findall(text):
        m = _ROUTINE.fullmatch(ident)
        if m:
            classes.add(_ROUTINE_CLASS[m.group(1).lower()])
    dtype = classes.pop() if len(classes) == 1 else None
    if dtype == "fp32" and "tf32" in text.casefold():
        dtype = None  # sgemm under the TF32 math mode
    dims: dict[str, int] = {}
    m = _POS_DIMS.search(text)
    if m:
        dims = {"m": int(m.group(1)), "n": int(m.group(2)), "k": int(m.group(3))}
    clash = False
    alts: dict[str, int] | None = None
    for m in _KW_DIMS.finditer(text):
        sep = m.group(3)
        v = int(m.group(2).replace(sep, "")) if sep else int(m.group(2))
        for letter in re.findall(r"[mnkMNK]", m.group(1)):
            x = letter.lower()
            if dims.get(x, v) != v:
                clash = True
            dims[x] = v
            if sep in _AMBIGUOUS_SEP:
                if alts is None:
                    alts = {}
                alts[x] = int(m.group(2).split(sep, 1)[0])
    mnk = None if clash or not dims else (dims.get("m"), dims.get("n"), dims.get("k"))
    hit = (dtype, mnk, bool(_REPEATED.search(text)), alts)
    if len(_CALL_CACHE) < 1024 and len(call) <= 4 * CACHED_CHARS:
        _CALL_CACHE[call] = hit
    return hit


#: dtype enums of the vendor APIs (CUDA_R_16BF, HIP_R_8F_E4M3_FNUZ, rocblas_datatype_f16_r)
_ENUM_DTYPE = lazy_re(
    r"(?:cuda|hip|hipblas)_r_(?:(16bf|16b)|(16f)|(8f_e[45]m[23](?:_fnuz)?)|(8i)|(4f_e2m1))"
    r"|rocblas_datatype_(?:(bf16)|(f16)|(b?f8)|(i8))_r",
)
_ENUM_CLASS = ("bf16", "fp16", "fp8", "int8", "fp4", "bf16", "fp16", "fp8", "int8")
#: argument names whose dtype is not the inputs': accumulators, scales, bias, outputs
_NOT_INPUT = ("comput", "accum", "scale", "prefer", "bias", "out", "dst", "epilog", "param")
_KEY_BEFORE = lazy_re(r"([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*(?:[A-Za-z_][A-Za-z0-9_]*\.)*$")
#: a batch count in a call (`batch_count=2`, `batchCount=8`, `batch=4`)
_BATCH = lazy_re(
    r"(?<![A-Za-z0-9_])(?:batch(?:_?count|_?size)?|num_batches)\s*[=:]\s*(\d+)(?![\d.])", re.IGNORECASE
)
_CALL_MORE: dict[str, tuple[frozenset[str], int | None]] = {}
#: the 32- and 64-bit type names read as an operand's type
_WIDE_WORDS = frozenset({"fp32", "float32", "fp64", "float64"})
_PROSE_PRECISION = lazy_re(r"(?<![A-Za-z])(single|double)[\s_-]?precision(?![A-Za-z])", re.IGNORECASE)
_CLAUSE_END = lazy_re(r"[,;()\[\]]")


def _operand_word(text: str, start: int, end: int) -> bool:
    """Whether a type named at text[start:end] reads as an operand's: no argument name of
    a compute, accumulate, scale, bias or output type before it (`compute=fp32`), and no
    such word in its clause (`fp32 accumulate`, `accumulating in single precision`)."""
    k = _KEY_BEFORE.search(text, max(0, start - 40), start)
    if k is not None:
        key = k.group(1).casefold()
        if key in ("c", "d") or any(x in key for x in _NOT_INPUT):
            return False
    before = text[max(0, start - 40) : start]
    cuts = [m.end() for m in _CLAUSE_END.finditer(before)]
    if cuts:
        before = before[cuts[-1] :]
    after = text[end : end + 40]
    m = _CLAUSE_END.search(after)
    if m is not None:
        after = after[: m.start()]
    clause = (before + " " + after).casefold()
    return not any(x in clause for x in _NOT_INPUT)


#: an operand cast to a wider float type inside a call (after a name or an index: a cast of
#: the call's result, `f(a, b).float()`, follows a parenthesis and is not one)
_UPCAST = lazy_re(
    r"(?<=[\w\]])\.(?:float|double)\(\s*\)"
    r"|(?<=[\w\]])\.(?:to|type)\(\s*(?:dtype\s*=\s*)?torch\.(?:float32|float64|float|double|FloatTensor|DoubleTensor)\s*\)"
)


def _call_more(call: str) -> tuple[frozenset[str], int | None]:
    """More of what a baseline call states: the dtype classes of 16 bits or fewer it names
    for its operands (`bf16`, `fp8_e4m3`, `CUDA_R_16BF`, `torch.float16`; not the value of an
    argument named for the compute, accumulate, scale, bias or output type), and the batch
    count it names (None where it names none, or two). Cached."""
    hit = _CALL_MORE.get(call)
    if hit is not None:
        return hit
    text = call[:2000]
    named = set()
    for m in _IDENT.finditer(text):
        ident = m.group()
        if len(ident) > 64:
            continue
        c = dtype_class(ident)
        if c is None:
            e = _ENUM_DTYPE.fullmatch(ident.casefold())
            if e is None:
                continue
            c = _ENUM_CLASS[e.lastindex - 1]  # type: ignore[operator]
        if _WIDTH[c] > 16:
            # a 32- or 64-bit type is an operand's only where written as one (`fp32`,
            # `float64`; not `float`, `f32`) and away from a compute, accumulate, scale,
            # bias or output word (`fp32 accumulate`, `compute=f32`)
            if ident.casefold() in _WIDE_WORDS and _operand_word(text, m.start(), m.end()):
                named.add(c)
            continue
        k = _KEY_BEFORE.search(text, max(0, m.start() - 40), m.start())
        if k is not None:
            key = k.group(1).casefold()
            if key in ("c", "d") or any(x in key for x in _NOT_INPUT):
                continue
        named.add(c)
    if "recision" in text:
        # precision in prose: "single precision", "double-precision"
        for m in _PROSE_PRECISION.finditer(text):
            if _operand_word(text, m.start(), m.end()):
                named.add("fp64" if m.group(1).casefold() == "double" else "fp32")
    if "." in text:
        # operands cast up before the call (`a.float()`, `b.to(torch.float32)`): the call
        # then runs in that precision, whatever the tensors were
        for m in _UPCAST.finditer(text):
            named.add("fp64" if "64" in m.group() or "ouble" in m.group() else "fp32")
    batches = {int(x) for x in _BATCH.findall(text)}
    hit = (frozenset(named), batches.pop() if len(batches) == 1 else None)
    if len(_CALL_MORE) < 1024 and len(call) <= 4 * CACHED_CHARS:
        _CALL_MORE[call] = hit
    return hit


_GEMM_KEYS: dict[tuple[str, ...], tuple[str, str, str] | None] = {}


def _gemm_keys(dims: dict[str, Any]) -> tuple[str, str, str] | None:
    """The names a shape's dims give m, n and k (any case), or None where one is missing or
    two names differ only in case (`M` and `m`: which is the GEMM's cannot be told). Cached
    per name tuple."""
    keys = tuple(dims)
    hit: tuple[str, str, str] | None = _GEMM_KEYS.get(keys, _UNSET)
    if hit is not _UNSET:
        return hit
    folded: dict[str, str] = {}
    clash = False
    for k in keys:
        f = str(k).casefold()
        if f in folded:
            clash = True
        folded[f] = k
    hit = None
    if not clash and "m" in folded and "n" in folded and "k" in folded:
        hit = (folded["m"], folded["n"], folded["k"])
    if len(_GEMM_KEYS) < 1024 and sum(map(len, keys)) <= CACHED_CHARS:
        _GEMM_KEYS[keys] = hit
    return hit


def _call_problem(p: Any, t: Any, call: str, add: Add) -> None:
    """KE207: the dtype and the m, n, k a kernel baseline's call states against the
    candidate's dtypes and timed shape."""
    st = _CALL_CACHE.get(call)
    dtype, dims, repeated, alts = st if st is not None else _call_read(call)
    more = _CALL_MORE.get(call)
    named, batch = more if more is not None else _call_more(call)
    if dtype is None and dims is None and not named and batch is None:
        return
    task = p.task
    if dtype is not None or named:
        cd, cptr = cand(t, "dtypes")
        if not cd and task is not None and task.dtypes:
            cd, cptr = task.dtypes, "/task/dtypes"
        if not cd and t.baseline.conditions is not None and t.baseline.conditions.dtypes:
            cd, cptr = t.baseline.conditions.dtypes, _B + "dtypes"
        na = _narrowest(cd) if cd else None
        if na and na <= _WIDTH.keys():
            said = None
            if dtype is not None and dtype not in na and not (dtype == "fp32" and "tf32" in na):
                said = dtype
            elif named and not (named & na) and not ("fp32" in named and "tf32" in na):
                w = min(_WIDTH[c] for c in named)
                if w >= _WIDTH[next(iter(na))]:
                    said = ", ".join(sorted(c for c in named if _WIDTH[c] == w))
            if said is not None:
                add(
                    (
                        "KE207",
                        "/timing/baseline/call",
                        f"the baseline call is {said} (`{call.strip()[:60]}`), the candidate ran in "
                        f"{', '.join(sorted(na))} ({cptr})",
                    )
                )
                return
    if (dims is None and batch is None) or repeated:
        return
    # a tensor-parallel split gives each device a slice of the problem
    h = p.hardware
    if h is not None and h.count is not None and h.count > 1:
        return
    cc = t.conditions
    if cc is not None and cc.device_count is not None and cc.device_count > 1:
        return
    bc = t.baseline.conditions
    if bc is not None and bc.device_count is not None and bc.device_count > 1:
        return
    cdims = cc.dims if cc is not None else None
    if cdims is None and task is not None and task.shapes:
        sid, _ = cand(t, "shape_id")
        for sh in task.shapes:
            if sh.id == sid:
                cdims = sh.dims
                break
    if not cdims:
        return
    if batch is not None and batch > 1:
        mine = [v for k, v in cdims.items() if str(k).casefold() not in ("m", "n", "k")]
        if batch not in mine:
            add(
                (
                    "KE207",
                    "/timing/baseline/call",
                    f"the baseline call runs a batch of {batch} (`{call.strip()[:60]}`), the candidate's timed "
                    f"shape {'is batch ' + ', '.join(map(str, mine)) if mine else 'has no batch'}: more work on the baseline",
                )
            )
            return
    if dims is None:
        return
    names = _gemm_keys(cdims)
    if names is None:
        return  # not a GEMM's shape, or `M` and `m` both
    cm, cn, ck = cdims[names[0]], cdims[names[1]], cdims[names[2]]
    dm, dn, dk = dims
    if dm == cm and dn == cn and dk == ck:
        return  # the common case: the call states the timed shape
    if alts:
        # `k=16,384` may be k=16 before another argument: either reading may be the shape's
        if dk != ck and alts.get("k") == ck:
            dk = ck
        if dm not in (cm, cn) and alts.get("m") in (cm, cn):
            dm = alts["m"]
        if dn not in (cm, cn) and alts.get("n") in (cm, cn):
            dn = alts["n"]
    why = None
    if dk is not None and dk != ck:
        why = f"k={dk}, the candidate's timed shape k={ck}"
    elif dm is not None and dn is not None:
        if (dm != cm or dn != cn) and (dm != cn or dn != cm):
            why = f"m={dm}, n={dn}, the candidate's timed shape m={cm}, n={cn}"
    else:
        for x, v in (("m", dm), ("n", dn)):
            if v is not None and v != cm and v != cn:
                why = f"{x}={v}, the candidate's timed shape m={cm}, n={cn}"
    if why:
        add(("KE207", "/timing/baseline/call", f"the baseline call runs {why}: not the candidate's problem"))


# ---------------------------------------------------------------- handicaps in the call

#: cuBLAS's pedantic compute types and math mode: no tensor cores, no reduced precision
_PEDANTIC = lazy_re(r"cublas\w*?pedantic", re.IGNORECASE)
#: a workspace of zero bytes or a null workspace pointer (`workspaceSizeInBytes=0`,
#: `workspace=NULL`)
_WS_ZERO = lazy_re(
    r"(?<![A-Za-z0-9])(workspace\w*)\s*[=:]\s*(?:0x0+|0+|null|nullptr|none)(?![\w.])", re.IGNORECASE
)
_WS_SIZE = lazy_re(r"(?<![A-Za-z0-9])workspace\w*(?:size|bytes)\w*\s*[=:]\s*[1-9]", re.IGNORECASE)
#: a heuristic result other than the first forced (`heuristicResult[7]`, `algo index 7 of 8`)
_ALGO_AT = lazy_re(r"heuristic_?results?\s*\[\s*(\d+)\s*\]", re.IGNORECASE)
_ALGO_OF = lazy_re(
    r"algo(?:rithm)?s?\s*(?:index|idx|#|no\.?|number)\s*(\d+)\s*(?:of|/)\s*(\d+)", re.IGNORECASE
)
#: words of a baseline that chose its algorithm by timing them (the fastest is not the first)
_TUNED = lazy_re(r"fastest|autotun|auto-tun|best|tuned|sweep|search", re.IGNORECASE)
#: a copy made of an operand: a transpose made contiguous, a clone
_COPY = lazy_re(
    r"(?:\.t\(\s*\)|\.T\b|\.mT\b|\.(?:transpose|permute|swapaxes)\([^()]*\))\s*\.contiguous\(\s*\)|\.clone\(\s*\)"
)
#: words that put a copy outside the timed call
_OUTSIDE = lazy_re(
    r"before|outside|\bonce\b|pre-?comput|prepar|set-?up|untimed|not timed|ahead|exclud", re.IGNORECASE
)
#: a device-to-host copy or a host synchronisation (`.cpu()`, `.item()`, `.numpy()`,
#: `.tolist()`, `torch.cuda.synchronize()`): on an accelerator, inside the timed call, it
#: times the copy and the host's wait with the baseline
_HOST = lazy_re(r"\.(?:cpu|item|numpy|tolist)\(\s*\)|torch\.cuda\.synchronize\(\s*\)")
#: words that put a host copy after the timed call (`.cpu()` after timing)
_AFTER = lazy_re(r"\bafter\b", re.IGNORECASE)
#: words that put it inside
_INSIDE = lazy_re(
    r"inside the (?:timed|call)|in the timed|(?:each|every|per) (?:call|iteration|run|rep)|timed (?:region|loop|window)",
    re.IGNORECASE,
)
_DROPOUT = lazy_re(
    r"(?<![A-Za-z0-9_])(?:dropout_p|p_dropout|attn_dropout|dropout_rate|dropout)\s*[=:]\s*(\d*\.?\d+(?:e-?\d+)?)(?![\w.])",
    re.IGNORECASE,
)
#: attention probabilities materialised and returned (S written out)
_PROBS = lazy_re(
    r"(?<![A-Za-z0-9_])(return_attn_probs|return_softmax|need_weights|output_attentions)\s*[=:]\s*(?:true|1)(?![\w.])",
    re.IGNORECASE,
)
_CAUSAL = lazy_re(r"(?<![A-Za-z0-9_])(?:is_)?causal\s*[=:]\s*(true|false|1|0)(?![\w.])", re.IGNORECASE)
#: head counts and head sizes named as arguments
_HEAD_ARG = lazy_re(
    r"(?<![A-Za-z0-9_])(num_kv_heads|n_kv_heads|kv_heads|num_key_value_heads|nheads_k|num_heads_k|nheads_kv"
    r"|num_heads|n_heads|nheads|num_attention_heads|num_qo_heads|head_dim|headdim|head_size)\s*[=:]\s*(\d+)(?![\d.])",
    re.IGNORECASE,
)
_HEAD_KIND = {
    "num_kv_heads": "kv", "n_kv_heads": "kv", "kv_heads": "kv", "num_key_value_heads": "kv", "nheads_k": "kv",
    "num_heads_k": "kv", "nheads_kv": "kv", "num_heads": "q", "n_heads": "q", "nheads": "q",
    "num_attention_heads": "q", "num_qo_heads": "q", "head_dim": "d", "headdim": "d", "head_size": "d",
}  # fmt: skip
#: the extents written for q, k, v (`k[8,4096,32,128]`, `q: [8, 4096, 32, 128]`)
_QKV = lazy_re(
    r"(?<![A-Za-z0-9_.])(q|k|v|query|key|value)\s*[:=]?\s*\[\s*(\d+(?:\s*,\s*\d+){3})\s*\]", re.IGNORECASE
)
#: the extents of a tensor the call allocates or names (`torch.randn(32768, 8192)`, `x of [R, C]`)
_ALLOC = lazy_re(
    r"(?<![A-Za-z0-9_])(?:randn|rand|empty|zeros|ones|full|normal)\s*\(\s*[\[(]?\s*(\d+(?:\s*,\s*\d+){1,3})(?![\d.])"
    r"|(?<![A-Za-z0-9_.])(?:x|inp|input|hidden_states|hidden)\s*(?:of|:|=)?\s*(?:shape\s*)?\[\s*(\d+(?:\s*,\s*\d+){1,3})\s*\]",
    re.IGNORECASE,
)
#: XLA's six-pass fp32 matmul precision (`precision=jax.lax.Precision.HIGHEST`,
#: `jax_default_matmul_precision="highest"`)
_HIGHEST = lazy_re(
    r"precision\w*['\"]?\s*(?:[=:,]|\()\s*\(?\s*(?:[\w.]*precision\.|['\"])(?:highest|float32)(?![\w.])",
    re.IGNORECASE,
)

_HANDICAP_CACHE: dict[str, tuple[tuple[Any, ...], ...]] = {}


def _ints(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in s.split(","))


def _call_handicaps(call: str) -> tuple[tuple[Any, ...], ...]:
    """What a kernel baseline's call says that slows it whatever the problem, or sets its
    problem: cuBLAS's pedantic modes, a zero workspace, a forced heuristic result past the
    first, an operand copied inside the call, attention dropout, returned probabilities, its
    causal flag, head counts and q/k/v extents, the extents of a tensor it allocates, XLA's
    HIGHEST precision. Cached per call."""
    hit = _HANDICAP_CACHE.get(call)
    if hit is not None:
        return hit
    text = call[:2000]
    out: list[tuple[Any, ...]] = []
    m = _PEDANTIC.search(text)
    if m:
        out.append(("pedantic", m.group()))
    for m in _WS_ZERO.finditer(text):
        name = m.group(1).casefold()
        if "size" in name or "bytes" in name or not _WS_SIZE.search(text):
            out.append(("workspace", m.group()))
            break
    if not _TUNED.search(text):
        for m in _ALGO_AT.finditer(text):
            if int(m.group(1)) > 0:
                out.append(("algo", m.group()))
                break
        for m in _ALGO_OF.finditer(text):
            # 0- or 1-based: an index of 2 or more is past the first either way
            if int(m.group(1)) >= 2:
                out.append(("algo", m.group()))
                break
    if "." in text and not _OUTSIDE.search(text):
        inside = bool(_INSIDE.search(text))
        for m in _COPY.finditer(text):
            depth = text.count("(", 0, m.start()) - text.count(")", 0, m.start())
            if inside or depth > 0:
                out.append(("copy", m.group()))
                break
        m = _HOST.search(text)
        if m is not None and (inside or not _AFTER.search(text)):
            out.append(("host", m.group()))
    for m in _DROPOUT.finditer(text):
        if float(m.group(1)) > 0:
            out.append(("dropout", m.group()))
            break
    m = _PROBS.search(text)
    if m:
        out.append(("probs", m.group()))
    flags = {x.casefold() in ("true", "1") for x in _CAUSAL.findall(text)}
    if len(flags) == 1:
        out.append(("causal", flags.pop()))
    for m in _HEAD_ARG.finditer(text):
        out.append(("head", _HEAD_KIND[m.group(1).casefold()], int(m.group(2)), m.group()))
    for m in _QKV.finditer(text):
        out.append(("qkv", m.group(1).casefold()[0], _ints(m.group(2)), m.group()))
    for m in _ALLOC.finditer(text):
        out.append(("alloc", _ints(m.group(1) or m.group(2)), m.group()))
    m = _HIGHEST.search(text)
    if m:
        out.append(("highest", m.group()))
    hit = tuple(out)
    if len(_HANDICAP_CACHE) < 1024 and len(call) <= 4 * CACHED_CHARS:
        _HANDICAP_CACHE[call] = hit
    return hit


#: the names a shape's dims give attention's extents
_ATT_DIM = {
    "batch": "b", "b": "b", "batch_size": "b",
    "heads": "h", "h": "h", "num_heads": "h", "n_heads": "h", "nheads": "h", "q_heads": "h", "num_qo_heads": "h",
    "kv_heads": "hk", "num_kv_heads": "hk", "n_kv_heads": "hk", "nheads_k": "hk", "kv_head": "hk",
    "seq": "s", "s": "s", "seq_len": "s", "seqlen": "s", "seq_q": "s", "q_len": "s", "seqlen_q": "s",
    "seq_kv": "sk", "kv_seq": "sk", "seqlen_k": "sk", "seq_k": "sk", "kv_len": "sk", "seq_len_kv": "sk",
    "head_dim": "d", "d": "d", "headdim": "d", "dim_head": "d", "head_size": "d",
}  # fmt: skip
#: the names a norm's shape gives its rows and its normalised columns
_NORM_DIMS = (("rows", "cols"), ("tokens", "hidden"), ("rows", "hidden"), ("n_rows", "n_cols"), ("m", "n"))
_CAUSAL_DIMS = ("causal", "is_causal")


def _flag(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().casefold() in ("true", "false", "0", "1"):
        return v.strip().casefold() in ("true", "1")
    return None


def _handicapped_call(p: Any, t: Any, call: str, add: Add) -> None:
    """KE207: a kernel baseline's call that handicaps it or runs another problem than the
    candidate's (the items :func:`_call_handicaps` reads), against the candidate's dtypes
    and timed shape."""
    items = _HANDICAP_CACHE.get(call)
    if items is None:
        items = _call_handicaps(call)
    if not items:
        return
    task = p.task
    cd, _ = cand(t, "dtypes")
    if not cd and task is not None and task.dtypes:
        cd = task.dtypes
    na = _narrowest(cd) if cd else frozenset()
    width = max((_WIDTH[c] for c in na), default=None) if na and na <= _WIDTH.keys() else None
    why = None
    for it in items:
        kind = it[0]
        if kind == "pedantic" and width is not None and width <= 19:
            why = f"`{it[1]}`: cuBLAS without tensor cores, against a {'/'.join(sorted(na))} candidate"
        elif kind == "workspace":
            why = f"`{it[1]}`: no workspace, none of the split-K or stream-K kernels that need one"
        elif kind == "algo":
            why = f"`{it[1]}`: a heuristic result past the first forced, not the library's choice"
        elif kind == "copy":
            why = f"`{it[1]}`: an operand copied inside the timed call"
        elif kind == "host" and _on_accelerator(p):
            why = f"`{it[1]}`: a copy to the host or a host synchronisation inside the timed call"
        elif kind == "dropout":
            why = f"`{it[1]}`: dropout on the baseline, work the candidate's attention does not do"
        elif kind == "probs":
            why = f"`{it[1]}`: the attention probabilities written out, work the candidate does not do"
        elif kind == "highest" and width is not None and width <= 16:
            why = f"`{it[1]}`: XLA's multi-pass fp32 matmul, against a {'/'.join(sorted(na))} candidate"
        if why is not None:
            break
    if why is None:
        why = _call_extents(p, t, items)
    if why is not None:
        add(("KE207", "/timing/baseline/call", f"the baseline call states {why}"))


#: baselines that run on the host: their tensors are there already (`.numpy()` copies nothing)
_HOST_LIBRARIES = frozenset({"numpy", "openblas", "onemkl", "onednn"})


def _on_accelerator(p: Any) -> bool:
    """Whether the baseline ran on an accelerator: the hardware is a GPU's vendor's (or a
    device the table knows), and the provider is no host library."""
    h = p.hardware
    if h is None or h.vendor == "cpu":
        return False
    b = p.timing.baseline
    entry = baseline_entry(b.provider) if b.provider else None
    if entry is not None and entry.key in _HOST_LIBRARIES:
        return False
    return h.vendor in ("nvidia", "amd") or (bool(h.device) and _accelerator(h.device))


def _call_extents(p: Any, t: Any, items: tuple[tuple[Any, ...], ...]) -> str | None:
    """The causal flag, head counts and tensor extents a call states against the
    candidate's timed dims (not across devices: a split gives each device a part)."""
    if not any(it[0] in ("causal", "head", "qkv", "alloc") for it in items):
        return None
    h = p.hardware
    if h is not None and h.count is not None and h.count > 1:
        return None
    cc = t.conditions
    bc = t.baseline.conditions
    for c in (cc, bc):
        if c is not None and c.device_count is not None and c.device_count > 1:
            return None
    cdims = cc.dims if cc is not None else None
    if not cdims:
        sid, _ = cand(t, "shape_id")
        cdims = _shape_dims(p.task, sid)
    if not cdims or len(cdims) > 32:
        return None
    att: dict[str, Any] = {}
    folded: dict[str, Any] = {}
    for k, v in cdims.items():
        f = str(k).casefold()
        folded[f] = v
        a = _ATT_DIM.get(f)
        if a is not None and isinstance(v, int) and not isinstance(v, bool):
            att[a] = v
    for it in items:
        kind = it[0]
        if kind == "causal":
            mine = next((_flag(folded[x]) for x in _CAUSAL_DIMS if x in folded), None)
            if mine is not None and mine != it[1]:
                return (
                    f"causal={it[1]}, the candidate's timed dims causal={int(mine)}: another amount of work"
                )
        elif kind == "head":
            want = att.get("hk", att.get("h")) if it[1] == "kv" else att.get("h" if it[1] == "q" else "d")
            if want is not None and it[2] != want:
                name = {"kv": "kv_heads", "q": "heads", "d": "head_dim"}[it[1]]
                return f"`{it[3]}`, the candidate's timed dims {name}={want}: another problem"
        elif kind == "qkv" and "b" in att and "h" in att and "s" in att and "d" in att:
            if it[1] == "q":
                want = (att["b"], att["s"], att["h"], att["d"])
            else:
                want = (att["b"], att.get("sk", att["s"]), att.get("hk", att["h"]), att["d"])
            if sorted(it[2]) != sorted(want):
                return (
                    f"`{it[3]}`, the candidate's timed dims give {it[1]} the extents "
                    f"{', '.join(map(str, want))}: another problem"
                )
        elif kind == "alloc":
            for rk, ck in _NORM_DIMS:
                r, c = folded.get(rk), folded.get(ck)
                if not (isinstance(r, int) and isinstance(c, int)) or (rk == "m" and "k" in folded):
                    continue
                ext = it[1]
                rows = 1
                for x in ext[:-1]:
                    rows *= x
                if rows != r or ext[-1] != c:
                    return f"`{it[2]}`, the candidate's timed shape {rk}={r}, {ck}={c}: another problem"
                break
    return None


def _devices_and_timers(t: Any, b: Any, bc: Any, cc: Any, h: Any, add: Add) -> None:
    """KE207/KE208: the baseline's device, device count, timer, clock policy and
    synchronisation against the candidate's."""
    bid = bc.device_id
    cid = cc.device_id if cc is not None and cc.device_id else (h.device_id if h is not None else None)
    if bid and cid and bid != cid:
        add(("KE207", _B + "device_id", f"baseline ran on `{bid}`, the candidate on `{cid}`"))
    elif bc.device:
        cdev = cc.device if cc is not None and cc.device else (h.device if h is not None else None)
        if cdev and bc.device != cdev:
            why = _other_device(bc.device, cdev, bid, cid, b.same_session is True)
            if why is not None:
                add(
                    ("KE207", _B + "device", f"baseline ran on `{bc.device}`, the candidate on `{cdev}`{why}")
                )
    if (
        bc.device_count is not None
        and cc is not None
        and cc.device_count is not None
        and bc.device_count != cc.device_count
    ):
        add(
            (
                "KE207",
                _B + "device_count",
                f"baseline ran on {bc.device_count} device(s), the candidate on {cc.device_count}",
            )
        )
    elif bc.device_count is None and cc is not None and cc.device_count is not None and cc.device_count > 1:
        add(
            (
                "KE207",
                _B + "device_count",
                f"the candidate ran on {cc.device_count} devices and the baseline's conditions do not say on how "
                "many it ran: the sides cannot be shown alike",
            )
        )
    # -- KE208: timed the same way
    m, mptr = cand(t, "method")
    bm = bc.method
    if bm is not None and m is not None and bm != m:
        ka, kb = _TIMER_KIND.get(m), _TIMER_KIND.get(bm)
        if ka and kb and ka != kb:
            # kernel durations against call times: the side timed without its launch
            ptr = mptr if ka == "kernel" and kb == "call" else _B + "method"
            what = (
                ": one times the kernels alone, the other each call with its launch"
                if {ka, kb} == {"kernel", "call"}
                else ": they time different things"
            )
            add(("KE208", ptr, f"baseline timed with {bm}, the candidate with {m} ({mptr}){what}"))
        elif ka is None or kb is None:  # `other` on one side: nothing shows it times what the other does
            ptr = mptr if ka is None else _B + "method"
            add(
                (
                    "KE208",
                    ptr,
                    f"the {'candidate' if ka is None else 'baseline'} was timed with `{m if ka is None else bm}`, the "
                    f"other side with {bm if ka is None else m}: the sides cannot be shown timed alike",
                )
            )
    cp, cp_ptr = cand(t, "clock_policy")
    bp = bc.clock_policy
    if cp is not None and bp is not None and cp != bp:
        if cp == "unknown" or bp == "unknown":
            ptr = cp_ptr if cp == "unknown" else _B + "clock_policy"
            add(
                (
                    "KE208",
                    ptr,
                    f"the candidate's clock_policy is {cp}, the baseline's {bp}: "
                    f"the {'candidate' if cp == 'unknown' else 'baseline'} may have run at other clocks",
                )
            )
        else:
            ptr = cp_ptr if cp == "unlocked" else _B + "clock_policy"
            add(
                (
                    "KE208",
                    ptr,
                    f"the candidate ran with clocks {cp}, the baseline {bp}: a boosting side against a pinned one",
                )
            )
    s, sync_ptr = cand(t, "synchronized")
    if bc.synchronized is not None and s is not None and bc.synchronized != s:
        ptr = sync_ptr if s is False else _B + "synchronized"
        who = "candidate" if s is False else "baseline"
        add(
            (
                "KE208",
                ptr,
                f"the {who} was timed without synchronising, the other side with it: its time misses work still running",
            )
        )


def _windows_and_session(b: Any, bc: Any, cc: Any, add: Add) -> None:
    """KE208: a flush inside one side's timed window only, CUDA-graph replays on one side
    only, and two sessions beside same_session."""
    bcache = bc.cache
    cache = cc.cache if cc is not None else None
    if bcache is not None and cache is not None:
        fa, fb = cache.flush_in_timed_window, bcache.flush_in_timed_window
        if fa is not None and fb is not None and fa != fb:
            ptr = (
                "/timing/conditions/cache/flush_in_timed_window" if fa else _B + "cache/flush_in_timed_window"
            )
            add(
                (
                    "KE208",
                    ptr,
                    f"the {'candidate' if fa else 'baseline'}'s cache flush sits inside its timed window, the other side's does not",
                )
            )
        ga, gb = cache.cuda_graph_replays or 0, bcache.cuda_graph_replays or 0
        if (ga > 0) != (gb > 0):
            ptr = "/timing/conditions/cache/cuda_graph_replays" if ga else _B + "cache/cuda_graph_replays"
            add(
                (
                    "KE208",
                    ptr,
                    f"the {'candidate' if ga else 'baseline'} was replayed from a CUDA graph ({max(ga, gb)} replays), the other side launched eagerly",
                )
            )
    if b.same_session is True and bc.session and cc is not None and cc.session and bc.session != cc.session:
        add(
            (
                "KE208",
                _B + "session",
                f"same_session is true but the baseline's session `{bc.session}` is not the candidate's `{cc.session}`",
            )
        )


def _interleaved(t: Any, b: Any, bc: Any, cc: Any, add: Add) -> None:
    """KE208: interleaved stated true beside conditions that record it false."""
    said = b.interleaved is True or t.interleaved is True
    if said and (bc.interleaved is False or (cc is not None and cc.interleaved is False)):
        ptr = "/timing/baseline/interleaved" if b.interleaved is True else "/timing/interleaved"
        add(
            (
                "KE208",
                ptr,
                "interleaved is stated true but the conditions record the sides were not interleaved",
            )
        )


def _dims(cdims: dict[str, Any], bdims: dict[str, Any], add: Add) -> bool:
    """KE207: the first dimension the baseline ran with that differs from the candidate's
    (names compared case-insensitively); True when one was found."""
    folded = {str(k).casefold(): v for k, v in cdims.items()}
    for k, v in bdims.items():
        w = folded.get(k.casefold())
        if w is not None and w != v:
            esc = k.replace("~", "~0").replace("/", "~1")
            add(("KE207", _B + "dims/" + esc, f"baseline ran with {k}={v}, the candidate with {k}={w}"))
            return True
    return False


_FOLD_CLASH: dict[tuple[str, ...], bool] = {}


def _fold_clash(dims: dict[str, Any]) -> bool:
    """True when two dimension names differ only in case (cached per name tuple: a batch
    repeats a few): equal dims can then still differ once the names are casefolded."""
    keys = tuple(dims)
    hit = _FOLD_CLASH.get(keys)
    if hit is None:
        hit = len({k.casefold() for k in keys}) != len(keys)
        if len(_FOLD_CLASH) < 1024 and sum(map(len, keys)) <= CACHED_CHARS:
            _FOLD_CLASH[keys] = hit
    return hit


def _llc(p: Any, c: Any) -> float | None:
    """The last-level cache a flush must cover, in bytes: the largest of what the side's
    conditions, the hardware block and the device table say (an understated cache size
    does not make a small flush evict)."""
    return _side_llc(c, _hardware_llc(p))


def _side_llc(c: Any, hw: float | None) -> float | None:
    """The larger of a side's own last-level cache and ``hw`` (`_hardware_llc`; the side's
    first where equal), None where neither is known."""
    if c.last_level_cache is None:
        return hw
    own: float = c.last_level_cache.value * _FACTOR[c.last_level_cache.unit]
    return own if hw is None else max(own, hw)


def _hardware_llc(p: Any) -> float | None:
    """The larger of the hardware block's and the device table's last-level cache (the
    block's first where equal), None where neither gives one."""
    sizes = []
    h = p.hardware
    if h is not None:
        if h.last_level_cache is not None:
            sizes.append(h.last_level_cache.value * _FACTOR[h.last_level_cache.unit])
        table = _table_llc(h.device_id or h.device) if (h.device_id or h.device) else None
        if table:
            sizes.append(table)
    return max(sizes) if sizes else None


def _table_llc(name: str) -> float | None:
    """The device table's last-level cache of a device id or name (the least among the
    models a name can be; None unless every one of them gives it), cached."""
    hit = _LLC_CACHE.get(name, _UNSET)
    if hit is not _UNSET:
        return hit  # type: ignore[no-any-return]
    from ..devices import candidates, device

    if len(name) > CACHED_CHARS:
        return None
    e = device(name)
    found = (e,) if e is not None else candidates(name)
    sizes = [x.last_level_cache_bytes for x in found if x.last_level_cache_bytes]
    llc = min(sizes) if sizes and len(sizes) == len(found) else None
    if len(_LLC_CACHE) < 4096:
        _LLC_CACHE[name] = llc
    return llc


_LLC_CACHE: dict[str, float | None] = {}
_UNSET: Any = object()


def small_flush(p: Any, c: Any) -> bool | None:
    """Whether a cache recorded as flushed was flushed with less than the last-level cache
    (None when it cannot be told)."""
    if c is None or c.mode != "flushed" or c.flush_bytes is None:
        return None
    llc = _llc(p, c)
    if llc is None:
        return None
    return bool(c.flush_bytes.value * _FACTOR[c.flush_bytes.unit] < llc)


def small_rotation(p: Any, c: Any) -> bool | None:
    """Whether a cache recorded as rotating cycled through too little to leave the cache: one
    buffer, or buffers x the timed shape's bytes below the last-level cache (None when it
    cannot be told)."""
    if c is None or c.mode != "rotating" or c.rotating_buffers is None:
        return None
    if c.rotating_buffers < 2:
        return True
    t, task = p.timing, p.task
    sid = t.shape_id if t is not None else None
    if not sid or task is None or not task.shapes:
        return None
    sh = next((x for x in task.shapes if x.id == sid), None)
    by = sh.work.bytes if sh is not None and sh.work is not None else None
    llc = _llc(p, c) if by is not None else None
    if by is None or llc is None:
        return None
    return bool(c.rotating_buffers * by.value * _FACTOR[by.unit] < llc)


def _flushes(p: Any, ca: Any, cb: Any, add: Add) -> None:
    """KE208: a flush smaller than the last-level cache evicts nothing, nor does a rotation
    through buffers that fit in it: that side's caches were warm while it says evicted."""
    hw: Any = _UNSET  # the hardware's last-level cache, read once for both sides
    for c, ptr, who in (
        (ca, "/timing/conditions/cache/", "candidate"),
        (cb, _B + "cache/", "baseline"),
    ):
        if c is not None and c.mode == "flushed" and c.flush_bytes is not None:
            # small_flush inline (a flushed side is not rotating: small_rotation is None)
            if hw is _UNSET:
                hw = _hardware_llc(p)
            llc = _side_llc(c, hw)
            if llc is not None and c.flush_bytes.value * _FACTOR[c.flush_bytes.unit] < llc:
                add(
                    (
                        "KE208",
                        ptr + "flush_bytes",
                        f"the {who}'s flush is smaller than the last-level cache: it evicts nothing, so its caches were warm",
                    )
                )
        elif small_rotation(p, c):
            add(
                (
                    "KE208",
                    ptr + "rotating_buffers",
                    f"the {who} rotates through {c.rotating_buffers} input buffer(s) that fit in the last-level cache: its caches were warm",
                )
            )


def _same_requests(cs: Any, bs: Any, add: Add) -> None:
    """KE207 for serving: the baseline's requests as long as the candidate's (input tokens
    per completed request within 10%, output tokens within 20%: an engine may stop at EOS
    a little earlier)."""
    for field, what, slack in (("total_input_tokens", "input", 1.1), ("total_output_tokens", "output", 1.2)):
        a, b = getattr(cs, field), getattr(bs, field)
        if a is None or b is None or not cs.completed or not bs.completed:
            continue
        pa, pb = a / cs.completed, b / bs.completed
        if pa > 0 and pb > 0 and max(pa, pb) > slack * min(pa, pb):
            add(
                (
                    "KE207",
                    f"/timing/baseline/serving/{field}",
                    f"the baseline served {pb:.0f} {what} tokens per request, the candidate {pa:.0f}: not the same workload",
                )
            )


#: an observed peak concurrency below this share of the one the benchmark drives is a
#: client that held its requests back (a rounded mean of a sampled peak is a little less)
_OBSERVED_SHARE = 0.8


def _observed_concurrency(st: Any, bs: Any, add: Add) -> None:
    """KE207 for serving: with every request sent at once (`request_rate` inf or unstated),
    the baseline's client had as many requests in flight as the benchmark's
    `max_concurrency` allows (or all of them, where there are fewer)."""
    rate = st.request_rate
    if rate is not None and not (
        (isinstance(rate, str) and rate.strip().casefold() in ("inf", "infinity"))
        or (isinstance(rate, float) and rate == float("inf"))
    ):
        return  # requests that arrive over time: fewer in flight is the arrival rate
    conc = st.max_concurrency
    if not isinstance(conc, (int, float)) or isinstance(conc, bool) or conc <= 0:
        return
    n = st.num_prompts if isinstance(st.num_prompts, int) else None
    if bs.completed is not None:
        sent = bs.completed + (bs.failed or 0)
        n = sent if n is None else min(n, sent)
    top = min(conc, n) if n else conc
    seen = bs.max_concurrent_requests
    if seen < _OBSERVED_SHARE * top:
        add(
            (
                "KE207",
                "/timing/baseline/serving/max_concurrent_requests",
                f"the baseline's client had at most {seen} requests in flight, the benchmark's "
                f"max_concurrency {conc:g} over {n if n is not None else 'its'} requests: a baseline driven at lower load",
            )
        )


#: the workload a serving baseline's settings may restate: task.serving field -> setting names
_WORKLOAD = (
    ("model", ("model",)),
    ("dataset", ("dataset", "dataset_name")),
    ("num_prompts", ("num_prompts",)),
    ("input_len", ("input_len", "random_input_len")),
    ("output_len", ("output_len", "random_output_len")),
    ("max_concurrency", ("max_concurrency",)),
    ("request_rate", ("request_rate",)),
)


_WORKLOAD_NAMES = frozenset(n for _, names in _WORKLOAD for n in names)
_SETTING_NAMES: dict[str, str] = {}


def _setting_name(k: str) -> str:
    """A setting's name as compared: no case, no leading dashes, `-` as `_` (cached)."""
    hit = _SETTING_NAMES.get(k)
    if hit is None:
        hit = k.strip().lstrip("-").casefold().replace("-", "_")
        if len(_SETTING_NAMES) < 4096 and len(k) <= CACHED_CHARS:
            _SETTING_NAMES[k] = hit
    return hit


#: engine capacity settings a baseline may not have less of than the candidate: compared
#: name -> the group of names that say the same across engines (vLLM, SGLang)
_CAPACITY = {
    "max_num_seqs": 0, "max_running_requests": 0,
    "max_num_batched_tokens": 1,
    "gpu_memory_utilization": 2, "mem_fraction_static": 2,
    "num_gpu_blocks_override": 3,
    "kv_cache_memory": 4, "kv_cache_memory_bytes": 4,
    "max_total_tokens": 5,
    "cuda_graph_max_bs": 6, "cuda_graph_sizes": 6, "cudagraph_capture_sizes": 6,
    "max_cudagraph_capture_size": 6,
    "max_seq_len_to_capture": 7,
}  # fmt: skip
#: capacity settings whose value is a list of sizes (the largest is the capacity)
_SIZE_LISTS = frozenset({"cuda_graph_sizes", "cudagraph_capture_sizes"})
#: an engine's prefix on a setting's name (`VLLM_ATTENTION_BACKEND` is `attention_backend`)
_ENGINE_PREFIXES = ("vllm_", "sglang_")
#: settings that turn CUDA graphs off
_EAGER = frozenset({"enforce_eager", "disable_cuda_graph"})
_BY_NAME: dict[tuple[str, ...], tuple[dict[str, str], dict[int, str], str | None]] = {}
#: `_by_name` of no settings
_NO_NAMES: tuple[dict[str, str], dict[int, str], str | None] = ({}, {}, None)


def _by_name(settings: dict[str, Any]) -> tuple[dict[str, str], dict[int, str], str | None]:
    """The settings' names as written: by their compared names (the first spelling of a
    name given twice), by capacity group (`_CAPACITY`), and the one that turns CUDA graphs
    off. Cached per name tuple: a batch repeats a few settings blocks."""
    keys = tuple(settings)
    hit = _BY_NAME.get(keys)
    if hit is None:
        names: dict[str, str] = {}
        groups: dict[int, str] = {}
        eager = None
        for k in keys:
            n = _setting_name(k)
            names.setdefault(n, k)
            if n.startswith(_ENGINE_PREFIXES):
                n = n.split("_", 1)[1]
                names.setdefault(n, k)
            g = _CAPACITY.get(n)
            if g is not None:
                groups.setdefault(g, k)
            elif eager is None and n in _EAGER:
                eager = k
        hit = (names, groups, eager)
        if len(_BY_NAME) < 1024 and sum(map(len, keys)) <= 4 * CACHED_CHARS:
            _BY_NAME[keys] = hit
    return hit


_TWICE: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}


def _twice(settings: dict[str, Any], ptr: str, add: Add) -> None:
    """KE207: one setting given twice under names that compare equal (`max-num-seqs` and
    `max_num_seqs`) with two values: an engine's command line takes the last, a reader the
    first. The name tuples are cached: a batch repeats a few settings blocks."""
    keys = tuple(settings)
    pairs = _TWICE.get(keys)
    if pairs is None:
        first: dict[str, str] = {}
        found = []
        for k in keys:
            n = _setting_name(k)
            if n in first:
                found.append((first[n], k))
            else:
                first[n] = k
        pairs = tuple(found)
        if len(_TWICE) < 1024 and sum(map(len, keys)) <= 4 * CACHED_CHARS:
            _TWICE[keys] = pairs
    for a, b in pairs:
        if not _same_value(settings[a], settings[b]):
            add(
                (
                    "KE207",
                    ptr + _esc(b),
                    f"setting {b} {str(settings[b])[:40]} beside {a} {str(settings[a])[:40]}: one setting "
                    "given twice with two values (an engine takes the last, a reader the first)",
                )
            )
            return


#: settings that handicap the engine they are given to, on the baseline only
_DTYPE_SETTINGS = ("dtype", "torch_dtype")
_BACKEND_SETTINGS = ("attention_backend", "vllm_attention_backend", "attn_backend")
#: attention backends that are a fallback, not what an engine picks on a datacenter GPU
_SLOW_BACKENDS = frozenset(
    {"torch_sdpa", "sdpa", "torch_native", "torch", "naive", "math", "eager", "xformers"}
)
_NO_BACKEND = ("", "auto", "default", "none")
_BACKEND_ENV = ("VLLM_ATTENTION_BACKEND", "SGLANG_ATTENTION_BACKEND")


def _handicaps(
    p: Any,
    st: Any,
    settings: dict[str, Any],
    ms: dict[str, Any],
    theirs_by: dict[str, str],
    mine_by: dict[str, str],
    hn: frozenset[str],
    add: Add,
) -> bool:
    """KE207 for serving: baseline-only settings that slow its engine: a dtype wider than the
    candidate's (float32 against bf16), weights offloaded to the CPU beyond the candidate's,
    beam search, best_of, parallel sampling (`n`) or a scheduler delay above the candidate's,
    an attention backend forced where the candidate's engine chose its own, and the engine
    capacity or optimisations (`_engine_off`) the candidate's default has. True when one was
    found. ``ms`` is the candidate's settings (CLI strings split), ``mine_by`` its names;
    ``hn`` the names of `_HANDICAP_NAMES` the baseline states: each check reads a setting the
    baseline states, so one whose names it states none of is skipped (it would find nothing)."""

    def flag(key: str, what: str) -> bool:
        add(
            (
                "KE207",
                _SETTINGS + _esc(key),
                f"the baseline's engine ran with {key} {str(settings[key])[:40]}{what}",
            )
        )
        return True

    for n in _DTYPE_SETTINGS if not hn.isdisjoint(_DTYPE_SETTINGS) else ():
        key = theirs_by.get(n)
        if key is None:
            continue
        v = settings[key]
        if not isinstance(v, str) or len(v) > 64:
            continue
        c = dtype_class(v)
        if c is None:
            continue
        mk = mine_by.get(n)
        mv = ms[mk] if mk is not None else None
        mc = dtype_class(mv) if isinstance(mv, str) and len(mv) <= 64 else None
        if mc is not None:
            mine = frozenset({mc})
        else:
            cd, _ = cand(p.timing, "dtypes")
            if not cd and p.task is not None and p.task.dtypes:
                cd = p.task.dtypes
            mine = _narrowest(cd) if cd else frozenset()
        if mine and mine <= _WIDTH.keys() and _WIDTH[c] > _WIDTH[next(iter(mine))]:
            return flag(key, f", the candidate in {', '.join(sorted(mine))}: a wider, slower precision")
    for n, default, what in _MORE_WORK if not hn.isdisjoint(_MORE_WORK_NAMES) else ():
        key = theirs_by.get(n)
        if key is None:
            continue
        vb = _number(settings[key])
        mk = mine_by.get(n)
        va = _number(ms[mk]) if mk is not None else default
        if vb is not None and va is not None and vb > va:
            return flag(key, f", the candidate's {va:g}{what}")
    key = theirs_by.get("use_beam_search")
    if key is not None and _truthy(settings[key]):
        mk = mine_by.get("use_beam_search")
        if mk is None or not _truthy(ms[mk]):
            return flag(key, ", the candidate without: several beams decoded per request")
    # capacity the candidate does not state is the engine's default (the comparison of two
    # stated values is _same_workload's): vLLM's gpu_memory_utilization is 0.9 in every
    # release; sequences in flight below the benchmark's own concurrency queue its requests
    key = theirs_by.get("gpu_memory_utilization")
    if key is not None and mine_by.get("gpu_memory_utilization") is None:
        vb = _number(settings[key])
        if vb is not None and 0 < vb < _GPU_MEMORY_FLOOR:
            return flag(key, ", the candidate at the engine's default 0.9: less memory for its KV cache")
    key = theirs_by.get("max_num_seqs") or theirs_by.get("max_running_requests")
    if (
        key is not None
        and mine_by.get("max_num_seqs") is None
        and mine_by.get("max_running_requests") is None
    ):
        vb = _number(settings[key])
        conc = st.max_concurrency
        if vb is not None and isinstance(conc, (int, float)) and 0 < vb < conc:
            return flag(
                key, f", below the benchmark's max_concurrency {conc:g}: its requests queued in the engine"
            )
    for n in _BACKEND_SETTINGS if not hn.isdisjoint(_BACKEND_SETTINGS) else ():
        key = theirs_by.get(n)
        if key is None or str(settings[key]).strip().casefold() in _NO_BACKEND:
            continue
        if str(settings[key]).strip().casefold().replace("-", "_") not in _SLOW_BACKENDS:
            continue  # a fast backend recorded on one side (the engine's default, written out)
        if any(mine_by.get(x) is not None for x in _BACKEND_SETTINGS):
            continue
        env = p.replay.env if p.replay is not None else None
        if env and any(x in env for x in _BACKEND_ENV):
            continue  # the candidate's backend set through its environment
        return flag(key, ", forced on the baseline alone: the candidate's engine chose its own")
    return _engine_off(st, settings, ms, theirs_by, mine_by, hn, flag)


#: baseline settings above the candidate's (or the engine's default) that add work
_MORE_WORK = (
    ("cpu_offload_gb", 0.0, ": weights held in host memory"),
    ("best_of", 1.0, ": more sequences decoded per request"),
    ("n", 1.0, ": more completions generated per request (one counted)"),
    ("scheduler_delay_factor", 0.0, ": the scheduler waits between steps"),
)
_MORE_WORK_NAMES = tuple(n for n, _, _ in _MORE_WORK)


#: settings that set vLLM's compilation level (`-O0`, `compilation_config: 0`)
_LEVEL_SETTINGS = ("compilation_config", "o", "optimization_level", "o0")
_LEVEL_IN = lazy_re(r"^\s*(?:-?-?o\s*=?\s*)?(\d)\s*$|[\"']?(?:level|mode)[\"']?\s*[:=]\s*[\"']?(\d|none)\b")
#: vLLM's KV cache block, in tokens, where the settings state none
_BLOCK_TOKENS = 16
#: the largest captured batch no engine's default on a datacenter GPU goes below
_GRAPH_FLOOR = 64
#: vLLM's default max_seq_len_to_capture
_CAPTURE_LEN = 8192


def _level(name: str, v: Any) -> int | None:
    """The compilation level a setting states (0 for `-O0`, `compilation_config: 0`, or a
    JSON config whose `level`/`mode` is 0 or none), None where it states none."""
    if name == "o0":
        return 0 if v is None or v == "" or _truthy(v) else None
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return int(v)
    if not isinstance(v, str) or len(v) > 256:
        return None
    m = _LEVEL_IN.search(v.casefold())
    if m is None:
        return None
    x = m.group(1) or m.group(2)
    return 0 if x == "none" else int(x)


def _stated_level(settings: dict[str, Any], by: dict[str, str]) -> tuple[str | None, int | None]:
    for n in _LEVEL_SETTINGS:
        key = by.get(n)
        if key is not None:
            lv = _level(n, settings[key])
            if lv is not None:
                return key, lv
    return None, None


def _capacity(name: str, v: Any) -> float | None:
    """A capacity setting's value as a number: the largest of a list of sizes written as a
    string (`"[1, 2, 4]"`, `"1 2 4"`), else the number it states."""
    if isinstance(v, str) and _setting_name(name) in _SIZE_LISTS:
        xs = [float(x) for x in _NUMBERS.findall(v[:1024]) if "." not in x]
        return max(xs) if xs else None
    return _number(v)


def _engine_off(
    st: Any,
    settings: dict[str, Any],
    ms: dict[str, Any],
    theirs_by: dict[str, str],
    mine_by: dict[str, str],
    hn: frozenset[str],
    flag: Callable[[str, str], bool],
) -> bool:
    """KE207 for serving, baseline-only: less KV cache than the benchmark's concurrency
    needs for its prompts, CUDA graphs captured for fewer sequences (or shorter ones) than
    the benchmark runs, compilation off (`-O0`), chunked prefill off against the candidate's
    on, where the candidate states none of these (two stated values are compared in
    `_same_workload`). ``hn`` as in `_handicaps`: a check of names the baseline does not
    state is skipped."""
    conc = st.max_concurrency
    prompts = st.num_prompts
    if isinstance(conc, (int, float)) and not isinstance(conc, bool) and conc > 0:
        if isinstance(prompts, int) and 0 < prompts < conc:
            conc = prompts
    else:
        conc = None
    ilen, olen = st.input_len, st.output_len
    if conc is not None and isinstance(ilen, int) and ilen > 0 and not hn.isdisjoint(_KV_NAMES):
        need = conc * ilen
        for n, per in (("num_gpu_blocks_override", "block_size"), ("max_total_tokens", None)):
            key = theirs_by.get(n)
            if key is None or mine_by.get(n) is not None:
                continue
            v = _number(settings[key])
            if v is None or v <= 0:
                continue
            size = 1.0
            if per is not None:
                bk = theirs_by.get(per)
                size = (_number(settings[bk]) if bk is not None else None) or _BLOCK_TOKENS
            if v * size < need:
                return flag(
                    key,
                    f" ({v * size:g} tokens of KV cache), below the {need:g} tokens of the benchmark's "
                    f"{conc:g} concurrent prompts of {ilen}: its requests preempted or queued",
                )
    if not hn.isdisjoint(_GRAPH_NAMES) and not any(mine_by.get(n) is not None for n in _GRAPH_NAMES):
        for n in _GRAPH_NAMES:
            key = theirs_by.get(n)
            if key is None:
                continue
            v = _capacity(n, settings[key])
            if n == "max_seq_len_to_capture":
                if isinstance(ilen, int) and isinstance(olen, int):
                    top = min(ilen + olen, _CAPTURE_LEN)
                    if v is not None and 0 < v < top:
                        return flag(
                            key,
                            f", below the benchmark's {top} tokens a sequence: its steps run without CUDA graphs",
                        )
            elif conc is not None and v is not None and 0 < v < min(conc, _GRAPH_FLOOR):
                return flag(
                    key,
                    f", below the benchmark's max_concurrency {conc:g}: its larger batches run without CUDA graphs",
                )
    key, lv = _stated_level(settings, theirs_by) if not hn.isdisjoint(_LEVEL_SETTINGS) else (None, None)
    if key is not None and lv == 0:
        _, mlv = _stated_level(ms, mine_by)
        if mlv != 0:
            said = f"level {mlv}" if mlv is not None else "the engine's default"
            return flag(
                key, f" (compilation level 0: no torch.compile, no CUDA graphs), the candidate's {said}"
            )
    key = theirs_by.get("enable_chunked_prefill")
    if key is not None and _off_flag(settings[key]):
        mk = mine_by.get("enable_chunked_prefill")
        if mk is not None and _truthy(ms[mk]):
            return flag(key, f", the candidate's {mk} {ms[mk]}: chunked prefill on the candidate alone")
    return False


_KV_NAMES = ("num_gpu_blocks_override", "max_total_tokens")
_GRAPH_NAMES = (
    "cuda_graph_max_bs", "cuda_graph_sizes", "cudagraph_capture_sizes", "max_cudagraph_capture_size",
    "max_seq_len_to_capture",
)  # fmt: skip


def _off_flag(v: Any) -> bool:
    """Whether a flag setting is stated off (`false`, 0, "false", "no", "off")."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v == 0
    return isinstance(v, str) and v.strip().casefold() in ("false", "0", "no", "off")


def _same_workload(p: Any, st: Any, settings: dict[str, Any], add: Add) -> None:
    """KE207 for serving: a setting of the baseline that restates the workload (model,
    dataset, prompts, lengths, concurrency, request rate) says what the candidate's task
    does, and the baseline's engine was given no less capacity than the candidate's
    (`task.serving.settings`): fewer sequences or batched tokens, less memory, CUDA graphs
    off on the baseline only, and no handicap of its own (`_handicaps`). A setting whose
    value is a command line (`extra_args: "--max-num-seqs 16 --enforce-eager"`) is read as
    the settings it gives, each judged as one (the finding points at the setting)."""
    ms = st.settings or {}
    if _cli_in(settings) or (ms and _cli_in(ms)):
        settings, where = _split_cli(settings, _SETTINGS)
        ms, where_c = _split_cli(ms, _TASK_SETTINGS)
        where.update(where_c)
        outer = add

        def add(f: tuple[str, str, str]) -> None:
            outer((f[0], where.get(f[1], f[1]), f[2]))

        if any(k.startswith(_SETTINGS) for k in where):
            # a flag in the string that restates a setting given beside it, with another value
            first = _by_name(settings)[0]
            for k, v in settings.items():
                if _SETTINGS + _esc(k) in where:
                    o = first.get(_setting_name(k), k)
                    if o != k and not _same_value(settings[o], v):
                        add(
                            (
                                "KE207",
                                _SETTINGS + _esc(k),
                                f"setting {k} {str(v)[:40]} beside {o} {str(settings[o])[:40]}: one setting "
                                "given twice with two values (an engine takes the last, a reader the first)",
                            )
                        )
                        return

    theirs_by, theirs_cap, theirs_eager = _by_name(settings)
    mine_by, mine_cap, mine_eager = _by_name(ms) if ms else _NO_NAMES
    hn = _HANDICAP_NAMES.intersection(theirs_by)
    if hn and _handicaps(p, st, settings, ms, theirs_by, mine_by, hn, add):
        return
    if _quantized(p, st, settings, ms, theirs_by, mine_by, add):
        return
    # the workload's names: where the baseline states none, there is nothing to compare
    for field, names in _WORKLOAD if not _WORKLOAD_NAMES.isdisjoint(theirs_by) else ():
        mine = getattr(st, field)
        if mine is None:
            continue
        for name in names:
            key = theirs_by.get(name)
            if key is None:
                continue
            theirs = settings[key]
            if theirs is None or _same_value(mine, theirs):
                continue
            if field == "model" and not _other_model(str(mine), str(theirs)):
                continue  # a path or another spelling of the same model
            add(
                (
                    "KE207",
                    _SETTINGS + _esc(key),
                    f"the baseline ran with {key} {str(theirs)[:80]}, the candidate's task with {str(mine)[:80]}",
                )
            )
            return
    if not theirs_cap and theirs_eager is None:
        return
    for g, b in theirs_cap.items():
        a = mine_cap.get(g)
        if a is None:
            continue
        va, vb = _capacity(a, ms[a]), _capacity(b, settings[b])
        if va is not None and vb is not None and vb < va * (1 - 1e-9):
            add(
                (
                    "KE207",
                    _SETTINGS + _esc(b),
                    f"the baseline's engine ran with {b} {vb:g}, the candidate's with {a} {va:g}: "
                    "a baseline given less capacity",
                )
            )
            return
    eb = theirs_eager
    if eb is not None and _truthy(settings[eb]) and (mine_eager is None or not _truthy(ms[mine_eager])):
        said = (
            f"with {mine_eager} {str(ms[mine_eager])[:20]}"
            if mine_eager is not None
            else "with its default (graphs on)"
        )
        add(
            (
                "KE207",
                _SETTINGS + _esc(eb),
                f"the baseline's engine ran with {eb} (no CUDA graphs), the candidate's {said}",
            )
        )


_SETTINGS = "/timing/baseline/settings/"
_TASK_SETTINGS = "/task/serving/settings/"
#: a command line's flag: `--max-num-seqs`, `-O0`, `--x=1` (not a negative number)
_FLAG = lazy_re(r"--?[A-Za-z][A-Za-z0-9_.\-]*(?:=.*)?", re.DOTALL)
_SPLIT_CLI: dict[str, tuple[tuple[str, Any], ...] | None] = {}


def _cli_in(settings: dict[str, Any]) -> bool:
    """Whether a setting's value reads as a command line (cheap: a string starting with `-`
    and naming a flag)."""
    for v in settings.values():  # noqa: SIM110  (a loop: any() over a generator costs more)
        if isinstance(v, str) and v[:1] in ("-", " ") and _cli(v) is not None:
            return True
    return False


def _cli(v: str) -> tuple[tuple[str, Any], ...] | None:
    """The flags a command-line string gives, as (name, value) pairs (`True` for a bare
    flag; `-O0` is `O` 0), or None where the string is not one (it starts with something
    other than a flag, or does not split). Cached."""
    hit = _SPLIT_CLI.get(v, _UNSET)
    if hit is not _UNSET:
        return hit  # type: ignore[no-any-return]
    out: list[tuple[str, Any]] | None = []
    try:
        words = shlex.split(v[:4096])
    except ValueError:
        words = []
    if not words or not _FLAG.fullmatch(words[0]):
        out = None
    i = 0
    while out is not None and i < len(words):
        w = words[i]
        i += 1
        if not _FLAG.fullmatch(w):
            continue  # a positional word (a model name): not a setting
        if "=" in w:
            name, val = w.split("=", 1)
            out.append((name, val))
        elif not w.startswith("--") and len(w) > 2 and w[1] == "O":
            out.append(("-O", w[2:]))
        elif i < len(words) and not _FLAG.fullmatch(words[i]):
            out.append((w, words[i]))
            i += 1
        else:
            out.append((w, True))
    hit = tuple(out) if out else None
    if len(_SPLIT_CLI) < 1024 and len(v) <= CACHED_CHARS:
        _SPLIT_CLI[v] = hit
    return hit


def _split_cli(settings: dict[str, Any], ptr: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings with each command-line string replaced by the flags it gives (a flag
    the settings also give keeps the settings' own value), and the pointer of each such
    flag's setting."""
    out: dict[str, Any] = {}
    where: dict[str, str] = {}
    for k, v in settings.items():
        flags = _cli(v) if isinstance(v, str) and v[:1] in ("-", " ") else None
        if flags is None:
            out[k] = v
            continue
        for name, val in flags:
            if name not in settings and name not in out:
                out[name] = val
                where[ptr + _esc(name)] = ptr + _esc(k)
    return out, where


#: the settings naming a quantization method
_QUANT_SETTINGS = ("quantization", "quantize", "quant_method", "quantization_method")
_NO_QUANT = frozenset({"", "none", "auto", "null", "false", "no", "off", "default", "0"})
#: methods that quantize a 16-bit checkpoint as it is loaded: one side's alone is another
#: precision whatever the checkpoint (a method of a quantized checkpoint, `awq`, `gptq`,
#: is found from the checkpoint where the other side states none)
_ONLINE_QUANT = frozenset({
    "fp8", "bitsandbytes", "bnb", "experts_int8", "deepspeedfp", "ptpc_fp8", "fp6", "fp4",
    "int8", "int4", "torchao", "fp8_e4m3", "fp8_e5m2", "w8a8_fp8", "w8a8_int8",
})  # fmt: skip


def _quant(settings: dict[str, Any], by: dict[str, str]) -> tuple[str | None, str | None]:
    """(the setting's name, the method it names: "" for none), or (None, None)."""
    for n in _QUANT_SETTINGS:
        key = by.get(n)
        if key is not None:
            v = settings[key]
            if v is None or v is False:
                return key, ""
            if isinstance(v, str) and len(v) <= 64:
                q = v.strip().casefold().replace("-", "_")
                return key, "" if q in _NO_QUANT else q
            return None, None
    return None, None


def _quantized(
    p: Any,
    st: Any,
    settings: dict[str, Any],
    ms: dict[str, Any],
    theirs_by: dict[str, str],
    mine_by: dict[str, str],
    add: Add,
) -> bool:
    """KE207 for serving: the two sides' engines quantize the weights differently (a
    method stated on both sides with two values; a method, or one that quantizes a 16-bit
    checkpoint at load, on one side against none stated as none, or not stated, on the
    other): another precision, another problem. True when found."""
    qk_b, qb = _quant(settings, theirs_by) if not _QUANT_NAMES.isdisjoint(theirs_by) else (None, None)
    qk_c, qc = _quant(ms, mine_by) if not _QUANT_NAMES.isdisjoint(mine_by) else (None, None)
    if not qb and not qc:
        return False
    if qb == qc:
        return False
    if qb and qc:
        ptr, key, mine = _SETTINGS, qk_b, f"the candidate's {qc}"
    else:
        q = qb or qc
        assert q is not None
        if qk_b is None or qk_c is None:  # one side silent: the checkpoint decides there
            if q not in _ONLINE_QUANT:
                return False
            model = str(st.model or "").casefold().replace("-", "_")
            if q in model or (q == "bitsandbytes" and "bnb" in model):
                return False  # the checkpoint is already quantized so: both sides load it
        if qb:
            ptr, key, mine = _SETTINGS, qk_b, "the candidate's unquantized"
        else:
            ptr, key, mine = _TASK_SETTINGS, qk_c, "the baseline's unquantized"
    assert key is not None  # (the side that states a method)
    side = "baseline's" if ptr == _SETTINGS else "candidate's"
    v = settings[key] if ptr == _SETTINGS else ms[key]
    add(
        (
            "KE207",
            ptr + _esc(key),
            f"the {side} engine ran with {key} {str(v)[:40]}, {mine} weights: another precision, not the same problem",
        )
    )
    return True


_QUANT_NAMES = frozenset(_QUANT_SETTINGS)
_HANDICAP_NAMES = frozenset({
    *_DTYPE_SETTINGS, *_BACKEND_SETTINGS, "cpu_offload_gb", "best_of", "use_beam_search",
    "gpu_memory_utilization", "max_num_seqs", "max_running_requests",
    "n", "scheduler_delay_factor", "num_gpu_blocks_override", "max_total_tokens", *_GRAPH_NAMES,
    *_LEVEL_SETTINGS, "enable_chunked_prefill",
})  # fmt: skip
#: a baseline-only gpu_memory_utilization below this is less than vLLM's default 0.9 by more
#: than a careful user's own setting (0.85) would be
_GPU_MEMORY_FLOOR = 0.8


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _number(v: Any) -> float | None:
    """A setting's value as a number (None for a flag or text that is none)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and len(v) <= 64:
        try:
            return float(v.strip())
        except ValueError:
            return None
    return None


def _truthy(v: Any) -> bool:
    """Whether a flag setting is on (`true`, 1, "true", "yes", "on")."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v == 1
    return isinstance(v, str) and v.strip().casefold() in ("true", "1", "yes", "on")


def _other_model(a: str, b: str) -> bool:
    """True when two model names state different parameter counts (an 8B against a 70B);
    spellings that do not both say (a local path) are not judged."""
    if len(a) > 256 or len(b) > 256:
        return False
    pa, pb = model_params(a), model_params(b)
    return pa is not None and pb is not None and max(pa, pb) > 1.1 * min(pa, pb)


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        sa, sb = str(a).strip().casefold(), str(b).strip().casefold()
        return sa == sb or {sa, sb} <= {"inf", "infinity"}
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a == b)
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return True  # not comparable: nothing to say
