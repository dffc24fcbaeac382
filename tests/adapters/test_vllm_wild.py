"""vLLM adapter: format variants met in real result files from public repositories.

Each test stands for one defect found by ingesting real files the adapter had not seen
(SGLang behind a prefill/decode router, a fork's ``{stat}_latency_ms`` keys, a container
tag with a build suffix, summary tables and AIPerf side files refused with a generic
message). The fixtures are small synthetic records written here; only the key names and
the shape of the real files are reproduced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_vllm import T0, one

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.vllm import ADAPTER
from kernel_evidence.errors import AdapterError


def error_of(path: Path) -> str:
    with pytest.raises(AdapterError) as err:
        ADAPTER.read([str(path)], AdapterOptions(created_at=T0))
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def write_json(tmp_path: Path, name: str, doc: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


# ------------------------------------------------------------------ SGLang behind a PD router
def _sglang_pd_record(prefill_version: str, decode_version: str, decode_tp: int = 2) -> dict[str, Any]:
    """bench_serving run against a prefill/decode router: ``server_info`` holds only the
    lists of the servers' own infos (no ``model_path`` at its top level)."""
    return {
        "tag": "pd-run",
        "backend": "sglang",
        "dataset_name": "random",
        "request_rate": 4.0,
        "max_concurrency": 3,
        "random_input_len": 40,
        "random_output_len": 20,
        "server_info": {
            "internal_states": [{"model_path": "org/tiny-model", "tp_size": 2, "last_gen_throughput": 5.0}],
            "prefill": [
                {"model_path": "org/tiny-model", "tp_size": 2, "pp_size": 1, "version": prefill_version}
            ],
            "decode": [
                {
                    "model_path": "org/tiny-model",
                    "tp_size": decode_tp,
                    "pp_size": 1,
                    "version": decode_version,
                }
            ],
        },
        "duration": 5.0,
        "completed": 10,
        "total_input_tokens": 400,
        "total_output_tokens": 200,
        "request_throughput": 2.0,
        "output_throughput": 40.0,
        "total_throughput": 120.0,
        "mean_e2e_latency_ms": 300.0,
        "median_e2e_latency_ms": 290.0,
        "mean_ttft_ms": 50.0,
        "median_ttft_ms": 45.0,
        "mean_itl_ms": 12.0,
        "median_itl_ms": 11.0,
    }


def test_sglang_behind_a_pd_router_takes_model_version_and_tp_from_the_servers(tmp_path: Path) -> None:
    rec = _sglang_pd_record("9.1.0", "9.1.0")
    path = tmp_path / "pd.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    p, warnings = one(path)
    assert p.task is not None and p.task.serving is not None
    task = p.task.serving
    assert task.model == "org/tiny-model"
    assert task.engine is not None and (task.engine.name, task.engine.version) == ("sglang", "9.1.0")
    assert task.tensor_parallel_size == 2 and task.pipeline_parallel_size == 1
    assert p.subject.name.startswith("org/tiny-model pd-run")
    assert not any("model is not recorded" in w for w in warnings)
    # the raw extension keeps server_info as the file wrote it
    assert p.extensions is not None
    assert p.extensions["vllm:raw"]["values"]["server_info"] == rec["server_info"]


def test_pd_servers_on_different_versions_leave_the_version_out_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "pd.jsonl"
    path.write_text(json.dumps(_sglang_pd_record("9.1.0", "9.2.0", decode_tp=4)) + "\n")
    p, warnings = one(path)
    assert p.task is not None and p.task.serving is not None
    task = p.task.serving
    assert task.model == "org/tiny-model"
    assert task.engine is not None and task.engine.name == "sglang" and task.engine.version is None
    assert task.tensor_parallel_size is None  # prefill TP 2, decode TP 4: no single value
    assert any("different `version` values" in w and "9.1.0" in w and "9.2.0" in w for w in warnings)
    assert any("different `tp_size` values" in w for w in warnings)


