"""Raw profiler metrics in a columnar side file, for captures too large to keep inline.

A profiler capture keeps every source metric raw. For a few thousand values they sit in the
packet (``ProfilerCapture.raw_columns``); an ncu raw page of 20,000 launches by 500 metrics
is ten million values, and a JSON packet that spells each one is slow to write, slow to
hash and slow to read. Such a capture holds ``raw_table`` instead: an
:class:`~kernel_evidence.models.Artifact` naming an Arrow IPC file (the format pandas calls
Feather v2; Polars, DuckDB and Spark read it) by sha256 and size. The file has the same
columns ``raw_columns`` would have, one row per entry of ``kernels`` in the same order:

- numbers as ``float64`` and text as ``string`` (``null`` where a launch has none);
- a column that mixes numbers and text as ``string`` cells each holding one JSON value
  (``1.5`` or ``"n/a"``), marked with the field metadata ``kevidence.cells = json``;
- each column's unit, as the source spelled it, in the field metadata ``unit`` (the packet's
  ``raw_units`` says the same);
- the schema metadata ``kevidence.raw_table`` = ``1`` (the layout version) and
  ``kevidence.rows``.

The packet's id covers the file through its sha256: changing one value changes the id.
:func:`read_raw_table` checks the digest, the size and the row count before it returns a
table, so a damaged or substituted file is refused, not read.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import mmap
import os
import re
import stat
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError, MissingExtra, shown
from .io import _UMASK
from .models import Artifact
from .models._base import ByteSize

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

    from .models import ProfilerCapture

__all__ = [
    "INLINE_MAX_CELLS",
    "RAW_TABLE_MEDIA_TYPE",
    "RAW_TABLE_VERSION",
    "check_raw_table_file",
    "raw_columns_of",
    "read_raw_table",
    "side_files_from",
    "write_raw_table",
]

#: the IANA media type of an Arrow IPC file
RAW_TABLE_MEDIA_TYPE = "application/vnd.apache.arrow.file"
#: the layout version written to the schema metadata ``kevidence.raw_table``
RAW_TABLE_VERSION = 1
#: captures with more raw values than this go to a side file when the caller gives a place
#: for side files (``AdapterOptions.side_dir``, ``kevidence ingest --side-dir``)
INLINE_MAX_CELLS = 1_000_000

#: buffer compression of the side files (readers decompress whatever the file says)
_COMPRESSION: str | None = "zstd"
_UNSAFE_STEM = re.compile(r"[^A-Za-z0-9._+-]+")
_META_VERSION = b"kevidence.raw_table"
_META_ROWS = b"kevidence.rows"
_META_CELLS = b"kevidence.cells"
_META_UNIT = b"unit"


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.ipc  # noqa: F401
    except ImportError:  # pragma: no cover - pyarrow is a core dependency
        raise MissingExtra("pyarrow", "archive", "reading or writing a raw-metrics side file") from None
    return pa


def _column(pa: Any, values: Any) -> tuple[Any, bool]:
    """(Arrow array, holds JSON cells) for one raw column: an Arrow array as it is, a list of
    floats, texts and Nones as float64, string, or JSON cells when it mixes both."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if pa.types.is_null(values.type):
            return values.cast(pa.float64()), False
        return values, False
    kinds = {type(v) for v in values} - {type(None)}
    if not kinds:
        return pa.nulls(len(values), pa.float64()), False
    if kinds <= {float, int}:
        return pa.array(values, type=pa.float64()), False
    if kinds == {str}:
        return pa.array(values, type=pa.string()), False
    return pa.array([None if v is None else json.dumps(v) for v in values], type=pa.string()), True


def write_raw_table(
    columns: Mapping[str, Any],
    units: Mapping[str, str] | None,
    rows: int,
    directory: str | os.PathLike[str],
    stem: str,
    *,
    relative_to: str | os.PathLike[str] | None = None,
) -> Artifact:
    """Write ``columns`` (name -> Arrow array or list of float/str/None, ``rows`` values
    each) as ``<directory>/<stem>.raw-<sha256 prefix>.arrow`` and return its reference.

    The file is written to a temporary name and renamed into place, so a reader never sees
    half of it. A file of that name already there (the name carries the digest's prefix)
    that holds the same bytes is left as it is; one that holds other bytes is replaced. The
    reference's ``path`` is relative to ``relative_to`` when given (the
    directory the packet will be written to), else as the file was written.
    """
    return _write(columns, units, rows, directory, stem, relative_to)[0]


