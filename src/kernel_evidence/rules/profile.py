"""KE11xx: a profile of the timed call agrees with the claim.

A capture that says what it is of (``ProfilerCapture.of``: candidate or baseline, which shape,
which kernels to expect) can be held against the packet's own timing: the kernels of one call
must fit in the time claimed for that call, and a capture of the candidate must show the
candidate's kernel rather than, say, a library call it dispatched to.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from math import prod
from typing import Any

from ._common import CACHED_CHARS, lazy_re
from ._context import Add, Ctx
from ._engine import declare
from ._tables import device_peaks, dtype_class
from ._units import FACTOR

declare(
    "KE1101",
    "error",
    "the claimed time fits the profiled kernels",
    "time the same call you profiled, with device timers, synchronised, and record the capture's shape",
    "A capture of the candidate (or the baseline) at the timed shape (`of.shape_id` equal to "
    "the timing's shape; absent, for a task of at most one shape) gives the kernel time of one call: per stream, the "
    "sum over kernel names of the median launch duration (canonical metric `duration`, one "
    "launch per record, a record with `invocations` counting as that many launches) times "
    "the launches per call (launches of the name / the calls the capture holds: launches of the "
    "least-launched of `of.expected_kernels`, else of the least-launched kernel); the longest "
    "stream bounds the call. The side's claimed median (else mean) x (1 + "
    "`of.claim_tolerance`, default 0.5, at most 0.5: a wider one counts as 0.5, and where "
    "only the wider one lets the claim through the finding points at it) MUST NOT be below "
    "it: a call cannot finish before its "
    "own kernels. Every kernel counts but memset, memcpy, fill and flush kernels (a harness's "
    "cache flush: a word of the name, split at separators and case changes, so "
    "`FillFunctor` is one and `attn_fwd_prefill` is not; a record is one only when its "
    "`raw_name`, where given, is one too; a kernel the capture expects never "
    "is; and, unless the name is a profiler's own memset/memcpy form (`[CUDA memset]`, "
    "`[CUDA memcpy ...]`, `Memset`, `Memcpy...`, `__amd_rocclr_fillBuffer...`, "
    "`fillBufferAligned`), only when its duration is at most what writing the largest of the "
    "task's tensors or the side's cache flush (`conditions.cache.flush_bytes`) twice over at "
    "the device's peak memory bandwidth takes, plus 20 us: a `memset_partials` kernel "
    "slower than that does work, and where only counting it makes the claim too short the "
    "finding points at its name). A capture that names no shape is of the timed one when the task has one shape. "
    "A record's canonical `duration` MUST agree within 1% with the raw ncu metric it was "
    "converted from (`gpu__time_duration.sum`, else `.avg`, in the record's `raw` or the "
    "capture's `raw_columns`, in the unit the source spelled): a canonical time edited with "
    "the raw one kept is not the profiler's.",
)
declare(
    "KE1102",
    "error",
    "the candidate's capture shows the candidate's kernel",
    "profile the candidate's own call and name the kernels it launches in /profiler/N/of/expected_kernels",
    "A capture of the candidate (`of.side: candidate`) that lists kernel records MUST show at "
    "least one of `of.expected_kernels` (matched as a case-insensitive substring of a "
    "record's name or raw name): a capture without them profiled something else. An "
    "expected name that does not itself name a vendor library and matches only vendor-library "
    "kernels of the capture (cuBLAS/cuBLASLt `sm90_xmma_...`, `ampere_...`, `nvjet_...`, "
    "`cutlass_80_...`, rocBLAS/hipBLASLt `Cijk_...`), `gemm` matching cuBLAS's kernel, does not "
    "show the candidate's own kernel either; nor one that matches only kernels of the baseline "
    "provider's own library (FlashAttention `flash::`, `flash_fwd_kernel`, `flash_fwd_splitkv`, "
    "`flash_bwd...`; FlashInfer `flashinfer::`; cuDNN `cudnn...`; Composable Kernel `ck::`, "
    "`kernel_gemm_xdl...`, `DeviceGemm_Xdl...`; xFormers `fmha_cutlass...`; Transformer Engine "
    "`transformer_engine::`; AITER `aiter::`), a library measured against itself, unless the "
    "subject's name names that library (a candidate built on another library, a FlashAttention "
    "variant against cuDNN, passes). A record whose `raw_name` is a vendor library's (or the "
    "baseline library's) kernel is one whatever its `name` says; and a record an expected name "
    "matches by its `name` MUST carry the name of its `raw_name` (the demangled form, or a part "
    "of it: every identifier of the name, but C++ keywords, found in the raw name), except in "
    "a cost-model tool's capture (XProf: an op and its kernel): a name edited over the "
    "profiler's is not the profiler's.",
)

declare(
    "KE1103",
    "error",
    "a capture's shape is one of the task's",
    "record in /profiler/N/of/shape_id the id of the task shape the capture holds",
    "Where `task.shapes` lists the shapes, a capture's `of.shape_id` MUST be one of their ids: "
    "a capture of a shape the task does not have is held against no timing (KE1101).",
)
declare(
    "KE1104",
    "error",
    "a profiled candidate kernel is in the packet's captures",
    "keep the candidate's capture of the timed shape with `of.side: candidate` and its `of.shape_id`, or record the defence as skipped",
    "Where a packet carries captures that all say what they are of (`of.side`), the "
    "`candidate_kernel_profiled` defence MUST NOT be recorded passed unless one of them is of the "
    "candidate: a capture of the candidate relabelled as the baseline's escapes KE1101 and "
    "KE1102 while the defence record still vouches for it. Where the timed shape is known "
    "(`timing.conditions.shape_id`, else `timing.shape_id`), the captures of the candidate "
    "MUST NOT all name another shape (`of.shape_id`): a capture of the timed call relabelled "
    "to another shape escapes KE1101 the same way (one naming no shape on a task of several: "
    "KE1105).",
)
declare(
    "KE1105",
    "warning",
    "a profiled candidate kernel comes with its capture",
    "attach the capture of the candidate (/profiler, `of.side: candidate`, `of.shape_id` the timed shape), or record the defence as skipped",
    "A packet that records the `candidate_kernel_profiled` defence passed SHOULD carry a "
    "profiler capture (`profiler`): without one, nothing in the packet shows the candidate's "
    "kernel ran, and a capture that contradicted the claim (KE1101, KE1102) may have been "
    "dropped. Where the timed shape is known and the task has several, a capture of the "
    "candidate SHOULD name its shape (`of.shape_id`): where none of them is of the timed "
    "shape and one names none, nothing shows the timed call was profiled, and KE1101 holds "
    "it against no timing. Graded C at best.",
    caps="C",
)

_DEFAULT_TOLERANCE = 0.5
#: the widest tolerance a capture may state: the clocks a profiler pins (ncu's base clocks)
#: slow a kernel by a quarter or so, a kernel half again the claimed time is not noise
_MAX_TOLERANCE = 0.5
#: the words of a kernel name: runs of letters split at case changes (`FillFunctor`: fill,
#: functor), and runs of digits
_WORDS = lazy_re(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_UTILITY_WORDS = frozenset({
    "memset", "memcpy", "fill", "fills", "filled", "flush", "flushes", "zero", "zeros", "zeroes",
    "zeroing", "zeroed",
})  # fmt: skip
_UTILITY_CACHE: dict[str, bool] = {}


def _utility(name: str) -> bool:
    """Whether a kernel name is a harness's memset, memcpy, fill or flush, by its words
    (`fill_kernel`, `FillFunctor`, `[CUDA memset]`; not `attn_fwd_prefill`). Cached: a
    batch repeats a few kernel names."""
    hit = _UTILITY_CACHE.get(name)
    if hit is None:
        hit = False
        for w in _WORDS.findall(name[:4096]):
            w = w.lower()
            if w in _UTILITY_WORDS or w.startswith(("memset", "memcpy")):
                hit = True
                break
        if len(_UTILITY_CACHE) < 4096 and len(name) <= CACHED_CHARS:
            _UTILITY_CACHE[name] = hit
    return hit


#: a profiler's own name for a memory operation (not a kernel anyone named): nsys
#: `[CUDA memset]`, `[CUDA memcpy Host-to-Device]`; torch/XProf `Memset (Device)`,
#: `MemcpyHtoD`; ROCclr's blit kernels `__amd_rocclr_fillBufferAligned`, `..._copyBuffer`
_TOOL_FILL = lazy_re(
    r"\[(?:cuda|hip|hsa) (?:memset|memcpy)[^\]]*\]$|(?:memset|memcpy)(?:$|[\s(:-]|[hd]to[hd])"
    r"|__amd_rocclr_(?:fill|copy)|fillbufferaligned$"
)
_TOOL_FILL_CACHE: dict[str, bool] = {}


def _tool_fill(name: str) -> bool:
    """Whether a kernel name is a profiler's own memset/memcpy form (cached)."""
    hit = _TOOL_FILL_CACHE.get(name)
    if hit is None:
        hit = bool(_TOOL_FILL.match(name[:256].strip().casefold()))
        if len(_TOOL_FILL_CACHE) < 4096 and len(name) <= CACHED_CHARS:
            _TOOL_FILL_CACHE[name] = hit
    return hit


