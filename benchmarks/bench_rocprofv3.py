"""Benchmark: rocprofv3 JSON output and rocpd database ingest vs the peer's own read of the same file.

Generates, in a temporary folder, one run of ``--dispatches`` kernel dispatches (default
50,000) of 40 kernels on 2 of the node's 8 MI300X GPUs, with absolute ns timestamps, in both
of rocprofv3's whole-trace formats:

* ``<pid>_results.json``: the rocprofv3 JSON output (rocprofiler-sdk's JSON writer layout,
  ``tests/adapters/_v3json.py``; ~650 bytes per dispatch as real files have);
* ``<pid>_results.db``: a rocpd database with the tables of ROCm's published schema
  (``tests/fixtures/rocprofv3/rocpd_schema.sql``, ``tests/adapters/_rocpd.py``).

For each, it times, interleaved, in one run:

* peer: JSON: ``msgspec.json.decode`` of the file's bytes (read included); rocpd: ``sqlite3``
  opening the file read-only and fetching the same rows the adapter reads (every dispatch
  column it keeps, the agents and the kernel symbols);
* ingest: ``get_adapter("rocprof").read([file])``: decode, join dispatches to agents and
  symbols, one record per kernel per GPU with its launch statistics, every launch-level value
  kept raw, the packet with its ``packet_id``.

Prints best-of and median of each, dispatches/s and the ratio (target: within 2x of the peer),
then the peak RSS of each step run alone in a fresh process, above the process's RSS after
its imports (Linux: the high-water mark is reset through ``/proc/self/clear_refs``).

    python benchmarks/bench_rocprofv3.py [--dispatches 50000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "adapters"))

from _rocpd import Dispatch, Kernel, build_rocpd  # noqa: E402
from _v3json import dispatch, results, symbol  # noqa: E402

from kernel_evidence.adapters import AdapterOptions, get_adapter  # noqa: E402

KERNELS = 40
T0 = 1_750_000_000_000_000_000


def _plan(n: int, seed: int = 7) -> list[tuple[int, int, int, int]]:
    """(kernel index, gpu, start, end) per dispatch: 90 % on GPU 0, the rest on GPU 5."""
    rng = random.Random(seed)
    out, t = [], T0
    for _ in range(n):
        k = rng.randrange(KERNELS)
        d = 2_000 + 500 * k + rng.randrange(400)
        out.append((k, 0 if rng.random() < 0.9 else 5, t, t + d))
        t += d + rng.randrange(50, 3000)
    return out


def generate(folder: Path, n: int) -> tuple[Path, Path]:
    plan = _plan(n)
    names = [
        (f"void kernel_{i}<float, {i % 4}>(float*, float const*, int)", f"_Z8kernel_{i}IfLi{i % 4}EEvPfPKfi")
        for i in range(KERNELS)
    ]
    doc = results(
        [dispatch(i + 1, k + 1, g, s, e, queue=1 + i % 4) for i, (k, g, s, e) in enumerate(plan)],
        symbols=[symbol(i + 1, n_, m, vgpr=8 + i % 32) for i, (n_, m) in enumerate(names)],
    )
    js = folder / "4242_results.json"
    js.write_bytes(msgspec.json.encode(doc))
    db = build_rocpd(
        folder / "4242_results.db",
        [Kernel(m, n_, vgpr=8 + i % 32) for i, (n_, m) in enumerate(names)],
        [Dispatch(i + 1, k, g, s, e, queue=1 + i % 4) for i, (k, g, s, e) in enumerate(plan)],
    )
    return js, db


_DISPATCH_COLUMNS = (
    'guid, pid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, tid, start, "end", group_segment_size, '
    "private_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, "
    "grid_size_z, event_id"
)


def peer_json(path: Path) -> object:
    return msgspec.json.decode(path.read_bytes())


def peer_rocpd(path: Path) -> object:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(f"SELECT {_DISPATCH_COLUMNS} FROM rocpd_kernel_dispatch").fetchall()
        agents = conn.execute("SELECT * FROM rocpd_info_agent").fetchall()
        symbols = conn.execute("SELECT * FROM rocpd_info_kernel_symbol").fetchall()
    finally:
        conn.close()
    return rows, agents, symbols


def ingest(path: Path) -> object:
    return get_adapter("rocprof").read([str(path)], AdapterOptions(created_at="2026-11-27T00:00:00Z"))


def _time(fn: Callable[[Path], object], path: Path) -> float:
    gc.collect()
    t = time.perf_counter()
    fn(path)
    return time.perf_counter() - t


_CHILD = """
import json, sys
sys.path.insert(0, {tests!r}); sys.path.insert(0, {bench!r})
import bench_rocprofv3 as b
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
before = status("VmRSS:")
with open("/proc/self/clear_refs", "w") as fh:  # reset the high-water mark to the current RSS
    fh.write("5")
