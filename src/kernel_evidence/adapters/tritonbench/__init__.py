"""TritonBench operator benchmarks: one packet per (input, provider).

Reads ``--output-json`` files (operator, mode, input and provider encoded in each metric
key), ``--output`` CSV files and the console table TritonBench prints by default; see
``docs/adapters/tritonbench.md`` (data: ``adapters/tritonbench.toml``) and
:mod:`._parse` for the formats. Latency (the p50 in milliseconds) becomes the timing's
median; the baseline provider's latency on the same input (the provider without a
``speedup``, when exactly one has none) the baseline, and ``speedup`` the claim;
``tflops``/``gbps`` give the work back (``tflops x latency``: the FLOPs TritonBench
counted); ``accuracy`` the validation.

Options (``AdapterOptions.extra``), all optional:

``op``
    the operator, for a console table or CSV (which do not name it)
``mode``
    fwd, bwd, fwd_bwd or fwd_no_grad, for the same
``device``
    the GPU (no TritonBench output names it)
``max_bytes`` (default 2 GiB)
    refuse larger input files
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ...errors import AdapterError, AdapterOptionError
from ...models import (
    Baseline,
    ByteSize,
    Conditions,
    EvidencePacket,
    Failure,
    FailureClass,
    FlopCount,
    Hardware,
    Replay,
    ShapeCase,
    ShapeResult,
    Speedup,
    Stats,
    Task,
    Timing,
    Validation,
    Work,
)
from .. import AdapterOptions, AdapterResult, AdapterWarning
from .._device import vendor_of
from .._envelope import start_packet, utc_now
from .._read import max_bytes_option, read_capped, walk_inputs
from ._parse import MODES, Row, Table, parse_console, parse_csv, parse_json, x_dims

__all__ = ["ADAPTER", "TritonBenchAdapter"]

_SUFFIXES = (".json", ".csv", ".txt", ".log")
_WHAT = "TritonBench output (--output-json, --output CSV, or the console table)"
EXTENSION = "pytorch:tritonbench"
_NOTE = "TritonBench latency: the median (p50) of the timed calls after IQR outlier removal, in ms"


def _split_bench(bench: str | None, op: Any, mode: Any) -> tuple[str | None, str | None]:
    if op:
        return str(op), str(mode) if mode else None
    if bench is None:
        return None, str(mode) if mode else None
    for m in MODES:
        if bench.endswith("_" + m):
            return bench[: -len(m) - 1], m
    return bench, None  # a --benchmark-name: no mode in it


def _table(path: str, data: bytes) -> Table:
    low = path.lower()
    text = data.decode("utf-8", "replace")
    if low.endswith(".json") or data.lstrip()[:1] == b"{":
        return parse_json(path, data)
    if low.endswith(".csv"):
        return parse_csv(path, text)
    return parse_console(path, text)


class TritonBenchAdapter:
    """TritonBench results -> one kernel packet per (input, provider)."""

    name = "tritonbench"
    aliases: tuple[str, ...] = ("triton-bench",)
    options: tuple[str, ...] = ("device", "max_bytes", "mode", "op")
    description = (
        "TritonBench operator benchmarks (--output-json metric keys, --output CSV, console table): "
        "one kernel packet per input and provider"
    )

    def sniff(self, path: str, head: bytes) -> bool:
        """Whether ``path`` (its first bytes ``head``) is TritonBench output."""
        low = path.lower()
        if low.endswith(".json"):
            return b'"tritonbench_' in head and b"[x_" in head
        if low.endswith((".txt", ".log")):
            text = head.decode("utf-8", "replace")
            return "-latency" in text and "\n---" in text or "Removed " in text and " outliers from " in text
        return False

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        """The packets of every TritonBench output in ``inputs`` (files or directories)."""
        extra = dict(options.extra or {})
        mode = extra.get("mode")
        if mode is not None and str(mode) not in MODES:
            raise AdapterOptionError(f"option `mode`: expected one of {', '.join(MODES)}, got {mode!r}")
        cap = max_bytes_option(extra)
        warnings: list[str] = []
        packets: list[EvidencePacket] = []
        created = options.created_at or utc_now()
        for path, explicit in walk_inputs(inputs, _SUFFIXES):
            try:
                table = _table(path, read_capped(path, cap, what=_WHAT))
            except AdapterError as exc:
                if explicit:
                    raise
                warnings.append(f"skipped: {exc}")
                continue
            packets.extend(self._packets(path, table, extra, created, warnings))
        if not packets:
            where = ", ".join(os.fspath(i) for i in inputs) or "(no inputs)"
            raise AdapterError(f"{where}: no TritonBench rows found; expected {_WHAT}")
        if extra.get("packet_ids", True) is not False:
            packets = [p.with_id() for p in packets]
        return AdapterResult(packets=packets, warnings=warnings)

    def _packets(
        self, path: str, table: Table, extra: dict[str, Any], created: str, warnings: list[str]
    ) -> list[EvidencePacket]:
        op, mode = _split_bench(table.benchmark, extra.get("op"), extra.get("mode"))
        device = str(extra["device"]) if extra.get("device") else table.device
        if op is None:
            warnings.append(
                AdapterWarning(
                    f"{path}: the output does not name its operator", {"subject.name": "<operator>"}
                )
            )
        if device is None:
            warnings.append(
                AdapterWarning(
                    f"{path}: TritonBench does not print the GPU: no hardware",
                    {"hardware.device": "<GPU model>"},
                )
            )
        if table.error_lines:
            warnings.append(
                f"{path}: {table.error_lines} error lines before the table (a backend failed on some inputs): "
                "a printed latency is not proof that the kernel ran correctly"
            )
        hw = (
            Hardware(vendor=vendor_of(device), device=device, device_id=_device_id(device))
            if device
            else None
        )
        baselines = _baselines(table.rows)
        out = []
        for row in table.rows:
            out.append(self._packet(row, table, op, mode, hw, baselines.get(row.x_val), created))
        return out

    def _packet(
        self,
        row: Row,
        table: Table,
        op: str | None,
        mode: str | None,
        hw: Hardware | None,
        base: Row | None,
        created: str,
    ) -> EvidencePacket:
        name = op or "tritonbench operator"
        dims = x_dims(table.x_label, row.x_val)
        cond = Conditions(
            shape_id=row.x_val, dims=dims, device=hw.device if hw else None, device_id=hw.device_id if hw else None,
            method="triton_do_bench", sample_handling="trimmed",
        )  # fmt: skip
        lat = row.metrics.get("latency")
        timing = None
        work = None
        if row.error is None and lat is not None and lat.value is not None and lat.value >= 0:
            timing = self._timing(row, lat.value, cond, base)
            work = _work(row, lat.value)
        acc = row.metrics.get("accuracy")
        validation = None
        status = "passed"
        failure = None
        if row.error is not None:
            status = "error"
            failure = Failure(
                failure_class=FailureClass.RUNTIME_ERROR, message=row.error[:2000], shape_id=row.x_val
            )
        elif acc is not None and acc.value is not None:
            ok = acc.value >= 1.0
            validation = Validation(
                verdict="passed" if ok else "failed",
                shapes=[
                    ShapeResult(
                        shape_id=row.x_val,
                        passed=ok,
                        message="TritonBench accuracy against the baseline provider",
                    )
                ],
            )
            if not ok:
                status = "failed"
                failure = Failure(
                    failure_class=FailureClass.INCORRECT_NUMERICAL,
                    message="accuracy 0: the output differs from the baseline's",
                    shape_id=row.x_val,
                )
        if status != "passed" and timing is not None:
            timing = timing.model_copy(update={"speedup": None})
        raw = {k: c.raw for k, c in row.metrics.items()}
        ext: dict[str, Any] = {
            "provider": row.provider,
            "x_val": row.x_val,
            "output": table.kind,
            "metrics": raw,
        }
        if mode:
            ext["mode"] = mode
        if table.error_lines:
            ext["error_lines_before_table"] = table.error_lines
        if table.outliers_removed:
            ext["outliers_removed_in_run"] = table.outliers_removed
        if lat is not None and lat.spread_pct is not None:
            ext["latency_spread_pct"] = lat.spread_pct
        return start_packet(
            subject_kind="kernel",
            subject_name=name,
            description=f"{row.provider} on {row.x_val}{f' ({mode})' if mode else ''} ({row.where})",
            status=status,
            created_at=created,
            failure=failure,
            task=Task(
                operator=op,
                workload=f"{name}_{mode}" if mode else name,
                shapes=[ShapeCase(id=row.x_val, dims=dims, work=work)],
            ),
            validation=validation,
            timing=timing,
            hardware=hw,
            replay=Replay(packages={"torch": table.torch_version}) if table.torch_version else None,
            extensions={EXTENSION: ext},
        )

    @staticmethod
    def _timing(row: Row, latency: float, cond: Conditions, base: Row | None) -> Timing:
        baseline = speedup = None
        sp = row.metrics.get("speedup")
        if base is not None and base is not row:
            b = base.metrics.get("latency")
            if b is not None and b.value is not None and b.value > 0:
                baseline = Baseline(
                    provider=base.provider,
                    call=f"TritonBench provider `{base.provider}` on the same input",
                    same_session=True,
                    stats=Stats(unit="ms", median=b.value),
                    conditions=cond,
                )
                if sp is not None and sp.value is not None and sp.value >= 0:
                    speedup = Speedup(value=sp.value, basis="median")
        spread = row.metrics["latency"].spread_pct
        notes = _NOTE + (
            f"; largest deviation of min or max from it: {spread:g}%" if spread is not None else ""
        )
        return Timing(
            method="triton_do_bench", shape_id=row.x_val, stats=Stats(unit="ms", median=latency),
            notes=notes, baseline=baseline, speedup=speedup, conditions=cond,
        )  # fmt: skip


def _baselines(rows: list[Row]) -> dict[str, Row]:
    """The baseline provider's row per input: TritonBench gives every provider but the
    baseline a ``speedup``; an input where exactly one provider has a latency and none has
    no speedup-less peer is left without."""
    by_x: dict[str, list[Row]] = {}
    for r in rows:
        by_x.setdefault(r.x_val, []).append(r)
    out = {}
    for x, group in by_x.items():
        if not any("speedup" in r.metrics for r in group):
            continue
        bare = [r for r in group if "speedup" not in r.metrics and "latency" in r.metrics]
        if len(bare) == 1:
            out[x] = bare[0]
    return out


def _work(row: Row, latency_ms: float) -> Work | None:
    """The FLOPs and bytes TritonBench divided by the latency to print tflops and gbps."""
    sec = latency_ms / 1e3
    tf = row.metrics.get("tflops")
    gb = row.metrics.get("gbps")
    flops = FlopCount(value=tf.value * 1e12 * sec, unit="FLOP") if tf and tf.value and tf.value > 0 else None
    nbytes = ByteSize(value=gb.value * 1e9 * sec, unit="B") if gb and gb.value and gb.value > 0 else None
    return Work(flops=flops, bytes=nbytes) if flops or nbytes else None


def _device_id(gpu: str) -> str | None:
    from ...devices import identify

    found = identify(gpu)
    return found.id if found is not None else None


ADAPTER = TritonBenchAdapter()
