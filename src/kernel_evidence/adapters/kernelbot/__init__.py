"""GPU MODE kernelbot leaderboard runs: one packet per benchmark of each timed run.

Reads a runner's ``result.json`` (``FullResult``), submissions and run items as the bot's
database returns them (JSON), and Parquet exports of runs (gpu-mode/kernelbot-data's
``submissions.parquet``); see ``docs/adapters/kernelbot.md`` for the fields and the code
that defines them (data: ``adapters/kernelbot.toml``). Benchmark statistics are in
nanoseconds; secret (private-seed) runs are kept apart from public ones in the extension
``gpu-mode:kernelbot`` and the description.

Options (``AdapterOptions.extra``), all optional:

``leaderboard``
    the leaderboard (task) name, when the files do not name it
``max_bytes`` (default 2 GiB)
    refuse larger input files
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ...errors import AdapterError
from .. import AdapterOptions, AdapterResult, AdapterWarning
from .._envelope import utc_now
from .._read import max_bytes_option, read_capped, walk_inputs
from ._build import Builder
from ._read import RunRecord, looks_like_kernelbot, records_from_json, records_from_parquet

__all__ = ["ADAPTER", "KernelbotAdapter"]

_SUFFIXES = (".json", ".parquet")
_WHAT = "a GPU MODE kernelbot result (result.json, run items JSON, or a runs Parquet export)"


class KernelbotAdapter:
    """GPU MODE kernelbot run results -> one kernel packet per benchmark of a timed run."""

    name = "kernelbot"
    aliases: tuple[str, ...] = ("gpu-mode", "popcorn")
    options: tuple[str, ...] = ("leaderboard", "max_bytes")
    description = (
        "GPU MODE kernelbot leaderboard runs (runner result.json, run items JSON, runs Parquet export): "
        "one kernel packet per benchmark of each timed run, one per test run"
    )

    def sniff(self, path: str, head: bytes) -> bool:
        """Whether ``path`` (its first bytes ``head``) is a kernelbot result."""
        low = path.lower()
        if low.endswith(".parquet"):
            try:
                import pyarrow.parquet as pq

                names = set(pq.read_schema(path).names)
            except Exception:  # noqa: BLE001 - not readable: not ours to claim
                return False
            return "run_result" in names or {"run_mode", "run_score"} <= names
        markers = (
            b"benchmark-count",
            b"test-count",
            b'"check"',
            b'"nvcc_found"',
            b'"compilation"',
            b'"meta"',
        )
        return low.endswith(".json") and looks_like_kernelbot(head) and any(m in head for m in markers)

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        """The packets of every kernelbot result in ``inputs`` (files or directories)."""
        extra = dict(options.extra or {})
        cap = max_bytes_option(extra)
        board = extra.get("leaderboard")
        warnings: list[str] = []
        builder = Builder(
            created_at=options.created_at or utc_now(), leaderboard=str(board) if board else None
        )
        packets = []
        seen_files = 0
        for path, explicit in walk_inputs(inputs, _SUFFIXES):
            try:
                records = self._records(path, cap)
            except AdapterError as exc:
                if explicit:
                    raise
                warnings.append(f"skipped: {exc}")
                continue
            seen_files += 1
            for rec in records:
                packets.extend(builder.packets(rec))
        if not packets:
            where = ", ".join(os.fspath(i) for i in inputs) or "(no inputs)"
            if builder.profile_runs:
                raise AdapterError(f"{where}: only profile runs, which hold no timings; expected {_WHAT}")
            raise AdapterError(f"{where}: no kernelbot runs found; expected {_WHAT}")
        self._warnings(builder, warnings)
        if extra.get("packet_ids", True) is not False:
            packets = [p.with_id() for p in packets]
        return AdapterResult(packets=packets, warnings=warnings)

    @staticmethod
    def _records(path: str, cap: int) -> list[RunRecord]:
        if path.lower().endswith(".parquet"):
            if os.path.isfile(path) and os.path.getsize(path) > cap:
                read_capped(path, cap, what=_WHAT)  # raises the one-line "larger than the cap" error
            return records_from_parquet(path)
        return records_from_json(path, read_capped(path, cap, what=_WHAT))

    @staticmethod
    def _warnings(b: Builder, warnings: list[str]) -> None:
        if b.profile_runs:
            warnings.append(
                f"{b.profile_runs} profile runs skipped: they hold a profiler report, not timings"
            )
        if b.naive_times:
            warnings.append(f"{b.naive_times} run start times name no time zone: measured_at left out")
        if b.no_device:
            warnings.append(
                AdapterWarning(
                    f"{b.no_device} runs name no GPU (system info empty, no runner): no hardware",
                    {"hardware.device": "<GPU model>"},
                )
            )


ADAPTER = KernelbotAdapter()
