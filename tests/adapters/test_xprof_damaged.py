"""XProf adapter: damaged and hostile inputs found by the adapter audit.

Numbers that are not numbers in tool tables and trace events (left out with a warning, never
read as 0), JSON that is not trace events, no guessed CPU, a UTF-8 byte-order mark, deep
nesting and bad UTF-8 inside ``.json.gz``, and the read caps (a link to ``/dev/zero``, a
gzip that decompresses past the cap). Inputs are small synthetic documents built here.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.xprof import ADAPTER
from kernel_evidence.errors import AdapterError
from kernel_evidence.models import EvidencePacket, KernelRecord

T0 = "2026-11-22T01:02:03Z"
EXPECTED_TRACE = "expected a trace-event JSON object with `traceEvents` (or a JSON array of trace events)"


def _read(*paths: Any, **extra: Any) -> tuple[list[EvidencePacket], list[str]]:
    result = ADAPTER.read([str(p) for p in paths], AdapterOptions(created_at=T0, extra=extra))
    for packet in result.packets:
        EvidencePacket.model_validate(packet.to_dict())
    return result.packets, result.warnings


def _one(*paths: Any, **extra: Any) -> tuple[EvidencePacket, list[str]]:
    packets, warnings = _read(*paths, **extra)
    assert len(packets) == 1
    return packets[0], warnings


def _error(*paths: Any, **extra: Any) -> str:
    with pytest.raises(AdapterError) as err:
        _read(*paths, **extra)
    msg = str(err.value)
    assert "\n" not in msg
    assert "could not read the profile" not in msg  # the catch-all for bugs
    return msg


def _kernels(packet: EvidencePacket) -> list[KernelRecord]:
    assert packet.profiler is not None and packet.profiler[0].kernels is not None
    return packet.profiler[0].kernels


def _gviz(cols: list[str], rows: list[list[Any]], p: dict[str, Any] | None = None) -> dict[str, Any]:
    table: dict[str, Any] = {
        "cols": [{"id": c, "label": c, "type": "string"} for c in cols],
        "rows": [{"c": [{"v": v} for v in row]} for row in rows],
    }
    if p is not None:
        table["p"] = p
    return table


def _write_gz(path: Path, doc: Any) -> Path:
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


KERNEL_COLS = ["rank", "kernel_name", "registers_per_thread", "shmem_bytes", "block_dim", "grid_dim",
               "occurrences", "total_duration_us", "avg_duration_us"]  # fmt: skip


def _kernel_stats(tmp_path: Path, second: list[Any]) -> Path:
    rows = [
        [1, "gemm_kernel", 128, 0, "256,1,1", "80,1,1", 10, 500.0, 50.0],
        second,
        [3, "copy_kernel", 16, 0, "128,1,1", "4,1,1", 2, 20.0, 10.0],
    ]
    return _write_gz(tmp_path / "run.kernel_stats.json.gz", [_gviz(KERNEL_COLS, rows)])


# ------------------------------------------------------------------------------------------
# values that are not numbers: left out with a warning naming the file, the row and the field


def test_kernel_stats_duration_that_is_not_a_number_is_not_zero(tmp_path: Path) -> None:
    f = _kernel_stats(tmp_path, [2, "fill_kernel", 38, 0, "256,1,1", "2,1,1", 4, "abc", 40.0])
    packet, warnings = _one(f)
    kernels = {k.name: k for k in _kernels(packet)}
    fill = kernels["fill_kernel"]
    assert fill.metrics is None or "duration" not in fill.metrics
    assert fill.raw is not None and "total_time_ps" not in fill.raw
    assert fill.invocations == 4
    assert kernels["gemm_kernel"].metrics["duration"].value == 500_000.0  # type: ignore[index]
    summary = packet.profiler[0].summary or {}  # type: ignore[index]
    assert "op_time" not in summary  # a sum of the readable kernels only would be wrong
    assert (
        f"{tmp_path / 'run'}: {f}: kernel_stats row 2 (`fill_kernel`): `total_duration_us` is 'abc', "
        "not a finite number; the op is given no duration, and the summary op_time is left out"
    ) in warnings


def test_kernel_stats_counts_and_registers_that_are_not_numbers(tmp_path: Path) -> None:
    f = _kernel_stats(tmp_path, [2, "fill_kernel", "many", 0, "256,1,1", "2,1,1", "1,234", 80.0, 20.0])
    packet, warnings = _one(f)
    fill = {k.name: k for k in _kernels(packet)}["fill_kernel"]
    assert fill.invocations is None
    assert fill.metrics is not None and fill.metrics["duration"].value == 80_000.0
    assert "registers_per_thread" not in fill.metrics
    assert fill.raw is not None and fill.raw["occurrences"].value == "1,234"  # the cell, verbatim
    summary = packet.profiler[0].summary or {}  # type: ignore[index]
    assert summary["op_time"].value == 600_000.0
    prefix = f"{tmp_path / 'run'}: {f}: kernel_stats row 2 (`fill_kernel`): "
    assert (
        prefix + "`occurrences` is '1,234', not a finite number; the op's invocation count is left out"
    ) in warnings
    assert prefix + "`registers_per_thread` is 'many', not a finite number; left out" in warnings


def test_one_warning_per_field_with_a_count(tmp_path: Path) -> None:
    rows = [[i, f"k{i}", 32, 0, "1,1,1", "1,1,1", 1, "n/a" if i > 1 else 5.0, 1.0] for i in range(1, 5)]
    f = _write_gz(tmp_path / "run.kernel_stats.json.gz", [_gviz(KERNEL_COLS, rows)])
    _, warnings = _one(f)
    hits = [w for w in warnings if "`total_duration_us`" in w]
    assert len(hits) == 1
    assert (
        "kernel_stats row 2 (`k2`): `total_duration_us` is 'n/a', not a finite number (and in 2 more)"
        in hits[0]
    )


def test_hlo_stats_row_without_a_time(tmp_path: Path) -> None:
    cols = ["rank", "program_id", "category", "hlo_op_name", "occurrences", "total_time", "total_self_time"]
    rows = [[1, "7", "fusion", "fusion.1", 3, 12.5, 12.5], [2, "7", "fusion", "fusion.2", 1, None, None]]
    f = _write_gz(tmp_path / "run.hlo_stats.json.gz", [_gviz(cols, rows)])
    packet, warnings = _one(f)
    recs = {k.name: k for k in _kernels(packet)}
    assert recs["fusion.1"].metrics["duration"].value == 12_500.0  # type: ignore[index]
    assert recs["fusion.2"].metrics is None or "duration" not in recs["fusion.2"].metrics
    assert any(
        "hlo_stats row 2 (`fusion.2`): `total_time` is absent, not a finite number" in w for w in warnings
    )


def test_op_profile_time_that_is_not_a_number_is_not_zero(tmp_path: Path) -> None:
    def node(name: str, raw_time: Any) -> dict[str, Any]:
        return {"name": name, "xla": {"category": "fusion", "expression": name},
                "metrics": {"rawTime": raw_time, "occurrences": 2}}  # fmt: skip

    doc = {"byProgram": {"name": "root", "children": [
        {"name": "jit_f(42)", "children": [node("fusion.1", 3000.0), node("fusion.2", "NaN")]},
    ]}, "deviceType": "TPU"}  # fmt: skip
    f = _write_gz(tmp_path / "run.op_profile.json.gz", doc)
    packet, warnings = _one(f)
    recs = {k.name: k for k in _kernels(packet)}
    assert recs["fusion.1"].metrics["duration"].value == 3.0  # type: ignore[index]
    assert recs["fusion.2"].metrics is None or "duration" not in recs["fusion.2"].metrics
    assert any("op_profile node `fusion.2`: `rawTime` is 'NaN', not a finite number" in w for w in warnings)


def test_overview_value_that_is_not_a_number_is_reported(tmp_path: Path) -> None:
    p = {"device_type": "TPU v5", "mxu_utilization_percent": "abc%", "device_duty_cycle_percent": "90.5%"}
    f = _write_gz(tmp_path / "run.overview_page.json.gz", [_gviz(["a"], [], p)])
    packet, warnings = _one(f)
    attrs = packet.profiler[0].attributes  # type: ignore[index]
    assert attrs is not None and "mxu_utilization_percent" not in attrs
    assert attrs["device_duty_cycle_percent"] == 90.5
    assert (
        f"{tmp_path / 'run'}: {f}: overview_page `p`: `mxu_utilization_percent` is 'abc%', "
        "not a finite number; left out"
    ) in warnings


def test_trace_event_duration_that_is_not_a_number(tmp_path: Path) -> None:
    events = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {
            "ph": "X",
            "pid": 1,
            "tid": 2,
            "ts": 1.0,
            "dur": 4.0,
            "name": "fusion",
            "args": {"hlo_op": "fusion"},
        },
        {
            "ph": "X",
            "pid": 1,
            "tid": 2,
            "ts": 9.0,
            "dur": "4,0",
            "name": "fusion",
            "args": {"hlo_op": "fusion"},
        },
    ]
    f = _write_gz(tmp_path / "host.trace.json.gz", {"traceEvents": events})
    packet, warnings = _one(f)
    (rec,) = _kernels(packet)
    assert rec.invocations == 1 and rec.metrics is not None and rec.metrics["duration"].value == 4000.0
    assert (
        f"{f}: traceEvents[2] `fusion`: `dur` is '4,0', not a finite number; the event was skipped"
    ) in warnings


# ------------------------------------------------------------------------------------------
# JSON that is not trace events; hardware never guessed


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([1, 2, 3], "top level: the array holds 3 value(s), none an event object with `ph`"),
        ([], "top level: the array is empty"),
        ({"traceEvents": []}, "`traceEvents` is empty"),
        (
            {"traceEvents": [{"name": "x"}, 7]},
            "`traceEvents` holds 2 value(s), none an event object with `ph`",
        ),
        ("text", "top level is a string"),
        (12, "top level is a number"),
    ],
)
def test_json_that_is_not_trace_events_is_refused(tmp_path: Path, doc: Any, message: str) -> None:
    f = _write_gz(tmp_path / "host.trace.json.gz", doc)
    assert _error(f) == f"{f}: {message}; {EXPECTED_TRACE}"


def test_a_trace_without_device_or_xla_ops_has_no_hardware(tmp_path: Path) -> None:
    events = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "X", "pid": 1, "tid": 2, "ts": 1.0, "dur": 4.0, "name": "$profiler.py:1 trace"},
    ]
    f = _write_gz(tmp_path / "host.trace.json.gz", {"traceEvents": events})
    packet, warnings = _one(f)
    assert packet.hardware is None
    assert any("the trace names no device" in w and "hardware left out" in w for w in warnings)


def test_an_xspace_without_device_or_xla_ops_has_no_hardware(tmp_path: Path) -> None:
    pytest.importorskip("google.protobuf")
    from kernel_evidence.adapters.xprof import _proto as _xprof_proto

    space = _xprof_proto.messages().XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = "python_call"
    plane.lines.add(id=1, name="python").events.add(metadata_id=1, offset_ps=0, duration_ps=1000)
    f = tmp_path / "host.xplane.pb"
    f.write_bytes(space.SerializeToString())
    packet, warnings = _one(f)
    assert packet.hardware is None
    assert f"{f}: no device plane and no XLA op events in the profile; hardware left out" in warnings


# ------------------------------------------------------------------------------------------
# byte-order mark, nesting, UTF-8


def test_a_utf8_bom_at_the_start_of_tool_json_is_skipped(tmp_path: Path) -> None:
    p = {"device_type": "TPU v5", "mxu_utilization_percent": "15.7%"}
    body = b"\xef\xbb\xbf" + json.dumps([_gviz(["a"], [], p)]).encode()
    for f in (tmp_path / "a.overview_page.json", tmp_path / "b.overview_page.json.gz"):
        f.write_bytes(gzip.compress(body) if f.name.endswith(".gz") else body)
        packet, _ = _one(f)
        assert packet.profiler[0].attributes["mxu_utilization_percent"] == 15.7  # type: ignore[index]


def test_deep_nesting_inside_a_gzip_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "run.kernel_stats.json.gz"
    f.write_bytes(gzip.compress(b"[" * 100_000 + b"]" * 100_000))
    assert _error(f) == (
        f"{f}: JSON nested too deeply to be a profile; "
        "expected XProf trace-event or tool JSON (optionally gzip-compressed)"
    )


def test_bad_utf8_inside_a_gzip_names_the_file_and_byte(tmp_path: Path) -> None:
    f = tmp_path / "run.kernel_stats.json.gz"
    f.write_bytes(gzip.compress(b'[{"cols": [{"id": "kernel_\xff"}], "rows": []}]'))
    assert _error(f) == (
        f"{f}: byte 26 of the decompressed JSON: not valid UTF-8; "
        "expected XProf trace-event or tool JSON (optionally gzip-compressed) in UTF-8 text"
    )


# ------------------------------------------------------------------------------------------
# read caps: every input file, and the decompressed size


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("name", ["host.xplane.pb", "host.trace.json.gz", "run.hlo_stats.json"])
def test_a_link_to_dev_zero_stops_at_the_cap(tmp_path: Path, name: str) -> None:
    link = tmp_path / name
    link.symlink_to("/dev/zero")
    msg = _error(link, max_bytes=1 << 20)
    assert msg.startswith(f"{link}: larger than the 1 MiB cap for one input; expected ")
    assert msg.endswith("(raise the cap with --opt max_bytes=N if the file is really that large)")


def test_decompressed_size_is_capped_by_max_bytes(tmp_path: Path) -> None:
    f = tmp_path / "host.trace.json.gz"
    f.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * 300_000 + b"]}"))
    assert len(f.read_bytes()) < 100_000
    assert _error(f, max_bytes=100_000) == (
        f"{f}: decompresses to more than 100000 bytes, the cap for one input; expected XProf "
        "trace-event or tool JSON (optionally gzip-compressed) (raise the cap with --opt "
        "max_bytes=N if the file is really that large)"
    )


def test_max_bytes_must_be_a_positive_integer(tmp_path: Path) -> None:
    f = _write_gz(tmp_path / "host.trace.json.gz", {"traceEvents": [{"ph": "M"}]})
    assert _error(f, max_bytes="0").startswith("option `max_bytes`: expected a positive integer")
