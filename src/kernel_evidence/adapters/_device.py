"""One place that gives a packet's hardware its canonical device id.

Tools spell one device many ways (``MI300X_A1``, ``AMD Instinct MI300X``, ``NVIDIA H100
80GB HBM3``, ``H100_Modal``...). :func:`hardware_with_id` looks the raw string up in the
shipped device table (:mod:`kernel_evidence.devices`) together with what the tool also said
(arch, SM/CU count, memory, partitions) and fills ``Hardware.device_id``; ``device`` keeps
the string the tool wrote. A name the table does not know, or that could be several models
the other facts do not tell apart (``mi200`` alone), stays without an id: unknown, never
guessed. :func:`~kernel_evidence.adapters._envelope.start_packet` calls it on the hardware
it is given, so every adapter gets it.
"""

from __future__ import annotations

from ..devices import candidates
from ..models import Hardware
from ..units import UnitError, convert

__all__ = ["device_id_of", "hardware_with_id", "vendor_of"]


def device_id_of(hw: Hardware) -> str | None:
    """The canonical id of the one device-table model ``hw`` can be, or None."""
    memory = None
    if hw.memory is not None:
        try:
            memory = convert(hw.memory.value, hw.memory.unit, "B")
        except UnitError:
            memory = None
    found = candidates(
        hw.device,
        arch=hw.arch,
        compute_units=hw.compute_units,
        memory_bytes=memory,
        partitions=hw.partitions,
    )
    return found[0].id if len(found) == 1 else None


def hardware_with_id(hw: Hardware) -> Hardware:
    """``hw`` with ``device_id`` filled from the device table when it has none and the
    table names one model for it; ``hw`` itself otherwise (an id already given is kept)."""
    if hw.device_id is not None:
        return hw
    found = device_id_of(hw)
    return hw if found is None else hw.model_copy(update={"device_id": found})


def vendor_of(device: str) -> str:
    """The hardware vendor a device name states (``other`` when it states none; ``cpu`` for
    a processor, which flashinfer-bench names when it ran on the CPU)."""
    low = device.lower()
    if any(w in low for w in ("epyc", "xeon", "ryzen", "core(tm)", "cpu")):
        return "cpu"
    if "nvidia" in low or any(
        w in low for w in ("geforce", "tesla", "quadro", "rtx", "gb200", "h100", "b200")
    ):
        return "nvidia"
    if "amd" in low or any(w in low for w in ("radeon", "instinct", "mi300", "mi250", "mi355")):
        return "amd"
    if "intel" in low:
        return "intel"
    return "other"
