"""vLLM / SGLang serving-benchmark adapter.

Real files from ../shared/corpus/vllm (numbers below were read out of each file by hand),
plus synthetic fixtures in tests/fixtures/vllm (made by make_fixtures.py there) for what the
corpus lacks: old key names, `request_goodput:`, sweep summaries, SGLang JSONL with
per-request arrays and an `Infinity` rate, NaN values, all-failed runs with error texts,
and broken inputs.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel_evidence.adapters import Adapter, AdapterOptions, get_adapter
from kernel_evidence.adapters._vllm_read import parse_runs
from kernel_evidence.adapters._vllm_stats import _summarize_python, have_numpy, summarize
from kernel_evidence.adapters.vllm import ADAPTER
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
    assert warnings == []


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
    # 2024 record: no model id anywhere -> no task.serving, but the results are kept
    assert old.task and old.task.serving is None
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
    "`vllm bench throughput` --output-json file, an SGLang bench_serving JSONL record, "
    "an InferenceX result or an AIPerf/GenAI-Perf profile export"
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
            "{f}: per-request arrays have different lengths (1, 2); "
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
    with pytest.raises(AdapterError, match=r"is larger than the 10-byte cap"):
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
