"""What the profiler saw: one capture per profiler run, one record per kernel launch or op."""

from __future__ import annotations

from ._base import Artifact, Float, Int, Model, NonEmptyStr, NonNegInt, Quantity, Str
from .conditions import CaptureOf

__all__ = ["KernelRecord", "ProfilerCapture", "RawMetric"]


class RawMetric(Model):
    """A metric exactly as the profiler reported it: its value (number or text) and unit."""

    value: Float | Str | None = None
    unit: Str | None = None


class KernelRecord(Model):
    """One kernel launch, dispatch or HLO op.

    ``metrics`` holds canonical metrics (names from the cross-vendor table in
    ``adapters/canonical_metrics``), each with a unit; ``raw`` keeps every source metric
    under its source name.
    """

    name: NonEmptyStr
    raw_name: Str | None = None
    id: Str | None = None
    process: Str | None = None
    stream: Str | None = None
    device: Int | None = None
    grid: list[NonNegInt] | None = None
    block: list[NonNegInt] | None = None
    invocations: NonNegInt | None = None
    category: Str | None = None
    metrics: dict[str, Quantity] | None = None
    raw: dict[str, RawMetric] | None = None


class ProfilerCapture(Model):
    """One profiler capture (an ncu report, a rocprof-compute workload, an XProf profile).

    Raw source metrics are kept either per record (``KernelRecord.raw``) or, for captures
    with many launches and metrics, as a table: ``raw_columns`` maps a source metric name to
    one value per entry of ``kernels`` (same order, ``null`` where the launch has none) and
    ``raw_units`` gives each column's unit as the source spelled it. A capture too large to
    keep inline holds ``raw_table`` instead of ``raw_columns``: a reference (with sha256) to
    an Arrow IPC file with the same columns, one row per entry of ``kernels``
    (see :mod:`kernel_evidence.rawtable`).
    """

    tool: NonEmptyStr
    version: Str | None = None
    source: Artifact | None = None
    kernels: list[KernelRecord] | None = None
    raw_columns: dict[str, list[Float | Str | None]] | None = None
    raw_table: Artifact | None = None
    raw_units: dict[str, Str] | None = None
    summary: dict[str, Quantity] | None = None
    attributes: dict[str, Str | Float | Int] | None = None
    warnings: list[Str] | None = None
    #: schema 0.2: what the capture is of (candidate or baseline, which shape, the kernels
    #: the candidate is expected to launch)
    of: CaptureOf | None = None
