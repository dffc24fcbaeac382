"""The archive's on-disk layout: its marker file, version checks, file listing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import ArchiveError
from .schema import ARCHIVE_LAYOUT_VERSION, MARKER_NAME

__all__ = [
    "check_layout",
    "data_files",
    "format_version",
    "init_marker",
    "parse_version",
    "read_marker",
]

_FORMAT = "kevidence-archive"


def format_version(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def parse_version(text: object, where: str) -> tuple[int, int]:
    """``"1.0"`` -> ``(1, 0)``; anything else is an :class:`ArchiveError` naming ``where``."""
    parts = text.split(".") if isinstance(text, str) else []
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() and len(p) <= 6 for p in parts):
        shown = text if not isinstance(text, str) or len(text) <= 40 else text[:40] + "..."
        raise ArchiveError(f"{where}: expected a layout version like `1.0`, got `{shown}`")
    return int(parts[0]), int(parts[1])


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


def data_files(root: Path) -> list[Path]:
    """Every visible ``.parquet`` file under ``root``, sorted; hidden and ``_`` names skipped."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for f in sorted(filenames):
            if f.endswith(".parquet") and not f.startswith((".", "_")):
                out.append(Path(dirpath) / f)
    return out
