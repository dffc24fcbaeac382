"""The evidence grade: how strong a packet's performance evidence is, and why not stronger.

A grade says what could be checked. A is given only when every class of lie the rules know
could be checked on the packet and was: nothing the packet leaves out is taken on its
producer's word.

=====  ==============================================================================
A      a vendor-baseline claim whose every supporting record is there and checks out:
       both sides' measurement conditions recorded (dtypes, shape, device, timing
       method, warmup, repeats, synchronisation, cache policy, session) and consistent, the
       defence record with every check run (the four core ones passed: fresh inputs,
       outputs checked after timing, timer integrity, unseen inputs; a pass with no word
       of what it checked, or no tool, is the producer's word), session ids that are no
       placeholders, at least 10 timed calls a side, raw samples or a confidence interval
       at 0.9 or more, clocks observed or locked at a stated clock, pinned code (commit hash and container
       digest), work figures or a profiler capture, the reference magnitude of every
       shape judged under a tolerance; no warnings
B      a vendor-baseline claim missing some of A's records (the reasons list what
       could not be checked); ``same_session`` or ``interleaved`` stated without the
       conditions that show it is the producer's word only, and earns B at best
C      a claim that rests on a reference implementation, a baseline from another
       session, validation without per-shape results, or a warning that makes the claim
       suspicious (cherry-picked basis, one cold call, suite shapes not validated, a
       tolerance judged without the reference's magnitude, a baseline that is only a
       packet id, a container on a moving tag)
D      a valid packet that makes no performance claim (failures, bare timings, profiles)
F      invalid: at least one error finding
=====  ==============================================================================

Warnings cap the grade at B, or at C when their rule is declared with ``caps="C"``
(:func:`kernel_evidence.rules._engine.declare`).
"""

from __future__ import annotations

from typing import Any

from ._engine import RULES, Finding, Grade
from ._tables import baseline_entry

#: the defences an A needs passed (on a kernel claim), and those it needs run (passed, or
#: not applicable to the packet: a CPU has no kernel to profile, warm timing no flush)
CORE_DEFENCES = ("fresh_inputs", "outputs_checked_after_timing", "timer_integrity", "unseen_inputs")
ALL_DEFENCES = (*CORE_DEFENCES, "candidate_kernel_profiled", "hidden_workload", "cache_flush")
#: a serving claim: its requests are its inputs, its outputs are checked as they stream
SERVING_CORE = ("timer_integrity",)

#: the conditions each side of a kernel comparison records for an A
#: (the session ids are what shows ``same_session``: the boolean alone is the producer's word)
KERNEL_CONDITIONS = ("dtypes", "shape_id", "method", "warmup", "repeats", "synchronized", "cache", "session")
#: ... and of a serving comparison
SERVING_CONDITIONS = ("method", "device_count", "session")


def grade_packet(p: Any, findings: list[Finding]) -> Grade:
    """Grade a decoded packet given its findings."""
    if findings:
        errors = [f for f in findings if f.severity == "error"]
        if errors:
            ids = sorted({f.rule_id for f in errors})
            return Grade("F", (f"invalid: {', '.join(ids)}",))
    caps: list[tuple[str, str]] = []
    t = p.timing
    if t is None or t.speedup is None:
        status = p.status._value_  # not .value: the enum property costs a Python call
        if status != "passed":
            caps.append(("D", f"a {status} packet: records a failure, makes no performance claim"))
        else:
            caps.append(("D", "makes no performance claim (no speedup over a named baseline)"))
    else:
        _claim_caps(p, t, caps)
    if findings:
        warns = sorted({f.rule_id for f in findings if f.severity == "warning"})
        if warns:
            strong = [w for w in warns if RULES[w].caps == "C"]
            if strong:
                caps.append(("C", f"suspicious: {', '.join(strong)}"))
            weak = [w for w in warns if RULES[w].caps != "C"]
            if weak:
                caps.append(("B", f"warnings: {', '.join(weak)}"))
    if not caps:
        return _grade("A", ())
    # the weakest letter; reasons weakest first, in the order found within a letter
    reasons: list[str] = []
    letter = ""
    for lt in "DCB":
        for c, r in caps:
            if c == lt:
                reasons.append(r)
                letter = letter or lt
    return _grade(letter, tuple(reasons))


