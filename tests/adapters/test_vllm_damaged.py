"""vLLM adapter: damaged and hostile inputs found by the adapter audit.

Numbers beyond a 64-bit float, inputs that never end (a link to ``/dev/zero``), runs written
twice into one file, and AIPerf metric objects in a unit AIPerf does not write.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.vllm import ADAPTER
from kernel_evidence.errors import AdapterError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "vllm"
T0 = "2026-11-22T00:00:00Z"
SGLANG = FIX / "sglang_bench_serving.jsonl"
SWEEP_CSV = FIX / "sweep_detailed_summary.csv"


def read(*paths: Any, **extra: Any) -> tuple[list[Any], list[str]]:
    res = ADAPTER.read([str(p) for p in paths], AdapterOptions(created_at=T0, extra=extra))
    return res.packets, res.warnings


def error_of(*paths: Any, **extra: Any) -> str:
    with pytest.raises(AdapterError) as info:
        read(*paths, **extra)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


# ------------------------------------------------------------------------------------------
# numbers beyond a 64-bit float: one line naming the file, the line and the key


def test_number_out_of_range_in_a_json_result(tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_bytes(b'{"model_id": "m", "completed": 3, "mean_ttft_ms": 1e999}')
    assert error_of(f) == (
        f"{f}: key `mean_ttft_ms`: number 1e999 is out of range; "
        "expected a finite number (at most about 1.8e308)"
    )


def test_number_out_of_range_on_a_jsonl_line_names_the_line(tmp_path: Path) -> None:
    lines = SGLANG.read_bytes().splitlines()
    assert len(lines) >= 2
    lines[1] = lines[1].replace(b'"request_throughput": ', b'"request_throughput": -1e999, "x": ', 1)
    assert b"-1e999" in lines[1]
    f = tmp_path / "runs.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    assert error_of(f) == (
        f"{f}:line 2: key `request_throughput`: number -1e999 is out of range; "
        "expected a finite number (at most about 1.8e308)"
    )


def test_number_out_of_range_inside_an_aiperf_metric_object(tmp_path: Path) -> None:
    f = tmp_path / "profile_export_aiperf.json"
    f.write_bytes(
        b'{"aiperf_version": "0.8.0", "time_to_first_token": {"unit": "ms", "avg": 1.0, "p": [1, 2e400]}}'
    )
    assert error_of(f).startswith(f"{f}: key `time_to_first_token.p[1]`: number 2e400 is out of range")


def test_number_out_of_range_beside_nan_values(tmp_path: Path) -> None:
    """A file with NaN is re-read by the standard library, which turns 1e999 into infinity."""
    f = tmp_path / "r.json"
    f.write_bytes(b'{"model_id": "m", "completed": 3, "std_ttft_ms": NaN, "request_rate": 1e999}')
    assert error_of(f) == (
        f"{f}: key `request_rate`: number 1e999 is out of range; "
        "expected a finite number (at most about 1.8e308)"
    )


def test_integer_too_large_for_a_float(tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_bytes(b'{"model_id": "m", "completed": 3, "mean_ttft_ms": 1' + b"0" * 400 + b"}")
    assert error_of(f) == (
        f"{f}: key `mean_ttft_ms`: integer of 1329 bits is out of range; "
        "expected a finite number (at most about 1.8e308)"
    )


# ------------------------------------------------------------------------------------------
# the read cap holds whatever the input is


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_link_to_dev_zero_stops_at_the_cap(tmp_path: Path) -> None:
    link = tmp_path / "run.json"
    link.symlink_to("/dev/zero")
    assert error_of(link, max_bytes=1 << 20) == (
        f"{link}: larger than the 1 MiB cap for one input; expected a benchmark result "
        "(raise the cap with --opt max_bytes=N if the file is really that large)"
    )


def test_max_bytes_must_be_a_positive_integer() -> None:
    for bad in ("0", "lots"):
        assert error_of(SGLANG, max_bytes=bad).startswith(
            "option `max_bytes`: expected a positive integer, got"
        )


# ------------------------------------------------------------------------------------------
# runs written twice into one file


def test_a_jsonl_line_written_twice_is_reported(tmp_path: Path) -> None:
    lines = SGLANG.read_bytes().splitlines()
    f = tmp_path / "runs.jsonl"
    f.write_bytes(b"\n".join([lines[0], lines[0], *lines[1:], lines[0]]) + b"\n")
    packets, warnings = read(f)
    assert len(packets) == len(lines) + 2
    assert (
        f"{f}: 2 run(s) are exact copies of an earlier run (first: line 2 repeats line 1); "
        "each still gives a packet - remove the copies if the run was written twice"
    ) in warnings


def test_distinct_runs_give_no_copy_warning() -> None:
    _, warnings = read(SGLANG)
    assert not any("exact copies" in w for w in warnings)


def test_a_sweep_csv_row_written_twice_is_reported(tmp_path: Path) -> None:
    rows = SWEEP_CSV.read_text(encoding="utf-8").splitlines(keepends=True)
    header, first = rows[0], rows[1]
    index, _, rest = first.partition(",")  # pandas' index column differs in the copy
    f = tmp_path / "summary.csv"
    f.write_text(header + first + "".join(rows[2:]) + f"{int(index) + 90},{rest}", encoding="utf-8")
    packets, warnings = read(f)
    assert len(packets) == len(read(SWEEP_CSV)[0]) + 1
    assert any(
        w.startswith(f"{f}: 1 run(s) are exact copies of an earlier run (first: line ")
        and w.endswith(
            "repeats line 2); each still gives a packet - remove the copies if the run was written twice"
        )
        for w in warnings
    ), warnings


# ------------------------------------------------------------------------------------------
# AIPerf units: what the file states is used, and a unit AIPerf does not write is reported


def _aiperf(tmp_path: Path, ttft_unit: str | None, duration_unit: str = "sec") -> Path:
    ttft: dict[str, Any] = {"avg": 1.5, "p50": 1.25, "p99": 3.0}
    if ttft_unit is not None:
        ttft["unit"] = ttft_unit
    doc = {
        "aiperf_version": "0.8.0",
        "request_count": {"unit": "requests", "avg": 10.0},
        "benchmark_duration": {"unit": duration_unit, "avg": 20.0 if duration_unit == "sec" else 20000.0},
        "request_throughput": {"unit": "requests/sec", "avg": 0.5},
        "time_to_first_token": ttft,
    }
    f = tmp_path / "profile_export_aiperf.json"
    f.write_text(json.dumps(doc))
    return f


def test_aiperf_units_as_aiperf_writes_them_give_no_warning(tmp_path: Path) -> None:
    packets, warnings = read(_aiperf(tmp_path, "ms"))
    serving = packets[0].timing.serving
    assert serving.ttft.mean == 1.5 and serving.ttft.median == 1.25
    assert serving.duration.value == 20.0
    assert not any("unit `" in w or "no `unit`" in w for w in warnings), warnings


def test_aiperf_latency_in_seconds_is_converted_and_reported(tmp_path: Path) -> None:
    f = _aiperf(tmp_path, "s", duration_unit="ms")
    packets, warnings = read(f)
    serving = packets[0].timing.serving
    assert serving.ttft.unit == "ms" and serving.ttft.mean == 1500.0 and serving.ttft.median == 1250.0
    assert serving.duration.value == 20.0 and serving.duration.unit == "s"
    assert (
        f"{f}: key `time_to_first_token`: unit `s` where AIPerf writes `ms`; converted as stated "
        "(avg 1.5 s = 1500 ms) - check the file's unit"
    ) in warnings
    assert (
        f"{f}: key `benchmark_duration`: unit `ms` where AIPerf writes `s`; converted as stated "
        "(avg 20000 ms = 20 s) - check the file's unit"
    ) in warnings


def test_aiperf_metric_without_a_unit_is_read_as_ms_with_a_warning(tmp_path: Path) -> None:
    f = _aiperf(tmp_path, None)
    packets, warnings = read(f)
    assert packets[0].timing.serving.ttft.mean == 1.5
    assert f"{f}: key `time_to_first_token`: no `unit`; read as `ms`, the unit AIPerf writes" in warnings
