"""Red team 3, the replay band: a replay that reproduces nothing measured, or something else
than the packet records, and placeholders where hashes go.

* KE103: the benchmark told not to measure (a dry run on the accelerator the packet
  measured, stored results loaded, no run);
* KE106 (at /replay/command): its checks turned off beside a passed validation, another
  baseline than the packet's, fewer repeats or warm-up runs than the packet reports, and the
  pinned code changed before the benchmark runs (a patch applied, another ref checked out);
* KE104/KE105: a commit or a container digest that counts, or repeats a placeholder unit.

Each cheat is caught at its pointer; its honest near-twin is let through."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate
from kernel_evidence.rules import replay

VALID = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"
#: the kernel example: an H100 bf16 GEMM against cuBLASLt, 10 warm-up runs and 31 repeats,
#: validation passed, replayed as GEMM + its dims, commit pinned with a clean tree
GEMM = ["python", "bench/gemm.py", "--m", "4096", "--n", "4096", "--k", "4096", "--dtype", "bf16"]
PINNED = "3f9c2a7e5b1d4c8a9e0f6b2d7c1a5e3f9b8d4c2a"
URL = "https://example.org/kernels.git"
IMG = "ghcr.io/example/kernels:2026.11"


def _example(name: str) -> dict[str, Any]:
    d: dict[str, Any] = json.loads((VALID / f"{name}.json").read_text(encoding="utf-8"))
    d.pop("packet_id")
    return d


def kernel(argv: list[str] | None = None, shell: bool = False) -> dict[str, Any]:
    d = _example("nvidia_h100_gemm_vs_cublaslt")
    assert d["replay"]["command"] == GEMM and d["replay"]["repository"]["commit"] == PINNED
    if argv is not None:
        d["replay"]["command"] = argv
    if shell:
        d["replay"]["shell"] = True
    return d


def script(s: str) -> dict[str, Any]:
    return kernel(["bash", "-lc", s])


def found(d: dict[str, Any], rule: str) -> set[str]:
    return {f.pointer for f in validate(d).findings if f.rule_id == rule}


def messages(d: dict[str, Any], rule: str) -> list[str]:
    return [f.message for f in validate(d).findings if f.rule_id == rule]


def clean(d: dict[str, Any]) -> bool:
    """No finding of this band's rules (the others judge other fields)."""
    return not [f for f in validate(d).findings if f.rule_id in ("KE103", "KE104", "KE105", "KE106")]


def test_the_base_is_clean() -> None:
    assert validate(kernel()).ok
    assert clean(kernel())


# ---------------------------------------------------------------- KE103: told not to measure

DRY = [
    [*GEMM, "--dry-run"],
    [*GEMM, "--dry_run"],
    [*GEMM, "--dryrun"],
    [*GEMM, "--dry-run=true"],
    [*GEMM, "--load-results", "results/best.json"],
    [*GEMM, "--load-results=results/best.json"],
    [*GEMM, "--results-from", "runs/0413"],
    [*GEMM, "--reuse-results"],
    [*GEMM, "--no-run"],
    [*GEMM, "--skip-bench"],
    [*GEMM, "--print-only"],
    ["bash", "-lc", "python bench/plan.py && " + " ".join(GEMM) + " --dry-run"],  # the last program runs dry
    ["docker", "run", "--gpus", "all", IMG, *GEMM, "--dry-run"],
    ["env", "CUDA_VISIBLE_DEVICES=0", *GEMM, "--load-results", "best.json"],
    ["bash", "-lc", " ".join(GEMM) + " --dry-run"],
    ["bash", "-lc", "nvidia-smi -lgc 1755,1755 && " + " ".join(GEMM) + " --load-results best.json"],
]


@pytest.mark.parametrize("argv", DRY, ids=lambda a: " ".join(a)[-40:])
def test_a_replay_told_not_to_measure_is_caught(argv: list[str]) -> None:
    d = kernel(argv)
    r = validate(d)
    assert not r.ok
    assert found(d, "KE103") == {"/replay/command"}
    (m,) = messages(d, "KE103")
    assert "reproduces nothing the packet measured" in m