def _claim_caps(p: Any, t: Any, caps: list[tuple[str, str]]) -> None:
    """What keeps a claim from A (and from B)."""
    b = t.baseline
    kernel = p.subject.kind == "kernel"
    entry = baseline_entry(b.provider) if b is not None and b.provider else None
    if entry is not None and entry.kind == "reference":
        caps.append(("C", f"baseline `{entry.name}` is a reference implementation, not a vendor library"))
    if b is not None and b.same_session is not True:
        caps.append(("C", "baseline not measured in the same session"))
    if kernel and (p.validation is None or not p.validation.shapes):
        caps.append(("C", "validation records no per-shape results"))
    # -- the conditions of both sides, so that same_session/interleaved are not taken on
    # the producer's word
    if b is not None and (b.stats is not None or b.serving is not None):
        need = KERNEL_CONDITIONS if kernel else SERVING_CONDITIONS
        for side, c in (("candidate", t.conditions), ("baseline", b.conditions)):
            if c is None:
                caps.append(("B", f"the {side}'s measurement conditions are not recorded"))
                continue
            missing: list[str] = []
            for k in need:  # a loop, not a comprehension (its own frame): once per side
                if getattr(c, k) is None:
                    missing.append(k)
            sess = c.session
            if sess is not None and _says_nothing(sess):
                missing.append("session (a placeholder id)")
            if c.device is None and c.device_id is None:
                missing.append("device")
            if missing:
                caps.append(("B", f"the {side}'s conditions lack {', '.join(missing)}"))
    # -- the defences the harness ran
    ds = p.defences
    if not ds:
        caps.append(("B", "no defence record: which anti-gaming checks ran is unknown"))
    else:
        outcome: dict[str, Any] = {}
        for d in ds:
            # a check listed twice counts by its worst outcome: a passed copy does not
            # shadow a skipped or failed one; a pass that names no tool as having run it
            # (`none`, `self-reported`, `manual`) is the producer's word, not a run
            o = d.outcome
            if o == "passed" and (
                (d.tool is not None and _no_tool(d.tool)) or d.detail is None or _says_nothing(d.detail)
            ):
                o = "skipped"
            if outcome.get(d.check, "passed") == "passed":
                outcome[d.check] = o
        core = CORE_DEFENCES if kernel else SERVING_CORE
        weak: list[str] = []
        for c in core:
            if outcome.get(c) != "passed":
                weak.append(c)
        for c in ALL_DEFENCES:
            if c in core:
                continue
            o = outcome.get(c)
            if o == "not_applicable" and not _not_applicable(p, t, c):
                o = None  # not applicable to what this packet says it ran on
            if o not in ("passed", "not_applicable"):
                weak.append(c)
        if weak:
            caps.append(("B", f"defences not run or not passed: {', '.join(weak)}"))
    # -- the records the remaining checks need
    st = t.stats
    if st is not None and not st.samples:
        if st.ci_low is None:
            caps.append(("B", "no raw samples or confidence interval"))
        elif st.ci_level is not None and st.ci_level < _CI_LEVEL:
            caps.append(("B", f"no raw samples, and a confidence interval at {st.ci_level:g} (below 0.9)"))
    if kernel:
        for side, sst in (("candidate", st), ("baseline", b.stats if b is not None else None)):
            calls = _calls(sst)
            if calls is not None and calls < _FEWEST_CALLS:
                caps.append(("B", f"the {side} was timed {calls} times: too few to rest an A on"))
    h = p.hardware
    ck = h.clocks if h is not None else None
    if ck is None or (ck.sm_observed is None and not (ck.locked is True and ck.sm_requested is not None)):
        caps.append(("B", "clock state not recorded (neither locked at a stated clock nor observed)"))
    r = p.replay
    if r is None or r.repository is None or not r.repository.commit:
        caps.append(("B", "replay pins no repository commit"))
    elif r.repository.dirty:
        caps.append(("B", "replay commit had uncommitted changes (dirty tree)"))
    if r is None or r.container is None or not r.container.digest:
        caps.append(("B", "replay pins no container digest"))
    if not _captured(p.profiler) and not _work(p.task):
        caps.append(("B", "no profiler capture or work figures: the speed-of-light fraction is unknown"))


