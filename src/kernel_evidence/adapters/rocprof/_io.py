"""Reading one rocprof input file: capped, decompressed, and cleaned to UTF-8 CSV text.

Every file the rocprof adapter reads goes through :func:`load`: the bytes come from
:func:`kernel_evidence.adapters._read.read_capped` (a directory, a device such as ``/dev/zero``
or a file over ``--opt max_bytes`` is a one-line error), a gzip stream is decompressed
whatever the file's name (``pmc_perf.csv.gz``, or a ``kernel_trace.csv`` that is really
gzip) under the same cap, and the text is cleaned the same way for every reader:

* a leading UTF-8 byte-order mark is dropped;
* NUL bytes are removed, with one warning per file (how many, first line);
* bytes that are not UTF-8 become U+FFFD, with one warning per file (how many, first line);
  in the header of a dispatch table they are an error instead, since every column name
  after them would be guessed (:func:`clean_csv` with ``strict_header``).
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import AdapterError, InputError
from .._read import DEFAULT_MAX_BYTES, read_capped

__all__ = ["SMALL_FILE", "Loaded", "clean_csv", "decode_text", "load", "shown"]

#: side files (sysinfo, analyze tables, logs, YAML) are refused beyond this, whatever the cap
SMALL_FILE = 16 << 20

_BOM = b"\xef\xbb\xbf"
_GZIP = b"\x1f\x8b"
_COMPRESSED = {
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\xfd7zXZ\x00": "xz",
    b"BZh": "bzip2",
    b"PK\x03\x04": "zip",
}


@dataclass
class Loaded:
    """One input file: its bytes as stored (for the artifact's hash and size) and the text."""

    path: Path
    raw: bytes
    data: bytes
    gzip: bool = False
    warnings: list[str] = field(default_factory=list)


def _refuse_special(path: Path, what: str) -> os.stat_result | None:
    """A named pipe or socket blocks ``open()`` or never ends: refused before it is opened."""
    try:
        st = os.stat(path)
    except OSError:
        return None  # read_capped says why
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode):
        raise AdapterError(f"{path}: is a named pipe or socket; expected {what} (a regular file)")
    return st


def _gunzip(path: Path, raw: bytes, cap: int, what: str) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:  # BytesIO shares raw: no copy
            data = fh.read(cap + 1)
    except (OSError, EOFError, zlib.error) as exc:
        reason = str(exc) or type(exc).__name__
        raise AdapterError(f"{path}: gzip-compressed but not readable ({reason}); expected {what}") from None
    if len(data) > cap:
        raise AdapterError(
            f"{path}: more than {cap} bytes once decompressed (gzip); expected {what} "
            "(raise the cap with --opt max_bytes=N if the file is really that large)"
        )
    return data


def load(
    path: Path,
    cap: int = DEFAULT_MAX_BYTES,
    *,
    what: str,
    limit: int | None = None,
) -> Loaded:
    """The bytes of ``path`` (at most ``cap``, and at most ``limit`` for a side file whatever
    the cap: :data:`SMALL_FILE`), gunzipped when they are gzip.

    One-line :class:`AdapterError` / :class:`InputError` when they cannot be had.
    """
    st = _refuse_special(path, what)
    if limit is not None:
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise InputError(
                str(path), None, f"expected {what} of at most {limit >> 20} MiB, got {st.st_size} bytes"
            )
        cap = min(cap, limit)
    raw = read_capped(str(path), cap, what=what)
    if raw[:2] == _GZIP:
        return Loaded(path, raw, _gunzip(path, raw, cap, what), gzip=True)
    for magic, kind in _COMPRESSED.items():
        if raw.startswith(magic):
            raise AdapterError(f"{path}: {kind}-compressed; expected {what}: decompress it first")
    return Loaded(path, raw, raw)


def shown(text: str, limit: int = 40) -> str:
    """File text quoted in a one-line message: control characters as ``?``, at most ``limit``."""
    out = "".join(c if c.isprintable() else "?" for c in text.strip())
    return out if len(out) <= limit else out[: limit - 3] + "..."


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _strip_nul(loaded: Loaded, data: bytes) -> bytes:
    if b"\x00" not in data:
        return data
    first = _line_of(data, data.index(b"\x00"))
    n = data.count(b"\x00")
    loaded.warnings.append(f"{loaded.path.name}: {n} NUL byte(s) removed (first on line {first})")
    return data.replace(b"\x00", b"")


def _replace_invalid(loaded: Loaded, data: bytes, start: int) -> str:
    text = data.decode("utf-8", errors="replace")
    n = text.count("\ufffd") - data.count("\ufffd".encode())
    loaded.warnings.append(
        f"{loaded.path.name}: {n} byte sequence(s) that are not UTF-8 replaced by U+FFFD "
        f"(first on line {_line_of(data, start)})"
    )
    return text


def clean_csv(loaded: Loaded, *, strict_header: bool = True) -> bytes:
    """``loaded.data`` without BOM and NULs, as valid UTF-8 (warnings added to ``loaded``).

    With ``strict_header``, bytes that are not UTF-8 on the first line are an
    :class:`InputError` naming the file, the line and the column.
    """
    data = loaded.data
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    data = _strip_nul(loaded, data)
    if data.isascii():
        return data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = _line_of(data, exc.start)
        if strict_header and line == 1:
            raise InputError(
                str(loaded.path),
                "line 1",
                f"byte 0x{data[exc.start]:02x} at column {exc.start + 1} is not UTF-8 text; "
                "expected a CSV header row of column names",
            ) from None
        return _replace_invalid(loaded, data, exc.start).encode("utf-8")
    return data


def decode_text(loaded: Loaded) -> str:
    """``loaded.data`` as text: BOM dropped, NULs removed, bytes that are not UTF-8 replaced."""
    data = loaded.data
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    data = _strip_nul(loaded, data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _replace_invalid(loaded, data, exc.start)
