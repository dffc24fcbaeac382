"""Nsight Compute (ncu) adapter: CSV, text and ``.ncu-rep`` reports -> evidence packets.

One packet per report, with one :class:`~kernel_evidence.models.ProfilerCapture` holding one
:class:`~kernel_evidence.models.KernelRecord` per launch (keyed by process and launch ID,
never merged by name). Canonical metrics are derived through ``adapters/ncu.toml``; every
metric ncu reported stays verbatim in the capture's ``raw_columns`` (one value per launch)
and ``raw_units``, or, for a capture too large to keep inline when the caller gives a place
for side files (``AdapterOptions.side_dir``), in an Arrow IPC side file the capture's
``raw_table`` references (:mod:`kernel_evidence.rawtable`). Hardware comes from the device
attributes (raw page and ``.ncu-rep``; the details page only knows the compute capability).

Supported inputs (see docs/adapters/ncu.md): ``--csv`` details page, ``--csv --page raw``,
the default text page, ``--print-summary`` text, and binary ``.ncu-rep`` reports (needs the
``ncu`` extra: ``pip install 'kernel-evidence[ncu]'``).
"""

from __future__ import annotations

import codecs
import hashlib
import math
import os
import re
import stat
import statistics
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..._codec.ids import finish_packet
from ..._gc import PROMOTE_CELLS, paused_gc, promote_survivors, raw_cell_count
from ..._resources import load_toml
from ...errors import AdapterError, InputError, KernelEvidenceError, LimitExceeded, MissingExtra
from ...models import (
    Artifact,
    ByteSize,
    Clocks,
    EvidencePacket,
    Frequency,
    Hardware,
    KernelRecord,
    ProfilerCapture,
    Quantity,
    RawMetric,
    Stats,
    Timing,
)
from ...units import UnitError, convert, dimension_of
from .. import AdapterOptions, AdapterResult, AdapterWarning
from .._envelope import start_packet
from .._objects import Records
from .._read import DEFAULT_MAX_BYTES, is_junk_entry, max_bytes_option, read_capped
from ._common import Column, Report, Value, column_values, parse_count, split_by_unit
from ._csv import read_text
from ._rep import REP_MAGIC, read_rep

__all__ = ["ADAPTER", "NcuAdapter", "canonical_metrics"]

_TEXT_SUFFIXES = (".csv", ".txt", ".log", ".out")


# ---------------------------------------------------------------------------- mapping table


@dataclass(frozen=True)
class _Source:
    metrics: tuple[str, ...]
    combine: str | None
    weights: tuple[float, ...] | None
    unit: str | None


@dataclass(frozen=True)
class _Canonical:
    name: str
    unit: str
    sources: tuple[_Source, ...]


@dataclass(frozen=True)
class _Table:
    metrics: tuple[_Canonical, ...]
    units: dict[str, tuple[str, float]]


@lru_cache(maxsize=1)
def _table() -> _Table:
    table = load_toml("ncu.toml")
    canon = load_toml("canonical_metrics.toml")["metrics"]
    metrics = []
    for name, spec in table.get("metrics", {}).items():
        if name not in canon:
            raise AdapterError(f"adapters/ncu.toml: metric `{name}` is not in canonical_metrics.toml")
        sources = []
        for src in spec.get("sources", []):
            m = src["metric"]
            names = (m,) if isinstance(m, str) else tuple(m)
            w = src.get("weights")
            if w is not None and len(w) != len(names):
                raise AdapterError(
                    f"adapters/ncu.toml: `{name}` has {len(names)} source metrics but {len(w)} weights"
                )
            combine = src.get("combine")
            if combine not in (None, "sum", "product", "ratio_pct") or (combine is None and len(names) != 1):
                raise AdapterError(
                    f"adapters/ncu.toml: `{name}`: several metrics need combine = sum|product|ratio_pct"
                )
            sources.append(
                _Source(
                    names,
                    src.get("combine"),
                    tuple(float(x) for x in w) if w else None,
                    src.get("unit"),
                )
            )
        metrics.append(_Canonical(name, canon[name]["unit"], tuple(sources)))
    units = {k: (v[0], float(v[1])) for k, v in table.get("units", {}).items()}
    return _Table(tuple(metrics), units)


def canonical_metrics(raw: Mapping[str, RawMetric], warnings: set[str] | None = None) -> dict[str, Quantity]:
    """Canonical metrics of one launch from its raw ncu metrics, through ``adapters/ncu.toml``.

    >>> from kernel_evidence.models import RawMetric
    >>> canonical_metrics({"gpu__time_duration.sum": RawMetric(value=5.15, unit="usecond")})["duration"]
    Quantity(value=5150.0, unit='ns')
    """
    columns = {k: [m.value] for k, m in raw.items()}
    units = {k: m.unit for k, m in raw.items()}
    return {
        name: Quantity(value=values[0], unit=unit)
        for name, (values, unit) in canonical_columns(columns, units, 1, warnings).items()
        if values[0] is not None
    }


_NOT_FOUND = "unit `{spelled}` of `{metric}` is not in adapters/ncu.toml [units]; left raw only"
_NOT_CONVERTIBLE = "`{metric}` is in `{spelled}`, which cannot be expressed in `{target}`; left raw only"


def _ratio(
    spelled: str | None, target: str, src: _Source, units: dict[str, tuple[str, float]]
) -> tuple[float, float] | str:
    """(factor, ratio): value in ``target`` = (value * factor) * ratio; or why there is none."""
    if src.unit is not None:
        unit, factor = src.unit, 1.0
    else:
        hit = units.get(spelled or "")
        if hit is None:
            return _NOT_FOUND
        unit, factor = hit
    try:
        return factor, convert(1.0, unit, target)
    except UnitError:
        return _NOT_CONVERTIBLE


