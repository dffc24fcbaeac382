"""KE4xx: the status, the failure class and the validation tell one story."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from ._common import CACHED_CHARS, lazy_re
from ._common import HI as _HI
from ._common import LO as _LO
from ._common import a as _a
from ._context import Add, Ctx
from ._engine import declare
from ._units import FACTOR as _FACTOR
from .baseline import _llc, small_flush

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
    "timeout, runtime_error. The packet's own record MUST NOT contradict the class: a "
    "failed packet's class beside a failed anti-gaming defence (any but `cache_flush`) MUST "
    "be `reward_hack` (the harness caught the candidate); an `error` "
    "packet MUST NOT carry a failed defence, nor a validation whose verdict failed or that "
    "saw NaN/Inf (the candidate's outputs failed: status `failed`), unless it is "
    "`invalid_reference` and the validation's message says the reference is what broke; a "
    "`skipped` packet's class, if any, is a reason the run did not happen (`infra_error`, "
    "`invalid_reference`), and it MUST NOT record a failed compile (`compile.succeeded: "
    "false`): a candidate that was built and failed is `failed`. A `failed` or `error` packet "
    "of another class MUST NOT say, in `failure.message` or `failure.log_excerpt`, that the "
    "harness caught the candidate (a defence check named beside failed/caught, `timer_integrity "
    "FAILED`; the clock replaced, patched or monkeypatched; `reward hack`; cached, stale or memoized "
    "outputs keyed by an input hash, pointer or the inputs, which `unseen_inputs` catches), in a clause "
    "that does not deny it, unless the packet records that check passed: that failure is `reward_hack`.",
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
    "make /status agree with /validation/verdict and /compile/succeeded",
    "A `passed` packet MUST NOT carry a failed validation, nor a failed compile "
    "(`compile.succeeded: false`): a candidate that did not build produced no result.",
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
declare(
    "KE408",
    "error",
    "a skipped run measured nothing",
    "drop /timing from a skipped packet, or give it the status the run really had",
    "A `skipped` packet MUST NOT carry `timing`: a run that was skipped has no measurements.",
)
declare(
    "KE409",
    "error",
    "the timed shape was validated",
    "validate the shape you timed, and record it in /validation/shapes",
    "A passed packet that claims a speedup and lists validated shapes MUST list the timed "
    "shape (`timing.conditions.shape_id`, else `timing.shape_id`) among them: speed "
    "measured on a shape whose output was never checked is not evidence.",
)
declare(
    "KE410",
    "warning",
    "the whole suite was validated",
    "validate every shape of /task/shapes, or list only the shapes that ran",
    "A passed packet SHOULD validate every shape of its suite (`task.shapes`): a shape left "
    "out of `validation.shapes` is where a wrong kernel hides. Graded C at best when it "
    "claims a speedup.",
    caps="C",
)
declare(
    "KE411",
    "error",
    "a passed shape is within its own bound",
    "mark the shape failed, or record the tolerance it was really judged with",
    "A shape marked passed MUST be within its own tolerance: `max_abs_error` at most "
    "`atol + rtol * reference_max_abs` (the bound of the element of largest magnitude; "
    "checked when every element must match, or when `matched_ratio` is 1: an element off by "
    "more than that bound did not match), and `matched_ratio` at least "
    "`required_matched_ratio` (the shape's, else the task's); a shape that states an atol "
    "or rtol looser than the task's (`task.tolerance`) MUST also be within the bound the "
    "task's tolerance gives.",
)
declare(
    "KE412",
    "error",
    "no defence failed on a passed packet",
    "a failed anti-gaming check fails the packet: set status failed (reward_hack) or fix the candidate",
    "A `passed` packet MUST NOT carry a defence (`defences`) whose outcome is `failed`: the "
    "harness caught the candidate (cached outputs, modified inputs, a patched timer, "
    "deferred work). No packet MUST carry a defence recorded `passed` that its own "
    "conditions contradict (`fresh_inputs` passed while a side's conditions say "
    "`fresh_inputs: false` or `validation.inputs_regenerated` is false; `cache_flush` passed "
    "while a side was warm, flushed less than the last-level cache, or its cache mode (the "
    "candidate's flat `cache_policy`) is `unknown`; `unseen_inputs` passed while "
    "`validation.inputs_regenerated` is false and the validation's seeds are only the "
    "replay's, the defence's detail naming no seed of its own; `timer_integrity` passed while "
    "`replay.env` loads a library into the timed process (`LD_PRELOAD`, "
    "`DYLD_INSERT_LIBRARIES`, `LD_AUDIT`, the CUDA driver's `CUDA_INJECTION64_PATH`/"
    "`CUDA_INJECTION32_PATH`, ROCm's `HSA_TOOLS_LIB`/`ROCP_TOOL_LIBRARIES`) other than a "
    "memory allocator or a vendor profiler's own library: it can patch the clock; "
    "`unseen_inputs` passed while its detail names as its seeds only the replay's public ones, "
    "a `replay.seeds` value or the replay command's `--seed`, or seeds the validation drew "
    "(`validation.seeds`); `timer_integrity` passed while `replay.env` sets `PYTHONSTARTUP` or a "
    "`PYTHONPATH` entry in a folder the candidate controls (`candidate`, `submission`, `solution`, "
    "the subject's name), or any injection variable by pattern (`*_INJECTION64_PATH`, "
    "`*_INJECTION32_PATH`, `NVTX_INJECTION*`); `fresh_inputs` or `unseen_inputs` passed while "
    "`validation.seeds` repeats a seed beside `inputs_regenerated: true` (pointer "
    "`/validation/seeds`), or the replay turns reuse of inputs or outputs on: a `replay.env` "
    "variable or command flag named `(reuse|cache|pool|memo)-(input|output|result)s`, "
    "`persist-inputs` or `input-pool` (not a cache's folder, not negated `--no-...`) with a true "
    "value, no value, or a pool size below the timed calls (pointer the variable or "
    "`/replay/command`)) or whose `tool` names the candidate (`subject.name` or a kernel of "
    "`profiler[].of.expected_kernels`, as a whole word; pointer `/defences/i/tool`): the "
    "candidate certified itself; or whose "
    "own `detail` (NFKC-folded, casefolded) says it was not run or not checked (begins `skipped`, "
    "`not run`, `never executed`/`never ran`, `did not`/`was not`/`has not been` run or executed, "
    "`not applicable`, `n/a`, `TODO`, `TBD`, `FIXME`, `pending`, `deferred`, `will run`/`to be run`, "
    "`disabled`, `turned off`, `bypassed`, `waived`, `assumed`, `trusted`..., "
    "`disabled via --no-unseen` too, the same after a `;`; or says anywhere, in a "
    "clause that neither negates nor counts it, `not checked`/`not verified`, `is assumed`/"
    "`is trusted`, `on assumption`, `the check was skipped`; or counts zero items checked, "
    "`on 0 of 1000 requests`, `0 unseen input sets`, in a clause that counts no faults; or "
    "whose own detail contradicts it: `timer_integrity` reports a spin measured more than 5% off "
    "its length, or a sleep or delay measured more than 5% short (`a 1 ms spin measured 0.80 ms`); "
    "`fresh_inputs` says its inputs were reused, allocated once or the same inputs, in a clause "
    "that neither denies it nor speaks only of outputs or of both sides sharing a round's inputs, "
    "with no word of their contents renewed, or draws them from a pool or ring of N (`a pool of "
    "2`, `round-robin over 4`) below the timed calls (repeats); `outputs_checked_after_timing` says "
    "only the warm-up or first call was compared, or a comparison ran before the timed loop, with no "
    "timed call's outputs compared after it, or that the candidate's output buffer is shared with "
    "the reference or written by it; any check restricted to one rank or GPU (`rank 0 only`, `only "
    "on GPU 0`, `on the first rank only`) while the run used more than one (a side's "
    "`device_count`, a launcher's `--nproc_per_node`/`-np`, a tensor-parallel size); `cache_flush` names as its flush (a size beside a memset, buffer "
    "or write, not the cache's own size) no more than a size below the last-level cache or below "
    "a side's `cache.flush_bytes` (read at the most its digits and unit can mean); "
    "`hidden_workload` says the seed was fixed or public in advance (`fixed in the public "
    "config`, `public seed`; a seed released for the replay afterwards is honest). A "
    "packet with timing MUST NOT be replayed under a clock-warping tool, with or without a "
    "`timer_integrity` record: a `faketime`/`datefudge`/`libfaketime` wrapper or `FAKETIME=` in "
    "`replay.command`, a `FAKETIME` variable in `replay.env`, or (where no `timer_integrity` "
    "record exists) a preloaded clock library (`LD_PRELOAD=/opt/libfastclock.so`).",
)
declare("KE413", "warning", "validation covered the output",
     "compare every element of the output (or record the elements compared and why)",
     "A shape marked passed SHOULD have compared its whole output: `elements` below half of "
     "the output tensor's size (a tensor named `out`, `output`, `y`, `c`...) leaves the rest "
     "unchecked. Graded C at best.", caps="C")  # fmt: skip

_FAILED_CLASSES = frozenset({
    "compile_error", "runtime_error", "timeout", "incorrect_shape", "incorrect_dtype",
    "incorrect_numerical", "nan_inf", "reward_hack",
})  # fmt: skip
_ERROR_CLASSES = frozenset({"infra_error", "invalid_reference", "timeout", "runtime_error"})
_NEEDS_VALIDATION = frozenset({"incorrect_shape", "incorrect_dtype", "incorrect_numerical", "nan_inf"})
#: the classes that say why a run did not happen (a skipped packet's reason)
_SKIP_REASONS = frozenset({"infra_error", "invalid_reference"})
_SKIPPED_BUILT = (
    "a skipped packet records a failed compile (compile.succeeded: false): the candidate was built and "
    "failed; use status `failed` (compile_error)"
)


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
        elif status == "skipped" and p.compile is not None and p.compile.succeeded is False:
            add(("KE403", "/status", _SKIPPED_BUILT))
    else:
        fc = f.failure_class._value_
        if status == "passed":
            add(("KE402", "/failure", "a passed packet carries a failure"))
        elif status == "failed":
            if fc not in _FAILED_CLASSES:
                add(
                    (
                        "KE403",
                        "/failure/failure_class",
                        f"failure class `{fc}` is not a fault of the candidate; use status `error`",
                    )
                )
            elif (
                fc != "reward_hack"
                and not (p.defences and _relabelled_hack(p.defences, fc, add))
                and _may_claim_hack(f)
            ):
                _hack_text(f, fc, "", _passed_checks(p.defences), add)
        elif status == "error":
            if fc not in _ERROR_CLASSES:
                add(
                    (
                        "KE403",
                        "/failure/failure_class",
                        f"failure class `{fc}` is a fault of the candidate; use status `failed`",
                    )
                )
            elif not (
                (p.defences or v is not None) and _candidate_fault(p.defences, v, fc, add)
            ) and _may_claim_hack(f):
                _hack_text(f, fc, "; use status `failed`", _passed_checks(p.defences), add)
        elif status == "skipped":
            if fc not in _SKIP_REASONS:
                add(
                    (
                        "KE403",
                        "/status",
                        f"a skipped packet with failure class `{fc}`: the candidate ran (or was built) and "
                        f"failed; use status `{'error' if fc in _ERROR_CLASSES else 'failed'}`",
                    )
                )
            elif p.compile is not None and p.compile.succeeded is False:
                add(("KE403", "/status", _SKIPPED_BUILT))
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
    ds = p.defences
    r = p.replay
    env = r.env if r is not None else None
    kinds = _env_kinds(env) if env and not _CLEAN_NAMES.issuperset(env) else 0
    # the replay command as one string, joined once for the reuse and clock checks (each
    # reads only this text, and caches its verdict by it)
    text: str | None = None
    if ds:
        tool0 = None  # the last tool read, and whether it names the candidate
        own = None
        fresh = None  # the first passed fresh_inputs or unseen_inputs check
        for i, d in enumerate(ds):
            if d.outcome == "failed":
                if status == "passed":
                    add(("KE412", f"/defences/{i}", f"the `{d.check}` defence failed on a passed packet"))
            elif d.outcome == "passed":
                c = d.check
                tool = d.tool
                if tool is not None:
                    if tool != tool0:
                        tool0, own = tool, _self_tool(p, tool)
                    if own is not None:
                        add(
                            (
                                "KE412",
                                f"/defences/{i}/tool",
                                f"the `{c}` defence is recorded passed by `{tool[:80]}`, a tool named for the "
                                f"candidate ({own}): the candidate certified itself",
                            )
                        )
                why = None
                if c == "fresh_inputs":
                    fresh = fresh or c
                    why = _contradicted(p, d)
                elif c == "cache_flush":
                    why = _contradicted(p, d)
                elif c == "timer_integrity":
                    if kinds & (_K_LOAD | _K_PY):
                        why = _contradicted(p, d)
                elif c == "unseen_inputs":
                    fresh = fresh or c
                    if v is not None and v.inputs_regenerated is False:
                        why = _contradicted(p, d)
                    det = d.detail
                    # a detail known to name no seed (cached empty) gives _public_seed nothing
                    if (
                        why is None
                        and det
                        and (r is not None or v is not None)
                        and _SEEDS_NAMED.get(det) != _NO_SEEDS
                    ):
                        why = _public_seed(r, det, v)
                if why is None:
                    det = d.detail
                    if det is None:
                        continue
                    said = _VERDICT_CACHE.get((c, det), _UNREAD)
                    if said is _UNREAD:
                        said = _detail_verdict(c, det)
                    if said is None:
                        continue
                    # a message; or what the detail names, held against this packet: the flush a
                    # cache_flush detail names, a pool of inputs, the one rank checked
                    ts = type(said)
                    why = said if ts is str else _flush_detail(p, said) if ts is tuple else said.against(p)
                    if why is None:
                        continue
                ptr = f"/defences/{i}"
                if isinstance(why, tuple):
                    ptr, why = why
                add(("KE412", ptr, f"the `{c}` defence is recorded passed, but {why}"))
        if fresh is not None:
            # the packet's own record against fresh or unseen inputs, said once: the validation
            # drew a seed twice, or the replay turns reuse of inputs or outputs on
            seeds = v.seeds if v is not None and v.inputs_regenerated else None
            if (
                seeds
                and len(seeds) > 1
                and (seeds[0] == seeds[1] if len(seeds) == 2 else len(set(seeds)) < len(seeds))
            ):
                add(
                    (
                        "KE412",
                        "/validation/seeds",
                        f"the `{fresh}` defence is recorded passed, but {_dup_seeds(seeds)}",
                    )
                )
            if r is not None:
                cmd = r.command
                if cmd:
                    text = " ".join(cmd if len(cmd) <= 256 else cmd[:256])
                if kinds & _K_REUSE or (text is not None and _ARGV_REUSE.get(text) != ()):
                    hit = _reuse_on(p, r, kinds, text)
                    if hit is not None:
                        add(("KE412", hit[0], f"the `{fresh}` defence is recorded passed, but {hit[1]}"))
    if r is not None and (env or r.command) and p.timing is not None:
        shim = _clock_shim(r, ds, kinds, text)
        if shim is not None:
            add(("KE412", shim[0], shim[1]))
    if status == "passed" and p.compile is not None and p.compile.succeeded is False:
        add(
            (
                "KE405",
                "/compile/succeeded",
                "a passed packet records a failed compile (compile.succeeded: false): the candidate did not build",
            )
        )
    if v is None:
        return
    if status == "passed" and v.shapes:
        _shapes_cover(p, v, ctx.claim, add)
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


def _passed_checks(ds: Any) -> frozenset[str]:
    """The defence checks recorded passed."""
    return frozenset(d.check for d in ds if d.outcome == "passed") if ds else frozenset()


def _hack_defence(ds: Any) -> tuple[int, Any] | None:
    """The first failed anti-gaming defence that catches the candidate (a failed
    ``cache_flush`` is the harness's flush, not the candidate's doing), with its index."""
    for i, d in enumerate(ds):
        if d.outcome == "failed" and d.check != "cache_flush":
            return i, d
    return None


def _relabelled_hack(ds: Any, fc: str, add: Add) -> bool:
    """KE403: another failure class beside a failed defence (a correctness class, or a
    compile error, run-time error or timeout filed after the defence failed): the harness
    caught the candidate gaming it, and that failure is ``reward_hack`` (the recorder files
    it so; reward gives it the penalty the other classes escape)."""
    hit = _hack_defence(ds)
    if hit is not None:
        i, d = hit
        add(
            (
                "KE403",
                "/failure/failure_class",
                f"failure class `{fc}` beside the failed `{d.check}` defence (/defences/{i}): the harness "
                "caught the candidate, the class is `reward_hack`",
            )
        )
        return True
    return False


def _candidate_fault(ds: Any, v: Any, fc: str, add: Add) -> bool:
    """KE403: an ``error`` packet (a fault of the machine, the harness or the reference)
    whose own record shows the candidate failed: a failed defence, or a validation that
    failed or saw NaN/Inf, unless an ``invalid_reference`` validation says the reference
    is what broke."""
    hit = _hack_defence(ds) if ds else None
    if hit is not None:
        i, d = hit
        add(
            (
                "KE403",
                "/failure/failure_class",
                f"an error packet (`{fc}`) with the failed `{d.check}` defence (/defences/{i}): the "
                "harness caught the candidate; use status `failed` (reward_hack)",
            )
        )
        return True
    if v is None:
        return False
    bad = None
    for s in v.shapes or ():
        if not s.passed or s.nan_seen or s.inf_seen:
            bad = s
            break
    if bad is None and v.verdict != "failed":
        return False  # validation passed: an infrastructure failure after it is honest
    if fc == "invalid_reference" and _blames_reference(v, bad):
        return False
    what = (
        f"shape `{bad.shape_id}` {'saw NaN/Inf' if bad.nan_seen or bad.inf_seen else 'failed'}"
        if bad is not None
        else "its verdict failed"
    )
    add(
        (
            "KE403",
            "/failure/failure_class",
            f"an error packet (`{fc}`) whose validation shows the candidate's outputs failed ({what}): "
            "the fault is the candidate's; use status `failed`",
        )
    )
    return True


#: failure text that says the harness caught the candidate gaming it: a defence check
#: named beside `failed`/`caught` (`timer_integrity FAILED`), or the clock replaced or patched
#: (`timer_integrity`'s find), or the harness's check monkeypatched
_CHECK_NAMES = (
    r"(?:timer_integrity|unseen_inputs|outputs_checked_after_timing|fresh_inputs|hidden_workload|"
    r"candidate_kernel_profiled)"
)
_HACK_TEXT = lazy_re(
    rf"\b(?P<named>{_CHECK_NAMES})\b(?:(?!pass|\bok\b|succe|clean|\bnot\b|\bno\b)[^.;,:\n]){{0,40}}?"
    r"(?:\bfail(?:ed|s)?\b(?!\s+to\b)|\bcaught\b|\btripped\b|\bviolat\w*|\bdetected\b|\bfired\b)"
    rf"|\b(?:failed|caught\s+(?:by|in)|tripped)\s+(?:the\s+)?(?P<named2>{_CHECK_NAMES})\b"
    r"|(?P<clock>\bmonkey-?patch\w*(?:\s+\w+){0,3}?\s+(?:time\b|timers?|clocks?|perf_counter|time\.\w+|"
    r"elapsed_time|torch\.cuda\.(?:event|synchronize))"
    r"|\b(?:replaced|patched|monkey-?patched|overrode|overrides|overwrote|stubbed|hooked)\s+(?:the\s+)?"
    r"(?:time\.\w+|perf_counter\w*|timers?\b|clocks?\b|elapsed_time|torch\.cuda\.event\w*)"
    r"|\b(?:time\.(?:perf_counter|time|monotonic|process_time)\w*|perf_counter\w*|elapsed_time|timers?|clocks?)"
    r"\s+(?:was\s+|were\s+|is\s+|got\s+|been\s+|had\s+been\s+)*(?:replaced|patched|monkey-?patched|"
    r"overridden|overwritten|stubbed|hooked|tampered)\b)"
    r"|\bmonkey-?patch\w*(?:\s+\w+){0,3}?\s+(?:harness|reference|allclose|the\s+check)"
    r"|\breward[\s_-]?hack"
    r"|(?P<cached>\b(?:cached|memoi[sz]ed|stale|pre-?computed|stored|saved|recorded|replayed)\s+"
    r"(?:(?!referenc)[\w-]+\s+){0,2}?(?:outputs?|results?|answers?)\b(?:(?!referenc)[^.;\n]){0,60}?"
    r"\b(?:keyed|indexed|looked\s+up|selected|chosen|retrieved)\s+(?:by|on|with|via|using|from)\b"
    r"|(?<!reference\s)(?<!reference's\s)\b(?:outputs?|results?|answers?)\s+(?:were\s+|was\s+|are\s+|is\s+)?"
    r"(?:cached|memoi[sz]ed)\b(?:(?!referenc)[^.;\n]){0,40}?|(?<!reference\s)(?<!reference's\s)"
    r"\b(?:outputs?|results?)\s+(?:cache|lookup\s+table|table)\b(?:(?!referenc)[^.;\n]){0,40}?)"
    r"(?:(?!referenc)[^.;\n]){0,40}?\b(?:hash\w*|checksum\w*|digests?|fingerprint\w*|data_ptr|pointers?|"
    r"addresses|address|inputs?)\b",
    re.IGNORECASE,
)
#: words before a match, in its clause, that deny it (`no cached outputs`, `not a reward hack`)
_DENIED = lazy_re(
    r"(?<![\w-])(?:no|not|never|none|nothing|without|unless|if|whether|rule\s+out|ruled\s+out)(?!\w)|n't",
    re.I,
)


_HACK_CACHE: dict[str, tuple[tuple[str | None, str], ...]] = {}


def _hack_claims(text: str) -> tuple[tuple[str | None, str], ...]:
    """The statements of a failure text that the harness caught the candidate, not denied in
    their clause: (the defence check it names or implies, or None; the words) (cached)."""
    hit = _HACK_CACHE.get(text)
    if hit is None:
        head = text[:2000]
        found: list[tuple[str | None, str]] = []
        for m in _HACK_TEXT.finditer(head):
            start = m.start()
            cut = 0
            for c in _CLAUSE.finditer(head, 0, start):
                cut = c.end()
            if _DENIED.search(head, cut, start):
                continue
            named = m.group("named") or m.group("named2")
            check = (
                named.lower()
                if named
                else "timer_integrity"
                if m.group("clock")
                else "unseen_inputs"
                if m.group("cached")
                else None
            )
            found.append((check, m.group(0)[:60]))
            if len(found) >= 8:
                break
        hit = tuple(found)
        if len(_HACK_CACHE) < 1024 and len(text) <= 4 * CACHED_CHARS:
            _HACK_CACHE[text] = hit
    return hit


def _may_claim_hack(f: Any) -> bool:
    """Whether a failure's message or log excerpt may say the harness caught the candidate:
    False only when each is empty or known (cached) to claim nothing, where
    :func:`_hack_text` would add nothing."""
    m, log = f.message, f.log_excerpt
    return bool((m and _HACK_CACHE.get(m) != ()) or (log and _HACK_CACHE.get(log) != ()))


def _hack_text(f: Any, fc: str, hint: str, passed: Any, add: Add) -> None:
    """KE403: a failure of another class whose own message or log excerpt says the harness
    caught the candidate (a defence check failed, the clock patched), unless the packet
    records that very check passed: that failure is ``reward_hack``."""
    for field, text in (("message", f.message), ("log_excerpt", f.log_excerpt)):
        if not text:
            continue
        for check, words in _hack_claims(text):
            if check is not None and check in passed:
                continue  # the record says that check passed: the text is the producer's account
            add(
                (
                    "KE403",
                    "/failure/failure_class",
                    f"failure class `{fc}` while /failure/{field} says the harness caught the candidate "
                    f"(`{words}`): the class is `reward_hack`{hint}",
                )
            )
            return


#: a message that says the reference broke (NaN in the reference, the reference crashed)
_REFERENCE_BROKE = lazy_re(
    r"\breferences?(?:'s)?\s+(?:\w+\s+){0,6}?(?:nan|inf|infinit\w*|non-?finite|broken|invalid|wrong|crash\w*|"
    r"failed|fails|unusable|diverged|overflow\w*|raised|exception|unstable)\b|\b(?:nan|inf|infinit\w*|"
    r"non-?finite|overflow)\b[^.;:]{0,40}?\b(?:in|of|from|by)\s+(?:the\s+)?references?\b",
    re.IGNORECASE,
)


def _blames_reference(v: Any, bad: Any) -> bool:
    """Whether the validation's own message (or the failing shape's) says the reference
    is what broke."""
    for text in (v.message, bad.message if bad is not None else None):
        if text and _REFERENCE_BROKE.search(text[:1000]):
            return True
    return False


#: the defences whose passing a packet's conditions can contradict
_CONTRADICTABLE = frozenset({"fresh_inputs", "cache_flush", "unseen_inputs", "timer_integrity"})

#: a defence detail that says the check did not run: a phrase at its start (after an
#: optional `check`/`defence` subject) that ends there or at punctuation (`skipped: ...`,
#: `Not run (no GPU)`, `check was skipped.`); `not run`, `not applicable`, `n/a` and the
#: like may go on (`not applicable to this kernel`)
_NOT_RUN = lazy_re(
    r"^\W*(?:(?:the\s+|this\s+)?(?:check|defen[cs]e|test)\s+(?:was\s+|is\s+|has\s+been\s+)?)?"
    r"(?:(?:not\s+run|not\s+performed|not\s+executed|not\s+applicable|n/a|n\.a\.|todo|tbd|fixme|"
    r"(?:never|not\s+yet|(?:did|was|were|has|have|is)(?:\s+not|n'?t)(?:\s+(?:yet|been|be))*)\s+"
    r"(?:run|ran|executed?|performed|done|started|carried\s+out)|"
    r"will\s+(?:be\s+)?(?:run|ran|executed?|performed|done|added|wired|checked)|"
    r"to\s+be\s+(?:run|executed|performed|done|added|wired|implemented|checked))(?!\w)|"
    r"(?:skipped|skip|skipping|disabled|unavailable|not\s+available|pending|deferred|postponed|"
    r"turned\s+off|switched\s+off|bypassed|omitted|waived|deactivated|not\s+enabled)"
    r"(?:\s*$|\s*[:;,.(\u2013\u2014]|\s+-|\s+(?:because|since|as|due|for|on|in|here|via|by(?!\s+default)|with|through|"
    r"using|per|from|under|at|until|when|while)(?!\w)))",
    re.IGNORECASE,
)
_NOT_RUN_CACHE: dict[str, str] = {}

#: ... or a detail that begins by taking the check on trust (`assumed (same harness)`,
#: `trusted`, `unverified`)
_TAKEN_ON_TRUST = lazy_re(
    r"^\W*(?:assumed|presumed|trusted|taken\s+on\s+trust|unchecked|unverified|untested|not\s+checked|"
    r"not\s+verified|not\s+validated|not\s+tested)(?!\w)",
    re.IGNORECASE,
)
#: ... or says so anywhere: the check not done (`timer not checked: the harness is
#: trusted`), taken on assumption or trust, or itself skipped (`the check was skipped`);
#: a clause that negates it (`no shape was not checked`, `none skipped`) or counts what
#: it left out (`8 sets checked, 2 not verified`) is no such statement
_NOT_CHECKED = lazy_re(
    r"(?<![\w-])(?:"
    r"not\s+(?:been\s+|actually\s+|yet\s+|really\s+|ever\s+)?(?:checked|verified|validated|tested)"
    r"(?!\s+(?:before|earlier|previously|during|by\s+the\s+candidate))"
    r"|never\s+(?:been\s+|actually\s+)?(?:checked|verified|validated|tested)"
    r"|(?:is|was|are|were|be|been|being)\s+(?:simply\s+|just\s+)?(?:assumed|presumed|trusted|taken\s+on\s+trust)"
    r"(?!\s+(?:to\s+be\s+)?(?:about\s+|~\s*)?\d)"
    r"|assumed\s+(?:to\s+(?:be|have)\s+)?(?:ok|okay|fine|clean|good|safe|correct|passed|passing|intact|"
    r"unpatched|unmodified|untouched|fresh|unseen|true|valid)"
    r"|(?:on|by)\s+(?:assumption|trust)|trust(?:ed|ing)\s+(?:the|its|our)\s+(?:harness|timer|clock|candidate|framework)"
    r"|(?:check|defen[cs]e|test|verification|it|this)\s+(?:was\s+|is\s+|has\s+been\s+|were\s+|got\s+)?skipped"
    r"(?=\s*$|\s*[:;,.(\u2013\u2014]|\s+-|\s+(?:because|since|as|due|for|on|in|here|entirely|altogether)(?!\w))"
    r")(?!\w)",
    re.IGNORECASE,
)
#: a clause's words before a match that negate or count it
_NEGATED = lazy_re(
    r"(?<![\w-])(?:no|none|nothing|never|zero|without|if|whether|unless|otherwise|or)(?!\w)|\d", re.I
)
#: a clause that lists what was skipped, and it is nothing (`skipped: none`)
_NONE_SKIPPED = lazy_re(r"\W*skipped\s*[:=]\s*(?:none|nothing|0|zero)\W*$", re.IGNORECASE)
#: where a clause starts
_CLAUSE = lazy_re(r"[;,.:!?()\[\]\n\u2013\u2014]|\s-\s")


def _says_not_run(detail: str) -> str:
    """Whether a defence's detail says the check was skipped, not run, or not checked at
    all (taken on assumption or trust): ``"run"``; or counts zero items checked:
    ``"zero"``; else ``""`` (cached). The detail is NFKC-folded and casefolded first
    (fullwidth letters, hidden format characters)."""
    hit = _NOT_RUN_CACHE.get(detail)
    if hit is None:
        head = detail[:1024]
        if not head.isascii():  # fullwidth or other compatibility forms, hidden format characters
            head = "".join(
                ch
                for ch in unicodedata.normalize("NFKC", head).casefold()
                if unicodedata.category(ch) != "Cf"
            )
        if _NOT_RUN.match(head) or _TAKEN_ON_TRUST.match(head) or _not_checked(head):
            hit = "run"
        elif ("0" in head or "zero" in head.lower()) and _zero_count(head):
            hit = "zero"
        else:
            hit = ""
        if len(_NOT_RUN_CACHE) < 4096 and len(detail) <= CACHED_CHARS:
            _NOT_RUN_CACHE[detail] = hit
    return hit


def _not_checked(text: str) -> bool:
    """Whether some clause of a detail says the check was not done: a match of
    :data:`_NOT_CHECKED` not negated or counted earlier in its clause, or a clause after
    a `;` that begins as :data:`_NOT_RUN` does (`8 sets; skipped: no GPU`)."""
    for m in _NOT_CHECKED.finditer(text):
        start = m.start()
        cut = 0
        for c in _CLAUSE.finditer(text, 0, start):
            cut = c.end()
        if not _NEGATED.search(text, cut, start):
            return True
    if ";" in text:
        for clause in text.split(";")[1:]:
            if _NOT_RUN.match(clause) and not _NONE_SKIPPED.match(clause):
                return True
    return False


#: a count of zero checked items (`on 0 of 1000 requests`, `0 unseen input sets`, `0/64 prompts`)
_ZERO_COUNT = lazy_re(
    r"(?<![\w.,/#:=+-])(?:0|zero)\s*(?:(?:of|out\s+of)\s+\d[\d,]*\s+|/\s*\d[\d,]*\s+|\s)"
    r"(?:[a-z][\w-]*\s+){0,3}?(?:sets?|inputs?|requests?|prompts?|seeds?|draws?|re-?runs?|runs?|calls?|samples?|"
    r"shapes?|batch(?:es)?|iterations?|trials?|outputs?|completions?|cases?|tensors?|elements?|items?|"
    r"sequences?|queries|kernels?|rounds?|checks?)(?!\w)",
    re.IGNORECASE,
)
#: a clause's words that make its zero a count of faults found (`0 of 8 sets mismatched`),
#: not of items checked
_FAULT_WORDS = lazy_re(
    r"mismatch|differ|fail|error|wrong|stale|cach|patch|violat|\bnan\b|\binf\b|miss|diverg|deviat|exceed|"
    r"above|beyond|outside|\boff\b|\bbad\b|invalid|changed|modified|altered|reused|repeat|identical|"
    r"\bsame\b|flag|caught|outlier|drop|lost|time[ds]?\s*out|reject|skip|unchecked|unverified|left|"
    r"remain|exclud|discard|ignor|leak|corrupt|problem|issue|anomal|suspicious|regress",
    re.IGNORECASE,
)
#: where a clause starts, for the zero count (a comma or point between digits is part of a number)
_ZCLAUSE = lazy_re(r"[;:!?()\[\]\n\u2013\u2014]|\s-\s|[,.](?!\d)")
#: the word before a zero that makes it an index, not a count (`seed 0`, `device 0`)
_INDEX_WORD = lazy_re(
    r"(?:seed|device|gpu|rank|id|index|step|iteration|round|version|layer|stream|node|core|cpu|shard|"
    r"partition|slot|worker|epoch|no|nr|number)\s*$",
    re.IGNORECASE,
)


def _zero_count(text: str) -> bool:
    """Whether a clause of a defence's detail counts zero items checked (`re-run on 0
    unseen input sets`, `compared on 0 of 1000 requests`): a check that looked at nothing
    passed nothing. A zero that counts faults (`0 of 8 sets mismatched`, `0 stale outputs`)
    or indexes something (`seed 0`, `GPU 0`) is no such count."""
    for m in _ZERO_COUNT.finditer(text):
        start, end = m.span()
        if _INDEX_WORD.search(text, max(0, start - 16), start):
            continue
        cut = 0
        for c in _ZCLAUSE.finditer(text, 0, start):
            cut = c.end()
        stop = _ZCLAUSE.search(text, end)
        if not _FAULT_WORDS.search(text, cut, stop.start() if stop is not None else len(text)):
            return True
    return False


#: preloaded libraries that are memory allocators (they replace malloc, not the clock), and
#: the vendors' profiler libraries a profiled run loads (Nsight's injection, CUPTI, rocprof)
_ALLOCATOR = lazy_re(
    r"(?:^|/)lib(?:tcmalloc|jemalloc|mimalloc|hoard|tbbmalloc|ToolsInjection|TreeLauncher|InterceptorInjection|"
    r"cupti|rocprofiler|roctracer|rocprof)[\w.\-]*$"
)
#: what loads a library into the timed process before its code runs: the loader's preload
#: and audit lists, the CUDA driver's and the HSA runtime's tool (injection) libraries
_PRELOADS = (
    "LD_PRELOAD",
    "DYLD_INSERT_LIBRARIES",
    "LD_AUDIT",
    "CUDA_INJECTION64_PATH",
    "CUDA_INJECTION32_PATH",
    "HSA_TOOLS_LIB",
    "ROCP_TOOL_LIBRARIES",
)
_PRELOAD_VARS = frozenset(_PRELOADS)
#: any tool-injection variable by its pattern (NVTX's `NVTX_INJECTION64_PATH`, a vendor's
#: `*_INJECTION64_PATH`/`*_INJECTION32_PATH`): each loads a library into the process
_INJECTION_VAR = lazy_re(r"^(?:\w+_INJECTION(?:64|32)_PATH|NVTX_INJECTION\w*)$")
#: what a replay.env variable's name can be, as bits (one word per name, cached): a library
#: loader (`_K_LOAD`), Python's startup hooks (`_K_PY`), libfaketime's (`_K_SHIM`), a
#: switch of input/output reuse (`_K_REUSE`); `_K_SEEN` marks a name read (so a clean one is
#: not 0)
_K_SEEN, _K_LOAD, _K_PY, _K_SHIM, _K_REUSE = 0x100, 1, 2, 4, 8
#: Python's startup hooks: code run before the harness's (`PYTHONSTARTUP`, a
#: `sitecustomize`/`.pth` found on `PYTHONPATH`)
_PY_HOOKS = frozenset({"PYTHONSTARTUP", "PYTHONPATH"})
#: a switch that turns reuse or caching of inputs or outputs on: `--reuse-inputs`,
#: `BENCH_INPUT_POOL`, `CACHE_OUTPUTS` (not a cache's folder or file)
_REUSE_NAME = lazy_re(
    r"(?<![a-z])(?:(?P<pool1>pool(?:ed)?|ring)|re-?use[ds]?|cach(?:e|ed|ing)|memo(?:i[sz]e[ds]?)?|persist(?:ent)?"
    r"(?=[-_]?inputs?))[-_]?(?:inputs?|outputs?|results?)(?![a-z])"
    r"|(?<![a-z])(?:inputs?|outputs?|results?)[-_]?(?:(?P<pool2>pool|ring)|cache|re-?use|memo)(?![a-z])"
)
#: ... after a word that turns it off (`--no-reuse-inputs`, `DISABLE_INPUT_CACHE`), or naming
#: where a cache lives, not whether it is on
_REUSE_OFF = lazy_re(r"(?:^|[-_])(?:no|disable[ds]?|skip|without|off)[-_]")
_REUSE_WHERE = lazy_re(r"[-_]?(?:dir|directory|path|file|folder|root|location|loc|prefix|name|url|key)")
_ENV_KIND: dict[str, int] = {}
#: the names read and found to carry no bit (`CUDA_VISIBLE_DEVICES`): an env of these alone is 0
_CLEAN_NAMES: set[str] = set()


def _env_kind(name: str) -> int:
    """The bits of :data:`_K_LOAD` ... that a replay.env variable's name carries (cached)."""
    k = _K_SEEN
    if name in _PRELOAD_VARS or ("INJECTION" in name and _INJECTION_VAR.match(name[:200])):
        k |= _K_LOAD
    elif name in _PY_HOOKS:
        k |= _K_PY
    elif name == "FAKETIME" or name == "FAKETIME_TIMESTAMP_FILE":
        k |= _K_SHIM
    elif _reuse_switch(name) is not None:
        k |= _K_REUSE
    if len(_ENV_KIND) < 4096 and len(name) <= CACHED_CHARS:
        _ENV_KIND[name] = k
        if k == _K_SEEN:
            _CLEAN_NAMES.add(name)
    return k


def _env_kinds(env: Any) -> int:
    """The union of the bits of a replay.env's variable names."""
    kinds = 0
    for name in env:
        kinds |= _ENV_KIND.get(name) or _env_kind(name)
    return kinds


def _load_vars(env: Any) -> list[str]:
    """The variables of a replay.env that load a library: the fixed list first, then the
    injection variables matched by pattern."""
    found = [var for var in _PRELOADS if var in env]
    found += sorted(k for k in env if k not in _PRELOAD_VARS and _ENV_KIND.get(k, 0) & _K_LOAD)
    return found


#: a folder on PYTHONPATH the candidate controls: its name a word of these
_CANDIDATE_DIR = frozenset(
    {"candidate", "candidates", "submission", "submissions", "solution", "solutions", "contestant", "entry"}
)


def _candidate_path(val: str, subject: str) -> str | None:
    """A PYTHONPATH entry that points into a folder the candidate controls (a path component
    named for the candidate, the submission or the solution, or the subject's own name):
    a `sitecustomize` or `.pth` file there runs before the harness. None else."""
    sub = subject.casefold()
    for entry in re.split(r"[:;]", val[:4096]):
        for part in re.split(r"[/\\]", entry.strip().casefold()):
            if not part or part in (".", ".."):
                continue
            if part == sub or (len(sub) >= 3 and _bounded(part, sub)):
                return entry.strip()
            if not _CANDIDATE_DIR.isdisjoint(re.split(r"[-_.\s]+", part)):
                return entry.strip()
    return None


def _bounded(text: str, name: str) -> bool:
    """Whether ``name`` occurs in ``text`` (both casefolded) as a whole word: neither side
    touching a letter or digit."""
    i = text.find(name)
    while i >= 0:
        j = i + len(name)
        if (i == 0 or not text[i - 1].isalnum()) and (j == len(text) or not text[j].isalnum()):
            return True
        i = text.find(name, i + 1)
    return False


def _preloaded(p: Any) -> tuple[str, str, str] | None:
    """The replay environment's variable that runs code in the timed process before the
    harness, the library or file it names, and what it is: a preloaded or injected library
    that is not a memory allocator (nor a vendor profiler's), Python's `PYTHONSTARTUP`, or a
    `PYTHONPATH` entry in a folder the candidate controls. None else."""
    r = p.replay
    env = r.env if r is not None else None
    if not env:
        return None
    for var in _load_vars(env):
        val = env.get(var)
        if not val or not isinstance(val, str):
            continue
        for lib in re.split(r"[\s:]+", val.strip()):
            if lib and not _ALLOCATOR.search(lib[:512]):
                return var, lib, "a preloaded library can replace the clock"
    val = env.get("PYTHONSTARTUP")
    if val and isinstance(val, str) and val.strip():
        return (
            "PYTHONSTARTUP",
            val.strip(),
            "Python runs that file before the harness: it can patch the timer",
        )
    val = env.get("PYTHONPATH")
    if val and isinstance(val, str):
        entry = _candidate_path(val, p.subject.name)
        if entry is not None:
            return (
                "PYTHONPATH",
                entry,
                "a folder the candidate controls on the path runs its `sitecustomize`/`.pth` before the harness: it "
                "can patch the timer",
            )
    return None


#: a preloaded library that warps the clock (libfaketime, datefudge, a `libfastclock.so`)
_CLOCK_LIB = lazy_re(r"(?:fake_?time|datefudge|time_?warp|time_?shift|clock)[^/]*$", re.IGNORECASE)
#: in the replay's command: a clock-warping wrapper (`faketime -f x0.5 ...`, `datefudge`),
#: libfaketime's `FAKETIME` variable, or a preload of a clock library
_CLOCK_ARGV = lazy_re(
    r"(?:^|[\s/;&|(`'\"])(?:faketime|datefudge|libfaketime[\w.]*)(?=$|[\s;&|)`'\"])|\bfaketime\w*="
    r"|\b(?:ld_preload|dyld_insert_libraries)=\S*(?:fake_?time|datefudge|time_?warp|time_?shift|clock)",
    re.IGNORECASE,
)


