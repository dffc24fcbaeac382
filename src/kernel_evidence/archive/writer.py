"""Archiving packets into a Parquet dataset.

Streaming: packets are read one document at a time; each partition stages a few hundred
rows as Python values, turns them into an Arrow batch and writes a row group as soon as it
holds a whole one. When the packets held over all partitions pass a budget, the partition
holding most writes them as a shorter row group, or, holding too little for one, moves them
to its own hidden spill file (an lz4 Arrow IPC stream), as it does when too many partitions
have a file open already. At the commit each spill is read back and written as whole row
groups, however the input interleaved the partitions (two partitions at a time, in threads:
Arrow compresses without holding the GIL). Memory stays bounded whatever the input size:
the only thing that grows is the set of packet ids used to skip duplicates (about 100 bytes
per packet).

Decoded once: each packet's JSON bytes are decoded into the core packet struct, which is
validated and gives the typed columns (see :mod:`._worker`); a document that does not decode
into it (for example an invalid packet kept with ``--allow-invalid``) takes the reference
path over its decoded JSON data, with the same column values.

Parallel: on large inputs a second process analyses batches too, while this one reads,
analyses whatever the other has no room for, and writes; every document is resolved (kept,
skipped or refused) in input order, so the result does not depend on it.

Atomic: every file is written under a hidden ``.name.tmp`` name and renamed into place only
after every file of the run was written, flushed and synced; the run then becomes visible
at once, when the archive's commit list naming its files replaces the old one (see
:mod:`._layout`). A failure (a full disk, a permission error, an interrupt) removes the
temporary files and the files already renamed, so the dataset is exactly as it was; a
process killed at any point leaves files no reader takes (hidden, or not in the list),
which the next run removes before it adds anything. Running the same archive command again
adds what is missing.

Raw tables: a profiler capture may keep its raw metrics in an Arrow IPC side file
(``raw_table``, see :mod:`kernel_evidence.rawtable`) that the packet names by sha256 and a
path relative to the packet file. The run copies each such file, checked against its
reference, into ``_raw/<sha256 hex>.arrow`` (see :mod:`._raw`), staged and committed with
the Parquet files; a file that is missing or differs is reported as a
:class:`RawTableWarning` and the packet archived all the same.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from itertools import accumulate
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from .._codec.canonical import packet_id_for
from .._codec.decode import EMPTY_ARRAY
from .._gc import paused_gc
from .._version import __version__
from ..errors import ArchiveError
from ..io import Limits, discover, iter_records
from ..models import SCHEMA_VERSION
from ..rules import device_peaks
from ..rules._tables import peak_flops_for
from . import _layout
from ._check import check
from ._ids import IdIndex
from ._raw import RawStore, fsync_dir, has_raw_table, raw_refs, raw_refs_of
from ._rows import extract, partition_of
from ._worker import analyse, not_json
from .reader import OutputError
from .schema import (
    ARCHIVE_LAYOUT_VERSION,
    COLUMNS,
    DICTIONARY_COLUMNS,
    FILE_SCHEMA,
    MARKER_NAME,
    META_LAYOUT_VERSION,
    META_PRODUCER,
    META_SCHEMA_VERSION,
)

__all__ = ["ArchiveSummary", "RawTableWarning", "Refusal", "archive_packets"]

#: rows per row group, and the packet bytes that close a row group early
ROW_GROUP_ROWS = 65_536
ROW_GROUP_BYTES = 8 << 20
#: rows one partition keeps as Python values before they become an Arrow batch
STAGE_ROWS = 512
#: packet bytes held in memory over all partitions (Python values and Arrow batches not
#: yet written) before the largest partition writes a row group of at least
#: ROW_GROUP_MIN_BYTES or, holding less, spills
BUFFER_BYTES = 32 << 20
ROW_GROUP_MIN_BYTES = 4 << 20
#: partitions that may have a file open before the commit; the others spill
OPEN_FILES = 4
#: documents analysed per batch; batches at most with the second process; batches at most
#: waiting to be resolved; documents read before the second process is started (a smaller
#: input is analysed in this process only)
BATCH = 1024
IN_FLIGHT = 4
MAX_PENDING = 8
PARALLEL_AFTER = 2048
#: input files of at least this many bytes in all start the second process at once, so that
#: its start-up (imports, about half a second) overlaps the first batches
PARALLEL_BYTES = 32 << 20
#: rows per file before a partition starts a new file
FILE_ROWS = 1_048_576
_MAX_KEPT_REFUSALS = 1000
_MAX_KEPT_WARNINGS = 1000

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
_NO_STATS = ("packet", "findings", "grade_reasons", "dtypes", "shape_ids")
_STATS_COLUMNS = [c.name for c in COLUMNS if c.name not in _NO_STATS]
_PRODUCER = f"kernel-evidence {__version__}"
_LEVELS = {name: 3 if name == "packet" else 1 for name in FILE_SCHEMA.names}
#: the ``packet`` column, the last one (see :func:`_batch`)
_PACKET = len(COLUMNS) - 1
assert COLUMNS[_PACKET].name == "packet"
#: bytes a ``binary`` array can hold (32-bit offsets)
_MAX_BINARY = 2**31 - 1


@dataclass(frozen=True)
class Refusal:
    """A document that was not archived: where it came from and why (one line each)."""

    source: str
    location: str | None
    reasons: list[str]

    def line(self) -> str:
        where = f"{self.source}:{self.location}" if self.location else self.source
        return f"{where}: " + "; ".join(self.reasons)


@dataclass(frozen=True)
class RawTableWarning:
    """A raw table (a capture's side file) that was not copied into the archive, though its
    packet was archived: the packet's source and location, the reference's path (or uri),
    and what is wrong."""

    source: str
    location: str | None
    table: str
    reason: str

    def line(self) -> str:
        where = f"{self.source}:{self.location}" if self.location else self.source
        return f"{where}: raw table {self.table} not archived: {self.reason}"


@dataclass
class ArchiveSummary:
    """What one archive run did."""

    added: int = 0
    duplicates: int = 0
    refused_count: int = 0
    #: the first refusals (at most 1000), in input order
    refused: list[Refusal] = field(default_factory=list)
    #: files added to the dataset, relative to its root
    files: list[str] = field(default_factory=list)
    #: raw tables copied into the archive, relative to its root (``_raw/<sha256 hex>.arrow``)
    raw_files: list[str] = field(default_factory=list)
    warning_count: int = 0
    #: the first raw tables that could not be copied (at most 1000), in input order
    warnings: list[RawTableWarning] = field(default_factory=list)
    #: what runs killed before their commit had left, removed by this one (relative paths)
    cleaned: list[str] = field(default_factory=list)


class _FdWriter(io.RawIOBase):
    """A raw file over an OS file descriptor; every byte goes through :func:`os.write`."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        #: set when the file is abandoned: later writes (a flush at close) go nowhere
        self.discard = False

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        total = len(view)
        if self.discard:
            return total
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        return total

    def fileno(self) -> int:
        return self._fd


class _PartFile:
    """One Parquet file being written under a hidden temporary name."""

    def __init__(self, directory: Path, metadata: dict[bytes, bytes]) -> None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        self.name = f"part-{stamp}-{uuid.uuid4().hex[:16]}.parquet"
        self.final = directory / self.name
        self.tmp = directory / f".{self.name}.tmp"
        self.rows = 0
        self._fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self._raw = _FdWriter(self._fd)
        self._buf = io.BufferedWriter(self._raw, 1 << 20)
        self._writer: pq.ParquetWriter | None = None
        try:
            self._writer = pq.ParquetWriter(
                self._buf,
                FILE_SCHEMA.with_metadata(metadata),
                compression="zstd",
                # JSON compresses better over large pages; for it level 7 takes three times
                # as long as level 3 for 5% less, level 1 is a quarter larger
                # (docs/archive.md); the typed columns come out as small at level 1 as at
                # 3, and sooner
                compression_level=_LEVELS,
                data_page_size=8 << 20,
                use_dictionary=list(DICTIONARY_COLUMNS),
                write_statistics=_STATS_COLUMNS,
            )
            self._buf.flush()  # the magic bytes: a temporary file is never seen empty
        except BaseException:  # a full disk at once: the file is not left behind
            self.abort()
            raise

    def write(self, table: pa.Table) -> None:
        assert self._writer is not None
        self._writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        self.rows += table.num_rows

    def finish(self) -> None:
        """Close the Parquet footer, flush and sync; the file stays hidden."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._buf.flush()
        os.fsync(self._fd)
        self._buf.close()  # marks the raw writer closed; the descriptor is ours to close
        self._close_fd()

    def _close_fd(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1

    def abort(self) -> None:
        """Abandon the file: nothing more reaches the disk, then it is removed."""
        self._raw.discard = True
        with contextlib.suppress(Exception):
            if self._writer is not None:
                self._writer.close()
        self._writer = None
        with contextlib.suppress(Exception):
            self._buf.close()
        self._close_fd()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)


class _Spill:
    """A hidden Arrow IPC stream (lz4) holding one partition's rows until the commit.

    Spilling lets every partition fill whole row groups however the input interleaves
    partitions, with memory bounded by one row group.
    """

    def __init__(self, root: Path) -> None:
        self.path = root / f".spill-{uuid.uuid4().hex[:16]}.arrows.tmp"
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        self._raw = _FdWriter(self._fd)
        self._buf = io.BufferedWriter(self._raw, 1 << 20)
        options = pa.ipc.IpcWriteOptions(compression="lz4")
        self._writer: Any = pa.ipc.new_stream(self._buf, FILE_SCHEMA, options=options)

    def write(self, batch: pa.RecordBatch) -> None:
        self._writer.write_batch(batch)

    def flush(self) -> None:
        self._buf.flush()

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Close the stream and read it back, batch by batch."""
        self._writer.close()
        self._buf.flush()
        with pa.OSFile(str(self.path), "rb") as fh:
            yield from pa.ipc.open_stream(fh)

    def remove(self) -> None:
        self._raw.discard = True
        with contextlib.suppress(Exception):
            self._writer.close()
        with contextlib.suppress(Exception):
            self._buf.close()
        with contextlib.suppress(OSError):
            os.close(self._fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


class _Partition:
    """One ``vendor=/month=`` directory: rows being staged, Arrow batches held for a row
    group, its spill file, its new files.

    Rows arrive in input order and stay in it: row groups written during the run hold the
    partition's first rows; once the partition spills, everything after goes to the spill,
    which is written after them at the commit.
    """

    def __init__(self, root: Path, key: tuple[str, str], writer: _Writer) -> None:
        self.key = key
        self.rel = Path(f"vendor={key[0]}") / f"month={key[1]}"
        self.dir = root / self.rel
        self.root = root
        self.rows: list[list[Any]] = []
        self.staged_bytes = 0
        #: Arrow batches waiting for a whole row group, their rows and packet bytes
        self.held: list[pa.RecordBatch] = []
        self.held_rows = 0
        self.held_bytes = 0
        self.spill: _Spill | None = None
        self.files: list[_PartFile] = []
        self.existing: IdIndex | None = None
        #: set at the commit: whatever is held is written, never spilled
        self.committing = False
        self._writer = writer

    @property
    def buffered(self) -> int:
        """Packet bytes this partition holds in memory."""
        return self.staged_bytes + self.held_bytes

    def append(self, row: list[Any], size: int) -> None:
        self.rows.append(row)
        self.staged_bytes += size

    def stage(self) -> None:
        """Turn the staged rows into one Arrow batch: held (whole row groups are written at
        once), or appended to the spill file once the partition spills."""
        if not self.rows:
            return
        batch = _batch(self.rows, self.staged_bytes)
        self.rows, self.staged_bytes = [], 0
        if self.spill is not None:
            self.spill.write(batch)
        else:
            self.hold(batch)

    def hold(self, batch: pa.RecordBatch) -> None:
        self.held.append(batch)
        self.held_rows += batch.num_rows
        self.held_bytes += batch.column(_PACKET).nbytes
        if self.held_rows >= ROW_GROUP_ROWS or self.held_bytes >= ROW_GROUP_BYTES:
            if self._may_write():
                self.write_held(rest=False)
            else:
                self._spill_held()

    def _may_write(self) -> bool:
        """Whether row groups may be written now: at the commit, or into the open file, or
        when fewer than ``OPEN_FILES`` partitions have one (an open Parquet writer holds
        about a page of the ``packet`` column in memory)."""
        return self.committing or bool(self.files) or self._writer.open_files < OPEN_FILES

    def relieve(self) -> None:
        """Free the memory this partition holds: write it as a row group when that is at
        least ``ROW_GROUP_MIN_BYTES``, else move it to the spill file (for good)."""
        self.stage()
        if not self.held:
            return
        if self.spill is None and self.held_bytes >= ROW_GROUP_MIN_BYTES and self._may_write():
            self.write_held(rest=True)
        else:
            self._spill_held()

    def _spill_held(self) -> None:
        if self.spill is None:
            self.spill = _Spill(self.root)
        for batch in self.held:
            self.spill.write(batch)
        self.held, self.held_rows, self.held_bytes = [], 0, 0

    def write_held(self, *, rest: bool) -> None:
        """Write the held rows as row groups of ``ROW_GROUP_ROWS`` rows, closed early past
        ``ROW_GROUP_BYTES`` of packets; with ``rest``, the remainder too."""
        if not self.held:
            return
        table = pa.Table.from_batches(self.held, schema=FILE_SCHEMA)
        while table.num_rows >= ROW_GROUP_ROWS:
            self._emit(table.slice(0, ROW_GROUP_ROWS))
            table = table.slice(ROW_GROUP_ROWS)
        if table.num_rows and (rest or table.column(_PACKET).nbytes >= ROW_GROUP_BYTES):
            self._emit(table)
            table = table.slice(table.num_rows)
        self.held = table.to_batches() if table.num_rows else []
        self.held_rows = table.num_rows
        self.held_bytes = table.column(_PACKET).nbytes if table.num_rows else 0

    def _emit(self, table: pa.Table) -> None:
        """Write one row group; a file closes at the first row group past ``FILE_ROWS``."""
        current = self.files[-1] if self.files else None
        if current is None or current.rows >= FILE_ROWS:
            if current is not None:
                current.finish()
            current = self._writer._new_file(self)
        current.write(table)


def _batch(rows: list[list[Any]], size: int) -> pa.RecordBatch:
    """One Arrow batch of rows (``size``: their packet bytes), column by column.

    The ``packet`` column is assembled from one join of the packets and their offsets
    rather than value by value (the largest column by far).
    """
    cols = list(zip(*rows, strict=True))
    arrays = [pa.array(col, type=c.type) for col, c in zip(cols[:_PACKET], COLUMNS[:_PACKET], strict=True)]
    packets = cols[_PACKET]
    if size < _MAX_BINARY:
        offsets = pa.array(list(accumulate(map(len, packets), initial=0)), type=pa.int32())
        data = pa.py_buffer(b"".join(packets))
        arrays.append(pa.Array.from_buffers(pa.binary(), len(packets), [None, offsets.buffers()[1], data]))
    else:
        arrays.append(pa.array(packets, type=pa.binary()))
    return pa.RecordBatch.from_arrays(arrays, schema=FILE_SCHEMA)


class _Item:
    """A document between reading and keeping: its JSON bytes (analysed in a batch, see
    :mod:`._worker`), its decoded data (the reference path), or ``reasons`` when it is
    refused before validation."""

    __slots__ = ("analysed", "data", "location", "raw", "reasons", "source")

    def __init__(
        self,
        source: str,
        location: str | None,
        reasons: list[str] | None = None,
        data: dict[str, Any] | None = None,
        raw: bytes | None = None,
    ) -> None:
        self.source = source
        self.location = location
        self.reasons = reasons
        self.data = data
        self.raw = raw
        #: whether the item goes through :func:`._worker.analyse`: a JSON object's bytes
        self.analysed = raw is not None and data is None and reasons is None


def _digest(pid: str) -> bytes:
    """32 raw bytes of a ``sha256:`` id (or the id text itself when it is not one)."""
    try:
        return bytes.fromhex(pid[7:]) if pid.startswith("sha256:") and len(pid) == 71 else pid.encode()
    except ValueError:
        return pid.encode()


def _forged(findings: list[dict[str, str]]) -> bool:
    """Whether the findings hold a KE004 error: the packet_id is not the content's id."""
    return any(f["rule_id"] == "KE004" and f["severity"] == "error" for f in findings)


def _ke004(want: str) -> str:
    """The refusal line of a KE004 error found by the writer, worded as the validator's."""
    return f"KE004 packet_id does not match the content; expected {want} - at `/packet_id`"


class _Writer:
    def __init__(
        self, root: Path, *, allow_invalid: bool, peaks: Any, side_dirs: tuple[str, ...] = ()
    ) -> None:
        self.root = root
        self.allow_invalid = allow_invalid
        self.peaks = peaks
        self.parts: dict[tuple[str, str], _Partition] = {}
        self.buffered = 0
        self.summary = ArchiveSummary()
        self.created_dirs: list[Path] = []
        self.renamed: list[Path] = []
        self.raw = RawStore(root, side_dirs)
        #: the data files committed before this run (see :mod:`._layout`)
        self.committed: set[str] = set()
        #: whether the run named its files as pending and has not committed them yet
        self.began = False
        #: partitions with a file open
        self.open_files = 0
        self.metadata = {
            META_LAYOUT_VERSION: _layout.format_version(ARCHIVE_LAYOUT_VERSION).encode(),
            META_SCHEMA_VERSION: SCHEMA_VERSION.encode(),
            META_PRODUCER: _PRODUCER.encode(),
        }

    # -- reading existing ids ------------------------------------------------------------

    def _load_existing(self, part: _Partition) -> IdIndex:
        ids = IdIndex()
        if part.dir.is_dir():
            for path in _layout.data_files(self.root, part.dir):
                for p in _read_ids(path, self.root):
                    ids.add(_digest(p))
        return ids

    # -- adding packets ------------------------------------------------------------------

    def refuse(self, source: str, location: str | None, reasons: list[str]) -> Refusal:
        r = Refusal(source, location, reasons)
        self.summary.refused_count += 1
        if len(self.summary.refused) < _MAX_KEPT_REFUSALS:
            self.summary.refused.append(r)
        return r

    def prepare(self, data: Any, raw: bytes | None, source: str, location: str | None) -> _Item:
        """One decoded JSON document (the reference path)."""
        if not isinstance(data, dict):
            got = type(data).__name__
            return _Item(source, location, reasons=[f"expected a JSON object (a packet), got {got}"])
        pid = data.get("packet_id")
        if not isinstance(pid, str):
            if pid is not None:
                got = type(pid).__name__
                why = f"expected `packet_id` to be a string, got {got} - at `/packet_id`"
                return _Item(source, location, reasons=[why])
            pid = packet_id_for(data)
            data = {**data, "packet_id": pid}  # after: a `"packet_id": null` must not win
            raw = None
        return _Item(source, location, data=data, raw=raw)

    def resolve(self, item: _Item, answer: Any) -> Refusal | None:
        """Keep, skip or refuse an item, in input order, given its analysis (see
        :func:`._worker.analyse`; ``None`` for the reference path)."""
        if answer is not None:
            return self._resolve_struct(item, answer)
        if item.reasons is None and item.data is None:
            # a JSON object that did not decode into the core struct with its id
            assert item.raw is not None
            try:
                data = _decoder.decode(item.raw)
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
                item = _Item(item.source, item.location, reasons=[not_json(exc)])
            else:
                item = self.prepare(data, item.raw, item.source, item.location)
        if item.reasons is not None:
            return self.refuse(item.source, item.location, item.reasons)
        data = item.data
        assert data is not None
        checked = check(data, item.raw)
        if not checked.ok:
            # refused before the duplicate check, even with --allow-invalid (see
            # _resolve_struct) when the packet_id is not the content's id
            lines = checked.lines or ["invalid packet"]
            forged = _forged(checked.findings)
            if self.allow_invalid and not forged:
                # the validator checks the id of a packet that decodes only: for the others
                # (a structural error, a repeated key) it is checked here
                want = packet_id_for(data)
                if want != data["packet_id"]:
                    lines, forged = [_ke004(want), *lines], True
            if forged or not self.allow_invalid:
                return self.refuse(item.source, item.location, lines)
        part = self._partition(partition_of(data))
        digest = _digest(data["packet_id"])
        refs = raw_refs(data)
        if self._seen(part, digest):
            self._raw_tables(item, refs)
            return None
        packet = _encoder.encode(data) if item.raw is None else item.raw
        row = extract(data, self.peaks)
        self._keep(part, digest, row, checked.ok, checked.grade, checked.reasons, checked.findings, packet)
        self._raw_tables(item, refs)
        return None

    def _resolve_struct(self, item: _Item, answer: Any) -> Refusal | None:
        vendor, month, row, ok, grade, reasons, findings, lines = answer
        if not ok and (not self.allow_invalid or _forged(findings)):
            # refused before the duplicate check, even with --allow-invalid: a packet whose
            # packet_id does not match its content (KE004) must not pass for a copy of the
            # archived packet with that id, nor be stored under an id that is not its own
            return self.refuse(item.source, item.location, lines or ["invalid packet"])
        part = self._partition((vendor, month))
        digest = _digest(row[0])
        assert item.raw is not None
        if not self._seen(part, digest):
            self._keep(part, digest, row, ok, grade, reasons, findings, item.raw)
        if has_raw_table(item.raw):
            self._raw_tables(item, raw_refs_of(item.raw)[1])
        return None

    def _raw_tables(self, item: _Item, refs: list[Any]) -> None:
        """Copy the packet's raw tables into the archive unless it has them (for a packet
        kept now, or one already archived whose raw table the archive lacks); report those
        that cannot be copied."""
        if not refs:
            return
        for table, reason in self.raw.add(item.source, refs):
            self.summary.warning_count += 1
            if len(self.summary.warnings) < _MAX_KEPT_WARNINGS:
                self.summary.warnings.append(RawTableWarning(item.source, item.location, table, reason))

    def _seen(self, part: _Partition, digest: bytes) -> bool:
        """Whether the packet is in the dataset already, or was earlier in this input."""
        assert part.existing is not None
        if digest in part.existing:
            self.summary.duplicates += 1
            return True
        return False

    def _partition(self, key: tuple[str, str]) -> _Partition:
        part = self.parts.get(key)
        if part is None:
            part = self.parts[key] = _Partition(self.root, key, self)
        if part.existing is None:
            part.existing = self._load_existing(part)
        return part

    def _keep(
        self,
        part: _Partition,
        digest: bytes,
        row: list[Any],
        ok: bool,
        grade: str | None,
        reasons: list[str],
        findings: list[dict[str, str]],
        packet: bytes,
    ) -> None:
        assert part.existing is not None
        part.existing.add(digest)
        row.extend((ok, grade, reasons, findings, packet))
        part.append(row, len(packet))
        self.buffered += len(packet)
        self.summary.added += 1
        if len(part.rows) >= STAGE_ROWS:
            before = part.buffered
            part.stage()
            self.buffered += part.buffered - before
        if self.buffered >= BUFFER_BYTES:
            largest = max(self.parts.values(), key=lambda p: p.buffered)
            before = largest.buffered
            largest.relieve()
            self.buffered += largest.buffered - before

    def _make_dirs(self, part: _Partition) -> None:
        for d in (part.dir.parent, part.dir):
            if not d.is_dir():
                d.mkdir()
                self.created_dirs.append(d)

    def _new_file(self, part: _Partition) -> _PartFile:
        self._make_dirs(part)
        f = _PartFile(part.dir, self.metadata)
        self.open_files += not part.files
        part.files.append(f)
        return f

    def _write_partition(self, part: _Partition) -> None:
        """Write what the partition holds, then its spill read back, as row groups; then
        close its last file (an open Parquet writer holds about a page of buffers)."""
        spill = part.spill
        part.committing = True
        try:
            if spill is not None:
                part.spill = None  # from here on batches are held, not spilled
                for batch in spill.batches():
                    part.hold(batch)
            part.write_held(rest=True)
        finally:
            if spill is not None:
                spill.remove()
        if part.files:
            part.files[-1].finish()

    # -- ending --------------------------------------------------------------------------

    def commit(self) -> None:
        # partitions with a file open first: what they hold is less than a row group, and
        # finishing their files frees the writers' buffers before the spills are written
        parts = sorted(self.parts.values(), key=lambda p: not p.files)
        for part in parts:
            # here, not in the threads below: partitions share a vendor directory, and every
            # hidden file is on disk, not empty, before any thread writes
            part.stage()
            if part.spill is not None:
                part.spill.flush()
            if (part.spill is not None or part.held) and not part.files:
                self._new_file(part)
        # one partition at a time: two at once (Arrow compresses without the GIL) were no
        # faster here, and held two row groups and their spills in memory at once
        for part in parts:
            self._write_partition(part)
        # raw tables first: a packet never appears before its raw table
        self.summary.raw_files.extend(self.raw.commit())
        new = [(part.rel / f.name).as_posix() for part in self.parts.values() for f in part.files]
        if not new:
            return
        # the files about to appear are named first, so that the next run removes them if
        # this one is killed before its commit; readers see none of them until the commit
        _layout.begin_commit(self.root, new)
        self.began = True
        for part in self.parts.values():
            for f in part.files:
                if f.final.exists():  # a name clash is next to impossible; never replace a file
                    raise FileExistsError(errno.EEXIST, "file exists", str(f.final))
                os.replace(f.tmp, f.final)
                self.renamed.append(f.final)
                self.summary.files.append(str(part.rel / f.name))
        for part in self.parts.values():
            if part.files:
                fsync_dir(part.dir)
        _layout.end_commit(self.root, self.committed, new)  # the run is visible from here
        self.began = False

    def abort(self) -> None:
        """Undo everything: temporary files, files already renamed, directories we made."""
        for path in self.renamed:
            with contextlib.suppress(OSError):
                os.unlink(path)
        if self.began:
            with contextlib.suppress(OSError):
                os.unlink(self.root / _layout.PENDING_NAME)
        self.raw.abort()
        for part in self.parts.values():
            if part.spill is not None:
                part.spill.remove()
            for f in part.files:
                f.abort()
        for d in reversed(self.created_dirs):
            with contextlib.suppress(OSError):
                d.rmdir()


def _read_ids(path: Path, root: Path) -> list[str]:
    try:
        col = pq.read_table(path, columns=["packet_id"]).column(0)
    except (pa.ArrowException, OSError) as exc:
        raise ArchiveError(f"{path}: not a readable archive file ({_short(exc)})") from None
    return [v for v in col.to_pylist() if v is not None]


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _documents(
    sources: Iterable[str | os.PathLike[str]], limits: Limits | None
) -> Iterator[tuple[str, str | None, Any, bytes | None, str | None]]:
    """``(source, location, data, raw, error)`` for every packet-like document.

    A JSON object comes as ``raw`` (its bytes, not yet decoded) with ``data`` None; the
    items of a JSON array come decoded, as ``data``; unreadable input comes as ``error``.
    """
    for name in discover(sources):
        for rec in iter_records(name, limits):
            if rec.error is not None:
                yield rec.source, rec.location, None, None, rec.error.message
                continue
            assert rec.data is not None
            if rec.data.lstrip()[:1] == b"{":
                # made compact where it is analysed (see _worker.analyse), which may be in
                # the other process
                yield rec.source, rec.location, None, rec.data, None
                continue
            try:
                data = _decoder.decode(rec.data)
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
                yield rec.source, rec.location, None, None, not_json(exc)
                continue
            if data == []:
                yield rec.source, rec.location, None, None, EMPTY_ARRAY
            elif isinstance(data, list):
                for i, item in enumerate(data):
                    loc = f"{rec.location}, item {i}" if rec.location else f"item {i}"
                    yield rec.source, loc, item, None, None
            else:
                yield rec.source, rec.location, data, None, None


class _Pipeline:
    """Items analysed in batches and resolved in input order.

    With ``parallel``, once the input passes ``PARALLEL_AFTER`` documents a second process
    analyses batches too: a batch goes to it while fewer than ``IN_FLIGHT`` batches wait for
    its answer (an answer that arrived counts as done, even while it waits for the batches
    before it to be resolved), else this process analyses it, so both cores stay busy
    whichever is faster. At most
    ``MAX_PENDING`` batches wait to be resolved, so memory stays flat.
    """

    def __init__(
        self,
        writer: _Writer,
        on_refusal: Callable[[Refusal], None] | None,
        parallel: bool | None,
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        self.writer = writer
        self.on_refusal = on_refusal
        self.on_progress = on_progress
        self.parallel = (os.cpu_count() or 1) > 1 if parallel is None else parallel
        self.chunk: list[_Item] = []
        self.seen = 0
        self.remote: Any = None
        #: batches in input order, with their answers (None: still with the other process)
        self.pending: deque[tuple[list[_Item], Any]] = deque()

    def start(self) -> None:
        """Start the second process now (when ``parallel``), whatever the input size."""
        if self.remote is None and self.parallel:
            from ._worker import RemoteValidator

            self.remote = RemoteValidator()

    def add(self, item: _Item) -> None:
        self.chunk.append(item)
        self.seen += 1
        if len(self.chunk) >= BATCH:
            self._submit()

    def _submit(self) -> None:
        chunk, self.chunk = self.chunk, []
        if not chunk:
            return
        if self.seen >= PARALLEL_AFTER:
            self.start()
        raws = [it.raw for it in chunk if it.analysed]
        if self.remote is not None and self.remote.unanswered() < IN_FLIGHT:
            self.remote.submit(raws)
            self.pending.append((chunk, None))
        else:
            self.pending.append((chunk, analyse(raws, self.writer.peaks)))  # type: ignore[arg-type]
        self._drain(MAX_PENDING)

    def _drain(self, keep: int) -> None:
        """Resolve the oldest batches: waiting for them while more than ``keep`` are pending,
        then as long as their answers are ready."""
        while self.pending:
            chunk, answers = self.pending[0]
            if answers is None:
                if len(self.pending) <= keep and not self.remote.ready():
                    return
                answers = self.remote.receive()
            self.pending.popleft()
            self._resolve(chunk, answers)

    def _resolve(self, chunk: list[_Item], result: Any) -> None:
        answers, fixes = result
        it = iter(answers)
        k = 0
        for item in chunk:
            answer = None
            if item.analysed:
                answer = next(it)
                fix = fixes.get(k) if fixes else None
                k += 1
                if isinstance(fix, str):  # not JSON
                    item = _Item(item.source, item.location, reasons=[fix])
                elif fix is not None:  # the compact form of the JSON bytes
                    item.raw = fix
            refusal = self.writer.resolve(item, answer)
            if refusal is not None and self.on_refusal is not None:
                self.on_refusal(refusal)
        if self.on_progress is not None:
            self.on_progress(len(chunk))

    def finish(self) -> None:
        self._submit()
        self._drain(0)
        if self.remote is not None:
            self.remote.close()
            self.remote = None

    def kill(self) -> None:
        if self.remote is not None:
            self.remote.kill()
            self.remote = None


def archive_packets(
    sources: Iterable[str | os.PathLike[str]],
    to: str | os.PathLike[str],
    *,
    allow_invalid: bool = False,
    limits: Limits | None = None,
    on_refusal: Callable[[Refusal], None] | None = None,
    parallel: bool | None = None,
    side_files_from: Iterable[str | os.PathLike[str]] = (),
    on_progress: Callable[[int], None] | None = None,
) -> ArchiveSummary:
    """Archive the packets of ``sources`` (files, directories, ``-``) into the dataset ``to``.

    Valid packets are added; a packet whose id is already in the dataset is skipped;
    invalid packets are refused (reported, not written) unless ``allow_invalid``, in which
    case they are stored with their findings and grade. Unreadable documents are refused.
    Raises :class:`~kernel_evidence.errors.ArchiveError` when the dataset cannot be
    written; it is then left exactly as it was.

    ``parallel`` shares the decoding, validation and column extraction with a second
    process once the input passes ``PARALLEL_AFTER`` documents, or from the start when its
    files hold ``PARALLEL_BYTES`` (default: when the machine has more than one core);
    results are the same either way.

    A run that adds nothing (every document refused, no document found, or a failure)
    leaves no new archive behind: when it created ``to``, it removes what it created, and
    nothing else. ``archive_packets([], to)`` makes an empty archive.

    A capture's side file (``raw_table``) is copied only from the folder of the packet file
    naming it (and below), or from one of ``side_files_from``: a path that leads elsewhere
    is a :class:`RawTableWarning` and is not looked at.

    ``on_progress(n)`` is called as documents are dealt with (archived, found present or
    refused), ``n`` at a time, in input order.

    Raises :class:`~kernel_evidence.archive.reader.OutputError` (a usage error, before
    anything is created) when ``to`` is, or is inside, an input directory (its own files
    would be read back as input) or an input is inside ``to``.
    """
    sources = list(sources)
    root = Path(to)
    _check_apart(sources, root)
    made = _missing_dirs(root)
    created = False
    try:
        created = _layout.init_marker(root, _PRODUCER, SCHEMA_VERSION)
        if not created:
            _layout.read_marker(root, for_write=True)
    except OSError as exc:
        _remove_new_archive(root, made)
        raise ArchiveError(f"{root}: could not create the archive: {_os_reason(exc)}") from None
    try:
        lock = _writer_lock(root)
    except OSError as exc:
        if created:
            _remove_new_archive(root, made)
        raise ArchiveError(f"{root}: could not lock the archive: {_os_reason(exc)}") from None
    try:
        side_dirs = tuple(os.fspath(d) for d in side_files_from)
        return _archive_locked(
            sources, root, made, created, allow_invalid, limits, on_refusal, parallel, side_dirs, on_progress
        )
    finally:
        if lock is not None:
            os.close(lock)  # releases the lock


def _archive_locked(
    sources: list[str | os.PathLike[str]],
    root: Path,
    made: list[Path],
    created: bool,
    allow_invalid: bool,
    limits: Limits | None,
    on_refusal: Callable[[Refusal], None] | None,
    parallel: bool | None,
    side_dirs: tuple[str, ...] = (),
    on_progress: Callable[[int], None] | None = None,
) -> ArchiveSummary:
    """:func:`archive_packets` once this process is the archive's only writer."""
    writer = _Writer(root, allow_invalid=allow_invalid, peaks=_peak_lookup(), side_dirs=side_dirs)
    pipeline = _Pipeline(writer, on_refusal, parallel, on_progress)
    try:
        # what a killed run left is removed before anything is added
        writer.committed = _layout.upgrade(root)
        writer.summary.cleaned = _layout.clean_leftovers(root, writer.committed)
        if _file_bytes(sources) >= PARALLEL_BYTES:
            pipeline.start()
        with paused_gc():  # millions of short-lived acyclic objects; see kernel_evidence._gc
            for source, location, data, raw, error in _documents(sources, limits):
                if error is not None:
                    item = _Item(source, location, reasons=[error])
                elif raw is not None:
                    item = _Item(source, location, raw=raw)
                else:
                    item = writer.prepare(data, None, source, location)
                pipeline.add(item)
            pipeline.finish()
            writer.commit()
    except OSError as exc:
        pipeline.kill()
        writer.abort()
        if created:
            _remove_new_archive(root, made)
        raise ArchiveError(
            f"{root}: could not write the archive: {_os_reason(exc)}; nothing was added"
        ) from None
    except BaseException:
        pipeline.kill()
        writer.abort()
        if created:
            _remove_new_archive(root, made)
        raise
    if created and sources and not writer.summary.files:
        _remove_new_archive(root, made)
    return writer.summary


def _writer_lock(root: Path) -> int | None:
    """An exclusive lock on the archive's marker file, held (as the returned descriptor)
    while writing: runs into one archive (several CI jobs, say) take turns, so each one's
    duplicate check sees what the others added. Readers (export, report, query engines)
    take no lock: every data file appears whole, by rename. Where ``fcntl`` is missing
    (Windows) there is no lock (None)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return None
    fd = os.open(root / MARKER_NAME, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits for another writer to finish
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_apart(sources: list[str | os.PathLike[str]], root: Path) -> None:
    """Refuse an archive inside an input directory, and an input inside the archive
    (symbolic links resolved): directories are read whole, so the run would read its own
    marker and files back as packets."""
    try:
        target = root.resolve()
    except (OSError, RuntimeError):  # a symbolic link loop: creating the archive will say so
        return
    for source in sources:
        name = os.fspath(source)
        if name == "-":
            continue
        try:
            path = Path(name).resolve()
        except (OSError, RuntimeError):  # reading it will say so
            continue
        if path == target or target in path.parents:
            what = "the archive" if path == target else "inside the archive"
            raise OutputError(f"{name}: {what} {root} being written; archive packets from outside it")
        if path in target.parents and path.is_dir():
            raise OutputError(
                f"{root}: inside the input directory {name}, which is read whole; "
                "put the archive outside the inputs"
            )


def _os_reason(exc: OSError) -> str:
    what = exc.strerror or type(exc).__name__
    return f"{what} ({exc.filename})" if exc.filename else what


def _missing_dirs(root: Path) -> list[Path]:
    """``root`` and those of its parents that do not exist yet, innermost first."""
    out: list[Path] = []
    path = root
    while not os.path.lexists(path) and path != path.parent:
        out.append(path)
        path = path.parent
    return out


def _remove_new_archive(root: Path, made: list[Path]) -> None:
    """Undo the creation of an archive that got nothing: its marker, when it is all the
    directory holds, then the directories ``made`` (innermost first) while they are empty.
    Nothing that existed before the run is touched."""
    own = {MARKER_NAME, f".{MARKER_NAME}.tmp", _layout.COMMITS_NAME}
    with contextlib.suppress(OSError):
        if {p.name for p in root.iterdir()} <= own:
            for name in own:
                with contextlib.suppress(FileNotFoundError):
                    (root / name).unlink()
    for d in made:
        try:
            d.rmdir()
        except OSError:
            return


def _file_bytes(sources: list[str | os.PathLike[str]]) -> int:
    """Bytes of the sources that are regular files (directories and ``-`` count nothing)."""
    total = 0
    for source in sources:
        try:
            st = os.stat(source)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode):
            total += st.st_size
    return total


@lru_cache(maxsize=4096)
def _table_peaks(device: str | None, arch: str | None, dtypes: tuple[str, ...]) -> tuple[float, float] | None:
    """(FLOP/s, B/s) of one device from the rule engine's peak table, for the task's dtypes
    (cached: a batch names a few devices, and this runs for every packet; long strings,
    which no real device or dtype has, are looked up every time rather than held)."""
    if len(device or "") + len(arch or "") + sum(map(len, dtypes)) <= 512:
        return _cached_table_peaks(device, arch, dtypes)
    return _uncached_table_peaks(device, arch, dtypes)


def _uncached_table_peaks(
    device: str | None, arch: str | None, dtypes: tuple[str, ...]
) -> tuple[float, float] | None:
    peaks = device_peaks(device, arch)
    if peaks is None:
        return None
    return peak_flops_for(peaks, dtypes), peaks.bandwidth


_cached_table_peaks = lru_cache(maxsize=4096)(_uncached_table_peaks)


def _peak_lookup() -> Any:
    return _table_peaks
