"""Reading the ``summary.csv`` of ``vllm bench sweep`` into run records.

What vLLM writes (``vllm/benchmarks/sweep/serve.py``, ``serve_sla.py``,
``serve_workload.py``: ``run_combs`` and friends): every run dict of the sweep, i.e. the
``vllm bench serve --save-result`` JSON plus ``run_number`` and the swept serve/bench
parameters (the same dicts ``summary.json`` lists), collected with
``pandas.DataFrame.from_records(all_data)`` and written with
``DataFrame.to_csv(experiment_dir / "summary.csv")``. So:

- a header line naming the union of the runs' keys in first-seen order, after an unnamed
  index column (``,date,endpoint_type,...``); one row per run (the index is 0, 1, ...);
- comma-separated, ``"``-quoted only when needed; a quoted cell may span lines (error texts);
- cells carry no type: ``None``/NaN and keys a run lacks are empty, floats are written
  with their shortest round-trip repr (an integer column with a gap turns float: ``4.0``),
  booleans as ``True``/``False``, an unbounded rate as ``inf``, lists and dicts as Python
  reprs (``[0.1, 0.2]``, ``['', 'error text']``, ``{'mode': 3}``);
- units are those of the JSON keys: ``*_ms`` in ms, ``duration`` in s, per-request arrays
  (present only with ``--save-detailed``) in s.

Columns are read by name, every one optional; a value is typed back (int, float, bool,
list/dict, else text) and the rest of the adapter treats the row exactly like the
corresponding ``summary.json`` entry.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from ...errors import AdapterError
from ._runs import ARRAY_KEYS, RunRecord

__all__ = ["parse_csv_runs"]

_EXPECTED = (
    "expected the summary.csv of `vllm bench sweep serve` "
    "(a header line naming the columns, then one row per run)"
)
_INT = re.compile(r"[+-]?\d+")
_UNNAMED = re.compile(r"Unnamed: \d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_POS_INF = frozenset({"inf", "+inf", "infinity", "+infinity"})
_NON_FINITE = _POS_INF | {"-inf", "-infinity", "nan", "+nan", "-nan"}
_NON_FINITE_TOKEN = re.compile(r"\b(?:inf|nan)\b")
#: cells that are not per-request arrays are parsed as a Python literal only below this size
_LITERAL_MAX = 1 << 20
#: per-request columns never used (kept verbatim, not parsed)
_UNPARSED = frozenset({"generated_texts", "details"})
_ANY = msgspec.json.Decoder()
#: per-request columns of numbers: decoded straight into typed lists (fast, checked)
_TYPED: dict[str, msgspec.json.Decoder[Any]] = {
    "ttfts": msgspec.json.Decoder(list[float]),
    "latencies": msgspec.json.Decoder(list[float]),
    "input_lens": msgspec.json.Decoder(list[float]),
    "output_lens": msgspec.json.Decoder(list[float]),
    "itls": msgspec.json.Decoder(list[list[float]]),
}
#: ``errors`` of a run where every request succeeded: ``['', '', ...]``
_ALL_EMPTY = re.compile(r"\[(?:'', )*''\]")
_SKIP = object()


class _NotPlain(Exception):
    """A parsed literal holds something JSON cannot (a set, bytes, a complex number)."""


@contextmanager
def _field_limit(size: int) -> Iterator[None]:
    """Let one cell be as large as the whole text (per-request arrays are long)."""
    old = csv.field_size_limit()
    csv.field_size_limit(max(old, min(size + 1, 2**31 - 1)))
    try:
        yield
    finally:
        csv.field_size_limit(old)


def parse_csv_runs(source: str, data: bytes) -> list[RunRecord]:
    """One run record per row of a sweep summary CSV; :class:`AdapterError` naming the
    file, the line and the column on bad input."""
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AdapterError(f"{source}: byte {exc.start}: not valid UTF-8; {_EXPECTED}") from None
    if not text.strip():
        raise AdapterError(f"{source}: empty file; {_EXPECTED}")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    with _field_limit(len(text)):
        try:
            return _read(source, reader)
        except csv.Error as exc:
            raise AdapterError(
                f"{source}:line {reader.line_num}: malformed CSV ({exc}); {_EXPECTED}"
            ) from None


def _read(source: str, reader: Any) -> list[RunRecord]:
    header: list[str] = []
    for row in reader:
        if any(cell.strip() for cell in row):
            header = row
            break
    header_line = reader.line_num
    columns = _columns(source, header_line, header)
    out: list[RunRecord] = []
    end = reader.line_num
    for row in reader:
        start, end = end + 1, reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # a blank line
        if len(row) < len(header):
            missing = header[len(row)].strip() or f"#{len(row) + 1}"
            raise AdapterError(
                f"{source}:line {start}: column `{missing}`: the row ends after {len(row)} of "
                f"{len(header)} columns; expected one value per column (truncated file?)"
            )
        if len(row) > len(header):
            raise AdapterError(
                f"{source}:line {start}: {len(row)} values but the header (line {header_line}) "
                f"names {len(header)} columns; expected one value per column"
            )
        out.append(_record(source, f"line {start}", columns, row))
    if not out:
        raise AdapterError(f"{source}:line {header_line}: a header and no rows; {_EXPECTED}")
    return out


def _columns(source: str, line: int, header: list[str]) -> list[tuple[int, str]]:
    """(position, name) of every data column; pandas' unnamed index column is left out."""
    columns: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    named = [i for i, raw in enumerate(header) if raw.strip() and not _UNNAMED.fullmatch(raw.strip())]
    last_named = named[-1] if named else -1
    for i, raw in enumerate(header):
        name = raw.strip()
        if not name or _UNNAMED.fullmatch(name):
            if i == 0:
                continue  # the DataFrame index (`Unnamed: 0` once re-saved through pandas)
            if i > last_named:
                continue  # a trailing comma on every line (spreadsheet export): an empty last column
            raise AdapterError(
                f"{source}:line {line}: column {i + 1} has no name; expected a header naming every column"
            )
        if name in seen:
            raise AdapterError(
                f"{source}:line {line}: column `{name}` appears twice (columns {seen[name] + 1} and "
                f"{i + 1}); expected each column once"
            )
        seen[name] = i
        columns.append((i, name))
    _check_kind(source, line, [name for _, name in columns])
    return columns


