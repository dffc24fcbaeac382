"""Where it ran: device, driver, runtime, clocks and power."""

from __future__ import annotations

from typing import Literal

from ._base import (
    Bandwidth,
    Bool,
    ByteSize,
    FlopRate,
    Frequency,
    Model,
    NonEmptyStr,
    PosInt,
    Power,
    Software,
    Str,
)

__all__ = ["Clocks", "Hardware", "Host"]

Vendor = Literal["nvidia", "amd", "google", "intel", "apple", "aws", "huawei", "cpu", "other"]


class Clocks(Model):
    """Clock state: what was asked for and what was observed while measuring."""

    locked: Bool | None = None
    sm_requested: Frequency | None = None
    sm_observed: Frequency | None = None
    memory_requested: Frequency | None = None
    memory_observed: Frequency | None = None


class Host(Model):
    """The host machine around the accelerator."""

    hostname: Str | None = None
    os: Str | None = None
    cpu: Str | None = None
    python: Str | None = None
    memory: ByteSize | None = None


class Hardware(Model):
    """The hardware category of a packet."""

    vendor: Vendor
    device: NonEmptyStr
    #: schema 0.2: the canonical device id from the shipped device table (``device`` keeps
    #: the string the tool wrote); absent when the device is not in the table
    device_id: Str | None = None
    arch: Str | None = None
    count: PosInt | None = None
    compute_units: PosInt | None = None
    partitions: PosInt | None = None
    memory: ByteSize | None = None
    peak_bandwidth: Bandwidth | None = None
    peak_flop_rate: FlopRate | None = None
    driver: Software | None = None
    runtime: Software | None = None
    clocks: Clocks | None = None
    power_limit: Power | None = None
    interconnect: Str | None = None
    #: schema 0.2: size of the last-level cache (L2 on NVIDIA, Infinity Cache/L2 on AMD)
    last_level_cache: ByteSize | None = None
    host: Host | None = None
