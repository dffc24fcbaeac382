"""Compare a candidate's output with the reference, per shape, and name what went wrong.

numpy is imported here only, when a harness calls :meth:`CandidateRecord.check`.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import MissingExtra
from ..models import FailureClass, ShapeResult

__all__ = ["compare_arrays"]


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise MissingExtra("numpy", "harness", "comparing arrays in CandidateRecord.check()") from None
    return numpy


def compare_arrays(
    shape_id: str,
    output: Any,
    expected: Any,
    *,
    atol: float,
    rtol: float,
    required_matched_ratio: float = 1.0,
) -> tuple[ShapeResult, FailureClass | None]:
    """``(shape result, failure class or None)`` for one output against its reference."""
    np = _numpy()
    ref = np.asarray(expected)
    if output is None or not hasattr(output, "shape"):
        got = type(output).__name__
        return ShapeResult(
            shape_id=shape_id,
            passed=False,
            message=f"expected an array of shape {list(ref.shape)}, got {got}",
        ), FailureClass.INCORRECT_SHAPE
    out = np.asarray(output)
    common = {
        "shape_id": shape_id,
        "atol": atol,
        "rtol": rtol,
        "required_matched_ratio": required_matched_ratio,
    }
    if out.shape != ref.shape:
        return (
            ShapeResult(
                passed=False,
                message=f"expected shape {list(ref.shape)}, got {list(out.shape)}",
                **common,
            ),
            FailureClass.INCORRECT_SHAPE,
        )
    if out.dtype != ref.dtype:
        return (
            ShapeResult(passed=False, message=f"expected dtype {ref.dtype}, got {out.dtype}", **common),
            FailureClass.INCORRECT_DTYPE,
        )
    n = int(out.size)
    if n == 0:
        return ShapeResult(passed=True, elements=0, matched_ratio=1.0, **common), None
    o = out.astype(np.float64, copy=False)
    r = ref.astype(np.float64, copy=False)
    ref_finite = np.isfinite(r)
    nan_seen = bool(np.isnan(o).any())
    inf_seen = bool(np.isinf(o).any())
    bad_nonfinite = ~np.isfinite(o) & ref_finite
    ref_max_abs = float(np.abs(r[ref_finite]).max()) if ref_finite.any() else 0.0
    diff = np.abs(o - r)
    finite_both = np.isfinite(diff)
    max_abs = float(diff[finite_both].max()) if finite_both.any() else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = diff / np.abs(r)
    rel_ok = np.isfinite(rel)
    max_rel = float(rel[rel_ok].max()) if rel_ok.any() else 0.0
    # elements equal (incl. matching inf/nan) or within tolerance
    close = (diff <= atol + rtol * np.abs(r)) | (o == r) | (np.isnan(o) & np.isnan(r))
    matched = float(close.sum()) / n
    fields = {
        "max_abs_error": max_abs if math.isfinite(max_abs) else None,
        "max_rel_error": max_rel if math.isfinite(max_rel) else None,
        "matched_ratio": matched,
        "reference_max_abs": ref_max_abs,
        "nan_seen": nan_seen,
        "inf_seen": inf_seen,
        "elements": n,
    }
    if bad_nonfinite.any():
        count = int(bad_nonfinite.sum())
        return (
            ShapeResult(
                passed=False,
                message=f"{count} of {n} outputs are NaN or infinite where the reference is finite",
                **common,
                **fields,
            ),
            FailureClass.NAN_INF,
        )
    if matched < required_matched_ratio:
        return (
            ShapeResult(
                passed=False,
                message=(
                    f"{n - int(close.sum())} of {n} elements outside atol={atol:g} + rtol={rtol:g}*|ref| "
                    f"(max abs error {max_abs:.3g})"
                ),
                **common,
                **fields,
            ),
            FailureClass.INCORRECT_NUMERICAL,
        )
    return ShapeResult(passed=True, **common, **fields), None
