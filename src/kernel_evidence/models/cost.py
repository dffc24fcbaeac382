"""What it cost: accelerator and CPU time, energy, money."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, Strict

from ._base import Bool, Duration, Energy, Model, NonEmptyStr, NonNegFloat, Str

__all__ = ["Cost", "EnergyMeasurement", "Money"]


class EnergyMeasurement(Model):
    """Energy with the window it was measured over and what measured it (NVML, rocm-smi, IPMI...)."""

    energy: Energy
    window: Duration | None = None
    source: NonEmptyStr
    estimated: Bool | None = None


class Money(Model):
    """A price, with where it came from and when."""

    amount: NonNegFloat
    currency: Annotated[str, Strict(), Field(pattern=r"^[A-Z]{3}$")]  # ISO 4217 code: USD, EUR
    price_source: Str | None = None
    price_date: Annotated[str, Strict(), Field(pattern=r"^\d{4}-\d{2}-\d{2}$")] | None = None


class Cost(Model):
    """The cost category of a packet. ``gpu_time`` is accelerator-seconds summed over devices."""

    gpu_time: Duration | None = None
    cpu_time: Duration | None = None
    wall_time: Duration | None = None
    energy: EnergyMeasurement | None = None
    money: Money | None = None
