"""Packet files rewritten at the current schema version (``kevidence migrate``).

Every packet of the inputs (files, directories, JSONL, zstd, ``-``) is read through the
single decode entry point (:mod:`.decode`), so an older one is migrated exactly as every
reader migrates it, and written as the canonical JSON of its current form with the id of
that form. A packet already current is copied as it is (canonical JSON, its own id).

A packet that cannot be read, or an older one whose ``packet_id`` does not match its
content at the version it states, is reported and not written; when any is, nothing is
written at all (a partial output would pass for a complete one). The output never
replaces one of the inputs.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import msgspec

from ..errors import InputError, shown
from .decode import decode_document
from .structs import canonical_struct_bytes, encode_struct

__all__ = ["MigrateSummary", "migrate_paths"]


@dataclass
class MigrateSummary:
    """What :func:`migrate_paths` did: packets migrated from an older version, packets
    already current (copied), packets refused, packets written."""

    migrated: int = 0
    current: int = 0
    failed: int = 0
    written: int = 0


class _Refused(Exception):
    """Raised at the end of the packets when any was refused: the output is not committed."""


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def migrate_paths(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    on_error: Callable[[str], None] | None = None,
) -> MigrateSummary:
    """Write every packet of ``paths`` to ``out`` at the current schema version (JSON for
    one packet, JSONL for several; zstd when ``out`` ends in ``.zst``); returns the counts.

    Each packet that is refused is reported to ``on_error`` as one line (file, place,
    why); when any is, nothing is written. Raises :class:`InputError` when ``out`` is one
    of the inputs, ``FileExistsError`` when ``out`` exists and not ``overwrite``, and
    ``ValueError`` for several packets into a ``.json`` name.
    """
    from ..io import discover, iter_records, write_packets

    names = list(discover(paths))
    target = os.fspath(out)
    for name in names:
        if name != "-" and _same_file(name, target):
            raise InputError(
                target,
                None,
                "is one of the inputs; migrate never overwrites its input (write to another file)",
            )
    summary = MigrateSummary()
    report = on_error if on_error is not None else (lambda line: None)

    def refuse(line: str) -> None:
        summary.failed += 1
        report(line)

    def packets() -> Iterator[msgspec.Raw]:
        for name in names:
            for rec in iter_records(name):
                if rec.error is not None:
                    refuse(str(rec.error))
                    continue
                for item in decode_document(rec):
                    where = f"{shown(rec.source)}:{item.location}" if item.location else shown(rec.source)
                    p = item.packet
                    if p is None:
                        at = f" - at `{item.pointer}`" if item.pointer else ""
                        refuse(f"{where}: {item.rule_id} {item.error}{at}")
                        continue
                    if item.migrated:
                        if p.packet_id is not None and item.content_id != p.packet_id:
                            refuse(
                                f"{where}: packet_id does not match the content at the version it states "
                                f"(expected {item.content_id}); not migrated - at `/packet_id`"
                            )
                            continue
                        if p.packet_id is None:
                            digest = hashlib.sha256(canonical_struct_bytes(p)).hexdigest()
                            p = msgspec.structs.replace(p, packet_id="sha256:" + digest)
                        summary.migrated += 1
                    else:
                        summary.current += 1
                    yield msgspec.Raw(encode_struct(p))
        if summary.failed or not (summary.migrated or summary.current):
            raise _Refused  # nothing written: refused packets, or none at all

    try:
        summary.written = write_packets(target, packets(), overwrite=overwrite)
    except _Refused:
        summary.written = 0
    return summary