# ------------------------------------------------------------- fork spelling of the e2el stats
def test_fork_latency_ms_keys_are_the_end_to_end_latency(tmp_path: Path) -> None:
    """2024 copies of benchmark_serving.py (and Modular MAX's) write the per-request latency
    statistics as ``{stat}_latency_ms`` where upstream writes ``{stat}_e2el_ms``."""
    path = write_json(
        tmp_path,
        "fork.json",
        {
            "backend": "vllm",
            "model_id": "org/tiny-model",
            "num_prompts": 4,
            "request_rate": "inf",
            "duration": 2.0,
            "completed": 4,
            "total_input_tokens": 40,
            "total_output_tokens": 80,
            "request_throughput": 2.0,
            "output_throughput": 40.0,
            "mean_ttft_ms": 20.0,
            "median_ttft_ms": 19.0,
            "mean_latency_ms": 700.0,
            "median_latency_ms": 650.0,
            "std_latency_ms": 30.0,
            "p90_latency_ms": 760.0,
            "p99_latency_ms": 790.0,
        },
    )
    p, _ = one(path)
    assert p.timing is not None and p.timing.serving is not None
    e2el = p.timing.serving.e2el
    assert e2el is not None and e2el.unit == "ms"
    assert (e2el.mean, e2el.median, e2el.std) == (700.0, 650.0, 30.0)
    assert e2el.percentiles == {"p90": 760.0, "p99": 790.0}
    assert p.timing.stats is not None and p.timing.stats.mean == 700.0


# --------------------------------------------------------- container tag with a build suffix
@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("example/engine-rocm:v3.2.1.post2-rocm99-gpux-20990101", "3.2.1.post2"),
        ("example/engine:v3.2.1rc4-cu999", "3.2.1rc4"),
    ],
)
def test_engine_version_from_an_image_tag_leaves_the_build_suffix_out(
    tmp_path: Path, image: str, version: str
) -> None:
    path = write_json(
        tmp_path,
        "ix.json",
        {
            "hw": "h100",
            "conc": 2,
            "image": image,
            "model": "org/tiny-model",
            "framework": "sglang",
            "tp": 1,
            "num_requests_total": 6,
            "num_requests_successful": 6,
            "duration_seconds": 3.0,
            "output_tput_tps": 10.0,
        },
    )
    p, _ = one(path)
    assert p.task is not None and p.task.serving is not None and p.task.serving.engine is not None
    assert p.task.serving.engine.version == version
    assert p.extensions is not None and p.extensions["vllm:raw"]["values"]["image"] == image


# --------------------------------------------------------- files that are not results, named
def test_summary_table_written_as_rows_is_refused_as_a_summary_table(tmp_path: Path) -> None:
    path = write_json(
        tmp_path,
        "benchmark_results.json",
        [
            {"Test name": "serving_tiny_tp1_qps_1", "Request rate (req/s)": 1.0, "Tput (req/s)": 0.5},
            {"Test name": "serving_tiny_tp1_qps_inf", "Request rate (req/s)": "inf", "Tput (req/s)": 2.5},
        ],
    )
    message = error_of(path)
    assert "summary tables" in message and "[0]" in message


def test_aiperf_timeslices_export_is_refused_by_name(tmp_path: Path) -> None:
    path = write_json(
        tmp_path,
        "profile_export_aiperf_timeslices.json",
        {"timeslices": [{"start_ns": 1, "end_ns": 2, "request_count": {"unit": "requests", "avg": 1.0}}]},
    )
    assert "AIPerf timeslices export" in error_of(path)


def test_aiperf_sweep_aggregate_is_refused_by_name(tmp_path: Path) -> None:
    path = write_json(
        tmp_path,
        "profile_export_aiperf_sweep.json",
        {
            "aggregation_type": "sweep",
            "num_profile_runs": 2,
            "per_combination_metrics": [
                {"parameters": {"concurrency": 1}, "metrics": {"request_throughput": {"avg": 1.0}}}
            ],
        },
    )
    assert "AIPerf sweep aggregate" in error_of(path)


def test_aiperf_side_files_in_a_folder_are_skipped_with_a_warning(tmp_path: Path) -> None:
    write_json(tmp_path, "profile_export_aiperf_timeslices.json", {"timeslices": []})
    write_json(
        tmp_path,
        "r.json",
        {
            "model_id": "org/tiny-model",
            "completed": 1,
            "duration": 1.0,
            "mean_ttft_ms": 5.0,
            "median_ttft_ms": 5.0,
        },
    )
    res = ADAPTER.read([str(tmp_path)], AdapterOptions(created_at=T0))
    assert len(res.packets) == 1
    assert any("skipped" in w and "AIPerf timeslices export" in w for w in res.warnings)


