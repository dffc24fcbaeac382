"""Ingest: run an adapter over profiler/benchmark outputs and complete the packets it makes.

Adapters fill what their source knows; :func:`ingest` adds what only the user knows (the
replay command, the baseline, any other field through ``sets``) and can merge everything
into an existing base packet. ``kevidence ingest`` is a thin wrapper around it, and so is a
harness that wants the same packets without the CLI.

>>> parse_set("timing.warmup=10")
(('timing', 'warmup'), 10)
>>> parse_set("subject.name=gemm_fp16")
(('subject', 'name'), 'gemm_fp16')

Also here: the joined cross-vendor canonical-metric table behind ``kevidence metrics``
(:func:`metric_table`, :func:`render_metric_table`), built from ``adapters/*.toml``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from pydantic import ValidationError

from ._gc import paused_gc
from .adapters import AdapterOptions, get_adapter
from .errors import AdapterError, InputError, UsageError
from .models import EvidencePacket

__all__ = [
    "IngestResult",
    "OptionError",
    "ingest",
    "ingest_json",
    "metric_table",
    "missing_for_validation",
    "parse_baseline",
    "parse_opt",
    "parse_opts",
    "parse_set",
    "render_metric_table",
]


class OptionError(UsageError):
    """An ingest option is malformed (a usage error: exit code 2 at the CLI)."""


@dataclass
class IngestResult:
    """The finished packets (with ids) and every warning met on the way."""

    packets: list[EvidencePacket]
    warnings: list[str] = field(default_factory=list)
    #: side files the adapters wrote (raw metric tables), in ``side_dir``
    side_files: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- option parsing


def _split_path(path: str) -> tuple[str, ...]:
    """``a.b.c`` -> parts; ``\\.`` keeps a dot inside a part (extension keys hold dots)."""
    parts: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == "\\" and i + 1 < len(path) and path[i + 1] == ".":
            cur.append(".")
            i += 2
            continue
        if ch == ".":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    if any(p == "" for p in parts):
        raise OptionError(f"--set `{path}`: empty part in the dotted path")
    return tuple(parts)


#: deepest nesting a ``--set`` path plus its value (or an ``--opt`` value) may reach: far
#: beyond any packet field, well inside what the encoders and validators handle
MAX_VALUE_DEPTH = 64


def _check_text(text: str, option: str) -> None:
    """Text from the command line must be Unicode: bytes that are not UTF-8 arrive as lone
    surrogates (``surrogateescape``), which no packet can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise OptionError(f"{option} `{text}`: not valid UTF-8 text") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_value(text: str, option: str, depth: int = 0) -> Any:
    """JSON when ``text`` parses as standard JSON (``NaN``/``Infinity`` do not), else text.

    A number too large for a float, text that is not Unicode, or nesting deeper than
    :data:`MAX_VALUE_DEPTH` is a usage error (they would be written as ``null``, or fail later).
    """
    try:
        value: Any = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise OptionError(
            f"{option}: the value is nested too deeply (at most {MAX_VALUE_DEPTH} levels, counting the path)"
        ) from None
    except ValueError:
        return text
    _check_value(value, option, depth)
    return value


def _check_value(value: Any, option: str, depth: int) -> None:
    stack = [(value, depth)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            if d >= MAX_VALUE_DEPTH:
                raise OptionError(
                    f"{option}: the value is nested too deeply (at most {MAX_VALUE_DEPTH} levels, counting the path)"
                )
            items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v]
            for k, x in items:
                if k is not None:
                    _check_text(k, option)
                stack.append((x, d + 1))
        elif isinstance(v, float) and not math.isfinite(v):
            raise OptionError(f"{option}: a number in the value is too large for a 64-bit float")
        elif isinstance(v, str):
            _check_text(v, option)


def parse_set(item: str) -> tuple[tuple[str, ...], Any]:
    """``"key.path=value"`` -> (path parts, value); the value is JSON when it parses, else text."""
    _check_text(item, "--set")
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise OptionError(f"--set expects key=value (a dotted path into the packet), got `{item}`")
    path = _split_path(key.strip())
    if len(path) > MAX_VALUE_DEPTH:
        raise OptionError(
            f"--set `{key.strip()}`: the path is nested too deeply (at most {MAX_VALUE_DEPTH} levels)"
        )
    return path, _parse_value(text, f"--set {key.strip()}", len(path))