#: a replay command's text, lowercased where it names a clock tool, else "" (bounded cache)
_CLOCK_WORDS: dict[str, str] = {}


def _clock_shim(r: Any, ds: Any, kinds: int, text: str | None) -> tuple[str, str] | None:
    """A replay that runs under a clock-warping tool (KE412, with or without a
    ``timer_integrity`` record, in a migrated 0.1 packet too): the pointer and the message.
    ``kinds``: the bits of the replay.env's names (:func:`_env_kinds`); ``text``: the
    command's first 256 words joined by spaces, if the caller joined them already."""
    env = r.env
    if kinds & (_K_LOAD | _K_SHIM):  # else nothing below applies
        if "FAKETIME" in env or "FAKETIME_TIMESTAMP_FILE" in env:
            var = "FAKETIME" if env.get("FAKETIME") else "FAKETIME_TIMESTAMP_FILE"
            if env.get(var):
                return (
                    f"/replay/env/{var}",
                    f"the replay sets `{var}` (libfaketime): the clock it times with is warped",
                )
        if kinds & _K_LOAD and not any(d.check == "timer_integrity" for d in ds or ()):
            # passed, any such preload is reported already; skipped or failed, the record says so
            for var in _load_vars(env):
                val = env.get(var)
                if not val or not isinstance(val, str):
                    continue
                for lib in re.split(r"[\s:]+", val.strip()):
                    if lib and not _ALLOCATOR.search(lib[:512]) and _CLOCK_LIB.search(lib[:512]):
                        return (
                            f"/replay/env/{var}",
                            f"the replay preloads `{lib[:120]}` ({var}), a clock library: the clock it times with "
                            "can be replaced",
                        )
    cmd = r.command
    if cmd:
        if text is None:
            text = " ".join(cmd if len(cmd) <= 256 else cmd[:256])
        low = _CLOCK_WORDS.get(text)
        if low is None:
            low = text.lower()
            low = (
                low
                if "faketime" in low or "datefudge" in low or ("preload" in low and "clock" in low)
                else ""
            )
            if len(_CLOCK_WORDS) < 1024 and len(text) <= 4 * CACHED_CHARS:
                _CLOCK_WORDS[text] = low
        if low:
            m = _CLOCK_ARGV.search(low[:20000])
            if m is not None:
                return (
                    "/replay/command",
                    f"the replay runs under a clock-warping tool (`{m.group(0).strip()[:60]}`): every time it "
                    "measures is scaled",
                )
    return None


