"""The system side of a rocprof-compute / Omniperf workload: sysinfo, roofline, config, log.

``sysinfo.csv`` comes in three layouts (Omniperf 1.x camelCase, 2.x ``version=2``, 3.x
``version=3`` with ``gpu_series`` and ``num_hbm_channels`` but no ``hbm_bw``); they are
normalised here to the 2.x/3.x key names. rocprofv3 ``agent_info.csv`` and rocprof v1
``results.sysinfo.txt`` (a rocminfo dump) are read into the same keys, so the rest of the
adapter sees one vocabulary. Every value stays optional.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...models import Bandwidth, ByteSize, Clocks, Frequency, Hardware, Host, Software
from .._read import DEFAULT_MAX_BYTES
from ._io import SMALL_FILE, decode_text, load

__all__ = [
    "SysInfo",
    "read_agent_info",
    "read_log",
    "read_profiling_config",
    "read_rocminfo",
    "read_roofline",
    "read_sysinfo",
]

#: Omniperf 1.x sysinfo name -> 2.x/3.x name
_OMNI1 = {
    "host_name": "hostname",
    "host_cpu": "cpu_model",
    "host_distro": "linux_distro",
    "host_kernel": "linux_kernel_version",
    "host_rocmver": "rocm_version",
    "date": "timestamp",
    "gpu_soc": "gpu_arch",
    "numSE": "se_per_gpu",
    "numCU": "cu_per_gpu",
    "numSIMD": "simd_per_cu",
    "waveSize": "wave_size",
    "maxWavesPerCU": "max_waves_per_cu",
    "maxWorkgroupSize": "workgroup_max_size",
    "L1": "gpu_l1",
    "L2": "gpu_l2",
    "sclk": "max_sclk",
    "mclk": "max_mclk",
    "L2Banks": "total_l2_chan",
    "name": "gpu_model",
    "numSQC": "sqc_per_gpu",
    "hbmBW": "hbm_bw",
}
_MISSING = {"", "n/a", "na", "none", "nan", "null"}
#: gfx archs with several XCDs per device (gfx940/941/942 MI300, gfx950 MI350)
_MULTI_XCD = re.compile(r"^gfx9(4[0-9]|5[0-9])\b")


@dataclass
class SysInfo:
    """Normalised system facts, the file they came from and what could not be read."""

    values: dict[str, str] = field(default_factory=dict)
    source: str | None = None
    layout: str | None = None
    warnings: list[str] = field(default_factory=list)

    def text(self, key: str) -> str | None:
        v = self.values.get(key)
        if v is None or v.strip().lower() in _MISSING:
            return None
        return v.strip()

    def number(self, key: str) -> float | None:
        v = self.text(key)
        if v is None:
            return None
        try:
            x = float(v)
        except ValueError:
            return None
        return x if math.isfinite(x) else None

    def positive(self, key: str) -> float | None:
        x = self.number(key)
        return x if x is not None and x > 0 else None

    @property
    def num_xcd(self) -> float:
        """XCDs per GPU; 1 when sysinfo does not say (every pre-MI300 part has one)."""
        return self.positive("num_xcd") or 1.0

    def xcd_unknown(self) -> str | None:
        """Why ``num_xcd`` cannot be taken as 1, or None when it can.

        gfx940/941/942 (MI300) and gfx950 (MI350) have several XCDs per device (MI300X 8,
        MI300A 6, one per CPX partition), so a missing or zero ``num_xcd`` there would make
        every ``GRBM_GUI_ACTIVE / num_xcd`` utilisation up to 8x too low.
        """
        if self.positive("num_xcd") is not None:
            return None
        arch = (self.text("gpu_arch") or "").lower()
        if not _MULTI_XCD.match(arch):
            return None
        src = self.source or "sysinfo"
        got = self.text("num_xcd")
        what = "is missing" if got is None else f"is `{got}`"
        return (
            f"num_xcd {what} in {src} and {arch} has several XCDs per device (MI300X 8, MI300A 6, "
            "1 per CPX partition); not taken as 1"
        )

    def peak_hbm(self) -> tuple[float | None, str]:
        """Theoretical peak HBM bandwidth in GB/s and how it was obtained (or why not)."""
        bw = self.positive("hbm_bw")
        if bw is not None:
            return bw, "sysinfo hbm_bw"
        mclk, chans = self.number("max_mclk"), self.number("num_hbm_channels")
        if mclk and chans and mclk > 0 and chans > 0:
            return mclk / 1000.0 * 32.0 * chans, "max_mclk/1000*32*num_hbm_channels"
        src = self.source or "sysinfo"
        if self.number("hbm_bw") == 0:
            return None, f"peak HBM bandwidth is 0 in {src} (hbm_bw)"
        if mclk is not None and mclk <= 0:
            return None, f"peak HBM bandwidth would be 0: max_mclk is {mclk:g} in {src}"
        if mclk is not None:
            return None, f"peak HBM bandwidth unknown: {src} has max_mclk but no num_hbm_channels"
        if "max_mclk" in self.values:
            return (
                None,
                f"peak HBM bandwidth unknown: max_mclk is empty in {src} and there is no hbm_bw",
            )
        return None, f"peak HBM bandwidth unknown: {src} has no hbm_bw and no max_mclk"

    def variables(self) -> dict[str, float]:
        """The ``$`` variables formulas may use (only those known)."""
        out: dict[str, float] = {} if self.xcd_unknown() else {"num_xcd": self.num_xcd}
        for key in ("cu_per_gpu", "max_waves_per_cu", "max_sclk", "max_mclk", "wave_size",
                    "lds_banks_per_cu", "total_l2_chan", "sqc_per_gpu", "num_hbm_channels",
                    "simd_per_cu", "se_per_gpu"):  # fmt: skip
            x = self.positive(key)
            if x is not None:
                out[key] = x
        peak, _ = self.peak_hbm()
        if peak is not None:
            out["hbm_bw"] = peak
        return out

    def hardware(self) -> Hardware | None:
        """The hardware category, or None when not even the device is known."""
        device = self.text("gpu_model") or self.text("product_name") or self.text("gpu_arch")
        if device is None:
            return None
        cu = self.positive("cu_per_gpu")
        xcd = self.positive("num_xcd")  # only what the source states; num_xcd's default of 1 is not a fact
        peak, _ = self.peak_hbm()
        rocm = self.text("rocm_version")
        driver = self.text("amd_gpu_kernel_version")
        sclk, mclk = self.positive("cur_sclk"), self.positive("cur_mclk")
        clocks = None
        if sclk or mclk:
            clocks = Clocks(
                sm_observed=Frequency(value=sclk, unit="MHz") if sclk else None,
                memory_observed=Frequency(value=mclk, unit="MHz") if mclk else None,
            )
        distro, kernel = self.text("linux_distro"), self.text("linux_kernel_version")
        os_text = " ".join(x for x in (distro, f"({kernel})" if kernel else None) if x) or None
        cpu_mem = self.positive("cpu_memory")
        host = None
        if any((self.text("hostname"), os_text, self.text("cpu_model"), cpu_mem)):
            host = Host(
                hostname=self.text("hostname"),
                os=os_text,
                cpu=self.text("cpu_model"),
                memory=ByteSize(value=cpu_mem, unit="KiB") if cpu_mem else None,
            )
        return Hardware(
            vendor="amd",
            device=device,
            arch=self.text("gpu_arch"),
            compute_units=int(cu) if cu and cu >= 1 else None,
            partitions=int(xcd) if xcd is not None and xcd >= 1 and xcd.is_integer() else None,
            peak_bandwidth=Bandwidth(value=peak, unit="GB/s") if peak else None,
            runtime=Software(name="ROCm", version=rocm) if rocm else None,
            driver=Software(name="amdgpu", version=driver) if driver else None,
            clocks=clocks,
            host=host,
        )

    def attributes(self) -> dict[str, str | float | int | None]:
        """System facts the Hardware model has no field for, for ProfilerCapture.attributes."""
        out: dict[str, str | float | int | None] = {}
        for key in ("gpu_series", "gpu_model", "gpu_arch", "gpu_chip_id", "compute_partition",
                    "memory_partition", "vbios", "workload_name"):  # fmt: skip
            v = self.text(key)
            if v is not None:
                out[key] = v
        for key in ("num_xcd", "cu_per_gpu", "max_waves_per_cu", "max_sclk", "max_mclk",
                    "cur_sclk", "cur_mclk", "num_hbm_channels", "total_l2_chan", "hbm_bw",
                    "gpu_l1", "gpu_l2", "version"):  # fmt: skip
            x = self.number(key)
            if x is not None:
                out[f"sysinfo.{key}"] = int(x) if x.is_integer() else x
        peak, how = self.peak_hbm()
        if peak is not None:
            out["peak_hbm_bandwidth_source"] = how
        return out


def _read_text(path: Path, cap: int, warnings: list[str], what: str) -> str:
    """A small text file, capped, gunzipped if need be, BOM and NULs dropped (warned)."""
    loaded = load(path, cap, what=what, limit=SMALL_FILE)
    text = decode_text(loaded)
    warnings.extend(loaded.warnings)
    return text


def _csv_rows(path: Path, text: str) -> list[tuple[int, list[str]]]:
    """The CSV records of ``text`` that are not blank, with the line each starts on."""
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        out: list[tuple[int, list[str]]] = []
        line = 1
        for row in reader:
            if any(c.strip() for c in row):
                out.append((line, row))
            line = reader.line_num + 1
        return out
    except csv.Error as exc:
        raise InputError(str(path), None, f"expected CSV: {exc}") from None


def _width_warning(path: Path, line: int, row: list[str], header: list[str], what: str) -> str:
    return (
        f"{path.name}: line {line} has {len(row)} fields, the header has {len(header)}; "
        f"{what} (values are not assigned by position when the widths differ)"
    )


def _csv_dicts(path: Path, cap: int, warnings: list[str], what: str) -> list[dict[str, str]]:
    """The rows of a small CSV by header name; a row whose width differs from the header's
    is left out with a warning (which value belongs to which column cannot be known)."""
    rows = _csv_rows(path, _read_text(path, cap, warnings, what))
    if not rows:
        return []
    header = [h.strip() for h in rows[0][1]]
    out = []
    for line, r in rows[1:]:
        if len(r) != len(header):
            warnings.append(_width_warning(path, line, r, header, "row not used"))
            continue
        out.append(dict(zip(header, r, strict=True)))
    return out


def read_sysinfo(path: Path, cap: int = DEFAULT_MAX_BYTES) -> SysInfo:
    """Read ``sysinfo.csv`` in any of its layouts (a header row and one data row).

    A data row with more or fewer fields than the header (a column lost from either) gives
    no values at all, with a warning: assigned by position they would shift into the wrong
    columns (compute units read from a neighbouring field, clocks swapped).
    """
    info = SysInfo(source=path.name)
    rows = _csv_rows(path, _read_text(path, cap, info.warnings, "sysinfo.csv (a header row and a data row)"))
    if len(rows) < 2:
        info.warnings.append(f"{path.name}: expected a header row and a data row, got {len(rows)} row(s)")
        return info
    (_, header), (line, data) = rows[0], rows[1]
    if len(data) != len(header):
        info.warnings.append(
            _width_warning(
                path, line, data, header, "no system values read: hardware, peaks and XCD count unknown"
            )
        )
        return info
    raw = {h.strip(): v for h, v in zip(header, data, strict=True)}
    if len(rows) > 2:
        info.warnings.append(_extra_rows_warning(path, line, header, raw, rows[2:]))
    if "gpu_soc" in raw or "numCU" in raw:
        info.layout = "omniperf-1"
        info.values = {_OMNI1.get(k, k): v for k, v in raw.items()}
    else:
        info.values = dict(raw)
        ver = info.number("version")
        info.layout = f"v{int(ver)}" if ver is not None else "unknown"
    return info


def _extra_rows_warning(
    path: Path, line: int, header: list[str], first: dict[str, str], extra: list[tuple[int, list[str]]]
) -> str:
    """sysinfo.csv holds one data row; several (one per GPU?) are named, and the fields in
    which they differ from the first, since only the first is used."""
    differ: list[str] = []
    for _, row in extra:
        if len(row) != len(header):
            continue
        for h, v in zip(header, row, strict=True):
            key = h.strip()
            if key not in differ and v.strip() != first.get(key, "").strip():
                differ.append(key)
    shown_ = ", ".join(differ[:6]) + (f" (+{len(differ) - 6} more)" if len(differ) > 6 else "")
    how = f"the others differ in {shown_}" if differ else "the others are identical"
    return (
        f"{path.name}: {1 + len(extra)} data rows (expected one); only the first (line {line}) "
        f"is used for hardware, peaks and XCD count; {how}"
    )


def read_agent_info(path: Path, agent: int | None = None, cap: int = DEFAULT_MAX_BYTES) -> SysInfo:
    """rocprofv3 ``agent_info.csv``: the GPU agent ``agent`` (or the first GPU)."""
    warnings: list[str] = []
    rows = _csv_dicts(path, cap, warnings, "a rocprofv3 agent_info.csv")
    gpus = [r for r in rows if (r.get("Agent_Type") or "").upper().endswith("GPU")] or rows
    pick = None
    for r in gpus:
        ids = {(r.get(k) or "").strip() for k in ("Node_Id", "Logical_Node_Id", "Id")}
        if agent is not None and str(agent) in ids:
            pick = r
            break
    pick = pick or (gpus[0] if gpus else None)
    info = SysInfo(source=path.name, layout="agent_info", warnings=warnings)
    if pick is None:
        info.warnings.append(f"{path.name}: no GPU agent row")
        return info
    lower = {k.lower(): (v or "") for k, v in pick.items() if k}
    mapping = {
        "gpu_arch": ("name", "gfx_target"),
        "product_name": ("product_name", "marketing_name"),
        "cu_per_gpu": ("cu_count", "compute_unit"),
        "num_xcd": ("num_xcc",),
        "max_waves_per_cu": ("max_waves_per_cu",),
        "wave_size": ("wave_front_size", "wavefront_size"),
        "max_sclk": ("max_clock_freq",),
        "simd_per_cu": ("simd_per_cu",),
    }
    for key, cands in mapping.items():
        for c in cands:
            if lower.get(c, "").strip():
                info.values[key] = lower[c]
                break
    return info


_ROCMINFO = {
    "name": "gpu_arch",
    "marketing name": "product_name",
    "compute unit": "cu_per_gpu",
    "max clock freq. (mhz)": "max_sclk",
    "max waves per cu": "max_waves_per_cu",
    "wavefront size": "wave_size",
    "simds per cu": "simd_per_cu",
}


def read_rocminfo(path: Path, cap: int = DEFAULT_MAX_BYTES) -> SysInfo:
    """rocprof v1 ``results.sysinfo.txt`` (a rocminfo dump): the first ``gfx`` agent."""
    info = SysInfo(source=path.name, layout="rocminfo")
    agent: dict[str, str] = {}
    found: dict[str, str] | None = None
    for line in _read_text(path, cap, info.warnings, "a rocminfo dump").splitlines():
        if re.match(r"^\*+\s*$", line.strip()) or line.strip().startswith("Agent "):
            if agent.get("gpu_arch", "").startswith("gfx"):
                found = agent
                break
            agent = {}
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        k = key.strip().lower()
        if k in _ROCMINFO and _ROCMINFO[k] not in agent:
            v = re.sub(r"\(.*?\)", "", value).strip()
            agent[_ROCMINFO[k]] = v.split()[0] if v and k != "marketing name" else v
    if found is None and agent.get("gpu_arch", "").startswith("gfx"):
        found = agent
    if found is None:
        info.warnings.append(f"{path.name}: no gfx agent found")
    else:
        info.values = found
    return info


def read_roofline(path: Path, cap: int = DEFAULT_MAX_BYTES) -> tuple[dict[str, float], list[str]]:
    """Empirical peaks of the first device from ``roofline.csv`` (GB/s and GFLOP/s), by column name."""
    warnings: list[str] = []
    rows = _csv_rows(path, _read_text(path, cap, warnings, "roofline.csv"))
    if len(rows) < 2:
        return {}, [*warnings, f"{path.name}: no data rows"]
    (_, header), (line, first) = rows[0], rows[1]
    if len(first) != len(header):
        return {}, [*warnings, _width_warning(path, line, first, header, "no roofline peaks read")]
    out: dict[str, float] = {}
    for k, v in zip(header, first, strict=True):
        if not k or k == "device":
            continue
        try:
            x = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(x):
            out[k.strip()] = x
    return out, warnings


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LOG_KEYS = {
    "omniperf version": "omniperf",
    "rocprofiler-compute version": "rocprof-compute",
    "rocprof-compute version": "rocprof-compute",
}


def read_log(path: Path, cap: int = DEFAULT_MAX_BYTES) -> tuple[dict[str, str], list[str]]:
    """Tool name/version and profiler choice from the first lines of ``log.txt``."""
    out: dict[str, str] = {}
    warnings: list[str] = []
    for i, line in enumerate(_read_text(path, cap, warnings, "a rocprof-compute log.txt").splitlines()):
        if i > 400:
            break
        clean = _ANSI.sub("", line).strip()
        key, sep, value = clean.partition(":")
        k = key.strip().lower()
        if sep and k in _LOG_KEYS and "tool" not in out:
            out["tool"] = _LOG_KEYS[k]
            out["version"] = value.strip()
        elif sep and k == "profiler choice":
            out["profiler"] = value.strip()
        elif "rocprofv3" in clean.lower() and "profiler" not in out and "profiler" in clean.lower():
            out.setdefault("profiler_hint", "rocprofv3")
    return out, warnings


def read_profiling_config(path: Path, cap: int = DEFAULT_MAX_BYTES) -> tuple[dict[str, Any], list[str]]:
    """``profiling_config.yaml`` as a dict; a damaged file gives a warning, not an error."""
    import yaml

    warnings: list[str] = []
    text = _read_text(path, cap, warnings, "profiling_config.yaml")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return {}, [*warnings, f"{path.name}: not valid YAML{where}; profiling options not read"]
    except (ValueError, RecursionError):
        # a value the YAML constructors refuse (an integer of over 4300 digits, a date in
        # month 13) or nesting deeper than Python's recursion limit
        return {}, [*warnings, f"{path.name}: holds a value YAML cannot read; profiling options not read"]
    if not isinstance(data, dict):
        return {}, [
            *warnings,
            f"{path.name}: expected a mapping of profile options, got {type(data).__name__}",
        ]
    return data, warnings
