"""The rules. Each function receives a decoded packet and yields ``(pointer, message)``.

Rule ids are stable: KE0xx input and identity, KE1xx replay, KE2xx baseline, KE3xx claim,
KE4xx status and correctness, KE5xx timing statistics, KE6xx physical limits, KE7xx
tolerance, KE8xx hardware.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

from ._engine import declare, rule
from ._tables import baseline_entry, device_peaks, peak_flops_for
from ._units import base, seconds

# ---------------------------------------------------------------- KE0xx input and identity

declare(
    "KE001", "error", "document matches the packet schema",
    "fix the field at the pointer; `kevidence schema` prints the JSON Schema",
    "The document must be valid JSON (no NaN/Infinity tokens, UTF-8, bounded nesting, "
    "numbers in range) and match the published JSON Schema of its schema_version: required "
    "fields present, types and units right, no unknown fields (tool-specific data goes under "
    "`extensions`).",
)  # fmt: skip
declare(
    "KE003", "error", "no duplicate keys",
    "remove the repeated key; parsers disagree on which value wins",
    "A JSON object must not repeat a key: readers would silently keep different values.",
)  # fmt: skip
declare(
    "KE000", "error", "input is readable",
    "check the path, permissions and compression of the input",
    "The file exists, can be read, decompresses within the cap and is not empty.",
)  # fmt: skip


def _now() -> datetime:
    return datetime.now(timezone.utc)


declare(
    "KE004", "error", "packet_id matches the content",
    "recompute it: EvidencePacket.with_id() or `kevidence id FILE -o OUT`",
    "``packet_id`` is ``sha256:`` + the SHA-256 of the canonical JSON of the packet without "
    "its id (keys sorted, null members dropped, compact). A packet whose content changed "
    "after its id was computed fails.",
)  # fmt: skip
declare(
    "KE005", "warning", "packet has a packet_id",
    "set it with EvidencePacket.with_id() or `kevidence id FILE -o OUT`",
    "Packets SHOULD carry their content-addressed id so that others can reference them.",
)  # fmt: skip


def identity_findings(p: Any, canonical: bytes | None) -> Iterator[tuple[str, str, str]]:
    """KE004/KE005 over the canonical bytes computed once by the decoder."""
    if p.packet_id is None:
        yield "KE005", "/packet_id", "no packet_id; other packets and archives cannot reference this one"
        return
    if canonical is None:
        from .._fast import canonical_struct_bytes

        canonical = canonical_struct_bytes(p)
    want = "sha256:" + hashlib.sha256(canonical).hexdigest()
    if want != p.packet_id:
        yield "KE004", "/packet_id", f"packet_id does not match the content; expected {want}"


_future_cache: list[Any] = [0.0, ""]


def _future_limit() -> str:
    """Now + 1 day as an RFC 3339 string, refreshed once a minute."""
    mono = time.monotonic()
    if mono - _future_cache[0] > 60 or not _future_cache[1]:
        _future_cache[0] = mono
        _future_cache[1] = (_now() + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    return str(_future_cache[1])


@rule("KE006", "warning", "created_at is not in the future", "record the time in UTC when the packet was made")
def created_at_sane(p: Any) -> Iterator[tuple[str, str]]:
    """``created_at`` more than a day in the future means a wrong clock or timezone."""
    # same fixed-width UTC format on both sides: string order is time order
    if p.created_at[:19] > _future_limit():
        yield "/created_at", f"created_at {p.created_at} is in the future"
        return
    try:
        datetime.strptime(p.created_at[:10], "%Y-%m-%d")
    except ValueError:
        yield "/created_at", f"not a valid date: `{p.created_at}`"


# ---------------------------------------------------------------- KE1xx replay

@rule("KE101", "error", "replay command present", "record the exact argv that reproduces the run in /replay/command")
def replay_command(p: Any) -> Iterator[tuple[str, str]]:
    """Every packet, whatever its status, MUST carry ``replay.command``: a non-empty argv
    whose first element names the program. Without it the packet is not evidence."""
    r = p.replay
    if r is None:
        yield "/replay", "no replay category; a packet without a replay command is not evidence"
    elif not r.command:
        yield "/replay/command", "replay command is missing or empty"
    elif not r.command[0].strip():
        yield "/replay/command/0", "replay command's program (argv[0]) is empty"


@rule("KE102", "warning", "replay pins the code", "record /replay/repository/commit or /replay/container/digest")
def replay_pinned(p: Any) -> Iterator[tuple[str, str]]:
    """A replay SHOULD pin the code it runs: a repository commit or a container digest."""
    r = p.replay
    if r is None or not r.command:
        return
    commit = r.repository is not None and r.repository.commit
    digest = r.container is not None and r.container.digest
    if not commit and not digest:
        yield "/replay", "replay pins neither a repository commit nor a container digest"


# ---------------------------------------------------------------- KE2xx baseline

def _claims(p: Any) -> bool:
    return p.timing is not None and p.timing.speedup is not None


@rule("KE201", "error", "a performance claim names its baseline", "add /timing/baseline with provider, version and the exact call")
def claim_has_baseline(p: Any) -> Iterator[tuple[str, str]]:
    """A packet that claims a speedup MUST name what it beat in ``timing.baseline``."""
    if _claims(p) and p.timing.baseline is None:
        yield "/timing/baseline", "claims a speedup but names no baseline"


@rule("KE202", "error", "kernel baseline is a registered library", "use a provider from `kevidence rules --baselines` (cuBLASLt, hipBLASLt, XLA, torch eager, ...)")
def baseline_registered(p: Any) -> Iterator[tuple[str, str]]:
    """For a kernel claim, ``baseline.provider`` MUST name a library from the baseline
    registry: vendor libraries (cuBLAS, cuBLASLt, cuDNN, CUTLASS, hipBLASLt, rocBLAS, MIOpen,
    Composable Kernel, AITER, FlashAttention, FlashInfer, XLA, ...) or reference
    implementations (torch eager, torch.compile, Triton, numpy, jax). "ours", "baseline" or
    "previous version" are not baselines."""
    if not _claims(p) or p.timing.baseline is None or p.subject.kind != "kernel":
        return
    b = p.timing.baseline
    if b.provider is None or not b.provider.strip():
        if b.packet_id is None:
            yield "/timing/baseline/provider", "baseline has no provider"
        return
    if baseline_entry(b.provider) is None:
        yield "/timing/baseline/provider", f"baseline provider `{b.provider}` is not a named library in the registry"


@rule("KE203", "error", "baseline gives version and exact call", "set /timing/baseline/version and /timing/baseline/call (the exact function and arguments)")
def baseline_version_call(p: Any) -> Iterator[tuple[str, str]]:
    """A kernel baseline MUST state the library version and the exact call or configuration
    (e.g. ``cublasLtMatmul(fp16, TN, m=4096, n=4096, k=4096, heuristic=0)``)."""
    if not _claims(p) or p.timing.baseline is None or p.subject.kind != "kernel":
        return
    b = p.timing.baseline
    if b.packet_id is not None and b.provider is None:
        return
    if not (b.version and b.version.strip()):
        yield "/timing/baseline/version", "baseline version is missing"
    if not (b.call and b.call.strip()):
        yield "/timing/baseline/call", "baseline exact call or configuration is missing"


@rule("KE204", "info", "reference baselines give reference speedups", "compare against a vendor library for a vendor speedup")
def baseline_is_reference(p: Any) -> Iterator[tuple[str, str]]:
    """A speedup over a reference implementation (torch eager, torch.compile, Triton, numpy,
    jax) is reported as a reference speedup, never as a vendor speedup."""
    if not _claims(p) or p.timing.baseline is None or p.timing.baseline.provider is None:
        return
    e = baseline_entry(p.timing.baseline.provider)
    if e is not None and e.kind == "reference":
        yield "/timing/baseline/provider", f"`{e.name}` is a reference implementation: this is a reference speedup, not a vendor speedup"


@rule("KE205", "error", "serving baseline is a named reference configuration", "set /timing/baseline/engine (name, version) and /timing/baseline/settings, or /timing/baseline/packet_id")
def serving_baseline(p: Any) -> Iterator[tuple[str, str]]:
    """For a serving workload the baseline MUST be a named reference configuration (engine
    with version, and its settings) or another packet referenced by id."""
    if not _claims(p) or p.timing.baseline is None or p.subject.kind != "serving":
        return
    b = p.timing.baseline
    if b.packet_id is not None:
        return
    if b.engine is None or not b.engine.version:
        yield "/timing/baseline/engine", "serving baseline names no engine with a version"
    if not b.settings:
        yield "/timing/baseline/settings", "serving baseline gives no settings (e.g. tensor_parallel_size, max_num_seqs)"


@rule("KE206", "warning", "baseline measured in the same session", "time the baseline in the same process and session, interleaved with the candidate")
def baseline_same_session(p: Any) -> Iterator[tuple[str, str]]:
    """A baseline timed in another session (other day, other clocks, other machine state)
    makes a weak comparison; ``baseline.same_session`` SHOULD be true."""
    if _claims(p) and p.timing.baseline is not None and p.timing.baseline.same_session is not True:
        yield "/timing/baseline/same_session", "baseline not stated to be measured in the same session"


# ---------------------------------------------------------------- KE3xx the claim

_TIME_BASES = ("median", "mean", "min")


def _speedup_basis(p: Any) -> str:
    s = p.timing.speedup
    if s.basis is not None:
        return str(s.basis)
    return "median" if p.subject.kind == "kernel" or p.timing.stats is not None else "output_throughput"


@rule("KE301", "error", "claimed speedup matches the timings", "recompute the speedup from the recorded statistics, or fix the statistics")
def speedup_matches(p: Any) -> Iterator[tuple[str, str]]:
    """The claimed speedup MUST equal baseline/candidate (for time statistics) or
    candidate/baseline (for throughputs) within ``speedup.tolerance`` (relative, default
    0.02)."""
    if not _claims(p) or p.timing.baseline is None:
        return
    s = p.timing.speedup
    basis = _speedup_basis(p)
    computed = _computed_speedup(p, basis)
    if computed is None:
        return
    tol = s.tolerance if s.tolerance is not None else 0.02
    if computed <= 0 or abs(s.value - computed) > tol * computed:
        yield "/timing/speedup/value", (
            f"claimed speedup {s.value:g} does not match the timings: {basis} gives {computed:.4g} "
            f"(tolerance {tol:g})"
        )


def _computed_speedup(p: Any, basis: str) -> float | None:
    t = p.timing
    b = t.baseline
    if basis in _TIME_BASES:
        if t.stats is None or b.stats is None:
            return None
        cand = getattr(t.stats, basis)
        ref = getattr(b.stats, basis)
        if cand is None or ref is None:
            return None
        cand_s = seconds(cand, t.stats.unit)
        if cand_s == 0:
            return math.inf
        return seconds(ref, b.stats.unit) / cand_s
    if t.serving is None or b.serving is None:
        return None
    cand_q = getattr(t.serving, basis)
    ref_q = getattr(b.serving, basis)
    if cand_q is None or ref_q is None or ref_q.value == 0:
        return None
    return float(cand_q.value / ref_q.value)


@rule("KE302", "error", "the claim can be checked", "record the candidate's and the baseline's statistics for the claimed basis")
def speedup_checkable(p: Any) -> Iterator[tuple[str, str]]:
    """A claimed speedup MUST be checkable from the packet: candidate and baseline both carry
    the statistic named by ``speedup.basis``, unless the baseline is another packet."""
    if not _claims(p) or p.timing.baseline is None:
        return
    if p.timing.baseline.packet_id is not None and p.timing.baseline.stats is None and p.timing.baseline.serving is None:
        return
    basis = _speedup_basis(p)
    if _computed_speedup(p, basis) is None:
        yield "/timing/speedup", f"speedup on basis `{basis}` cannot be checked: candidate or baseline lacks that statistic"


# ---------------------------------------------------------------- KE4xx status and correctness

_FAILED_CLASSES = {
    "compile_error", "runtime_error", "timeout", "incorrect_shape", "incorrect_dtype",
    "incorrect_numerical", "nan_inf", "reward_hack",
}  # fmt: skip
_ERROR_CLASSES = {"infra_error", "invalid_reference", "timeout", "runtime_error"}
_NEEDS_VALIDATION = {"incorrect_shape", "incorrect_dtype", "incorrect_numerical", "nan_inf"}


@rule("KE401", "error", "only passed packets claim performance", "remove /timing/speedup from a packet that did not pass")
def failed_no_claim(p: Any) -> Iterator[tuple[str, str]]:
    """A ``failed``, ``error`` or ``skipped`` packet MUST NOT carry ``timing.speedup``: a
    wrong or broken candidate has no speed worth claiming."""
    if _claims(p) and p.status.value != "passed":
        yield "/timing/speedup", f"a {p.status.value} packet claims a speedup"


@rule("KE402", "error", "failures carry a failure class; passes do not", "set /failure/failure_class for failed and error packets; drop /failure from passed ones")
def failure_presence(p: Any) -> Iterator[tuple[str, str]]:
    """``failed`` and ``error`` packets MUST carry ``failure`` with a class from the taxonomy;
    ``passed`` packets MUST NOT carry ``failure``."""
    st = p.status.value
    if st in ("failed", "error") and p.failure is None:
        yield "/failure", f"a {st} packet has no failure class"
    elif st == "passed" and p.failure is not None:
        yield "/failure", "a passed packet carries a failure"


@rule("KE403", "error", "failure class fits the status", "use `failed` for faults of the candidate and `error` for infrastructure or reference problems")
def failure_class_status(p: Any) -> Iterator[tuple[str, str]]:
    """``failed`` takes compile_error, runtime_error, timeout, incorrect_shape,
    incorrect_dtype, incorrect_numerical, nan_inf, reward_hack; ``error`` takes infra_error,
    invalid_reference, timeout, runtime_error."""
    if p.failure is None:
        return
    fc = p.failure.failure_class.value
    st = p.status.value
    if st == "failed" and fc not in _FAILED_CLASSES:
        yield "/failure/failure_class", f"failure class `{fc}` is not a fault of the candidate; use status `error`"
    elif st == "error" and fc not in _ERROR_CLASSES:
        yield "/failure/failure_class", f"failure class `{fc}` is a fault of the candidate; use status `failed`"


@rule("KE404", "error", "a kernel claim rests on validated output", "validate the candidate against the reference and record /validation with verdict passed")
def claim_validated(p: Any) -> Iterator[tuple[str, str]]:
    """A kernel speedup claim MUST carry ``validation`` with verdict ``passed``: the speed of
    a kernel whose output was not checked is not evidence."""
    if not _claims(p) or p.subject.kind != "kernel":
        return
    if p.validation is None:
        yield "/validation", "claims a kernel speedup without validation"
    elif p.validation.verdict != "passed":
        yield "/validation/verdict", "claims a kernel speedup but validation did not pass"


@rule("KE405", "error", "status agrees with the validation verdict", "make /status and /validation/verdict agree")
def status_verdict(p: Any) -> Iterator[tuple[str, str]]:
    """A ``passed`` packet MUST NOT carry a failed validation."""
    if p.status.value == "passed" and p.validation is not None and p.validation.verdict == "failed":
        yield "/validation/verdict", "status is passed but validation failed"


@rule("KE406", "error", "correctness failures carry validation", "record /validation with the per-shape results that failed")
def failure_has_validation(p: Any) -> Iterator[tuple[str, str]]:
    """Packets failed for incorrect_shape, incorrect_dtype, incorrect_numerical or nan_inf
    MUST carry ``validation`` with a ``failed`` verdict: the per-shape results are the
    training signal."""
    if p.failure is None or p.failure.failure_class.value not in _NEEDS_VALIDATION:
        return
    if p.validation is None:
        yield "/validation", f"a {p.failure.failure_class.value} failure without validation results"
    elif p.validation.verdict != "failed":
        yield "/validation/verdict", f"a {p.failure.failure_class.value} failure whose validation verdict is passed"


@rule("KE407", "error", "verdict agrees with the per-shape results", "recompute the verdict from /validation/shapes")
def verdict_matches_shapes(p: Any) -> Iterator[tuple[str, str]]:
    """A ``passed`` verdict MUST NOT include a failed shape or one where NaN/Inf was seen; a
    ``failed`` verdict MUST include at least one failed shape when shapes are listed."""
    v = p.validation
    if v is None or not v.shapes:
        return
    bad = [i for i, s in enumerate(v.shapes) if not s.passed or s.nan_seen or s.inf_seen]
    if v.verdict == "passed" and bad:
        i = bad[0]
        yield f"/validation/shapes/{i}", f"verdict passed but shape `{v.shapes[i].shape_id}` failed or saw NaN/Inf"
    elif v.verdict == "failed" and not bad:
        yield "/validation/verdict", "verdict failed but every listed shape passed"


# ---------------------------------------------------------------- KE5xx timing statistics

_PCT = re.compile(r"^p(\d+(?:\.\d+)?)$")


def _all_stats(p: Any) -> Iterator[tuple[str, Any]]:
    t = p.timing
    if t is None:
        return
    if t.stats is not None:
        yield "/timing/stats", t.stats
    if t.serving is not None:
        for k in ("ttft", "tpot", "itl", "e2el"):
            s = getattr(t.serving, k)
            if s is not None:
                yield f"/timing/serving/{k}", s
    b = t.baseline
    if b is not None:
        if b.stats is not None:
            yield "/timing/baseline/stats", b.stats
        if b.serving is not None:
            for k in ("ttft", "tpot", "itl", "e2el"):
                s = getattr(b.serving, k)
                if s is not None:
                    yield f"/timing/baseline/serving/{k}", s


def _rel_diff(a: float, b: float) -> float:
    m = max(abs(a), abs(b))
    return 0.0 if m == 0 else abs(a - b) / m


@rule("KE501", "error", "timing statistics are self-consistent", "recompute the statistics from the measurements")
def stats_consistent(p: Any) -> Iterator[tuple[str, str]]:
    """For every statistics block: min <= median <= max, min <= mean <= max, percentiles
    named ``pNN`` and non-decreasing with NN, ``p50`` equal to the median (1%),
    ci_low <= median <= ci_high."""
    for ptr, s in _all_stats(p):
        med = s.median
        if s.min is not None and s.min > med * (1 + 1e-9):
            yield f"{ptr}/min", f"min {s.min:g} is above the median {med:g}"
        if s.max is not None and s.max < med * (1 - 1e-9):
            yield f"{ptr}/max", f"max {s.max:g} is below the median {med:g}"
        if s.mean is not None:
            if s.min is not None and s.mean < s.min * (1 - 1e-9):
                yield f"{ptr}/mean", f"mean {s.mean:g} is below the min {s.min:g}"
            if s.max is not None and s.mean > s.max * (1 + 1e-9):
                yield f"{ptr}/mean", f"mean {s.mean:g} is above the max {s.max:g}"
        if s.percentiles:
            items = []
            for k, v in s.percentiles.items():
                m = _PCT.match(k)
                if m is None or float(m.group(1)) > 100:
                    yield f"{ptr}/percentiles/{k}", f"percentile key `{k}` is not of the form p0..p100 (e.g. p50, p99.9)"
                    continue
                items.append((float(m.group(1)), k, v))
            items.sort()
            for (q1, k1, v1), (q2, k2, v2) in zip(items, items[1:]):
                if v2 < v1 * (1 - 1e-9):
                    yield f"{ptr}/percentiles/{k2}", f"{k2} = {v2:g} is below {k1} = {v1:g}; percentiles must not decrease"
            for q, k, v in items:
                if q == 50 and _rel_diff(v, med) > 0.01:
                    yield f"{ptr}/percentiles/{k}", f"p50 = {v:g} differs from the median {med:g}"
                if s.min is not None and v < s.min * (1 - 1e-9):
                    yield f"{ptr}/percentiles/{k}", f"{k} = {v:g} is below the min {s.min:g}"
                if s.max is not None and v > s.max * (1 + 1e-9):
                    yield f"{ptr}/percentiles/{k}", f"{k} = {v:g} is above the max {s.max:g}"
        if s.ci_low is not None and s.ci_low > med * (1 + 1e-9):
            yield f"{ptr}/ci_low", f"confidence interval low {s.ci_low:g} is above the median {med:g}"
        if s.ci_high is not None and s.ci_high < med * (1 - 1e-9):
            yield f"{ptr}/ci_high", f"confidence interval high {s.ci_high:g} is below the median {med:g}"


@rule("KE502", "error", "at least one repeat", "time the kernel at least once; record warmup and repeats")
def repeats_positive(p: Any) -> Iterator[tuple[str, str]]:
    """``timing.repeats``, when given, MUST be at least 1, and a statistics block's ``n``
    at least 1."""
    t = p.timing
    if t is None:
        return
    if t.repeats is not None and t.repeats < 1:
        yield "/timing/repeats", f"repeats is {t.repeats}; expected at least 1"
    for ptr, s in _all_stats(p):
        if s.n is not None and s.n < 1:
            yield f"{ptr}/n", f"n is {s.n}; expected at least 1"


def _median(xs: list[float]) -> float:
    ys = sorted(xs)
    n = len(ys)
    mid = n // 2
    return ys[mid] if n % 2 else (ys[mid - 1] + ys[mid]) / 2


@rule("KE503", "error", "raw samples agree with the summary", "recompute median, min and max from the samples you kept")
def samples_match(p: Any) -> Iterator[tuple[str, str]]:
    """When raw ``samples`` are kept, their median (1%), min and max MUST match the stated
    statistics and ``n`` MUST equal their count."""
    for ptr, s in _all_stats(p):
        xs = s.samples
        if not xs:
            continue
        if s.n is not None and s.n != len(xs):
            yield f"{ptr}/n", f"n is {s.n} but {len(xs)} samples are kept"
        med = _median(xs)
        if _rel_diff(med, s.median) > 0.01:
            yield f"{ptr}/median", f"median {s.median:g} does not match the samples' median {med:g}"
        if s.min is not None and _rel_diff(min(xs), s.min) > 1e-6:
            yield f"{ptr}/min", f"min {s.min:g} does not match the samples' min {min(xs):g}"
        if s.max is not None and _rel_diff(max(xs), s.max) > 1e-6:
            yield f"{ptr}/max", f"max {s.max:g} does not match the samples' max {max(xs):g}"


@rule("KE504", "warning", "repeats agree with the samples", "record repeats equal to the number of timed runs")
def repeats_match_samples(p: Any) -> Iterator[tuple[str, str]]:
    """When both are given, ``timing.repeats`` SHOULD equal the number of samples of
    ``timing.stats``."""
    t = p.timing
    if t is None or t.repeats is None or t.stats is None or not t.stats.samples:
        return
    if len(t.stats.samples) != t.repeats:
        yield "/timing/repeats", f"repeats is {t.repeats} but {len(t.stats.samples)} samples are kept"


# ---------------------------------------------------------------- KE6xx physical limits

_SLACK = 1.05  # boost clocks and rounding: reject only what is clearly above the peak


def _work(p: Any) -> Any:
    task = p.task
    if task is None:
        return None
    sid = p.timing.shape_id if p.timing is not None else None
    if sid and task.shapes:
        for sh in task.shapes:
            if sh.id == sid and sh.work is not None:
                return sh.work
    return task.work


def _peaks_of(p: Any) -> Any:
    h = p.hardware
    if h is None:
        return None
    return device_peaks(h.device, h.arch)


def _device_count(p: Any) -> int:
    h = p.hardware
    return h.count if h is not None and h.count else 1


def _achieved(p: Any) -> tuple[float | None, float | None]:
    """(achieved FLOP/s, achieved B/s) from the task's work and the median time."""
    t = p.timing
    w = _work(p)
    if t is None or t.stats is None or w is None:
        return None, None
    sec = seconds(t.stats.median, t.stats.unit)
    if sec <= 0:
        return None, None
    fl = base(w.flops.value, w.flops.unit) / sec if w.flops is not None else None
    by = base(w.bytes.value, w.bytes.unit) / sec if w.bytes is not None else None
    return fl, by


