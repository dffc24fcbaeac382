"""Goodput recomputed from a run's per-request arrays, with SLOs given as an adapter option.

vLLM saves ``request_goodput`` only when ``vllm bench serve --goodput KEY:MS ...`` was
given, and never saves the thresholds. Its definition (``calculate_metrics`` in
``vllm/benchmarks/serve.py``; ``benchmarks/benchmark_serving.py`` before): among the
**successful** requests, a request is *good* when for **every** SLO given,
``slo_ms / 1000 >= value_s`` (inclusive), where

- ``ttft`` is the request's time to first token (``ttfts``),
- ``e2el`` its end-to-end latency (``latencies``),
- ``tpot`` is ``(latency - ttft) / (output_len - 1)`` when ``output_len > 1`` and **0**
  otherwise (vLLM: "if output_len <= 1, we regard tpot as 0 for goodput"),

and ``request_goodput = good / duration`` in requests per second, ``duration`` being the
benchmark duration the file records. The comparison is done in seconds exactly as vLLM
does it, so a recomputed value matches the file's bit for bit on the same arrays.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from ...errors import AdapterOptionError

__all__ = ["SLO_KEYS", "count_good", "needed_arrays", "parse_goodput_option", "slo_text"]

#: the SLO names vLLM's ``--goodput`` accepts, in its order
SLO_KEYS = ("ttft", "tpot", "e2el")
_NEEDS = {"ttft": ("ttfts",), "tpot": ("ttfts", "latencies", "output_lens"), "e2el": ("latencies",)}
_EXPECTED = (
    "expected SLOs in milliseconds as KEY:MS pairs separated by commas, KEY one of "
    "ttft, tpot, e2el (e.g. `goodput=ttft:200,tpot:50,e2el:1000`)"
)
#: vLLM's MILLISECONDS_TO_SECONDS_CONVERSION
_MS_PER_S = 1000


def parse_goodput_option(value: Any) -> dict[str, float] | None:
    """The ``goodput`` option as ``{slo: milliseconds}`` (``None`` when not given).

    Accepts the text form ``ttft:200,tpot:50`` (commas or spaces, as vLLM's ``--goodput``
    takes them) or a mapping ``{"ttft": 200}``; anything else is an :class:`AdapterOptionError`.

    >>> parse_goodput_option("ttft:200, e2el:1000")
    {'ttft': 200.0, 'e2el': 1000.0}
    """
    if value is None:
        return None
    shown = f"got {value!r}"
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, str):
        for part in re.split(r"[,\s]+", value.strip()):
            if not part:
                continue
            key, sep, ms = part.partition(":")
            if not sep:
                raise AdapterOptionError(f"option `goodput`: `{part}` is not KEY:MS; {_EXPECTED}, {shown}")
            items.append((key.strip(), ms.strip()))
    if not items:
        raise AdapterOptionError(f"option `goodput`: {_EXPECTED}, {shown}")
    out: dict[str, float] = {}
    for key, ms in items:
        name = key.lower()
        if name not in SLO_KEYS:
            raise AdapterOptionError(f"option `goodput`: unknown SLO `{key}`; {_EXPECTED}, {shown}")
        if name in out:
            raise AdapterOptionError(f"option `goodput`: SLO `{name}` given twice; {_EXPECTED}, {shown}")
        x: float | None = None
        if not isinstance(ms, bool):
            try:
                x = float(ms)
            except (TypeError, ValueError):
                x = None
        if x is None or not math.isfinite(x) or x < 0:
            raise AdapterOptionError(
                f"option `goodput`: `{key}:{ms}` is not a non-negative number of milliseconds; "
                f"{_EXPECTED}, {shown}"
            )
        out[name] = x
    return {k: out[k] for k in SLO_KEYS if k in out}


def slo_text(slos: dict[str, float]) -> str:
    """``ttft:200,tpot:50`` (the option's own form, for messages and settings).

    >>> slo_text({"ttft": 200.0, "tpot": 50.5})
    'ttft:200,tpot:50.5'
    """
    return ",".join(f"{k}:{int(v) if float(v).is_integer() else v}" for k, v in slos.items())


def needed_arrays(slos: dict[str, float]) -> list[str]:
    """The per-request arrays the SLOs need, in a stable order."""
    seen: dict[str, None] = {}
    for key in slos:
        for name in _NEEDS[key]:
            seen[name] = None
    return list(seen)


def count_good(
    slos: dict[str, float],
    *,
    ok: Sequence[bool],
    ttfts: Sequence[float] | None,
    latencies: Sequence[float] | None,
    output_lens: Sequence[float] | None,
) -> int:
    """How many successful requests meet every SLO (see the module docstring)."""
    limits = {k: v / _MS_PER_S for k, v in slos.items()}
    t_lim = limits.get("ttft")
    p_lim = limits.get("tpot")
    e_lim = limits.get("e2el")
    good = 0
    for i, success in enumerate(ok):
        if not success:
            continue
        if t_lim is not None and ttfts is not None and not t_lim >= ttfts[i]:
            continue
        if e_lim is not None and latencies is not None and not e_lim >= latencies[i]:
            continue
        if p_lim is not None and ttfts is not None and latencies is not None and output_lens is not None:
            olen = output_lens[i]
            tpot = (latencies[i] - ttfts[i]) / (olen - 1) if olen > 1 else 0.0
            if not p_lim >= tpot:
                continue
        good += 1
    return good
