"""XProf adapter: JAX / TensorFlow profiles (XSpace ``*.xplane.pb``) to evidence packets.

Inputs, in order of preference:

* the raw profile, ``<host>.xplane.pb`` (an XSpace protobuf, read with our own message
  definitions and the optional ``protobuf`` package: ``pip install 'kernel-evidence[xprof]'``),
  or a profile directory (``<logdir>/plugins/profile/<run>/``, or any folder above it): every
  run folder becomes one packet, its hosts merged;
* the trace-event JSON ``<host>.trace.json.gz`` when it is all a user has;
* xprof's tool JSON (``hlo_stats``, ``roofline_model``, ``overview_page``, ``op_profile``,
  ``framework_op_stats``, ``kernel_stats``); files sharing a prefix
  (``run.hlo_stats.json.gz``, ``run.roofline_model.json.gz``) make one packet.

Each packet holds one :class:`ProfilerCapture` (tool ``xprof``) with one
:class:`KernelRecord` per HLO op (all occurrences on all devices added up, like xprof's
hlo_stats), the device in ``hardware`` (vendor ``google`` for TPUs) and, when the profile
has step markers, the step times in ``timing``. See ``docs/adapters/xprof.md``.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._resources import load_toml
from ...errors import AdapterError, KernelEvidenceError
from ...models import (
    Artifact,
    Bandwidth,
    ByteSize,
    EvidencePacket,
    FlopRate,
    Hardware,
    KernelRecord,
    ProfilerCapture,
    Quantity,
    RawMetric,
    Stats,
    Timing,
)
from .. import AdapterOptions, AdapterResult
from .._envelope import start_packet
from .._read import gunzip_capped, is_junk_entry, max_bytes_option, read_capped
from ._model import DeviceInfo, OpAgg, ProfileData

__all__ = ["ADAPTER", "XProfAdapter", "read_profile"]

_XPLANE = ".xplane.pb"
_TRACE = (".trace.json.gz", ".trace.json")
_PERFETTO = "perfetto_trace.json.gz"  # JAX's copy of <host>.trace.json.gz
_TOOL_RE = re.compile(
    r"^(?P<prefix>.+?)\.(?P<tool>hlo_stats|roofline_model|overview_page|op_profile|"
    r"framework_op_stats|kernel_stats|trace_viewer)\.json(?:\.gz)?$"
)
#: largest input file read (bytes) unless ``--opt max_bytes=N``; protobuf itself refuses
#: messages above 2 GiB
MAX_FILE_BYTES = 2 << 30
#: largest decompressed JSON document unless ``--opt max_bytes=N`` (which then caps both)
MAX_JSON_BYTES = 1 << 30


@dataclass
class _Group:
    kind: str  # "xplane" | "trace_json" | "tool_json"
    files: list[str]
    label: str


# ------------------------------------------------------------------------------------------
# input discovery


def _classify(name: str) -> str | None:
    low = name.lower()
    if low.endswith(_XPLANE):
        return "xplane"
    if _TOOL_RE.match(name):
        return "tool_json"
    if low.endswith((*_TRACE, _PERFETTO)):
        return "trace_json"
    if low.endswith((".json", ".json.gz")):
        return "tool_json"
    return None


def _tool_prefix(path: str) -> str:
    name = Path(path).name
    m = _TOOL_RE.match(name)
    stem = m.group("prefix") if m else re.sub(r"\.json(\.gz)?$", "", name)
    return str(Path(path).parent / stem)


def _discover(inputs: Sequence[str]) -> tuple[list[_Group], list[str]]:
    groups: list[_Group] = []
    warnings: list[str] = []
    loose_tools: dict[str, list[str]] = {}
    for raw in inputs:
        path = Path(os.fspath(raw))
        if path.is_dir():
            by_dir: dict[Path, dict[str, list[str]]] = {}
            for sub in sorted(path.rglob("*")):
                if not sub.is_file() or is_junk_entry(sub, path):
                    continue
                kind = _classify(sub.name)
                if kind is None or kind == "tool_json" and not _TOOL_RE.match(sub.name):
                    continue
                by_dir.setdefault(sub.parent, {}).setdefault(kind, []).append(str(sub))
            if not by_dir:
                raise AdapterError(
                    f"{path}: no XProf profile found; expected <host>.xplane.pb (or "
                    "<host>.trace.json.gz) under plugins/profile/<run>/"
                )
            for folder, kinds in sorted(by_dir.items()):
                groups.extend(_folder_groups(folder, kinds, loose_tools, warnings))
            continue
        if not path.exists():
            raise AdapterError(f"{path}: no such file or directory")
        kind = _classify(path.name)
        if kind is None:
            raise AdapterError(
                f"{path}: not an XProf input; expected <host>.xplane.pb, <host>.trace.json.gz, "
                "an xprof tool .json(.gz), or a plugins/profile/<run>/ directory"
            )
        if kind == "tool_json":
            loose_tools.setdefault(_tool_prefix(str(path)), []).append(str(path))
        else:
            groups.append(_Group(kind, [str(path)], str(path)))
    for prefix, files in loose_tools.items():
        groups.append(_Group("tool_json", sorted(set(files)), prefix))
    return groups, warnings


def _host_of(path: str) -> str:
    """``host0.xplane.pb`` / ``host0.trace.json.gz`` / ``host0.hlo_stats.json`` -> ``host0``."""
    name = Path(path).name
    for suffix in (_XPLANE, ".trace.json.gz", ".trace.json"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return Path(_tool_prefix(path)).name


def _folder_groups(
    folder: Path,
    kinds: dict[str, list[str]],
    loose_tools: dict[str, list[str]],
    warnings: list[str],
) -> list[_Group]:
    """The groups of one folder. In a run folder (``plugins/profile/<run>/``) the
    ``.xplane.pb`` files are the hosts of one run and make one packet; elsewhere each file is
    its own profile. Trace JSON of a host whose XSpace is read is redundant, and so is
    ``perfetto_trace.json.gz`` beside ``<host>.trace.json.gz``; tool JSON is grouped by prefix."""
    out: list[_Group] = []
    is_run = folder.parent.name == "profile" and folder.parent.parent.name == "plugins"
    xplanes = kinds.get("xplane", [])
    hosts = {_host_of(f) for f in xplanes}
    if xplanes:
        if is_run:
            out.append(_Group("xplane", xplanes, str(folder)))
        else:
            out.extend(_Group("xplane", [f], f) for f in xplanes)
    traces = [t for t in kinds.get("trace_json", []) if _host_of(t) not in hosts]
    if len(traces) > 1 or xplanes:  # perfetto_trace.json.gz repeats <host>.trace.json.gz
        traces = [t for t in traces if Path(t).name != _PERFETTO]
    skipped = len(kinds.get("trace_json", [])) - len(traces)
    if traces:
        if is_run:
            out.append(_Group("trace_json", traces, str(folder)))
        else:
            out.extend(_Group("trace_json", [t], t) for t in traces)
    for f in kinds.get("tool_json", []):
        if _host_of(f) in hosts:
            skipped += 1
        else:
            loose_tools.setdefault(_tool_prefix(f), []).append(f)
    if skipped:
        warnings.append(f"{folder}: {skipped} JSON file(s) repeat a profile already read; skipped")
    return out


_WHAT_XPLANE = "the binary <host>.xplane.pb the profiler writes"
_WHAT_JSON = "XProf trace-event or tool JSON (optionally gzip-compressed)"


def _read_bytes(path: str, cap: int = MAX_FILE_BYTES, what: str = _WHAT_XPLANE) -> bytes:
    """The bytes of one input file, read under ``cap`` whatever the file is (a link to a
    device or a pipe stops at the cap)."""
    return read_capped(path, cap, what=what)


def decode_json(path: str, data: bytes, cap: int = MAX_JSON_BYTES) -> Any:
    """The JSON document in ``data`` (the bytes of ``path``; gzip-compressed or not, with or
    without a UTF-8 byte-order mark); a one-line :class:`AdapterError` naming the file when
    it is not JSON, nested too deeply, not UTF-8 or decompresses to more than ``cap`` bytes."""
    import msgspec

    inner = ""
    if data[:2] == b"\x1f\x8b":
        data = gunzip_capped(path, data, cap, _WHAT_JSON)
        inner = " of the decompressed JSON"
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark
        data = data[3:]
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise AdapterError(f"{path}: not valid JSON ({exc}); expected {_WHAT_JSON}") from None
    except RecursionError:
        raise AdapterError(f"{path}: JSON nested too deeply to be a profile; expected {_WHAT_JSON}") from None
    except UnicodeDecodeError:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            where = f"byte {bad.start}{inner}"
        else:
            where = f"a string{inner}"
        raise AdapterError(f"{path}: {where}: not valid UTF-8; expected {_WHAT_JSON} in UTF-8 text") from None


def _xplane_bytes(path: str, data: bytes, cap: int) -> bytes:
    """The XSpace bytes of an ``.xplane.pb``: a gzip-compressed copy (as some copies from
    cloud storage are) is decompressed, to at most ``cap`` bytes. An XSpace never starts
    with the gzip magic (its first byte is the tag of field 1, 0x0a)."""
    if data[:2] != b"\x1f\x8b":
        return data
    return gunzip_capped(path, data, cap, f"{_WHAT_XPLANE} (or a gzip of it)")


def read_json_file(path: str, cap: int = MAX_FILE_BYTES, json_cap: int = MAX_JSON_BYTES) -> Any:
    """Load a (possibly gzipped) JSON file within the size caps; one-line AdapterError if bad."""
    return decode_json(path, _read_bytes(path, cap, _WHAT_JSON), json_cap)


def read_profile(
    group_kind: str, files: list[str], cap: int = MAX_FILE_BYTES, json_cap: int = MAX_JSON_BYTES
) -> tuple[ProfileData, list[bytes]]:
    """Read one group of files into :class:`ProfileData`, with the bytes read (for digests).
    Every file is read once, under ``cap`` bytes (``json_cap`` once decompressed)."""
    if group_kind == "xplane":
        from ._xplane import parse_xspace, profile_from_xspaces

        blobs = [_read_bytes(f, cap, _WHAT_XPLANE) for f in files]
        spaces = [(f, parse_xspace(_xplane_bytes(f, b, cap), f)) for f, b in zip(files, blobs, strict=True)]
        return profile_from_xspaces(spaces), blobs
    from . import _json

    blobs = [_read_bytes(f, cap, _WHAT_JSON) for f in files]
    docs = [(f, decode_json(f, b, json_cap)) for f, b in zip(files, blobs, strict=True)]
    if group_kind == "trace_json":
        return _json.profile_from_trace(docs), blobs
    return _json.profile_from_tools(docs), blobs


# ------------------------------------------------------------------------------------------
# derived figures


def _table() -> dict[str, Any]:
    return load_toml("xprof.toml")


def _tpu_name(device_type: str | None) -> tuple[str, str | None]:
    if not device_type:
        return "TPU", None
    hit = _table().get("tpu_names", {}).get(device_type.strip().lower())
    if hit:
        return str(hit[0]), str(hit[1])
    return device_type, None


def _nvidia_arch_name(cc: tuple[int, int]) -> str:
    names = _table().get("gpu_model_names", {}).get("nvidia", {})
    major, minor = cc
    exact = names.get(f"{major}.{minor}")
    best = None
    for key, val in names.items():
        km, _, kn = key.partition(".")
        if int(km) == major and (not kn or int(kn) <= minor) and (best is None or kn):
            best = val
    return str(exact or best or "")


def _gpu_peak_flops(info: DeviceInfo, arch: str | None) -> float | None:
    """Dense peak FLOP/s: per-SM (per-CU) FLOPs per cycle x cores x clock, xprof's method."""
    if not info.core_count or not info.clock_rate_hz:
        return None
    table = _table().get("gpu_peak_flops", {})
    per_cycle: float | None = None
    if info.vendor == "nvidia" and info.compute_capability:
        major, minor = info.compute_capability
        want = major * 1000 + minor * 10
        known = sorted(
            (int(k.split(".")[0]) * 1000 + int(k.split(".")[1]) * 10, float(v))
            for k, v in table.get("nvidia", {}).items()
        )
        below = [v for cap, v in known if cap <= want]
        per_cycle = below[-1] if below else (known[0][1] if known else None)
    elif info.vendor == "amd" and arch:
        v = table.get("amd", {}).get(arch)
        per_cycle = float(v) if v is not None else None
    if per_cycle is None:
        return None
    return per_cycle * info.core_count * info.clock_rate_hz


