"""The rocpd SQLite database (rocprofv3 ``--output-format rocpd``, the default from ROCm 7).

Table layout from ROCm's published schema, ``rocpd_tables.sql`` ("RocPD schema version 3")
and ``rocpd_views.sql`` in ROCm/rocm-systems ``projects/rocprofiler-sdk/source/share/
rocprofiler-sdk-rocpd/`` (also ROCm/rocprofiler-sdk ``source/share/rocprofiler-sdk-rocpd/``).
A database holds one set of tables per run, named ``rocpd_<table>_<uuid>``, and views with
the plain names over them; either is read (several suffixed sets are read together). Rows
join on ``id`` *and* ``guid`` (the run's GUID), as the schema's own views join them:

* ``rocpd_kernel_dispatch``: one row per dispatch: ``pid`` (-> ``rocpd_info_process.id``),
  ``agent_id`` (-> ``rocpd_info_agent.id``), ``kernel_id`` (-> ``rocpd_info_kernel_symbol.id``),
  ``dispatch_id``, ``queue_id``, ``stream_id``, ``start``, ``end`` (ns), ``group_segment_size``,
  ``private_segment_size``, ``workgroup_size_x/y/z``, ``grid_size_x/y/z`` (work-items),
  ``event_id`` (-> ``rocpd_event``, whose ``correlation_id`` it carries);
* ``rocpd_info_agent``: ``type`` (CPU / GPU), ``absolute_index``, ``logical_index``,
  ``type_index``, ``name`` (gfx target), ``product_name``, ``model_name``, ``extdata`` (JSON);
* ``rocpd_info_kernel_symbol``: ``kernel_name`` (mangled), ``display_name``, ``sgpr_count``,
  ``arch_vgpr_count``, ``accum_vgpr_count``;
* ``rocpd_info_process``: ``pid`` (only the id and pid are read: ``command`` and
  ``environment`` may hold secrets and are never read);
* ``rocpd_pmc_event`` (``event_id``, ``pmc_id``, ``value``) joined to ``rocpd_info_pmc``
  (``name``): the counters of each dispatch (instances summed, as rocpd's
  ``counters_collection`` view sums them).

One run per process: one packet each.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError
from .._launches import Launches, int_column
from .._sqlite import Database
from ._trace import AMD_UNITS, Agent, Run

__all__ = ["WHAT", "read_rocpd"]

WHAT = "a rocpd database (rocprofv3 --output-format rocpd)"

_DISPATCH = (
    "guid", "pid", "agent_id", "kernel_id", "dispatch_id", "queue_id", "stream_id", "start", "end",
    "group_segment_size", "private_segment_size", "workgroup_size_x", "workgroup_size_y",
    "workgroup_size_z", "grid_size_x", "grid_size_y", "grid_size_z", "event_id",
)  # fmt: skip
_REQUIRED = ("agent_id", "kernel_id", "start", "end")
#: launch columns kept raw (per record: the value, or each launch's value)
_KEPT = (
    "dispatch_id", "queue_id", "stream_id", "start", "end", "grid_size_x", "grid_size_y",
    "grid_size_z", "workgroup_size_x", "workgroup_size_y", "workgroup_size_z",
    "group_segment_size", "private_segment_size",
)  # fmt: skip


def _rows(
    db: Database, name: str, wanted: tuple[str, ...], required: tuple[str, ...] = ()
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The rows of a logical rocpd table (the view, or the union of its suffixed tables)."""
    tables = db.suffixed(name)
    if not tables:
        return [], []
    cols: list[str] | None = None
    rows: list[tuple[Any, ...]] = []
    for t in tables:
        have = set(db.columns(t))
        missing = [c for c in required if c not in have]
        if missing:
            raise InputError(
                db.path,
                f"table {t}",
                f"has no column {', '.join(missing)}; expected the rocpd schema's {name}",
            )
        c, r = db.select(t, wanted)
        if cols is None:
            cols = c
        elif c != cols:  # suffixed tables of different layouts: keep the shared columns
            keep = [x for x in cols if x in c]
            rows = [tuple(row[cols.index(x)] for x in keep) for row in rows]
            r = [tuple(row[c.index(x)] for x in keep) for row in r]
            cols = keep
        rows.extend(r)
    return cols or [], rows


