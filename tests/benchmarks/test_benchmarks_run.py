"""The benchmark scripts still run (tiny sizes): a renamed helper must not leave one broken.

Speed is never asserted here; the scripts print their figures and ratios when run by hand.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus" / "xprof"

RUNS = {
    "bench_validate.py": ["--packets", "300", "--jsonschema-packets", "10", "--no-memory"],
    "bench_ncu.py": ["--launches", "50", "--metrics", "20", "--repeat", "1", "--shape", "both"],
    "bench_rocprof.py": ["--dispatches", "50", "--channels", "2", "--repeat", "1"],
    "bench_vllm.py": ["--requests", "200", "--repeat", "1"],
    "bench_recorder.py": ["--packets", "20"],
    "bench_archive.py": ["--packets", "400", "--small", "100", "--mid", "0", "--repeat", "1"],
    "bench_torch_profiler.py": ["--mb", "0.2", "--repeat", "1"],
    "bench_startup.py": ["--runs", "1"],
    "bench_flashinfer.py": ["--lines", "200", "--repeat", "1"],
    "bench_audit.py": ["--lines", "200", "--repeat", "1"],
    "bench_rocprofv3.py": ["--dispatches", "200", "--repeat", "1"],
}


@pytest.mark.parametrize("script", sorted(RUNS))
def test_benchmark_script_runs(script: str, tmp_path: Path) -> None:
    args = list(RUNS[script])
    if script == "bench_archive.py":
        args += ["--workdir", str(tmp_path)]
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    out = r.stdout.lower()
    assert "ratio" in out or "the peer" in out  # it compares against its named peer


def test_every_benchmark_script_is_covered() -> None:
    scripts = {p.name for p in (ROOT / "benchmarks").glob("bench_*.py")}
    assert scripts - {"bench_xprof.py"} == set(RUNS)  # xprof needs the corpus profile


@pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/corpus/xprof")
def test_xprof_benchmark_runs(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_xprof.py"), "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "ratio" in r.stdout.lower()
