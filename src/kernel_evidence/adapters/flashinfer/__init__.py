"""FlashInfer-Bench and SOL-ExecBench traces: one packet per evaluated trace line.

Reads FlashInfer-Trace JSONL (one ``{definition, workload, solution, evaluation}`` object a
line, plain or gzip), with the definition and solution JSON given as inputs or found in the
dataset folder the trace sits in (``definitions/``, ``solutions/``, ``traces/``). See
``docs/adapters/flashinfer-trace.md`` for the mapping (data: ``adapters/flashinfer-trace.toml``).

A line that is not a trace line (not JSON, a wrong type) is skipped with a warning naming
its line number, and the other lines are read: a long run's file with one damaged line keeps
the rest. A file with no good line at all is an :class:`~kernel_evidence.errors.AdapterError`
naming its first bad line, and so is any bad line with the ``strict`` option.

Options (``AdapterOptions.extra``), all optional:

``method``
    the timing method (``cupti``, ``cuda_events``, ...) when the trace's logs do not say it
``timezone`` (``UTC``, ``+08:00``)
    the zone of timestamps written without one, so ``measured_at`` can be recorded
``strict``
    fail on the first bad line instead of skipping it
``max_bytes`` (default 2 GiB)
    refuse larger input files (decompressed size for gzip)
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone, tzinfo

import msgspec

from ..._gc import paused_gc, promote_survivors
from ...errors import AdapterError
from ...models import EvidencePacket
from .. import AdapterOptions, AdapterResult
from .._envelope import utc_now
from .._read import max_bytes_option, walk_inputs
from ._build import FileState, LineBuilder, cupti_missing, method_of
from ._io import BadLine, TraceLine, decode_line, read_maybe_gzip
from ._side import SIDE_MAX_BYTES, SideIndex, classify_json, dataset_root, read_run_log

__all__ = ["ADAPTER", "FlashInferTraceAdapter"]

_TRACE_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
_JSON_SUFFIXES = (".json", ".json.gz")
_METHODS = (
    "cuda_events", "hip_events", "cupti", "host_clock", "profiler", "torch_profiler", "triton_do_bench", "other",
)  # fmt: skip
#: bad lines named one by one in the warnings of a file; the rest are counted
_BAD_LINES_NAMED = 10
_WHAT = "a FlashInfer-Trace JSONL file"


def _zone(value: object) -> tzinfo | None:
    if value is None:
        return None
    text = str(value).strip()
    if text.upper() in ("UTC", "Z", "GMT"):
        return timezone.utc
    try:
        return datetime.strptime(text, "%z").tzinfo
    except ValueError:
        raise AdapterError(
            f"option `timezone`: expected UTC or an offset like +08:00, got {text!r}"
        ) from None


def _flag(value: object) -> bool:
    return value is not None and str(value).lower() not in ("0", "false", "no", "")


class FlashInferTraceAdapter:
    """FlashInfer-Bench / SOL-ExecBench traces -> one kernel packet per evaluated line."""

    name = "flashinfer-trace"
    aliases: tuple[str, ...] = ("flashinfer", "flashinfer-bench", "sol-execbench")
    #: the keys ``--opt KEY=VALUE`` may set (any other is a usage error)
    options: tuple[str, ...] = ("max_bytes", "method", "strict", "timezone")
    description = (
        "FlashInfer-Bench and SOL-ExecBench trace JSONL (plain or gzip), with definition and "
        "solution JSON: one kernel packet per evaluated line"
    )

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        """One packet per evaluated trace line in ``inputs`` (files or directories)."""
        extra = dict(options.extra or {})
        method = extra.get("method")
        if method is not None and str(method) not in _METHODS:
            raise AdapterError(f"option `method`: expected one of {', '.join(_METHODS)}, got {method!r}")
        cap = max_bytes_option(extra)
        strict = _flag(extra.get("strict"))
        warnings: list[str] = []
        side = SideIndex()
        traces: list[tuple[str, bool, bytes]] = []
        for path, explicit in walk_inputs(inputs, _TRACE_SUFFIXES + _JSON_SUFFIXES):
            data = self._read_one(path, explicit, cap, warnings)
            if data is None:
                continue
            kind = _kind(path, data)
            if kind == "side":
                try:
                    item = classify_json(path, data)
                except AdapterError as exc:
                    if explicit:
                        raise
                    warnings.append(f"skipped: {exc}")
                    continue
                if item is None:
                    if explicit:
                        raise AdapterError(
                            f"{path}: a JSON object that is neither a trace line, a definition nor a "
                            f"solution; expected {_WHAT} or a definition/solution JSON"
                        )
                    continue
                side.add(item)
            else:
                traces.append((path, explicit, data))
        builder = LineBuilder(
            created_at=options.created_at or utc_now(),
            side=side,
            zone=_zone(extra.get("timezone")),
            warnings=warnings,
        )
        ids = extra.get("packet_ids", True) is not False
        with paused_gc():  # 10^5 packets of small acyclic models: no collection to run meanwhile
            made = self._read_traces(traces, side, builder, str(method) if method else None, strict, warnings)
            promote_survivors()  # the packets live on: no young-generation scan of them at gc.enable()
        packets = [p.with_id() for p in made] if ids else made
        workload_only = builder.workload_only
        if not packets:
            where = ", ".join(os.fspath(i) for i in inputs) or "(no inputs)"
            if workload_only:
                raise AdapterError(
                    f"{where}: only workload lines ({workload_only}, `evaluation` null): no evaluated "
                    "trace line, nothing was measured"
                )
            if not traces and (side.definitions or side.solutions):
                raise AdapterError(
                    f"{where}: definition/solution JSON only, which hold no measurements; give them "
                    f"together with the trace they belong to ({_WHAT})"
                )
            raise AdapterError(f"{where}: no evaluated trace lines found; expected {_WHAT}")
        return AdapterResult(packets=packets, warnings=warnings)

    def _read_traces(
        self,
        traces: list[tuple[str, bool, bytes]],
        side: SideIndex,
        builder: LineBuilder,
        method: str | None,
        strict: bool,
        warnings: list[str],
    ) -> list[EvidencePacket]:
        packets: list[EvidencePacket] = []
        for path, explicit, data in traces:
            root = dataset_root(path)
            if root is not None:
                side.add_root(root, warnings)
            got = self._read_trace(path, explicit, data, root, builder, method, strict)
            if got is not None:
                packets.extend(got[0])
                builder.workload_only += got[1].workload_only
        return packets

    @staticmethod
    def _read_one(path: str, explicit: bool, cap: int, warnings: list[str]) -> bytes | None:
        side = path.lower().endswith(_JSON_SUFFIXES)
        try:
            return read_maybe_gzip(path, SIDE_MAX_BYTES if side and not explicit else cap, _WHAT)
        except AdapterError as exc:
            if explicit:
                raise
            warnings.append(f"skipped: {exc}")
            return None

    def _read_trace(
        self,
        path: str,
        explicit: bool,
        data: bytes,
        root: str | None,
        builder: LineBuilder,
        method: str | None,
        strict: bool,
    ) -> tuple[list[EvidencePacket], FileState] | None:
        m, note = method_of(cupti_missing(data), method)
        fs = FileState(
            path=path, root=root, run=read_run_log(root) if root else None, method=m, method_note=note
        )
        made: list[EvidencePacket] = []
        bad: list[tuple[int, str]] = []
        good = 0
        for lineno, t in _records(path, data):
            if isinstance(t, BadLine):
                if strict:
                    raise AdapterError(f"{path}:{lineno}: {t.why}")
                bad.append((lineno, t.why))
                continue
            if t.workload is None and t.definition is None:
                why = "a JSON object without `definition` or `workload`; expected one trace object per line"
                if strict:
                    raise AdapterError(f"{path}:{lineno}: {why}")
                bad.append((lineno, why))
                continue
            good += 1
            p = builder.build(t, lineno, fs)
            if p is not None:
                made.append(p)
        if not good and bad:
            lineno, why = bad[0]
            more = f" ({len(bad)} bad lines, no good one)" if len(bad) > 1 else ""
            exc = AdapterError(f"{path}:{lineno}: {why}{more}")
            if explicit:
                raise exc
            builder.warnings.append(f"skipped: {exc}")
            return None
        self._file_warnings(fs, bad, builder.warnings)
        return made, fs

    @staticmethod
    def _file_warnings(fs: FileState, bad: list[tuple[int, str]], warnings: list[str]) -> None:
        path = fs.path
        for lineno, why in bad[:_BAD_LINES_NAMED]:
            warnings.append(f"{path}:{lineno}: skipped: {why}")
        if len(bad) > _BAD_LINES_NAMED:
            warnings.append(f"{path}: {len(bad) - _BAD_LINES_NAMED} more bad lines skipped")
        if fs.workload_only:
            warnings.append(
                f"{path}: {fs.workload_only} workload-only lines (`evaluation` null) skipped: not measurements"
            )
        for status, n in sorted(fs.unknown_status.items()):
            warnings.append(
                f"{path}: {n} lines with evaluation status `{status}` skipped: not a known status"
            )
        if fs.naive_timestamps:
            warnings.append(
                f"{path}: {fs.naive_timestamps} timestamps name no time zone (or are not ISO 8601): measured_at left out "
                "(the `timezone` option gives their zone)"
            )
        if fs.unprofiled_reference:
            warnings.append(
                f"{path}: {fs.unprofiled_reference} lines without a measured reference latency "
                "(0 or missing: run with --no-profile-baseline?): no baseline timing, no speedup claim"
            )
        if fs.packets and fs.root is None:
            warnings.append(
                f"{path}: not inside a FlashInfer-Trace dataset folder (definitions/, solutions/, traces/): "
                "the packets have no replay command"
            )


def _records(path: str, data: bytes) -> Iterator[tuple[int, TraceLine | BadLine]]:
    """(1-based line number, the trace line or why it is not one) for each non-blank line.

    A ``.json`` file holding one trace object, or an array of them, counts each object as a
    line (numbered from 1). A leading byte order mark is dropped."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if path.lower().endswith(_JSON_SUFFIXES):
        try:
            doc = msgspec.json.decode(data)
        except (msgspec.DecodeError, RecursionError) as exc:
            yield 1, BadLine(f"not JSON ({exc}); expected a trace object or an array of them")
            return
        for i, item in enumerate(doc if isinstance(doc, list) else [doc], 1):
            try:
                yield i, msgspec.convert(item, TraceLine)
            except msgspec.ValidationError as exc:
                yield i, BadLine(f"{exc} (item {i})".replace("`$.", "`").replace("`$`", "the item"))
        return
    for i, line in enumerate(data.split(b"\n"), 1):
        if line.strip():
            try:
                yield i, decode_line(line)
            except BadLine as exc:
                yield i, exc


def _kind(path: str, data: bytes) -> str:
    """``trace`` or ``side`` (a definition/solution JSON); a .json file holding trace
    objects (one, or an array of them) is a trace."""
    if path.lower().endswith(_TRACE_SUFFIXES):
        return "trace"
    head = data.lstrip()[:1]
    if head == b"[":
        return "trace"
    if head == b"{" and path.lower().endswith(_JSON_SUFFIXES):
        try:
            obj = msgspec.json.decode(data)
        except (msgspec.DecodeError, RecursionError):
            return "side"
        if isinstance(obj, dict) and "workload" in obj and "definition" in obj:
            return "trace"
        return "side"
    return "trace"


ADAPTER = FlashInferTraceAdapter()
