"""Reading a trace file: capped, plain or gzip, split into lines, each line decoded once.

A line is decoded by msgspec straight into the typed structs below, so a wrong type is
reported with its place in the line (``$.evaluation.performance.latency_ms``) and nothing
is decoded twice. Every key is optional: files of other flashinfer-bench and SOL-ExecBench
versions keep or drop keys, and only what a line has is mapped.

Python's ``json`` writes NaN and infinities as bare ``NaN``/``Infinity``, which is not JSON
and which msgspec refuses; such a line (SOL-ExecBench writes its traces that way) is parsed
again with :mod:`json` and converted to the same structs.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from ...errors import AdapterError
from .._read import read_capped, size_text

__all__ = [
    "Correctness",
    "Environment",
    "Evaluation",
    "Performance",
    "Tolerance",
    "TraceLine",
    "Workload",
    "decode_line",
    "read_maybe_gzip",
]


class Tolerance(msgspec.Struct):
    """``workload.tolerance`` (SOL-ExecBench)."""

    max_atol: float | None = None
    max_rtol: float | None = None
    required_matched_ratio: float | None = None
    max_error_cap: float | None = None
    allow_negative_inf: bool | None = None


#: an axis value: a size, as a 64-bit count (flashinfer-bench: NonNegativeInt)
AxisValue = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


class Workload(msgspec.Struct):
    uuid: str | int | None = None
    axes: dict[str, AxisValue] | None = None
    inputs: dict[str, Any] | None = None
    tolerance: Tolerance | None = None


class Environment(msgspec.Struct):
    hardware: str | None = None
    libs: dict[str, Any] | None = None
    #: flashinfer-bench before 2025-09-13 (the hardware name under another key)
    device: str | None = None


#: an error value: a number, or ``"NaN"``/``"Infinity"`` as pydantic writes non-finite floats
ErrorValue = float | str | None


class Correctness(msgspec.Struct):
    max_relative_error: ErrorValue = None
    max_absolute_error: ErrorValue = None
    has_nan: bool | None = None
    has_inf: bool | None = None
    extra: Any = None


class Performance(msgspec.Struct):
    latency_ms: float | None = None
    reference_latency_ms: float | None = None
    speedup_factor: float | None = None


class Evaluation(msgspec.Struct):
    status: str | None = None
    environment: Environment | None = None
    #: ISO 8601 text; a number is taken as seconds since the Unix epoch
    timestamp: str | float | None = None
    #: text; any other value is not a log and is ignored
    log: Any = None
    #: flashinfer-bench before 2025-10-11: the path of the log instead of its text
    log_file: Any = None
    correctness: Correctness | None = None
    performance: Performance | None = None


class TraceLine(msgspec.Struct):
    """One line of a FlashInfer-Trace JSONL file."""

    #: the definition's name (an embedded definition object: its ``name``)
    definition: str | dict[str, Any] | None = None
    workload: Workload | None = None
    #: the solution's name (an embedded solution object: its ``name``)
    solution: str | dict[str, Any] | None = None
    evaluation: Evaluation | None = None


_decoder = msgspec.json.Decoder(TraceLine)


@dataclass
class BadLine(Exception):
    """A line that is not a trace line; ``why`` says what was expected, in one line."""

    why: str


def _shown_path(msg: str) -> str:
    # msgspec: "Expected `float`, got `str` - at `$.evaluation.performance.latency_ms`"
    return msg.replace("`$.", "`").replace("`$`", "the line")


def decode_line(line: bytes) -> TraceLine:
    """The trace line ``line`` (one JSON object); :class:`BadLine` when it is not one."""
    try:
        return _decoder.decode(line)
    except msgspec.ValidationError as exc:
        raise BadLine(_shown_path(str(exc))) from None
    except msgspec.DecodeError as exc:
        if b"NaN" in line or b"Infinity" in line:  # Python's json: bare NaN / Infinity
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                pass
            else:
                try:
                    return msgspec.convert(obj, TraceLine)
                except msgspec.ValidationError as exc2:
                    raise BadLine(_shown_path(str(exc2))) from None
        why = str(exc)
        if why.startswith("JSON is malformed"):
            why = why.replace("JSON is malformed: ", "")
        raise BadLine(f"not JSON ({why}); expected one trace object per line") from None
    except RecursionError:
        raise BadLine("JSON nested too deeply; expected one trace object per line") from None


def _gunzip(path: str, data: bytes, cap: int) -> bytes:
    """Every gzip member of ``data``, decompressed, at most ``cap`` bytes."""
    out: list[bytes] = []
    total = 0
    rest = data
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(rest, cap + 1 - total)
        except zlib.error as exc:
            raise AdapterError(
                f"{path}: damaged gzip data ({exc}); expected a gzip-compressed trace"
            ) from None
        total += len(chunk)
        out.append(chunk)
        if total > cap:
            raise AdapterError(
                f"{path}: decompresses to more than the {size_text(cap)} cap for one input; "
                "expected a trace file (raise the cap with --opt max_bytes=N if it is really that large)"
            )
        if not d.eof:
            raise AdapterError(
                f"{path}: gzip data ends before its end-of-stream marker (truncated?); "
                "expected a complete gzip-compressed trace"
            )
        rest = d.unused_data.lstrip(b"\0")  # members back to back; NUL padding after the last
    return b"".join(out)


def read_maybe_gzip(path: str, cap: int, what: str) -> bytes:
    """The bytes of ``path`` (decompressed when gzip), at most ``cap`` of them either way."""
    data = read_capped(path, cap, what=what)
    if data[:2] == b"\x1f\x8b":
        return _gunzip(path, data, cap)
    return data
