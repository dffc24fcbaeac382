"""The rules: declared once with their documentation, checked in one pass.

Rule ids are stable: KE0xx input and identity, KE1xx replay, KE2xx baseline, KE3xx claim,
KE4xx status and correctness, KE5xx timing statistics, KE6xx physical limits, KE7xx
tolerance, KE8xx hardware. :func:`check_packet` visits a decoded packet once, computing what
several rules share (the claim, the baseline, the statistics blocks, the achieved rates)
only once, and returns ``(rule_id, pointer, message)`` triples.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from ._engine import declare
from ._tables import _peak_cache, baseline_entry, device_peaks, peak_flops_for
from ._units import FACTOR as _FACTOR
from ._units import seconds

_sha256 = hashlib.sha256

Add = Callable[[tuple[str, str, str]], None]

# ---------------------------------------------------------------- the rules and their docs

_RULES: tuple[tuple[str, str, str, str, str], ...] = (
    ("KE000", "error", "input is readable",
     "check the path, permissions and compression of the input",
     "The file exists, can be read, decompresses within the cap, is UTF-8 text and is not empty."),
    ("KE001", "error", "document matches the packet schema",
     "fix the field at the pointer; `kevidence schema` prints the JSON Schema",
     "The document must be valid JSON (no NaN/Infinity tokens, bounded nesting, numbers "
     "in range) and match the published JSON Schema of its schema_version: required fields "
     "present, types and units right, no unknown fields (tool-specific data goes under "
     "`extensions`)."),
    ("KE003", "error", "no duplicate keys",
     "remove the repeated key; parsers disagree on which value wins",
     "A JSON object must not repeat a key: readers would silently keep different values."),
    ("KE004", "error", "packet_id matches the content",
     "recompute it: EvidencePacket.with_id() or `kevidence id FILE -o OUT`",
     "`packet_id` is `sha256:` + the SHA-256 of the canonical JSON of the packet without its id "
     "(keys sorted, null members dropped, compact). A packet whose content changed after its id "
     "was computed fails."),
    ("KE005", "warning", "packet has a packet_id",
     "set it with EvidencePacket.with_id() or `kevidence id FILE -o OUT`",
     "Packets SHOULD carry their content-addressed id so that others can reference them."),
    ("KE006", "warning", "created_at is not in the future",
     "record the time in UTC when the packet was made",
     "`created_at` more than a day in the future means a wrong clock or timezone."),
    ("KE007", "error", "created_at is a real calendar time",
     "record the time the packet was made, in UTC (e.g. 2026-02-28T12:00:00Z)",
     "`created_at` names a day that exists in its month (no 30 February, 29 February only in "
     "leap years) and a leap second only at 23:59:60."),
    ("KE101", "error", "replay command present",
     "record the exact argv that reproduces the run in /replay/command",
     "Every packet, whatever its status, MUST carry `replay.command`: a non-empty argv whose "
     "first element names the program. Without it the packet is not evidence."),
    ("KE102", "warning", "replay pins the code",
     "record /replay/repository/commit or /replay/container/digest",
     "A replay SHOULD pin the code it runs: a repository commit or a container digest."),
    ("KE201", "error", "a performance claim names its baseline",
     "add /timing/baseline with provider, version and the exact call",
     "A packet that claims a speedup MUST name what it beat in `timing.baseline`."),
    ("KE202", "error", "kernel baseline is a registered library",
     "use a provider from `kevidence rules --baselines` (cuBLASLt, hipBLASLt, XLA, torch eager, ...)",
     "For a kernel claim, `baseline.provider` MUST name a library from the baseline registry: "
     "vendor libraries (cuBLAS, cuBLASLt, cuDNN, CUTLASS, hipBLASLt, rocBLAS, MIOpen, Composable "
     "Kernel, AITER, FlashAttention, FlashInfer, XLA, ...) or reference implementations (torch "
     "eager, torch.compile, Triton, numpy, jax). \"ours\", \"baseline\" or \"previous version\" "
     "are not baselines."),
    ("KE203", "error", "baseline gives version and exact call",
     "set /timing/baseline/version and /timing/baseline/call (the exact function and arguments)",
     "A kernel baseline MUST state the library version and the exact call or configuration "
     "(e.g. `cublasLtMatmul(fp16, TN, m=4096, n=4096, k=4096, heuristic=0)`)."),
    ("KE204", "info", "reference baselines give reference speedups",
     "compare against a vendor library for a vendor speedup",
     "A speedup over a reference implementation (torch eager, torch.compile, Triton, numpy, "
     "jax) is reported as a reference speedup, never as a vendor speedup."),
    ("KE205", "error", "serving baseline is a named reference configuration",
     "set /timing/baseline/engine (name, version) and /timing/baseline/settings, or /timing/baseline/packet_id",
     "For a serving workload the baseline MUST be a named reference configuration (engine with "
     "version, and its settings) or another packet referenced by id."),
    ("KE206", "warning", "baseline measured in the same session",
     "time the baseline in the same process and session, interleaved with the candidate",
     "A baseline timed in another session (other day, other clocks, other machine state) makes "
     "a weak comparison; `baseline.same_session` SHOULD be true."),
    ("KE301", "error", "claimed speedup matches the timings",
     "recompute the speedup from the recorded statistics, or fix the statistics",
     "The claimed speedup MUST equal baseline/candidate (for time statistics) or "
     "candidate/baseline (for throughputs) within `speedup.tolerance` (relative to the computed "
     "speedup, default 0.02; a claim exactly at the tolerance matches)."),
    ("KE302", "error", "the claim can be checked",
     "record the candidate's and the baseline's statistics for the claimed basis",
     "A claimed speedup MUST be checkable from the packet: candidate and baseline both carry the "
     "statistic named by `speedup.basis`, unless the baseline is another packet."),
    ("KE401", "error", "only passed packets claim performance",
     "remove /timing/speedup from a packet that did not pass",
     "A `failed`, `error` or `skipped` packet MUST NOT carry `timing.speedup`: a wrong or broken "
     "candidate has no speed worth claiming."),
    ("KE402", "error", "failures carry a failure class; passes do not",
     "set /failure/failure_class for failed and error packets; drop /failure from passed ones",
     "`failed` and `error` packets MUST carry `failure` with a class from the taxonomy; `passed` "
     "packets MUST NOT carry `failure`."),
    ("KE403", "error", "failure class fits the status",
     "use `failed` for faults of the candidate and `error` for infrastructure or reference problems",
     "`failed` takes compile_error, runtime_error, timeout, incorrect_shape, incorrect_dtype, "
     "incorrect_numerical, nan_inf, reward_hack; `error` takes infra_error, invalid_reference, "
     "timeout, runtime_error."),
    ("KE404", "error", "a kernel claim rests on validated output",
     "validate the candidate against the reference and record /validation with verdict passed",
     "A kernel speedup claim MUST carry `validation` with verdict `passed`: the speed of a kernel "
     "whose output was not checked is not evidence."),
    ("KE405", "error", "status agrees with the validation verdict",
     "make /status and /validation/verdict agree",
     "A `passed` packet MUST NOT carry a failed validation."),
    ("KE406", "error", "correctness failures carry validation",
     "record /validation with the per-shape results that failed",
     "Packets failed for incorrect_shape, incorrect_dtype, incorrect_numerical or nan_inf MUST "
     "carry `validation` with a `failed` verdict: the per-shape results are the training signal."),
    ("KE407", "error", "verdict agrees with the per-shape results",
     "recompute the verdict from /validation/shapes",
     "A `passed` verdict MUST NOT include a failed shape or one where NaN/Inf was seen; a "
     "`failed` verdict MUST include at least one failed shape when shapes are listed."),
    ("KE408", "error", "a skipped run measured nothing",
     "drop /timing from a skipped packet, or give it the status the run really had",
     "A `skipped` packet MUST NOT carry `timing`: a run that was skipped has no measurements."),
    ("KE501", "error", "timing statistics are self-consistent",
     "recompute the statistics from the measurements",
     "For every statistics block: min <= median <= max, min <= mean <= max, percentiles named "
     "`pNN` and non-decreasing with NN and within [min, max], `p50` equal to the median (1%), "
     "ci_low <= median <= ci_high (ci_low <= ci_high when there is no median)."),
    ("KE502", "error", "at least one repeat",
     "time the kernel at least once; record warmup and repeats",
     "`timing.repeats`, when given, MUST be at least 1, and a statistics block's `n` at least 1."),
    ("KE503", "error", "raw samples agree with the summary",
     "recompute median, min and max from the samples you kept",
     "When raw `samples` are kept, their median (1%), min and max MUST match the stated "
     "statistics (those given; a block may lack a median) and `n` MUST equal their count."),
    ("KE504", "warning", "repeats agree with the samples",
     "record repeats equal to the number of timed runs",
     "When both are given, `timing.repeats` SHOULD equal the number of samples of `timing.stats`."),
    ("KE601", "error", "achieved FLOP/s within the device peak",
     "check the FLOP count, the time unit and the device; a result above the peak is a measurement error or a cheat",
     "Where the work (`task.work.flops`, or the timed shape's) and the device are known, FLOPs / "
     "median time MUST NOT exceed the device's peak FLOP/s for the task's dtypes (times the "
     "device count), with 5% slack; a block without a median is checked on its mean. The peak "
     "comes from the shipped table (docs/peaks.md), else from `hardware.peak_flop_rate`."),
    ("KE602", "error", "achieved bandwidth within the device peak",
     "check the byte count and the time unit; flush caches between repeats (cache_policy: flushed)",
     "Where the bytes moved (`task.work.bytes`) and the device are known, bytes / median time (the "
     "mean when there is no median) MUST NOT exceed the device's peak memory bandwidth (5% slack), unless the timing says caches "
     "were warm (then KE603 warns instead)."),
    ("KE603", "warning", "bandwidth above DRAM peak only from warm caches",
     "time with flushed caches to make a memory-bandwidth claim",
     "With `cache_policy: warm`, bytes / time above the DRAM peak can come from caches; it is "
     "flagged, not rejected."),
    ("KE604", "warning", "physical limits can be checked",
     "name a device from the peak table, or record hardware.peak_flop_rate / peak_bandwidth",
     "Where work is recorded, the device SHOULD be one the peak table knows, or the packet SHOULD "
     "record the device peaks, so that impossible results can be caught."),
    ("KE701", "error", "the tolerance can fail",
     "tighten atol below the reference's magnitude, keep rtol below 1, and use inputs with non-trivial outputs",
     "A correctness check that an all-zeros output would pass is vacuous: it happens when the "
     "largest reference magnitude r satisfies r <= atol + rtol * r (in particular when r <= atol, "
     "or when rtol >= 1). Such a check MUST NOT back a passed shape."),
    ("KE801", "error", "the device is identified",
     "record /hardware with vendor and the device's model name (e.g. `NVIDIA H100 80GB HBM3`)",
     "A packet with timing or profiler data MUST identify the device it ran on: vendor and model "
     "name (not \"GPU\", \"unknown\", \"cuda:0\" or a vendor name alone such as \"NVIDIA GPU\")."),
    ("KE802", "warning", "the device is recorded",
     "record /hardware even for failed candidates",
     "Packets without timing SHOULD still say where they ran: failures can be device-specific."),
    ("KE803", "warning", "clocks are recorded",
     "record /hardware/clocks: locked or not, and the clocks observed while measuring",
     "Packets that claim performance SHOULD record the clock state: whether clocks were locked, "
     "and the clocks observed during measurement."),
    ("KE901", "error", "raw metric columns align with the kernel records",
     "give every column of /profiler/N/raw_columns one value per kernel record, null where a launch has none",
     "In a profiler capture, each list of `raw_columns` MUST have exactly one entry per element of "
     "`kernels`, in the same order, so that a value can be traced to its launch."),
    ("KE902", "error", "a raw metrics side file is a verifiable reference",
     "give /profiler/N/raw_table a path or uri, its sha256 and the Arrow IPC media type, and drop raw_columns",
     "A capture whose raw metrics are in a side file (`raw_table`) MUST NOT also carry "
     "`raw_columns`, and the reference MUST give the file's sha256, a path or uri, and the media "
     "type `application/vnd.apache.arrow.file`: the packet id covers the raw values only through "
     "the digest."),
    ("KE903", "error", "a raw metrics side file is the one the packet names",
     "restore the side file the packet was written with (same size and sha256), or ingest again",
     "A raw table (`raw_table`) found where the packet says MUST have the size and sha256 the "
     "packet gives, and be a regular file. Checked by `kevidence validate` (and "
     "`validate_paths`) for packets read from files; `validate()` of a packet object reads no file."),
    ("KE904", "warning", "the raw metrics side file is beside the packet",
     "keep the side file (`raw_table.path`, relative to the packet file) with the packet",
     "A packet read from a file SHOULD have its raw table where `raw_table.path` says (relative "
     "to the packet file's directory): without it the raw metrics are lost."),
    ("KE804", "warning", "serving packets describe the workload",
     "record /task/serving: model, engine and traffic",
     "A serving packet SHOULD carry `task.serving` (model, engine with version, traffic shape)."),
)  # fmt: skip

for _id, _sev, _title, _hint, _doc in _RULES:
    declare(_id, _sev, _title, _hint, _doc)  # type: ignore[arg-type]


# ---------------------------------------------------------------- identity (KE004, KE005)


def identity_finding(
    p: Any, canonical: bytes | None, content_id: str | None = None
) -> tuple[str, str, str] | None:
    """KE004/KE005: the id the content gives (``content_id``, or hashed from the canonical
    bytes, both computed once by the decoder when it can) against the packet's own."""
    pid = p.packet_id
    if pid is None:
        return "KE005", "/packet_id", "no packet_id; other packets and archives cannot reference this one"
    if content_id is not None:
        want = content_id
    else:
        if canonical is None:
            from .._fast import canonical_struct_bytes

            canonical = canonical_struct_bytes(p)
        want = "sha256:" + _sha256(canonical).hexdigest()
    if want != pid:
        return "KE004", "/packet_id", f"packet_id does not match the content; expected {want}"
    return None


