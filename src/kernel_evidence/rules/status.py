"""KE4xx: the status, the failure class and the validation tell one story."""

from __future__ import annotations

from typing import Any

from ._common import a as _a
from ._context import Add, Ctx
from ._engine import declare

declare(
    "KE401",
    "error",
    "only passed packets claim performance",
    "remove /timing/speedup from a packet that did not pass",
    "A `failed`, `error` or `skipped` packet MUST NOT carry `timing.speedup`: a wrong or broken "
    "candidate has no speed worth claiming.",
)
declare(
    "KE402",
    "error",
    "failures carry a failure class; passes do not",
    "set /failure/failure_class for failed and error packets; drop /failure from passed ones",
    "`failed` and `error` packets MUST carry `failure` with a class from the taxonomy; `passed` "
    "packets MUST NOT carry `failure`.",
)
declare(
    "KE403",
    "error",
    "failure class fits the status",
    "use `failed` for faults of the candidate and `error` for infrastructure or reference problems",
    "`failed` takes compile_error, runtime_error, timeout, incorrect_shape, incorrect_dtype, "
    "incorrect_numerical, nan_inf, reward_hack; `error` takes infra_error, invalid_reference, "
    "timeout, runtime_error.",
)
declare(
    "KE404",
    "error",
    "a kernel claim rests on validated output",
    "validate the candidate against the reference and record /validation with verdict passed",
    "A kernel speedup claim MUST carry `validation` with verdict `passed`: the speed of a kernel "
    "whose output was not checked is not evidence.",
)
declare(
    "KE405",
    "error",
    "status agrees with the validation verdict",
    "make /status and /validation/verdict agree",
    "A `passed` packet MUST NOT carry a failed validation.",
)
declare(
    "KE406",
    "error",
    "correctness failures carry validation",
    "record /validation with the per-shape results that failed",
    "Packets failed for incorrect_shape, incorrect_dtype, incorrect_numerical or nan_inf MUST "
    "carry `validation` with a `failed` verdict: the per-shape results are the training signal.",
)
declare(
    "KE407",
    "error",
    "verdict agrees with the per-shape results",
    "recompute the verdict from /validation/shapes",
    "A `passed` verdict MUST NOT include a failed shape or one where NaN/Inf was seen; a "
    "`failed` verdict MUST include at least one failed shape when shapes are listed.",
)
declare("KE408", "error", "a skipped run measured nothing",
     "drop /timing from a skipped packet, or give it the status the run really had",
     "A `skipped` packet MUST NOT carry `timing`: a run that was skipped has no measurements.")  # fmt: skip

_FAILED_CLASSES = frozenset({
    "compile_error", "runtime_error", "timeout", "incorrect_shape", "incorrect_dtype",
    "incorrect_numerical", "nan_inf", "reward_hack",
})  # fmt: skip
_ERROR_CLASSES = frozenset({"infra_error", "invalid_reference", "timeout", "runtime_error"})
_NEEDS_VALIDATION = frozenset({"incorrect_shape", "incorrect_dtype", "incorrect_numerical", "nan_inf"})


def check(p: Any, ctx: Ctx, add: Add) -> None:
    status = ctx.status
    f = p.failure
    v = p.validation
    if ctx.claim:
        if status != "passed":
            add(("KE401", "/timing/speedup", f"{_a(status)} {status} packet claims a speedup"))
        if p.subject.kind == "kernel":
            if v is None:
                add(("KE404", "/validation", "claims a kernel speedup without validation"))
            elif v.verdict != "passed":
                add(("KE404", "/validation/verdict", "claims a kernel speedup but validation did not pass"))
    if status == "skipped" and p.timing is not None:
        add(("KE408", "/timing", "a skipped packet carries timing; a skipped run measured nothing"))
    if f is None:
        if status in ("failed", "error"):
            add(("KE402", "/failure", f"{_a(status)} {status} packet has no failure class"))
    else:
        fc = f.failure_class._value_
        if status == "passed":
            add(("KE402", "/failure", "a passed packet carries a failure"))
        elif status == "failed" and fc not in _FAILED_CLASSES:
            add(
                (
                    "KE403",
                    "/failure/failure_class",
                    f"failure class `{fc}` is not a fault of the candidate; use status `error`",
                )
            )
        elif status == "error" and fc not in _ERROR_CLASSES:
            add(
                (
                    "KE403",
                    "/failure/failure_class",
                    f"failure class `{fc}` is a fault of the candidate; use status `failed`",
                )
            )
        if fc in _NEEDS_VALIDATION:
            if v is None:
                add(("KE406", "/validation", f"{_a(fc)} {fc} failure without validation results"))
            elif v.verdict != "failed":
                add(
                    (
                        "KE406",
                        "/validation/verdict",
                        f"{_a(fc)} {fc} failure whose validation verdict is passed",
                    )
                )
    if v is None:
        return
    if status == "passed" and v.verdict == "failed":
        add(("KE405", "/validation/verdict", "status is passed but validation failed"))
    shapes = v.shapes
    if shapes:
        bad = -1  # the first shape that failed or saw NaN/Inf
        for i, s in enumerate(shapes):
            if not s.passed or s.nan_seen or s.inf_seen:
                bad = i
                break
        if v.verdict == "passed" and bad >= 0:
            add(
                (
                    "KE407",
                    f"/validation/shapes/{bad}",
                    f"verdict passed but shape `{shapes[bad].shape_id}` failed or saw NaN/Inf",
                )
            )
        elif v.verdict == "failed" and bad < 0:
            add(("KE407", "/validation/verdict", "verdict failed but every listed shape passed"))
