"""The rules: every example fails with its own rule, valid examples pass, evidence must hold."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from kernel_evidence import validate
from kernel_evidence.rules import RULES
from kernel_evidence.rules._tables import baseline_entry, device_peaks, dtype_class, peak_flops_for
from kernel_evidence.strategies import example_packet, kernel_claim_packets, packets

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "packets"
VALID = sorted((EXAMPLES / "valid").glob("*.json"))
INVALID = sorted((EXAMPLES / "invalid").glob("*.json"))


def _load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_examples_pass(path: Path) -> None:
    report = validate(path.read_bytes())
    assert report.ok, [f.line() for f in report.errors]


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_examples_fail_with_their_rule(path: Path) -> None:
    rule_id = path.name.split("_", 1)[0]
    assert rule_id in RULES
    report = validate(path.read_bytes())
    assert not report.ok
    assert rule_id in {f.rule_id for f in report.errors}, [f.line() for f in report.findings]


def _claims(d) -> bool:
    return bool(d.get("timing", {}).get("speedup"))


PERF = [p for p in VALID if _claims(_load(p))]


def test_there_are_performance_examples_for_every_vendor() -> None:
    vendors = {_load(p)["hardware"]["vendor"] for p in PERF}
    assert {"nvidia", "amd", "google"} <= vendors


@pytest.mark.parametrize("path", PERF, ids=lambda p: p.name)
@pytest.mark.parametrize(
    "cut,rule",
    [(("replay",), "KE101"), (("replay", "command"), "KE101"), (("timing", "baseline"), "KE201")],
)
def test_deleting_replay_or_baseline_fails(path: Path, cut, rule) -> None:
    d = _load(path)
    obj = d
    for k in cut[:-1]:
        obj = obj[k]
    del obj[cut[-1]]
    d.pop("packet_id")
    report = validate(d)
    assert not report.ok
    assert rule in {f.rule_id for f in report.errors}


@settings(max_examples=80, deadline=None)
@given(kernel_claim_packets())
def test_generated_claims_fail_without_replay_or_baseline(packet) -> None:
    for cut in ("replay", "baseline"):
        d = packet.to_dict()
        d.pop("packet_id")
        if cut == "replay":
            d["replay"]["command"] = []
            want = "KE101"
        else:
            del d["timing"]["baseline"]
            want = "KE201"
        assert want in {f.rule_id for f in validate(d).errors}


@settings(max_examples=200, deadline=None)
@given(packets())
def test_generated_packets_are_valid(packet) -> None:
    report = validate(packet)
    assert report.ok, [f.line() for f in report.errors]
    assert report.grade.letter in "ABCD"


def _perf():
    return json.loads((EXAMPLES / "valid" / "nvidia_h100_gemm_vs_cublaslt.json").read_text())


def _ids(d) -> set[str]:
    d = copy.deepcopy(d)
    d.pop("packet_id", None)
    return {f.rule_id for f in validate(d).findings}


def test_reference_baseline_is_reported_as_reference_speedup() -> None:
    d = _perf()
    d["timing"]["baseline"]["provider"] = "torch.compile"
    report = validate({k: v for k, v in d.items() if k != "packet_id"})
    assert report.ok
    info = [f for f in report.findings if f.rule_id == "KE204"]
    assert info and info[0].severity == "info"
    assert "reference speedup, not a vendor speedup" in info[0].message
    assert report.grade.letter == "C"


def test_speedup_within_tolerance_passes_and_outside_fails() -> None:
    d = _perf()
    stats = d["timing"]
    true = stats["baseline"]["stats"]["median"] / stats["stats"]["median"]
    d["timing"]["speedup"]["value"] = true * 1.015
    assert "KE301" not in _ids(d)
    d["timing"]["speedup"]["value"] = true * 1.03
    assert "KE301" in _ids(d)
    d["timing"]["speedup"]["tolerance"] = 0.05
    assert "KE301" not in _ids(d)


def test_speedup_compares_across_time_units() -> None:
    d = _perf()
    b = d["timing"]["baseline"]["stats"]
    b = {"unit": "ms", "median": b["median"] / 1000}
    d["timing"]["baseline"]["stats"] = b
    assert "KE301" not in _ids(d)


def test_warm_cache_bandwidth_is_a_warning_not_an_error() -> None:
    d = json.loads((EXAMPLES / "invalid" / "KE602_bandwidth_above_device_peak.json").read_text())
    d["timing"]["cache_policy"] = "warm"
    ids = _ids(d)
    assert "KE602" not in ids and "KE603" in ids


def test_rtol_of_one_is_vacuous() -> None:
    d = _perf()
    d["validation"]["shapes"][0]["rtol"] = 1.0
    assert "KE701" in _ids(d)


def test_samples_must_agree_with_summary() -> None:
    d = _perf()
    d["timing"]["stats"]["median"] *= 1.1
    assert "KE503" in _ids(d)


def test_passed_packet_must_not_carry_failure() -> None:
    d = _perf()
    d["failure"] = {"failure_class": "timeout"}
    assert "KE402" in _ids(d)


def test_exact_messages() -> None:
    d = _perf()
    d["replay"]["command"] = []
    d["timing"]["baseline"]["provider"] = "ours"
    d.pop("packet_id")
    lines = {f.line() for f in validate(d).errors}
    assert "KE101 error at /replay/command: replay command is missing or empty" in lines
    assert (
        "KE202 error at /timing/baseline/provider: baseline provider `ours` is not a named library in the registry"
        in lines
    )


def _recorded() -> dict:
    """The H100 example as a 0.2 harness records it (both sides' conditions, the defences it
    ran): examples/packets/generate.py builds it for the invalid examples of those rules."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_generate_examples", EXAMPLES / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.finish(module.nvidia_gemm_recorded())