def _contradicted(p: Any, d: Any) -> str | tuple[str, str] | None:
    """Why the packet's own conditions contradict a defence recorded as passed (with the
    pointer of the contradicting field, where it is not the defence)."""
    check = d.check
    if check == "timer_integrity":
        r = p.replay
        if r is None or not r.env:
            return None
        pre = _preloaded(p)
        if pre is None:
            return None
        var, lib, why = pre
        verb = "preloads" if why.startswith("a preloaded") else "sets"
        return (f"/replay/env/{var}", f"the replay {verb} `{lib[:120]}` ({var}): {why}")
    if check == "unseen_inputs":
        v = p.validation
        if v is None or v.inputs_regenerated is not False:
            return None
        return _unseen_contradicted(p, d)
    t = p.timing
    if t is None:
        return None
    cc = t.conditions
    bc = t.baseline.conditions if t.baseline is not None else None
    if check == "fresh_inputs":
        for c, side in ((cc, "candidate"), (bc, "baseline")):
            if c is not None and c.fresh_inputs is False:
                return f"the {side}'s conditions record its inputs reused (fresh_inputs: false)"
        v = p.validation
        if v is not None and v.inputs_regenerated is False:
            return "the validation records its inputs not regenerated (/validation/inputs_regenerated: false)"
    elif check == "cache_flush":
        first = cc.cache if cc is not None else None
        for c, side in ((cc, "candidate"), (bc, "baseline")):
            cache = c.cache if c is not None else None
            if cache is None:
                continue  # nothing below reads a side without a cache
            if cache is not first and first is not None and cache == first:
                break  # the baseline's cache is the candidate's: its checks gave nothing already
            if cache.mode == "warm":
                return f"the {side}'s conditions record warm caches"
            if cache.mode == "unknown":
                return f"the {side}'s conditions do not know what its caches held (cache mode unknown)"
            if small_flush(p, cache):
                return f"the {side}'s flush is smaller than the last-level cache"
        if (t.conditions is None or t.conditions.cache is None) and t.cache_policy == "unknown":
            return "the candidate's cache_policy is unknown"
    return None


