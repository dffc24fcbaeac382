"""Validation of large batches in worker processes, results in input order.

The parent reads records (files, JSONL lines, zstd frames) and sends them in batches to
``jobs`` worker processes; each worker decodes, checks and grades, and sends back compact
reports. At most ``2 * jobs + 2`` batches are in flight, so memory stays flat whatever the
input size, and reports come back in the order the records were read: the output is the
same as the single-process path's.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor

from ..io import Limits, Record, discover, iter_records
from ._engine import Finding, Grade, Report

__all__ = ["auto_jobs", "validate_parallel"]

_BATCH_RECORDS = 512
_BATCH_BYTES = 4 << 20
#: below this much input, starting workers costs more than it saves
AUTO_MIN_BYTES = 32 << 20

Entry = tuple[str, "str | None", "bytes | None", "str | None"]
Packed = tuple[
    str | None, str | None, str | None, list[tuple[str, str, str, str, str]], tuple[str, tuple[str, ...]]
]


def auto_jobs(paths: Iterable[str]) -> int:
    """How many worker processes to use for ``paths``: 1 for small inputs or stdin."""
    cpus = os.cpu_count() or 1
    if cpus < 2:
        return 1
    total = 0
    for name in paths:
        if name == "-":
            return 1
        try:
            total += os.path.getsize(name)
        except OSError:
            continue
    return min(cpus, 4) if total >= AUTO_MIN_BYTES else 1


def _pack(rep: Report) -> Packed:
    g = rep.grade
    return (
        rep.source,
        rep.location,
        rep.packet_id,
        [(f.rule_id, f.severity, f.pointer, f.message, f.hint) for f in rep.findings],
        (g.letter, g.reasons),
    )


def _unpack(p: Packed) -> Report:
    source, location, packet_id, findings, (letter, reasons) = p
    return Report(
        source,
        location,
        packet_id,
        [Finding(*f) for f in findings],  # type: ignore[arg-type]
        Grade(letter, reasons),  # type: ignore[arg-type]
    )


def check_batch(batch: list[Entry]) -> list[Packed]:
    """Worker side: every report of a batch of records, packed."""
    from . import report_record

    out: list[Packed] = []
    for source, location, data, error in batch:
        rec = Record(source, location, data=data) if error is None else None
        if rec is None:
            from ..errors import InputError

            rec = Record(source, location, error=InputError(source, location, error or ""))
        for rep in report_record(rec):
            out.append(_pack(rep))
    return out


def _batches(paths: Iterable[str], limits: Limits | None) -> Iterator[list[Entry]]:
    batch: list[Entry] = []
    size = 0
    for name in discover(paths):
        for rec in iter_records(name, limits):
            if rec.error is not None:
                batch.append((rec.source, rec.location, None, rec.error.message))
            else:
                batch.append((rec.source, rec.location, rec.data, None))
                size += len(rec.data or b"")
            if len(batch) >= _BATCH_RECORDS or size >= _BATCH_BYTES:
                yield batch
                batch, size = [], 0
    if batch:
        yield batch


def validate_parallel(paths: Iterable[str], limits: Limits | None, jobs: int) -> Iterator[Report]:
    """Reports for every record of ``paths``, checked in ``jobs`` worker processes."""
    # spawn: workers start clean (no inherited threads or locks), whatever the parent holds
    ctx = multiprocessing.get_context("spawn")
    pending: deque[Future[list[Packed]]] = deque()
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        for batch in _batches(paths, limits):
            pending.append(pool.submit(check_batch, batch))
            if len(pending) >= 2 * jobs + 2:
                for p in pending.popleft().result():
                    yield _unpack(p)
        while pending:
            for p in pending.popleft().result():
                yield _unpack(p)
