"""What was run: the operator or serving workload, its shapes, dtypes, reference and tolerance."""

from __future__ import annotations

from typing import Literal

from ._base import (
    Artifact,
    Bool,
    ByteSize,
    Float,
    FlopCount,
    Int,
    Model,
    NonEmptyStr,
    NonNegFloat,
    NonNegInt,
    PosInt,
    Software,
    Str,
)

__all__ = ["Reference", "ServingTask", "ShapeCase", "Task", "TensorSpec", "TolerancePolicy", "Work"]


class TensorSpec(Model):
    """One input or output tensor of a shape case."""

    name: NonEmptyStr
    shape: list[NonNegInt]
    dtype: NonEmptyStr
    layout: Str | None = None
    strides: list[Int] | None = None


class Work(Model):
    """The work one timed call does; lets a reader derive achieved rates."""

    flops: FlopCount | None = None
    bytes: ByteSize | None = None


class ShapeCase(Model):
    """One entry of the shapes suite."""

    id: NonEmptyStr
    dims: dict[str, Int] | None = None
    tensors: list[TensorSpec] | None = None
    work: Work | None = None


class Reference(Model):
    """The implementation outputs are compared against."""

    name: NonEmptyStr
    kind: (
        Literal["torch_eager", "torch_compile", "numpy", "jax", "triton", "vendor_library", "other"] | None
    ) = None
    version: Str | None = None
    source: Artifact | None = None


class TolerancePolicy(Model):
    """How close is close enough: ``|out - ref| <= atol + rtol * |ref|`` per element."""

    atol: NonNegFloat | None = None
    rtol: NonNegFloat | None = None
    required_matched_ratio: NonNegFloat | None = None


class ServingTask(Model):
    """A serving workload: model, traffic shape and engine."""

    model: NonEmptyStr | None = None
    engine: Software | None = None
    dataset: Str | None = None
    num_prompts: NonNegInt | None = None
    input_len: NonNegInt | None = None
    output_len: NonNegInt | None = None
    max_concurrency: PosInt | None = None
    request_rate: NonNegFloat | Literal["inf"] | None = None
    tensor_parallel_size: PosInt | None = None
    pipeline_parallel_size: PosInt | None = None
    settings: dict[str, Str | Float | Int | Bool] | None = None


class Task(Model):
    """The task category of a packet."""

    operator: Str | None = None
    workload: Str | None = None
    description: Str | None = None
    shapes: list[ShapeCase] | None = None
    dtypes: list[NonEmptyStr] | None = None
    reference: Reference | None = None
    tolerance: TolerancePolicy | None = None
    work: Work | None = None
    serving: ServingTask | None = None
