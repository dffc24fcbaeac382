"""The device table: which accelerator a tool's device string names.

Tools spell one device many ways (``NVIDIA H100 80GB HBM3``, ``H100_Modal``,
``MI300X_A1``, ``AMD Instinct MI300X``, ``AMD Radeon Graphics`` with ``gfx90a``...).
:func:`identify` maps such a string, with whatever the tool also said (arch, SM/CU count,
memory), to one entry of the shipped device table (``rules/devices.toml``; sources in
``docs/peaks.md``). A string that could name several devices (``H100`` alone: SXM5, PCIe or
NVL) identifies one only when the other facts leave a single candidate; an unknown or
ambiguous device stays unknown (``None``) rather than guessed.

>>> from kernel_evidence.devices import canonical_id, identify, architecture
>>> canonical_id("NVIDIA H100 80GB HBM3")
'nvidia-h100-sxm5-80gb'
>>> canonical_id("H100") is None  # SXM5, PCIe or NVL
True
>>> canonical_id("H100", compute_units=114)
'nvidia-h100-pcie-80gb'
>>> identify("AMD Radeon Graphics", arch="gfx90a", compute_units=220).name
'AMD Instinct MI250X'
>>> architecture("Nvidia GPU (Volta)")
'sm_70'
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

__all__ = [
    "DeviceEntry",
    "all_devices",
    "architecture",
    "candidates",
    "canonical_id",
    "device",
    "identify",
]

_TABLE = Path(__file__).resolve().parent / "rules" / "devices.toml"
_GIB = float(1 << 30)
#: reported memory may exceed the marketed figure read as GiB by this much (rounding)
_MEMORY_OVER = 1.05
#: ... and fall short of the marketed figure read as GB by this much (reserved memory)
_MEMORY_UNDER = 0.85


@dataclass(frozen=True, eq=False)
class DeviceEntry:
    """One device model of the table, in base units (bytes, B/s, FLOP/s, W).

    ``memory_bytes`` lists the marketed sizes (one per variant sharing the id);
    ``partition_units`` the SM/CU counts a partition of the device reports as a device of
    its own; ``flops`` maps a dtype class (``fp16``, ``bf16``, ``fp8``...) to the dense peak.
    """

    id: str
    vendor: str
    name: str
    arch: str
    compute_units: int | None
    partition_units: tuple[int, ...]
    memory_bytes: tuple[float, ...]
    last_level_cache_bytes: float | None
    tdp_watts: float | None
    memory_bandwidth: float | None
    flops: Mapping[str, float]
    source: str
    aliases: tuple[str, ...]

    def __repr__(self) -> str:
        return f"DeviceEntry({self.id!r})"


@dataclass(frozen=True)
class _Arch:
    id: str
    vendor: str
    names: tuple[str, ...]
    complete: bool


@dataclass(frozen=True)
class _Table:
    devices: tuple[DeviceEntry, ...]
    by_id: dict[str, DeviceEntry]
    by_alias: dict[str, DeviceEntry]
    match: tuple[tuple[re.Pattern[str], DeviceEntry], ...]
    family: tuple[tuple[re.Pattern[str], DeviceEntry], ...]
    archs: dict[str, _Arch]
    arch_names: dict[str, str]  # spelling -> arch id


def _load_toml() -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    with open(_TABLE, "rb") as fh:
        return tomllib.load(fh)


_SEP = re.compile(r"[\s_\-/]+")
_COMPACT = re.compile(r"[\s_.\-/]+")


def _spaced(s: str) -> str:
    """Lower case with ``_``, ``-`` and ``/`` read as spaces (what ``match`` sees)."""
    return _SEP.sub(" ", s.casefold()).strip()


def _compact(s: str) -> str:
    """Lower case without spaces, ``_``, ``-``, ``/`` or ``.`` (how aliases compare)."""
    return _COMPACT.sub("", s.casefold())


@lru_cache(maxsize=1)
def _table() -> _Table:
    doc = _load_toml()
    archs: dict[str, _Arch] = {}
    arch_names: dict[str, str] = {}
    for aid, row in doc.get("arch", {}).items():
        a = _Arch(aid, row["vendor"], tuple(row.get("names", ())), bool(row.get("complete", False)))
        archs[aid] = a
        for n in (aid, *a.names):
            arch_names[_spaced(n)] = aid
    devices: list[DeviceEntry] = []
    by_alias: dict[str, DeviceEntry] = {}
    match: list[tuple[re.Pattern[str], DeviceEntry]] = []
    family: list[tuple[re.Pattern[str], DeviceEntry]] = []
    for row in doc["devices"]:
        mem = row.get("memory_gb")
        mems = tuple(float(m) * 1e9 for m in (mem if isinstance(mem, list) else [mem] if mem else []))
        llc = row.get("last_level_cache_mb")
        bw = row.get("memory_bandwidth_gbs")
        tdp = row.get("tdp_w")
        e = DeviceEntry(
            id=row["id"],
            vendor=row["vendor"],
            name=row["name"],
            arch=row["arch"],
            compute_units=row.get("compute_units"),
            partition_units=tuple(row.get("partition_units", ())),
            memory_bytes=mems,
            last_level_cache_bytes=float(llc) * (1 << 20) if llc else None,
            tdp_watts=float(tdp) if tdp else None,
            memory_bandwidth=float(bw) * 1e9 if bw else None,
            flops=MappingProxyType({k: float(v) * 1e12 for k, v in row.get("tflops", {}).items()}),
            source=row["source"],
            aliases=tuple(row.get("aliases", ())),
        )
        if e.arch not in archs:
            raise ValueError(f"devices.toml: {e.id} has arch {e.arch!r}, not in [arch]")
        devices.append(e)
        for alias in (e.id, e.name, *e.aliases):
            key = _compact(alias)
            if by_alias.get(key, e) is not e:
                raise ValueError(f"devices.toml: alias {alias!r} names two devices")
            by_alias[key] = e
        match.extend((re.compile(p), e) for p in row.get("match", ()))
        family.extend((re.compile(p), e) for p in row.get("family", ()))
    return _Table(
        tuple(devices),
        {d.id: d for d in devices},
        by_alias,
        tuple(match),
        tuple(family),
        archs,
        arch_names,
    )


def all_devices() -> tuple[DeviceEntry, ...]:
    """Every entry of the table, in file order."""
    return _table().devices


def device(device_id: str) -> DeviceEntry | None:
    """The entry with this canonical id, or None."""
    return _table().by_id.get(device_id)


# ------------------------------------------------------------------ architecture spellings

_ARCH_FORMS = (
    re.compile(r"^(?:sm|compute|cc)[ _]?(\d+)[a-z]?$"),  # sm_90a, compute_86, cc 8.6 below
    re.compile(r"^gfx([0-9a-f]+)(?::.*)?$"),  # gfx942:sramecc+:xnack-
)
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
_CC = re.compile(r"^(?:cc |compute capability )?(\d+)\.(\d)$")


@lru_cache(maxsize=1024)
def _arch_id(spelling: str) -> str | None:
    """The table's arch id for one spelling (``sm_90a``, ``9.0``, ``gfx942:xnack-``,
    ``Hopper``, ``GA104``), or None."""
    s = _spaced(spelling)
    t = _table()
    hit = t.arch_names.get(s)
    if hit is not None:
        return hit
    m = _ARCH_FORMS[0].match(s)
    if m:
        return t.arch_names.get(f"sm {m.group(1)}") or t.arch_names.get(m.group(1))
    m = _ARCH_FORMS[1].match(s.replace(" ", ""))
    if m:
        return t.arch_names.get(f"gfx{m.group(1)}")
    m = _CC.match(s)
    if m:
        return t.arch_names.get(f"{m.group(1)}.{m.group(2)}")
    return None


_GENERIC = frozenset({
    "amd", "ati", "nvidia", "google", "intel", "radeon", "graphics", "instinct", "geforce",
    "tesla", "quadro", "gpu", "gpus", "accelerator", "device", "generic", "tpu", "the",
})  # fmt: skip


def architecture(raw: str) -> str | None:
    """The architecture a string names: an arch spelling (``sm_90a`` -> ``sm_90``,
    ``gfx942:sramecc+`` -> ``gfx942``, ``8.6`` -> ``sm_86``), a family or chip name
    (``Nvidia GPU (Volta)`` -> ``sm_70``, ``GA104`` -> ``sm_86``), or a device name whose
    candidates all share one arch (``mi200`` -> ``gfx90a``); None when it names none."""
    if not raw or len(raw) > 256:
        return None
    direct = _arch_id(raw)
    if direct is not None:
        return direct
    cands = _name_candidates(raw)
    if cands:
        archs = {c.arch for c in cands}
        return archs.pop() if len(archs) == 1 else None
    # bare numbers (`80` in `A100 80GB`) are not read as compute capabilities here
    found = {a for w in _words(raw) if not _NUMBER.match(w) and (a := _arch_id(w)) is not None}
    return found.pop() if len(found) == 1 else None


def _words(raw: str) -> list[str]:
    s = _spaced(raw).replace("(", " ").replace(")", " ").replace(",", " ")
    words = s.split()
    # two-word family names (`ada lovelace`) as well as single words
    return words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]


def _is_generic(raw: str) -> bool:
    """A name made only of vendor and generic words and arch names (``AMD Radeon
    Graphics``, ``Nvidia GPU (Volta)``, ``gfx942``): it names no model by itself."""
    for w in _spaced(raw).replace("(", " ").replace(")", " ").split():
        if w in _GENERIC or w.isdigit() or _arch_id(w) is not None:
            continue
        return False
    return True


# ------------------------------------------------------------------ names to candidates

_NOT_THE_BOARD = re.compile(r"\b(laptop|mobile|max ?q|notebook)\b")
_GB_IN_NAME = re.compile(r"\b(\d{1,4}) ?gb?\b")


@lru_cache(maxsize=4096)
def _name_candidates(raw: str) -> tuple[DeviceEntry, ...]:
    """The devices a name could be, by the name alone (empty: unknown or generic)."""
    t = _table()
    exact = t.by_alias.get(_compact(raw))
    if exact is not None:
        return (exact,)
    s = _spaced(raw)
    if _NOT_THE_BOARD.search(s):
        return ()  # a laptop part shares the desktop name but not its figures
    named = tuple(dict.fromkeys(e for p, e in t.match if p.search(s)))
    if named:
        return named
    fam = tuple(dict.fromkeys(e for p, e in t.family if p.search(s)))
    if len(fam) > 1:
        # a size in the name (`A100-80GB`) keeps the variants of that size
        sizes = {float(m) * 1e9 for m in _GB_IN_NAME.findall(s)}
        if sizes:
            sized = tuple(e for e in fam if any(m in sizes for m in e.memory_bytes))
            fam = sized or fam
    return fam


def _mig(raw: str | None) -> bool:
    return bool(raw) and "mig" in _spaced(raw or "").split()


def arch_agrees(e: DeviceEntry, arch: str | None) -> bool:
    """Whether ``arch`` (any spelling) can be ``e``'s; an unreadable arch cannot disagree."""
    if not arch:
        return True
    a = _arch_id(arch)
    return a is None or a == e.arch