def _write(
    columns: Mapping[str, Any],
    units: Mapping[str, str] | None,
    rows: int,
    directory: str | os.PathLike[str],
    stem: str,
    relative_to: str | os.PathLike[str] | None,
    threads: bool = True,
) -> tuple[Artifact, bool]:
    """:func:`write_raw_table`, and whether it made the file: False when a file of the same
    name and the same bytes was there already (it is left as it is, and is not this call's
    to remove). ``threads``: compress in Arrow's threads; False: in the calling thread only
    (see :meth:`~kernel_evidence.adapters.AdapterOptions.raw_table`)."""
    pa = _pyarrow()
    # the stem names a file in `directory`, never a path: no separator, no leading dot
    stem = _UNSAFE_STEM.sub("_", stem).strip("._") or "raw"
    units = units or {}
    fields = []
    arrays = []
    for name, values in columns.items():
        array, json_cells = _column(pa, values)
        if len(array) != rows:
            raise ValueError(f"raw column `{name}` has {len(array)} values for {rows} rows")
        meta: dict[bytes, bytes] = {}
        if units.get(name):
            meta[_META_UNIT] = str(units[name]).encode()
        if json_cells:
            meta[_META_CELLS] = b"json"
        fields.append(pa.field(name, array.type, metadata=meta or None))
        arrays.append(array)
    schema = pa.schema(
        fields, metadata={_META_VERSION: str(RAW_TABLE_VERSION).encode(), _META_ROWS: str(rows).encode()}
    )
    # one chunk per column (one call, in Arrow's threads): one record batch of long buffers,
    # which zstd compresses in half the time of many batches of short ones (pyarrow's CSV
    # reader gives a chunk per block it parsed)
    table = pa.Table.from_arrays(arrays, schema=schema).combine_chunks() if arrays else schema.empty_table()
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", suffix=".arrow.tmp", dir=out_dir)
    try:
        os.close(fd)
        os.chmod(tmp, 0o666 & ~_UMASK)  # as any file the user writes (mkstemp makes it 0600)
        # Arrow writes (and compresses, in its threads if asked) straight into the file: no copy of
        # it in memory, and the GIL is taken back once, not per buffer. The digest is of
        # the bytes written, read back through a mapping of the file (page cache, no copy).
        options = pa.ipc.IpcWriteOptions(compression=_COMPRESSION, use_threads=threads)
        with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, schema, options=options) as writer:
            writer.write_table(table)
        size, digest = _file_digest(tmp)
        final = out_dir / f"{stem}.raw-{digest[:16]}.arrow"
        made = not _same_file_there(final, size, digest)
        if made:
            os.replace(tmp, final)
        else:
            os.unlink(tmp)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    path = str(final)
    if relative_to is not None:
        path = os.path.relpath(final, relative_to)
    ref = Artifact(
        kind="profile",
        name=final.name,
        path=path,
        sha256=f"sha256:{digest}",
        size=ByteSize(value=float(size), unit="B"),
        media_type=RAW_TABLE_MEDIA_TYPE,
    )
    return ref, made


def _same_file_there(path: Path, size: int, digest: str) -> bool:
    """Whether ``path`` is a regular file of ``size`` bytes with the sha256 ``digest`` (the
    same side file, written by an earlier run: the name carries the digest's prefix)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_size != size:
        return False
    try:
        return _file_digest(str(path)) == (size, digest)
    except OSError:
        return False


def _file_digest(path: str) -> tuple[int, str]:
    """(size, hex sha256) of a file just written: hashed through a memory map of it."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if not size:
            return 0, hashlib.sha256(b"").hexdigest()
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return size, hashlib.sha256(view).hexdigest()


def _where(ref: Artifact, base_dir: str | os.PathLike[str] | None) -> Path:
    if not ref.path:
        where = ref.uri or "no path"
        raise InputError(
            ref.name or "raw table", None, f"only a uri ({where}) is recorded; fetch the file first"
        )
    p = Path(ref.path)
    if not p.is_absolute() and base_dir is not None:
        p = Path(base_dir) / p
    return p