def test_the_messages_name_the_flag() -> None:
    (m,) = messages(kernel([*GEMM, "--dry-run"]), "KE103")
    assert "`--dry-run`" in m and "dry run on the nvidia device" in m
    (m,) = messages(kernel([*GEMM, "--load-results", "results/best.json"]), "KE103")
    assert "`--load-results results/best.json`" in m and "loads stored results" in m


MEASURES = [
    [*GEMM, "--dry-run=false"],
    [*GEMM, "--results", "out/results.json"],  # where results go
    [*GEMM, "--from-json", "configs/gemm.json"],  # a config
    [*GEMM, "--use-cache"],  # a compile cache
    [*GEMM, "--cached"],
    [*GEMM, "--save-results", "r.json"],
    ["bash", "-lc", " ".join(GEMM) + " --dry-run && " + " ".join(GEMM)],  # checked, then measured
    ["bash", "-lc", "python bench/plan.py --dry-run && " + " ".join(GEMM)],  # a preflight's dry run
    ["bash", "-lc", "huggingface-cli download org/m --dry-run && " + " ".join(GEMM)],
    ["bash", "-lc", "pip install -e . --dry-run && " + " ".join(GEMM)],
]


@pytest.mark.parametrize("argv", MEASURES, ids=lambda a: " ".join(a)[-40:])
def test_a_replay_that_measures_passes(argv: list[str]) -> None:
    d = kernel(argv)
    assert validate(d).ok
    assert not found(d, "KE103")


def test_a_dry_run_on_the_cpu_the_packet_names_passes() -> None:
    """A harness that runs CPU stand-ins under --dry-run (examples/gpu/run.py) records the
    CPU it measured on: its replay reproduces what it measured."""
    d = kernel([*GEMM, "--dry-run"])
    d["hardware"]["vendor"] = "cpu"
    assert not found(d, "KE103")
    d["replay"]["command"] = [*GEMM, "--load-results", "best.json"]  # no stand-in loads results
    assert found(d, "KE103") == {"/replay/command"}


def test_a_packet_that_measured_nothing_may_be_replayed_dry() -> None:
    """A compile failure has no timing: a replay that only compiles reproduces it."""
    d = _example("failed_compile_error")
    d["replay"]["command"] = [*d["replay"]["command"], "--no-run"]
    assert not found(d, "KE103")
    assert not (d.get("timing") or {}).get("stats")


def test_a_dry_run_is_said_once_beside_another_no_op() -> None:
    """`--help` makes the command a no-op (KE103 already): the dry run adds no second finding."""
    d = kernel([*GEMM, "--help", "--dry-run"])
    assert len(messages(d, "KE103")) == 1


# ---------------------------------------------------------------- KE106: checks turned off


@pytest.mark.parametrize(
    "flags",
    [
        ["--no-verify"], ["--skip-verify"], ["--no-check"], ["--skip_correctness"], ["--no-validate"],
        ["--skip-validation"], ["--verify=false"], ["--verify", "0"], ["--check-correctness", "False"],
    ],
    ids=lambda f: " ".join(f),
)  # fmt: skip
def test_checks_turned_off_beside_a_passed_validation(flags: list[str]) -> None:
    d = kernel([*GEMM, *flags])
    assert not validate(d).ok
    assert found(d, "KE106") == {"/replay/command"}
    (m,) = messages(d, "KE106")
    assert "validation.verdict is passed" in m and flags[0].split("=")[0] in m


@pytest.mark.parametrize(
    "argv",
    [
        [*GEMM, "--verify"],
        [*GEMM, "--verify=true"],
        [*GEMM, "--check", "all"],
        [
            "bash",
            "-lc",
            "git commit --no-verify -m wip && " + " ".join(GEMM),
        ],  # git's flag, not the benchmark's
    ],
    ids=lambda a: " ".join(a)[-40:],
)
def test_checks_left_on_pass(argv: list[str]) -> None:
    assert not found(kernel(argv), "KE106")


def test_checks_turned_off_in_a_failed_packet_pass() -> None:
    """The packet does not claim checked outputs: nothing to contradict."""
    d = _example("failed_tolerance_miss")
    assert d["validation"]["verdict"] == "failed"
    d["replay"]["command"] = [*d["replay"]["command"], "--no-verify"]
    assert not found(d, "KE106")


