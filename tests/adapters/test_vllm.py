"""vLLM / SGLang serving-benchmark adapter.

Real files from ../shared/corpus/vllm (numbers below were read out of each file by hand),
plus synthetic fixtures in tests/fixtures/vllm (made by make_fixtures.py there) for what the
corpus lacks: old key names, `request_goodput:`, sweep summaries (JSON, and the CSV pandas
writes for `vllm bench sweep`), SGLang JSONL with per-request arrays and an `Infinity` rate,
NaN values, all-failed runs with error texts, goodput SLOs, and broken inputs.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel_evidence.adapters import Adapter, AdapterOptions, get_adapter
from kernel_evidence.adapters.vllm import ADAPTER
from kernel_evidence.adapters.vllm._runs import parse_runs
from kernel_evidence.adapters.vllm._stats import _summarize_python, have_numpy, summarize
from kernel_evidence.errors import AdapterError
from kernel_evidence.models import EvidencePacket, ServingMetrics, Stats

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "vllm"
T0 = "2026-11-22T00:00:00Z"
#: findings a serving packet straight from a result file is expected to carry: the file
#: cannot know the replay command (KE101) and often not the hardware (KE801)
PARTIAL_RULES = {"KE101", "KE801"}


def read(*paths: Any, **extra: Any) -> tuple[list[EvidencePacket], list[str]]:
    res = ADAPTER.read([str(p) for p in paths], AdapterOptions(created_at=T0, extra=extra))
    for p in res.packets:  # every packet round-trips through the models and JSON
        again = EvidencePacket.model_validate(json.loads(p.to_json()))
        assert again.packet_id == p.packet_id == again.compute_id()
    return res.packets, res.warnings


def one(path: Any, **extra: Any) -> tuple[EvidencePacket, list[str]]:
    packets, warnings = read(path, **extra)
    assert len(packets) == 1
    return packets[0], warnings


def serving(p: EvidencePacket) -> ServingMetrics:
    assert p.timing is not None and p.timing.serving is not None
    return p.timing.serving


def stat(s: Stats | None) -> Stats:
    assert s is not None
    return s


def raw(p: EvidencePacket) -> dict[str, Any]:
    assert p.extensions is not None
    return p.extensions["vllm:raw"]


def settings_of(p: EvidencePacket) -> dict[str, Any]:
    assert p.task is not None and p.task.serving is not None
    return p.task.serving.settings or {}


def errors_only_partial(p: EvidencePacket) -> None:
    from kernel_evidence.rules import validate

    report = validate(p)
    bad = {f.rule_id for f in report.findings if f.severity == "error"} - PARTIAL_RULES
    assert not bad, [(f.rule_id, f.pointer, f.message) for f in report.findings if f.rule_id in bad]


# ------------------------------------------------------------------------------ registry
def test_registered_under_name_and_aliases() -> None:
    assert isinstance(ADAPTER, Adapter)
    for name in ("vllm", "sglang", "vllm-bench"):
        assert get_adapter(name) is ADAPTER


def test_mapping_table_names_real_packet_fields() -> None:
    """Every [fields."a.b.c"] path in adapters/vllm.toml exists in the packet models."""
    from pydantic import BaseModel

    from kernel_evidence._resources import load_toml

    table = load_toml("vllm.toml")
    assert table["schema"] == 1 and table["tool"] == "vllm" and table["display_name"] and table["versions"]

    def resolve(model: type[BaseModel], parts: list[str]) -> None:
        field = model.model_fields[parts[0]]
        if len(parts) == 1:
            return
        ann = field.annotation
        inner = [
            a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        assert inner, parts
        resolve(inner[0], parts[1:])

    for path in table["fields"]:
        resolve(EvidencePacket, path.split("."))
    for metric in table["stats"]:
        assert metric == "latency" or metric in ServingMetrics.model_fields


# ------------------------------------------------------------------------------ corpus
def test_corpus_every_file(corpus: Path) -> None:
    """Every real file becomes packets whose only validation errors are the 'partial' ones."""
    files = sorted(p for p in (corpus / "vllm").iterdir() if p.suffix in (".json", ".jsonl"))
    assert len(files) >= 8
    for f in files:
        packets, _ = read(f)
        assert packets
        for p in packets:
            assert p.subject.kind == "serving"
            errors_only_partial(p)


def test_corpus_ascend_serve_without_results(corpus: Path) -> None:
    p, warnings = one(
        corpus / "vllm" / "serve_llama3-8b_tp1_ascend-npu_qps-inf_vllm-ascend-nightly_2025-02.json"
    )
    assert p.status.value == "passed"
    assert p.task and p.task.serving
    assert p.task.serving.model == "/root/.cache/modelscope/hub/LLM-Research/Meta-Llama-3-8B-Instruct"
    assert p.task.serving.request_rate == "inf" and p.task.serving.num_prompts == 200
    assert p.task.serving.max_concurrency is None and p.task.serving.tensor_parallel_size is None
    s = serving(p)
    assert s.completed is None and s.duration is None and s.request_throughput is None  # not in this file
    ttft = stat(s.ttft)
    assert (ttft.unit, ttft.mean, ttft.median, ttft.std) == (
        "ms",
        10484.147438658401,
        12176.050367765129,
        3470.0614134318835,
    )
    assert ttft.percentiles == {"p99": 13925.454098824412}
    assert stat(s.tpot).mean == 228.6619702709455 and stat(s.itl).percentiles == {"p99": 172.05664217472076}
    assert s.e2el is None and p.timing and p.timing.stats is None  # e2el is not saved by default
    assert p.hardware is None
    assert settings_of(p)["best_of"] == 1 and settings_of(p)["burstiness"] == 1.0
    assert any("not recorded in the file: engine, tensor_parallel_size, hardware" in w for w in warnings)


def test_corpus_latency(corpus: Path) -> None:
    p, warnings = one(corpus / "vllm" / "latency_llama3-8b_tp1_ascend-npu_vllm-ascend-nightly_2025-02.json")
    assert p.timing and p.timing.method == "host_clock" and p.timing.serving is None
    s = stat(p.timing.stats)
    assert s.unit == "ms" and s.n == 15 and s.samples is not None and len(s.samples) == 15
    assert math.isclose(s.mean or 0, 7.1091228867570555 * 1000, rel_tol=1e-12)
    assert math.isclose(s.median, 7.112779660150409 * 1000, rel_tol=1e-12)
    assert math.isclose((s.percentiles or {})["p99"], 7.868931790143251 * 1000, rel_tol=1e-12)
    assert s.min == pytest.approx(6770.311631262302) and s.max == pytest.approx(7935.083007439971)
    assert not any("recomputed" in w for w in warnings)  # the file's percentiles are numpy's
    assert p.task and p.task.serving is None  # no model in the file
    assert any("the model is not recorded in the file" in w for w in warnings)


def test_corpus_throughput(corpus: Path) -> None:
    p, _ = one(corpus / "vllm" / "throughput_llama3-8b_tp1_ascend-npu_vllm-ascend-nightly_2025-02.json")
    s = serving(p)
    assert p.timing and p.timing.method == "host_clock"
    assert (
        s.completed == 200 and s.duration and s.duration.value == 71.89681227505207 and s.duration.unit == "s"
    )
    assert s.request_throughput and s.request_throughput.value == 2.781764499305893
    assert s.total_token_throughput and s.total_token_throughput.value == 1198.996134490826
    assert s.output_throughput is None  # tokens_per_second counts prompt + output tokens
    assert raw(p)["values"]["total_num_tokens"] == 86204


def test_corpus_metadata_jsonl(corpus: Path) -> None:
    packets, warnings = read(corpus / "vllm" / "serve_llama3.2-3b_4xL40S_llm-d_metadata_vllm2025-05.jsonl")
    assert len(packets) == 9
    first, third, last = packets[0], packets[2], packets[-1]
    assert first.task and first.task.serving and first.hardware
    t = first.task.serving
    assert (t.model, t.num_prompts, t.input_len, t.output_len, t.request_rate) == (
        "meta-llama/Llama-3.2-3B-Instruct", 300, 1000, 500, 10.0
    )  # fmt: skip
    assert (first.hardware.vendor, first.hardware.device, first.hardware.count) == (
        "nvidia",
        "NVIDIA_L40S",
        4,
    )
    assert settings_of(first)["deployment"] == "no-features" and settings_of(first)["decode_replicas"] == "4"
    s = serving(first)
    assert s.completed == 300 and stat(s.ttft).mean == 54.59561144333596
    assert s.request_throughput and s.request_throughput.value == 8.369432347779671
    assert s.request_goodput is None  # "request_goodput:": null
    assert raw(first)["values"]["request_goodput:"] is None and raw(first)["location"] == "line 1"
    assert third.task and third.task.serving and third.task.serving.request_rate == "inf"
    assert serving(last).completed == 900 and stat(serving(last).ttft).mean == 884.9588357166714
    assert serving(last).request_throughput.value == 41.21716673334341  # type: ignore[union-attr]
    assert settings_of(last)["deployment"] == "kvcache"
    assert not any("hardware" in w for w in warnings)


def test_corpus_all_failed(corpus: Path) -> None:
    p, _ = one(corpus / "vllm" / "serve_opt-125m_all-failed_vllm0.25.1.json")
    assert p.status.value == "failed" and p.failure
    assert p.failure.failure_class.value == "runtime_error"
    assert p.failure.message == "all 8 requests failed (completed = 0); the result file keeps no error text"
    s = serving(p)
    assert (s.completed, s.failed) == (0, 8)
    # the file's 0.0 placeholders are not data
    assert s.ttft is None and s.tpot is None and s.itl is None and s.request_throughput is None
    assert s.output_throughput is None and p.timing and p.timing.stats is None
    assert raw(p)["values"]["mean_ttft_ms"] == 0.0  # still kept raw


def test_corpus_sweep_run(corpus: Path) -> None:
    p, _ = one(corpus / "vllm" / "sweep-serve_opt-125m_conc2_maxseqs4_vllm0.25.1_run0.json")
    s = serving(p)
    assert s.completed == 8 and s.failed == 0 and s.max_concurrent_requests == 6
    assert stat(s.ttft).mean == 217.27289337468392
    assert s.request_throughput and s.request_throughput.value == 5.859229976904171
    assert s.max_output_throughput and s.max_output_throughput.value == 75.0
    assert p.timing and p.timing.stats and p.timing.stats.median == 166.47808399284258  # e2el
    assert stat(s.e2el).mean == 340.3411977451469
    assert p.task and p.task.serving and p.task.serving.max_concurrency == 2
    assert settings_of(p)["max_num_seqs"] == 4 and settings_of(p)["run_number"] == 0
    assert p.subject.name == "facebook/opt-125m rate=inf concurrency=2 run=0"


def test_corpus_inferencex(corpus: Path) -> None:
    p, warnings = one(corpus / "vllm" / "inferencex_agentic_kimik2.5-nvfp4_b200_tp4_conc12_vllm0.22.0.json")
    assert p.task and p.task.serving and p.hardware
    t = p.task.serving
    assert (
        t.model == "/lustre/fsw/models/Kimi-K2.5-NVFP4"
        and t.engine
        and (t.engine.name, t.engine.version) == ("vllm", "0.22.0")
    )
    assert (t.tensor_parallel_size, t.max_concurrency, t.num_prompts) == (4, 12, 191)
    assert (p.hardware.vendor, p.hardware.device) == ("nvidia", "b200-dgxc")
    s = serving(p)
    assert (s.completed, s.failed) == (191, 0)
    assert s.duration and s.duration.value == 1817.401431391
    assert s.output_throughput and s.output_throughput.value == 102.25478905767318
    assert s.total_token_throughput and s.total_token_throughput.value == 10689.750026844955
    assert s.ttft is None  # no median in InferenceX results; kept raw
    assert raw(p)["values"]["mean_ttft"] == 65.78867416623036
    assert any(
        "ttft statistics have no median (keys: mean_ttft, p75_ttft, p90_ttft, p95_ttft, std_ttft)" in w
        for w in warnings
    )
    assert settings_of(p)["precision"] == "fp4" and settings_of(p)["ep"] == 1


def test_corpus_aiperf(corpus: Path) -> None:
    p, warnings = one(corpus / "vllm" / "aiperf_profile_export_kimik2.5-mxfp4_mi355x_tp4_conc16_vllm.json")
    assert p.task and p.task.serving
    assert p.task.serving.model == "amd/Kimi-K2.5-MXFP4" and p.task.serving.max_concurrency == 16
    s = serving(p)
    assert (s.completed, s.failed) == (727, 1)
    ttft = stat(s.ttft)
    assert (ttft.mean, ttft.median, ttft.n) == (3074.633726320495, 1539.017899, 727)
    assert ttft.percentiles and ttft.percentiles["p99"] == 21397.125022660002 and ttft.min == 172.932462
    assert p.timing and p.timing.stats and p.timing.stats.median == 13452.095324  # request_latency
    assert s.duration and (s.duration.value, s.duration.unit) == (1824.26869888, "s")
    assert s.request_throughput and s.request_throughput.value == 0.39851585484437557
    assert stat(s.tpot).mean == 49.711245813699456  # AIPerf inter_token_latency is vLLM's TPOT
    assert p.replay and p.replay.command and p.replay.command[:2] == ["aiperf", "profile"]
    assert "--concurrency" in p.replay.command and "16" in p.replay.command
    assert p.hardware is None  # MI355X only in the directory name: not guessed
    assert p.subject.description == (
        "aiperf profile result aiperf_profile_export_kimik2.5-mxfp4_mi355x_tp4_conc16_vllm.json"
    )
    assert any(
        w.endswith("1 of 728 requests failed; first error: ClientOSError(104, 'Connection reset by peer')")
        for w in warnings
    )


def test_corpus_with_options_validates(corpus: Path) -> None:
    """With what the file cannot know given on the command line, the packet validates."""
    from kernel_evidence._ingest import ingest
    from kernel_evidence.rules import validate

    result = ingest(
        "vllm",
        [str(corpus / "vllm" / "sweep-serve_opt-125m_conc2_maxseqs4_vllm0.25.1_run0.json")],
        replay_cmd="vllm bench serve --model facebook/opt-125m --num-prompts 8 --max-concurrency 2",
        created_at=T0,
        extra={
            "device": "NVIDIA H100 80GB HBM3",
            "engine": "vllm",
            "engine_version": "0.25.1",
            "tensor_parallel_size": "1",
        },
    )
    (p,) = result.packets
    assert p.hardware and p.hardware.vendor == "nvidia" and p.task and p.task.serving
    assert (
        p.task.serving.engine
        and p.task.serving.engine.version == "0.25.1"
        and p.task.serving.tensor_parallel_size == 1
    )
    report = validate(p)
    assert report.ok, [(f.rule_id, f.message) for f in report.findings]


# ------------------------------------------------------------------------------ synthetic fixtures
def test_old_keys_with_arrays_recomputed() -> None:
    p, warnings = one(FIX / "serve_v0.4_old-keys_detailed.json")
    data = json.loads((FIX / "serve_v0.4_old-keys_detailed.json").read_text())
    s = serving(p)
    assert (s.completed, s.failed) == (11, 1)  # failed derived from the errors array
    assert raw(p)["derived"] == ["failed", "total_token_throughput"]
    assert s.total_token_throughput and s.total_token_throughput.value == pytest.approx(
        (data["total_input_tokens"] + data["total_output_tokens"]) / 3.25
    )
    ttft = stat(s.ttft)
    ok_ttfts = [t * 1000 for t, e in zip(data["ttfts"], data["errors"], strict=False) if not e]
    assert ttft.samples == pytest.approx(ok_ttfts) and ttft.n == 11 and ttft.mean == data["mean_ttft_ms"]
    pairs = zip(data["itls"], data["errors"], strict=True)
    assert stat(s.itl).n == sum(len(x) for x, e in pairs if not e)
    assert not any("recomputed" in w for w in warnings)  # the file agrees with its arrays
    assert raw(p)["error_counts"] == {data["errors"][5]: 1}
    assert (
        f"{FIX / 'serve_v0.4_old-keys_detailed.json'}: 1 of 12 requests failed; "
        "first error: Traceback (most recent call last): aiohttp.ClientResponseError: 503, "
        "message='Service Unavailable'"
    ) in warnings
    assert "input_throughput" not in settings_of(p) and settings_of(p)["use_beam_search"] is False
    assert "generated_texts" not in raw(p)["values"]


def test_goodput_colon_metadata_and_odd_percentiles() -> None:
    p, warnings = one(FIX / "serve_v0.6_goodput-colon_metadata.json")
    s = serving(p)
    assert s.request_goodput and (s.request_goodput.value, s.request_goodput.unit) == (
        7.25,
        "req/s",
    )
    assert stat(s.ttft).percentiles == {"p90": 1200.0, "p99.9": 2950.5}
    assert p.timing and p.timing.stats and p.timing.stats.median == 8500.0
    assert p.task and p.task.serving and p.task.serving.engine
    t = p.task.serving
    assert (t.engine.name, t.engine.version, t.tensor_parallel_size, t.dataset, t.request_rate) == (
        "vllm", "0.6.4.post1", 8, "sharegpt", "inf"
    )  # fmt: skip
    assert p.hardware and (p.hardware.vendor, p.hardware.device, p.hardware.count) == (
        "nvidia",
        "H100",
        8,
    )
    # v0.6 writes no `failed` count: the 2 of 500 prompts that did not complete are failures
    assert s.failed == 2 and "failed" in raw(p)["derived"]
    assert len(warnings) == 1 and "2 of 500 requests failed" in warnings[0]


def test_percentile_mismatch_is_a_warning_naming_values() -> None:
    np = pytest.importorskip("numpy")
    path = FIX / "serve_v0.25_detailed_p99-mismatch.json"
    data = json.loads(path.read_text())
    p, warnings = one(path)
    recomputed = float(np.percentile(data["ttfts"], 99) * 1000)
    assert (
        f"{path}: `p99_ttft_ms` is {data['p99_ttft_ms']!r} in the file but {recomputed!r} "
        "recomputed from the per-request arrays"
    ) in warnings
    assert [w for w in warnings if "recomputed" in w] == [warnings[0]]  # only that one
    s = serving(p)
    assert stat(s.ttft).percentiles == {
        "p50": data["p50_ttft_ms"],
        "p99": data["p99_ttft_ms"],
    }  # file's value kept
    assert stat(s.e2el).samples == pytest.approx([x * 1000 for x in data["latencies"]])
    tpots = [
        (lat - t) / (o - 1) * 1000
        for lat, t, o in zip(data["latencies"], data["ttfts"], data["output_lens"], strict=False)
        if o > 1
    ]
    assert stat(s.tpot).samples == pytest.approx(tpots)
    assert p.subject.name == "Qwen/Qwen3-0.6B nightly rate=5.0"


def test_pure_python_path_gives_the_same_packet_numbers() -> None:
    path = FIX / "serve_v0.4_old-keys_detailed.json"
    fast, _ = one(path, use_numpy=True) if have_numpy() else one(path)
    slow, warnings = one(path, use_numpy=False)
    assert not any("recomputed" in w for w in warnings)
    for name in ("ttft", "tpot", "itl"):
        a, b = getattr(serving(fast), name), getattr(serving(slow), name)
        assert a.samples == pytest.approx(b.samples) and a.min == pytest.approx(b.min) and a.n == b.n


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1, max_size=200),
    st.lists(st.floats(min_value=0, max_value=100), min_size=1, max_size=5),
)
def test_python_percentiles_equal_numpy(values: list[float], qs: list[float]) -> None:
    np = pytest.importorskip("numpy")
    py = _summarize_python(values, qs)
    for q in qs:
        assert math.isclose(
            py.percentiles[float(q)], float(np.percentile(values, q)), rel_tol=1e-9, abs_tol=1e-9
        )
    assert math.isclose(py.mean, float(np.mean(values)), rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(py.std, float(np.std(values)), rel_tol=1e-6, abs_tol=1e-6)
    fast = summarize(values, qs)
    assert fast is not None and math.isclose(
        fast.median, float(np.median(values)), rel_tol=1e-12, abs_tol=1e-12
    )


def test_sweep_summary_list() -> None:
    packets, _ = read(FIX / "sweep_summary.json")
    assert [raw(p)["location"] for p in packets] == ["[0]", "[1]"]
    assert [settings_of(p)["run_number"] for p in packets] == [0, 1]
    assert [stat(serving(p).ttft).mean for p in packets] == [20.0, 21.0]
    assert packets[0].packet_id != packets[1].packet_id


def test_sglang_jsonl() -> None:
    path = FIX / "sglang_bench_serving.jsonl"
    (old, new), warnings = read(path)
    # 2024 record: no model id anywhere -> the model unknown, the workload and results kept
    assert old.task and old.task.serving and old.task.serving.model is None
    assert (old.task.serving.request_rate, old.task.serving.max_concurrency) == (8.0, 16)
    s = serving(old)
    assert s.completed == 50 and stat(s.e2el).median == 2050.25 and stat(s.e2el).mean == 2100.5
    assert stat(s.ttft).median == 95.5 and stat(s.itl).median == 14.25 and s.tpot is None
    assert s.total_token_throughput and s.total_token_throughput.value == (51200 + 12800) / 20.0
    assert raw(old)["values"]["max_concurrency"] == 16
    # newer record: server_info, per-request arrays, `Infinity` rate written by json.dumps
    assert new.task and new.task.serving and new.task.serving.engine
    t = new.task.serving
    assert (t.model, t.engine.name, t.engine.version, t.tensor_parallel_size) == (
        "Qwen/Qwen2.5-7B-Instruct",
        "sglang",
        "0.5.2",
        2,
    )
    assert t.request_rate == "inf" and t.dataset == "sharegpt"
    assert t.input_len is None  # random_input_len does not apply to sharegpt
    s = serving(new)
    data = json.loads(path.read_text().splitlines()[1].replace("Infinity", "1e999"))
    assert s.completed == data["completed"] == 5 and s.failed == 1
    assert stat(s.itl).percentiles == {"p95": data["p95_itl_ms"], "p99": data["p99_itl_ms"]}
    assert stat(s.e2el).mean == data["mean_e2e_latency_ms"]
    assert not any("recomputed" in w for w in warnings)
    assert new.subject.name == "Qwen/Qwen2.5-7B-Instruct tp2-run rate=inf"


def test_nan_values_are_left_out_with_a_warning() -> None:
    path = FIX / "serve_nan.json"
    p, warnings = one(path)
    s = serving(p)
    assert s.tpot is None and stat(s.ttft).mean == 12.0
    assert f"{path}: key `mean_tpot_ms`: NaN or infinite value left out" in warnings
    assert f"{path}: key `spec_decode_acceptance_rate`: NaN or infinite value left out" in warnings
    assert raw(p)["non_finite_keys"] == [
        "mean_tpot_ms",
        "median_tpot_ms",
        "std_tpot_ms",
        "p99_tpot_ms",
        "spec_decode_acceptance_rate",
    ]


def test_all_failed_keeps_the_first_error() -> None:
    p, _ = one(FIX / "serve_all-failed_detailed.json")
    assert p.status.value == "failed" and p.failure
    assert p.failure.message == (
        "all 3 requests failed (completed = 0); first error: Traceback (most recent call last): "
        "aiohttp.ClientResponseError: 503, message='Service Unavailable'"
    )
    assert serving(p).ttft is None and serving(p).samples_artifact is None
    errors_only_partial(p)


def test_sweep_failure_file() -> None:
    p, _ = one(FIX / "run=1.failure.json")
    assert p.status.value == "error" and p.failure and p.failure.failure_class.value == "runtime_error"
    assert p.failure.message == "TimeoutError: server did not become ready in 300 s"
    assert p.subject.name == "sweep run 1 max_num_seqs=8 max_concurrency=4"


def test_latency_with_model_name() -> None:
    p, warnings = one(FIX / "latency_with-model.json")
    assert p.task and p.task.serving and p.task.serving.model == "Qwen/Qwen3-0.6B"
    s = stat(p.timing.stats if p.timing else None)
    assert s.std == pytest.approx(19.507833184532725) and s.median == pytest.approx(1505.0)
    assert "avg_latency" not in settings_of(p)
    assert not any("recomputed" in w for w in warnings)


def test_options_override_and_warn() -> None:
    path = FIX / "serve_v0.6_goodput-colon_metadata.json"
    p, warnings = one(path, device="MI300X", gpu_count="4", engine_version="0.6.5", tensor_parallel_size=4)
    assert p.hardware and (p.hardware.vendor, p.hardware.device, p.hardware.count) == (
        "amd",
        "MI300X",
        4,
    )
    assert p.task and p.task.serving and p.task.serving.engine
    assert p.task.serving.engine.version == "0.6.5" and p.task.serving.tensor_parallel_size == 4
    assert f"{path}: the `device` option ('MI300X') overrides the file's gpu='8xH100'" in warnings


def test_unknown_vendor_is_other_with_warning(tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_text(
        json.dumps(
            {
                "model_id": "m",
                "completed": 1,
                "gpu": "Mystery Accelerator 9000",
                "mean_ttft_ms": 1.0,
                "median_ttft_ms": 1.0,
            }
        )
    )
    p, warnings = one(f)
    assert p.hardware and p.hardware.vendor == "other"
    assert f"{f}: vendor of device 'Mystery Accelerator 9000' not recognised; written as `other`" in warnings


# ------------------------------------------------------------------------------ samples policy
def test_large_runs_reference_the_source_file() -> None:
    path = FIX / "serve_v0.4_old-keys_detailed.json"
    p, warnings = one(path, inline_samples_max=5)
    art = serving(p).samples_artifact
    assert art is not None and art.path == str(path) and art.kind == "output"
    assert art.sha256 == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert art.size and art.size.value == path.stat().st_size
    assert stat(serving(p).ttft).samples is None and stat(serving(p).ttft).n == 11
    assert any("too many to inline (cap 5)" in w for w in warnings)


def test_large_runs_write_a_parquet_sidecar(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    path = FIX / "serve_v0.25_detailed_p99-mismatch.json"
    data = json.loads(path.read_text())
    p, _ = one(path, inline_samples_max=0, samples_dir=str(tmp_path / "side"))
    art = serving(p).samples_artifact
    assert art is not None and art.path and art.media_type == "application/vnd.apache.parquet"
    blob = Path(art.path).read_bytes()
    assert (
        art.sha256 == "sha256:" + hashlib.sha256(blob).hexdigest()
        and art.size
        and art.size.value == len(blob)
    )
    table = pq.read_table(art.path).to_pydict()
    assert table["request"] == list(range(10))
    assert table["ttft_ms"] == pytest.approx([t * 1000 for t in data["ttfts"]])
    assert [len(x) for x in table["itl_ms"]] == [len(x) for x in data["itls"]]
    assert table["output_len"] == data["output_lens"] and table["error"] == data["errors"]


# ------------------------------------------------------------------------------ directories
def test_directory_skips_sidecars_and_duplicate_summaries(tmp_path: Path, corpus: Path) -> None:
    sweep = tmp_path / "SERVE--max_num_seqs=4-BENCH--max_concurrency=2"
    sweep.mkdir()
    shutil.copy(
        corpus / "vllm" / "sweep-serve_opt-125m_conc2_maxseqs4_vllm0.25.1_run0.json",
        sweep / "run=0.json",
    )
    shutil.copy(FIX / "sweep_summary.json", sweep / "summary.json")
    shutil.copy(FIX / "bad_pytorch-sidecar.pytorch.json", sweep / "run=0.pytorch.json")
    shutil.copy(sweep / "run=0.json", sweep / "warmup.json")
    (sweep / "notes.json").write_text('{"hello": 1}')
    packets, warnings = read(tmp_path)
    assert len(packets) == 1
    assert (
        f"{sweep / 'run=0.pytorch.json'}: skipped: PyTorch benchmark-database sidecar, not a result"
        in warnings
    )
    assert (
        f"{sweep / 'warmup.json'}: skipped: sweep warm-up run (name it explicitly to ingest it)" in warnings
    )
    assert (
        f"{sweep / 'summary.json'}: skipped: sweep summary of runs already read from the "
        "run=N.json files" in warnings
    )
    assert any(
        w.startswith(f"skipped: {sweep / 'notes.json'}: top level: not a serving benchmark result")
        for w in warnings
    )


# ------------------------------------------------------------------------------ bad input
SUPPORTED = (
    "expected a vLLM `bench serve`/benchmark_serving.py result, a `vllm bench latency` or "
    "`vllm bench throughput` --output-json file, an SGLang bench_serving or "
    "bench_offline_throughput JSONL record, an InferenceX result or an AIPerf/GenAI-Perf "
    "profile export"
)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "bad_truncated.json",
            "{f}: end of file: JSON truncated; expected a complete benchmark result object",
        ),
        (
            "bad_wrong-type.json",
            "{f}: key `completed`: expected a non-negative integer, got string 'many'",
        ),
        (
            "bad_negative.json",
            "{f}: key `mean_ttft_ms`: expected a non-negative number, got float -4.0",
        ),
        (
            "bad_not-a-result.json",
            "{f}: top level: not a serving benchmark result (keys: hello, items); " + SUPPORTED,
        ),
        (
            "bad_pytorch-sidecar.pytorch.json",
            "{f}:[0]: this is the PyTorch OSS benchmark-database record vLLM writes beside its "
            "result (`*.pytorch.json`), not the result itself; ingest the file of the same name "
            "without `.pytorch`",
        ),
        (
            "bad_jsonl-line2.jsonl",
            "{f}:line 2: byte 33: malformed JSON (object keys must be strings); "
            "expected a benchmark result object",
        ),
        (
            "bad_array-lengths.json",
            "{f}: per-request arrays have different lengths (1, 2: `ttfts` 2, `errors` 1); "
            "expected one entry per request in each array",
        ),
    ],
)
def test_bad_inputs_give_one_line_errors(name: str, message: str) -> None:
    f = FIX / name
    with pytest.raises(AdapterError) as info:
        read(f)
    assert str(info.value) == message.format(f=f)
    assert "\n" not in str(info.value)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match=r"nope\.json: no such file$"):
        read(tmp_path / "nope.json")
    (tmp_path / "e.json").write_text("  \n")
    with pytest.raises(AdapterError, match=r"e\.json: empty file; expected a JSON benchmark result$"):
        read(tmp_path / "e.json")
    with pytest.raises(
        AdapterError, match=r"larger than the 10 bytes cap for one input; expected a benchmark"
    ):
        read(FIX / "sweep_summary.json", max_bytes=10)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b'{"model_id": "m", "ttfts": [0.1, "x"]}',
            "{f}: key `ttfts`: expected a list of numbers (Expected `float`, got `str` - at `$[1]`)",
        ),
        (
            b'{"model_id": "m", "itls": [[0.1], 3]}',
            "{f}: key `itls`: expected a list of lists of numbers (Expected `array`, got `int` - at `$[1]`)",
        ),
        (
            b'{"model_id": "m", "completed": true}',
            "{f}: key `completed`: expected a non-negative integer, got boolean True",
        ),
        (
            b'{"model_id": "m", "request_rate": [1]}',
            "{f}: key `request_rate`: expected a non-negative number, got a list",
        ),
        (b"[1, 2]", "{f}:[0]: expected a JSON object (one benchmark run)"),
        (b'"text"', "{f}: byte 0: expected a JSON object, a JSON list or JSONL, found b'\"text\"'"),
        (
            b'{"model_id": "m", "mean_ttft_ms": NaN, "x": [1, 2',
            "{f}: not valid JSON (Expecting ',' delimiter: line 1 column 50 (char 49)); "
            "expected a benchmark result",
        ),
    ],
)
def test_wrong_types_and_broken_json(tmp_path: Path, body: bytes, message: str) -> None:
    f = tmp_path / "r.json"
    f.write_bytes(body)
    with pytest.raises(AdapterError) as info:
        read(f)
    assert str(info.value) == message.format(f=f)


def test_hostile_nesting_does_not_crash() -> None:
    deep = b'{"model_id": "m", "completed": 1, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    try:
        runs = parse_runs("deep.json", deep)
    except AdapterError as exc:
        assert str(exc).startswith("deep.json:")
    else:
        assert runs[0].values["completed"] == 1


def test_same_input_same_packet_ids(tmp_path: Path) -> None:
    a, _ = read(FIX / "sglang_bench_serving.jsonl")
    shutil.copy(FIX / "sglang_bench_serving.jsonl", tmp_path / "sglang_bench_serving.jsonl")
    b, _ = read(tmp_path / "sglang_bench_serving.jsonl")  # same file elsewhere: same ids
    assert [p.packet_id for p in a] == [p.packet_id for p in b]


# ------------------------------------------------------------------------------ docs, CLI
def test_docs_name_every_source_key() -> None:
    """docs/adapters/vllm.md mentions every source key of adapters/vllm.toml."""
    from kernel_evidence._resources import load_toml

    doc = (Path(__file__).resolve().parents[2] / "docs" / "adapters" / "vllm.md").read_text()
    table = load_toml("vllm.toml")
    keys = {src["key"].split(".")[-1] for spec in table["fields"].values() for src in spec["sources"]}
    keys |= {src["object"] for spec in table["stats"].values() for src in spec["sources"] if "object" in src}
    keys |= {
        src["template"].replace("{stat}_", "")
        for spec in table["stats"].values()
        for src in spec["sources"]
        if "template" in src
    }
    missing = sorted(k for k in keys if k not in doc)
    assert not missing, missing


def test_cli_ingest_jsonl(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernel_evidence.cli import main
    from kernel_evidence.io import read_packets

    out = tmp_path / "runs.jsonl"
    src = corpus / "vllm" / "serve_llama3.2-3b_4xL40S_llm-d_metadata_vllm2025-05.jsonl"
    code = main(["ingest", "vllm", str(src), "-o", str(out), "--created-at", T0])
    capsys.readouterr()
    assert code == 0
    packets = list(read_packets([out]))
    assert len(packets) == 9 and {p.subject.kind for p in packets} == {"serving"}
    code = main(["ingest", "vllm", str(FIX / "bad_truncated.json"), "-o", str(tmp_path / "x.json")])
    _, err = capsys.readouterr()
    assert code == 1 and "bad_truncated.json: end of file: JSON truncated" in err
    assert "Traceback" not in err


def test_arrays_without_errors_use_zero_output_len_as_failure(tmp_path: Path) -> None:
    """Some old files keep arrays but no `errors`: a failed request has output_len 0."""
    np = pytest.importorskip("numpy")
    ttfts, olens, itls = [0.1, 0.0, 0.3, 0.2], [3, 0, 2, 4], [[0.01, 0.02], [], [0.03], [0.01] * 3]
    ok = [0.1, 0.3, 0.2]
    rec = {
        "model_id": "m", "completed": 3, "ttfts": ttfts, "output_lens": olens, "itls": itls,
        "mean_ttft_ms": float(np.mean(ok) * 1000), "median_ttft_ms": float(np.median(ok) * 1000),
        "p99_ttft_ms": float(np.percentile(ok, 99) * 1000),
    }  # fmt: skip
    f = tmp_path / "old.json"
    f.write_text(json.dumps(rec))
    p, warnings = one(f)
    assert not any("recomputed" in w for w in warnings)
    assert stat(serving(p).ttft).n == 3 and stat(serving(p).itl).n == 6


def test_bom_and_jsonl_with_nan_lines(tmp_path: Path) -> None:
    f = tmp_path / "appended.json"  # --append-result: JSONL under a .json name
    line = {"model_id": "m", "completed": 2, "mean_ttft_ms": 5.0, "median_ttft_ms": 4.0}
    f.write_bytes(
        b"\xef\xbb\xbf"
        + json.dumps(line).encode()
        + b"\n"
        + json.dumps({**line, "std_ttft_ms": float("nan")}).encode()
    )
    packets, warnings = read(f)
    assert [raw(p)["location"] for p in packets] == ["line 1", "line 2"]
    assert f"{f}:line 2: key `std_ttft_ms`: NaN or infinite value left out" in warnings


# ------------------------------------------------------------------------------ sweep summary.csv
SWEEP_JSON = FIX / "sweep_detailed_summary.json"
SWEEP_CSV = FIX / "sweep_detailed_summary.csv"  # written by pandas (make_fixtures.py)
CSV_EXPECTED = (
    "expected the summary.csv of `vllm bench sweep serve` "
    "(a header line naming the columns, then one row per run)"
)


def pandas_like_csv(runs: list[dict[str, Any]]) -> str:
    """What ``pandas.DataFrame.from_records(runs).to_csv(path)`` writes (vLLM's
    sweep/serve.py), for the value types sweep runs hold, written without pandas:
    an unnamed index column, the union of keys in first-seen order, None/missing as an
    empty cell, a numeric column with a gap (or mixed int/float) as float, everything else
    as ``str(value)``, quoted only when needed."""
    import csv
    import io

    columns: dict[str, None] = {}
    for run in runs:
        columns.update(dict.fromkeys(run))
    floats = set()
    for c in columns:
        values = [run.get(c) for run in runs]
        present = [v for v in values if v is not None]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present)
        if present and numeric and (len(present) < len(values) or any(isinstance(v, float) for v in present)):
            floats.add(c)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["", *columns])
    for i, run in enumerate(runs):
        row = [str(i)]
        for c in columns:
            v = run.get(c)
            row.append("" if v is None else repr(float(v)) if c in floats else str(v))
        writer.writerow(row)
    return buf.getvalue()


def mapped(p: EvidencePacket) -> dict[str, Any]:
    """The canonical fields of a packet: everything but the raw extension and the place."""
    d = p.to_dict()
    out = {k: d.get(k) for k in ("status", "failure", "task", "timing", "hardware", "replay")}
    out["name"] = d["subject"]["name"]
    return out


def assert_csv_agrees_with_json(json_path: Path, csv_path: Path, **extra: Any) -> list[EvidencePacket]:
    from_json, warn_json = read(json_path, **extra)
    from_csv, warn_csv = read(csv_path, **extra)
    assert len(from_json) == len(from_csv)
    places = {}
    for pj, pc in zip(from_json, from_csv, strict=True):
        assert mapped(pj) == mapped(pc)
        rj, rc = raw(pj)["values"], raw(pc)["values"]
        assert {k for k, v in rj.items() if v is not None} == set(rc)
        # 4 == 4.0 (a CSV column with a gap); "2" (a --metadata string) is typed back as 2
        assert all(rj[k] == v or str(rj[k]) == str(v) for k, v in rc.items())
        places[f"{json_path}:{raw(pj)['location']}"] = f"{csv_path}:{raw(pc)['location']}"
        errors_only_partial(pc)
    renamed = []
    for w in warn_json:
        for a, b in places.items():
            w = w.replace(a, b)
        renamed.append(w.replace(str(json_path), str(csv_path)))
    assert renamed == warn_csv
    return from_csv


def test_pandas_like_writer_reproduces_the_pandas_fixture() -> None:
    """The test writer below is checked byte for byte against a CSV pandas wrote."""
    runs = json.loads(SWEEP_JSON.read_text())
    assert pandas_like_csv(runs) == SWEEP_CSV.read_text()


def test_sweep_csv_written_by_pandas_agrees_with_summary_json() -> None:
    packets = assert_csv_agrees_with_json(SWEEP_JSON, SWEEP_CSV)
    assert [raw(p)["location"] for p in packets] == ["line 2", "line 3", "line 4"]  # row 3 spans 2 lines
    first, second, third = packets
    assert first.subject.name == "facebook/opt-125m rate=inf concurrency=1 run=0"
    assert settings_of(first)["max_num_seqs"] == 4 and "max_num_seqs" not in settings_of(second)
    assert settings_of(third)["max_num_seqs"] == 8  # written 8.0: the column has a gap
    assert raw(third)["values"]["compilation_config"] == {"mode": 3}
    # per-request arrays came through the CSV: statistics recomputed and samples inline
    assert stat(serving(first).ttft).n == 8 and len(stat(serving(first).ttft).samples or []) == 8
    assert serving(third).failed == 2 and raw(third)["error_counts"]
    assert raw(first)["source"] == "sweep_detailed_summary.csv"


def test_sweep_csv_built_here_agrees_with_summary_json(tmp_path: Path) -> None:
    """summary.json and summary.csv holding the same runs give the same canonical fields."""
    base = json.loads((FIX / "sweep_summary.json").read_text())
    runs = [
        {**base[0], "enable_prefix_caching": True, "_benchmark_name": "a"},
        {**base[1], "request_rate": 8.0, "enable_prefix_caching": False, "_benchmark_name": "b"},
        {**base[1], "run_number": 2, "max_concurrency": None, "tensor_parallel_size": "2",
         "gpu": "NVIDIA L4", "kv_cache_dtype": "fp8", "max_num_seqs": None},
    ]  # fmt: skip
    (tmp_path / "summary.json").write_text(json.dumps(runs, indent=4))
    (tmp_path / "summary.csv").write_text(pandas_like_csv(runs))
    packets = assert_csv_agrees_with_json(tmp_path / "summary.json", tmp_path / "summary.csv")
    assert [p.subject.name for p in packets] == [
        "facebook/opt-125m rate=inf concurrency=2 run=0",
        "facebook/opt-125m rate=8.0 concurrency=2 run=1",
        "facebook/opt-125m rate=inf run=2",
    ]
    assert settings_of(packets[0])["enable_prefix_caching"] is True
    assert settings_of(packets[1])["enable_prefix_caching"] is False
    task = packets[2].task.serving  # type: ignore[union-attr]
    assert task is not None and task.tensor_parallel_size == 2 and task.max_concurrency is None
    assert packets[2].hardware is not None and packets[2].hardware.device == "NVIDIA L4"


def test_sweep_csv_with_goodput_agrees_with_json() -> None:
    packets = assert_csv_agrees_with_json(SWEEP_JSON, SWEEP_CSV, goodput="ttft:200,tpot:25")
    assert [raw(p)["goodput"]["good_requests"] for p in packets] == [5, 3, 2]


def test_sweep_csv_in_a_directory_walk(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    comb = exp / "SERVE--max_num_seqs=4-BENCH--max_concurrency=1"
    comb.mkdir(parents=True)
    shutil.copy(SWEEP_JSON, comb / "summary.json")
    shutil.copy(SWEEP_CSV, exp / "summary.csv")
    (exp / "other.csv").write_text("a,b\n1,2\n")  # not named summary.csv: not walked
    packets, warnings = read(exp)
    assert [raw(p)["source"] for p in packets] == ["summary.json"] * 3
    assert (
        f"{exp / 'summary.csv'}: skipped: sweep summary table of runs already read from the JSON "
        "files below it"
    ) in warnings
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(SWEEP_CSV, alone / "summary.csv")
    packets, _ = read(alone)
    assert [raw(p)["source"] for p in packets] == ["summary.csv"] * 3


def _csv_lines() -> list[str]:
    return SWEEP_CSV.read_text().split("\n")


def _replace_cell(text: str, column: str, row: int, new: str) -> str:
    """``text`` with the cell (data row ``row``, named column) replaced; rows 0-1 only."""
    lines = text.split("\n")
    header = lines[0].split(",")
    import csv

    cells = next(csv.reader([lines[row + 1]]))
    cells[header.index(column)] = new
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    lines[row + 1] = buf.getvalue()
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("empty", lambda t: "", "{f}: empty file; " + CSV_EXPECTED),
        ("blank", lambda t: "\n \n", "{f}: empty file; " + CSV_EXPECTED),
        (
            "header-only",
            lambda t: t.split("\n")[0] + "\n",
            "{f}:line 1: a header and no rows; " + CSV_EXPECTED,
        ),
        (
            "truncated-row",
            lambda t: "\n".join(t.split("\n")[:2]) + "\n1,20260901-100001,openai,openai,,facebook/opt-125m",
            "{f}:line 3: column `tokenizer_id`: the row ends after 6 of 51 columns; "
            "expected one value per column (truncated file?)",
        ),
        (
            "truncated-in-quotes",
            lambda t: t[: t.index('"[33, 34') + 8],
            "{f}:line 2: malformed CSV (unexpected end of data); " + CSV_EXPECTED,
        ),
        (
            "extra-values",
            lambda t: t.replace("\n1,", "\n1,x,", 1),
            "{f}:line 3: 52 values but the header (line 1) names 51 columns; expected one value per column",
        ),
        (
            "text-in-integer-column",
            lambda t: _replace_cell(t, "completed", 0, "many"),
            "{f}:line 2: column `completed`: expected a non-negative integer, got string 'many'",
        ),
        (
            "text-in-stats-column",
            lambda t: _replace_cell(t, "p99_ttft_ms", 1, "fast"),
            "{f}:line 3: column `p99_ttft_ms`: expected a non-negative number, got string 'fast'",
        ),
        (
            "fraction-in-integer-column",
            lambda t: _replace_cell(t, "failed", 1, "0.5"),
            "{f}:line 3: column `failed`: expected a non-negative integer, got float 0.5",
        ),
        (
            "broken-array",
            lambda t: _replace_cell(t, "ttfts", 0, "[0.1, 0.2"),
            "{f}:line 2: column `ttfts`: expected a per-request list as pandas writes it "
            "(e.g. [0.1, 0.2] or ['', 'error']), got '[0.1, 0.2'",
        ),
        (
            "wrong-array-type",
            lambda t: _replace_cell(t, "itls", 0, "[0.1, 0.2]"),
            "{f}:line 2: column `itls`: expected a list of lists of numbers",
        ),
        (
            "duplicate-column",
            lambda t: t.replace(",date,", ",model_id,", 1),
            "{f}:line 1: column `model_id` appears twice (columns 2 and 6); expected each column once",
        ),
        (
            "unnamed-column",
            lambda t: t.replace(",date,", ",,", 1),
            "{f}:line 1: column 2 has no name; expected a header naming every column",
        ),
        (
            "startup-sweep",
            lambda t: ",avg_latency_s,run_number,max_num_seqs\n0,12.5,0,4\n",
            "{f}:line 1: not a serving benchmark summary (columns: avg_latency_s, run_number, "
            "max_num_seqs); " + CSV_EXPECTED,
        ),
    ],
)
def test_damaged_sweep_csv(tmp_path: Path, name: str, make: Any, message: str) -> None:
    f = tmp_path / f"{name}.csv"
    f.write_text(make(SWEEP_CSV.read_text()))
    with pytest.raises(AdapterError) as err:
        read(f)
    assert str(err.value) == message.format(f=f)
    assert "\n" not in str(err.value)


def test_sweep_csv_bytes_that_are_not_utf8_and_hostile_cells(tmp_path: Path) -> None:
    f = tmp_path / "latin1.csv"
    f.write_bytes(SWEEP_CSV.read_bytes().replace(b"openai", b"op\xe9nai", 1))
    with pytest.raises(AdapterError, match=r"latin1\.csv: byte 660: not valid UTF-8; expected the summary"):
        read(f)
    deep = tmp_path / "deep.csv"  # 200,000 nested brackets in a per-request column
    deep.write_text(_replace_cell(SWEEP_CSV.read_text(), "ttfts", 0, "[" * 200_000 + "]" * 200_000))
    with pytest.raises(AdapterError, match=r"deep\.csv:line 2: column `ttfts`: expected a per-request list"):
        read(deep)
    nested = tmp_path / "nested.csv"  # the same in a settings column: kept as text
    nested.write_text(_replace_cell(SWEEP_CSV.read_text(), "backend", 0, "[" * 200_000))
    packets, _ = read(nested)
    assert raw(packets[0])["values"]["backend"] == "[" * 200_000


def test_sweep_csv_non_finite_cells_are_left_out_with_a_warning(tmp_path: Path) -> None:
    text = _replace_cell(SWEEP_CSV.read_text(), "mean_tpot_ms", 0, "inf")
    text = _replace_cell(text, "std_itl_ms", 1, "1e999")
    f = tmp_path / "summary.csv"
    f.write_text(text)
    packets, warnings = read(f)
    assert f"{f}:line 2: column `mean_tpot_ms`: NaN or infinite value left out" in warnings
    assert f"{f}:line 3: column `std_itl_ms`: NaN or infinite value left out" in warnings
    assert raw(packets[0])["non_finite_keys"] == ["mean_tpot_ms"]
    assert packets[0].task.serving.request_rate == "inf"  # type: ignore[union-attr]
    # the mean is then recomputed from the per-request arrays
    assert stat(serving(packets[0]).tpot).mean == pytest.approx(17.814563265306123)


# ------------------------------------------------------------------------------ goodput
#: five requests: (ttft s, latency s, output_len, error); by hand: TPOTs 40 ms, 50 ms,
#: 0 (one output token), failed, 100 ms
GOODPUT_REQUESTS = [
    (0.100, 0.180, 3, ""),
    (0.250, 0.300, 2, ""),
    (0.200, 0.200, 1, ""),
    (0.050, 0.000, 0, "boom"),
    (0.150, 0.450, 4, ""),
]


def goodput_warnings(warnings: list[str]) -> list[str]:
    return [w for w in warnings if "`request_goodput" in w or "goodput cannot" in w]


def goodput_file(tmp_path: Path, **keys: Any) -> Path:
    ttfts, lats, olens, errors = (list(x) for x in zip(*GOODPUT_REQUESTS, strict=True))
    rec = {
        "model_id": "m", "duration": 2.0, "completed": 4, "failed": 1,
        "ttfts": ttfts, "latencies": lats, "output_lens": olens, "errors": errors,
        "input_lens": [10] * 5, **keys,
        # each request's gaps as its TPOT gives them (a TPOT is the mean of a request's gaps)
        "itls": [[(lat - t) / (o - 1)] * (o - 1) if o > 1 else [] for t, lat, o in zip(ttfts, lats, olens, strict=True)],
    }  # fmt: skip
    f = tmp_path / f"run{len(list(tmp_path.glob('run*.json')))}.json"
    f.write_text(json.dumps(rec))
    return f


@pytest.mark.parametrize(
    ("slos", "good"),
    [
        ("ttft:200", 3),  # 0.1, 0.2 (inclusive), 0.15; not 0.25; the failed request never counts
        ("ttft:200,tpot:50", 2),  # request 4 has a TPOT of 100 ms; request 2 (1 token) counts as 0
        ("tpot:50", 3),
        ("e2el:300", 3),  # 0.18, 0.3 (inclusive), 0.2
        ("ttft:1000 tpot:1000 e2el:1000", 4),  # vLLM's own space-separated form
        ("TTFT:99", 0),  # no successful request is that fast
    ],
)
def test_goodput_recomputed_from_per_request_arrays(tmp_path: Path, slos: str, good: int) -> None:
    p, warnings = one(goodput_file(tmp_path), goodput=slos)
    g = serving(p).request_goodput
    assert g is not None and (g.value, g.unit) == (good / 2.0, "req/s")
    block = raw(p)["goodput"]
    assert block["good_requests"] == good and block["recomputed"] is True and block["duration_s"] == 2.0
    assert "request_goodput" in raw(p)["derived"]
    pairs = (pair.split(":") for pair in re.split(r"[,\s]+", slos.lower()))
    expected = {f"goodput_slo_{k}_ms": float(v) for k, v in pairs}
    assert {k: v for k, v in settings_of(p).items() if k.startswith("goodput_slo_")} == expected
    assert not goodput_warnings(warnings)
    errors_only_partial(p)


def test_goodput_option_as_a_mapping(tmp_path: Path) -> None:
    p, _ = one(goodput_file(tmp_path), goodput={"ttft": 200, "tpot": 50})
    assert serving(p).request_goodput.value == 1.0  # type: ignore[union-attr]


def test_goodput_checked_against_the_file(tmp_path: Path) -> None:
    f = goodput_file(tmp_path, request_goodput=1.5)
    p, warnings = one(f, goodput="ttft:200,tpot:50")
    assert serving(p).request_goodput.value == 1.5  # type: ignore[union-attr]  # the file's value is kept
    assert (
        f"{f}: `request_goodput` is 1.5 in the file but 1.0 recomputed from the per-request arrays "
        "with SLOs ttft:200,tpot:50 (2 good requests / 2.0 s)"
    ) in warnings
    assert raw(p)["goodput"]["file_agrees"] is False and "derived" not in raw(p)
    p, warnings = one(f, goodput="ttft:200")  # the SLOs the run used: agrees, no warning
    assert raw(p)["goodput"]["file_agrees"] is True and not goodput_warnings(warnings)
    colon = goodput_file(tmp_path, **{"request_goodput:": 2.0})  # v0.6-v0.9 spelling
    _, warnings = one(colon, goodput="e2el:300")
    assert f"{colon}: `request_goodput:` is 2.0 in the file but 1.5 recomputed" in " ".join(warnings)


def test_goodput_matches_what_vllm_saved_in_the_sweep_fixture() -> None:
    """The fixture's request_goodput was computed with numpy the way vLLM does it."""
    packets, warnings = read(SWEEP_JSON, goodput="ttft:200,tpot:25")
    assert [raw(p)["goodput"].get("file_agrees") for p in packets] == [True, True, None]
    assert not goodput_warnings(warnings)
    packets, warnings = read(SWEEP_JSON, goodput="ttft:150")
    assert sum("`request_goodput` is" in w for w in warnings) == 2