def test_grade_a_needs_everything_and_says_why_not() -> None:
    d = _recorded()
    assert validate(d).grade.letter == "A"
    del d["replay"]["container"]
    d["timing"]["stats"].pop("samples")
    d["timing"]["stats"].pop("n")
    d["timing"]["baseline"]["stats"].pop("samples")
    d.pop("packet_id")
    g = validate(d).grade
    assert g.letter == "B"
    assert "replay pins no container digest" in g.reasons
    assert "no raw samples or confidence interval" in g.reasons


def test_self_asserted_booleans_alone_never_earn_a() -> None:
    """same_session and interleaved true without the conditions that show it: B at best, and
    the reasons say what could not be checked."""
    d = _recorded()
    d.pop("packet_id")
    del d["timing"]["conditions"], d["timing"]["baseline"]["conditions"]
    assert d["timing"]["baseline"]["same_session"] is True and d["timing"]["interleaved"] is True
    g = validate(d).grade
    assert g.letter == "B"
    assert "the candidate's measurement conditions are not recorded" in g.reasons
    assert "the baseline's measurement conditions are not recorded" in g.reasons


@pytest.mark.parametrize(
    "check", ["fresh_inputs", "outputs_checked_after_timing", "timer_integrity", "unseen_inputs"]
)
def test_a_core_defence_skipped_or_missing_is_not_a(check: str) -> None:
    for how in ("skipped", "missing"):
        d = _recorded()
        d.pop("packet_id")
        if how == "missing":
            d["defences"] = [x for x in d["defences"] if x["check"] != check]
        else:
            next(x for x in d["defences"] if x["check"] == check)["outcome"] = "skipped"
        g = validate(d).grade
        assert g.letter == "B" and any(check in r for r in g.reasons), (how, g)


def test_suspicious_warnings_cap_at_c() -> None:
    d = _recorded()
    d.pop("packet_id")
    d["timing"]["conditions"]["warmup"] = 0  # KE508: the first call timed
    g = validate(d).grade
    assert g.letter == "C" and g.reasons[0] == "suspicious: KE508"


def test_failures_grade_d_and_invalid_grade_f() -> None:
    d = json.loads((EXAMPLES / "valid" / "failed_nan_inf.json").read_text())
    assert validate(d).grade.letter == "D"
    d = json.loads((EXAMPLES / "invalid" / "KE301_speedup_does_not_match_timings.json").read_text())
    assert validate(d).grade.letter == "F"


def test_baseline_registry_matching() -> None:
    assert baseline_entry("cublaslt").name == "cuBLASLt"
    assert baseline_entry("Composable-Kernel").name == "Composable Kernel"
    assert baseline_entry("flash_attn").name == "FlashAttention"
    assert baseline_entry("torch").kind == "reference"
    assert baseline_entry("my kernel v2") is None


def test_peak_table() -> None:
    h100 = device_peaks("NVIDIA H100 80GB HBM3")
    assert h100.key == "nvidia-h100-sxm5-80gb" and h100.bandwidth == 3.35e12
    assert device_peaks("NVIDIA H100 PCIe").key == "nvidia-h100-pcie-80gb"
    assert device_peaks("AMD Instinct MI300X").flops["bf16"] == pytest.approx(1307.4e12)
    assert device_peaks("TPU v5 lite").key == "google-tpu-v5e"
    assert device_peaks(None, "gfx942").bandwidth == 6000e9  # upper bound over MI300X/A/MI325X
    assert device_peaks("Some Unknown Accelerator") is None
    assert dtype_class("torch.bfloat16") == "bf16" and dtype_class("fp8_e4m3fnuz") == "fp8"
    assert peak_flops_for(h100, ("bf16",)) == pytest.approx(989.4e12)
    assert peak_flops_for(h100, ("fp32",)) == pytest.approx(494.7e12)  # tf32 admitted
    assert peak_flops_for(h100, ("weird",)) == pytest.approx(1978.9e12)


def test_every_rule_is_documented() -> None:
    for r in RULES.values():
        assert r.doc and r.hint and r.title, r.id
        assert r.severity in ("error", "warning", "info")


def test_example_packet_is_valid() -> None:
    assert validate(example_packet()).ok


