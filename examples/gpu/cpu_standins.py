"""CPU stand-ins for the GPU example (``run.py --dry-run``): numpy code in place of the kernels.

Nothing here runs on a GPU and no packet made with it says so: the recorder's device is the
host CPU (vendor ``cpu``), every packet's description starts with "CPU stand-in", and its
``kernel-evidence:gpu-example`` extension names the kernel it stands in for. The stand-ins let
CI run the whole pipeline (recorder loop, defences, validate, audit, archive, report, table)
without a GPU; their speeds say nothing about the GPU kernels.

Each planted cheat is modelled where the CPU can model it honestly:

* the patched timer replaces ``time.perf_counter_ns``, the clock the host timer reads (on the
  GPU the cheat replaces ``torch.cuda.Event.elapsed_time``);
* the deferred output runs on :class:`SideStream`, a worker thread standing in for a second
  CUDA stream: work queued there is waited for by :func:`device_synchronize` (what a
  harness's ``torch.cuda.synchronize()`` does before it checks an output) but not by the
  timer, whose window closes when the call returns;
* the memo precomputes the outputs of the published validation seeds, exactly as on the GPU.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
import time
from typing import Any

import numpy as np
from gpu_specs import OPERATORS, Built, CandidateSpec, Operator, Published

__all__ = ["SIDE_STREAM", "SideStream", "blas_baseline", "build", "device_synchronize", "operators"]


class SideStream:
    """A stand-in for a second CUDA stream: each launch runs on a thread after ``queued_s`` of
    work queued ahead of it; :meth:`synchronize` waits for all of them."""

    def __init__(self, queued_s: float = 0.2) -> None:
        self.queued_s = queued_s
        self._pending: list[threading.Thread] = []
        self._lock = threading.Lock()

    def launch(self, work: Any) -> None:
        def run() -> None:
            time.sleep(self.queued_s)
            work()

        t = threading.Thread(target=run, daemon=True)
        with self._lock:
            self._pending.append(t)
        t.start()

    def synchronize(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for t in pending:
            t.join()


SIDE_STREAM = SideStream()


def device_synchronize() -> None:
    """What ``torch.cuda.synchronize()`` is on the GPU: wait for every stream's work."""
    SIDE_STREAM.synchronize()


# ----------------------------------------------------------------------------- operators


