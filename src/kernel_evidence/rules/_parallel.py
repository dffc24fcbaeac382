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

import os
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

if TYPE_CHECKING:  # loaded when workers start: a small input (auto_jobs) needs neither
    import multiprocessing.context
    from concurrent.futures import Future

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


#: grades come back from the workers as (letter, reasons); a batch repeats a few of them
_GRADES: dict[tuple[str, tuple[str, ...]], Grade] = {}


def _unpack(p: Packed) -> Report:
    source, location, packet_id, findings, grade = p
    g = _GRADES.get(grade)
    if g is None:
        g = Grade(*grade)  # type: ignore[arg-type]
        if len(_GRADES) < 1024 and sum(map(len, grade[1])) <= 1024:
            _GRADES[grade] = g
    return Report(
        source,
        location,
        packet_id,
        [Finding(*f) for f in findings] if findings else [],  # type: ignore[arg-type]
        g,
    )


def check_batch(batch: list[Entry]) -> list[Packed]:
    """Worker side: every report of a batch of records, packed."""
    from . import _batched_reports

    records: list[Record] = []
    for source, location, data, error in batch:
        rec = Record(source, location, data=data) if error is None else None
        if rec is None:
            from ..errors import InputError

            rec = Record(source, location, error=InputError(source, location, error or ""))
        records.append(rec)
    return [_pack(rep) for rep in _batched_reports(records)]


_RANGE_BYTES = 4 << 20
#: how much is read at a time to find the line end after a cut
_PROBE_BYTES = 64 << 10

#: (whether the range held a non-blank line, how many lines it held, its reports)
Result = tuple[bool, int, list[Packed]]


class _Range(NamedTuple):
    """Bytes ``[offset, offset + length)`` of a JSONL file, cut at a line end."""

    name: str
    offset: int
    length: int
    last: bool  # the file's last range


Task = _Range | list[Entry]  # a range, or a batch of records read by the parent


def check_range(name: str, offset: int, length: int, limits: Limits | None) -> Result:
    """Worker side: every report of one range of a JSONL file, packed, with locations
    counted from the range's first line (the parent adds the lines before it)."""
    from . import _batched_reports

    seen: list[Any] = [False, 0]
    out = [_pack(rep) for rep in _batched_reports(_iter_line_range(name, offset, length, 0, limits, seen))]
    return seen[0], seen[1], out


def _rebase(location: str | None, lines_before: int) -> str | None:
    """``line K`` (or ``line K, item I``) counted from a range's start -> from the file's."""
    if not lines_before or location is None or not location.startswith("line "):
        return location
    number, comma, rest = location[5:].partition(",")
    return f"line {int(number) + lines_before}{comma}{rest}"


def _plain_jsonl(name: str) -> bool:
    if name == "-":
        return False
    is_jsonl, zst = _kind(name)
    return is_jsonl and not zst and os.path.isfile(name)


def _ranges(name: str, fh: BinaryIO) -> Iterator[Task]:
    """Cut an open JSONL file into ranges of about ``_RANGE_BYTES`` that end at line ends
    (a line longer than a range makes that range longer); the last one is marked. Only the
    bytes after each cut are read here, up to the next line end: the workers read the rest."""
    try:
        size = os.fstat(fh.fileno()).st_size
        start = 0
        while True:
            cut = start + _RANGE_BYTES
            if cut >= size:
                yield _Range(name, start, size - start, True)
                return
            fh.seek(cut)
            end = size
            while True:
                probe = fh.read(_PROBE_BYTES)
                if not probe:
                    break
                nl = probe.find(b"\n")
                if nl >= 0:
                    end = cut + nl + 1
                    break
                cut += len(probe)
            yield _Range(name, start, end - start, end >= size)
            if end >= size:
                return
            start = end
    except OSError as exc:
        yield [(name, None, None, f"could not be read ({exc.strerror or exc})")]


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


def _single_threaded() -> bool:
    """True when this process runs one thread only, native threads included (Linux: the
    entries of /proc/self/task); False when that cannot be told."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _context() -> multiprocessing.context.BaseContext:
    """How workers start. A process that runs no other thread (the CLI, most scripts) forks
    them: they start at once, with everything imported. Otherwise (a thread might hold a
    lock the child would inherit) forkserver where the platform has it (workers forked from
    one process that imported the validator once), else spawn."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if sys.platform == "linux" and "fork" in methods and _single_threaded():
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["kernel_evidence.rules"])
        return ctx
    return multiprocessing.get_context("spawn")


def validate_parallel(paths: Iterable[str], limits: Limits | None, jobs: int) -> Iterator[Report]:
    """Reports for every record of ``paths``, checked in ``jobs`` worker processes."""
    pending: deque[tuple[Task, Future[Any]]] = deque()
    seen_in_file = False
    lines_before = 0  # lines of the file before the range at hand

    def results(task: Task, fut: Future[Any]) -> Iterator[Report]:
        nonlocal seen_in_file, lines_before
        if not isinstance(task, _Range):
            for p in fut.result():
                yield _unpack(p)
            return
        seen, lines, packed = fut.result()
        if task.offset == 0:  # a file's first range
            seen_in_file = False
            lines_before = 0
        seen_in_file = seen_in_file or seen
        for p in packed:
            rep = _unpack(p)
            if lines_before:
                rep.location = _rebase(rep.location, lines_before)
            yield rep
        lines_before += lines
        if task.last and not seen_in_file:
            from . import report_record

            yield from report_record(_empty_input_record(task.name))

    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs, mp_context=_context()) as pool:
        for task in _tasks(paths, limits):
            fut: Future[Any]
            if isinstance(task, _Range):
                fut = pool.submit(check_range, task.name, task.offset, task.length, limits)
            else:
                fut = pool.submit(check_batch, task)
            pending.append((task, fut))
            if len(pending) >= 2 * jobs + 2:
                yield from results(*pending.popleft())
        while pending:
            yield from results(*pending.popleft())