_NUMBERS = lazy_re(r"\d+")


def _unseen_contradicted(p: Any, d: Any) -> str | None:
    """unseen_inputs passed while the validation reused its inputs (``inputs_regenerated``
    false) drawn only from the replay's seeds (or one seed where the replay names none),
    and the defence's detail names no seed of its own: no input the candidate had not seen
    is on record."""
    v = p.validation
    if v is None or v.inputs_regenerated is not False or not v.seeds:
        return None
    seeds = set(v.seeds)
    r = p.replay
    rs = set(r.seeds.values()) if r is not None and r.seeds else None
    if not (seeds <= rs if rs else len(seeds) == 1):
        return None
    if d.detail:
        for n in _NUMBERS.findall(d.detail[:2000]):
            if len(n) >= 3 and int(n) not in seeds:
                return None  # the check names a seed (or set) of its own
    listed = ", ".join(str(x) for x in sorted(seeds)[:4])
    return (
        f"the validation reused its inputs (/validation/inputs_regenerated: false) from the replay's "
        f"seed(s) {listed}: no unseen input is on record"
    )


#: a seed the detail names (`seed 20261120`, `seeds 1234 and 5678`, `seed=42`)
_SEED_WORD = lazy_re(r"\bseeds?\b", re.IGNORECASE)
_ARGV_SEED = lazy_re(r"^--?(?:[\w-]*[-_])?seed(?:=(\d+))?$", re.IGNORECASE)


