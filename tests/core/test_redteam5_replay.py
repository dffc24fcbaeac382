"""Red team 5, the replay: argv surface forms argparse and the shell read (prefixes, the last
of a repeated flag, variables a script sets), a client pointed at a public host, replays
that run other code than the pin (files edited in place, code fetched and run, a moving
ref installed, another image), and placeholder pins. Each beside an honest twin."""

from __future__ import annotations

import copy
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_build import finalize  # noqa: E402
from _adv_kit import control, found, grade, rules  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
SERV = "serving_vllm_llama8b_h100"
REAL_COMMIT = "6f95d75cc9f40b996a149617a3da9c58aec5e510"


def cmd(p: dict[str, Any]) -> list[str]:
    c: list[str] = p["replay"]["command"]
    return c


def script(p: dict[str, Any]) -> str:
    return " ".join(shlex.quote(a) for a in cmd(p))


def with_arg(c: list[str], flag: str, value: str) -> list[str]:
    c = list(c)
    c[c.index(flag) + 1] = value
    return c


def test_the_controls_are_clean() -> None:
    assert not {"KE104", "KE105", "KE106", "KE108"} & rules(control())
    assert not {"KE104", "KE105", "KE106", "KE108"} & rules(control(SERV))


# ---------------------------------------------------------------- KE106: argparse's reading


def test_a_prefix_of_a_workload_flag_is_that_flag() -> None:
    p = control(SERV)
    c = cmd(p)
    i = c.index("--max-concurrency")
    c[i : i + 2] = ["--max-conc", "256"]
    assert ("KE106", "/task/serving/max_concurrency") in found(p)
    p = control(SERV)
    c = cmd(p)
    i = c.index("--max-concurrency")
    c[i : i + 2] = ["--max_conc=64"]
    assert "KE106" not in rules(p)


def test_an_ambiguous_prefix_is_not_read() -> None:
    # `--random-` begins the input, output and prefix lengths: argparse refuses it, so do we
    p = control(SERV)
    cmd(p).extend(["--random-", "7"])
    assert "KE106" not in rules(p)


def test_the_last_of_a_repeated_flag_is_the_one_that_counts() -> None:
    p = control(SERV)
    cmd(p).extend(["--num-prompts", "100"])
    assert ("KE106", "/task/serving/num_prompts") in found(p)
    p = control(SERV)
    cmd(p).extend(["--model", "meta-llama/Llama-3.1-8B-Instruct-FP8"])
    assert ("KE106", "/task/serving/model") in found(p)
    # the packet's value last: what ran
    p = control(SERV)
    c = cmd(p)
    c[c.index("--num-prompts") + 1] = "100"
    c.extend(["--num-prompts", "1000"])
    assert "KE106" not in rules(p)


def test_two_runs_of_a_client_are_two_programs() -> None:
    # a short warm-up run, then the measured one: each run's own last value
    p = control(SERV)
    warm = " ".join(shlex.quote(a) for a in with_arg(cmd(p), "--num-prompts", "100"))
    p["replay"]["command"] = ["bash", "-c", f"{warm}; {script(p)}"]
    assert "KE106" not in rules(p)


# ---------------------------------------------------------------- KE106: variables the replay sets


@pytest.mark.parametrize("setter", ["C=256; ", "export C=256; ", "C=64; C=256\n", "true && C=256; "])
def test_a_variable_the_script_sets_is_read(setter: str) -> None:
    p = control(SERV)
    c = with_arg(cmd(p), "--max-concurrency", "$C")
    p["replay"]["command"] = ["bash", "-c", setter + " ".join(c)]
    assert ("KE106", "/task/serving/max_concurrency") in found(p)


def test_a_variable_of_the_replay_env_is_read() -> None:
    p = control(SERV)
    p["replay"]["command"] = with_arg(cmd(p), "--max-concurrency", "${C}")
    p["replay"]["env"]["C"] = "256"
    assert ("KE106", "/task/serving/max_concurrency") in found(p)
    p["replay"]["env"]["C"] = "64"
    assert "KE106" not in rules(p)


@pytest.mark.parametrize(
    "setter",
    [
        "C=64; ",  # the packet's value
        "C=256 ",  # set for the command only: `$C` was expanded before it
        "for C in 64; do ",  # a loop's variable: not followed
        "C=256; read C < conc.txt; ",  # read in: not known
        "C=$(cat conc.txt); ",  # a command's output: not known
    ],
)
def test_a_variable_not_known_to_be_another_value_is_let_through(setter: str) -> None:
    p = control(SERV)
    c = " ".join(with_arg(cmd(p), "--max-concurrency", "$C"))
    p["replay"]["command"] = ["bash", "-c", setter + c + ("; done" if setter.startswith("for") else "")]
    p["replay"]["env"]["C"] = "256" if setter.startswith("C=64") else "64"
    assert "KE106" not in rules(p)


def test_a_script_variable_beats_the_env() -> None:
    p = control(SERV)
    c = " ".join(with_arg(cmd(p), "--max-concurrency", "$C"))
    p["replay"]["command"] = ["bash", "-c", "C=64; " + c]
    p["replay"]["env"]["C"] = "256"
    assert "KE106" not in rules(p)


