"""GPU MODE kernelbot runs: hand-written fixtures after the bot's code (no real file is public)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kernel_evidence import validate
from kernel_evidence.adapters import AdapterOptions, get_adapter, missing_fields
from kernel_evidence.adapters.kernelbot._build import parse_spec
from kernel_evidence.cli import main
from kernel_evidence.errors import AdapterError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbot"
AT = "2026-11-27T12:00:00Z"


def _read(*paths: Path | str, **extra: Any) -> Any:
    return get_adapter("kernelbot").read([str(p) for p in paths], AdapterOptions(created_at=AT, extra=extra))


def _ext(p: Any) -> dict[str, Any]:
    return p.extensions["gpu-mode:kernelbot"]


def test_full_result_of_a_leaderboard_submission() -> None:
    res = _read(FIX / "full_result_leaderboard_h100.json")
    ps = res.packets
    assert [(_ext(p)["run_key"], p.status.value) for p in ps] == [
        ("test", "passed"), ("benchmark", "passed"), ("benchmark", "passed"), ("leaderboard", "passed"),
    ]  # fmt: skip
    test, b0, b1, lb = ps
    assert [s.shape_id for s in test.validation.shapes] == [
        "test 0: m: 128; n: 256; k: 64; seed: 3", "test 1: m: 512; n: 512; k: 512; seed: 9",
    ]  # fmt: skip
    assert test.timing is None and test.task.shapes[1].dims == {"m": 512, "n": 512, "k": 512, "seed": 9}
    st = b0.timing.stats
    assert (st.unit, st.mean, st.std, st.min, st.max, st.n) == (
        "ns",
        182450.5,
        1210.25,
        180992.0,
        187904.0,
        100,
    )
    assert b0.timing.method == "cuda_events" and b0.timing.repeats == 100
    assert _ext(b0)["err_ns"] == 121.025 and _ext(b0)["spec"] == "m: 4096; n: 4096; k: 4096; seed: 11"
    assert b1.timing.stats.mean == 201330.0 and b1.timing.stats.n == 64
    assert lb.timing.stats.mean == 181002.25 and lb.task.shapes[0].dims["seed"] == 77
    hw = b0.hardware
    assert (hw.vendor, hw.device, hw.device_id, hw.count) == (
        "nvidia",
        "NVIDIA H100 80GB HBM3",
        "nvidia-h100-sxm5-80gb",
        1,
    )
    assert hw.host.cpu == "AMD EPYC 9454 48-Core Processor"
    assert b0.compile.compiler.version == "12.6" and b0.compile.flags == [
        "--std=c++20",
        "-O3",
        "-arch=sm_90a",
        "-o",
    ]
    assert b0.replay.command == ["./eval.out", "benchmark", "/tmp/benchmarks.txt"]
    assert b0.replay.packages == {"torch": "2.7.1+cu126"}
    assert b0.measured_at == "2026-05-02T10:00:10Z" and test.measured_at == "2026-05-02T10:00:01Z"
    for p in ps:
        assert validate(p).ok, validate(p).findings


def test_submission_with_a_secret_run_on_rocm() -> None:
    res = _read(FIX / "submission_runs_mi300.json")
    public, secret = res.packets
    assert public.subject.name == "amd-fp8-mm" and public.status.value == "passed"
    assert (_ext(public)["secret"], _ext(secret)["secret"]) == (False, True)
    assert _ext(public)["score_s"] == 0.0000215 and _ext(public)["submitter"] == "182736"
    assert public.timing.method == "hip_events" and public.timing.stats.mean == 21500.0
    assert public.hardware.vendor == "amd" and public.hardware.device_id == "amd-mi300x"
    assert public.lineage.candidate_id == "submission 4512"
    assert public.compile.language == "python" and public.compile.source_digest.startswith("sha256:")
    assert secret.status.value == "failed" and secret.timing is None
    assert secret.failure.failure_class.value == "incorrect_numerical"
    assert secret.failure.message.startswith("mismatch found!")
    assert "(secret)" in secret.subject.description
    assert secret.validation.verdict == "failed"


def test_a_timed_out_run_and_naive_times() -> None:
    res = _read(FIX / "runner_failed.json")
    (p,) = res.packets
    assert p.status.value == "error" and p.failure.failure_class.value == "timeout"
    assert p.measured_at is None
    assert any("name no time zone" in w for w in res.warnings)


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_a_parquet_export_of_runs(tmp_path: Path) -> None:
    # the columns of gpu-mode/kernelbot-data export.py's submissions query
    result = {"benchmark-count": "1", "benchmark.0.spec": "size: 8192; seed: 5", "benchmark.0.runs": "40",
              "benchmark.0.mean": "5120.5", "benchmark.0.std": "12.0", "benchmark.0.err": "1.9",
              "benchmark.0.best": "5100.0", "benchmark.0.worst": "5160.0", "check": "pass"}  # fmt: skip
    system = {"gpu": "NVIDIA A100-SXM4-80GB", "device_count": 1, "runtime": "CUDA", "torch": "2.6.0"}
    rows = [
        {"submission_id": 11, "leaderboard_id": 430, "user_id": 3, "file_name": "sub.py", "code": "x = 1\n",
         "code_id": 7, "run_id": 99, "run_start_time": "2025-06-01T00:00:00+00:00", "run_mode": "leaderboard",
         "run_score": 5.1205e-06, "run_passed": True, "run_result": json.dumps(result), "run_system_info": json.dumps(system)},
        {"submission_id": 12, "leaderboard_id": 430, "user_id": 4, "file_name": "sub.cu", "code": "__global__ void k(){}",
         "code_id": 8, "run_id": 100, "run_start_time": None, "run_mode": "test", "run_score": None,
         "run_passed": False, "run_result": json.dumps({"test-count": "1", "test.0.spec": "size: 64", "test.0.status": "fail",
                                                        "test.0.error": "wrong value at 3", "check": "fail"}),
         "run_system_info": json.dumps(system)},
    ]  # fmt: skip
    res = _read(_parquet(tmp_path / "submissions.parquet", rows))
    a, b = res.packets
    assert a.timing.stats.mean == 5120.5 and a.task.shapes[0].dims == {"size": 8192, "seed": 5}
    assert a.subject.name == "leaderboard 430" and a.lineage.candidate_id == "code 7"
    assert _ext(a)["run_id"] == 99 and a.hardware.device_id == "nvidia-a100-sxm4-80gb"
    assert b.status.value == "failed" and b.validation.shapes[0].message == "wrong value at 3"
    assert b.compile.language == "cuda"
    # result and system info as Parquet maps and structs instead of JSON text
    typed = [dict(rows[0], run_result=list(result.items()), run_system_info=system)]
    table = pa.Table.from_pylist(typed, schema=pa.schema([
        (k, pa.map_(pa.string(), pa.string())) if k == "run_result" else
        (k, pa.Table.from_pylist(typed).schema.field(k).type) for k in typed[0]]))  # fmt: skip
    pq.write_table(table, tmp_path / "typed.parquet")
    (c,) = _read(tmp_path / "typed.parquet").packets
    assert c.timing.stats.mean == 5120.5 and c.hardware.device == "NVIDIA A100-SXM4-80GB"
    named = _read(tmp_path / "submissions.parquet", leaderboard="grayscale")
    assert named.packets[0].subject.name == "grayscale"


def test_damaged_inputs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"runs": {"test": 3}}')
    with pytest.raises(AdapterError, match=r"bad.json: run `test`: int; expected an EvalResult object"):
        _read(bad)
    bad.write_text("{ nope")
    with pytest.raises(AdapterError, match=r"bad.json: not JSON .*; expected a GPU MODE kernelbot result"):
        _read(bad)
    bad.write_text('{"hello": 1}')
    with pytest.raises(AdapterError, match="without `runs`"):
        _read(bad)
    bad.write_text('{"runs": [{"mode": "test", "result": "not json", "system": {}}]}')
    with pytest.raises(AdapterError, match=r"run 1: `result` is text that is not JSON"):
        _read(bad)
    pq_bad = _parquet(tmp_path / "other.parquet", [{"a": 1}])
    with pytest.raises(AdapterError, match="without `run_result` or `score` columns"):
        _read(pq_bad)
    (tmp_path / "trunc.parquet").write_bytes(b"PAR1\x00\x00")
    with pytest.raises(AdapterError, match=r"trunc.parquet: not a readable Parquet file"):
        _read(tmp_path / "trunc.parquet")
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"success": True, "error": "", "system": {"gpu": "H100"},
                                   "runs": {"profile.0": {"start": None, "end": None, "compilation": None,
                                                          "run": {"success": True, "passed": True, "result": {"benchmark.0.report": "eA=="}}}}}))  # fmt: skip
    with pytest.raises(AdapterError, match="only profile runs"):
        _read(profile)


def test_no_gpu_named_is_a_warning_with_the_field() -> None:
    data = {"success": True, "error": "", "system": {},
            "runs": {"test": {"start": None, "end": None, "compilation": None,
                              "run": {"success": True, "passed": True, "command": "python eval.py test t.txt",
                                      "result": {"test-count": "1", "test.0.spec": "n: 4", "test.0.status": "pass", "check": "pass"}}}}}  # fmt: skip
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "r.json"
        p.write_text(json.dumps(data))
        res = _read(p)
    assert res.packets[0].hardware is None
    assert any(missing_fields(w) == {"hardware.device": "<GPU model>"} for w in res.warnings)


def test_spec_parsing() -> None:
    assert parse_spec("k: 7168; m: 16; n: 4096; seed: 1212") == {"k": 7168, "m": 16, "n": 4096, "seed": 1212}
    assert parse_spec("size: big; n: -3") == {"n": -3}


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p.jsonl"
    assert main(["ingest", "kernelbot", str(FIX), "-o", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 7
    assert main(["ingest", "kernelbot", str(tmp_path / "none.json")]) == 1
    assert "none.json: could not be read" in capsys.readouterr().err
