"""The data tables rules consult: the baseline registry, and the peak figures of the device
table (``devices.toml``, read by :mod:`kernel_evidence.devices`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..devices import DeviceEntry, _arch_id, _name_candidates, arch_agrees
from ..devices import all_devices as _all_entries
from ._common import lazy_re

__all__ = ["BaselineEntry", "DevicePeaks", "baseline_entry", "device_peaks", "dtype_class", "peak_flops_for"]

_HERE = Path(__file__).resolve().parent


def _load(name: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    with open(_HERE / name, "rb") as fh:
        return tomllib.load(fh)


@dataclass(frozen=True)
class BaselineEntry:
    """One library in the baseline registry."""

    key: str
    name: str
    kind: str  # vendor | reference | engine
    vendor: str | None


_NORM = lazy_re(r"[\s_.\-/]+")


def _norm(s: str) -> str:
    return _NORM.sub("", s.casefold())


@lru_cache(maxsize=1)
def _baseline_index() -> dict[str, BaselineEntry]:
    index: dict[str, BaselineEntry] = {}
    for key, row in _load("baselines.toml")["providers"].items():
        entry = BaselineEntry(key, row["name"], row["kind"], row.get("vendor"))
        for alias in (row["name"], key, *row.get("aliases", ())):
            index[_norm(alias)] = entry
    return index


@lru_cache(maxsize=4096)
def baseline_entry(provider: str) -> BaselineEntry | None:
    """The registry entry for a provider name (case, spaces, dashes, dots ignored), or None."""
    return _baseline_index().get(_norm(provider))


def baseline_names() -> list[str]:
    """Canonical names of every registered provider."""
    return sorted({e.name for e in _baseline_index().values()}, key=str.casefold)


@dataclass(frozen=True)
class DevicePeaks:
    """Peak figures of one device (dense), in base units."""

    key: str
    vendor: str
    bandwidth: float  # B/s
    flops: dict[str, float]  # dtype class -> FLOP/s
    source: str


def _peaks_of(e: DeviceEntry) -> DevicePeaks | None:
    if not e.flops or e.memory_bandwidth is None:
        return None
    return DevicePeaks(e.id, e.vendor, e.memory_bandwidth, dict(e.flops), e.source)


def all_devices() -> list[DevicePeaks]:
    """Every device of the table that has peak figures, in file order."""
    return [p for e in _all_entries() if (p := _peaks_of(e)) is not None]


def device_peaks(device: str | None, arch: str | None = None) -> DevicePeaks | None:
    """Peaks for a device name, else the upper bound over an arch.

    A name that could be several devices of the table (``H100``: SXM5, PCIe or NVL) is
    checked against the highest figure among them that agree with ``arch``, so the check
    never rejects a result one of them could reach."""
    if len(device or "") + len(arch or "") <= 256:
        return _cached_device_peaks(device, arch)
    return _device_peaks(device, arch)  # no device has such a name: looked up, not held


def _upper_bound(key: str, entries: list[DevicePeaks]) -> DevicePeaks:
    classes = {k for c in entries for k in c.flops}
    return DevicePeaks(
        key,
        entries[0].vendor,
        max(c.bandwidth for c in entries),
        {k: max(c.flops.get(k, 0.0) for c in entries) for k in classes},
        "; ".join(sorted({c.source for c in entries})),
    )


def _device_peaks(device: str | None, arch: str | None) -> DevicePeaks | None:
    if device:
        named = list(_name_candidates(device))
        if named:
            agreeing = [e for e in named if arch_agrees(e, arch)] or named
            peaks = [p for e in agreeing if (p := _peaks_of(e)) is not None]
            if len(peaks) == 1:
                return peaks[0]
            return _upper_bound("/".join(p.key for p in peaks), peaks) if peaks else None
    if arch:
        a = _arch_id(arch)
        if a is not None:
            peaks = [p for e in _all_entries() if e.arch == a and (p := _peaks_of(e)) is not None]
            if peaks:
                return _upper_bound(f"arch:{arch}", peaks)
    return None


_cached_device_peaks = lru_cache(maxsize=4096)(_device_peaks)

_DTYPE_CLASSES = (
    ("fp64", lazy_re(r"^(float64|fp64|f64|double|torch\.float64)$")),
    ("fp32", lazy_re(r"^(float32|fp32|f32|float|torch\.float32)$")),
    ("tf32", lazy_re(r"^(tf32|tensorfloat32)$")),
    ("bf16", lazy_re(r"^(bfloat16|bf16|torch\.bfloat16)$")),
    ("fp16", lazy_re(r"^(float16|fp16|f16|half|torch\.float16)$")),
    ("fp8", lazy_re(r"^(float8.*|fp8.*|f8.*|e4m3.*|e5m2.*|mxfp8.*|nvfp8.*|torch\.float8.*)$")),
    ("fp6", lazy_re(r"^(fp6.*|mxfp6.*|nvfp6.*|float6.*|e2m3.*|e3m2.*)$")),
    ("fp4", lazy_re(r"^(fp4.*|nvfp4.*|mxfp4.*|float4.*|e2m1.*|torch\.float4.*)$")),
    ("int8", lazy_re(r"^(int8|i8|s8|uint8|u8|torch\.int8)$")),
)


@lru_cache(maxsize=1024)
def dtype_class(dtype: str) -> str | None:
    """The precision class of a dtype spelling (``bf16``, ``torch.float16``...), or None."""
    d = dtype.strip().casefold()
    for cls, pat in _DTYPE_CLASSES:
        if pat.match(d):
            return cls
    return None


def peak_flops_for(peaks: DevicePeaks, dtypes: tuple[str, ...]) -> float:
    """The FLOP/s ceiling for work in ``dtypes`` (cached per device and dtypes); see
    :func:`_peak_flops_for`."""
    key = (peaks.key, dtypes)
    hit = _peak_cache.get(key)
    if hit is None:
        hit = _peak_flops_for(peaks, dtypes)
        if len(_peak_cache) < 4096 and sum(map(len, dtypes)) <= 256:
            _peak_cache[key] = hit
    return hit


_peak_cache: dict[tuple[str, tuple[str, ...]], float] = {}


def _peak_flops_for(peaks: DevicePeaks, dtypes: tuple[str, ...]) -> float:
    """The FLOP/s ceiling for work in ``dtypes``: the highest peak among their classes.

    Unknown or absent dtypes give the device's highest figure, so the check only ever
    rejects results above every peak the device has.
    """
    found = [dtype_class(d) for d in dtypes]
    classes = [c for c in found if c is not None]
    if not classes or len(classes) != len(found):
        return max(peaks.flops.values())
    wanted = set(classes)
    if "fp32" in wanted:
        wanted.add("tf32")
    vals = [peaks.flops[c] for c in wanted if c in peaks.flops]
    return max(vals) if vals else max(peaks.flops.values())