def parse_opt(item: str) -> tuple[str, Any]:
    """``"KEY=VALUE"`` -> an adapter option (``AdapterOptions.extra``); the value is JSON when
    it parses, else text.

    >>> parse_opt("tensor_parallel_size=4"), parse_opt("device=NVIDIA H100 80GB HBM3")
    (('tensor_parallel_size', 4), ('device', 'NVIDIA H100 80GB HBM3'))
    """
    _check_text(item, "--opt")
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise OptionError(f"--opt expects KEY=VALUE (an adapter option), got `{item}`")
    return key, _parse_value(text, f"--opt {key}")


def parse_opts(items: Iterable[str]) -> dict[str, Any]:
    """Every ``--opt KEY=VALUE`` as one dict; a key given twice is a usage error."""
    out: dict[str, Any] = {}
    for item in items:
        key, value = parse_opt(item)
        if key in out:
            raise OptionError(f"--opt `{key}` is given twice; give each adapter option once")
        out[key] = value
    return out


def parse_baseline(spec: str) -> dict[str, str]:
    """``"PROVIDER:VERSION:CALL"`` -> a baseline dict; the call may itself hold colons.

    >>> parse_baseline("cuBLASLt:12.4.5:cublasLtMatmul(fp16, m=4096)")
    {'provider': 'cuBLASLt', 'version': '12.4.5', 'call': 'cublasLtMatmul(fp16, m=4096)'}
    """
    _check_text(spec, "--baseline")
    parts = spec.split(":", 2)
    if len(parts) != 3 or not parts[0].strip() or not parts[2].strip():
        raise OptionError(
            f"--baseline expects PROVIDER:VERSION:CALL (e.g. cuBLASLt:12.4.5:cublasLtMatmul), got `{spec}`"
        )
    out = {"provider": parts[0].strip(), "version": parts[1].strip(), "call": parts[2].strip()}
    if not out["version"]:
        del out["version"]
    return out


#: a leading ``NAME=value`` word: an environment assignment only a shell performs
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _needs_shell(cmd: str) -> bool:
    """Whether ``cmd`` uses shell syntax outside quotes that an argv cannot carry: a pipeline,
    list, redirection or subshell (``| & ; < > ( )``, a line break), an expansion (``$``,
    backquotes, also inside double quotes), a comment, or a leading variable assignment."""
    if _ASSIGNMENT.match(cmd):
        return True
    quote = ""
    word_start = True
    i = 0
    while i < len(cmd):
        ch = cmd[i]
        if quote == "'":
            if ch == "'":
                quote = ""
        elif quote == '"':
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = ""
            elif ch in "$`":
                return True
        elif ch == "\\":
            i += 1
            word_start = False
        elif ch in "'\"":
            quote = ch
            word_start = False
        elif ch in "|&;<>()$`\n\r":
            return True
        elif ch in " \t":
            word_start = True
        elif ch == "#" and word_start:
            return True
        else:
            word_start = False
        i += 1
    return False


def _parse_replay(cmd: str | Sequence[str]) -> tuple[list[str], bool]:
    """The replay argv and whether it must run through a shell: a string with shell syntax
    (a pipeline, a redirection, ``$VAR``...) is kept whole as ``[cmd]`` with ``shell: true``,
    since splitting it would record ``|`` or ``>`` as arguments."""
    shell = False
    if isinstance(cmd, str):
        _check_text(cmd, "--replay-cmd")
        try:
            argv = shlex.split(cmd)
        except ValueError as exc:
            raise OptionError(f"--replay-cmd could not be split into arguments ({exc}): `{cmd}`") from None
        if argv and _needs_shell(cmd.strip()):
            argv, shell = [cmd.strip()], True
    else:
        argv = [str(a) for a in cmd]
        for a in argv:
            _check_text(a, "--replay-cmd")
    if not argv:
        raise OptionError("--replay-cmd is empty; give the exact command that reproduces the run")
    if any("\0" in a for a in argv):
        raise OptionError("--replay-cmd holds a NUL byte, which no command line can carry")
    return argv, shell


# ---------------------------------------------------------------------------------- merging


def _merge(base: dict[str, Any], new: Mapping[str, Any]) -> None:
    """Fill ``base`` from ``new`` without replacing anything ``base`` already has."""
    for key, value in new.items():
        if key not in base or base[key] is None:
            base[key] = copy.deepcopy(value)
        elif isinstance(base[key], dict) and isinstance(value, Mapping):
            _merge(base[key], value)


