"""Per-request samples of a serving run, and statistics recomputed from them.

The percentile definition is numpy's default (``method="linear"``, Hyndman & Fan type 7),
the one vLLM and SGLang use (``np.percentile``): for sorted values ``x`` of length ``n``
the ``q``-th percentile sits at position ``h = (n - 1) * q / 100`` and is interpolated
between ``x[floor(h)]`` and ``x[ceil(h)]``. The mean and the population standard deviation
(``ddof=0``, ``np.std``) complete the summary.

numpy is used when it is installed (it is much faster on millions of inter-token gaps);
otherwise a pure-Python path computes the same numbers (equal up to floating-point
summation order: both are compared with a relative tolerance).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

try:  # optional speed-up
    import numpy as _np
except ImportError:  # pragma: no cover - exercised only without numpy
    _np = None  # type: ignore[assignment]

__all__ = ["RunSamples", "Summary", "collect_samples", "have_numpy", "summarize"]

#: relative tolerance when a file's statistic is compared with the recomputed one
REL_TOL = 1e-6
#: absolute tolerance, in ms
ABS_TOL_MS = 1e-6


def have_numpy() -> bool:
    """True when the numpy fast path is available."""
    return _np is not None


@dataclass
class Summary:
    """Statistics of one sample set, in the samples' unit."""

    n: int
    mean: float
    median: float
    std: float
    min: float
    max: float
    percentiles: dict[float, float]


def summarize(values: Any, qs: Sequence[float], *, use_numpy: bool | None = None) -> Summary | None:
    """Mean, median, std, min, max and the ``qs`` percentiles of ``values`` (``None`` if empty)."""
    n = len(values)
    if n == 0:
        return None
    if (use_numpy is None and _np is not None) or use_numpy:
        return _summarize_numpy(values, qs)
    return _summarize_python(values, qs)


def _summarize_numpy(values: Any, qs: Sequence[float]) -> Summary:
    assert _np is not None
    arr = values if isinstance(values, _np.ndarray) else _np.asarray(values, dtype=_np.float64)
    wanted = sorted({50.0, *map(float, qs)})
    # values near the largest float overflow to inf (as in the Python path), never a
    # RuntimeWarning on stderr; a non-finite statistic is refused later, naming the file
    with _np.errstate(over="ignore", invalid="ignore"):
        got = _np.percentile(arr, wanted)
        pct = {q: float(v) for q, v in zip(wanted, got, strict=True)}
        return Summary(
            n=int(arr.size),
            mean=float(arr.mean()),
            median=pct[50.0],
            std=float(arr.std()),
            min=float(arr.min()),
            max=float(arr.max()),
            percentiles={float(q): pct[float(q)] for q in qs},
        )


def _lerp(a: float, b: float, t: float) -> float:
    # numpy's _lerp: the form that is exact at t == 1 for the upper half
    diff = b - a
    return b - diff * (1.0 - t) if t >= 0.5 else a + diff * t


def _percentile_sorted(xs: Sequence[float], q: float) -> float:
    h = (len(xs) - 1) * (q / 100.0)
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return _lerp(xs[lo], xs[hi], h - lo)


def _fsum(xs: Iterable[float]) -> float:
    """``math.fsum``, but a sum beyond the largest float is infinite (as numpy's), not an
    OverflowError."""
    try:
        return math.fsum(xs)
    except OverflowError:
        return math.inf


def _summarize_python(values: Sequence[float], qs: Sequence[float]) -> Summary:
    xs = sorted(float(v) for v in values)
    n = len(xs)
    mean = _fsum(xs) / n
    std = math.sqrt(_fsum((x - mean) * (x - mean) for x in xs) / n)
    return Summary(
        n=n,
        mean=mean,
        median=_percentile_sorted(xs, 50.0),
        std=std,
        min=xs[0],
        max=xs[-1],
        percentiles={float(q): _percentile_sorted(xs, q) for q in qs},
    )


def close(file_value: float, recomputed: float) -> bool:
    """Does a file's statistic (ms) agree with the recomputed one (ms)?"""
    return math.isclose(file_value, recomputed, rel_tol=REL_TOL, abs_tol=ABS_TOL_MS)


@dataclass
class RunSamples:
    """Per-metric samples of the successful requests, in seconds, plus request bookkeeping."""

    n_requests: int
    succeeded: int
    metrics: dict[str, Any] = field(default_factory=dict)
    #: error text -> count, in first-seen order
    errors: dict[str, int] = field(default_factory=dict)
    total_output_tokens: int | None = None
    total_input_tokens: int | None = None
    #: per-request columns for a sidecar: name -> list/array
    columns: dict[str, Any] = field(default_factory=dict)
    #: which requests succeeded, one flag per request (for goodput)
    ok: list[bool] | None = None

    def size(self) -> int:
        """Number of sample values over all metrics."""
        return sum(len(v) for v in self.metrics.values())


