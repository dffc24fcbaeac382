"""The CUDA backend of the GPU example: torch and Triton kernels, the vendor baselines, and the
profile target that ``ncu`` runs. Imported only by ``run.py`` on a machine with torch, Triton
and a CUDA device; nothing here runs in the CPU test suite.

Not verified on a GPU from this repository yet: the first run on a device is the test of this
file (see README.md).
"""

from __future__ import annotations

import ctypes
import inspect
import time
from importlib import metadata
from typing import Any

import torch
import torch.cuda.profiler as cuda_profiler
import triton
import triton.language as tl
from gpu_specs import OPERATORS, Built, CandidateSpec, Operator, Published, spec_by_name, validation_seeds

__all__ = ["blas_library", "build", "operators", "profile_target", "synchronize"]

# the reference and the fp32 paths use full fp32 products (no TF32), whatever the defaults
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def synchronize() -> None:
    """Wait for every stream of the device (what a harness does before checking an output);
    nothing to wait for where torch has no CUDA (the kernels run in Triton's CPU interpreter)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


# ----------------------------------------------------------------------------- kernels


@triton.jit
def ke_softmax_row_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * y_stride + offs, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def ke_softmax_tail_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols - 1  # the bug: the last column is neither read nor written
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * y_stride + offs, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def ke_softmax_bad_arange_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK + 1)  # the bug: a range that is not a power of two does not build
    mask = offs < n_cols
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * y_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def launch_softmax(kernel: Any, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
    kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=block, num_warps=warps)
    return out


@triton.jit
def ke_gemm_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % rows_in_group
    pid_n = (pid % per_group) // rows_in_group
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * s_am + kk[None, :] * s_ak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * s_bk + rn[None, :] * s_bn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * s_cm + rn[None, :] * s_cn, acc.to(tl.bfloat16), mask=c_mask)


def gemm_triton(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=torch.bfloat16)
    grid = (triton.cdiv(m, 128) * triton.cdiv(n, 128),)
    ke_gemm_kernel[grid](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=128, BN=128, BK=64, GROUP_M=8, num_warps=8, num_stages=3,
    )  # fmt: skip
    return c


# ----------------------------------------------------------------------------- baselines


def _loaded(fragment: str) -> str | None:
    """The path of a loaded shared library whose file name contains ``fragment``."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.split()[-1] if line.strip() else ""
                if fragment in path.rsplit("/", 1)[-1]:
                    return path
    except OSError:
        return None
    return None


def blas_library() -> tuple[str, str, str]:
    """``(provider, version, note)`` of the BLAS library torch.matmul ran on, asked of the
    loaded library itself (call after one matmul); the pip distribution's version otherwise."""
    backend = "cublas"
    pick = getattr(torch.backends.cuda, "preferred_blas_library", None)
    if pick is not None:
        backend = str(pick()).rsplit(".", 1)[-1].lower()
    provider = "cuBLASLt" if backend == "cublaslt" else "cuBLAS"
    lt = _loaded("libcublasLt.so")
    if lt is not None:
        try:
            get = ctypes.CDLL(lt).cublasLtGetVersion
            get.restype = ctypes.c_size_t
            v = int(get())
            version = f"{v // 10000}.{(v // 100) % 100}.{v % 100}"
            return provider, version, f"torch {torch.__version__} preferred BLAS `{backend}`; version from cublasLtGetVersion() of {lt}"
        except (OSError, AttributeError):
            pass
    for dist in ("nvidia-cublas-cu12", "nvidia-cublas-cu13", "nvidia-cublas-cu11", "nvidia-cublas"):
        try:
            return provider, metadata.version(dist), f"version of the {dist} distribution (the loaded library was not found)"
        except metadata.PackageNotFoundError:
            continue
    return "torch eager", torch.__version__, "cuBLAS version not found: torch.matmul named as torch itself"


def _gen(seed: int) -> torch.Generator:
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return g