def _gpu_identity(info: DeviceInfo, profile: ProfileData) -> tuple[str, str, str | None]:
    """(vendor, device, arch) of a GPU profile."""
    vendor = info.vendor
    if vendor is None:
        cuda_like = any("regs" in op.raw for op in profile.ops.values() if op.kind == "kernel")
        if cuda_like:
            vendor = "nvidia"
            profile.warnings.append(
                "the profile records no GPU vendor (device_vendor); "
                "assumed NVIDIA from the CUDA kernel details (`regs:`)"
            )
        else:
            vendor = "other"
    info.vendor = vendor
    arch: str | None = None
    cc = info.compute_capability
    if vendor == "nvidia" and cc:
        arch = f"sm_{cc[0]}{cc[1]}"
    elif vendor == "amd":
        if info.gpu_device_name:
            arch = info.gpu_device_name.split(":")[0] or None
        elif cc == (9, 4):
            arch = "gfx942"
        elif cc == (9, 5):
            arch = "gfx950"
    if info.gpu_device_name and not (vendor == "amd" and info.gpu_device_name.startswith("gfx")):
        device = info.gpu_device_name
    elif vendor == "nvidia":
        family = _nvidia_arch_name(cc) if cc else ""
        device = f"Nvidia GPU ({family})" if family else "Nvidia GPU"
    elif vendor == "amd":
        device = f"AMD GPU - {arch}" if arch else "AMD GPU"
    else:
        device = info.device_type or "GPU"
    return vendor, device, arch