def _merge_into(base: dict[str, Any], packet: dict[str, Any], base_name: str | None = None) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out.pop("packet_id", None)
    captures = packet.get("profiler") or []
    rest = {k: v for k, v in packet.items() if k not in ("profiler", "packet_id")}
    _merge(out, rest)
    if captures:
        have = out.setdefault("profiler", [])
        if not isinstance(have, list):
            if base_name is not None:
                raise InputError(base_name, None, "the base packet's `profiler` is not a list")
            raise OptionError("--into: the base packet's `profiler` is not a list")
        digests = {((c.get("source") or {}).get("sha256")) for c in have if isinstance(c, dict)} - {None}
        for cap in captures:
            sha = (cap.get("source") or {}).get("sha256")
            if sha is None or sha not in digests:
                have.append(copy.deepcopy(cap))
    return out


def _rebase_raw_tables(base: dict[str, Any], base_dir: str, out_dir: str) -> None:
    """Make the relative ``raw_table.path`` of the base packet's captures (relative to the
    base packet's directory) relative to ``out_dir``, where the merged packet is written:
    the side files stay where they are and the new packet still finds them."""
    captures = base.get("profiler")
    if not isinstance(captures, list) or os.path.abspath(base_dir) == os.path.abspath(out_dir):
        return
    for cap in captures:
        ref = cap.get("raw_table") if isinstance(cap, dict) else None
        if not isinstance(ref, dict):
            continue
        path = ref.get("path")
        if isinstance(path, str) and path and not os.path.isabs(path):
            ref["path"] = os.path.relpath(os.path.join(base_dir, path), os.path.abspath(out_dir))


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node: Any = data
    for i, part in enumerate(path):
        key: Any
        if isinstance(node, list):
            key = _list_index(node, part, path)
        elif isinstance(node, dict):
            key = part
        else:
            raise OptionError(
                f"--set {'.'.join(path)}: `{'.'.join(path[:i])}` is a value, not an object or a list"
            )
        if i == len(path) - 1:
            node[key] = value
            return
        nxt = node[key] if isinstance(node, list) else node.get(key)
        if nxt is None:
            nxt = node[key] = {}
        node = nxt


def _list_index(node: list[Any], part: str, path: tuple[str, ...]) -> int:
    if not part.lstrip("-").isdigit():
        raise OptionError(f"--set {'.'.join(path)}: `{part}` indexes a list; use a number")
    i = int(part)
    if not -len(node) <= i < len(node):
        raise OptionError(
            f"--set {'.'.join(path)}: index {i} is out of range (the list has {len(node)} items)"
        )
    return i


def _load_base(into: str | Path | Mapping[str, Any] | EvidencePacket) -> dict[str, Any]:
    """The base packet's JSON data, at the current schema version (an older base is migrated)."""
    if isinstance(into, EvidencePacket):
        return into.to_dict()
    if isinstance(into, Mapping):
        return _current(copy.deepcopy(dict(into)), "--into")
    from .io import iter_records

    name = str(into)
    docs = []
    for rec in iter_records(name):
        if rec.error is not None:
            raise rec.error
        try:
            docs.append(msgspec.json.decode(rec.data or b""))
        except msgspec.DecodeError as exc:
            raise InputError(name, rec.location, f"not valid JSON ({exc})") from None
        except RecursionError:
            raise InputError(
                name, rec.location, "not valid JSON (nested too deeply to be a packet)"
            ) from None
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise InputError(name, None, f"--into expects one JSON packet object, got {len(docs)} document(s)")
    if _depth(docs[0]) > MAX_BASE_DEPTH:
        # the decoder takes it, but the packet encoder would fail on it later
        raise InputError(name, None, "not valid JSON (nested too deeply to be a packet)")
    return _current(docs[0], name)


def _current(base: dict[str, Any], name: str) -> dict[str, Any]:
    """``base`` migrated to the current schema version when it states an older one."""
    from ._codec.migrate import migrate
    from ._codec.versions import older_supported
    from .errors import MigrationError

    if older_supported(base.get("schema_version")) is None:
        return base
    try:
        return migrate(base)
    except MigrationError as exc:
        raise InputError(name, None, f"--into: not a packet to merge into: {exc}") from None


#: deepest nesting accepted in an ``--into`` base (the packet encoder stops a little above 250)
MAX_BASE_DEPTH = 200


