"""KE7xx: a correctness check that could fail."""

from __future__ import annotations

from typing import Any

from ._common import CACHED_CHARS, lazy_re
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
    "Nor MUST a passed validation be against the candidate itself: `task.reference.name` (whole, or its first word before a space or parenthesis) MUST NOT be the subject's name, the lineage's `candidate_id`, or a kernel the candidate's capture expects (`of.expected_kernels`); only names with an underscore or a digit are compared (a generic `gemm` may name an operator). "
    "Nor MUST a passed shape behind a speedup claim have been validated on inputs set to zero: a dim of its task shape "
    "that sets the inputs' magnitude (a name ending in scale, std, range, magnitude or amplitude "
    "after a word naming the inputs: `input_scale`, `x_std`, `init_range`; or a bare `std`, "
    "`sigma`, `magnitude`, `amplitude`) MUST NOT be 0 (at `/task/shapes/N/dims/NAME`). Nor MUST "
    "a passed floating-point shape that requires every element to match record `max_rel_error` "
    ">= 1 (an element wrong by all of its value) beside a `max_abs_error` of at least half its "
    "`reference_max_abs`: a check that wide passes outputs zeroed where the signal is (at "
    "`/validation/shapes/N/max_rel_error`).",
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
    "without them its pass cannot be checked. Nor SHOULD a passed shape's bound at the "
    "reference's largest magnitude, (atol + rtol * reference_max_abs) / reference_max_abs, "
    "exceed its floating-point output's ceiling (the loosest class among the output tensor's "
    "dtype, else the task's dtypes; long reductions allowed for: 0.05 for fp64/fp32/tf32, 0.1 "
    "for bf16/fp16, 0.25 for fp8/fp6/fp4) where the error it passed is above that ceiling too "
    "(`max_abs_error` over that share of `reference_max_abs`, and `max_rel_error`, when "
    "recorded, over the ceiling): outputs that wrong passed only because the tolerance was "
    "widened. Graded C at best.",
    caps="C",
)
declare("KE703", "warning", "the matched-ratio requirement checks the output",
     "require (nearly) every element to match: required_matched_ratio of 0.99 or more",
     "A shape passed under a `required_matched_ratio` (its own, else the task's) below 0.99 "
     "SHOULD NOT back a result: that share of wrong elements (half, for 0.5) passes. Graded "
     "C at best.", caps="C")  # fmt: skip
declare(
    "KE704",
    "warning",
    "an exact match of a floating-point reduction is believable",
    "record the tolerance the output was checked under, and its error",
    "A passed shape that records an exact match (`max_abs_error` 0) with no tolerance (neither "
    "its atol/rtol nor `task.tolerance`) SHOULD NOT be a floating-point output of a reduction "
    "(`task.operator` naming a GEMM, matmul, linear, convolution, attention, norm, softmax, "
    "sum, mean or other reduction; without an operator, a shape with a `k` dim) when the packet "
    "claims a speedup: another implementation's accumulation order does not match the "
    "reference bit for bit, so the exact match is unchecked (a copy, gather or permute, or an "
    "integer or boolean output, is not judged). Graded C at best.",
    caps="C",
)


def check(p: Any, ctx: Ctx, add: Add) -> None:
    v = p.validation
    if v is not None:
        if v.shapes:
            _tolerance(p, v, ctx.claim, add)
            task = p.task
            if ctx.claim and task is not None:
                shapes = task.shapes
                if shapes:
                    for sh in shapes:
                        d = sh.dims
                        if d and 0 in d.values():  # no zero dim: the common case
                            _zero_scale(shapes, v.shapes, add)
                            break
        if v.verdict == "passed" and p.task is not None and p.task.reference is not None:
            _self_reference(p, p.task.reference.name, add)


#: the last word of a dim that sets the inputs' magnitude (`input_scale`, `init_std`,
#: `value_range`): 0 makes every input the same (zeros), and any kernel that writes the
#: constant output passes
_SCALE_WORDS = frozenset({"scale", "std", "stddev", "sigma", "range", "magnitude", "amplitude"})
#: ... when it names the inputs (`input_scale`, `x_std`): a bare `scale` or a `rope_scale`
#: may be an operator's parameter (0: not set); a bare spread word is the inputs'
_INPUT_WORDS = frozenset(
    {"input", "inputs", "in", "x", "data", "init", "value", "values", "rand", "random", "noise"}
)
_SPREAD_WORDS = frozenset({"std", "stddev", "sigma", "magnitude", "amplitude"})
_DIM_WORD = lazy_re(r"[^a-z]+")
#: by dim name (short ones only): whether it names the inputs' magnitude
_SCALE_DIM_CACHE: dict[str, bool] = {}