# ---------------------------------------------------------------- helpers

_future_cache: list[Any] = [float("-inf"), ""]


def future_limit() -> str:
    """Now + 1 day as ``YYYY-MM-DDTHH:MM:SS`` (UTC), refreshed once a minute: a created_at
    after it is in the future (KE006)."""
    mono = time.monotonic()
    if mono - _future_cache[0] > 60:
        _future_cache[0] = mono
        _future_cache[1] = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    return str(_future_cache[1])


_PCT = re.compile(r"^p(\d+(?:\.\d+)?)$")
_TIME_BASES = ("median", "mean", "min")
_LATENCIES = ("ttft", "tpot", "itl", "e2el")
_FAILED_CLASSES = frozenset({
    "compile_error", "runtime_error", "timeout", "incorrect_shape", "incorrect_dtype",
    "incorrect_numerical", "nan_inf", "reward_hack",
})  # fmt: skip
_ERROR_CLASSES = frozenset({"infra_error", "invalid_reference", "timeout", "runtime_error"})
_NEEDS_VALIDATION = frozenset({"incorrect_shape", "incorrect_dtype", "incorrect_numerical", "nan_inf"})
_UNIDENTIFIED = frozenset(
    {"", "unknown", "n/a", "na", "none", "gpu", "cuda", "device", "accelerator", "tpu", "cpu", "?"}
)
_SLACK = 1.05  # boost clocks and rounding: reject only what is clearly above the peak


