"""Small helpers several rule bands share (no rules here)."""

from __future__ import annotations

import re
import sys
from typing import Any

#: caches of values read from packets hold short strings only: a hostile batch must not pin
#: its largest strings in memory
CACHED_CHARS = 256

LO = 1 - 1e-9
HI = 1 + 1e-9
TINY = 1e-12  # absolute slack for comparisons whose bound can be 0
SLACK = 1.05  # boost clocks and rounding: reject only what is clearly above the peak

#: the time statistics a speedup can be computed on (the others are serving throughputs)
TIME_BASES = ("median", "mean", "min")


class _LazyPattern:
    """A regular expression compiled when first used, not when its module is imported: the
    bands hold about a hundred, and a command line that validates one packet would spend
    a tenth of its start-up compiling them. On first use it compiles, puts the compiled
    pattern in place of itself among its module's globals (later lookups get the real
    pattern) and keeps its methods (for references held elsewhere, such as tables)."""

    def __init__(self, module_globals: dict[str, Any], pattern: str, flags: int) -> None:
        self._globals = module_globals
        self._pattern = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self.__dict__["_compiled"] = re.compile(self._pattern, self._flags)
            for key, value in list(self._globals.items()):
                if value is self:
                    self._globals[key] = compiled
            for method in ("search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"):
                setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)


def lazy_re(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)`` at first use (see :class:`_LazyPattern`)."""
    return _LazyPattern(sys._getframe(1).f_globals, pattern, flags)  # type: ignore[return-value]


def a(word: str) -> str:
    """The indefinite article for ``word`` (a failed packet, an error packet)."""
    return "an" if word[:1] in "aeiou" else "a"


def cand(t: Any, name: str) -> tuple[Any, str]:
    """The candidate's value of condition ``name`` and its pointer: ``timing.conditions.X``
    (schema 0.2), else the flat ``timing.X`` of 0.1 (None where neither is given)."""
    c = t.conditions
    if c is not None:
        v = getattr(c, name)
        if v is not None:
            return v, "/timing/conditions/" + name
    return getattr(t, name, None), "/timing/" + name


def cache_mode(t: Any) -> tuple[str | None, str]:
    """The candidate's cache mode and its pointer (``conditions.cache.mode``, else the flat
    ``cache_policy``)."""
    c = t.conditions
    if c is not None and c.cache is not None:
        return c.cache.mode, "/timing/conditions/cache/mode"
    return t.cache_policy, "/timing/cache_policy"


#: placeholders that name no version, call or commit
PLACEHOLDERS = frozenset({
    "unknown", "n/a", "na", "latest", "none", "null", "nil", "?", "??", "-", "--", "...", "tbd",
    "todo", "tba", "unspecified", "not specified", "default", "current", "any", "x", "xx", "xxx",
    "<version>", "<call>", "same", "same as above", "various", "nightly", "master", "main", "dev",
    "head", "trunk", "stable", "release", "rolling", "edge",
    # calls that name none
    "see code", "see script", "see readme", "see above", "see below", "as above", "baseline",
    "the baseline", "library call", "standard call", "vendor library", "the library", "reference",
    "same as candidate", "same call", "same as the candidate", "unchanged", "as usual",
})  # fmt: skip


def is_placeholder(s: str) -> bool:
    """A placeholder, or a call whose arguments are elided (``f(...)``). Cached: a batch
    repeats a few versions and calls."""
    hit = _PLACEHOLDER_CACHE.get(s)
    if hit is None:
        t = s.strip().casefold()
        hit = t in PLACEHOLDERS or "..." in t or "\u2026" in t
        if len(_PLACEHOLDER_CACHE) < 4096 and len(s) <= CACHED_CHARS:
            _PLACEHOLDER_CACHE[s] = hit
    return hit


_PLACEHOLDER_CACHE: dict[str, bool] = {}