def read_raw_table(
    capture: ProfilerCapture, base_dir: str | os.PathLike[str] | None = None, *, verify: bool = True
) -> pa.Table:
    """The capture's raw metrics as an Arrow table: from its side file (``raw_table``; a
    relative path is taken from ``base_dir``, the directory of the packet file) or from its
    inline ``raw_columns``. The side file's sha256, size, layout and row count are checked
    first (``verify=False`` skips the digest); any mismatch is an :class:`InputError`."""
    pa = _pyarrow()
    rows = len(capture.kernels or ())
    ref = capture.raw_table
    if ref is None:
        cols = capture.raw_columns or {}
        arrays = {name: _column(pa, values) for name, values in cols.items()}
        units = capture.raw_units or {}
        fields = [
            pa.field(
                name,
                a.type,
                metadata={
                    **({_META_UNIT: units[name].encode()} if units.get(name) else {}),
                    **({_META_CELLS: b"json"} if j else {}),
                }
                or None,
            )
            for name, (a, j) in arrays.items()
        ]
        return pa.Table.from_arrays([a for a, _ in arrays.values()], schema=pa.schema(fields))
    path = _where(ref, base_dir)
    data = _read_regular(path, None if ref.size is None else ref.size.value)
    if ref.size is not None and ref.size.value != len(data):
        raise InputError(
            str(path), None, f"raw table is {len(data)} bytes; the packet says {int(ref.size.value)}"
        )
    if verify and ref.sha256 is not None:
        got = "sha256:" + hashlib.sha256(data).hexdigest()
        if got != ref.sha256:
            # the digest found is not shown: a packet's path may name any file of the reader's
            raise InputError(str(path), None, f"raw table's sha256 is not the packet's {ref.sha256}")
    try:
        table = pa.ipc.open_file(pa.py_buffer(data)).read_all()
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(
            str(path), None, f"not an Arrow IPC file: {' '.join(str(exc).split())[:200]}"
        ) from None
    meta = table.schema.metadata or {}
    if meta.get(_META_VERSION) != str(RAW_TABLE_VERSION).encode():
        got_v = meta.get(_META_VERSION, b"none").decode(errors="replace")[:20]
        raise InputError(str(path), None, f"raw table layout {got_v}; this version reads {RAW_TABLE_VERSION}")
    if table.num_rows != rows:
        raise InputError(str(path), None, f"raw table has {table.num_rows} rows for {rows} kernel records")
    return table


def _read_regular(path: Path, size: float | None) -> bytes:
    """The bytes of the regular file ``path`` (a packet's path is untrusted: a device, a FIFO
    or a directory is refused before it is read, never waited on), at most one byte past
    ``size`` when the packet gives one."""
    import stat

    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(str(path), None, "raw table is not a regular file")
        if size is not None and st.st_size != size:
            raise InputError(str(path), None, f"raw table is {st.st_size} bytes; the packet says {int(size)}")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # swapped since the stat
                raise InputError(str(path), None, "raw table is not a regular file")
            return fh.read(st.st_size + 1)
    except OSError as exc:
        raise InputError(str(path), None, f"raw table cannot be read: {exc.strerror or exc}") from None


def raw_columns_of(table: pa.Table) -> tuple[dict[str, list[Any]], dict[str, str]]:
    """``(raw_columns, raw_units)`` as a packet keeps them inline, from a raw table (JSON
    cells decoded back into numbers and text)."""
    columns: dict[str, list[Any]] = {}
    units: dict[str, str] = {}
    for field, col in zip(table.schema, table.columns, strict=True):
        meta = field.metadata or {}
        values = col.to_pylist()
        if meta.get(_META_CELLS) == b"json":
            values = [None if v is None else json.loads(v) for v in values]
        columns[field.name] = values
        if meta.get(_META_UNIT):
            units[field.name] = meta[_META_UNIT].decode()
    return columns, units


#: folders besides the packet's own that side files may be read from (``--side-files-from``)
_SIDE_DIRS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("side_dirs", default=())


@contextlib.contextmanager
def side_files_from(*dirs: str | os.PathLike[str]) -> Iterator[None]:
    """Within the block, :func:`check_raw_table_file` (and so ``validate_paths``) also reads
    side files found in ``dirs`` and below, not only in the packet's own folder."""
    token = _SIDE_DIRS.set(_SIDE_DIRS.get() + tuple(os.path.realpath(d) for d in dirs))
    try:
        yield
    finally:
        _SIDE_DIRS.reset(token)