b.{fn}(b.Path({path!r}))
print(json.dumps({{"base": before, "peak": status("VmHWM:")}}))
"""


def peak_rss(fn: str, path: Path) -> tuple[float, float]:
    """(MB above the process after its imports, MB in all) of ``fn(path)`` in a fresh process
    (Linux: the high-water mark is reset after the imports through /proc/self/clear_refs)."""
    code = _CHILD.format(
        tests=str(ROOT / "tests" / "adapters"), bench=str(ROOT / "benchmarks"), fn=fn, path=str(path)
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    return got["peak"] - got["base"], got["peak"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dispatches", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        js, db = generate(Path(tmp), args.dispatches)
        # the packets are right before they are timed
        (pj,) = ingest(js).packets  # type: ignore[attr-defined]
        (pd,) = ingest(db).packets  # type: ignore[attr-defined]
        for p in (pj, pd):
            cap = p.profiler[0]
            assert sum(k.invocations for k in cap.kernels) == args.dispatches
            assert p.packet_id == p.compute_id()
        print(
            f"{args.dispatches:,} dispatches of {KERNELS} kernels on 2 of 8 GPUs: JSON {js.stat().st_size / 1e6:.1f} MB, "
            f"rocpd {db.stat().st_size / 1e6:.1f} MB; packet {len(pj.to_json()) / 1e6:.2f} MB, "
            f"{len(pj.profiler[0].kernels)} records"
        )
        for label, path, peer, peer_name in (
            ("JSON ", js, peer_json, "msgspec.json.decode"),
            ("rocpd", db, peer_rocpd, "sqlite3 fetchall   "),
        ):
            peer_t, ours_t = [], []
            for _ in range(args.repeat):  # interleaved
                peer_t.append(_time(peer, path))
                ours_t.append(_time(ingest, path))
            n = args.dispatches
            print(
                f"{label} peer {peer_name}: best {min(peer_t) * 1e3:7.1f} ms  median {statistics.median(peer_t) * 1e3:7.1f} ms"
                f"  {n / min(peer_t):>12,.0f} dispatches/s"
            )
            print(
                f"{label} kevidence ingest rocprof : best {min(ours_t) * 1e3:7.1f} ms  median {statistics.median(ours_t) * 1e3:7.1f} ms"
                f"  {n / min(ours_t):>12,.0f} dispatches/s"
            )
            print(
                f"{label} ratio ingest / peer      : best {min(ours_t) / min(peer_t):.2f}x  "
                f"median {statistics.median(ours_t) / statistics.median(peer_t):.2f}x  (target <= 2x)"
            )
        for label, fn, path in (
            ("JSON  peer  ", "peer_json", js),
            ("JSON  ingest", "ingest", js),
            ("rocpd peer  ", "peer_rocpd", db),
            ("rocpd ingest", "ingest", db),
        ):
            extra, total = peak_rss(fn, path)
            print(f"peak RSS {label}: +{extra:6.0f} MB over the imports ({total:,.0f} MB in all)")


if __name__ == "__main__":
    main()
