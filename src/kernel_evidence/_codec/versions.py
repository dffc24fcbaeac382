"""Schema versions: one ordered value, parsed in one place.

>>> SchemaVersion.parse("0.10") > SchemaVersion.parse("0.9")
True
>>> str(CURRENT)
'0.2'

A version is compared as a pair of numbers, never as a string (as text, ``0.10`` sorts
before ``0.9``). :func:`parse_pair` is the one parser of ``MAJOR.MINOR`` text; the archive's
layout versions use it too.

This module imports nothing of the package: the models take their ``SCHEMA_VERSION`` from it.
"""

from __future__ import annotations

from functools import total_ordering
from typing import Any

__all__ = ["CURRENT", "SUPPORTED", "SchemaVersion", "parse_pair", "supported_text"]

#: digits of one part at most: a version of more is no version (and no huge int to build)
_MAX_DIGITS = 6


def parse_pair(text: object) -> tuple[int, int] | None:
    """``"1.0"`` -> ``(1, 0)``; None for anything that is not two dot-separated decimal
    numbers (ASCII digits, at most six each)."""
    if not isinstance(text, str):
        return None
    parts = text.split(".")
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() and len(p) <= _MAX_DIGITS for p in parts):
        return None
    return int(parts[0]), int(parts[1])


@total_ordering
class SchemaVersion:
    """An ordered schema version (``0.1`` < ``0.2`` < ``0.10`` < ``1.0``), never compared as a string."""

    __slots__ = ("major", "minor")

    def __init__(self, major: int, minor: int) -> None:
        self.major = major
        self.minor = minor

    @classmethod
    def parse(cls, text: str) -> SchemaVersion:
        """``"0.2"`` -> ``SchemaVersion(0, 2)``; anything else raises ValueError."""
        pair = parse_pair(text)
        if pair is None:
            shown = text if not isinstance(text, str) or len(text) <= 40 else text[:40] + "..."
            raise ValueError(f"expected a schema version like `{CURRENT}`, got `{shown}`")
        return cls(*pair)

    def _key(self) -> tuple[int, int]:
        return (self.major, self.minor)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SchemaVersion) and self._key() == other._key()

    def __lt__(self, other: SchemaVersion) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def __repr__(self) -> str:
        return f"SchemaVersion({self.major}, {self.minor})"


#: the version every writer writes and the models describe
CURRENT = SchemaVersion(0, 2)
#: every version a reader accepts, oldest first; the older ones are migrated to CURRENT
SUPPORTED: tuple[SchemaVersion, ...] = (SchemaVersion(0, 1), CURRENT)


def supported_text() -> str:
    """``"0.1, 0.2"``: the versions this reader accepts, for messages."""
    return ", ".join(map(str, SUPPORTED))


def older_supported(value: Any) -> SchemaVersion | None:
    """The version ``value`` names when it is a supported one older than CURRENT, else None."""
    pair = parse_pair(value)
    if pair is None:
        return None
    v = SchemaVersion(*pair)
    return v if v in SUPPORTED and v < CURRENT else None