def _bound_by(
    rate: float | None, hbm_bw: float | None, peak_flops: float | None, peak_bw: float | None
) -> tuple[str, float]:
    """xprof's roofline classification: the resource with the highest utilisation."""
    best, util = "Unknown", 0.0
    if rate is not None and peak_flops:
        u = rate / peak_flops
        if u > util:
            best, util = "Compute", u
    if hbm_bw is not None and peak_bw:
        u = hbm_bw / peak_bw
        if u > util:
            best, util = "HBM", u
    return best, util


def _q(value: float, unit: str) -> Quantity:
    return Quantity(value=float(value), unit=unit)


def _raw(value: Any, unit: str | None = None) -> RawMetric:
    if isinstance(value, bool):
        value = float(value)
    elif isinstance(value, int):
        value = float(value) if abs(value) < 2**53 else str(value)
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            value = str(value)
    elif value is not None and not isinstance(value, str):
        value = str(value)
    return RawMetric(value=value, unit=unit)


def _record(op: OpAgg, info: DeviceInfo) -> KernelRecord:
    metrics: dict[str, Quantity] = {}
    raw: dict[str, RawMetric] = {}
    g = op.given
    time_known = "time_ps" not in op.unknown  # an unreadable time is left out, never 0
    time_ps = g.get("time_ps", op.time_ps)
    self_ps = g.get("self_ps", op.self_ps)
    sec = time_ps * 1e-12
    if time_known and (time_ps > 0 or op.occurrences):
        metrics["duration"] = _q(time_ps / 1000.0, "ns")
    flops = g.get("flops", op.flops)
    nbytes = g.get("bytes_accessed", op.bytes_accessed)
    hbm = g.get("hbm_bytes", op.hbm_bytes if op.hbm_bytes is not None else nbytes)
    rate = g.get("flop_rate", flops / sec if flops is not None and sec > 0 else None)
    if flops is not None:
        metrics["flops"] = _q(flops, "FLOP")
    if nbytes is not None:
        metrics["bytes_accessed"] = _q(nbytes, "B")
    if rate is not None:
        metrics["achieved_flop_rate"] = _q(rate, "FLOP/s")
    intensity = g.get("intensity", flops / nbytes if flops is not None and nbytes else None)
    if intensity is not None:
        metrics["arithmetic_intensity"] = _q(intensity, "ratio")
    hbm_bw = g.get("hbm_bw", hbm / sec if hbm is not None and sec > 0 else None)
    if hbm_bw is not None and op.kind == "hlo":
        metrics["dram_bandwidth"] = _q(hbm_bw / 1e9, "GB/s")
    if op.grid is not None and op.block is not None:
        threads = 1
        for d in op.grid + op.block:
            threads *= d
        metrics["grid_size"] = _q(threads, "count")
    if op.block is not None:
        b = 1
        for d in op.block:
            b *= d
        metrics["block_size"] = _q(b, "count")
    regs = op.raw.get("regs")
    if regs is not None and isinstance(regs[0], float):
        metrics["registers_per_thread"] = _q(regs[0], "count")
    shm = op.raw.get("shm") or op.raw.get("group_mem")
    if shm is not None and isinstance(shm[0], float):
        metrics["shared_memory_per_block"] = _q(shm[0], "B")
    # raw: what the source said, then xprof-style derived roofline columns
    if "occurrences" not in op.unknown:
        raw["occurrences"] = _raw(op.occurrences, "count")
    if time_known:
        raw["total_time_ps"] = _raw(time_ps, "ps")
        raw["total_self_time_ps"] = _raw(self_ps, "ps")
    for k, (v, u) in sorted(op.raw.items()):
        raw[k] = _raw(v, u)
    if op.kind == "hlo" and (rate is not None or hbm_bw is not None):
        bound, util = _bound_by(rate, hbm_bw, info.peak_flop_rate, info.peak_hbm_bandwidth)
        if info.peak_flop_rate or info.peak_hbm_bandwidth:
            raw["bound_by"] = _raw(bound)
            raw["roofline_efficiency"] = _raw(util, "ratio")
            if intensity is not None and info.peak_flop_rate and info.peak_hbm_bandwidth:
                optimal = min(info.peak_flop_rate, intensity * info.peak_hbm_bandwidth)
                raw["optimal_flop_rate"] = _raw(optimal, "FLOP/s")
    device = next(iter(op.devices))[1] if len(op.devices) == 1 else None
    if len(op.devices) > 1:
        raw["devices"] = _raw(len(op.devices), "count")
    return KernelRecord(
        name=op.name or op.key,
        raw_name=op.raw_name if op.raw_name and op.raw_name != op.name else None,
        id=op.key,
        process=op.module,
        device=device,
        grid=op.grid,
        block=op.block,
        invocations=None if "occurrences" in op.unknown else op.occurrences,
        category=op.category,
        metrics=metrics or None,
        raw=raw,
    )