def _scaled(
    metric: str,
    values: list[Value],
    unit: Any,
    target: str,
    src: _Source,
    units: dict[str, tuple[str, float]],
    needed: list[bool],
    pending: dict[str, Any] | None,
) -> list[float | None]:
    """One source column in ``target`` (None where the launch has no number for it).

    A unit that does not convert adds its warning to ``pending``, with the launches that
    needed the value (see :func:`canonical_columns`)."""

    def warn(why: str, spelled: str | None, launches: list[int]) -> None:
        if pending is not None:
            text = why.format(spelled=spelled or "", metric=metric, target=target)
            pending.setdefault(text, []).extend(launches)

    if not isinstance(unit, list):  # the whole column shares one unit: one ratio
        r = _ratio(unit, target, src, units)
        if isinstance(r, str):
            hit = [
                i for i, (n, v) in enumerate(zip(needed, values, strict=True)) if n and isinstance(v, float)
            ]
            if hit:
                warn(r, unit, hit)
            return [None] * len(values)
        factor, ratio = r
        if factor == 1.0:
            return [v * ratio if type(v) is float else None for v in values]
        return [(v * factor) * ratio if type(v) is float else None for v in values]
    out: list[float | None] = []
    known: dict[str | None, tuple[float, float] | str] = {}
    for i, (v, u, n) in enumerate(zip(values, unit, needed, strict=True)):
        if type(v) is not float:
            out.append(None)
            continue
        if u in known:
            r = known[u]
        else:
            r = known[u] = _ratio(u, target, src, units)
        if isinstance(r, str):
            if n:
                warn(r, u, [i])
            out.append(None)
        else:
            out.append((v * r[0]) * r[1])
    return out


def _source_column(
    src: _Source,
    canon: _Canonical,
    columns: Mapping[str, list[Value]],
    col_units: Mapping[str, Any],
    units: dict[str, tuple[str, float]],
    needed: list[bool],
    pending: dict[str, Any] | None,
) -> list[float | None] | None:
    """The canonical metric from one mapping-table source, per launch; None when a source
    metric is absent from the report."""
    cols = [columns.get(m) for m in src.metrics]
    if any(c is None for c in cols):
        return None
    n = len(needed)
    if src.combine == "ratio_pct":
        a, b = cols[0], cols[1]
        ua, ub = col_units.get(src.metrics[0]), col_units.get(src.metrics[1])
        ua = ua if isinstance(ua, list) else [ua] * n
        ub = ub if isinstance(ub, list) else [ub] * n
        # a ratio of two different things is not a rate
        return [
            100.0 * x / y
            if type(x) is float and type(y) is float and y != 0 and (p or "") == (q or "")
            else None
            for x, y, p, q in zip(a, b, ua, ub, strict=True)  # type: ignore[arg-type]
        ]
    target = "count" if src.combine == "product" else canon.unit
    scaled = []
    for m, c in zip(src.metrics, cols, strict=True):
        scaled.append(_scaled(m, c, col_units.get(m), target, src, units, needed, pending))  # type: ignore[arg-type]
    if src.combine is None:
        return scaled[0]
    if src.combine == "sum":
        weights = src.weights or (1.0,) * len(scaled)
        out: list[float | None] = []
        for row in zip(*scaled, strict=True):
            if None in row:
                out.append(None)
            else:
                total = 0.0
                for w, v in zip(weights, row, strict=True):
                    total += w * v
                out.append(total)
        return out
    if src.combine == "product":
        out = []
        for row in zip(*scaled, strict=True):
            if None in row:
                out.append(None)
            else:
                value = 1.0
                for v in row:
                    value *= v
                out.append(value)
        return out
    raise AdapterError(f"adapters/ncu.toml: unknown combine `{src.combine}` for `{canon.name}`")


def canonical_columns(
    columns: Mapping[str, list[Value]],
    col_units: Mapping[str, Any],
    n: int,
    warnings: set[str] | None = None,
    arrays: Mapping[str, Column] | None = None,
) -> dict[str, tuple[list[float | None] | Any, str]]:
    """Canonical metric -> (one value per launch, its unit) from raw columns.

    ``col_units`` gives each column's unit as ncu spelled it: one string (or None) for the
    column, or a list with one per launch. Per launch, the first source of the mapping table
    that yields a value wins. A source in a unit that does not convert adds a warning to
    ``warnings`` when a launch that needed its value has none in the end.

    ``arrays``: the raw columns as the reader kept them (see :data:`._common.Column`).
    A canonical metric whose sources are all float64 Arrow columns with one unit each is
    computed by Arrow's kernels, column at a time, and given as a float64 Arrow array (the
    same IEEE operations in the same order as the list code, so the same values, bit for
    bit); the others from ``columns``, as lists.
    """
    table = _table()
    out: dict[str, tuple[list[float | None] | Any, str]] = {}
    for canon in table.metrics:
        if arrays is not None and n and _arrow_sources(canon, arrays, col_units):
            values = _canonical_array(canon, arrays, col_units, table.units, n, warnings)
            if values is not None:
                out[canon.name] = (values, canon.unit)
            continue
        result: list[float | None] = [None] * n
        needed = [True] * n
        nonneg = dimension_of(canon.unit) != "ratio"
        pending: dict[str, list[int]] | None = {} if warnings is not None else None
        for src in canon.sources:
            found = _source_column(src, canon, columns, col_units, table.units, needed, pending)
            if found is None:
                continue
            for i, v in enumerate(found):
                if v is None or not needed[i] or not math.isfinite(v) or (nonneg and v < 0):
                    continue
                result[i] = v
                needed[i] = False
            if True not in needed:
                break
        if warnings is not None and pending:
            warnings.update(text for text, at in pending.items() if any(result[i] is None for i in at))
        if result.count(None) != n:
            out[canon.name] = (result, canon.unit)
    return out


def _float_array(col: Column | None) -> Any:
    """``col`` as one float64 Arrow array, or None if it is not a float64 Arrow column."""
    if col is None or isinstance(col, list):
        return None
    import pyarrow as pa

    array: Any = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return array if pa.types.is_float64(array.type) else None


