"""KE106: the replay runs what the packet records. A workload flag the replay command gives
the benchmark it runs (behind wrappers, containers, `python -m`, inside `bash -lc`) must not
contradict the packet: a serving client's or server's model, prompt count, lengths,
concurrency, rate and tensor parallelism (the finding points at the task.serving field), a
kernel benchmark's m/n/k, `--shape` and `--dtype` (the finding points at the replay).
Each cheat is caught where it lies; its honest near-twin is let through."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate
from kernel_evidence.rules import replay

VALID = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"
IMG = "ghcr.io/example/vllm:0.11.0@sha256:" + "7d2f" * 16
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def _example(name: str) -> dict[str, Any]:
    d: dict[str, Any] = json.loads((VALID / f"{name}.json").read_text(encoding="utf-8"))
    d.pop("packet_id")
    return d


def serving() -> dict[str, Any]:
    """vllm bench serve: Llama-3.1-8B-Instruct, 1000 prompts, 1024 in / 128 out, 64 in flight,
    request rate inf, tensor parallel 1."""
    return _example("serving_vllm_llama8b_h100")


def kernel() -> dict[str, Any]:
    """An H100 bf16 GEMM timed at m4096n4096k4096, replayed with `--m 4096 --n 4096 --k 4096
    --dtype bf16`."""
    return _example("nvidia_h100_gemm_vs_cublaslt")


VB = serving()["replay"]["command"]  # ["vllm", "bench", "serve", "--model", ...]


def found(d: dict[str, Any]) -> set[str]:
    return {f.pointer for f in validate(d).findings if f.rule_id == "KE106"}


def messages(d: dict[str, Any]) -> list[str]:
    return [f.message for f in validate(d).findings if f.rule_id == "KE106"]


def with_command(d: dict[str, Any], argv: list[str], shell: bool = False) -> dict[str, Any]:
    d["replay"]["command"] = argv
    if shell:
        d["replay"]["shell"] = True
    return d


def swap(argv: list[str], flag: str, value: str) -> list[str]:
    a = list(argv)
    a[a.index(flag) + 1] = value
    return a


def test_the_examples_are_clean() -> None:
    for f in sorted(VALID.glob("*.json")):
        d = json.loads(f.read_text(encoding="utf-8"))
        assert not [x for x in validate(d).findings if x.rule_id == "KE106"], f.name


# ---------------------------------------------------------------- serving: the cheats


def test_fp8_checkpoint_served_while_the_task_names_bf16() -> None:
    d = with_command(serving(), swap(VB, "--model", "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8"))
    r = validate(d)
    assert not r.ok
    (m,) = messages(d)
    assert found(d) == {"/task/serving/model"}
    assert (
        "`meta-llama/Llama-3.1-8B-Instruct`" in m and "--model RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8" in m
    )


def test_num_prompts_lowered_while_the_replay_sends_1000() -> None:
    d = serving()
    d["task"]["serving"]["num_prompts"] = 880
    assert "/task/serving/num_prompts" in found(d)
    assert any("num_prompts is 880" in m and "`--num-prompts 1000`" in m for m in messages(d))


def test_output_len_raised_while_the_replay_asks_128() -> None:
    d = serving()
    d["task"]["serving"]["output_len"] = 256
    assert "/task/serving/output_len" in found(d)


def test_replay_concurrency_differs_from_the_task() -> None:
    d = with_command(serving(), swap(VB, "--max-concurrency", "256"))
    assert found(d) == {"/task/serving/max_concurrency"}
    assert not validate(d).ok


@pytest.mark.parametrize(
    ("argv", "pointer"),
    [
        (swap(VB, "--random-input-len", "512"), "/task/serving/input_len"),
        ([*VB, "--request-rate", "20"], "/task/serving/request_rate"),  # the task says inf
        ([*VB, "--request-rate", "1", "2", "4"], "/task/serving/request_rate"),  # inf not among them
        (["vllm", "serve", MODEL, "-tp", "2"], "/task/serving/tensor_parallel_size"),
        (["vllm", "serve", MODEL, "--tensor-parallel-size=2"], "/task/serving/tensor_parallel_size"),
        (["vllm", "bench", "serve", "--num_prompts", "500"], "/task/serving/num_prompts"),  # `_` spelling
        (["python3", "-m", "sglang.bench_serving", "--backend", "sglang", "--num-prompts", "500"], "/task/serving/num_prompts"),
        (["python", "benchmarks/benchmark_serving.py", "--max-concurrency=32"], "/task/serving/max_concurrency"),
        (["nsys", "profile", "-o", "run", "vllm", "bench", "serve", "--num-prompts", "10"], "/task/serving/num_prompts"),
        (["timeout", "7200", "python", "-m", "vllm.entrypoints.cli.main", *swap(VB, "--num-prompts", "100")[1:]], "/task/serving/num_prompts"),
        (["docker", "run", "--rm", "--gpus", "all", IMG, "bash", "-lc", " ".join(swap(VB, "--max-concurrency", "8"))], "/task/serving/max_concurrency"),
        (["docker", "run", "--gpus", "all", "vllm/vllm-openai:v0.11.0", "--model", "Qwen/Qwen3-8B"], "/task/serving/model"),
        (["guidellm", "benchmark", "--target", "http://localhost:8000", "--model", "Qwen/Qwen3-8B"], "/task/serving/model"),
        (["bash", "-c", "vllm serve org/Other-8B --served-model-name fast & vllm bench serve --model fast"], "/task/serving/model"),
        (swap(VB, "--model", "/models/llama-3.1-70b-instruct"), "/task/serving/model"),  # 70B is not 8B
    ],
)  # fmt: skip
def test_serving_flag_contradicting_the_task(argv: list[str], pointer: str) -> None:
    d = with_command(serving(), argv)
    assert pointer in found(d), argv
    assert not validate(d).ok


def test_a_shell_string_replay_is_read() -> None:
    d = with_command(serving(), [" ".join(swap(VB, "--num-prompts", "10"))], shell=True)
    assert found(d) == {"/task/serving/num_prompts"}


# ---------------------------------------------------------------- serving: honest twins

HONEST_SERVING = [
    VB,
    ["vllm", "bench", "serve", f"--model={MODEL}", "--num-prompts=1000", "--max-concurrency=64"],
    ["vllm", "bench", "serve", "--num_prompts", "1000", "--random_output_len", "128"],
    [*VB, "--request-rate", "inf"],
    # the candidate and the baseline in one script: the packet's value among the replay's
    ["bash", "-c", " ".join(swap(VB, "--max-concurrency", "16")) + "; " + " ".join(VB)],
    ["bash", "-c", "for c in 16 64 256; do vllm bench serve --max-concurrency $c --num-prompts 1000; done"],
    ["vllm", "bench", "serve", "--num-prompts", "$N"],  # the shell fills it in
    # the server and the client in a digest-pinned container
    ["docker", "run", "--rm", "--gpus", "all", "--ipc", "host", IMG, "bash", "-lc",
     f"vllm serve {MODEL} --max-num-seqs 256 & until curl -sf localhost:8000/health; do sleep 5; done; " + " ".join(VB)],
    ["timeout", "7200", "python", "-m", "vllm.entrypoints.cli.main", *VB[1:]],
    # the model: Meta's renamed repository, a mirror, a local copy, an alias of the server's
    swap(VB, "--model", "meta-llama/Meta-Llama-3.1-8B-Instruct"),
    swap(VB, "--model", "unsloth/Llama-3.1-8B-Instruct"),
    swap(VB, "--model", "/models/llama-3.1-8b-instruct"),
    swap(VB, "--model", "models/my-finetune"),  # a relative path: no size named
    ["bash", "-c", "vllm serve /models/x --served-model-name fast & vllm bench serve --model fast --num-prompts 1000"],
    ["vllm", "serve", MODEL, "--tensor-parallel-size", "1"],
    # a random prefix counted with the input, a dataset's flags for a dataset not run
    [*swap(VB, "--random-input-len", "512"), "--random-prefix-len", "512"],
    [*VB, "--sonnet-input-len", "550", "--sharegpt-output-len", "256"],
    # a subshell this reader does not follow: nothing is read
    ["bash", "-c", "(cd /w && vllm bench serve --num-prompts 10)"],
]  # fmt: skip


@pytest.mark.parametrize("argv", HONEST_SERVING)
def test_serving_replay_agreeing_with_the_task(argv: list[str]) -> None:
    assert not found(with_command(serving(), argv)), argv


def test_a_rate_sweep_that_holds_the_packets_rate() -> None:
    d = with_command(serving(), [*VB, "--request-rate", "1", "2", "4"])
    d["task"]["serving"]["request_rate"] = 2.0
    assert not found(d)
    d["task"]["serving"]["request_rate"] = 8.0
    assert found(d) == {"/task/serving/request_rate"}


def test_a_field_the_task_leaves_out_is_not_compared() -> None:
    d = with_command(serving(), swap(VB, "--max-concurrency", "256"))
    del d["task"]["serving"]["max_concurrency"]
    assert not found(d)


def test_a_local_path_naming_no_size_against_a_hub_id_is_let_through() -> None:
    """Only the parameter counts named can tell a local path from another model."""
    d = serving()
    d["task"]["serving"]["model"] = "/mnt/weights/llama31-instruct"
    assert not found(d)
    d["task"]["serving"]["model"] = "/mnt/weights/llama31-70b-instruct"
    assert found(d) == {"/task/serving/model"}


# ---------------------------------------------------------------- kernels

GEMM = ["python", "bench/gemm.py"]


@pytest.mark.parametrize(
    "argv",
    [
        [*GEMM, "--m", "1024", "--n", "1024", "--k", "1024", "--dtype", "bf16"],
        [*GEMM, "-m", "1024", "-n", "1024", "-k", "1024"],
        [*GEMM, "--M=4096", "--N=4096", "--K=1024"],
        [*GEMM, "--shape", "1024x1024x1024"],
        [*GEMM, "--shape", "m1024n1024k1024"],
        [*GEMM, "--dtype", "fp16"],
        ["python", "-m", "bench.gemm", "-m", "1024", "-n", "1024", "-k", "1024"],
        ["docker", "run", "--rm", IMG, *GEMM, "--m", "1024", "--n", "1024", "--k", "1024"],
        ["srun", "-n", "1", "bash", "-lc", "cd /w && python bench/gemm.py --m 1024 --n 1024 --k 1024"],
        ["sbatch", "--wrap", "python bench/gemm.py --m 1024 --n 1024 --k 1024"],
    ],
)
def test_kernel_replay_running_another_shape_or_dtype(argv: list[str]) -> None:
    d = with_command(kernel(), argv)
    assert found(d) == {"/replay/command"}, argv
    assert not validate(d).ok


def test_the_1024_cube_replayed_for_the_timed_8192() -> None:
    d = kernel()
    d["task"]["shapes"][0]["dims"] = {"m": 8192, "n": 8192, "k": 8192}
    d["task"]["shapes"][0]["id"] = d["timing"]["shape_id"] = d["validation"]["shapes"][0]["shape_id"] = (
        "m8192"
    )
    with_command(d, ["python", "bench/run.py", "--kernel", "gemm_bf16_tn_8192_ws", "--m", "1024", "--n", "1024", "--k", "1024", "--dtype", "bf16"])  # fmt: skip
    (m,) = messages(d)
    assert "`--m 1024 --n 1024 --k 1024`" in m and "m=8192 n=8192 k=8192" in m
    assert found(d) == {"/replay/command"}


@pytest.mark.parametrize(
    "argv",
    [
        kernel()["replay"]["command"],
        [*GEMM],  # a suite: no shape flags
        [*GEMM, "--shapes", "all"],
        [*GEMM, "--shape", "all"],
        [*GEMM, "--shape", "m4096n4096k4096"],  # the timed shape's id
        [*GEMM, "--shape", "4096x4096x4096"],
        [*GEMM, "--m", "1024", "4096", "--n", "1024", "4096", "--k", "1024", "4096"],  # a sweep
        [*GEMM, "--m", "1024", "--m", "4096", "--n", "4096", "--k", "4096"],  # a flag repeated
        [*GEMM, "--dtype", "bfloat16"],
        [*GEMM, "--dtype", "auto"],
        [*GEMM, "-n", "100", "-m", "4096"],  # not a GEMM's three dims: `-n` may count runs
        ["pytest", "bench", "-k", "1024", "-n", "8", "-m", "2"],  # pytest's own -k/-n/-m
        ["uv", "run", "pytest", "bench", "-k", "1024", "-n", "8", "-m", "2"],
        [*GEMM, "--shape", "bf16_1024x1024"],  # a name, not sizes
        [*GEMM, "--shape", "llama70b_qkv"],
        ["mpirun", "-n", "8", *GEMM, "--m", "4096", "--n", "4096", "--k", "4096"],
        ["numactl", "-m", "0", *GEMM, "--m", "4096", "--n", "4096", "--k", "4096"],
        ["ncu", "-k", "regex:gemm", "-c", "1", *GEMM, "--m", "4096", "--n", "4096", "--k", "4096"],
        [
            "bash",
            "-c",
            "python check.py --m 128 --n 128 --k 128 && python bench/gemm.py --m 4096 --n 4096 --k 4096",
        ],
        ["bash", "-c", "for M in 1024 4096; do python bench/gemm.py --m $M --n $M --k $M; done"],
    ],
)
def test_kernel_replay_running_the_timed_shape(argv: list[str]) -> None:
    assert not found(with_command(kernel(), argv)), argv


def test_fp8_inputs_with_a_bf16_output_replayed_as_fp8() -> None:
    d = _example("amd_mi300x_gemm_fp8_vs_hipblaslt")  # task.dtypes [fp8_e4m3fnuz, bf16]
    assert not found(with_command(d, ["python", "bench/gemm_fp8.py", "--dtype", "fp8"]))
    assert found(with_command(d, ["python", "bench/gemm_fp8.py", "--dtype", "fp16"])) == {"/replay/command"}


def test_another_shape_of_the_suite_named_by_its_id() -> None:
    d = kernel()
    d["task"]["shapes"].append({"id": "m1024", "dims": {"m": 1024, "n": 1024, "k": 1024}})
    assert found(with_command(d, [*GEMM, "--shape", "m1024"])) == {"/replay/command"}
    assert not found(with_command(d, [*GEMM, "--shape", "m4096n4096k4096"]))


def test_serving_flags_are_not_read_as_a_kernels() -> None:
    """`--dtype` given to vLLM is the model's dtype, not a kernel's: a serving packet's
    replay is read for the serving fields only."""
    assert not found(with_command(serving(), [*VB, "--dtype", "float16"]))


# ---------------------------------------------------------------- cost


def test_the_reading_is_cached_per_argv() -> None:
    argv = [*GEMM, "--m", "4096", "--n", "4096", "--k", "4096"]
    w = replay._workload(argv, None)
    assert w is not None and replay._workload(list(argv), None) is w
    assert replay._workload(["python", "bench.py", "--iters", "50"], None) is None  # nothing to read
    assert replay._workload(["vllm", "bench", "serve", "--num-prompts", "$N"], None) is None  # nothing held
