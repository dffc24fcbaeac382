"""Reading and writing packets: ``.json``, ``.jsonl``, ``.json.zst``, ``.jsonl.zst``, stdin.

Reading streams: a JSONL file of any length is read line by line and a zstd stream is
decompressed incrementally, so memory stays flat. Every read is capped (file size,
decompressed size, line length) so hostile input fails with a message, not an
out-of-memory kill. Writing is atomic: a temporary file in the target folder, then a rename.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any, BinaryIO, NamedTuple, cast

import msgspec
import zstandard

from .errors import InputError, LimitExceeded

__all__ = [
    "Limits",
    "Record",
    "discover",
    "iter_records",
    "open_output",
    "read_packets",
    "write_packets",
]

# read once at import (os.umask can only be read by setting it)
_UMASK = os.umask(0o022)
os.umask(_UMASK)

PACKET_SUFFIXES = (".json", ".jsonl", ".json.zst", ".jsonl.zst", ".ndjson", ".ndjson.zst")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Caps on what one input may hold."""

    #: largest single JSON document (a ``.json`` file, or one JSONL line), in bytes; a profiler
    #: capture of 20,000 launches x 500 metrics is about 100 MB
    max_record_bytes: int = 512 << 20
    #: largest amount of data one file may decompress to, in bytes
    max_decompressed_bytes: int = 8 << 30


class Record(NamedTuple):
    """One JSON document read from an input, or the error that stopped reading it.

    ``location`` is ``None`` for a whole-file document and ``"line N"`` for JSONL.
    Exactly one of ``data`` and ``error`` is set. (A named tuple: one is made per line.)
    """

    source: str
    location: str | None
    data: bytes | None = None
    error: InputError | None = None


#: ``Record(*fields)`` without the named tuple's Python-level ``__new__`` (one per line)
_record = partial(tuple.__new__, Record)


_BOMS = ((b"\xef\xbb\xbf", "a UTF-8"), (b"\xff\xfe", "a UTF-16"), (b"\xfe\xff", "a UTF-16"))


def _bom(data: bytes) -> str | None:
    """What a document starting with a byte order mark is told (JSON text has none)."""
    for mark, kind in _BOMS:
        if data.startswith(mark):
            return f"starts with {kind} byte order mark; expected UTF-8 JSON without one (remove its first {len(mark)} bytes)"
    return None


def _checked(name: str, location: str | None, data: bytes) -> Record:
    """A record of ``data``, or the error if it is not UTF-8 (checked only when not ASCII)."""
    if data.isascii():
        return Record(name, location, data, None)
    bom = _bom(data)
    if bom is not None:
        return Record(name, location, error=InputError(name, location, bom))
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        pos = exc.start
        line = data.count(b"\n", 0, pos) + 1
        col = pos - (data.rfind(b"\n", 0, pos) + 1) + 1
        where = f"line {line}, column {col}" if location is None else f"column {col}"
        msg = f"not valid UTF-8 at {where} (byte {pos}); expected a UTF-8 JSON document"
        return Record(name, location, error=InputError(name, location, msg))
    return Record(name, location, data=data)


_BLANK = b" \t\r\f\v"
_raw_items = msgspec.json.Decoder(list[msgspec.Raw])


def _split(rec: Record) -> Iterator[Record]:
    """The record of each item of a JSON array (location ``item N``, after the line's when
    there is one), so that every item is reported and counted on its own; any other record
    as it is, as is an array that is not well-formed JSON or is empty (the decoder names
    what is wrong with it)."""
    data = rec.data
    if data is None or data.lstrip()[:1] != b"[":
        yield rec
        return
    try:
        items = _raw_items.decode(data)
    except (msgspec.DecodeError, RecursionError):
        yield rec
        return
    if not items:
        yield rec
        return
    prefix = f"{rec.location}, " if rec.location else ""
    for i, item in enumerate(items):
        data = bytes(item)
        where = f"{prefix}item {i}"
        if data[:1] == b"[":  # not split again: an array of arrays is not a list of packets
            error = InputError(rec.source, where, "expected a JSON object (a packet), got an array")
            yield Record(rec.source, where, None, error)
        else:
            yield Record(rec.source, where, data, None)


