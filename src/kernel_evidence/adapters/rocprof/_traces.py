"""rocprofv3 traces read whole: the JSON output and the rocpd database, one packet per run.

Chosen by content (:func:`sniff_trace`): an SQLite header is a rocpd database, a JSON object
whose first key is ``rocprofiler-sdk-tool`` (plain or gzip) a rocprofv3 JSON output, whatever
the files are called.
"""

from __future__ import annotations

from pathlib import Path

from ..._gc import paused_gc
from ...errors import InputError
from ...models import EvidencePacket
from .. import AdapterOptions
from .._read import file_artifact, max_bytes_option
from .._sqlite import MAGIC, Database
from ._rocpd import WHAT as ROCPD_WHAT
from ._rocpd import read_rocpd
from ._trace import run_packet, source_artifact
from ._v3_json import looks_like_json, read_json

__all__ = ["TRACE_KINDS", "read_traces", "sniff_trace"]

#: the job kinds of this module: rocpd database, rocprofv3 JSON
TRACE_KINDS = ("rocpd", "v3json")


def sniff_trace(head: bytes) -> str | None:
    """``rocpd`` or ``v3json`` from a file's first bytes (decompressed), else None."""
    if head[:16] == MAGIC:
        return "rocpd"
    if looks_like_json(head):
        return "v3json"
    return None


def _not_rocpd(path: Path, cap: int) -> str | None:
    """Why an SQLite file is not a rocpd database, when it is plainly something else."""
    with Database(str(path), what=ROCPD_WHAT, cap=cap) as db:
        if db.has("CUPTI_ACTIVITY_KIND_KERNEL") or db.has("META_DATA_EXPORT"):
            return "an Nsight Systems export, not a rocpd database: read it with `kevidence ingest nsys`"
    return None


def read_traces(kind: str, path: Path, options: AdapterOptions) -> list[EvidencePacket]:
    """The packets of one rocpd database or rocprofv3 JSON file (one per profiled process)."""
    extra = options.extra
    cap = max_bytes_option(extra)
    with paused_gc():
        if kind == "rocpd":
            why = _not_rocpd(path, cap)
            if why:
                raise InputError(str(path), None, why)
            runs = read_rocpd(path, cap)
            source = file_artifact(path, "application/vnd.sqlite3")
            tool = "rocprofv3"
        else:
            runs, raw = read_json(path, cap)
            source = source_artifact(path, raw, "application/json")
            tool = "rocprofv3"
        stem = path.name.split(".")[0] or "rocprofv3"
        packets = []
        for i, run in enumerate(runs):
            packet = run_packet(
                run, options=options, tool=tool, source=source, stem=f"{stem}-{i}" if len(runs) > 1 else stem
            )
            if extra.get("packet_ids", True):
                packet = packet.with_id()
            packets.append(packet)
    return packets