def collect_samples(
    *,
    ttfts: list[float] | None,
    itls: list[list[float]] | None,
    latencies: list[float] | None,
    output_lens: list[float] | None,
    input_lens: list[float] | None,
    errors: list[str] | None,
    ok_mask: list[bool] | None = None,
    use_numpy: bool | None = None,
) -> RunSamples | None:
    """Group per-request arrays into per-metric samples of the successful requests.

    A request succeeded when its ``errors`` entry is empty (vLLM and SGLang write ``""``);
    without ``errors``, ``ok_mask`` says which succeeded (else every request counts).
    Following vLLM's ``calculate_metrics``: ttft and e2el take one value per successful
    request, tpot ``(latency - ttft) / (output_len - 1)`` for successful requests with
    ``output_len > 1``, and itl pools every chunk gap of the successful requests.
    """
    arrays = {
        "ttfts": ttfts, "itls": itls, "latencies": latencies, "output_lens": output_lens,
        "input_lens": input_lens, "errors": errors,
    }  # fmt: skip
    lengths = {len(a) for a in arrays.values() if a is not None}
    if not lengths:
        return None
    if len(lengths) != 1:
        each = ", ".join(f"`{k}` {len(a)}" for k, a in arrays.items() if a is not None)
        raise ValueError(
            f"per-request arrays have different lengths ({', '.join(map(str, sorted(lengths)))}: {each})"
        )
    n = lengths.pop()
    if errors is not None:
        ok = [not e for e in errors]
    elif ok_mask is not None and len(ok_mask) == n:
        ok = list(ok_mask)
    else:
        ok = [True] * n
    succeeded = sum(ok)
    out = RunSamples(n_requests=n, succeeded=succeeded, ok=ok)
    if errors is not None:
        for e in errors:
            if e:
                out.errors[e] = out.errors.get(e, 0) + 1
    fast = (use_numpy is None and _np is not None) or bool(use_numpy)
    all_ok = succeeded == n
    if fast:
        np = _np
        assert np is not None
        mask = None if all_ok else np.fromiter(ok, dtype=bool, count=n)

        def pick(values: list[float]) -> Any:
            arr = np.asarray(values, dtype=np.float64)
            return arr if mask is None else arr[mask]

        if ttfts is not None:
            out.metrics["ttft"] = pick(ttfts)
        if latencies is not None:
            out.metrics["e2el"] = pick(latencies)
        if latencies is not None and ttfts is not None and output_lens is not None:
            lat = pick(latencies)
            ttft = pick(ttfts)
            olen = pick(output_lens)
            sel = olen > 1
            out.metrics["tpot"] = (lat[sel] - ttft[sel]) / (olen[sel] - 1)
        if itls is not None:
            chosen = itls if all_ok else [x for x, good in zip(itls, ok, strict=True) if good]
            count = sum(map(len, chosen))
            from itertools import chain

            out.metrics["itl"] = np.fromiter(chain.from_iterable(chosen), dtype=np.float64, count=count)
    else:

        def pick_py(values: list[float]) -> list[float]:
            return list(values) if all_ok else [v for v, good in zip(values, ok, strict=True) if good]

        if ttfts is not None:
            out.metrics["ttft"] = pick_py(ttfts)
        if latencies is not None:
            out.metrics["e2el"] = pick_py(latencies)
        if latencies is not None and ttfts is not None and output_lens is not None:
            out.metrics["tpot"] = [
                (lat - t) / (o - 1)
                for lat, t, o, good in zip(latencies, ttfts, output_lens, ok, strict=True)
                if good and o > 1
            ]
        if itls is not None:
            out.metrics["itl"] = [g for x, good in zip(itls, ok, strict=True) if good for g in x]
    if output_lens is not None:
        out.total_output_tokens = _token_total(output_lens, ok)
    if input_lens is not None:
        out.total_input_tokens = _token_total(input_lens, ok)
    return out


def _token_total(lens: list[float], ok: list[bool]) -> int | None:
    """The tokens of the successful requests; ``None`` (nothing to compare the file's total
    with) when they add up to more than a float holds (``1e308`` token counts)."""
    total = sum(x for x, good in zip(lens, ok, strict=True) if good)
    return int(total) if math.isfinite(total) else None