def test_goodput_without_per_request_arrays_warns(tmp_path: Path) -> None:
    path = FIX / "sweep_summary.json"
    packets, warnings = read(path, goodput="ttft:200")
    assert (
        warnings.count(
            f"{path}: goodput cannot be recomputed with SLOs ttft:200: the file has no per-request "
            "arrays (`vllm bench serve --save-detailed` saves them)"
        )
        == 1
    )  # once per file
    assert all(serving(p).request_goodput is None for p in packets)
    assert all(not any(k.startswith("goodput_slo") for k in settings_of(p)) for p in packets)
    assert raw(packets[0])["goodput"] == {"slos_ms": {"ttft": 200.0}, "recomputed": False}
    f = tmp_path / "ttfts-only.json"
    f.write_text(json.dumps({"model_id": "m", "duration": 1.0, "ttfts": [0.1, 0.2], "errors": ["", ""]}))
    p, warnings = one(f, goodput="ttft:150,tpot:50")
    assert (
        f"{f}: goodput cannot be recomputed with SLOs ttft:150,tpot:50: the per-request arrays lack "
        "`latencies`, `output_lens`"
    ) in warnings
    p, warnings = one(f, goodput="ttft:150")  # the arrays it needs are there
    assert serving(p).request_goodput.value == 1.0  # type: ignore[union-attr]