#: the pointers of the latency blocks, in the order of ``_LATENCIES`` (ttft, tpot, itl, e2el)
_SERVING_PTRS = tuple(f"/timing/serving/{k}" for k in _LATENCIES)
_BASELINE_SERVING_PTRS = tuple(f"/timing/baseline/serving/{k}" for k in _LATENCIES)


def computed_speedup(p: Any, basis: str) -> float | None:
    """The speedup the packet's own statistics give for ``basis``, or None if they cannot."""
    t = p.timing
    b = t.baseline
    if b is None:
        return None
    if basis in _TIME_BASES:
        if t.stats is None or b.stats is None:
            return None
        cand = getattr(t.stats, basis)
        ref = getattr(b.stats, basis)
        if cand is None or ref is None:
            return None
        cand_s = seconds(cand, t.stats.unit)
        if cand_s == 0:
            return float("inf")
        return seconds(ref, b.stats.unit) / cand_s
    if t.serving is None or b.serving is None:
        return None
    cand_q = getattr(t.serving, basis)
    ref_q = getattr(b.serving, basis)
    if cand_q is None or ref_q is None or ref_q.value == 0:
        return None
    return float(cand_q.value / ref_q.value)


# ---------------------------------------------------------------- the pass


def check_packet(p: Any, future: str | None = None) -> list[tuple[str, str, str]]:
    """Every rule over one decoded packet: ``(rule_id, pointer, message)`` triples.

    ``future`` is :func:`future_limit` when the caller has just read it (for a batch)."""
    out: list[tuple[str, str, str]] = []
    add = out.append
    status = p.status._value_  # not .value: the enum property costs a Python call
    t = p.timing
    claim = t is not None and t.speedup is not None

    # KE006: same fixed-width UTC format on both sides, so string order is time order (the
    # whole string is never before its first 19 characters: compared first, it spares
    # cutting them in the common case)
    ts = p.created_at
    if future is None:
        future = _future_cache[1] if time.monotonic() - _future_cache[0] <= 60 else future_limit()
    if ts > future and ts[:19] > future:
        add(("KE006", "/created_at", f"created_at {ts} is in the future"))
    if ts[8:10] > "28" or ts[17:19] == "60":  # the pattern checked the ranges; rarely needed
        why = _not_a_calendar_time(ts)
        if why:
            add(("KE007", "/created_at", f"created_at {ts} is not a real time: {why}"))

    r = p.replay
    # the helpers below re-check in full; these guards only skip them when they have
    # nothing to say (the common case)
    if not (
        r is not None
        and r.command
        and r.command[0].strip()
        and not (r.shell and len(r.command) != 1)
        and (
            (r.repository is not None and r.repository.commit)
            or (r.container is not None and r.container.digest)
        )
    ):
        _replay(r, add)
    if claim:
        _claim(p, t, status, add)
    _status(p, status, claim, add)
    if t is not None:
        _timing(p, t, add)
    v = p.validation
    if v is not None and v.shapes:
        _tolerance(p, v, add)
    h = p.hardware
    if (
        h is None
        or (h.vendor != "cpu" and _UNIDENTIFIED_CACHE.get(h.device) is not False and _unidentified(h.device))
        or (claim and (h.clocks is None or (h.clocks.locked is None and h.clocks.sm_observed is None)))
        or (p.subject.kind == "serving" and (p.task is None or p.task.serving is None))
    ):
        _hardware(p, t, claim, add)
    if p.profiler:
        _profiler(p.profiler, add)
    return out


