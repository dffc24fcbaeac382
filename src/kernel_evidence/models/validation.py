"""Was the output right: per-shape correctness against the reference."""

from __future__ import annotations

from typing import Literal

from ._base import Bool, Int, Model, NonEmptyStr, NonNegFloat, NonNegInt, Str

__all__ = ["ShapeResult", "Validation"]


class ShapeResult(Model):
    """Correctness of one shape case. Errors are in the units of the output values."""

    shape_id: NonEmptyStr
    passed: Bool
    max_abs_error: NonNegFloat | None = None
    max_rel_error: NonNegFloat | None = None
    atol: NonNegFloat | None = None
    rtol: NonNegFloat | None = None
    matched_ratio: NonNegFloat | None = None
    required_matched_ratio: NonNegFloat | None = None
    reference_max_abs: NonNegFloat | None = None
    nan_seen: Bool | None = None
    inf_seen: Bool | None = None
    elements: NonNegInt | None = None
    message: Str | None = None


class Validation(Model):
    """The validation category of a packet."""

    verdict: Literal["passed", "failed"]
    shapes: list[ShapeResult] | None = None
    seeds: list[Int] | None = None
    inputs_regenerated: Bool | None = None
    message: Str | None = None
