"""Raw metric side files (``ProfilerCapture.raw_table``) kept in the archive.

A capture whose raw metrics are in an Arrow IPC side file references it by sha256, size and
path (see :mod:`kernel_evidence.rawtable`); the packet id covers the file only through the
digest. The archive keeps a copy of each such file as ``_raw/<sha256 hex>.arrow``
(content-addressed: one copy however many packets name it). Dataset readers skip the
``_raw`` folder (names starting with ``_`` are not data).

The path in a packet is untrusted input: it must lead (links resolved) into the packet
file's folder, or a folder the user allowed (``--side-files-from``), else it is not looked
at; only a regular file is read (checked before and after opening; opened non-blocking, so
a FIFO cannot hang the run), in chunks, and only up to the size the packet gives.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import InputError, shown
from ..io import _UMASK
from ..rawtable import inside, outside_message

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from ..models import ProfilerCapture

__all__ = [
    "RAW_DIR",
    "RawStore",
    "archived_path",
    "digest_hex",
    "export_raw_tables",
    "fsync_dir",
    "has_raw_table",
    "raw_refs",
    "raw_refs_of",
    "read_raw_table",
]

#: the archive's folder of raw tables (``_``: dataset readers skip it)
RAW_DIR = "_raw"
#: bytes read (and hashed, and written) at a time
CHUNK = 1 << 20
#: what a packet's bytes contain when one of its captures has a side file
_MARK = b'"raw_table"'
_HEX = re.compile(r"sha256:([0-9a-f]{64})")
#: names a raw table may be given beside an exported packet file
_SUFFIXES = (".arrow", ".feather")
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


class _Capture(msgspec.Struct):
    raw_table: Any = None


class _Doc(msgspec.Struct):
    packet_id: Any = None
    profiler: list[_Capture] | None = None


_doc_decoder = msgspec.json.Decoder(_Doc)
_any_decoder = msgspec.json.Decoder()


def has_raw_table(packet: bytes) -> bool:
    """Whether a packet's JSON bytes may hold a raw table reference (a quick screen)."""
    return _MARK in packet


def raw_refs(data: Any) -> list[Any]:
    """The ``raw_table`` values of a decoded packet's captures (any JSON type: a packet
    stored with ``--allow-invalid`` may hold anything there)."""
    caps = data.get("profiler") if isinstance(data, dict) else None
    if not isinstance(caps, list):
        return []
    return [c["raw_table"] for c in caps if isinstance(c, dict) and c.get("raw_table") is not None]


def raw_refs_of(packet: bytes) -> tuple[Any, list[Any]]:
    """``(packet_id, raw_table values)`` of a packet's JSON bytes."""
    if not has_raw_table(packet):
        return None, []
    try:
        doc = _doc_decoder.decode(packet)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        pass  # msgspec.ValidationError (a DecodeError): not the usual shape; read it all
    else:
        caps = doc.profiler or []
        return doc.packet_id, [c.raw_table for c in caps if c.raw_table is not None]
    try:
        data = _any_decoder.decode(packet)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None, []
    return (data.get("packet_id") if isinstance(data, dict) else None), raw_refs(data)


def digest_hex(ref: Any) -> str | None:
    """The 64 hex digits of a reference's ``sha256``, or None when it has no valid one."""
    sha = ref.get("sha256") if isinstance(ref, dict) else None
    m = _HEX.fullmatch(sha) if isinstance(sha, str) else None
    return m.group(1) if m else None


