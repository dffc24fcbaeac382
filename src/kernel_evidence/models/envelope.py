"""The packet envelope: identity, subject, status and failure, lineage, extensions.

The eight categories live in their own modules; :class:`EvidencePacket` puts them together.
"""

from __future__ import annotations

import hashlib
from enum import Enum
from typing import Annotated, Any, Literal

import msgspec
from pydantic import Field, Strict

from ._base import Artifact, Digest, Model, NonEmptyStr, NonNegInt, Str, UtcTimestamp
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

SCHEMA_VERSION = "0.1"


class Status(str, Enum):
    """Outcome of the run."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


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

    schema_version: Literal["0.1"]
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

    def _struct(self) -> Any:
        """The packet as the checked msgspec struct that canonical encoding works from.

        msgspec converts the models' attributes into the structs (and checks them) in
        compiled code: twice as fast as pydantic's JSON decoded again, for 20,000 kernel
        records. A packet with ``extensions`` takes that JSON round trip, so their free-form
        values are written as pydantic writes them. Raw-column tables (millions of numbers
        the models validated already) are encoded once, as canonical JSON, and spliced in as
        ``msgspec.Raw``.
        """
        from .._fast import PacketStruct, columns_encoder, packet_decoder

        captures = self.profiler or []
        columns = [c.raw_columns for c in captures]
        light = self
        if any(c is not None for c in columns):
            light = self.model_copy(
                update={"profiler": [c.model_copy(update={"raw_columns": None}) for c in captures]}
            )
        struct: Any
        if self.extensions is None:
            struct = msgspec.convert(light, PacketStruct, from_attributes=True)
        else:
            struct = packet_decoder.decode(light.model_dump_json(exclude_none=True))
        for i, cols in enumerate(columns):
            if cols is not None:
                struct.profiler[i].raw_columns = msgspec.Raw(columns_encoder.encode(cols))
        return struct

    def to_json(self) -> bytes:
        """The packet as compact JSON bytes in canonical key order, without null members."""
        from .._fast import encode_struct

        return encode_struct(self._struct())

    def compute_id(self) -> str:
        """The content-addressed id of this packet (its ``packet_id`` is not part of it)."""
        from .._fast import canonical_struct_bytes

        return "sha256:" + hashlib.sha256(canonical_struct_bytes(self._struct())).hexdigest()

    def with_id(self) -> EvidencePacket:
        """A copy whose ``packet_id`` is the content-addressed id."""
        return self.model_copy(update={"packet_id": self.compute_id()})

    def _finished(
        self,
        index: int,
        *,
        kernels_json: bytes | None = None,
        raw_table: Artifact | None = None,
        with_id: bool = True,
    ) -> EvidencePacket:
        """A copy whose ``profiler[index]`` references the side file ``raw_table`` (when
        given; the capture must then hold neither ``raw_columns`` nor ``raw_table``), with
        its ``packet_id`` when ``with_id``.

        ``kernels_json`` is the canonical JSON of ``profiler[index].kernels`` (an array of
        the records' data, nulls omitted, keys sorted, each number of its field's type): an
        adapter that built the records from plain values encodes those values once with
        msgspec, and the id is computed with them spliced in, instead of encoding 10^4..10^5
        record objects again through pydantic. It must be the encoding of exactly those
        records; the tests compare such ids with :meth:`compute_id`."""
        captures = list(self.profiler or [])
        cap = captures[index]
        if raw_table is not None:
            if cap.raw_columns is not None or cap.raw_table is not None:
                raise ValueError("the capture already holds its raw metrics")
            cap = captures[index] = cap.model_copy(update={"raw_table": raw_table})
        update: dict[str, Any] = {"profiler": captures}
        if with_id:
            if kernels_json is None or not cap.kernels:
                struct = self.model_copy(update=update)._struct()
            else:
                light = list(captures)
                light[index] = cap.model_copy(update={"kernels": None})
                struct = self.model_copy(update={"profiler": light})._struct()
                struct.profiler[index].kernels = msgspec.Raw(kernels_json)
            from .._fast import canonical_struct_bytes

            update["packet_id"] = "sha256:" + hashlib.sha256(canonical_struct_bytes(struct)).hexdigest()
        out = self.model_copy(update=update)
        if kernels_json is not None and cap.kernels:
            from .._fast import ENCODED_KERNELS

            registry = ENCODED_KERNELS.get()
            if registry is not None:
                kernels = out.profiler[index].kernels  # type: ignore[index]
                registry[id(kernels)] = (kernels, kernels_json)  # type: ignore[assignment]
        return out

    def _with_id_json(self, kernels: dict[int, bytes] | None = None) -> tuple[EvidencePacket, bytes]:
        """``(self.with_id(), self.with_id().to_json())`` from one canonical struct: for
        writers of big packets (10^7 raw cells), which would otherwise build it twice.

        ``kernels``: capture index -> the canonical JSON of that capture's ``kernels``, as
        for :meth:`_finished` (spliced in, not encoded again; it must be exactly theirs)."""
        import msgspec

        from .._fast import canonical_struct_bytes, encode_struct

        if kernels:
            light = list(self.profiler or [])
            for i in kernels:
                light[i] = light[i].model_copy(update={"kernels": None})
            st = self.model_copy(update={"profiler": light})._struct()
            for i, data in kernels.items():
                st.profiler[i].kernels = msgspec.Raw(data)
        else:
            st = self._struct()
        pid = "sha256:" + hashlib.sha256(canonical_struct_bytes(st)).hexdigest()
        st = msgspec.structs.replace(st, packet_id=pid)
        return self.model_copy(update={"packet_id": pid}), encode_struct(st)
