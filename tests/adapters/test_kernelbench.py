"""KernelBench adapter: eval results joined with baseline timing files, baseline files alone.

Small fixtures in tests/fixtures/kernelbench (see the README there: written to the layout
KernelBench's code writes) and every file of ../shared/corpus/kernelbench (skipped when
absent), with the numbers read out of each file by hand.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kernel_evidence.adapters import AdapterOptions, get_adapter
from kernel_evidence.adapters.kernelbench import ADAPTER
from kernel_evidence.errors import AdapterError
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rules import validate
from kernel_evidence.schema import load_schema

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "kernelbench"
RUN = FIX / "runs" / "demo_run"
EVAL = RUN / "eval_results.json"
EAGER = FIX / "results" / "timing" / "H100_test" / "baseline_time_torch.json"
COMPILED = FIX / "results" / "timing" / "H100_test" / "baseline_time_torch_compile_inductor_max-autotune.json"
NOHW = FIX / "results" / "timing" / "L40S_nohw" / "baseline_time_torch.json"
CORPUS = ROOT.parent / "shared" / "corpus" / "kernelbench"
T0 = "2026-11-22T00:00:00Z"
SCHEMA = jsonschema.Draft202012Validator(load_schema())
H100 = "NVIDIA H100 80GB HBM3"


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


def rounded_flat(p: EvidencePacket) -> bool:
    """An entry whose min and max were rounded to the same 3-significant-digit value while
    its std was not (KernelBench's rounding, not a lie: KE506 allows for it)."""
    s = p.timing.stats if p.timing else None
    return s is not None and s.min is not None and s.min == s.max and (s.std or 0) > 0


def by_candidate(packets: list[EvidencePacket]) -> dict[str, EvidencePacket]:
    return {p.lineage.candidate_id: p for p in packets if p.lineage and p.lineage.candidate_id}


def test_registered_under_its_name_and_aliases() -> None:
    for name in ("kernelbench", "kernel-bench", "kbench"):
        assert get_adapter(name) is ADAPTER


# ------------------------------------------------------------------------------ eval results


def test_one_packet_per_sample_with_its_failure_class() -> None:
    packets, _ = read(EVAL, EAGER)
    got = {
        k: (p.status.value, p.failure.failure_class.value if p.failure else None)
        for k, p in by_candidate(packets).items()
    }
    assert got == {
        "level_1_problem_1_sample_0": ("passed", None),
        "level_1_problem_1_sample_1": ("failed", "compile_error"),
        "level_1_problem_2_sample_0": ("failed", "incorrect_numerical"),
        "level_1_problem_3_sample_0": ("failed", "runtime_error"),
        "level_1_problem_4_sample_0": ("passed", None),
        "level_1_problem_5_sample_0": ("error", "infra_error"),
        "level_1_problem_7_sample_0": ("failed", "incorrect_shape"),
        "level_1_problem_8_sample_0": ("passed", None),
    }
    for p in packets:  # only the replay command is missing (the file does not record it)
        assert errors(p) == {"KE101"}, (p.lineage, [(f.rule_id, f.message) for f in validate(p).findings])


def test_timed_sample_joined_with_the_eager_baseline() -> None:
    p = by_candidate(read(EVAL, EAGER)[0])["level_1_problem_1_sample_0"]
    assert p.subject.name == "1_Square_matrix_multiplication_" and p.lineage is not None
    assert p.lineage.run_id == "demo_run"
    t = p.timing
    assert t is not None and t.stats is not None and t.baseline is not None and t.baseline.stats is not None
    s = t.stats
    assert (s.unit, s.mean, s.std, s.min, s.max, s.n) == ("ms", 1.33, 0.0121, 1.31, 1.4, 100)
    b = t.baseline
    assert (b.provider, b.same_session, b.stats.mean, b.stats.n) == ("torch eager", False, 2.66, 100)
    assert b.call is not None and b.call.startswith("1_Square_matrix_multiplication_.py Model.forward (torch")
    assert t.speedup is None  # eval_results.json claims no speedup
    assert t.method == "cuda_events" and "milliseconds" in (t.notes or "")
    assert (
        b.conditions is not None
        and b.conditions.device == H100
        and b.conditions.shape_id == t.shape_id == "level1/1"
    )
    assert p.hardware is not None and (p.hardware.vendor, p.hardware.device) == ("nvidia", H100)
    assert p.validation is not None and p.validation.verdict == "passed"
    assert p.validation.shapes is not None and p.validation.shapes[0].message == "correctness trials (5 / 5)"


def test_compiled_baseline_picked_by_option() -> None:
    packets, warnings = read(EVAL, EAGER, COMPILED, baseline="torch_compile_inductor_max-autotune")
    b = by_candidate(packets)["level_1_problem_1_sample_0"].timing
    assert b is not None and b.baseline is not None and b.baseline.stats is not None
    assert (b.baseline.provider, b.baseline.stats.mean) == ("torch.compile", 2.41)
    assert b.baseline.settings == {"backend": "inductor", "mode": "max-autotune"}
    # without the option, eager is joined and the choice is said
    packets, warnings = read(EVAL, EAGER, COMPILED)
    first = by_candidate(packets)["level_1_problem_1_sample_0"].timing
    assert first is not None and first.baseline is not None and first.baseline.provider == "torch eager"
    assert any(w.startswith(f"{EVAL}: 2 baseline files given: joined with {EAGER}") for w in warnings)
    with pytest.raises(
        AdapterError, match=r"option `baseline`: no baseline file of config `torch_compile_cudagraphs`"
    ):
        read(EVAL, EAGER, baseline="torch_compile_cudagraphs")


def test_not_measured_runtime_and_untimed_baseline_entry() -> None:
    packets, warnings = read(EVAL, EAGER)
    w = by_candidate(packets)
    assert w["level_1_problem_4_sample_0"].timing is None  # runtime -1.0
    assert any("1 correct samples without a runtime (-1: not measured): no timing" in x for x in warnings)
    assert all(w[k].timing is None for k in w if w[k].status.value != "passed")


def test_same_evaluation_reference_and_excessive_speedup_flag() -> None:
    packets, warnings = read(EVAL, EAGER)
    t = by_candidate(packets)["level_1_problem_8_sample_0"].timing
    assert t is not None and t.baseline is not None and t.baseline.stats is not None and t.stats is not None
    # ref_runtime_stats of the same evaluation win over the baseline file (0.25 ms there)
    assert (t.baseline.same_session, t.baseline.stats.mean, t.stats.mean) == (True, 0.251, 0.0101)
    assert any("1 samples KernelBench itself flagged `excessive_speedup`" in x for x in warnings)
    p = by_candidate(packets)["level_1_problem_8_sample_0"]
    assert p.extensions is not None
    assert p.extensions["kernelbench:raw"]["metadata"]["excessive_speedup"] is True  # unwrapped from eval_0


def test_failures_keep_their_messages() -> None:
    w = by_candidate(read(EVAL, EAGER)[0])
    comp = w["level_1_problem_1_sample_1"]
    assert comp.compile is not None and comp.compile.succeeded is False
    assert "nvcc exited with code 1" in (comp.compile.log_excerpt or "")
    num = w["level_1_problem_2_sample_0"].validation
    assert num is not None and num.shapes is not None
    assert (num.verdict, num.shapes[0].max_abs_error) == ("failed", 0.0625)  # the larger max_difference
    assert "(0 / 5)" in (num.shapes[0].message or "")
    rt = w["level_1_problem_3_sample_0"].failure
    assert rt is not None and rt.message == "CUDA error: an illegal memory access was encountered"
    assert "Traceback" in (rt.log_excerpt or "")
    infra = w["level_1_problem_5_sample_0"]
    assert (
        infra.failure is not None and infra.failure.message == "Future was None - evaluation did not complete"
    )
    shape = w["level_1_problem_7_sample_0"].validation
    assert shape is not None and shape.verdict == "failed"


def test_kernel_sources_digested() -> None:
    w = by_candidate(read(EVAL)[0])
    for key in ("level_1_problem_1_sample_0", "level_1_problem_1_sample_1"):
        c = w[key].compile
        body = (RUN / f"{key}_kernel.py").read_bytes()
        assert c is not None and c.source_digest == "sha256:" + hashlib.sha256(body).hexdigest()
        assert (
            c.artifacts is not None
            and c.artifacts[0].size is not None
            and c.artifacts[0].size.value == len(body)
        )


def test_level_unknown_is_not_joined(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    shutil.copy(EVAL, run / "eval_results.json")  # no kernel files: the level is unknown
    packets, warnings = read(run / "eval_results.json", EAGER)
    t = by_candidate(packets)["problem_1_sample_0"].timing
    assert t is not None and t.baseline is None
    assert any("the KernelBench level is not known" in x for x in warnings)
    packets, _ = read(run / "eval_results.json", EAGER, level=1)
    t = by_candidate(packets)["level_1_problem_1_sample_0"].timing
    assert (
        t is not None
        and t.baseline is not None
        and t.baseline.stats is not None
        and t.baseline.stats.mean == 2.66
    )


def test_older_one_object_per_problem() -> None:
    (p,) = read(FIX / "runs" / "old_run" / "eval_results.json")[0]
    assert p.status.value == "passed" and p.timing is not None and p.timing.stats is not None
    assert (p.timing.stats.mean, p.timing.stats.n) == (0.512, None)  # runtime only, no stats
    assert p.hardware is not None and p.hardware.device == "NVIDIA L40S"


def test_baseline_of_the_samples_device_preferred() -> None:
    """A whole checkout (several results/timing/<HW>/ folders): the samples ran on an H100,
    so the H100 eager file is joined, not the L40S or MI300X one given first."""
    rocm = FIX / "results" / "timing" / "MI300X_rocm" / "baseline_time_torch.json"
    packets, warnings = read(EVAL, NOHW, rocm, EAGER)
    t = by_candidate(packets)["level_1_problem_1_sample_0"].timing
    assert t is not None and t.baseline is not None and t.baseline.stats is not None
    assert t.baseline.stats.mean == 2.66
    assert any(f"joined with {EAGER} (`torch`, the samples' device)" in w for w in warnings)
    assert not any("different devices" in w for w in warnings)


def test_baseline_on_another_device_is_said() -> None:
    _, warnings = read(EVAL, NOHW)
    assert any("baseline measured on `L40S_nohw`, samples on `NVIDIA H100 80GB HBM3`" in w for w in warnings)


# ------------------------------------------------------------------------------ baseline files alone


def test_baseline_file_alone_one_packet_per_problem() -> None:
    packets, warnings = read(EAGER)
    assert len(packets) == 7  # 6 timed level-1 entries (one is null) + 1 level-2 entry
    assert any("1 entries without timing statistics skipped (first: level1/7_Matmul" in w for w in warnings)
    p = next(q for q in packets if q.subject.name == "1_Conv2D_ReLU_BiasAdd")
    assert p.timing is not None and p.timing.stats is not None
    assert (p.timing.stats.mean, p.timing.stats.std, p.timing.stats.max) == (4.35, 0.0172, 4.39)
    assert p.lineage is not None and p.lineage.relation == "baseline"
    assert p.task is not None and p.task.reference is not None and p.task.reference.kind == "torch_eager"
    assert errors(p) == {"KE101"}


def test_device_from_the_folder_name_with_a_warning() -> None:
    packets, warnings = read(NOHW)
    assert {p.hardware.device for p in packets if p.hardware} == {"L40S_nohw"}
    assert any("the device is taken from the folder name `L40S_nohw`" in w for w in warnings)
    packets, warnings = read(NOHW, device="NVIDIA L40S")
    assert {p.hardware.device for p in packets if p.hardware} == {"NVIDIA L40S"}
    assert not any("folder name" in w for w in warnings)


# ------------------------------------------------------------------------------ damaged input


def test_bad_inputs_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "eval_results.json"
    bad.write_text('{"1": [{"compiled": true,')
    with pytest.raises(AdapterError) as err:
        read(bad)
    assert str(err.value) == (
        f"{bad}: not JSON (Input data was truncated); expected a KernelBench eval_results.json or baseline_time_*.json"
    )
    other = tmp_path / "other.json"
    other.write_text('{"name": "x"}')
    with pytest.raises(
        AdapterError, match=r"other\.json: a JSON document of another kind; expected a KernelBench"
    ):
        read(other)
    gz = tmp_path / "baseline_time_torch.json.gz"
    gz.write_bytes(gzip.compress(EAGER.read_bytes())[:-12])
    with pytest.raises(AdapterError, match=r"gzip data ends before its end-of-stream marker"):
        read(gz)
    with pytest.raises(AdapterError, match=r"larger than the 10 bytes cap"):
        read(EAGER, max_bytes=10)


def test_wrong_types_inside_entries_are_skipped_or_unmeasured(tmp_path: Path) -> None:
    doc = {
        "1": [{"sample_id": 0, "compiled": "yes", "correctness": True, "runtime": "fast", "metadata": []}, 7]
    }
    path = tmp_path / "runs" / "r" / "eval_results.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    packets, warnings = read(path)
    assert len(packets) == 1 and packets[0].status.value == "passed" and packets[0].timing is None
    assert any("entry 1[1] skipped: expected a sample object, got int" in w for w in warnings)


def test_gzip_baseline(tmp_path: Path) -> None:
    gz = tmp_path / "baseline_time_torch.json.gz"
    gz.write_bytes(gzip.compress(EAGER.read_bytes()))
    assert len(read(gz)[0]) == 7


# ------------------------------------------------------------------------------ real files

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not present")


@needs_corpus
def test_corpus_h100_modal_eager_baseline() -> None:
    packets, warnings = read(CORPUS / "baseline_time_torch_H100_Modal.json")
    assert len(packets) == 250  # level1 100, level2 100, level3 50
    assert not warnings
    names = {p.subject.name: p for p in packets}
    first = names["1_Square_matrix_multiplication_"].timing
    assert first is not None and first.stats is not None
    s = first.stats
    assert (s.mean, s.std, s.min, s.max, s.n) == (2.66, 0.0199, 2.65, 2.86, 100)
    last = names["50_ReLUSelfAttention"].timing
    assert last is not None and last.stats is not None and last.stats.mean == 5.02
    assert {p.hardware.device for p in packets if p.hardware} == {H100}
    assert {p.hardware.device_id for p in packets if p.hardware} == {"nvidia-h100-sxm5-80gb"}
    for p in packets:
        assert errors(p) == {"KE101"}
    # KernelBench rounds to 3 significant digits: 7 entries have min == max but a real std
    flat = sorted(p.subject.name for p in packets if rounded_flat(p))
    assert flat == [
        "18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp",
        "23_Conv3d_GroupNorm_Mean",
        "63_Gemm_ReLU_Divide",
        "65_Conv2d_AvgPool_Sigmoid_Sum",
        "68_conv_transposed_3D__square_input__asymmetric_kernel",
        "70_Gemm_Sigmoid_Scaling_ResidualAdd",
        "90_Conv3d_LeakyReLU_Sum_Clamp_GELU",
    ]


@needs_corpus
def test_corpus_rtx6000ada_without_hardware_keys() -> None:
    packets, warnings = read(CORPUS / "baseline_time_torch_RTX6000Ada_tritonforge_no_hw_keys.json")
    assert len(packets) == 250
    assert [p.subject.name for p in packets if rounded_flat(p)] == ["50_ReLUSelfAttention"]
    assert not any("KE506" in errors(p) for p in packets)
    names = {p.subject.name: p for p in packets}
    t = names["1_Square_matrix_multiplication_"].timing
    assert t is not None and t.stats is not None and (t.stats.mean, t.stats.max) == (0.382, 0.443)
    # no hardware key and the file is not in a results/timing/<HW>/ folder: the device is unknown
    assert all(p.hardware is None for p in packets)
    assert any("entries without `hardware` and no results/timing/<HW>/ folder" in w for w in warnings)
    assert errors(packets[0]) == {"KE101", "KE801"}
    # in its KernelBench folder, the folder names the device (with a warning)
    packets, warnings = read(
        CORPUS / "baseline_time_torch_RTX6000Ada_tritonforge_no_hw_keys.json",
        device="NVIDIA RTX 6000 Ada Generation",
    )
    assert errors(packets[0]) == {"KE101"}


@needs_corpus
def test_corpus_rtx6000ada_in_its_timing_folder(tmp_path: Path) -> None:
    folder = tmp_path / "results" / "timing" / "RTX6000Ada"
    folder.mkdir(parents=True)
    path = folder / "baseline_time_torch.json"
    path.symlink_to(CORPUS / "baseline_time_torch_RTX6000Ada_tritonforge_no_hw_keys.json")
    packets, warnings = read(path)
    assert {p.hardware.device for p in packets if p.hardware} == {"RTX6000Ada"}
    assert any("the device is taken from the folder name `RTX6000Ada`" in w for w in warnings)


def test_bare_nan_written_by_python_json(tmp_path: Path) -> None:
    """KernelBench writes with json.dump: a NaN runtime is a bare `NaN`, read as not measured."""
    path = tmp_path / "runs" / "r" / "eval_results.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"1": [{"sample_id": 0, "compiled": true, "correctness": true, "metadata": {"x": NaN},'
        ' "runtime": NaN, "runtime_stats": {"mean": NaN, "std": Infinity}}]}'
    )
    (p,) = read(path)[0]
    assert (p.status.value, p.timing) == ("passed", None)
    assert p.extensions is not None and p.extensions["kernelbench:raw"]["metadata"] == {"x": "NaN"}


def test_huge_counts_are_not_counts(tmp_path: Path) -> None:
    doc = json.loads(EAGER.read_text())
    doc["level1"]["1_Square_matrix_multiplication_.py"]["num_trials"] = 10**30
    path = tmp_path / "baseline_time_torch.json"
    path.write_text(json.dumps(doc))
    p = next(q for q in read(path)[0] if q.subject.name == "1_Square_matrix_multiplication_")
    assert p.timing is not None and p.timing.stats is not None and p.timing.stats.n is None


def test_cli_ingest_eval_results_with_baseline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from kernel_evidence.cli import main

    out = tmp_path / "packets.jsonl"
    code = main(["ingest", "kernelbench", str(EVAL), str(EAGER), "-o", str(out)])
    _, err = capsys.readouterr()
    assert code == 0 and len(out.read_text().splitlines()) == 8
    assert "KE101" in err
    code = main(["ingest", "kernelbench", str(FIX / "README.md")])
    _, err = capsys.readouterr()
    assert code == 1 and "expected a KernelBench eval_results.json or baseline_time_*.json" in err


def test_rocm_fork_generic_hardware_and_error_entries() -> None:
    """The ROCm fork (KBenchEval generate_baseline_time_amd.py): `hardware: "AMD GPU"` names
    no model, so the `MI300X_rocm` folder does; `{"error": ...}` entries are untimed."""
    path = FIX / "results" / "timing" / "MI300X_rocm" / "baseline_time_torch.json"
    packets, warnings = read(path)
    assert len(packets) == 3
    assert {(p.hardware.vendor, p.hardware.device, p.hardware.device_id) for p in packets if p.hardware} == {
        ("amd", "MI300X_rocm", "amd-mi300x")
    }
    assert (
        f"{path}: `hardware: AMD GPU` names no device model: the device is taken from the folder name `MI300X_rocm` (results/timing/<HW>/); pass the `device` option to state it"
        in warnings
    )
    assert any(
        "2 entries without timing statistics skipped (first: level1/4_Matrix_vector" in w for w in warnings
    )
