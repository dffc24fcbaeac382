"""torch-profiler adapter: Kineto Chrome traces (CUDA, ROCm, PyTorch 1.8 layout), damaged input.

Small fixtures in tests/fixtures/torch_profiler (see the README there: written to Kineto's
writer, field by field) and every trace of ../shared/corpus/torch-profiler (skipped when
absent), with the numbers read out of each file by hand.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kernel_evidence.adapters import AdapterOptions, AdapterWarning, get_adapter
from kernel_evidence.adapters.torch_profiler import ADAPTER
from kernel_evidence.errors import AdapterError
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rawtable import read_raw_table
from kernel_evidence.rules import validate
from kernel_evidence.schema import load_schema

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "torch_profiler"
H100 = FIX / "h100_rank0.pt.trace.json"
ROCM = FIX / "mi300x_rocm.json.gz"
OLD = FIX / "pytorch18_old_layout.json"
CORPUS = ROOT.parent / "shared" / "corpus" / "torch-profiler"
TRITON = CORPUS / "kineto_a100_triton_example.json.gz"
NODEV = CORPUS / "kineto_no_devprops_trace_compare_base.json.gz"
T0 = "2026-11-22T00:00:00Z"
SCHEMA = jsonschema.Draft202012Validator(load_schema())
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"


def read(
    *paths: Any, options: AdapterOptions | None = None, **extra: Any
) -> tuple[list[EvidencePacket], list[str]]:
    opts = options or AdapterOptions(created_at=T0)
    opts.extra.update(extra)
    result = ADAPTER.read([str(p) for p in paths], opts)
    for p in result.packets:
        data = p.to_dict()
        SCHEMA.validate(data)
        assert EvidencePacket.model_validate(data).compute_id() == p.packet_id
    return result.packets, result.warnings


def errors(p: EvidencePacket) -> set[str]:
    return {f.rule_id for f in validate(p).findings if f.severity == "error"}


def by_name(p: EvidencePacket) -> dict[str, Any]:
    return {k.name: k for k in p.profiler[0].kernels or []}


def test_registered_under_its_name_and_aliases() -> None:
    for name in ("torch-profiler", "kineto", "pytorch-profiler"):
        assert get_adapter(name) is ADAPTER


def test_cuda_trace_one_record_per_kernel_name_and_device() -> None:
    (p,), warnings = read(H100)
    assert warnings == []
    assert errors(p) == {"KE101"}  # the trace cannot know the replay command
    recs = by_name(p)
    assert len(recs) == 2
    gemm = recs[GEMM]
    assert (gemm.device, gemm.invocations, gemm.stream, gemm.category) == (0, 3, "7", "kernel")
    assert gemm.metrics["duration"].model_dump() == {
        "value": 11000.0,
        "unit": "ns",
    }  # median of 10.5/11/12.5 us
    raw = {k: v.value for k, v in gemm.raw.items()}
    assert raw["duration_min"] == 10500.0 and raw["duration_max"] == 12500.0
    assert raw["duration_total"] == 34000.0 and raw["duration_mean"] == pytest.approx(34000.0 / 3)
    # one launch had another grid: no single grid, the shapes counted; block the same for all
    assert gemm.grid is None and gemm.block == [384, 1, 1] and raw["launch_shapes"] == 2.0
    assert gemm.metrics["registers_per_thread"].value == 168.0
    assert gemm.metrics["shared_memory_per_block"].value == 213248.0
    assert "grid_size" not in gemm.metrics and gemm.metrics["block_size"].value == 384.0
    # the innermost operator enclosing the launching cudaLaunchKernel (inside aten::linear)
    assert raw["cpu_op"] == "aten::addmm" and raw["cpu_op_launches"] == 3.0
    assert raw["est. achieved occupancy %"] == 12.0 and "est. achieved occupancy %" not in gemm.metrics
    clamp = next(r for n, r in recs.items() if n != GEMM)
    assert clamp.grid == [1024, 1, 1] and clamp.metrics["grid_size"].value == 1024 * 128
    assert clamp.raw["cpu_op"].value == "aten::relu"
    # records sorted by total time, largest first
    assert [r.name for r in p.profiler[0].kernels] == [GEMM, clamp.name]


def test_cuda_trace_hardware_summary_and_rank() -> None:
    (p,), _ = read(H100)
    hw = p.hardware
    assert (hw.vendor, hw.device, hw.device_id, hw.arch) == (
        "nvidia",
        "NVIDIA H100 80GB HBM3",
        "nvidia-h100-sxm5-80gb",
        "sm_90",
    )
    assert hw.count == 1  # two listed, one ran kernels
    assert hw.compute_units == 132 and hw.memory.value == 84929216512.0
    cap = p.profiler[0]
    assert cap.tool == "torch-profiler" and cap.version == "1"
    attrs = cap.attributes
    assert attrs["distributed_rank"] == 0 and attrs["distributed_world_size"] == 2
    assert attrs["cuda_runtime_version"] == 12040 and attrs["launches_with_cpu_op"] == 4
    s = {k: q.value for k, q in cap.summary.items()}
    assert s["kernel_time"] == 36250.0 and s["kernel_launches"] == 4 and s["kernels"] == 2
    assert s["memcpy_count"] == 1 and s["memcpy_time"] == 3500.0 and s["memset_time"] == 1250.0
    assert s["profiler_steps"] == 2 and s["step_time_median"] == 410000.0
    assert p.measured_at == "2026-01-01T00:00:00Z"  # baseTimeNanoseconds + first kernel ts
    assert cap.source.sha256.startswith("sha256:") and cap.source.kind == "trace"
    assert "(rank 0)" in p.subject.description and p.subject.name == "h100_rank0"


def test_launch_capture_keeps_every_launch_raw_inline_when_small() -> None:
    (p,), _ = read(H100)
    launches = p.profiler[1]
    assert launches.attributes == {"records": "launches", "launches": 4}
    assert [k.metrics["duration"].value for k in launches.kernels] == [10500.0, 2250.0, 11000.0, 12500.0]
    assert [k.id for k in launches.kernels] == ["101", "102", "103", "104"]
    assert launches.kernels[3].grid == [66, 2, 1]
    cols = launches.raw_columns
    assert cols["cpu_op"] == ["aten::addmm", "aten::relu", "aten::addmm", "aten::addmm"]
    assert cols["correlation"] == [101.0, 102.0, 103.0, 104.0] and cols["ts"][0] == 1200.0
    assert launches.raw_units["ts"] == "us" and launches.raw_units["shared memory"] == "B"


def test_launch_values_go_to_a_side_file_when_large(tmp_path: Path) -> None:
    opts = AdapterOptions(created_at=T0, side_dir=str(tmp_path), side_base=str(tmp_path), inline_max_cells=10)
    (p,), _ = read(H100, options=opts)
    cap = p.profiler[1]
    assert cap.raw_columns is None and cap.raw_table is not None
    assert opts.side_files == [str(tmp_path / cap.raw_table.path)]
    table = read_raw_table(cap, tmp_path)
    assert table.num_rows == 4 and table.column("cpu_op").to_pylist()[1] == "aten::relu"
    assert errors(p) == {"KE101"}


def test_rocm_trace_shape_from_the_runtime_call_and_device_from_pid() -> None:
    (p,), warnings = read(ROCM)
    assert warnings == []
    (rec,) = p.profiler[0].kernels
    assert rec.name == "Cijk_Alik_Bljk_HHS_BH_MT128x128x32" and rec.device == 2 and rec.invocations == 2
    assert rec.grid == [304, 1, 1] and rec.block == [256, 1, 1]  # from hipLaunchKernel's args
    assert rec.metrics["shared_memory_per_block"].value == 16384.0
    assert rec.metrics["duration"].value == 30000.0 and rec.raw["duration_std"].value == 250.0
    assert "registers_per_thread" not in rec.metrics
    hw = p.hardware
    assert (hw.vendor, hw.device_id, hw.arch, hw.count, hw.compute_units) == (
        "amd",
        "amd-mi300x",
        "gfx942",
        1,
        304,
    )
    assert errors(p) == {"KE101"}


def test_old_layout_capitalised_categories_and_flow_only_correlation() -> None:
    (p,), warnings = read(OLD)
    (rec,) = p.profiler[0].kernels
    assert rec.name == "add_kernel" and rec.metrics["duration"].value == 3000.0
    assert rec.raw["cpu_op"].value == "aten::add"
    assert p.profiler[1].kernels[0].id == "7"  # the ac2g flow's id
    assert p.measured_at == "2021-05-03T00:00:00Z"  # integer us since the epoch
    assert p.hardware is None
    (w,) = warnings
    assert isinstance(w, AdapterWarning) and w.missing == {"hardware.device": "<GPU model>"}
    assert errors(p) == {"KE101", "KE801"}
    (p2,), warnings2 = read(OLD, device="NVIDIA A100-SXM4-80GB", vendor="nvidia")
    assert warnings2 == [] and p2.hardware.device == "NVIDIA A100-SXM4-80GB"


# ------------------------------------------------------------------------------------------
# real traces (../shared/corpus/torch-profiler), skipped when absent


@pytest.mark.skipif(not TRITON.exists(), reason="corpus not present")
def test_corpus_a100_triton_example() -> None:
    (p,), warnings = read(TRITON)
    assert warnings == []
    (rec,) = p.profiler[0].kernels
    assert rec.name == "triton_poi_fused_add_cos_sin_0"
    assert (rec.device, rec.stream, rec.invocations, rec.grid, rec.block) == (
        0,
        "7",
        1,
        [1, 1, 1],
        [128, 1, 1],
    )
    assert rec.metrics["duration"].value == 1760.0  # dur 1.76 us
    assert rec.metrics["registers_per_thread"].value == 16.0
    assert rec.metrics["shared_memory_per_block"].value == 0.0
    # launched by cuLaunchKernel (cuda_driver, correlation 35) inside the Triton cpu_op
    assert rec.raw["cpu_op"].value == "triton_poi_fused_add_cos_sin_0"
    hw = p.hardware
    assert (hw.vendor, hw.device, hw.arch, hw.count, hw.compute_units) == (
        "nvidia",
        "NVIDIA A100-PG509-200",
        "sm_80",
        1,
        108,
    )
    assert hw.memory.value == 42297524224.0
    assert p.measured_at == "2024-10-28T23:06:31Z"
    attrs = p.profiler[0].attributes
    assert attrs["cupti_version"] == 18 and attrs["traceName"] == "my_kernel_trace.json"
    assert p.profiler[1].raw_columns["correlation"] == [35.0]
    assert errors(p) == {"KE101"}


@pytest.mark.skipif(not NODEV.exists(), reason="corpus not present")
def test_corpus_2022_trace_without_device_properties() -> None:
    (p,), warnings = read(NODEV)
    assert len(p.profiler[0].kernels) == 3 and len(p.profiler[1].kernels) == 6
    fill = next(r for r in p.profiler[0].kernels if "FillFunctor" in r.name)
    assert (fill.device, fill.invocations, fill.grid) == (1, 2, [88497, 1, 1])
    assert fill.metrics["duration"].value == 207500.0  # median of 208 and 207 us
    add_int = next(r for r in p.profiler[0].kernels if "CUDAFunctor_add<int>" in r.name)
    assert add_int.invocations == 3 and add_int.metrics["duration"].value == 4000.0
    s = {k: q.value for k, q in p.profiler[0].summary.items()}
    assert s["kernel_launches"] == 6 and s["kernel_time"] == 432000.0
    assert s["memcpy_count"] == 6 and s["memset_count"] == 6 and s["profiler_steps"] == 2
    assert p.profiler[0].attributes["distributed_rank"] == 1
    assert p.measured_at == "2022-08-31T09:34:26Z"
    assert p.hardware is None
    # the stripped trace kept the launching cudaLaunchKernel calls but not their operators
    assert any("6 of 6 kernel launch(es) have no launching CPU operator" in w for w in warnings)
    assert errors(p) == {"KE101", "KE801"}


# ------------------------------------------------------------------------------------------
# damaged and foreign input: one line naming the file


def _trace(tmp_path: Path, events: list[Any], name: str = "t.json", **top: Any) -> Path:
    f = tmp_path / name
    f.write_text(json.dumps({"schemaVersion": 1, **top, "traceEvents": events}))
    return f


K = {
    "ph": "X",
    "cat": "kernel",
    "name": "k",
    "pid": 0,
    "tid": 7,
    "ts": 10.0,
    "dur": 2.0,
    "args": {"device": 0, "correlation": 1},
}


def _one_line_error(path: Path) -> str:
    with pytest.raises(AdapterError) as exc:
        read(path)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(str(path))
    return msg


def test_truncated_gzip(tmp_path: Path) -> None:
    f = tmp_path / "t.json.gz"
    f.write_bytes(gzip.compress(H100.read_bytes())[:300])
    assert "truncated or corrupt gzip" in _one_line_error(f)


def test_json_that_is_not_a_trace(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text(json.dumps({"benchmarks": []}))
    assert _one_line_error(f).endswith(
        "no `traceEvents` array; expected a PyTorch profiler / Kineto Chrome trace (.json or .json.gz with `traceEvents`)"
    )
    f.write_text('"a string"')
    assert "top level is a string" in _one_line_error(f)
    f.write_text('{"traceEvents": ')
    assert "not valid JSON" in _one_line_error(f)


def test_array_form_is_read(tmp_path: Path) -> None:
    # the trace-event format's JSON array form (events only, no metadata)
    f = tmp_path / "array.json"
    f.write_text(json.dumps([K, {**K, "ts": 20.0, "dur": 4.0}]))
    (p,), warnings = read(f)
    assert (
        p.profiler[0].kernels[0].invocations == 2
        and p.profiler[0].kernels[0].metrics["duration"].value == 3000.0
    )
    assert not any("skipped" in w or "metadata" in w for w in warnings)


def test_cpu_only_trace_is_refused(tmp_path: Path) -> None:
    f = _trace(
        tmp_path,
        [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.0, "dur": 3.0}],
    )
    assert "no GPU kernel events" in _one_line_error(f)


def test_range_profiler_trace_is_refused_and_says_why(tmp_path: Path) -> None:
    # torch.profiler with experimental_config(profiler_metrics=...): CUPTI range profiler
    # counters per kernel, durations of replays (HolisticTraceAnalysis tests/data/cupti_profiler)
    rng = {
        **K,
        "cat": "cuda_profiler_range",
        "args": {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 38731776},
    }
    f = _trace(tmp_path, [rng])
    assert "CUPTI range-profiler events, `cuda_profiler_range`" in _one_line_error(f)


def test_xprof_trace_gets_a_pointer_to_the_xprof_adapter(tmp_path: Path) -> None:
    f = _trace(
        tmp_path,
        [
            {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
            {"ph": "X", "cat": "", "name": "fusion", "pid": 1, "tid": 1, "ts": 1.0, "dur": 3.0},
        ],
    )
    assert "use `kevidence ingest xprof`" in _one_line_error(f)


def test_events_missing_keys_and_negative_dur_are_left_out_with_a_warning(tmp_path: Path) -> None:
    no_dur = {k: v for k, v in K.items() if k != "dur"}
    negative = {**K, "dur": -5.0, "ts": 30.0}
    f = _trace(tmp_path, [K, no_dur, negative, {**K, "ts": 40.0, "dur": 4.0}])
    (p,), warnings = read(f)
    (rec,) = p.profiler[0].kernels
    assert rec.invocations == 2 and rec.metrics["duration"].value == 3000.0
    assert any("1 kernel event(s) left out: no `ts` or `dur`" in w for w in warnings)
    assert any(
        "1 kernel event(s) left out: negative or non-finite `dur` (first: traceEvents[2] `k` dur -5.0)" in w
        for w in warnings
    )


def test_dur_as_text_skips_that_event_and_reads_the_rest(tmp_path: Path) -> None:
    f = _trace(tmp_path, [K, {**K, "dur": "2.5", "ts": 20.0}, {**K, "ts": 30.0, "dur": 4.0}])
    (p,), warnings = read(f)
    assert p.profiler[0].kernels[0].invocations == 2
    (w,) = [w for w in warnings if "skipped" in w]
    assert "1 of 3 trace event(s) skipped" in w and "traceEvents[1] `k`" in w and "\n" not in w


def test_args_of_unexpected_types_are_dropped_value_by_value(tmp_path: Path) -> None:
    odd = {**K, "args": {"device": 0, "correlation": 1, "grid": "grid(100,)", "registers per thread": 32}}
    f = _trace(tmp_path, [odd])
    (p,), warnings = read(f)
    (rec,) = p.profiler[0].kernels
    assert rec.grid is None and rec.metrics["registers_per_thread"].value == 32.0
    assert any("1 event(s) had `args` values of unexpected types" in w for w in warnings)


def test_a_folder_skips_what_is_not_a_trace(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text("{}")
    (tmp_path / "run.pt.trace.json").write_bytes(H100.read_bytes())
    packets, warnings = read(tmp_path)
    assert len(packets) == 1 and packets[0].subject.name == "run"
    assert any(w.startswith("skipped: ") and "notes.json" in w for w in warnings)


def test_size_cap_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match="larger than the 100 bytes cap"):
        read(H100, max_bytes="100")
    with pytest.raises(AdapterError, match="could not be read"):
        read(tmp_path / "absent.json")


@pytest.mark.parametrize("path", [H100, ROCM, OLD])
def test_typed_fast_path_equals_the_event_by_event_path(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the lenient path (taken when an event does not fit the types) must read a clean trace
    # exactly as the typed decode does: same packet, same id
    (fast,), fast_warnings = read(path)
    from kernel_evidence.adapters.torch_profiler import _events

    class Refusing:
        def decode(self, data: bytes) -> Any:
            raise _events.msgspec.ValidationError("forced")

    monkeypatch.setattr(_events, "_TRACE", Refusing())
    (slow,), slow_warnings = read(path)
    (forced,) = [w for w in slow_warnings if w not in fast_warnings]
    assert forced.endswith("trace metadata not of the expected types (forced); left out")

    def plain(p: EvidencePacket) -> dict[str, Any]:
        data = p.to_dict()
        del data["packet_id"]
        data["profiler"][0].pop("warnings", None)
        return data

    assert plain(slow) == plain(fast)


def test_cli_writes_the_packet_and_refuses_a_bad_file_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernel_evidence.cli import main
    from kernel_evidence.io import read_packets

    out = tmp_path / "p.json"
    code = main(
        ["ingest", "kineto", str(ROCM), "-o", str(out), "--created-at", T0, "--replay-cmd", "python train.py"]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    (p,) = read_packets(str(out))
    assert p.hardware.device_id == "amd-mi300x" and errors(p) == set()
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    code = main(["ingest", "torch-profiler", str(bad), "-o", str(tmp_path / "q.json")])
    err = capsys.readouterr().err
    assert code == 1 and "truncated or corrupt gzip" in err and "Traceback" not in err


def test_measured_at_only_from_a_clock_that_reads_as_a_date(tmp_path: Path) -> None:
    # absolute epoch us beside a base time (the sum is in the future): the ts alone
    f = _trace(tmp_path, [{**K, "ts": 1661938466265584.0}], baseTimeNanoseconds=1727743122000000000)
    (p,), _ = read(f)
    assert p.measured_at == "2022-08-31T09:34:26Z"
    # a monotonic clock (seconds since boot) and no base time: no date
    g = _trace(tmp_path, [{**K, "ts": 3600.0}], name="g.json")
    (q,), _ = read(g)
    assert q.measured_at is None