def _dtypes(p: Any) -> tuple[str, ...]:
    return tuple(p.task.dtypes) if p.task is not None and p.task.dtypes else ()


@rule("KE601", "error", "achieved FLOP/s within the device peak", "check the FLOP count, the time unit and the device; a result above the peak is a measurement error or a cheat")
def flops_below_peak(p: Any) -> Iterator[tuple[str, str]]:
    """Where the work (``task.work.flops``) and the device are known, FLOPs / median time
    MUST NOT exceed the device's peak FLOP/s for the task's dtypes (times the device count),
    with 5% slack. The peak comes from the shipped table (docs/peaks.md), else from
    ``hardware.peak_flop_rate``."""
    fl, _ = _achieved(p)
    if fl is None:
        return
    peaks = _peaks_of(p)
    if peaks is not None:
        peak = peak_flops_for(peaks, _dtypes(p))
        src = f"{peaks.key} peak"
    elif p.hardware is not None and p.hardware.peak_flop_rate is not None:
        peak = base(p.hardware.peak_flop_rate.value, p.hardware.peak_flop_rate.unit)
        src = "the recorded hardware.peak_flop_rate"
    else:
        return
    peak *= _device_count(p)
    if peak > 0 and fl > peak * _SLACK:
        yield "/timing/stats/median", f"achieved {fl / 1e12:.4g} TFLOP/s exceeds {src} of {peak / 1e12:.4g} TFLOP/s"