_UNIDENTIFIED_CACHE: dict[str, bool] = {}


def _unidentified(device: str) -> bool:
    """True for a device name that names no device (``gpu``, ``unknown``, blank...)."""
    hit = _UNIDENTIFIED_CACHE.get(device)
    if hit is None:
        hit = _names_no_model(device)
        if len(_UNIDENTIFIED_CACHE) < 4096 and len(device) <= _CACHED_CHARS:
            _UNIDENTIFIED_CACHE[device] = hit
    return hit


_VENDOR_WORDS = frozenset(
    {"nvidia", "amd", "ati", "google", "intel", "apple", "aws", "amazon", "huawei", "generic"}
)
_GENERIC_WORDS = _UNIDENTIFIED | {"npu", "xpu", "hpu", "mps", "gpus", "tpus", "unknown"}
_WORD = re.compile(r"[a-z0-9]+")


def _names_no_model(device: str) -> bool:
    """A name made only of vendor names, generic words (gpu, device...) and indices:
    ``gpu``, ``NVIDIA GPU``, ``Google TPU``, ``cuda:0``, ``GPU 0``, blank."""
    d = device.strip().casefold()
    if d in _UNIDENTIFIED:
        return True
    words = _WORD.findall(d)
    return all(w in _VENDOR_WORDS or w in _GENERIC_WORDS or w.isdigit() for w in words)


def _a(word: str) -> str:
    """The indefinite article for ``word`` (a failed packet, an error packet)."""
    return "an" if word[:1] in "aeiou" else "a"


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _not_a_calendar_time(ts: str) -> str | None:
    """Why a timestamp that matches the pattern names no real time (None when it does)."""
    year, month, day = int(ts[0:4]), int(ts[5:7]), int(ts[8:10])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = 29 if month == 2 and leap else _MONTH_DAYS[month - 1]
    if day > days:
        return f"month {ts[5:7]} of {ts[0:4]} has {days} days"
    if ts[17:19] == "60" and ts[11:16] != "23:59":
        return "a leap second is only at 23:59:60"
    return None


def _profiler(captures: Any, add: Add) -> None:
    for i, cap in enumerate(captures):
        cols = cap.raw_columns
        ref = cap.raw_table
        if ref is not None:
            ptr = f"/profiler/{i}/raw_table"
            if cols is not None:
                add(("KE902", f"/profiler/{i}/raw_columns", "raw metrics both inline and in a side file"))
            if ref.sha256 is None:
                add(("KE902", ptr + "/sha256", "raw metrics side file without a sha256"))
            if not ref.path and not ref.uri:
                add(("KE902", ptr, "raw metrics side file with neither path nor uri"))
            if ref.media_type != "application/vnd.apache.arrow.file":
                add(
                    (
                        "KE902",
                        ptr + "/media_type",
                        f"raw metrics side file of media type {ref.media_type!r}; expected an Arrow IPC file",
                    )
                )
        if not cols:
            continue
        n = len(cap.kernels) if cap.kernels else 0
        for name, values in cols.items():
            if len(values) != n:
                esc = name.replace("~", "~0").replace("/", "~1")
                ptr = f"/profiler/{i}/raw_columns/{esc}"
                add(("KE901", ptr, f"column `{name}` has {len(values)} values for {n} kernel records"))
                return