#: bytes per element of a dtype class (an unknown one counts as 8: the fill bound is generous)
_CLASS_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
#: a fill kernel may take this many times the time of writing its bytes at peak bandwidth
#: (a memset reaches most of the peak), plus a launch's worth
_FILL_SLACK = 2.0
_FILL_FLOOR = 20e-6
_BW_CACHE: dict[tuple[Any, ...], float | None] = {}


def _peak_bandwidth(h: Any) -> float | None:
    """The device's peak memory bandwidth in B/s: the table's (by device id, else name and
    arch), else the recorded one. Cached by device."""
    key = (h.device_id, h.device, h.arch)
    bw = _BW_CACHE.get(key, _UNSET)
    if bw is _UNSET:
        peaks = (device_peaks(h.device_id) if h.device_id else None) or device_peaks(h.device, h.arch)
        bw = peaks.bandwidth if peaks is not None else None
        if (
            len(_BW_CACHE) < 1024
            and len(h.device) + len(h.arch or "") + len(h.device_id or "") <= CACHED_CHARS
        ):
            _BW_CACHE[key] = bw
    if bw is None and h.peak_bandwidth is not None:
        rb = h.peak_bandwidth
        bw = rb.value * FACTOR[rb.unit]
    return bw  # type: ignore[no-any-return]


