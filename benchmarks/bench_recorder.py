"""Cost per packet of the recorder, against a named peer, in one run.

    python benchmarks/bench_recorder.py [--packets 2000]

What is timed: one candidate record per packet (task with a 4-shape suite, 4 shape
results, timing with 100 raw samples and an interleaved baseline with 100 more, the
environment captured once up front), built with the pydantic models, given its
content-addressed id, and appended to a ``.jsonl`` / ``.jsonl.zst`` stream (one zstd frame
per packet, one ``write`` per packet).

The peer: the same packet content as a plain dict, ``json.dumps`` (stdlib) and one
``write`` per line to an ``O_APPEND`` file - no validation, no id, no compression, the
least a harness could do. The ratio says what the evidence costs on top of that.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

from kernel_evidence.harness import Recorder
from kernel_evidence.harness.environment import capture_environment
from kernel_evidence.harness.timer import Measurement


def _measurement(rng: random.Random, median: float) -> Measurement:
    return Measurement(
        samples_ns=[median * rng.lognormvariate(0, 0.05) for _ in range(100)],
        method="host_clock",
        warmup=3,
        stop_rule="min 10, max 100 repeats",
        stop_reason="max_repeats (100) reached",
        cache_policy="warm",
        synchronized=True,
        interleaved=True,
        inputs_regenerated=True,
    )


def _record(rec: Recorder, i: int, cand: Measurement, base: Measurement) -> None:
    with rec.candidate(f"cand{i}") as c:
        for sid in ("s1", "s2", "s3", "s4"):
            c.shape_result(
                sid,
                passed=True,
                max_abs_error=1e-7,
                reference_max_abs=1.0,
                atol=1e-6,
                rtol=1e-5,
                elements=65536,
            )
        c.timing(cand, baseline=base, provider="numpy", version="2.0", call="np.exp", shape_id="s3")


def bench_recorder(path: Path, n: int) -> float:
    env = capture_environment()
    rng = random.Random(0)
    pairs = [(_measurement(rng, 1e5), _measurement(rng, 1.1e5)) for _ in range(16)]
    shapes = [{"id": f"s{k}", "dims": {"rows": 64 * k, "cols": 512}} for k in range(1, 5)]
    with Recorder(
        path,
        environment=env,
        created_at="2026-11-22T00:00:00Z",
        operator="softmax",
        shapes=shapes,
        dtypes=["float32"],
    ) as rec:
        t0 = time.perf_counter()
        for i in range(n):
            cand, base = pairs[i % 16]
            _record(rec, i, cand, base)
        return time.perf_counter() - t0


def bench_peer(path: Path, n: int, template: dict) -> float:  # type: ignore[type-arg]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        t0 = time.perf_counter()
        for i in range(n):
            template["subject"]["name"] = f"cand{i}"
            os.write(fd, (json.dumps(template) + "\n").encode())
        return time.perf_counter() - t0
    finally:
        os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--packets", type=int, default=2000)
    n = ap.parse_args().packets
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        bench_recorder(d / "warm.jsonl", 50)  # imports, caches
        results = {}
        for name in ("packets.jsonl", "packets.jsonl.zst"):
            results[name] = bench_recorder(d / name, n)
        first = json.loads((d / "packets.jsonl").read_text().splitlines()[0])
        peer = bench_peer(d / "peer.jsonl", n, first)
        size = (d / "packets.jsonl").stat().st_size / n
        zsize = (d / "packets.jsonl.zst").stat().st_size / n
    print(
        f"recorder, {n} packets of ~{size / 1024:.1f} KiB (zstd ~{zsize / 1024:.1f} KiB), environment captured once:"
    )
    for name, secs in results.items():
        print(
            f"  {name:<20} {n / secs:9.0f} packets/s  {secs / n * 1e6:8.1f} us/packet  ({secs / peer:.1f}x the peer)"
        )
    print(f"  peer: json.dumps + write {n / peer:9.0f} packets/s  {peer / n * 1e6:8.1f} us/packet")


if __name__ == "__main__":
    main()
