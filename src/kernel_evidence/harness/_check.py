"""Compare a candidate's output with the reference, per shape, and name what went wrong.

numpy is imported here only, when a harness calls :meth:`CandidateRecord.check`.
"""

from __future__ import annotations

import copy
import math
import sys
from typing import Any

from ..errors import MissingExtra
from ..models import FailureClass, ShapeResult

__all__ = ["compare_arrays", "materialized", "same_values", "snapshot"]

_PLAIN = (int, float, complex, bool, str, bytes, type(None))


def _is_tensor(obj: Any) -> bool:
    """A torch-like tensor: ``detach``, ``clone`` and a ``shape``."""
    return (
        callable(getattr(obj, "detach", None))
        and callable(getattr(obj, "clone", None))
        and hasattr(obj, "shape")
    )


def snapshot(obj: Any) -> Any:
    """A copy of ``obj`` as it is now: numpy arrays copied, tensors cloned on their device
    (on the current stream: work still running on another stream is not waited for),
    tuples, lists and dicts copied member by member, plain values as they are. Anything
    else is deep-copied where it can be, else kept as the object itself (a future or a
    lazy result stays what it is, and :func:`materialized` says so)."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        return obj.copy()
    if isinstance(obj, _PLAIN):
        return obj
    if _is_tensor(obj):
        return obj.detach().clone()
    if isinstance(obj, tuple):
        return tuple(snapshot(o) for o in obj)
    if isinstance(obj, list):
        return [snapshot(o) for o in obj]
    if isinstance(obj, dict):
        return {k: snapshot(v) for k, v in obj.items()}
    try:
        return copy.deepcopy(obj)
    except Exception:  # noqa: BLE001 - locks, handles: what cannot be copied is kept as is
        return obj


#: packages whose array types hold (or, on a device, are being given) their values: a
#: result of one of these types is data, not a promise made by the candidate's own code
_ARRAY_PACKAGES = frozenset({"numpy", "torch", "jax", "jaxlib", "cupy"})


def materialized(obj: Any) -> bool:
    """True when ``obj`` is data: a plain value, an array or tensor of numpy, torch, JAX or
    CuPy, or a tuple/list of these. A future, a generator, or an object of the candidate's
    own that computes its values when asked (``__array__`` on demand) is not."""
    np = sys.modules.get("numpy")
    if isinstance(obj, _PLAIN) or (np is not None and isinstance(obj, (np.ndarray, np.generic))):
        return True
    if isinstance(obj, (tuple, list)):
        return all(materialized(o) for o in obj)
    package = type(obj).__module__.split(".")[0]
    return package in _ARRAY_PACKAGES and hasattr(obj, "shape")


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise MissingExtra("numpy", "harness", "comparing arrays in CandidateRecord.check()") from None
    return numpy


#: elements compared at a time: bounds the temporary float64 copies of a huge output
_CHUNK = 1 << 20


def _dtype_name(obj: Any, arr: Any) -> str:
    """``float32``, ``bfloat16``, ...: numpy's name, or torch's without the ``torch.`` prefix."""
    dtype = getattr(obj, "dtype", None)
    name = str(dtype) if dtype is not None else str(arr.dtype)
    return name.removeprefix("torch.")


def _host_array(np: Any, obj: Any) -> Any:
    """A numpy array of ``obj``; a torch-like tensor is detached and copied to the host first
    (a CUDA tensor cannot become a numpy array in place; bfloat16 has no numpy dtype)."""
    if not isinstance(obj, np.ndarray) and callable(getattr(obj, "detach", None)):
        host = obj.detach()
        if callable(getattr(host, "cpu", None)):
            host = host.cpu()
        try:
            return np.asarray(host)
        except (TypeError, RuntimeError, ValueError):
            if callable(getattr(host, "float", None)):
                return np.asarray(host.float())
            raise
    return np.asarray(obj)


def same_values(a: Any, b: Any) -> bool:
    """True when two outputs hold the same values (and shape): an output that does not
    change when its inputs do was not computed from them."""
    np = _numpy()
    try:
        x, y = _host_array(np, a), _host_array(np, b)
    except (TypeError, ValueError, RuntimeError):
        return False
    return bool(x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))


def compare_arrays(
    shape_id: str,
    output: Any,
    expected: Any,
    *,
    atol: float,
    rtol: float,
    required_matched_ratio: float = 1.0,
) -> tuple[ShapeResult, FailureClass | None]:
    """``(shape result, failure class or None)`` for one output against its reference.

    Arrays are numpy arrays, anything ``numpy.asarray`` takes, or torch-like tensors (on
    any device: they are copied to the host). An output without a ``shape`` fails as
    ``incorrect_shape`` unless the reference has none either (plain Python data). NaN or
    infinity in the output counts (``nan_seen``, ``inf_seen``, class ``nan_inf``) where the
    reference is finite; where the reference holds the same value it is a match. Complex
    values compare by the modulus of the difference. Huge arrays are compared in chunks.
    """
    np = _numpy()
    ref = _host_array(np, expected)
    if output is None or (not hasattr(output, "shape") and hasattr(expected, "shape")):
        got = type(output).__name__
        return ShapeResult(
            shape_id=shape_id,
            passed=False,
            message=f"expected an array of shape {list(ref.shape)}, got {got}",
        ), FailureClass.INCORRECT_SHAPE
    try:
        out = _host_array(np, output)
    except (TypeError, ValueError) as exc:  # e.g. a ragged nested list
        return ShapeResult(
            shape_id=shape_id,
            passed=False,
            message=f"expected an array of shape {list(ref.shape)}, got {type(output).__name__} ({exc})"[
                :1000
            ],
        ), FailureClass.INCORRECT_SHAPE
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
    out_dtype, ref_dtype = _dtype_name(output, out), _dtype_name(expected, ref)
    if out_dtype != ref_dtype:
        return (
            ShapeResult(passed=False, message=f"expected dtype {ref_dtype}, got {out_dtype}", **common),
            FailureClass.INCORRECT_DTYPE,
        )
    n = int(out.size)
    if n == 0:
        return ShapeResult(passed=True, elements=0, matched_ratio=1.0, **common), None
    complex_ = np.iscomplexobj(out) or np.iscomplexobj(ref)
    work = np.complex128 if complex_ else np.float64
    o_all = out.reshape(-1)
    r_all = ref.reshape(-1)
    nan_seen = inf_seen = False
    bad_count = close_count = 0
    ref_max_abs = max_abs = max_rel = 0.0
    with np.errstate(all="ignore"):
        for start in range(0, n, _CHUNK):
            o = o_all[start : start + _CHUNK].astype(work, copy=False)
            r = r_all[start : start + _CHUNK].astype(work, copy=False)
            ref_finite = np.isfinite(r)
            o_nan = np.isnan(o)
            o_inf = np.isinf(o)
            nan_seen = nan_seen or bool((o_nan & ref_finite).any())
            inf_seen = inf_seen or bool((o_inf & ref_finite).any())
            bad_count += int(((o_nan | o_inf) & ref_finite).sum())
            abs_r = np.abs(r)
            if ref_finite.any():
                ref_max_abs = max(ref_max_abs, float(abs_r[ref_finite].max()))
            diff = np.abs(o - r)
            finite_diff = np.isfinite(diff)
            if finite_diff.any():
                max_abs = max(max_abs, float(diff[finite_diff].max()))
            rel = diff / abs_r
            rel_ok = np.isfinite(rel)
            if rel_ok.any():
                max_rel = max(max_rel, float(rel[rel_ok].max()))
            # elements equal (incl. matching inf/nan) or within tolerance
            close = (diff <= atol + rtol * abs_r) | (o == r) | (o_nan & np.isnan(r))
            close_count += int(close.sum())
    matched = close_count / n
    fields = {
        "max_abs_error": max_abs if math.isfinite(max_abs) else None,
        "max_rel_error": max_rel if math.isfinite(max_rel) else None,
        "matched_ratio": matched,
        "reference_max_abs": ref_max_abs if math.isfinite(ref_max_abs) else None,
        "nan_seen": nan_seen,
        "inf_seen": inf_seen,
        "elements": n,
    }
    if bad_count:
        return (
            ShapeResult(
                passed=False,
                message=f"{bad_count} of {n} outputs are NaN or infinite where the reference is finite",
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
                    f"{n - close_count} of {n} elements outside atol={atol:g} + rtol={rtol:g}*|ref| "
                    f"(max abs error {max_abs:.3g})"
                ),
                **common,
                **fields,
            ),
            FailureClass.INCORRECT_NUMERICAL,
        )
    return ShapeResult(passed=True, **common, **fields), None