GOODPUT_FORM = (
    "expected SLOs in milliseconds as KEY:MS pairs separated by commas, KEY one of ttft, tpot, "
    "e2el (e.g. `goodput=ttft:200,tpot:50,e2el:1000`)"
)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ttft=200", f"option `goodput`: `ttft=200` is not KEY:MS; {GOODPUT_FORM}, got 'ttft=200'"),
        ("ttft:fast", f"option `goodput`: `ttft:fast` is not a non-negative number of milliseconds; "
                      f"{GOODPUT_FORM}, got 'ttft:fast'"),
        ("ttft:-5", f"option `goodput`: `ttft:-5` is not a non-negative number of milliseconds; "
                    f"{GOODPUT_FORM}, got 'ttft:-5'"),
        ("ttft:nan", f"option `goodput`: `ttft:nan` is not a non-negative number of milliseconds; "
                     f"{GOODPUT_FORM}, got 'ttft:nan'"),
        ("itl:20", f"option `goodput`: unknown SLO `itl`; {GOODPUT_FORM}, got 'itl:20'"),
        ("ttft:1,ttft:2", f"option `goodput`: SLO `ttft` given twice; {GOODPUT_FORM}, got 'ttft:1,ttft:2'"),
        ("", f"option `goodput`: {GOODPUT_FORM}, got ''"),
        (200, f"option `goodput`: {GOODPUT_FORM}, got 200"),
    ],
)  # fmt: skip
def test_bad_goodput_option(tmp_path: Path, value: Any, message: str) -> None:
    with pytest.raises(AdapterError) as err:
        read(goodput_file(tmp_path), goodput=value)
    assert str(err.value) == message


