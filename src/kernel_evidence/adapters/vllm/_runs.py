"""Reading serving-benchmark result files into run records (the vLLM adapter's first stage).

A file holds one JSON object (``--save-result``, sweep ``run=N.json``, ``bench latency``),
a JSON list of objects (sweep ``summary.json``) or one object per line (``--append-result``,
SGLang ``--output-file``). Each object becomes a :class:`RunRecord`.

Speed: the document is first split into ``key -> raw JSON`` (msgspec ``Raw``, no objects
built); small values are then decoded one by one and the per-request arrays are decoded
only when they are used, straight into typed lists. Python's garbage collector is paused
while a large document is decoded (millions of container objects otherwise trigger
repeated full collections).

Python's ``json.dump`` writes ``NaN``/``Infinity`` for non-finite floats, which is not JSON;
such documents are re-read with the standard library and every non-finite value is
reported and left out.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..._gc import paused_gc
from ...errors import AdapterError
from .._read import DEFAULT_MAX_BYTES, read_capped

__all__ = [
    "ARRAY_KEYS",
    "GC_PAUSE_BYTES",
    "RunRecord",
    "duplicate_runs",
    "gc_paused",
    "load_runs",
    "parse_runs",
    "read_bytes",
]

#: per-request arrays: decoded lazily, never copied into settings or the raw extension
ARRAY_KEYS = frozenset(
    {
        "ttfts", "itls", "latencies", "input_lens", "output_lens", "errors", "generated_texts",
        "start_times", "queue_times", "expected_output_lens", "details",
    }
)  # fmt: skip

_RAW_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_ANY = msgspec.json.Decoder()
_FLOATS = msgspec.json.Decoder(list[float])
_FLOAT_LISTS = msgspec.json.Decoder(list[list[float]])
_STRS = msgspec.json.Decoder(list[str | None])

#: documents larger than this are decoded with the garbage collector paused
GC_PAUSE_BYTES = 1 << 20


def gc_paused(active: bool) -> AbstractContextManager[None]:
    """The cyclic collector paused (``kernel_evidence._gc.paused_gc``) when ``active``:
    decoding millions of per-request values otherwise triggers it over and over."""
    return paused_gc() if active else nullcontext()


@dataclass
class RunRecord:
    """One run read from a file: its scalar/nested values, and its arrays still as raw JSON."""

    source: str
    #: ``None`` for a whole-file object, ``"line N"`` (JSONL) or ``"[i]"`` (a list)
    location: str | None
    values: dict[str, Any]
    arrays: dict[str, Any] = field(default_factory=dict)
    #: keys whose value was NaN or infinite (json fallback only), left out of ``values``
    non_finite: list[str] = field(default_factory=list)
    #: what a key is called in messages: ``key`` (JSON) or ``column`` (CSV)
    noun: str = "key"
    #: array keys already decoded into checked, typed lists (CSV cells)
    typed: set[str] = field(default_factory=set)
    #: digest of the run's own bytes (a JSONL line, a list item, a CSV row), to find runs
    #: written twice into one file; ``None`` for a whole-file object
    fingerprint: str | None = None

    def where(self, key: str | None = None) -> str:
        """``file:location`` (and the key) for messages."""
        place = self.source if self.location is None else f"{self.source}:{self.location}"
        return place if key is None else f"{place}: {self.noun} `{key}`"

    def _array(self, key: str, decoder: Any, what: str) -> Any:
        """``(True, value)`` for an array already decoded or checked (typed, or msgspec
        ``Raw`` decoded with ``decoder``), ``(False, raw)`` for one still to check, or
        ``(True, None)`` when absent."""
        raw = self.arrays.get(key)
        if raw is None or key in self.typed:
            return True, raw
        if isinstance(raw, msgspec.Raw):
            try:
                return True, decoder.decode(raw)
            except msgspec.ValidationError as exc:
                raise AdapterError(f"{self.where(key)}: expected {what} ({_short(exc)})") from None
        return False, raw

    def floats(self, key: str) -> list[float] | None:
        """A flat per-request array of numbers, or ``None`` when absent or unusable."""
        done, raw = self._array(key, _FLOATS, "a list of numbers")
        return raw if done else _checked_floats(self, key, raw)

    def float_lists(self, key: str) -> list[list[float]] | None:
        """A per-request array of lists of numbers (``itls``), or ``None`` when absent."""
        done, raw = self._array(key, _FLOAT_LISTS, "a list of lists of numbers")
        if done:
            return raw  # type: ignore[no-any-return]
        if not isinstance(raw, list) or not all(isinstance(x, list) for x in raw):
            raise AdapterError(f"{self.where(key)}: expected a list of lists of numbers")
        return [_checked_floats(self, key, x) for x in raw]

    def strings(self, key: str) -> list[str] | None:
        """A per-request array of strings (``errors``); ``null`` entries become ``""``."""
        raw = self.arrays.get(key)
        if raw is None:
            return None
        if isinstance(raw, msgspec.Raw):
            try:
                items = _STRS.decode(raw)
            except msgspec.ValidationError as exc:
                raise AdapterError(f"{self.where(key)}: expected a list of strings ({_short(exc)})") from None
        else:
            if not isinstance(raw, list) or not all(x is None or isinstance(x, str) for x in raw):
                raise AdapterError(f"{self.where(key)}: expected a list of strings")
            items = raw
        return [x or "" for x in items]


def _checked_floats(rec: RunRecord, key: str, raw: Any) -> list[float]:
    if not isinstance(raw, list):
        raise AdapterError(f"{rec.where(key)}: expected a list of numbers, got {_type_name(raw)}")
    out: list[float] = []
    for x in raw:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise AdapterError(f"{rec.where(key)}: expected a list of numbers, found {_type_name(x)}")
        try:
            out.append(float(x))
        except OverflowError:  # an integer beyond a 64-bit float
            raise AdapterError(
                f"{rec.where(key)}: expected a list of numbers, found an integer out of range"
            ) from None
    return out


def _type_name(x: Any) -> str:
    if x is None:
        return "null"
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(x), type(x).__name__)


def _short(exc: Exception) -> str:
    return str(exc).replace("\n", " ")


#: what an input of this adapter is, for read errors
WHAT = "a benchmark result"


def read_bytes(path: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of ``path``, read under the ``max_bytes`` cap whatever the file is (a link to
    a device or a pipe included); :class:`AdapterError` when missing, unreadable or over it."""
    if not os.path.exists(path):
        raise AdapterError(f"{path}: no such file")
    return read_capped(path, max_bytes, what=WHAT)


