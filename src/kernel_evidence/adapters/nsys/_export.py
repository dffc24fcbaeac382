"""The SQLite export of an Nsight Systems report (``nsys export --type sqlite``, or the
``.sqlite`` that ``nsys stats`` writes beside the ``.nsys-rep``).

Tables read (names and columns as NVIDIA's export writes them, seen in exports from Nsight
Systems 2024.6 (schema 3.16) and 2026.1 (schema 3.24); every column but a kernel's
``start``, ``end`` and name is optional):

* ``CUPTI_ACTIVITY_KIND_KERNEL``: one row per launch: ``start``, ``end`` (ns), ``deviceId``,
  ``contextId``, ``streamId``, ``correlationId``, ``globalPid``, ``demangledName`` /
  ``shortName`` / ``mangledName`` (ids into ``StringIds``), ``gridX/Y/Z`` (blocks),
  ``blockX/Y/Z``, ``registersPerThread``, ``staticSharedMemory``, ``dynamicSharedMemory``,
  ``localMemoryPerThread``, ``launchType``, ``graphNodeId``, ``graphId``. Absent when no
  kernel ran (nsys creates a table only when it has rows);
* ``StringIds`` (``id``, ``value``): the kernel names;
* ``TARGET_INFO_GPU``: ``id`` (= a kernel's ``deviceId``), ``name``, ``chipName``, ``smCount``,
  ``computeMajor``/``computeMinor``, ``totalMemory`` (B), ``memoryBandwidth`` (B/s),
  ``l2CacheSize`` (B), ``clockRate`` (Hz); early-2021 exports: ``TARGET_INFO_CUDA_GPU``
  (``deviceId``, ``name``, ``numMultiprocessors``, ``computeCapabilityMajor/Minor``,
  ``totalGlobalMem``);
* ``CUPTI_ACTIVITY_KIND_MEMCPY`` / ``_MEMSET``: counts, bytes and time per copy kind
  (``copyKind`` as ``ENUM_CUDA_MEMCPY_OPER`` names it);
* ``META_DATA_EXPORT``: only ``EXPORT_PRODUCT_VERSION`` and ``EXPORT_SCHEMA_VERSION``;
* ``TARGET_INFO_SESSION_START_TIME``: ``utcEpochNs`` (when the capture started);
* ``PROCESSES``: only ``globalPid`` -> ``pid``.

Never read: ``META_DATA_CAPTURE`` (the profiled process's command line, working directory,
user name and its whole environment), ``TARGET_INFO_SYSTEM_ENV``, the other
``META_DATA_EXPORT`` rows (user, host, paths), process and thread names.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...devices import canonical_id
from ...errors import InputError
from ...models import Bandwidth, ByteSize, Hardware
from .._launches import Launches, Shape
from .._sqlite import Database

__all__ = ["CUDA_SHAPE", "ExportRun", "WHAT", "read_export"]

WHAT = "an Nsight Systems SQLite export (nsys export --type sqlite)"

CUDA_SHAPE = Shape(
    grid=("gridX", "gridY", "gridZ"),
    block=("blockX", "blockY", "blockZ"),
    grid_in_blocks=True,
    registers="registersPerThread",
    shared_memory=("staticSharedMemory", "dynamicSharedMemory"),
    stream="streamId",
)

_KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
_WANTED = (
    "start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "demangledName",
    "shortName", "mangledName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
    "registersPerThread", "staticSharedMemory", "dynamicSharedMemory", "localMemoryPerThread",
    "launchType", "graphNodeId", "graphId",
)  # fmt: skip
#: launch columns kept raw (per record: the value, or each launch's value)
_KEPT = (
    "correlationId", "contextId", "streamId", "start", "end", "gridX", "gridY", "gridZ", "blockX",
    "blockY", "blockZ", "registersPerThread", "staticSharedMemory", "dynamicSharedMemory",
    "localMemoryPerThread", "launchType", "graphNodeId", "graphId",
)  # fmt: skip
_UNITS = {
    "start": "ns",
    "end": "ns",
    "staticSharedMemory": "B",
    "dynamicSharedMemory": "B",
    "localMemoryPerThread": "B",
}
#: ENUM_CUDA_MEMCPY_OPER, for exports without the enum table
_COPY_KINDS = {
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
}


@dataclass
class ExportRun:
    """One profiled process of the export."""

    label: str
    launches: Launches
    hardware: Hardware | None
    attributes: dict[str, str | float | int | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    version: str | None = None
    measured_at: str | None = None


def _strings(db: Database, ids: set[int]) -> dict[int, str]:
    if not db.has("StringIds") or not ids:
        return {}
    cols, rows = db.select("StringIds", ("id", "value"))
    if cols != ["id", "value"]:
        raise InputError(db.path, "table StringIds", f"has no id/value columns; expected {WHAT}")
    return {i: str(v) for i, v in rows if i in ids and v is not None}


#: early-2021 exports name the GPU table TARGET_INFO_CUDA_GPU, keyed by deviceId, with these
#: spellings (the columns of TARGET_INFO_GPU they stand for)
_CUDA_GPU_NAMES = {
    "deviceId": "id",
    "numMultiprocessors": "smCount",
    "computeCapabilityMajor": "computeMajor",
    "computeCapabilityMinor": "computeMinor",
    "totalGlobalMem": "totalMemory",
    "l2CacheSize": "l2CacheSize",
    "name": "name",
}
_GPU_COLUMNS = (
    "id", "name", "chipName", "smCount", "computeMajor", "computeMinor", "totalMemory",
    "memoryBandwidth", "l2CacheSize", "clockRate",
)  # fmt: skip


def _gpus(db: Database) -> dict[int, dict[str, Any]]:
    """The GPUs of the capture by device id, as ``TARGET_INFO_GPU`` names their columns."""
    if db.has("TARGET_INFO_GPU"):
        table, names = "TARGET_INFO_GPU", {c: c for c in _GPU_COLUMNS}
    elif db.has("TARGET_INFO_CUDA_GPU"):
        table, names = "TARGET_INFO_CUDA_GPU", _CUDA_GPU_NAMES
    else:
        return {}
    cols, rows = db.select(table, tuple(names))
    out: dict[int, dict[str, Any]] = {}
    for row in rows:
        r = {names[c]: v for c, v in zip(cols, row, strict=True)}
        if isinstance(r.get("id"), int):
            out.setdefault(r["id"], r)
    return out


def _pos(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _hardware(
    gpus: dict[int, dict[str, Any]], used: list[int], label: str
) -> tuple[Hardware | None, dict[str, Any], list[str]]:
    described = [gpus[d] for d in used if d in gpus]
    if not described:
        why = (
            "TARGET_INFO_GPU is absent"
            if not gpus
            else "the devices that ran the kernels are not in TARGET_INFO_GPU"
        )
        return None, {}, [f"{label}: {why}; hardware unknown"] if used else []
    g = described[0]
    warnings = []
    names = {str(x.get("name")) for x in described}
    if len(names) > 1:
        warnings.append(
            f"{label}: kernels ran on different GPU models ({', '.join(sorted(names))}); hardware describes device {used[0]}"
        )
    name = str(g.get("name") or "").strip()
    if not name:
        return (
            None,
            {},
            [*warnings, f"{label}: device {used[0]} has no name in TARGET_INFO_GPU; hardware unknown"],
        )
    major, minor = g.get("computeMajor"), g.get("computeMinor")
    arch = f"sm_{major}{minor}" if isinstance(major, int) and isinstance(minor, int) and major > 0 else None
    sms, mem, bw, l2 = (
        _pos(g.get("smCount")),
        _pos(g.get("totalMemory")),
        _pos(g.get("memoryBandwidth")),
        _pos(g.get("l2CacheSize")),
    )
    hw = Hardware(
        vendor="nvidia",
        device=name,
        device_id=canonical_id(name, arch=arch, compute_units=sms, memory_bytes=float(mem) if mem else None)
        if len(name) <= 256
        else None,
        arch=arch,
        count=len(described) if len(names) == 1 else None,
        compute_units=sms,
        memory=ByteSize(value=float(mem), unit="B") if mem else None,
        peak_bandwidth=Bandwidth(value=float(bw), unit="B/s") if bw else None,
        last_level_cache=ByteSize(value=float(l2), unit="B") if l2 else None,
    )
    attrs: dict[str, Any] = {}
    if isinstance(g.get("chipName"), str) and g["chipName"]:
        attrs["gpu.chip"] = g["chipName"]
    if _pos(g.get("clockRate")):
        attrs["gpu.clock_rate_hz"] = g["clockRate"]  # the rated clock, not an observed one
    return hw, attrs, warnings


def _meta(db: Database) -> dict[str, str]:
    """Only the product and schema versions of META_DATA_EXPORT (its other rows name the user,
    the host and paths)."""
    if not db.has("META_DATA_EXPORT"):
        return {}
    cols, rows = db.select(
        "META_DATA_EXPORT",
        ("name", "value"),
        where=" WHERE name IN ('EXPORT_PRODUCT_VERSION', 'EXPORT_SCHEMA_VERSION')",
    )
    return {str(n): str(v) for n, v in rows} if cols == ["name", "value"] else {}


def _started(db: Database) -> str | None:
    if not db.has("TARGET_INFO_SESSION_START_TIME"):
        return None
    cols, rows = db.select("TARGET_INFO_SESSION_START_TIME", ("utcEpochNs",))
    if cols and rows and isinstance(rows[0][0], int) and 0 < rows[0][0] < 2**62:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(rows[0][0] // 1_000_000_000))
    return None


def _pids(db: Database) -> dict[int, int]:
    if not db.has("PROCESSES"):
        return {}
    cols, rows = db.select("PROCESSES", ("globalPid", "pid"))
    return (
        {g: p for g, p in rows if isinstance(g, int) and isinstance(p, int)}
        if cols == ["globalPid", "pid"]
        else {}
    )


def _copies(db: Database, pid: int | None) -> dict[str, int]:
    """Per copy kind (and memset): count, bytes and ns, for the process ``pid`` (globalPid)."""
    out: dict[str, int] = {}
    for table, prefix in (("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"), ("CUPTI_ACTIVITY_KIND_MEMSET", "memset")):
        if not db.has(table):
            continue
        have = set(db.columns(table))
        if not {"start", "end", "bytes"} <= have:
            continue
        kind = "copyKind" if prefix == "memcpy" and "copyKind" in have else "NULL"
        where = " WHERE globalPid = ?" if pid is not None and "globalPid" in have else ""
        sql = f'SELECT {kind}, COUNT(*), TOTAL(bytes), TOTAL("end" - start) FROM {table}{where} GROUP BY 1'
        with db.guard(table):
            rows = db.conn.execute(sql, (pid,) if where else ()).fetchall()
        for k, n, b, t in rows:
            name = prefix if prefix == "memset" else f"memcpy_{_COPY_KINDS.get(k, k)}"
            out[f"{name}.count"] = int(n)
            out[f"{name}.bytes"] = int(b)
            out[f"{name}.ns"] = int(t)
    return out


def read_export(path: str, cap: int) -> list[ExportRun]:
    """One run per profiled process that launched kernels."""
    with Database(path, what=WHAT, cap=cap) as db:
        if not db.has(_KERNEL):
            if db.suffixed("rocpd_kernel_dispatch"):
                raise InputError(
                    path,
                    None,
                    "a rocpd database, not an Nsight Systems export: read it with `kevidence ingest rocprof`",
                )
            if db.has("META_DATA_EXPORT") or db.has("StringIds"):
                raise InputError(
                    path,
                    None,
                    f"no {_KERNEL} table: the capture launched no CUDA kernel (nsys writes a table only when it "
                    "has rows; was CUDA traced, `nsys profile -t cuda`?)",
                )
            raise InputError(path, None, f"no {_KERNEL} or StringIds table: not {WHAT}")
        have = set(db.columns(_KERNEL))
        missing = [c for c in ("start", "end") if c not in have]
        if missing or not ({"demangledName", "shortName"} & have):
            need = missing or ["demangledName or shortName"]
            raise InputError(path, f"table {_KERNEL}", f"has no column {', '.join(need)}; expected {WHAT}")
        cols, rows = db.select(_KERNEL, _WANTED)
        if not rows:
            raise InputError(path, f"table {_KERNEL}", "is empty: no kernel launches")
        data = {c: db.ints(_KERNEL, c, [r[i] for r in rows]) for i, c in enumerate(cols)}
        ids = {
            int(x)
            for c in ("demangledName", "shortName", "mangledName")
            if c in data
            for x in np.unique(data[c])
            if x >= 0
        }
        strings = _strings(db, ids)
        gpus = _gpus(db)
        meta = _meta(db)
        started = _started(db)
        pids = _pids(db)
        gpid = data.get("globalPid", np.full(len(rows), -1, np.int64))
        runs = []
        for g in sorted({int(x) for x in np.unique(gpid)}):
            sel = np.flatnonzero(gpid == g)
            runs.append(_run(path, db, g, sel, data, strings, gpus, meta, started, pids))
    return runs


def _run(
    path: str,
    db: Database,
    gpid: int,
    sel: np.ndarray,
    data: dict[str, np.ndarray],
    strings: dict[int, str],
    gpus: dict[int, dict[str, Any]],
    meta: dict[str, str],
    started: str | None,
    pids: dict[int, int],
) -> ExportRun:
    name = path.rsplit("/", 1)[-1]
    pid = pids.get(gpid, gpid >> 24 if gpid > 0 else None)  # nsys: globalPid = (hw id << 56) | (pid << 24)
    label = f"{name} (pid {pid})" if pid is not None else name
    key_col = data["demangledName"] if "demangledName" in data else data["shortName"]
    keys = key_col[sel]
    kernels: dict[int, tuple[str, str | None]] = {}
    warnings: list[str] = []
    unnamed = 0
    for k in np.unique(keys).tolist():
        first = sel[np.argmax(keys == k)]
        short = strings.get(int(data["shortName"][first])) if "shortName" in data else None
        mangled = strings.get(int(data["mangledName"][first])) if "mangledName" in data else None
        full = strings.get(int(k))
        if not full:
            unnamed += 1
        kernels[int(k)] = (full or short or f"kernel {k}", mangled)
    if unnamed:
        warnings.append(f"{label}: {unnamed} kernel name id(s) not in StringIds; named `kernel <id>`")
    columns: dict[str, Any] = {c: data[c][sel] for c in _KEPT if c in data}
    if "shortName" in data:
        columns["shortName"] = [strings.get(int(x)) for x in data["shortName"][sel].tolist()]
    device = data["deviceId"][sel] if "deviceId" in data else np.full(len(sel), -1, np.int64)
    launches = Launches(
        source=label,
        kernel=keys,
        device=device,
        start=data["start"][sel],
        end=data["end"][sel],
        kernels=kernels,
        columns=columns,
        units={k: u for k, u in _UNITS.items() if k in columns},
    )
    used = sorted({int(d) for d in np.unique(device) if d >= 0})
    hardware, hw_attrs, hw_warnings = _hardware(gpus, used, label)
    attrs: dict[str, str | float | int | None] = {"format": "sqlite export", **hw_attrs}
    if pid is not None:
        attrs["pid"] = pid
    if "EXPORT_SCHEMA_VERSION" in meta:
        attrs["export_schema_version"] = meta["EXPORT_SCHEMA_VERSION"]
    attrs.update(_copies(db, gpid if gpid >= 0 else None))
    return ExportRun(
        label=label,
        launches=launches,
        hardware=hardware,
        attributes=attrs,
        warnings=[*warnings, *hw_warnings],
        version=meta.get("EXPORT_PRODUCT_VERSION"),
        measured_at=started,
    )