def _replay(r: Any, add: Add) -> None:
    if r is None:
        add(("KE101", "/replay", "no replay category; a packet without a replay command is not evidence"))
        return
    if not r.command:
        add(("KE101", "/replay/command", "replay command is missing or empty"))
        return
    if not r.command[0].strip():
        add(("KE101", "/replay/command/0", "replay command's program (argv[0]) is empty"))
    if r.shell and len(r.command) != 1:
        add(
            (
                "KE101",
                "/replay/command",
                f"replay.shell is true but the command holds {len(r.command)} strings; a shell "
                "command is one string",
            )
        )
    if not (r.repository is not None and r.repository.commit) and not (
        r.container is not None and r.container.digest
    ):
        add(("KE102", "/replay", "replay pins neither a repository commit nor a container digest"))


def _claim(p: Any, t: Any, status: str, add: Add) -> None:
    b = t.baseline
    kernel = p.subject.kind == "kernel"
    if status != "passed":
        add(("KE401", "/timing/speedup", f"{_a(status)} {status} packet claims a speedup"))
    if b is None:
        add(("KE201", "/timing/baseline", "claims a speedup but names no baseline"))
    else:
        provider = b.provider
        entry = baseline_entry(provider) if provider else None
        if kernel:
            # a provider the registry knows is not blank: no need to strip it
            if entry is not None:
                pass
            elif provider is None or not provider.strip():
                if b.packet_id is None:
                    add(("KE202", "/timing/baseline/provider", "baseline has no provider"))
            else:
                add(
                    (
                        "KE202",
                        "/timing/baseline/provider",
                        f"baseline provider `{provider}` is not a named library in the registry",
                    )
                )
            if not (provider is None and b.packet_id is not None):
                if not (b.version and b.version.strip()):
                    add(("KE203", "/timing/baseline/version", "baseline version is missing"))
                if not (b.call and b.call.strip()):
                    add(("KE203", "/timing/baseline/call", "baseline exact call or configuration is missing"))
        elif b.packet_id is None:
            if b.engine is None or not b.engine.version:
                add(("KE205", "/timing/baseline/engine", "serving baseline names no engine with a version"))
            if not b.settings:
                add(
                    (
                        "KE205",
                        "/timing/baseline/settings",
                        "serving baseline gives no settings (e.g. tensor_parallel_size, max_num_seqs)",
                    )
                )
        if entry is not None and entry.kind == "reference":
            add(
                (
                    "KE204",
                    "/timing/baseline/provider",
                    f"`{entry.name}` is a reference implementation: this is a reference speedup, not a vendor speedup",
                )
            )
        if b.same_session is not True:
            add(
                (
                    "KE206",
                    "/timing/baseline/same_session",
                    "baseline not stated to be measured in the same session",
                )
            )
        s = t.speedup
        # the statistic the claim compares: its stated basis, else median (kernels) or
        # output throughput; for time statistics, computed_speedup(p, basis) inline
        basis = s.basis  # a str (a Literal of the model) or None
        if basis is None:
            basis = "median" if kernel or t.stats is not None else "output_throughput"
        computed: float | None = None
        if basis in _TIME_BASES:
            cs = t.stats
            bs = b.stats
            if cs is not None and bs is not None:
                if basis == "median":
                    cand = cs.median
                    ref = bs.median
                else:
                    cand = getattr(cs, basis)
                    ref = getattr(bs, basis)
                if cand is not None and ref is not None:
                    cand_s = cand * _FACTOR[cs.unit]
                    computed = float("inf") if cand_s == 0 else ref * _FACTOR[bs.unit] / cand_s
        else:
            computed = computed_speedup(p, basis)
        if computed is None:
            if not (b.packet_id is not None and b.stats is None and b.serving is None):
                add(
                    (
                        "KE302",
                        "/timing/speedup",
                        f"speedup on basis `{basis}` cannot be checked: candidate or baseline lacks that statistic",
                    )
                )
        else:
            tol = s.tolerance
            if tol is None:
                tol = 0.02
            # the boundary is inside: 1.02 against 1.0 at tolerance 0.02 matches, whatever
            # the rounding of the subtraction
            if computed <= 0 or abs(s.value - computed) > tol * computed * _HI + _TINY:
                add(
                    (
                        "KE301",
                        "/timing/speedup/value",
                        f"claimed speedup {s.value:g} does not match the timings: {basis} gives {computed:.4g} (tolerance {tol:g})",
                    )
                )
    if kernel:
        if p.validation is None:
            add(("KE404", "/validation", "claims a kernel speedup without validation"))
        elif p.validation.verdict != "passed":
            add(("KE404", "/validation/verdict", "claims a kernel speedup but validation did not pass"))


def _status(p: Any, status: str, claim: bool, add: Add) -> None:
    f = p.failure
    v = p.validation
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


