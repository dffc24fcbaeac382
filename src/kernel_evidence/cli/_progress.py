"""A one-line progress counter on a terminal: how many, of how many when known, how fast.

Written on standard error, rewritten in place at most every :data:`EVERY` seconds, and
cleared when done, so that the command's own output (a summary line on standard output)
is all that remains. Off when standard error is not a terminal: logs and pipes get no
carriage returns.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import TextIO

__all__ = ["Counter", "known_total"]

#: seconds between two redraws
EVERY = 0.2

_ONE_DOCUMENT = (".json", ".json.zst")


def known_total(paths: Iterable[str]) -> int | None:
    """The number of documents ``paths`` hold when it can be told without reading them:
    every input is a ``.json`` file (one document each), else ``None`` (JSONL, standard
    input: only reading tells). Directories are listed as the commands list them."""
    from ..io import discover

    names = []
    for name in discover(list(paths)):
        if name == "-" or not name.endswith(_ONE_DOCUMENT):
            return None
        names.append(name)
    return len(names)


class Counter:
    """``label: 1,200 of 4,000 packets (30%), 2,350/s``; ``of`` only when a total is known
    (and still right: a JSON array holds more than one packet)."""

    def __init__(
        self, label: str, total: int | None = None, *, unit: str = "packets", stream: TextIO | None = None
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.label, self.total, self.unit = label, total, unit
        self.on = bool(getattr(self.stream, "isatty", lambda: False)())
        self.count = 0
        self.start = time.monotonic()
        self.shown = 0.0
        self.width = 0

    def add(self, n: int = 1) -> None:
        self.count += n
        now = time.monotonic()
        if self.on and now - self.shown >= EVERY:
            self.shown = now
            self._draw(now)

    def line(self, now: float | None = None) -> str:
        elapsed = (time.monotonic() if now is None else now) - self.start
        rate = f", {self.count / elapsed:,.0f}/s" if elapsed > 0 and self.count else ""
        if self.total is not None and self.count <= self.total:
            share = f" ({self.count / self.total:.0%})" if self.total else ""
            return f"{self.label}: {self.count:,} of {self.total:,} {self.unit}{share}{rate}"
        return f"{self.label}: {self.count:,} {self.unit}{rate}"

    def _draw(self, now: float) -> None:
        text = self.line(now)
        pad = max(self.width - len(text), 0)
        self.width = len(text)
        try:
            self.stream.write("\r" + text + " " * pad)
            self.stream.flush()
        except (OSError, ValueError):
            self.on = False  # a closed terminal: the command goes on without it

    def close(self) -> None:
        if self.on and self.width:
            try:
                self.stream.write("\r" + " " * self.width + "\r")
                self.stream.flush()
            except (OSError, ValueError):
                pass
        self.on = False