def _warm(p: Any) -> bool:
    return p.timing is not None and p.timing.cache_policy == "warm"


def _bandwidth_excess(p: Any) -> tuple[float, float, str] | None:
    _, by = _achieved(p)
    if by is None:
        return None
    peaks = _peaks_of(p)
    if peaks is not None:
        peak, src = peaks.bandwidth, f"{peaks.key} peak"
    elif p.hardware is not None and p.hardware.peak_bandwidth is not None:
        peak = base(p.hardware.peak_bandwidth.value, p.hardware.peak_bandwidth.unit)
        src = "the recorded hardware.peak_bandwidth"
    else:
        return None
    peak *= _device_count(p)
    if peak > 0 and by > peak * _SLACK:
        return by, peak, src
    return None


@rule("KE602", "error", "achieved bandwidth within the device peak", "check the byte count and the time unit; flush caches between repeats (cache_policy: flushed)")
def bandwidth_below_peak(p: Any) -> Iterator[tuple[str, str]]:
    """Where the bytes moved (``task.work.bytes``) and the device are known, bytes / median
    time MUST NOT exceed the device's peak memory bandwidth (5% slack), unless the timing
    says caches were warm (then KE603 warns instead)."""
    if _warm(p):
        return
    ex = _bandwidth_excess(p)
    if ex:
        by, peak, src = ex
        yield "/timing/stats/median", f"achieved {by / 1e9:.4g} GB/s exceeds {src} of {peak / 1e9:.4g} GB/s"