def _timing(p: Any, t: Any, add: Add) -> None:
    st = t.stats
    repeats = t.repeats
    if repeats is not None:
        if repeats < 1:
            add(("KE502", "/timing/repeats", f"repeats is {repeats}; expected at least 1"))
        elif st is not None and st.samples and len(st.samples) != repeats:
            add(
                (
                    "KE504",
                    "/timing/repeats",
                    f"repeats is {repeats} but {len(st.samples)} samples are kept",
                )
            )
    # every statistics block: candidate, its serving latencies, then the baseline's
    if st is not None:
        _stats("/timing/stats", st, add)
    sv = t.serving
    if sv is not None:
        _serving_stats(sv, _SERVING_PTRS, add)
    b = t.baseline
    if b is not None:
        bs = b.stats
        if bs is not None:
            _stats("/timing/baseline/stats", bs, add)
        sv = b.serving
        if sv is not None:
            _serving_stats(sv, _BASELINE_SERVING_PTRS, add)
    _limits(p, t, add)


def _serving_stats(sv: Any, ptrs: tuple[str, ...], add: Add) -> None:
    """Each latency statistics block of a serving run (``ptrs``: their pointers)."""
    for s, ptr in zip((sv.ttft, sv.tpot, sv.itl, sv.e2el), ptrs, strict=True):
        if s is not None:
            _stats(ptr, s, add)


_PCT_CACHE: dict[str, float | None] = {}
#: caches of values read from packets hold short strings only: a hostile batch must not pin
#: its largest strings in memory
_CACHED_CHARS = 256


def _pct(key: str) -> float | None:
    """``"p99.9"`` -> 99.9; None for a key that is not a percentile (cached)."""
    try:
        return _PCT_CACHE[key]
    except KeyError:
        m = _PCT.match(key)
        q = float(m.group(1)) if m is not None and float(m.group(1)) <= 100 else None
        if len(_PCT_CACHE) < 4096 and len(key) <= _CACHED_CHARS:
            _PCT_CACHE[key] = q
        return q


_ORDER_CACHE: dict[tuple[str, ...], list[tuple[float | None, str]]] = {}
#: the key tuples of _ORDER_CACHE that are all percentiles, already in level order: their
#: p50 keys (see _stats)
_LEVEL_ORDER: dict[tuple[str, ...], tuple[str, ...]] = {}


def _percentile_order(keys: tuple[str, ...]) -> list[tuple[float | None, str]]:
    """Keys that are not percentiles first (reported in their order), then percentiles by
    level (ties by key); cached per key tuple, as a batch repeats the same few key sets."""
    bad = [(None, k) for k in keys if _pct(k) is None]
    good = sorted((q, k) for k in keys if (q := _pct(k)) is not None)
    order: list[tuple[float | None, str]] = [*bad, *good]
    if len(_ORDER_CACHE) < 1024 and sum(map(len, keys)) <= _CACHED_CHARS:
        _ORDER_CACHE[keys] = order
        if not bad and tuple(k for _, k in good) == keys:
            _LEVEL_ORDER[keys] = tuple(k for q, k in good if q == 50)
    return order


_LO = 1 - 1e-9
_HI = 1 + 1e-9
_TINY = 1e-12  # absolute slack for comparisons whose bound can be 0


def _stats(ptr: str, s: Any, add: Add) -> None:
    med = s.median
    lo = s.min
    hi = s.max
    mean = s.mean
    if med is None:
        if mean is None:
            add(("KE501", f"{ptr}", "statistics block has neither a median nor a mean"))
        _stats_without_median(ptr, s, add)
        return
    # the common case first: 0 <= min <= median, mean <= max leaves nothing to say below (the
    # slack only widens the bounds of values >= 0); a missing bound (None) or NaN takes the
    # detailed checks
    try:
        plain = 0.0 <= lo <= med <= hi and lo <= mean <= hi
    except TypeError:
        plain = False
    if not plain:
        if lo is not None and lo > med * _HI:
            add(("KE501", f"{ptr}/min", f"min {lo:g} is above the median {med:g}"))
        if hi is not None and hi < med * _LO:
            add(("KE501", f"{ptr}/max", f"max {hi:g} is below the median {med:g}"))
        if mean is not None and (
            (lo is not None and mean < lo * _LO) or (hi is not None and mean > hi * _HI)
        ):
            _mean_within(ptr, mean, lo, hi, add)
    pcts = s.percentiles
    if pcts:
        # the common case in a few steps: percentile keys already in level order (known from
        # an earlier block), values that never decrease from the min (>= 0, so none is below
        # the one before by the slack either) to at most the max, and p50 within 1% of the
        # median, leave nothing to say; anything else takes _percentiles, which words it
        mids = _LEVEL_ORDER.get(tuple(pcts)) if plain else None
        if mids is None:
            _percentiles(ptr, pcts, med, lo, hi, add)
        else:
            prev = lo
            for val in pcts.values():
                if not val >= prev:  # NaN too
                    _percentiles(ptr, pcts, med, lo, hi, add)
                    break
                prev = val
            else:
                if not prev <= hi:
                    _percentiles(ptr, pcts, med, lo, hi, add)
                else:
                    for k in mids:
                        val = pcts[k]  # >= 0: equal to the median is within 1% of it
                        if val != med and abs(val - med) > 0.01 * (val if val > med else med):
                            _percentiles(ptr, pcts, med, lo, hi, add)
                            break
    if s.ci_low is not None and s.ci_low > med * _HI:
        add(("KE501", f"{ptr}/ci_low", f"confidence interval low {s.ci_low:g} is above the median {med:g}"))
    if s.ci_high is not None and s.ci_high < med * _LO:
        add(
            ("KE501", f"{ptr}/ci_high", f"confidence interval high {s.ci_high:g} is below the median {med:g}")
        )
    n = s.n
    if n is not None and n < 1:
        add(("KE502", f"{ptr}/n", f"n is {n}; expected at least 1"))
    xs = s.samples
    if xs:
        # _samples(ptr, xs, n, med, lo, hi, add), inline
        count = len(xs)
        if n is not None and n != count:
            add(("KE503", f"{ptr}/n", f"n is {n} but {count} samples are kept"))
        ys = sorted(xs)
        mid = count // 2
        # summaries computed from the samples match them exactly (the common case): equal
        # values >= 0 are within any relative tolerance of each other
        if not (count % 2 and (ys[0], ys[mid], ys[-1]) == (lo, med, hi) and plain):
            smed = ys[mid] if count % 2 else (ys[mid - 1] + ys[mid]) / 2
            y0 = ys[0]
            y1 = ys[-1]
            if abs(smed - med) > 0.01 * (smed if smed > med else med):
                add(("KE503", f"{ptr}/median", f"median {med:g} does not match the samples' median {smed:g}"))
            if lo is not None and abs(y0 - lo) > 1e-6 * (y0 if y0 > lo else lo):
                add(("KE503", f"{ptr}/min", f"min {lo:g} does not match the samples' min {y0:g}"))
            if hi is not None and abs(y1 - hi) > 1e-6 * (y1 if y1 > hi else hi):
                add(("KE503", f"{ptr}/max", f"max {hi:g} does not match the samples' max {y1:g}"))


