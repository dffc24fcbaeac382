"""Reading one input file for an adapter: capped, whatever the file is.

A regular file larger than the cap is refused before it is read; a device, a pipe or a file
that grows while it is read is read in chunks and refused as soon as it passes the cap, so
a link to ``/dev/zero`` costs at most the cap, never the machine's memory.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ..errors import AdapterError, AdapterOptionError, InputError

if TYPE_CHECKING:  # pragma: no cover
    from ..models import Artifact

__all__ = [
    "DEFAULT_MAX_BYTES",
    "is_junk_entry",
    "max_bytes_option",
    "read_capped",
    "size_text",
    "walk_inputs",
]

#: the largest input file an adapter reads unless told otherwise (``--opt max_bytes=N``)
DEFAULT_MAX_BYTES = 2 << 30

_CHUNK = 8 << 20

#: folders archivers add that never hold profiler output (macOS zip resource forks)
_JUNK_DIRS = frozenset({"__MACOSX"})


def is_junk_entry(path: os.PathLike[str] | str, root: os.PathLike[str] | str) -> bool:
    """Whether ``path``, found while walking the folder ``root``, is not a profiler output
    whatever its suffix: a hidden file or folder below ``root`` (``.DS_Store``, macOS
    ``._name`` resource forks, ``.ipynb_checkpoints/``) or anything under ``__MACOSX/``."""
    rel = os.path.relpath(os.fspath(path), os.fspath(root))
    return any(
        part.startswith(".") and part not in (".", "..") or part in _JUNK_DIRS for part in rel.split(os.sep)
    )


def size_text(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


def _too_large(path: str, cap: int, what: str) -> AdapterError:
    return AdapterError(
        f"{path}: larger than the {size_text(cap)} cap for one input; expected {what} "
        "(raise the cap with --opt max_bytes=N if the file is really that large)"
    )


def _open(path: str) -> BinaryIO:
    """``path`` opened for reading without blocking on a FIFO that no process writes: the
    open does not wait for a writer, and a read then ends at once (EOF) when none has it
    open, or waits for data while one does (a pipe, ``<(zcat trace.json.gz)``)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(
    path: str, cap: int = DEFAULT_MAX_BYTES, *, what: str = "a profiler or benchmark output"
) -> bytes:
    """The bytes of ``path``, at most ``cap`` of them; :class:`AdapterError` (one line, naming
    the file) for a directory, an unreadable file, or more than ``cap`` bytes."""
    try:
        with _open(path) as fh:
            st = os.fstat(fh.fileno())
            parts: list[bytes] = []
            total = 0
            if stat.S_ISREG(st.st_mode):
                if st.st_size > cap:
                    raise _too_large(path, cap, what)
                if st.st_size:
                    # the whole file in one read: no chunks to join (one copy less)
                    first = fh.read(st.st_size + 1)
                    if len(first) <= st.st_size:
                        return first
                    parts.append(first)  # it grew while being read: go on in chunks
                    total = len(first)
                    if total > cap:
                        raise _too_large(path, cap, what)
            while True:
                chunk = fh.read(min(_CHUNK, cap + 1 - total))
                if not chunk:
                    break
                parts.append(chunk)
                total += len(chunk)
                if total > cap:
                    raise _too_large(path, cap, what)
    except IsADirectoryError:
        raise AdapterError(f"{path}: is a directory; expected {what}") from None
    except OSError as exc:
        raise AdapterError(f"{path}: could not be read ({exc.strerror or exc})") from None
    return parts[0] if len(parts) == 1 else b"".join(parts)


def max_bytes_option(extra: dict[str, object], default: int = DEFAULT_MAX_BYTES) -> int:
    """The ``max_bytes`` adapter option (a positive integer), or ``default``."""
    value = extra.get("max_bytes")
    if value is None:
        return default
    try:
        out = int(str(value))
    except ValueError:
        raise AdapterOptionError(f"option `max_bytes`: expected a positive integer, got {value!r}") from None
    if out < 1:
        raise AdapterOptionError(f"option `max_bytes`: expected a positive integer, got {out}")
    return out


def walk_inputs(inputs: Sequence[str], suffixes: tuple[str, ...]) -> Iterator[tuple[str, bool]]:
    """``(path, named explicitly)`` for every input: a file (or anything not a folder) as
    given, a folder walked in sorted order for files whose lower-cased name ends with one
    of ``suffixes``, leaving out hidden and editor/OS junk entries (:func:`is_junk_entry`).
    A file named explicitly must be read or fail; one found in a folder may be skipped
    with a warning. Symlinked folders are not descended into (no loops)."""
    for item in inputs:
        path = Path(os.fspath(item))
        if not path.is_dir():
            yield str(item), True
            continue
        for sub in sorted(path.rglob("*")):
            if sub.is_file() and sub.name.lower().endswith(suffixes) and not is_junk_entry(sub, path):
                yield str(sub), False


def file_artifact(path: Path, media_type: str, data: bytes | None = None) -> Artifact:
    """The input file as a capture's source: its sha256 and size, from ``data`` when the
    file was read whole, else hashed from the file in 1 MiB chunks (a database is never
    read whole); an unreadable file is a one-line InputError."""
    from ..models import Artifact, ByteSize

    h = hashlib.sha256()
    size = 0
    if data is not None:
        h.update(data)
        size = len(data)
    else:
        try:
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
                    size += len(chunk)
        except OSError as exc:
            raise InputError(str(path), None, f"cannot read: {exc.strerror or exc}") from None
    return Artifact(
        kind="profile",
        name=path.name,
        path=str(path),
        sha256="sha256:" + h.hexdigest(),
        size=ByteSize(value=float(size), unit="B"),
        media_type=media_type,
    )


def gunzip_capped(path: str, data: bytes, cap: int, what: str) -> bytes:
    """The decompressed bytes of a gzip file, at most ``cap`` of them; a one-line
    :class:`AdapterError` for a truncated or corrupt stream or one over the cap (``what``:
    what the file was expected to hold)."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
            out = gz.read(cap + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise AdapterError(f"{path}: truncated or corrupt gzip ({exc}); expected {what}") from None
    if len(out) > cap:
        raise AdapterError(
            f"{path}: decompresses to more than {size_text(cap)}, the cap for one input; expected "
            f"{what} (raise the cap with --opt max_bytes=N if the file is really that large)"
        )
    return out