def _arrow_sources(canon: _Canonical, arrays: Mapping[str, Column], col_units: Mapping[str, Any]) -> bool:
    """Whether every source of ``canon`` present in the report is float64 Arrow columns,
    each with one unit (then :func:`_canonical_array` computes it)."""
    for src in canon.sources:
        cols = [arrays.get(m) for m in src.metrics]
        if any(c is None for c in cols):
            continue  # absent: skipped either way
        if any(_float_array(c) is None for c in cols) or any(
            isinstance(col_units.get(m), list) for m in src.metrics
        ):
            return False
    return True


def _canonical_array(
    canon: _Canonical,
    arrays: Mapping[str, Column],
    col_units: Mapping[str, Any],
    units: dict[str, tuple[str, float]],
    n: int,
    warnings: set[str] | None,
) -> Any:
    """:func:`canonical_columns`' loop for one metric, on Arrow arrays (see there): the
    float64 array of its values, or None when no launch has one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    result = pa.nulls(n, pa.float64())
    needed = None  # all True
    nonneg = dimension_of(canon.unit) != "ratio"
    pending: dict[str, Any] | None = {} if warnings is not None else None
    for src in canon.sources:
        cols = [_float_array(arrays.get(m)) for m in src.metrics]
        if any(c is None for c in cols):
            continue
        values = _source_array(src, canon, cols, col_units, units, needed, pending)
        ok = pc.is_finite(values)  # null where the value is null
        if nonneg:
            ok = pc.and_(ok, pc.invert(pc.less(values, 0.0)))
        take = pc.fill_null(ok, False)
        if needed is not None:
            take = pc.and_(take, needed)
        result = pc.if_else(take, values, result)
        needed = pc.is_null(result)
        if not pc.any(needed).as_py():
            break
    missing = pc.is_null(result)
    if warnings is not None and pending:
        warnings.update(text for text, at in pending.items() if pc.any(pc.and_(at, missing)).as_py())
    return None if result.null_count == n else result


def _source_array(
    src: _Source,
    canon: _Canonical,
    cols: list[Any],
    col_units: Mapping[str, Any],
    units: dict[str, tuple[str, float]],
    needed: Any,
    pending: dict[str, Any] | None,
) -> Any:
    """:func:`_source_column` on float64 Arrow arrays, each with one unit (``pending``: a
    warning -> the mask of launches it concerns)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(cols[0])
    if src.combine == "ratio_pct":
        ua, ub = col_units.get(src.metrics[0]), col_units.get(src.metrics[1])
        a, b = cols
        if (ua or "") != (ub or ""):  # a ratio of two different things is not a rate
            return pa.nulls(n, pa.float64())
        # over 0 it is +-inf or NaN, which the caller drops as the list code's None
        return pc.divide(pc.multiply(pa.scalar(100.0), a), b)
    target = "count" if src.combine == "product" else canon.unit
    scaled = []
    for m, col in zip(src.metrics, cols, strict=True):
        unit = col_units.get(m)
        r = _ratio(unit, target, src, units)
        if isinstance(r, str):
            if pending is not None:
                present = pc.is_valid(col) if needed is None else pc.and_(needed, pc.is_valid(col))
                if pc.any(present).as_py():
                    text = r.format(spelled=unit or "", metric=m, target=target)
                    pending[text] = pc.or_(pending[text], present) if text in pending else present
            scaled.append(pa.nulls(n, pa.float64()))
            continue
        factor, ratio = r
        if factor != 1.0:
            col = pc.multiply(col, factor)
        scaled.append(pc.multiply(col, ratio))
    if src.combine is None:
        return scaled[0]
    if src.combine == "sum":
        weights = src.weights or (1.0,) * len(scaled)
        total = pa.scalar(0.0)
        for w, v in zip(weights, scaled, strict=True):
            total = pc.add(total, pc.multiply(pa.scalar(w), v))
        return total
    if src.combine == "product":
        value = pa.scalar(1.0)
        for v in scaled:
            value = pc.multiply(value, v)
        return value
    raise AdapterError(f"adapters/ncu.toml: unknown combine `{src.combine}` for `{canon.name}`")


# --------------------------------------------------------------------------------- reading


def _expand(inputs: Sequence[str]) -> list[tuple[str, bool]]:
    """(path, found in a directory) for every input; ``-`` is stdin."""
    out: list[tuple[str, bool]] = []
    for item in inputs:
        if not item:  # Path("") is the working directory: never read it by accident
            raise InputError("''", None, "empty path; expected a file, a directory or - for stdin")
        p = Path(item)
        if p.is_dir():
            found = sorted(
                str(f)
                for f in p.rglob("*")
                if f.is_file()
                and (f.suffix == ".ncu-rep" or f.suffix.lower() in _TEXT_SUFFIXES)
                and not is_junk_entry(f, p)
            )
            if not found:
                raise InputError(item, None, "directory holds no .csv, .txt, .log or .ncu-rep files")
            out.extend((f, True) for f in found)
        else:
            out.append((item, False))
    return out


_WHAT = "ncu --csv output, a text page or an .ncu-rep report"


