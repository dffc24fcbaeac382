"""Read XSpace protobufs (``*.xplane.pb``) into :class:`ProfileData`.

Only the facts of the XPlane format are used (see ``_xplane.proto`` and
``docs/adapters/xprof.md``): stat names are indirect (``XStat.metadata_id`` ->
``plane.stat_metadata``), ``ref_value`` stats are interned strings, per-op constants
(``flops``, ``bytes_accessed``, ``hlo_category``, ...) live on ``XEventMetadata.stats`` and
per-occurrence values (``device_duration_ps``, ``hlo_op`` on GPU) on ``XEvent.stats``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from ...errors import AdapterError, shown
from ._model import DeviceInfo, OpAgg, OpRuns, ProfileData, Step
from ._proto import messages

__all__ = ["parse_xspace", "profile_from_xspaces"]

_TPU_PLANE = re.compile(r"^/device:TPU:(\d+)$")
_GPU_PLANE = re.compile(r"^/device:GPU:(\d+)$")
_MODULE_EVENT = re.compile(r"^(?P<name>.*)\((?P<id>\d+)\)$")
#: the host TraceMe XLA's GPU executable opens around one execution of a module
#: (``jit_f:XLA GPU module``; xla/service/gpu/gpu_executable.cc)
_GPU_MODULE_RUN = ":XLA GPU module"

#: derived (not hardware) lines on device planes
_DERIVED_LINES = frozenset(
    {
        "Steps", "XLA Modules", "XLA Ops", "Async XLA Ops", "XLA TraceMe", "Overlay",
        "TensorFlow Ops", "TensorFlow Name Scope", "Framework Ops", "Framework Name Scope",
        "Source code", "Launch Stats", "_counters_",
    }
)  # fmt: skip

#: XEventMetadata stats of a TPU op that are kept verbatim in KernelRecord.raw
_OP_RAW_STATS = (
    "flops", "model_flops", "bytes_accessed", "raw_bytes_accessed", "hlo_category",
    "program_id", "symbol_id", "tf_op", "source", "shape_with_layout", "deduplicated_name",
)  # fmt: skip


def parse_xspace(data: bytes, source: str) -> Any:
    """Parse one ``.xplane.pb``; a one-line :class:`AdapterError` when it is not an XSpace."""
    space = messages().XSpace()  # raises MissingExtra without protobuf
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped,unused-ignore]

    try:
        space.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AdapterError(
            f"{source}: not a valid XSpace protobuf ({detail}); "
            "expected the binary <host>.xplane.pb the profiler writes"
        ) from None
    if not len(space.planes):
        raise AdapterError(
            f"{source}: no XPlane in the file ({len(data)} bytes); "
            "expected the binary <host>.xplane.pb the profiler writes"
        )
    return space


# ------------------------------------------------------------------------------------------
# stats


def _value(stat: Any, names: dict[int, str]) -> Any:
    kind = stat.WhichOneof("value")
    if kind is None:
        return None
    if kind == "ref_value":
        return names.get(stat.ref_value, "")
    return getattr(stat, kind)


def _stats(stats: Iterable[Any], names: dict[int, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for s in stats:
        out[names.get(s.metadata_id, f"stat#{s.metadata_id}")] = _value(s, names)
    return out


def _num(v: Any) -> float | None:
    """A finite number from a stat value (numbers, numeric text); None otherwise."""
    if isinstance(v, (bool, int, float)):
        f = float(v)
    elif isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return None
    else:
        return None
    return f if math.isfinite(f) else None


def _cost(v: Any) -> float | None:
    """A FLOP or byte count: finite and not negative, else None (never a negative total)."""
    f = _num(v)
    return f if f is not None and f >= 0 else None


def _pos(v: Any) -> float | None:
    """A positive finite number, else None (device capabilities)."""
    f = _num(v)
    return f if f is not None and f > 0 else None


def _hbm_bytes(breakdown: bytes) -> float | None:
    """HBM bytes of one occurrence from a ``memory_access_breakdown`` stat (None: no breakdown)."""
    if not breakdown:
        return None
    msg = messages().MemoryAccessBreakdown()
    try:
        msg.ParseFromString(breakdown)
    except Exception:  # noqa: BLE001 - an opaque stat we cannot decode is simply not used
        return None
    if not len(msg.memory_accessed):
        return None
    return float(sum(m.bytes_accessed for m in msg.memory_accessed if m.memory_space == 1))


_KERNEL_DETAIL = re.compile(r"(\w+):([^\s]+)")


def parse_kernel_details(text: str) -> dict[str, str]:
    """``regs:38 shm:0 grid:160,1,1 block:1024,1,1`` -> {"regs": "38", ...}."""
    return dict(_KERNEL_DETAIL.findall(text))


def _dims(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        dims = [int(x) for x in text.split(",")]
    except ValueError:
        return None
    return dims if all(d >= 0 for d in dims) else None


# ------------------------------------------------------------------------------------------
# planes


class _Collector:
    def __init__(self, profile: ProfileData) -> None:
        self.p = profile
        self.module_names: dict[str, str] = {}  # program_id -> module name
        self.device_planes: list[tuple[int, Any, dict[int, str], dict[str, Any]]] = []
        self.host_planes: list[tuple[Any, dict[int, str]]] = []
        #: (host index, ordinal) -> steps; the first host's lowest ordinal is used
        self.steps_by_device: dict[tuple[int, int], list[Step]] = {}
        self.host = 0  # index of the XSpace (host) being read
        self.negative_durations = 0  # events skipped: a negative duration is no time
        self.negative_costs = 0  # flops / bytes stats below zero, left out
        #: launch correlation id -> the host module execution it was made in (this host)
        self.executions: dict[int, int] = {}

    # -- bookkeeping -----------------------------------------------------------------------
    def op(self, key: str, name: str) -> OpAgg:
        agg = self.p.ops.get(key)
        if agg is None:
            agg = self.p.ops[key] = OpAgg(name=name, key=key)
        return agg

    # -- TPU ---------------------------------------------------------------------------------
    def _tpu_op_info(
        self, plane: Any, mid: int, names: dict[int, str]
    ) -> tuple[str, str, dict[str, Any], float | None]:
        md = plane.event_metadata.get(mid)
        if md is None:
            return (f"event#{mid}", f"event#{mid}", {}, None)
        stats = _stats(md.stats, names)
        name = md.display_name or md.name
        program_id = stats.get("program_id")
        key = f"{program_id}/{name}" if program_id is not None else name
        hbm = None
        mab = stats.pop("memory_access_breakdown", None)
        if isinstance(mab, bytes):
            hbm = _hbm_bytes(mab)
        stats.pop("source_stack", None)  # long, kept out of packets
        stats["__long_name"] = md.name
        return (key, name, stats, hbm)

    def tpu_plane(self, ordinal: int, plane: Any, names: dict[int, str]) -> bool:
        by_id = {v: k for k, v in names.items()}
        dd_id = by_id.get("device_duration_ps")
        do_id = by_id.get("device_offset_ps", -1)
        info_cache: dict[int, tuple[OpAgg, int, float, float, float | None, float | None]] = {}
        has_events = False
        bounds: list[tuple[int, int]] = []  # (first start, last end) of ops and steps
        for line in plane.lines:
            lname = line.name
            if lname == "XLA Modules":
                for ev in line.events:
                    has_events = True
                    if ev.duration_ps < 0:
                        self.negative_durations += 1
                        continue
                    self.p.program_time_ps += ev.duration_ps
                    md = plane.event_metadata.get(ev.metadata_id)
                    if md is None:
                        continue
                    self.p.programs[md.name] = self.p.programs.get(md.name, 0) + 1
                    m = _MODULE_EVENT.match(md.name)
                    if m:
                        self.module_names.setdefault(m.group("id"), m.group("name"))
            elif lname == "Steps":
                self.steps_by_device.setdefault((self.host, ordinal), []).extend(self._steps(plane, line))
                for ev in line.events:  # xprof's device time spans the steps too
                    bounds.append(_device_span(ev, dd_id, do_id))
            elif lname == "XLA Ops":
                has_events = has_events or bool(len(line.events))
                self._tpu_ops_line(ordinal, plane, line, names, dd_id, do_id, info_cache, bounds)
        if bounds:
            self.p.device_time_ps += max(b[1] for b in bounds) - min(b[0] for b in bounds)
        return has_events

    def _tpu_ops_line(
        self,
        ordinal: int,
        plane: Any,
        line: Any,
        names: dict[int, str],
        dd_id: int | None,
        do_id: int,
        cache: dict[int, Any],
        bounds: list[tuple[int, int]],
    ) -> None:
        stack: list[tuple[int, OpAgg]] = []  # (end_ps, op) of enclosing events
        spans: list[tuple[int, int, int, OpAgg]] = []
        first = last = None
        for ev in line.events:
            # device-clock times when recorded (xprof uses them), else the event's own
            start = ev.offset_ps
            dur = ev.duration_ps
            if dd_id is not None:
                for s in ev.stats:
                    sid = s.metadata_id
                    if sid == dd_id:  # a oneof: at most one of the two is non-zero
                        dur = s.int64_value + s.uint64_value
                    elif sid == do_id:
                        start = s.int64_value + s.uint64_value
            if dur < 0:  # no time and no occurrence; before the op is made (no empty record)
                self.negative_durations += 1
                continue
            mid = ev.metadata_id
            entry = cache.get(mid)
            if entry is None:
                key, name, stats, hbm = self._tpu_op_info(plane, mid, names)
                agg = self.op(key, name)
                if agg.occurrences == 0 and not agg.raw:
                    self._init_tpu_op(agg, stats, hbm)
                costs = [_cost(stats.get(k)) for k in ("flops", "model_flops", "bytes_accessed")]
                self.negative_costs += sum(
                    1
                    for k, c in zip(("flops", "model_flops", "bytes_accessed"), costs, strict=True)
                    if c is None and _num(stats.get(k)) is not None
                )
                entry = cache[mid] = (agg, costs[0], costs[1], costs[2], hbm)
            agg, flops, model_flops, nbytes, hbm = entry
            n = ev.num_occurrences or 1
            end = start + dur
            if first is None or start < first:
                first = start
            if last is None or end > last:
                last = end
            agg.occurrences += n
            agg.time_ps += dur
            agg.devices.add((self.host, ordinal))
            if flops is not None:
                agg.flops = (agg.flops or 0.0) + flops * n
            if model_flops is not None:
                agg.model_flops = (agg.model_flops or 0.0) + model_flops * n
            if nbytes is not None:
                agg.bytes_accessed = (agg.bytes_accessed or 0.0) + nbytes * n
                agg.hbm_bytes = (agg.hbm_bytes or 0.0) + (hbm if hbm is not None else nbytes) * n
            spans.append((start, -end, dur, agg))
        if first is not None and last is not None:
            bounds.append((first, last))
        # self time: an event nested inside another on the same line (device clock) is its child
        spans.sort(key=lambda t: (t[0], t[1]))
        for start, neg_end, dur, agg in spans:
            while stack and stack[-1][0] <= start:
                stack.pop()
            if stack:
                stack[-1][1].children_ps += dur
            stack.append((-neg_end, agg))

    def _init_tpu_op(self, agg: OpAgg, stats: dict[str, Any], hbm: float | None) -> None:
        agg.raw_name = stats.pop("__long_name", None)
        cat = stats.get("hlo_category")
        agg.category = str(cat) if cat is not None else None
        pid = stats.get("program_id")
        agg.program_id = str(pid) if pid is not None else None
        for k in _OP_RAW_STATS:
            if k in stats and not isinstance(stats[k], bytes):
                v = stats[k]
                agg.raw[k] = (str(v) if k in ("program_id", "symbol_id") else v, None)
        if hbm is not None:
            agg.raw["hbm_bytes_accessed"] = (hbm, "B")

    # -- GPU ---------------------------------------------------------------------------------
    def gpu_plane(self, ordinal: int, plane: Any, names: dict[int, str]) -> bool:
        by_id = {v: k for k, v in names.items()}
        want = {
            by_id[n]: n
            for n in ("hlo_op", "hlo_module", "program_id", "kernel_details", "memcpy_details",
                      "device_duration_ps", "hlo_category", "tf_op", "flops", "model_flops",
                      "bytes_accessed", "group_id", "run_id", "correlation_id")
            if n in by_id
        }  # fmt: skip
        has_events = False
        first = last = None
        for line in plane.lines:
            lname = line.name
            if lname == "Steps":
                self.steps_by_device.setdefault((self.host, ordinal), []).extend(self._steps(plane, line))
                continue
            if lname in _DERIVED_LINES:
                continue
            md_names: dict[int, str] = {}
            state = OpRuns()
            for ev in line.events:
                has_events = True
                if ev.duration_ps < 0:
                    self.negative_durations += 1
                    continue
                start = ev.offset_ps
                end = start + ev.duration_ps
                if first is None or start < first:
                    first = start
                if last is None or end > last:
                    last = end
                mid = ev.metadata_id
                kname = md_names.get(mid)
                if kname is None:
                    md = plane.event_metadata.get(mid)
                    kname = md_names[mid] = (md.display_name or md.name) if md is not None else f"event#{mid}"
                found: dict[str, Any] = {}
                for s in ev.stats:
                    n = want.get(s.metadata_id)
                    if n is not None:
                        found[n] = _value(s, names)
                self._gpu_event(ordinal, kname, ev, found, state)
        if first is not None and last is not None:
            self.p.device_time_ps += last - first
        return has_events

    def _gpu_event(self, ordinal: int, kname: str, ev: Any, found: dict[str, Any], state: OpRuns) -> None:
        """One kernel / thunk event. The kernels of one execution of an HLO op are one
        occurrence; :class:`OpRuns` says where an execution ends (the profile's group and
        run ids, the host module execution the launch's correlation id leads to, a kernel
        launched again). ``hlo_op`` may be an ``a::b`` stack (innermost last)."""
        dur = ev.duration_ps
        if "device_duration_ps" in found:
            dur = _num(found["device_duration_ps"]) or dur
        if dur < 0:
            self.negative_durations += 1
            return
        raw_op = found.get("hlo_op")
        hlo_op = str(raw_op).split("::")[-1] if raw_op else ""
        details = found.get("kernel_details")
        new_occurrence = True
        if hlo_op:
            program_id = found.get("program_id")
            module = found.get("hlo_module")
            scope = str(program_id) if program_id is not None else (str(module) if module else "")
            key = f"{scope}/{hlo_op}"
            corr = found.get("correlation_id")
            execution = self.executions.get(corr) if isinstance(corr, int) else None
            mark = (found.get("group_id"), found.get("run_id"), execution)
            new_occurrence = state.new_execution(key, mark, kname)
            agg = self.op(key, hlo_op)
            agg.add_kernel(kname, dur)
            if agg.occurrences == 0:
                agg.program_id = str(program_id) if program_id is not None else None
                agg.module = str(module) if module else None
                cat = found.get("hlo_category")
                agg.category = str(cat) if cat else None
                for k in ("tf_op", "hlo_module", "program_id"):
                    if found.get(k) is not None:
                        agg.raw[k] = (str(found[k]), None)
        elif found.get("memcpy_details") is not None or kname.startswith(("Memcpy", "Memset")):
            agg = self.op(f"memcpy/{kname}", kname)
            agg.kind = "memcpy"
            agg.category = "memcpy"
            size = parse_kernel_details(str(found.get("memcpy_details") or "")).get("size")
            if size is not None and size.isdigit():
                agg.bytes_accessed = (agg.bytes_accessed or 0.0) + float(size)
        else:
            agg = self.op(f"kernel/{kname}/{details or ''}", kname)
            if agg.occurrences == 0:
                agg.kind = "kernel"
                agg.category = "kernel"
                if details:
                    kd = parse_kernel_details(str(details))
                    agg.grid = _dims(kd.get("grid"))
                    agg.block = _dims(kd.get("block"))
                    agg.raw["kernel_details"] = (str(details), None)
                    for k, text in kd.items():
                        if k not in ("grid", "block"):
                            n = _num(text)
                            agg.raw[k] = (n if n is not None else text, None)
            tf_op = found.get("tf_op")
            if tf_op and "tf_op" not in agg.raw:
                agg.raw["tf_op"] = (str(tf_op), None)
        if not hlo_op and found.get("tf_op"):
            state.end()  # a framework op ends a run of one HLO op's kernels
        for k in ("flops", "model_flops", "bytes_accessed"):
            if k in found:
                amount = _cost(found[k])
                if amount is not None:
                    setattr(agg, k, (getattr(agg, k) or 0.0) + amount)
                elif _num(found[k]) is not None:
                    self.negative_costs += 1
        agg.occurrences += int(new_occurrence)
        agg.time_ps += dur
        agg.devices.add((self.host, ordinal))

    # -- host --------------------------------------------------------------------------------
    def host_ops(self, plane: Any, names: dict[int, str]) -> None:
        """XLA CPU thunks (events with an ``hlo_op`` stat) when the run had no accelerator."""
        by_id = {v: k for k, v in names.items()}
        if "hlo_op" not in by_id:
            return
        want = {
            by_id[n]: n
            for n in ("hlo_op", "hlo_module", "program_id", "device_ordinal", "run_id", "group_id")
            if n in by_id
        }
        hlo_id = by_id["hlo_op"]
        for line in plane.lines:
            state = OpRuns()
            for ev in line.events:
                found: dict[str, Any] = {}
                hit = False
                for s in ev.stats:
                    n = want.get(s.metadata_id)
                    if n is not None:
                        found[n] = _value(s, names)
                        hit = hit or (s.metadata_id == hlo_id and bool(found[n]))  # a named op
                if not hit:
                    continue
                md = plane.event_metadata.get(ev.metadata_id)
                kname = (md.display_name or md.name) if md is not None else f"event#{ev.metadata_id}"
                ordinal = found.get("device_ordinal")
                self._gpu_event(int(ordinal) if isinstance(ordinal, int) else 0, kname, ev, found, state)

    def host_steps(self, plane: Any, names: dict[int, str]) -> list[Step]:
        by_id = {v: k for k, v in names.items()}
        step_id = by_id.get("step_num")
        if step_id is None:
            return []
        out: list[Step] = []
        for line in plane.lines:
            for ev in line.events:
                for s in ev.stats:
                    if s.metadata_id == step_id:
                        md = plane.event_metadata.get(ev.metadata_id)
                        label = md.name if md is not None else "step"
                        out.append(
                            Step(
                                name=f"{label} {_value(s, names)}",
                                duration_ps=float(ev.duration_ps),
                            )
                        )
                        break
        return out

    def _steps(self, plane: Any, line: Any) -> list[Step]:
        out = []
        for ev in line.events:
            md = plane.event_metadata.get(ev.metadata_id)
            out.append(
                Step(
                    name=md.name if md is not None else str(ev.metadata_id),
                    duration_ps=float(ev.duration_ps),
                )
            )
        return out


def _module_executions(space: Any) -> dict[int, int]:
    """Launch correlation id -> module execution, from the host threads of one XSpace.

    XLA opens a ``<module>:XLA GPU module`` TraceMe around each execution of a module on the
    host thread that launches its kernels; the driver API events of those launches
    (``cuLaunchKernel``, ``hipModuleLaunchKernel``...) inside it carry the correlation id
    that the kernel's device event carries too. Executions are numbered in file order."""
    out: dict[int, int] = {}
    count = 0
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        names = _plane_names(plane)
        corr_id = next((k for k, v in names.items() if v == "correlation_id"), None)
        if corr_id is None:
            continue
        runs = {
            k
            for k, md in plane.event_metadata.items()
            if (md.display_name or md.name).endswith(_GPU_MODULE_RUN)
        }
        if not runs:
            continue
        for line in plane.lines:
            spans: list[tuple[int, int, int]] = []  # (start, end, execution) of module runs
            launches: list[tuple[int, int]] = []  # (start, correlation id)
            for ev in line.events:
                if ev.metadata_id in runs:
                    spans.append((ev.offset_ps, ev.offset_ps + max(ev.duration_ps, 0), count))
                    count += 1
                    continue
                for st in ev.stats:
                    if st.metadata_id == corr_id:
                        launches.append((ev.offset_ps, st.int64_value + st.uint64_value))
                        break
            if not spans or not launches:
                continue
            spans.sort()
            launches.sort()
            i = 0
            for start, corr in launches:  # the latest-starting run that holds the launch
                while i + 1 < len(spans) and spans[i + 1][0] <= start:
                    i += 1
                s0, e0, execution = spans[i]
                if s0 <= start <= e0:
                    out[corr] = execution
    return out


