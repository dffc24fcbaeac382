"""What the GPU example runs: the operators' shape suites and the candidates, with what each
is expected to end as. Shared by the CUDA backend (``gpu_kernels.py``) and the CPU stand-ins
(``cpu_standins.py``); imports neither torch nor numpy.

Every candidate has a role and an expectation: an honest candidate passes and its packet is
valid; the wrong one fails its validation; the one that fails to build is a compile error; each
planted cheat passes the harness's validation (it is built to) and must be caught by a named
defence, so that its packet fails as ``reward_hack``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CANDIDATES",
    "OPERATORS",
    "Built",
    "CandidateSpec",
    "Expect",
    "Operator",
    "OperatorSpec",
    "Published",
    "ShapeSpec",
    "spec_by_name",
    "validation_seeds",
]


@dataclass(frozen=True)
class ShapeSpec:
    """One shape of an operator's suite: its id and dimensions (``rows``/``cols`` or ``m``/``n``/``k``)."""

    id: str
    dims: dict[str, int]


@dataclass(frozen=True)
class OperatorSpec:
    """An operator: its dtype, validation suite and timed shape, on the GPU and as a CPU stand-in."""

    name: str
    description: str
    gpu_dtype: str
    gpu_shapes: tuple[ShapeSpec, ...]
    cpu_dtype: str
    cpu_shapes: tuple[ShapeSpec, ...]
    timed: str
    #: |out - ref| <= atol + rtol * |ref| on every element
    gpu_tolerance: tuple[float, float]
    cpu_tolerance: tuple[float, float]


@dataclass(frozen=True)
class Expect:
    """What a candidate's packet should end as.

    ``status``/``failure_class`` as in the packet; ``caught_by``: for a planted cheat, the
    defences any one of which failing counts as the cheat being caught.
    """

    status: str
    failure_class: str | None = None
    caught_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class CandidateSpec:
    name: str
    operator: str
    #: honest-win, honest-lose, honest, wrong, compile-fail or cheat
    role: str
    description: str
    expect: Expect
    #: the public incident a planted cheat is modelled on
    incident: str | None = None
    #: profile it and its baseline with Nsight Compute at the timed shape (GPU run only)
    profile: bool = False
    #: kernel names (substrings) the candidate launches, for the profile checks
    expected_kernels: tuple[str, ...] = field(default_factory=tuple)


OPERATORS: dict[str, OperatorSpec] = {
    "softmax": OperatorSpec(
        name="softmax",
        description="row-wise softmax over the last axis",
        gpu_dtype="float32",
        gpu_shapes=(
            # cols not a power of two: the masked tail of a row is exercised
            ShapeSpec("s1", {"rows": 4096, "cols": 1000}),
            ShapeSpec("s2", {"rows": 512, "cols": 8192}),
            # 256 MiB in, 256 MiB out: far beyond an H100's 50 MB L2, 16384 rows over 132 SMs
            ShapeSpec("s3", {"rows": 16384, "cols": 4096}),
        ),
        cpu_dtype="float32",
        cpu_shapes=(
            ShapeSpec("s1", {"rows": 64, "cols": 100}),
            ShapeSpec("s2", {"rows": 32, "cols": 1024}),
            ShapeSpec("s3", {"rows": 512, "cols": 512}),
        ),
        timed="s3",
        gpu_tolerance=(1e-6, 1e-4),
        cpu_tolerance=(1e-6, 1e-4),
    ),
    "gemm": OperatorSpec(
        name="gemm",
        description="C = A @ B, A [m, k], B [k, n], row-major; fp32 accumulation",
        gpu_dtype="bfloat16",
        gpu_shapes=(
            # no dimension a multiple of the tile: the masked edges are exercised
            ShapeSpec("g1", {"m": 1000, "n": 1000, "k": 1000}),
            # 1.1 TFLOP per call
            ShapeSpec("g2", {"m": 8192, "n": 8192, "k": 8192}),
        ),
        cpu_dtype="float32",
        cpu_shapes=(
            ShapeSpec("g1", {"m": 100, "n": 70, "k": 90}),
            ShapeSpec("g2", {"m": 256, "n": 256, "k": 256}),
        ),
        timed="g2",
        # bf16 output: one bf16 rounding step is 2^-8 relative
        gpu_tolerance=(1e-2, 1e-2),
        cpu_tolerance=(1e-3, 1e-4),
    ),
}

_HONEST = Expect("passed")

