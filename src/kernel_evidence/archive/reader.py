"""Reading an archive: the dataset with its fixed schema, filters, and export back to packets.

``--where`` filters are parsed here, never evaluated as code: each is ``COLUMN OP VALUE``
with ``OP`` one of ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``. ``VALUE`` is read with the
column's type; ``a|b|c`` after ``=`` or ``!=`` means one of several values, and ``null``
means a missing value. Several filters must all hold.

>>> str(parse_where(["status=failed", "speedup>=1.5"]))
'((status == "failed") and (speedup >= 1.5))'
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import zstandard

from .._iso import parse_iso
from ..errors import ArchiveError
from ..io import _output_target, open_output, replaces_file
from . import _layout
from ._raw import RAW_DIR, digest_hex, export_raw_tables, has_raw_table, raw_refs_of
from .schema import DATASET_SCHEMA, META_LAYOUT_VERSION, PARTITION_SCHEMA

__all__ = [
    "OutputError",
    "WhereError",
    "check_output",
    "export_packets",
    "iter_packets",
    "open_archive",
    "parse_where",
    "scan",
]

_PARTITIONING = ds.partitioning(PARTITION_SCHEMA, flavor="hive")
#: read one column chunk at a time rather than whole row groups ahead
_SCAN_OPTIONS = ds.ParquetFragmentScanOptions(pre_buffer=False)
_WHERE_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(!=|>=|<=|=|<|>)\s*(.*?)\s*$")
#: output names that hold several packets (one per line); any other name holds one
_JSONL = (".jsonl", ".ndjson", ".jsonl.zst", ".ndjson.zst")


_EXPECTED = "expected COLUMN OP VALUE with OP one of = != < <= > >="


class WhereError(ValueError):
    """A ``--where`` filter that cannot be understood (a usage error)."""


class OutputError(ValueError):
    """An output name that cannot hold what would be written there (a usage error)."""


def check_output(root: str | os.PathLike[str], out: str | os.PathLike[str]) -> None:
    """Refuse an output path inside the archive ``root`` (symbolic links resolved): writing
    there would add a stray file to the archive, or replace one of its files."""
    try:
        base = Path(root).resolve()
        target = Path(out).resolve()
    except (OSError, RuntimeError):  # a symlink loop: opening the output will say so
        return
    if target == base or base in target.parents:
        raise OutputError(f"{out}: inside the archive {root} being read; write the output outside it")


def _files(root: Path) -> list[Path]:
    _layout.read_marker(root, for_write=False)
    return _layout.data_files(root)


def open_archive(root: str | os.PathLike[str]) -> ds.Dataset:
    """The archive as a :class:`pyarrow.dataset.Dataset` with :data:`DATASET_SCHEMA`.

    Checks the marker and layout version; files are opened lazily, so a corrupt file shows
    up when scanned (see :func:`scan`, which names it).
    """
    path = Path(root)
    files = _files(path)
    try:
        return ds.dataset(
            [str(f) for f in files],
            schema=DATASET_SCHEMA,
            format="parquet",
            partitioning=_PARTITIONING,
            partition_base_dir=str(path),
        )
    except FileNotFoundError as exc:  # a data file that vanished, or a dangling link
        raise ArchiveError(f"{exc}: no such file (a missing data file or a broken link)") from None
    except (pa.ArrowException, OSError) as exc:
        raise ArchiveError(f"{path}: the archive could not be opened ({_short(exc)})") from None


def _check_file(path: Path) -> None:
    try:
        meta = pq.read_metadata(path)
    except (pa.ArrowException, OSError) as exc:
        raise ArchiveError(f"{path}: not a readable Parquet file ({_short(exc)})") from None
    kv = meta.metadata or {}
    raw = kv.get(META_LAYOUT_VERSION)
    if raw is None:
        raise ArchiveError(
            f"{path}: not a kevidence archive file (no archive layout version in its metadata)"
        )
    found = _layout.parse_version(raw.decode("utf-8", "replace"), str(path))
    _layout.check_layout(path, found, for_write=False)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def scan(
    root: str | os.PathLike[str],
    columns: list[str] | None = None,
    where: pc.Expression | None = None,
    batch_size: int = 16_384,
) -> Iterator[pa.RecordBatch]:
    """Record batches of the archive, file by file in path order, after checking each file.

    A file that cannot be read raises :class:`ArchiveError` naming it.
    """
    dataset = open_archive(root)
    for fragment in sorted(dataset.get_fragments(filter=where), key=lambda f: f.path):
        path = Path(fragment.path)
        _check_file(path)
        try:
            yield from fragment.to_batches(
                schema=DATASET_SCHEMA,
                columns=columns,
                filter=where,
                batch_size=batch_size,
                batch_readahead=1,  # bounded memory: packets are large
                fragment_readahead=1,
                fragment_scan_options=_SCAN_OPTIONS,
            )
        except (pa.ArrowException, OSError) as exc:
            raise ArchiveError(f"{path}: not a readable Parquet file ({_short(exc)})") from None


def read_table(
    root: str | os.PathLike[str],
    columns: list[str] | None = None,
    where: pc.Expression | None = None,
) -> pa.Table:
    """The selected columns of the whole archive as one table (checks every file)."""
    names = columns if columns is not None else DATASET_SCHEMA.names
    schema = pa.schema([DATASET_SCHEMA.field(n) for n in names])
    return pa.Table.from_batches(list(scan(root, names, where)), schema=schema)


def iter_packets(
    root: str | os.PathLike[str],
    where: Iterable[str] | pc.Expression | None = None,
    *,
    verdict: str | Iterable[str] | None = None,
) -> Iterator[bytes]:
    """The archived packets' JSON bytes (compact, as they came in), optionally filtered;
    ``verdict`` keeps the packets whose latest third-party verdict is one of those named
    (see :mod:`kernel_evidence.archive.verdicts`)."""
    expr = where if isinstance(where, pc.Expression) or where is None else parse_where(where)
    if verdict is not None:
        from .verdicts import verdict_filter

        expr = verdict_filter(root, verdict, expr)
    for batch in scan(root, ["packet"], expr):
        yield from batch.column(0).to_pylist()


def export_packets(
    root: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    where: Iterable[str] | pc.Expression | None = None,
    overwrite: bool = False,
    on_warning: Callable[[str], None] | None = None,
) -> int:
    """Write the archived packets (filtered) to JSONL, zstd-compressed when ``out`` ends in
    ``.zst``; ``-`` is standard output. Atomic; returns the number of packets written.

    Raw tables: when ``out`` is a file, each exported capture's side file is copied from the
    archive's ``_raw/`` folder to beside ``out``, under the reference's ``path`` when that
    is a plain file name (``name.arrow``: no folder, not hidden); an existing file of the
    same name is never replaced (the same content: skipped; other content: warned about).
    A raw table that cannot be copied (another path, not in the archive, a name taken) and,
    once, a stream output (``-``, a device) with raw tables are reported to ``on_warning``
    as one line each (default: :func:`warnings.warn`); the packets are exported all the
    same. The copies are part of the export: when it fails they are removed.

    As with :func:`kernel_evidence.io.write_packets`, a name not ending in ``.jsonl`` (or
    ``.jsonl.zst``; ``.json`` for one) holds one packet: more matching packets raise
    :class:`OutputError`, as does an ``out`` inside the archive; nothing is written then.
    An ``out`` that is not a regular file (a device such as ``/dev/stdout``, a named pipe)
    is a stream, written in place as JSONL whatever its name, like ``-``.
    """
    expr = where if isinstance(where, pc.Expression) or where is None else parse_where(where)
    target = str(out)
    warn = on_warning if on_warning is not None else _warn
    if target != "-":
        check_output(root, target)
    # resolve everything that can fail on the archive before creating the output
    open_archive(root)
    refs: dict[tuple[str | None, str | None], Any] = {}
    stream = target == "-" or _output_target(target)[1]
    if stream:
        # a stream cannot be taken back: every file the export reads is checked first (its
        # footer and layout), so a truncated or foreign file fails before the first byte
        for fragment in open_archive(root).get_fragments(filter=expr):
            _check_file(Path(fragment.path))
    if target == "-":
        n = _write(sys.stdout.buffer, root, expr, zst=False, refs=refs)
        _not_copied(root, refs, "standard output", warn)
        return n
    if not overwrite and replaces_file(target):  # a device or a pipe is written to, not replaced
        raise FileExistsError(f"{target}: already exists; refusing to overwrite it (use --force)")
    # a device or a pipe (stream): JSONL, whatever its name
    if not stream and not target.lower().endswith(_JSONL):
        count = sum(batch.num_rows for batch in scan(root, ["packet_id"], expr))
        if count > 1:
            raise OutputError(
                f"{target}: {count} packets need a .jsonl (or .jsonl.zst) output name; a .json file holds one"
            )
    fh, commit = open_output(target)
    copied: list[Path] = []
    try:
        try:
            n = _write(fh, root, expr, zst=target.lower().endswith(".zst"), refs=refs)
            if stream:
                _not_copied(root, refs, target, warn)
            elif refs:
                copied = export_raw_tables(Path(root), Path(target), refs, warn)
            commit(True)
        except OSError as exc:
            if exc.strerror is None:  # already one line naming its file
                raise
            # a full disk, a device that refuses: say which file could not be written
            raise OSError(f"{exc.filename or target}: cannot be written ({exc.strerror})") from exc
    except BaseException:
        for path in copied:
            with contextlib.suppress(OSError):
                os.unlink(path)
        with contextlib.suppress(OSError):
            commit(False)
        raise
    return n


def _warn(message: str) -> None:
    warnings.warn(message, UserWarning, stacklevel=3)


def _not_copied(
    root: str | os.PathLike[str],
    refs: dict[tuple[str | None, str | None], Any],
    output: str,
    warn: Callable[[str], None],
) -> None:
    """One warning when packets with raw tables went to a stream (no folder beside it)."""
    if any(path is not None and digest is not None for path, digest in refs):
        raw = Path(root) / RAW_DIR
        warn(
            f"{output}: raw tables of the exported packets were not copied (the output is a stream); "
            f"they are in {raw}{os.sep}, named by sha256"
        )


def _write(
    fh: Any,
    root: str | os.PathLike[str],
    expr: pc.Expression | None,
    *,
    zst: bool,
    refs: dict[tuple[str | None, str | None], Any] | None = None,
) -> int:
    """Write the packets; with ``refs``, collect their raw table references into it
    (``(path, sha256 hex)`` -> the first packet id naming it)."""
    sink: Any = zstandard.ZstdCompressor(level=3).stream_writer(fh, closefd=False) if zst else fh
    n = 0
    for batch in scan(root, ["packet"], expr, batch_size=4096):
        values = batch.column(0).to_pylist()
        if values:
            joined = b"\n".join(values)
            sink.write(joined)
            sink.write(b"\n")
            n += len(values)
            if refs is not None and has_raw_table(joined):
                for value in values:
                    pid, found = raw_refs_of(value)
                    for ref in found:
                        path = ref.get("path") if isinstance(ref, dict) else None
                        key = (path if isinstance(path, str) and path else None, digest_hex(ref))
                        refs.setdefault(key, pid if isinstance(pid, str) else None)
    if zst:
        sink.close()
    else:
        sink.flush()
    return n


# -- filters ---------------------------------------------------------------------------


def _arrow(make: Any, value: Any, typ: pa.DataType, text: str, name: str) -> Any:
    """``make(value, type=typ)`` (an Arrow scalar or array for a filter value); out of the
    column type's range, or text that is not Unicode, is a :class:`WhereError` naming the
    filter."""
    try:
        return make(value, type=typ)
    except (OverflowError, UnicodeError, pa.ArrowInvalid) as exc:
        raise WhereError(f"filter `{text}`: the value does not fit `{name}` ({typ}): {exc}") from None


def _value(text: str, typ: pa.DataType, name: str) -> Any:
    if text == "null":
        return None
    try:
        if pa.types.is_string(typ):
            return text
        if pa.types.is_integer(typ):
            return int(text)
        if pa.types.is_floating(typ):
            return float(text)
        if pa.types.is_boolean(typ):
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        if pa.types.is_timestamp(typ):
            return _timestamp(text)
    except ValueError:
        raise WhereError(f"`{name}` holds {typ} values; cannot read `{text}` as one") from None
    raise WhereError(f"cannot filter on `{name}` ({typ}); filter on a scalar column")


def _timestamp(text: str) -> datetime:
    t = text.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", t):
        t += "T00:00:00Z"
    if t.endswith("Z"):
        t = t[:-1] + "+00:00"
    m = re.fullmatch(r"(.*T\d{2}:\d{2}:\d{2})(\.\d+)?([+-]\d{2}:\d{2})", t)
    if m is None:
        raise ValueError(text)
    dt = parse_iso(m.group(1) + (m.group(2) or "") + m.group(3))  # any fraction, any Python
    return dt.astimezone(timezone.utc)


def parse_where(filters: Iterable[str]) -> pc.Expression | None:
    """One filter expression from ``COLUMN OP VALUE`` texts (all must hold), or ``None``."""
    expr: pc.Expression | None = None
    for text in filters:
        m = _WHERE_RE.match(text)
        if m is None:
            raise WhereError(f"cannot read filter `{text}`; {_EXPECTED}")
        name, op, raw = m.groups()
        if name not in DATASET_SCHEMA.names:
            raise WhereError(
                f"unknown column `{name}` in filter `{text}`; see docs/archive.md for the columns"
            )
        typ = DATASET_SCHEMA.field(name).type
        field = pc.field(name)
        if op in ("=", "!=") and "|" in raw:
            values = [_value(v, typ, name) for v in raw.split("|")]
            if None in values:
                raise WhereError(f"`null` cannot be one of several values in filter `{text}`")
            e = field.isin(_arrow(pa.array, values, typ, text, name))
            e = ~e if op == "!=" else e
        else:
            value = _value(raw, typ, name)
            if value is None:
                if op not in ("=", "!="):
                    raise WhereError(f"`null` only goes with = or != in filter `{text}`")
                e = field.is_null() if op == "=" else field.is_valid()
            else:
                scalar = _arrow(pa.scalar, value, typ, text, name)
                e = {
                    "=": field == scalar,
                    "!=": field != scalar,
                    "<": field < scalar,
                    "<=": field <= scalar,
                    ">": field > scalar,
                    ">=": field >= scalar,
                }[op]
        expr = e if expr is None else expr & e
    return expr