def _device_span(ev: Any, dd_id: int | None, do_id: int) -> tuple[int, int]:
    """(start, end) of an event on the device clock when recorded, else on the line's clock."""
    start, dur = ev.offset_ps, ev.duration_ps
    for s in ev.stats:
        if s.metadata_id == dd_id:
            dur = s.int64_value + s.uint64_value
        elif s.metadata_id == do_id:
            start = s.int64_value + s.uint64_value
    return start, start + dur


def _plane_names(plane: Any) -> dict[int, str]:
    return {k: v.name for k, v in plane.stat_metadata.items()}


def _device_info(kind: str, stats: dict[str, Any]) -> DeviceInfo:
    info = DeviceInfo(kind=kind, stats=stats)
    if kind == "tpu":
        info.vendor = "google"
        dt = stats.get("device_type_string")
        info.device_type = str(dt) if dt else None
        tf = _pos(stats.get("peak_teraflops_per_second"))
        info.peak_flop_rate = tf * 1e12 if tf else None
        bw = _pos(stats.get("peak_hbm_bw_gigabytes_per_second"))
        info.peak_hbm_bandwidth = bw * 1e9 if bw else None
        return info
    clock = _pos(stats.get("clock_rate"))  # kHz
    info.clock_rate_hz = clock * 1e3 if clock else None
    cores = _pos(stats.get("core_count"))
    info.core_count = int(cores) if cores else None
    mem = _pos(stats.get("memory_size"))
    info.memory_bytes = mem if mem else None
    bw = _pos(stats.get("memory_bandwidth"))  # bytes/s
    info.peak_hbm_bandwidth = bw if bw else None
    major, minor = _num(stats.get("compute_cap_major")), _num(stats.get("compute_cap_minor"))
    if major is not None and 0 <= major < 100 and (minor is None or 0 <= minor < 100):
        info.compute_capability = (int(major), int(minor or 0))
    vendor = stats.get("device_vendor")
    if isinstance(vendor, str) and vendor:
        info.vendor = {"nvidia": "nvidia", "amd": "amd"}.get(vendor.lower(), "other")
    name = stats.get("gpu_device_name")
    info.gpu_device_name = str(name) if name else None
    return info