#: what a defence's `tool` says when no tool ran it
_NO_TOOL = (
    "none", "n/a", "na", "n.a.", "manual", "manually", "self-reported", "self reported",
    "selfreported", "by hand", "unknown", "nobody", "not run", "-", "trust me", "trusted",
    "assumed", "believed", "tbd", "todo",
)  # fmt: skip
#: a CI stands in for the samples at this level or more; an A rests on this many timed calls
_CI_LEVEL = 0.9
_FEWEST_CALLS = 10
#: words that say nothing as a session id or as what a defence checked
_NOTHING = frozenset({
    "", "ok", "okay", "yes", "y", "true", "1", "0", "pass", "passed", "done", "fine", "good",
    "checked", "verified", "success", "succeeded", "valid", "same", "unknown", "none", "n/a", "na",
    "-", "--", "?", "default", "session", "tbd", "todo", "x", "null", "nil", "all good",
})  # fmt: skip


def _says_nothing(text: str) -> bool:
    """Whether a session id or a defence's detail is a placeholder (`ok`, `same`, `unknown`):
    read casefolded, without surrounding punctuation."""
    return text.strip(" .!;:,-_'\"").casefold() in _NOTHING if len(text) <= 32 else False


def _calls(st: Any) -> int | None:
    """How many timed calls a statistics block rests on (its samples, else its n)."""
    if st is None:
        return None
    if st.samples:
        return len(st.samples) + (st.dropped or 0)
    n: int | None = st.n
    return n


_NO_TOOL_CACHE: dict[str, bool] = {}


def _no_tool(tool: str) -> bool:
    """Whether a defence's ``tool`` says no tool ran it: `none`, `self-reported`, `manual`
    (read NFKC-folded and casefolded; `none (self-reported)` too). Cached, short names only."""
    hit = _NO_TOOL_CACHE.get(tool)
    if hit is None:
        import unicodedata

        t = unicodedata.normalize("NFKC", tool).casefold().strip()
        head = t.split("(", 1)[0].strip(" .;:,")
        hit = head in _NO_TOOL or "self-report" in t or "self report" in t
        if len(_NO_TOOL_CACHE) < 1024 and len(tool) <= 256:
            _NO_TOOL_CACHE[tool] = hit
    return hit


#: cache modes under which no flush is due
_NO_FLUSH = frozenset({"warm", "cold_start", "rotating"})


def _not_applicable(p: Any, t: Any, check: str) -> bool:
    """Whether a defence recorded ``not_applicable`` can be: on a kernel claim, profiling the
    candidate's kernel on an accelerator always applies, and a cache flush applies unless
    the candidate's cache mode is warm, a cold start, or rotating buffers."""
    if p.subject.kind != "kernel":
        return True  # a serving run times requests, not a kernel under a flush
    if check == "candidate_kernel_profiled":
        # the device table holds accelerators only (a CPU is not in it)
        h = p.hardware
        return h is None or not _accelerator(h.device)
    if check == "cache_flush":
        c = t.conditions
        mode = c.cache.mode if c is not None and c.cache is not None else t.cache_policy
        return mode in _NO_FLUSH
    return True


def _accelerator(name: str) -> bool:
    """Whether the device table knows ``name`` (cached; short names only)."""
    hit = _ACCELERATOR_CACHE.get(name)
    if hit is None:
        from ..devices import candidates

        hit = len(name) <= 256 and bool(candidates(name))
        if len(_ACCELERATOR_CACHE) < 1024 and len(name) <= 256:
            _ACCELERATOR_CACHE[name] = hit
    return hit


_ACCELERATOR_CACHE: dict[str, bool] = {}


def _captured(captures: Any) -> bool:
    """Whether a profiler capture records something (kernels, a summary or a raw table): an
    entry naming only its tool shows nothing."""
    for c in captures or ():  # noqa: SIM110
        if c.kernels or c.summary or c.raw_columns or c.raw_table is not None:
            return True
    return False


def _work(task: Any) -> bool:
    """Whether the task gives work figures, for the whole task or one of its shapes."""
    if task is None:
        return False
    if task.work is not None:
        return True
    for s in task.shapes or ():  # noqa: SIM110  (a loop: any() over a generator costs more)
        if s.work is not None:
            return True
    return False


_GRADES: dict[tuple[str, tuple[str, ...]], Grade] = {}


def _grade(letter: str, reasons: tuple[str, ...]) -> Grade:
    """Grades are immutable and a batch repeats a few: share them (bounded cache)."""
    key = (letter, reasons)
    g = _GRADES.get(key)
    if g is None:
        g = Grade(letter, reasons)  # type: ignore[arg-type]
        if len(_GRADES) < 1024:
            _GRADES[key] = g
    return g