def units_agree(
    e: DeviceEntry, units: int | None, *, partitions: int | None = None, mig: bool = False
) -> bool:
    """Whether an SM/CU count can be ``e``'s: the whole device, one of its partitions (the
    table's partition sizes, or the whole split ``partitions`` ways), or any smaller count on
    a MIG slice."""
    if units is None or e.compute_units is None:
        return True
    whole = e.compute_units
    if units == whole or units in e.partition_units:
        return True
    if partitions is not None and partitions > 1 and units == whole // partitions:
        return True
    return mig and units < whole


def memory_agrees(
    e: DeviceEntry, memory_bytes: float | None, *, partitions: int | None = None, mig: bool = False
) -> bool:
    """Whether a memory size can be ``e``'s: at most its marketed size read as GiB (+5%),
    at least 85% of it read as GB (of its share, when split ``partitions`` ways; any size on
    a MIG slice)."""
    if memory_bytes is None or not e.memory_bytes:
        return True
    if memory_bytes > max(e.memory_bytes) / 1e9 * _GIB * _MEMORY_OVER:
        return False
    if mig:
        return True
    share = partitions if partitions is not None and partitions > 1 else 1
    return memory_bytes >= min(e.memory_bytes) / share * _MEMORY_UNDER


def candidates(
    raw: str | None,
    *,
    arch: str | None = None,
    compute_units: int | None = None,
    memory_bytes: float | None = None,
    partitions: int | None = None,
) -> tuple[DeviceEntry, ...]:
    """The table entries ``raw`` could name that agree with the other facts given.

    A generic name (``AMD Radeon Graphics``, ``gfx90a``) yields the devices of its arch only
    where the table holds every device of that arch."""
    if raw is not None and len(raw) > 256:
        return ()
    t = _table()
    cands = _name_candidates(raw) if raw else ()
    if not cands and (raw is None or _is_generic(raw)):
        a = (_arch_id(arch) if arch else None) or (architecture(raw) if raw else None)
        spec = t.archs.get(a) if a else None
        if spec is None or not spec.complete:
            return ()
        cands = tuple(e for e in t.devices if e.arch == a)
    mig = _mig(raw)
    return tuple(
        e
        for e in cands
        if arch_agrees(e, arch)
        and units_agree(e, compute_units, partitions=partitions, mig=mig)
        and memory_agrees(e, memory_bytes, partitions=partitions, mig=mig)
    )


def identify(
    raw: str | None,
    *,
    arch: str | None = None,
    compute_units: int | None = None,
    memory_bytes: float | None = None,
) -> DeviceEntry | None:
    """The one device ``raw`` names, given what else the tool said; None when the name is
    unknown, or could be several devices the other facts do not tell apart."""
    found = candidates(raw, arch=arch, compute_units=compute_units, memory_bytes=memory_bytes)
    return found[0] if len(found) == 1 else None


def canonical_id(
    raw: str | None,
    *,
    arch: str | None = None,
    compute_units: int | None = None,
    memory_bytes: float | None = None,
) -> str | None:
    """The canonical id (``nvidia-h100-sxm5-80gb``, ``amd-mi300x``, ``google-tpu-v5e``) of
    the device :func:`identify` finds, or None."""
    e = identify(raw, arch=arch, compute_units=compute_units, memory_bytes=memory_bytes)
    return e.id if e is not None else None