def _rfc3339(ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ns / 1e9))


def _subject_name(profile: ProfileData, label: str) -> str:
    per_module: dict[str, float] = {}
    for op in profile.ops.values():
        if op.module:
            per_module[op.module] = per_module.get(op.module, 0.0) + op.given.get("time_ps", op.time_ps)
    if per_module:
        return max(sorted(per_module), key=lambda m: per_module[m])
    name = Path(label).name
    for suffix in (_XPLANE, ".trace.json.gz", ".trace.json"):
        if name.endswith(suffix):
            return name[: -len(suffix)] or name
    return name or "xprof profile"


def _hardware(profile: ProfileData) -> Hardware | None:
    info = profile.device
    if info.kind == "tpu":
        device, arch = _tpu_name(info.device_type)
        vendor = "google"
    elif info.kind == "gpu":
        vendor, device, arch = _gpu_identity(info, profile)
        if info.peak_flop_rate is None:
            peak = _gpu_peak_flops(info, arch)
            if peak:
                info.peak_flop_rate = peak
                info.peak_flop_rate_derived = True
    elif info.kind == "cpu":
        vendor, device, arch = "cpu", info.device_type or "CPU", None
    else:
        return None
    return Hardware(
        vendor=vendor,
        device=device,
        arch=arch,
        count=info.count or None,
        compute_units=info.core_count or None,
        memory=ByteSize(value=float(info.memory_bytes), unit="B") if info.memory_bytes else None,
        peak_bandwidth=Bandwidth(value=info.peak_hbm_bandwidth / 1e9, unit="GB/s")
        if info.peak_hbm_bandwidth
        else None,
        peak_flop_rate=FlopRate(value=info.peak_flop_rate / 1e12, unit="TFLOP/s")
        if info.peak_flop_rate
        else None,
    )


