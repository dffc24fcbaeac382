"""The archive's on-disk layout: its marker file, version checks, file listing, commits.

A run becomes visible all at once through the commit list ``_kevidence_commits.json``: the
data files of the archive, relative to its root. A writer renames its new files into place,
then replaces the list (one atomic rename) with one that names them too; readers take the
files the list names and no others, so a run killed before its list is written shows
nothing of itself. Before the first rename the writer names the files it is about to add
in ``_kevidence_pending.json``; the next run removes those that no list names (a killed
run's files), and the hidden temporary files any run left behind. An archive without a
list (written before layout 1.1) is read whole, and gets its list, naming every file it
holds, from the first writer of layout 1.1 or later. A writer marks an archive of an older
layout with its own, so that older writers refuse to append (their files would not be
listed).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

from .._codec.versions import parse_pair
from ..errors import ArchiveError
from .schema import ARCHIVE_LAYOUT_VERSION, MARKER_NAME

__all__ = [
    "COMMITS_NAME",
    "PENDING_NAME",
    "begin_commit",
    "check_layout",
    "clean_leftovers",
    "committed",
    "data_files",
    "end_commit",
    "format_version",
    "init_marker",
    "parse_version",
    "read_marker",
    "upgrade",
]

#: the list of committed data files, and the files a run is about to add (both JSON)
COMMITS_NAME = "_kevidence_commits.json"
PENDING_NAME = "_kevidence_pending.json"
#: the names a writer gives its data files (a leftover of another name is never removed)
_PART_NAME = re.compile(r"^part-\d{8}T\d{6}-[0-9a-f]{16}\.parquet$")
#: hidden temporary files of a run: data files, spills, raw table copies, the two lists
_TEMP_NAME = re.compile(
    r"^\.(?:part-\d{8}T\d{6}-[0-9a-f]{16}\.parquet|spill-[0-9a-f]{16}\.arrows|"
    r"[0-9a-f]{64}\.[0-9a-f]{12}\.arrow|_kevidence_(?:commits|pending)\.json\.[0-9a-f]{8})\.tmp$"
)

_FORMAT = "kevidence-archive"


def format_version(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def parse_version(text: object, where: str) -> tuple[int, int]:
    """``"1.0"`` -> ``(1, 0)``; anything else is an :class:`ArchiveError` naming ``where``
    (parsed as schema versions are: :func:`kernel_evidence._codec.versions.parse_pair`)."""
    pair = parse_pair(text)
    if pair is None:
        shown = text if not isinstance(text, str) or len(text) <= 40 else text[:40] + "..."
        raise ArchiveError(f"{where}: expected a layout version like `1.0`, got `{shown}`")
    return pair


def _too_new(root: Path, found: tuple[int, int]) -> ArchiveError:
    return ArchiveError(
        f"{root}: archive layout {format_version(found)} is newer than this kevidence supports "
        f"({format_version(ARCHIVE_LAYOUT_VERSION)}); upgrade kernel-evidence"
    )


def read_marker(root: Path, *, for_write: bool) -> dict[str, Any]:
    """Check that ``root`` is an archive this version can read (or append to).

    A reader accepts any layout of the same major version; a writer refuses any newer
    layout, so that it never mixes older files into a newer archive.
    """
    if not root.exists():
        raise ArchiveError(f"{root}: no such archive directory")
    if not root.is_dir():
        raise ArchiveError(f"{root}: not a directory; expected a kevidence archive")
    marker = root / MARKER_NAME
    if not marker.is_file():
        hint = (
            "archive into a new or empty directory"
            if for_write
            else "expected a folder `kevidence archive` wrote"
        )
        raise ArchiveError(f"{root}: not a kevidence archive (no {MARKER_NAME}); {hint}")
    try:
        meta = json.loads(marker.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ArchiveError(f"{marker}: unreadable archive marker ({why})") from None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise ArchiveError(f"{marker}: not a kevidence archive marker (expected format `{_FORMAT}`)")
    check_layout(root, parse_version(meta.get("layout_version"), str(marker)), for_write=for_write)
    return meta


def check_layout(root: Path, found: tuple[int, int], *, for_write: bool) -> None:
    ours = ARCHIVE_LAYOUT_VERSION
    if found[0] > ours[0] or (for_write and found > ours):
        raise _too_new(root, found)


def init_marker(root: Path, producer: str, schema_version: str) -> bool:
    """Make ``root`` an archive if it is new or empty; returns True when it was created.

    Raises :class:`ArchiveError` when ``root`` holds other things and no marker.
    """
    if root.exists() and not root.is_dir():
        raise ArchiveError(f"{root}: not a directory; expected a kevidence archive")
    if (root / MARKER_NAME).is_file():
        return False
    if root.exists() and any(root.iterdir()):
        raise ArchiveError(
            f"{root}: not a kevidence archive (no {MARKER_NAME}) and not empty; "
            "archive into a new or empty directory"
        )
    root.mkdir(parents=True, exist_ok=True)
    body = {
        "format": _FORMAT,
        "layout_version": format_version(ARCHIVE_LAYOUT_VERSION),
        "packet_schema_version": schema_version,
        "partitioning": ["vendor", "month"],
        "created_by": producer,
    }
    tmp = root / f".{MARKER_NAME}.tmp"
    tmp.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, root / MARKER_NAME)
    return True


def _visible(root: Path) -> list[Path]:
    """Every visible ``.parquet`` file under ``root``, sorted; hidden and ``_`` names skipped."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for f in sorted(filenames):
            if f.endswith(".parquet") and not f.startswith((".", "_")):
                out.append(Path(dirpath) / f)
    return out


