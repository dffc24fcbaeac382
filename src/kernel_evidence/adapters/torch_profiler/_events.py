"""Reading a PyTorch profiler (Kineto) Chrome trace into typed events.

The trace is decoded once by msgspec into the few fields the adapter uses: each event's
phase, category, name, process, thread, start and duration, and its ``args`` left as raw
JSON bytes (decoded later, only for the kernel and runtime events that need them: a CPU
operator's arguments, input shapes and call stacks are never materialised). A file whose
events do not fit these types (a ``dur`` written as text, a ``ts`` that is an object) is
decoded a second time, generically, and each event converted on its own: the events that
do not fit are skipped and reported, the others kept.

Field names follow Kineto's writer (``libkineto/src/output_json.cpp``, ``CuptiActivity.cpp``,
``RocprofActivity_inl.h``; see ``docs/adapters/torch-profiler.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from ...errors import AdapterError
from .._read import gunzip_capped

__all__ = [
    "DeviceProps",
    "Event",
    "KernelArgs",
    "OpArgs",
    "RuntimeArgs",
    "Trace",
    "TraceData",
    "decode_args",
    "decode_trace",
    "gunzip",
]

WHAT = "a PyTorch profiler / Kineto Chrome trace (.json or .json.gz with `traceEvents`)"


class Event(msgspec.Struct):
    """One Chrome trace event, as far as the adapter reads it."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | None = None
    dur: float | None = None
    #: flow events (``ac2g``): the correlation id
    id: int | str | None = None
    args: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


class DeviceProps(msgspec.Struct):
    """One entry of ``deviceProperties`` (``cudaGetDeviceProperties`` / ``hipGetDeviceProperties``)."""

    id: int | None = None
    name: str | None = None
    totalGlobalMem: int | None = None
    computeMajor: int | None = None
    computeMinor: int | None = None
    numSms: int | None = None
    warpSize: int | None = None
    maxThreadsPerBlock: int | None = None
    maxThreadsPerMultiprocessor: int | None = None
    regsPerBlock: int | None = None
    sharedMemPerBlock: int | None = None


class DistributedInfo(msgspec.Struct):
    """``distributedInfo``: the process group of a distributed run."""

    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    nccl_version: str | None = None


class Trace(msgspec.Struct):
    """The trace document: events and the metadata Kineto writes before them."""

    traceEvents: list[Event] | None = None
    schemaVersion: int | str | None = None
    deviceProperties: list[DeviceProps] | None = None
    distributedInfo: DistributedInfo | None = None
    baseTimeNanoseconds: int | None = None
    traceName: str | None = None
    cupti_version: int | str | None = None
    cuda_runtime_version: int | str | None = None
    cuda_driver_version: int | str | None = None
    hip_runtime_version: int | str | None = None
    roctracer_version: int | str | None = None


class KernelArgs(msgspec.Struct):
    """``args`` of a GPU kernel event (CUPTI's kernel activity; ROCm's dispatch)."""

    device: int | None = None
    stream: int | str | None = None
    correlation: int | None = None
    external_id: int | None = msgspec.field(default=None, name="External id")
    registers: float | None = msgspec.field(default=None, name="registers per thread")
    shared_memory: float | None = msgspec.field(default=None, name="shared memory")
    blocks_per_sm: float | None = msgspec.field(default=None, name="blocks per SM")
    warps_per_sm: float | None = msgspec.field(default=None, name="warps per SM")
    occupancy: float | None = msgspec.field(default=None, name="est. achieved occupancy %")
    grid: list[int] | None = None
    block: list[int] | None = None
    queued: float | None = None
    kind: str | None = None


class RuntimeArgs(msgspec.Struct):
    """``args`` of a runtime or driver call (``cudaLaunchKernel``, ``cuLaunchKernel``,
    ``hipLaunchKernel``): the correlation id and, on ROCm, the launch shape."""

    correlation: int | None = None
    grid: list[int] | None = None
    block: list[int] | None = None
    shared_memory: float | None = msgspec.field(default=None, name="shared memory")


class OpArgs(msgspec.Struct):
    """``args`` of a CPU operator: its external id (what a kernel's ``External id`` names)."""

    external_id: int | None = msgspec.field(default=None, name="External id")


_TRACE = msgspec.json.Decoder(Trace)
_ANY = msgspec.json.Decoder()
KERNEL_ARGS = msgspec.json.Decoder(KernelArgs)
RUNTIME_ARGS = msgspec.json.Decoder(RuntimeArgs)
OP_ARGS = msgspec.json.Decoder(OpArgs)


