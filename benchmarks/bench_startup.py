"""Start-up of the ``kevidence`` command against ``python -c "import typer"``, in one run.

A harness that shells out to ``kevidence validate packet.json`` once per candidate pays the
interpreter's start-up and the command's imports every time. Each command below runs
``--runs`` times as a fresh subprocess, interleaved with the peer so that both see the same
machine load; the median wall time of each is compared with the peer's median.

    python benchmarks/bench_startup.py [--runs 21]

Also printed, for reference (not compared): a bare interpreter, and a typer command with
one argument (typer builds pydantic adapters for its parameters when it parses a command
line, so any typer command pays that on top of ``import typer``).

Every command runs with bytecode caching on, as in an installed environment, into a
temporary ``PYTHONPYCACHEPREFIX`` (the same for the peer), warmed by a first run that is not
timed: where ``PYTHONDONTWRITEBYTECODE`` is set, each run would otherwise compile the
package's sources again (about 90 ms here), a cost no installed copy pays.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKET = ROOT / "examples" / "packets" / "valid" / "nvidia_h100_gemm_vs_cublaslt.json"

_TYPER_APP = """
import sys, typer
app = typer.Typer(add_completion=False)
@app.command()
def main(paths: list[str] = typer.Argument(...), strict: bool = typer.Option(False)) -> None:
    pass
app(args=sys.argv[1:], standalone_mode=False)
"""


def _time(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=env)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=21, help="subprocess runs of each command")
    args = ap.parse_args()
    py = sys.executable
    kev = [py, "-m", "kernel_evidence"]
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        packet = Path(tmp) / "one.json"
        packet.write_bytes(PACKET.read_bytes())
        commands = {
            "python -c 'import typer' (peer)": [py, "-c", "import typer"],
            "kevidence validate one.json": [*kev, "validate", str(packet)],
            "kevidence validate --strict one.json": [*kev, "validate", "--strict", str(packet)],
            "kevidence --version": [*kev, "--version"],
            "kevidence --help": [*kev, "--help"],
            "python -c pass (interpreter)": [py, "-c", "pass"],
            "typer app, one argument (floor)": [py, "-c", _TYPER_APP, str(packet)],
        }
        for cmd in commands.values():  # warm the file cache and the bytecode
            _time(cmd, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, cmd in commands.items():
                times[name].append(_time(cmd, env))
    med = {name: statistics.median(v) for name, v in times.items()}
    peer = med["python -c 'import typer' (peer)"]
    print(
        f"# kevidence start-up, median of {args.runs} subprocess runs each (Python {sys.version.split()[0]})"
    )
    for name, m in med.items():
        print(f"{name:40s} {m * 1000:8.1f} ms")
    for name in ("kevidence validate one.json", "kevidence validate --strict one.json", "kevidence --version",
                 "kevidence --help", "typer app, one argument (floor)"):  # fmt: skip
        print(f"RATIO {name:34s} / import typer: {med[name] / peer:5.2f}x  (target 2x)")


if __name__ == "__main__":
    main()
