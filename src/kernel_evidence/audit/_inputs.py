"""What an audit reads: packet files (JSON, JSONL, zstd; folders of them) and harness
outputs an adapter turns into packets, named with ``adapter`` or recognised by content.

Recognition is cheap and never guesses between two tools: a file is read as packets when
its first document has a ``schema_version`` and a ``producer``; as a harness output when
exactly one adapter's :func:`sniff` test says it is its own (a FlashInfer-Trace line, a
KernelBench ``eval_results.json``, a GPU MODE run result, TritonBench output). Anything
else in a folder is skipped with a warning; a file named on its own that nothing
recognises is an error naming it and the way out (``adapter``).
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from .._codec.decode import decode_checked, decode_document
from .._codec.structs import PacketStruct
from ..adapters._read import is_junk_entry
from ..errors import InputError
from ..io import Limits, Record, iter_records
from ..rules import Report, validate_struct
from ..rules._engine import finding

__all__ = ["Item", "detect", "read_items"]

_SNIFF_BYTES = 64 << 10
_to_struct = msgspec.json.Decoder(PacketStruct)
_PACKET_SUFFIXES = (".json", ".jsonl", ".ndjson", ".json.zst", ".jsonl.zst", ".ndjson.zst")
_HARNESS_SUFFIXES = (".json", ".jsonl", ".ndjson", ".jsonl.gz", ".json.gz", ".txt", ".log", ".parquet")
#: a FlashInfer-Trace definition or solution JSON: given to that adapter with the traces
_SIDE = "flashinfer-trace side file"
_PACKET_HEAD = re.compile(rb'"schema_version"\s*:\s*"\d')


class Item(NamedTuple):
    """One packet (its decoded struct and its validation report), or a document that
    could not be read (``packet`` None, the report says why)."""

    packet: Any
    report: Report


def _head(path: str) -> bytes:
    """The first bytes of a file (decompressed for gzip); empty when it cannot be read."""
    try:
        if path.lower().endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                return fh.read(_SNIFF_BYTES)
        with open(path, "rb") as fh:
            return fh.read(_SNIFF_BYTES)
    except (OSError, EOFError):
        return b""


def _looks_like_packets(path: str, head: bytes) -> bool:
    low = path.lower()
    if low.endswith(".zst"):
        return True  # packets are the only zstd this package reads
    if not low.endswith(_PACKET_SUFFIXES):
        return False
    return bool(_PACKET_HEAD.search(head)) and b'"producer"' in head


def detect(path: str) -> str | None:
    """``packets``, the name of the adapter whose output ``path`` is, or None (nothing, or
    more than one adapter, claims it)."""
    from ..adapters import available_adapters

    head = _head(path)
    if _looks_like_packets(path, head):
        return "packets"
    found: list[str] = []
    seen: set[int] = set()
    for ad in available_adapters().values():
        sniff = getattr(ad, "sniff", None)
        if sniff is None or id(ad) in seen:
            continue
        seen.add(id(ad))
        try:
            if sniff(path, head):
                found.append(ad.name)
        except Exception:  # noqa: BLE001 - a test that cannot decide does not claim the file
            continue
    if not found:
        found.extend(_builtin_guess(path, head))
    return found[0] if len(found) == 1 else None


def _builtin_guess(path: str, head: bytes) -> list[str]:
    """Recognition for built-in adapters that offer no ``sniff``."""
    low = os.path.basename(path).lower()
    if low == "eval_results.json" or low.startswith("baseline_time_") and low.endswith(".json"):
        return ["kernelbench"]
    if low.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        first = head.split(b"\n", 1)[0]
        if b'"definition"' in first and b'"workload"' in first and b'"evaluation"' in first:
            return ["flashinfer-trace"]
    # a FlashInfer-Trace definition or solution: read with the traces it belongs to
    definition = b'"op_type"' in head and b'"axes"' in head
    solution = b'"spec"' in head and b'"sources"' in head
    if low.endswith(".json") and head.lstrip()[:1] == b"{" and (definition or solution):
        return [_SIDE]
    return []


def _walk(paths: Sequence[str]) -> Iterator[tuple[str, bool]]:
    for item in paths:
        if item == "-":
            yield item, True
            continue
        p = Path(item)
        if not p.is_dir():
            if not p.exists():
                raise InputError(item, None, "no such file or directory")
            yield item, True
            continue
        for f in sorted(p.rglob("*")):
            if (
                f.is_file()
                and f.name.lower().endswith(_PACKET_SUFFIXES + _HARNESS_SUFFIXES)
                and not is_junk_entry(f, p)
            ):
                yield str(f), False


def read_items(
    paths: Sequence[str],
    *,
    adapter: str | None,
    options: dict[str, Any],
    limits: Limits | None,
    warnings: list[str],
) -> Iterator[Item]:
    """Every packet of ``paths``: packet files read as they are, harness outputs through
    their adapter (``adapter`` for all of them, else the one :func:`detect` names)."""
    if adapter is not None:
        yield from _ingested(adapter, list(paths), options, warnings)
        return
    packet_files: list[str] = []
    by_tool: dict[str, list[str]] = {}
    side: list[str] = []
    for path, explicit in _walk(paths):
        kind = "packets" if path == "-" else detect(path)
        if kind == "packets":
            packet_files.append(path)
        elif kind == _SIDE:
            side.append(path)
        elif kind is not None:
            by_tool.setdefault(kind, []).append(path)
        elif explicit:
            raise InputError(
                path,
                None,
                "neither packets nor an output of a harness this package recognises; name its "
                "tool with --from ADAPTER (kevidence ingest --help lists them)",
            )
        else:
            warnings.append(f"{path}: skipped: not recognised as packets or a harness output")
    if side:
        if "flashinfer-trace" in by_tool:
            by_tool["flashinfer-trace"].extend(side)
        else:
            warnings.extend(
                f"{p}: skipped: a FlashInfer-Trace definition or solution without its traces" for p in side
            )
    for name in packet_files:
        yield from _packets(name, limits)
    for tool, files in by_tool.items():
        yield from _ingested(tool, files, options, warnings)


def _packets(name: str, limits: Limits | None) -> Iterator[Item]:
    for rec in iter_records(name, limits):
        yield from _record_items(rec)


def _record_items(rec: Record) -> Iterator[Item]:
    if rec.error is not None:
        f = finding("KE000", "", rec.error.message)
        yield Item(None, Report(rec.source, rec.location, None, [f]))
        return
    data = rec.data
    assert data is not None  # a record without an error carries data
    one = decode_checked(data)
    if one is not None:
        yield Item(
            one.packet, validate_struct(one.packet, rec.source, rec.location, content_id=one.content_id)
        )
        return
    for d in decode_document(rec):
        if d.packet is not None:
            rep = validate_struct(d.packet, rec.source, d.location, d.canonical, content_id=d.content_id)
            yield Item(d.packet, rep)
        else:
            f = finding(d.rule_id or "KE001", d.pointer, d.error or "unreadable")
            yield Item(None, Report(rec.source, d.location, None, [f]))


def _ingested(tool: str, files: list[str], options: dict[str, Any], warnings: list[str]) -> Iterator[Item]:
    from .._ingest import ingest_json

    result, encoded = ingest_json(tool, files, extra=options)
    warnings.extend(f"{tool}: {w}" for w in result.warnings)
    # an adapter's packets do not say which file and line each came from: the subject's
    # description does (``... (trace.jsonl line 3)``), so it is the location
    where = files[0] if len(files) == 1 else f"{tool} output"
    for i, (p, data) in enumerate(zip(result.packets, encoded, strict=True), 1):
        # the bytes are the canonical JSON ingest just made, with the id it just computed
        # from them: decoded as they are, not hashed again
        struct = _to_struct.decode(data)
        desc = p.subject.description or f"packet {i}"
        yield Item(struct, validate_struct(struct, where, desc, content_id=p.packet_id))
