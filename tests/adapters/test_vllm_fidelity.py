"""vLLM / SGLang results: a result with no model id keeps its workload in the task (only the
model stays unknown); per-request ``input_lens``, ``output_lens`` and ``errors`` are kept
with the other per-request arrays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.vllm import ADAPTER
from kernel_evidence.models import EvidencePacket


def _read(path: Path) -> tuple[EvidencePacket, list[str]]:
    result = ADAPTER.read([str(path)], AdapterOptions(created_at="2026-11-27T00:00:00Z"))
    (packet,) = result.packets
    return packet, result.warnings


def _serve(tmp_path: Path, **keys: Any) -> Path:
    """A ``vllm bench serve --save-result`` file without ``model_id``, with 3 requests."""
    data = {
        "date": "20261127-010203",
        "backend": "vllm",
        "dataset_name": "random",
        "num_prompts": 3,
        "request_rate": 4.0,
        "max_concurrency": 2,
        "random_input_len": 512,
        "random_output_len": 64,
        "duration": 2.0,
        "completed": 2,
        "failed": 1,
        "total_input_tokens": 1024,
        "total_output_tokens": 128,
        "request_throughput": 1.0,
        "output_throughput": 64.0,
        "total_token_throughput": 576.0,
        "input_lens": [512, 512, 512],
        "output_lens": [64, 0, 64],
        "ttfts": [0.05, 0.0, 0.07],
        "itls": [[0.01] * 63, [], [0.012] * 63],
        "latencies": [0.7, 0.0, 0.83],
        "errors": ["", "HTTP 503: Service Unavailable", ""],
        **keys,
    }
    path = tmp_path / "serve_no_model.json"
    path.write_text(json.dumps(data))
    return path


def test_serve_result_without_model_keeps_its_workload(tmp_path: Path) -> None:
    packet, warnings = _read(_serve(tmp_path))
    assert packet.task is not None and packet.task.serving is not None
    t = packet.task.serving
    assert t.model is None
    assert (t.dataset, t.request_rate, t.max_concurrency, t.num_prompts) == ("random", 4.0, 2, 3)
    assert (t.input_len, t.output_len) == (512, 64)
    assert any("the model is not recorded in the file; task.serving.model left out" in w for w in warnings)


def test_sglang_result_without_model_keeps_its_workload(tmp_path: Path) -> None:
    line = {
        "backend": "sglang",
        "dataset_name": "random",
        "request_rate": 8.0,
        "max_concurrency": 16,
        "random_input_len": 1024,
        "random_output_len": 256,
        "duration": 20.0,
        "completed": 50,
        "total_input_tokens": 51200,
        "total_output_tokens": 12800,
        "total_output_tokens_retokenized": 12790,
        "output_throughput": 640.0,
        "mean_e2e_latency_ms": 2100.5,
        "median_ttft_ms": 95.5,
    }
    path = tmp_path / "sglang_no_model.jsonl"
    path.write_text(json.dumps(line) + "\n")
    packet, _ = _read(path)
    assert packet.task is not None and packet.task.workload == "sglang bench_serving"
    assert packet.task.serving is not None
    t = packet.task.serving
    assert t.model is None
    assert (t.dataset, t.request_rate, t.max_concurrency, t.input_len, t.output_len) == (
        "random",
        8.0,
        16,
        1024,
        256,
    )


def test_input_output_lengths_and_errors_kept_with_the_inlined_samples(tmp_path: Path) -> None:
    packet, _ = _read(_serve(tmp_path, model_id="facebook/opt-125m"))
    serving = packet.timing.serving if packet.timing else None
    assert serving is not None and serving.ttft is not None and serving.ttft.samples is not None
    assert len(serving.ttft.samples) == 2  # the successful requests' TTFTs are inlined
    raw = (packet.extensions or {})["vllm:raw"]
    assert raw["requests"] == {
        "input_lens": [512, 512, 512],
        "output_lens": [64, 0, 64],
        "errors": ["", "HTTP 503: Service Unavailable", ""],
    }
