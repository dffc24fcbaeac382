"""KE6xx: achieved rates within what the device can do."""

from __future__ import annotations

import re
from functools import lru_cache
from math import prod as _prod
from typing import Any

from ..devices import _arch_id, _mig, _name_candidates, all_devices, arch_agrees, device
from ._common import CACHED_CHARS as _CACHED_CHARS
from ._common import SLACK as _SLACK
from ._common import lazy_re
from ._context import Add, Ctx
from ._engine import declare
from ._tables import _peak_cache, device_peaks, dtype_class, peak_flops_for
from ._units import FACTOR as _FACTOR
from .profile import _kernel_time_per_call, _utility
from .serving import narrow_weights

declare(
    "KE601",
    "error",
    "achieved FLOP/s within the device peak",
    "check the FLOP count, the time unit and the device; a result above the peak is a measurement error or a cheat",
    "Where the work (`task.work.flops`, or the timed shape's) and the device are known, FLOPs / median time MUST NOT exceed the device's peak FLOP/s for the precision the work runs in (times the device count), with 5% slack; a block without a median is checked on its mean. That precision is the operand tensors' dtypes where the shapes list tensors (not masks, indices, positions, lengths, offsets or biases, nor tensors under 1% of the largest one's elements), else the task's dtype labels; a dtype the table does not know never raises the peak above the known ones (only a sub-byte integer such as int4, which the table has no figure for, allows the device's highest). The peak comes from the shipped table (docs/peaks.md), else from `hardware.peak_flop_rate`; a device that records fewer SMs/CUs (`hardware.compute_units`) than the table's model has (a partition, a MIG slice) is held to that share of the peak. "
    "A profiler capture's kernel records and its `summary` (profile-only packets too) MUST NOT state a canonical "
    "`achieved_flop_rate`, nor any metric in a FLOP/s unit whatever its name (`tflops`), above that peak "
    "(for the task's precisions, labels and tensors, the fastest of them; the device's highest where none is known; 5% slack; "
    "a summary x the device count; a capture of a cost-model tool such as XProf, whose FLOPs are the compiler's, is "
    "not held on a TPU and is held to the device's highest peak in any precision elsewhere), nor a compute percentage "
    "(`sm_throughput`, `tensor_pipe_utilization`, `valu_utilization`, `achieved_occupancy`) above 101 %; the finding "
    "points at `/profiler/i/kernels/j/metrics/<name>` or `/profiler/i/summary/<name>`. "
    "A capture clearly of one task shape's kernel (`of.shape_id` naming a shape with work, or no "
    "shape named on a task of one shape; a single kernel name in the capture, or "
    "`of.expected_kernels` matching its records; one stream; not `of.side: other`) MUST NOT "
    "give that shape's FLOPs over its kernel time per call (as KE1101 reads it) above the same "
    "peak (x the device count, 5% slack), profile-only packets too; the finding points at "
    "`/profiler/i/kernels/j/metrics/duration`. "
    "Where neither the timed shape nor the task states work, a timed shape (named by "
    "`timing.shape_id`, else the only one) whose dims are a bare GEMM's (`m`, `n`, `k`, at most "
    "a `batch` and a `seed`), of an operator unnamed or GEMM-like, does at least 2 x batch x m x "
    "n x k FLOP: over the median (else the mean) that MUST NOT exceed twice the device's highest "
    "peak in any precision (structured sparsity), x its count, 5% slack; the finding points at "
    "the median (mean).",
)
declare(
    "KE602",
    "error",
    "achieved bandwidth within the device peak",
    "check the byte count and the time unit; flush caches between repeats (cache_policy: flushed)",
    "Where the bytes moved (`task.work.bytes`) and the device are known, bytes / median time (the mean when there is no median) MUST NOT exceed the device's peak memory bandwidth (5% slack), unless the timing says caches were warm (then KE603 warns instead): `timing.conditions.cache.mode` where recorded (not `unknown`) decides, so a flat `cache_policy: warm` beside conditions that say flushed, rotating or cold_start is held to the peak. "
    "A profiler capture's kernel records and its `summary` (profile-only packets too) MUST NOT state a canonical "
    "`dram_bandwidth` above the device's peak memory bandwidth (5% slack; a summary x the device count; device-memory "
    "traffic, so warm caches are no excuse; not a capture of a cost-model tool such as XProf, whose bytes count "
    "on-chip traffic), nor a `memory_throughput` or `l2_hit_rate` above 101 %; the finding points "
    "at `/profiler/i/kernels/j/metrics/<name>` or `/profiler/i/summary/<name>`. Device-memory "
    "reads and writes stated apart (`dram_read_bandwidth`, `dram_write_bandwidth`, "
    "`dram__bytes_read.sum.per_second`, `dram__bytes_write.sum.per_second`, "
    "`dram_read_throughput`...; not L1, L2, shared or global-load figures) MUST each be within "
    "that peak, and the sum of a record's reads and writes (the largest figure of each "
    "direction) too, at `/profiler/i/kernels/j/metrics` (`/profiler/i/summary`). Likewise a capture by a tool that flushes the "
    "caches (ncu, Nsight Compute) clearly of one task shape's kernel (as for KE601) MUST NOT give "
    "that shape's bytes over its kernel time per call above the peak memory bandwidth (x the "
    "device count, 5% slack; not judged where the timing says caches were warm), at "
    "`/profiler/i/kernels/j/metrics/duration`.",
)
declare(
    "KE603",
    "warning",
    "bandwidth above DRAM peak only from warm caches",
    "time with flushed caches to make a memory-bandwidth claim",
    "With warm caches (`timing.conditions.cache.mode`, else `cache_policy`), bytes / time above the DRAM peak can come from caches; it is flagged, not rejected.",
)
declare(
    "KE604",
    "warning",
    "physical limits can be checked",
    "name a device from the peak table, or record hardware.peak_flop_rate / peak_bandwidth",
    "Where work is recorded, the device SHOULD be one the peak table knows, or the packet SHOULD record the device peaks, so that impossible results can be caught.",
)
declare(
    "KE605",
    "error",
    "FLOPs follow from the shapes and the operator",
    "count 2 FLOPs per multiply-add: a GEMM of m x k by k x n is 2*m*n*k (times the batch)",
    "Where the operator and a shape's dims (or tensors) determine the work, the stated FLOPs "
    "(`task.shapes[].work.flops`, and `task.work.flops` for the timed shape) MUST be within 2x "
    "either way of it: GEMM-like operators (gemm, matmul, mm, bmm, addmm, linear, scaled_mm; "
    "not grouped or sparse ones) 2 x batch x m x n x k, from dims `m`, `n`, `k` (and `batch`) "
    "or from two input tensors (..., m, k) and (..., k, n) or (n, k); attention (not decode "
    "or backward) 4 x batch x heads x q_len x kv_len x head_dim, allowing 1/4 of it for a "
    "causal mask; 2-D convolution 2 x n x k x p x q x c x r x s / groups from dims. Whatever "
    "the operator is called, a shape whose tensors of two or more dims are exactly two operands "
    "that contract ((..., m, k) by (k, n) or (n, k)) and an output (..., m, n), in that order, "
    "MUST NOT state more than 2x their 2 x batch x m x n x k (an MLP, fused or named otherwise, "
    "lists its other weights), unless the operator's name says the tensors are contracted more "
    "than once (backward, training step, loop, recurrent). Where the count is exact the upper "
    "bound is tighter: a plain GEMM (its name only a GEMM word, library, dtype, layout, tile or "
    "elementwise-epilogue words; dims only m, n, k and batch) MUST NOT state more than 1.1 x "
    "2 x batch x m x n x k plus 32 FLOP per output; an attention whose name says causal (or "
    "dims `causal`/`is_causal` 1) MUST NOT state more than 1.5x its causal count, full x "
    "(1 - min(q_len, kv_len) / (2 max(q_len, kv_len))): half of a square score matrix; any "
    "other (not said to be causal) plain attention core (its name only attention, library, "
    "dtype, layout or forward words, no projection, module or block word; its dims only "
    "batch, heads, kv heads, head_dim, lengths and a causal flag) MUST NOT state more than "
    "1.25x 4 x batch x heads x q_len x kv_len x head_dim (the softmax's few FLOP per score "
    "fit in that; a GQA count uses the query heads). A GEMM-like shape's tensors named as its "
    "operands and output (A, B, C, D; a, b, c, d, lhs, rhs, mat1, mat2, out, output) of 2 or 3 "
    "dims and an unpacked precision (fp8 or wider) MUST hold the dims' problem: A's last two "
    "extents m and k, B's k and n, C's m and n (either order, padding may make them larger, "
    "never smaller), and a 3-D A or C at least `batch` matrices; the finding points at "
    "`/task/shapes/i/tensors/j/shape`. A streaming operator's shape (as for KE608) whose dims "
    "name its rows and cols as a pair (`rows`/`cols`, `m`/`n`, `tokens`/`hidden`...) MUST NOT "
    "list an operand tensor (fp8 or wider; not a mask or index) of two or more dims whose last "
    "extent is the cols and whose leading extents hold another number of rows; the finding "
    "points at `/task/shapes/i/dims`.",
)
declare(
    "KE606",
    "error",
    "dtype labels match the tensors",
    "list in /task/dtypes the precisions the tensors really have",
    "Where `task.dtypes` and shape tensors are both given, a label MUST NOT name a precision "
    "faster than every tensor's (fp8 labels on bf16 tensors raise the peak the work is checked "
    "against; tf32 counts as present with fp32 tensors; mxfp8, nvfp4, mxfp4, mxfp6 are fp8, "
    "fp4, fp6), and no operand tensor may have a precision faster than every label (a mask, "
    "index, position, length, offset or bias tensor is not an operand: a uint8 padding mask "
    "beside bf16 labels is not flagged). A served model (`task.serving.model`) whose name says "
    "its weights are narrower than 16 bits (FP8, E4M3, NVFP4/MXFP4/FP4, FP6, INT8, W8A8, "
    "INT4, AWQ, GPTQ, W4A16, NF4, 4bit/8bit, bnb, EXL2, Marlin; not GGUF, nor a setting such "
    "as `kv_cache_dtype`) MUST NOT have `task.dtypes` or `timing.conditions.dtypes` that are "
    "all 16-bit or wider (bf16, fp16, fp32): the precision recorded is not the one that ran; "
    "the finding points at the list. Likewise a `quantization` (`quantize`, `quant_method`) "
    "setting naming such a format (fp8, int8, AWQ, GPTQ, bitsandbytes...) MUST NOT stand in "
    "`task.serving.settings` beside such dtypes (at `/task/serving/settings/<key>`), nor in "
    "the baseline's settings beside its conditions' dtypes, else the task's (at "
    "`/timing/baseline/settings/<key>`). Outside serving, where `task.dtypes` are given, no "
    "dtype narrower than every one the task names (labels and tensors) may be named as a "
    "token (`e4m3`, `e5m2`, `fp8`, `f8`, `int8`, `i8`, `fp4`, `nvfp4`, `mxfp4`, `int4`, "
    "`w4a16`...; whole tokens, not `uint8` nor a hex id) by a candidate capture's kernel "
    "names or raw names, its `of.expected_kernels`, or a `compile.flags` entry (not one "
    "that disables it or only enables support for it); the finding points at that name or "
    "flag.",
)
declare(
    "KE607",
    "error",
    "a declared peak agrees with the device table",
    "drop /hardware/peak_flop_rate and /hardware/peak_bandwidth, or record the datasheet figures for the task's precision",
    "The device table's figures bound a device (KE601, KE602), never the packet's own: where the "
    "table knows the device (or its arch), `hardware.peak_flop_rate` MUST NOT exceed the table's "
    "highest FLOP/s for it, nor `hardware.peak_bandwidth` its memory bandwidth, with 5% slack; "
    "and each MUST be at least half of the lowest figure of the models the device can be (its "
    "table id, else its name's models agreeing with its arch, else its arch's; FLOP/s for the "
    "lowest of the task's dtype labels, not judged without one; 5% slack): an understated peak "
    "inflates the speed-of-light fraction. That floor is the share of a partition or MIG slice "
    "(`compute_units` below the whole, or `partitions`; a MIG name without a count is not "
    "judged) and, for FLOP/s, falls with an SM clock recorded below 1.2 GHz (a low lock). "
    "A CPU the table does not know MUST NOT declare more than its cores (`compute_units`) x its "
    "recorded clock x the most FLOP a core retires per cycle in the task's fastest dtype (32 "
    "fp64, 64 fp32, 2048 16-bit, 4096 8-bit), x 1.5 for turbo clocks.",
)