def _dispatches(db: Database, wanted: tuple[str, ...]) -> dict[str, Any]:
    """The dispatch columns of every ``rocpd_kernel_dispatch`` table (the view, or the
    suffixed tables together): int64 arrays, ``guid`` a list."""
    found: list[dict[str, Any]] = []
    for t in db.suffixed("rocpd_kernel_dispatch"):
        have = set(db.columns(t))
        missing = [c for c in _REQUIRED if c not in have]
        if missing:
            raise InputError(
                db.path,
                f"table {t}",
                f"has no column {', '.join(missing)}; expected the rocpd schema's rocpd_kernel_dispatch",
            )
        found.append(db.fetch_columns(t, [c for c in wanted if c in have], text=("guid",)))
    shared = [c for c in wanted if all(c in f for f in found)]
    if len(found) == 1:
        return {c: found[0][c] for c in shared}
    return {
        c: [v for f in found for v in f[c]] if c == "guid" else np.concatenate([f[c] for f in found])
        for c in shared
    }


def _one_guid(db: Database, name: str) -> tuple[bool, Any]:
    """(True, guid) when every row of the logical table has the same ``guid`` (one run: the
    column need not be fetched row by row), else (False, None)."""
    found: list[Any] = []
    for t in db.suffixed(name):
        if "guid" not in db.columns(t):
            return True, None
        with db.guard(t):
            first = db.conn.execute(f'SELECT guid FROM "{t}" LIMIT 1').fetchone()
            if first is None:
                continue
            other = db.conn.execute(f'SELECT 1 FROM "{t}" WHERE guid IS NOT ? LIMIT 1', first).fetchone()
        if other is not None:
            return False, None
        found.append(first[0])
    return (len(set(found)) <= 1), (found[0] if found else None)


def _extdata(text: Any) -> dict[str, Any]:
    if not isinstance(text, (str, bytes)) or not text:
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _agents(db: Database) -> tuple[dict[tuple[Any, int], int], dict[int, Agent]]:
    """(guid, agent row id) -> device index, and the agents by index."""
    cols, rows = _rows(
        db,
        "rocpd_info_agent",
        (
            "id",
            "guid",
            "type",
            "absolute_index",
            "logical_index",
            "type_index",
            "name",
            "model_name",
            "product_name",
            "extdata",
        ),
        ("id",),
    )
    by_row: dict[tuple[Any, int], int] = {}
    agents: dict[int, Agent] = {}
    for row in rows:
        r = dict(zip(cols, row, strict=True))
        gpu = str(r.get("type") or "").upper() == "GPU"
        index = r.get("type_index") if gpu else None
        if not isinstance(index, int):
            index = (
                r.get("logical_index") if isinstance(r.get("logical_index"), int) else r.get("absolute_index")
            )
        if not isinstance(index, int) or not isinstance(r.get("id"), int):
            continue
        if not gpu:
            index = -1000 - index
        ext = _extdata(r.get("extdata"))
        cu, xcc = ext.get("cu_count"), ext.get("num_xcc")
        agents.setdefault(
            index,
            Agent(
                index=index,
                node_id=r.get("absolute_index") if isinstance(r.get("absolute_index"), int) else None,
                gpu=gpu,
                name=str(r["name"]) if r.get("name") else None,
                product=str(r.get("product_name") or r.get("model_name") or "") or None,
                compute_units=cu if isinstance(cu, int) and cu > 0 else None,
                xcds=xcc if isinstance(xcc, int) and xcc > 0 else None,
            ),
        )
        by_row[(r.get("guid"), r["id"])] = index
    return by_row, agents


def _symbols(db: Database) -> dict[tuple[Any, int], dict[str, Any]]:
    cols, rows = _rows(
        db,
        "rocpd_info_kernel_symbol",
        ("id", "guid", "kernel_name", "display_name", "sgpr_count", "arch_vgpr_count", "accum_vgpr_count"),
        ("id",),
    )
    return {
        (r.get("guid"), r["id"]): r
        for r in (dict(zip(cols, row, strict=True)) for row in rows)
        if isinstance(r["id"], int)
    }