def _samples(
    ptr: str, xs: list[float], n: int | None, med: float | None, lo: float | None, hi: float | None, add: Add
) -> None:
    """KE503: raw samples agree with n, the median (when given), min and max."""
    count = len(xs)
    if n is not None and n != count:
        add(("KE503", f"{ptr}/n", f"n is {n} but {count} samples are kept"))
    ys = sorted(xs)
    mid = count // 2
    smed = ys[mid] if count % 2 else (ys[mid - 1] + ys[mid]) / 2
    # all values are >= 0 (the schema says so): the larger one bounds the relative difference
    if med is not None and abs(smed - med) > 0.01 * (smed if smed > med else med):
        add(("KE503", f"{ptr}/median", f"median {med:g} does not match the samples' median {smed:g}"))
    y0, y1 = ys[0], ys[-1]
    if lo is not None and abs(y0 - lo) > 1e-6 * (y0 if y0 > lo else lo):
        add(("KE503", f"{ptr}/min", f"min {lo:g} does not match the samples' min {y0:g}"))
    if hi is not None and abs(y1 - hi) > 1e-6 * (y1 if y1 > hi else hi):
        add(("KE503", f"{ptr}/max", f"max {hi:g} does not match the samples' max {y1:g}"))


def _mean_within(ptr: str, mean: float, lo: float | None, hi: float | None, add: Add) -> None:
    if lo is not None and mean < lo * _LO:
        add(("KE501", f"{ptr}/mean", f"mean {mean:g} is below the min {lo:g}"))
    if hi is not None and mean > hi * _HI:
        add(("KE501", f"{ptr}/mean", f"mean {mean:g} is above the max {hi:g}"))


def _percentiles(
    ptr: str, pcts: dict[str, float], med: float | None, lo: float | None, hi: float | None, add: Add
) -> None:
    """Percentile keys are ``pNN``; values do not decrease with NN, stay within [min, max],
    and p50 equals the median (1%) when there is one."""
    keys = tuple(pcts)
    order = _ORDER_CACHE.get(keys)
    if order is None:
        order = _percentile_order(keys)
    pk = pv = None
    for q, k in order:
        val = pcts[k]
        if q is None:
            bad = f"percentile key `{k}` is not of the form p0..p100 (e.g. p50, p99.9)"
            add(("KE501", f"{ptr}/percentiles/{k}", bad))
            continue
        if pv is not None and val < pv * _LO:
            add(
                (
                    "KE501",
                    f"{ptr}/percentiles/{k}",
                    f"{k} = {val:g} is below {pk} = {pv:g}; percentiles must not decrease",
                )
            )
        pk, pv = k, val
        if med is not None and q == 50 and abs(val - med) > 0.01 * (val if val > med else med):
            add(("KE501", f"{ptr}/percentiles/{k}", f"p50 = {val:g} differs from the median {med:g}"))
        if lo is not None and val < lo * _LO:
            add(("KE501", f"{ptr}/percentiles/{k}", f"{k} = {val:g} is below the min {lo:g}"))
        if hi is not None and val > hi * _HI:
            add(("KE501", f"{ptr}/percentiles/{k}", f"{k} = {val:g} is above the max {hi:g}"))


def _stats_without_median(ptr: str, s: Any, add: Add) -> None:
    """The checks that need no median, for blocks that only report mean and percentiles."""
    lo, hi, mean = s.min, s.max, s.mean
    if mean is not None:
        _mean_within(ptr, mean, lo, hi, add)
    if s.percentiles:
        _percentiles(ptr, s.percentiles, None, lo, hi, add)
    if s.ci_low is not None and s.ci_high is not None and s.ci_low > s.ci_high * _HI:
        add(
            (
                "KE501",
                f"{ptr}/ci_low",
                f"confidence interval low {s.ci_low:g} is above its high {s.ci_high:g}",
            )
        )
    if s.n is not None and s.n < 1:
        add(("KE502", f"{ptr}/n", f"n is {s.n}; expected at least 1"))
    if s.samples:
        _samples(ptr, s.samples, s.n, None, lo, hi, add)