def test_bad_goodput_option_at_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernel_evidence.cli import main

    code = main(["ingest", "vllm", str(goodput_file(tmp_path)), "--opt", "goodput=ttft:fast",
                 "--created-at", T0, "-o", str(tmp_path / "out.json")])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 2 and "option `goodput`: `ttft:fast` is not a non-negative number" in err
    assert "Traceback" not in err
    code = main(["ingest", "vllm", str(goodput_file(tmp_path)), "--opt", "goodput=ttft:200,tpot:50",
                 "--created-at", T0, "-o", str(tmp_path / "out.json")])  # fmt: skip
    capsys.readouterr()
    packet = EvidencePacket.model_validate_json((tmp_path / "out.json").read_bytes())
    assert serving(packet).request_goodput.value == 1.0  # type: ignore[union-attr]


def test_sweep_csv_resaved_by_pandas_and_large_samples(tmp_path: Path) -> None:
    """`Unnamed: 0` is the index column once the CSV went through read_csv/to_csv again;
    runs with more samples than the inline cap reference the CSV (text/csv) or a sidecar."""
    f = tmp_path / "summary.csv"
    f.write_text("Unnamed: 0" + SWEEP_CSV.read_text())
    packets, warnings = read(f, inline_samples_max=5)
    assert "Unnamed: 0" not in raw(packets[0])["values"] and "" not in raw(packets[0])["values"]
    art = serving(packets[0]).samples_artifact
    assert art is not None and (art.media_type, art.name) == ("text/csv", "summary.csv#line 2")
    assert art.sha256 == "sha256:" + hashlib.sha256(f.read_bytes()).hexdigest()
    packets, _ = read(f, inline_samples_max=5, samples_dir=str(tmp_path / "side"))
    art = serving(packets[2]).samples_artifact
    assert art is not None and art.name.startswith("summary.line4.samples-") and art.name.endswith(".parquet")