def _read_list(path: Path) -> list[str] | None:
    """The file names a commit or pending list holds; None when there is none."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else " ".join(str(exc).split())
        raise ArchiveError(f"{path}: unreadable list of archive files ({why})") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ArchiveError(f'{path}: not a list of archive files (expected {{"files": [...]}})')
    return files


def _safe(root: Path, rel: str, where: Path) -> Path:
    """``root / rel`` for a name of a list, which must stay inside the archive."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\x00" in rel:
        raise ArchiveError(f"{where}: `{rel}` is not a data file of the archive")
    return root.joinpath(*parts)


def committed(root: Path) -> set[str] | None:
    """The data files the archive's commit list names (relative, with ``/``), or None for
    an archive without one (written before layout 1.1: every visible file counts)."""
    files = _read_list(root / COMMITS_NAME)
    return None if files is None else set(files)


def data_files(root: Path, under: Path | None = None) -> list[Path]:
    """The archive's data files, sorted: those its commit list names (a file the list names
    that is gone is kept, so that opening it says so), or every visible ``.parquet`` file of
    an archive without a list; only those in ``under`` (a partition folder) when given."""
    names = committed(root)
    if names is None:
        files = _visible(under if under is not None else root)
    else:
        files = sorted(_safe(root, rel, root / COMMITS_NAME) for rel in names)
        if under is not None:
            files = [f for f in files if under in f.parents]
    return files


def _write_json(root: Path, name: str, body: dict[str, Any]) -> None:
    """``root/name`` replaced atomically by ``body`` (written, synced, renamed, dir synced)."""
    tmp = root / f".{name}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            data = (json.dumps(body, indent=1) + "\n").encode()
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, root / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(root)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def upgrade(root: Path) -> set[str]:
    """Under the writer's lock: the committed files. An archive without a commit list (an
    archive of layout 1.0) gets one naming every file it holds; then a marker of an older
    layout is marked with this writer's, so that older writers refuse to append (their
    files would not be listed, or not as this layout lays them out)."""
    names = committed(root)
    if names is None:
        names = {f.relative_to(root).as_posix() for f in _visible(root)}
        _write_json(root, COMMITS_NAME, {"files": sorted(names)})
    _mark_current(root)
    return names


def _mark_current(root: Path) -> None:
    """The marker's ``layout_version`` raised to this writer's, rewritten in place (the
    marker is the file the writer's lock is held on: replacing it would free the lock)."""
    marker = root / MARKER_NAME
    meta = json.loads(marker.read_bytes())
    if parse_version(meta.get("layout_version"), str(marker)) >= ARCHIVE_LAYOUT_VERSION:
        return
    meta["layout_version"] = format_version(ARCHIVE_LAYOUT_VERSION)
    data = (json.dumps(meta, indent=2) + "\n").encode()
    fd = os.open(marker, os.O_WRONLY)
    try:
        if hasattr(os, "pwrite"):  # the same length ("1.0" -> "1.1"): one write, in place
            os.pwrite(fd, data, 0)
        else:  # pragma: no cover - Windows
            os.write(fd, data)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


def clean_leftovers(root: Path, names: set[str]) -> list[str]:
    """Under the writer's lock: remove what runs killed before their commit left behind,
    the data files their pending list names that no commit lists, and hidden temporary
    files; returns what was removed (relative to ``root``)."""
    removed: list[str] = []
    pending = root / PENDING_NAME
    for rel in _read_list(pending) or []:
        path = _safe(root, rel, pending)
        if rel not in names and _PART_NAME.match(path.name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed.append(rel)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for f in filenames:
            if _TEMP_NAME.match(f):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(Path(dirpath) / f)
                    removed.append((Path(dirpath) / f).relative_to(root).as_posix())
    with contextlib.suppress(FileNotFoundError):
        os.unlink(pending)
    return sorted(removed)


def begin_commit(root: Path, new: list[str]) -> None:
    """Name the files a run is about to rename into place (before the first rename)."""
    _write_json(root, PENDING_NAME, {"files": sorted(new)})


def end_commit(root: Path, names: set[str], new: list[str]) -> None:
    """The commit point: the list names the run's files too; then the pending list goes."""
    _write_json(root, COMMITS_NAME, {"files": sorted(names | set(new))})
    with contextlib.suppress(OSError):
        os.unlink(root / PENDING_NAME)
