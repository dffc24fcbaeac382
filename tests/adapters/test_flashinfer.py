"""FlashInfer-Bench / SOL-ExecBench trace adapter (``flashinfer-trace``).

Small fixtures in tests/fixtures/flashinfer (see the README there: written to the documented
format) and every file of ../shared/corpus/flashinfer-trace (skipped when absent), with the
numbers read out of each file by hand.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kernel_evidence._ingest import ingest, ingest_json
from kernel_evidence.adapters import AdapterOptions, get_adapter
from kernel_evidence.adapters.flashinfer import ADAPTER
from kernel_evidence.errors import AdapterError
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rules import validate
from kernel_evidence.schema import load_schema

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "flashinfer"
DATASET = FIX / "dataset"
TRACE = DATASET / "traces" / "gemm" / "gemm_n8_k16.jsonl"
SOL = FIX / "sol_execbench_rocm.jsonl"
CORPUS = ROOT.parent / "shared" / "corpus" / "flashinfer-trace"
T0 = "2026-11-22T00:00:00Z"
SCHEMA = jsonschema.Draft202012Validator(load_schema())
#: errors a packet straight from a trace may carry: no replay command outside a dataset folder
PARTIAL = {"KE101"}


def read(*paths: Any, **extra: Any) -> tuple[list[EvidencePacket], list[str]]:
    res = ADAPTER.read([str(p) for p in paths], AdapterOptions(created_at=T0, extra=extra))
    for p in res.packets:  # every packet: JSON-Schema-shaped, and round-trips with its id
        data = json.loads(p.to_json())
        SCHEMA.validate(data)
        again = EvidencePacket.model_validate(data)
        assert again.packet_id == p.packet_id == again.compute_id()
    return res.packets, res.warnings


def errors(p: EvidencePacket) -> set[str]:
    return {f.rule_id for f in validate(p).findings if f.severity == "error"}


def by_workload(packets: list[EvidencePacket]) -> dict[str, EvidencePacket]:
    out = {}
    for p in packets:
        assert p.task is not None and p.task.shapes
        out[p.task.shapes[0].id] = p
    return out


# ------------------------------------------------------------------------------ registry


def test_registered_under_its_name_and_aliases() -> None:
    for name in ("flashinfer-trace", "flashinfer", "flashinfer-bench", "sol-execbench"):
        assert get_adapter(name) is ADAPTER


# ------------------------------------------------------------------------------ a dataset folder


def test_dataset_folder_one_packet_per_evaluated_line() -> None:
    packets, warnings = read(DATASET)
    assert len(packets) == 4
    assert [(p.status.value, p.failure.failure_class.value if p.failure else None) for p in packets] == [
        ("passed", None),
        ("failed", "incorrect_numerical"),
        ("failed", "runtime_error"),
        ("failed", "compile_error"),
    ]
    # the workloads/ file holds the same workloads without evaluations: not measurements
    assert any("4 workload-only lines (`evaluation` null) skipped" in w for w in warnings)
    for p in packets:
        assert errors(p) == set(), [(f.rule_id, f.message) for f in validate(p).findings]


def test_passed_line_timing_baseline_and_claim() -> None:
    p = read(TRACE)[0][0]
    t = p.timing
    assert t is not None and t.stats is not None and t.baseline is not None and t.speedup is not None
    assert (t.stats.unit, t.stats.mean, t.stats.n) == ("ms", 0.0125, 3)  # n: --num-trials in run.log
    assert (t.warmup, t.repeats) == (10, 50)
    b = t.baseline
    assert (b.provider, b.version, b.stats.mean if b.stats else None) == ("torch eager", "2.9.1+cu130", 0.025)
    assert b.call and "gemm_n8_k16.reference" in b.call
    assert (t.speedup.value, t.speedup.basis) == (2.0, "mean")
    assert t.conditions is not None and b.conditions is not None
    assert t.conditions.dims == {"N": 8, "K": 16, "M": 4} == b.conditions.dims
    assert t.conditions.dtypes == ["bfloat16"] and t.conditions.device == "NVIDIA H100 80GB HBM3"
    assert p.validation is not None and p.validation.shapes is not None
    s = p.validation.shapes[0]
    assert (s.passed, s.max_abs_error, s.max_rel_error) == (True, 0.0078125, 0.0039)
    assert p.hardware is not None and (p.hardware.vendor, p.hardware.device) == (
        "nvidia",
        "NVIDIA H100 80GB HBM3",
    )
    assert p.hardware.runtime is not None and (p.hardware.runtime.name, p.hardware.runtime.version) == (
        "CUDA",
        "13.0",
    )
    assert p.lineage is not None and p.lineage.candidate_id == "tiny_cuda"
    assert p.subject.name == "gemm_n8_k16" and "gemm_n8_k16.jsonl line 1" in (p.subject.description or "")


def test_definition_gives_operator_tensors_and_reference_digest() -> None:
    p = read(TRACE)[0][0]
    task = p.task
    assert task is not None and task.shapes is not None and task.reference is not None
    assert (task.operator, task.workload, task.dtypes) == ("gemm", "gemm_n8_k16", ["bfloat16"])
    tensors = {t.name: t.shape for t in task.shapes[0].tensors or []}
    assert tensors == {"A": [4, 16], "B": [8, 16], "C": [4, 8]}
    ref_src = json.loads((DATASET / "definitions" / "gemm" / "gemm_n8_k16.json").read_text())["reference"]
    assert task.reference.kind == "torch_eager"
    assert task.reference.source is not None
    assert task.reference.source.sha256 == "sha256:" + hashlib.sha256(ref_src.encode()).hexdigest()


def test_solution_sources_digested() -> None:
    packets = read(TRACE)[0]
    sol = json.loads((DATASET / "solutions" / "gemm" / "gemm_n8_k16" / "tiny_cuda.json").read_text())
    want = {s["path"]: "sha256:" + hashlib.sha256(s["content"].encode()).hexdigest() for s in sol["sources"]}
    c = packets[0].compile
    assert c is not None and c.artifacts is not None
    assert {a.name: a.sha256 for a in c.artifacts} == want
    assert (c.language, c.succeeded) == ("cuda", True)
    # the digest over all sources changes with any of them
    assert c.source_digest is not None and c.source_digest not in want.values()
    failed = packets[3].compile
    assert failed is not None and failed.succeeded is False and "identifier" in (failed.log_excerpt or "")
    assert failed.source_digest == c.source_digest


def test_replay_command_only_inside_a_dataset_folder(tmp_path: Path) -> None:
    p = read(TRACE)[0][0]
    assert p.replay is not None and p.replay.command is not None
    cmd = p.replay.command
    assert cmd[:3] == ["flashinfer-bench", "run", "--local"] and Path(cmd[3]).resolve() == DATASET.resolve()
    assert cmd[cmd.index("--iterations") + 1] == "50" and cmd[cmd.index("--num-trials") + 1] == "3"
    assert cmd[-4:] == ["--definitions", "gemm_n8_k16", "--solutions", "tiny_cuda"]
    assert p.replay.packages == {"cuda": "13.0", "torch": "2.9.1+cu130", "triton": "3.5.1"}
    # the same trace outside its dataset: no command, and the warning says why
    alone = tmp_path / "gemm_n8_k16.jsonl"
    shutil.copy(TRACE, alone)
    packets, warnings = read(alone)
    assert all(q.replay is None or q.replay.command is None for q in packets)
    assert any("not inside a FlashInfer-Trace dataset folder" in w for w in warnings)
    assert errors(packets[0]) == PARTIAL


def test_safetensors_inputs_kept_as_replay_inputs() -> None:
    p = by_workload(read(TRACE)[0])["0b9e1c52-6f1e-4a43-9d0c-5a4c3f9f0002"]
    assert p.replay is not None and p.replay.inputs is not None
    assert [(a.kind, a.name, a.path) for a in p.replay.inputs] == [
        ("dataset", "A:A", "blob/A_m64.safetensors")
    ]


def test_failed_lines_carry_no_claim_and_keep_their_log() -> None:
    packets = read(TRACE)[0]
    numerical, runtime, compile_ = packets[1], packets[2], packets[3]
    assert numerical.timing is None and numerical.validation is not None
    assert numerical.validation.verdict == "failed"
    shape = numerical.validation.shapes[0] if numerical.validation.shapes else None
    assert shape is not None and (shape.passed, shape.max_rel_error, shape.max_abs_error) == (
        False,
        1277.65,
        0.125,
    )
    assert runtime.validation is None and runtime.failure is not None
    assert "illegal memory access" in (runtime.failure.log_excerpt or "")
    assert compile_.failure is not None and compile_.failure.message == "evaluation status COMPILE_ERROR"


def test_naive_timestamps_need_a_zone() -> None:
    packets, warnings = read(TRACE)
    assert all(p.measured_at is None for p in packets)
    assert any("4 timestamps name no time zone" in w for w in warnings)
    packets, _ = read(TRACE, timezone="+08:00")
    assert [p.measured_at for p in packets] == [
        "2026-03-17T06:19:52.543776Z",
        "2026-03-17T06:19:53.000001Z",
        "2026-03-17T06:19:54.5Z",
        "2026-03-17T06:19:55Z",
    ]
    with pytest.raises(
        AdapterError, match=r"option `timezone`: expected UTC or an offset like \+08:00, got 'CET'"
    ):
        read(TRACE, timezone="CET")


def test_timing_method_from_log_or_option(tmp_path: Path) -> None:
    p = read(TRACE)[0][0]
    assert p.timing is not None and p.timing.method == "other"
    assert "does not name its timer" in (p.timing.notes or "")
    p = read(TRACE, method="cupti")[0][0]
    assert p.timing is not None and p.timing.method == "cupti"
    with pytest.raises(AdapterError, match="option `method`: expected one of"):
        read(TRACE, method="stopwatch")
    lines = TRACE.read_text().splitlines()
    first = json.loads(lines[0])
    first["evaluation"]["log"] = (
        "UserWarning: CUPTI is not installed. Falling back to CUDA events for benchmarking."
    )
    path = tmp_path / "cupti.jsonl"
    path.write_text("\n".join([lines[1], json.dumps(first)]) + "\n")
    packets = read(path)[0]
    passed = [q for q in packets if q.timing is not None]
    assert len(passed) == 1 and passed[0].timing is not None and passed[0].timing.method == "cuda_events"


# ------------------------------------------------------------------------------ SOL-ExecBench


def test_sol_execbench_statuses_tolerance_and_nan() -> None:
    packets, warnings = read(SOL)
    got = {
        k: (p.status.value, p.failure.failure_class.value if p.failure else None)
        for k, p in by_workload(packets).items()
    }
    assert got == {
        "linbwd-001": ("passed", None),
        "linbwd-002": ("passed", None),
        "linbwd-003": ("failed", "nan_inf"),  # INCORRECT_NUMERICAL with NaN outputs
        "linbwd-004": ("failed", "incorrect_shape"),
        "linbwd-005": ("failed", "incorrect_dtype"),
        "linbwd-006": ("failed", "timeout"),
        "linbwd-007": ("failed", "reward_hack"),
        "linbwd-008": ("error", "invalid_reference"),
    }
    w = by_workload(packets)
    first = w["linbwd-001"]
    assert first.task is not None and first.task.tolerance is not None
    assert (
        first.task.tolerance.atol,
        first.task.tolerance.rtol,
        first.task.tolerance.required_matched_ratio,
    ) == (
        0.01,
        0.01,
        0.99,
    )
    s = first.validation.shapes[0] if first.validation and first.validation.shapes else None
    assert s is not None and (s.atol, s.rtol, s.nan_seen, s.inf_seen) == (0.01, 0.01, False, False)
    nan = w["linbwd-003"].validation
    assert nan is not None and nan.shapes is not None
    assert (nan.shapes[0].nan_seen, nan.shapes[0].max_abs_error) == (True, None)
    assert "max_absolute_error nan" in (nan.shapes[0].message or "")
    assert w["linbwd-004"].validation is not None and w["linbwd-004"].validation.verdict == "failed"
    assert w["linbwd-006"].validation is None
    hw = first.hardware
    assert hw is not None and (hw.vendor, hw.device) == ("amd", "AMD Radeon Graphics")
    assert hw.runtime is not None and (hw.runtime.name, hw.runtime.version) == ("ROCm", "6.4.1")
    # zoned timestamps: measured_at in UTC (Z and +02:00 give the same instant)
    assert first.measured_at == w["linbwd-002"].measured_at == "2026-05-02T09:15:00Z"
    assert not any("time zone" in x for x in warnings)


def test_speedup_claim_checked_against_the_latencies() -> None:
    w = by_workload(read(SOL)[0])
    assert errors(w["linbwd-001"]) == PARTIAL  # 1.5 / 0.5 = 3.0 as claimed
    bad = w["linbwd-002"]  # claims 9.5 where 1.6 / 0.8 = 2.0
    assert bad.timing is not None and bad.timing.speedup is not None and bad.timing.speedup.value == 9.5
    assert errors(bad) == PARTIAL | {"KE301"}
    for key in ("linbwd-003", "linbwd-004", "linbwd-005", "linbwd-006", "linbwd-007", "linbwd-008"):
        assert w[key].timing is None
        assert errors(w[key]) == PARTIAL, key


def test_unprofiled_reference_gives_no_baseline(tmp_path: Path) -> None:
    line = json.loads(SOL.read_text().splitlines()[0])
    line["evaluation"]["performance"] = {
        "latency_ms": 0.5,
        "reference_latency_ms": 0.0,
        "speedup_factor": 0.0,
    }
    path = tmp_path / "noref.jsonl"
    path.write_text(json.dumps(line) + "\n")
    packets, warnings = read(path)
    t = packets[0].timing
    assert t is not None and t.stats is not None and t.stats.mean == 0.5
    assert t.baseline is None and t.speedup is None
    assert any("1 lines without a measured reference latency" in w for w in warnings)


# ------------------------------------------------------------------------------ damaged input


def test_bad_lines_skipped_with_their_line_numbers() -> None:
    packets, warnings = read(FIX / "damaged_lines.jsonl")
    assert len(packets) == 2
    name = str(FIX / "damaged_lines.jsonl")
    assert (
        f"{name}:2: skipped: not JSON (Input data was truncated); expected one trace object per line"
        in warnings
    )
    assert (
        f"{name}:4: skipped: Expected `float | null`, got `str` - at `evaluation.performance.latency_ms`"
        in warnings
    )
    assert [p.subject.description for p in packets] == [
        "solution agent_linbwd_v3 on workload linbwd-001 (damaged_lines.jsonl line 1)",
        "solution agent_linbwd_v3 on workload linbwd-002 (damaged_lines.jsonl line 5)",
    ]


def test_strict_fails_on_the_first_bad_line() -> None:
    with pytest.raises(AdapterError) as err:
        read(FIX / "damaged_lines.jsonl", strict=True)
    assert str(err.value) == (
        f"{FIX / 'damaged_lines.jsonl'}:2: not JSON (Input data was truncated); expected one trace object per line"
    )


def test_no_good_line_is_an_error_naming_the_first(tmp_path: Path) -> None:
    path = tmp_path / "junk.jsonl"
    path.write_text('{"definition": "d", "workload": {"axes": {"M": "big"}}}\n[1, 2]\nnot json\n')
    with pytest.raises(AdapterError) as err:
        read(path)
    assert str(err.value) == (
        f"{path}:1: Expected `int`, got `str` - at `workload.axes[...]` (3 bad lines, no good one)"
    )


def test_gzip_trace_reads_like_the_plain_one(tmp_path: Path) -> None:
    gz = tmp_path / "gemm_n8_k16.jsonl.gz"
    gz.write_bytes(gzip.compress(SOL.read_bytes()))
    plain = read(SOL)[0]
    packed = read(gz)[0]
    assert [p.status for p in packed] == [p.status for p in plain]
    assert [p.timing.stats.mean if p.timing and p.timing.stats else None for p in packed] == [
        p.timing.stats.mean if p.timing and p.timing.stats else None for p in plain
    ]


def test_damaged_gzip_is_one_line(tmp_path: Path) -> None:
    data = gzip.compress(SOL.read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(AdapterError) as err:
        read(cut)
    assert str(err.value) == (
        f"{cut}: gzip data ends before its end-of-stream marker (truncated?); expected a complete gzip-compressed trace"
    )
    flipped = tmp_path / "flipped.jsonl.gz"
    flipped.write_bytes(data[:20] + bytes(b ^ 0xFF for b in data[20:40]) + data[40:])
    with pytest.raises(AdapterError, match=r"flipped\.jsonl\.gz: damaged gzip data \(Error -3"):
        read(flipped)


def test_too_large_refused_before_reading(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match=r"larger than the 100 bytes cap for one input"):
        read(SOL, max_bytes=100)
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b" " * 10_000_000))  # about 10 KB compressed
    with pytest.raises(AdapterError, match=r"decompresses to more than the 20000 bytes cap"):
        read(bomb, max_bytes=20_000)


def test_unknown_status_skipped_with_a_warning(tmp_path: Path) -> None:
    lines = SOL.read_text().splitlines()
    odd = json.loads(lines[0])
    odd["evaluation"]["status"] = "OUT_OF_MEMORY"
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join([json.dumps(odd), lines[1]]) + "\n")
    packets, warnings = read(path)
    assert len(packets) == 1
    assert f"{path}: 1 lines with evaluation status `OUT_OF_MEMORY` skipped: not a known status" in warnings


def test_keys_missing_everywhere_still_read(tmp_path: Path) -> None:
    """Every key is optional: a line with only a definition and a status is an error packet."""
    path = tmp_path / "sparse.jsonl"
    path.write_text(json.dumps({"definition": "d", "evaluation": {"status": "RUNTIME_ERROR"}}) + "\n")
    (p,) = read(path)[0]
    assert (p.status.value, p.subject.name, p.hardware, p.timing) == ("failed", "d", None, None)
    assert p.task is not None and p.task.shapes is not None and p.task.shapes[0].id == "line 1"


def test_json_array_of_trace_objects(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in SOL.read_text().splitlines()[:2]]
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(lines, indent=2).replace("NaN", "null"))
    assert len(read(path)[0]) == 2


def test_workload_only_and_side_json_alone_are_errors() -> None:
    with pytest.raises(
        AdapterError, match=r"only workload lines \(4, `evaluation` null\): no evaluated trace line"
    ):
        read(DATASET / "workloads")
    with pytest.raises(AdapterError, match=r"definition/solution JSON only, which hold no measurements"):
        read(DATASET / "definitions" / "gemm" / "gemm_n8_k16.json")


# ------------------------------------------------------------------------------ through ingest


def test_ingest_json_ids_match_the_packets() -> None:
    result, encoded = ingest_json("flashinfer-trace", [str(TRACE)], created_at=T0)
    assert len(encoded) == 4
    for p, data in zip(result.packets, encoded, strict=True):
        assert json.loads(data)["packet_id"] == p.packet_id == p.compute_id()
    again = ingest("flashinfer", [str(TRACE)], created_at=T0)
    assert [p.packet_id for p in again.packets] == [p.packet_id for p in result.packets]


def test_benchmark_script_runs(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_flashinfer.py"), "--lines", "300", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "ratio" in r.stdout and "300 lines" in r.stdout


# ------------------------------------------------------------------------------ real files

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not present")


@needs_corpus
def test_corpus_a800_gemm_passed_and_incorrect() -> None:
    packets, warnings = read(CORPUS / "fib_a800_gemm_n128_k2048_gpt-5_passed_incorrect.jsonl")
    assert len(packets) == 25
    assert sum(p.status.value == "passed" for p in packets) == 22
    bad = [p for p in packets if p.status.value == "failed"]
    assert [p.failure.failure_class.value for p in bad if p.failure] == ["incorrect_numerical"] * 3
    assert all(p.timing is None for p in bad)  # performance null on INCORRECT_NUMERICAL lines
    w = by_workload(packets)
    first = w["6ba7c7de-dc5a-48d2-8ada-1382feb5ceac"]
    t = first.timing
    assert t is not None and t.stats is not None and t.baseline is not None and t.baseline.stats is not None
    assert (t.stats.mean, t.baseline.stats.mean) == (0.09216000139713287, 0.01706666685640812)
    assert t.speedup is not None and t.speedup.value == 0.18518518443662987
    assert t.method == "cuda_events"  # the log says CUPTI was missing
    assert t.conditions is not None and t.conditions.dims == {"M": 6}
    worst = w["b241cadb-ab4d-4113-8579-4eae2ba74a37"].validation
    assert worst is not None and worst.shapes is not None and worst.shapes[0].max_rel_error == 1797485.375
    assert first.hardware is not None and first.hardware.device == "NVIDIA A800-SXM4-80GB"
    assert first.replay is not None and first.replay.packages == {
        "cuda": "13.0",
        "torch": "2.9.1+cu130",
        "triton": "3.5.1",
    }
    assert any("25 timestamps name no time zone" in x for x in warnings)
    for p in packets:
        assert errors(p) == PARTIAL, (p.subject.description, errors(p))


@needs_corpus
def test_corpus_a800_rmsnorm_all_passed() -> None:
    packets, _ = read(CORPUS / "fib_a800_rmsnorm_h4096_gpt-5.2_passed.jsonl")
    assert len(packets) == 14 and all(p.status.value == "passed" for p in packets)
    w = by_workload(packets)
    big = w["f0f508c3-e880-4ec8-b8be-1062db313d36"].timing
    assert (
        big is not None
        and big.stats is not None
        and big.baseline is not None
        and big.baseline.stats is not None
    )
    assert (big.stats.mean, big.baseline.stats.mean) == (0.3532800078392029, 1.5909546216328938)
    assert big.conditions is not None and big.conditions.dims == {"batch_size": 14418}
    speedups = [p.timing.speedup.value for p in packets if p.timing and p.timing.speedup]
    assert len(speedups) == 14 and min(speedups) > 2.0
    for p in packets:
        assert errors(p) == PARTIAL


@needs_corpus
def test_corpus_workloads_only_is_not_a_measurement() -> None:
    path = CORPUS / "fib_workloads_only_gemm_n4096_k4096.jsonl"
    with pytest.raises(AdapterError) as err:
        read(path)
    assert str(err.value) == (
        f"{path}: only workload lines (43, `evaluation` null): no evaluated trace line, nothing was measured"
    )


@needs_corpus
@pytest.mark.parametrize(
    "name", ["fib_definition_gemm_n4096_k4096.json", "fib_solution_example_agent_solution.json"]
)
def test_corpus_definition_or_solution_alone_is_an_error(name: str) -> None:
    with pytest.raises(AdapterError, match=r"definition/solution JSON only, which hold no measurements"):
        read(CORPUS / name)


@needs_corpus
def test_corpus_definition_and_solution_join_a_trace(tmp_path: Path) -> None:
    """The corpus definition and solution given beside a trace of their definition."""
    line = json.loads(
        (CORPUS / "fib_a800_gemm_n128_k2048_gpt-5_passed_incorrect.jsonl").read_text().splitlines()[0]
    )
    line["definition"] = "gemm_n4096_k4096"
    line["solution"] = "example_agent_solution"
    line["workload"]["axes"] = {"M": 256}
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(line) + "\n")
    packets, warnings = read(
        trace,
        CORPUS / "fib_definition_gemm_n4096_k4096.json",
        CORPUS / "fib_solution_example_agent_solution.json",
    )
    p = packets[0]
    assert p.task is not None and p.task.operator == "gemm" and p.task.shapes is not None
    assert {t.name: t.shape for t in p.task.shapes[0].tensors or []} == {
        "A": [256, 4096],
        "B": [4096, 4096],
        "C": [256, 4096],
    }
    sol = json.loads((CORPUS / "fib_solution_example_agent_solution.json").read_text())
    assert p.compile is not None and p.compile.artifacts is not None
    assert [a.sha256 for a in p.compile.artifacts] == [
        "sha256:" + hashlib.sha256(s["content"].encode()).hexdigest() for s in sol["sources"]
    ]
    assert not any("not found" in w for w in warnings)


def test_axis_beyond_64_bits_is_a_bad_line(tmp_path: Path) -> None:
    line = json.loads(TRACE.read_text().splitlines()[0])
    line["workload"]["axes"]["M"] = 10**30
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(AdapterError) as err:
        read(path)
    assert str(err.value) == f"{path}:1: Expected `int` <= 9223372036854775807 - at `workload.axes[...]`"


# ------------------------------------------------------------------------------ the command line


def test_cli_ingest_writes_packets_and_says_what_they_lack(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from kernel_evidence.cli import main

    out = tmp_path / "packets.jsonl"
    code = main(["ingest", "flashinfer-trace", str(SOL), "-o", str(out)])
    _, err = capsys.readouterr()
    assert code == 0
    assert len(out.read_text().splitlines()) == 8
    assert "KE101" in err and "not inside a FlashInfer-Trace dataset folder" in err
    code = main(["ingest", "flashinfer-trace", str(DATASET / "workloads")])
    _, err = capsys.readouterr()
    assert code == 1 and "only workload lines (4, `evaluation` null)" in err
    code = main(["ingest", "flashinfer-trace", "--opt", "colour=red", str(SOL)])
    _, err = capsys.readouterr()
    assert code == 2 and "--opt `colour` is not an option of the flashinfer-trace adapter" in err


@needs_corpus
def test_corpus_folder_as_one_input() -> None:
    """The whole corpus folder: both traces, the workload-only file skipped with a warning,
    the definition and solution read (they name none of the traces' definitions)."""
    packets, warnings = read(CORPUS)
    assert len(packets) == 25 + 14
    assert any("43 workload-only lines (`evaluation` null) skipped" in w for w in warnings)


def test_lenient_peripheral_keys(tmp_path: Path) -> None:
    """An epoch timestamp, an embedded solution object and a log that is not text: read."""
    line = json.loads(SOL.read_text().splitlines()[0])
    line["evaluation"]["timestamp"] = 1777713300  # 2026-05-02T09:15:00Z
    line["evaluation"]["log"] = ["not", "text"]
    line["solution"] = {"name": "agent_linbwd_v3", "sources": []}
    path = tmp_path / "lenient.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (p,) = read(path)[0]
    assert p.measured_at == "2026-05-02T09:15:00Z"
    assert p.lineage is not None and p.lineage.candidate_id == "agent_linbwd_v3"


def test_2025_layout_device_and_log_file(tmp_path: Path) -> None:
    """flashinfer-bench before 2025-09-13 wrote `environment.device` (not `hardware`), and
    before 2025-10-11 `evaluation.log_file` (a path) instead of the log's text."""
    line = json.loads(TRACE.read_text().splitlines()[2])  # RUNTIME_ERROR
    env = line["evaluation"]["environment"]
    env["device"] = env.pop("hardware")
    del line["evaluation"]["log"]
    line["evaluation"]["log_file"] = "logs/tiny_cuda_wl3.log"
    del line["workload"]["uuid"]
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (p,) = read(path)[0]
    assert p.hardware is not None and (p.hardware.vendor, p.hardware.device) == (
        "nvidia",
        "NVIDIA H100 80GB HBM3",
    )
    assert p.failure is not None
    assert p.failure.message == "evaluation status RUNTIME_ERROR (log file logs/tiny_cuda_wl3.log)"
    assert p.task is not None and p.task.shapes is not None and p.task.shapes[0].id == "line 1"


def test_cpu_runs_are_cpu_packets(tmp_path: Path) -> None:
    line = json.loads(TRACE.read_text().splitlines()[0])
    line["evaluation"]["environment"]["hardware"] = "AMD EPYC 7763 64-Core Processor"
    path = tmp_path / "cpu.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (p,) = read(path)[0]
    assert p.hardware is not None and p.hardware.vendor == "cpu"
