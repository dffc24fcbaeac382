"""Read the JSON side of XProf: trace-event JSON and xprof's tool outputs.

* ``<host>.trace.json.gz`` (TSL ``TraceEventsToJson``, what JAX writes beside the XSpace):
  ``ts``/``dur`` in microseconds, every stat stringified in ``args``; internal stats
  (``flops``, ``program_id``) are missing, so FLOPs fall back to ``model_flops``.
* xprof tool JSON: GViz DataTables (``{"cols", "rows", "p"}``, or lists of them) for
  hlo_stats, roofline_model, overview_page, framework_op_stats, kernel_stats; proto3 JSON
  for op_profile. Table ``p`` values are strings (``"15.7%"``, ``"-nan"``).
"""

from __future__ import annotations

import bisect
import math
import re
from typing import Any

from ..errors import AdapterError
from ._xprof_model import DeviceInfo, OpAgg, ProfileData, Step
from ._xprof_xplane import parse_kernel_details

__all__ = ["profile_from_tools", "profile_from_trace"]

_DEVICE = re.compile(r"/device:(TPU|GPU):(\d+)$")
_MODULE_EVENT = re.compile(r"^(?P<name>.*)\((?P<id>\d+)\)$")
_GIB = float(1 << 30)


def _num(v: Any) -> float | None:
    """A finite number from a JSON value (numbers, numeric text, ``"15.7%"``); None otherwise."""
    try:
        if isinstance(v, (bool, int, float)):
            f = float(v)
        elif isinstance(v, str):
            f = float(v.strip().rstrip("%"))
        else:
            return None
    except (ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None


def _pos(v: Any) -> float | None:
    f = _num(v)
    return f if f is not None and f > 0 else None


def _dims(text: Any) -> list[int] | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        d = [int(x) for x in text.split(",")]
    except ValueError:
        return None
    return d if all(x >= 0 for x in d) else None


# ------------------------------------------------------------------------------------------
# trace-event JSON


def profile_from_trace(docs: list[tuple[str, Any]]) -> ProfileData:
    """Aggregate trace-event JSON documents (one per host) into :class:`ProfileData`."""
    profile = ProfileData(sources=[s for s, _ in docs], input_kind="trace_json")
    kinds: dict[str, int] = {}
    for source, doc in docs:
        events = doc.get("traceEvents") if isinstance(doc, dict) else doc if isinstance(doc, list) else None
        if not isinstance(events, list):
            raise AdapterError(
                f"{source}: no `traceEvents` array; expected Chrome trace-event JSON written by the profiler"
            )
        _trace_events(source, events, profile, kinds)
    if kinds:
        kind = max(kinds, key=lambda k: kinds[k])
        active = profile.device.active
        profile.device = DeviceInfo(
            kind=kind.lower(),
            vendor="google" if kind == "TPU" else None,
            device_type=kind,
            count=sum(kinds.values()),
            active=active,
        )
        profile.warnings.append(
            "trace-event JSON records no device capabilities: peaks, clock and memory are unknown"
        )
    else:
        profile.device = DeviceInfo(kind="cpu", vendor="cpu", device_type="CPU", count=1, active=1)
    if any(op.flops is None and op.model_flops is not None for op in profile.ops.values()):
        for op in profile.ops.values():
            if op.flops is None and op.model_flops is not None:
                op.flops = op.model_flops
        profile.warnings.append(
            "trace-event JSON omits the `flops` stat; FLOPs are the `model_flops` figures"
        )
    return profile


def _trace_events(source: str, events: list[Any], profile: ProfileData, kinds: dict[str, int]) -> None:
    pnames: dict[Any, str] = {}
    tnames: dict[tuple[Any, Any], str] = {}
    for ev in events:
        if isinstance(ev, dict) and ev.get("ph") == "M":
            meta = ev.get("args")
            label = str(meta.get("name", "")) if isinstance(meta, dict) else ""
            if ev.get("name") == "process_name":
                pnames[ev.get("pid")] = label
            elif ev.get("name") == "thread_name":
                tnames[(ev.get("pid"), ev.get("tid"))] = label
    devices: dict[Any, tuple[str, int]] = {}
    for pid, name in pnames.items():
        m = _DEVICE.search(name)
        if m:
            devices[pid] = (m.group(1), int(m.group(2)))
            kinds[m.group(1)] = kinds.get(m.group(1), 0) + 1
    # modules per device pid, to give TPU ops their program
    modules: dict[Any, tuple[list[float], list[tuple[float, str]]]] = {}
    xs = [ev for ev in events if isinstance(ev, dict) and ev.get("ph") == "X"]
    for ev in xs:
        pid = ev.get("pid")
        if pid in devices and tnames.get((pid, ev.get("tid"))) == "XLA Modules":
            ts, dur = _num(ev.get("ts")), _num(ev.get("dur"))
            if ts is None or dur is None:
                continue
            name = str(ev.get("name", ""))
            profile.program_time_ps += dur * 1e6
            profile.programs[name] = profile.programs.get(name, 0) + 1
            starts, spans = modules.setdefault(pid, ([], []))
            starts.append(ts)
            spans.append((ts + dur, name))
    for starts, spans in modules.values():
        order = sorted(range(len(starts)), key=starts.__getitem__)
        starts[:] = [starts[i] for i in order]
        spans[:] = [spans[i] for i in order]
    steps: dict[int, list[Step]] = {}
    op_spans: dict[Any, list[float]] = {}  # device pid -> [first start, last end] (ps) of its ops
    host_steps: list[Step] = []
    runs: dict[tuple[Any, Any], list[Any]] = {}  # per thread: (op key, group) of the last XLA op
    any_device = bool(devices)
    for ev in xs:
        pid = ev.get("pid")
        raw_args = ev.get("args")
        args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        dur = _num(ev.get("dur"))
        if dur is None:
            continue
        dev = devices.get(pid)
        tname = tnames.get((pid, ev.get("tid")), "")
        if dev is not None:
            if tname == "Steps":
                steps.setdefault(dev[1], []).append(Step(str(ev.get("name", "")), dur * 1e6, dev[1]))
                continue
            if dev[0] == "TPU":
                if tname == "XLA Ops":
                    _tpu_trace_op(ev, args, dur, dev[1], modules.get(pid), profile)
                    start = _num(args.get("device_offset_ps"))
                    dd = _num(args.get("device_duration_ps"))
                    if start is None or dd is None:
                        start, dd = (_num(ev.get("ts")) or 0.0) * 1e6, dur * 1e6
                    span = op_spans.setdefault(pid, [start, start + dd])
                    span[0] = min(span[0], start)
                    span[1] = max(span[1], start + dd)
                continue
            if tname in (
                "XLA Modules",
                "XLA Ops",
                "TensorFlow Ops",
                "TensorFlow Name Scope",
                "Framework Ops",
                "Source code",
            ):
                continue
            _gpu_trace_op(ev, args, dur, dev[1], profile, runs.setdefault((pid, ev.get("tid")), [None, None]))
        else:
            if "step_num" in args:
                host_steps.append(Step(f"{ev.get('name', 'step')} {args['step_num']}", dur * 1e6))
            elif not any_device and "hlo_op" in args:
                ordinal = _int(args.get("device_ordinal")) or 0
                state = runs.setdefault((pid, ev.get("tid")), [None, None])
                _gpu_trace_op(ev, args, dur, ordinal, profile, state)
    for first_ps, last_ps in op_spans.values():
        profile.device_time_ps += last_ps - first_ps
    profile.device.active += len(op_spans)
    if steps:
        first = min(steps)
        profile.steps.extend(steps[first])
    else:
        profile.steps.extend(host_steps)


def _int(v: Any) -> int | None:
    f = _num(v)
    return int(f) if f is not None else None


def _tpu_trace_op(
    ev: dict[str, Any],
    args: dict[str, Any],
    dur_us: float,
    ordinal: int,
    mods: tuple[list[float], list[tuple[float, str]]] | None,
    profile: ProfileData,
) -> None:
    name = str(ev.get("name", ""))
    module = program = None
    ts = _num(ev.get("ts"))
    if mods is not None and ts is not None:
        i = bisect.bisect_right(mods[0], ts) - 1
        if i >= 0 and mods[1][i][0] >= ts:
            m = _MODULE_EVENT.match(mods[1][i][1])
            if m:
                module, program = m.group("name"), m.group("id")
    key = f"{program}/{name}" if program else name
    agg = profile.ops.get(key)
    if agg is None:
        agg = profile.ops[key] = OpAgg(name=name, key=key, program_id=program, module=module)
        agg.raw_name = str(args["long_name"]) if "long_name" in args else None
        cat = args.get("hlo_category")
        agg.category = str(cat) if cat is not None else None
        for k in (
            "model_flops",
            "bytes_accessed",
            "raw_bytes_accessed",
            "tf_op",
            "source",
            "shape_with_layout",
            "hlo_category",
        ):
            if k in args:
                v = _num(args[k]) if k in ("model_flops", "bytes_accessed", "raw_bytes_accessed") else args[k]
                agg.raw[k] = (v if v is not None else args[k], None)
    dd = _num(args.get("device_duration_ps"))
    agg.occurrences += 1
    agg.time_ps += dd if dd is not None else dur_us * 1e6
    agg.devices.add(ordinal)
    for attr, k in (
        ("model_flops", "model_flops"),
        ("bytes_accessed", "bytes_accessed"),
        ("flops", "flops"),
    ):
        v = _num(args.get(k))
        if v is not None:
            setattr(agg, attr, (getattr(agg, attr) or 0.0) + v)
    if agg.bytes_accessed is not None:
        agg.hbm_bytes = agg.bytes_accessed


def _gpu_trace_op(
    ev: dict[str, Any],
    args: dict[str, Any],
    dur_us: float,
    ordinal: int,
    profile: ProfileData,
    state: list[Any],
) -> None:
    kname = str(ev.get("name", ""))
    hlo_op = str(args.get("hlo_op") or "").split("::")[-1]
    details = args.get("kernel_details")
    new_occurrence = True
    if hlo_op:
        scope = str(args.get("program_id") or args.get("hlo_module") or "")
        key = f"{scope}/{hlo_op}"
        group = (args.get("group_id"), args.get("run_id"))
        new_occurrence = state[0] != key or state[1] != group
        state[0], state[1] = key, group
        agg = profile.ops.get(key)
        if agg is None:
            agg = profile.ops[key] = OpAgg(name=hlo_op, key=key, raw_name=kname)
            agg.module = str(args["hlo_module"]) if args.get("hlo_module") else None
            agg.program_id = str(args["program_id"]) if args.get("program_id") else None
            agg.category = str(args["hlo_category"]) if args.get("hlo_category") else None
            if args.get("tf_op"):
                agg.raw["tf_op"] = (str(args["tf_op"]), None)
    elif "memcpy_details" in args or kname.startswith(("Memcpy", "Memset")):
        key = f"memcpy/{kname}"
        agg = profile.ops.setdefault(key, OpAgg(name=kname, key=key, kind="memcpy", category="memcpy"))
    else:
        key = f"kernel/{kname}/{details or ''}"
        agg = profile.ops.get(key)
        if agg is None:
            agg = profile.ops[key] = OpAgg(name=kname, key=key, kind="kernel", category="kernel")
            if isinstance(details, str):
                kd = parse_kernel_details(details)
                agg.grid, agg.block = _dims(kd.get("grid")), _dims(kd.get("block"))
                agg.raw["kernel_details"] = (details, None)
                for k, v in kd.items():
                    if k not in ("grid", "block"):
                        n = _num(v)
                        agg.raw[k] = (n if n is not None else v, None)
    if not hlo_op and args.get("tf_op"):
        state[0] = state[1] = None
    dd = _num(args.get("device_duration_ps"))
    agg.occurrences += int(new_occurrence)
    agg.time_ps += dd if dd is not None else dur_us * 1e6
    agg.devices.add(ordinal)


# ------------------------------------------------------------------------------------------
# tool JSON


def _tables(doc: Any) -> list[dict[str, Any]]:
    """The GViz tables of a tool document (one table or a list of them); others dropped."""
    items = doc if isinstance(doc, list) else [doc]
    return [t for t in items if isinstance(t, dict)]


def _p(table: dict[str, Any]) -> dict[str, Any]:
    p = table.get("p")
    return p if isinstance(p, dict) else {}


def _rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    raw_cols = table.get("cols")
    raw_rows = table.get("rows")
    if not isinstance(raw_cols, list) or not isinstance(raw_rows, list):
        return []
    cols = [
        str(c.get("id") or c.get("label") or f"col{i}") if isinstance(c, dict) else f"col{i}"
        for i, c in enumerate(raw_cols)
    ]
    out = []
    for row in raw_rows:
        cells = row.get("c") if isinstance(row, dict) else None
        if not isinstance(cells, list):
            continue
        out.append(
            {
                cols[i]: (c.get("v") if isinstance(c, dict) else None)
                for i, c in enumerate(cells)
                if i < len(cols)
            }
        )
    return out


def _col_ids(table: dict[str, Any]) -> set[str]:
    cols = table.get("cols")
    if not isinstance(cols, list):
        return set()
    return {str(c.get("id")) for c in cols if isinstance(c, dict)}


def _identify(doc: Any) -> str | None:
    if isinstance(doc, dict):
        if "traceEvents" in doc:
            return "trace_viewer"
        if "run_environment" in doc or "performance_summary" in doc:
            return "cli_overview"
        if "peak_flop_rate" in doc and "cols" not in doc:
            return "cli_device_information"
        if isinstance(doc.get("byProgram") or doc.get("byProgramExcludeIdle"), dict):
            return "op_profile"
    tables = _tables(doc)
    ids: set[str] = set()
    for t in tables:
        ids |= _col_ids(t)
    if "hlo_op_name" in ids:
        return "hlo_stats"
    if "kernel_name" in ids:
        return "kernel_stats"
    if "host_or_device" in ids:
        return "framework_op_stats"
    if "roofline_efficiency" in ids or any("peak_flop_rate" in _p(t) for t in tables):
        return "roofline_model"
    if "selfTimePercent" in ids or any("device_type" in _p(t) for t in tables):
        return "overview_page"
    return None


def profile_from_tools(docs: list[tuple[str, Any]]) -> ProfileData:
    """Combine xprof tool outputs of one profile into :class:`ProfileData`."""
    profile = ProfileData(sources=[s for s, _ in docs], input_kind="tool_json")
    by_tool: dict[str, tuple[str, Any]] = {}
    for source, doc in docs:
        tool = _identify(doc)
        if tool is None:
            raise AdapterError(
                f"{source}: not an xprof tool output; expected hlo_stats, roofline_model, "
                "overview_page, op_profile, framework_op_stats or kernel_stats JSON "
                "(or xprof CLI get_overview / get_device_information)"
            )
        by_tool.setdefault(tool, (source, doc))
    if "trace_viewer" in by_tool:
        source, doc = by_tool.pop("trace_viewer")
        if not by_tool:  # the trace viewer's events are the last resort
            trace = profile_from_trace([(source, doc)])
            trace.input_kind = "tool_json"
            trace.tools.append("trace_viewer")
            return trace
    profile.tools = sorted(by_tool)
    dev = DeviceInfo()
    if "overview_page" in by_tool:
        _overview(by_tool["overview_page"][1], dev, profile)
    if "roofline_model" in by_tool:
        _roofline_env(by_tool["roofline_model"][1], dev, profile)
    elif "cli_device_information" in by_tool:
        _cli_device(by_tool["cli_device_information"][1], dev)
    if "cli_overview" in by_tool and "overview_page" not in by_tool:
        env = by_tool["cli_overview"][1].get("run_environment") or {}
        if isinstance(env, dict):
            _overview([{"p": env}], dev, profile)
    if "op_profile" in by_tool and dev.kind == "unknown":
        dt = by_tool["op_profile"][1].get("deviceType")  # op_profile documents are dicts
        if isinstance(dt, str) and dt:
            dev.device_type = dev.device_type or dt
    _kind_of(dev)
    profile.device = dev
    if "hlo_stats" in by_tool:
        _hlo_stats(by_tool["hlo_stats"][1], profile)
    elif "op_profile" in by_tool:
        _op_profile(by_tool["op_profile"][1], profile)
    elif "roofline_model" in by_tool:
        _roofline_ops(by_tool["roofline_model"][1], profile)
    elif "framework_op_stats" in by_tool:
        _framework_ops(by_tool["framework_op_stats"][1], profile)
    if "kernel_stats" in by_tool and not any(op.kind == "hlo" for op in profile.ops.values()):
        _kernel_stats(by_tool["kernel_stats"][1], profile)
    return profile


def _kind_of(dev: DeviceInfo) -> None:
    dt = (dev.device_type or "").upper()
    if "TPU" in dt:
        dev.kind, dev.vendor = "tpu", "google"
    elif "GPU" in dt:
        dev.kind = "gpu"
        dev.vendor = "nvidia" if "NVIDIA" in dt else "amd" if "AMD" in dt else None
        m = re.search(r"gfx\w+", dev.device_type or "")
        if m:
            dev.gpu_device_name = m.group(0)
    elif dt == "CPU":
        dev.kind, dev.vendor = "cpu", "cpu"


def _overview(doc: Any, dev: DeviceInfo, profile: ProfileData) -> None:
    tables = _tables(doc)
    for t in tables:
        if not isinstance(t, dict):
            continue
        p = _p(t)
        if "device_type" in p:
            dev.device_type = str(p["device_type"]) or dev.device_type
            m = re.match(r"\s*(\d+)", str(p.get("device_core_count", "")))
            if m:
                dev.count = int(m.group(1))
            for k in ("host_count", "is_training"):
                if k in p:
                    profile.attributes[k] = str(p[k])
        if "mxu_utilization_percent" in p or "device_duty_cycle_percent" in p:
            for k in (
                "mxu_utilization_percent",
                "device_duty_cycle_percent",
                "device_idle_time_percent",
                "hbm_utilization_percent",
                "flop_rate_utilization_relative_to_roofline",
                "memory_bw_utilization_relative_to_hw_limit",
            ):
                if k in p and _num(p[k]) is not None:
                    profile.attributes[k] = _num(p[k])
        if "steptime_ms_average" in p:
            for row in _rows(t):
                ms = _num(row.get("stepTimeMs"))
                if ms is None:
                    parts = [_num(v) for k, v in row.items() if k.endswith("TimeMs")]
                    nums = [x for x in parts if x is not None]
                    ms = sum(nums) if nums else None
                if ms is not None:
                    profile.steps.append(Step(str(row.get("stepnum", len(profile.steps))), ms * 1e9))


def _cli_device(doc: dict[str, Any], dev: DeviceInfo) -> None:
    """``xprof get_device_information`` output: GFLOP/s and GiB/s, with a ``units`` map."""
    if doc.get("device_type"):
        dev.device_type = str(doc["device_type"])
    gflops = _pos(doc.get("peak_flop_rate"))
    if gflops:
        dev.peak_flop_rate = gflops * 1e9
    gib = _pos(doc.get("peak_hbm_bw_gibs"))
    if gib:
        dev.peak_hbm_bandwidth = gib * _GIB


def _roofline_env(doc: Any, dev: DeviceInfo, profile: ProfileData) -> None:
    tables = _tables(doc)
    for t in tables:
        p = _p(t)
        if "peak_flop_rate" not in p:
            continue
        if p.get("device_type"):
            dev.device_type = str(p["device_type"])
        gflops = _pos(p.get("peak_flop_rate"))
        if gflops:
            dev.peak_flop_rate = gflops * 1e9
        gib = _pos(p.get("peak_hbm_bw"))
        if gib:
            dev.peak_hbm_bandwidth = gib * _GIB
        for k in ("hbm_ridge_point", "megacore", "has_cmem", "has_merged_vmem"):
            if _num(p.get(k)) is not None:
                dev.stats[f"roofline_{k}"] = _num(p[k])
        for row in _rows(t):
            if row.get("step") == "Total" and row.get("category") == "Program":
                tt = _num(row.get("total_time"))
                if tt:
                    profile.device_time_ps = tt * 1e6
                break
        return


_SKIP_RAW = {
    "source_info",
    "source_stack",
    "rank",
    "hlo_op_expression",
    "hlo_op_name",
    "operation",
    "kernel_name",
}


def _given_from_row(row: dict[str, Any], time_key: str = "total_time") -> dict[str, float]:
    g: dict[str, float] = {}
    tt = _num(row.get(time_key))
    if tt is None:
        return g
    g["time_ps"] = tt * 1e6
    st = _num(row.get("total_self_time"))
    g["self_ps"] = st * 1e6 if st is not None else g["time_ps"]
    sec = tt * 1e-6
    rate = _num(row.get("measured_flop_rate"))
    if rate is None:
        rate = _num(row.get("model_flop_rate"))
    if rate is not None:
        g["flop_rate"] = rate * 1e9
        g["flops"] = rate * 1e9 * sec
    bw = _num(row.get("measured_memory_bw"))
    if bw is not None:
        g["bytes_accessed"] = bw * _GIB * sec
    hbm = _num(row.get("hbm_bw"))
    if hbm is not None:
        g["hbm_bw"] = hbm * _GIB
        g["hbm_bytes"] = hbm * _GIB * sec
    oi = _num(row.get("operational_intensity"))
    if oi is not None:
        g["intensity"] = oi
    return g


def _table_op(row: dict[str, Any], name: str, program: str | None, kind: str, profile: ProfileData) -> OpAgg:
    key = f"{program}/{name}" if program else name
    n = 2
    while key in profile.ops:
        key = f"{program}/{name}#{n}" if program else f"{name}#{n}"
        n += 1
    op = OpAgg(name=name, key=key, program_id=program, kind=kind)
    occ = _num(row.get("occurrences"))
    op.occurrences = int(occ) if occ is not None else 0
    cat = row.get("category") if "category" in row else row.get("type")
    op.category = str(cat) if cat not in (None, "") else None
    for k, v in row.items():
        if k not in _SKIP_RAW and v not in (None, ""):
            n_ = _num(v) if not isinstance(v, str) or k not in ("program_id", "hlo_module_id") else None
            op.raw[k] = (n_ if n_ is not None else v, None)
    profile.ops[key] = op
    return op


def _hlo_stats(doc: Any, profile: ProfileData) -> None:
    tables = _tables(doc)
    for t in tables:
        for row in _rows(t):
            name = row.get("hlo_op_name")
            if not name:
                continue
            prog = str(row["program_id"]) if row.get("program_id") not in (None, "") else None
            op = _table_op(row, str(name), prog, "hlo", profile)
            op.raw_name = str(row["hlo_op_expression"]) if row.get("hlo_op_expression") else None
            op.given = _given_from_row(row)
            # hlo_stats has no measured rate column: its FLOPs are model FLOPs
        break


def _roofline_ops(doc: Any, profile: ProfileData) -> None:
    tables = _tables(doc)
    for t in tables:
        rows = _rows(t)
        if not rows or "operation" not in rows[0]:
            continue
        for row in rows:
            if row.get("step") != "Total" or row.get("category") == "Program":
                continue
            if str(row.get("include_infeed_outfeed", "True")).lower() == "false":
                continue
            prog = str(row["hlo_module_id"]) if row.get("hlo_module_id") not in (None, "", "0") else None
            op = _table_op(row, str(row.get("operation")), prog, "hlo", profile)
            op.given = _given_from_row(row)
        return


def _framework_ops(doc: Any, profile: ProfileData) -> None:
    tables = _tables(doc)
    for t in tables[:1]:
        for row in _rows(t):
            if str(row.get("host_or_device", "")).lower() != "device" or not row.get("operation"):
                continue
            if row.get("type") == "IDLE" or row.get("operation") == "IDLE":
                continue
            op = _table_op(row, str(row["operation"]), None, "framework", profile)
            op.given = _given_from_row(row)


def _kernel_stats(doc: Any, profile: ProfileData) -> None:
    tables = _tables(doc)
    for t in tables:
        for row in _rows(t):
            if not row.get("kernel_name"):
                continue
            op = _table_op(row, str(row["kernel_name"]), None, "kernel", profile)
            op.category = "kernel"
            op.grid, op.block = _dims(row.get("grid_dim")), _dims(row.get("block_dim"))
            tt = _num(row.get("total_duration_us"))
            if tt is not None:
                op.given = {"time_ps": tt * 1e6, "self_ps": tt * 1e6}
            regs, shm = _num(row.get("registers_per_thread")), _num(row.get("shmem_bytes"))
            if regs is not None:
                op.raw["regs"] = (regs, None)
            if shm is not None:
                op.raw["shm"] = (shm, None)
        break


def _op_profile(doc: Any, profile: ProfileData) -> None:
    root = doc.get("byProgramExcludeIdle") or doc.get("byProgram")
    if not isinstance(root, dict):
        return

    def visit(node: dict[str, Any], program: str | None) -> None:
        xla = node.get("xla")
        dup_group = str(node.get("name", "")).endswith(" and its duplicate(s)") and node.get("children")
        if isinstance(xla, dict) and xla.get("category") != "IDLE" and node.get("name") and not dup_group:
            m = node.get("metrics")
            if not isinstance(m, dict):
                m = {}
            name = str(node["name"])
            prog = str(xla.get("programId") or program or "") or None
            key = f"{prog}/{name}" if prog else name
            op = profile.ops.setdefault(key, OpAgg(name=name, key=key, program_id=prog))
            op.raw_name = str(xla.get("expression")) or None
            op.category = str(xla.get("category")) or None
            occ = _num(m.get("occurrences"))
            op.occurrences = int(occ) if occ is not None else 0
            t = _num(m.get("rawTime")) or 0.0
            flops = _num(m.get("rawFlops"))
            arr = m.get("rawBytesAccessedArray")
            hbm = _num(arr[0]) if isinstance(arr, list) and arr else None
            op.given = {"time_ps": t, "self_ps": t}
            if flops is not None:
                op.given["flops"] = flops
            if hbm is not None:
                op.given["bytes_accessed"] = hbm
                op.given["hbm_bytes"] = hbm
            for k in ("rawTime", "rawFlops", "bf16Flops", "occurrences", "avgTimePs"):
                if _num(m.get(k)) is not None:
                    op.raw[k] = (_num(m[k]), None)
            return
        module = _MODULE_EVENT.match(str(node.get("name") or ""))
        if module:
            program = module.group("id")
        children = node.get("children")
        for child in children if isinstance(children, list) else []:
            if isinstance(child, dict):
                visit(child, program)

    visit(root, None)