def profile_from_xspaces(spaces: list[tuple[str, Any]]) -> ProfileData:
    """Aggregate one or more XSpaces (the hosts of one run) into a :class:`ProfileData`."""
    profile = ProfileData(sources=[s for s, _ in spaces], input_kind="xplane")
    col = _Collector(profile)
    devices: dict[tuple[str, int], DeviceInfo] = {}
    active = 0
    host_planes: list[tuple[int, Any, dict[int, str]]] = []
    for host, (source, space) in enumerate(spaces):
        col.host = host
        for h in space.hostnames:
            if h not in profile.hostnames:
                profile.hostnames.append(h)
        # the profiler's own text: one line, control characters escaped (a damaged file's bytes)
        for msg in list(space.errors)[:5]:
            profile.warnings.append(f"{source}: profiler error: {shown(' '.join(msg.split()))}")
        for msg in list(space.warnings)[:5]:
            profile.warnings.append(f"{source}: profiler warning: {shown(' '.join(msg.split()))}")
        col.executions = _module_executions(space)
        for plane in space.planes:
            pname = plane.name
            m_tpu = _TPU_PLANE.match(pname)
            m_gpu = None if m_tpu else _GPU_PLANE.match(pname)
            if m_tpu or m_gpu:
                names = _plane_names(plane)
                stats = _stats(plane.stats, names)
                ordinal = int((m_tpu or m_gpu).group(1))  # type: ignore[union-attr]
                kind = "tpu" if m_tpu else "gpu"
                devices[(source, ordinal)] = _device_info(kind, stats)
                busy = col.tpu_plane(ordinal, plane, names) if m_tpu else col.gpu_plane(ordinal, plane, names)
                active += int(busy)
            elif pname.startswith("/device:TPU:"):
                profile.attributes["sparse_core_planes"] = (
                    int(profile.attributes.get("sparse_core_planes", 0)) + 1
                )
            elif pname == "/host:metadata":
                names = _plane_names(plane)
                for k, v in _stats(plane.stats, names).items():
                    if k.endswith("_version") and isinstance(v, str):
                        profile.versions[k] = v
            elif pname == "Task Environment":
                names = _plane_names(plane)
                for k, v in _stats(plane.stats, names).items():
                    if k in ("profile_start_time", "profile_stop_time") and isinstance(v, int):
                        profile.attributes.setdefault(k, v)
            elif pname.startswith("/host:CPU"):
                host_planes.append((host, plane, _plane_names(plane)))
    if not devices:
        for host, plane, names in host_planes:
            col.host = host
            col.host_ops(plane, names)
        if profile.ops:  # XLA ops on host threads and no device: the XLA CPU client ran them
            profile.device = DeviceInfo(kind="cpu", vendor="cpu", device_type="CPU", count=1, active=1)
        else:  # nothing says which device ran the program: no guess
            profile.warnings.append("no device plane and no XLA op events in the profile; hardware left out")
    else:
        first = devices[min(devices, key=lambda k: (k[1], k[0]))]
        # prefer a plane that carries the capability stats
        for info in devices.values():
            if info.stats:
                first = info
                break
        first.count = len(devices)
        first.active = active
        kinds = {d.kind for d in devices.values()}
        if len(kinds) > 1:
            profile.warnings.append(
                f"profile mixes device kinds {sorted(kinds)}; hardware describes {first.kind}"
            )
        profile.device = first
    # module names for TPU ops (program_id -> name, from the XLA Modules lines)
    for agg in profile.ops.values():
        if agg.module is None and agg.program_id is not None:
            agg.module = col.module_names.get(agg.program_id)
        if agg.kind == "hlo" and agg.kernel_time:
            agg.raw_name = agg.dominant_kernel()  # the kernel with most of the op's time
            agg.raw["kernel_count"] = (len(agg.kernel_time), "count")
    # steps: the device Steps line of the first host's lowest device ordinal, else the host
    # step annotations of the first host that has any (every host runs the same steps)
    if col.steps_by_device:
        host, ordinal = min(col.steps_by_device)
        profile.steps = [Step(s.name, s.duration_ps, ordinal) for s in col.steps_by_device[(host, ordinal)]]
    else:
        for host in sorted({h for h, _, _ in host_planes}):
            for h, plane, names in host_planes:
                if h == host:
                    profile.steps.extend(col.host_steps(plane, names))
            if profile.steps:
                break
    if col.negative_durations:
        profile.warnings.append(
            f"{col.negative_durations} event(s) with a negative duration skipped (no time, no occurrence)"
        )
    if col.negative_costs:
        profile.warnings.append(
            f"{col.negative_costs} negative `flops` / `model_flops` / `bytes_accessed` stat(s) left out"
        )
    return profile