@rule("KE603", "warning", "bandwidth above DRAM peak only from warm caches", "time with flushed caches to make a memory-bandwidth claim")
def bandwidth_warm(p: Any) -> Iterator[tuple[str, str]]:
    """With ``cache_policy: warm``, bytes / time above the DRAM peak can come from caches;
    it is flagged, not rejected."""
    if not _warm(p):
        return
    ex = _bandwidth_excess(p)
    if ex:
        by, peak, src = ex
        yield "/timing/stats/median", f"achieved {by / 1e9:.4g} GB/s exceeds {src} of {peak / 1e9:.4g} GB/s with warm caches"


@rule("KE604", "warning", "physical limits can be checked", "name a device from the peak table, or record hardware.peak_flop_rate / peak_bandwidth")
def peaks_known(p: Any) -> Iterator[tuple[str, str]]:
    """Where work is recorded, the device SHOULD be one the peak table knows, or the packet
    SHOULD record the device peaks, so that impossible results can be caught."""
    fl, by = _achieved(p)
    if fl is None and by is None:
        return
    if _peaks_of(p) is not None:
        return
    h = p.hardware
    if h is not None and (h.peak_flop_rate is not None or h.peak_bandwidth is not None):
        return
    dev = h.device if h is not None else "unknown device"
    yield "/hardware/device", f"no peak figures for `{dev}`: achieved rates cannot be checked"