# ------------------------------------------- 0.0 placeholders of a metric with no sample at all
def test_latency_whose_every_statistic_is_zero_is_left_out_without_arrays(tmp_path: Path) -> None:
    """SGLang (and vLLM) write ``np.mean(itls or 0)`` etc.: a run whose responses each arrived
    in one chunk has no inter-token gap and its ITL statistics are all 0.0 placeholders, which
    must not become a measured ITL of 0 ms even when the file keeps no per-request arrays."""
    rec = {
        "backend": "sglang",
        "dataset_name": "random",
        "request_rate": "inf",
        "max_concurrency": 1,
        "server_info": {"model_path": "org/tiny-model", "tp_size": 2, "version": "9.1.0"},
        "duration": 10.0,
        "completed": 5,
        "total_input_tokens": 50,
        "total_output_tokens": 40,
        "request_throughput": 0.5,
        "output_throughput": 4.0,
        "mean_e2e_latency_ms": 300.0,
        "median_e2e_latency_ms": 290.0,
        "mean_ttft_ms": 280.0,
        "median_ttft_ms": 275.0,
        "mean_tpot_ms": 2.5,
        "median_tpot_ms": 2.4,
        "mean_itl_ms": 0.0,
        "median_itl_ms": 0.0,
        "std_itl_ms": 0.0,
        "p95_itl_ms": 0.0,
        "p99_itl_ms": 0.0,
    }
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    p, warnings = one(path)
    assert p.timing is not None and p.timing.serving is not None
    serving = p.timing.serving
    assert serving.itl is None
    assert serving.ttft is not None and serving.ttft.mean == 280.0
    assert serving.tpot is not None and serving.tpot.mean == 2.5
    assert any("`itl`: every statistic in the file is 0.0" in w for w in warnings)
    assert p.extensions is not None and p.extensions["vllm:raw"]["values"]["p99_itl_ms"] == 0.0


# ------------------------------------------ failures of a result that has no `failed` key
def _old_serve_record(num_prompts: int, completed: int, **extra: Any) -> dict[str, Any]:
    """benchmark_serving.py before it wrote `failed` (and without --save-detailed arrays)."""
    return {
        "date": "20990101-000000",
        "backend": "vllm",
        "model_id": "org/tiny-model",
        "num_prompts": num_prompts,
        "request_rate": "inf",
        "duration": 4.0,
        "completed": completed,
        "total_input_tokens": completed * 10,
        "total_output_tokens": completed * 5,
        "request_throughput": completed / 4.0,
        "output_throughput": completed * 5 / 4.0,
        "mean_ttft_ms": 20.0,
        "median_ttft_ms": 19.0,
        **extra,
    }


def test_requests_missing_from_completed_count_as_failed_when_the_file_has_no_failed_key(
    tmp_path: Path,
) -> None:
    path = write_json(tmp_path, "r.json", _old_serve_record(10, 6))
    p, warnings = one(path)
    assert p.status.value == "passed"
    assert p.timing is not None and p.timing.serving is not None
    assert (p.timing.serving.completed, p.timing.serving.failed) == (6, 4)
    assert p.extensions is not None and "failed" in p.extensions["vllm:raw"]["derived"]
    assert any("4 of 10 requests failed" in w and "`num_prompts` 10 - `completed` 6" in w for w in warnings)


@pytest.mark.parametrize(
    ("num_prompts", "completed", "extra", "failed"),
    [(10, 10, {}, None), (10, 6, {"failed": 1}, 1)],
)
def test_failed_is_not_derived_when_every_request_completed_or_the_file_counts_failures(
    tmp_path: Path, num_prompts: int, completed: int, extra: dict[str, Any], failed: int | None
) -> None:
    path = write_json(tmp_path, "r.json", _old_serve_record(num_prompts, completed, **extra))
    p, warnings = one(path)
    assert p.timing is not None and p.timing.serving is not None
    assert p.timing.serving.failed == failed
    assert "failed" not in ((p.extensions or {})["vllm:raw"].get("derived") or [])
    assert not any("keeps no `failed` count" in w for w in warnings)
