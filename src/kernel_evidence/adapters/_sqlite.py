"""Reading a profiler's SQLite database (rocpd, Nsight Systems export) safely.

The file is checked before SQLite sees it (a regular file that starts with SQLite's magic
header, within the size cap), opened read-only through a ``file:...?mode=ro`` URI so that
nothing is ever written beside it, and every SQLite error met while querying becomes one
:class:`~kernel_evidence.errors.InputError` line naming the file, the table and what was
expected, never a traceback: a truncated or damaged database, a missing table or column,
text where a number belongs.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import AdapterError, InputError

__all__ = ["MAGIC", "Database", "is_sqlite"]

#: the first 16 bytes of every SQLite 3 database file
MAGIC = b"SQLite format 3\x00"


def is_sqlite(path: str) -> bool:
    """Whether ``path`` is a regular file starting with SQLite's header (a peek of 16 bytes)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return False
        with open(path, "rb") as fh:
            return fh.read(16) == MAGIC
    except OSError:
        return False


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Database:
    """One SQLite file opened read-only; ``what`` names the format in error messages."""

    def __init__(self, path: str, *, what: str, cap: int) -> None:
        self.path = path
        self.what = what
        try:
            st = os.stat(path)
        except OSError as exc:
            raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
        if stat.S_ISDIR(st.st_mode):
            raise AdapterError(f"{path}: is a directory; expected {what}")
        if not stat.S_ISREG(st.st_mode):
            raise AdapterError(f"{path}: is not a regular file; expected {what} (an SQLite database file)")
        if st.st_size > cap:
            raise AdapterError(
                f"{path}: larger than the {cap} byte cap for one input; expected {what} "
                "(raise the cap with --opt max_bytes=N if the file is really that large)"
            )
        if not is_sqlite(path):
            raise InputError(path, None, f"not an SQLite database (no SQLite header); expected {what}")
        uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
        try:
            self.conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            names = self.conn.execute(
                "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"
            ).fetchall()
        except sqlite3.Error as exc:
            raise InputError(
                path, None, f"not a readable SQLite database ({_reason(exc)}); expected {what}"
            ) from None
        self.names: dict[str, str] = {str(n): str(t) for n, t in names}

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def has(self, name: str) -> bool:
        return name in self.names

    def suffixed(self, name: str) -> list[str]:
        """``name`` itself when the database has it, else the tables named ``name_<uuid>``
        (rocpd writes one set of tables per run, with views of the plain names over them)."""
        if name in self.names:
            return [name]
        pattern = re.compile(re.escape(name) + r"_[0-9A-Fa-f_-]+")
        return sorted(n for n in self.names if pattern.fullmatch(n))

    def columns(self, table: str) -> list[str]:
        with self.guard(table):
            rows = self.conn.execute(f"PRAGMA table_info({_quote(table)})").fetchall()
        return [str(r[1]) for r in rows]

    @contextmanager
    def guard(self, table: str) -> Iterator[None]:
        """Turn an SQLite error met while reading ``table`` into one InputError line."""
        try:
            yield
        except sqlite3.Error as exc:
            raise InputError(
                self.path, f"table {table}", f"cannot be read ({_reason(exc)}); expected {self.what}"
            ) from None

    def select(
        self, table: str, wanted: Sequence[str], *, where: str = ""
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """The ``wanted`` columns the table has (in that order) and all its rows."""
        have = set(self.columns(table))
        cols = [c for c in wanted if c in have]
        if not cols:
            return [], []
        sql = f"SELECT {', '.join(_quote(c) for c in cols)} FROM {_quote(table)}{where}"
        with self.guard(table):
            return cols, self.conn.execute(sql).fetchall()

    def fetch_columns(
        self, table: str, cols: Sequence[str], *, text: Sequence[str] = (), chunk: int = 32768
    ) -> dict[str, Any]:
        """The columns ``cols`` of ``table``: int64 arrays (:meth:`ints`), or lists for the
        ``text`` ones. Rows are fetched ``chunk`` at a time and made arrays at once, so the
        rows are never all held as Python tuples."""
        sql = f"SELECT {', '.join(_quote(c) for c in cols)} FROM {_quote(table)}"
        parts: dict[str, list[Any]] = {c: [] for c in cols}
        done = 0
        with self.guard(table):
            cursor = self.conn.execute(sql)
            while rows := cursor.fetchmany(chunk):
                for c, values in zip(cols, zip(*rows, strict=True), strict=True):
                    parts[c].append(list(values) if c in text else self.ints(table, c, values, done + 1))
                done += len(rows)
        out: dict[str, Any] = {}
        for c, got in parts.items():
            if c in text:
                out[c] = [v for part in got for v in part]
            else:
                out[c] = np.concatenate(got) if got else np.zeros(0, np.int64)
        return out

    def ints(self, table: str, col: str, values: Sequence[Any], first_row: int = 1) -> np.ndarray:
        """A column's values as int64 (NULL as -1). SQLite does not enforce column types:
        text, a fraction or a blob where an integer belongs is an error naming the table,
        the row and the column."""
        if values:
            arr = np.array(values)  # int64 exactly when every value is an integer that fits
            if arr.dtype == np.int64:
                return arr
        types = set(map(type, values))
        if not types <= {int, type(None)}:
            i, v = next((i, v) for i, v in enumerate(values) if v is not None and type(v) is not int)
            raise InputError(
                self.path,
                f"table {table}, row {first_row + i}",
                f"column `{col}` holds {type(v).__name__} {str(v)[:40]!r}; expected an integer",
            )
        try:
            return np.array([-1 if v is None else v for v in values], dtype=np.int64)
        except OverflowError:
            raise InputError(
                self.path, f"table {table}", f"column `{col}` is beyond the 64-bit integer range"
            ) from None


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__