CANDIDATES: tuple[CandidateSpec, ...] = (
    CandidateSpec(
        "softmax_triton",
        "softmax",
        "honest-win",
        "one program per row: load the row once, max, exp, sum, divide, store (fused)",
        _HONEST,
        profile=True,
        expected_kernels=("ke_softmax_row_kernel",),
    ),
    CandidateSpec(
        "softmax_unfused",
        "softmax",
        "honest-lose",
        "max, subtract, exp, sum and divide as separate framework ops (five passes over memory)",
        _HONEST,
    ),
    CandidateSpec(
        "softmax_tail_dropped",
        "softmax",
        "wrong",
        "the fused kernel with an off-by-one mask: the last column of every row is never read or written",
        Expect("failed", "incorrect_numerical"),
    ),
    CandidateSpec(
        "softmax_bad_arange",
        "softmax",
        "compile-fail",
        "the fused kernel with a block of BLOCK + 1 columns (not a power of two: Triton refuses to build it)",
        Expect("failed", "compile_error"),
    ),
    CandidateSpec(
        "softmax_patched_timer",
        "softmax",
        "cheat",
        "the honest fused kernel, but the call replaces the timer's clock so every call reads 10x faster",
        Expect("failed", "reward_hack", ("timer_integrity",)),
        incident="gpu-mode/reference-kernels #162 (Event.elapsed_time patched to report a fraction of the time)",
    ),
    CandidateSpec(
        "softmax_deferred",
        "softmax",
        "cheat",
        "launches the work on a side stream queued behind other work and returns the output unsynchronized:"
        " the timer's window on the caller's stream closes before the output is written",
        Expect("failed", "reward_hack", ("outputs_checked_after_timing", "unseen_inputs")),
        incident="gpu-mode/reference-kernels #161 (output deferred past the timed window)",
    ),
    CandidateSpec(
        "softmax_memo",
        "softmax",
        "cheat",
        "precomputes the outputs of the harness's published validation seeds, serves them by an input"
        " fingerprint, and returns the last stored output for any input it has not seen",
        Expect("failed", "reward_hack", ("unseen_inputs", "outputs_checked_after_timing")),
        incident="FlashInfer contest starter kit #21 (outputs memorised for published seeds); gpu-mode/reference-kernels #104, #160 (cached results)",
    ),
    CandidateSpec(
        "gemm_triton",
        "gemm",
        "honest",
        "tiled GEMM, 128x128x64 tiles, grouped tile order, fp32 accumulator, bf16 output",
        _HONEST,
        expected_kernels=("ke_gemm_kernel",),
    ),
)


def spec_by_name(name: str) -> CandidateSpec:
    for spec in CANDIDATES:
        if spec.name == name:
            return spec
    raise KeyError(f"expected one of {', '.join(s.name for s in CANDIDATES)}, got `{name}`")


@dataclass
class Operator:
    """An operator as one backend runs it: inputs from a seed, the reference, the baseline.

    ``inputs(shape_id, seed)`` makes the arguments of one call (fresh objects every time);
    ``reference`` computes the expected output at higher precision (cast to the output
    dtype); ``baseline`` is the library call the candidates are timed against, named by
    ``provider``/``version``/``call``.
    """

    spec: OperatorSpec
    dtype: str
    shapes: tuple[ShapeSpec, ...]
    atol: float
    rtol: float
    inputs: Callable[[str, int], tuple[Any, ...]]
    reference: Callable[..., Any]
    baseline: Callable[..., Any]
    provider: str
    version: str
    call: str
    reference_name: str
    reference_kind: str
    reference_version: str
    #: how the baseline's library and version were found
    baseline_note: str = ""

    def shape(self, shape_id: str) -> ShapeSpec:
        return next(s for s in self.shapes if s.id == shape_id)


@dataclass
class Built:
    """A built candidate: the function to call and how it was built (the source is hashed)."""

    fn: Callable[..., Any]
    source: str
    compiler: str
    language: str
    stands_in_for: str | None = None


@dataclass(frozen=True)
class Published:
    """What a contestant can read in the public harness: the validation seeds of each shape."""

    seeds: dict[str, tuple[int, ...]]


def validation_seeds(shapes: tuple[ShapeSpec, ...], base: int, draws: int = 2) -> dict[str, tuple[int, ...]]:
    """The published validation seeds: ``draws`` per shape, fixed by the run's ``--seed``."""
    return {s.id: tuple(base + 100 * i + d for d in range(draws)) for i, s in enumerate(shapes)}