#: the seeds a detail names (numbers of 3 digits or more beside the word `seed`), cached
_SEEDS_NAMED: dict[str, frozenset[int]] = {}
_NO_SEEDS: frozenset[int] = frozenset()


def _public_seed(r: Any, detail: str, v: Any = None) -> str | None:
    """unseen_inputs passed while its detail names, as the seeds of its inputs, only seeds
    the replay publishes (a `replay.seeds` value not kept for the check itself, or a
    `--seed` of the replay's command) or the validation drew (`validation.seeds`): those
    inputs are the timed run's own, public ones, or the ones the validation showed the
    candidate, not inputs the candidate could not have seen."""
    named = _SEEDS_NAMED.get(detail)
    if named is None:
        head = detail[:2000]
        named = (
            frozenset(int(n) for n in _NUMBERS.findall(head) if len(n) >= 3)
            if _SEED_WORD.search(head)
            else frozenset()
        )
        if len(_SEEDS_NAMED) < 1024 and len(detail) <= CACHED_CHARS:
            _SEEDS_NAMED[detail] = named
    if not named:
        return None
    public: dict[int, str] = {}
    for key, val in ((r.seeds if r is not None else None) or {}).items():
        k = key.casefold()
        if "unseen" not in k and "hidden" not in k and "check" not in k and "defen" not in k:
            public[val] = f"/replay/seeds/{key}"
    cmd = r.command if r is not None else None
    if cmd:
        for j, tok in enumerate(cmd[:256]):
            if "seed" not in tok.lower():
                continue
            m = _ARGV_SEED.match(tok)
            if m is None:
                continue
            val = m.group(1) or (cmd[j + 1] if j + 1 < len(cmd) else "")
            if val.isdigit():
                public.setdefault(int(val), "/replay/command")
    listed = ", ".join(str(x) for x in sorted(named)[:4])
    if public and named <= public.keys():
        where = ", ".join(sorted({public[x] for x in named}))
        return (
            f"its detail names only the replay's own public seed(s) {listed} ({where}): the timed run's inputs, "
            "not inputs the candidate had not seen"
        )
    if v is None or not v.seeds:
        return None
    seen = set(v.seeds)
    if not named <= seen | public.keys():
        return None
    return (
        f"its detail names only seed(s) {listed} that the validation drew (/validation/seeds) or the replay "
        "published: inputs the candidate was shown, not inputs it had not seen"
    )


def _dup_seeds(seeds: list[int]) -> str:
    """The validation says its inputs were regenerated (`inputs_regenerated: true`) but
    draws a seed twice: the second draw is the same inputs, which a cache keyed by the
    inputs passes. The message (the caller found the repeat)."""
    dup = next(x for i, x in enumerate(seeds) if x in seeds[:i])
    return (
        f"/validation/seeds draws seed {dup} {seeds.count(dup)} times beside inputs_regenerated: true: "
        f"{len(set(seeds))} distinct input set(s) in {len(seeds)} draws, the same inputs drawn again"
    )


def _self_tool(p: Any, tool: str) -> str | None:
    """A defence's tool that names the subject (`subject.name`) or a kernel the candidate's
    capture expects (`profiler[].of.expected_kernels`), as a whole word: the candidate ran
    its own check. A subject named as the producer or a capture's own tool (a profile named
    for its profiler) is no such name. The name, or None."""
    low = tool[:400].casefold()
    name = p.subject.name
    names = [name]
    for cap in p.profiler or ():
        of = cap.of
        if of is not None and of.expected_kernels and of.side == "candidate":
            names.extend(of.expected_kernels)
    for n in names:
        nl = n.casefold()
        if len(nl) < 4 or len(nl) > len(low) or not _bounded(low, nl):
            continue
        if nl == p.producer.name.casefold() or any(
            nl == (cap.tool or "").casefold() for cap in p.profiler or ()
        ):
            continue
        return f"`{n[:80]}`, the " + ("subject" if n is name else "candidate's expected kernel")
    return None


#: a value that turns a switch on
_TRUE = frozenset({"1", "true", "yes", "on", "y", "t", "enable", "enabled"})
_FALSE = frozenset({"0", "false", "no", "off", "n", "f", "disable", "disabled", "none", ""})


def _reuse_switch(name: str) -> tuple[str, bool] | None:
    """A variable or flag name (casefolded here) that switches reuse or caching of inputs
    or outputs on: (its words, whether it sizes a pool or ring); None else."""
    low = name.casefold().lstrip("-")
    m = _REUSE_NAME.search(low[:200])
    if m is None or _REUSE_OFF.search(low, 0, m.start() + 1) or _REUSE_WHERE.match(low, m.end()):
        return None
    return m.group(0), bool(m.group("pool1") or m.group("pool2"))


#: the reuse switches an argv turns on, cached per argv (its first 256 words joined by
#: spaces, the text they are read from): ((the flag, the value or None), ...)
_ARGV_REUSE: dict[str, tuple[tuple[str, str | None], ...]] = {}


def _argv_reuse(text: str) -> tuple[tuple[str, str | None], ...]:
    """The reuse switches an argv sets (a flag alone, or its value), read once per argv.
    ``text``: the argv's first 256 words joined by spaces."""
    hit = _ARGV_REUSE.get(text)
    if hit is None:
        toks = text[:20000].split()
        found: list[tuple[str, str | None]] = []
        for j, tok in enumerate(toks):
            if not tok.startswith("-") or _reuse_switch(tok.partition("=")[0]) is None:
                continue
            flag, eq, given = tok.partition("=")
            val: str | None = given
            if not eq:
                nxt = toks[j + 1] if j + 1 < len(toks) else None
                val = nxt if nxt is not None and not nxt.startswith("-") and _switch_value(nxt) else None
            found.append((flag, val if eq or val else None))
        hit = tuple(found)
        if len(_ARGV_REUSE) < 1024 and len(text) <= 4 * CACHED_CHARS:
            _ARGV_REUSE[text] = hit
    return hit


def _switch_value(val: str) -> bool:
    """Whether a token reads as a switch's value (a boolean word or a number)."""
    low = val.strip().casefold()
    return low in _TRUE or low in _FALSE or low.isdigit()


def _repeats(p: Any) -> int | None:
    """The timed calls of the candidate: its conditions' repeats, timing.repeats, or its
    samples' count."""
    t = p.timing
    if t is None:
        return None
    n: int | None = None
    if t.conditions is not None and t.conditions.repeats:
        n = t.conditions.repeats
    elif t.repeats:
        n = t.repeats
    elif t.stats is not None and t.stats.n:
        n = t.stats.n
    return n


