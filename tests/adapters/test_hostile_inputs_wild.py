"""Hostile inputs given to the harness and profiler adapters: a FIFO that no process writes
ends in a one-line error, not a read that waits forever."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from kernel_evidence.adapters import AdapterOptions, get_adapter
from kernel_evidence.errors import KernelEvidenceError

NAMES = [
    ("flashinfer-trace", "trace.jsonl"),
    ("guidellm", "benchmarks.json"),
    ("kernelbench", "eval_results.json"),
    ("kernelbot", "result.json"),
    ("torch-profiler", "trace.json"),
    ("tritonbench", "gemm.json"),
    ("rocprof", "kernel_trace.csv"),
]


@pytest.mark.skipif(sys.platform == "win32", reason="no FIFOs")
@pytest.mark.parametrize(("name", "file_name"), NAMES)
def test_a_fifo_with_no_writer_is_refused_at_once(tmp_path: Path, name: str, file_name: str) -> None:
    fifo = tmp_path / file_name
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            get_adapter(name).read([str(fifo)], AdapterOptions(created_at="2026-11-22T00:00:00Z"))
            outcome.append(None)
        except BaseException as exc:  # the thread reports what it raised
            outcome.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout=20)
    if t.is_alive():
        # unblock the reader so the daemon thread ends, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail(f"{name}: reading a FIFO with no writer did not return")
    (exc,) = outcome
    assert isinstance(exc, KernelEvidenceError), exc
    message = str(exc)
    assert "\n" not in message and str(fifo) in message
    assert "no such file" not in message  # it exists
