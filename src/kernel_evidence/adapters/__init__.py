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
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from ..errors import AdapterError
from ..models import Artifact, EvidencePacket
from ..rawtable import INLINE_MAX_CELLS

__all__ = [
    "Adapter",
    "AdapterOptions",
    "AdapterResult",
    "ENTRY_POINT_GROUP",
    "available_adapters",
    "get_adapter",
]

ENTRY_POINT_GROUP = "kernel_evidence.adapters"

#: built-in adapter name -> module (relative to this package); aliases are declared by the adapters
_BUILTIN: dict[str, str] = {
    "ncu": ".ncu",
    "vllm": ".vllm",
    "rocprof": ".rocprof",
    "xprof": ".xprof",
    "flashinfer-trace": ".flashinfer",
}


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


@dataclass
class AdapterResult:
    """Packets made from the inputs, and warnings about what could not be read or derived."""

    packets: list[EvidencePacket]
    warnings: list[str] = field(default_factory=list)


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


def available_adapters() -> dict[str, Adapter]:
    """Every adapter by name and alias: built-in ones, then entry-point ones."""
    found: dict[str, Adapter] = {}
    for name in _BUILTIN:
        try:
            ad = _builtin(name)
        except ModuleNotFoundError as exc:  # a built-in adapter module not present in this build
            if exc.name and exc.name.endswith(f"adapters.{name}"):
                continue
            raise
        for key in (ad.name, *ad.aliases):
            found[key] = ad
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ad = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plug-in must not break the CLI
            raise AdapterError(f"adapter plug-in `{ep.name}` ({ep.value}) failed to load: {exc}") from exc
        if not isinstance(ad, Adapter):
            raise AdapterError(f"adapter plug-in `{ep.name}` ({ep.value}) does not offer name/aliases/read()")
        for key in (ad.name, *ad.aliases):
            found.setdefault(key, ad)
    return found


def get_adapter(name: str) -> Adapter:
    """The adapter registered under ``name`` (or one of its aliases).

    A built-in adapter asked for by its own name is imported alone (built-in adapters win
    over plug-ins of the same name either way); any other name loads the whole table."""
    if name in _BUILTIN:
        try:
            return _builtin(name)
        except ModuleNotFoundError as exc:  # not in this build: the table says what is
            if not (exc.name and exc.name.endswith(f"adapters.{name}")):
                raise
    table = available_adapters()
    try:
        return table[name]
    except KeyError:
        raise AdapterError(f"no adapter named `{name}`; available: {', '.join(sorted(table))}") from None