def _switched_on(name: str, val: str | None, p: Any) -> str | None:
    """Whether a reuse switch with this value (None: a flag alone) turns reuse on: the
    value in words, or None."""
    if val is None:
        return "set"
    low = val.strip().casefold()
    if low in _TRUE:
        return f"= {val.strip()[:20]}"
    if low.isdigit():
        n = int(low)
        if n < 1:
            return None
        sw = _reuse_switch(name)
        if sw is not None and sw[1]:  # a pool's size: reuse when below the timed calls
            reps = _repeats(p)
            if reps is not None and n >= reps:
                return None
            return f"= {n} (a pool of {n} below the {reps} timed calls)" if reps else f"= {n}"
        return f"= {n}"
    return None


def _reuse_on(p: Any, r: Any, kinds: int, text: str | None) -> tuple[str, str] | None:
    """fresh_inputs or unseen_inputs passed while the replay itself turns reuse or caching
    of inputs or outputs on: a `replay.env` variable (`BENCH_INPUT_POOL=1`) or a flag of
    its command (`--reuse-inputs`) with a true value, no value, or a pool smaller than
    the timed calls (``text``: the command joined, as :func:`_argv_reuse` reads it). The
    pointer and the message, or None."""
    if kinds & _K_REUSE:
        env = r.env
        for name in sorted(env):
            if not _ENV_KIND.get(name, 0) & _K_REUSE:
                continue
            val = env[name]
            on = _switched_on(name, val if isinstance(val, str) else str(val), p)
            if on is not None:
                return (
                    f"/replay/env/{name}",
                    f"the replay sets `{name}` {on}: it turns reuse of inputs or outputs on",
                )
    if text is not None:
        for flag, val in _argv_reuse(text):
            on = _switched_on(flag, val, p)
            if on is not None:
                shown = flag if val is None else f"{flag} {val}"
                return (
                    "/replay/command",
                    f"the replay command passes `{shown[:80]}`: it turns reuse of inputs or outputs on",
                )
    return None


# ---------------------------------------------------------------- KE412: a detail that contradicts "passed"

#: a time unit as a detail writes it, longest spellings first
_T_UNIT = (
    r"(milliseconds?|microseconds?|nanoseconds?|seconds?|msecs?|usecs?|nsecs?|secs?|ms|us|\u03bcs|\u00b5s|ns|s)"
    r"(?![a-z])"
)
_T_FACTOR = {"n": 1e-9, "u": 1e-6, "\u03bc": 1e-6, "\u00b5": 1e-6, "m": 1e-3, "s": 1.0}
_T_NUM = r"(\d+(?:\.\d+)?)\s*"
_MEASURED = r"(?:measured|reads?|timed|took|came\s+out\s+(?:as|at)|gave|reported|registered|showed?)"
#: a timer check's own figures: `a 1 ms spin measured 0.80 ms`, `sleep(1 ms) measured 0.8 ms`,
#: `measured 0.8 ms for a 1 ms sleep`
_TIMER_FIGURES = lazy_re(
    rf"(?<![\w.]){_T_NUM}{_T_UNIT}[\s-]*(?:[a-z-]+\s+){{0,2}}?(?P<k1>spin|sleep|delay|busy[\s-]?wait|wait)\w*"
    rf"[^0-9;]{{0,40}}?\b{_MEASURED}\s+(?:as\s+|at\s+)?(?:~|about\s+|approx\w*\s+)?{_T_NUM}{_T_UNIT}"
    rf"|\b(?P<k2>spin|sleep|delay|busy[\s-]?wait)\w*\s*(?:\(|of\s+|for\s+)?\s*{_T_NUM}{_T_UNIT}\)?"
    rf"[^0-9;]{{0,40}}?\b{_MEASURED}\s+(?:as\s+|at\s+)?(?:~|about\s+|approx\w*\s+)?{_T_NUM}{_T_UNIT}"
    rf"|\b{_MEASURED}\s+(?:~|about\s+|approx\w*\s+)?{_T_NUM}{_T_UNIT}\s+(?:for|on|over|against|across|during|in)\s+"
    rf"(?:a\s+|an\s+|the\s+|one\s+)?{_T_NUM}{_T_UNIT}[\s-]*(?P<k3>spin|sleep|delay|busy[\s-]?wait)",
    re.IGNORECASE,
)


def _seconds(value: str, unit: str) -> float:
    u = unit.lower()
    return float(value) * (1.0 if u in ("s", "sec", "secs", "second", "seconds") else _T_FACTOR[u[0]])


def _timer_detail(text: str) -> str | None:
    """timer_integrity: the detail's own spin (or sleep) measured off by more than 5%: a
    spin either way, a sleep or delay short (one that ends early shows a slow clock; one
    that overruns is the scheduler's slack, not the timer's)."""
    if "measur" not in text and "read" not in text and "took" not in text and "time" not in text:
        return None
    for m in _TIMER_FIGURES.finditer(text):
        g = m.groups()
        if m.group("k1"):
            nominal, measured, kind = _seconds(g[0], g[1]), _seconds(g[3], g[4]), m.group("k1")
        elif m.group("k2"):
            nominal, measured, kind = _seconds(g[6], g[7]), _seconds(g[8], g[9]), m.group("k2")
        else:
            measured, nominal, kind = _seconds(g[10], g[11]), _seconds(g[12], g[13]), m.group("k3")
        if nominal <= 0:
            continue
        ratio = measured / nominal
        if ratio < 0.95 or (ratio > 1.05 and measured - nominal > 2e-6 and kind.lower().startswith("spin")):
            return (
                f"its detail reports a {kind.lower()} of {nominal * 1e3:g} ms measured as {measured * 1e3:g} ms "
                f"(ratio {ratio:.3g}, outside 1 +/- 5%): the timer does not keep time (`{m.group(0)[:80]}`)"
            )
    return None


#: inputs kept across rounds: reused, allocated once, the same inputs
_REUSED = lazy_re(
    r"\bre-?(?:used|uses?|using)\b|\brecycled\b"
    r"|\b(?:allocated|generated|created|drawn|built|made|initiali[sz]ed|filled|randomi[sz]ed|sampled)\s+"
    r"(?:only\s+|just\s+)?once\b"
    r"|\b(?:the\s+)?(?:same|identical)\s+(?:inputs?|operands?|input\s+(?:tensors?|buffers?|data|values|batch(?:es)?|"
    r"sets?)|data)\b(?!\s+(?:shapes?|sizes?|dims?|dtypes?|layouts?|distribution|format|generator|recipe))",
    re.IGNORECASE,
)
#: ... unless the detail says their contents were renewed (`buffers allocated once, refilled
#: with new random values each round`)
_RENEWED = lazy_re(
    r"\bre-?fill\w*|\bregenerat\w*|\bre-?randomi[sz]\w*|\bre-?drawn\b|\bre-?sampled\b|\bre-?initiali[sz]\w*"
    r"|\b(?:new|fresh|different)\s+(?:random\s+)?(?:values|data|contents?|numbers)\b|\bcopied\s+in\b"
    r"|\b(?:over)?writ(?:ten|es?)\s+(?:\w+\s+){0,3}?(?:new|fresh|random)\b",
    re.IGNORECASE,
)
_INPUT_WORD = lazy_re(r"\binputs?\b|\boperands?\b", re.IGNORECASE)
_OUTPUT_WORD = lazy_re(r"\boutputs?\b|\bresults?\b|\bworkspaces?\b|\bscratch\b", re.IGNORECASE)
#: a clause about the two sides sharing a round's inputs, not one input kept across rounds
_SIDES = lazy_re(r"\bsides?\b|\bbaseline\b|\bcandidate\b|\bboth\b", re.IGNORECASE)


def _clause(text: str, start: int, end: int) -> tuple[int, int]:
    """The bounds of the clause around ``text[start:end]``."""
    cut = 0
    for c in _CLAUSE.finditer(text, 0, start):
        cut = c.end()
    nxt = _CLAUSE.search(text, end)
    return cut, nxt.start() if nxt is not None else len(text)


def _fresh_detail(text: str) -> str | _Pool | None:
    """fresh_inputs: the detail says its inputs were kept across rounds (reused, allocated
    once, the same inputs), in a clause that does not deny it, nor speaks only of outputs
    or of the two sides sharing a round's inputs, and says nowhere their contents were
    renewed."""
    for m in _REUSED.finditer(text):
        lo, hi = _clause(text, m.start(), m.end())
        if _DENIED.search(text, lo, m.start()):
            continue
        clause = text[lo:hi]
        if _OUTPUT_WORD.search(clause) and not _INPUT_WORD.search(clause):
            continue
        if _SIDES.search(clause):
            continue  # the two sides given a round's same inputs: fair, not kept across rounds
        if _RENEWED.search(text):
            return None
        return f"its detail says the inputs were kept across rounds (`{m.group(0).strip()}`: `{clause.strip()[:80]}`)"
    for m in _POOL.finditer(text):
        lo, hi = _clause(text, m.start(), m.end())
        if _DENIED.search(text, lo, m.start()):
            continue
        clause = text[lo:hi]
        if _OUTPUT_WORD.search(clause) and not _INPUT_WORD.search(clause):
            continue
        if m.group("n4") and not _CYCLED.search(text):
            continue  # pre-generated inputs, not said to be cycled
        if _RENEWED.search(text):
            return None
        n = int(next(g for g in m.group("n1", "n2", "n3", "n4") if g))
        return _Pool(n, m.group(0).strip()[:60])
    return None


#: a pool or ring of N inputs cycled through: `a pool of 2`, `round-robin over 4`, `an 8-entry
#: ring`, `2 pre-generated tensors` (beside a word of cycling)
_POOL = lazy_re(
    r"\b(?:pool|ring|rotation|bank)\s+of\s+(?P<n1>\d+)\b"
    r"|\b(?P<n2>\d+)[\s-]+(?:entry|slot|element|buffer|set|input|tensor|deep)s?[\s-]+(?:pool|ring)\b"
    r"|\b(?:cycl\w*|rotat\w*|round[\s-]?robin)\s+(?:through|over|across|among|between|from)\s+(?:a\s+|the\s+)?"
    r"(?:pool\s+of\s+|ring\s+of\s+|set\s+of\s+)?(?P<n3>\d+)\b"
    r"|\b(?P<n4>\d+)\s+(?:[\w-]+\s+){0,2}?(?:pre-?generated|pre-?allocated|pre-?computed|pre-?built)\b",
    re.IGNORECASE,
)
_CYCLED = lazy_re(r"\bcycl\w*|\brotat\w*|\bround[\s-]?robin|\bpool\b|\bring\b|\brepeat\w*", re.IGNORECASE)


class _Pool:
    """fresh_inputs: the pool of inputs its detail names, held against the timed calls."""

    __slots__ = ("n", "words")

    def __init__(self, n: int, words: str) -> None:
        self.n, self.words = n, words

    def against(self, p: Any) -> str | None:
        reps = _repeats(p)
        if reps is None or self.n >= reps:
            return None
        return (
            f"its detail draws the inputs from a pool of {self.n} (`{self.words}`) over {reps} timed calls: each "
            "input comes back, and a cache keyed by the inputs hits"
        )


