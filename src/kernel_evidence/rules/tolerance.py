"""KE7xx: a correctness check that could fail."""

from __future__ import annotations

from typing import Any

from ._context import Add, Ctx
from ._engine import declare

declare(
    "KE701",
    "error",
    "the tolerance can fail",
    "tighten atol below the reference's magnitude, keep rtol below 1, and use inputs with non-trivial outputs",
    "A correctness check that an all-zeros output would pass is vacuous: it happens when the largest reference magnitude r satisfies r <= atol + rtol * r (in particular when r <= atol, or when rtol >= 1). Such a check MUST NOT back a passed shape.",
)

declare(
    "KE702",
    "warning",
    "a tolerance is judged with the reference's magnitude",
    "record /validation/shapes/N/reference_max_abs (the largest |reference| value)",
    "A shape passed under an absolute or relative tolerance SHOULD record "
    "`reference_max_abs`: without it nobody can tell whether an all-zeros output would "
    "have passed (KE701) or whether the error is within its bound (KE411). Graded C at best "
    "when the packet claims a speedup.",
    caps="C",
)
declare("KE703", "warning", "the matched-ratio requirement checks the output",
     "require (nearly) every element to match: required_matched_ratio of 0.99 or more",
     "A shape passed under a `required_matched_ratio` (its own, else the task's) below 0.99 "
     "SHOULD NOT back a result: that share of wrong elements (half, for 0.5) passes. Graded "
     "C at best.", caps="C")  # fmt: skip


def check(p: Any, ctx: Ctx, add: Add) -> None:
    v = p.validation
    if v is not None and v.shapes:
        _tolerance(p, v, add)


def _tolerance(p: Any, v: Any, add: Add) -> None:
    tol = p.task.tolerance if p.task is not None else None
    for i, s in enumerate(v.shapes):
        if not s.passed:
            continue
        atol = s.atol if s.atol is not None else (tol.atol if tol is not None else None)
        rtol = s.rtol if s.rtol is not None else (tol.rtol if tol is not None else None)
        req = s.required_matched_ratio
        if req is None and tol is not None:
            req = tol.required_matched_ratio
        if req is not None and req < 0.99:
            add(
                (
                    "KE703",
                    f"/validation/shapes/{i}/required_matched_ratio",
                    f"shape `{s.shape_id}` passed with only {req:g} of its elements required to match",
                )
            )
        if s.reference_max_abs is None and (atol is not None or rtol is not None):
            add(
                (
                    "KE702",
                    f"/validation/shapes/{i}/reference_max_abs",
                    f"shape `{s.shape_id}` passed under atol/rtol without the reference's magnitude: whether zeros would pass is unknown",
                )
            )
        if atol is not None and s.reference_max_abs is not None and s.reference_max_abs < atol:
            add(
                (
                    "KE701",
                    f"/validation/shapes/{i}",
                    f"shape `{s.shape_id}`: largest reference magnitude {s.reference_max_abs:g} is below atol {atol:g}; an all-zeros output would pass",
                )
            )
        elif rtol is not None and rtol >= 1:
            add(
                (
                    "KE701",
                    f"/validation/shapes/{i}",
                    f"shape `{s.shape_id}`: rtol {rtol:g} >= 1 lets an all-zeros output pass",
                )
            )
        elif (
            (atol is not None or rtol is not None)
            and (ref := s.reference_max_abs) is not None
            and ref <= (atol or 0.0) + (rtol or 0.0) * ref
        ):
            # an all-zeros output passes the element of largest magnitude, so every element:
            # |0 - ref| <= atol + rtol * |ref|
            add(
                (
                    "KE701",
                    f"/validation/shapes/{i}",
                    f"shape `{s.shape_id}`: largest reference magnitude {ref:g} is within atol {atol or 0.0:g} + rtol {rtol or 0.0:g} of zero; an all-zeros output would pass",
                )
            )