_UNSET: Any = object()


def _fill_limit(p: Any, side: str) -> float | None:
    """The longest a harness's fill or memset kernel of a call may take, in seconds: writing
    the largest tensor of the task, or the side's cache flush, twice over at the device's
    peak memory bandwidth, plus 20 us (None where neither size or no bandwidth is known)."""
    h = p.hardware
    if h is None:
        return None
    size = 0.0
    task = p.task
    for sh in (task.shapes if task is not None else None) or ():
        for tn in sh.tensors or ():
            c = dtype_class(tn.dtype) if len(tn.dtype) <= 64 else None
            size = max(size, prod(tn.shape) * _CLASS_BYTES.get(c or "", 8))
    t = p.timing
    if t is not None:
        c = (
            t.conditions
            if side == "candidate"
            else (t.baseline.conditions if t.baseline is not None else None)
        )
        cache = c.cache if c is not None else None
        fb = cache.flush_bytes if cache is not None else None
        if fb is not None:
            size = max(size, fb.value * FACTOR[fb.unit])
    if size <= 0:
        return None
    bw = _peak_bandwidth(h)
    if not bw:
        return None
    return _FILL_SLACK * size / bw + _FILL_FLOOR


def check(p: Any, ctx: Ctx, add: Add) -> None:
    caps = p.profiler
    if not caps:
        ds = p.defences
        if ds:
            for i, d in enumerate(ds):
                if d.check == "candidate_kernel_profiled" and d.outcome == "passed":
                    add(
                        (
                            "KE1105",
                            f"/defences/{i}",
                            "the candidate_kernel_profiled defence passed, but the packet carries no profiler capture",
                        )
                    )
                    break
        return
    task = p.task
    shapes = task.shapes if task is not None else None
    said = 0  # captures that say what they are of
    candidate = -1  # the first capture of the candidate
    unsaid = -1  # the last capture that does not
    for i, cap in enumerate(caps):
        ks = cap.kernels
        if ks and (cap.raw_columns or ks[0].raw is not None or ks[-1].raw is not None):
            _durations_agree(i, cap, add)  # raw metrics kept: per record, or as columns
        of = cap.of
        if of is None:
            unsaid = i
            continue
        said += 1
        if candidate < 0 and of.side == "candidate":
            candidate = i
        if of.shape_id is not None and shapes and not _listed(of.shape_id, shapes):
            add(
                (
                    "KE1103",
                    f"/profiler/{i}/of/shape_id",
                    f"capture of shape `{of.shape_id}`, which the task does not list",
                )
            )
        if not cap.kernels:
            continue
        if of.side == "candidate" and of.expected_kernels:
            _expected_present(p, i, cap, of.expected_kernels, add)
        if of.side in ("candidate", "baseline"):
            _fits_claim(p, i, cap, of, add)
    if (
        said == len(caps) - 1
        and candidate < 0
        and p.defences
        and p.subject.kind == "kernel"
        and caps[unsaid].kernels
    ):
        # one capture says nothing of what it is of, none is the candidate's: the passed
        # defence vouches that it is
        for d in p.defences:
            if d.check == "candidate_kernel_profiled" and d.outcome == "passed":
                _unlabelled(p, unsaid, caps[unsaid], shapes is None or len(shapes) <= 1, add)
                break
    if said == len(caps) and p.defences:
        for d in p.defences:
            if d.check == "candidate_kernel_profiled" and d.outcome == "passed":
                if candidate < 0:
                    sides = ", ".join(sorted({c.of.side for c in caps}))
                    add(
                        (
                            "KE1104",
                            "/profiler/0/of/side",
                            f"the candidate_kernel_profiled defence passed, but every capture is of another side ({sides})",
                        )
                    )
                else:
                    t = p.timing
                    sid = caps[candidate].of.shape_id
                    if (
                        sid is None
                        or t is None
                        or not (
                            sid == t.shape_id or (t.conditions is not None and sid == t.conditions.shape_id)
                        )
                    ):
                        _at_timed(t, caps, candidate, shapes, add)
                break