def _is_packet_file(path: Path) -> bool:
    name = path.name.lower()
    return any(name.endswith(s) for s in PACKET_SUFFIXES)


def discover(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Iterator[str]:
    """Expand files and directories (recursively, sorted) into input names; ``-`` is stdin.
    One name may be given on its own (not a list).

    A directory inside that cannot be listed (permission denied) is given as an input name
    of its own, in its place in the order: :func:`iter_records` reports it as an error, so
    its packets are never skipped in silence.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    for p in paths:
        s = os.fspath(p)
        if s == "-":
            yield s
            continue
        path = Path(s)
        if path.is_dir():
            yield from _walk(path)
        else:
            yield s


def _walk(top: Path) -> Iterator[str]:
    """Packet files under ``top`` (links to directories not followed), and the directories
    that could not be listed, sorted as paths."""
    found: list[Path] = []

    def unreadable(exc: OSError) -> None:
        found.append(Path(exc.filename) if exc.filename else top)

    for dirpath, _dirnames, filenames in os.walk(top, onerror=unreadable):
        for f in filenames:
            sub = Path(dirpath) / f
            if _is_packet_file(sub) and sub.is_file():
                found.append(sub)
    for sub in sorted(found):
        yield str(sub)


def _unreadable_directory(name: str) -> str:
    """Why a directory named as an input is an error: it could not be listed (its packets
    were not read), or it is a directory where a file was expected."""
    try:
        with os.scandir(name):
            pass
    except OSError as exc:
        return f"directory cannot be listed ({exc.strerror or exc}); its packets were not checked"
    return "is a directory"


def _kind(name: str) -> tuple[bool, bool]:
    """(is_jsonl, is_zstd) from a file name."""
    low = name.lower()
    zst = low.endswith(".zst")
    if zst:
        low = low[:-4]
    return low.endswith((".jsonl", ".ndjson")), zst


#: compressed bytes fed to the decompressor at first, and again after a piece expanded more
#: than ``_SANE_RATIO`` times (packets compress 5-20x; a bomb, thousands of times)
_FIRST_PIECE = 4 << 10
_SANE_RATIO = 64


class _ZstdFrames(io.RawIOBase):
    """Decompress a (multi-frame) zstd stream incrementally, refusing more than ``cap`` bytes.

    Unlike a plain stream reader it notices a stream that ends inside a frame (a writer killed
    mid-write, a truncated download) or that holds bytes that are not a zstd frame (damage,
    or data appended after the last frame): the stream then ends where the damage starts,
    every byte decompressed before it is delivered, and ``truncated`` or ``damage`` tells the
    reader, which reports it after the records it read.
    """

    def __init__(self, inner: BinaryIO, cap: int, source: str) -> None:
        self._inner = inner
        self._dctx = zstandard.ZstdDecompressor()
        self._obj: Any = None
        self._pending = b""
        self._out = memoryview(b"")  # decompressed bytes not yet read (a view: no copies)
        self._left = cap
        self._cap = cap
        self._source = source
        self._done = False
        self._piece = _FIRST_PIECE
        #: offset in the compressed stream of the first byte of ``_pending`` (or of the next
        #: read), and of the frame being decompressed
        self._at = 0
        self._frame_at = 0
        #: set at the end of the stream when it stopped inside a frame
        self.truncated = False
        #: set when the stream holds bytes that do not decompress: (compressed offset of
        #: the frame they start, the decompressor's words)
        self.damage: tuple[int, str] | None = None

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        if not self.closed:
            self._inner.close()
        super().close()

    def _fill(self) -> None:
        while not self._out and not self._done:
            data = self._pending or self._inner.read(_CHUNK)
            if not data:
                self._done = True
                # reported by the reader once every complete record was delivered
                self.truncated = self._obj is not None and not self._obj.eof
                return
            # compressed bytes are fed in pieces that grow while the output stays in
            # proportion: a bomb (a few KiB that expand to gigabytes) then expands a piece
            # at a time, never in one call
            feed, self._pending = data[: self._piece], data[self._piece :]
            if self._obj is None or self._obj.eof:
                self._obj = self._dctx.decompressobj()
                self._frame_at = self._at
            try:
                chunk = self._obj.decompress(feed)
            except zstandard.ZstdError as exc:
                # what came before was delivered (or is in ``_out``); the reader names the
                # damage after it
                self.damage = (self._frame_at, str(exc).removeprefix("zstd decompressor error: "))
                self._done = True
                self._pending = b""
                return
            self._at += len(feed)
            if self._obj.eof and self._obj.unused_data:
                self._pending = self._obj.unused_data + self._pending
                self._at -= len(self._obj.unused_data)
            if len(chunk) < _SANE_RATIO * len(feed):
                self._piece = min(self._piece * 2, _CHUNK)
            else:
                self._piece = _FIRST_PIECE
            self._left -= len(chunk)
            if self._left < 0:
                raise LimitExceeded(
                    self._source,
                    None,
                    f"decompresses to more than {self._cap} bytes (the cap); "
                    "raise it with --max-decompressed-bytes if this is expected",
                )
            self._out = memoryview(chunk)

    def readinto(self, b: Any) -> int:
        self._fill()
        out = self._out
        n = min(len(b), len(out))
        b[:n] = out[:n]
        self._out = out[n:]
        return n


_TRUNCATED = "zstd stream ends inside a frame: the last record is incomplete (a writer stopped mid-write?)"


def _truncated(fh: Any) -> bool:
    return bool(getattr(getattr(fh, "raw", None), "truncated", False))


def _stream_end_error(fh: Any) -> str | None:
    """Why a zstd stream ended early, once all it held before was read: cut inside a frame,
    or bytes that are not zstd (named by their offset in the compressed file)."""
    raw = getattr(fh, "raw", None)
    damage = getattr(raw, "damage", None)
    if damage is not None:
        at, why = damage
        return (
            f"zstd stream damaged at byte {at} of the compressed file ({why}); "
            "the records before it were read, nothing after it"
        )
    return _TRUNCATED if _truncated(fh) else None


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _open_binary(name: str, limits: Limits) -> BinaryIO:
    """Open an input; zstd is recognised by the name, or by its magic number on stdin."""
    raw: Any
    if name == "-":
        inner: Any = getattr(sys.stdin.buffer, "raw", sys.stdin.buffer)
        raw = io.BufferedReader(inner, _CHUNK)
        zst = raw.peek(4)[:4] == _ZSTD_MAGIC
    else:
        raw = open(name, "rb")  # noqa: SIM115
        zst = _kind(name)[1]
    if not zst:
        return cast(BinaryIO, raw)
    frames = _ZstdFrames(cast(BinaryIO, raw), limits.max_decompressed_bytes, name)
    return cast(BinaryIO, io.BufferedReader(frames, _CHUNK))


def _open_failed(exc: OSError | ValueError) -> str:
    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        return "cannot be opened: a loop of symbolic links"
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"cannot be opened ({why})"


def _zstd_error(name: str, exc: Exception) -> InputError:
    return InputError(name, None, f"not a readable zstd stream ({exc})")


def iter_records(name: str, limits: Limits | None = None) -> Iterator[Record]:
    """Yield every JSON document in one input, as raw bytes, or the error met.

    A JSONL input yields one record per non-blank line; an error in one line does not stop
    the others. A ``.json`` input yields one record. A document (or line) holding a JSON
    array yields one record per item (location ``item N``, or ``line L, item N``), so that
    each is checked, reported and counted on its own. Stdin is read as JSONL when its first
    line is a whole JSON document, and as one document otherwise (a pretty-printed packet
    piped in). A zstd stream cut short or damaged gives the records before the damage, then
    one error naming it.
    """
    limits = limits or Limits()
    is_jsonl, _ = _kind(name)
    try:
        fh = _open_binary(name, limits)
    except FileNotFoundError:
        yield Record(name, None, error=InputError(name, None, "no such file"))
        return
    except IsADirectoryError:
        yield Record(name, None, error=InputError(name, None, _unreadable_directory(name)))
        return
    except PermissionError:
        yield Record(name, None, error=InputError(name, None, "permission denied"))
        return
    except (OSError, ValueError) as exc:  # a link loop, a name too long, a NUL byte
        yield Record(name, None, error=InputError(name, None, _open_failed(exc)))
        return
    try:
        if name == "-" and not is_jsonl:
            yield from _stdin_records(fh, limits)
        elif is_jsonl:
            yield from _iter_lines(name, fh, limits, stdin=False)
        else:
            data = _read_at_most(fh, limits.max_record_bytes + 1)
            if len(data) > limits.max_record_bytes:
                yield Record(
                    name,
                    None,
                    error=LimitExceeded(
                        name, None, f"larger than {limits.max_record_bytes} bytes (the per-document cap)"
                    ),
                )
            elif (ended := _stream_end_error(fh)) is not None:
                if not _truncated(fh) and data.strip():
                    # bytes after (or inside) a frame: what decompressed before is read too
                    yield from _split(_checked(name, None, data))
                yield Record(name, None, error=InputError(name, None, ended))
            elif not data.strip():
                yield Record(name, None, error=InputError(name, None, "empty file; expected a JSON packet"))
            else:
                yield from _split(_checked(name, None, data))
    except InputError as exc:
        yield Record(name, exc.location, error=exc)
    except zstandard.ZstdError as exc:
        yield Record(name, None, error=_zstd_error(name, exc))
    except OSError as exc:
        yield Record(name, None, error=InputError(name, None, f"could not be read ({exc.strerror or exc})"))
    finally:
        if name != "-":
            fh.close()


def _read_at_most(fh: BinaryIO, n: int) -> bytes:
    """Up to ``n`` bytes of ``fh``. ``fh.read(n)`` sets ``n`` bytes aside before it reads, so
    a large cap (``--max-record-bytes``) would ask for that much memory for any file."""
    try:
        st = os.fstat(fh.fileno())
        hint = st.st_size + 1 if stat.S_ISREG(st.st_mode) else _CHUNK
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        hint = _CHUNK
    parts = [fh.read(min(n, hint))]
    got = len(parts[0])
    while got < n:
        chunk = fh.read(min(_CHUNK, n - got))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


_NOT_LINE_END = re.compile(rb"[^\n]")
#: a run of empty lines is stepped over this many bytes at a time (one memcmp each) before
#: the regex finds where it ends: a regex alone reads ~300 MB/s, too slow for a zstd stream
#: of gigabytes of line ends
_LINE_ENDS = b"\n" * 4096


def _iter_lines(
    name: str,
    fh: BinaryIO,
    limits: Limits,
    *,
    stdin: bool,
    first_line: int = 0,
    seen: list[Any] | None = None,
) -> Iterator[Record]:
    """Records of a JSONL stream. With ``seen`` (a list), the stream is a part of a file that
    starts after line ``first_line``: whether it held any line is stored in ``seen[0]``
    instead of reporting an empty input (the caller judges the whole file), and how many
    lines it held in ``seen[1]`` when the list has a second element."""
    cap = limits.max_record_bytes
    lineno = first_line
    saw_any = False
    parts: list[bytes] = []  # the unfinished last line, in pieces (joined once it ends)
    held = 0  # their length
    pending = b""  # the rest of a chunk after an over-long line was skipped
    while True:
        if pending:
            chunk, pending = pending, b""
        else:
            try:
                chunk = fh.read(_CHUNK)
            except zstandard.ZstdError as exc:
                # a stream cut mid-frame: everything before it was already yielded
                yield Record(
                    name,
                    f"line {lineno + 1}",
                    error=InputError(name, f"line {lineno + 1}", f"zstd stream truncated or corrupt ({exc})"),
                )
                return
            if not chunk:
                break
        # lines are cut one at a time (not split into a list): each is still in the cache
        # when it is decoded
        find = chunk.find
        pos = 0
        end = find(b"\n")
        while end >= 0:
            if end == pos and (pos or not parts):
                # a run of empty lines is stepped over in one search (a stream of millions
                # of line ends must not cost a Python step each)
                stop = pos
                while chunk.startswith(_LINE_ENDS, stop):
                    stop += 4096
                m = _NOT_LINE_END.search(chunk, stop)
                stop = m.start() if m is not None else len(chunk)
                lineno += stop - pos
                pos = stop
                end = find(b"\n", pos)
                continue
            if pos or not parts:
                line = chunk[pos:end]
            elif held + end > cap:
                line = None  # over the cap: not joined
            else:
                parts.append(chunk[:end])
                line = b"".join(parts)
            if not pos:
                parts, held = [], 0
            pos = end + 1
            end = find(b"\n", pos)
            lineno += 1
            if line is None or len(line) > cap:
                saw_any = True  # a line, if one too long: the input is not empty
                yield Record(
                    name,
                    f"line {lineno}",
                    error=LimitExceeded(
                        name, f"line {lineno}", f"line longer than {cap} bytes (the per-document cap)"
                    ),
                )
                continue
            if line.strip():
                saw_any = True
                # ASCII (the common case) is valid UTF-8: no need for the full check
                rec = (
                    _record((name, f"line {lineno}", line, None))
                    if line.isascii()
                    else _checked(name, f"line {lineno}", line)
                )
                if line[0] == 0x5B or (line[0] in _BLANK and line.lstrip()[:1] == b"["):
                    yield from _split(rec)  # a line that holds an array (rare)
                else:
                    yield rec
        rest = chunk[pos:] if pos else chunk  # the unfinished last line
        if rest:
            parts.append(rest)  # kept in pieces: no quadratic re-copying of a long line
            held += len(rest)
        if held > cap:
            # skip the rest of an over-long line without holding it in memory
            saw_any = True
            lineno += 1
            yield Record(
                name,
                f"line {lineno}",
                error=LimitExceeded(
                    name, f"line {lineno}", f"line longer than {cap} bytes (the per-document cap)"
                ),
            )
            parts, held = [], 0
            skipped = 0
            while True:
                chunk = fh.read(_CHUNK)
                if not chunk:
                    break
                nl = chunk.find(b"\n")
                if nl >= 0:
                    pending = chunk[nl + 1 :]  # its lines are cut like any others
                    break
                skipped += len(chunk)
                if skipped > limits.max_decompressed_bytes:  # a device without end (/dev/zero)
                    where = f"line {lineno}"
                    yield Record(
                        name,
                        where,
                        error=LimitExceeded(
                            name,
                            where,
                            f"no line end in {skipped} bytes; expected JSON lines (stopped reading)",
                        ),
                    )
                    return
    ended = _stream_end_error(fh)
    if ended is not None:
        # the unfinished last line is the one the damage or the cut is in
        lineno += 1
        where = f"line {lineno}"
        yield Record(name, where, error=InputError(name, where, ended))
        return
    buf = b"".join(parts)
    if buf.strip():
        lineno += 1
        saw_any = True
        yield from _split(_checked(name, f"line {lineno}", buf))
    if seen is not None:
        seen[0] = saw_any
        if len(seen) > 1:
            seen[1] = lineno - first_line  # lines in this part
    elif not saw_any:
        yield Record(name, None, error=InputError(name, None, "empty input; expected JSON packets"))


def _empty_input_record(name: str) -> Record:
    """The record a JSONL input without a single non-blank line gives."""
    return Record(name, None, error=InputError(name, None, "empty input; expected JSON packets"))


def _stdin_records(fh: BinaryIO, limits: Limits) -> Iterator[Record]:
    """Stdin: a JSONL stream when its first non-blank line is a whole JSON document (each
    line a packet), else one document over several lines (``cat packet.json | ...``)."""
    cap = limits.max_record_bytes
    head = b""
    while not head.strip():
        line = fh.readline(cap + 1)
        head += line
        if not line or len(head) > cap:
            break
    first = head.strip()
    whole_line = False
    if first and len(head) <= cap:
        try:
            msgspec.json.decode(first)
            whole_line = True
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            pass
    if whole_line:
        yield from _iter_lines("-", cast(BinaryIO, _Prefixed(head, fh)), limits, stdin=True)
        return
    data = head + _read_at_most(fh, cap + 1 - len(head)) if len(head) <= cap else head
    if len(data) > cap:
        yield Record(
            "-", None, error=LimitExceeded("-", None, f"larger than {cap} bytes (the per-document cap)")
        )
    elif not data.strip():
        yield Record("-", None, error=InputError("-", None, "empty input; expected a JSON packet"))
    else:
        yield from _split(_checked("-", None, data))


class _Prefixed:
    """Bytes already read from a stream, then the rest of the stream."""

    def __init__(self, head: bytes, fh: BinaryIO) -> None:
        self._head = head
        self._fh = fh

    def read(self, n: int = -1) -> bytes:
        if self._head:
            out, self._head = self._head, b""
            return out
        return self._fh.read(n)


class _Window:
    """``length`` bytes of an open file from its current position, read in chunks."""

    def __init__(self, fh: BinaryIO, length: int) -> None:
        self._fh = fh
        self._left = length

    def read(self, n: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        data = self._fh.read(self._left if n < 0 else min(n, self._left))
        self._left -= len(data)
        return data


def _iter_line_range(
    name: str, offset: int, length: int, first_line: int, limits: Limits | None, seen: list[Any]
) -> Iterator[Record]:
    """Records of the lines in bytes ``[offset, offset + length)`` of a plain JSONL file, a
    range that starts after line ``first_line`` and ends at a line end (or the file's end).

    Same records, line numbers and limits as :func:`iter_records` gives for those lines;
    ``seen[0]`` tells afterwards whether the range held a non-blank line (and ``seen[1]``, if
    the list has one, how many lines). Worker processes read their share of a large file
    this way.
    """
    limits = limits or Limits()
    try:
        fh = open(name, "rb")  # noqa: SIM115
    except OSError as exc:
        seen[0] = True  # the error stands for the range
        where = f"line {first_line + 1}"
        yield Record(name, where, error=InputError(name, where, f"could not be read ({exc.strerror or exc})"))
        return
    with fh:
        fh.seek(offset)
        yield from _iter_lines(
            name, cast(BinaryIO, _Window(fh, length)), limits, stdin=False, first_line=first_line, seen=seen
        )


def read_packets(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], limits: Limits | None = None
) -> Iterator[Any]:
    """Yield validated :class:`~kernel_evidence.models.EvidencePacket` objects from inputs
    (a file, directory or ``-``, or a list of them).

    Raises :class:`~kernel_evidence.errors.InputError` at the first unreadable or
    structurally invalid document. Use :func:`kernel_evidence.validate_paths` to collect
    every problem instead.
    """
    from ._codec.decode import decode_document
    from .models import EvidencePacket

    for name in discover(paths):
        for rec in iter_records(name, limits):
            if rec.error is not None:
                raise rec.error
            assert rec.data is not None
            for item in decode_document(rec):
                if item.error is not None:
                    raise InputError(rec.source, item.location, item.error)
                yield EvidencePacket.model_validate(msgspec.to_builtins(item.packet))


#: names of a descriptor the process already has open (a shell redirection): written in
#: place and appended to, never replaced, even when the descriptor is a regular file
_FD_ALIAS = re.compile(r"^/(?:dev/(?:stdout|stderr|fd/\d+)|proc/(?:self|thread-self|\d+)/fd/\d+)$")


def _output_target(path: str | os.PathLike[str]) -> tuple[Path, bool]:
    """Where writing ``path`` lands, and whether it is written in place.

    A device, a pipe or an open descriptor's name (``/dev/stdout``, a FIFO) is written in
    place (appended to); an existing directory is refused. Anything else gets a temp file renamed into place, and a symbolic link is
    written through (its target gets the data, as a shell redirection would do)."""
    try:
        mode = os.stat(path).st_mode  # follows links
    except OSError:
        mode = 0  # nothing there yet (or a dangling link)
    if stat.S_ISDIR(mode):
        raise FileExistsError(f"{path}: is a directory; refusing to replace it")
    if mode and (not stat.S_ISREG(mode) or _FD_ALIAS.match(os.path.abspath(path))):
        return Path(path), True
    target = Path(path)
    return (Path(os.path.realpath(target)) if target.is_symlink() else target), False


def output_streams_jsonl(path: str | os.PathLike[str]) -> bool:
    """Not public: whether packets written to ``path`` are JSONL: a ``.jsonl``/``.ndjson``
    name (``.zst`` or not), or a device, pipe or ``/dev/stdout`` whatever its name."""
    if _kind(str(path))[0]:
        return True
    try:
        return _output_target(path)[1]
    except OSError:
        return False  # a directory: refused with its reason when it is opened


def replaces_file(path: str | os.PathLike[str]) -> bool:
    """Not public: whether writing ``path`` would replace an existing file (a device or a
    pipe is written to, not replaced)."""
    target, in_place = _output_target(path)
    return not in_place and target.exists()


def open_output(path: str | os.PathLike[str]) -> tuple[IO[bytes], Any]:
    """Not public: a temp file beside ``path`` and a commit function (rename into place).

    Raises ``OSError`` with a one-line message naming ``path`` when it cannot be written;
    the temp file never outlives a failed commit."""
    target, in_place = _output_target(path)
    if in_place:
        return _open_in_place(path, target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise OSError(f"{path}: cannot be written ({exc.strerror or exc})") from exc
    # mkstemp makes the file private (0600); give it the mode a plain open() would
    os.chmod(tmp, 0o666 & ~_UMASK)
    fh = os.fdopen(fd, "wb")

    def commit(ok: bool) -> None:
        try:
            fh.close()
            if ok:
                os.replace(tmp, target)
                return
        except OSError as exc:
            raise OSError(f"{path}: cannot be written ({exc.strerror or exc})") from exc
        finally:
            if not ok or os.path.exists(tmp):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)

    return fh, commit


def _open_in_place(path: str | os.PathLike[str], target: Path) -> tuple[IO[bytes], Any]:
    try:
        # appending: a `>>` redirection behind /dev/stdout keeps what it held
        fh = open(target, "ab")  # noqa: SIM115 - closed by commit
    except OSError as exc:
        raise OSError(f"{path}: cannot be written ({exc.strerror or exc})") from exc

    def commit(ok: bool) -> None:
        try:
            fh.close()
        except OSError as exc:
            if ok:
                raise OSError(f"{path}: cannot be written ({exc.strerror or exc})") from exc

    return fh, commit


@contextlib.contextmanager
def _written(path: str | os.PathLike[str], overwrite: bool) -> Iterator[IO[bytes]]:
    """The output file of ``path``, committed (renamed into place) when the block ends
    without an error; write errors become one-line ``OSError`` naming ``path``."""
    if not overwrite and replaces_file(path):
        raise FileExistsError(f"{path}: already exists; refusing to overwrite it (use --force)")
    fh, commit = open_output(path)
    ok = False
    try:
        yield fh
        ok = True
    except OSError as exc:
        if exc.strerror is None:
            raise
        raise OSError(f"{path}: cannot be written ({exc.strerror})") from exc
    finally:
        commit(ok)


def write_output(path: str | os.PathLike[str], data: bytes, *, overwrite: bool = False) -> None:
    """Not public: ``data`` into ``path`` atomically (temp file, then rename; a device or a
    pipe is written in place). An existing file is kept unless ``overwrite``. Raises
    ``FileExistsError`` / ``OSError`` with one-line messages naming ``path``."""
    with _written(path, overwrite) as fh:
        fh.write(data)


def write_packets(
    path: str | os.PathLike[str],
    packets: Iterable[Any],
    *,
    overwrite: bool = False,
) -> int:
    """Write packets atomically: one packet as JSON, several as JSONL; zstd when the name ends in ``.zst``.

    A ``.json`` name with more than one packet is refused. A device, a pipe or
    ``/dev/stdout`` gets JSONL whatever its name (as ``-`` would). An existing file is never
    replaced unless ``overwrite`` is true. Returns the number of packets written.
    """
    is_zst = _kind(str(path))[1]
    is_jsonl = output_streams_jsonl(path)
    enc = msgspec.json.Encoder(order="sorted")  # canonical key order, as EvidencePacket.to_json
    count = 0
    with _written(path, overwrite) as fh:
        sink: Any = zstandard.ZstdCompressor(level=3).stream_writer(fh, closefd=False) if is_zst else fh
        if is_jsonl:
            for p in packets:
                sink.write(_as_json(p, enc))
                sink.write(b"\n")
                count += 1
        else:
            items = list(packets)
            if len(items) != 1:
                raise ValueError(
                    f"{path}: a .json file holds exactly one packet, got {len(items)}; use .jsonl"
                )
            sink.write(_as_json(items[0], enc))
            sink.write(b"\n")
            count = 1
        if is_zst:
            sink.close()
    return count


def _as_json(p: Any, enc: msgspec.json.Encoder) -> bytes:
    """Models write their canonical JSON; dicts and msgspec structs are encoded with sorted keys."""
    if hasattr(p, "to_json"):
        data: bytes = p.to_json()
        return data
    return enc.encode(p)
