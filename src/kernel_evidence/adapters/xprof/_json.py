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

from ...errors import AdapterError
from ._model import DeviceInfo, OpAgg, OpRuns, ProfileData, Step
from ._xplane import _GPU_MODULE_RUN, parse_kernel_details

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


def _short(text: Any, limit: int = 60) -> str:
    t = str(text)
    return t if len(t) <= limit else t[: limit - 3] + "..."


class _Cells:
    """Numbers read from one file's tables or events. A value that is there but is not a
    finite number is left out - never read as 0 - and reported in ``profile.warnings``: one
    warning per field, naming the file, the first place (row / op / event) and how many more."""

    def __init__(self, source: str, profile: ProfileData) -> None:
        self.source = source
        self.profile = profile
        self._bad: dict[str, tuple[str, Any, int]] = {}

    def num(self, value: Any, field: str, place: str, nonneg: bool = False) -> float | None:
        """``value`` as a finite number; ``None`` when absent (null, ``""``) or unreadable
        (or, with ``nonneg``, negative: a duration or a FLOP / byte count)."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        x = _num(value)
        if x is None or nonneg and x < 0:
            self.bad(field, place, value)
            return None
        return x

    def bad(self, field: str, place: str, value: Any) -> None:
        seen = self._bad.get(field)
        self._bad[field] = (place, value, 1) if seen is None else (seen[0], seen[1], seen[2] + 1)

    def report(self, consequences: dict[str, str] | None = None) -> None:
        """Add the warnings (``consequences``: field -> what leaving it out means)."""
        for field, (place, value, n) in self._bad.items():
            shown = "absent" if value is None else _short(repr(value), 40)
            more = f" (and in {n - 1} more)" if n > 1 else ""
            then = (consequences or {}).get(field, "left out")
            x = _num(value)
            what = "negative" if x is not None and x < 0 else "not a finite number"
            self.profile.warnings.append(
                f"{self.source}: {place}: `{field}` is {shown}, {what}{more}; {then}"
            )
        self._bad.clear()


# ------------------------------------------------------------------------------------------
# trace-event JSON


def profile_from_trace(docs: list[tuple[str, Any]]) -> ProfileData:
    """Aggregate trace-event JSON documents (one per host) into :class:`ProfileData`."""
    profile = ProfileData(sources=[s for s, _ in docs], input_kind="trace_json")
    kinds: dict[str, int] = {}
    for host, (source, doc) in enumerate(docs):
        events = _events_of(source, doc)
        _refuse_foreign_trace(source, doc, events)
        _trace_events(source, events, profile, kinds, host)
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
    elif profile.ops:  # XLA ops on host threads and no device: the XLA CPU client ran them
        profile.device = DeviceInfo(kind="cpu", vendor="cpu", device_type="CPU", count=1, active=1)
    else:
        profile.warnings.append(
            "the trace names no device (/device:TPU:n, /device:GPU:n) and holds no XLA op events; "
            "hardware left out"
        )
    for op in profile.ops.values():
        if op.kernel_time:  # a GPU op is named after the kernel with most of its time
            op.raw_name = op.dominant_kernel()
    if any(op.flops is None and op.model_flops is not None for op in profile.ops.values()):
        for op in profile.ops.values():
            if op.flops is None and op.model_flops is not None:
                op.flops = op.model_flops
        profile.warnings.append(
            "trace-event JSON omits the `flops` stat; FLOPs are the `model_flops` figures"
        )
    return profile


_TRACE_EXPECTED = "expected a trace-event JSON object with `traceEvents` (or a JSON array of trace events)"


def _events_of(source: str, doc: Any) -> list[Any]:
    """The trace events of a document: ``{"traceEvents": [...]}`` or a bare array of events.
    A one-line :class:`AdapterError` when there is no event object (``{"ph": ...}``) at all."""
    if isinstance(doc, dict):
        events = doc.get("traceEvents")
        if not isinstance(events, list):
            raise AdapterError(
                f"{source}: no `traceEvents` array; expected Chrome trace-event JSON written by the profiler"
            )
        where = "`traceEvents`"
    elif isinstance(doc, list):
        events, where = doc, "top level: the array"
    else:
        raise AdapterError(f"{source}: top level is {_kind_name(doc)}; {_TRACE_EXPECTED}")
    if not any(isinstance(ev, dict) and isinstance(ev.get("ph"), str) for ev in events):
        held = f"holds {len(events)} value(s), none an event object with `ph`" if events else "is empty"
        raise AdapterError(f"{source}: {where} {held}; {_TRACE_EXPECTED}")
    return events


#: the process names the TSL exporter gives its planes (``/device:TPU:0``, ``/host:CPU``; the
#: xprof trace viewer prefixes the host: ``host0 /device:TPU:0``)
_XPROF_PLANE = re.compile(r"(?:^|\s)/(?:device|host):")


def _refuse_foreign_trace(source: str, doc: Any, events: list[Any]) -> None:
    """A one-line :class:`AdapterError` for a Chrome trace that no XProf exporter wrote: none
    of its processes is named after an XSpace plane (PyTorch's Kineto traces, Perfetto or
    browser traces share the trace-event format but not the planes, so they would give an
    empty packet)."""
    for ev in events:
        if isinstance(ev, dict) and ev.get("ph") == "M" and ev.get("name") == "process_name":
            meta = ev.get("args")
            if isinstance(meta, dict) and _XPROF_PLANE.search(str(meta.get("name", ""))):
                return
    hint = ""
    if isinstance(doc, dict) and (
        "deviceProperties" in doc or "schemaVersion" in doc or "distributedInfo" in doc
    ):
        hint = (
            " (it looks like a PyTorch profiler / Kineto trace: `schemaVersion`, `deviceProperties` or `distributedInfo`;"
            " read it with `kevidence ingest torch-profiler`)"
        )
    raise AdapterError(
        f"{source}: no `process_name` event names an XProf plane (/device:TPU:n, /device:GPU:n, "
        f"/host:CPU){hint}; expected the trace-event JSON that jax.profiler / tf.profiler write "
        "(<host>.trace.json.gz)"
    )


def _kind_name(x: Any) -> str:
    if x is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string"}.get(
        type(x), type(x).__name__
    )


def _trace_events(
    source: str, events: list[Any], profile: ProfileData, kinds: dict[str, int], host: int = 0
) -> None:
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
    # complete events with their start and duration (us), read once; a `dur` that is absent
    # or not a number skips the event, and is reported
    cells = _Cells(source, profile)
    xs: list[tuple[dict[str, Any], float | None, float | None, str]] = []
    for i, ev in enumerate(events):
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        place = f"traceEvents[{i}] `{_short(ev.get('name', ''))}`"
        if ev.get("dur") is None:
            cells.bad("dur", place, None)
        dur = cells.num(ev.get("dur"), "dur", place, nonneg=True)
        xs.append((ev, cells.num(ev.get("ts"), "ts", place), dur, place))
    # modules per device pid, to give TPU ops their program
    modules: dict[Any, tuple[list[float], list[tuple[float, str]]]] = {}
    for ev, ts, dur, _ in xs:
        pid = ev.get("pid")
        if pid in devices and tnames.get((pid, ev.get("tid"))) == "XLA Modules":
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
    busy_gpu: set[Any] = set()  # GPU device pids with at least one kernel / op event
    host_steps: list[Step] = []
    runs: dict[tuple[Any, Any], OpRuns] = {}  # per thread: where the last XLA op's execution ends
    executions = _module_executions(xs, devices)
    any_device = bool(devices)
    for ev, ts, dur, place in xs:
        pid = ev.get("pid")
        raw_args = ev.get("args")
        args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
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
                    _tpu_trace_op(ev, args, ts, dur, (host, dev[1]), modules.get(pid), profile, cells, place)
                    start = cells.num(args.get("device_offset_ps"), "device_offset_ps", place)
                    dd = _num(args.get("device_duration_ps"))  # reported by _tpu_trace_op
                    if start is None or dd is None or dd < 0:
                        start, dd = (ts or 0.0) * 1e6, dur * 1e6
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
            state = runs.setdefault((pid, ev.get("tid")), OpRuns())
            _gpu_trace_op(ev, args, dur, (host, dev[1]), profile, state, cells, place, executions)
            busy_gpu.add(pid)
        else:
            if "step_num" in args:
                host_steps.append(Step(f"{ev.get('name', 'step')} {args['step_num']}", dur * 1e6))
            elif not any_device and "hlo_op" in args:
                ordinal = _int(args.get("device_ordinal")) or 0
                state = runs.setdefault((pid, ev.get("tid")), OpRuns())
                _gpu_trace_op(ev, args, dur, (host, ordinal), profile, state, cells, place, executions)
    cells.report(
        {
            "dur": "the event was skipped",
            "ts": "the event's program and start are unknown",
            "device_duration_ps": "the event's `dur` was used",
            "device_offset_ps": "the event's `ts` was used",
        }
    )
    for first_ps, last_ps in op_spans.values():
        profile.device_time_ps += last_ps - first_ps
    profile.device.active += len(op_spans) + len(busy_gpu - set(op_spans))
    if profile.steps:  # every host runs the same steps: the first host's are kept
        return
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
    ts: float | None,
    dur_us: float,
    device: tuple[int, int],
    mods: tuple[list[float], list[tuple[float, str]]] | None,
    profile: ProfileData,
    cells: _Cells,
    place: str,
) -> None:
    name = str(ev.get("name", ""))
    module = program = None
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
    dd = cells.num(args.get("device_duration_ps"), "device_duration_ps", place, nonneg=True)
    agg.occurrences += 1
    agg.time_ps += dd if dd is not None else dur_us * 1e6
    agg.devices.add(device)
    for attr, k in (
        ("model_flops", "model_flops"),
        ("bytes_accessed", "bytes_accessed"),
        ("flops", "flops"),
    ):
        v = cells.num(args.get(k), k, place, nonneg=True)
        if v is not None:
            setattr(agg, attr, (getattr(agg, attr) or 0.0) + v)
    if agg.bytes_accessed is not None:
        agg.hbm_bytes = agg.bytes_accessed


def _module_executions(
    xs: list[tuple[dict[str, Any], float | None, float | None, str]], devices: dict[Any, tuple[str, int]]
) -> dict[Any, int]:
    """Launch correlation id -> module execution, from the host threads' events: the
    ``<module>:XLA GPU module`` event around one execution and the driver API events of its
    launches inside it, whose ``correlation_id`` the kernels' device events carry too (as in
    the XSpace reader)."""
    spans: dict[tuple[Any, Any], list[tuple[float, float, int]]] = {}
    launches: dict[tuple[Any, Any], list[tuple[float, Any]]] = {}
    count = 0
    for ev, ts, dur, _ in xs:
        if ts is None or dur is None or ev.get("pid") in devices:
            continue
        thread = (ev.get("pid"), ev.get("tid"))
        if str(ev.get("name", "")).endswith(_GPU_MODULE_RUN):
            spans.setdefault(thread, []).append((ts, ts + dur, count))
            count += 1
            continue
        args = ev.get("args")
        corr = args.get("correlation_id") if isinstance(args, dict) else None
        if corr is not None and not isinstance(corr, (dict, list)):
            launches.setdefault(thread, []).append((ts, corr))
    out: dict[Any, int] = {}
    for thread, runs in spans.items():
        runs.sort()
        starts = [r[0] for r in runs]
        for start, corr in launches.get(thread, ()):
            i = bisect.bisect_right(starts, start) - 1  # the latest run started by then
            if i >= 0 and start <= runs[i][1]:
                out[corr] = runs[i][2]
    return out


def _gpu_trace_op(
    ev: dict[str, Any],
    args: dict[str, Any],
    dur_us: float,
    device: tuple[int, int],
    profile: ProfileData,
    state: OpRuns,
    cells: _Cells,
    place: str,
    executions: dict[Any, int],
) -> None:
    kname = str(ev.get("name", ""))
    hlo_op = str(args.get("hlo_op") or "").split("::")[-1]
    details = args.get("kernel_details")
    new_occurrence = True
    if hlo_op:
        scope = str(args.get("program_id") or args.get("hlo_module") or "")
        key = f"{scope}/{hlo_op}"
        corr = args.get("correlation_id")
        execution = executions.get(corr) if corr is not None and not isinstance(corr, (dict, list)) else None
        mark = (args.get("group_id"), args.get("run_id"), execution)
        new_occurrence = state.new_execution(key, mark, kname)
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
        state.end()
    dd = cells.num(args.get("device_duration_ps"), "device_duration_ps", place, nonneg=True)
    agg.occurrences += int(new_occurrence)
    ps = dd if dd is not None else dur_us * 1e6
    agg.time_ps += ps
    agg.devices.add(device)
    if hlo_op:
        agg.add_kernel(kname, ps)


# ------------------------------------------------------------------------------------------
# tool JSON


def _tables(doc: Any) -> list[dict[str, Any]]:
    """The GViz tables of a tool document (one table or a list of them); others dropped."""
    items = doc if isinstance(doc, list) else [doc]
    return [t for t in items if isinstance(t, dict)]


def _p(table: dict[str, Any]) -> dict[str, Any]:
    p = table.get("p")
    return p if isinstance(p, dict) else {}


def _rows(table: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """(row number from 1, column id -> cell value) of every row of a GViz table."""
    raw_cols = table.get("cols")
    raw_rows = table.get("rows")
    if not isinstance(raw_cols, list) or not isinstance(raw_rows, list):
        return []
    cols = [
        str(c.get("id") or c.get("label") or f"col{i}") if isinstance(c, dict) else f"col{i}"
        for i, c in enumerate(raw_cols)
    ]
    out = []
    for n, row in enumerate(raw_rows, start=1):
        cells = row.get("c") if isinstance(row, dict) else None
        if not isinstance(cells, list):
            continue
        out.append(
            (
                n,
                {
                    cols[i]: (c.get("v") if isinstance(c, dict) else None)
                    for i, c in enumerate(cells)
                    if i < len(cols)
                },
            )
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

    def cells(tool: str) -> _Cells:
        return _Cells(by_tool[tool][0], profile)

    dev = DeviceInfo()
    if "overview_page" in by_tool:
        c = cells("overview_page")
        _overview(by_tool["overview_page"][1], dev, profile, c)
        c.report(_STEP_CONSEQUENCES)
    if "roofline_model" in by_tool:
        c = cells("roofline_model")
        _roofline_env(by_tool["roofline_model"][1], dev, profile, c)
        c.report()
    elif "cli_device_information" in by_tool:
        c = cells("cli_device_information")
        _cli_device(by_tool["cli_device_information"][1], dev, c)
        c.report()
    if "cli_overview" in by_tool and "overview_page" not in by_tool:
        env = by_tool["cli_overview"][1].get("run_environment") or {}
        if isinstance(env, dict):
            c = cells("cli_overview")
            _overview([{"p": env}], dev, profile, c)
            c.report(_STEP_CONSEQUENCES)
    if "op_profile" in by_tool and dev.kind == "unknown":
        dt = by_tool["op_profile"][1].get("deviceType")  # op_profile documents are dicts
        if isinstance(dt, str) and dt:
            dev.device_type = dev.device_type or dt
    _kind_of(dev)
    profile.device = dev
    ops_tool = next(
        (t for t in ("hlo_stats", "op_profile", "roofline_model", "framework_op_stats") if t in by_tool),
        None,
    )
    if ops_tool is not None:
        c = cells(ops_tool)
        _OPS_READERS[ops_tool](by_tool[ops_tool][1], profile, c)
        c.report(_OP_CONSEQUENCES)
    if "kernel_stats" in by_tool and not any(op.kind == "hlo" for op in profile.ops.values()):
        c = cells("kernel_stats")
        _kernel_stats(by_tool["kernel_stats"][1], profile, c)
        c.report(_OP_CONSEQUENCES)
    return profile


_NO_TIME = "the op is given no duration, and the summary op_time is left out"
_OP_CONSEQUENCES = {
    "total_time": _NO_TIME,
    "total_duration_us": _NO_TIME,
    "rawTime": _NO_TIME,
    "occurrences": "the op's invocation count is left out",
}
_STEP_CONSEQUENCES = {"stepTimeMs": "the step is left out of the step times"}


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


def _overview(doc: Any, dev: DeviceInfo, profile: ProfileData, cells: _Cells) -> None:
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
                x = cells.num(p.get(k), k, "overview_page `p`")
                if x is not None:
                    profile.attributes[k] = x
        if "steptime_ms_average" in p:
            for n, row in _rows(t):
                place = f"overview_page step row {n} (step {_short(row.get('stepnum', '?'))})"
                if row.get("stepTimeMs") not in (None, ""):
                    ms = cells.num(row.get("stepTimeMs"), "stepTimeMs", place)
                else:  # no total: the parts add up to the step
                    parts = [(k, v) for k, v in row.items() if k.endswith("TimeMs") and v not in (None, "")]
                    nums = [cells.num(v, k, place) for k, v in parts]
                    if any(x is None for x in nums):
                        cells.bad("stepTimeMs", place, None)  # a part unreadable: no sum
                        ms = None
                    else:
                        ms = sum(x for x in nums if x is not None) if nums else None
                if ms is not None:
                    profile.steps.append(Step(str(row.get("stepnum", len(profile.steps))), ms * 1e9))


def _cli_device(doc: dict[str, Any], dev: DeviceInfo, cells: _Cells) -> None:
    """``xprof get_device_information`` output: GFLOP/s and GiB/s, with a ``units`` map."""
    if doc.get("device_type"):
        dev.device_type = str(doc["device_type"])
    gflops = cells.num(doc.get("peak_flop_rate"), "peak_flop_rate", "device information")
    if gflops is not None and gflops > 0:
        dev.peak_flop_rate = gflops * 1e9
    gib = cells.num(doc.get("peak_hbm_bw_gibs"), "peak_hbm_bw_gibs", "device information")
    if gib is not None and gib > 0:
        dev.peak_hbm_bandwidth = gib * _GIB


def _roofline_env(doc: Any, dev: DeviceInfo, profile: ProfileData, cells: _Cells) -> None:
    tables = _tables(doc)
    for t in tables:
        p = _p(t)
        if "peak_flop_rate" not in p:
            continue
        if p.get("device_type"):
            dev.device_type = str(p["device_type"])
        gflops = cells.num(p.get("peak_flop_rate"), "peak_flop_rate", "roofline_model `p`")
        if gflops is not None and gflops > 0:
            dev.peak_flop_rate = gflops * 1e9
        gib = cells.num(p.get("peak_hbm_bw"), "peak_hbm_bw", "roofline_model `p`")
        if gib is not None and gib > 0:
            dev.peak_hbm_bandwidth = gib * _GIB
        for k in ("hbm_ridge_point", "megacore", "has_cmem", "has_merged_vmem"):
            x = cells.num(p.get(k), k, "roofline_model `p`")
            if x is not None:
                dev.stats[f"roofline_{k}"] = x
        for n, row in _rows(t):
            if row.get("step") == "Total" and row.get("category") == "Program":
                tt = cells.num(row.get("total_time"), "total_time", f"roofline_model row {n} (Program)")
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


def _given_from_row(
    row: dict[str, Any], op: OpAgg, cells: _Cells, place: str, time_key: str = "total_time"
) -> dict[str, float]:
    """The op's totals as the table gives them; a time that is absent or not a number leaves
    the op without a time (``op.unknown``), never with 0."""
    g: dict[str, float] = {}
    tt = cells.num(row.get(time_key), time_key, place)
    if tt is None:
        if row.get(time_key) in (None, ""):
            cells.bad(time_key, place, None)
        op.unknown.add("time_ps")
        return g
    g["time_ps"] = tt * 1e6
    st = cells.num(row.get("total_self_time"), "total_self_time", place)
    g["self_ps"] = st * 1e6 if st is not None else g["time_ps"]
    sec = tt * 1e-6
    rate = cells.num(row.get("measured_flop_rate"), "measured_flop_rate", place)
    if rate is None:
        rate = cells.num(row.get("model_flop_rate"), "model_flop_rate", place)
    if rate is not None:
        g["flop_rate"] = rate * 1e9
        g["flops"] = rate * 1e9 * sec
    bw = cells.num(row.get("measured_memory_bw"), "measured_memory_bw", place)
    if bw is not None:
        g["bytes_accessed"] = bw * _GIB * sec
    hbm = cells.num(row.get("hbm_bw"), "hbm_bw", place)
    if hbm is not None:
        g["hbm_bw"] = hbm * _GIB
        g["hbm_bytes"] = hbm * _GIB * sec
    oi = cells.num(row.get("operational_intensity"), "operational_intensity", place)
    if oi is not None:
        g["intensity"] = oi
    return g


def _table_op(
    row: dict[str, Any],
    name: str,
    program: str | None,
    kind: str,
    profile: ProfileData,
    cells: _Cells,
    place: str,
) -> OpAgg:
    key = f"{program}/{name}" if program else name
    n = 2
    while key in profile.ops:
        key = f"{program}/{name}#{n}" if program else f"{name}#{n}"
        n += 1
    op = OpAgg(name=name, key=key, program_id=program, kind=kind)
    occ = cells.num(row.get("occurrences"), "occurrences", place)
    op.occurrences = int(occ) if occ is not None else 0
    if occ is None and row.get("occurrences") not in (None, ""):
        op.unknown.add("occurrences")
    cat = row.get("category") if "category" in row else row.get("type")
    op.category = str(cat) if cat not in (None, "") else None
    for k, v in row.items():
        if k not in _SKIP_RAW and v not in (None, ""):
            n_ = _num(v) if not isinstance(v, str) or k not in ("program_id", "hlo_module_id") else None
            op.raw[k] = (n_ if n_ is not None else v, None)
    profile.ops[key] = op
    return op


def _row_place(tool: str, n: int, name: str) -> str:
    return f"{tool} row {n} (`{_short(name)}`)"


def _hlo_stats(doc: Any, profile: ProfileData, cells: _Cells) -> None:
    tables = _tables(doc)
    for t in tables:
        for n, row in _rows(t):
            name = row.get("hlo_op_name")
            if not name:
                continue
            place = _row_place("hlo_stats", n, str(name))
            prog = str(row["program_id"]) if row.get("program_id") not in (None, "") else None
            op = _table_op(row, str(name), prog, "hlo", profile, cells, place)
            op.raw_name = str(row["hlo_op_expression"]) if row.get("hlo_op_expression") else None
            op.given = _given_from_row(row, op, cells, place)
            # hlo_stats has no measured rate column: its FLOPs are model FLOPs
        break


def _roofline_ops(doc: Any, profile: ProfileData, cells: _Cells) -> None:
    tables = _tables(doc)
    for t in tables:
        rows = _rows(t)
        if not rows or "operation" not in rows[0][1]:
            continue
        for n, row in rows:
            if row.get("step") != "Total" or row.get("category") == "Program":
                continue
            if str(row.get("include_infeed_outfeed", "True")).lower() == "false":
                continue
            place = _row_place("roofline_model", n, str(row.get("operation")))
            prog = str(row["hlo_module_id"]) if row.get("hlo_module_id") not in (None, "", "0") else None
            op = _table_op(row, str(row.get("operation")), prog, "hlo", profile, cells, place)
            op.given = _given_from_row(row, op, cells, place)
        return


def _framework_ops(doc: Any, profile: ProfileData, cells: _Cells) -> None:
    tables = _tables(doc)
    for t in tables[:1]:
        for n, row in _rows(t):
            if str(row.get("host_or_device", "")).lower() != "device" or not row.get("operation"):
                continue
            if row.get("type") == "IDLE" or row.get("operation") == "IDLE":
                continue
            place = _row_place("framework_op_stats", n, str(row["operation"]))
            op = _table_op(row, str(row["operation"]), None, "framework", profile, cells, place)
            op.given = _given_from_row(row, op, cells, place)


def _kernel_stats(doc: Any, profile: ProfileData, cells: _Cells) -> None:
    tables = _tables(doc)
    for t in tables:
        for n, row in _rows(t):
            if not row.get("kernel_name"):
                continue
            place = _row_place("kernel_stats", n, str(row["kernel_name"]))
            op = _table_op(row, str(row["kernel_name"]), None, "kernel", profile, cells, place)
            op.category = "kernel"
            op.grid, op.block = _dims(row.get("grid_dim")), _dims(row.get("block_dim"))
            tt = cells.num(row.get("total_duration_us"), "total_duration_us", place)
            if tt is not None:
                op.given = {"time_ps": tt * 1e6, "self_ps": tt * 1e6}
            else:
                if row.get("total_duration_us") in (None, ""):
                    cells.bad("total_duration_us", place, None)
                op.unknown.add("time_ps")
            regs = cells.num(row.get("registers_per_thread"), "registers_per_thread", place)
            shm = cells.num(row.get("shmem_bytes"), "shmem_bytes", place)
            if regs is not None:
                op.raw["regs"] = (regs, None)
            if shm is not None:
                op.raw["shm"] = (shm, None)
        break


def _op_profile(doc: Any, profile: ProfileData, cells: _Cells) -> None:
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
            place = f"op_profile node `{_short(name)}`"
            prog = str(xla.get("programId") or program or "") or None
            key = f"{prog}/{name}" if prog else name
            op = profile.ops.setdefault(key, OpAgg(name=name, key=key, program_id=prog))
            op.raw_name = str(xla.get("expression")) or None
            op.category = str(xla.get("category")) or None
            # proto3 JSON leaves out zeros: an absent count or time is 0, a garbled one unknown
            occ = cells.num(m.get("occurrences"), "occurrences", place)
            op.occurrences = int(occ) if occ is not None else 0
            if occ is None and m.get("occurrences") not in (None, ""):
                op.unknown.add("occurrences")
            t = cells.num(m.get("rawTime"), "rawTime", place)
            if t is None and m.get("rawTime") not in (None, ""):
                op.unknown.add("time_ps")
            t = t or 0.0
            flops = cells.num(m.get("rawFlops"), "rawFlops", place)
            arr = m.get("rawBytesAccessedArray")
            hbm = cells.num(arr[0], "rawBytesAccessedArray", place) if isinstance(arr, list) and arr else None
            op.given = {} if "time_ps" in op.unknown else {"time_ps": t, "self_ps": t}
            if flops is not None:
                op.given["flops"] = flops
            if hbm is not None:
                op.given["bytes_accessed"] = hbm
                op.given["hbm_bytes"] = hbm
            for k in ("rawTime", "rawFlops", "bf16Flops", "occurrences", "avgTimePs"):
                x = _num(m.get(k))  # reported above when read; the others are kept raw only
                if x is not None:
                    op.raw[k] = (x, None)
            return
        module = _MODULE_EVENT.match(str(node.get("name") or ""))
        if module:
            program = module.group("id")
        children = node.get("children")
        for child in children if isinstance(children, list) else []:
            if isinstance(child, dict):
                visit(child, program)

    visit(root, None)


_OPS_READERS = {
    "hlo_stats": _hlo_stats,
    "op_profile": _op_profile,
    "roofline_model": _roofline_ops,
    "framework_op_stats": _framework_ops,
}