# ---------------------------------------------------------------- KE106: another baseline


@pytest.mark.parametrize(
    "value", ["torch_naive", "eager", "torch", "numpy-ref", "cuDNN", "reference", "torch.compile", "Triton"]
)
def test_a_baseline_flag_naming_another_baseline(value: str) -> None:
    d = kernel([*GEMM, "--baseline", value])
    assert not validate(d).ok
    assert found(d, "KE106") == {"/replay/command"}
    (m,) = messages(d, "KE106")
    assert "timing.baseline.provider is `cuBLASLt`" in m and value in m


@pytest.mark.parametrize(
    "value",
    [
        "cublaslt", "cuBLASLt", "CUBLAS_LT", "cublas", "cublaslt_heuristic0", "torch_cublas", "best", "vendor",
        "baselines/cublaslt_4096.json", "$BASELINE",
    ],
)  # fmt: skip
def test_a_baseline_flag_naming_the_provider_or_nothing_passes(value: str) -> None:
    assert not found(kernel([*GEMM, "--baseline", value]), "KE106")
    assert not found(kernel([*GEMM, f"--baseline-provider={value}"]), "KE106")


def test_a_reference_provider_is_not_held_to_a_vendor_name() -> None:
    d = kernel([*GEMM, "--baseline", "torch"])
    d["timing"]["baseline"]["provider"] = "torch eager"
    assert not found(d, "KE106")


def test_the_baseline_families() -> None:
    assert replay._other_baseline("hipBLASLt", "rocblas") is None
    assert replay._other_baseline("rocBLAS", "hipblaslt") is None
    assert replay._other_baseline("cuBLAS", "cublasLt") is None
    assert replay._other_baseline("hipBLASLt", "cublaslt") is not None  # another vendor's
    assert replay._other_baseline("FlashAttention", "fa3") is None  # an alias
    assert replay._other_baseline("FlashAttention", "sdpa_naive") is not None


# ---------------------------------------------------------------- KE106: fewer repeats or warm-up runs


@pytest.mark.parametrize(
    "flags",
    [
        ["--repeats", "3"], ["--repeats=3"], ["--num_repeats", "30"], ["--iters", "10"], ["--n-iter", "5"],
        ["--repeats", "3", "5"],  # a sweep below the packet's
    ],
    ids=lambda f: " ".join(f),
)  # fmt: skip
def test_fewer_repeats_than_the_packet_reports(flags: list[str]) -> None:
    d = kernel([*GEMM, *flags])
    assert not validate(d).ok
    assert found(d, "KE106") == {"/replay/command"}
    (m,) = messages(d, "KE106")
    assert "timing.repeats is 31" in m and flags[0].split("=")[0] in m


@pytest.mark.parametrize(
    "flags",
    [["--warmup-iters", "2"], ["--num-warmup", "0"], ["--warmup-runs=5"], ["--warmup", "0"]],
    ids=lambda f: " ".join(f),
)
def test_fewer_warmup_runs_than_the_packet_reports(flags: list[str]) -> None:
    d = kernel([*GEMM, *flags])
    assert not validate(d).ok
    assert found(d, "KE106") == {"/replay/command"}
    (m,) = messages(d, "KE106")
    assert "timing.warmup is 10" in m


def test_the_red_team_replay_reports_both() -> None:
    d = kernel([*GEMM, "--repeats", "3", "--warmup", "0"])
    ms = messages(d, "KE106")
    assert len(ms) == 2 and "repeats" in ms[0] and "warm-up" in ms[1]


@pytest.mark.parametrize(
    "flags",
    [
        ["--repeats", "31"], ["--repeats", "100"],  # a cap a stop rule ended under
        ["--iters", "1000"],
        ["--iters", "10", "--repeats", "31"],  # iterations per repeat
        ["--repeats", "3", "31"],  # a sweep holding the packet's
        ["--repeats", "$REPEATS"], ["--rep", "3"],  # unknown; Triton's milliseconds
        ["--warmup", "5"], ["--warmup", "25"],  # milliseconds, perhaps
        ["--warmup-iters", "10"], ["--warmup-iters", "50"],
    ],
    ids=lambda f: " ".join(f),
)  # fmt: skip
def test_repeats_and_warmup_that_agree_pass(flags: list[str]) -> None:
    d = kernel([*GEMM, *flags])
    assert not found(d, "KE106")
    assert validate(d).ok