def _scale_dim(name: str) -> bool:
    hit = _SCALE_DIM_CACHE.get(name)
    if hit is None:
        words = [w for w in _DIM_WORD.split(name.casefold()) if w]
        hit = bool(words) and (
            (words[-1] in _SCALE_WORDS and any(w in _INPUT_WORDS for w in words[:-1]))
            or (len(words) == 1 and words[0] in _SPREAD_WORDS)
        )
        if len(_SCALE_DIM_CACHE) < 1024 and len(name) <= CACHED_CHARS:
            _SCALE_DIM_CACHE[name] = hit
    return hit


def _zero_scale(shapes: Any, results: Any, add: Add) -> None:
    """KE701: a passed shape whose dims set the inputs' magnitude to 0 (`input_scale: 0`)."""
    for i, sh in enumerate(shapes):
        dims = sh.dims
        if not dims or 0 not in dims.values():
            continue
        for k, x in dims.items():
            if x == 0 and x is not False and _scale_dim(k):
                if any(r.passed and r.shape_id == sh.id for r in results):
                    add(
                        (
                            "KE701",
                            f"/task/shapes/{i}/dims/{k.replace('~', '~0').replace('/', '~1')}",
                            f"shape `{sh.id}` passed with dims {k[:64]} 0: its inputs are all zero (or all the "
                            "same), so a kernel that writes the constant output passes",
                        )
                    )
                break


#: identifier-like names (an underscore or a digit): a generic `gemm` may name an operator
_SPECIFIC = lazy_re(r"[_0-9]")
_HEAD = lazy_re(r"[\s(\[,;:]")


#: by reference name (short ones only): its folded whole and first word, or () where the
#: whole has no underscore or digit (nor then has its first word, a part of it): a name
#: that matches one of them must have one, so a generic reference matches none
_REF_CACHE: dict[str, tuple[str, ...]] = {}