def _read_stdin(cap: int) -> bytes:
    """Standard input, at most ``cap`` bytes (read in chunks: nothing is allocated up front)."""
    parts: list[bytes] = []
    total = 0
    while True:
        chunk = sys.stdin.buffer.read(min(8 << 20, cap + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
        if total > cap:
            raise LimitExceeded(
                "<stdin>",
                None,
                f"larger than the {cap} bytes cap for one input; expected {_WHAT} "
                "(raise the cap with --opt max_bytes=N)",
            )
    return b"".join(parts)


def read_reports(
    path: str,
    on_bytes: Callable[[bytes], object] | None = None,
    cap: int = DEFAULT_MAX_BYTES,
    *,
    arrow: bool = False,
) -> tuple[list[Report], bytes | None]:
    """Every report in one file (several when one log holds several CSV tables).

    ``on_bytes`` is called with a text export's bytes before they are parsed (the adapter
    hashes them meanwhile, in another thread). No input is read past ``cap`` bytes: a larger
    regular file is refused before it is read, a device or pipe once it passes the cap.
    ``arrow``: the raw columns may go to a side file, so a raw page keeps its number columns
    as the Arrow arrays pyarrow parsed (see :data:`._common.Column`).
    """
    if path == "-":
        data = _read_stdin(cap)
        if data[:4] == REP_MAGIC:
            raise InputError("<stdin>", None, "an .ncu-rep report cannot be read from stdin; give its path")
        if on_bytes is not None:
            on_bytes(data)
        return _read_text_data("<stdin>", data, arrow), data
    try:
        st = os.stat(path)
        regular = stat.S_ISREG(st.st_mode)
        head = b""
        if regular:
            with open(path, "rb") as fh:
                head = fh.read(4)
    except FileNotFoundError:
        raise InputError(path, None, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, None, "is a directory") from None
    except PermissionError:
        raise InputError(path, None, "permission denied") from None
    except OSError as exc:
        raise InputError(path, None, f"could not be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(path, None, "is a directory")
    if regular and (head == REP_MAGIC or path.endswith(".ncu-rep")):
        if head != REP_MAGIC:
            raise InputError(
                path,
                None,
                f"not an Nsight Compute report (expected the bytes NVR\\0 at offset 0, got {head!r})",
            )
        if st.st_size > cap:
            raise AdapterError(
                f"{path}: larger than the {cap} bytes cap for one input; expected an .ncu-rep report "
                "(raise the cap with --opt max_bytes=N if the file is really that large)"
            )
        return [read_rep(path)], None
    if not regular and path.endswith(".ncu-rep"):
        raise InputError(
            path, None, "not a regular file (a device or a pipe); expected an .ncu-rep report file"
        )
    # a text export, or not a regular file (a device, a pipe): read once, under the cap
    data = read_capped(path, cap, what=_WHAT)
    if not regular and data[:4] == REP_MAGIC:
        raise InputError(
            path, None, "not a regular file (a device or a pipe); an .ncu-rep report must be a file"
        )
    if on_bytes is not None:
        on_bytes(data)
    return _read_text_data(path, data, arrow), data


def _read_text_data(path: str, data: bytes, arrow: bool = False) -> list[Report]:
    if data.isspace() or not data:  # isspace stops at the first other byte
        raise InputError(
            path, None, "empty file; expected ncu --csv output, a text page or an .ncu-rep report"
        )
    nul = data.find(b"\x00", 0, 4096)
    if nul >= 0:
        head = data[:4096]
        utf16 = _utf16_encoding(head)
        if utf16 is not None:
            reports = read_text(path, _from_utf16(path, data, utf16), arrow=arrow)
            for r in reports:
                r.warnings.append(
                    f"the file is {utf16.upper()} text (as PowerShell's `>` writes it), not UTF-8; "
                    "it was decoded (line numbers are unchanged)"
                )
            return reports
        if _text_with_nul(head):
            line = data.count(b"\n", 0, nul) + 1
            raise InputError(
                path,
                f"line {line}",
                f"text with NUL bytes (the first at byte {nul}), not a binary report: the file is damaged; "
                f"expected {_WHAT}",
            )
        raise InputError(path, None, "binary file that is not an .ncu-rep report (no NVR\\0 header)")
    return read_text(path, data, arrow=arrow)


def _utf16_encoding(head: bytes) -> str | None:
    """``utf-16-le``/``utf-16-be`` when the file starts as UTF-16 text: a byte order mark
    (PowerShell 5's ``>`` and ``Out-File`` write UTF-16LE with one), or ASCII text with every
    other byte NUL; else None."""
    if head[:2] == b"\xff\xfe":
        return "utf-16-le"
    if head[:2] == b"\xfe\xff":
        return "utf-16-be"
    even = head[: len(head) & ~1]
    if len(even) < 8:
        return None
    lo, hi = even[0::2], even[1::2]
    if not hi.strip(b"\x00") and b"\x00" not in lo and lo.isascii():
        return "utf-16-le"
    if not lo.strip(b"\x00") and b"\x00" not in hi and hi.isascii():
        return "utf-16-be"
    return None


def _from_utf16(path: str, data: bytes, encoding: str) -> bytes:
    """UTF-16 text -> UTF-8 bytes (without the byte order mark); bytes that do not decode
    (an odd-length, cut-off file) are an error naming the offset."""
    body = data[2:] if data[:2] in (b"\xff\xfe", b"\xfe\xff") else data
    if len(body) % 2:
        body = body[:-1]  # a file cut inside its last character: the reader says it is cut
    try:
        return body.decode(encoding).encode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            path,
            f"byte {exc.start + (len(data) - len(body))}",
            f"UTF-16 text that does not decode ({exc.reason}); expected {_WHAT}",
        ) from None


def _text_with_nul(head: bytes) -> bool:
    """Whether the first bytes of a file are text apart from a few NUL bytes (a damaged
    export), not binary data (compressed, random): UTF-8 without other control characters."""
    if head.count(b"\x00") * 8 > len(head):
        return False
    text = codecs.getincrementaldecoder("utf-8")(errors="strict")
    try:
        chars = text.decode(head.replace(b"\x00", b""))  # a character cut at the end is not an error
    except UnicodeDecodeError:
        return False
    controls = sum(1 for c in chars if c < " " and c not in "\t\n\r\f\v\x1b")
    return controls == 0


# ---------------------------------------------------------------------------- building packets


@dataclass
class _RawTable:
    """The raw metrics of one report as columns (one value per launch) and their units.

    A column may be an Arrow array (a raw page read for a side file): :meth:`get` gives it
    as a list, made once and only for the columns records and hardware read."""

    columns: dict[str, Column]
    units: dict[str, Any]  # str | None for the column, or a list: one unit per launch
    lists: dict[str, list[Value]] = field(default_factory=dict)  # Arrow columns made lists

    def get(self, key: str) -> list[Value] | None:
        col = self.columns.get(key)
        if col is None or isinstance(col, list):
            return col
        values = self.lists.get(key)
        if values is None:
            values = self.lists[key] = column_values(col)
        return values

    def first(self, key: str) -> Value:
        """The first launch's value (None for an empty column)."""
        col = self.columns.get(key)
        if col is None or len(col) == 0:
            return None
        if isinstance(col, list):
            return col[0]
        v: Value = col[0].as_py()
        return v

    def drop(self, key: str) -> None:
        del self.columns[key]
        self.lists.pop(key, None)
        self.units.pop(key, None)

    def num(self, key: str, i: int) -> float | None:
        col = self.get(key)
        v = col[i] if col is not None else None
        return v if type(v) is float else None


class _Lists(Mapping[str, list[Value]]):
    """The columns of a :class:`_RawTable` as lists, each made when first asked for."""

    def __init__(self, raw: _RawTable) -> None:
        self._raw = raw

    def __getitem__(self, key: str) -> list[Value]:
        values = self._raw.get(key)
        if values is None:
            raise KeyError(key)
        return values

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw.columns)

    def __len__(self) -> int:
        return len(self._raw.columns)


def _device_attr(attributes: dict[str, Any], raw: _RawTable, key: str) -> float | str | None:
    """A device attribute (the first launch's, when it is not the same in every launch)."""
    if key in attributes:
        v: float | str | None = attributes[key]
        return v
    return raw.first(key)


def _arch(cc: str | None, major: Any, minor: Any) -> str | None:
    if isinstance(major, float) and isinstance(minor, float):
        return f"sm_{int(major)}{int(minor)}"
    if cc and "." in cc:
        a, _, b = cc.strip().partition(".")
        major_n, minor_n = parse_count(a), parse_count(b)
        if major_n is not None and minor_n is not None:
            return f"sm_{major_n}{minor_n}"
    return None


def _median_frequency(
    raw: _RawTable, n: int, keys: Sequence[str], units: dict[str, tuple[str, float]]
) -> Frequency | None:
    """Median over launches of the first of ``keys`` each launch has a number for, in MHz."""
    per_key = []
    for key in keys:
        col = raw.get(key)
        if col is None:
            continue
        unit = raw.units.get(key)
        per_key.append((col, unit if isinstance(unit, list) else [unit] * n))
    if not per_key:
        return None
    values = []
    for i in range(n):
        for col, unit in per_key:
            v = col[i]
            if type(v) is not float:
                continue
            hit = units.get(unit[i] or "")
            if hit is None:
                continue
            try:
                values.append(convert(v * hit[1], hit[0], "MHz"))
            except UnitError:
                continue
            break
    if not values:
        return None
    return Frequency(value=round(statistics.median(values), 3), unit="MHz")


#: the start of the warning about an export that names no device (the packet then lacks
#: what :data:`_DEVICE_FIELDS` names)
_NO_DEVICE = "device name not in this export"
_DEVICE_FIELDS = {"hardware.vendor": "nvidia", "hardware.device": "<GPU model>"}
#: ``hardware.device`` of an export that gives the compute capability but no device name
UNKNOWN_DEVICE = "unknown"
#: the observed SM clock: ``sm__`` in most reports, ``gpc__`` (the SMs' clock domain) where
#: the report has no ``sm__cycles_elapsed`` rate (seen in a 2024 GH200 .ncu-rep)
_SM_CLOCK = (
    "sm__cycles_elapsed.avg.per_second",
    "smsp__cycles_elapsed.avg.per_second",
    "gpc__cycles_elapsed.avg.per_second",
    "SM Frequency",
)


def _hardware(
    report: Report, raw: _RawTable, attributes: dict[str, Any], warnings: list[str]
) -> Hardware | None:
    first = report.launches[0]
    name = _device_attr(attributes, raw, "device__attribute_display_name")
    name = name.strip() if isinstance(name, str) else None
    arch = _arch(
        first.cc,
        _device_attr(attributes, raw, "device__attribute_compute_capability_major"),
        _device_attr(attributes, raw, "device__attribute_compute_capability_minor"),
    )
    sms = _device_attr(attributes, raw, "device__attribute_multiprocessor_count")
    if not isinstance(sms, float):
        sms = raw.num("launch__sm_count", 0)
    if not isinstance(sms, float):
        sms = raw.num("# SMs", 0)  # the details page's Launch Statistics label
    if not name:
        if arch is None:
            warnings.append(f"{_NO_DEVICE} ({report.page} page); hardware left empty")
            return None
        # the compute capability (and SM count) say what the device is like, not which it is
        count = f", {int(sms)} SMs" if isinstance(sms, float) and sms >= 1 else ""
        warnings.append(
            f"{_NO_DEVICE} ({report.page} page; compute capability {arch}{count}); "
            f"hardware.device is `{UNKNOWN_DEVICE}`"
        )
        name = UNKNOWN_DEVICE
    memory = _device_attr(attributes, raw, "device__attribute_total_memory")
    memory = memory if isinstance(memory, float) and memory > 0 else None
    n = len(report.launches)
    devices: set[Any] = {la.device for la in report.launches if la.device is not None}
    if not devices:
        index = attributes.get("device__attribute_device_index")
        devices = (
            {index}
            if isinstance(index, float)
            else {raw.num("device__attribute_device_index", i) for i in range(n)} - {None}
        )
    units = _table().units
    sm_clock = _median_frequency(raw, n, _SM_CLOCK, units)
    mem_clock = _median_frequency(raw, n, ("dram__cycles_elapsed.avg.per_second", "DRAM Frequency"), units)
    clocks = Clocks(sm_observed=sm_clock, memory_observed=mem_clock) if sm_clock or mem_clock else None
    return Hardware(
        vendor="nvidia",
        device=name,
        arch=arch,
        count=len(devices) if devices else None,
        compute_units=int(sms) if sms and sms >= 1 else None,
        memory=ByteSize(value=memory, unit="B") if memory else None,
        clocks=clocks,
    )


def _hoist_device_attributes(raw: _RawTable, n: int) -> dict[str, Any]:
    """Device attributes without a unit that are identical in every launch move out of the
    raw columns into the capture's attributes (kept once, verbatim, instead of once per
    launch); the others stay columns."""
    hoisted: dict[str, Any] = {}
    for key in [k for k in raw.columns if k.startswith("device__attribute_")]:
        col = raw.columns[key]
        first = raw.first(key)
        if first is None or raw.units.get(key) is not None:
            continue
        if isinstance(col, list):
            same = col.count(first) == n  # values are float, str or None: equal means same type
        else:  # a float64 Arrow column: no null, every value == the first (as floats compare)
            import pyarrow.compute as pc

            # (compared with the Arrow scalar: a Python float is converted anew on every call)
            same = len(col) == n and col.null_count == 0 and pc.all(pc.equal(col, col[0])).as_py() is True
        if same:
            hoisted[key] = first
            raw.drop(key)
    return hoisted


def _attributes(report: Report, raw: _RawTable, hoisted: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {"page": report.page, "launches": len(report.launches)}
    if report.reader:
        attrs["reader"] = report.reader
    first = report.launches[0]
    if first.cc:
        attrs["compute_capability"] = first.cc
    # attributes that differ between launches: the first launch's device
    for key in raw.columns:
        if key.startswith("device__attribute_"):
            value = raw.first(key)
            if value is not None:
                attrs[key] = value
    attrs.update(hoisted)
    # the model's attribute values are text or numbers; an attribute the report left empty is omitted
    return {k: v for k, v in attrs.items() if v is not None}


def _digest(path: str, data: bytes | None, cap: int = DEFAULT_MAX_BYTES) -> tuple[str, int]:
    """(``sha256:<hex>``, size) of the bytes read, or of the file when they were not kept
    (an ``.ncu-rep``: hashed in chunks, never past ``cap`` bytes)."""
    h = hashlib.sha256()
    size = 0
    if data is not None:
        h.update(data)
        size = len(data)
    else:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
                size += len(chunk)
                if size > cap:  # the file grew after it was checked
                    raise AdapterError(
                        f"{path}: grew past the {cap} bytes cap for one input while it was read"
                    )
    return f"sha256:{h.hexdigest()}", size


def _artifact(path: str, digest: tuple[str, int]) -> Artifact:
    media = (
        "application/octet-stream"
        if path.endswith(".ncu-rep")
        else ("text/csv" if path.lower().endswith(".csv") else "text/plain")
    )
    stdin = path == "<stdin>"
    return Artifact(
        kind="profile",
        name=path if stdin else os.path.basename(path),
        sha256=digest[0],
        size=ByteSize(value=float(digest[1]), unit="B"),
        media_type=media,
        path=None if stdin else path,
    )


def _dims(raw: _RawTable, i: int, kind: str) -> list[int] | None:
    vals = [raw.num(f"launch__{kind}_dim_{c}", i) for c in "xyz"]
    if any(v is None or v < 0 for v in vals):
        return None
    return [int(v) for v in vals]  # type: ignore[arg-type]


@lru_cache(maxsize=1)
def _feeds() -> dict[str, tuple[str, ...]]:
    """Source metric of the mapping table -> the canonical metrics it gives."""
    out: dict[str, list[str]] = {}
    for canon in _table().metrics:
        for src in canon.sources:
            for m in src.metrics:
                names = out.setdefault(m, [])
                if canon.name not in names:
                    names.append(canon.name)
    return {k: tuple(v) for k, v in out.items()}


def _short(value: str, limit: int = 40) -> str:
    return value if len(value) <= limit else value[: limit - 3] + "..."


def _not_numbers(
    report: Report,
    raw: _RawTable,
    canonical: dict[str, tuple[list[float | None] | Any, str]],
    out: list[str],
) -> None:
    """A warning per mapped metric that holds text (``abc``, ``nan``, ``-inf``, ``1e999``...)
    in some launch instead of a finite number: the text stays in ``raw_columns``, the
    canonical metric is missing for that launch, and the warning names metric, launch and
    value (and says so when it costs the launch its duration, which the timing stats need)."""
    launches = report.launches
    several = len({la.pid for la in launches}) > 1

    def who(i: int) -> str:
        la = launches[i]
        return f"ID {la.id}" + (f" (process {la.pid})" if several and la.pid else "")

    for metric, gives in _feeds().items():
        col = raw.columns.get(metric)
        # an Arrow column holds finite floats only
        if col is None or not isinstance(col, list) or str not in set(map(type, col)):
            continue
        bad = [i for i, v in enumerate(col) if type(v) is str]
        if len(bad) == 1:
            text = f"`{metric}` of launch {who(bad[0])} is `{_short(str(col[bad[0]]))}`, not a finite number"
        else:
            shown = ", ".join(f"{who(i)}: `{_short(str(col[i]))}`" for i in bad[:3])
            more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
            text = f"`{metric}` is not a finite number in {len(bad)} launches ({shown}{more})"
        text += ": kept as text in raw_columns only"
        for name in gives:
            values = canonical.get(name, ([None] * len(launches), ""))[0]
            if not isinstance(values, list):  # an Arrow array
                values = values.to_pylist()
            lost = [i for i in bad if values[i] is None]
            if not lost:
                continue
            if name == "duration" and len(lost) == 1:
                text += f"; the duration of launch {who(lost[0])} could not be read, so the timing stats leave it out"
            elif name == "duration":
                text += f"; the duration of {len(lost)} launches could not be read, so the timing stats leave them out"
            else:
                text += f"; `{name}` missing for {len(lost)} launch(es)"
        out.append(text)


_I64 = 2**63 - 1


def _plain_ints(values: object, low: int) -> bool:
    return type(values) is list and all(type(v) is int and low <= v <= _I64 for v in values)


def _buildable(fields: dict[str, Any]) -> bool:
    """Whether a record's identity fields have exactly the types and ranges the model
    requires (text from the readers, integers parsed by them): then the record is built
    without validation; otherwise pydantic validates it (and refuses what does not fit)."""
    for key, value in fields.items():
        if key in ("grid", "block"):
            if not _plain_ints(value, 0):
                return False
        elif key == "device":
            if type(value) is not int or not -_I64 - 1 <= value <= _I64:
                return False
        elif key == "invocations":
            if type(value) is not int or not 0 <= value <= _I64:
                return False
        elif type(value) is not str or (key == "name" and not value):
            return False
    return True


def _records(
    report: Report,
    raw: _RawTable,
    warnings: set[str],
    value_warnings: list[str] | None = None,
    encode: bool = True,
) -> tuple[list[KernelRecord], bytes | None]:
    """(One KernelRecord per launch, the records' canonical JSON if ``encode``, else None).

    The canonical metrics are finite numbers in their canonical unit (see
    :func:`canonical_columns`); records whose identity fields the readers made the model's
    types are built without validation (20,000 launches x 15 metrics: 0.3 s less), the others
    validated. See :class:`._objects.Records` for the quantities and the JSON."""
    n = len(report.launches)
    columns = canonical_columns(_Lists(raw), raw.units, n, warnings, raw.columns)
    if value_warnings is not None:
        _not_numbers(report, raw, columns, value_warnings)
    invocations = raw.get("invocations")
    out = Records([(name, values, unit) for name, (values, unit) in columns.items()], n, encode)
    for i, la in enumerate(report.launches):
        # fields in the model's order, each only when the launch has it
        fields: dict[str, Any] = {"name": la.name or "<unnamed>"}
        if la.raw_name is not None:
            fields["raw_name"] = la.raw_name
        if la.id is not None:
            fields["id"] = la.id
        pid, pname = la.pid, la.process_name
        process = pid if not pname else (f"{pid} {pname}" if pid else pname)
        if process is not None:
            fields["process"] = process
        if la.stream is not None:
            fields["stream"] = la.stream
        if la.device is not None:
            fields["device"] = la.device
        grid = la.grid or _dims(raw, i, "grid")
        if grid is not None:
            fields["grid"] = grid
        block = la.block or _dims(raw, i, "block")
        if block is not None:
            fields["block"] = block
        if invocations is not None:
            inv = invocations[i]
            if type(inv) is float:
                fields["invocations"] = int(inv)
        if _buildable(fields):
            out.add(fields, i)
        else:
            metrics = out.metrics_of(i)
            out.add_validated(
                KernelRecord.model_validate({**fields, **({"metrics": metrics} if metrics else {})})
            )
    return out.result()


def _timing(records: list[KernelRecord]) -> Timing:
    names = {r.name for r in records}
    durations = [r.metrics["duration"].value for r in records if r.metrics and "duration" in r.metrics]
    per_launch = all(r.invocations is None for r in records)  # a summary page holds averages
    if len(names) == 1 and durations and per_launch:
        return Timing(
            method="profiler",
            stats=Stats(
                unit="ns",
                median=statistics.median(durations),
                mean=statistics.fmean(durations),
                min=min(durations),
                max=max(durations),
                n=len(durations),
                std=statistics.stdev(durations) if len(durations) > 1 else None,
            ),
            notes="per-launch gpu__time_duration under the profiler (ncu serialises launches and may lock clocks)",
        )
    return Timing(
        method="profiler",
        notes="per-launch durations of several kernels are in profiler[0].kernels[*].metrics.duration",
    )


_UNSAFE_STEM = re.compile(r"[^A-Za-z0-9._-]+")


def _stem(path: str, index: int, count: int) -> str:
    """The side file's name stem: the input's file name (``run.csv`` gives
    ``run.csv.raw-<sha256 prefix>.arrow``), ``-N`` added for the N-th table of a file that
    holds several; characters other than letters, digits, ``.``, ``_`` and ``-`` become ``_``."""
    stem = _UNSAFE_STEM.sub("_", os.path.basename(path)).strip("._") or "ncu"
    return stem + (f"-{index + 1}" if count > 1 else "")


def _side_columns(raw_columns: Mapping[str, Column], n: int) -> dict[str, Any]:
    """The raw columns as :func:`~kernel_evidence.rawtable.write_raw_table` takes them:
    lists and Arrow columns as they are (an all-null one as float64 nulls, as the list it
    stands for is written)."""
    import pyarrow as pa

    out: dict[str, Any] = {}
    for key, col in raw_columns.items():
        if not isinstance(col, list) and col.null_count == len(col):
            out[key] = pa.nulls(n, pa.float64())
        else:
            out[key] = col
    return out


def _write_side(
    options: AdapterOptions, raw_columns: Mapping[str, Column], units: Mapping[str, str], n: int, stem: str
) -> Artifact | None:
    """The capture's side file (see :meth:`AdapterOptions.raw_table`), or None: inline."""
    return options.raw_table(_side_columns(raw_columns, n), units, n, stem)


def _inline_columns(raw: _RawTable, raw_columns: dict[str, Column]) -> dict[str, list[Value]]:
    """The raw columns as the packet keeps them inline: every Arrow column made a list."""
    out: dict[str, list[Value]] = {}
    for key, col in raw_columns.items():
        if isinstance(col, list):
            out[key] = col
        else:
            made = raw.lists.get(key)
            out[key] = made if made is not None else column_values(col)
    return out


def _packet(
    path: str,
    report: Report,
    digest: tuple[str, int],
    options: AdapterOptions,
    index: int,
    count: int,
    pool: ThreadPoolExecutor | None = None,
    side_cells: list[int] | None = None,
    with_id: bool = False,
) -> EvidencePacket:
    """One packet of one report (with its ``packet_id`` if ``with_id``). ``pool`` (one
    worker) writes a side file while the records are built; ``side_cells`` gets the count of
    the raw values that went to one."""
    warnings = list(report.warnings)
    metric_warnings: set[str] = set()
    columns, units = report.table()
    raw = _RawTable(dict(columns), dict(units))
    n = len(report.launches)
    hoisted = _hoist_device_attributes(raw, n)
    raw_columns, raw_units = split_by_unit(raw.columns, raw.units)
    # the side file (when the capture is too large to keep inline) is written in the second
    # thread while the records are built: Arrow's IPC writer, zstd and sha256 release the GIL
    side: Future[Artifact | None] | None = None
    if options.side_dir is not None:
        args = (options, raw_columns, raw_units, n, _stem(path, index, count))
        if pool is not None and options.wants_raw_table(n, len(raw_columns)):
            side = pool.submit(_write_side, *args)
        else:  # the options decide (below their threshold: inline)
            side = Future()
            side.set_result(_write_side(*args))
    hardware = _hardware(report, raw, hoisted, warnings)
    value_warnings: list[str] = []
    from ..._codec.encode import kernels_json_wanted

    encode = with_id or kernels_json_wanted()  # the caller writes the packet at once
    records, kernels_json = _records(report, raw, metric_warnings, value_warnings, encode=encode)
    warnings.extend(value_warnings)
    warnings.extend(sorted(metric_warnings))
    summary = None
    if report.summary:
        summary = {k: Quantity(value=v, unit="count") for k, v in report.summary.items()}
        if "tensor_core_inst_executed" in report.summary and report.summary["tensor_core_inst_executed"] == 0:
            warnings.append("no tensor-core (MMA) instruction executed in any launch")
    names = list(dict.fromkeys(r.name for r in records))
    base = os.path.basename(path) + (f"#{index + 1}" if count > 1 else "")
    subject_name = names[0] if len(names) == 1 else base
    description = (
        f"Nsight Compute {report.page} report {base}: {len(records)} launch(es) of {len(names)} kernel(s)"
    )
    # millions of raw values a reader made finite floats, text or None itself are not
    # validated one by one again: the capture is validated without them, then gets them
    # (inline, or their side file). Only a raw page's columns can be Arrow arrays, and its
    # values are checked.
    checked = report.values_checked and bool(raw_columns)
    capture = ProfilerCapture(
        tool="ncu",
        version=report.tool_version,
        source=_artifact(path, digest),
        kernels=records,  # built (or validated) by _records
        raw_columns=None if checked else (_inline_columns(raw, raw_columns) or None),
        raw_units=raw_units or None,
        summary=summary,
        attributes=_attributes(report, raw, hoisted),
        warnings=warnings or None,
    )
    if side is not None and side.done() and side.result() is None:
        side = None  # the values stay inline
    if side is not None:  # validated above when not checked, but kept in the side file
        capture = capture.model_copy(update={"raw_columns": None})
    elif checked:
        capture = capture.model_copy(update={"raw_columns": _inline_columns(raw, raw_columns)})
    packet = start_packet(
        subject_kind="kernel",
        subject_name=subject_name,
        description=description,
        created_at=options.created_at,
        timing=_timing(capture.kernels or []),
        profiler=[capture],
        hardware=hardware,
    )
    if side is None:
        return finish_packet(packet, 0, kernels_json=kernels_json, with_id=with_id)
    ref = side.result()
    if ref is None:  # options that keep the values inline after all (a subclass's choice)
        inline = capture.model_copy(update={"raw_columns": _inline_columns(raw, raw_columns)})
        packet = packet.model_copy(update={"profiler": [inline]})
        return finish_packet(packet, 0, kernels_json=kernels_json, with_id=with_id)
    if side_cells is not None:
        side_cells.append(n * len(raw_columns))
    return finish_packet(packet, 0, kernels_json=kernels_json, raw_table=ref, with_id=with_id)


class NcuAdapter:
    """Nsight Compute: ``--csv`` (details or raw page), text page, summary, ``.ncu-rep``."""

    name = "ncu"
    aliases: tuple[str, ...] = ("nsight-compute", "ncu-rep", "nsight_compute")
    #: the keys ``--opt KEY=VALUE`` may set (any other is a usage error)
    options: tuple[str, ...] = ("max_bytes",)
    description = "NVIDIA Nsight Compute: --csv details/raw pages, text/summary pages, .ncu-rep reports"

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:

        packets: list[EvidencePacket] = []
        warnings: list[str] = []
        cap = max_bytes_option(options.extra)
        side_cells: list[int] = []
        # a text export is hashed (for its Artifact) in a second thread while it is parsed
        with paused_gc(), ThreadPoolExecutor(max_workers=1) as pool:
            expanded = _expand(inputs)
            first_error: KernelEvidenceError | None = None
            for path, in_directory in expanded:
                hashing: list[Future[tuple[str, int]]] = []

                def hash_later(b: bytes, p: str = path, h: list[Future[tuple[str, int]]] = hashing) -> None:
                    h.append(pool.submit(_digest, p, b))

                try:
                    reports, data = read_reports(path, hash_later, cap, arrow=options.side_dir is not None)
                except (InputError, AdapterError, MissingExtra) as exc:
                    if not in_directory:
                        raise
                    # a directory of results may hold a failed run's log: skip it, say so
                    warnings.append(f"skipped: {exc}")
                    first_error = first_error or exc
                    continue
                if path == "-":
                    path = "<stdin>"
                digest = hashing[0].result() if hashing else _digest(path, data, cap)
                del data
                count = len(reports)
                for i in range(count):
                    # each report is dropped once it is a packet: the columns the packet
                    # does not keep (device attributes hoisted out) are freed at once
                    want_id = bool(options.extra.get("packet_ids", True))
                    packet = _packet(
                        path, reports.pop(0), digest, options, i, count, pool, side_cells, want_id
                    )
                    packets.append(packet)
                    for w in packet.profiler[0].warnings or ():  # type: ignore[index]
                        hw = packet.hardware
                        if hw is None and w.startswith(_NO_DEVICE):
                            warnings.append(AdapterWarning(f"{path}: {w}", _DEVICE_FIELDS))
                        elif hw is not None and w.startswith(_NO_DEVICE) and hw.device == UNKNOWN_DEVICE:
                            warnings.append(
                                AdapterWarning(f"{path}: {w}", {"hardware.device": "<GPU model>"})
                            )
                        else:
                            warnings.append(f"{path}: {w}")
            # a capture whose raw values went to a side file built as many records
            if raw_cell_count(packets) + sum(side_cells) >= PROMOTE_CELLS:
                promote_survivors()
        if not packets and first_error is not None:
            raise first_error
        return AdapterResult(packets=packets, warnings=warnings)


ADAPTER = NcuAdapter()