def test_sla_search_summary_skipped_beside_run_files(tmp_path: Path) -> None:
    """`vllm bench sweep serve_sla` also writes `SLA--<criteria>.json`: the runs again."""
    base = tmp_path / "SERVE--max_num_seqs=4"
    (base / "request_rate=4").mkdir(parents=True)
    runs = json.loads(SWEEP_JSON.read_text())
    (base / "request_rate=4" / "run=0.json").write_text(json.dumps(runs[0]))
    sla = base / "SLA--p99_e2el_ms=<=500.json"
    sla.write_text(json.dumps(runs[:1]))
    packets, warnings = read(tmp_path)
    assert [raw(p)["source"] for p in packets] == ["run=0.json"]
    assert f"{sla}: skipped: SLA search summary of runs already read from the run=N.json files" in warnings


def test_sweep_csv_at_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernel_evidence.cli import main
    from kernel_evidence.io import read_packets

    out = tmp_path / "packets.jsonl"
    code = main(["ingest", "vllm", str(SWEEP_CSV), "--created-at", T0, "-o", str(out)])
    capsys.readouterr()
    assert code == 0
    assert [p.subject.name.split(" rate=")[1] for p in read_packets([out])] == [
        "inf concurrency=1 run=0",
        "4.0 concurrency=4 run=0",
        "4.0 concurrency=4 run=1",
    ]
    bad = tmp_path / "summary.csv"
    bad.write_text(SWEEP_CSV.read_text().split("\n")[0] + "\n")
    code = main(["ingest", "vllm", str(bad), "--created-at", T0, "-o", str(tmp_path / "x.jsonl")])
    _, err = capsys.readouterr()
    assert code == 1 and f"{bad}:line 1: a header and no rows" in err and "Traceback" not in err