def archived_path(root: str | os.PathLike[str], hex_digest: str) -> Path:
    """Where the archive ``root`` keeps the raw table of this digest."""
    if not re.fullmatch(r"[0-9a-f]{64}", hex_digest):
        raise ValueError(f"not a sha256 hex digest: {hex_digest!r}")
    return Path(root) / RAW_DIR / f"{hex_digest}.arrow"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _size(ref: dict[str, Any]) -> tuple[float | None, str]:
    """The size the reference gives, as :func:`kernel_evidence.rawtable.read_raw_table`
    checks it (its ``value`` against the file's bytes), and how to say it."""
    size = ref.get("size")
    value = size.get("value") if isinstance(size, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, ""
    unit = size.get("unit") if isinstance(size, dict) else None
    said = f"{int(value)}" if float(value).is_integer() else f"{value}"
    return float(value), (said if unit in (None, "B") else f"{said} {unit}")


class Mismatch(Exception):
    """A side file that is not the one its reference names (why, one line)."""


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only descriptor of ``path`` when it is a regular file (symbolic links
    followed); :class:`Mismatch` otherwise. Never blocks: a FIFO is refused before it is
    opened, and one swapped in meanwhile opens non-blocking and is refused after."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise Mismatch("no such file") from None
    except (OSError, ValueError) as exc:
        raise Mismatch(f"cannot be read ({_why(exc)})") from None
    if not stat.S_ISREG(st.st_mode):
        raise Mismatch("not a regular file")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (OSError, ValueError) as exc:
        raise Mismatch(f"cannot be read ({_why(exc)})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Mismatch("not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _why(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or type(exc).__name__


def copy_checked(
    src: str | os.PathLike[str],
    want_hex: str,
    want_size: float | None,
    size_said: str,
    open_dst: Callable[[], int] | None = None,
) -> int:
    """Read the regular file ``src`` in chunks, hashing it (and writing it to the descriptor
    ``open_dst()`` gives, called once the file is open and its size right; the caller
    closes it); returns its size. :class:`Mismatch` when it cannot be read or its size or
    sha256 differs from the reference's; an ``OSError`` only when opening or writing the
    copy fails. Reads at most one byte past the size the reference gives."""
    fd = open_regular(src)
    try:
        if want_size is not None:
            st_size = os.fstat(fd).st_size
            if st_size != want_size:
                raise Mismatch(f"is {st_size} bytes; the packet says {size_said}")
        dst_fd = open_dst() if open_dst is not None else None
        h = hashlib.sha256()
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        total = 0
        limit = None if want_size is None else int(want_size) + 1
        while limit is None or total < limit:
            want = CHUNK if limit is None else min(CHUNK, limit - total)
            try:
                n = os.readv(fd, [view[:want]]) if hasattr(os, "readv") else _read_into(fd, view[:want])
            except BlockingIOError:
                raise Mismatch("not a regular file") from None
            except OSError as exc:
                raise Mismatch(f"cannot be read ({_why(exc)})") from None
            if not n:
                break
            chunk = view[:n]
            h.update(chunk)
            total += n
            if dst_fd is not None:
                _write_all(dst_fd, chunk)
        if want_size is not None and total != want_size:
            raise Mismatch(f"is {total} bytes; the packet says {size_said}")
        got = h.hexdigest()
        if got != want_hex:
            # the digest found is not shown: a packet's path may name any file of the reader's
            raise Mismatch(f"its sha256 is not the packet's sha256:{want_hex}")
        return total
    finally:
        os.close(fd)


def _read_into(fd: int, view: memoryview) -> int:  # pragma: no cover - without os.readv
    data = os.read(fd, len(view))
    view[: len(data)] = data
    return len(data)


def _write_all(fd: int, chunk: memoryview) -> None:
    while chunk:
        n = os.write(fd, chunk)
        chunk = chunk[n:]


# -- archiving ---------------------------------------------------------------------------


class RawStore:
    """The raw tables one archive run copies into ``<root>/_raw``: each staged under a
    hidden temporary name, renamed into place at the commit with the run's Parquet files,
    removed when the run fails.

    ``add`` returns the problems of one packet's references, as ``(table, reason)``: the
    packet is archived all the same.
    """

    def __init__(self, root: Path, side_dirs: Iterable[str | os.PathLike[str]] = ()) -> None:
        self.root = root
        self.dir = root / RAW_DIR
        #: folders side files may be read from besides each packet's own
        self.side_dirs = tuple(side_dirs)
        #: digests known to be in the archive already
        self.present: set[str] = set()
        #: digest -> its hidden temporary copy, staged in this run
        self.staged: dict[str, Path] = {}
        #: (where, digest) already reported: one line per file
        self.reported: set[tuple[str, str]] = set()
        self.made_dir = False
        #: final names of this run's copies, once renamed
        self.renamed: list[Path] = []

    def has(self, hex_digest: str) -> bool:
        """Whether the archive holds this raw table already, or this run staged it."""
        if hex_digest in self.present or hex_digest in self.staged:
            return True
        if (self.dir / f"{hex_digest}.arrow").is_file():
            self.present.add(hex_digest)
            return True
        return False

    def add(self, source: str, refs: Iterable[Any]) -> list[tuple[str, str]]:
        """Copy the raw tables of one packet read from ``source`` (a file name, ``-`` for
        standard input) unless the archive has them; what could not be copied, once per
        file."""
        problems: list[tuple[str, str]] = []
        for ref in refs:
            got = self._add_one(source, ref)
            if got is not None:
                where, hex_digest, table, reason = got
                if (where, hex_digest) not in self.reported:
                    self.reported.add((where, hex_digest))
                    problems.append((table, reason))
        return problems

    def _add_one(self, source: str, ref: Any) -> tuple[str, str, str, str] | None:
        if not isinstance(ref, dict):
            return source, "", "(not an object)", "the reference is not a JSON object"
        path = _text(ref.get("path"))
        uri = _text(ref.get("uri"))
        table = path or uri or _text(ref.get("name")) or "(no path)"
        hex_digest = digest_hex(ref)
        if hex_digest is None:
            return source, table, table, "no valid sha256 in the reference"
        if self.has(hex_digest):
            return None
        if path is None:
            if uri is None:
                return source, hex_digest, table, "the reference has neither path nor uri"
            return (
                uri,
                hex_digest,
                table,
                f"the packet gives only a uri ({uri}); fetch the file and archive again",
            )
        if source == "-":
            return (
                f"-:{path}",
                hex_digest,
                table,
                "read from standard input, so there is no packet directory to find it in",
            )
        where = Path(path) if os.path.isabs(path) else Path(os.path.dirname(source)) / path
        key = os.path.abspath(where)
        if (key, hex_digest) in self.reported:
            return None
        if not inside(where, (os.path.dirname(source) or ".", *self.side_dirs)):
            # not looked at: a packet must not learn (or copy) files outside its folder
            return key, hex_digest, table, outside_message(shown(path))
        size, said = _size(ref)
        made: list[tuple[Path, int]] = []

        def open_tmp() -> int:
            # only once the side file is open and of the right size
            self._make_dir()
            tmp = self.dir / f".{hex_digest}.{uuid.uuid4().hex[:12]}.arrow.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            made.append((tmp, os.open(tmp, flags, 0o644)))
            return made[-1][1]

        ok = False
        try:
            copy_checked(where, hex_digest, size, said, open_tmp)
            os.fsync(made[0][1])
            ok = True
        except Mismatch as exc:
            return key, hex_digest, table, f"{where}: {exc}"
        finally:
            for tmp, fd in made:
                os.close(fd)
                if not ok:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
        self.staged[hex_digest] = made[0][0]
        return None

    def _make_dir(self) -> None:
        if not self.dir.is_dir():
            self.dir.mkdir()
            self.made_dir = True

    def commit(self) -> list[str]:
        """Rename the staged copies into place; returns their names relative to the archive
        root (:meth:`abort` removes them again). A copy whose name exists already (the
        same bytes: the name is the digest) is dropped."""
        names: list[str] = []
        for hex_digest, tmp in list(self.staged.items()):
            final = self.dir / f"{hex_digest}.arrow"
            if final.exists():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
            else:
                os.replace(tmp, final)
                self.renamed.append(final)
                names.append(f"{RAW_DIR}/{final.name}")
            del self.staged[hex_digest]
        if self.renamed:
            fsync_dir(self.dir)
        elif self.made_dir:
            with contextlib.suppress(OSError):
                self.dir.rmdir()
        return names

    def abort(self) -> None:
        """Remove the copies: staged, and renamed already; the folder when this run made it."""
        for path in [*self.renamed, *self.staged.values()]:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self.renamed, self.staged = [], {}
        if self.made_dir:
            with contextlib.suppress(OSError):
                self.dir.rmdir()


def fsync_dir(path: Path) -> None:
    """Make a directory's entries durable (best effort: some file systems refuse)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- reading -----------------------------------------------------------------------------


def read_raw_table(archive_dir: str | os.PathLike[str], capture: ProfilerCapture) -> pa.Table:
    """The capture's raw metrics as a :class:`pyarrow.Table`: for a capture with a side file
    (``raw_table``), the archive's copy ``<archive_dir>/_raw/<sha256 hex>.arrow``, checked
    as :func:`kernel_evidence.rawtable.read_raw_table` checks it (sha256, size, layout, row
    count; any mismatch is an :class:`~kernel_evidence.errors.InputError`); for a capture
    with inline ``raw_columns``, the same table built from them.

    Raises :class:`~kernel_evidence.errors.ArchiveError` when ``archive_dir`` is not an
    archive, and :class:`~kernel_evidence.errors.InputError` when the archive does not hold
    the capture's raw table.
    """
    from ..rawtable import read_raw_table as read_checked
    from . import _layout

    root = Path(archive_dir)
    _layout.read_marker(root, for_write=False)
    ref = capture.raw_table
    if ref is None:
        return read_checked(capture)
    m = _HEX.fullmatch(ref.sha256 or "")
    if m is None:
        raise InputError(ref.name or "raw table", None, "no sha256; the archive keeps raw tables by sha256")
    path = archived_path(root, m.group(1))
    if not path.is_file():
        raise InputError(
            str(path), None, "raw table not in the archive (it was missing or damaged when archived)"
        )
    local = capture.model_copy(update={"raw_table": ref.model_copy(update={"path": str(path), "uri": None})})
    return read_checked(local)


# -- export ------------------------------------------------------------------------------


def plain_name(path: str) -> bool:
    """Whether an exported raw table may be written beside the output under ``path``: a
    plain file name (no folder, not ``.``/``..``, not absolute, not hidden) of an Arrow
    file (``.arrow`` or ``.feather``)."""
    if not path or path != os.path.basename(path) or "/" in path or "\\" in path:
        return False
    if path.startswith(".") or "\x00" in path or os.path.isabs(path):
        return False
    return path.lower().endswith(_SUFFIXES)


def export_raw_tables(
    root: Path,
    output: Path,
    refs: dict[tuple[str | None, str | None], Any],
    warn: Callable[[str], None],
) -> list[Path]:
    """Copy the archive's raw tables ``refs`` (``(path, hex digest)`` -> a packet id) to
    beside the packet file ``output``, under their paths; returns the files written. A path that is not a plain
    file name, a raw table the archive lacks or holds damaged, and an existing file of other
    content are warned about and left alone; an existing file of the same content is
    skipped. Raises ``OSError`` when writing fails (the files written are removed then)."""
    written: list[Path] = []
    dest_dir = output.parent
    try:
        for (path, hex_digest), pid in refs.items():
            of = f"raw table {path or '(no path)'} of packet {pid}" if pid else f"raw table {path}"
            if path is None or hex_digest is None:
                continue  # only a uri, or no digest: nothing the archive keeps
            src = archived_path(root, hex_digest)
            if not src.is_file():
                warn(f"{of}: not copied; the archive does not hold it ({src})")
                continue
            if not plain_name(path):
                warn(
                    f"{of}: not copied beside the output (its path is not a plain .arrow file name); it is in {src}"
                )
                continue
            dest = dest_dir / path
            if os.path.abspath(dest) == os.path.abspath(output):
                warn(f"{of}: not copied; its name is the output's ({output}); it is in {src}")
                continue
            if os.path.lexists(dest):
                if not _same(dest, hex_digest):
                    warn(
                        f"{dest}: exists with other content; left as it is ({of} not copied; it is in {src})"
                    )
                continue
            done = _put(src, dest, hex_digest, warn, of)
            if done:
                written.append(dest)
    except BaseException:
        for p in written:
            with contextlib.suppress(OSError):
                os.unlink(p)
        raise
    return written


def _same(dest: Path, hex_digest: str) -> bool:
    """Whether ``dest`` is a regular file (not a link) holding the raw table of this digest."""
    try:
        if not stat.S_ISREG(os.lstat(dest).st_mode):
            return False
        copy_checked(dest, hex_digest, None, "")
    except (Mismatch, OSError):
        return False
    return True


def _put(src: Path, dest: Path, hex_digest: str, warn: Callable[[str], None], of: str) -> bool:
    """Copy ``src`` to ``dest`` checked, through a temporary file; never replaces a file
    that appeared meanwhile. False (warned) when the archive's copy is damaged."""
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        try:
            copy_checked(src, hex_digest, None, "", lambda: fd)
        except Mismatch as exc:
            warn(f"{of}: not copied; the archive's copy {src} {exc}")
            return False
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it private; give it a plain file's mode
        try:
            os.link(tmp, dest)  # fails when dest exists: never replaces a file
        except FileExistsError:
            if not _same(dest, hex_digest):
                warn(f"{dest}: exists with other content; left as it is ({of} not copied; it is in {src})")
            return False
        except OSError:  # no hard links on this file system
            if os.path.lexists(dest):
                return False
            os.replace(tmp, dest)
        return True
    finally:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
