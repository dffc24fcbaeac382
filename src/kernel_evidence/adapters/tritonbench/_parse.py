"""TritonBench's three outputs as one set of rows: (input, provider) -> metrics.

- ``--output-json``: ``userbenchmark_dict`` of ``tritonbench/utils/triton_op.py``, one key
  per (input, provider, metric): ``tritonbench_<op>_<mode>[x_<x_val>-<provider>]_<metric>``,
  plus per-provider averages ``tritonbench_<op>_<mode>[<provider>]-<metric>-avg`` (skipped:
  they are derived). ``<op>_<mode>`` is the ``--benchmark-name`` when one was given.
- ``--output`` CSV: ``write_csv_to_file``, ``;``-separated, a header of the x-value label
  then ``<provider>-<metric>`` columns, one row per input and an ``average`` row.
- the console table (the default): ``tabulate`` with a dashed ruler under the header, latency
  cells written ``p50 (±spread%)``, after whatever the run printed before it.

Latency is the median (``p50``, after IQR outlier removal) in milliseconds; ``tflops`` is
TFLOP/s, ``gbps`` GB/s, ``speedup`` the baseline provider's latency over this one's,
``accuracy`` 1.0 or 0.0 (checked against the baseline).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ...errors import AdapterError

__all__ = ["MODES", "Cell", "Row", "Table", "parse_console", "parse_csv", "parse_json", "split_key", "x_dims"]

#: ``op_mode`` values (``tritonbench/utils/triton_op.py``: Mode), longest first for splitting
MODES = ("fwd_no_grad", "fwd_bwd", "fwd", "bwd")
_KEY = re.compile(r"^tritonbench_(?P<bench>.+?)\[x_(?P<body>.*)\]_(?P<metric>.+)$", re.DOTALL)
#: the 2024 form, metric inside the brackets and no mode: ``tritonbench_softmax[x_256-triton_softmax-gbps]``
_KEY_2024 = re.compile(r"^tritonbench_(?P<bench>.+?)\[x_(?P<body>.*)\]$", re.DOTALL)
_AVG_KEY = re.compile(r"^tritonbench_.+\[[^\]]*\]-.+-avg$", re.DOTALL)
_SPREAD = re.compile(r"^\s*(?P<v>[-+0-9.eE]+|nan|inf)\s*\(±\s*(?P<s>[-+0-9.eE]+)\s*%\)\s*$")
_RULER = re.compile(r"^\s*-{3,}(\s{2,}-{3,})*\s*$")
_NOISE_ERROR = re.compile(
    r"(CUDA Runtime Error|CUDA error|HIP error|RuntimeError|Traceback \(most recent call last\))"
)
_TORCH_SEEN = re.compile(r"PyTorch \S+ .*\(you have (?P<v>\d+\.\d+[^\s)]*)\)")


@dataclass
class Cell:
    """One metric of one provider on one input: the value as printed, and as a number."""

    raw: Any
    value: float | None
    spread_pct: float | None = None


@dataclass
class Row:
    """One (input, provider) pair."""

    x_val: str
    provider: str
    metrics: dict[str, Cell] = field(default_factory=dict)
    error: str | None = None
    where: str = ""


@dataclass
class Table:
    """What one output file holds."""

    kind: str  # json, csv, console
    rows: list[Row]
    benchmark: str | None = None
    x_label: str | None = None
    error_lines: int = 0
    outliers_removed: int = 0
    torch_version: str | None = None
    #: the GPU, where a wrapper names it (the nightly runner's ``env.device``)
    device: str | None = None


def split_key(key: str) -> tuple[str, str, str, str] | None:
    """(benchmark name, x value, provider, metric) of an ``--output-json`` key, or None.

    The provider is the text after the last ``-`` inside the brackets (an x value may hold
    ``-``, a provider label does not).

    >>> split_key("tritonbench_gemm_fwd[x_(256, 256, 256)-triton_tutorial_matmul]_latency")
    ('gemm_fwd', '(256, 256, 256)', 'triton_tutorial_matmul', 'latency')
    """
    m = _KEY.match(key)
    if m is None:
        return _split_2024(key)
    body = m.group("body")
    x_val, sep, provider = body.rpartition("-")
    if not sep or not provider:
        return None
    return m.group("bench"), x_val, provider, m.group("metric")


def _split_2024(key: str) -> tuple[str, str, str, str] | None:
    """The 2024 key form (TorchBench's ``userbenchmark/triton``): ``x-provider-metric``
    inside the brackets; neither a provider label nor a metric name holds ``-``.

    >>> _split_2024("tritonbench_softmax[x_256-triton_softmax-gbps]")
    ('softmax', '256', 'triton_softmax', 'gbps')
    """
    m = _KEY_2024.match(key)
    if m is None:
        return None
    parts = m.group("body").rsplit("-", 2)
    if len(parts) != 3 or not all(parts[1:]):
        return None
    x_val, provider, metric = parts
    return m.group("bench"), x_val, provider, metric


def _unwrap(doc: dict[str, Any]) -> tuple[dict[str, Any], str | None, str | None]:
    """The metric keys of a file, and the GPU and torch version a wrapper names.

    ``--output-json`` writes the keys at the top; the nightly runner
    (``benchmarks/nightly``) and TorchBench's ``userbenchmark/triton`` put them under
    ``metrics`` beside ``env`` (``device``) or ``environ`` (``pytorch_version``)."""
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict) or any(isinstance(k, str) and k.startswith("tritonbench_") for k in doc):
        return doc, None, None
    device = torch = None
    for env_key in ("env", "environ"):
        env = doc.get(env_key)
        if isinstance(env, dict):
            d, t = env.get("device"), env.get("pytorch_version")
            device = device or (d.strip() if isinstance(d, str) and d.strip() else None)
            torch = torch or (t.strip() if isinstance(t, str) and t.strip() else None)
    return metrics, device, torch


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str):
        try:
            f = float(v.strip())
        except ValueError:
            return None
    else:
        return None
    return f if math.isfinite(f) else None


def _cell(v: Any) -> Cell:
    if isinstance(v, str):
        m = _SPREAD.match(v)
        if m is not None:
            return Cell(v, _number(m.group("v")), _number(m.group("s")))
    return Cell(v, _number(v))


def parse_json(path: str, data: bytes) -> Table:
    """The rows of an ``--output-json`` file."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise AdapterError(f"{path}: not JSON ({exc}); expected a TritonBench --output-json file") from None
    if not isinstance(doc, dict):
        raise AdapterError(
            f"{path}: a JSON {type(doc).__name__}; expected an object of tritonbench_... metric keys"
        )
    keys, device, torch = _unwrap(doc)
    rows: dict[tuple[str, str], Row] = {}
    benches: set[str] = set()
    unknown = 0
    for key, value in keys.items():
        parts = split_key(key)
        if parts is None:
            if not _AVG_KEY.match(key):
                unknown += 1
            continue
        bench, x_val, provider, metric = parts
        benches.add(bench)
        if x_val == "average":
            continue
        row = rows.setdefault((x_val, provider), Row(x_val, provider, where=f"{path}: x {x_val}, {provider}"))
        row.metrics[metric] = _cell(value)
    if not rows:
        raise AdapterError(
            f"{path}: no key of the form tritonbench_<op>_<mode>[x_<input>-<provider>]_<metric>; "
            "expected a TritonBench --output-json file"
        )
    if len(benches) > 1:
        raise AdapterError(
            f"{path}: keys of {len(benches)} benchmarks ({', '.join(sorted(benches))}); expected one"
        )
    _errors_from_metrics(rows.values())
    return Table("json", list(rows.values()), benchmark=benches.pop(), torch_version=torch, device=device)


def _errors_from_metrics(rows: Any) -> None:
    """A provider that failed on an input has its error text in its first metric cell and
    nothing in the others (``_table``): that row is an error, not a number."""
    for row in rows:
        texts = [
            c.raw
            for c in row.metrics.values()
            if isinstance(c.raw, str) and c.value is None and c.raw.strip()
        ]
        numbers = [c for c in row.metrics.values() if c.value is not None]
        if texts and not numbers:
            row.error = texts[0]


def _header_rows(path: str, header: list[str], body: list[tuple[int, list[str]]]) -> tuple[str, list[Row]]:
    """Rows from a header of ``x label, provider-metric...`` and its body."""
    if len(header) < 2:
        raise AdapterError(
            f"{path}: a header of {len(header)} column; expected the x-value label and <provider>-<metric> columns"
        )
    columns: list[tuple[str, str]] = []
    for name in header[1:]:
        provider, _, metric = name.strip().partition("-")
        columns.append((provider, metric or provider))
    out: dict[tuple[str, str], Row] = {}
    for lineno, cells in body:
        x_val = cells[0].strip()
        if x_val == "average" or not x_val:
            continue
        for (provider, metric), raw in zip(columns, cells[1:], strict=False):
            row = out.setdefault((x_val, provider), Row(x_val, provider, where=f"{path}:{lineno}"))
            text = raw.strip()
            if text:
                row.metrics[metric] = _cell(text)
    _errors_from_metrics(out.values())
    return header[0].strip(), list(out.values())


def parse_csv(path: str, text: str) -> Table:
    """The rows of an ``--output`` CSV file (``;``-separated)."""
    reader = csv.reader(io.StringIO(text), delimiter=";")
    lines = [(i, r) for i, r in enumerate(reader, 1) if r]
    if not lines:
        raise AdapterError(f"{path}: empty; expected a TritonBench CSV (--output)")
    label, rows = _header_rows(path, lines[0][1], lines[1:])
    return Table("csv", [r for r in rows if r.metrics or r.error], x_label=label)


def _spans(ruler: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", ruler)]


def _cut(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """The cells of a table line, by the ruler's columns (tabulate right-aligns numbers, so a
    cell may start left of its dashes: each cell runs from the end of the previous column)."""
    out = []
    start = 0
    for i, (_, end) in enumerate(spans):
        stop = end if i < len(spans) - 1 else len(line)
        out.append(line[start:stop])
        start = stop
    return out


def parse_console(path: str, text: str) -> Table:
    """The table TritonBench prints (the last one in the text), with what the noise before it
    says: error lines, removed outliers, the torch version."""
    lines = [ln.split("\r")[-1].rstrip("\n") for ln in text.split("\n")]
    ruler_at = None
    for i, ln in enumerate(lines):
        if i > 0 and _RULER.match(ln) and len(_spans(ln)) >= 2 and lines[i - 1].strip():
            ruler_at = i
    if ruler_at is None:
        raise AdapterError(
            f"{path}: no TritonBench table (a header over a dashed ruler); expected its console "
            "output, --output-json or --output CSV"
        )
    spans = _spans(lines[ruler_at])
    header = [c.strip() for c in _cut(lines[ruler_at - 1], spans)]
    body: list[tuple[int, list[str]]] = []
    for j in range(ruler_at + 1, len(lines)):
        ln = lines[j]
        if not ln.strip():
            break
        body.append((j + 1, _cut(ln, spans)))
    label, rows = _header_rows(path, header, body)
    noise = "\n".join(lines[: ruler_at - 1])
    torch = _TORCH_SEEN.search(noise)
    removed = sum(int(m.group(1)) for m in re.finditer(r"Removed (\d+) outliers from \d+ samples", noise))
    return Table(
        "console",
        [r for r in rows if r.metrics or r.error],
        x_label=label,
        error_lines=len(_NOISE_ERROR.findall(noise)),
        outliers_removed=removed,
        torch_version=torch.group("v") if torch else None,
    )


def x_dims(label: str | None, x_val: str) -> dict[str, int] | None:
    """The dims of an input when its label names them: ``(Batch, Heads)`` over ``(4, 48)``
    gives ``{"Batch": 4, "Heads": 48}``; a single integer under a one-word label, that word."""
    if not label:
        return None
    names = [n.strip() for n in label.strip("()[] ").split(",") if n.strip()]
    vals = [v.strip() for v in x_val.strip("()[] ").split(",") if v.strip()]
    if not names or len(names) != len(vals) or not all(re.fullmatch(r"-?\d+", v) for v in vals):
        return None
    if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_ ]*", n) for n in names):
        return None
    return {n.replace(" ", "_"): int(v) for n, v in zip(names, vals, strict=True)}