# ------------------------------------------------------------------------------------------
# SGLang bench_offline_throughput JSONL; vLLM perf-benchmark summary tables
# ------------------------------------------------------------------------------------------
def test_sglang_offline_throughput_is_an_offline_run() -> None:
    """bench_offline_throughput writes bench_serving's throughput keys plus
    `successful_requests` and `total_latency` (s): read as an offline (host-clock) run with
    its request count and wall time, not as a serving run that lacks both."""
    p, _ = one(FIX / "sglang_offline_throughput.jsonl", model="org/tiny")
    s = serving(p)
    assert s.completed == 256
    assert s.duration is not None and s.duration.value == 12.5 and s.duration.unit == "s"
    assert s.request_throughput is not None and s.request_throughput.value == 20.48
    assert s.output_throughput is not None and s.output_throughput.value == 2621.44
    assert s.total_token_throughput is not None and s.total_token_throughput.value == 7864.32
    assert s.total_input_tokens == 65536 and s.total_output_tokens == 32768
    assert s.ttft is None and s.itl is None
    assert p.timing is not None and p.timing.method == "host_clock"
    assert p.subject.name == "org/tiny sglang bench_offline_throughput"
    raw = p.extensions["vllm:raw"]
    assert raw["format"] == "sglang_offline"
    assert raw["values"]["last_gen_throughput"] == 2900.25