#: turbo clocks above the one recorded
_CPU_SLACK = 1.5
declare(
    "KE608",
    "error",
    "bytes moved cover the tensors",
    "count every operand read and every output written once: the bytes of the shape's tensors",
    "Where an operator reads all of its inputs and writes all of its outputs (GEMM-like, "
    "prefill attention, convolution, row-wise and element-wise operators such as norms, "
    "softmax and activations; not paged, decode, cache, sparse, gather, scatter, embedding, "
    "top-k, grouped or routed ones) and every tensor of a shape has a known dtype, the stated "
    "bytes (`task.shapes[].work.bytes`) MUST be at least half the bytes of those tensors: "
    "fewer bytes than the data make a rate that is too fast look possible. For an operator that "
    "only streams its tensors (norms, softmax, activations, element-wise; not GEMM, attention, "
    "convolution, nor a backward pass or loop), the stated bytes MUST be at least 98% of its "
    "operand tensors' bytes (each read or written once; masks, indices and biases aside; not "
    "an operator named causal, masked, windowed, broadcast, strided, padded, chunked or "
    "partial), and, with two or more tensors listed, MUST NOT exceed twice the tensors' bytes "
    "plus 4 bytes per element of the largest one.",
)

#: :func:`device_peaks` by (device, arch) (short names only)
_PEAKS_CACHE: dict[tuple[str | None, str | None, str | None], Any] = {}
_UNSET: Any = object()


#: tensor-name words of tensors that are not contracted operands: masks, indices, positions,
#: lengths, offsets, biases; their dtype (a uint8 mask, int32 ids) is not a compute precision
_NOT_OPERAND_WORDS = frozenset({
    "mask", "masks", "ids", "id", "idx", "indices", "index", "indptr", "offsets", "offset",
    "lengths", "length", "lens", "seqlens", "seqlen", "seqused", "positions", "position", "pos",
    "bias", "alibi", "table", "tables", "mapping", "slots", "slot", "labels", "targets",
})  # fmt: skip
#: whole names (no separators) that end in one of those words: `attnmask`, `cuseqlens`
_NOT_OPERAND_TAIL = lazy_re(
    r"(mask|masks|ids|idx|indices|indptr|offsets|lengths|lens|seqlens|positions|bias)$"
)
_NOT_OPERAND_CACHE: dict[str, bool] = {}
#: sub-byte integer spellings the peak table has no figure for (an int4 tensor-core GEMM)
_SUBBYTE_INT = lazy_re(r"^(torch\.)?(u?int[1-4]|[iusb][1-4]|int4b.*|quint4.*|uint4.*|int4.*|binary)$")


def _not_operand(name: str) -> bool:
    """Whether a tensor's name says it is a mask, an index, a position, a length or a bias:
    not a contracted operand (cached: a batch repeats a few names)."""
    hit = _NOT_OPERAND_CACHE.get(name)
    if hit is None:
        low = name.casefold()
        hit = bool(set(_OP_WORD.findall(low)) & _NOT_OPERAND_WORDS) or bool(
            _NOT_OPERAND_TAIL.search(low.rstrip("0123456789_"))
        )
        if len(_NOT_OPERAND_CACHE) < 4096 and len(name) <= _CACHED_CHARS:
            _NOT_OPERAND_CACHE[name] = hit
    return hit


def _compute_classes(shapes: Any) -> tuple[str, ...] | None:
    """The precision classes the work runs in, from the operand tensors of ``shapes`` (the
    timed one, else all): tensors not named as masks, indices or biases, of at least 1% of
    the largest one's elements (a scale does not carry the work). () for a sub-byte integer
    operand the table has no figure for (the device's highest peak), None where no operand of
    a known precision is listed (the dtype labels decide)."""
    classes: set[str] = set()
    for sh in shapes:
        tns = sh.tensors
        if not tns:
            continue
        ops = []
        for tn in tns:
            skip = _NOT_OPERAND_CACHE.get(tn.name)
            if skip is None:
                skip = _not_operand(tn.name)
            if not skip:
                ops.append(tn)
        one = None
        for tn in ops:
            c = _ONE_CLASS[tn.dtype]
            if c is None or (one is not None and c is not one):
                break
            one = c
        else:
            if one is not None:
                classes.add(one[0])  # the operands in one class: no sizes needed
            continue
        largest = max(_prod(tn.shape) for tn in ops)
        for tn in ops:
            if _prod(tn.shape) * 100 < largest:
                continue  # a scale does not carry the work
            c = _ONE_CLASS[tn.dtype]
            if c is not None:
                classes.add(c[0])
            elif _SUBBYTE_INT.match(tn.dtype.strip().casefold()):
                return ()  # an int4 operand: the table cannot bound it
            # other unknown spellings (int32 outputs, ...) are not faster than a known one
    if not classes:
        return None  # no operand of a known precision: the labels decide
    return tuple(sorted(classes))


class _OneClass(dict):  # type: ignore[type-arg]
    """dtype spelling -> its one-class tuple, for :func:`check`'s common case (bounded)."""

    def __missing__(self, d: str) -> tuple[str, ...] | None:
        c = dtype_class(d) if len(d) <= 64 else None
        hit = (c,) if c is not None else None  # an unknown one: the slow path decides
        if len(self) < 4096 and len(d) <= _CACHED_CHARS:
            self[d] = hit
        return hit


_ONE_CLASS = _OneClass()


def _has_operand(shapes: Any) -> bool:
    """Whether some listed tensor is an operand by name (not a mask, index, bias...)."""
    for sh in shapes:
        if sh.tensors:
            for tn in sh.tensors:
                if not _not_operand(tn.name):
                    return True
    return False


def _label_classes(dtypes: tuple[str, ...]) -> tuple[str, ...]:
    """The precision classes of the dtype labels: an unknown label never raises the peak
    above the known ones (() where none is known, or one names a sub-byte integer)."""
    classes: set[str] = set()
    for d in dtypes:
        c = dtype_class(d) if len(d) <= 64 else None
        if c is not None:
            classes.add(c)
        elif _SUBBYTE_INT.match(d.strip().casefold()):
            return ()
    return tuple(sorted(classes))


_CLASSES_CACHE: dict[tuple[str, ...], tuple[str, ...]] = {}


def _peak_source(peaks: Any, field: str) -> str:
    """Where the peak checked against comes from: the peak table, else the packet's own."""
    return f"{peaks.key} peak" if peaks is not None else f"the recorded hardware.{field}"


