"""Benchmark: ``kevidence audit`` over a generated 100,000-line FlashInfer trace.

Generates, in a temporary folder, a FlashInfer-Trace JSONL file (40 definitions x 50
workloads x 50 solutions; 90 % PASSED with latencies, 7 % INCORRECT_NUMERICAL, 3 %
RUNTIME_ERROR; one environment), with a few planted lies so the audit has something to
say (one line in a thousand claims twice the speedup its latencies give), then times in
one run, each as the best of the rounds (process CPU time):

* the peer: ``msgspec.json.decode`` of every line (generic decode to dicts, nothing else);
* ours: :func:`kernel_evidence.audit.audit` of the file: recognise it, ingest it with the
  ``flashinfer-trace`` adapter (packets, canonical JSON, ids), run every rule on every
  packet, recompute every speedup, the physical floor, the tolerance checks, then the
  checks across the set, and rank the suspects.

Prints both times, the ratio, and how many suspects the audit ranked at each level.

Usage: ``python benchmarks/bench_audit.py [--lines N] [--repeat K]``
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

import msgspec


def generate(path: Path, n: int, seed: int = 0) -> int:
    """Write ``n`` evaluated trace lines; returns how many carry a planted false claim."""
    rng = random.Random(seed)
    n_defs, n_work = 40, 50
    n_sols = max(1, -(-n // (n_defs * n_work)))
    env = {
        "hardware": "NVIDIA A800-SXM4-80GB",
        "libs": {"torch": "2.9.1+cu130", "triton": "3.5.1", "cuda": "13.0"},
    }
    written = lies = 0
    with open(path, "w", encoding="utf-8") as fh:
        for k in range(n_defs):
            definition = f"op{k}_h{1024 * (k % 8 + 1)}"
            workloads = [
                (
                    {"batch_size": rng.randint(1, 16384)},
                    str(uuid.UUID(int=rng.getrandbits(128))),
                    rng.uniform(0.01, 5.0),
                )
                for _ in range(n_work)
            ]
            for j in range(n_sols):
                solution = f"agent{j % 7}_{definition}_cuda_r{j}_c0_high"
                for axes, wid, ref in workloads:
                    if written >= n:
                        return lies
                    roll = rng.random()
                    ev: dict[str, object] = {
                        "environment": env,
                        "timestamp": "2026-03-17T14:19:52.543776",
                        "log": "",
                    }
                    if roll < 0.90:
                        lat = ref / rng.uniform(0.2, 5.0)
                        sf = ref / lat
                        if rng.random() < 0.001:
                            sf *= 2.0
                            lies += 1
                        ev.update(status="PASSED", performance={"latency_ms": lat, "reference_latency_ms": ref, "speedup_factor": sf},
                                  correctness={"max_relative_error": rng.uniform(0, 0.01), "max_absolute_error": rng.uniform(0, 0.05), "extra": None})  # fmt: skip
                    elif roll < 0.97:
                        ev.update(status="INCORRECT_NUMERICAL", performance=None,
                                  correctness={"max_relative_error": rng.uniform(1, 1e6), "max_absolute_error": 0.125, "extra": None})  # fmt: skip
                    else:
                        ev.update(status="RUNTIME_ERROR", performance=None, correctness=None,
                                  log="RuntimeError: CUDA error: an illegal memory access was encountered\n")  # fmt: skip
                    line = {"definition": definition, "workload": {"uuid": wid, "axes": axes, "inputs": {}},
                            "solution": solution, "evaluation": ev}  # fmt: skip
                    fh.write(json.dumps(line, separators=(",", ":")) + "\n")
                    written += 1
    return lies


def _cpu(fn: object) -> float:
    t0 = time.process_time()
    fn()  # type: ignore[operator]
    return time.process_time() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from kernel_evidence.audit import audit

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.jsonl"
        lies = generate(path, args.lines)
        data = path.read_bytes()
        lines = [ln for ln in data.split(b"\n") if ln]
        decode = msgspec.json.decode
        peer = ours = float("inf")
        result = None
        for _ in range(args.repeat):  # interleaved: both timed under the same load
            gc.collect()
            peer = min(peer, _cpu(lambda: [decode(ln) for ln in lines]))
            gc.collect()
            t0 = time.process_time()
            result = audit([str(path)])
            ours = min(ours, time.process_time() - t0)
        assert result is not None
        counts = result.counts()  # type: ignore[attr-defined]
        caught = sum(1 for s in result.suspects if any(r.code in ("KE301", "AU201") for r in s.reasons))  # type: ignore[attr-defined]
    mib = len(data) / (1 << 20)
    print(f"trace: {len(lines):,} lines, {mib:.1f} MiB; {lies} lines claim twice their speedup")
    print(f"peer  msgspec.json.decode of every line: {peer:.3f} s")
    print(f"ours  kernel_evidence.audit.audit:        {ours:.3f} s  ({ours / peer:.1f}x the peer)")
    print(
        f"audit: {result.packets:,} packets, suspects by level: {counts}; speedup claims caught: {caught} of {lies}"
    )  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main())
