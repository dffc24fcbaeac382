"""KE9xx: raw profiler metrics, inline or in a side file, that can be traced and verified.

KE903/KE904 need the packet's file: ``raw_table_findings`` in :mod:`kernel_evidence.rules`
checks them for packets read from files (``validate_paths`` and ``kevidence validate``).
"""

from __future__ import annotations

from typing import Any

from ._context import Add, Ctx
from ._engine import declare

declare(
    "KE901",
    "error",
    "raw metric columns align with the kernel records",
    "give every column of /profiler/N/raw_columns one value per kernel record, null where a launch has none",
    "In a profiler capture, each list of `raw_columns` MUST have exactly one entry per element of `kernels`, in the same order, so that a value can be traced to its launch.",
)
declare(
    "KE902",
    "error",
    "a raw metrics side file is a verifiable reference",
    "give /profiler/N/raw_table a path or uri, its sha256 and the Arrow IPC media type, and drop raw_columns",
    "A capture whose raw metrics are in a side file (`raw_table`) MUST NOT also carry `raw_columns`, and the reference MUST give the file's sha256, a path or uri, and the media type `application/vnd.apache.arrow.file`: the packet id covers the raw values only through the digest.",
)
declare(
    "KE903",
    "error",
    "a raw metrics side file is the one the packet names",
    "restore the side file the packet was written with (same size and sha256), or ingest again",
    "A raw table (`raw_table`) found where the packet says MUST have the size and sha256 the packet gives, and be a regular file. Checked by `kevidence validate` (and `validate_paths`) for packets read from files; `validate()` of a packet object reads no file.",
)
declare(
    "KE904",
    "warning",
    "the raw metrics side file is beside the packet",
    "keep the side file (`raw_table.path`, relative to the packet file) with the packet",
    "A packet read from a file SHOULD have its raw table where `raw_table.path` says (relative to the packet file's directory): without it the raw metrics are lost.",
)


def check(p: Any, ctx: Ctx, add: Add) -> None:
    if p.profiler:
        _profiler(p.profiler, add)


def _profiler(captures: Any, add: Add) -> None:
    for i, cap in enumerate(captures):
        cols = cap.raw_columns
        ref = cap.raw_table
        if ref is not None:
            ptr = f"/profiler/{i}/raw_table"
            if cols is not None:
                add(("KE902", f"/profiler/{i}/raw_columns", "raw metrics both inline and in a side file"))
            if ref.sha256 is None:
                add(("KE902", ptr + "/sha256", "raw metrics side file without a sha256"))
            if not ref.path and not ref.uri:
                add(("KE902", ptr, "raw metrics side file with neither path nor uri"))
            if ref.media_type != "application/vnd.apache.arrow.file":
                add(
                    (
                        "KE902",
                        ptr + "/media_type",
                        f"raw metrics side file of media type {ref.media_type!r}; expected an Arrow IPC file",
                    )
                )
        if not cols:
            continue
        n = len(cap.kernels) if cap.kernels else 0
        for name, values in cols.items():
            if len(values) != n:
                esc = name.replace("~", "~0").replace("/", "~1")
                ptr = f"/profiler/{i}/raw_columns/{esc}"
                add(("KE901", ptr, f"column `{name}` has {len(values)} values for {n} kernel records"))
                return