@dataclass
class TraceData:
    """A decoded trace and what decoding it found wrong."""

    trace: Trace
    events: list[Event]
    warnings: list[str] = field(default_factory=list)


def gunzip(path: str, data: bytes, cap: int) -> bytes:
    """The decompressed bytes of a gzip trace, at most ``cap`` of them."""
    return gunzip_capped(path, data, cap, WHAT)


def decode_trace(path: str, data: bytes, cap: int) -> TraceData:
    """The trace in ``data`` (the bytes of ``path``, gzip-compressed or not)."""
    if data[:2] == b"\x1f\x8b":
        data = gunzip(path, data, cap)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        trace = _TRACE.decode(data)
    except msgspec.ValidationError as exc:
        return _lenient(path, data, str(exc))
    except msgspec.DecodeError as exc:
        raise AdapterError(f"{path}: not valid JSON ({exc}); expected {WHAT}") from None
    except RecursionError:
        raise AdapterError(f"{path}: JSON nested too deeply; expected {WHAT}") from None
    except UnicodeDecodeError:
        raise AdapterError(f"{path}: not valid UTF-8; expected {WHAT}") from None
    if trace.traceEvents is None:
        raise AdapterError(f"{path}: no `traceEvents` array; expected {WHAT}")
    return TraceData(trace, trace.traceEvents)


def _kind(x: Any) -> str:
    if x is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}.get(
        type(x), "an object"
    )


def _lenient(path: str, data: bytes, first_problem: str) -> TraceData:
    """Decode generically and convert the events one by one, skipping those that do not fit
    (the typed decode failed somewhere: ``first_problem``)."""
    try:
        doc = _ANY.decode(data)
    except msgspec.DecodeError as exc:
        raise AdapterError(f"{path}: not valid JSON ({exc}); expected {WHAT}") from None
    except RecursionError:
        raise AdapterError(f"{path}: JSON nested too deeply; expected {WHAT}") from None
    array_form = isinstance(doc, list)
    if array_form:  # the trace-event format's array form: events only
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict):
        raise AdapterError(
            f"{path}: top level is {_kind(doc)}, not an object with `traceEvents`; expected {WHAT}"
        )
    raw_events = doc.get("traceEvents")
    if not isinstance(raw_events, list):
        raise AdapterError(f"{path}: `traceEvents` is {_kind(raw_events)}, not an array; expected {WHAT}")
    meta = {k: v for k, v in doc.items() if k != "traceEvents"}
    warnings: list[str] = []
    try:
        trace = msgspec.convert(meta, Trace)
    except msgspec.ValidationError as exc:
        # metadata of unexpected types is left out, the events still read
        warnings.append(f"{path}: trace metadata left out ({exc})")
        trace = Trace()
    events: list[Event] = []
    bad = 0
    first = ""
    for i, ev in enumerate(raw_events):
        if not isinstance(ev, dict):
            bad += 1
            first = first or f"traceEvents[{i}] is {_kind(ev)}, not an event object"
            continue
        args = ev.pop("args", None)
        try:
            e = msgspec.convert(ev, Event)
        except msgspec.ValidationError as exc:
            bad += 1
            first = first or f"traceEvents[{i}] `{str(ev.get('name', ''))[:60]}`: {exc}"
            continue
        if args is not None:
            e.args = msgspec.Raw(msgspec.json.encode(args))
        events.append(e)
    if bad:
        warnings.append(
            f"{path}: {bad} of {len(raw_events)} trace event(s) skipped: not of the types Kineto "
            f"writes (first: {first})"
        )
    elif first_problem and not array_form:
        warnings.append(f"{path}: trace metadata not of the expected types ({first_problem}); left out")
    trace.traceEvents = events
    return TraceData(trace, events, warnings)


def decode_args(decoder: msgspec.json.Decoder[Any], raw: msgspec.Raw) -> tuple[Any, bool]:
    """``(args, clean)``: an event's ``args`` in the decoder's type. Values of another type
    (a ``grid`` written as text) are left out one by one, and ``clean`` is then False."""
    if not raw:
        return decoder.decode(b"{}"), True
    try:
        return decoder.decode(raw), True
    except msgspec.ValidationError:
        pass
    except msgspec.DecodeError:
        return decoder.decode(b"{}"), False
    generic = _ANY.decode(raw)
    kept: dict[str, Any] = {}
    if isinstance(generic, dict):
        for k, v in generic.items():
            try:
                msgspec.convert({k: v}, decoder.type)
            except msgspec.ValidationError:
                continue
            kept[k] = v
    return msgspec.convert(kept, decoder.type), False
