"""Not public: binary ``.ncu-rep`` reports -> :class:`~._common.Report`, via NVIDIA's
``ncu_report`` module (PyPI ``ncu-report``, the ``ncu`` extra; proprietary licence).

API used (Nsight Compute "Python Report Interface"): ``load_report(path) -> IContext``;
``IContext.num_ranges()/range_by_idx(i) -> IRange``; ``IRange.num_actions()/action_by_idx(i)
-> IAction``; ``IAction.name(base)``, ``metric_names()``, ``metric_by_name(n) -> IMetric``;
``IMetric.value()/unit()/kind()/has_value()/num_instances()/correlation_ids()/as_double(i)``.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

from ...errors import InputError, MissingExtra, shown
from ._common import Launch, Report

__all__ = ["REP_MAGIC", "read_rep", "TENSOR_OPCODES"]

#: an .ncu-rep file starts with these bytes (observed in reports from 2021 to 2025)
REP_MAGIC = b"NVR\x00"

#: SASS opcodes executed by the tensor cores (Volta..Blackwell): warp-level MMA, Hopper
#: warpgroup MMA (``*GMMA``) and Blackwell tcgen05 MMA (``UTC*MMA``)
TENSOR_OPCODES = frozenset(
    {
        "HMMA", "IMMA", "DMMA", "BMMA", "QMMA", "OMMA",
        "HGMMA", "IGMMA", "QGMMA", "BGMMA",
        "UTCHMMA", "UTCIMMA", "UTCQMMA", "UTCOMMA", "UTCBMMA", "UTCMMA",
    }
)  # fmt: skip

_OPCODE_MIX = "sass__inst_executed_per_opcode"

#: what ncu_report gives for bytes of a damaged report that are not UTF-8
_SURROGATES = re.compile("[\ud800-\udfff]")


def _text(s: str) -> str:
    """``s`` with lone surrogates (bytes ncu_report could not decode as UTF-8: a damaged
    report) shown as U+FFFD; no packet can hold a lone surrogate."""
    return s if s.isascii() else _SURROGATES.sub("\ufffd", s)


def _module(path: str) -> Any:
    try:
        import ncu_report  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise MissingExtra("ncu-report", "ncu", f"{path}: reading .ncu-rep reports") from exc
    return ncu_report


def _value(metric: Any) -> float | str | None:
    try:
        if hasattr(metric, "has_value") and not metric.has_value():
            return None
        v = metric.value()
    except Exception:  # noqa: BLE001 - a metric the module cannot decode stays unknown
        return None
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        f = float(v)
        return f if f == f and f not in (float("inf"), float("-inf")) else str(v)
    if v is None:
        return None
    return _text(str(v))


def _instances(metric: Any) -> list[tuple[str, float]]:
    """(correlation id, value) of an instanced metric such as the per-opcode SASS mix."""
    out: list[tuple[str, float]] = []
    try:
        n = metric.num_instances()
        if not n or not metric.has_correlation_ids():
            return out
        ids = metric.correlation_ids()
        for i in range(n):
            key = ids.as_string(i) if ids.kind() == metric.ValueKind_STRING else str(ids.as_uint64(i))
            out.append((_text(key), float(metric.as_double(i))))
    except Exception:  # noqa: BLE001
        return []
    return out


def _rule_results(action: Any, raw: dict[str, Any]) -> None:
    """Rule results under the same keys as the details-page CSV: ``rule:<section>/<rule>``,
    ``#N`` added for a rule's N-th result (the message; its unit is the report's message type
    number, as stored)."""
    try:
        results = action.rule_results_as_dicts()
    except Exception:  # noqa: BLE001 - older modules lack it; rules are optional
        return
    seen: dict[str, int] = {}
    for rr in results or ():
        msg = rr.get("rule_message") or {}
        text = msg.get("message") if isinstance(msg, dict) else None
        if text:
            key = f"rule:{rr.get('section_identifier')}/{rr.get('rule_identifier')}"
            # one rule may give several results (as on the details page: the N-th is `#N`)
            nth = seen[key] = seen.get(key, 0) + 1
            raw[_text(key if nth == 1 else f"{key}#{nth}")] = (
                _text(str(text)),
                f"msg_type {msg.get('type')}",
            )


def _num(raw: dict[str, Any], key: str) -> float | None:
    m = raw.get(key)
    return m[0] if m is not None and isinstance(m[0], float) else None


# ------------------------------------------------------------------ the container, checked

#: a block header larger than this is not one (the largest seen are tens of KiB)
_MAX_BLOCK_HEADER = 64 << 20


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("varint runs past its message")
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _payload_size(header: bytes) -> int:
    """Field 5 (varint) of a block header: the size of the payload after it; ValueError when
    the header is not a protobuf message with that field."""
    i, size = 0, None
    while i < len(header):
        key, i = _varint(header, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(header, i)
            if field == 5:
                size = value
        elif wire == 2:
            length, i = _varint(header, i)
            i += length
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")
        if i > len(header):
            raise ValueError("field runs past its message")
    if size is None:
        raise ValueError("no payload size")
    return size


def container_problem(path: str) -> str | None:
    """What is wrong with the file as an ncu report container, when that can be told; None
    when its blocks fill it exactly, or when its layout is not the one this check knows.

    Layout (observed in reports from 2021 to 2025; NVIDIA publishes no schema): ``NVR\\0``, a
    little-endian u32 size and that many bytes of file header, then blocks, each a u32 size,
    that many bytes of block header (a protobuf message whose field 5 is the payload size)
    and the payload. A report cut short ends inside a block.
    """
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(8)
            if len(head) < 8:
                return f"the file ends at byte {size}, inside its 8-byte preamble"
            at = 8 + int.from_bytes(head[4:8], "little")
            if at > size:
                return f"the file ends at byte {size} but its file header needs {at}"
            blocks = 0
            while at < size:
                if at + 4 > size:
                    return f"the file ends at byte {size}, inside the block that starts at byte {at}"
                fh.seek(at)
                length = int.from_bytes(fh.read(4), "little")
                if length > _MAX_BLOCK_HEADER or at + 4 + length > size:
                    if blocks == 0 and length > _MAX_BLOCK_HEADER:
                        return None  # not the layout this check knows
                    return (
                        f"the file ends at byte {size} but the header of the block that starts at "
                        f"byte {at} needs {at + 4 + length}"
                    )
                try:
                    payload = _payload_size(fh.read(length))
                except ValueError:
                    if blocks == 0:
                        return None  # not the layout this check knows
                    return f"the block at byte {at} does not parse (its header is damaged)"
                end = at + 4 + length + payload
                if end > size:
                    return f"the file ends at byte {size} but the block that starts at byte {at} needs {end}"
                at = end
                blocks += 1
    except OSError:
        return None
    if blocks == 0:
        return f"the file holds nothing after its {at}-byte header"
    return None


def _unread(action: Any, raw: dict[str, Any]) -> bool:
    """An action the module gave without a name and without metrics: it could not read it."""
    try:
        name = action.name()
    except Exception:  # noqa: BLE001
        name = None
    return not name and not raw


def read_rep(path: str) -> Report:
    """Every action (kernel launch) of every range of one report.

    A report whose container is damaged is read in a child process: ncu_report aborts the
    process on some damaged payloads (a native ``Check failed``), which must not take the
    caller with it."""
    _module(path)
    problem = container_problem(path)
    if problem:
        return _read_isolated(path, problem)
    failed: InputError | None = None
    with _native_log() as native:  # the lines are there once the block is left
        try:
            report = _read(path, problem)
        except InputError as exc:
            failed = exc
    said = _native_message(native)
    if failed is not None:
        if said is None:
            raise failed
        raise InputError(failed.source, failed.location, f"{failed.message} (ncu_report: {said})") from None
    if said is not None:
        report.warnings.append(f"ncu_report: {said}")
    return report


#: a line of the native library's log (glog/absl): ``E0000 00:00:17.11 1234 file.cc:195] text``
_NATIVE_LINE = re.compile(r"^[FEWI]\d{4} [\d:.]+\s+\d+ [^\]]+\] (.*)$")


@contextlib.contextmanager
def _native_log() -> Iterator[list[str]]:
    """What native code writes to the process's stderr (fd 2) meanwhile, as lines, instead
    of on the terminal: ``ncu_report`` logs there when a report is damaged ("Can't parse
    message ... missing required fields"), which would break the one-line error."""
    import tempfile

    lines: list[str] = []
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to take over
        yield lines
        return
    with tempfile.TemporaryFile() as log:
        sys.stderr.flush()
        os.dup2(log.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            log.seek(0)
            lines.extend(log.read(1 << 16).decode("utf-8", "replace").splitlines())


def _native_message(lines: list[str]) -> str | None:
    """The first message of the native log (its prefix left out), shortened; None if none."""
    for line in lines:
        m = _NATIVE_LINE.match(line.strip())
        if m is not None:
            return shown(m.group(1).strip())[:300]
    return None


#: the native library's fatal message (``Check failed: ...``) in the child's stderr
_NATIVE_FATAL = re.compile(r"(Check failed: [^\n]*|FATAL[^\n]*)")


def _read_isolated(path: str, problem: str) -> Report:
    """:func:`_read` in a child process (its stderr captured, not shown): a child that
    dies gives a one-line error naming the file and quoting the library's fatal message."""
    import multiprocessing
    import tempfile
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    fd, log = tempfile.mkstemp(prefix="kevidence-ncu-rep-", suffix=".log")
    os.close(fd)
    try:
        with ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_quiet_stderr,
            initargs=(log,),
        ) as pool:
            return pool.submit(_read, path, problem).result()
    except BrokenProcessPool:
        with open(log, "rb") as fh:
            found = _NATIVE_FATAL.search(fh.read(1 << 20).decode("utf-8", "replace"))
        said = f": {found.group(1).strip()[:200]}" if found else ""
        raise InputError(
            path,
            None,
            f"the report is truncated or damaged ({problem}); ncu_report crashed reading it{said}; "
            "expected a complete report as ncu -o writes it",
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(log)


def _quiet_stderr(log: str) -> None:
    """In the child: its stderr (where the native library logs) goes to the file ``log``."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 2)
    os.close(fd)


def _read(path: str, problem: str | None) -> Report:
    mod = _module(path)
    damaged = (
        f"the report is truncated or damaged ({problem})" if problem else "the report is truncated or damaged"
    )
    try:
        ctx = mod.load_report(path)
    except Exception as exc:  # noqa: BLE001 - the module raises plain exceptions
        if problem:
            raise InputError(path, None, f"{damaged}; ncu_report could not load it ({exc})") from None
        raise InputError(path, None, f"ncu_report could not load this report ({exc})") from None
    if ctx is None:
        raise InputError(
            path,
            None,
            f"{damaged}; ncu_report could not load it"
            if problem
            else "ncu_report could not load this report",
        )
    launches: list[Launch] = []
    warnings: list[str] = []
    unread = 0
    tensor = 0.0
    total = 0.0
    with_mix = 0
    bad_names = 0  # metric names that are not UTF-8 (damage): ncu_report cannot look them up
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            raw: dict[str, Any] = {}
            for name in action.metric_names():
                try:
                    metric = action.metric_by_name(name)
                except TypeError:  # the name holds bytes that are not UTF-8 (lone surrogates)
                    bad_names += 1
                    continue
                if metric is None:
                    continue
                unit = _text(metric.unit() or "") or None
                raw[name] = (_value(metric), unit)
                if name == _OPCODE_MIX:
                    mix = _instances(metric)
                    if mix:
                        with_mix += 1
                    for opcode, count in mix:
                        raw[f"{_OPCODE_MIX}[{opcode}]"] = (count, "inst")
                        total += count
                        if opcode.split(".")[0] in TENSOR_OPCODES:
                            tensor += count

            if _unread(action, raw):
                unread += 1
            _rule_results(action, raw)
            dims = [_num(raw, f"launch__grid_dim_{c}") for c in "xyz"]
            bdims = [_num(raw, f"launch__block_dim_{c}") for c in "xyz"]
            major, minor = (
                _num(raw, "device__attribute_compute_capability_major"),
                _num(raw, "device__attribute_compute_capability_minor"),
            )
            dev = _num(raw, "launch__device_id")
            stream = _num(raw, "launch__stream_id")
            try:
                mangled = action.name(action.NameBase_MANGLED)
                demangled = action.name(action.NameBase_DEMANGLED)
            except Exception:  # noqa: BLE001
                mangled, demangled = None, action.name()
            launches.append(
                Launch(
                    id=str(len(launches)),
                    name=_text(demangled or action.name() or "<unnamed>"),
                    raw_name=_text(mangled) if mangled and mangled != demangled else None,
                    stream=str(int(stream)) if stream is not None else None,
                    device=int(dev) if dev is not None else None,
                    grid=[int(d) for d in dims] if None not in dims else None,  # type: ignore[arg-type]
                    block=[int(d) for d in bdims] if None not in bdims else None,  # type: ignore[arg-type]
                    cc=f"{int(major)}.{int(minor)}" if major is not None and minor is not None else None,
                    raw=raw,
                )
            )
    if unread:
        raise InputError(
            path,
            None,
            f"{damaged}: ncu_report read {unread} of {len(launches)} kernel launch(es) with no name and "
            "no metrics; expected a complete report as ncu -o writes it",
        )
    if not launches:
        if problem:
            raise InputError(
                path,
                None,
                f"{damaged}: ncu_report read no kernel launches; expected a complete report as ncu -o writes it",
            )
        raise InputError(path, None, "the report holds no kernel launches (no ranges with actions)")
    if problem:
        warnings.append(
            f"the file may be truncated or damaged ({problem}); ncu_report read {len(launches)} launch(es) "
            "from it, launches after the damage may be missing"
        )
    if bad_names:
        warnings.append(
            f"the report is damaged: {bad_names} metric name(s) are not UTF-8 text; those metrics are left out"
        )
    summary: dict[str, float] = {}
    if with_mix:
        summary = {"sass_inst_executed": total, "tensor_core_inst_executed": tensor}
    else:
        warnings.append("the report holds no SASS instruction mix (section InstructionStats not collected)")
    reader = None
    with contextlib.suppress(Exception):
        reader = f"ncu_report {ctx.get_version()}"
    return Report(page="ncu-rep", launches=launches, warnings=warnings, summary=summary, reader=reader)