def _summary(profile: ProfileData, records: list[OpAgg]) -> dict[str, Quantity]:
    info = profile.device
    out: dict[str, Quantity] = {}
    hlo = [op for op in records if op.kind == "hlo"]
    total_ps = sum(op.given.get("time_ps", op.time_ps) for op in records)
    if records and not any("time_ps" in op.unknown for op in records):  # else a sum of some
        out["op_time"] = _q(total_ps / 1000.0, "ns")
    flops = [op.given.get("flops", op.flops) for op in hlo]
    nbytes = [op.given.get("bytes_accessed", op.bytes_accessed) for op in hlo]
    total_flops = sum(f for f in flops if f is not None) if any(f is not None for f in flops) else None
    total_bytes = sum(b for b in nbytes if b is not None) if any(b is not None for b in nbytes) else None
    if total_flops is not None:
        out["flops"] = _q(total_flops, "FLOP")
    if total_bytes is not None:
        out["bytes_accessed"] = _q(total_bytes, "B")
    if total_flops is not None and total_bytes:
        out["arithmetic_intensity"] = _q(total_flops / total_bytes, "ratio")
    if profile.program_time_ps > 0:
        out["program_time"] = _q(profile.program_time_ps / 1000.0, "ns")
    if profile.device_time_ps > 0:
        span = profile.device_time_ps * 1e-12
        out["device_time"] = _q(profile.device_time_ps / 1000.0, "ns")
        if total_flops is not None:
            out["achieved_flop_rate"] = _q(total_flops / span, "FLOP/s")
        if total_bytes is not None:
            out["achieved_bandwidth"] = _q(total_bytes / span / 1e9, "GB/s")
    if info.peak_flop_rate and info.peak_hbm_bandwidth:
        out["hbm_ridge_point"] = _q(info.peak_flop_rate / info.peak_hbm_bandwidth, "ratio")
    if profile.steps:
        out["step_count"] = _q(len(profile.steps), "count")
    return out


