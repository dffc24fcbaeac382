"""rocprofv3 JSON output (``--output-format json``: ``<pid>_results.json``, plain or gzip).

Layout (rocprofiler-sdk's JSON writer, as its own tests read it): ``{"rocprofiler-sdk-tool":
[entry, ...]}`` (an entry is one profiled process; older files hold the object itself),
each entry with

* ``metadata``: ``pid``, ``init_time``/``fini_time`` (ns), ``command`` (argv: not copied,
  it may hold secrets), ``config``;
* ``agents``: every CPU (``type`` 1) and GPU (``type`` 2) agent of the node: ``id.handle``,
  ``node_id``, ``logical_node_id``, ``logical_node_type_id``, ``name`` (the gfx target),
  ``product_name``, ``cu_count``, ``num_xcc``;
* ``kernel_symbols``: ``kernel_id``, ``kernel_name`` (mangled), ``formatted_kernel_name``,
  ``demangled_kernel_name``, ``truncated_kernel_name``, ``arch_vgpr_count``,
  ``accum_vgpr_count``, ``sgpr_count``, ``group_segment_size``, ``private_segment_size``;
* ``counters``: ``id.handle`` and ``name`` of each hardware counter;
* ``buffer_records.kernel_dispatch``: one record per dispatch, ``start_timestamp``,
  ``end_timestamp`` (ns), ``correlation_id.internal``, ``thread_id``, ``stream_id.handle``,
  ``dispatch_info`` {``agent_id.handle``, ``queue_id.handle``, ``kernel_id``,
  ``dispatch_id``, ``group_segment_size``, ``private_segment_size``, ``workgroup_size``
  {x,y,z}, ``grid_size`` {x,y,z} (work-items)};
* ``callback_records.counter_collection``: per dispatch ``dispatch_data`` (the dispatch
  record above) and ``records`` [{``counter_id.handle``, ``value``}], one value per counter
  instance (summed per counter, as rocprofv3's CSV writer sums them).

Only the fields above are decoded (msgspec structs; everything else in the file is skipped),
and each is optional.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ...errors import InputError
from .._launches import Launches, int_column
from ._io import load
from ._trace import AMD_UNITS, Agent, Run

__all__ = ["WHAT", "looks_like_json", "read_json"]

WHAT = 'a rocprofv3 JSON output (results.json: {"rocprofiler-sdk-tool": [...]})'


class _Handle(msgspec.Struct):
    handle: int | None = None


class _Dim(msgspec.Struct):
    x: int | None = None
    y: int | None = None
    z: int | None = None


class _Corr(msgspec.Struct):
    internal: int | None = None


class _Info(msgspec.Struct):
    agent_id: _Handle | None = None
    queue_id: _Handle | None = None
    kernel_id: int | None = None
    dispatch_id: int | None = None
    group_segment_size: int | None = None
    private_segment_size: int | None = None
    workgroup_size: _Dim | None = None
    grid_size: _Dim | None = None


class _Dispatch(msgspec.Struct):
    start_timestamp: int | None = None
    end_timestamp: int | None = None
    correlation_id: _Corr | None = None
    thread_id: int | None = None
    stream_id: _Handle | None = None
    dispatch_info: _Info | None = None


class _Record(msgspec.Struct):
    counter_id: _Handle | None = None
    value: float | None = None


class _Collected(msgspec.Struct):
    dispatch_data: _Dispatch | None = None
    thread_id: int | None = None
    records: list[_Record] = []


class _Agent(msgspec.Struct):
    id: _Handle | None = None
    type: int | None = None
    node_id: int | None = None
    logical_node_id: int | None = None
    logical_node_type_id: int | None = None
    name: str | None = None
    product_name: str | None = None
    cu_count: int | None = None
    num_xcc: int | None = None


class _Symbol(msgspec.Struct):
    kernel_id: int | None = None
    kernel_name: str | None = None
    formatted_kernel_name: str | None = None
    demangled_kernel_name: str | None = None
    truncated_kernel_name: str | None = None
    arch_vgpr_count: int | None = None
    accum_vgpr_count: int | None = None
    sgpr_count: int | None = None


class _CounterInfo(msgspec.Struct):
    id: _Handle | None = None
    name: str | None = None


class _Buffers(msgspec.Struct):
    kernel_dispatch: list[_Dispatch] = []


class _Callbacks(msgspec.Struct):
    counter_collection: list[_Collected] = []


class _Metadata(msgspec.Struct):
    pid: int | None = None


class _Entry(msgspec.Struct):
    metadata: _Metadata | None = None
    agents: list[_Agent] = []
    kernel_symbols: list[_Symbol] = []
    counters: list[_CounterInfo] = []
    buffer_records: _Buffers | None = None
    callback_records: _Callbacks | None = None


class _File(msgspec.Struct):
    tool: list[_Entry] | _Entry = msgspec.field(name="rocprofiler-sdk-tool")


_decoder = msgspec.json.Decoder(_File)


def looks_like_json(head: bytes) -> bool:
    """Whether the first bytes of a (decompressed) file are a rocprofv3 JSON output."""
    return head.lstrip()[:1] == b"{" and b'"rocprofiler-sdk-tool"' in head


def _agents(entry: _Entry) -> tuple[dict[int, Agent], dict[int, int]]:
    """Agents by their ``index`` and agent handle -> index."""
    agents: dict[int, Agent] = {}
    by_handle: dict[int, int] = {}
    for a in entry.agents:
        gpu = a.type == 2
        index = a.logical_node_type_id if gpu else None
        if index is None:
            index = a.logical_node_id if a.logical_node_id is not None else a.node_id
        if index is None or a.id is None or a.id.handle is None:
            continue
        if not gpu:
            index = -1000 - index  # CPU agents never share an ordinal with a GPU
        agents[index] = Agent(
            index=index,
            node_id=a.node_id,
            gpu=gpu,
            name=a.name or None,
            product=a.product_name or None,
            compute_units=a.cu_count if a.cu_count and a.cu_count > 0 else None,
            xcds=a.num_xcc if a.num_xcc and a.num_xcc > 0 else None,
        )
        by_handle[a.id.handle] = index
    return agents, by_handle


def _symbols(entry: _Entry) -> dict[int, _Symbol]:
    """Kernel symbols by ``kernel_id`` (the list is indexed by it: an entry without the key
    is taken at its position)."""
    return {s.kernel_id if s.kernel_id is not None else i: s for i, s in enumerate(entry.kernel_symbols)}


def _name(s: _Symbol | None, key: int) -> tuple[str, str | None]:
    if s is None:
        return f"kernel {key}", None
    name = s.formatted_kernel_name or s.demangled_kernel_name or s.kernel_name or s.truncated_kernel_name
    return (name or f"kernel {key}"), (s.kernel_name or None)


def _counters(entry: _Entry) -> dict[str, dict[int, float]]:
    """Counter name -> dispatch id -> value (instances summed)."""
    if entry.callback_records is None:
        return {}
    names = {c.id.handle: c.name for c in entry.counters if c.id is not None and c.name}
    out: dict[str, dict[int, float]] = {}
    for cc in entry.callback_records.counter_collection:
        d = cc.dispatch_data
        if d is None or d.dispatch_info is None or d.dispatch_info.dispatch_id is None:
            continue
        did = d.dispatch_info.dispatch_id
        for r in cc.records:
            if r.counter_id is None or r.value is None:
                continue
            name = names.get(r.counter_id.handle) or f"counter {r.counter_id.handle}"
            per = out.setdefault(name, {})
            per[did] = per.get(did, 0.0) + r.value
    return out


def _launch_columns(
    dispatches: list[_Dispatch], infos: list[_Info], kernel: np.ndarray, symbols: dict[int, _Symbol]
) -> dict[str, Any]:
    """The launch-level values of the dispatches, under the rocpd column names (the kernel
    symbol's register counts broadcast to its dispatches); columns no dispatch gives are left out."""
    columns: dict[str, Any] = {
        "dispatch_id": int_column([i.dispatch_id for i in infos]),
        "correlation_id": int_column(
            [d.correlation_id.internal if d.correlation_id else None for d in dispatches]
        ),
        "queue_id": int_column([i.queue_id.handle if i.queue_id else None for i in infos]),
        "stream_id": int_column([d.stream_id.handle if d.stream_id else None for d in dispatches]),
        "thread_id": int_column([d.thread_id for d in dispatches]),
        "start_timestamp": int_column([d.start_timestamp for d in dispatches]),
        "end_timestamp": int_column([d.end_timestamp for d in dispatches]),
    }
    for axis in "xyz":
        columns[f"grid_size_{axis}"] = int_column(
            [getattr(i.grid_size, axis) if i.grid_size else None for i in infos]
        )
    for axis in "xyz":
        columns[f"workgroup_size_{axis}"] = int_column(
            [getattr(i.workgroup_size, axis) if i.workgroup_size else None for i in infos]
        )
    columns["group_segment_size"] = int_column([i.group_segment_size for i in infos])
    columns["private_segment_size"] = int_column([i.private_segment_size for i in infos])
    keys = sorted({int(k) for k in np.unique(kernel)})
    for field_ in ("arch_vgpr_count", "accum_vgpr_count", "sgpr_count"):
        table = {k: getattr(symbols[k], field_) for k in keys if k in symbols}
        if any(v is not None for v in table.values()):
            columns[field_] = int_column([table.get(k) for k in kernel.tolist()])
    start, end = columns["start_timestamp"], columns["end_timestamp"]
    out = {k: v for k, v in columns.items() if (v >= 0).any()}
    out.setdefault("start_timestamp", start)  # the durations need them even when none is given
    out.setdefault("end_timestamp", end)
    return out


def _entry_run(entry: _Entry, path: Path, position: int, total: int) -> Run:
    pid = entry.metadata.pid if entry.metadata is not None else None
    label = (
        f"{path.name} (pid {pid})"
        if pid is not None
        else (path.name if total == 1 else f"{path.name} [entry {position}]")
    )
    agents, by_handle = _agents(entry)
    symbols = _symbols(entry)
    dispatches = entry.buffer_records.kernel_dispatch if entry.buffer_records is not None else []
    warnings: list[str] = []
    layout = "kernel_dispatch"
    if not dispatches and entry.callback_records is not None:
        dispatches = [c.dispatch_data for c in entry.callback_records.counter_collection if c.dispatch_data]
        layout = "counter_collection"
    infos = [d.dispatch_info or _Info() for d in dispatches]
    handles = [i.agent_id.handle if i.agent_id is not None else None for i in infos]
    device = np.fromiter(
        (by_handle.get(h, -1) if h is not None else -1 for h in handles), np.int64, len(handles)
    )
    unknown = int((device < 0).sum())
    if unknown:
        warnings.append(
            f"{label}: {unknown} dispatch(es) name no agent the file lists; device unknown for them"
        )
    kernel = int_column([i.kernel_id for i in infos])
    columns = _launch_columns(dispatches, infos, kernel, symbols)
    keys = sorted({int(k) for k in np.unique(kernel)})
    counters = _counters(entry)
    if counters:
        ids = columns["dispatch_id"].tolist() if "dispatch_id" in columns else [None] * len(dispatches)
        for name, per in sorted(counters.items()):
            columns[name] = np.array(
                [per.get(i, np.nan) if i is not None else np.nan for i in ids], dtype=np.float64
            )
    kernels = {k: _name(symbols.get(k), k) for k in keys}
    missing = [k for k in keys if k not in symbols]
    if missing:
        warnings.append(
            f"{label}: kernel id(s) {', '.join(map(str, missing[:5]))} not in kernel_symbols; named `kernel <id>`"
        )
    launches = Launches(
        source=label,
        kernel=kernel,
        device=device,
        start=columns.get("start_timestamp", int_column([None] * len(dispatches))),
        end=columns.get("end_timestamp", int_column([None] * len(dispatches))),
        kernels=kernels,
        columns=columns,
        units={k: u for k, u in AMD_UNITS.items() if k in columns},
    )
    attrs: dict[str, str | float | int | None] = {"format": "json", "dispatch_records": layout}
    if pid is not None:
        attrs["pid"] = pid
    if counters:
        attrs["counters"] = len(counters)
    return Run(label=label, launches=launches, agents=agents, attributes=attrs, warnings=warnings)


def read_json(path: Path, cap: int) -> tuple[list[Run], bytes]:
    """The runs of a rocprofv3 JSON file (one per tool entry) and the bytes as stored."""
    loaded = load(path, cap, what=WHAT)
    try:
        doc = _decoder.decode(loaded.data)
    except msgspec.ValidationError as exc:
        raise InputError(str(path), None, f"{_where(str(exc))}; expected {WHAT}") from None
    except msgspec.DecodeError as exc:
        raise InputError(str(path), None, f"not valid JSON ({exc}); expected {WHAT}") from None
    entries = doc.tool if isinstance(doc.tool, list) else [doc.tool]
    if not entries:
        raise InputError(str(path), None, f"`rocprofiler-sdk-tool` is empty; expected {WHAT}")
    runs = [_entry_run(e, path, i, len(entries)) for i, e in enumerate(entries)]
    return runs, loaded.raw


def _where(message: str) -> str:
    """msgspec's ``Expected `int`, got `str` - at `$...`` with the path spelled as the file's keys."""
    return message.replace("$.tool", "$.rocprofiler-sdk-tool").replace("Expected", "expected", 1)