#: a check restricted to one rank, process or GPU: `rank 0 only`, `only on rank 0`, `GPU 0
#: only`, `on the first rank only`, `on one rank` (not one that only logs there)
_ONE_RANK = lazy_re(
    r"(?<![\w-])(?:"
    r"(?:rank|gpu|device|process|worker|gcd|local[\s_-]rank)\s*#?\s*\d+\s+only(?!\s+(?:logs?|prints?|reports?|writes?|"
    r"records?|saves?|gathers?|collects?|outputs?))"
    r"|only\s+(?:on|for|in|at|from|by)?\s*(?:the\s+)?(?:rank|gpu|device|process|worker|gcd)\s*#?\s*\d+"
    r"|only\s+(?:on|for|in|at|by)?\s*(?:the\s+)?(?:first|main|master|leader|lead|primary|zeroth|one|a\s+single|single)\s+"
    r"(?:rank|gpu|device|process|worker)"
    r"|(?:on|for|in|by)\s+(?:the\s+)?(?:first|main|master|leader|primary|zeroth)\s+(?:rank|process|gpu|device|worker)"
    r"(?:\s+only)?"
    r"|(?:on|for|in|by)\s+(?:just\s+|only\s+)?(?:one|a\s+single|a)\s+(?:rank|process|gpu|worker)(?!\w)"
    r")(?!\w)",
    re.IGNORECASE,
)


class _OneRank:
    """A defence's detail that restricts its check to one rank or GPU, held against the
    processes and devices the run used."""

    __slots__ = ("words",)

    def __init__(self, words: str) -> None:
        self.words = words

    def against(self, p: Any) -> str | None:
        n, where = _processes(p)
        if n <= 1:
            return None
        return (
            f"its detail restricts the check to one rank or device (`{self.words}`) while the run used {n} "
            f"({where}): the other ranks went unchecked"
        )


#: launchers that start several processes, and their flags that count them
_LAUNCHERS = frozenset({
    "torchrun", "torch.distributed.run", "torch.distributed.launch", "mpirun", "mpiexec", "srun", "accelerate",
    "deepspeed", "horovodrun", "jsrun", "aprun",
})  # fmt: skip
_COUNT_FLAGS = frozenset({
    "--nproc_per_node", "--nproc-per-node", "-np", "-n", "--np", "--ntasks", "--ntasks-per-node", "--num_processes",
    "--num-processes", "--num_gpus", "--num-gpus", "--gpus", "--gpus-per-node", "--nnodes", "-N",
    "--tensor-parallel-size", "--tensor_parallel_size", "-tp", "--tp", "--tp-size", "--tp_size",
})  # fmt: skip
_PARALLEL_FLAGS = frozenset(
    {"--tensor-parallel-size", "--tensor_parallel_size", "-tp", "--tp", "--tp-size", "--tp_size"}
)


def _processes(p: Any) -> tuple[int, str]:
    """How many processes or devices the run used, and where the packet says so: a side's
    `device_count`, or the replay's launcher (`torchrun --nproc_per_node=2`, `mpirun -np
    4`) or tensor-parallel size. (1, "") when it says none."""
    best, where = 1, ""
    t = p.timing
    if t is not None:
        for c, ptr in (
            (t.conditions, "/timing/conditions/device_count"),
            (
                t.baseline.conditions if t.baseline is not None else None,
                "/timing/baseline/conditions/device_count",
            ),
        ):
            if c is not None and c.device_count is not None and c.device_count > best:
                best, where = c.device_count, ptr
    r = p.replay
    if r is not None and r.command:
        toks = " ".join(r.command[:256])[:20000].split()
        launched = any(tok.rpartition("/")[2] in _LAUNCHERS for tok in toks)
        for j, tok in enumerate(toks):
            flag, eq, val = tok.partition("=")
            if flag not in _COUNT_FLAGS or not (launched or flag in _PARALLEL_FLAGS):
                continue
            if not eq:
                val = toks[j + 1] if j + 1 < len(toks) else ""
            if val.isdigit() and int(val) > best:
                best, where = int(val), f"/replay/command `{flag}{'=' if eq else ' '}{val}`"
    return best, where


_CALLS = r"(?:calls?|runs?|iterations?|launch(?:es)?|pass(?:es)?|invocations?)"
#: the outputs compared were not the timed calls': only the warm-up or the first call, or
#: the comparison ran before the timed loop
_BEFORE_TIMING = lazy_re(
    rf"\b(?P<only>only\s+(?:the\s+)?(?:first|initial|warm-?\s?up)\s+(?:warm-?\s?up\s+)?{_CALLS})\b"
    rf"|\b(?:first\s+|initial\s+|single\s+)?warm-?\s?up\s+(?:{_CALLS}|outputs?|results?)\b"
    r"(?!\s+(?:were\s+|was\s+|are\s+|is\s+)?(?:excluded|skipped|discarded|ignored|dropped|omitted|not\b))"
    rf"|\b(?:first|initial)\s+(?:untimed\s+)?{_CALLS}\b(?!\s+(?:after|following|once|past|beyond))"
    r"|\bbefore\s+(?:the\s+)?(?:timed|timing|measured|measurement|benchmark\w*)(?:\s+(?:loop|run|calls?|"
    r"iterations?|phase|region|section|window|began|started|starts))?\b",
    re.IGNORECASE,
)
_COMPARED = lazy_re(r"\bcompar\w*|\bcheck\w*|\bverif\w*|\bvalidat\w*|\bmatch\w*", re.IGNORECASE)
#: ... unless the detail says a timed call's outputs were compared after timing
_AFTER_TIMING = lazy_re(
    r"\b(?:last|final|every|each|all(?:\s+the)?|the)\s+timed\s+(?:calls?|runs?|iterations?|launch(?:es)?)\b"
    r"|\bafter\s+(?:the\s+)?(?:timed|timing|measurement|benchmark\w*)\b",
    re.IGNORECASE,
)


#: the candidate's output buffer is the reference's: shared or aliased with it, or written
#: by the reference (what is compared may be the reference's own result)
_SHARED_OUT = lazy_re(
    r"\b(?:outputs?|results?)(?:\s+(?:buffers?|tensors?|storage|allocations?))?\s+(?:(?:is|was|are|were|being|been)\s+)*"
    r"(?:shared|aliased|reused|the\s+same)\s+(?:with|as|by|from)\s+(?:the\s+)?reference"
    r"|\b(?:shared|aliased|same|single|common)\s+(?:output\s+|result\s+)?(?:buffers?|tensors?|storage|allocations?)"
    r"\s+(?:with|as)\s+(?:the\s+)?reference"
    r"|\breference(?:'s)?\s+(?:call\s+|kernel\s+|run\s+|implementation\s+)?(?:wrote|writes|had\s+written|has\s+written|"
    r"overwrote|filled|populated)\s+(?:into\s+|to\s+)?(?:it\b|the\s+(?:same|shared)\b|(?:the\s+)?candidate'?s?\b)"
    r"|\bcandidate'?s?\s+(?:outputs?|results?)(?:\s+(?:buffers?|tensors?))?\s+(?:(?:is|was|were|are|been)\s+)*"
    r"(?:written|filled|populated|overwritten)\s+by\s+(?:the\s+)?reference",
    re.IGNORECASE,
)


def _outputs_detail(text: str) -> str | None:
    """outputs_checked_after_timing: the detail says the outputs compared were the warm-up
    call's or the first call's, or compared before the timed loop (the check's opposite),
    in a clause that compares and does not deny it; or that the candidate's output buffer
    is the reference's (shared with it, written by it), in a clause that does not deny it."""
    for m in _SHARED_OUT.finditer(text):
        lo, hi = _clause(text, m.start(), m.end())
        if _DENIED.search(text, lo, m.start()):
            continue
        return (
            f"its detail says the candidate's output buffer is the reference's (`{m.group(0).strip()[:60]}`): what "
            "it compared may be the reference's own result"
        )
    for m in _BEFORE_TIMING.finditer(text):
        lo, hi = _clause(text, m.start(), m.end())
        if _DENIED.search(text, lo, m.start()):
            continue
        if not m.group("only") and (not _COMPARED.search(text, lo, hi) or _AFTER_TIMING.search(text)):
            continue  # a warm-up beside a timed call compared, or no comparison in its clause
        return (
            f"its detail says the outputs compared were not the timed calls' (`{m.group(0).strip()}`: "
            f"`{text[lo:hi].strip()[:80]}`)"
        )
    return None


#: a byte size (`4 MiB`, `256MB`, `1.5 GiB`, `65536 bytes`)
_SIZE = lazy_re(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s*(tib|tb|gib|gb|mib|mb|kib|kb|bytes?|b)(?![a-z0-9/])", re.IGNORECASE
)
_SIZE_POW = {"t": 4, "g": 3, "m": 2, "k": 1, "b": 0}
#: words beside a size that make it the cache's size, not the flush's
_CACHE_SIZE_WORD = lazy_re(
    r"cache|\bl[123]\b|\bllc\b|last[\s-]level|\bsram\b|\bsmem\b|\bshared\b|\bhbm\b|\bvram\b|capacity",
    re.IGNORECASE,
)
#: a clause that speaks of a flush (a memset, a buffer written between calls)
_FLUSH_WORD = lazy_re(
    r"memset|flush|\bbuffers?\b|\bwr(?:i|o)te|written|writing|\bfill|\bzero|scrub|evict|\bclear|thrash|\btouch",
    re.IGNORECASE,
)
_ROTATION_WORD = lazy_re(r"rotat|\bcopies\b|\bcycl", re.IGNORECASE)


def _flush_size(text: str) -> tuple[float, str] | None:
    """cache_flush: the largest flush size the detail names, in bytes at the most its
    digits and unit can mean (half a unit in the last digit up, MB read as MiB), with its
    words; None when it names none (sizes of a cache, or of a rotation, are not flushes)."""
    if not any(ch.isdigit() for ch in text):
        return None
    best: tuple[float, str] | None = None
    for m in _SIZE.finditer(text):
        lo, hi = _clause(text, m.start(), m.end())
        before = text[max(lo, m.start() - 24) : m.start()]
        after = text[m.end() : min(hi, m.end() + 16)]
        if _CACHE_SIZE_WORD.search(before) or _CACHE_SIZE_WORD.search(after):
            continue
        clause = text[lo:hi]
        if not _FLUSH_WORD.search(clause) or _ROTATION_WORD.search(clause):
            continue
        num, unit = m.group(1), m.group(2).lower()
        frac = num.partition(".")[2]
        hi_value = float(num) + 0.5 * 10.0 ** -len(frac)
        pw = _SIZE_POW[unit[0]] if unit[0] in _SIZE_POW and not unit.startswith("byte") else 0
        size = hi_value * max(1000.0**pw, 1024.0**pw)
        if best is None or size > best[0]:
            best = (size, m.group(0).strip())
    return best


class _NoCache:
    """A side without a cache block: the last-level cache comes from the hardware alone."""

    last_level_cache = None