def test_repeats_are_read_from_the_conditions_without_the_flat_field() -> None:
    d = kernel([*GEMM, "--repeats", "3"])
    t = d["timing"]
    t.setdefault("conditions", {})["repeats"] = t.pop("repeats")
    (m,) = messages(d, "KE106")
    assert "timing.conditions.repeats is 31" in m


def test_a_serving_packet_without_repeats_is_not_compared() -> None:
    d = _example("serving_vllm_llama8b_h100")
    d["replay"]["command"] = ["python", "bench/gemm.py", "--warmup-iters", "0", "--iters", "1"]
    assert not found(d, "KE106")


# ---------------------------------------------------------------- KE106: the pinned code changed

RUN = " ".join(GEMM)


@pytest.mark.parametrize(
    "before",
    [
        "git apply patches/fast_path.diff",
        "git apply -R patches/checks.diff",
        "git am patches/0001-fast.patch",
        "patch -p1 < patches/fast_path.diff",
        "git checkout fast-unchecked",
        "git checkout main",
        "git checkout 9d1e4f2a",  # another commit
        "git checkout fast -- bench/gemm.py",  # a file from another ref
        "git checkout -b mine origin/fast",
        "git switch fast-unchecked",
        "git reset --hard origin/main",
        "git restore --source fast bench",
        "git pull",
        "git pull --rebase origin main",
        "git stash pop",
        "git cherry-pick 9d1e4f2a",
        "git merge origin/fast",
        "git fetch origin && git checkout FETCH_HEAD~1",
        "git clone https://example.org/kernels && cd kernels && git checkout fast",  # the pinned repository
    ],
)
def test_a_replay_that_changes_the_pinned_code(before: str) -> None:
    d = script(f"{before} && {RUN}")
    r = validate(d)
    assert not r.ok
    assert found(d, "KE106") == {"/replay/command"}
    (m,) = messages(d, "KE106")
    assert f"pins commit `{PINNED}` with dirty false" in m


def test_the_shell_string_form_is_read_the_same_way() -> None:
    d = kernel([f"git checkout fast-unchecked; {RUN}"], shell=True)
    assert found(d, "KE106") == {"/replay/command"}


@pytest.mark.parametrize(
    "before",
    [
        f"git checkout {PINNED}",
        f"git checkout {PINNED[:12]}",
        f"git checkout --detach {PINNED[:7]}",
        f"git reset --hard {PINNED}",
        "git reset --hard",  # back to HEAD: local changes dropped
        "git checkout -- bench/gemm.py",  # restored from the index
        "git checkout .",
        "git checkout -b replay-run",  # a new branch where HEAD is
        "git submodule update --init --recursive",
        "git fetch origin",
        "git stash",
        "git apply --check patches/fast_path.diff",
        "patch --dry-run -p1 < patches/fast_path.diff",
        "git checkout $COMMIT",  # the shell fills it in
        f"git clone {URL} && cd kernels && git checkout {PINNED}",
        f"git clone git@example.org:other/cutlass.git && cd cutlass && git checkout v3.5.0 && cd .. && git checkout {PINNED}",
        "git clone https://github.com/NVIDIA/cutlass third_party/cutlass && cd third_party/cutlass && git checkout v3.5.0 && cd ../..",
        "cd third_party/cutlass && git checkout v3.5.0 && cd ../..",  # a dependency
        "git -C third_party/cutlass checkout v3.5.0",
        "git -C third_party/cutlass apply ../../patches/cutlass.diff",
    ],
)
def test_a_replay_that_runs_the_pinned_code_passes(before: str) -> None:
    d = script(f"{before} && {RUN}")
    assert not found(d, "KE106")


def test_a_change_after_the_benchmark_passes() -> None:
    assert not found(script(f"{RUN} && git checkout main"), "KE106")


def test_a_patched_tree_recorded_dirty_passes() -> None:
    d = script(f"git apply patches/fast_path.diff && {RUN}")
    d["replay"]["repository"]["dirty"] = True
    assert not found(d, "KE106")