def _at_timed(t: Any, caps: list[Any], first: int, shapes: list[Any] | None, add: Add) -> None:
    """KE1104/KE1105 for a packet whose candidate_kernel_profiled passed: one capture of the
    candidate (the first is ``first``) is of the timed shape, where that is known."""
    timed = _timed_shapes(t)
    if not timed:
        return
    several = shapes is not None and len(shapes) > 1
    unnamed = -1  # the first capture of the candidate naming no shape on a task of several
    for i in range(first, len(caps)):
        of = caps[i].of
        if of.side != "candidate":
            continue
        sid = of.shape_id
        if sid is None:
            if not several:
                return  # of the task's one shape
            if unnamed < 0:
                unnamed = i
        elif sid in timed:
            return
    _not_at_timed(unnamed if unnamed >= 0 else first, caps, timed, add)


class _Candidate:
    """What a capture without ``of`` is read as: the candidate's, of the timed shape."""

    side = "candidate"
    shape_id = None
    expected_kernels = None
    claim_tolerance = None


_AS_CANDIDATE = _Candidate()
#: ATen's own kernels (a torch eager reference or baseline in the same capture)
_ATEN = ("at::native", "at_native", "aten::")


def _unlabelled(p: Any, i: int, cap: Any, one_shape: bool, add: Add) -> None:
    """A packet whose candidate_kernel_profiled defence passed with one capture that does
    not say what it is of and none of the candidate: the capture is the candidate's. KE1105
    where it shows only a vendor library's kernels while the baseline is one and the
    subject names none; else, on a task of one shape (of the timed shape then), KE1101
    against the candidate's claim where it shows no vendor-library or ATen kernel (which
    may be the baseline's or the reference's)."""
    if _names_vendor(p.subject.name[:256].casefold()):
        return  # the candidate is a library's call: its kernels are the library's
    vendor = None
    other = False
    for rec in cap.kernels:
        name = rec.name
        if _utility(name) and (not rec.raw_name or _utility(rec.raw_name)):
            continue
        if _vendor(name) or (rec.raw_name is not None and _vendor(rec.raw_name)):
            if vendor is None:
                vendor = name
        elif any(a in name for a in _ATEN):
            return  # a torch reference or baseline ran in the capture too
        else:
            other = True
    if vendor is not None:
        t = p.timing
        b = t.baseline if t is not None else None
        if not other and b is not None and b.provider and _names_vendor(b.provider.casefold()[:256]):
            add(
                (
                    "KE1105",
                    f"/profiler/{i}/kernels",
                    f"the candidate_kernel_profiled defence passed, but the only capture (no `of`) shows only "
                    f"vendor-library kernels ({vendor[:80]}), the baseline's {b.provider[:40]}: nothing shows the "
                    f"candidate's own kernel",
                )
            )
        return
    if one_shape:
        _fits_claim(p, i, cap, _AS_CANDIDATE, add)


def _timed_shapes(t: Any) -> tuple[str, ...] | None:
    """The ids the timed shape goes by (``timing.shape_id``, ``timing.conditions.shape_id``),
    or None when the timing names none."""
    if t is None:
        return None
    a = t.shape_id
    c = t.conditions
    b = c.shape_id if c is not None else None
    if a is None:
        return (b,) if b is not None else None
    return (a,) if b is None or b == a else (a, b)


def _not_at_timed(i: int, caps: list[Any], timed: tuple[str, ...], add: Add) -> None:
    """candidate_kernel_profiled passed, but no capture of the candidate is of the timed
    shape: KE1105 where one (``i``) names no shape on a task of several (nothing shows which
    it is of), KE1104 where every one names another shape."""
    of = caps[i].of
    if of.shape_id is not None:
        add(
            (
                "KE1104",
                f"/profiler/{i}/of/shape_id",
                f"the candidate_kernel_profiled defence passed, but the candidate's capture is of shape "
                f"`{of.shape_id}`, not the timed `{timed[0]}`: no capture of the timed call",
            )
        )
    else:
        add(
            (
                "KE1105",
                f"/profiler/{i}/of",
                f"the candidate_kernel_profiled defence passed, but the candidate's capture names no shape on a "
                f"task of several: nothing shows it is of the timed `{timed[0]}`",
            )
        )


#: vendor-library kernel names (cuBLAS, cuBLASLt, their CUTLASS instantiations, rocBLAS,
#: hipBLASLt/Tensile), at the start of a word of the name; cuBLAS's `..._cublas` suffix
_VENDOR = lazy_re(
    r"(?:^|[\s<:(,*&])(?:cublas|sm\d+_xmma|xmma_|ampere_|volta_|turing_|hopper_|nvjet|cutlass_\d+_|"
    r"cutlass3x_|cijk_|rocblas|hipblas|gemmsn_|gemv2[nt]_)|_cublas\b"
)
#: an expected name that names a vendor library itself (the capture means the library's kernel)
_VENDOR_WORDS = ("cublas", "xmma", "nvjet", "cutlass", "cijk", "rocblas", "hipblas", "tensile")
_VENDOR_CACHE: dict[str, bool] = {}