# ---------------------------------------------------------------- KE7xx tolerance

@rule("KE701", "error", "the tolerance can fail", "tighten atol below the reference's magnitude, keep rtol below 1, and use inputs with non-trivial outputs")
def tolerance_can_fail(p: Any) -> Iterator[tuple[str, str]]:
    """A correctness check that an all-zeros output would pass is vacuous: it happens when
    the largest reference magnitude is below atol, or when rtol >= 1. Such a check MUST NOT
    back a passed shape."""
    v = p.validation
    if v is None or not v.shapes:
        return
    tol = p.task.tolerance if p.task is not None else None
    for i, s in enumerate(v.shapes):
        if not s.passed:
            continue
        atol = s.atol if s.atol is not None else (tol.atol if tol is not None else None)
        rtol = s.rtol if s.rtol is not None else (tol.rtol if tol is not None else None)
        if atol is not None and s.reference_max_abs is not None and s.reference_max_abs < atol:
            yield f"/validation/shapes/{i}", (
                f"shape `{s.shape_id}`: largest reference magnitude {s.reference_max_abs:g} is below atol {atol:g}; "
                "an all-zeros output would pass"
            )
        elif rtol is not None and rtol >= 1:
            yield f"/validation/shapes/{i}", f"shape `{s.shape_id}`: rtol {rtol:g} >= 1 lets an all-zeros output pass"


