"""KE6xx: achieved rates within what the device can do."""

from __future__ import annotations

from typing import Any

from ._common import CACHED_CHARS as _CACHED_CHARS
from ._common import SLACK as _SLACK
from ._context import Add, Ctx
from ._engine import declare
from ._tables import _peak_cache, device_peaks, peak_flops_for
from ._units import FACTOR as _FACTOR

declare(
    "KE601",
    "error",
    "achieved FLOP/s within the device peak",
    "check the FLOP count, the time unit and the device; a result above the peak is a measurement error or a cheat",
    "Where the work (`task.work.flops`, or the timed shape's) and the device are known, FLOPs / median time MUST NOT exceed the device's peak FLOP/s for the task's dtypes (times the device count), with 5% slack; a block without a median is checked on its mean. The peak comes from the shipped table (docs/peaks.md), else from `hardware.peak_flop_rate`.",
)
declare(
    "KE602",
    "error",
    "achieved bandwidth within the device peak",
    "check the byte count and the time unit; flush caches between repeats (cache_policy: flushed)",
    "Where the bytes moved (`task.work.bytes`) and the device are known, bytes / median time (the mean when there is no median) MUST NOT exceed the device's peak memory bandwidth (5% slack), unless the timing says caches were warm (then KE603 warns instead).",
)
declare(
    "KE603",
    "warning",
    "bandwidth above DRAM peak only from warm caches",
    "time with flushed caches to make a memory-bandwidth claim",
    "With `cache_policy: warm`, bytes / time above the DRAM peak can come from caches; it is flagged, not rejected.",
)
declare(
    "KE604",
    "warning",
    "physical limits can be checked",
    "name a device from the peak table, or record hardware.peak_flop_rate / peak_bandwidth",
    "Where work is recorded, the device SHOULD be one the peak table knows, or the packet SHOULD record the device peaks, so that impossible results can be caught.",
)


#: :func:`device_peaks` by (device, arch) (short names only)
_PEAKS_CACHE: dict[tuple[str | None, str | None], Any] = {}
_UNSET: Any = object()


def _peak_source(peaks: Any, field: str) -> str:
    """Where the peak checked against comes from: the peak table, else the packet's own."""
    return f"{peaks.key} peak" if peaks is not None else f"the recorded hardware.{field}"


def check(p: Any, ctx: Ctx, add: Add) -> None:
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
