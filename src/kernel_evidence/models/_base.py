"""Shared building blocks of the packet models: the base config, strict scalars, quantities.

Every field of every model is either required or defaults to ``None``: a packet never
grows content it did not state, so the canonical form (and the packet id) only depends on
what the producer wrote.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

__all__ = [
    "Artifact",
    "Bandwidth",
    "ByteSize",
    "Digest",
    "Duration",
    "Energy",
    "FlopCount",
    "FlopRate",
    "Frequency",
    "Model",
    "Power",
    "Quantity",
    "Software",
]

Str = Annotated[str, Strict()]
NonEmptyStr = Annotated[str, Strict(), Field(min_length=1)]
_I64 = 2**63 - 1
#: integers are 64-bit so that every consumer (Arrow, DuckDB, Spark) can hold them
Int = Annotated[int, Strict(), Field(ge=-_I64 - 1, le=_I64)]
NonNegInt = Annotated[int, Strict(), Field(ge=0, le=_I64)]
PosInt = Annotated[int, Strict(), Field(ge=1, le=_I64)]
Float = Annotated[float, Strict()]
NonNegFloat = Annotated[float, Strict(), Field(ge=0)]
Bool = Annotated[bool, Strict()]

#: ``sha256:`` followed by 64 lowercase hex digits.
Digest = Annotated[str, Strict(), Field(pattern=r"^sha256:[0-9a-f]{64}$")]
#: RFC 3339 timestamp in UTC, written with a ``Z``.
UtcTimestamp = Annotated[
    str,
    Strict(),
    # fields in range (month 01-12, day 01-31, hour 00-23, minute 00-59, second 00-60); that
    # the day exists in its month is rule KE007
    Field(
        pattern=r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d{1,9})?Z$"
    ),
]

TimeUnit = Literal["ns", "us", "ms", "s"]
BytesUnit = Literal["B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"]
BandwidthUnit = Literal["B/s", "KB/s", "MB/s", "GB/s", "TB/s", "GiB/s"]
FlopUnit = Literal["FLOP", "GFLOP", "TFLOP"]
FlopRateUnit = Literal["FLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s"]
EnergyUnit = Literal["J", "kJ", "Wh", "kWh"]
PowerUnit = Literal["mW", "W", "kW"]
FrequencyUnit = Literal["Hz", "kHz", "MHz", "GHz"]
AnyUnit = Literal[
    "ns", "us", "ms", "s", "cycle",
    "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB",
    "B/s", "KB/s", "MB/s", "GB/s", "TB/s", "GiB/s",
    "FLOP", "GFLOP", "TFLOP", "FLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s",
    "%", "ratio", "J", "kJ", "Wh", "kWh", "mW", "W", "kW",
    "Hz", "kHz", "MHz", "GHz", "count", "1/s", "tok", "tok/s", "req/s", "degC",
]  # fmt: skip


class Model(BaseModel):
    """Base of every packet model: unknown fields are refused, NaN and infinities too."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        populate_by_name=True,
        use_enum_values=False,
        validate_default=False,
        defer_build=True,
    )


class Quantity(Model):
    """A number and its unit, from the closed unit set (see :mod:`kernel_evidence.units`)."""

    value: Float
    unit: AnyUnit


class Duration(Model):
    """A span of time."""

    value: NonNegFloat
    unit: TimeUnit


class ByteSize(Model):
    """An amount of data."""

    value: NonNegFloat
    unit: BytesUnit


class Bandwidth(Model):
    """Data moved per unit of time."""

    value: NonNegFloat
    unit: BandwidthUnit


class FlopCount(Model):
    """Floating-point operations."""

    value: NonNegFloat
    unit: FlopUnit


class FlopRate(Model):
    """Floating-point operations per second."""

    value: NonNegFloat
    unit: FlopRateUnit


class Energy(Model):
    """Energy."""

    value: NonNegFloat
    unit: EnergyUnit


class Power(Model):
    """Power."""

    value: NonNegFloat
    unit: PowerUnit


class Frequency(Model):
    """A clock frequency."""

    value: NonNegFloat
    unit: FrequencyUnit


class Software(Model):
    """A named piece of software and its version."""

    name: NonEmptyStr
    version: Str | None = None


ARTIFACT_KINDS = (
    "source", "ptx", "sass", "cubin", "hsaco", "isa", "llvm_ir", "hlo", "mlir", "log",
    "profile", "trace", "dataset", "weights", "output", "other",
)  # fmt: skip
ArtifactKindLiteral = Literal[
    "source", "ptx", "sass", "cubin", "hsaco", "isa", "llvm_ir", "hlo", "mlir", "log",
    "profile", "trace", "dataset", "weights", "output", "other",
]  # fmt: skip


class Artifact(Model):
    """A reference to a file: what it is, its digest and size, and where to find it."""

    kind: ArtifactKindLiteral
    name: Str | None = None
    sha256: Digest | None = None
    size: ByteSize | None = None
    media_type: Str | None = None
    uri: Str | None = None
    path: Str | None = None
