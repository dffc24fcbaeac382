"""XProf adapter speed: full ingest of the largest corpus profile vs a bare protobuf pass.

Peer: ``XSpace.ParseFromString`` of the same bytes (same message classes, same protobuf
runtime) plus one Python pass over every event of every line (reading each event's
metadata id and duration). That is the least any reader in Python must do; the target
is ingest within 3x of it.

    python benchmarks/bench_xprof.py [PROFILE.xplane.pb] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from google.protobuf import __version__ as protobuf_version
from google.protobuf.internal import api_implementation

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.xprof import ADAPTER
from kernel_evidence.adapters.xprof._proto import messages

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "xprof"


def _largest() -> Path:
    files = sorted(CORPUS.rglob("*.xplane.pb"), key=lambda p: p.stat().st_size)
    if not files:
        sys.exit(f"no .xplane.pb under {CORPUS}; pass a profile path")
    return files[-1]


def bare_pass(data: bytes) -> tuple[int, int]:
    space = messages().XSpace()
    space.ParseFromString(data)
    n = 0
    total = 0
    for plane in space.planes:
        for line in plane.lines:
            for ev in line.events:
                n += 1
                total += ev.duration_ps + ev.metadata_id * 0
    return n, total


def ingest(path: Path) -> int:
    result = ADAPTER.read([str(path)], AdapterOptions(created_at="2026-01-01T00:00:00Z"))
    return sum(len(p.profiler[0].kernels or []) for p in result.packets if p.profiler)


def _best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)  # type: ignore[return-value]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile", nargs="?", type=Path)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    path = args.profile or _largest()
    data = path.read_bytes()
    messages()  # build the classes once, outside the timings
    events, _ = bare_pass(data)
    records = ingest(path)
    peer_best, peer_med = _best(lambda: bare_pass(data), args.repeat)  # type: ignore[misc]
    ours_best, ours_med = _best(lambda: ingest(path), args.repeat)  # type: ignore[misc]
    mb = len(data) / 1e6
    print(f"profile: {path.name} ({mb:.2f} MB, {events} events -> {records} kernel records)")
    print(f"protobuf {protobuf_version} ({api_implementation.Type()} backend), best of {args.repeat}")
    for label, best, med in (
        ("peer  ParseFromString + one event pass", peer_best, peer_med),
        ("ours  xprof adapter, full packet      ", ours_best, ours_med),
    ):
        print(f"{label}: {best * 1e3:8.2f} ms (median {med * 1e3:.2f})  {mb / best:7.1f} MB/s")
    ratio = ours_best / peer_best
    verdict = "OK" if ratio <= 3 else "SLOWER THAN TARGET"
    print(f"ratio ours/peer: {ratio:.2f}x (target <= 3x) {verdict}")


if __name__ == "__main__":
    main()