def inside(path: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]]) -> bool:
    """Whether ``path``, symbolic links resolved, is one of ``roots`` (resolved too) or lies
    below one. Decided before the file is opened or even looked at, so that a packet's path
    learns nothing about files outside (not whether they exist)."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):  # a NUL byte, a name too long: not a file it may read
        return False
    for root in roots:
        top = os.path.realpath(root or ".")
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


def outside_message(shown_path: str) -> str:
    """What a side file outside the folders it may be read from is told (the same whether
    or not such a file exists)."""
    return (
        f"raw table {shown_path} is outside the packet's folder; side files are read only "
        "from there (allow another folder with --side-files-from)"
    )


#: (real path, device, inode, size, mtime_ns) -> hex sha256 of side files hashed: several
#: packets naming one large file hash it once; a file changed meanwhile is hashed again
_DIGESTS: OrderedDict[tuple[str, int, int, int, int], str] = OrderedDict()
_DIGESTS_KEPT = 256


def check_raw_table_file(
    ref: Any, base_dir: str | os.PathLike[str], *, side_dirs: Iterable[str | os.PathLike[str]] = ()
) -> tuple[str, str] | None:
    """Whether the side file a reference names (a relative path from ``base_dir``) is there
    and is the one it names: ``("missing", why)``, ``("differs", why)``, or None when its size
    and sha256 match. Reads a regular file only (never blocks on a FIFO), in chunks, and no
    further than one byte past the size the reference gives. ``ref`` is an
    :class:`~kernel_evidence.models.Artifact` or the validator's struct of one.

    The file must lie in ``base_dir`` (the packet's folder) or below, or in one of
    ``side_dirs`` (and those of :func:`side_files_from`): a path elsewhere is "missing"
    without being looked at, so a packet cannot probe the reader's files. A file's digest
    is remembered by path, size and modification time: packets naming one file hash it once.
    """
    import stat

    path = Path(ref.path)
    if not path.is_absolute():
        path = Path(base_dir or ".") / path
    if not inside(path, (base_dir or ".", *side_dirs, *_SIDE_DIRS.get())):
        return "missing", outside_message(shown(ref.path))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing", f"raw table {shown_path(path)} not found"
    except (OSError, ValueError) as exc:
        return "missing", f"raw table {shown_path(path)} cannot be read: {_why(exc)}"
    if not stat.S_ISREG(st.st_mode):
        return "differs", f"raw table {shown_path(path)} is not a regular file"
    want = None if ref.size is None else ref.size.value
    if want is not None and st.st_size != want:
        return "differs", f"raw table {shown_path(path)} is {st.st_size} bytes; the packet says {int(want)}"
    key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    got = _DIGESTS.get(key)
    if got is None:
        hashed = _hash_regular(path, st.st_size + 1)
        if isinstance(hashed, tuple):
            return hashed
        got = "sha256:" + hashed.hexdigest()
        _DIGESTS[key] = got
        if len(_DIGESTS) > _DIGESTS_KEPT:
            _DIGESTS.popitem(last=False)
    else:
        _DIGESTS.move_to_end(key)
    if ref.sha256 is not None and got != ref.sha256:
        # the digest found is not shown: a packet's path may name any file of the reader's
        return "differs", f"raw table {shown_path(path)} does not have the packet's sha256 {ref.sha256}"
    return None


def _hash_regular(path: Path, limit: int) -> Any:
    """The sha256 object of the regular file ``path`` (at most ``limit`` bytes), or the
    ``("missing" | "differs", why)`` that stopped reading it."""
    import stat

    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        return "missing", f"raw table {shown_path(path)} cannot be read: {_why(exc)}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "differs", f"raw table {shown_path(path)} is not a regular file"
        total = 0
        while total < limit:
            chunk = os.read(fd, min(1 << 20, limit - total))
            if not chunk:
                break
            h.update(chunk)
            total += len(chunk)
    except OSError as exc:
        return "missing", f"raw table {shown_path(path)} cannot be read: {_why(exc)}"
    finally:
        os.close(fd)
    return h


def _why(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or type(exc).__name__


def shown_path(path: Path) -> str:
    return shown(str(path))
