"""The packet envelope: identity, subject, status and failure, lineage, extensions.

The eight categories live in their own modules; :class:`EvidencePacket` puts them together.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import Field, Strict

from .._codec.versions import CURRENT
from ._base import Digest, Model, NonEmptyStr, NonNegInt, Str, UtcTimestamp
from .compile import Compile
from .conditions import Defence
from .cost import Cost
from .hardware import Hardware
from .profiler import ProfilerCapture
from .replay import Replay
from .task import Task
from .timing import Timing
from .validation import Validation

__all__ = [
    "EvidencePacket",
    "Failure",
    "FailureClass",
    "Lineage",
    "Producer",
    "Status",
    "Subject",
]

#: the schema version the models describe and every writer writes (older ones are
#: migrated before they reach the models: :mod:`kernel_evidence._codec.migrate`)
SCHEMA_VERSION = str(CURRENT)


class Status(str, Enum):
    """Outcome of the run."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"

    def __str__(self) -> str:  # prints as its value: `passed`, not `Status.PASSED`
        return self.value


class FailureClass(str, Enum):
    """One taxonomy of what went wrong.

    ``failed`` packets (the candidate ran and was judged wrong) carry ``incorrect_shape``,
    ``incorrect_dtype``, ``incorrect_numerical``, ``nan_inf`` or ``reward_hack``;
    ``error`` packets (it could not be judged) carry ``compile_error``, ``runtime_error``,
    ``timeout``, ``invalid_reference`` or ``infra_error``.
    """

    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    INCORRECT_SHAPE = "incorrect_shape"
    INCORRECT_DTYPE = "incorrect_dtype"
    INCORRECT_NUMERICAL = "incorrect_numerical"
    NAN_INF = "nan_inf"
    REWARD_HACK = "reward_hack"
    INVALID_REFERENCE = "invalid_reference"
    INFRA_ERROR = "infra_error"

    def __str__(self) -> str:  # prints as its value: `nan_inf`, not `FailureClass.NAN_INF`
        return self.value


class Producer(Model):
    """The tool that wrote the packet."""

    name: NonEmptyStr
    version: NonEmptyStr


class Subject(Model):
    """What the packet is about: a kernel or a serving workload."""

    kind: Literal["kernel", "serving"]
    name: NonEmptyStr
    description: Str | None = None


class Failure(Model):
    """Why a packet did not pass: its class from the taxonomy and the error text."""

    failure_class: FailureClass
    message: Str | None = None
    shape_id: Str | None = None
    log_excerpt: Str | None = None


class Lineage(Model):
    """Where a packet sits in a search loop."""

    run_id: Str | None = None
    candidate_id: Str | None = None
    parent_packet_id: Digest | None = None
    iteration: NonNegInt | None = None
    relation: Literal["mutation", "replay", "rerun", "baseline", "other"] | None = None


ExtensionKey = Annotated[str, Strict(), Field(pattern=r"^[a-zA-Z][a-zA-Z0-9+.-]*:\S+$")]


class EvidencePacket(Model):
    """One run, recorded so another team can see what ran, check it and run it again."""

    schema_version: Literal["0.2"]
    packet_id: Digest | None = None
    created_at: UtcTimestamp
    #: schema 0.2: when the measurement was taken, when known and different from when the
    #: packet was made (an ingested historical result keeps its own date)
    measured_at: UtcTimestamp | None = None
    producer: Producer
    subject: Subject
    status: Status
    failure: Failure | None = None
    lineage: Lineage | None = None
    task: Task | None = None
    compile: Compile | None = None
    validation: Validation | None = None
    timing: Timing | None = None
    profiler: list[ProfilerCapture] | None = None
    hardware: Hardware | None = None
    replay: Replay | None = None
    cost: Cost | None = None
    #: schema 0.2: the anti-gaming checks the harness ran and their outcomes
    defences: list[Defence] | None = None
    extensions: dict[ExtensionKey, dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The packet as JSON data, without null members."""
        return self.model_dump(mode="json", exclude_none=True)

    def to_json(self) -> bytes:
        """The packet as compact JSON bytes in canonical key order, without null members."""
        from .._codec.encode import packet_json

        return packet_json(self)

    def compute_id(self) -> str:
        """The content-addressed id of this packet (its ``packet_id`` is not part of it)."""
        from .._codec.encode import packet_id

        return packet_id(self)

    def with_id(self) -> EvidencePacket:
        """A copy whose ``packet_id`` is the content-addressed id."""
        return self.model_copy(update={"packet_id": self.compute_id()})
