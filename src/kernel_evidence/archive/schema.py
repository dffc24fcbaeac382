"""The fixed Arrow schema of an archive, and the layout and metadata constants.

The schema is written down here, not inferred from data: every file of every archive has
exactly these columns, in this order, with these types, whatever packets it holds. Typed
columns are what dashboards filter and plot; ``packet`` keeps the whole packet losslessly.

Two columns, ``vendor`` and ``month``, are hive partition keys: they live in the directory
names (``vendor=amd/month=2026-11/``), not inside the files. :data:`FILE_SCHEMA` is what a
Parquet file holds; :data:`DATASET_SCHEMA` is what a reader of the whole dataset sees.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

__all__ = [
    "ARCHIVE_LAYOUT_VERSION",
    "COLUMNS",
    "DATASET_SCHEMA",
    "FILE_SCHEMA",
    "MARKER_NAME",
    "PARTITION_SCHEMA",
    "Column",
    "META_LAYOUT_VERSION",
    "META_PRODUCER",
    "META_SCHEMA_VERSION",
]

#: Layout of the files and folders (partitioning, columns, metadata), an ordered version.
#: Bumped when a reader of the previous layout would misread the new one.
#: 1.1: the commit list ``_kevidence_commits.json`` (readers take only the files it names).
#: 1.2: columns to group by without JSON paths (``measured_at``, ``relation``, ``device_id``, ``dtype``,
#: ``kernel_median_us``, the serving engine, latencies and throughputs), and the month
#: partition from ``measured_at`` where a packet gives one (a 1.1 writer would look for a
#: packet's copy in the wrong month, so it may not append).
ARCHIVE_LAYOUT_VERSION: Final[tuple[int, int]] = (1, 2)

#: The archive's marker file at its root; readers of the dataset skip ``_``-prefixed files.
MARKER_NAME: Final = "_kevidence_archive.json"

#: Parquet key-value metadata keys written into every file footer.
META_LAYOUT_VERSION: Final = b"kevidence.archive_layout_version"
META_SCHEMA_VERSION: Final = b"kevidence.packet_schema_version"
META_PRODUCER: Final = b"kevidence.producer"


class Column:
    """One typed column: its name, Arrow type and what it holds (used for the docs table)."""

    __slots__ = ("description", "name", "type")

    def __init__(self, name: str, type: pa.DataType, description: str) -> None:
        self.name = name
        self.type = type
        self.description = description

    def field(self) -> pa.Field:
        return pa.field(self.name, self.type, nullable=self.name not in _REQUIRED)


_FINDING = pa.struct(
    [
        pa.field("rule_id", pa.string()),
        pa.field("severity", pa.string()),
        pa.field("pointer", pa.string()),
        pa.field("message", pa.string()),
    ]
)
_TS = pa.timestamp("us", tz="UTC")
_STR = pa.string()
_F64 = pa.float64()
_I64 = pa.int64()

_REQUIRED = frozenset({"packet_id", "packet", "status", "valid"})

#: Columns stored inside every Parquet file, in order.
COLUMNS: Final[tuple[Column, ...]] = (
    Column("packet_id", _STR, "`sha256:` content-addressed id of the packet"),
    Column("created_at", _TS, "`created_at`, UTC, microseconds (the exact text is in `packet`)"),
    Column(
        "measured_at",
        _TS,
        "`measured_at` (when the measurement was taken), UTC, microseconds; the `month` partition where given",
    ),
    Column("schema_version", _STR, "packet `schema_version`"),
    Column("producer_name", _STR, "`producer.name`"),
    Column("producer_version", _STR, "`producer.version`"),
    Column("subject_kind", _STR, "`subject.kind`: kernel or serving"),
    Column("subject_name", _STR, "`subject.name`"),
    Column("status", _STR, "`status`: passed, failed, error, skipped"),
    Column("failure_class", _STR, "`failure.failure_class`"),
    Column("run_id", _STR, "`lineage.run_id`"),
    Column("candidate_id", _STR, "`lineage.candidate_id`"),
    Column("parent_packet_id", _STR, "`lineage.parent_packet_id`"),
    Column(
        "relation",
        _STR,
        "`lineage.relation` to the parent: mutation, replay, rerun, baseline, other",
    ),
    Column("iteration", _I64, "`lineage.iteration`"),
    Column("operator", _STR, "`task.operator`"),
    Column("workload", _STR, "`task.workload`, or `task.serving.model` for serving packets"),
    Column("dtypes", pa.list_(_STR), "`task.dtypes`"),
    Column("dtype", _STR, "`task.dtypes` joined with `,` (one value to group by: `bf16`, `fp8,bf16`)"),
    Column("shape_ids", pa.list_(_STR), "ids of `task.shapes`"),
    Column("shape", _STR, "the timed shape: `timing.shape_id`, else the only shape case's id"),
    Column("device", _STR, "`hardware.device`, as the tool wrote it"),
    Column(
        "device_id",
        _STR,
        "canonical device id: `hardware.device_id`, else the device table's id for `device` and `arch` (null when unknown or ambiguous)",
    ),
    Column("arch", _STR, "`hardware.arch`"),
    Column("device_count", _I64, "`hardware.count`"),
    Column("timing_method", _STR, "`timing.method`"),
    Column("median_ns", _F64, "`timing.stats.median` in nanoseconds"),
    Column("mean_ns", _F64, "`timing.stats.mean` in nanoseconds"),
    Column("min_ns", _F64, "`timing.stats.min` in nanoseconds"),
    Column("ci_low_ns", _F64, "`timing.stats.ci_low` in nanoseconds"),
    Column("ci_high_ns", _F64, "`timing.stats.ci_high` in nanoseconds"),
    Column("samples", _I64, "`timing.stats.n`, else the number of `timing.stats.samples`"),
    Column(
        "baseline_provider",
        _STR,
        "`timing.baseline.provider` (cuBLASLt, hipBLASLt, XLA...), else `timing.baseline.engine.name`",
    ),
    Column(
        "baseline_version",
        _STR,
        "`timing.baseline.version`, else `timing.baseline.engine.version`",
    ),
    Column("baseline_call", _STR, "`timing.baseline.call`"),
    Column("baseline_median_ns", _F64, "`timing.baseline.stats.median` in nanoseconds"),
    Column("speedup", _F64, "`timing.speedup.value`"),
    Column("speedup_basis", _STR, "`timing.speedup.basis`"),
    Column(
        "speedup_low",
        _F64,
        "lower bound of the speedup: baseline CI low / candidate CI high (median basis)",
    ),
    Column(
        "speedup_high",
        _F64,
        "upper bound of the speedup: baseline CI high / candidate CI low (median basis)",
    ),
    Column("work_flop", _F64, "`task.work.flops` (or the timed shape's) in FLOP"),
    Column("work_bytes", _F64, "`task.work.bytes` (or the timed shape's) in bytes"),
    Column(
        "peak_flop_per_s",
        _F64,
        "`hardware.peak_flop_rate` in FLOP/s, else the device peak table for the task's dtypes",
    ),
    Column(
        "peak_bytes_per_s",
        _F64,
        "`hardware.peak_bandwidth` in B/s, else the device peak table",
    ),
    Column(
        "sol_fraction",
        _F64,
        "speed-of-light fraction: max(flop/peak_flop, bytes/peak_bw) / median time",
    ),
    Column("sol_bound", _STR, "which roof bounds the kernel: `compute` or `memory`"),
    Column("validation_verdict", _STR, "`validation.verdict`"),
    Column("serving_output_tok_per_s", _F64, "`timing.serving.output_throughput` in tok/s"),
    Column("serving_request_per_s", _F64, "`timing.serving.request_throughput` in req/s"),
    Column("gpu_time_s", _F64, "`cost.gpu_time` in seconds"),
    Column("energy_j", _F64, "`cost.energy.energy` in joules"),
    Column(
        "kernel_median_us",
        _F64,
        "kernel packets only (`subject.kind` = kernel): `timing.stats.median` in microseconds",
    ),
    Column("engine", _STR, "`task.serving.engine.name` (vLLM, SGLang, TensorRT-LLM...)"),
    Column("engine_version", _STR, "`task.serving.engine.version`"),
    Column("model", _STR, "`task.serving.model`"),
    *(
        Column(
            f"{key}_{stat}_ms",
            _F64,
            f"`timing.serving.{key}` {what} in milliseconds"
            + (" (else its `p50`)" if stat == "median" else ""),
        )
        for key in ("ttft", "tpot", "itl", "e2el")
        for stat, what in (("median", "median"), ("p99", "`percentiles.p99`"))
    ),
    Column("serving_total_tok_per_s", _F64, "`timing.serving.total_token_throughput` in tok/s"),
    Column("serving_completed", _I64, "`timing.serving.completed` requests"),
    Column("serving_failed", _I64, "`timing.serving.failed` requests"),
    Column("serving_max_concurrency", _I64, "`task.serving.max_concurrency`"),
    Column(
        "serving_request_rate",
        _F64,
        "`task.serving.request_rate` in req/s; null for `inf` (all requests at once)",
    ),
    Column("valid", pa.bool_(), "true when the validator found no error"),
    Column("grade", _STR, "evidence grade letter, A (strongest) to F"),
    Column("grade_reasons", pa.list_(_STR), "why the packet got its grade"),
    Column("findings", pa.list_(_FINDING), "validator findings (errors and warnings)"),
    Column("packet", pa.binary(), "the complete packet: compact JSON, UTF-8, as it came in"),
)

#: The hive partition keys, outermost first. Their values never come from free text.
PARTITION_SCHEMA: Final = pa.schema([pa.field("vendor", _STR), pa.field("month", _STR)])

FILE_SCHEMA: Final = pa.schema([c.field() for c in COLUMNS])
DATASET_SCHEMA: Final = pa.schema(list(FILE_SCHEMA) + list(PARTITION_SCHEMA))

#: Low-cardinality columns that Parquet dictionary-encodes.
DICTIONARY_COLUMNS: Final = (
    "schema_version", "producer_name", "producer_version", "subject_kind", "subject_name",
    "status", "failure_class", "run_id", "relation", "operator", "workload", "dtype", "shape", "device",
    "device_id", "arch", "timing_method", "baseline_provider", "baseline_version",
    "baseline_call", "speedup_basis", "sol_bound", "validation_verdict", "grade", "engine",
    "engine_version", "model",
)  # fmt: skip