def _self_reference(p: Any, name: str, add: Add) -> None:
    """KE701: the reference is the candidate: a check against itself cannot fail."""
    refs = _REF_CACHE.get(name)
    if refs is None:
        ref = name.strip().casefold()
        refs = (ref, _HEAD.split(ref, 1)[0]) if _SPECIFIC.search(ref) else ()
        if len(_REF_CACHE) < 1024 and len(name) <= CACHED_CHARS and len(ref) <= CACHED_CHARS:
            _REF_CACHE[name] = refs
    if not refs:
        return
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
        if m in refs and _SPECIFIC.search(m):
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
        if claim and atol is None and rtol is None and _float_output(p.task, s.shape_id):
            if s.max_abs_error != 0:
                err = "" if s.max_abs_error is None else f" (max_abs_error {s.max_abs_error:g})"
                add(
                    (
                        "KE702",
                        f"/validation/shapes/{i}",
                        f"shape `{s.shape_id}` of a floating-point output passed with no tolerance (neither its "
                        f"atol/rtol nor task.tolerance) and no exact match{err}: its pass cannot be checked",
                    )
                )
            elif (op := _reduction(p.task, s.shape_id)) is not None:
                add(
                    (
                        "KE704",
                        f"/validation/shapes/{i}",
                        f"shape `{s.shape_id}` records an exact match (max_abs_error 0) with no tolerance for a "
                        f"floating-point {op}: another implementation's accumulation order does not match bit "
                        "for bit; record the tolerance it was checked under",
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
        elif (
            (ref := s.reference_max_abs) is not None
            and ref > 0
            and (bound := ((atol or 0.0) + (rtol or 0.0) * ref) / ref) > _LOOSEST_TIGHT
        ):
            _loose(p, i, s, atol, rtol, ref, bound, add)
            if bound >= 0.5:
                _zeroed(p, i, s, ref, req, add)


def _zeroed(p: Any, i: int, s: Any, ref: float, req: Any, add: Add) -> None:
    """KE701: a passed shape with an element wrong by all of its value and an error half the
    output's range (only under a bound of half the range or more: else KE411's)."""
    rel = s.max_rel_error
    err = s.max_abs_error
    if (
        rel is not None
        and rel >= 1
        and err is not None
        and err >= 0.5 * ref
        and (req is None or req >= 1)
        and _float_output(p.task, s.shape_id)
    ):
        # an element wrong by all of itself, and an error half the output's range: a
        # check this wide passes outputs that are zero where most of the signal is
        add(
            (
                "KE701",
                f"/validation/shapes/{i}/max_rel_error",
                f"shape `{s.shape_id}` passed with max_rel_error {rel:g} (an element wrong by all of its "
                f"value) and max_abs_error {err:g}, {err / ref:.3g} of the reference's largest magnitude "
                f"{ref:g}: a check this wide passes outputs zeroed where the signal is",
            )
        )


#: the bound at the reference's largest magnitude ((atol + rtol * ref) / ref) a passed shape's
#: floating-point output may have, by precision class (long reductions allowed for)
_CEILING = {
    "fp64": 0.05,
    "fp32": 0.05,
    "tf32": 0.05,
    "bf16": 0.1,
    "fp16": 0.1,
    "fp8": 0.25,
    "fp6": 0.25,
    "fp4": 0.25,
}
_LOOSEST_TIGHT = min(_CEILING.values())


def _output_dtypes(task: Any, shape_id: str) -> list[str]:
    """The output tensor's dtypes of a shape, else the task's dtypes."""
    dts: list[str] = []
    if task is None:
        return dts
    for sh in task.shapes or ():
        if sh.id == shape_id:
            for t in sh.tensors or ():
                if _is_output(t.name) and t.dtype:
                    dts.append(t.dtype)
            break
    if not dts and task.dtypes:
        dts = list(task.dtypes)
    return dts


def _loose(p: Any, i: int, s: Any, atol: Any, rtol: Any, ref: float, bound: float, add: Add) -> None:
    """KE702: a tolerance that passes outputs wrong by a large share of their range."""
    ceiling = None
    for d in _output_dtypes(p.task, s.shape_id):
        c = _CEILING.get(dtype_class(d) or "") if len(d) <= 64 else None
        if c is None:
            return  # an integer or unknown output: not judged
        ceiling = c if ceiling is None else max(ceiling, c)
    if ceiling is None or bound <= ceiling * 1.000001:
        return
    # judged by what it let through: the error recorded is itself above the ceiling (a loose
    # bound an accurate kernel did not need harms nothing)
    err = s.max_abs_error
    if err is None or err <= ceiling * ref * 1.000001:
        return
    rel = s.max_rel_error
    if rel is not None and rel <= ceiling:
        return
    # point at the term that makes the bound (the shape's own, else the task's)
    a = (atol or 0.0) / ref
    field = "atol" if a >= (rtol or 0.0) else "rtol"
    own = s.atol if field == "atol" else s.rtol
    ptr = f"/validation/shapes/{i}/{field}" if own is not None else f"/task/tolerance/{field}"
    add(
        (
            "KE702",
            ptr,
            f"shape `{s.shape_id}` passed under atol {atol or 0.0:g} + rtol {rtol or 0.0:g} * |ref|: at the "
            f"reference's largest magnitude {ref:g} that is {bound:.3g} of it, above the {ceiling:g} its "
            f"precision needs, and it passed a max_abs_error of {err:g} ({err / ref:.3g} of it)",
        )
    )


#: operators whose output element sums many inputs (not a copy, gather or permute)
_REDUCING = lazy_re(
    r"gemm|matmul|(?<![a-z])b?mm(?![a-z])|addmm|linear|dense|conv|attention|attn|sdpa|norm|softmax|"
    r"reduc|(?<![a-z])sum|mean|einsum|dot|cumsum|scan|moe|mlp|ffn"
)


def _reduction(task: Any, shape_id: str) -> str | None:
    """What names a shape's operator a reduction (a GEMM's `k` dim, or the operator), or None."""
    if task is None:
        return None
    op = task.operator
    if op:
        # a named operator decides (a top-k's `k` is no reduction)
        return f"`{op}` reduction" if len(op) <= 128 and _REDUCING.search(op.casefold()) else None
    for sh in task.shapes or ():
        if sh.id == shape_id:
            dims = sh.dims
            if dims and ("k" in dims or "K" in dims):
                return "reduction over k"
            break
    return None