def _attributes(profile: ProfileData) -> dict[str, Any]:
    info = profile.device
    attrs: dict[str, Any] = {"input": profile.input_kind}
    if info.device_type:
        attrs["device_type"] = info.device_type
    if info.count:
        attrs["device_planes"] = info.count
        attrs["active_device_planes"] = info.active
    if info.clock_rate_hz:
        attrs["clock_rate_khz"] = info.clock_rate_hz / 1e3
    if info.compute_capability:
        attrs["compute_capability"] = f"{info.compute_capability[0]}.{info.compute_capability[1]}"
    if info.peak_flop_rate_derived:
        attrs["peak_flop_rate_source"] = "derived: per-SM FLOPs/cycle x core_count x clock_rate"
    for k, v in info.stats.items():
        if k.startswith(("peak_", "has_")) and isinstance(v, (int, float)) and not isinstance(v, bool):
            attrs[k] = float(v) if isinstance(v, float) or abs(v) < 2**53 else str(v)
    if profile.hostnames:
        attrs["hostnames"] = ",".join(profile.hostnames)
    if profile.programs:
        attrs["programs"] = len(profile.programs)
        attrs["program_executions"] = sum(profile.programs.values())
    if profile.tools:
        attrs["tools"] = ",".join(profile.tools)
    for k, v in sorted(profile.versions.items()):
        attrs[k] = v
    for k, v in profile.attributes.items():
        if isinstance(v, int) and not isinstance(v, bool):
            attrs[k] = v if abs(v) < 2**53 else str(v)
        elif isinstance(v, (float, str)):
            attrs[k] = v
    return attrs