def test_raw_columns_must_align_with_kernel_records_on_every_path() -> None:
    from kernel_evidence.models import EvidencePacket

    d = _perf()
    d.pop("packet_id")
    cap = d["profiler"][0]
    cap["raw_columns"] = {"gpu__time_duration.sum": [151.36], "sm__cycles_elapsed.avg": [1.0, 2.0]}
    cap["raw_units"] = {"gpu__time_duration.sum": "usecond"}
    model = EvidencePacket.model_validate(d).with_id()
    for packet_in in (model, model.to_dict(), model.to_json()):
        errors = list(validate(packet_in).errors)
        assert [f.rule_id for f in errors] == ["KE901"], errors
        assert errors[0].pointer == "/profiler/0/raw_columns/sm__cycles_elapsed.avg"
        assert errors[0].message == "column `sm__cycles_elapsed.avg` has 2 values for 1 kernel records"
    cap["raw_columns"]["sm__cycles_elapsed.avg"] = [1.0]
    assert validate(EvidencePacket.model_validate(d).with_id()).ok


def test_every_rule_is_in_the_spec() -> None:
    spec = (Path(__file__).resolve().parents[2] / "docs" / "spec.md").read_text(encoding="utf-8")
    missing = [rid for rid in RULES if f"| {rid} |" not in spec]
    assert not missing, f"docs/spec.md section 7 lacks {missing}"


def test_a_device_outside_the_table_is_checked_against_its_recorded_peaks() -> None:
    d = _perf()
    d["hardware"] = {
        "vendor": "other",
        "device": "Acme NPU 1",
        "clocks": {"locked": True},
        "peak_flop_rate": {"value": 100, "unit": "TFLOP/s"},
        "peak_bandwidth": {"value": 200, "unit": "GB/s"},
    }
    findings = {f.rule_id: f for f in validate({k: v for k, v in d.items() if k != "packet_id"}).findings}
    # 137 GFLOP in ~152 us is ~900 TFLOP/s; 100 MB in ~152 us is ~660 GB/s
    assert findings["KE601"].message.endswith("exceeds the recorded hardware.peak_flop_rate of 100 TFLOP/s")
    assert findings["KE602"].message.endswith("exceeds the recorded hardware.peak_bandwidth of 200 GB/s")
    assert "KE604" not in findings


def test_a_skipped_packet_carries_no_timing() -> None:
    d = example_packet().to_dict()
    d.pop("packet_id")
    d["status"] = "skipped"
    d["timing"].pop("speedup", None)
    d["timing"].pop("baseline", None)
    report = validate(d)
    assert [(f.rule_id, f.pointer) for f in report.errors] == [("KE408", "/timing")]
    d.pop("timing")
    assert "KE408" not in {f.rule_id for f in validate(d).findings}
    d["status"] = "passed"  # a passed run may carry timing
    d["timing"] = example_packet().to_dict()["timing"]
    assert "KE408" not in {f.rule_id for f in validate(d).findings}


@pytest.mark.parametrize(
    ("created_at", "rule"),
    [
        ("2026-02-30T12:00:00Z", "KE007"),
        ("2023-02-29T12:00:00Z", "KE007"),
        ("2026-04-31T00:00:00Z", "KE007"),
        ("2026-06-30T12:00:60Z", "KE007"),
        ("2026-13-01T00:00:00Z", "KE001"),
        ("2026-12-01T24:00:00Z", "KE001"),
        ("2026-12-01T12:60:00Z", "KE001"),
        ("2024-02-29T12:00:00Z", None),
        ("2000-02-29T12:00:00Z", None),
        ("2016-12-31T23:59:60Z", None),
        ("2026-01-31T23:59:59.999999999Z", None),
    ],
)
def test_created_at_is_a_real_calendar_time(created_at: str, rule: str | None) -> None:
    """Both paths (JSON bytes, dict) agree: fields out of range break the pattern (KE001),
    a day that its month lacks or a misplaced leap second is KE007."""
    from kernel_evidence.strategies import example_packet

    d = example_packet().to_dict()
    d.pop("packet_id", None)
    d["created_at"] = created_at
    for report in (validate(json.dumps(d).encode()), validate(d)):
        rules = {f.rule_id for f in report.errors}
        if rule is None:
            assert report.ok, report.findings
        else:
            assert rule in rules, report.findings


@pytest.mark.parametrize(
    ("replay", "money", "rule"),
    [
        ({"command": ["python bench.py | tee log"], "shell": True}, None, None),
        ({"command": ["python", "bench.py"], "shell": True}, None, "KE101"),
        (None, {"amount": 1.5, "currency": "USD"}, None),
        (None, {"amount": 1.5, "currency": "dollars"}, "KE001"),
        (None, {"amount": 1.5, "currency": "usd"}, "KE001"),
    ],
)
def test_shell_commands_are_one_string_and_currencies_are_iso_codes(replay, money, rule) -> None:  # type: ignore[no-untyped-def]
    from kernel_evidence.strategies import example_packet

    d = example_packet().to_dict()
    d.pop("packet_id", None)
    if replay is not None:
        d["replay"].update(replay)
    if money is not None:
        d["cost"] = {"money": money}
    for report in (validate(json.dumps(d).encode()), validate(d)):
        rules = {f.rule_id for f in report.errors}
        assert (rule in rules) if rule else report.ok, report.findings