def _flush_detail(p: Any, found: tuple[float, str]) -> str | None:
    """cache_flush: the flush its detail names is smaller than the last-level cache, or
    than the flush the conditions record."""
    size, words = found
    t = p.timing
    conds = (t.conditions, t.baseline.conditions if t.baseline is not None else None) if t is not None else ()
    cache: Any = _NoCache  # the first side's cache
    for c in conds:
        if c is not None and c.cache is not None:
            cache = c.cache
            break
    llc = _llc(p, cache)
    if llc is not None and size < llc:
        return (
            f"its detail names a flush of {words}, smaller than the last-level cache ({llc / 2**20:g} MiB): "
            "it evicts nothing"
        )
    recorded = []  # the flushes the sides record, in bytes
    for c in conds:
        side = c.cache if c is not None else None
        if side is not None and side.mode == "flushed" and side.flush_bytes is not None:
            recorded.append(side.flush_bytes.value * _FACTOR[side.flush_bytes.unit])
    if recorded and size < min(recorded):
        return (
            f"its detail names a flush of {words}, smaller than the {min(recorded) / 2**20:g} MiB the conditions "
            "record (cache.flush_bytes)"
        )
    return None


#: the workload's seed fixed in advance or public: `fixed in the public config`, `public seed`
_PUBLIC_SEED = lazy_re(
    r"\bpublic(?:ly)?\s+(?:known\s+)?(?:seeds?|config\w*|workloads?|datasets?|inputs?|repo\w*|files?|defaults?|"
    r"prompts?)\b"
    r"|\b(?:in|from|by|via)\s+(?:the\s+)?(?:public|published|committed|checked-in|repo(?:sitory)?(?:'s)?)\s+"
    r"(?:config\w*|yaml|json|toml|files?|repo\w*)\b"
    r"|(?P<seed>\bseeds?\b(?:\s*[:=]?\s*\d+)?,?\s+(?:(?:was|is|were|are|been|had\s+been|kept|stays?)\s+)*"
    r"(?:fixed|hard-?coded|constant|static|preset|predetermined|published|public|known\s+(?:in\s+advance|"
    r"beforehand|ahead))\b"
    r"|\b(?:fixed|hard-?coded|constant|static|preset|predetermined|published)\s+(?:input\s+|workload\s+)?seeds?\b)",
    re.IGNORECASE,
)
#: ... in a clause that denies or contrasts it (`unlike the public config's`)
_CONTRASTED = lazy_re(
    r"\bdiffer\w*|\bunlike\b|\binstead\b|\brather\s+than\b|\bdistinct\b|\bother\s+than\b|\bapart\b|\bseparate\w*",
    re.IGNORECASE,
)
#: ... or says the seed was chosen late (`fixed after the candidate was loaded`, `at run time`)
_LATE = lazy_re(
    r"\bafter\b|\bonce\b|\blater\b|\bat\s+(?:run|launch|start)|\brun-?time\b|\brandom\w*|\bsecret\b|\bprivate\b|"
    r"\bhidden\b|\bunknown\b|\bnever\b",
    re.IGNORECASE,
)


def _hidden_detail(text: str) -> str | None:
    """hidden_workload: the detail says the workload's seed was fixed or public before
    the run (a seed released for the replay afterwards is honest)."""
    for m in _PUBLIC_SEED.finditer(text):
        lo, hi = _clause(text, m.start(), m.end())
        if _DENIED.search(text, lo, m.start()) or _CONTRASTED.search(text, lo, hi):
            continue
        if m.group("seed") and _LATE.search(text, lo, hi):
            continue
        return f"its detail says the workload's seed was fixed or public in advance (`{m.group(0).strip()[:60]}`)"
    return None


_DETAIL_READERS = {
    "timer_integrity": _timer_detail,
    "fresh_inputs": _fresh_detail,
    "outputs_checked_after_timing": _outputs_detail,
    "cache_flush": _flush_size,
    "hidden_workload": _hidden_detail,
}
_UNREAD: Any = object()


#: what a passed defence's detail says against it, by (check, detail): None (nothing), the
#: message, or the flush (bytes, words) a cache_flush detail names (see :func:`_detail_verdict`)
_VERDICT_CACHE: dict[tuple[str, str], Any] = {}


def _detail_verdict(check: str, detail: str) -> Any:
    """KE412: what a passed defence's own detail says against it, read once per check and
    detail (cached): that it did not run or counted zero items (the message); or its figures
    or words contradict its passing (a spin measured off, inputs reused, the warm-up
    compared, the seed public: the message; a cache_flush detail: the flush it names, which
    :func:`_flush_detail` holds against the packet's caches); else None."""
    said = _says_not_run(detail)
    hit: Any
    if said:
        hit = (
            f"its detail counts zero items checked (`{detail.strip()[:80]}`)"
            if said == "zero"
            else f"its detail says it did not run (`{detail.strip()[:80]}`)"
        )
    elif check in _DETAIL_READERS:
        head = detail[:1024]
        if not head.isascii():
            head = "".join(
                ch
                for ch in unicodedata.normalize("NFKC", head).casefold()
                if unicodedata.category(ch) != "Cf"
            )
        hit = _DETAIL_READERS[check](head)
    else:
        hit = None
    if hit is None:
        head = detail[:1024]
        low = head.lower()
        if "only" in low or "first" in low or "one" in low or "single" in low or "main" in low:
            m = _ONE_RANK.search(head)
            if m is not None and not _DENIED.search(head, _clause(head, m.start(), m.end())[0], m.start()):
                hit = _OneRank(m.group(0).strip()[:60])
    if len(_VERDICT_CACHE) < 4096 and len(detail) <= CACHED_CHARS:
        _VERDICT_CACHE[(check, detail)] = hit
    return hit


#: names an output tensor goes by
_OUTPUTS = frozenset({"c", "d", "o", "y", "out", "output", "result", "res", "dst"})


_OUTPUT_NAMES: dict[str, bool] = {}


def _is_output(name: str) -> bool:
    """Whether a tensor's name is an output's (cached: a batch repeats a few names)."""
    hit = _OUTPUT_NAMES.get(name)
    if hit is None:
        hit = name.strip().casefold() in _OUTPUTS
        if len(_OUTPUT_NAMES) < 4096 and len(name) <= CACHED_CHARS:
            _OUTPUT_NAMES[name] = hit
    return hit


def _output_elements(task: Any, shape_id: str) -> int | None:
    """The element count of a suite shape's output (a tensor named as one), or None when
    the shape does not say which tensor it is."""
    for sh in task.shapes or ():
        if sh.id != shape_id:
            continue
        for tensor in sh.tensors or ():
            name = tensor.name
            out = _OUTPUT_NAMES.get(name)  # _is_output's cache, read here: a call per tensor saved
            if out is None:
                out = _is_output(name)
            if out:
                n = 1
                for x in tensor.shape:
                    n *= x
                return n
    return None


def _shapes_cover(p: Any, v: Any, claim: bool, add: Add) -> None:
    """KE409-KE411 for a passed packet with per-shape results."""
    shapes = v.shapes
    task = p.task
    tol = task.tolerance if task is not None else None
    ids = set()
    for i, s in enumerate(shapes):
        ids.add(s.shape_id)
        if not s.passed:
            continue  # KE407
        req = s.required_matched_ratio
        if req is None and tol is not None:
            req = tol.required_matched_ratio
        mr = s.matched_ratio
        if req is not None and mr is not None and mr < req * _LO:
            add(
                (
                    "KE411",
                    f"/validation/shapes/{i}/matched_ratio",
                    f"shape `{s.shape_id}` passed with {mr:g} of its elements matching; it requires {req:g}",
                )
            )
        if s.elements is not None and task is not None and task.shapes:
            full = _output_elements(task, s.shape_id)
            if full is not None and s.elements * 2 < full:
                add(
                    (
                        "KE413",
                        f"/validation/shapes/{i}/elements",
                        f"shape `{s.shape_id}` compared {s.elements} of its output's {full} elements",
                    )
                )
        err = s.max_abs_error
        # some elements may be out of bound, unless matched_ratio says every one matched
        some = req is not None and req < 1
        if err is None or (some and (mr is None or mr < 1)):
            continue
        atol = s.atol if s.atol is not None else (tol.atol if tol is not None else None)
        rtol = s.rtol if s.rtol is not None else (tol.rtol if tol is not None else None)
        if atol is None and rtol is None:
            continue
        ref = s.reference_max_abs
        if rtol and ref is None:
            continue  # the bound cannot be known (KE702)
        bound = (atol or 0.0) + (rtol or 0.0) * (ref or 0.0)
        if ref is not None and ref <= bound:
            continue  # zeros would pass: KE701 says so
        if err > bound * _HI + 1e-300:
            if some:  # an element off by more than the largest bound did not match
                add(
                    (
                        "KE411",
                        f"/validation/shapes/{i}/matched_ratio",
                        f"shape `{s.shape_id}` says matched_ratio {mr:g} (every element within tolerance) beside "
                        f"max error {err:g} above the largest bound {bound:g} (atol + rtol x reference_max_abs)",
                    )
                )
                continue
            add(
                (
                    "KE411",
                    f"/validation/shapes/{i}/max_abs_error",
                    f"shape `{s.shape_id}` passed with max error {err:g} above its bound {bound:g} (atol + rtol x |reference|)",
                )
            )
        elif tol is not None and (
            (s.atol is not None and tol.atol is not None and s.atol > tol.atol)
            or (s.rtol is not None and tol.rtol is not None and s.rtol > tol.rtol)
        ):
            _task_bound(i, s, tol, atol, rtol, ref, err, add)
    if task is not None and task.shapes:
        for sh in task.shapes:  # a loop: every shape validated leaves nothing to build
            if sh.id not in ids:
                _suite_missing(task.shapes, ids, add)
                break
    if not claim:
        return
    t = p.timing
    sid = t.conditions.shape_id if t.conditions is not None and t.conditions.shape_id else None
    ptr = "/timing/conditions/shape_id"
    if sid is None:
        sid, ptr = t.shape_id, "/timing/shape_id"
    if sid is not None and sid not in ids:
        add(("KE409", ptr, f"the timed shape `{sid}` is not among the validated shapes"))


def _task_bound(
    i: int, s: Any, tol: Any, atol: float | None, rtol: float | None, ref: float | None, err: float, add: Add
) -> None:
    """KE411: a shape that states its own atol or rtol looser than the task's passed only
    under the looser one: its max error is above the bound the task's tolerance gives."""
    tatol = atol if tol.atol is None or atol is None else min(atol, tol.atol)
    trtol = rtol if tol.rtol is None or rtol is None else min(rtol, tol.rtol)
    if tatol == atol and trtol == rtol:
        return
    tb = (tatol or 0.0) + (trtol or 0.0) * (ref or 0.0)
    if err > tb * _HI + 1e-300:
        field, mine, task = ("atol", atol, tatol) if tatol != atol else ("rtol", rtol, trtol)
        add(
            (
                "KE411",
                f"/validation/shapes/{i}/{field}",
                f"shape `{s.shape_id}` passed under its own {field} {mine:g}, looser than the task's {task:g}: "
                f"its max error {err:g} is above the task's bound {tb:g}",
            )
        )


def _suite_missing(shapes: list[Any], ids: set[str], add: Add) -> None:
    """KE410: the suite shapes that no validation result names."""
    missing = [sh.id for sh in shapes if sh.id not in ids]
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    add(
        (
            "KE410",
            "/validation/shapes",
            f"suite shapes not validated: {', '.join(f'`{m}`' for m in missing[:3])}{more}",
        )
    )