def _pids(db: Database) -> dict[tuple[Any, int], int]:
    cols, rows = _rows(db, "rocpd_info_process", ("id", "guid", "pid"), ("id",))
    out = {}
    for row in rows:
        r = dict(zip(cols, row, strict=True))
        if isinstance(r.get("id"), int) and isinstance(r.get("pid"), int):
            out[(r.get("guid"), r["id"])] = r["pid"]
    return out


def _counters(db: Database) -> dict[str, dict[tuple[Any, int], float]]:
    """Counter name -> (guid, event id) -> value, the instances of a counter summed (in SQL:
    a counter table has a row per dispatch, counter and instance)."""
    tables = db.suffixed("rocpd_pmc_event")
    if not tables:
        return {}
    cols, rows = _rows(db, "rocpd_info_pmc", ("id", "guid", "name"), ("id", "name"))
    g_at = cols.index("guid") if "guid" in cols else None
    names = {(r[g_at] if g_at is not None else None, r[0]): str(r[cols.index("name")]) for r in rows}
    out: dict[str, dict[tuple[Any, int], float]] = defaultdict(dict)
    for t in tables:
        have = set(db.columns(t))
        missing = [c for c in ("event_id", "pmc_id", "value") if c not in have]
        if missing:
            raise InputError(
                db.path,
                f"table {t}",
                f"has no column {', '.join(missing)}; expected the rocpd schema's rocpd_pmc_event",
            )
        guid = '"guid"' if "guid" in have else "NULL"
        with db.guard(t):
            bad = db.conn.execute(
                f'SELECT typeof("value"), "value" FROM "{t}" WHERE typeof("value") NOT IN (\'integer\', \'real\', \'null\') LIMIT 1'
            ).fetchone()
            if bad is not None:
                raise InputError(
                    db.path,
                    f"table {t}",
                    f"a counter value is {bad[0]} {str(bad[1])[:40]!r}; expected a number",
                )
            summed = db.conn.execute(
                f'SELECT {guid}, "event_id", "pmc_id", TOTAL("value") FROM "{t}" '
                'WHERE "value" IS NOT NULL GROUP BY 1, 2, 3'
            ).fetchall()
        for g, event, pmc, value in summed:
            out[names.get((g, pmc), f"pmc {pmc}")][(g, event)] = float(value)
    return out


def read_rocpd(path: Path, cap: int) -> list[Run]:
    """One run per profiled process of the database."""
    with Database(str(path), what=WHAT, cap=cap) as db:
        if not db.suffixed("rocpd_kernel_dispatch"):
            hint = "" if db.suffixed("rocpd_metadata") else " (no rocpd tables at all: not a rocpd database)"
            raise InputError(
                str(path), None, f"no rocpd_kernel_dispatch table{hint}; expected {WHAT} with a kernel trace"
            )
        single, the_guid = _one_guid(db, "rocpd_kernel_dispatch")
        has_pmc = bool(db.suffixed("rocpd_pmc_event"))
        wanted = tuple(c for c in _DISPATCH if (c != "guid" or not single) and (c != "event_id" or has_pmc))
        data = _dispatches(db, wanted)
        agent_of, agents = _agents(db)
        symbols = _symbols(db)
        pids = _pids(db)
        counters = _counters(db)
        version = None
        mcols, mrows = _rows(db, "rocpd_metadata", ("tag", "value"))
        for tag, value in mrows if mcols == ["tag", "value"] else []:
            if tag == "schema_version" and value is not None:
                version = f"rocpd schema {value}"
    n = len(data["start"])
    if not n:
        raise InputError(
            str(path),
            "table rocpd_kernel_dispatch",
            f"is empty: no kernel dispatches; expected {WHAT} with a kernel trace",
        )
    guids = data.pop("guid", None) or (the_guid,) * n
    ints: dict[str, np.ndarray] = data
    procs = ints["pid"] if "pid" in ints else np.full(n, -1, np.int64)
    distinct = sorted(set(guids), key=str)
    if len(distinct) == 1:
        gcode = np.zeros(n, np.int64)
    else:
        code = {g: i for i, g in enumerate(distinct)}
        gcode = np.fromiter((code[g] for g in guids), np.int64, n)
    runs = []
    for gi, p in sorted({(int(a), int(b)) for a, b in np.unique(np.stack([gcode, procs], axis=1), axis=0)}):
        where = np.flatnonzero((gcode == gi) & (procs == p))
        runs.append(
            _run(path, (distinct[gi], p), where, ints, agent_of, agents, symbols, pids, counters, version)
        )
    return runs