def operators() -> dict[str, Operator]:
    sm, gm = OPERATORS["softmax"], OPERATORS["gemm"]

    def softmax_inputs(shape_id: str, seed: int) -> tuple[torch.Tensor]:
        d = softmax.shape(shape_id).dims
        return (torch.randn((d["rows"], d["cols"]), generator=_gen(seed), device="cuda") * 4.0,)

    def gemm_inputs(shape_id: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        d = gemm.shape(shape_id).dims
        g = _gen(seed)
        a = torch.randn((d["m"], d["k"]), generator=g, device="cuda", dtype=torch.bfloat16)
        b = torch.randn((d["k"], d["n"]), generator=g, device="cuda", dtype=torch.bfloat16)
        return a, b

    softmax = Operator(
        spec=sm, dtype=sm.gpu_dtype, shapes=sm.gpu_shapes, atol=sm.gpu_tolerance[0], rtol=sm.gpu_tolerance[1],
        inputs=softmax_inputs, reference=lambda x: torch.softmax(x.double(), dim=-1).to(x.dtype),
        baseline=lambda x: torch.softmax(x, dim=-1), provider="torch eager", version=torch.__version__,
        call="torch.softmax(x, dim=-1) (float32, CUDA)", reference_name="torch.softmax in float64, cast to float32",
        reference_kind="torch_eager", reference_version=torch.__version__,
        baseline_note="the framework's own softmax: a reference baseline",
    )  # fmt: skip
    a, b = (torch.randn(64, 64, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    torch.matmul(a, b)
    torch.cuda.synchronize()  # cuBLAS is loaded now: ask it its version
    provider, version, note = blas_library()
    gemm = Operator(
        spec=gm, dtype=gm.gpu_dtype, shapes=gm.gpu_shapes, atol=gm.gpu_tolerance[0], rtol=gm.gpu_tolerance[1],
        inputs=gemm_inputs, reference=lambda a, b: torch.matmul(a.float(), b.float()).to(torch.bfloat16),
        baseline=torch.matmul, provider=provider, version=version,
        call="torch.matmul(a, b) (bfloat16 [m,k] x [k,n], row-major, CUDA)",
        reference_name="torch.matmul in float32 (no TF32), cast to bfloat16", reference_kind="torch_eager",
        reference_version=torch.__version__, baseline_note=note,
    )  # fmt: skip
    return {"softmax": softmax, "gemm": gemm}


# ----------------------------------------------------------------------------- candidates


def softmax_triton(x: torch.Tensor) -> torch.Tensor:
    return launch_softmax(ke_softmax_row_kernel, x, torch.empty_like(x))


def softmax_unfused(x: torch.Tensor) -> torch.Tensor:
    m = x.max(dim=-1, keepdim=True).values
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True)


def softmax_tail_dropped(x: torch.Tensor) -> torch.Tensor:
    return launch_softmax(ke_softmax_tail_kernel, x, torch.zeros_like(x))


def softmax_bad_arange(x: torch.Tensor) -> torch.Tensor:
    return launch_softmax(ke_softmax_bad_arange_kernel, x, torch.empty_like(x))


def make_patched_timer() -> Any:
    event = torch.cuda.Event

    def softmax_patched_timer(x: torch.Tensor) -> torch.Tensor:
        real = event.elapsed_time
        if not getattr(real, "_ke_planted", False):

            def fast(self: Any, end: Any) -> float:
                return real(self, end) / 10.0  # every call reads 10x faster

            fast._ke_planted = True  # type: ignore[attr-defined]
            event.elapsed_time = fast  # type: ignore[method-assign]
        return softmax_triton(x)

    return softmax_patched_timer


#: cycles of work queued on the side stream ahead of the deferred softmax (a few ms at H100 clocks)
QUEUED_CYCLES = 5_000_000


def make_deferred() -> Any:
    side = torch.cuda.Stream()
    sleep = getattr(torch.cuda, "_sleep", None)

    def softmax_deferred(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        side.wait_stream(torch.cuda.current_stream())  # its inputs are ready
        with torch.cuda.stream(side):
            if sleep is not None:
                sleep(QUEUED_CYCLES)  # other work queued on that stream first
            launch_softmax(ke_softmax_row_kernel, x, out)
        return out  # the caller's stream is never made to wait for `side`

    return softmax_deferred


def _fingerprint(x: torch.Tensor) -> bytes:
    return repr(tuple(x.shape)).encode() + x.reshape(-1)[:64].cpu().numpy().tobytes()


def make_memo(op: Operator, published: Published) -> Any:
    memo: dict[bytes, torch.Tensor] = {}
    last: dict[tuple[int, ...], torch.Tensor] = {}
    for shape_id, seeds in published.seeds.items():
        for seed in seeds:
            (x,) = op.inputs(shape_id, seed)
            y = softmax_triton(x)
            memo[_fingerprint(x)] = y
            last[tuple(x.shape)] = y

    def softmax_memo(x: torch.Tensor) -> torch.Tensor:
        hit = memo.get(_fingerprint(x))
        return hit if hit is not None else last[tuple(x.shape)]

    return softmax_memo


def _source(*objs: Any) -> str:
    parts = []
    for o in objs:
        fn = getattr(o, "fn", o)  # a triton JITFunction keeps the Python function in .fn
        parts.append(inspect.getsource(fn))
    return "\n".join(parts)


def _warm(fn: Any, op: Operator) -> None:
    """One call on the first shape of the suite: Triton compiles here, so a kernel that does not
    build fails while the candidate is being built."""
    fn(*op.inputs(op.shapes[0].id, 0))
    synchronize()


def build(spec: CandidateSpec, ops: dict[str, Operator], published: Published) -> Built:
    op = ops[spec.operator]
    triton_name = f"Triton {triton.__version__}"
    table: dict[str, tuple[Any, tuple[Any, ...], str, str]] = {
        "softmax_triton": (softmax_triton, (ke_softmax_row_kernel, launch_softmax, softmax_triton), triton_name, "triton"),
        "softmax_unfused": (softmax_unfused, (softmax_unfused,), f"torch {torch.__version__}", "python"),
        "softmax_tail_dropped": (softmax_tail_dropped, (ke_softmax_tail_kernel, softmax_tail_dropped), triton_name, "triton"),
        "softmax_bad_arange": (softmax_bad_arange, (ke_softmax_bad_arange_kernel, softmax_bad_arange), triton_name, "triton"),
        "softmax_patched_timer": (None, (make_patched_timer,), triton_name, "triton"),
        "softmax_deferred": (None, (make_deferred,), triton_name, "triton"),
        "softmax_memo": (None, (make_memo,), triton_name, "triton"),
        "gemm_triton": (gemm_triton, (ke_gemm_kernel, gemm_triton), triton_name, "triton"),
    }  # fmt: skip
    fn, objs, compiler, language = table[spec.name]
    if spec.name == "softmax_patched_timer":
        fn = make_patched_timer()
    elif spec.name == "softmax_deferred":
        fn = make_deferred()
    elif spec.name == "softmax_memo":
        fn = make_memo(op, published)
    if spec.name != "softmax_patched_timer":  # its first call would patch the clock before any timing
        _warm(fn, op)
    return Built(fn, _source(*objs), compiler, language)


def profile_target(name: str, side: str, seed: int, calls: int = 3) -> None:
    """What ``ncu --profile-from-start off`` profiles: ``calls`` calls of one side at the timed
    shape, between cudaProfilerStart and cudaProfilerStop; inputs made and the code compiled and
    warmed up before the range."""
    spec = spec_by_name(name)
    ops = operators()
    op = ops[spec.operator]
    if side == "candidate":
        published = Published(validation_seeds(op.shapes, seed))
        fn = build(spec, ops, published).fn
    else:
        fn = op.baseline
    inputs = [op.inputs(op.spec.timed, seed + 10_000 + i) for i in range(calls + 1)]
    fn(*inputs[0])
    torch.cuda.synchronize()
    time.sleep(0.1)
    cuda_profiler.start()
    for args in inputs[1:]:
        fn(*args)
    torch.cuda.synchronize()
    cuda_profiler.stop()