# ---------------------------------------------------------------- KE8xx hardware

_UNIDENTIFIED = {"", "unknown", "n/a", "na", "none", "gpu", "cuda", "device", "accelerator", "tpu", "cpu", "?"}


def _unidentified(p: Any) -> str | None:
    h = p.hardware
    if h is None:
        return "/hardware"
    if h.device.strip().casefold() in _UNIDENTIFIED and h.vendor != "cpu":
        return "/hardware/device"
    return None


@rule("KE801", "error", "the device is identified", "record /hardware with vendor and the device's model name (e.g. `NVIDIA H100 80GB HBM3`)")
def device_identified(p: Any) -> Iterator[tuple[str, str]]:
    """A packet with timing or profiler data MUST identify the device it ran on: vendor and
    model name (not "GPU" or "unknown")."""
    if p.timing is None and not p.profiler:
        return
    ptr = _unidentified(p)
    if ptr:
        yield ptr, "the device is not identified"


@rule("KE802", "warning", "the device is recorded", "record /hardware even for failed candidates")
def device_recorded(p: Any) -> Iterator[tuple[str, str]]:
    """Packets without timing SHOULD still say where they ran: failures can be device-specific."""
    if p.timing is not None or p.profiler:
        return
    ptr = _unidentified(p)
    if ptr:
        yield ptr, "the device is not identified"


@rule("KE803", "warning", "clocks are recorded", "record /hardware/clocks: locked or not, and the clocks observed while measuring")
def clocks_recorded(p: Any) -> Iterator[tuple[str, str]]:
    """Packets that claim performance SHOULD record the clock state: whether clocks were
    locked, and the clocks observed during measurement."""
    if not _claims(p) or p.hardware is None:
        return
    c = p.hardware.clocks
    if c is None or (c.locked is None and c.sm_observed is None):
        yield "/hardware/clocks", "clock state not recorded"


@rule("KE804", "warning", "serving packets describe the workload", "record /task/serving: model, engine and traffic")
def serving_task(p: Any) -> Iterator[tuple[str, str]]:
    """A serving packet SHOULD carry ``task.serving`` (model, engine with version, traffic
    shape)."""
    if p.subject.kind == "serving" and (p.task is None or p.task.serving is None):
        yield "/task/serving", "serving packet without a serving task description"
