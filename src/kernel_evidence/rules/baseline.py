"""KE2xx: a claim names a baseline worth beating, measured under the candidate's conditions."""

from __future__ import annotations

from typing import Any

from ._context import Add, Ctx
from ._engine import declare
from ._tables import baseline_entry

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
    "are not baselines.",
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
declare("KE206", "warning", "baseline measured in the same session",
     "time the baseline in the same process and session, interleaved with the candidate",
     "A baseline timed in another session (other day, other clocks, other machine state) makes "
     "a weak comparison; `baseline.same_session` SHOULD be true.")  # fmt: skip


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