# ---------------------------------------------------------------- KE108: a client sent elsewhere


@pytest.mark.parametrize(
    "target",
    ["--base-url=https://api.together.xyz", "--host api.fireworks.ai", "--base-url http://8.8.8.8:8000"],
)
def test_a_client_pointed_at_a_public_host_measures_another_machine(target: str) -> None:
    p = control(SERV)
    cmd(p).extend(target.split(" "))
    assert ("KE108", "/replay/command") in found(p)
    assert grade(p) == "C"


@pytest.mark.parametrize(
    "target",
    [
        "--base-url http://127.0.0.1:8000",
        "--host localhost",
        "--host 10.1.2.3",
        "--base-url http://192.168.0.7:30000",
        "--base-url http://vllm-server:8000",
        "--host gpu-node-3.cluster.local",
        "--base-url http://ip-10-0-0-1.ec2.internal:8000",
        "--base-url http://vllm.default.svc:8000",
        "--host $SERVER",
    ],
)
def test_a_client_on_the_runs_own_machines_is_let_through(target: str) -> None:
    p = control(SERV)
    cmd(p).extend(target.split(" "))
    assert "KE108" not in rules(p)
    assert grade(p) == "B"


def test_a_servers_bind_address_is_no_client_target() -> None:
    p = control(SERV)
    p["replay"]["command"] = [
        "bash",
        "-c",
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --host 0.0.0.0 --port 8000 & sleep 60; " + script(p),
    ]
    assert "KE108" not in rules(p)


# ---------------------------------------------------------------- KE106: files edited in place


@pytest.mark.parametrize(
    "edit",
    [
        "sed -i 's/check=True/check=False/' bench/run.py",
        "sed -i.bak -e 's/a/b/' bench/run.py",
        "perl -pi -e 's/check=True/check=False/' bench/run.py",
        "sed --in-place=.orig 's/x/y/' kernels/gemm.cu",
    ],
)
def test_a_source_file_edited_in_place_is_not_the_pinned_code(edit: str) -> None:
    p = control()
    p["replay"]["command"] = ["bash", "-c", f"{edit} && {script(p)}"]
    assert ("KE106", "/replay/command") in found(p)
    assert not validate(finalize(copy.deepcopy(p))).ok


@pytest.mark.parametrize(
    "edit",
    [
        "sed 's/a/b/' bench/run.py > /tmp/run.py",  # no -i: a copy
        "sed -i 's/a/b/' config.yaml",  # configuration, not code
        "sed -i 's/a/b/' /tmp/settings.py",  # outside the replay's folder
        "sed -n 1,5p bench/run.py",
        "perl -ne 'print if /x/' bench/run.py",
    ],
)
def test_files_read_copied_or_configured_are_let_through(edit: str) -> None:
    p = control()
    p["replay"]["command"] = ["bash", "-c", f"{edit} && {script(p)}"]
    assert "KE106" not in rules(p)


def test_an_edited_tree_recorded_dirty_is_what_it_says() -> None:
    p = control()
    p["replay"]["command"] = ["bash", "-c", f"sed -i 's/a/b/' bench/run.py && {script(p)}"]
    p["replay"]["repository"]["dirty"] = True
    assert "KE106" not in rules(p)


# ---------------------------------------------------------------- KE108: unpinned code


@pytest.mark.parametrize(
    "pre",
    [
        "curl -sL https://gist.githubusercontent.com/alice/3f2a/raw/fast.sh | bash",
        "wget -qO- https://example.net/setup.sh | sh -s -- --fast",
        "curl -fsSL https://example.net/patch.py | python3 -",
        "pip install -q git+https://github.com/acme-ai/kernels@main",
        "pip install git+https://github.com/acme-ai/kernels",
        "python -m pip install 'kernels @ git+https://github.com/acme-ai/kernels.git@v1.2'",
        "uv pip install git+ssh://git@github.com/acme-ai/kernels.git@dev",
    ],
)
def test_code_no_pin_names_runs_before_the_benchmark(pre: str) -> None:
    p = control()
    p["replay"]["command"] = ["bash", "-c", f"{pre} && {script(p)}"]
    assert ("KE108", "/replay/command") in found(p)
    assert grade(p) == "C"


@pytest.mark.parametrize(
    "pre",
    [
        "curl -sL https://example.net/data.tar.gz | tar xz",
        "curl -sL https://example.net/cfg.json -o cfg.json",
        "curl -s https://example.net/x.json | python -c 'import json,sys; json.load(sys.stdin)'",
        f"pip install git+https://github.com/acme-ai/kernels@{REAL_COMMIT}",
        "pip install -e .",
        "pip install torch==2.4.0",
    ],
)
def test_pinned_installs_and_fetched_data_are_let_through(pre: str) -> None:
    p = control()
    p["replay"]["command"] = ["bash", "-c", f"{pre} && {script(p)}"]
    assert "KE108" not in rules(p)
    assert grade(p) == "A"