def _vendor(name: str) -> bool:
    """Whether a kernel name is a vendor library's (cuBLAS ``sm90_xmma_gemm_...``,
    ``ampere_bf16_s16816gemm...``, ``nvjet_...``, rocBLAS ``Cijk_...``). Cached."""
    hit = _VENDOR_CACHE.get(name)
    if hit is None:
        hit = bool(_VENDOR.search(name[:4096].casefold()))
        if len(_VENDOR_CACHE) < 4096 and len(name) <= CACHED_CHARS:
            _VENDOR_CACHE[name] = hit
    return hit


def _names_vendor(w: str) -> bool:
    """Whether a (casefolded) expected kernel name names a vendor library."""
    return _vendor(w) or any(v in w for v in _VENDOR_WORDS)


#: the raw ncu metrics a canonical `duration` is converted from: (name, whether it is a sum
#: over the record's launches)
_RAW_DURATION = (("gpu__time_duration.sum", True), ("gpu__time_duration.avg", False))
#: source spellings of time units, in seconds
_RAW_TIME = {
    "ns": 1e-9, "nsecond": 1e-9, "nsec": 1e-9, "nanosecond": 1e-9, "nanoseconds": 1e-9,
    "us": 1e-6, "usecond": 1e-6, "usec": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "microsecond": 1e-6,
    "microseconds": 1e-6, "ms": 1e-3, "msecond": 1e-3, "msec": 1e-3, "millisecond": 1e-3,
    "milliseconds": 1e-3, "s": 1.0, "second": 1.0, "seconds": 1.0, "sec": 1.0,
}  # fmt: skip


def _raw_seconds(value: Any, unit: Any) -> tuple[float, float] | None:
    """A raw time in seconds and the rounding slack of its unit (half a hundredth of it:
    ncu prints two decimals), or None when it is not a number in a time unit."""
    if type(value) not in (float, int) or not isinstance(unit, str):
        return None
    f = _RAW_TIME.get(unit.strip().casefold())
    if f is None:
        return None
    return value * f, 0.005 * f


def _durations_agree(i: int, cap: Any, add: Add) -> None:
    """KE1101: a record's canonical ``duration`` against the raw ncu metric it came from
    (the record's ``raw``, else the capture's ``raw_columns``): the first record off by
    more than 1% (and the rounding of the raw unit), with the count of such records."""
    col = None
    cols = cap.raw_columns
    kernels = cap.kernels
    if cols:
        units = cap.raw_units or {}
        for key, summed in _RAW_DURATION:
            c = cols.get(key)
            if c is not None and len(c) == len(kernels):
                col = (key, summed, c, units.get(key))
                break
    first = None
    bad = 0
    for j, rec in enumerate(kernels):
        raw = rec.raw
        if raw is None and col is None:
            continue
        m = rec.metrics
        d = m.get("duration") if m else None
        if d is None or d.unit not in FACTOR:
            continue
        one = rec.invocations is None or rec.invocations == 1
        got = None
        if raw is not None:
            for key, summed in _RAW_DURATION:
                rm = raw.get(key)
                if rm is not None and (one or not summed):
                    got = _raw_seconds(rm.value, rm.unit)
                    if got is not None:
                        break
        if got is None and col is not None and (one or not col[1]):
            key = col[0]
            got = _raw_seconds(col[2][j], col[3])
        if got is None:
            continue
        sec, slack = got
        canon = d.value * FACTOR[d.unit]
        if abs(canon - sec) > 0.01 * max(abs(canon), abs(sec)) + slack:
            bad += 1
            if first is None:
                first = (j, canon, sec, key)
    if first is not None:
        j, canon, sec, key = first
        more = f" ({bad} records disagree)" if bad > 1 else ""
        add(
            (
                "KE1101",
                f"/profiler/{i}/kernels/{j}/metrics/duration",
                f"canonical duration {canon * 1e6:.4g} us disagrees with the record's raw {key} "
                f"{sec * 1e6:.4g} us{more}: the kernel time is not the profiler's",
            )
        )


def _named(name: str, wanted: list[str]) -> bool:
    """Whether ``name`` contains one of the (casefolded) expected kernel names."""
    folded = name.casefold()
    for w in wanted:  # noqa: SIM110  (a loop: any() over a generator costs more)
        if w in folded:
            return True
    return False


def _listed(shape_id: str, shapes: list[Any]) -> bool:
    """Whether one of ``shapes`` has the id ``shape_id``."""
    for sh in shapes:  # noqa: SIM110  (a loop: any() over a generator costs more)
        if sh.id == shape_id:
            return True
    return False