def test_no_commit_pinned_nothing_to_contradict() -> None:
    d = script(f"git checkout fast-unchecked && {RUN}")
    d["replay"]["repository"] = {"url": URL}
    assert not found(d, "KE106")


def test_an_unrecorded_dirty_flag_is_said() -> None:
    d = script(f"git pull && {RUN}")
    del d["replay"]["repository"]["dirty"]
    (m,) = messages(d, "KE106")
    assert "no dirty tree recorded" in m


def test_repository_urls_compare_by_host_and_path() -> None:
    assert replay._url_key("git@example.org:kernels.git") == replay._url_key("https://example.org/kernels/")
    assert replay._url_key("https://user@github.com/o/r.git") == "github.com/o/r"
    assert replay._url_key("https://github.com/o/r") != replay._url_key("https://github.com/o/s")


# ---------------------------------------------------------------- KE104/KE105: placeholders


@pytest.mark.parametrize(
    "commit",
    [
        "0123456789abcdef0123456789abcdef01234567", "fedcba9876543210fedcba9876543210fedcba98",
        "deadbeef" * 5, "DEADBEEF" * 5, "abcd" * 10, "cafebabe" * 5, "abcdef" * 6 + "abcd", "ab" * 20,
        "1234567", "89abcdef0123",
    ],
)  # fmt: skip
def test_a_placeholder_commit(commit: str) -> None:
    d = kernel()
    d["replay"]["repository"]["commit"] = commit
    assert not validate(d).ok
    assert found(d, "KE104") == {"/replay/repository/commit"}
    (m,) = messages(d, "KE104")
    assert "placeholder" in m and commit in m


@pytest.mark.parametrize(
    "commit",
    [
        PINNED, "6f95d75cc9f40b996a149617a3da9c58aec5e510", "8c1f0e6b2a9d4c7e5f3b1a0d9e8c7b6a5f4e3d2c",
        "9e9d98b843acc4b3" * 2 + "9e9d98b8",  # a unit that neither counts nor spells a word
        "0123456789abcdef0123456789abcdef01234560",  # the run broken before its end
        "deadbeef" * 4 + "00c0ffee",  # the repeat broken before its end
        "abc1234",
    ],
)  # fmt: skip
def test_a_hash_that_is_no_placeholder_passes(commit: str) -> None:
    d = kernel()
    d["replay"]["repository"]["commit"] = commit
    assert not found(d, "KE104")


@pytest.mark.parametrize(
    "digest",
    [
        "sha256:" + "deadbeef" * 8,
        "sha256:" + "0123456789abcdef" * 4,
        "sha256:" + "abcd" * 16,
        "sha256:" + "ab" * 32,
    ],
)
def test_a_placeholder_digest(digest: str) -> None:
    d = kernel()
    d["replay"]["container"]["digest"] = digest
    r = validate(d)
    assert found(d, "KE105") == {"/replay/container/digest"}
    assert r.grade.letter == "C"
    (m,) = messages(d, "KE105")
    assert "placeholder" in m


def test_a_placeholder_digest_inside_the_image_reference() -> None:
    d = kernel()
    d["replay"]["container"] = {"image": IMG + "@sha256:" + "cafebabe" * 8}
    assert found(d, "KE105") == {"/replay/container"}


@pytest.mark.parametrize(
    "digest",
    [
        "sha256:" + "7d2f" * 16,  # the examples' digest: a unit that neither counts nor spells a word
        "sha256:0be97be203de8b81215965f03ecfd77799c88c3019733e3fda4fb7bf26896bba",
        "sha256:" + "0123456789abcdef" * 3 + "0123456789abcde0",
    ],
)
def test_a_digest_that_is_no_placeholder_passes(digest: str) -> None:
    d = kernel()
    d["replay"]["container"]["digest"] = digest
    assert not found(d, "KE105")


def test_the_verdicts_are_cached_and_the_same() -> None:
    h = "deadbeef" * 5
    assert replay._placeholder(h) == "`deadbeef` repeated"
    d = kernel()
    d["replay"]["repository"]["commit"] = h
    first = messages(d, "KE104")
    assert replay._HASH_VERDICTS.get(h) == "`deadbeef` repeated"
    assert messages(d, "KE104") == first