def _softmax64(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    """The stand-in for the framework's own softmax (the reference baseline)."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def blas_baseline() -> tuple[str, str, str]:
    """``(provider, version, note)`` of the BLAS numpy.matmul runs on, as numpy reports it;
    a BLAS the registry does not know is named as numpy itself (a reference baseline)."""
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        name, version = str(deps.get("name", "")), str(deps.get("version", ""))
    except Exception:  # noqa: BLE001 - numpy builds differ; fall back to numpy itself
        name, version = "", ""
    if "openblas" in name.lower() and version:
        return "OpenBLAS", version, f"numpy {np.__version__} reports BLAS `{name}` {version}"
    if "mkl" in name.lower() and version:
        return "oneMKL", version, f"numpy {np.__version__} reports BLAS `{name}` {version}"
    return "numpy", np.__version__, f"numpy's BLAS ({name or 'unknown'}) is not a registered library"


def _inputs_softmax(op: Any) -> Any:
    def make(shape_id: str, seed: int) -> tuple[np.ndarray]:
        d = op.shape(shape_id).dims
        x = np.random.default_rng(seed).standard_normal((d["rows"], d["cols"])) * 4.0
        return (x.astype(np.float32),)

    return make


def _inputs_gemm(op: Any) -> Any:
    def make(shape_id: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
        d = op.shape(shape_id).dims
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((d["m"], d["k"])).astype(np.float32)
        b = rng.standard_normal((d["k"], d["n"])).astype(np.float32)
        return a, b

    return make


def operators() -> dict[str, Operator]:
    """The two operators as numpy runs them, with their baselines."""
    sm, gm = OPERATORS["softmax"], OPERATORS["gemm"]
    provider, version, note = blas_baseline()
    softmax = Operator(
        spec=sm, dtype=sm.cpu_dtype, shapes=sm.cpu_shapes, atol=sm.cpu_tolerance[0], rtol=sm.cpu_tolerance[1],
        inputs=lambda s, seed: (), reference=_softmax64, baseline=numpy_softmax,
        provider="numpy", version=np.__version__,
        call="e = np.exp(x - x.max(axis=-1, keepdims=True)); e / e.sum(axis=-1, keepdims=True)",
        reference_name="softmax in float64 (numpy), cast to float32", reference_kind="numpy",
        reference_version=np.__version__,
        baseline_note="CPU stand-in for the framework's own softmax (torch.softmax on the GPU run)",
    )  # fmt: skip
    softmax.inputs = _inputs_softmax(softmax)
    gemm = Operator(
        spec=gm, dtype=gm.cpu_dtype, shapes=gm.cpu_shapes, atol=gm.cpu_tolerance[0], rtol=gm.cpu_tolerance[1],
        inputs=lambda s, seed: (), reference=lambda a, b: (a.astype(np.float64) @ b.astype(np.float64)).astype(a.dtype),
        baseline=np.matmul, provider=provider, version=version, call="numpy.matmul(a, b) (float32)",
        reference_name="matmul in float64 (numpy), cast to float32", reference_kind="numpy",
        reference_version=np.__version__,
        baseline_note=f"CPU stand-in for cuBLAS behind torch.matmul; {note}",
    )  # fmt: skip
    gemm.inputs = _inputs_gemm(gemm)
    return {"softmax": softmax, "gemm": gemm}


# ----------------------------------------------------------------------------- candidates


def softmax_fused(x: np.ndarray) -> np.ndarray:
    y = x - x.max(axis=-1, keepdims=True)
    np.exp(y, out=y)
    y /= y.sum(axis=-1, keepdims=True)
    return y


def softmax_rows(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        e = np.exp(x[i] - x[i].max())
        out[i] = e / e.sum()
    return out


def softmax_tail_dropped(x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    out[:, :-1] = softmax_fused(x[:, :-1].copy())  # the last column is never read or written
    return out


BAD_BUILD_SOURCE = '''
def softmax(x):
    block = x.shape[-1] + 1
    return [row for row in x if len(row) < block  # a bracket never closed: does not build
'''


def make_patched_timer() -> Any:
    real = time.perf_counter_ns

    def softmax_patched_timer(x: np.ndarray) -> np.ndarray:
        start = real()

        def fast() -> int:
            return start + (real() - start) // 10  # time since the call began reads 10x shorter

        time.perf_counter_ns = fast
        return softmax_fused(x)

    return softmax_patched_timer


def softmax_deferred(x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)

    def work() -> None:
        out[...] = softmax_fused(x.copy())

    SIDE_STREAM.launch(work)
    return out  # not synchronized: the work is still queued on the side stream


def _fingerprint(x: np.ndarray) -> bytes:
    return hashlib.sha256(x.shape.__repr__().encode() + x.ravel()[:64].tobytes()).digest()


def make_memo(op: Operator, published: Published) -> Any:
    """Memorise the reference outputs of every published validation input; any other input gets
    the last stored output of its shape (no work at all)."""
    memo: dict[bytes, np.ndarray] = {}
    last: dict[tuple[int, ...], np.ndarray] = {}
    for shape_id, seeds in published.seeds.items():
        for seed in seeds:
            (x,) = op.inputs(shape_id, seed)
            memo[_fingerprint(x)] = softmax_fused(x.copy())
            last[x.shape] = memo[_fingerprint(x)]

    def softmax_memo(x: np.ndarray) -> np.ndarray:
        hit = memo.get(_fingerprint(x))
        return hit if hit is not None else last[x.shape]

    return softmax_memo


def gemm_panels(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    c = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    for k in range(0, a.shape[1], 32):
        c += a[:, k : k + 32] @ b[k : k + 32]
    return c


_STANDS_IN = {
    "softmax_triton": (softmax_fused, "the Triton fused softmax kernel"),
    "softmax_unfused": (softmax_rows, "five framework softmax ops (here: a Python loop over rows)"),
    "softmax_tail_dropped": (softmax_tail_dropped, "the Triton kernel with the off-by-one mask"),
    "softmax_deferred": (softmax_deferred, "the side-stream launch of the Triton kernel"),
    "gemm_triton": (gemm_panels, "the Triton tiled GEMM (here: numpy over 32-wide k panels)"),
}


def build(spec: CandidateSpec, ops: dict[str, Operator], published: Published) -> Built:
    """Build one candidate's CPU stand-in; the one that fails to build raises SyntaxError here."""
    if spec.name == "softmax_bad_arange":
        compile(BAD_BUILD_SOURCE, f"<candidate {spec.name}>", "exec")  # SyntaxError: compile_error
        raise AssertionError("unreachable: the source does not build")
    if spec.name == "softmax_patched_timer":
        fn = make_patched_timer()
        return Built(fn, inspect.getsource(make_patched_timer), "CPython", "python", "the clock-patching cheat")
    if spec.name == "softmax_memo":
        fn = make_memo(ops["softmax"], published)
        return Built(fn, inspect.getsource(make_memo), "CPython", "python", "the memoising cheat")
    fn, what = _STANDS_IN[spec.name]
    return Built(fn, inspect.getsource(fn), "CPython", "python", what)