def _expected_present(p: Any, i: int, cap: Any, expected: list[str], add: Add) -> None:
    wanted = [w.casefold() for w in expected]
    vendor = None  # the first library kernel an expected name matched: (index, what library)
    family: str | None = _UNSET  # the baseline library's kernel family, read when needed
    for j, rec in enumerate(cap.kernels):
        # matched by its name or its raw name; the candidate's own unless the record is a
        # vendor library's (by either name: a raw name is the profiler's) or the baseline
        # library's own
        name = rec.name
        raw = rec.raw_name
        hit = _named(name, wanted)
        if not hit and not (raw and _named(raw, wanted)):
            continue
        if _vendor(name) or (raw is not None and _vendor(raw)):
            lib = "vendor-library"
        else:
            if family is _UNSET:
                family = _baseline_family(p)
            if family is not None and (
                _family(name) == family or (raw is not None and _family(raw) == family)
            ):
                lib = f"the baseline's own {_FAMILY_NAMES[family]}"
            else:
                if hit and raw and not _agree(name, raw) and not _COST_MODEL_TOOL.search(cap.tool[:64]):
                    add(
                        (
                            "KE1102",
                            f"/profiler/{i}/kernels/{j}/name",
                            f"the record's name `{name[:60]}` (an expected kernel) is not its raw_name "
                            f"`{raw[:80]}` demangled nor a part of it: the name is not the profiler's",
                        )
                    )
                return
        if vendor is None:
            vendor = (j, lib)
    if vendor is not None:
        j, lib = vendor
        subject = p.subject.name[:256].casefold()
        if lib == "vendor-library":
            for w in wanted:
                if _names_vendor(w):
                    return  # the capture expects a library's kernel by name: KE1102 holds
            if _names_vendor(subject):
                return  # the subject is the library's call
        elif _provider_family(subject) == family:
            return  # the subject says it is (built on) the baseline's library
        rec = cap.kernels[j]
        if rec.raw_name is not None and not _agree(rec.name, rec.raw_name):
            # a library's kernel by its raw name, under another name
            add(
                (
                    "KE1102",
                    f"/profiler/{i}/kernels/{j}/name",
                    f"the record's name `{rec.name[:60]}` (an expected kernel) is not its raw_name "
                    f"`{rec.raw_name[:80]}`, a {lib} kernel: the candidate's own kernel is not shown",
                )
            )
            return
        add(
            (
                "KE1102",
                f"/profiler/{i}/of/expected_kernels",
                f"the expected kernel name(s) {', '.join(f'`{e}`' for e in expected)} match only {lib} "
                f"kernels of the capture ({rec.name[:80]}): the candidate's own kernel is not shown",
            )
        )
        return
    shown = ", ".join(sorted({r.name for r in cap.kernels})[:3])
    add(
        (
            "KE1102",
            f"/profiler/{i}/kernels",
            f"a capture of the candidate without any expected kernel ({', '.join(expected)}); it shows {shown}",
        )
    )


#: the kernels of libraries a candidate may be built on (templates and generators it can
#: instantiate itself), by family: held against a candidate only where the baseline is
#: that library (the library measured against itself); at the start of a word or after a
#: mangled name's length digits
_FAMILY_KERNELS = lazy_re(
    r"(?:^|[\s<:(,*&0-9])(?:"
    r"(?P<flashattn>(?:pytorch_)?flash::|flash_fwd_kernel|flash_fwd_splitkv|flash_bwd|flashattn(?:fwd|bwd))"
    r"|(?P<flashinfer>flashinfer)"
    r"|(?P<cudnn>cudnn)"
    r"|(?P<ck>ck(?:_tile)?(?:::|[0-9])|kernel_gemm_xdl|devicegemm_xdl|device_gemm_xdl)"
    r"|(?P<xformers>fmha_cutlass|xformers)"
    r"|(?P<te>transformer_engine)"
    r"|(?P<aiter>aiter(?:::|[0-9]))"
    r")"
)
_FAMILY_NAMES = {
    "flashattn": "FlashAttention", "flashinfer": "FlashInfer", "cudnn": "cuDNN",
    "ck": "Composable Kernel", "xformers": "xFormers", "te": "Transformer Engine", "aiter": "AITER",
}  # fmt: skip
_FAMILY_CACHE: dict[str, str | None] = {}


def _family(name: str) -> str | None:
    """The library family of a kernel name (:data:`_FAMILY_KERNELS`), or None. Cached."""
    hit = _FAMILY_CACHE.get(name, _UNSET)
    if hit is _UNSET:
        m = _FAMILY_KERNELS.search(name[:4096].casefold())
        hit = m.lastgroup if m is not None else None
        if len(_FAMILY_CACHE) < 4096 and len(name) <= CACHED_CHARS:
            _FAMILY_CACHE[name] = hit
    return hit  # type: ignore[no-any-return]


_PROVIDER_FAMILY = lazy_re(
    r"(?P<flashinfer>flashinfer)|(?P<cudnn>cudnn)|(?P<te>transformer[\s_-]?engine)|(?P<aiter>\baiter\b)"
    r"|(?P<xformers>xformers)|(?P<ck>composable[\s_-]?kernel|\bck(?:[\s_-]?tile)?\b)"
    r"|(?P<flashattn>flash[\s_-]?(?:attn|attention))"
)
_PROVIDER_CACHE: dict[str, str | None] = {}