def load_runs(path: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> list[RunRecord]:
    """Every run object in ``path``; :class:`AdapterError` with file and place on bad input."""
    return parse_runs(path, read_bytes(path, max_bytes=max_bytes))


def parse_runs(source: str, data: bytes) -> list[RunRecord]:
    """Split ``data`` (one file's bytes) into run records."""
    try:
        return _parse_runs(source, data)
    except RecursionError:
        raise AdapterError(f"{source}: JSON nested too deeply; expected a benchmark result object") from None


def _parse_runs(source: str, data: bytes) -> list[RunRecord]:
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark
        data = data[3:]
    stripped = data.strip()
    if not stripped:
        raise AdapterError(f"{source}: empty file; expected a JSON benchmark result")
    first = stripped[:1]
    with gc_paused(len(data) > GC_PAUSE_BYTES):
        if first == b"[":
            return _parse_list(source, data)
        if first != b"{":
            raise AdapterError(
                f"{source}: byte 0: expected a JSON object, a JSON list or JSONL, found {stripped[:20]!r}"
            )
        try:
            obj = _RAW_OBJECT.decode(data)
        except msgspec.DecodeError as exc:
            msg = str(exc)
            # several objects, one per line: JSONL (--append-result / SGLang --output-file)
            if "trailing characters" in msg or b"\n{" in data.strip():
                return _parse_lines(source, data)
            if "invalid character" in msg and _has_non_finite(data):
                return [_fallback_record(source, None, data)]
            raise AdapterError(f"{source}: {_json_problem(msg)}") from None
        except msgspec.ValidationError:
            raise AdapterError(f"{source}: top level: expected a JSON object") from None
        return [_record(source, None, obj)]


def _parse_list(source: str, data: bytes) -> list[RunRecord]:
    try:
        items = _RAW_LIST.decode(data)
    except msgspec.DecodeError as exc:
        msg = str(exc)
        if "invalid character" in msg and _has_non_finite(data):
            return _fallback_list(source, data)
        raise AdapterError(f"{source}: {_json_problem(msg)}") from None
    if not items:
        raise AdapterError(f"{source}: top level: empty list; expected benchmark runs")
    out = []
    for i, raw in enumerate(items):
        try:
            obj = _RAW_OBJECT.decode(raw)
        except (msgspec.ValidationError, msgspec.DecodeError):
            raise AdapterError(f"{source}:[{i}]: expected a JSON object (one benchmark run)") from None
        rec = _record(source, f"[{i}]", obj)
        rec.fingerprint = _digest(bytes(raw))
        out.append(rec)
    return out


def _parse_lines(source: str, data: bytes) -> list[RunRecord]:
    out = []
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        where = f"line {lineno}"
        try:
            obj = _RAW_OBJECT.decode(line)
        except msgspec.DecodeError as exc:
            msg = str(exc)
            if "invalid character" in msg and _has_non_finite(line):
                rec = _fallback_record(source, where, line)
                rec.fingerprint = _digest(line)
                out.append(rec)
                continue
            raise AdapterError(f"{source}:{where}: {_json_problem(msg)}") from None
        except msgspec.ValidationError:
            raise AdapterError(f"{source}:{where}: expected a JSON object (one benchmark run)") from None
        rec = _record(source, where, obj)
        rec.fingerprint = _digest(line)
        out.append(rec)
    return out


def _digest(raw: bytes) -> str:
    return hashlib.sha256(raw.strip()).hexdigest()


def duplicate_runs(runs: list[RunRecord]) -> str | None:
    """A warning (without the file name) when runs of one file repeat an earlier run byte for
    byte (a CSV row: cell for cell, its index left out): how many, and where the first copy
    and its original are; ``None`` otherwise."""
    first: dict[str, RunRecord] = {}
    repeats: list[tuple[RunRecord, RunRecord]] = []
    for rec in runs:
        if rec.fingerprint is None:
            continue
        seen = first.setdefault(rec.fingerprint, rec)
        if seen is not rec:
            repeats.append((rec, seen))
    if not repeats:
        return None
    again, original = repeats[0]
    return (
        f"{len(repeats)} run(s) are exact copies of an earlier run "
        f"(first: {again.location} repeats {original.location}); "
        "each still gives a packet - remove the copies if the run was written twice"
    )


def _record(source: str, location: str | None, obj: dict[str, msgspec.Raw]) -> RunRecord:
    values: dict[str, Any] = {}
    arrays: dict[str, Any] = {}
    for key, raw in obj.items():
        if key in ARRAY_KEYS:
            arrays[key] = raw
            continue
        try:
            values[key] = _ANY.decode(raw)
        except msgspec.ValidationError:  # e.g. 1e999: beyond a 64-bit float
            where = source if location is None else f"{source}:{location}"
            raise AdapterError(f"{where}: {_out_of_range(key, bytes(raw))}") from None
    details = arrays.pop("details", None)
    if details is not None:  # some SGLang versions nest the per-request arrays under "details"
        try:
            nested = _RAW_OBJECT.decode(details)
        except (msgspec.ValidationError, msgspec.DecodeError):
            nested = {}
        for key, raw in nested.items():
            if key in ARRAY_KEYS:
                arrays.setdefault(key, raw)
    return RunRecord(source, location, values, arrays)


def _out_of_range(key: str, raw: bytes) -> str:
    """``key `k.sub`: number 1e999 is out of range; expected ...`` for a value msgspec refused."""
    try:
        _, hit = _load_checked(raw, key)
    except (ValueError, RecursionError):
        hit = None
    path, text = hit if hit is not None else (key, "")
    return f"key `{path}`: {_out_of_range_text(text)}"


def _out_of_range_text(literal: str) -> str:
    number = f"number {literal[:40]}" if literal else "a number"
    return f"{number} is out of range; expected a finite number (at most about 1.8e308)"


# ---------------------------------------------------------------------------------------
# NaN / Infinity fallback (Python's json module accepts them)
# ---------------------------------------------------------------------------------------
def _has_non_finite(data: bytes) -> bool:
    return b"NaN" in data or b"Infinity" in data


class _OutOfRange(str):
    """A number literal beyond a 64-bit float (``1e999``), unlike ``NaN``/``Infinity``: kept as
    its text while parsing so that the error can name where it is."""


def _load_checked(data: bytes, key: str) -> tuple[Any, tuple[str, str] | None]:
    """``json.loads(data)`` and (path, literal) of its first number beyond a 64-bit float;
    the document is walked only when the parser met such a number."""
    seen: list[str] = []

    def literal(text: str) -> float | _OutOfRange:
        x = float(text)
        if math.isfinite(x):
            return x
        seen.append(text)
        return _OutOfRange(text)

    value = json.loads(data, parse_float=literal)
    if not seen:
        return value, None
    try:
        return value, _find_out_of_range(value, key) or (key, seen[0])
    except RecursionError:
        return value, (key, seen[0])


def _find_out_of_range(value: Any, path: str) -> tuple[str, str] | None:
    if isinstance(value, _OutOfRange):
        return path, str(value)
    if isinstance(value, dict):
        items: Any = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for sub, v in items:
        hit = _find_out_of_range(v, sub)
        if hit is not None:
            return hit
    return None


def _json_loads(source: str, location: str | None, data: bytes) -> Any:
    where = source if location is None else f"{source}:{location}"
    try:
        value, hit = _load_checked(data, "")
    except (ValueError, RecursionError) as exc:
        raise AdapterError(f"{where}: not valid JSON ({exc}); expected a benchmark result") from None
    if hit is not None:
        path, text = hit
        place = f"key `{path}`: " if path else ""
        raise AdapterError(f"{where}: {place}{_out_of_range_text(text)}")
    return value


def _fallback_record(source: str, location: str | None, data: bytes) -> RunRecord:
    obj = _json_loads(source, location, data)
    if not isinstance(obj, dict):
        where = source if location is None else f"{source}:{location}"
        raise AdapterError(f"{where}: top level: expected a JSON object")
    return _plain_record(source, location, obj)


def _fallback_list(source: str, data: bytes) -> list[RunRecord]:
    items = _json_loads(source, None, data)
    if not isinstance(items, list) or not items:
        raise AdapterError(f"{source}: top level: expected a non-empty list of benchmark runs")
    out = []
    for i, obj in enumerate(items):
        if not isinstance(obj, dict):
            raise AdapterError(f"{source}:[{i}]: expected a JSON object (one benchmark run)")
        out.append(_plain_record(source, f"[{i}]", obj))
    return out


def _plain_record(source: str, location: str | None, obj: dict[str, Any]) -> RunRecord:
    rec = RunRecord(source, location, {}, {})
    if isinstance(obj.get("details"), dict):
        for key, value in obj["details"].items():
            if key in ARRAY_KEYS:
                obj.setdefault(key, value)
    for key, value in obj.items():
        if key == "details":
            continue
        if key in ARRAY_KEYS:
            if _contains_non_finite(value):
                rec.non_finite.append(key)
            else:
                rec.arrays[key] = value
        elif isinstance(value, float) and not math.isfinite(value):
            if key == "request_rate" and value == math.inf:
                rec.values[key] = "inf"  # Infinity written by json.dump for an unbounded rate
            else:
                rec.non_finite.append(key)
        elif _contains_non_finite(value):
            rec.non_finite.append(key)
        else:
            rec.values[key] = value
    return rec


def _contains_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(_contains_non_finite(v) for v in value)
    if isinstance(value, dict):
        return any(_contains_non_finite(v) for v in value.values())
    return False


def _json_problem(msg: str) -> str:
    """msgspec's decode message, reworded as place + expectation."""
    text = msg.removeprefix("JSON is malformed: ")
    if "truncated" in text.lower():
        return "end of file: JSON truncated; expected a complete benchmark result object"
    if "(byte " in text:
        what, _, rest = text.partition(" (byte ")
        return f"byte {rest.rstrip(')')}: malformed JSON ({what}); expected a benchmark result object"
    return f"malformed JSON ({text}); expected a benchmark result object"