def check(p: Any, ctx: Ctx, add: Add) -> None:
    task = p.task
    if p.profiler:
        _capture_metrics(p, add)
        if task is not None and (task.shapes or task.work is not None):
            _capture_work(p, task, add)
    if task is not None:
        if task.serving is not None:
            _served_precision(p, task, task.serving, add)
        elif (
            task.dtypes
            and (p.profiler or (p.compile is not None and p.compile.flags))
            and not _known_clean(p)
        ):
            # (a packet whose names and flags are all known to name no narrow dtype has
            # nothing _narrow_kernels could find: the honest case skips it)
            _narrow_kernels(p, task, add)
    spelled = _work_figures(p, task, add) if task is not None and task.shapes else None
    h = p.hardware
    if h is not None and (h.peak_flop_rate is not None or h.peak_bandwidth is not None):
        _declared_peaks(h, p.task, add)
    t = p.timing
    if t is None:
        return
    # KE601-KE604: the achieved FLOP/s and B/s: the work of the timed call (its shape's, else the task's)
    # over the median time; a block without one is checked on its mean: some call was at
    # least as fast as the mean, so a rate above the peak on the mean is above it on that call
    st = t.stats
    task = p.task
    if st is None or task is None:
        return
    w = None
    timed = None
    sid = t.shape_id
    if sid and task.shapes:
        for sh in task.shapes:
            if sh.id == sid and sh.work is not None:
                w = sh.work
                timed = sh
                break
    if w is None:
        w = task.work
        if w is None:
            if task.shapes:
                _inferred_gemm(p, t, st, task, add)
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
    peaks = None
    if h is not None:
        peaks = _PEAKS_CACHE.get((h.device, h.arch, h.device_id), _UNSET)  # _hw_peaks' cache first
        if peaks is _UNSET:
            peaks = _hw_peaks(h)
    count = h.count if h is not None and h.count else 1
    if peaks is None and not (
        h is not None and (h.peak_flop_rate is not None or h.peak_bandwidth is not None)
    ):
        dev = h.device if h is not None else "unknown device"
        add(("KE604", "/hardware/device", f"no peak figures for `{dev}`: achieved rates cannot be checked"))
        return
    if fl is not None:
        share = ""
        if peaks is not None:
            # the precision the work runs in: the operand tensors' (not a mask's or an
            # index's), else the known dtype labels'; an unknown label never lifts the peak
            if not spelled:
                classes = None
            elif len(spelled) == 1:
                # every tensor in one dtype (the common case): the operands' unless the
                # tensors are only masks or indices
                classes = _ONE_CLASS[next(iter(spelled))]
                tns = task.shapes[0].tensors
                if classes is None or not (
                    (tns and _NOT_OPERAND_CACHE.get(tns[0].name) is False) or _has_operand(task.shapes)
                ):
                    classes = _compute_classes(task.shapes)
            else:
                classes = _compute_classes((timed,) if timed is not None and timed.tensors else task.shapes)
            from_tensors = classes is not None
            if classes is None:
                dtypes = tuple(task.dtypes) if task.dtypes else ()
                classes = _CLASSES_CACHE.get(dtypes)
                if classes is None:
                    classes = _label_classes(dtypes)
                    if len(_CLASSES_CACHE) < 4096 and sum(map(len, dtypes)) <= _CACHED_CHARS:
                        _CLASSES_CACHE[dtypes] = classes
            peak = _peak_cache.get((peaks.key, classes))
            if peak is None:
                peak = peak_flops_for(peaks, classes)
            units = h.compute_units if h is not None else None
            if units and peak:
                whole = _whole_units(peaks.key)
                if whole and units < whole:
                    peak = peak * units / whole  # a partition or MIG slice: its share of the units
                    share = f" for {units} of its {whole} SMs/CUs"
        else:
            from_tensors = False
            rec = h.peak_flop_rate
            peak = rec.value * _FACTOR[rec.unit] if rec is not None else None
        if peak:
            peak *= count
            if fl > peak * _SLACK:
                src = _peak_source(peaks, "peak_flop_rate")
                why = ""
                if from_tensors and peaks is not None and classes is not None:
                    # say so where the labels alone would have allowed more
                    labels = tuple(task.dtypes) if task.dtypes else ()
                    labelled = peak_flops_for(peaks, labels)
                    if labelled > peak_flops_for(peaks, classes) * (1 + 1e-9):
                        why = (
                            f" for its {'/'.join(classes)} operand tensors (the dtype labels "
                            f"{', '.join(labels) or 'absent'} would allow {labelled * count / 1e12:.4g})"
                        )
                add(
                    (
                        "KE601",
                        _typical_ptr(t),
                        f"achieved {fl / 1e12:.4g} TFLOP/s exceeds {src}{share} of {peak / 1e12:.4g} TFLOP/s{why}",
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
                # the structured conditions (schema 0.2) win over the flat field: a flat
                # `warm` beside conditions that say flushed (rotating, cold start) is no excuse
                cond = t.conditions
                mode = cond.cache.mode if cond is not None and cond.cache is not None else None
                if mode == "warm" or (t.cache_policy == "warm" and mode in (None, "unknown")):
                    add(
                        (
                            "KE603",
                            _typical_ptr(t),
                            f"achieved {by / 1e9:.4g} GB/s exceeds {src} of {bw / 1e9:.4g} GB/s with warm caches",
                        )
                    )
                else:
                    why = (
                        f" (timing.cache_policy says warm, timing.conditions.cache.mode says {mode})"
                        if t.cache_policy == "warm"
                        else ""
                    )
                    add(
                        (
                            "KE602",
                            _typical_ptr(t),
                            f"achieved {by / 1e9:.4g} GB/s exceeds {src} of {bw / 1e9:.4g} GB/s{why}",
                        )
                    )


#: dims keys of a bare GEMM problem (kernelbot's tasks add the input `seed`)
_BARE_GEMM_DIMS = frozenset({"m", "n", "k", "M", "N", "K", "batch", "b", "batch_size", "bs", "seed"})
#: structured (2:4) sparsity: up to twice the dense peak in 2mnk-per-time terms
_SPARSE_GAIN = 2.0


def _inferred_gemm(p: Any, t: Any, st: Any, task: Any, add: Add) -> None:
    """KE601 without a work figure: the timed shape (named by ``timing.shape_id``, else the
    only one) whose dims are a bare GEMM's (m, n, k; batch and a seed at most), of an operator
    unnamed or GEMM-like, does at least 2 x batch x m x n x k FLOP; over the median (else the
    mean) that MUST NOT exceed twice the device's highest peak in any precision (structured
    sparsity counted), x its count, 5% slack: too fast whatever the dtype."""
    op = task.operator
    if op is not None and (len(op) > _CACHED_CHARS or _op_kind(op) not in ("gemm", "dims")):
        return
    sid = t.shape_id
    sh = None
    if sid:
        for x in task.shapes:
            if x.id == sid:
                sh = x
                break
    elif len(task.shapes) == 1:
        sh = task.shapes[0]
    if sh is None or not sh.dims or not _BARE_GEMM_DIMS.issuperset(sh.dims):
        return
    g = sh.dims.get
    m, n, k = g("m") or g("M"), g("n") or g("N"), g("k") or g("K")
    if not (m and n and k and m > 0 and n > 0 and k > 0):
        return
    typical = st.median if st.median is not None else st.mean
    f = _FACTOR.get(st.unit)
    if typical is None or f is None or typical <= 0:
        return
    b = g("batch") or g("b") or g("batch_size") or g("bs") or 1
    flops = 2.0 * (b if b > 0 else 1) * m * n * k
    rate = flops / (typical * f)
    if rate < 1e12:
        return  # under 1 TFLOP/s: within any accelerator's peak, the table not asked
    h = p.hardware
    if h is None:
        return
    top, src = _device_top(h)
    if not top:
        return
    top *= _SPARSE_GAIN * (h.count or 1)
    if rate > top * _SLACK:
        add(
            (
                "KE601",
                _typical_ptr(t),
                f"dims m={m}, n={n}, k={k}{f', batch={b}' if b > 1 else ''} are at least {flops:.4g} FLOP: "
                f"{rate / 1e12:.4g} TFLOP/s over the timed {typical:g} {st.unit}, above twice "
                f"{src} ({top / 1e12:.4g} TFLOP/s with structured sparsity)",
            )
        )


def _hw_peaks(h: Any) -> Any:
    """The table's peaks for the device that ran: a table id in ``device_id`` names the
    model (KE806 holds it to the name's models); else the name, else the arch (None where
    the table knows none). From a dict first: a batch repeats a few devices."""
    dev_arch = (h.device, h.arch, h.device_id)
    peaks = _PEAKS_CACHE.get(dev_arch, _UNSET)
    if peaks is _UNSET:
        known = h.device_id is not None and device(h.device_id) is not None
        peaks = (device_peaks(h.device_id) if known else None) or device_peaks(h.device, h.arch)
        if (
            len(_PEAKS_CACHE) < 4096
            and len(h.device or "") + len(h.arch or "") + len(h.device_id or "") <= _CACHED_CHARS
        ):
            _PEAKS_CACHE[dev_arch] = peaks
    return peaks


@lru_cache(maxsize=256)
def _whole_units(key: str) -> int | None:
    """The SM/CU count of the one table model ``key`` names (None for an upper bound over
    several models, or a model without one)."""
    e = device(key)
    return e.compute_units if e is not None else None


def _typical_ptr(t: Any) -> str:
    """Where the time the achieved rates rest on is: the median, else the mean."""
    return "/timing/stats/median" if t.stats.median is not None else "/timing/stats/mean"


# ---------------------------------------------------------------- KE601/KE602: captures

#: canonical capture metrics in % of a maximum (of the peak, of the resident warps, of the
#: requests), by the rule that holds them: compute and occupancy (KE601), memory (KE602)
_PCT_METRICS = {
    "sm_throughput": "KE601", "tensor_pipe_utilization": "KE601", "valu_utilization": "KE601",
    "achieved_occupancy": "KE601", "memory_throughput": "KE602", "l2_hit_rate": "KE602",
}  # fmt: skip
#: ... at most 100, with this much over it for the profiler's rounding
_PCT_MOST = 101.0
#: canonical rates a kernel record can state, held to the device's peaks
_RATE_METRICS = {
    "achieved_flop_rate": "KE601", "dram_bandwidth": "KE602",
    "dram_read_bandwidth": "KE602", "dram_write_bandwidth": "KE602",
}  # fmt: skip
#: device-memory read and write rates: each within the peak, and so their sum (one bus)
_SPLIT_RATES = {"dram_read_bandwidth": 0, "dram_write_bandwidth": 1}
_CAPTURE_METRICS = {**_PCT_METRICS, **_RATE_METRICS}
#: profilers whose FLOPs and bytes are a compiler's cost model over an op's time (XProf's
#: HLO `flops` and `bytes_accessed`, on-chip traffic included), not counters: their rates
#: are not held to the device's peaks
_COST_MODEL_TOOL = lazy_re(r"xprof|tensorboard|xla|jax|tpu", re.IGNORECASE)


#: a profiler's own metric names (Nsight Compute's `unit__counter.rollup.submetric`) read
#: as the canonical metric they measure: device-memory bytes per second, and percentages of
#: a peak or hit rates (memory units' as memory throughput, the rest as compute)
_RAW_DRAM_RATE = lazy_re(
    r"^(?:dram|fbpa|hbm|gpu__dram)__bytes(_read|_write)?\.(?:sum|avg|max)\.per_second$", re.IGNORECASE
)
#: a device-memory read or write rate under a plain name (`dram_read_throughput`, nvprof's;
#: `hbm_write_bw`): not L1/L2/shared traffic, which may exceed the DRAM peak
_SPLIT_DRAM_RATE = lazy_re(
    r"^(?:dram|hbm|fbpa|gpu_dram)_*(read|write|rd|wr|load|store)_*(?:bandwidth|throughput|bw|rate)$",
    re.IGNORECASE,
)
_RAW_PCT = lazy_re(r"(?:pct_of_peak|\.pct$|_pct$|hit_rate)", re.IGNORECASE)
_RAW_MEMORY_UNIT = lazy_re(r"^(?:dram|gpu__dram|fbpa|hbm|lts|l1tex|gpu__compute_memory|mem)", re.IGNORECASE)
#: :func:`_raw_metric` by name, seeded with the canonical names (each its own): one lookup
#: reads any metric's name
_RAW_METRIC_CACHE: dict[str, str | None] = {name: name for name in _CAPTURE_METRICS}


def _raw_metric(name: str) -> str | None:
    """The canonical metric a profiler's own metric name measures (``dram__bytes.sum.per_second``
    is ``dram_bandwidth``; ``sm__throughput.avg.pct_of_peak_sustained_elapsed`` a percentage
    of a compute peak; a canonical name is its own), None for one not held to a limit
    (cached, bounded)."""
    hit = _RAW_METRIC_CACHE.get(name, _UNSET)
    if hit is not _UNSET:
        return hit  # type: ignore[no-any-return]
    canon: str | None = None
    if "__" in name and len(name) <= _CACHED_CHARS:
        if hit := _RAW_DRAM_RATE.match(name):
            way = hit.group(1)
            canon = (
                "dram_bandwidth"
                if not way
                else "dram_read_bandwidth"
                if way.casefold() == "_read"
                else "dram_write_bandwidth"
            )
        elif _RAW_PCT.search(name):
            canon = "memory_throughput" if _RAW_MEMORY_UNIT.match(name) else "sm_throughput"
    elif len(name) <= _CACHED_CHARS and (hit := _SPLIT_DRAM_RATE.match(name)):
        canon = (
            "dram_read_bandwidth"
            if hit.group(1).casefold() in ("read", "rd", "load")
            else "dram_write_bandwidth"
        )
    if len(_RAW_METRIC_CACHE) < 4096 and len(name) <= _CACHED_CHARS:
        _RAW_METRIC_CACHE[name] = canon
    return canon


#: FLOP-rate units: a metric in one, whatever its name (`tflops`), is a FLOP/s figure
_FLOP_RATE_UNITS = frozenset({"FLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s"})


def _tpu(h: Any) -> bool:
    """Whether the device is a TPU (XProf's home: its cost-model rates are the norm there)."""
    if h is None:
        return False
    return h.vendor == "google" or "tpu" in f"{h.device} {h.arch or ''}".casefold()


def _capture_metrics(p: Any, add: Add) -> None:
    """KE601/KE602 on the profiler's own figures: a kernel record's (and the capture's
    ``summary``'s) canonical percentages (of peak compute or memory throughput, of occupancy,
    a hit rate) at most 100, its `achieved_flop_rate` (or any metric in a FLOP/s unit) and
    `dram_bandwidth` within the device's peaks (5% slack); the first record over per capture
    and metric. A cost-model tool's (XProf's) rates are not held on a TPU; elsewhere its
    FLOP/s are held to the device's highest peak (its bytes count on-chip traffic)."""
    limits: Any = _UNSET
    for i, cap in enumerate(p.profiler):
        ks = cap.kernels
        summ = cap.summary
        if not ks and not summ:
            continue
        # whether this capture's rates are held: 1 all of them, 2 FLOP/s only and to the
        # device's highest peak (a cost model off a TPU), 0 none
        mode: int | None = None
        seen: set[str] = set()  # metrics already reported for this capture
        records: Any = enumerate(ks) if ks else ()
        if summ:
            records = (*records, (-1, summ))  # the summary: a dict, not a record
        for j, rec in records:
            m = rec if j < 0 else rec.metrics
            if not m:
                continue
            rw: list[float] | None = None  # this record's device-memory read and write rates
            for name, q in m.items():
                canon = _RAW_METRIC_CACHE.get(name, _UNSET)
                if canon is _UNSET:
                    canon = _raw_metric(name)
                if canon is None:
                    if q.unit not in _FLOP_RATE_UNITS:
                        continue
                    canon = "achieved_flop_rate"  # a FLOP/s figure under another name
                if canon in seen:
                    continue
                rule = _CAPTURE_METRICS[canon]
                msg = None
                if canon in _PCT_METRICS:
                    if q.unit == "%" and q.value > _PCT_MOST:
                        msg = f"capture metric {name} is {q.value:g} %: above 100% of the device's maximum"
                else:
                    f = _FACTOR.get(q.unit)
                    if f is None or not q.unit.endswith("/s"):
                        continue
                    if mode is None:
                        tool = cap.tool
                        if len(tool) > _CACHED_CHARS:
                            mode = 0
                        elif (_TOOL_CACHE.get(tool) or _tool_kind(tool))[0]:
                            mode = 0 if _tpu(p.hardware) else 2
                        else:
                            mode = 1
                        if mode and limits is _UNSET:
                            limits = _capture_limits(p)
                        if limits is None:
                            mode = 0
                    if not mode:
                        continue
                    fl, bw, src = limits
                    if mode == 2:
                        if canon != "achieved_flop_rate":
                            continue
                        fl, src = _device_top(p.hardware)
                    if j < 0:
                        # a summary can add up the devices' work
                        n = p.hardware.count or 1
                        fl = fl * n if fl else fl
                        bw = bw * n if bw else bw
                    v = q.value * f
                    if canon == "achieved_flop_rate":
                        if fl and v > fl * _SLACK:
                            msg = f"capture metric {name} {q.value:g} {q.unit} is above {src} {fl / 1e12:.4g} TFLOP/s"
                    elif bw and v > bw * _SLACK:
                        msg = (
                            f"capture metric {name} {q.value:g} {q.unit} is above {src} {bw / 1e9:.4g} GB/s "
                            "(device-memory traffic: caches do not raise it)"
                        )
                    elif bw and (way := _SPLIT_RATES.get(canon)) is not None:
                        if rw is None:
                            rw = [0.0, 0.0]
                        if v > rw[way]:
                            rw[way] = v  # the largest of a direction's names (one figure, two names)
                if msg is not None:
                    base = f"/profiler/{i}/summary" if j < 0 else f"/profiler/{i}/kernels/{j}/metrics"
                    add((rule, f"{base}/{name}", msg))
                    seen.add(canon)
            if rw is not None and rw[0] and rw[1] and "dram_rw" not in seen:
                # reads and writes share the device-memory bus: their sum within the peak
                bw = limits[1]
                if j < 0:
                    bw = bw * (p.hardware.count or 1)
                if rw[0] + rw[1] > bw * _SLACK:
                    base = f"/profiler/{i}/summary" if j < 0 else f"/profiler/{i}/kernels/{j}/metrics"
                    add(
                        (
                            "KE602",
                            base,
                            f"capture metrics give device-memory reads {rw[0] / 1e9:.4g} GB/s plus writes "
                            f"{rw[1] / 1e9:.4g} GB/s = {(rw[0] + rw[1]) / 1e9:.4g} GB/s, above {limits[2]} "
                            f"{bw / 1e9:.4g} GB/s (reads and writes share the memory bus)",
                        )
                    )
                    seen.add("dram_rw")


def _device_top(h: Any) -> tuple[float | None, str]:
    """The device's highest FLOP/s in any precision (its share on a partition), for a
    cost model's FLOPs, whose precision the labels may not say; (None, '') where the table
    does not know the device."""
    peaks = _hw_peaks(h)
    if peaks is None:
        return None, ""
    fl = peak_flops_for(peaks, ())
    share = ""
    units = h.compute_units
    if units and fl:
        whole = _whole_units(peaks.key)
        if whole and units < whole:
            fl = fl * units / whole
            share = f" for {units} of its {whole} SMs/CUs"
    return fl, f"the {peaks.key} highest peak (any precision){share}"


def _capture_limits(p: Any) -> tuple[float | None, float | None, str] | None:
    """The FLOP/s and B/s one kernel record may reach on the device that ran: the table's
    peaks (FLOP/s for the task's precisions, the device's highest where none is known; a
    share of it on a partition or MIG slice), else the packet's declared ones; None where
    neither is known. Cached by what they depend on (a batch repeats a few devices and
    tasks)."""
    h = p.hardware
    if h is None or len(h.device) + len(h.arch or "") > _CACHED_CHARS:
        return None
    task = p.task
    dtypes: tuple[str, ...] = ()
    tensors: tuple[str, ...] = ()
    if task is not None:
        if task.dtypes:
            dtypes = tuple(task.dtypes[:64])
        if task.shapes:
            tensors = tuple([tn.dtype for sh in task.shapes for tn in sh.tensors or ()])
    rf, rb = h.peak_flop_rate, h.peak_bandwidth
    key = (
        h.device,
        h.arch,
        h.device_id,
        h.compute_units,
        (rf.value, rf.unit) if rf is not None else None,
        (rb.value, rb.unit) if rb is not None else None,
        dtypes,
        tensors,
    )
    hit = _LIMITS_CACHE.get(key, _UNSET)
    if hit is _UNSET:
        hit = _capture_limits_of(p, h)
        chars = sum(map(len, dtypes)) + sum(map(len, tensors)) + len(h.device_id or "")
        if len(_LIMITS_CACHE) < 1024 and chars <= _CACHED_CHARS:
            _LIMITS_CACHE[key] = hit
    return hit  # type: ignore[no-any-return]


#: :func:`_capture_limits` by device, declared peaks and the task's dtypes
_LIMITS_CACHE: dict[tuple[Any, ...], Any] = {}


def _capture_limits_of(p: Any, h: Any) -> tuple[float | None, float | None, str] | None:
    peaks = _hw_peaks(h)
    if peaks is None:
        rf, rb = h.peak_flop_rate, h.peak_bandwidth
        if rf is None and rb is None:
            return None
        fl = rf.value * _FACTOR[rf.unit] if rf is not None else None
        bw = rb.value * _FACTOR[rb.unit] if rb is not None else None
        return fl, bw, "the recorded hardware peak"
    # the precisions the task names (labels and tensors, the fastest of them): none known,
    # or a sub-byte integer label, allows the device's highest
    classes: set[str] = set()
    task = p.task
    if task is not None and not (task.dtypes and not _label_classes(tuple(task.dtypes[:64]))):
        if task.dtypes:
            classes.update(_label_classes(tuple(task.dtypes[:64])))
        for sh in task.shapes or ():
            for tn in sh.tensors or ():
                c = dtype_class(tn.dtype) if len(tn.dtype) <= 64 else None
                if c is not None:
                    classes.add(c)
    fl = peak_flops_for(peaks, tuple(sorted(classes)))
    share = ""
    units = h.compute_units
    if units and fl:
        whole = _whole_units(peaks.key)
        if whole and units < whole:
            fl = fl * units / whole
            share = f" for {units} of its {whole} SMs/CUs"
    what = f" ({'/'.join(sorted(classes))})" if classes else ""
    return fl, peaks.bandwidth, f"the {peaks.key} peak{what}{share}"


#: tools that flush the caches before each profiled kernel by default (ncu's
#: `--cache-control all`): their kernel times are held to the DRAM bandwidth
_FLUSHING_TOOL = lazy_re(r"\bncu\b|nsight.?compute", re.IGNORECASE)


#: :func:`_tool_kind` by tool name (a batch repeats a few profilers)
_TOOL_CACHE: dict[str, tuple[bool, bool]] = {}


def _tool_kind(tool: str) -> tuple[bool, bool]:
    """Whether a profiler is a cost-model tool (:data:`_COST_MODEL_TOOL`) and whether it
    flushes the caches (:data:`_FLUSHING_TOOL`), cached (bounded; a long name is not held)."""
    hit = (bool(_COST_MODEL_TOOL.search(tool)), bool(_FLUSHING_TOOL.search(tool)))
    if len(_TOOL_CACHE) < 1024 and len(tool) <= _CACHED_CHARS:
        _TOOL_CACHE[tool] = hit
    return hit


def _capture_work(p: Any, task: Any, add: Add) -> None:
    """KE601/KE602 on a capture's kernel time: a capture clearly of one task shape's kernel
    (`of.shape_id` naming a shape with work, or no shape named on a task of one; one kernel
    name in the capture, or `of.expected_kernels` matching its records), on one stream,
    gives the shape's work over its kernel time per call (as KE1101 reads it): at most the
    device's peaks (x its count, 5% slack), so a profile-only packet is held to them too."""
    shapes = task.shapes
    limits: Any = _UNSET
    for i, cap in enumerate(p.profiler):
        ks = cap.kernels
        if not ks:
            continue
        of = cap.of
        if of is not None and of.side == "other":
            continue  # a capture of something else than the task's call
        sid = of.shape_id if of is not None else None
        w = None
        if sid is not None:
            for sh in shapes or ():
                if sh.id == sid:
                    w = sh.work
                    break
        elif not shapes or len(shapes) == 1:
            w = shapes[0].work if shapes else None
            if w is None:
                w = task.work
        if w is None or (w.flops is None and w.bytes is None):
            continue
        tool = cap.tool
        if len(tool) > _CACHED_CHARS:
            continue
        kind = _TOOL_CACHE.get(tool)
        if kind is None:
            kind = _tool_kind(tool)
        cost_model, flushing = kind
        if cost_model:
            continue
        # the kernel: one name in the capture (a harness's fills aside), else the expected
        # ones where the capture names its shape; one stream (the kernels' time adds up)
        expected = of.expected_kernels if of is not None and sid is not None else None
        wanted = [e.casefold() for e in expected] if expected else None
        names: set[str] = set()
        streams: set[Any] = set()
        first = None
        for j, rec in enumerate(ks):
            m = rec.metrics
            if not m or "duration" not in m:
                continue
            if _utility(rec.name) and (not rec.raw_name or _utility(rec.raw_name)):
                continue
            name = rec.name
            names.add(name)
            streams.add(rec.stream)
            if first is None:
                if wanted is None:
                    first = j
                else:
                    folded = name.casefold()
                    for e in wanted:
                        if e in folded:
                            first = j
                            break
        if first is None or len(streams) != 1 or (len(names) != 1 and wanted is None):
            continue
        sec = _kernel_time_per_call(cap, expected if len(names) != 1 else None)
        if not sec or sec <= 0:
            continue
        if limits is _UNSET:
            limits = _capture_limits(p)
        if limits is None:
            return
        fl, bw, src = limits
        h = p.hardware
        count = h.count if h.count else 1
        q = w.flops
        if q is not None and fl:
            rate = q.value * _FACTOR[q.unit] / sec
            if rate > fl * count * _SLACK:
                add(
                    (
                        "KE601",
                        f"/profiler/{i}/kernels/{first}/metrics/duration",
                        f"the capture's kernel time {sec * 1e6:.4g} us per call for {q.value:g} {q.unit} gives "
                        f"{rate / 1e12:.4g} TFLOP/s, above {src} {fl * count / 1e12:.4g} TFLOP/s",
                    )
                )
                continue
        q = w.bytes
        if q is not None and bw and flushing:
            t = p.timing
            if t is not None:
                cond = t.conditions
                mode = cond.cache.mode if cond is not None and cond.cache is not None else None
                if mode == "warm" or (t.cache_policy == "warm" and mode in (None, "unknown")):
                    continue  # measured warm: the capture may have been too
            rate = q.value * _FACTOR[q.unit] / sec
            if rate > bw * count * _SLACK:
                add(
                    (
                        "KE602",
                        f"/profiler/{i}/kernels/{first}/metrics/duration",
                        f"the capture's kernel time {sec * 1e6:.4g} us per call for {q.value:g} {q.unit} gives "
                        f"{rate / 1e9:.4g} GB/s, above {src} {bw * count / 1e9:.4g} GB/s",
                    )
                )


#: dtype spellings all 16-bit or wider (KE606 on a served model), by the list (bounded)
_WIDE_CACHE: dict[tuple[str, ...], bool] = {}
_WIDE = frozenset({"bf16", "fp16", "fp32", "tf32", "fp64"})


def _all_wide(dtypes: tuple[str, ...]) -> bool:
    hit = _WIDE_CACHE.get(dtypes)
    if hit is None:
        hit = all((dtype_class(d) if len(d) <= 64 else None) in _WIDE for d in dtypes)
        if len(_WIDE_CACHE) < 1024 and sum(map(len, dtypes)) <= _CACHED_CHARS:
            _WIDE_CACHE[dtypes] = hit
    return hit


#: serving settings that choose the weights' format (vLLM's `quantization`, TGI's `quantize`)
_QUANT_KEYS = frozenset({"quantization", "quantize", "quant_method", "quantization_method"})


#: setting keys known not to be one of :data:`_QUANT_KEYS` (casefolded): a set, so one
#: ``issuperset`` call clears a settings dict without a quantization key
_PLAIN_KEYS: set[str] = set()


def _quant_setting(settings: Any) -> tuple[str, str, str] | None:
    """(key, value, precision) of a quantization setting naming a format narrower than 16
    bits (`fp8`, `awq`, `gptq`, `bitsandbytes`...), else None."""
    if not settings or _PLAIN_KEYS.issuperset(settings):
        return None  # no key that could be a quantization setting (the common case)
    for key, v in settings.items():
        if key in _PLAIN_KEYS:
            continue
        if key.casefold() not in _QUANT_KEYS:
            if len(_PLAIN_KEYS) < 1024 and len(key) <= _CACHED_CHARS:
                _PLAIN_KEYS.add(key)
            continue
        if type(v) is not str or len(v) > 256:
            continue
        narrow = narrow_weights(v)
        if narrow is None and "bitsandbytes" in v.casefold():
            narrow = "int8/int4"
        if narrow is not None:
            return key, v, narrow
    return None


def _served_precision(p: Any, task: Any, serving: Any, add: Add) -> None:
    """KE606 on a served model: a name that says its weights are narrower than 16 bits (FP8,
    NVFP4, AWQ...), or a `quantization` setting naming such a format, beside dtype labels
    (the task's, the side's conditions') that are all 16-bit or wider: the precision
    recorded is not the one that ran."""
    t = p.timing
    cond = t.conditions if t is not None else None
    b = t.baseline if t is not None else None
    if b is not None and b.settings and (q := _quant_setting(b.settings)) is not None:
        # the baseline's own: its conditions' dtypes, else the task's it inherits
        bc = b.conditions
        dts = bc.dtypes if bc is not None and bc.dtypes else task.dtypes
        if dts and _all_wide(tuple(dts)):
            key, v, served = q
            add(
                (
                    "KE606",
                    f"/timing/baseline/settings/{key}",
                    f"baseline setting {key} `{v}` serves {served} weights, but its dtypes ({', '.join(dts)}) "
                    "are all 16-bit or wider: the precision recorded is not the one that ran",
                )
            )
    model = serving.model
    narrow = _narrow_model(model) if model else None
    q = _quant_setting(serving.settings)
    if narrow is None and q is None:
        return  # nothing served says it is narrow: no finding below (the common case)
    lists = (
        (task.dtypes, "/task/dtypes"),
        (cond.dtypes if cond is not None else None, "/timing/conditions/dtypes"),
    )
    if not lists[0][0] and not lists[1][0]:
        return
    wide = [dts for dts, _ in lists if dts and _all_wide(tuple(dts))]
    if not wide:
        return
    if narrow is not None:
        for dts, ptr in lists:
            if dts and _all_wide(tuple(dts)):
                add(
                    (
                        "KE606",
                        ptr,
                        f"dtypes {', '.join(dts)} are all 16-bit or wider, but the served model `{model}` "
                        f"is a {narrow} checkpoint by its name: the precision recorded is not the one that ran",
                    )
                )
    if q is not None:
        key, v, served = q
        add(
            (
                "KE606",
                f"/task/serving/settings/{key}",
                f"setting {key} `{v}` serves {served} weights, but the dtypes ({', '.join(wide[0])}) are all "
                "16-bit or wider: the precision recorded is not the one that ran",
            )
        )


#: :func:`narrow_weights` by served model name (a batch repeats a few models)
_NARROW_MODEL_CACHE: dict[str, str | None] = {}


def _narrow_model(model: str) -> str | None:
    """:func:`narrow_weights` of a served model's name (None for a name over 256 characters),
    cached (bounded; a long name is not held)."""
    hit = _NARROW_MODEL_CACHE.get(model, _UNSET)
    if hit is _UNSET:
        hit = narrow_weights(model) if len(model) <= 256 else None
        if len(_NARROW_MODEL_CACHE) < 1024 and len(model) <= _CACHED_CHARS:
            _NARROW_MODEL_CACHE[model] = hit
    return hit  # type: ignore[no-any-return]


# ---------------------------------------------------------------- KE605-KE607: work figures

_GEMM_WORDS = frozenset(
    {
        "gemm",
        "matmul",
        "mm",
        "bmm",
        "addmm",
        "baddbmm",
        "linear",
        "scaled",
        "sgemm",
        "hgemm",
        "dgemm",
        "igemm",
    }
)
_NOT_DENSE = frozenset({
    "grouped", "group", "moe", "expert", "experts", "sparse", "spmm", "sddmm", "gemv", "ragged",
    "segment", "lora", "attention", "attn", "conv", "backward", "bwd", "grad", "mlp", "ffn",
    "swiglu", "geglu", "gated", "glu", "decoder", "encoder",
})  # fmt: skip
_GEMM_LIKE = frozenset({
    "dense", "projection", "proj", "fc", "fc1", "fc2", "qkv", "dot", "einsum", "tensordot",
    "contraction", "matrix", "gemmlike",
})  # fmt: skip
_ATTENTION_WORDS = frozenset({"attention", "attn", "sdpa", "mha", "fmha"})
_NOT_PREFILL = frozenset({"decode", "decoding", "paged", "backward", "bwd", "grad", "varlen", "sparse"})
_CONV_WORDS = frozenset({"conv", "conv2d", "convolution"})
_OP_WORD = lazy_re(r"[a-z0-9]+")

_DIM = {
    "m": ("m",), "n": ("n",), "k": ("k",),
    "batch": ("batch", "b", "batch_size", "bs"),
    "heads": ("heads", "h", "num_heads", "nheads", "n_heads", "num_q_heads", "hq"),
    "head_dim": ("head_dim", "d", "headdim", "d_head", "dim_head", "head_size"),
    "q_len": ("q_len", "seqlen_q", "seq_len_q", "s_q", "sq", "seq_q"),
    "kv_len": ("kv_len", "seqlen_k", "seqlen_kv", "seq_len_kv", "seq_len_k", "s_kv", "skv", "sk", "seq_k"),
    "seq": ("seq", "seq_len", "seqlen", "s", "n_ctx", "sequence_length"),
    "conv_n": ("n", "batch", "b"), "c": ("c", "in_channels", "cin", "c_in"),
    "conv_k": ("k", "out_channels", "cout", "c_out"), "r": ("r", "kh", "kernel_h"),
    "s": ("s", "kw", "kernel_w"), "p": ("p", "oh", "out_h", "h_out"), "q": ("q", "ow", "out_w", "w_out"),
    "groups": ("groups", "g"),
}  # fmt: skip


def _dim(dims: dict[str, int], name: str) -> int | None:
    for key in _DIM[name]:
        v = dims.get(key)
        if v is None:
            v = dims.get(key.upper())
        if v is not None:
            return v if v > 0 else None
    return None


@lru_cache(maxsize=512)
def _op_kind(operator: str) -> str | None:
    words = set(_OP_WORD.findall(operator.casefold()))
    if words & _ATTENTION_WORDS:
        return None if words & _NOT_PREFILL else "attention"
    if words & _CONV_WORDS:
        return None if words & {"transpose", "transposed", "backward", "bwd", "grad", "depthwise"} else "conv"
    if words & _NOT_DENSE:
        return None
    if words & _GEMM_WORDS:
        return "gemm"
    # a GEMM under another name (`dense_projection`, `fc1`, `qkv_proj`): judged by its dims
    return "dims" if words & _GEMM_LIKE else None


def _gemm_from_tensors(tensors: Any) -> float | None:
    ins = [t for t in tensors if len(t.shape) >= 2]
    if len(ins) < 2:
        return None
    a, b = ins[0].shape, ins[1].shape
    if a[-1] == b[-2]:
        k, n = a[-1], b[-1]
    elif a[-1] == b[-1]:
        k, n = a[-1], b[-2]
    else:
        return None
    batch = 1
    for x in a[:-2]:
        batch *= x
    return float(2.0 * batch * a[-2] * n * k)


def _contraction(tensors: Any) -> float | None:
    """2 x batch x m x n x k where the tensors of two or more dims are exactly A (..., m, k),
    B (k, n) or (n, k) (or with A's batch dims) and C (..., m, n), in that order: one
    contraction, whatever the operator is called (a fused MLP lists its other weights)."""
    big = [t.shape for t in tensors if len(t.shape) >= 2]
    if len(big) != 3:
        return None
    a, b, c = big
    if len(b) != 2 and b[:-2] != a[:-2]:
        return None  # a grouped or routed weight: its FLOPs depend on the routing
    if a[-1] == b[-2]:
        n = b[-1]
    elif a[-1] == b[-1]:
        n = b[-2]
    else:
        return None
    if c[:-1] != a[:-1] or c[-1] != n:
        return None
    f = 2.0 * _elements(a) * n
    return f if f > 0 else None


#: operator words that say the same tensors are contracted more than once (a backward pass,
#: a training step, a loop): their FLOPs are not one contraction's
_PASSES = frozenset({
    "backward", "bwd", "grad", "grads", "gradient", "train", "training", "step", "optimizer",
    "repeat", "repeated", "iter", "iters", "iteration", "iterations", "loop", "chain", "chained",
    "power", "recurrent", "rnn", "lstm", "gru", "scan",
})  # fmt: skip


@lru_cache(maxsize=512)
def _many_passes(operator: str | None) -> bool:
    if not operator or len(operator) > _CACHED_CHARS:
        return False
    return bool(set(_OP_WORD.findall(operator.casefold())) & _PASSES)


#: operator words that leave a GEMM plain (one contraction, 2mnk exact): its library, its
#: dtypes, layouts, tiles and a fused elementwise epilogue
_PLAIN_GEMM = frozenset({
    "torch", "aten", "nn", "functional", "f", "ops", "op", "default", "out", "cublas", "cublaslt",
    "cutlass", "triton", "hipblas", "hipblaslt", "rocblas", "cudnn", "jax", "lax", "xla", "numpy",
    "np", "tn", "nt", "tt", "row", "col", "rowwise", "colwise", "blockwise", "tensorwise",
    "persistent", "splitk", "split", "streamk", "tma", "ws", "warpspecialized", "kernel", "fwd",
    "forward", "dense", "bias", "relu", "gelu", "silu", "epilogue", "alpha", "beta", "strided",
    "batched", "fp16", "bf16", "fp32", "fp8", "int8", "tf32", "half", "float", "e4m3", "e5m2",
})  # fmt: skip
_TILE = lazy_re(r"^[0-9]+(x[0-9]+)*$")
#: the dims keys of a plain GEMM: nothing else that could multiply the work
_GEMM_DIMS = frozenset({"m", "n", "k", "M", "N", "K", "batch", "b", "batch_size", "bs"})
#: a plain GEMM's stated FLOPs above 2mnk: 10%, plus an epilogue of this many FLOP per output
_GEMM_OVER = 1.1
_EPILOGUE_FLOPS = 32


@lru_cache(maxsize=512)
def _plain_gemm(operator: str) -> bool:
    """Whether a GEMM's name says nothing beyond one contraction (no dual, chained, fused or
    multi-GEMM word): its FLOPs are 2mnk exactly (cached: a batch repeats a few names)."""
    for w in _OP_WORD.findall(operator.casefold()):
        if not (w in _GEMM_WORDS or w in _PLAIN_GEMM or _TILE.match(w) or dtype_class(w)):
            return False
    return True


#: a plain attention's stated FLOPs above 4 b h q kv d
_ATTENTION_OVER = 1.25
#: the dims keys of a plain attention: nothing else that could change the work (a window,
#: a separate value head_dim, a page or block size)
_ATTENTION_DIMS = frozenset(
    {
        k2
        for name in ("batch", "heads", "head_dim", "q_len", "kv_len", "seq")
        for k in _DIM[name]
        for k2 in (k, k.upper())
    }
    | {
        "kv_heads", "num_kv_heads", "n_kv_heads", "nheads_k", "nheads_kv", "heads_kv", "hkv",
        "h_kv", "num_key_value_heads", "kv_head", "causal", "is_causal", "KV_HEADS", "HKV",
    }
)  # fmt: skip
#: operator words that leave an attention plain (the core: scores, softmax, values, once)
_PLAIN_ATTENTION = frozenset({
    "attention", "attn", "sdpa", "fmha", "flash", "flashattention", "flashattn", "fa", "fa2", "fa3",
    "scaled", "dot", "product", "fwd", "forward", "prefill", "noncausal", "non", "causal", "no",
    "bidirectional", "full", "dense", "self", "kernel", "torch", "aten", "nn", "functional", "f",
    "ops", "op", "default", "triton", "cudnn", "cutlass", "xformers", "memory", "efficient", "mem",
    "aiter", "ck", "composable", "jax", "xla", "pallas", "gqa", "mqa", "v2", "v3", "2", "3",
    "bhsd", "bshd", "thd", "tma", "ws", "persistent", "fp16", "bf16", "fp32", "fp8", "half",
    "e4m3", "e5m2",
})  # fmt: skip


@lru_cache(maxsize=512)
def _plain_attention(operator: str) -> bool:
    """Whether an attention's name says nothing beyond the core (no projections, module,
    block, backward or loop word): its FLOPs are 4 b h q kv d (cached)."""
    for w in _OP_WORD.findall(operator.casefold()):
        if not (w in _PLAIN_ATTENTION or _TILE.match(w) or dtype_class(w)):
            return False
    return True


@lru_cache(maxsize=512)
def _causal(operator: str) -> bool:
    """Whether an attention operator's name says it is causal (not `non_causal`)."""
    words = set(_OP_WORD.findall(operator.casefold()))
    return "causal" in words and not words & {"non", "no", "not", "bidirectional"}


def _derived_flops(kind: str, sh: Any) -> tuple[float, float] | None:
    """The FLOPs a shape's dims (or tensors) give, as a (low, high) range, or None."""
    dims = sh.dims or {}
    if kind == "dims":
        # not named a GEMM: judged as one only when its dims are exactly a GEMM's
        g = dims.get
        if not dims or not (g("m") or g("M")) or not (g("n") or g("N")) or not (g("k") or g("K")):
            return None
        if len(dims) > 4 or (len(dims) == 4 and not (g("batch") or g("b") or g("batch_size") or g("bs"))):
            return None
        kind = "gemm"
    if kind == "gemm":
        g = dims.get
        m, n, k = g("m") or g("M"), g("n") or g("N"), g("k") or g("K")
        if m and n and k and m > 0 and n > 0 and k > 0:
            b = g("batch") or g("b") or g("batch_size") or g("bs") or 1
            f = 2.0 * (b if b > 0 else 1) * m * n * k
            return f, f
        f2 = _gemm_from_tensors(sh.tensors) if sh.tensors else None
        return (f2, f2) if f2 else None
    if kind == "attention":
        b, h, d = _dim(dims, "batch"), _dim(dims, "heads"), _dim(dims, "head_dim")
        seq = _dim(dims, "seq")
        sq, skv = _dim(dims, "q_len") or seq, _dim(dims, "kv_len") or seq
        if not (b and h and d and sq and skv):
            return None
        full = 4.0 * b * h * sq * skv * d
        return full / 2, full  # a causal mask halves it
    n, c, k = _dim(dims, "conv_n"), _dim(dims, "c"), _dim(dims, "conv_k")
    r, s, p, q = _dim(dims, "r"), _dim(dims, "s"), _dim(dims, "p"), _dim(dims, "q")
    if not (n and c and k and r and s and p and q):
        return None
    f = 2.0 * n * k * p * q * c * r * s / (_dim(dims, "groups") or 1)
    return f, f


def _exact(kind: str | None, sh: Any, op: str) -> tuple[float, float, str] | None:
    """Where the count is exact, the tighter bound on the stated FLOPs, as (the count, the
    most allowed, why): a plain GEMM from m, n, k (2mnk, 10% over it plus an epilogue); an
    attention named causal (the causal count, 1.5x over it); any other plain attention core
    (4 b h q kv d, 1.25x over it). Only asked where the stated
    FLOPs are over 1.1x the range's low, so honest packets rarely pay for it."""
    dims = sh.dims or {}
    if kind == "gemm":
        if len(dims) > 4 or not _GEMM_DIMS.issuperset(dims) or not _plain_gemm(op):
            return None
        g = dims.get
        m, n, k = g("m") or g("M"), g("n") or g("N"), g("k") or g("K")
        if not (m and n and k and m > 0 and n > 0 and k > 0):
            return None
        b = g("batch") or g("b") or g("batch_size") or g("bs") or 1
        b = b if b > 0 else 1
        f = 2.0 * b * m * n * k
        return f, f * _GEMM_OVER + _EPILOGUE_FLOPS * b * m * n, "2 x m x n x k, 10% and an epilogue"
    if kind == "attention":
        flag = dims.get("causal")
        if flag is None:
            flag = dims.get("is_causal")
        b, h, d = _dim(dims, "batch"), _dim(dims, "heads"), _dim(dims, "head_dim")
        seq = _dim(dims, "seq")
        sq, skv = _dim(dims, "q_len") or seq, _dim(dims, "kv_len") or seq
        if not (b and h and d and sq and skv):
            return None
        if not (flag == 1 or (flag is None and _causal(op))):
            # not said to be causal: a plain attention core (its name only attention,
            # library, dtype, layout or forward words; its dims only batch, heads, kv heads,
            # head_dim, lengths and a causal flag) has 4 b h q kv d (softmax and scaling add
            # a few FLOP per score, under 1/d of it): at most 1.25x over it
            if not _ATTENTION_DIMS.issuperset(dims) or not _plain_attention(op):
                return None
            f = 4.0 * b * h * sq * skv * d
            return f, _ATTENTION_OVER * f, "4 x batch x heads x q_len x kv_len x head_dim, 25% over it"
        # a causal mask computes the scores on or below the diagonal: half of a square score
        # matrix, up to 1 - short / (2 long) of a rectangular one (bottom-right aligned)
        f = 4.0 * b * h * sq * skv * d * (1 - min(sq, skv) / (2 * max(sq, skv)))
        return f, 1.5 * f, "the causal count, 1.5x over it"
    return None


def _work_figures(p: Any, task: Any, add: Add) -> set[str]:
    """KE605, KE606, KE608; returns the dtypes the shapes' tensors are spelled in."""
    op = task.operator
    kind = _op_kind(op) if op and len(op) <= _CACHED_CHARS else None
    # shape id -> (low, high) FLOPs and the shape; a low of 0 where only the high bound is
    # known (a contraction seen in the tensors of an operator not named as one)
    derived: dict[str, tuple[tuple[float, float], Any]] = {}
    for i, sh in enumerate(task.shapes):
        if (kind == "gemm" or kind == "dims") and sh.tensors and sh.dims:
            _gemm_extents(i, sh, add)
        rng = _derived_flops(kind, sh) if kind is not None else None
        if rng is None:
            tn = sh.tensors
            f = _contraction(tn) if tn is not None and len(tn) >= 3 and not _many_passes(op) else None
            if f is None:
                continue
            rng = (0.0, f)
        derived[sh.id] = (rng, sh)
        w = sh.work
        if w is not None and (q := w.flops) is not None:
            _flops_check(f"/task/shapes/{i}/work/flops", q, rng, kind, sh, op, add)
    reads = None  # asked where a shape lists its tensors and bytes (or dims)
    for i, sh in enumerate(task.shapes):
        tns = sh.tensors
        if not tns:
            continue
        w = sh.work
        if w is not None and w.bytes is not None:
            if reads is None:
                reads = _reads_everything(op, kind)
            if reads:
                _bytes_cover(i, tns, w.bytes, add, reads == 2, op or "")
        if sh.dims:
            if reads is None:
                reads = _reads_everything(op, kind)
            if reads == 2:
                _rowwise_extents(i, sh, add)
    w = task.work
    if derived and w is not None and (q := w.flops) is not None:
        t = p.timing
        sid = t.shape_id if t is not None else None
        one = len(task.shapes) == 1
        got = derived.get(sid) if sid else next(iter(derived.values())) if one else None
        if got is not None:
            _flops_check("/task/work/flops", q, got[0], kind, got[1], op, add)
    spelled: set[str] = set()  # loops, not a comprehension (its own frame): once per packet
    for sh in task.shapes:
        if sh.tensors:
            for tn in sh.tensors:
                spelled.add(tn.dtype)
    if spelled and task.dtypes:  # (_dtype_labels has nothing to say without tensors)
        _dtype_labels(task, spelled, add)
    return spelled


#: GEMM tensor names whose role is clear (0 the first operand, 1 the second, 2 the
#: output), in the spellings they come in (no casefold on the common path)
_GEMM_ROLES = {
    v: r
    for k, r in (
        ("a", 0), ("lhs", 0), ("mat1", 0), ("b", 1), ("rhs", 1), ("mat2", 1),
        ("c", 2), ("d", 2), ("out", 2), ("output", 2),
    )
    for v in (k, k.upper(), k.capitalize())
}  # fmt: skip
_ROLE_WHAT = ("m x k", "k x n", "m x n")
#: tensor precisions whose extents are the logical ones (not packed: an int4 pair in an int8,
#: an fp4 pair in a uint8 hold half the extent)
_UNPACKED = frozenset({"fp64", "fp32", "tf32", "bf16", "fp16", "fp8"})


def _gemm_extents(i: int, sh: Any, add: Add) -> None:
    """KE605: a GEMM's tensors named as its operands and output (A, B, C; a, b, out...) of 2
    or 3 dims MUST hold the dims' problem: A's last two extents m and k (either order), B's k
    and n, C's m and n (padding may make them larger, never smaller), and a batched A or C
    at least `batch` matrices: a tensor smaller than the dims runs a smaller problem than
    the work is counted for."""
    dims = sh.dims
    g = dims.get
    m, n, k = g("m") or g("M"), g("n") or g("N"), g("k") or g("K")
    if not (m and n and k and m > 0 and n > 0 and k > 0):
        return
    batch = None
    for j, tn in enumerate(sh.tensors):
        role = _GEMM_ROLES.get(tn.name)
        if role is None:
            continue
        shape = tn.shape
        rank = len(shape)
        if rank == 2:
            e0, e1 = shape
        elif rank == 3:
            e0, e1 = shape[1], shape[2]
        else:
            continue
        x, y = (m, k) if role == 0 else (k, n) if role == 1 else (m, n)
        exact = (e0 == x and e1 == y) or (e0 == y and e1 == x)
        if exact and (rank == 2 or role == 1):
            continue  # the common case: the dims' extents exactly (no batch to hold)
        if batch is None:
            batch = g("batch") or g("b") or g("batch_size") or g("bs") or 0
        if exact and (batch <= 1 or shape[0] >= batch):
            continue
        if (dtype_class(tn.dtype) if len(tn.dtype) <= 64 else None) not in _UNPACKED:
            continue  # packed sub-byte values hold a fraction of the extent
        what = _ROLE_WHAT[role]
        lo, hi = sorted((x, y))
        e_lo, e_hi = sorted((e0, e1))
        short = e_lo < lo or e_hi < hi
        if not short and batch > 1 and rank == 3 and role != 1 and shape[0] < batch:
            short = True
            what = f"batch {batch} of {what}"
        if short:
            add(
                (
                    "KE605",
                    f"/task/shapes/{i}/tensors/{j}/shape",
                    f"tensor `{tn.name}` {list(shape)} does not hold the GEMM dims' {what} "
                    f"(m={m}, n={n}, k={k}{f', batch={batch}' if batch else ''}): the problem run is "
                    "smaller than the one the work is counted for",
                )
            )
            return


def _flops_check(
    ptr: str, q: Any, rng: tuple[float, float], kind: str | None, sh: Any, op: str, add: Add
) -> None:
    """KE605 of one stated FLOP count: within 2x of the range, and under an exact count's
    tighter bound (:func:`_exact`)."""
    stated = q.value * _FACTOR[q.unit]
    lo, hi = rng
    if stated > 2 * hi * (1 + 1e-9) or stated * 2 * (1 + 1e-9) < lo:
        want = f"{hi:.4g}" if lo == hi else f"at most {hi:.4g}" if lo == 0 else f"{lo:.4g} to {hi:.4g}"
        add(("KE605", ptr, f"{stated:.4g} FLOP stated; the `{op}` shape gives {want} (more than 2x apart)"))
    elif stated > 1.1 * lo and lo > 0 and kind in ("gemm", "attention") and op and len(op) <= _CACHED_CHARS:
        ex = _exact(kind, sh, op)
        if ex is not None and stated > ex[1] * (1 + 1e-9):
            add(
                (
                    "KE605",
                    ptr,
                    f"{stated:.4g} FLOP stated; the `{op}` shape gives {ex[0]:.4g}: more than the "
                    f"{ex[1]:.4g} allowed ({ex[2]})",
                )
            )


#: operators that read every input element and write every output element at least once
_STREAMING = frozenset({
    "layernorm", "rmsnorm", "norm", "softmax", "elementwise", "add", "mul", "gelu", "silu", "relu",
    "swiglu", "geglu", "dropout", "cast", "copy", "transpose", "scale", "bias", "residual",
    "activation", "sigmoid", "tanh", "exp",
})  # fmt: skip
#: ... and words that say some of a tensor is never touched
_PARTIAL = frozenset({
    "paged", "decode", "decoding", "cache", "kv", "sparse", "gather", "scatter", "index", "indexed",
    "embedding", "lookup", "topk", "select", "slice", "sample", "sampling", "moe", "expert",
    "experts", "grouped", "ragged", "varlen", "page", "block", "blocksparse", "prune", "pruned",
})  # fmt: skip
_CLASS_BYTES = {
    "fp64": 8.0, "fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0,
    "fp6": 0.75, "fp4": 0.5,
}  # fmt: skip


@lru_cache(maxsize=512)
def _reads_everything(operator: str | None, kind: str | None) -> int:
    """0, or 1 where the operator reads all its inputs and writes all its outputs, 2 where
    it only streams them (no reuse, no second pass: its bytes have an upper bound too)."""
    if not operator or len(operator) > _CACHED_CHARS:
        return 0
    return _reads_everything_named(operator, kind)


@lru_cache(maxsize=512)
def _reads_everything_named(operator: str, kind: str | None) -> int:
    """:func:`_reads_everything` of a short operator name (cached: a batch repeats a few)."""
    words = set(_OP_WORD.findall(operator.casefold()))
    if words & _PARTIAL:
        return 0
    if kind in ("gemm", "attention", "conv"):
        return 1
    if not words & _STREAMING:
        return 0
    return 1 if _many_passes(operator) else 2


def _bytes_cover(i: int, tensors: Any, q: Any, add: Add, most: bool = False, op: str = "") -> None:
    """KE608: the stated bytes of shape ``i`` against the bytes of its tensors: at least half
    of them; for an operator that only streams them (``most``), at least 98% of its operand
    tensors' bytes (each read or written once; masks, indices and biases aside; not an
    operator whose name says it skips part of a tensor: causal, masked, windowed...), and,
    with two or more tensors listed, at most each of them read and written (2x) plus an
    unlisted fp32 output of the largest one's size."""
    total = 0.0
    for tn in tensors:
        size = _CLASS_BYTES.get(dtype_class(tn.dtype) or "")
        if size is None:
            return  # a dtype of unknown width: nothing to say
        total += _prod(tn.shape) * size
    stated = q.value * _FACTOR[q.unit]
    if total > 0 and stated * 2 * (1 + 1e-9) < total:
        add(
            (
                "KE608",
                f"/task/shapes/{i}/work/bytes",
                f"{stated:.4g} B stated; the shape's tensors hold {total:.4g} B (less than half of them moved)",
            )
        )
    elif most and stated < _STREAM_LEAST * total and not _skips_part(op):
        # a streaming operator reads each input and writes each output at least once: its
        # operand tensors' bytes (a mask or an index may be read in part) are a floor
        ops = 0.0
        for tn in tensors:
            if not _not_operand(tn.name):
                ops += _prod(tn.shape) * _CLASS_BYTES[dtype_class(tn.dtype) or ""]
        if stated < _STREAM_LEAST * ops:
            ratio = stated / ops
            hint = ""
            for conf, what in _BINARY_SLIPS:
                if abs(ratio - conf) < 2e-3:
                    hint = f" (the ratio {ratio:.4f} is {what}: a binary figure under a decimal unit?)"
                    break
            add(
                (
                    "KE608",
                    f"/task/shapes/{i}/work/bytes",
                    f"{stated:.4g} B stated; a streaming operator reads or writes each of the shape's "
                    f"operand tensors once, {ops:.4g} B: below {_STREAM_LEAST:.0%} of them{hint}",
                )
            )
    elif (
        most
        and len(tensors) >= 2
        and stated > 2 * total * (1 + 1e-9)
        and stated > (2 * total + 4.0 * (biggest := max(_prod(tn.shape) for tn in tensors))) * (1 + 1e-9)
    ):
        add(
            (
                "KE608",
                f"/task/shapes/{i}/work/bytes",
                f"{stated:.4g} B stated; the shape's tensors hold {total:.4g} B, so a streaming operator "
                f"moves at most {2 * total + 4.0 * biggest:.4g} B (each read and written, plus an fp32 "
                "copy of the largest)",
            )
        )


#: a row-wise operator's (rows, cols) dims keys, in pairs: a pair names them unambiguously
_ROW_COL = (
    ("rows", "cols"), ("n_rows", "n_cols"), ("num_rows", "num_cols"), ("m", "n"), ("M", "N"),
    ("tokens", "hidden"), ("num_tokens", "hidden_size"), ("tokens", "hidden_size"),
    ("num_tokens", "hidden"), ("n_tokens", "hidden"), ("n_tokens", "hidden_size"),
)  # fmt: skip


def _rowwise_extents(i: int, sh: Any, add: Add) -> None:
    """KE605 for a streaming (row-wise, element-wise) operator: where its dims name rows and
    cols as a pair (rows/cols, m/n, tokens/hidden), an operand tensor of two or more dims
    whose last extent is the cols MUST hold exactly the rows in its leading extents: a
    tensor of another row count says the problem run is not the one the dims (and the work
    counted from them) describe."""
    dims = sh.dims
    g = dims.get
    for rk, ck in _ROW_COL:
        rows = g(rk)
        if rows is not None:
            cols = g(ck)
            if cols is not None:
                break
    else:
        return
    if not (rows > 0 and cols > 0):
        return
    for tn in sh.tensors:
        shape = tn.shape
        if len(shape) < 2 or shape[-1] != cols:
            continue
        lead = _prod(shape[:-1])
        if lead == rows or lead <= 0:
            continue
        if _not_operand(tn.name) or (dtype_class(tn.dtype) if len(tn.dtype) <= 64 else None) not in _UNPACKED:
            continue  # a mask's rows may differ; packed sub-byte values hold another extent
        add(
            (
                "KE605",
                f"/task/shapes/{i}/dims",
                f"dims {rk}={rows}, {ck}={cols} but tensor `{tn.name}` {list(shape)} holds {lead} rows of "
                f"{cols}: the problem run is not the one the dims describe",
            )
        )
        return


#: a streaming operator's stated bytes: at least this share of its operand tensors' bytes
_STREAM_LEAST = 0.98
#: binary-over-decimal ratios (GiB labelled GB, MiB as MB, KiB as kB)
_BINARY_SLIPS = ((1e9 / 2**30, "1e9/2^30"), (1e6 / 2**20, "1e6/2^20"), (1e3 / 2**10, "1e3/2^10"))
#: operator words that say part of a tensor may be skipped (a causal or masked softmax, a
#: sliding window, a broadcast operand counted at its full shape, a strided view)
_SKIPS_PART = frozenset({
    "causal", "masked", "mask", "tril", "triu", "triangular", "window", "windowed", "sliding",
    "local", "broadcast", "broadcasted", "strided", "stride", "partial", "chunk", "chunked",
    "padded", "padding", "pad", "subset", "skip",
})  # fmt: skip


@lru_cache(maxsize=512)
def _skips_part(operator: str) -> bool:
    """Whether a streaming operator's name says some tensor is not read or written whole."""
    if len(operator) > _CACHED_CHARS:
        return True
    return bool(set(_OP_WORD.findall(operator.casefold())) & _SKIPS_PART)


#: the elements of a shape (math.prod: an empty shape, a scalar, has one)
_elements = _prod


#: dtype classes from slowest to fastest (a tf32 label is served by fp32 tensors)
_SPEED = {"fp64": 0, "fp32": 1, "tf32": 2, "fp16": 3, "bf16": 3, "fp8": 4, "int8": 4, "fp6": 5, "fp4": 6}


def _dtype_labels(task: Any, spelled: set[str], add: Add) -> None:
    if not spelled or spelled == set(task.dtypes):
        return  # no tensors, or the labels are exactly the tensors' dtypes (the common case)
    labels = [(j, c) for j, d in enumerate(task.dtypes) if (c := dtype_class(d)) is not None]
    # the operands: a tensor of under 1% of the largest one's elements (a scale, a bias) does
    # not carry the work, so it cannot justify a precision label
    sized = [
        (i, j, c, _elements(tn.shape))
        for i, sh in enumerate(task.shapes)
        for j, tn in enumerate(sh.tensors or ())
        if (c := dtype_class(tn.dtype)) is not None
    ]
    if not labels or not sized:
        return
    largest = max(n for *_, n in sized)
    tensors = [(i, j, c) for i, j, c, n in sized if n * 100 >= largest]
    have = {c for _, _, c in tensors}
    if "fp32" in have:
        have.add("tf32")
    fastest_tensor = max(_SPEED[c] for c in have)
    for j, c in labels:
        if c not in have and _SPEED[c] > fastest_tensor:
            add(
                (
                    "KE606",
                    f"/task/dtypes/{j}",
                    f"dtype label `{task.dtypes[j]}` ({c}) is faster than every tensor's precision ({', '.join(sorted(have))})",
                )
            )
            return
    named = {c for _, c in labels}
    fastest_label = max(_SPEED[c] for c in named)
    for i, j, c in tensors:
        # a mask, an index or a bias is not contracted: its dtype (a uint8 padding mask) is
        # not a compute precision the labels must name
        if c not in named and _SPEED[c] > fastest_label and not _not_operand(task.shapes[i].tensors[j].name):
            dt = task.shapes[i].tensors[j].dtype
            add(
                (
                    "KE606",
                    f"/task/shapes/{i}/tensors/{j}/dtype",
                    f"tensor dtype `{dt}` ({c}) is faster than every dtype label ({', '.join(sorted(named))})",
                )
            )
            return


#: a dtype narrower than 16 bits named in a kernel name or a compile flag: the distinctive
#: spellings anywhere a letter does not run into them (`gemm_e4m3_tn`, `__nv_fp8`,
#: `-DGEMM_INPUT_E4M3`), the short ones only as whole words (`_f8_`, `i8`, `int8_t`; not
#: `uint8`, not a hex id)
_NARROW_TOKEN = lazy_re(
    r"(?<![a-z])(nvfp4|mxfp4|mxfp6|mxfp8|fp8|fp6|fp4|e4m3|e5m2|e2m1|e3m2|e2m3)(?![0-9])"
    r"|(?<![a-z0-9])(f8|i8|int8|int4|w4a16|w4a8|w8a8|w8a16)(?![a-z0-9])"
)
_TOKEN_CLASS = {
    "nvfp4": "fp4", "mxfp4": "fp4", "fp4": "fp4", "e2m1": "fp4", "mxfp6": "fp6", "fp6": "fp6",
    "e3m2": "fp6", "e2m3": "fp6", "mxfp8": "fp8", "fp8": "fp8", "e4m3": "fp8", "e5m2": "fp8",
    "f8": "fp8", "i8": "int8", "int8": "int8", "w8a8": "int8", "w8a16": "int8", "int4": "int4",
    "w4a16": "int4", "w4a8": "int4",
}  # fmt: skip
#: how fast each narrow class runs, beside :data:`_SPEED` (an int4 GEMM as an fp4 one)
_TOKEN_SPEED = {**_SPEED, "int4": 6}
#: words that say a flag turns a precision off or only builds support for it (`-DDISABLE_FP8`,
#: `-DENABLE_FP8_SUPPORT`): not that the inputs run in it
_FLAG_TOGGLE = lazy_re(
    r"(?<![a-z])(?:disable|disabled|enable|enabled|no|without|support|supported|has|allow|"
    r"skip|off|false)(?![a-z])|=0$"
)
_TOKEN_CACHE: dict[str, tuple[str, str] | None] = {}
#: the names and flags :data:`_TOKEN_CACHE` holds as naming no narrow dtype (a set: one
#: ``issuperset`` call tells a packet's flags are all clean)
_TOKEN_CLEAN: set[str] = set()


def _narrow_token(text: str) -> tuple[str, str] | None:
    """The first narrow-dtype token in a name or flag and its class (cached, bounded)."""
    hit = _TOKEN_CACHE.get(text, _UNSET)
    if hit is _UNSET:
        m = _NARROW_TOKEN.search(text[:4096].casefold())
        hit = None
        if m is not None:
            tok = m.group(1) or m.group(2)
            hit = (tok, _TOKEN_CLASS[tok])
        if len(_TOKEN_CACHE) < 4096 and len(text) <= _CACHED_CHARS:
            _TOKEN_CACHE[text] = hit
            if hit is None:
                _TOKEN_CLEAN.add(text)
    return hit  # type: ignore[no-any-return]


#: the task's classes (labels and tensors) and the fastest of them, by its dtypes
_ALLOWED_CACHE: dict[tuple[str, ...], tuple[frozenset[str], int] | None] = {}


def _allowed_narrow(task: Any) -> tuple[frozenset[str], int] | None:
    """The precision classes the task names (labels, tensors; a sub-byte integer as int4) and
    the fastest one's speed; None where no label is known."""
    names = tuple(task.dtypes[:64]) + tuple(tn.dtype for sh in task.shapes or () for tn in sh.tensors or ())
    hit = _ALLOWED_CACHE.get(names, _UNSET)
    if hit is _UNSET:
        classes: set[str] = set()
        for d in names:
            c = dtype_class(d) if len(d) <= 64 else None
            if c is not None:
                classes.add(c)
            elif _SUBBYTE_INT.match(d.strip().casefold()):
                classes.add("int4")
        hit = (frozenset(classes), max(_TOKEN_SPEED.get(c, 0) for c in classes)) if classes else None
        if len(_ALLOWED_CACHE) < 1024 and sum(map(len, names)) <= _CACHED_CHARS:
            _ALLOWED_CACHE[names] = hit
    return hit  # type: ignore[no-any-return]


def _known_clean(p: Any) -> bool:
    """Whether every kernel name, raw name, expected kernel and compile flag of the packet
    is known (cached) to name no narrow dtype: an uncached one is not known clean."""
    clean = _TOKEN_CLEAN
    for cap in p.profiler or ():
        for rec in cap.kernels or ():
            raw = rec.raw_name
            if rec.name not in clean or (raw and raw not in clean):
                return False
        of = cap.of
        if of is not None and of.expected_kernels and not clean.issuperset(of.expected_kernels):
            return False
    co = p.compile
    return co is None or not co.flags or clean.issuperset(co.flags)


def _narrow_kernels(p: Any, task: Any, add: Add) -> None:
    """KE606: a dtype narrower than every one the task names (`e4m3`, `fp8`, `int8`, `nvfp4`,
    `int4`...) in the candidate capture's kernel names, its expected kernels or the compile
    flags: the kernel that ran is not in the precision recorded (an fp8 GEMM has twice a bf16
    one's peak). The names are scanned first (cached per name): the task's precisions are
    only worked out where one names a narrow dtype."""
    cache = _TOKEN_CACHE
    co = p.compile
    found: list[tuple[str, str, tuple[str, str]]] = []  # candidates: (pointer, text, token)
    for i, cap in enumerate(p.profiler or ()):
        of = cap.of
        if of is not None and of.side != "candidate":
            continue
        for j, rec in enumerate(cap.kernels or ()):
            name = rec.name
            hit = cache.get(name, _UNSET)
            if hit is _UNSET:
                hit = _narrow_token(name)
            if hit is not None:
                found.append((f"/profiler/{i}/kernels/{j}/name", name, hit))
            raw = rec.raw_name
            if raw:
                hit = cache.get(raw, _UNSET)
                if hit is _UNSET:
                    hit = _narrow_token(raw)
                if hit is not None:
                    found.append((f"/profiler/{i}/kernels/{j}/raw_name", raw, hit))
        if of is not None and of.expected_kernels:
            for k, e in enumerate(of.expected_kernels):
                if (hit := _narrow_token(e)) is not None:
                    found.append((f"/profiler/{i}/of/expected_kernels/{k}", e, hit))
    if co is not None and co.flags:
        for k, fl in enumerate(co.flags):
            if (
                len(fl) <= 512
                and (hit := _narrow_token(fl)) is not None
                and not _FLAG_TOGGLE.search(fl.casefold())
            ):
                found.append((f"/compile/flags/{k}", fl, hit))
    if not found:
        return
    allowed = _allowed_narrow(task)
    if allowed is None:
        return
    classes, fastest = allowed
    seen: set[str] = set()  # one finding per capture, one for the flags
    for ptr, text, (tok, c) in found:
        where = ptr[: ptr.index("/", 10)]
        if c in classes or _TOKEN_SPEED[c] <= fastest or where in seen:
            continue
        seen.add(where)
        what = "compile flag" if where == "/compile/flags" else "kernel"
        add(
            (
                "KE606",
                ptr,
                f"{what} `{text[:120]}` names `{tok}` ({c}), narrower than every dtype the task "
                f"records ({', '.join(task.dtypes)}): the precision recorded is not the one that ran",
            )
        )


#: the most FLOP one CPU core can retire per cycle, by the widest-vector unit any core has
#: (two 512-bit FMA pipes for fp32/fp64; a matrix unit such as AMX for 16- and 8-bit types)
_CPU_FLOP_PER_CYCLE = {
    "fp64": 32,
    "fp32": 64,
    "tf32": 64,
    "bf16": 2048,
    "fp16": 2048,
    "fp8": 4096,
    "int8": 4096,
}
_CPU_ARCH = lazy_re(r"x86|amd64|aarch64|arm64|armv|ppc64|power|riscv|s390", re.IGNORECASE)


def _cpu_peak(h: Any, task: Any) -> float | None:
    """An upper bound on a CPU's FLOP/s: cores x clock x the most FLOP a core can retire per
    cycle in the task's fastest dtype (None when cores, clock or dtypes are not recorded)."""
    if h.vendor != "cpu" and not (h.arch and _CPU_ARCH.search(h.arch)):
        return None
    c = h.clocks
    if not h.compute_units or c is None or task is None or not task.dtypes:
        return None
    hz = max(
        (q.value * _FACTOR[q.unit] for q in (c.sm_observed, c.sm_requested) if q is not None), default=0.0
    )
    per = [_CPU_FLOP_PER_CYCLE.get(dtype_class(d) or "", 4096) for d in task.dtypes]
    return h.compute_units * hz * max(per) if hz > 0 else None


def _declared_peaks(h: Any, task: Any, add: Add) -> None:
    if len(h.device) + len(h.arch or "") > _CACHED_CHARS:
        return
    peaks = device_peaks(h.device, h.arch)
    if peaks is None:
        rec = h.peak_flop_rate
        top = _cpu_peak(h, task) if rec is not None else None
        if top is not None and rec.value * _FACTOR[rec.unit] > top * _CPU_SLACK:
            add(
                (
                    "KE607",
                    "/hardware/peak_flop_rate",
                    f"declared peak {rec.value:g} {rec.unit} exceeds what {h.compute_units} CPU cores at the "
                    f"recorded clock can retire ({top / 1e12:.4g} TFLOP/s for the task's dtypes)",
                )
            )
        return
    if h.peak_flop_rate is not None and peaks.flops:
        _declared_against(h, task, h.peak_flop_rate, max(peaks.flops.values()), peaks.key, True, add)
    if h.peak_bandwidth is not None:
        _declared_against(h, task, h.peak_bandwidth, peaks.bandwidth, peaks.key, False, add)


def _declared_against(h: Any, task: Any, rec: Any, top: float, key: str, flops: bool, add: Add) -> None:
    """KE607: a declared peak (FLOP/s or B/s) above the table's, or below half of its floor."""
    field, scale, unit = ("peak_flop_rate", 1e12, "TFLOP/s") if flops else ("peak_bandwidth", 1e9, "GB/s")
    declared = rec.value * _FACTOR[rec.unit]
    if declared > top * _SLACK:
        add(
            (
                "KE607",
                f"/hardware/{field}",
                f"declared peak {rec.value:g} {rec.unit} exceeds the {key} table's {top / scale:.4g} {unit}",
            )
        )
        return
    low = _declared_floor(h, task, flops)
    if low is not None and declared < low[0]:
        add(
            (
                "KE607",
                f"/hardware/{field}",
                f"declared peak {rec.value:g} {rec.unit} is below half of the table's "
                f"{low[1] / scale:.4g} {unit}{low[2]}: an understated peak inflates the "
                "speed-of-light fraction",
            )
        )


#: a declared peak below this share of the table's lowest figure for the device (and the
#: task's precisions) is understated, not a datasheet figure
_FLOOR = 0.5
#: an SM clock recorded below this (Hz) may be a low lock: the floor falls with it
_FLOOR_CLOCK = 1.2e9


def _declared_floor(h: Any, task: Any, flops: bool) -> tuple[float, float, str] | None:
    """KE607's lower bound on a declared peak (FLOP/s if ``flops``, else B/s): half the
    lowest figure of the models the device can be (its table id, else its name's models
    that agree with its arch, else its arch's), for the lowest of the task's precisions;
    a share of it on a partition or MIG slice (SM/CU count, `partitions`; a MIG name
    without a count is not judged), and scaled down by an SM clock recorded below 1.2 GHz.
    Returns (the floor, the table's figure, what it is for), or None where nothing bounds it."""
    if h.device_id is not None and (e := device(h.device_id)) is not None:
        cands: tuple[Any, ...] = (e,)
    else:
        named = _name_candidates(h.device)
        cands = tuple(e for e in named if arch_agrees(e, h.arch)) or named
        if not cands and h.arch:
            a = _arch_id(h.arch)
            cands = tuple(e for e in all_devices() if e.arch == a) if a is not None else ()
    if not cands:
        return None
    units = h.compute_units
    if units is None and _mig(h.device):
        return None  # a MIG slice of unknown size
    what = ""
    classes: set[str] = set()
    if flops:
        if task is None:
            return None
        for d in task.dtypes or ():
            c = dtype_class(d) if len(d) <= 64 else None
            if c is not None:
                classes.add(c)
        if not classes:
            return None  # the precision the peak is for is not known
        what = f" for {'/'.join(sorted(classes))}"
    low = None
    share = 1.0
    for e in cands:
        if flops:
            figs = [e.flops[c] for c in classes if c in e.flops]
            fig = min(figs) if figs else None
        else:
            fig = e.memory_bandwidth
        if not fig:
            continue
        part = 1.0
        whole = e.compute_units
        if units and whole and units < whole:
            part = units / whole  # a partition or MIG slice: its share of the device
        elif h.partitions and h.partitions > 1:
            part = 1.0 / h.partitions
        if low is None or fig * part < low * share:
            low, share = fig, part
    if low is None:
        return None
    floor = low * share * _FLOOR / _SLACK
    if share < 1.0:
        what += f" x {share:.3g} (a partition's share)"
    c = h.clocks
    if flops and c is not None:
        q = c.sm_observed or c.sm_requested
        hz = q.value * _FACTOR[q.unit] if q is not None else 0.0
        if 0 < hz < _FLOOR_CLOCK:
            floor *= hz / _FLOOR_CLOCK  # a peak at a low locked clock
    return floor, low * share, what
