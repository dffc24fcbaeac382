"""KE7xx: a correctness check that could fail."""

from __future__ import annotations

from typing import Any

from ._common import lazy_re
from ._context import Add, Ctx
from ._engine import declare
from ._tables import dtype_class
from .status import _is_output

declare(
    "KE701",
    "error",
    "the tolerance can fail",
    "tighten atol below the reference's magnitude, keep rtol below 1, and use inputs with non-trivial outputs",
    "A correctness check that an all-zeros output would pass is vacuous: it happens when the largest reference magnitude r satisfies r <= atol + rtol * r (in particular when r <= atol, or when rtol >= 1). Such a check MUST NOT back a passed shape. "
    "Nor MUST a passed validation be against the candidate itself: `task.reference.name` (whole, or its first word before a space or parenthesis) MUST NOT be the subject's name, the lineage's `candidate_id`, or a kernel the candidate's capture expects (`of.expected_kernels`); only names with an underscore or a digit are compared (a generic `gemm` may name an operator).",
)

declare(
    "KE702",
    "warning",
    "a tolerance is judged with the reference's magnitude",
    "record /validation/shapes/N/reference_max_abs (the largest |reference| value)",
    "A shape passed under an absolute or relative tolerance SHOULD record "
    "`reference_max_abs`: without it nobody can tell whether an all-zeros output would "
    "have passed (KE701) or whether the error is within its bound (KE411). When the packet "
    "claims a speedup, a passed shape of a floating-point output (the output tensor's dtype, "
    "else the task's dtypes; unknown counts as floating) SHOULD also be judged under some "
    "tolerance (its own atol/rtol or `task.tolerance`) unless it records an exact match "
    "(`max_abs_error` 0), and SHOULD record its error (`max_abs_error` or `max_rel_error`): "
    "without them its pass cannot be checked. Graded C at best.",
    caps="C",
)
declare("KE703", "warning", "the matched-ratio requirement checks the output",
     "require (nearly) every element to match: required_matched_ratio of 0.99 or more",
     "A shape passed under a `required_matched_ratio` (its own, else the task's) below 0.99 "
     "SHOULD NOT back a result: that share of wrong elements (half, for 0.5) passes. Graded "
     "C at best.", caps="C")  # fmt: skip


def check(p: Any, ctx: Ctx, add: Add) -> None:
    v = p.validation
    if v is not None:
        if v.shapes:
            _tolerance(p, v, ctx.claim, add)
        if v.verdict == "passed" and p.task is not None and p.task.reference is not None:
            _self_reference(p, p.task.reference.name, add)


#: identifier-like names (an underscore or a digit): a generic `gemm` may name an operator
_SPECIFIC = lazy_re(r"[_0-9]")
_HEAD = lazy_re(r"[\s(\[,;:]")


def _self_reference(p: Any, name: str, add: Add) -> None:
    """KE701: the reference is the candidate: a check against itself cannot fail."""
    ref = name.strip().casefold()
    head = _HEAD.split(ref, 1)[0]
    mine = [p.subject.name]
    lin = p.lineage
    if lin is not None and lin.candidate_id:
        mine.append(lin.candidate_id)
    for cap in p.profiler or ():
        of = cap.of
        if of is not None and of.side == "candidate" and of.expected_kernels:
            mine.extend(of.expected_kernels)
    for m in mine:
        m = m.strip().casefold()
        if m in (ref, head) and _SPECIFIC.search(m):
            add(
                (
                    "KE701",
                    "/task/reference/name",
                    f"task.reference `{name}` is the candidate itself (`{m}`): validating it against its own output cannot fail",
                )
            )
            return


_FLOAT_CLASSES = frozenset({"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4"})
_INT_DTYPE = lazy_re(r"^(u?int\d*|[isu]\d+|bool|torch\.u?int\d*|torch\.bool)$")


def _float_output(task: Any, shape_id: str) -> bool:
    """Whether a shape's output is floating point: its output tensor's dtype, else the
    task's dtypes (any floating one); True when nothing says (unknown counts as floating)."""
    dts: list[str] = []
    if task is not None:
        for sh in task.shapes or ():
            if sh.id == shape_id:
                for t in sh.tensors or ():
                    if _is_output(t.name) and t.dtype:
                        dts.append(t.dtype)
                break
        if not dts and task.dtypes:
            dts = list(task.dtypes)
    if not dts:
        return True
    return any(dtype_class(d) in _FLOAT_CLASSES or not _INT_DTYPE.match(d.strip().casefold()) for d in dts)


def _tolerance(p: Any, v: Any, claim: bool, add: Add) -> None:
    tol = p.task.tolerance if p.task is not None else None
    for i, s in enumerate(v.shapes):
        if not s.passed:
            continue
        atol = s.atol if s.atol is not None else (tol.atol if tol is not None else None)
        rtol = s.rtol if s.rtol is not None else (tol.rtol if tol is not None else None)
        if (
            claim
            and (atol is not None or rtol is not None)
            and s.max_abs_error is None
            and s.max_rel_error is None
            and _float_output(p.task, s.shape_id)
        ):
            add(
                (
                    "KE702",
                    f"/validation/shapes/{i}/max_abs_error",
                    f"shape `{s.shape_id}` of a floating-point output passed under atol {atol or 0.0:g} / rtol "
                    f"{rtol or 0.0:g} with no max_abs_error or max_rel_error: its pass cannot be checked",
                )
            )
        if (
            claim
            and atol is None
            and rtol is None
            and s.max_abs_error != 0
            and _float_output(p.task, s.shape_id)
        ):
            err = "" if s.max_abs_error is None else f" (max_abs_error {s.max_abs_error:g})"
            add(
                (
                    "KE702",
                    f"/validation/shapes/{i}",
                    f"shape `{s.shape_id}` of a floating-point output passed with no tolerance (neither its "
                    f"atol/rtol nor task.tolerance) and no exact match{err}: its pass cannot be checked",
                )
            )
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