def test_perf_benchmark_summary_tables_are_refused_with_what_to_ingest() -> None:
    """convert-results-json-to-markdown.py's JSON (pandas tables keyed by display names)
    is named as such, with the files to ingest instead."""
    with pytest.raises(AdapterError) as info:
        read(FIX / "bad_perf-summary-tables.json")
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"{FIX / 'bad_perf-summary-tables.json'}: the summary tables of vLLM's")
    assert "serving_*.json" in msg


def test_aiperf_schema_1_3_model_concurrency_and_command() -> None:
    """AIPerf 0.11 (schema 1.3) moved the model to `input_config.models.items[].name`, the
    concurrency into `input_config.phases[]` (a warm-up phase is excluded from results) and
    the command line to `run_info.cli_command`."""
    p, _ = one(FIX / "aiperf_0.11_schema1.3_phases.json")
    assert p.task is not None and p.task.serving is not None
    assert p.task.serving.model == "org/tiny-model"
    assert p.task.serving.max_concurrency == 8
    assert p.replay is not None
    assert p.replay.command == [
        "aiperf", "profile", "--model", "org/tiny-model", "--concurrency", "8", "--request-count", "40",
    ]  # fmt: skip
    s = serving(p)
    assert s.completed == 40
    assert stat(s.ttft).mean == 30.0 and stat(s.ttft).median == 28.0
    assert s.duration is not None and s.duration.value == 16.0
    assert p.subject.name == "org/tiny-model concurrency=8"
