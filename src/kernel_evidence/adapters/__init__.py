"""Adapters turn what profilers and benchmarks already write into packets.

Every adapter has the same small interface (:class:`Adapter`): ``name``, ``aliases``, and
``read(inputs, options) -> AdapterResult`` where ``inputs`` are paths (files or
directories) and the result holds packets, possibly partial (no replay command or baseline:
the source cannot know them), plus warnings. Built-in adapters are registered by module
name; third-party adapters register through the ``kernel_evidence.adapters`` entry-point
group, each entry point naming an object with the same interface.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from ..errors import AdapterError, UnknownAdapter
from ..models import Artifact, EvidencePacket
from ..rawtable import INLINE_MAX_CELLS
from ._envelope import start_packet, start_packet_data

__all__ = [
    "Adapter",
    "AdapterOptions",
    "AdapterResult",
    "AdapterWarning",
    "ENTRY_POINT_GROUP",
    "adapter_sources",
    "available_adapters",
    "builtin_names",
    "get_adapter",
    "missing_fields",
    "start_packet",
    "start_packet_data",
]

ENTRY_POINT_GROUP = "kernel_evidence.adapters"

#: built-in adapter name -> module (relative to this package); aliases are declared by the adapters
_BUILTIN: dict[str, str] = {
    "ncu": ".ncu",
    "vllm": ".vllm",
    "rocprof": ".rocprof",
    "xprof": ".xprof",
    "flashinfer-trace": ".flashinfer",
    "kernelbench": ".kernelbench",
    "nsys": ".nsys",
    "torch-profiler": ".torch_profiler",
    "guidellm": ".guidellm",
    "kernelbot": ".kernelbot",
    "tritonbench": ".tritonbench",
}


def builtin_names() -> tuple[str, ...]:
    """The names of the built-in adapters, in registry order (aliases not included)."""
    return tuple(_BUILTIN)


#: raw values above which a side file is compressed in Arrow's threads (see
#: :meth:`AdapterOptions.raw_table`)
THREADED_SIDE_CELLS = 10_000_000


@dataclass
class AdapterOptions:
    """What the user tells an adapter that the source cannot know.

    ``producer`` is filled by the caller; ``extra`` carries adapter-specific options.

    ``side_dir`` is where adapters may write side files (see :mod:`kernel_evidence.rawtable`):
    a capture with more than ``inline_max_cells`` raw values keeps them in an Arrow IPC file
    there instead of inline. Without it every value stays in the packet. ``side_base`` is
    the directory the packets will be written to: side file paths are recorded relative to
    it. ``side_files`` lists the files written (not those found there already, with the same
    bytes), so a caller that fails later can remove them.
    """

    created_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    side_dir: str | None = None
    side_base: str | None = None
    inline_max_cells: int = INLINE_MAX_CELLS
    side_files: list[str] = field(default_factory=list)

    def wants_raw_table(self, rows: int, columns: int) -> bool:
        """Whether :meth:`raw_table` writes a side file for a capture of ``rows`` values in each
        of ``columns`` raw columns (adapters then leave them in Arrow and start it early)."""
        return self.side_dir is not None and rows * columns > self.inline_max_cells

    def raw_table(
        self, columns: Mapping[str, Any], units: Mapping[str, str] | None, rows: int, stem: str
    ) -> Artifact | None:
        """A side file for a capture's raw columns (``rows`` values each), or None when they
        stay inline: no ``side_dir``, or no more than ``inline_max_cells`` values.

        The adapters write it in a second thread while the first builds the records. Up to
        :data:`THREADED_SIDE_CELLS` values it is compressed in that thread only: it is then
        done before the records, and Arrow's compression threads would only take their core
        on a machine with two (20,000 ncu launches x 337 raw columns: 0.83 s -> 0.76 s
        there). A larger one is compressed in Arrow's threads: it is then the longer of the
        two (20,000 rocprof dispatches x 1,022 columns: 1.6 s -> 1.45 s)."""
        if self.side_dir is None or not self.wants_raw_table(rows, len(columns)):
            return None
        from ..rawtable import _write

        try:
            threads = rows * len(columns) > THREADED_SIDE_CELLS
            ref, made = _write(columns, units, rows, self.side_dir, stem, self.side_base, threads)
        except OSError as exc:  # a full disk, a read-only or missing directory: one line
            why = exc.strerror or str(exc)
            raise AdapterError(
                f"{self.side_dir}: cannot write the raw metrics side file for {stem}: {why}"
            ) from None
        if made:  # a file that was there already (an earlier run's) is not this run's to remove
            self.side_files.append(os.path.join(self.side_dir, ref.name or ""))
        return ref


class AdapterWarning(str):
    """A warning an adapter returns: its text (it *is* a ``str``, printed, compared and searched
    as any other warning) and, as data, the packet fields the source did not give that the
    user can supply.

    ``missing`` maps dotted packet paths (``hardware.device``, ``replay.command``,
    ``timing.baseline``) to an example value, or None. Adapters never write command-line
    syntax into the text: ``kevidence ingest`` phrases the advice (``--set
    hardware.device=...``, ``--replay-cmd``, ``--baseline``) from ``missing``, and leaves the
    warning out when the user supplied every field it names.

    >>> w = AdapterWarning("a.csv: device name not in this export", {"hardware.device": "<GPU model>"})
    >>> w.startswith("a.csv"), w.missing
    (True, {'hardware.device': '<GPU model>'})
    """

    missing: dict[str, str | None]

    def __new__(cls, message: str, missing: Mapping[str, str | None] | None = None) -> AdapterWarning:
        self = super().__new__(cls, message)
        self.missing = dict(missing or {})
        return self

    @property
    def message(self) -> str:
        """The text, as a plain ``str``."""
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"AdapterWarning({self.message!r}, missing={self.missing!r})"


@dataclass
class AdapterResult:
    """Packets made from the inputs, and warnings about what could not be read or derived.

    A warning is a ``str``; an :class:`AdapterWarning` also names, as data, the fields the
    packets lack that the user can supply (see :func:`missing_fields`)."""

    packets: list[EvidencePacket]
    warnings: list[str] = field(default_factory=list)


def missing_fields(warning: str) -> dict[str, str | None]:
    """The fields a warning says the packet lacks (``{}`` for a plain ``str`` warning)."""
    return dict(warning.missing) if isinstance(warning, AdapterWarning) else {}


@runtime_checkable
class Adapter(Protocol):
    """The interface every adapter offers."""

    name: str
    aliases: tuple[str, ...]
    description: str

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        """Read ``inputs`` (paths) and return packets plus warnings; raise AdapterError when nothing usable is found."""
        ...


def _builtin(name: str) -> Adapter:
    module = importlib.import_module(_BUILTIN[name], __name__)
    adapter: Adapter = module.ADAPTER
    return adapter


def _absent(exc: ModuleNotFoundError, name: str) -> bool:
    """Whether ``exc`` says the built-in adapter ``name`` itself is not in this build (not
    that something it imports is missing)."""
    return bool(exc.name) and exc.name == f"{__name__}.{_BUILTIN[name].lstrip('.')}"


@lru_cache(maxsize=1)
def _plugins() -> tuple[Any, ...]:
    """The entry points of the ``kernel_evidence.adapters`` group, looked up once."""
    return tuple(entry_points(group=ENTRY_POINT_GROUP))


def _claim(found: dict[str, Adapter], sources: dict[str, str], ad: Adapter, source: str) -> None:
    for key in dict.fromkeys((ad.name, *ad.aliases)):
        if key in found and found[key] is not ad:
            raise AdapterError(f"adapter name `{key}` is claimed twice: by {sources[key]} and by {source}")
        found[key] = ad
        sources[key] = source


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, Adapter], dict[str, str]]:
    found: dict[str, Adapter] = {}
    sources: dict[str, str] = {}
    for name, module in _BUILTIN.items():
        try:
            ad = _builtin(name)
        except ModuleNotFoundError as exc:  # a built-in adapter module not present in this build
            if _absent(exc, name):
                continue
            raise
        _claim(found, sources, ad, f"the built-in adapter `{name}` ({__name__}{module})")
    for ep in _plugins():
        try:
            ad = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plug-in must not break the CLI
            raise AdapterError(f"adapter plug-in `{ep.name}` ({ep.value}) failed to load: {exc}") from exc
        if not isinstance(ad, Adapter):
            raise AdapterError(f"adapter plug-in `{ep.name}` ({ep.value}) does not offer name/aliases/read()")
        dist = getattr(getattr(ep, "dist", None), "name", None)
        _claim(found, sources, ad, f"the plug-in `{ep.name}` ({ep.value}{f', from {dist}' if dist else ''})")
    return found, sources


def available_adapters() -> dict[str, Adapter]:
    """Every adapter by name and alias: built-in ones, then entry-point ones.

    The table is built once per process (entry points looked up and loaded once). A name or
    alias claimed by two adapters (a plug-in and a built-in one, or two plug-ins) is an
    :class:`~kernel_evidence.errors.AdapterError` naming both, not a silent choice."""
    return dict(_table()[0])


def adapter_sources() -> dict[str, str]:
    """Where each name of :func:`available_adapters` comes from, in words (a built-in
    adapter's module, a plug-in's entry point and distribution)."""
    return dict(_table()[1])


def _reset_registry() -> None:
    """Forget the cached table and entry points (tests that install fake plug-ins)."""
    _plugins.cache_clear()
    _table.cache_clear()


def get_adapter(name: str) -> Adapter:
    """The adapter registered under ``name`` (or one of its aliases).

    A built-in adapter asked for by its own name is imported alone when no plug-in is
    installed; otherwise the whole table is loaded, so that a plug-in claiming a built-in
    name is reported (:func:`available_adapters`)."""
    if name in _BUILTIN and not _plugins():
        try:
            return _builtin(name)
        except ModuleNotFoundError as exc:  # not in this build: the table says what is
            if not _absent(exc, name):
                raise
    table = available_adapters()
    try:
        return table[name]
    except KeyError:
        raise UnknownAdapter(f"no adapter named `{name}`; available: {', '.join(sorted(table))}") from None
