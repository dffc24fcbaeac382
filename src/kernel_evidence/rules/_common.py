"""Small helpers several rule bands share (no rules here)."""

from __future__ import annotations

#: caches of values read from packets hold short strings only: a hostile batch must not pin
#: its largest strings in memory
CACHED_CHARS = 256

LO = 1 - 1e-9
HI = 1 + 1e-9
TINY = 1e-12  # absolute slack for comparisons whose bound can be 0
SLACK = 1.05  # boost clocks and rounding: reject only what is clearly above the peak

#: the time statistics a speedup can be computed on (the others are serving throughputs)
TIME_BASES = ("median", "mean", "min")


def a(word: str) -> str:
    """The indefinite article for ``word`` (a failed packet, an error packet)."""
    return "an" if word[:1] in "aeiou" else "a"
