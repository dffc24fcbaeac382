"""Third-party verdicts on archived packets, kept beside the evidence and never inside it.

A verdict says what someone found out about a packet after it was archived: its result was
``confirmed`` (checked and believed), ``reproduced`` (run again with the same result: the
evidence is the rerun's packet), ``drifted`` (run again with a different result), ``hacked``
(the result came from gaming the harness) or ``retracted`` (withdrawn by its author). Each
record names the packet, the verdict, who gave it, when, why, and the packet id of the
evidence behind it when there is one.

Records live in ``<archive>/_verdicts/verdicts.jsonl``, one JSON object a line, appended
and never rewritten: :func:`add_verdict` validates a record, opens the file with
``O_APPEND`` under an exclusive ``flock``, writes the line in one ``write`` and
``fsync``\\ s it. A line a crash cut short (no newline at the end of the file) is left
out by readers and cut by the next writer; no complete record is ever changed. A later verdict on the
same packet does not replace an earlier one; :func:`current_verdicts` takes the latest
per packet. The archived packets are never touched (their ids are their content).

>>> Verdict.parse({"packet_id": "sha256:" + "ab" * 32, "verdict": "hacked", "by": "jo",
...                "at": "2026-11-27T10:00:00Z", "why": "caches outputs"}, "example").verdict
'hacked'
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ArchiveError, UsageError

__all__ = [
    "VERDICTS",
    "VERDICTS_DIR",
    "VERDICTS_FILE",
    "Verdict",
    "VerdictError",
    "add_verdict",
    "current_verdicts",
    "iter_verdicts",
    "packet_ids_with",
    "verdict_filter",
    "verdicts_by_packet",
    "verdicts_path",
]

#: the verdicts a record may give
VERDICTS: tuple[str, ...] = ("confirmed", "reproduced", "drifted", "hacked", "retracted")
#: verdicts that rest on a rerun, whose packet must be named as the evidence
_NEED_EVIDENCE = frozenset({"reproduced", "drifted"})
VERDICTS_DIR = "_verdicts"
VERDICTS_FILE = "verdicts.jsonl"
#: the record format (written into each record; a reader refuses a newer major)
RECORD_VERSION = 1

_ID = re.compile(r"^sha256:[0-9a-f]{64}$")
_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$")
_KEYS = ("record_version", "packet_id", "verdict", "by", "at", "why", "evidence")
#: longest ``why`` and ``by`` texts (a record stays one short line, written in one write)
MAX_WHY = 2000
MAX_BY = 200


class VerdictError(UsageError):
    """A verdict record that cannot be written as given (a usage error at the CLI)."""


@dataclass(frozen=True)
class Verdict:
    """One third-party verdict on one packet."""

    packet_id: str
    verdict: str
    by: str
    at: str
    why: str
    evidence: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"record_version": RECORD_VERSION}
        for key in _KEYS[1:]:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def to_json(self) -> bytes:
        """The record as one compact JSON line (with its newline)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    @classmethod
    def parse(cls, data: Mapping[str, Any], where: str) -> Verdict:
        """A verdict from JSON data, checked; :class:`VerdictError` naming ``where`` and the
        field otherwise."""
        if not isinstance(data, Mapping):
            raise VerdictError(f"{where}: expected a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_KEYS))
        if unknown:
            raise VerdictError(f"{where}: unknown field `{unknown[0]}`; expected {', '.join(_KEYS)}")
        version = data.get("record_version", RECORD_VERSION)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise VerdictError(f"{where}: `record_version` must be a positive integer, got {version!r}")
        if version > RECORD_VERSION:
            raise VerdictError(
                f"{where}: record_version {version} is newer than this version reads ({RECORD_VERSION}); "
                "upgrade kernel-evidence"
            )
        v = cls(
            packet_id=_text(data, "packet_id", where),
            verdict=_text(data, "verdict", where),
            by=_text(data, "by", where),
            at=_text(data, "at", where),
            why=_text(data, "why", where),
            evidence=_text(data, "evidence", where, required=False),
        )
        v.check(where)
        return v

    def check(self, where: str = "verdict") -> None:
        """Raise :class:`VerdictError` for a field that is not what a record holds."""
        for name in ("packet_id", "evidence"):
            value = getattr(self, name)
            if value is not None and not _ID.match(value):
                raise VerdictError(
                    f"{where}: `{name}` must be a packet id (sha256: and 64 hex digits), got {value!r}"
                )
        if self.verdict not in VERDICTS:
            raise VerdictError(
                f"{where}: `verdict` must be one of {', '.join(VERDICTS)}, got {self.verdict!r}"
            )
        if not self.by.strip() or len(self.by) > MAX_BY:
            raise VerdictError(f"{where}: `by` must name who gives the verdict (1 to {MAX_BY} characters)")
        if not self.why.strip() or len(self.why) > MAX_WHY:
            raise VerdictError(f"{where}: `why` must say why (1 to {MAX_WHY} characters)")
        if not _UTC.match(self.at) or _calendar(self.at) is None:
            raise VerdictError(
                f"{where}: `at` must be an RFC 3339 UTC time like 2026-11-27T10:00:00Z, got {self.at!r}"
            )
        if self.verdict in _NEED_EVIDENCE and self.evidence is None:
            raise VerdictError(
                f"{where}: a `{self.verdict}` verdict rests on a rerun: give the rerun's packet id as `evidence`"
            )
        if self.evidence is not None and self.evidence == self.packet_id:
            raise VerdictError(
                f"{where}: `evidence` is the packet itself; name the packet that backs the verdict"
            )


def _text(data: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> Any:
    value = data.get(key)
    if value is None:
        if required:
            raise VerdictError(f"{where}: missing `{key}`")
        return None
    if not isinstance(value, str):
        raise VerdictError(f"{where}: `{key}` must be a string, got {type(value).__name__}")
    return value


def _calendar(text: str) -> datetime | None:
    try:
        return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def verdicts_path(archive_root: str | os.PathLike[str]) -> Path:
    """Where an archive's verdicts are kept: ``<archive>/_verdicts/verdicts.jsonl``."""
    return Path(archive_root) / VERDICTS_DIR / VERDICTS_FILE


def _archived_ids(root: Path, ids: Iterable[str]) -> set[str]:
    """Those of ``ids`` the archive holds."""
    import pyarrow.compute as pc

    from .reader import scan

    wanted = sorted(set(ids))
    found: set[str] = set()
    for batch in scan(root, ["packet_id"], pc.field("packet_id").isin(wanted)):
        found.update(batch.column(0).to_pylist())
    return found


def add_verdict(
    archive_root: str | os.PathLike[str],
    packet_id: str,
    verdict: str,
    *,
    by: str,
    why: str,
    evidence: str | None = None,
    at: str | None = None,
    require_archived: bool = True,
) -> Verdict:
    """Append a verdict on ``packet_id`` to the archive's verdict file and return it.

    The record is checked first (:class:`VerdictError`, a usage error, when a field is
    wrong); with ``require_archived`` the packet must be in the archive. The line is written
    with one ``write`` on a file opened with ``O_APPEND`` and ``fsync``\\ ed, so concurrent
    writers never interleave inside a line and a record once returned survives a crash.
    ``at`` defaults to now (UTC)."""
    root = Path(archive_root)
    from ._layout import read_marker

    read_marker(root, for_write=False)
    record = Verdict(packet_id, verdict, by, at if at is not None else _now(), why, evidence)
    record.check("verdict")
    if require_archived and not _archived_ids(root, [packet_id]):
        raise VerdictError(f"{packet_id}: not in the archive {root}; a verdict names an archived packet")
    path = verdicts_path(root)
    line = record.to_json()
    try:
        made = not path.parent.is_dir()
        path.parent.mkdir(exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # writers take turns: the torn-tail check below is theirs alone
            _drop_torn_tail(fd, path)
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(0, f"short write ({written} of {len(line)} bytes)")
            os.fsync(fd)
        finally:
            os.close(fd)  # releases the lock
        if made:
            _fsync_dir(path.parent)
            _fsync_dir(root)
    except OSError as exc:
        raise ArchiveError(f"{path}: the verdict could not be written ({exc.strerror or exc})") from None
    return record


#: the longest record a writer makes (``why`` and ``by`` at their caps, four bytes a
#: character, and the rest): a torn tail is shorter
_MAX_RECORD = 4 * (MAX_WHY + MAX_BY) + 1024


def _drop_torn_tail(fd: int, path: Path) -> None:
    """Cut what follows the last newline: a record whose write a crash cut short (never
    returned to its writer). Complete records are never touched."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    start = max(0, size - _MAX_RECORD)
    tail = os.pread(fd, size - start, start)
    cut = tail.rfind(b"\n")
    if cut < 0 and start > 0:
        raise ArchiveError(f"{path}: ends in {_MAX_RECORD}+ bytes without a line break; not a verdict file")
    os.ftruncate(fd, start + cut + 1)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def iter_verdicts(
    archive_root: str | os.PathLike[str],
    *,
    packet_id: str | None = None,
    verdict: str | Iterable[str] | None = None,
) -> Iterator[Verdict]:
    """The archive's verdicts in the order they were given (none when it has no verdict
    file), only those on ``packet_id`` and of ``verdict`` (one or several) when given.

    A line that is not a valid record is an :class:`~kernel_evidence.errors.ArchiveError`
    naming the file and line, except a last line without its newline (a write cut short
    by a crash, never returned to its writer), which is left out."""
    wanted = _wanted(verdict)
    path = verdicts_path(archive_root)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ArchiveError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    lines = data.split(b"\n")
    lines.pop()  # what follows the last newline: nothing, or a write a crash cut short
    for no, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        v = _decode(raw, f"{path}:{no}")
        if (packet_id is None or v.packet_id == packet_id) and (wanted is None or v.verdict in wanted):
            yield v


def _decode(raw: bytes, where: str) -> Verdict:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ArchiveError(f"{where}: not a JSON verdict record ({exc})") from None
    try:
        return Verdict.parse(data, where)
    except VerdictError as exc:
        raise ArchiveError(str(exc)) from None


def _wanted(verdict: str | Iterable[str] | None) -> frozenset[str] | None:
    if verdict is None:
        return None
    names = frozenset([verdict] if isinstance(verdict, str) else verdict)
    bad = sorted(names - set(VERDICTS))
    if bad:
        raise VerdictError(f"unknown verdict `{bad[0]}`; expected one of {', '.join(VERDICTS)}")
    return names


def verdicts_by_packet(archive_root: str | os.PathLike[str]) -> dict[str, list[Verdict]]:
    """Every verdict of the archive, grouped by packet id, each list in the order given."""
    out: dict[str, list[Verdict]] = {}
    for v in iter_verdicts(archive_root):
        out.setdefault(v.packet_id, []).append(v)
    return out


def current_verdicts(archive_root: str | os.PathLike[str]) -> dict[str, Verdict]:
    """The latest verdict on each packet (the last one appended)."""
    return {pid: vs[-1] for pid, vs in verdicts_by_packet(archive_root).items()}


def packet_ids_with(
    archive_root: str | os.PathLike[str], verdict: str | Iterable[str], *, latest: bool = True
) -> set[str]:
    """The ids of the packets whose verdict is ``verdict`` (one or several): their latest
    verdict with ``latest`` (a packet found ``hacked`` and later ``confirmed`` is not
    ``hacked``), any of their verdicts without it."""
    wanted = _wanted(verdict) or frozenset()
    if latest:
        return {pid for pid, v in current_verdicts(archive_root).items() if v.verdict in wanted}
    return {v.packet_id for v in iter_verdicts(archive_root, verdict=wanted)}


def verdict_filter(
    archive_root: str | os.PathLike[str],
    verdict: str | Iterable[str],
    where: Any = None,
    *,
    latest: bool = True,
) -> Any:
    """``where`` (a :mod:`pyarrow.compute` expression, or None) narrowed to the packets
    :func:`packet_ids_with` names: what the archive's readers use to filter by verdict."""
    import pyarrow.compute as pc

    ids = sorted(packet_ids_with(archive_root, verdict, latest=latest))
    expr = pc.field("packet_id").isin(ids)
    return expr if where is None else where & expr