def _check_kind(source: str, line: int, names: list[str]) -> None:
    """Refuse, once, a table whose columns are not those of serving-benchmark runs."""
    from ._build import classify  # the same recognition as for JSON files

    probe = RunRecord(source, f"line {line}", dict.fromkeys(names))
    try:
        kind = classify(probe)
    except AdapterError:
        kind = None
    if kind not in ("serve", "sglang"):
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        raise AdapterError(
            f"{source}:line {line}: not a serving benchmark summary (columns: {shown or '-'}); {_EXPECTED}"
        )


def _record(source: str, location: str, columns: list[tuple[int, str]], row: list[str]) -> RunRecord:
    rec = RunRecord(source, location, {}, noun="column")
    # the run's cells, pandas' index column left out (it numbers rows, copies included)
    rec.fingerprint = hashlib.sha256("\x1f".join(row[i] for i, _ in columns).encode()).hexdigest()
    for i, name in columns:
        cell = row[i]
        if cell == "":
            continue  # None / NaN, or a key this run does not have
        if name in ARRAY_KEYS:
            if name in _UNPARSED:
                rec.arrays[name] = cell
                continue
            value = _array(rec, name, cell)
            if value is not _SKIP:
                rec.arrays[name] = value
            continue
        value = _scalar(rec, name, cell)
        if value is not _SKIP:
            rec.values[name] = value
    return rec


def _scalar(rec: RunRecord, name: str, cell: str) -> Any:
    if cell in ("True", "False"):
        return cell == "True"
    text = cell.strip()
    if _INT.fullmatch(text):
        try:
            return int(text)
        except ValueError:  # more digits than int() accepts from text
            return cell
    if _FLOAT.fullmatch(text):
        x = float(text)
        if math.isfinite(x):
            return x
        rec.non_finite.append(name)  # 1e999
        return _SKIP
    low = text.lower()
    if low in _NON_FINITE:
        if name == "request_rate" and low in _POS_INF:
            return "inf"  # an unbounded rate, as the JSON writes it
        rec.non_finite.append(name)
        return _SKIP
    if text[:1] in ("[", "{") and len(text) <= _LITERAL_MAX:
        parsed = _literal(text)
        if parsed is not _SKIP:
            return parsed
        if _NON_FINITE_TOKEN.search(text):
            rec.non_finite.append(name)
            return _SKIP
    return cell


def _array(rec: RunRecord, name: str, cell: str) -> Any:
    decoder = _TYPED.get(name)
    if decoder is not None:
        try:
            value = decoder.decode(cell)
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass  # not JSON numbers: the generic path below says what is wrong
        else:
            rec.typed.add(name)
            return value
    elif name == "errors" and _ALL_EMPTY.fullmatch(cell):
        return [""] * cell.count("''")
    parsed = _literal(cell.strip())
    if isinstance(parsed, list):
        return parsed
    if parsed is _SKIP and _NON_FINITE_TOKEN.search(cell):
        rec.non_finite.append(name)  # e.g. [0.1, nan]: left out with a warning, like JSON NaN
        return _SKIP
    raise AdapterError(
        f"{rec.where(name)}: expected a per-request list as pandas writes it "
        f"(e.g. [0.1, 0.2] or ['', 'error']), got {cell[:40]!r}"
    )


def _literal(text: str) -> Any:
    """A JSON value, else a Python literal (pandas writes ``str(value)``); ``_SKIP`` if neither."""
    try:
        return _ANY.decode(text)
    except (msgspec.DecodeError, RecursionError):
        pass
    try:
        return _plain(ast.literal_eval(text))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, _NotPlain):
        return _SKIP


def _plain(value: Any) -> Any:
    """A parsed literal as JSON-like data (tuples become lists)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v) for k, v in value.items()}
    raise _NotPlain(type(value).__name__)