def _provider_family(s: str) -> str | None:
    """The library family a (casefolded) provider or subject name names, or None; the first
    of cuDNN, TE... before FlashAttention (`cuDNN flash attention` is cuDNN's). Cached."""
    hit = _PROVIDER_CACHE.get(s, _UNSET)
    if hit is _UNSET:
        m = _PROVIDER_FAMILY.search(s)
        hit = m.lastgroup if m is not None else None
        if len(_PROVIDER_CACHE) < 4096 and len(s) <= CACHED_CHARS:
            _PROVIDER_CACHE[s] = hit
    return hit  # type: ignore[no-any-return]


def _baseline_family(p: Any) -> str | None:
    """The kernel family of the packet's baseline provider (FlashAttention...), or None."""
    t = p.timing
    b = t.baseline if t is not None else None
    if b is None or not b.provider:
        return None
    return _provider_family(b.provider[:256].casefold())


#: a tool whose records are ops of a cost model (XProf: an HLO op named `fusion.3`, its
#: kernel the raw name), not kernels under two spellings
_COST_MODEL_TOOL = lazy_re(r"xprof|tensorboard|xla|jax|tpu", re.IGNORECASE)
#: identifiers of a demangled name that its mangled form spells otherwise (`std` is `St`,
#: builtin types are letters, `(anonymous namespace)` is `_GLOBAL__N_1`)
_CXX_WORDS = frozenset({
    "void", "const", "volatile", "unsigned", "signed", "char", "short", "int", "long", "float",
    "double", "bool", "true", "false", "std", "anonymous", "namespace", "lambda", "operator",
    "struct", "class", "enum", "union", "unnamed", "type", "clone", "auto", "decltype", "wchar_t",
    "char8_t", "char16_t", "char32_t", "__int128", "__half", "nullptr", "nullptr_t", "sizeof",
    "restrict", "__restrict", "__restrict__", "typename", "template", "this", "kd", "constprop",
    "isra", "part", "cold", "abi", "cxx11", "_float16", "__fp16", "__bf16", "_bitint",
    # typedefs a tool may print though the mangled name spells the builtin type
    "size_t", "ssize_t", "ptrdiff_t", "intptr_t", "uintptr_t", "int8_t", "int16_t", "int32_t",
    "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "index_t", "long_index_t",
})  # fmt: skip
_IDENT = lazy_re(r"[a-z_][a-z0-9_]*")
_AGREE_CACHE: dict[tuple[str, str], bool] = {}


def _agree(name: str, raw: str) -> bool:
    """Whether a record's name is its raw name's: a part of it, or its demangled form (every
    identifier of the name, but C++ keywords and builtin types, found in the raw name).
    Cached."""
    key = (name, raw)
    hit = _AGREE_CACHE.get(key)
    if hit is None:
        n = name[:4096].casefold()
        r = raw[:8192].casefold()
        hit = n in r
        if not hit:
            hit = True
            for w in _IDENT.findall(n):
                if len(w) >= 3 and w not in _CXX_WORDS and w not in r:
                    hit = False
                    break
        if len(_AGREE_CACHE) < 4096 and len(name) + len(raw) <= CACHED_CHARS:
            _AGREE_CACHE[key] = hit
    return hit


def _fits_claim(p: Any, i: int, cap: Any, of: Any, add: Add) -> None:
    t = p.timing
    if t is None:
        return
    if of.side == "candidate":
        stats = t.stats
        ptr = "/timing/stats"
    else:
        stats = t.baseline.stats if t.baseline is not None else None
        ptr = "/timing/baseline/stats"
    if stats is None:
        return
    cond = t.conditions
    timed_shape = t.shape_id or (cond.shape_id if cond is not None else None)
    if of.shape_id != timed_shape:
        # a capture that names no shape is of the timed one when the task has only that one
        task = p.task
        shapes = task.shapes if task is not None else None
        if of.shape_id is not None or (shapes is not None and len(shapes) > 1):
            return
    which = "median" if stats.median is not None else "mean"
    claimed = getattr(stats, which)
    if claimed is None:
        return
    side = of.side
    floor, worked = _per_call(cap, of.expected_kernels, lambda: _fill_limit(p, side))
    if floor is None:
        return
    stated = of.claim_tolerance if of.claim_tolerance is not None else _DEFAULT_TOLERANCE
    tol = min(stated, _MAX_TOLERANCE)
    sec = claimed * FACTOR[stats.unit]
    if sec * (1 + tol) < floor:
        if stated > tol and sec * (1 + stated) >= floor:
            # only the stated tolerance lets the claim through: it is what is wrong
            add(
                (
                    "KE1101",
                    f"/profiler/{i}/of/claim_tolerance",
                    f"claim_tolerance {stated:g} is above the {tol:g} a capture may state: the {of.side}'s "
                    f"claimed {which} {sec * 1e6:.4g} us is {floor / sec:.3g}x below its profiled kernel time "
                    f"per call {floor * 1e6:.4g} us",
                )
            )
        elif worked is not None and sec * (1 + tol) >= (_per_call(cap, of.expected_kernels, None)[0] or 0.0):
            # only a kernel named a fill, counted as the work it is, makes the claim too short:
            # its name is what hides it
            j, took, limit = worked
            add(
                (
                    "KE1101",
                    f"/profiler/{i}/kernels/{j}/name",
                    f"`{cap.kernels[j].name[:60]}` is named a fill but takes {took * 1e6:.4g} us, above the "
                    f"{limit * 1e6:.4g} us a fill of the task's largest tensor or the cache flush takes: counted as "
                    f"work, the {of.side}'s kernel time per call is {floor * 1e6:.4g} us, above its claimed {which} "
                    f"{sec * 1e6:.4g} us (tolerance {tol:g})",
                )
            )
        else:
            add(
                (
                    "KE1101",
                    f"{ptr}/{which}",
                    f"claimed {which} {sec * 1e6:.4g} us is below the {of.side}'s profiled kernel time per call "
                    f"{floor * 1e6:.4g} us (/profiler/{i}"
                    f"{', without `of`: the capture the passed defence vouches for' if of is _AS_CANDIDATE else ''}"
                    f", tolerance {tol:g})",
                )
            )


