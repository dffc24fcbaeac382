"""Build rocpd databases for tests and the benchmark from tests/fixtures/rocprofv3/rocpd_schema.sql.

No real rocpd database is public (see docs/adapters/rocprof.md); these follow ROCm's
published schema (the DDL file cites it). The node has one CPU and ``gpus`` MI300X agents;
the process's ``environment`` and ``command`` hold a planted secret that must never reach a
packet.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = Path(__file__).resolve().parents[1] / "fixtures" / "rocprofv3" / "rocpd_schema.sql"
UUID = "_0000ddb5_8903_7903_b269_cd8d3745bb8a"
GUID = "0000ddb5-8903-7903-b269-cd8d3745bb8a"
SECRET = "KEVIDENCE_PLANTED_SECRET_rocpd_71c2"


@dataclass
class Kernel:
    name: str  # mangled
    display: str
    vgpr: int = 8
    agpr: int = 0
    sgpr: int = 16


@dataclass
class Dispatch:
    dispatch_id: int
    kernel: int  # index into the kernels list
    gpu: int  # type_index of the GPU
    start: int
    end: int
    queue: int = 1
    grid: tuple[int, int, int] = (1024, 1024, 1)
    block: tuple[int, int, int] = (64, 1, 1)
    lds: int = 0
    counters: dict[str, float] = field(default_factory=dict)


def build_rocpd(
    path: Path,
    kernels: Sequence[Kernel],
    dispatches: Iterable[Dispatch],
    *,
    gpus: int = 8,
    pid: int = 4242,
    views: bool = True,
    uuid: str = UUID,
) -> Path:
    ddl = SCHEMA.read_text().replace("{uuid}", uuid).replace("{guid}", GUID)
    if not views:
        ddl = "\n".join(line for line in ddl.splitlines() if not line.startswith("CREATE VIEW"))
    conn = sqlite3.connect(path)
    conn.executescript(ddl)
    t = lambda name: f"rocpd_{name}{uuid}"  # noqa: E731
    conn.executemany(
        f"INSERT INTO {t('metadata')} (tag, value) VALUES (?, ?)",
        [("schema_version", "3"), ("uuid", uuid), ("guid", GUID)],
    )
    conn.execute(
        f"INSERT INTO {t('info_node')} (id, guid, hash, machine_id, hostname) VALUES (1, ?, 12345, 'machine-1', 'node-17')",
        (GUID,),
    )
    conn.execute(
        f"INSERT INTO {t('info_process')} (id, guid, nid, pid, command, environment) VALUES (1, ?, 1, ?, ?, ?)",
        (
            GUID,
            pid,
            f"./vector_ops --token {SECRET}",
            json.dumps({"HF_TOKEN": SECRET, "HOME": "/home/someone"}),
        ),
    )
    agents = [(1, GUID, 1, 1, "CPU", 0, 0, 0, "AMD EPYC 9654", "", "AMD", "AMD EPYC 9654", "{}")]
    for g in range(gpus):
        ext = json.dumps({"cu_count": 304, "num_xcc": 8, "wave_front_size": 64, "simd_count": 1216})
        agents.append(
            (
                2 + g,
                GUID,
                1,
                1,
                "GPU",
                2 + g,
                1 + g,
                g,
                "gfx942",
                "aqua_vanjaram",
                "AMD",
                "AMD Instinct MI300X",
                ext,
            )
        )
    conn.executemany(
        f"INSERT INTO {t('info_agent')} (id, guid, nid, pid, type, absolute_index, logical_index, type_index, name, "
        "model_name, vendor_name, product_name, extdata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        agents,
    )
    conn.execute(
        f"INSERT INTO {t('info_code_object')} (id, guid, nid, pid, agent_id) VALUES (1, ?, 1, 1, 2)", (GUID,)
    )
    conn.executemany(
        f"INSERT INTO {t('info_kernel_symbol')} (id, guid, nid, pid, code_object_id, kernel_name, display_name, "
        "sgpr_count, arch_vgpr_count, accum_vgpr_count) VALUES (?, ?, 1, 1, 1, ?, ?, ?, ?, ?)",
        [(i + 1, GUID, k.name, k.display, k.sgpr, k.vgpr, k.agpr) for i, k in enumerate(kernels)],
    )
    rows = list(dispatches)
    names = sorted({c for d in rows for c in d.counters})
    conn.executemany(
        f"INSERT INTO {t('info_pmc')} (id, guid, nid, pid, agent_id, name, symbol) VALUES (?, ?, 1, 1, 2, ?, ?)",
        [(i + 1, GUID, n, n) for i, n in enumerate(names)],
    )
    conn.executemany(
        f"INSERT INTO {t('event')} (id, guid, correlation_id) VALUES (?, ?, ?)",
        [(i + 1, GUID, d.dispatch_id) for i, d in enumerate(rows)],
    )
    conn.executemany(
        f"INSERT INTO {t('kernel_dispatch')} (id, guid, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, "
        'stream_id, start, "end", private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, '
        "workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id) "
        "VALUES (?, ?, 1, 1, 1, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                i + 1,
                GUID,
                2 + d.gpu,
                d.kernel + 1,
                d.dispatch_id,
                d.queue,
                d.queue,
                d.start,
                d.end,
                d.lds,
                *d.block,
                *d.grid,
                i + 1,
            )
            for i, d in enumerate(rows)
        ],
    )
    pmc_id = {n: i + 1 for i, n in enumerate(names)}
    conn.executemany(
        f"INSERT INTO {t('pmc_event')} (guid, event_id, pmc_id, value) VALUES (?, ?, ?, ?)",
        [(GUID, i + 1, pmc_id[n], v) for i, d in enumerate(rows) for n, v in d.counters.items()],
    )
    conn.commit()
    conn.close()
    return path


KERNELS = [
    Kernel(
        "_Z15addition_kernelIfEvPT_PKS0_S3_ii",
        "void addition_kernel<float>(float*, float const*, float const*, int, int)",
    ),
    Kernel(
        "_Z13divide_kernelPfPKfS1_ii",
        "divide_kernel(float*, float const*, float const*, int, int)",
        vgpr=12,
        agpr=4,
    ),
]

T0 = 3719662416752501


def small(path: Path, **kw: object) -> Path:
    """Five dispatches: addition x3 and divide x1 on GPU 0, addition x1 on GPU 3; SQ_WAVES on each."""
    ds = [
        Dispatch(1, 0, 0, T0, T0 + 12800, counters={"SQ_WAVES": 16384.0}),
        Dispatch(2, 1, 0, T0 + 20000, T0 + 31200, lds=1024, counters={"SQ_WAVES": 16384.0}),
        Dispatch(3, 0, 0, T0 + 40000, T0 + 51400, counters={"SQ_WAVES": 16385.0}),
        Dispatch(4, 0, 0, T0 + 60000, T0 + 69840, queue=2, counters={"SQ_WAVES": 16386.0}),
        Dispatch(5, 0, 3, T0 + 70000, T0 + 80000, queue=3, counters={"SQ_WAVES": 16384.0}),
    ]
    return build_rocpd(path, KERNELS, ds, **kw)  # type: ignore[arg-type]