def _run(
    path: Path,
    proc: tuple[Any, int],
    where: np.ndarray,
    ints: dict[str, np.ndarray],
    agent_of: dict[tuple[Any, int], int],
    agents: dict[int, Agent],
    symbols: dict[tuple[Any, int], dict[str, Any]],
    pids: dict[tuple[Any, int], int],
    counters: dict[str, dict[tuple[Any, int], float]],
    version: str | None,
) -> Run:
    """The dispatches ``where`` of one process (rows of one run GUID: ids join within it)."""
    guid = proc[0]
    pid = pids.get(proc)
    label = f"{path.name} (pid {pid})" if pid is not None else path.name
    warnings: list[str] = []
    agent_ids, at = np.unique(ints["agent_id"][where], return_inverse=True)
    device = np.array([agent_of.get((guid, int(a)), -1) for a in agent_ids], np.int64)[at.reshape(-1)]
    unknown = int((device < 0).sum())
    if unknown:
        warnings.append(
            f"{label}: {unknown} dispatch(es) name no agent of rocpd_info_agent; device unknown for them"
        )
    kernel_ids, kernel = np.unique(ints["kernel_id"][where], return_inverse=True)
    kernel = kernel.reshape(-1).astype(np.int64)
    keys = {(guid, int(k)): key for key, k in enumerate(kernel_ids.tolist())}
    kernels: dict[int, tuple[str, str | None]] = {}
    missing = []
    for (gg, k), key in keys.items():
        s = symbols.get((gg, k))
        if s is None:
            missing.append(k)
            kernels[key] = (f"kernel {k}", None)
            continue
        name = s.get("display_name") or s.get("kernel_name") or f"kernel {k}"
        kernels[key] = (str(name), str(s["kernel_name"]) if s.get("kernel_name") else None)
    if missing:
        warnings.append(
            f"{label}: kernel id(s) {', '.join(map(str, missing[:5]))} not in rocpd_info_kernel_symbol; named `kernel <id>`"
        )
    columns: dict[str, Any] = {c: ints[c][where] for c in _KEPT if c in ints}
    for field_ in ("arch_vgpr_count", "accum_vgpr_count", "sgpr_count"):
        per_key = [symbols.get(gk, {}).get(field_) for gk in keys]  # in key order
        if any(type(v) is int for v in per_key):
            columns[field_] = int_column([v if type(v) is int else None for v in per_key])[kernel]
    if counters and "event_id" in ints:
        events = ints["event_id"][where].tolist()
        for name, per in sorted(counters.items()):
            columns[name] = np.array([per.get((guid, e), np.nan) for e in events], dtype=np.float64)
    launches = Launches(
        source=label,
        kernel=kernel,
        device=device,
        start=ints["start"][where],
        end=ints["end"][where],
        kernels={k: kernels[k] for k in sorted(kernels)},
        kernel_ids={key: str(k) for (_g, k), key in keys.items()},
        columns=columns,
        units={k: u for k, u in AMD_UNITS.items() if k in columns},
    )
    attrs: dict[str, str | float | int | None] = {"format": "rocpd"}
    if pid is not None:
        attrs["pid"] = pid
    if counters:
        attrs["counters"] = len(counters)
    return Run(
        label=label, launches=launches, agents=agents, attributes=attrs, warnings=warnings, version=version
    )
