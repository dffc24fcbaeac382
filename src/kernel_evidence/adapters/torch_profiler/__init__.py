"""PyTorch profiler adapter: Kineto Chrome traces (``.json``, ``.json.gz``) to kernel packets.

``torch.profiler`` (``export_chrome_trace``, ``tensorboard_trace_handler``: ``*.pt.trace.json``)
writes its GPU activity through Kineto, from CUPTI on CUDA builds and from roctracer or
rocprofiler-sdk on ROCm builds. One packet per trace file: ``profiler[0]`` has one
:class:`KernelRecord` per kernel name per device (launches, median launch time, launch shape,
registers and shared memory where the trace has them, the launching CPU operator raw),
``profiler[1]`` one record per launch with the launch-level values as raw columns (a side file
when large), ``hardware`` from ``deviceProperties``. See ``docs/adapters/torch-profiler.md``.

Options (``AdapterOptions.extra``): ``max_bytes`` (input cap, also once decompressed),
``subject`` (the packet's subject name; default the file name), ``device`` and ``vendor``
(the hardware, for traces without ``deviceProperties``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..._gc import paused_gc
from ...errors import AdapterError, KernelEvidenceError
from ...models import EvidencePacket
from .. import AdapterOptions, AdapterResult
from .._read import max_bytes_option, read_capped, walk_inputs
from . import _build
from ._events import WHAT, decode_trace
from ._link import scan

__all__ = ["ADAPTER", "TorchProfilerAdapter", "read_trace"]

_SUFFIXES = (".json", ".json.gz")


def _stem(path: str) -> str:
    name = Path(path).name
    for suffix in (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)] or name
    return name


def _skipped_text(path: str, why: str, count: int, first: str) -> str:
    return f"{path}: {count} kernel event(s) left out: {why} (first: {first})"


def read_trace(path: str, options: AdapterOptions, cap: int) -> tuple[EvidencePacket, list[str]]:
    """The packet of one trace file and its warnings."""
    blob = read_capped(path, cap, what=WHAT)
    data = decode_trace(path, blob, cap)
    found = scan(data.events)
    warnings: list[str] = list(data.warnings)
    for why, (count, first) in found.skipped.items():
        warnings.append(_skipped_text(path, why, count, first))
    if found.args_dropped:
        warnings.append(
            f"{path}: {found.args_dropped} event(s) had `args` values of unexpected types; those values left out"
        )
    if not found.launches:
        hint = ""
        if any(
            e.ph == "M"
            and e.name == "process_name"
            and (b"/device:" in bytes(e.args) or b"/host:" in bytes(e.args))
            for e in data.events[:2000]
        ):
            hint = " (it looks like an XProf trace: use `kevidence ingest xprof`)"
        elif any(e.cat == "cuda_profiler_range" for e in data.events):
            hint = (
                " (it holds CUPTI range-profiler events, `cuda_profiler_range`: counters of kernels"
                " replayed for measurement, not their activity)"
            )
        raise AdapterError(
            f'{path}: no GPU kernel events (`cat: "kernel"` with `ts` and `dur`) in '
            f"{len(data.events)} trace event(s){hint}; expected a trace recorded with "
            "ProfilerActivity.CUDA (CUDA or ROCm builds)"
        )
    n_linked = sum(1 for x in found.launches if x.op is not None)
    if n_linked < len(found.launches) and found.cpu_ops:
        warnings.append(
            f"{path}: {len(found.launches) - n_linked} of {len(found.launches)} kernel launch(es) "
            "have no launching CPU operator in the trace"
        )
    stem = _stem(path)
    packet = _build.build_packet(path, blob, data.trace, found, options, warnings, stem)
    return packet, warnings


class TorchProfilerAdapter:
    """PyTorch profiler / Kineto trace adapter (see the module docstring)."""

    name = "torch-profiler"
    aliases: tuple[str, ...] = ("kineto", "pytorch-profiler")
    #: the keys ``--opt KEY=VALUE`` may set (any other is a usage error)
    options: tuple[str, ...] = ("device", "max_bytes", "subject", "vendor")
    description = "PyTorch profiler / Kineto Chrome traces (.json, .json.gz) from CUDA and ROCm runs"

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        """One packet per trace file."""
        if not inputs:
            raise AdapterError(f"torch-profiler: no input given; expected {WHAT}")
        cap = max_bytes_option(dict(options.extra or {}))
        packets: list[EvidencePacket] = []
        warnings: list[str] = []
        for path, explicit in walk_inputs(inputs, _SUFFIXES):
            try:
                with paused_gc():
                    packet, found = read_trace(path, options, cap)
            except KernelEvidenceError as exc:
                if explicit:
                    raise
                warnings.append(f"skipped: {exc}")
                continue
            except (ValueError, OverflowError) as exc:  # pydantic's ValidationError is a ValueError
                lines = str(exc).splitlines()
                detail = " ".join(lines[:3]) if lines else type(exc).__name__
                err = AdapterError(f"{path}: values out of range ({detail})")
                if explicit:
                    raise err from None
                warnings.append(f"skipped: {err}")
                continue
            packets.append(packet)
            warnings.extend(found)
        if not packets:
            raise AdapterError(
                f"{', '.join(os.fspath(i) for i in inputs)}: no PyTorch profiler trace found; expected {WHAT}"
            )
        return AdapterResult(packets=packets, warnings=warnings)


ADAPTER = TorchProfilerAdapter()
