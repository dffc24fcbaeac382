"""The packet models (schema version 0.2): one module per category, put together in :mod:`.envelope`."""

from ._base import (
    Artifact,
    Bandwidth,
    ByteSize,
    Duration,
    Energy,
    FlopCount,
    FlopRate,
    Frequency,
    Model,
    Power,
    Quantity,
    Software,
)
from .compile import Compile
from .conditions import DEFENCE_CHECKS, CachePolicy, CaptureOf, Conditions, Defence
from .cost import Cost, EnergyMeasurement, Money
from .envelope import (
    SCHEMA_VERSION,
    EvidencePacket,
    Failure,
    FailureClass,
    Lineage,
    Producer,
    Status,
    Subject,
)
from .hardware import Clocks, Hardware, Host
from .profiler import KernelRecord, ProfilerCapture, RawMetric
from .replay import Container, Replay, Repository
from .task import Reference, ServingTask, ShapeCase, Task, TensorSpec, TolerancePolicy, Work
from .timing import Baseline, RequestRate, ServingMetrics, Speedup, Stats, Timing, TokenRate
from .validation import ShapeResult, Validation

__all__ = [
    "DEFENCE_CHECKS",
    "SCHEMA_VERSION",
    "Artifact",
    "Bandwidth",
    "Baseline",
    "ByteSize",
    "CachePolicy",
    "CaptureOf",
    "Clocks",
    "Compile",
    "Conditions",
    "Container",
    "Cost",
    "Defence",
    "Duration",
    "Energy",
    "EnergyMeasurement",
    "EvidencePacket",
    "Failure",
    "FailureClass",
    "FlopCount",
    "FlopRate",
    "Frequency",
    "Hardware",
    "Host",
    "KernelRecord",
    "Lineage",
    "Model",
    "Money",
    "Power",
    "Producer",
    "ProfilerCapture",
    "Quantity",
    "RawMetric",
    "Reference",
    "Replay",
    "Repository",
    "RequestRate",
    "ServingMetrics",
    "ServingTask",
    "ShapeCase",
    "ShapeResult",
    "Software",
    "Speedup",
    "Stats",
    "Status",
    "Subject",
    "Task",
    "TensorSpec",
    "Timing",
    "TokenRate",
    "TolerancePolicy",
    "Validation",
    "Work",
]