def _depth(doc: Any) -> int:
    """How deeply ``doc`` nests objects and arrays (iterative: no recursion limit)."""
    deepest = 0
    stack = [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def _pointer(loc: Iterable[Any]) -> str:
    return "".join("/" + str(x) for x in loc)


def _finish(
    data: dict[str, Any],
    origin: str,
    captures: list[Any] | None,
    *,
    ids: bool,
    base_name: str | None = None,
) -> EvidencePacket:
    data.pop("packet_id", None)
    try:
        model = EvidencePacket.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        if origin == "--into" and base_name is not None:
            # the adapter's packet is valid: what fails came from the base file (exit 1)
            raise InputError(
                base_name,
                None,
                f"--into: not a packet to merge into: {_pointer(err['loc'])}: {err['msg']}{more}",
            ) from None
        raise OptionError(
            f"{origin}: the packet is not valid after the options were applied: "
            f"{_pointer(err['loc'])}: {err['msg']}{more}"
        ) from None
    if captures:
        # the adapter's captures are validated models already: attach them, do not re-validate
        have = list(model.profiler or [])
        digests = {c.source.sha256 for c in have if c.source is not None and c.source.sha256}
        new = [c for c in captures if c.source is None or c.source.sha256 not in digests]
        model = model.model_copy(update={"profiler": have + new})
    return model.with_id() if ids else model


def ingest(
    tool: str,
    inputs: Sequence[str],
    *,
    replay_cmd: str | Sequence[str] | None = None,
    baseline: str | Mapping[str, Any] | None = None,
    sets: Iterable[str | tuple[tuple[str, ...], Any]] = (),
    into: str | Path | Mapping[str, Any] | EvidencePacket | None = None,
    created_at: str | None = None,
    extra: Mapping[str, Any] | None = None,
    ids: bool = True,
    side_dir: str | Path | None = None,
    side_base: str | Path | None = None,
    inline_max_cells: int | None = None,
) -> IngestResult:
    """Read ``inputs`` with the adapter ``tool`` and complete the packets.

    Order: adapter packet -> merged into ``into`` (base fields win; profiler captures are
    appended) -> ``replay_cmd`` (shlex-split when a string) -> ``baseline``
    (``PROVIDER:VERSION:CALL`` or a dict) -> ``sets`` (dotted paths, applied last) -> packet id.
    ``extra`` holds adapter options (``AdapterOptions.extra``, e.g. from :func:`parse_opts`);
    the adapter sees them while it reads.

    Raises :class:`~kernel_evidence.errors.KernelEvidenceError` for unreadable inputs and
    :class:`OptionError` for malformed options. ``ids=False`` leaves ``packet_id`` unset
    (:func:`ingest_json` computes it while encoding).

    ``side_dir``: where a capture with more than ``inline_max_cells`` raw values (default
    :data:`~kernel_evidence.rawtable.INLINE_MAX_CELLS`) keeps them, as an Arrow IPC file the
    packet references by sha256; paths are recorded relative to ``side_base`` (the directory
    the packets go to) when given. Without ``side_dir`` every value stays in the packet. The
    files written are listed in the result's ``side_files``, and removed when ingest fails.
    With ``side_base`` and an ``into`` file, the relative side file paths of the base
    packet's captures (relative to the base's directory) are made relative to ``side_base``.
    """
    replay, shell = _parse_replay(replay_cmd) if replay_cmd is not None else (None, False)
    if isinstance(into, (str, Path)) and str(into) == "-" and "-" in inputs:
        raise OptionError("--into - and the input - would both read standard input; give one of them a file")
    base_line = (
        parse_baseline(baseline) if isinstance(baseline, str) else (dict(baseline) if baseline else None)
    )
    changes = [parse_set(s) if isinstance(s, str) else s for s in sets]
    base = _load_base(into) if into is not None else None
    if base is not None and isinstance(into, (str, Path)) and str(into) != "-" and side_base is not None:
        _rebase_raw_tables(base, os.path.dirname(os.path.abspath(into)), str(side_base))
    if created_at is not None:
        created_at = _check_timestamp(created_at)
    adapter = get_adapter(tool)
    _check_adapter_options(adapter, extra or {})
    edits = base is not None or replay is not None or base_line is not None or bool(changes)
    # the packet id is recomputed after the edits: adapters that honour `packet_ids` skip theirs
    options = AdapterOptions(
        created_at=created_at,
        extra={**({"packet_ids": False} if edits or not ids else {}), **(extra or {})},
        side_dir=None if side_dir is None else str(side_dir),
        side_base=None if side_base is None else str(side_base),
    )
    if inline_max_cells is not None:
        options.inline_max_cells = inline_max_cells
    try:
        with paused_gc():
            result = _complete(
                adapter,
                inputs,
                options,
                replay,
                base_line,
                changes,
                base,
                created_at,
                ids=ids,
                shell=shell,
                base_name=str(into) if isinstance(into, (str, Path)) else None,
            )
    except BaseException:
        remove_side_files(options.side_files)
        raise
    result.side_files = _drop_unreferenced(list(options.side_files), result.packets, side_base)
    return result


_RAW_TABLE_NAME = re.compile(r".+\.raw-[0-9a-f]{16}\.arrow")


def _drop_unreferenced(
    side_files: list[str], packets: Sequence[EvidencePacket], side_base: str | Path | None
) -> list[str]:
    """The raw-metrics side files this ingest wrote that its packets reference; the others
    are removed (a capture dropped when merging ``--into`` a base that already holds the
    same source, or replaced by ``--set``). Other side files (vLLM samples) are kept."""
    referenced: set[str] = set()
    for packet in packets:
        for cap in packet.profiler or ():
            path = cap.raw_table.path if cap.raw_table is not None else None
            if path:
                where = path if os.path.isabs(path) or side_base is None else os.path.join(side_base, path)
                referenced.add(os.path.abspath(where))
    kept = []
    for f in side_files:
        if _RAW_TABLE_NAME.fullmatch(os.path.basename(f)) and os.path.abspath(f) not in referenced:
            remove_side_files([f])
        else:
            kept.append(f)
    return kept


def remove_side_files(paths: Iterable[str]) -> None:
    """Remove side files an ingest wrote (it failed after writing them); best effort."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _check_adapter_options(adapter: Any, extra: Mapping[str, Any]) -> None:
    """A ``--opt`` key the adapter does not take is a usage error, not silently ignored
    (adapters that declare no ``options``, e.g. plug-ins, get every key)."""
    declared = getattr(adapter, "options", None)
    if declared is None:
        return
    unknown = sorted(k for k in extra if k not in declared and k != "packet_ids")
    if unknown:
        takes = ", ".join(f"`{k}`" for k in sorted(declared)) or "none"
        raise OptionError(
            f"--opt `{unknown[0]}` is not an option of the {adapter.name} adapter; it takes: {takes}"
        )


def ingest_json(tool: str, inputs: Sequence[str], **kwargs: Any) -> tuple[IngestResult, list[bytes]]:
    """:func:`ingest`, plus each packet's JSON bytes: id and bytes come from one canonical
    encoding per packet (what ``kevidence ingest`` writes)."""
    from ._codec.encode import packet_json_with_id, recorded_kernels, recording_kernels

    # the records' JSON the adapters make anyway (ncu, rocprof) is spliced into the packets'
    # JSON, not encoded again: kept while the adapter runs, for the captures whose kernels
    # the edits below leave as the adapter made them (the same list)
    with recording_kernels() as registry:
        result = ingest(tool, inputs, ids=False, **kwargs)
    packets: list[EvidencePacket] = []
    encoded: list[bytes] = []
    with paused_gc():
        for p in result.packets:
            p, data = packet_json_with_id(p, recorded_kernels(p, registry))
            packets.append(p)
            encoded.append(data)
    return IngestResult(packets=packets, warnings=result.warnings, side_files=result.side_files), encoded


def _complete(
    adapter: Any,
    inputs: Sequence[str],
    options: AdapterOptions,
    replay: list[str] | None,
    base_line: dict[str, Any] | None,
    changes: list[tuple[tuple[str, ...], Any]],
    base: dict[str, Any] | None,
    created_at: str | None,
    *,
    ids: bool,
    shell: bool = False,
    base_name: str | None = None,
) -> IngestResult:
    try:
        result = adapter.read(list(inputs), options)
    except ValidationError as exc:
        # an adapter built something the packet models refuse: damaged input (text that is
        # not Unicode, out-of-range numbers) or an adapter bug; either way one line, no traceback
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in err["loc"])
        raise AdapterError(
            f"{', '.join(inputs)}: the {adapter.name} adapter read a value the packet model refuses "
            f"({exc.title}.{where}: {err['msg']}); is the input damaged?"
        ) from None
    if not result.packets:
        raise InputError(
            ", ".join(inputs) or "<no input>",
            None,
            f"the {adapter.name} adapter found nothing to turn into a packet",
        )
    touches_profiler = any(path[0] == "profiler" for path, _ in changes)

    def edited(packet: EvidencePacket, sets: list[tuple[tuple[str, ...], Any]]) -> tuple[dict[str, Any], Any]:
        captures: list[Any] | None = None
        if touches_profiler:
            data = packet.to_dict()
        else:  # captures can hold 10^5 kernels: keep them as models, edit the rest as data
            data = packet.model_dump(mode="json", exclude_none=True, exclude={"profiler"})
            captures = list(packet.profiler or [])
        if base is not None:
            data = _merge_into(base, data, base_name)
            if created_at is not None:
                data["created_at"] = created_at
        if replay is not None:
            rp = data.get("replay")
            if not isinstance(rp, dict):
                rp = data["replay"] = {}
            rp["command"] = replay
            if shell:
                rp["shell"] = True
            else:
                rp.pop("shell", None)
        if base_line is not None:
            timing = data.get("timing")
            if not isinstance(timing, dict):
                timing = data["timing"] = {"method": "other"}
            have = timing.get("baseline")
            timing["baseline"] = {**(have if isinstance(have, dict) else {}), **base_line}
        for path, value in sets:
            _set(data, path, value)
        return data, captures

    packets = []
    for packet in result.packets:
        if base is None and replay is None and base_line is None and not changes:
            packets.append(packet if packet.packet_id or not ids else packet.with_id())
            continue
        data, captures = edited(packet, changes)
        origin = "--set" if changes else ("--into" if base is not None else "ingest")
        try:
            packets.append(_finish(data, origin, captures, ids=ids, base_name=base_name))
        except OptionError:
            if base is not None and changes:
                # is the base itself at fault? then say so, naming its file (not the --set)
                pre, pre_captures = edited(packet, [])
                _finish(pre, "--into", pre_captures, ids=False, base_name=base_name)
            raise
    return IngestResult(packets=packets, warnings=list(result.warnings))


# ------------------------------------------------------------------- fast packet bytes and id


_TIMESTAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?Z")
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _check_timestamp(value: str) -> str:
    """``value`` as a valid RFC 3339 UTC time (a lowercase ``t``/``z`` is made uppercase): a
    real calendar date, hours 00-23, minutes 00-59, seconds 00-59 (60 only at 23:59, a leap
    second)."""
    norm = value[:10] + value[10:].upper() if value.isascii() else value
    m = _TIMESTAMP.fullmatch(norm)
    if m is not None:
        year, month, day, hour, minute, second = (int(x) for x in m.groups()[:6])
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        days = 29 if month == 2 and leap else _DAYS[month - 1] if 1 <= month <= 12 else 0
        if (
            1 <= day <= days
            and hour <= 23
            and minute <= 59
            and (second <= 59 or (second == 60 and hour == 23 and minute == 59))
        ):
            return norm
        raise OptionError(f"--created-at `{value}`: not a valid date and time")
    raise OptionError(f"--created-at expects an RFC 3339 UTC time like 2026-11-22T01:02:03Z, got `{value}`")


def missing_for_validation(packets: Sequence[EvidencePacket | bytes]) -> list[str]:
    """One line per validation rule the packets still fail (errors only), most common first.

    Uses :func:`kernel_evidence.rules.validate` (packets as models or as their JSON bytes, the
    faster path); packets that pass give no line.
    """
    try:
        from .rules import validate
    except ImportError:  # pragma: no cover - the validator ships with the package
        return []
    by_rule: dict[str, list[Any]] = {}
    for p in packets:
        for f in validate(p).findings:
            if f.severity == "error":
                by_rule.setdefault(f.rule_id, []).append(f)
    lines = []
    for rule_id, found in sorted(by_rule.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        f = found[0]
        share = f" ({len(found)} of {len(packets)} packets)" if len(packets) > 1 else ""
        hint = f" - {f.hint}" if getattr(f, "hint", "") else ""
        lines.append(f"{rule_id} at {f.pointer or '/'}{share}: {f.message}{hint}")
    return lines


# ----------------------------------------------------------------------- canonical metric table


def _tool_tables() -> list[dict[str, Any]]:
    from ._resources import adapters_dir, load_toml

    tables = []
    for path in sorted(adapters_dir().glob("*.toml")):
        if path.name == "canonical_metrics.toml":
            continue
        data = load_toml(path.name)
        if isinstance(data.get("metrics"), dict) and data["metrics"]:
            tables.append(data | {"tool": data.get("tool", path.stem)})
    return tables


def _source_text(src: Mapping[str, Any]) -> str:
    m = src.get("metric")
    names = [m] if isinstance(m, str) else list(m or [])
    combine = src.get("combine")
    if src.get("formula"):  # a tool-specific addition (rocprof): the arithmetic itself
        text = str(src["formula"])
    elif not combine or len(names) == 1:
        text = names[0] if names else "?"
    elif combine == "sum":
        w = src.get("weights")
        terms = [f"{x:g}*{n}" if x != 1 else n for n, x in zip(names, w, strict=False)] if w else names
        text = " + ".join(terms)
    elif combine == "product":
        text = " * ".join(names)
    elif combine == "ratio_pct":
        text = f"100 * {names[0]} / {names[1]}"
    else:
        text = f"{combine}({', '.join(names)})"
    if src.get("unit"):
        text += f" [{src['unit']}]"
    return text


def metric_table() -> dict[str, Any]:
    """The joined table: every canonical metric with, per tool, equivalence and sources."""
    from ._resources import load_toml

    canon = load_toml("canonical_metrics.toml")["metrics"]
    tools = _tool_tables()
    rows = []
    for name, spec in canon.items():
        per_tool: dict[str, Any] = {}
        for t in tools:
            entry = t["metrics"].get(name)
            if entry is None:
                continue
            per_tool[t["tool"]] = {
                "equivalence": entry.get("equivalence", "none"),
                "note": entry.get("note"),
                "sources": [
                    {"text": _source_text(s), "equivalence": s.get("equivalence"), "note": s.get("note")}
                    for s in entry.get("sources", [])
                ],
            }
        rows.append(
            {
                "name": name,
                "unit": spec.get("unit"),
                "description": spec.get("description"),
                "tools": per_tool,
            }
        )
    return {
        "tools": [
            {
                "tool": t["tool"],
                "display_name": t.get("display_name", t["tool"]),
                "versions": t.get("versions"),
            }
            for t in tools
        ],
        "metrics": rows,
    }


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_metric_table(fmt: str = "text") -> str:
    """``text``, ``markdown`` or ``json`` rendering of :func:`metric_table`."""
    table = metric_table()
    if fmt == "json":
        return json.dumps(table, indent=2) + "\n"
    tools = table["tools"]
    if fmt == "markdown":
        head = "| canonical metric | unit | " + " | ".join(_md(t["display_name"]) for t in tools) + " |"
        sep = "|---|---|" + "---|" * len(tools)
        lines = [head, sep]
        for row in table["metrics"]:
            cells = [f"`{row['name']}`", _md(row["unit"] or "")]
            for t in tools:
                e = row["tools"].get(t["tool"])
                if e is None:
                    cells.append("-")
                    continue
                srcs = "<br>".join(
                    f"`{_md(s['text'])}`" + (f" ({s['equivalence']})" if s.get("equivalence") else "")
                    for s in e["sources"]
                )
                cell = f"**{e['equivalence']}**" + (f"<br>{srcs}" if srcs else "")
                if e.get("note"):
                    cell += f"<br>_{_md(e['note'])}_"
                cells.append(cell)
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        lines.append(
            "Equivalence: **exact** = same quantity; **approximate** = close, see the note; **none** = the tool has no such metric; - = not stated."
        )
        return "\n".join(lines) + "\n"
    if fmt != "text":
        raise OptionError(f"--format must be text, markdown or json, got `{fmt}`")
    width = max([len(t["tool"]) for t in tools] + [4])
    lines = []
    for row in table["metrics"]:
        lines.append(f"{row['name']} [{row['unit']}]  {row['description'] or ''}".rstrip())
        for t in tools:
            e = row["tools"].get(t["tool"])
            if e is None:
                lines.append(f"  {t['tool']:<{width}}  -")
                continue
            srcs = " | ".join(s["text"] for s in e["sources"])
            lines.append(f"  {t['tool']:<{width}}  {e['equivalence']:<11}  {srcs}".rstrip())
        lines.append("")
    return "\n".join(lines)
