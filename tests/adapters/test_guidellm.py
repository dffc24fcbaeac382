"""guidellm adapter: GuideLLM benchmark reports (0.3 and 0.5 layouts, JSON and YAML), damaged input.

A small fixture in tests/fixtures/guidellm (see the README there: written to GuideLLM 0.5's
report schema) and every report of ../shared/corpus/guidellm (skipped when absent), with the
numbers read out of each file by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kernel_evidence.adapters import AdapterOptions, AdapterWarning, get_adapter
from kernel_evidence.adapters.guidellm import ADAPTER
from kernel_evidence.adapters.guidellm._build import percentile_key
from kernel_evidence.errors import AdapterError
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rules import validate
from kernel_evidence.schema import load_schema

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "tests" / "fixtures" / "guidellm" / "benchmarks_v0.5_sweep.json"
CORPUS = ROOT.parent / "shared" / "corpus" / "guidellm"
REAL_JSON = CORPUS / "guidellm_v0.3-era_benchmarks_stripped_2025-07.json"
REAL_YAML = CORPUS / "guidellm_v0.3-era_benchmarks_stripped_2025-07.yaml"
REAL_TXT = CORPUS / "guidellm_v0.3-era_benchmarks_stripped_console_output_2025-07.txt"
T0 = "2026-11-22T00:00:00Z"
SCHEMA = jsonschema.Draft202012Validator(load_schema())


def read(*paths: Any, **extra: Any) -> tuple[list[EvidencePacket], list[str]]:
    result = ADAPTER.read([str(p) for p in paths], AdapterOptions(created_at=T0, extra=dict(extra)))
    for p in result.packets:
        data = p.to_dict()
        SCHEMA.validate(data)
        assert EvidencePacket.model_validate(data).compute_id() == p.packet_id
    return result.packets, result.warnings


def errors(p: EvidencePacket) -> set[str]:
    return {f.rule_id for f in validate(p).findings if f.severity == "error"}


def test_registered() -> None:
    assert get_adapter("guidellm") is ADAPTER


@pytest.mark.parametrize(
    ("key", "want"),
    [
        ("p001", "p0.1"),
        ("p01", "p1"),
        ("p05", "p5"),
        ("p10", "p10"),
        ("p50", "p50"),
        ("p99", "p99"),
        ("p999", "p99.9"),
        ("mean", None),
    ],
)
def test_percentile_keys(key: str, want: str | None) -> None:
    assert percentile_key(key) == want


def test_sweep_one_packet_per_benchmark_statuses_kept_apart() -> None:
    (conc, const), warnings = read(SWEEP)
    s = conc.timing.serving
    assert (s.completed, s.failed) == (40, 2)  # the 3 incomplete requests are neither
    assert conc.extensions["guidellm:raw"]["guidellm_version"] == "0.5.0"
    assert conc.extensions["guidellm:raw"]["report_layout"] == "0.4-0.6"
    assert conc.extensions["guidellm:raw"]["requests"] == {
        "successful": 40,
        "errored": 2,
        "incomplete": 3,
        "total": 45,
    }
    assert s.duration.model_dump() == {"value": 60.0, "unit": "s"}
    assert (s.total_input_tokens, s.total_output_tokens) == (20480, 10240)
    assert s.request_throughput.value == pytest.approx(40 / 60)
    assert s.output_throughput.value == pytest.approx(10240 / 60)
    assert s.total_token_throughput.value == pytest.approx(30720 / 60)
    # request_latency is in seconds in the report: ms in the packet
    assert (
        s.e2el.unit == "ms" and s.e2el.median == pytest.approx(4900.0) and s.e2el.max == pytest.approx(6800.0)
    )
    assert s.e2el.percentiles["p90"] == pytest.approx(5900.0) and s.e2el.n == 40
    assert (
        s.ttft.median == 120.0 and s.ttft.percentiles["p99"] == 390.0 and s.ttft.percentiles["p99.9"] == 399.0
    )
    assert s.itl.mean == 19.1 and s.tpot.median == 18.8
    assert conc.timing.stats == s.e2el and conc.timing.method == "serving_client"
    t = conc.task.serving
    assert (t.model, t.max_concurrency, t.request_rate, t.input_len, t.output_len, t.dataset) == (
        "meta-llama/Llama-3.1-8B-Instruct", 4, None, 512, 256, "synthetic",
    )  # fmt: skip
    assert t.settings["strategy"] == "concurrent" and t.settings["profile"] == "sweep"
    assert conc.measured_at == "2026-01-01T00:00:00Z" and conc.status == "passed"
    assert errors(conc) == {"KE101", "KE801"}  # the serving rules KE1001-KE1006 pass
    # every request of the constant-rate step errored: a failed packet, no statistics
    assert (
        const.status == "failed"
        and const.failure.message == "no request succeeded (10 errored, 0 incomplete)"
    )
    assert const.task.serving.request_rate == 2.5 and const.timing.serving.ttft is None
    assert errors(const) == {"KE101", "KE801"}
    assert any("3 request(s) incomplete" in w for w in warnings)
    hw = [w for w in warnings if isinstance(w, AdapterWarning)]
    assert len(hw) == 1 and hw[0].missing == {"hardware.device": "<GPU model>"}


def test_no_credentials_or_endpoint_in_any_packet() -> None:
    packets, _ = read(SWEEP)
    for p in packets:
        text = p.to_json().decode()
        assert "sk-do-not-copy" not in text and "inference.internal" not in text and "api_key" not in text
    assert packets[0].extensions["guidellm:raw"]["backend"]["type_"] == "openai_http"


def test_options_give_what_the_report_lacks() -> None:
    (p, _), warnings = read(SWEEP, device="NVIDIA H100 80GB HBM3", engine="vllm", engine_version="0.11.0")
    assert (p.hardware.vendor, p.hardware.device) == ("nvidia", "NVIDIA H100 80GB HBM3")
    assert p.hardware.device_id == "nvidia-h100-sxm5-80gb"
    assert (p.task.serving.engine.name, p.task.serving.engine.version) == ("vllm", "0.11.0")
    assert not any(isinstance(w, AdapterWarning) for w in warnings)
    assert errors(p) == {"KE101"}


def test_yaml_report_reads_as_json(tmp_path: Path) -> None:
    f = tmp_path / "benchmarks.yaml"
    f.write_text(yaml.safe_dump(json.loads(SWEEP.read_text())))
    (a, b), _ = read(f)
    (ja, jb), _ = read(SWEEP)
    assert a.timing == ja.timing and b.task == jb.task


# ------------------------------------------------------------------------------------------
# the real 0.3 report (../shared/corpus/guidellm), skipped when absent


@pytest.mark.skipif(not REAL_JSON.exists(), reason="corpus not present")
@pytest.mark.parametrize("path", [REAL_JSON, REAL_YAML])
def test_corpus_v03_report(path: Path) -> None:
    (p,), warnings = read(path)
    s = p.timing.serving
    assert (s.completed, s.failed) == (46, 0)
    assert p.extensions["guidellm:raw"]["requests"] == {
        "successful": 46,
        "errored": 0,
        "incomplete": 1,
        "total": 47,
    }
    assert s.duration.value == pytest.approx(29.997201442718506)
    assert (s.total_input_tokens, s.total_output_tokens) == (11827, 5888)
    assert s.request_throughput.value == pytest.approx(46 / 29.997201442718506)
    assert s.e2el.median == pytest.approx(642.4565315246582)  # 0.6424565 s
    assert s.e2el.percentiles["p99"] == pytest.approx(689.1846656799316)
    assert s.ttft.median == pytest.approx(16.38054847717285) and s.ttft.n == 46
    assert s.itl.mean == pytest.approx(4.941609043733832)
    assert s.tpot.median == pytest.approx(4.885653033852577)
    t = p.task.serving
    assert (t.model, t.max_concurrency, t.input_len, t.output_len) == ("example_model", 1, 256, 128)
    assert t.settings["strategy"] == "synchronous" and t.settings["profile"] == "sweep"
    assert p.measured_at == "2025-06-05T20:59:28Z"  # start_time 1749157168.18
    raw = p.extensions["guidellm:raw"]
    assert raw["report_layout"] == "0.2-0.3" and "guidellm_version" not in raw
    assert raw["id_"] == "97ece514-8717-412f-9dba-2b42bcd9866f"
    # GuideLLM's own rate distribution: a time-window mean that counts each prompt at its
    # first token, 1.7x the tokens over the duration; kept raw, not as the throughput
    assert raw["metrics"]["tokens_per_second"]["successful"]["mean"] == pytest.approx(992.6867, rel=1e-5)
    assert s.total_token_throughput.value == pytest.approx(17715 / 29.997201442718506)
    assert "example_target" not in p.to_json().decode()
    assert any("1 request(s) incomplete" in w for w in warnings)
    assert errors(p) == {"KE101", "KE801"}


@pytest.mark.skipif(not REAL_TXT.exists(), reason="corpus not present")
def test_corpus_console_table_is_refused_with_the_way_out() -> None:
    with pytest.raises(AdapterError) as exc:
        read(REAL_TXT)
    msg = str(exc.value)
    assert msg.startswith(str(REAL_TXT)) and "--output-path benchmarks.json" in msg and "\n" not in msg


# ------------------------------------------------------------------------------------------
# damaged input: one line naming the file


def _error(path: Path) -> str:
    with pytest.raises(AdapterError) as exc:
        read(path)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(str(path))
    return msg


def test_damaged_reports(tmp_path: Path) -> None:
    f = tmp_path / "b.json"
    f.write_text('{"benchmarks": [')
    assert "not valid JSON" in _error(f)
    f.write_text('{"traceEvents": []}')
    assert "no `benchmarks` array (got null)" in _error(f)
    f.write_text('{"benchmarks": []}')
    assert "`benchmarks` is empty" in _error(f)
    f.write_text('{"benchmarks": [{"type_": "generative_benchmark"}]}')
    assert "benchmarks[0] has no `metrics` object" in _error(f)
    f.write_text('{"benchmarks": [3]}')
    assert "benchmarks[0] is a number" in _error(f)
    y = tmp_path / "b.yaml"
    y.write_text("benchmarks: [\n  - {a: 1\n")
    assert "not valid YAML at line" in _error(y)


def test_values_of_the_wrong_type_are_left_out_not_guessed(tmp_path: Path) -> None:
    doc = json.loads(SWEEP.read_text())
    m = doc["benchmarks"][0]["metrics"]
    m["time_to_first_token_ms"]["successful"]["median"] = "120"
    m["time_to_first_token_ms"]["successful"]["mean"] = None
    m["request_totals"]["errored"] = -1
    f = tmp_path / "b.json"
    f.write_text(json.dumps(doc))
    (p, _), _ = read(f)
    assert p.timing.serving.ttft is None and p.timing.serving.failed is None
    assert p.timing.serving.completed == 40


def test_yaml_alias_bomb_is_refused_not_expanded(tmp_path: Path) -> None:
    lines = ["b0: &b0 {metrics: {}}"]
    for i in range(1, 6):
        prev = f"*b{i - 1}"
        lines.append(f"b{i}: &b{i} [{', '.join([prev] * 10)}]")
    lines.append("benchmarks: [" + ", ".join(["*b5"] * 10) + "]")
    f = tmp_path / "bomb.yaml"
    f.write_text("\n".join(lines) + "\n")
    msg = _error(f)
    assert "benchmarks[0] is an array" in msg or "more than the 10000" in msg
    flat = tmp_path / "many.yaml"
    flat.write_text("b: &b {metrics: {}}\nbenchmarks: [" + ", ".join(["*b"] * 10001) + "]\n")
    assert "10001 benchmarks, more than the 10000 one report can hold" in _error(flat)


def test_cli_writes_a_packet_per_benchmark_and_refuses_a_bad_file_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernel_evidence.cli import main
    from kernel_evidence.io import read_packets

    out = tmp_path / "p.jsonl"
    code = main(
        [
            "ingest",
            "guidellm",
            str(SWEEP),
            "-o",
            str(out),
            "--created-at",
            T0,
            "--opt",
            "device=NVIDIA H100 80GB HBM3",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    assert [p.status for p in read_packets(str(out))] == ["passed", "failed"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"benchmarks": 3}')
    code = main(["ingest", "guidellm", str(bad), "-o", str(tmp_path / "q.json")])
    err = capsys.readouterr().err
    assert code == 1 and "no `benchmarks` array (got a number)" in err and "Traceback" not in err
