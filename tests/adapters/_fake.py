"""A fake adapter for tests: the smallest thing with the :class:`~kernel_evidence.adapters.Adapter`
interface, registered by tests as a plug-in (never by the package).

Each input is a JSON file ``{"name": ..., "mean_us": ..., "device": ...}`` (every key
optional) and gives one kernel packet, started with the envelope helper. A file without a
device gives an :class:`~kernel_evidence.adapters.AdapterWarning` naming the fields the packet
lacks; a file that is not JSON is an :class:`~kernel_evidence.errors.AdapterError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from kernel_evidence.adapters import AdapterOptions, AdapterResult, AdapterWarning, start_packet
from kernel_evidence.errors import AdapterError, AdapterOptionError
from kernel_evidence.models import Hardware, Stats, Timing


class FakeAdapter:
    """Reads the small JSON files described in the module docstring."""

    description = "fake adapter for tests: {name, mean_us, device} JSON files"
    options: tuple[str, ...] = ("subject",)

    def __init__(self, name: str = "fake", aliases: tuple[str, ...] = ("fake-alias",)) -> None:
        self.name = name
        self.aliases = aliases

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        subject = options.extra.get("subject")
        if subject is not None and not isinstance(subject, str):
            raise AdapterOptionError(f"option `subject`: expected text, got {subject!r}")
        packets = []
        warnings: list[str] = []
        for path in inputs:
            try:
                data = json.loads(Path(path).read_text())
            except (OSError, ValueError) as exc:
                raise AdapterError(f"{path}: not a fake result: {exc}") from None
            if not isinstance(data, dict):
                raise AdapterError(f"{path}: not a fake result: expected an object")
            mean = data.get("mean_us")
            timing = None
            if isinstance(mean, (int, float)):
                timing = Timing(
                    method="cuda_events",
                    stats=Stats(unit="us", n=1, mean=float(mean)),
                )
            hardware = None
            if isinstance(data.get("device"), str):
                hardware = Hardware(vendor="nvidia", device=data["device"])
            else:
                warnings.append(
                    AdapterWarning(
                        f"{path}: no device in the file; hardware left empty",
                        {"hardware.vendor": "nvidia", "hardware.device": "<GPU model>"},
                    )
                )
            warnings.append(AdapterWarning(f"{path}: no command recorded", {"replay.command": None}))
            packets.append(
                start_packet(
                    subject_kind="kernel",
                    subject_name=subject or str(data.get("name") or Path(path).stem),
                    created_at=options.created_at,
                    timing=timing,
                    hardware=hardware,
                )
            )
        return AdapterResult(packets=packets, warnings=warnings)


ADAPTER = FakeAdapter()
#: a second plug-in that claims the name of the first
CLASHING = FakeAdapter("other-fake", ("fake",))
#: a plug-in that claims a built-in adapter's alias
CLAIMS_BUILTIN = FakeAdapter("fake3", ("nsight-compute",))