#: :func:`device_peaks` by (device, arch) (short names only)
_PEAKS_CACHE: dict[tuple[str | None, str | None], Any] = {}
_UNSET: Any = object()


def _peak_source(peaks: Any, field: str) -> str:
    """Where the peak checked against comes from: the peak table, else the packet's own."""
    return f"{peaks.key} peak" if peaks is not None else f"the recorded hardware.{field}"


def _limits(p: Any, t: Any, add: Add) -> None:
    # the achieved FLOP/s and B/s: the work of the timed call (its shape's, else the task's)
    # over the median time; a block without one is checked on its mean: some call was at
    # least as fast as the mean, so a rate above the peak on the mean is above it on that call
    st = t.stats
    task = p.task
    if st is None or task is None:
        return
    w = None
    sid = t.shape_id
    if sid and task.shapes:
        for sh in task.shapes:
            if sh.id == sid and sh.work is not None:
                w = sh.work
                break
    if w is None:
        w = task.work
        if w is None:
            return
    typical = st.median if st.median is not None else st.mean
    if typical is None:
        return
    sec = typical * _FACTOR[st.unit]
    if sec <= 0:
        return
    q = w.flops
    fl = q.value * _FACTOR[q.unit] / sec if q is not None else None
    q = w.bytes
    by = q.value * _FACTOR[q.unit] / sec if q is not None else None
    if fl is None and by is None:
        return
    h = p.hardware
    if h is None:
        peaks = None
    else:
        # device_peaks(h.device, h.arch), from a dict first: a batch repeats a few devices
        dev_arch = (h.device, h.arch)
        peaks = _PEAKS_CACHE.get(dev_arch, _UNSET)
        if peaks is _UNSET:
            peaks = device_peaks(*dev_arch)
            if len(_PEAKS_CACHE) < 4096 and len(h.device or "") + len(h.arch or "") <= _CACHED_CHARS:
                _PEAKS_CACHE[dev_arch] = peaks
    count = h.count if h is not None and h.count else 1
    if peaks is None and not (
        h is not None and (h.peak_flop_rate is not None or h.peak_bandwidth is not None)
    ):
        dev = h.device if h is not None else "unknown device"
        add(("KE604", "/hardware/device", f"no peak figures for `{dev}`: achieved rates cannot be checked"))
        return
    if fl is not None:
        if peaks is not None:
            dtypes = tuple(task.dtypes) if task.dtypes else ()
            peak = _peak_cache.get((peaks.key, dtypes))
            if peak is None:
                peak = peak_flops_for(peaks, dtypes)
        else:
            rec = h.peak_flop_rate
            peak = rec.value * _FACTOR[rec.unit] if rec is not None else None
        if peak:
            peak *= count
            if fl > peak * _SLACK:
                src = _peak_source(peaks, "peak_flop_rate")
                add(
                    (
                        "KE601",
                        _typical_ptr(t),
                        f"achieved {fl / 1e12:.4g} TFLOP/s exceeds {src} of {peak / 1e12:.4g} TFLOP/s",
                    )
                )
    if by is not None:
        if peaks is not None:
            bw = peaks.bandwidth
        else:
            rec = h.peak_bandwidth
            bw = rec.value * _FACTOR[rec.unit] if rec is not None else None
        if bw:
            bw *= count
            if by > bw * _SLACK:
                src = _peak_source(peaks, "peak_bandwidth")
                if t.cache_policy == "warm":
                    add(
                        (
                            "KE603",
                            _typical_ptr(t),
                            f"achieved {by / 1e9:.4g} GB/s exceeds {src} of {bw / 1e9:.4g} GB/s with warm caches",
                        )
                    )
                else:
                    add(
                        (
                            "KE602",
                            _typical_ptr(t),
                            f"achieved {by / 1e9:.4g} GB/s exceeds {src} of {bw / 1e9:.4g} GB/s",
                        )
                    )


def _typical_ptr(t: Any) -> str:
    """Where the time the achieved rates rest on is: the median, else the mean."""
    return "/timing/stats/median" if t.stats.median is not None else "/timing/stats/mean"


def _tolerance(p: Any, v: Any, add: Add) -> None:
    tol = p.task.tolerance if p.task is not None else None
    for i, s in enumerate(v.shapes):
        if not s.passed:
            continue
        atol = s.atol if s.atol is not None else (tol.atol if tol is not None else None)
        rtol = s.rtol if s.rtol is not None else (tol.rtol if tol is not None else None)
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


def _hardware(p: Any, t: Any, claim: bool, add: Add) -> None:
    h = p.hardware
    if h is None:
        ptr: str | None = "/hardware"
    elif h.vendor != "cpu" and _unidentified(h.device):
        ptr = "/hardware/device"
    else:
        ptr = None
    if ptr is not None:
        if t is not None or p.profiler:
            add(("KE801", ptr, "the device is not identified"))
        else:
            add(("KE802", ptr, "the device is not identified"))
    if claim and h is not None:
        c = h.clocks
        if c is None or (c.locked is None and c.sm_observed is None):
            add(("KE803", "/hardware/clocks", "clock state not recorded"))
    if p.subject.kind == "serving" and (p.task is None or p.task.serving is None):
        add(("KE804", "/task/serving", "serving packet without a serving task description"))
