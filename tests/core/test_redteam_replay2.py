"""Red-team fixes (second round) in the replay, hardware and identity bands: each cheat is
caught where it lies, and its honest near-twin is let through.

- KE103: the program that really runs is found behind valued options (`docker run
  --stop-signal SIGINT IMAGE true`, `timeout -s KILL 60 true`, `srun -p q --gres gpu:1 true`),
  an `--entrypoint`, `docker compose run`, `sbatch --wrap`; `--help`/`--version` and zero
  counts (`--num-prompts 0`) are looked for on that program; shell scripts are read in order
  (`true || CMD`, comments only, `exit 0; CMD`); `python -c` dead code and literal no-op
  subprocesses; a `timeout` shorter than the run it reproduces.
- KE104: git's empty tree (or blob) as the commit. KE105: the SHA-256 of empty input as the
  digest, and a hash of nothing inside the image reference.
- KE805: data-parallel replicas count in the devices a serving run needs.
- KE006: a created_at days in the future grades C at best.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate

VALID = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"
IMG = "ghcr.io/example/kernels:2026.11@sha256:" + "7d2f" * 16


def _example(name: str) -> dict[str, Any]:
    d: dict[str, Any] = json.loads((VALID / f"{name}.json").read_text(encoding="utf-8"))
    d.pop("packet_id")
    return d


def serving() -> dict[str, Any]:
    """vllm bench serve, 1000 prompts, a 31.4 s run on one H100."""
    return _example("serving_vllm_llama8b_h100")


def kernel() -> dict[str, Any]:
    """An H100 GEMM: 31 samples of ~150 us (4.7 ms of timed work) on one device."""
    return _example("nvidia_h100_gemm_vs_cublaslt")


VB = serving()["replay"]["command"]  # ["vllm", "bench", "serve", ...]
VBS = " ".join(VB)


def found(d: dict[str, Any], rule: str) -> set[str]:
    return {f.pointer for f in validate(d).findings if f.rule_id == rule}


def errors(d: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in validate(d).findings if f.severity == "error"}


def with_command(d: dict[str, Any], argv: list[str]) -> dict[str, Any]:
    d["replay"]["command"] = argv
    return d


# ---------------------------------------------------------------- KE103: what really runs

HOLLOW = [
    # containers: every valued option read with its value; an entrypoint replaces what runs
    ["docker", "run", "--rm", "--gpus", "all", "--entrypoint", "true", IMG, *VB],
    ["docker", "run", "--rm", "--entrypoint=true", IMG, *VB],
    ["docker", "run", "--rm", "--gpus", "all", "--stop-signal", "SIGINT", IMG, "true"],
    ["docker", "run", "--rm", "--health-cmd", "x", "--log-opt", "max-size=1m", IMG, "true"],
    ["docker", "--context", "remote", "run", "-it", "--rm", IMG, "true"],
    ["podman", "run", "--rm", "--systemd", "always", IMG, "echo", "done"],
    ["docker", "compose", "run", "--rm", "bench", "true"],
    ["docker", "compose", "-f", "bench.yml", "run", "--rm", "-e", "A=1", "bench", "true"],
    ["docker", "compose", "run", "--rm", "--entrypoint", "true", "bench"],
    ["docker-compose", "run", "bench", "true"],
    ["docker", "compose", "--dry-run", "run", "bench", "python", "bench.py"],
    ["docker", "exec", "-it", "bench-ctr", "true"],
    ["apptainer", "exec", "--nv", "-B", "/data:/data", "img.sif", "true"],
    ["docker", "run", "--rm", IMG, "--help"],  # the image's entrypoint asked for its help
    # wrappers with valued options
    ["timeout", "-s", "KILL", "3600", "true"],
    ["timeout", "--kill-after=5", "--signal", "INT", "3600", "true"],
    ["srun", "-p", "h100", "--gres", "gpu:1", "true"],
    ["srun", "--partition=h100", "-N1", "--", "true"],
    ["salloc", "-N", "1", "--gres", "gpu:1", "true"],
    ["sbatch", "--wait", "--wrap", "true"],
    ["sbatch", "--wait", "--wrap=exit 0"],
    ["sbatch", "--test-only", "job.sh"],
    ["mpirun", "-np", "8", "--mca", "btl", "^openib", "true"],
    ["numactl", "-N", "0", "-m", "0", "true"],
    ["env", "-u", "HOME", "-C", "/tmp", "true"],
    ["env", "-S", "true now"],
    ["flock", "/tmp/gpu.lock", "-c", "true"],
    ["command", "-v", "vllm"],
    # --help / --version given to the program that runs
    ["env", "VLLM_USE_V1=1", *VB, "--help"],
    ["python", "-m", "vllm.entrypoints.cli.main", *VB[1:], "--help"],
    ["bash", "-c", VBS + " --help"],
    ["bash", "-lc", VBS + " --version"],
    ["timeout", "7200", *VB, "--help"],
    ["bash", "scripts/bench.sh", "--help"],
    # shell scripts that run nothing
    ["bash", "-c", "true || " + VBS],
    ["bash", "-c", "false && " + VBS],
    ["sh", "-c", "true || false || " + VBS],
    ["bash", "-lc", "# " + VBS],
    ["bash", "-lc", "  # " + VBS + "\n\n# and nothing else"],
    ["bash", "-c", "exit 0; " + VBS],
    ["bash", "-c", "true && exit; " + VBS],
    ["bash", "-c", "exec true; " + VBS],
    ["bash", "-c", "set -e; cd /work && echo " + VBS],
    ["bash", "-c", "echo " + VBS + " > /dev/null 2>&1"],
    # python -c that never runs what it names
    ["python", "-c", "if False:\n    import runpy\n    runpy.run_module('vllm.entrypoints.cli.main')"],
    ["python", "-c", "if 0:\n    import bench; bench.run()\nelse:\n    pass"],
    ["python", "-c", "import sys; sys.exit(0); import bench; bench.run()"],
    ["python", "-c", "while False:\n    bench.run()"],
    ["python", "-c", "raise SystemExit(0)\nimport bench; bench.run()"],
    ["python3", "-c", "import subprocess; subprocess.run(['true'])"],
    ["python3", "-c", "import subprocess as sp; sp.check_call('exit 0', shell=True)"],
    ["python3", "-c", "import os; os.system('true')"],
    ["python3", "-c", "from subprocess import run\nrun(['echo', 'vllm bench serve'])"],
    # told to do no work
    [a if a != "1000" else "0" for a in VB],
    [*VB[:-5], "--num-prompts=0"],
    ["python", "bench/gemm.py", "--iters", "0"],
    ["python", "bench/gemm.py", "--num_repeats=0"],
    ["docker", "run", "--rm", IMG, *[a if a != "1000" else "0" for a in VB]],
]


@pytest.mark.parametrize("argv", HOLLOW, ids=lambda a: " ".join(a)[:50])
def test_a_replay_that_runs_nothing_is_caught(argv: list[str]) -> None:
    d = with_command(serving(), argv)
    assert ("KE103", "/replay/command") in errors(d)


def test_a_shell_string_replay_is_read_the_same_way() -> None:
    d = serving()
    d["replay"]["shell"] = True
    d["replay"]["command"] = ["true || " + VBS]
    assert ("KE103", "/replay/command") in errors(d)
    d["replay"]["command"] = ["cd bench && " + VBS]
    assert not found(d, "KE103")


RUNS = [
    ["docker", "run", "--rm", "--gpus", "all", "--stop-signal", "SIGINT", IMG, *VB],
    ["docker", "run", "--rm", "-it", "-e", "A=1", "-v", "/a:/b", "--shm-size=16g", IMG, *VB],
    ["docker", "run", "--rm", "--entrypoint", "vllm", IMG, *VB[1:]],
    ["docker", "run", "--rm", "--entrypoint=", IMG, *VB],  # clears the image's entrypoint
    ["docker", "run", "--rm", "--gpus", "all", IMG],  # the image's own command
    ["docker", "run", "--rm", "vllm/vllm-openai@sha256:" + "ab" * 32, "--model", "m"],
    ["podman", "run", "--rm", "--device", "nvidia.com/gpu=all", "--security-opt=label=disable", IMG, *VB],
    ["docker", "compose", "run", "--rm", "bench"],
    ["docker", "compose", "-f", "bench.yml", "run", "--rm", "-e", "A=1", "bench", *VB],
    ["docker", "exec", "-it", "bench-ctr", *VB],
    ["apptainer", "exec", "--nv", "-B", "/data:/data", "img.sif", *VB],
    ["timeout", "-s", "KILL", "3600", *VB],
    ["timeout", "--signal=INT", "-k", "10", "1h", *VB],
    ["srun", "-p", "h100", "--gres", "gpu:1", "--ntasks=1", *VB],
    ["srun", "--pty", "-N", "1", *VB],
    ["sbatch", "--wait", "--wrap", VBS],
    ["sbatch", "-p", "h100", "bench.sbatch"],
    ["mpirun", "-np", "1", "--mca", "btl", "^openib", "-x", "NCCL_DEBUG", *VB],
    ["numactl", "--cpunodebind=0", "--membind=0", *VB],
    ["env", "-S", VBS],
    ["flock", "-w", "600", "/tmp/gpu.lock", "-c", VBS],
    ["python", "-m", "vllm.entrypoints.cli.main", *VB[1:]],
    # scripts that run the benchmark
    ["bash", "-c", "cd /work && " + VBS],
    ["bash", "-c", "set -euo pipefail; cd /work; " + VBS],
    ["bash", "-euo", "pipefail", "-c", VBS],
    [
        "bash",
        "-lc",
        "vllm serve meta-llama/Llama-3.1-8B-Instruct & until curl -sf localhost:8000/health; "
        "do sleep 5; done; " + VBS,
    ],
    ["bash", "-c", "vllm serve m & sleep 60; " + VBS + "; kill %1; wait"],
    ["bash", "-c", "true && " + VBS],
    ["bash", "-c", "false || " + VBS],
    ["bash", "-c", "cd /work || exit 1; " + VBS],
    ["bash", "-c", "[ -d /work ] || exit 1\n# the client\n" + VBS],
    ["bash", "-c", VBS + " 2>&1 | tee bench.log"],
    ["bash", "-c", "echo start; " + VBS + " > out.json; exit 0"],
    ["bash", "-c", "vllm --version && " + VBS],  # prints the version, then runs
    ["bash", "-c", "echo $(" + VBS + ")"],  # a command substitution runs
    ["bash", "-c", "python - <<EOF\nimport bench\nEOF"],  # a here-document is not followed
    ["bash", "-c", "if [ -d /work ]; then " + VBS + "; fi"],
    ["bash", "-c", "exec " + VBS],
    # python -c that runs
    ["python", "-c", "if True:\n    import bench; bench.run()"],
    ["python", "-c", "from bench import main\nif __name__ == '__main__':\n    main()"],
    ["python", "-c", "from bench import main\nraise SystemExit(main())"],
    ["python", "-c", "import os\nif os.environ.get('X'):\n    pass\nimport bench; bench.main()"],
    ["python3", "-c", "import subprocess; subprocess.run(['vllm', 'bench', 'serve'])"],
    ["python3", "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])", *VB],
    # counts that are not the work (warm-up, seeds, sampling)
    [*VB, "--seed", "0", "--temperature=0"],
    ["python", "bench/gemm.py", "--warmup-iters", "0", "--iters", "100"],
    ["python", "bench/gemm.py", "--num-warmup", "0"],
]


@pytest.mark.parametrize("argv", RUNS, ids=lambda a: " ".join(a)[:50])
def test_a_replay_that_runs_the_benchmark_passes(argv: list[str]) -> None:
    d = with_command(serving(), argv)
    assert not found(d, "KE103")
    assert errors(d) <= errors(serving())


# ---------------------------------------------------------------- KE103: cut short by a timeout


@pytest.mark.parametrize("limit", ["1", "20", "0.5m", "--kill-after=5 20"])
def test_a_timeout_shorter_than_the_serving_run(limit: str) -> None:
    *opts, dur = limit.split()
    d = with_command(serving(), ["timeout", *opts, dur, *VB])  # the run took 31.4 s
    assert found(d, "KE103") == {"/replay/command"}
    d = with_command(serving(), ["bash", "-c", f"timeout {limit} {VBS}"])  # its only command
    assert found(d, "KE103") == {"/replay/command"}


@pytest.mark.parametrize("limit", ["7200", "1h", "40", "-k 20 20", "0"])  # 0: no timeout
def test_a_timeout_longer_than_the_serving_run_passes(limit: str) -> None:
    *opts, dur = limit.split()
    d = with_command(serving(), ["timeout", *opts, dur, *VB])
    assert not found(d, "KE103")
    d = with_command(serving(), ["docker", "run", "--rm", IMG, "timeout", *opts, dur, *VB])
    assert not found(d, "KE103")


def test_a_timeout_around_another_command_of_a_script_is_not_compared() -> None:
    # the timeout bounds the wait for the server, not the benchmark
    d = with_command(
        serving(), ["bash", "-c", "timeout 10 sh -c 'until curl -sf x; do sleep 1; done'; " + VBS]
    )
    assert not found(d, "KE103")


def test_a_timeout_shorter_than_the_kernels_timed_work() -> None:
    argv = ["python", "bench/gemm.py", "--m", "4096"]
    d = with_command(kernel(), ["timeout", "0.001", *argv])  # 31 samples of ~150 us: 4.7 ms
    assert found(d, "KE103") == {"/replay/command"}
    d = with_command(kernel(), ["timeout", "0.01", *argv])
    assert not found(d, "KE103")
    # the timed work spread over 8 devices: 0.6 ms each
    d = with_command(kernel(), ["timeout", "0.001", *argv])
    d["hardware"]["count"] = 8
    d["replay"]["env"] = {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    assert not found(d, "KE103")


# ---------------------------------------------------------------- KE104, KE105: hashes of nothing


@pytest.mark.parametrize(
    "commit",
    [
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904",  # git's empty tree
        "4B825DC642CB6EB9A060E54BF8D69288FBEE4904",
        "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321",  # in a SHA-256 repository
        "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",  # the empty blob
        "4b825dc642cb6eb9a060e54bf8d69288f23b8904",  # its first 12 digits and more
    ],
)
def test_a_commit_that_is_gits_empty_object(commit: str) -> None:
    d = serving()
    d["replay"]["repository"]["commit"] = commit
    assert ("KE104", "/replay/repository/commit") in errors(d)


@pytest.mark.parametrize("commit", ["4b825dc7e5b1d4c8a9e0f6b2d7c1a5e3f9b8d4c2", "4b825dc", "e69de2a"])
def test_a_commit_sharing_a_few_digits_with_the_empty_tree_passes(commit: str) -> None:
    d = serving()
    d["replay"]["repository"]["commit"] = commit
    assert not found(d, "KE104")


EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_a_digest_of_empty_input() -> None:
    d = serving()
    d["replay"]["container"]["digest"] = EMPTY
    assert found(d, "KE105") == {"/replay/container/digest"}
    assert validate(d).grade.letter == "C"


@pytest.mark.parametrize("ref", ["@sha256:" + "0" * 64, "@" + EMPTY])
def test_a_hash_of_nothing_inside_the_image_reference(ref: str) -> None:
    d = serving()
    d["replay"]["container"] = {"image": "vllm/vllm-openai:latest" + ref}
    assert found(d, "KE105") == {"/replay/container"}
    assert validate(d).grade.letter == "C"


def test_a_real_digest_inside_the_image_reference_passes() -> None:
    d = serving()
    d["replay"]["container"] = {"image": "vllm/vllm-openai:latest@sha256:" + "7d2f" * 16}
    assert not found(d, "KE105")
    d = serving()
    d["replay"]["container"]["digest"] = "sha256:" + "e3b0" * 16
    assert not found(d, "KE105")


# ---------------------------------------------------------------- KE805: data-parallel replicas


@pytest.mark.parametrize(
    "setting",
    [("data_parallel_size", 2), ("data-parallel-size", 2), ("dp_size", 2), ("data_parallel_size", "2")],
)
def test_data_parallel_replicas_need_their_devices(setting: tuple[str, Any]) -> None:
    d = serving()
    d["task"]["serving"]["settings"][setting[0]] = setting[1]
    d["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1"
    assert ("KE805", "/hardware/count") in errors(d)  # hardware.count 1


def test_data_parallel_replicas_on_their_devices_pass() -> None:
    d = serving()
    d["task"]["serving"]["settings"]["data_parallel_size"] = 2
    d["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1"
    d["hardware"]["count"] = 2
    assert not found(d, "KE805")
    d["task"]["serving"]["settings"]["data_parallel_size"] = 1
    d["hardware"]["count"] = 1
    d["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0"
    assert not found(d, "KE805")


def test_sglang_dp_attention_stays_inside_the_tensor_parallel_group() -> None:
    d = serving()
    sv = d["task"]["serving"]
    sv["tensor_parallel_size"] = 8
    sv["settings"]["dp_size"] = 8
    sv["settings"]["enable_dp_attention"] = True
    d["hardware"]["count"] = 8
    d["replay"]["env"]["CUDA_VISIBLE_DEVICES"] = "0,1,2,3,4,5,6,7"
    assert "/hardware/count" not in found(d, "KE805")
    del sv["settings"]["enable_dp_attention"]
    assert "/hardware/count" in found(d, "KE805")  # 64 devices for vLLM-style replicas
    sv["engine"] = {"name": "SGLang", "version": "0.5.3"}  # may split attention unrecorded
    assert "/hardware/count" not in found(d, "KE805")


# ---------------------------------------------------------------- KE006: days in the future


def _at(delta: timedelta) -> str:
    return (datetime.now(timezone.utc) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_packet_dated_days_ahead_grades_c() -> None:
    d = serving()
    d["created_at"] = _at(timedelta(days=3))
    r = validate(d)
    assert {f.pointer for f in r.findings if f.rule_id == "KE006"} == {"/created_at"}
    assert r.grade.letter == "C"


def test_a_clock_off_by_hours_is_not_flagged() -> None:
    d = serving()
    d["created_at"] = _at(timedelta(hours=20))
    r = validate(d)
    assert not found(d, "KE006")
    assert r.grade.letter == validate(serving()).grade.letter
