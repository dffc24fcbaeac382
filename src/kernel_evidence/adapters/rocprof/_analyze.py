"""``analyze`` exports: Omniperf 1.x numbered tables and 2.x/3.x ``--save-dfs`` CSVs.

1.x stores the analyze dataframes as ``<table id>.csv`` (``1.csv`` top kernels, ``101.csv``
system info values, ``201.csv`` speed-of-light, ``701.csv`` wavefront launch stats);
``--save-dfs`` writes ``<panel>.<table>_<Title>.csv`` (``0.1_Top_Kernels.csv``,
``1.1.csv``, ``2.1_System_Speed-of-Light.csv`` or ``2.1_Speed-of-Light.csv``,
``7.1_Wavefront_Launch_Stats.csv``). Tables are recognised by name and read by column name.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import AdapterError, InputError
from .._read import DEFAULT_MAX_BYTES
from ._io import decode_text, load, shown

__all__ = ["AnalyzeTables", "find_tables", "is_analyze_dir", "read_rows"]

_MAX = 64 << 20
_TABLE_FILES = {
    "top-kernels": (re.compile(r"^(1|0\.1_Top_Kernels|pmc_kernel_top)\.csv$", re.I),),
    "sysinfo": (re.compile(r"^(101|1\.1|1\.1_.*)\.csv$", re.I),),
    "speed-of-light": (re.compile(r"^(201|2\.1_.*Speed-of-Light)\.csv$", re.I),),
    "launch": (re.compile(r"^(701|7\.1_Wavefront_Launch.*)\.csv$", re.I),),
    "dispatch-list": (re.compile(r"^(2001|0\.2_Dispatch_List)\.csv$", re.I),),
}


def read_rows(
    path: Path, cap: int = DEFAULT_MAX_BYTES, warnings: list[str] | None = None
) -> list[dict[str, str]]:
    """A small CSV as a list of dicts (keys stripped); embedded newlines are kept.

    Read capped (at most 64 MiB), gunzipped if need be, BOM and NULs dropped and bytes that
    are not UTF-8 replaced, each with a warning added to ``warnings``.
    """
    loaded = load(path, cap, what="an analyze table CSV", limit=_MAX)
    text = decode_text(loaded)
    if warnings is not None:
        warnings.extend(loaded.warnings)
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        return [
            {(k or "").strip(): (v if isinstance(v, str) else "") for k, v in row.items()} for row in reader
        ]
    except csv.Error as exc:
        raise InputError(str(path), None, f"expected CSV: {exc}") from None


def find_tables(folder: Path) -> dict[str, Path]:
    """Analyze tables in ``folder`` by kind."""
    out: dict[str, Path] = {}
    try:
        names = sorted(p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    except OSError:
        return out
    for kind, (pattern,) in _TABLE_FILES.items():
        for name in names:
            if pattern.match(name):
                out.setdefault(kind, folder / name)
    return out


def is_analyze_dir(folder: Path) -> bool:
    """True when ``folder`` holds a speed-of-light or top-kernels analyze table."""
    found = find_tables(folder)
    found.pop("sysinfo", None)
    found.pop("dispatch-list", None)
    if set(found) == {"top-kernels"} and found["top-kernels"].name == "pmc_kernel_top.csv":
        return False
    return bool(found)


def number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        x = float(text.strip())
    except ValueError:
        return None
    return x if math.isfinite(x) else None


@dataclass
class AnalyzeTables:
    """The rows of the analyze tables found, keyed by metric label."""

    folder: Path
    files: dict[str, Path]
    rows: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    top_kernels: list[dict[str, str]] = field(default_factory=list)
    sysinfo_values: list[str] = field(default_factory=list)
    dispatches: int | None = None
    #: what could not be read, one line each (file name first)
    warnings: list[str] = field(default_factory=list)
    #: table kind -> why its metric rows are unusable as a whole (not read, no rows, no Metric column)
    unusable: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, folder: Path, cap: int = DEFAULT_MAX_BYTES) -> AnalyzeTables:
        files = find_tables(folder)
        t = cls(folder=folder, files=files)
        for kind in ("speed-of-light", "launch"):
            if kind in files:
                rows = t._read(kind, cap)
                t.rows[kind] = {r.get("Metric", "").strip(): r for r in rows if r.get("Metric")}
                if kind not in t.unusable and not t.rows[kind]:
                    t.unusable[kind] = (
                        "no Metric rows (expected a CSV with columns Metric, Avg or Value, Unit)"
                        if not rows or "Metric" in rows[0]
                        else f"no Metric column (header: {shown(', '.join(list(rows[0])[:5]))})"
                    )
        if "top-kernels" in files:
            t.top_kernels = t._read("top-kernels", cap)
        if "sysinfo" in files:
            rows = t._read("sysinfo", cap)
            t.sysinfo_values = [next(iter(r.values()), "") for r in rows]
        if "dispatch-list" in files:
            rows = t._read("dispatch-list", cap)
            t.dispatches = len(rows) if "dispatch-list" not in t.unusable else None
        return t

    def _read(self, kind: str, cap: int) -> list[dict[str, str]]:
        """The rows of one table; a table that cannot be read is a warning, not an error."""
        path = self.files[kind]
        try:
            return read_rows(path, cap, self.warnings)
        except (InputError, AdapterError) as exc:
            text = exc.message if isinstance(exc, InputError) else str(exc)
            text = text.removeprefix(f"{path}: ")
            self.unusable[kind] = f"not read ({text})"
            if kind not in ("speed-of-light", "launch"):
                self.warnings.append(f"{path.name}: not read ({text})")
            return []

    def cell(self, table: str, metric: str, column: str | None) -> tuple[str, str | None] | None:
        """The text of ``metric``'s Avg/Value cell (or Pct of Peak/PoP) and its unit label;
        None when ``table`` has no row for ``metric``. A missing value column reads as ``""``."""
        row = self.rows.get(table, {}).get(metric)
        if row is None:
            return None
        keys = ("Pct of Peak", "PoP") if column == "pct" else ("Avg", "Value")
        for k in keys:
            if k in row:
                return row[k] or "", row.get("Unit")
        return "", row.get("Unit")

    def value(self, table: str, metric: str, column: str | None) -> tuple[float | None, str | None]:
        """The number in ``table`` for ``metric``: the Avg/Value column, or Pct of Peak/PoP."""
        found = self.cell(table, metric, column)
        if found is None:
            return None, None
        return number(found[0]), found[1]

    def guess_hardware(self) -> dict[str, str]:
        """The values-only sysinfo table has no keys: pick out the gfx arch and the GPU model."""
        out: dict[str, str] = {}
        for v in self.sysinfo_values:
            s = v.strip()
            if "gpu_arch" not in out and re.fullmatch(r"gfx[0-9a-f]{3,4}", s):
                out["gpu_arch"] = s
            elif re.fullmatch(r"(?i)mi\d{3}[a-z]?(_[a-z0-9]+)?", s) and len(s) > len(
                out.get("gpu_model", "")
            ):
                out["gpu_model"] = s  # the longest: 3.x writes gpu_series (MI300) before gpu_model
        if self.sysinfo_values:
            out.setdefault("workload_name", self.sysinfo_values[0].strip())
        return out
