"""ISO 8601 timestamps as tools write them, read the same on every supported Python.

``datetime.fromisoformat`` before Python 3.11 takes neither a ``Z`` suffix nor a fraction of
other than 3 or 6 digits (``06:19:54.5``), both of which tools write; :func:`parse_iso`
normalises those first, so an adapter reads the same time on 3.10 as on 3.11+.
"""

from __future__ import annotations

import re
from datetime import datetime

__all__ = ["parse_iso"]

_FRACTION = re.compile(r"(T|\s)(\d{2}:\d{2}:\d{2})[.,](\d+)")


def _six(m: re.Match[str]) -> str:
    return f"{m.group(1)}{m.group(2)}.{(m.group(3) + '000000')[:6]}"


def parse_iso(text: str) -> datetime:
    """``text`` as a datetime (naive when it names no zone); ValueError when it is not an
    ISO 8601 date-time. A fraction beyond microseconds is cut, not rounded."""
    t = text.strip()
    if t[-1:] in ("Z", "z"):
        t = t[:-1] + "+00:00"
    t = _FRACTION.sub(_six, t, count=1)
    return datetime.fromisoformat(t)
