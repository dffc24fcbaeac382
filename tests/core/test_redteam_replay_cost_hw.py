"""Red-team fixes in the replay, cost and hardware bands: each cheat is caught where it lies,
and its honest near-twin is let through.

- KE103: replays that only view a stored result (`ncu --import`, `nsys stats`, `python -m
  json.tool`, `docker logs`, `git show`, a `python -c` that writes a file to stdout, an awk
  program of BEGIN blocks) or list what they would run (`pytest --setup-plan`, `make -t`).
- KE1202: `cost.wall_time` below the accelerator time it holds (per device).
- KE806: a `compile.target_arch` that cannot run on the recorded device; a profiler
  capture naming a device of another arch than `hardware.device`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate

VALID = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"


def _example(name: str) -> dict[str, Any]:
    d: dict[str, Any] = json.loads((VALID / f"{name}.json").read_text(encoding="utf-8"))
    d.pop("packet_id")
    return d


def h100() -> dict[str, Any]:
    """The H100 GEMM example: sm_90a binary, H100 (sm_90a), 14.2 s of GPU time on one device."""
    return _example("nvidia_h100_gemm_vs_cublaslt")


def found(d: dict[str, Any], rule: str) -> set[str]:
    return {f.pointer for f in validate(d).findings if f.rule_id == rule}


def errors(d: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in validate(d).findings if f.severity == "error"}


def no_new_errors(d: dict[str, Any], base: dict[str, Any]) -> bool:
    """No error that the unchanged packet does not have (other bands' rules aside)."""
    return errors(d) <= errors(base)


def test_the_examples_are_clean() -> None:
    for name in ("nvidia_h100_gemm_vs_cublaslt", "amd_mi300x_gemm_fp8_vs_hipblaslt"):
        d = _example(name)
        assert not found(d, "KE103") and not found(d, "KE806") and not found(d, "KE1202")


# ---------------------------------------------------------------- KE103

HOLLOW = [
    ["ncu", "--import", "profiles/gemm.ncu-rep", "--page", "details"],
    ["ncu", "-i", "profiles/gemm.ncu-rep"],
    ["ncu", "--csv", "-i", "profiles/gemm.ncu-rep"],
    ["nsys", "stats", "profiles/run.nsys-rep"],
    ["nsys", "export", "--type", "sqlite", "profiles/run.nsys-rep"],
    ["python", "-m", "json.tool", "results/gemm.json"],
    ["python3", "-u", "-m", "json.tool", "results/gemm.json"],
    ["docker", "logs", "bench-gemm-20261120"],
    ["docker", "container", "inspect", "bench-gemm"],
    ["podman", "cp", "bench:/out/results.json", "."],
    ["python", "-m", "pytest", "bench/test_gemm.py", "--setup-plan"],
    ["pytest", "bench/test_gemm.py", "--setup-only"],
    ["pytest", "--fixtures"],
    ["make", "-t", "bench"],
    ["make", "--touch", "bench"],
    ["make", "-q", "bench"],
    ["make", "-kt", "bench"],
    ["git", "show", "3f9c2a7:results/gemm.json"],
    ["git", "-C", "repo", "--no-pager", "log", "-1"],
    ["git", "cat-file", "-p", "3f9c2a7:results/gemm.json"],
    ["python", "-c", "import sys; sys.stdout.write(open('results/gemm.json').read())"],
    ["python", "-c", "with open('results/gemm.json') as f: print(f.read())"],
    ["python", "-c", "import json, sys; json.dump(json.load(open('r.json')), sys.stdout)"],
    ["python", "-c", "for line in open('results/gemm.txt'): print(line)"],
    ["awk", 'BEGIN { print "speedup 1.0537" }'],
    ["gawk", "-v", "s=1.05", 'BEGIN{print "speedup", s} BEGIN { print "}" }', "results.txt"],
    # behind wrappers, containers and shells
    ["env", "CUDA_VISIBLE_DEVICES=0", "ncu", "-i", "gemm.ncu-rep"],
    ["timeout", "600", "git", "show", "HEAD:results/gemm.json"],
    ["docker", "run", "--gpus", "all", "img@sha256:" + "ab" * 32, "python", "-m", "json.tool", "r.json"],
    ["sh", "-c", "nsys stats profiles/run.nsys-rep"],
    ["bash", "-lc", "awk 'BEGIN { print 1.05 }'"],
]


@pytest.mark.parametrize("argv", HOLLOW, ids=lambda a: " ".join(a)[:40])
def test_a_replay_that_only_views_or_lists_reproduces_nothing(argv: list[str]) -> None:
    d = h100()
    d["replay"]["command"] = argv
    assert ("KE103", "/replay/command") in errors(d)


RUNS = [
    ["ncu", "--set", "full", "-o", "profiles/gemm", "python", "bench/gemm.py"],
    ["ncu", "--set", "full", "python", "bench/gemm.py", "-i", "5"],  # the app's own -i
    ["nsys", "profile", "-o", "run", "python", "bench/gemm.py"],
    ["python", "-m", "pytest", "bench/test_gemm.py", "--setup-show"],
    ["python", "-m", "torch.distributed.run", "bench/gemm.py"],
    ["python", "bench/gemm.py", "-c", "cfg"],  # the script's -c, not Python's
    ["make", "-j8", "bench"],
    ["make", "-Ctest", "bench"],  # -C takes `test` as its value
    ["make", "-Otarget", "bench"],
    ["docker", "run", "--gpus", "all", "img@sha256:" + "ab" * 32, "python", "bench/gemm.py"],
    ["docker", "start", "-a", "bench"],
    ["git", "bisect", "run", "bench/check.sh"],
    ["python", "-c", "import sys; sys.stdout.write(str(__import__('bench').run()))"],
    ["python", "-c", "from bench import run\nwith open('out.json', 'w') as f: f.write(run())"],
    ["python", "-c", "from bench import run\nfor _ in range(3): print(run())"],
    ["awk", "{ print $1 }", "results.txt"],
    ["awk", 'BEGIN { system("python bench/gemm.py") }'],
    ["awk", 'BEGIN { while (("python bench/gemm.py" | getline l) > 0) print l }'],
    ["awk", "-f", "bench.awk"],
]


@pytest.mark.parametrize("argv", RUNS, ids=lambda a: " ".join(a)[:40])
def test_a_replay_that_runs_the_benchmark_passes(argv: list[str]) -> None:
    d = h100()
    d["replay"]["command"] = argv
    assert not found(d, "KE103")
    assert no_new_errors(d, h100())


# ---------------------------------------------------------------- KE1202: wall time


def test_wall_time_below_the_accelerator_time() -> None:
    d = h100()
    d["cost"]["wall_time"] = {"value": 0.5, "unit": "s"}  # one GPU busy 14.2 s
    assert found(d, "KE1202") == {"/cost/wall_time"}
    assert ("KE1202", "/cost/wall_time") in errors(d)


def test_wall_time_that_holds_the_accelerator_time_passes() -> None:
    d = h100()
    d["cost"]["wall_time"] = {"value": 14.2, "unit": "s"}  # busy the whole run
    assert not found(d, "KE1202")
    d["cost"]["wall_time"] = {"value": 13.0, "unit": "s"}  # within the 10% slack
    assert not found(d, "KE1202")
    # 8 devices for 2 s hold 14.2 accelerator-seconds
    d["cost"]["wall_time"] = {"value": 2.0, "unit": "s"}
    d["hardware"]["count"] = 8
    d["replay"]["env"] = {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    assert not found(d, "KE1202")
    d["hardware"]["count"] = 4  # 4 x 2 s = 8 s < 14.2 s
    d["replay"]["env"] = {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert found(d, "KE1202") == {"/cost/wall_time"}


# ---------------------------------------------------------------- KE806: the binary's target


def test_a_blackwell_binary_on_an_h100() -> None:
    d = h100()
    d["compile"]["target_arch"] = "sm_100a"
    d["compile"]["flags"] = ["-O3", "-arch=sm_100a"]
    assert found(d, "KE806") == {"/hardware/device"}
    assert ("KE806", "/hardware/device") in errors(d)


@pytest.mark.parametrize(
    "target",
    [
        "sm_100",  # plain: 10.0 or newer only
        "compute_100",
        "sm_89a",  # arch-specific: 8.9 only
        "sm_100f",  # family: 10.x only
        "10.0",
        "sm_100a,sm_120a",
    ],
)
def test_targets_an_h100_cannot_run(target: str) -> None:
    d = h100()
    d["compile"]["target_arch"] = target
    assert found(d, "KE806") == {"/hardware/device"}


@pytest.mark.parametrize(
    "target",
    [
        "sm_90a",
        "sm_90",
        "compute_90a",
        "sm_80",  # SASS for 8.0 with its PTX: the driver compiles it for 9.0
        "compute_80",
        "sm_80,sm_90",
        "sm_80;sm_100a",
        "-gencode arch=compute_90a,code=sm_90a -gencode arch=compute_100a,code=sm_100a",
        "8.0;8.6;9.0+PTX",
        "9.0a",
        "native",
        "gfx942",  # another vendor's target: not compared
    ],
)
def test_targets_an_h100_can_run(target: str) -> None:
    d = h100()
    d["compile"]["target_arch"] = target
    assert not found(d, "KE806")
    assert no_new_errors(d, h100())


def test_the_device_arch_comes_from_the_name_or_the_arch() -> None:
    d = h100()
    d["compile"]["target_arch"] = "sm_100a"
    del d["hardware"]["arch"]  # the name's models are all sm_90
    assert found(d, "KE806") == {"/hardware/device"}
    # the name's arch where hardware.arch disagrees (that is KE806's other finding): the
    # target runs on one of them, so it is not reported twice
    d["hardware"]["arch"] = "sm_100"
    assert not any("target_arch" in f.message for f in validate(d).findings)
    # a name the table does not know is not judged
    d["hardware"]["device"] = "Prototype Board ZX-90"
    d["hardware"]["arch"] = "sm_90"
    assert not found(d, "KE806")
    # a failed packet may record the binary that could not run
    d = h100()
    d["compile"]["target_arch"] = "sm_100a"
    d["compile"]["succeeded"] = False
    assert not any(f.rule_id == "KE806" and "target_arch" in f.message for f in validate(d).findings)


def test_amd_targets_match_exactly() -> None:
    d = _example("amd_mi300x_gemm_fp8_vs_hipblaslt")
    d["compile"]["target_arch"] = "gfx942:sramecc+:xnack-"
    assert not found(d, "KE806")
    d["compile"]["target_arch"] = "gfx90a,gfx942"
    assert not found(d, "KE806")
    d["compile"]["target_arch"] = "gfx9-4-generic"  # generic targets are not compared
    assert not found(d, "KE806")
    d["compile"]["target_arch"] = "gfx950"  # an MI355X binary on an MI300X
    assert found(d, "KE806") == {"/hardware/device"}
    d["compile"]["target_arch"] = "gfx90a"  # an MI250 binary
    assert found(d, "KE806") == {"/hardware/device"}


# ---------------------------------------------------------------- KE806: the capture's device


def _with_capture_name(d: dict[str, Any], name: str, where: str = "raw") -> dict[str, Any]:
    cap = d["profiler"][0]
    if where == "raw":
        cap["kernels"][0]["raw"]["device__attribute_display_name"] = {"value": name, "unit": ""}
    else:
        cap["attributes"] = {"device__attribute_display_name": name}
    return d


@pytest.mark.parametrize("where", ["raw", "attributes"])
def test_a_capture_of_another_arch_than_the_device(where: str) -> None:
    d = _with_capture_name(h100(), "NVIDIA A100-SXM4-80GB", where)
    assert found(d, "KE806") == {"/hardware/device"}
    assert ("KE806", "/hardware/device") in errors(d)


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA H100 80GB HBM3",  # the same name
        "NVIDIA H100 PCIe",  # another model of the same arch (profiled on a dev box)
        "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
        "Some Engineering Sample",  # not in the table: nothing to compare
    ],
)
def test_a_capture_of_the_same_arch_passes(name: str) -> None:
    d = _with_capture_name(h100(), name)
    assert not found(d, "KE806")
    assert no_new_errors(d, h100())