def _timing(profile: ProfileData) -> Timing | None:
    ms = [s.duration_ps * 1e-9 for s in profile.steps if s.duration_ps >= 0]
    if not ms:
        return None
    stats = Stats(
        unit="ms",
        median=statistics.median(ms),
        mean=statistics.fmean(ms),
        min=min(ms),
        max=max(ms),
        # pstdev fails on inf (AttributeError); a step of 1e308 ms is refused by Stats instead
        std=statistics.pstdev(ms) if len(ms) > 1 and all(map(math.isfinite, ms)) else None,
        n=len(ms),
        samples=ms if len(ms) <= 10000 else None,
    )
    where = (
        f"device {profile.steps[0].device}"
        if profile.steps[0].device is not None
        else "host step annotations"
    )
    return Timing(
        method="xprof", repeats=len(ms), stats=stats, notes=f"step times from the profile ({where})"
    )


def _artifact(path: str, blob: bytes, kind: str) -> Artifact:
    media = {"xplane": "application/x-protobuf"}.get(kind, "application/json")
    return Artifact(
        kind="profile" if kind == "xplane" else "trace" if kind == "trace_json" else "output",
        name=Path(path).name,
        sha256="sha256:" + hashlib.sha256(blob).hexdigest(),
        size=ByteSize(value=float(len(blob)), unit="B"),
        media_type=media,
        path=path,
    )


def build_packet(
    profile: ProfileData, blobs: list[bytes], group: _Group, options: AdapterOptions
) -> EvidencePacket:
    """Turn one :class:`ProfileData` into a packet (no packet_id yet)."""
    hardware = _hardware(profile)
    ops = sorted(profile.ops.values(), key=lambda o: (-o.given.get("time_ps", o.time_ps), o.key))
    records = [_record(op, profile.device) for op in ops]
    created = options.created_at
    if created is None:
        start = profile.attributes.get("profile_start_time")
        created = (
            _rfc3339(start)
            if isinstance(start, int) and start > 0
            else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        )
    capture = ProfilerCapture(
        tool="xprof",
        version=None,
        source=_artifact(profile.sources[0], blobs[0], group.kind) if len(blobs) == 1 else None,
        kernels=records or None,
        summary=_summary(profile, ops) or None,
        attributes=_attributes(profile),
        warnings=profile.warnings or None,
    )
    subject = str(options.extra.get("subject") or _subject_name(profile, group.label))
    return start_packet(
        subject_kind="kernel",
        subject_name=subject,
        description=f"XProf profile {group.label}",
        created_at=created,
        hardware=hardware,
        timing=_timing(profile),
        profiler=[capture],
    )


class XProfAdapter:
    """XProf / JAX profiler adapter (see the module docstring)."""

    name = "xprof"
    aliases: tuple[str, ...] = ("jax-profile",)
    #: the keys ``--opt KEY=VALUE`` may set (any other is a usage error)
    options: tuple[str, ...] = ("max_bytes", "subject")
    description = "XProf / JAX / TensorFlow profiles: *.xplane.pb, *.trace.json.gz, xprof tool JSON"

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        """One packet per profile run (or per set of tool JSON files sharing a prefix)."""
        if not inputs:
            raise AdapterError(
                "xprof: no input given; expected a .xplane.pb file or a plugins/profile/<run>/ directory"
            )
        extra = dict(options.extra or {})
        cap = max_bytes_option(extra, MAX_FILE_BYTES)
        json_cap = cap if extra.get("max_bytes") is not None else MAX_JSON_BYTES
        groups, warnings = _discover(inputs)
        packets: list[EvidencePacket] = []
        for group in groups:
            try:
                profile, blobs = read_profile(group.kind, group.files, cap, json_cap)
            except KernelEvidenceError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bug or an unforeseen shape must stay one line
                raise AdapterError(
                    f"{group.label}: could not read the profile ({type(exc).__name__}: {exc})"
                ) from None
            try:
                packet = build_packet(profile, blobs, group, options)
            except (ValueError, OverflowError) as exc:  # pydantic's ValidationError is a ValueError
                first = str(exc).splitlines()
                detail = " ".join(first[:3]) if first else type(exc).__name__
                raise AdapterError(f"{group.label}: values out of range ({detail})") from None
            packets.append(packet.with_id())
            # a warning that already names its file (trace JSON, tool JSON) is not prefixed again
            warnings.extend(
                w if w.startswith(f"{group.label}: ") else f"{group.label}: {w}" for w in profile.warnings
            )
        return AdapterResult(packets=packets, warnings=warnings)


ADAPTER = XProfAdapter()
