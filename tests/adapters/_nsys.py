"""Build small Nsight Systems SQLite exports for tests.

The tables and columns are those of a real export (Nsight Systems 2026.1, schema 3.24; the
corpus file ../shared/corpus/nsys/*.sqlite has the same layout), reduced to what the adapter
reads plus the metadata it must never copy: ``META_DATA_CAPTURE`` with the profiled
process's command line and environment, ``META_DATA_EXPORT`` with the user, host and paths,
process names and ``TARGET_INFO_SYSTEM_ENV``. Each of them holds :data:`SECRET`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

SECRET = "KEVIDENCE_PLANTED_SECRET_nsys_5be0"

DDL = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
CREATE TABLE META_DATA_CAPTURE (name TEXT, value TEXT);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT, systemClockNs INTEGER);
CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT NOT NULL, name TEXT NOT NULL, nameEnum INTEGER NOT NULL, value TEXT NOT NULL);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT, isDiscrete INTEGER,
    l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER,
    uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
    demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
    registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
    blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
    dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
    gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER, graphId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
    copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
"""

#: two processes; process 2 launched its kernel on GPU 1
GPID_1 = (1 << 56) | (31337 << 24)
GPID_2 = (1 << 56) | (31338 << 24)


@dataclass
class K:
    start: int
    end: int
    name: int  # StringIds id of the demangled name
    device: int = 0
    gpid: int = GPID_1
    grid: tuple[int, int, int] = (132, 1, 1)
    block: tuple[int, int, int] = (128, 1, 1)
    regs: int = 168
    static_smem: int = 0
    dyn_smem: int = 229376
    stream: int = 7
    corr: int = 0


STRINGS = {
    10: "void gemm_kernel<128, 128>(float const*, float const*, float*, int)",
    11: "gemm_kernel",
    12: "_Z11gemm_kernelILi128ELi128EEvPKfS1_Pfi",
    20: "relu_kernel(float*, int)",
    21: "relu_kernel",
    22: "_Z11relu_kernelPfi",
}
SHORT = {10: 11, 20: 21, 99: 21}
MANGLED = {10: 12, 20: 22, 99: 22}


def default_kernels() -> list[K]:
    return [
        K(1_000_000, 1_030_000, 10, corr=11),
        K(1_050_000, 1_081_000, 10, corr=12),
        K(1_100_000, 1_129_000, 10, corr=13),
        K(
            1_200_000,
            1_204_000,
            20,
            grid=(1024, 1, 1),
            block=(256, 1, 1),
            regs=32,
            static_smem=4096,
            dyn_smem=0,
            corr=14,
        ),
        K(2_000_000, 2_031_500, 10, device=1, gpid=GPID_2, corr=3),
    ]


def build_export(path: Path, kernels: Sequence[K] | None = None, *, with_kernel_table: bool = True) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(DDL)
    conn.executemany("INSERT INTO StringIds VALUES (?, ?)", list(STRINGS.items()))
    conn.executemany(
        "INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
        [
            ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
            ("EXPORT_PRODUCT_VERSION", "2024.6.2.225"),
            ("EXPORT_SCHEMA_VERSION", "3.16.1"),
            ("EXPORT_USER", SECRET),
            ("EXPORT_HOST", "host-" + SECRET),
            ("EXPORT_PARAM_INPUT_PATH", f"/home/{SECRET}/report.nsys-rep"),
        ],
    )
    conn.executemany(
        "INSERT INTO META_DATA_CAPTURE VALUES (?, ?)",
        [
            ("PROCESS_0:COMMAND", f"python train.py --api-key {SECRET}"),
            ("PROCESS_0:WORKING_DIR", f"/home/{SECRET}"),
            ("PROCESS_0:ENVIRONMENT_VARIABLE", f"AWS_SECRET_ACCESS_KEY={SECRET}"),
            ("PROCESS_0:USER_NAME", SECRET),
        ],
    )
    conn.execute(
        "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1769308002162486533, '2026-01-25T02:26:42', '', 0)"
    )
    conn.execute("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (1, 'Local', 'Hostname', 4, ?)", (SECRET,))
    conn.executemany(
        "INSERT INTO PROCESSES VALUES (?, ?, ?)",
        [(GPID_1, 31337, f"/home/{SECRET}/train"), (GPID_2, 31338, f"/home/{SECRET}/eval")],
    )
    for dev in (0, 1, 2, 3):
        conn.execute(
            "INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, l2CacheSize, totalMemory, memoryBandwidth, clockRate, "
            "smCount, chipName, computeMajor, computeMinor) VALUES (0, ?, 'NVIDIA H100 80GB HBM3', ?, 52428800, 85520809984, "
            "3352320000000, 1980000000, 132, 'GH100', 9, 0)",
            (dev, f"0000:{dev:02x}:00.0"),
        )
    if not with_kernel_table:  # nsys writes a table only when it has rows
        conn.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    else:
        ks = default_kernels() if kernels is None else kernels
        conn.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid, "
            "demangledName, shortName, mangledName, launchType, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
            "staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId) "
            "VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?)",
            [
                (
                    k.start,
                    k.end,
                    k.device,
                    k.stream,
                    k.corr,
                    k.gpid,
                    k.name,
                    SHORT.get(k.name, 21),
                    MANGLED.get(k.name, 22),
                    k.regs,
                    *k.grid,
                    *k.block,
                    k.static_smem,
                    k.dyn_smem,
                    i,
                )  # fmt: skip
                for i, k in enumerate(ks)
            ],
        )
    conn.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, globalPid, bytes, copyKind) "
        "VALUES (?, ?, 0, 1, 7, ?, ?, ?)",
        [(500_000, 510_000, GPID_1, 4_194_304, 1), (1_300_000, 1_305_000, GPID_1, 1_048_576, 2)],
    )
    conn.commit()
    conn.close()
    return path