def _kernel_time_per_call(
    cap: Any, expected: list[str] | None, fill_limit: Callable[[], float | None] | None = None
) -> float | None:
    """Seconds of kernel time in one call (the longest stream), or None when the capture
    gives no durations.

    Every kernel of the capture counts but a harness's memset, memcpy and fill (cache
    flush) kernels; the calls the capture holds are the launches of the least-launched
    expected kernel (else of the least-launched kernel), so a kernel launched fewer times
    (a one-off set-up) counts only its share. With ``fill_limit`` (called once, where
    needed: the longest a fill may take, in seconds, or None), a kernel named a fill but
    not a profiler's own memset/memcpy counts as work when it takes longer."""
    return _per_call(cap, expected, fill_limit)[0]


def _per_call(
    cap: Any, expected: list[str] | None, fill_limit: Callable[[], float | None] | None
) -> tuple[float | None, tuple[int, float, float] | None]:
    """:func:`_kernel_time_per_call`, and the first kernel named a fill that counted as work
    for its duration (its index, its duration and the limit, in seconds), or None."""
    ks = cap.kernels
    if len(ks) == 1:
        # one record (the common capture) with a duration and no fill's name: its duration
        # per launch, in the arithmetic of the loop below
        rec = ks[0]
        m = rec.metrics
        d = m.get("duration") if m else None
        if (
            d is not None
            and d.unit in FACTOR
            and not (_utility(rec.name) and (not rec.raw_name or _utility(rec.raw_name)))
        ):
            n = rec.invocations if rec.invocations is not None else 1
            return (0.0 + d.value * FACTOR[d.unit] * n / n if n > 0 else None), None
    wanted = [w.casefold() for w in expected] if expected else None
    launches: dict[str, int] = {}
    durations: dict[str, list[float]] = {}
    stream_of: dict[str, str | None] = {}
    calls_of: list[int] = []
    limit: float | None = -1.0  # not asked yet
    worked = None
    for j, rec in enumerate(cap.kernels):
        m = rec.metrics
        d = m.get("duration") if m else None
        if d is None or d.unit not in FACTOR:
            continue
        if (
            _utility(rec.name)
            and (not rec.raw_name or _utility(rec.raw_name))
            and not (wanted is not None and _named(rec.name, wanted))
        ):
            # a harness's flush or fill (by both names), unless it is a kernel the capture
            # expects, or one too slow to be a fill (a profiler's own memset/memcpy is one)
            if fill_limit is None or _tool_fill(rec.name):
                continue
            if limit is not None and limit < 0:
                limit = fill_limit()
            sec = d.value * FACTOR[d.unit]
            if limit is None or sec <= limit:
                continue
            if worked is None:
                worked = (j, sec, limit)
        n = rec.invocations if rec.invocations is not None else 1
        if n <= 0:
            continue
        name = rec.name
        launches[name] = launches.get(name, 0) + n
        durations.setdefault(name, []).append(d.value * FACTOR[d.unit])
        stream_of.setdefault(name, rec.stream)
    if not launches:
        return None, None
    if wanted is not None:
        for name, n in launches.items():
            folded = name.casefold()
            for w in wanted:
                if w in folded:
                    calls_of.append(n)
                    break
    calls = min(calls_of) if calls_of else min(launches.values())
    per_stream: dict[str | None, float] = {}
    for name, ds in durations.items():
        ds.sort()
        k = len(ds)
        med = ds[k // 2] if k % 2 else (ds[k // 2 - 1] + ds[k // 2]) / 2
        s = stream_of[name]
        per_stream[s] = per_stream.get(s, 0.0) + med * launches[name] / calls
    return max(per_stream.values()), worked
