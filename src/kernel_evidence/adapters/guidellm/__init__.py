"""GuideLLM adapter: ``benchmarks.json`` / ``.yaml`` reports to serving packets.

``guidellm benchmark --output-path benchmarks.json`` (or ``.yaml``) writes one benchmark per
strategy of its profile (each rate or concurrency step of a sweep); each becomes one
serving packet: ``timing.serving`` (counts, duration, throughputs, TTFT/ITL/TPOT/end-to-end
latency statistics in ms, from the successful requests), ``task.serving`` (model, rate or
concurrency, synthetic prompt and output lengths) and GuideLLM's own figures under the
``guidellm:raw`` extension. Reports of GuideLLM 0.2-0.3 and of 0.4 and later (``metadata``,
``args`` or ``config`` at the top) are read. See ``docs/adapters/guidellm.md``.

Options (``AdapterOptions.extra``): ``max_bytes``; ``model``, ``dataset``, ``engine``,
``engine_version`` (workload facts the report lacks); ``device``, ``vendor``, ``gpu_count``
(the server's hardware: GuideLLM does not record it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ...errors import AdapterError, KernelEvidenceError
from ...models import EvidencePacket
from .. import AdapterOptions, AdapterResult
from .._read import max_bytes_option, read_capped, walk_inputs
from ._build import build_packet
from ._report import WHAT, parse_report

__all__ = ["ADAPTER", "GuideLLMAdapter"]

_SUFFIXES = (".json", ".yaml", ".yml")


def read_report(path: str, options: AdapterOptions, cap: int) -> tuple[list[EvidencePacket], list[str]]:
    """The packets of one report file and their warnings."""
    if path.lower().endswith((".txt", ".log", ".csv")):
        raise AdapterError(
            f"{path}: GuideLLM's console table and CSV round their figures and are not read; "
            f"expected {WHAT} (write it with --output-path benchmarks.json)"
        )
    data = read_capped(path, cap, what=WHAT)
    warnings: list[str] = []
    packets = [build_packet(path, b, options, warnings) for b in parse_report(path, data)]
    # one warning per message (the hardware line repeats for every benchmark)
    return packets, list(dict.fromkeys(warnings))


class GuideLLMAdapter:
    """GuideLLM benchmark reports (see the module docstring)."""

    name = "guidellm"
    aliases: tuple[str, ...] = ()
    #: the keys ``--opt KEY=VALUE`` may set (any other is a usage error)
    options: tuple[str, ...] = (
        "dataset",
        "device",
        "engine",
        "engine_version",
        "gpu_count",
        "max_bytes",
        "model",
        "vendor",
    )
    description = "GuideLLM benchmarks.json / .yaml reports: one serving packet per benchmark (rate or concurrency step)"

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        """One packet per benchmark of every report in ``inputs``."""
        if not inputs:
            raise AdapterError(f"guidellm: no input given; expected {WHAT}")
        cap = max_bytes_option(dict(options.extra or {}))
        packets: list[EvidencePacket] = []
        warnings: list[str] = []
        for path, explicit in walk_inputs(inputs, _SUFFIXES):
            try:
                got, found = read_report(path, options, cap)
            except KernelEvidenceError as exc:
                if explicit:
                    raise
                warnings.append(f"skipped: {exc}")
                continue
            except (ValueError, OverflowError) as exc:  # pydantic's ValidationError is a ValueError
                lines = str(exc).splitlines()
                err = AdapterError(
                    f"{path}: values out of range ({' '.join(lines[:3]) or type(exc).__name__})"
                )
                if explicit:
                    raise err from None
                warnings.append(f"skipped: {err}")
                continue
            packets.extend(got)
            warnings.extend(found)
        if not packets:
            raise AdapterError(
                f"{', '.join(os.fspath(i) for i in inputs)}: no GuideLLM report found; expected {WHAT}"
            )
        return AdapterResult(packets=packets, warnings=list(dict.fromkeys(warnings)))


ADAPTER = GuideLLMAdapter()
