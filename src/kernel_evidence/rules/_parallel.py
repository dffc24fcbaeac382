"""Validation of large batches in worker processes, results in input order.

Plain JSONL files are cut into ranges of about 4 MiB that end at a line end; a worker reads
its range from the file itself, so the parent only finds the cuts (and the line number each
range starts at). Other inputs (``.json`` files, zstd streams, stdin) are read by the parent
and sent to the workers as batches of records. Workers decode, check and grade, and send
back compact reports. At most ``2 * jobs + 2`` tasks are in flight, so memory stays flat
whatever the input size, and reports come back in the order the records were read: the
output is the same as the single-process path's.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, BinaryIO, NamedTuple

from ..io import Limits, Record, _empty_input_record, _iter_line_range, _kind, discover, iter_records
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


_RANGE_BYTES = 4 << 20

Result = tuple[bool, list[Packed]]


class _Range(NamedTuple):
    """Bytes ``[offset, offset + length)`` of a JSONL file, after line ``first_line``."""

    name: str
    offset: int
    length: int
    first_line: int
    last: bool  # the file's last range


Task = _Range | list[Entry]  # a range, or a batch of records read by the parent


def check_range(name: str, offset: int, length: int, first_line: int, limits: Limits | None) -> Result:
    """Worker side: every report of one range of a JSONL file, packed, and whether the
    range held any line."""
    from . import report_record

    seen = [False]
    out: list[Packed] = []
    for rec in _iter_line_range(name, offset, length, first_line, limits, seen):
        for rep in report_record(rec):
            out.append(_pack(rep))
    return seen[0], out


def _plain_jsonl(name: str) -> bool:
    if name == "-":
        return False
    is_jsonl, zst = _kind(name)
    return is_jsonl and not zst and os.path.isfile(name)


def _ranges(name: str, fh: BinaryIO) -> Iterator[Task]:
    """Cut an open JSONL file into ranges that end at line ends (a line longer than a range
    makes that range longer); the last range of the file is marked."""
    start = pos = 0
    line = 0
    while True:
        try:
            block = fh.read(_RANGE_BYTES)
        except OSError as exc:
            yield [(name, None, None, f"could not be read ({exc.strerror or exc})")]
            return
        if not block:
            break
        nl = block.rfind(b"\n")
        if nl >= 0:
            end = pos + nl + 1
            # no line end between `start` and this block: it has them all
            yield _Range(name, start, end - start, line, False)
            line += block.count(b"\n", 0, nl + 1)
            start = end
        pos += len(block)
    yield _Range(name, start, pos - start, line, True)


def _tasks(paths: Iterable[str], limits: Limits | None) -> Iterator[Task]:
    batch: list[Entry] = []
    size = 0
    for name in discover(paths):
        fh = None
        if _plain_jsonl(name):
            try:
                fh = open(name, "rb")  # noqa: SIM115
            except OSError:
                fh = None  # read below, as a record batch: the error is reported the usual way
        if fh is not None:
            with fh:
                if batch:
                    yield batch
                    batch, size = [], 0
                yield from _ranges(name, fh)
            continue
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


def _context() -> multiprocessing.context.BaseContext:
    """forkserver where the platform has it (workers forked from one process that imported
    the validator once), else spawn; never plain fork (the parent may run threads)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["kernel_evidence.rules"])
        return ctx
    return multiprocessing.get_context("spawn")


def validate_parallel(paths: Iterable[str], limits: Limits | None, jobs: int) -> Iterator[Report]:
    """Reports for every record of ``paths``, checked in ``jobs`` worker processes."""
    pending: deque[tuple[Task, Future[Any]]] = deque()
    seen_in_file = False

    def results(task: Task, fut: Future[Any]) -> Iterator[Report]:
        nonlocal seen_in_file
        if not isinstance(task, _Range):
            for p in fut.result():
                yield _unpack(p)
            return
        seen, packed = fut.result()
        if task.offset == 0:  # a file's first range
            seen_in_file = False
        seen_in_file = seen_in_file or seen
        for p in packed:
            yield _unpack(p)
        if task.last and not seen_in_file:
            from . import report_record

            yield from report_record(_empty_input_record(task.name))

    with ProcessPoolExecutor(max_workers=jobs, mp_context=_context()) as pool:
        for task in _tasks(paths, limits):
            fut: Future[Any]
            if isinstance(task, _Range):
                fut = pool.submit(check_range, task.name, task.offset, task.length, task.first_line, limits)
            else:
                fut = pool.submit(check_batch, task)
            pending.append((task, fut))
            if len(pending) >= 2 * jobs + 2:
                yield from results(*pending.popleft())
        while pending:
            yield from results(*pending.popleft())