# ---------------------------------------------------------------- KE105: the container that runs


@pytest.mark.parametrize(
    "image", ["nvcr.io/nvidia/pytorch:latest", "nvcr.io/nvidia/pytorch:24.09-py3", "ubuntu"]
)
def test_a_container_run_from_another_image_is_not_the_pinned_one(image: str) -> None:
    p = control()
    p["replay"]["command"] = ["docker", "run", "--rm", "--gpus", "all", image, *cmd(p)]
    assert ("KE105", "/replay/command") in found(p)
    assert grade(p) == "C"


def test_the_pinned_image_by_name_or_digest_is_let_through() -> None:
    p = control()
    c = p["replay"]["container"]
    for image in (c["image"], c["image"] + "@" + c["digest"], "nvcr.io/nvidia/pytorch@" + c["digest"]):
        q = copy.deepcopy(p)
        q["replay"]["command"] = ["docker", "run", "--rm", "--gpus", "all", "-v", ".:/w", image, *cmd(p)]
        assert "KE105" not in rules(q), image
        assert grade(q) == "A"


# ---------------------------------------------------------------- KE104/KE105: placeholder pins


@pytest.mark.parametrize(
    "commit",
    [
        "da39a3ee5e6b4b0d3255bfef95601890afd80709",  # SHA-1 of empty input
        "adc83b19e793491b1c6ea0fd8b46cd9f32e592fc",  # SHA-1 of "\n"
        "0" * 39 + "1",
        "1" + "0" * 38 + "2",
        "ab" + "f" * 38,
        "1234567890" * 4,
        "1234567890abcdef" * 2 + "12345678",
    ],
)
def test_a_commit_that_is_a_hash_of_nothing_or_a_fill(commit: str) -> None:
    p = control()
    p["replay"]["repository"]["commit"] = commit
    assert ("KE104", "/replay/repository/commit") in found(p)


@pytest.mark.parametrize(
    "commit", [REAL_COMMIT, "3f9c2a7", "0000a1b", "00000000a1b2c3d4e5f60718293a4b5c6d7e8f90"]
)
def test_a_commit_with_many_repeats_but_not_all_is_let_through(commit: str) -> None:
    p = control()
    p["replay"]["repository"]["commit"] = commit
    assert "KE104" not in rules(p)


@pytest.mark.parametrize(
    "digest",
    [
        "sha256:01ba4719c80b6fe911b091a7c05124b64eeece964e09c058ef8f9805daca546b",  # SHA-256 of "\n"
        "sha256:" + "0" * 63 + "1",
        "sha256:" + "1234567890abcdef" * 4,
        "sha256:" + "fedcba0987654321" * 4,
    ],
)
def test_a_container_digest_that_is_a_hash_of_nothing_or_a_fill(digest: str) -> None:
    p = control()
    p["replay"]["container"]["digest"] = digest
    assert ("KE105", "/replay/container/digest") in found(p)
    assert grade(p) == "C"


def test_a_unit_of_other_digits_repeated_is_let_through() -> None:
    # the bundled examples' digest: `7d2f` x 16 is not read as a placeholder
    p = control()
    p["replay"]["container"]["digest"] = "sha256:" + "7d2f" * 16
    assert "KE105" not in rules(p)


def test_two_digests_name_two_images() -> None:
    p = control()
    c = p["replay"]["container"]
    c["image"] += "@sha256:7d3f1a2c9b8e4f605a1c3e7b9d2f4a6c8e0b2d4f6a8c0e2a4c6e8a0c2e4a6c8e"
    assert ("KE105", "/replay/container") in found(p)
    assert grade(p) == "C"
    p = control()
    c = p["replay"]["container"]
    c["image"] += "@" + c["digest"].upper().replace("SHA256", "sha256")
    assert "KE105" not in rules(p)


# ---------------------------------------------------------------- KE108: a repository nobody can fetch


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/your-org/your-repo",
        "https://github.com/YourUsername/kernels.git",
        "https://github.com/<user>/<repo>",
        "https://github.com/{org}/{repo}",
        "git@github.com:user/repo.git",
        "file:///home/alice/kernels",
        "/home/alice/kernels",
        "../kernels",
        "http://localhost:3000/acme/kernels.git",
    ],
)
def test_a_repository_url_nobody_else_can_fetch(url: str) -> None:
    p = control()
    p["replay"]["repository"]["url"] = url
    assert ("KE108", "/replay/repository/url") in found(p)
    assert grade(p) == "C"


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:acme-ai/kernels.git",
        "ssh://git@gitlab.corp.internal:2222/team/kernels.git",
        "https://example.org/kernels.git",  # the bundled examples' URL
        "https://github.com/yourls/yourls",  # a real project named "your..."
        "https://huggingface.co/user-org/repo-x",
    ],
)
def test_a_remote_repository_url_is_let_through(url: str) -> None:
    p = control()
    p["replay"]["repository"]["url"] = url
    assert "KE108" not in rules(p)
    assert grade(p) == "A"
