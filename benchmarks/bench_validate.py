"""Validation throughput and memory, against jsonschema and the msgspec parse floor.

    python benchmarks/bench_validate.py [--packets 50000]

Prints, in one run on the same JSONL file:
  * packets/s of kernel_evidence.validate_paths (the `kevidence validate` engine, all rules)
  * packets/s of `kevidence validate --quiet` end to end (process start included; its
    automatic worker processes use the machine's cores), best and median of 3 runs
  * packets/s of jsonschema's Draft 2020-12 validator with the published schema
    (on a subset of each chunk: it is slow; the rate is per packet, so it compares directly)
  * packets/s of msgspec.json.decode alone (the parse floor)
  * where the engine's time goes (``--stages``): decoding, the canonical form and id, the
    rule bands, the reports, and the grades, each against the parse floor
  * peak RSS of `kevidence validate` on 20k vs 200k packets, in one process and with its
    automatic workers (``--memory``; must not grow with the count)

Throughputs are per CPU second of this process (time.process_time), all three measured interleaved,
so that the ratios hold on a shared machine; the CLI line is wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]


def recorded_templates() -> list[dict]:
    """Schema 0.2 packets as a harness records them (both sides' conditions, the defence
    record, a capture that says what it is of), so the rules that compare them run too:
    the H100 GEMM of examples/packets/generate.py, and an MI300X copy of it."""
    import copy
    import importlib.util

    spec = importlib.util.spec_from_file_location("_examples", ROOT / "examples/packets/generate.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    h100 = gen.finish(gen.nvidia_gemm_recorded())
    h100.pop("packet_id")
    amd = gen.finish(gen.amd_gemm())
    amd.pop("packet_id")
    amd["measured_at"] = h100["measured_at"]
    amd["defences"] = copy.deepcopy(h100["defences"])
    for d in amd["defences"]:  # the MI300X's flush, as its conditions below record it
        if d["check"] == "cache_flush":
            d["detail"] = "512 MiB written between calls (Infinity Cache 256 MiB)"
    t = amd["timing"]
    shape = (
        next(s for s in amd["task"]["shapes"] if s["id"] == t.get("shape_id")) if t.get("shape_id") else None
    )
    cond = {
        "dtypes": list(amd["task"]["dtypes"]),
        "device": amd["hardware"]["device"],
        "device_count": 1,
        "method": t["method"],
        "warmup": t.get("warmup", 10),
        "repeats": t.get("repeats", 30),
        "synchronized": True,
        "cache": {
            "mode": "flushed",
            "flush_bytes": {"value": 512, "unit": "MiB"},
            "flush_in_timed_window": False,
        },
        "session": "bench-session",
        "interleaved": True,
        "fresh_inputs": True,
        "sample_handling": "all",
    }
    if shape is not None:
        cond["shape_id"] = shape["id"]
        if shape.get("dims"):
            cond["dims"] = dict(shape["dims"])
    t["conditions"] = cond
    t["baseline"]["conditions"] = copy.deepcopy(cond)
    return [h100, amd]


def make_packets(n: int, path: Path, *, unique: bool = False) -> None:
    """Write n valid, varied packets (built from the bundled examples) as JSONL.

    With ``unique``, each packet also has its own timestamps, commit and container digest
    (as a real stream has): the pattern check then cannot answer them from its cache of
    strings already seen."""
    import hashlib
    from datetime import datetime, timedelta, timezone

    from kernel_evidence._codec.canonical import packet_id_for

    start = datetime(2026, 1, 1, tzinfo=timezone.utc)

    templates = [json.loads(p.read_text()) for p in sorted((ROOT / "examples/packets/valid").glob("*.json"))]
    templates += recorded_templates()
    rng = random.Random(7)
    enc = msgspec.json.Encoder(order="sorted")
    with open(path, "wb") as fh:
        for i in range(n):
            d = json.loads(json.dumps(templates[i % len(templates)]))
            d["lineage"] = {"run_id": "bench", "candidate_id": f"c{i}", "iteration": i}
            d["subject"]["name"] = f"{d['subject']['name']}_{rng.randrange(10**6)}"
            if unique:
                made = start + timedelta(seconds=37 * i)
                d["created_at"] = made.strftime("%Y-%m-%dT%H:%M:%SZ")
                if "measured_at" in d:
                    d["measured_at"] = (made - timedelta(seconds=90)).strftime("%Y-%m-%dT%H:%M:%SZ")
                r = d.get("replay") or {}
                if (r.get("repository") or {}).get("commit"):
                    r["repository"]["commit"] = hashlib.sha1(b"%d" % i).hexdigest()
                if (r.get("container") or {}).get("digest"):
                    r["container"]["digest"] = "sha256:" + hashlib.sha256(b"%d" % i).hexdigest()
            d.pop("packet_id", None)
            d["packet_id"] = packet_id_for(d)
            fh.write(enc.encode(d))  # as kernel_evidence writes packets: compact, sorted keys
            fh.write(b"\n")


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def bench_interleaved(path: Path, js_total: int, chunk: int = 2000) -> dict[str, tuple[int, float]]:
    """Engine, parse floor and jsonschema timed chunk by chunk, alternating, so all three see
    the same load. Returns ``{name: (packets, cpu_seconds)}``.

    Times are CPU time of this process (``time.process_time``): on a shared machine, wall
    time also counts the moments the process waits for a core.

    The engine runs exactly as `kevidence validate` does (file reading, decoding, every
    rule, grading), over files of ``chunk`` lines; the floor decodes the same lines;
    jsonschema (slow) validates the first few lines of each chunk, ``js_total`` in all.
    """
    import jsonschema

    from kernel_evidence.rules import validate_paths
    from kernel_evidence.schema import load_schema

    dec = msgspec.json.Decoder()
    validator = jsonschema.Draft202012Validator(load_schema())
    lines = path.read_bytes().splitlines()
    chunks = range(0, len(lines), chunk)
    js_per_chunk = max(1, js_total // len(chunks))
    out = {"engine": [0, 0.0], "floor": [0, 0.0], "jsonschema": [0, 0.0]}
    with tempfile.TemporaryDirectory() as tmp:
        for start in chunks:
            part = lines[start : start + chunk]
            f = Path(tmp) / "chunk.jsonl"
            f.write_bytes(b"\n".join(part) + b"\n")
            t = time.process_time()
            for line in part:
                dec.decode(line)
            out["floor"][1] += time.process_time() - t
            out["floor"][0] += len(part)
            t = time.process_time()
            bad = 0
            for rep in validate_paths([str(f)]):
                out["engine"][0] += 1
                bad += not rep.ok
            out["engine"][1] += time.process_time() - t
            assert bad == 0, f"{bad} invalid packets in the benchmark input"
            t = time.process_time()
            for line in part[:js_per_chunk]:
                errors = list(validator.iter_errors(json.loads(line)))
                assert not errors
            out["jsonschema"][1] += time.process_time() - t
            out["jsonschema"][0] += len(part[:js_per_chunk])
    return {k: (int(v[0]), float(v[1])) for k, v in out.items()}


def bench_stages(path: Path, rounds: int = 3) -> dict[str, float]:
    """Where the engine's time goes, in CPU microseconds per packet (best of ``rounds``,
    each stage timed right after the parse floor, over the same lines):

    * ``floor``: ``msgspec.json.decode`` to Python objects;
    * ``structs``: decoding into the packet structs and their pattern check;
    * ``decode``: what the validator does per packet before any rule (the structs, the
      canonical re-encoding that proves no key is repeated, and the SHA-256 of the
      canonical bytes for the packet id);
    * ``bare``: ``validate_paths`` with no rule band (each batch's findings empty):
      reading, decoding and the reports;
    * ``engine``: ``validate_paths`` (``engine - bare`` is what the rule bands cost, on
      packets just decoded, as in the engine);
    * ``grades``: grading every report (what ``--json`` and the listed packets add).
    """
    import kernel_evidence.rules as engine_module
    from kernel_evidence._codec.decode import decode_checked
    from kernel_evidence._codec.structs import PacketStructNoPatterns, check_patterns
    from kernel_evidence.rules import validate_paths

    lines = path.read_bytes().splitlines()
    n = len(lines)
    dec = msgspec.json.Decoder()
    structs = msgspec.json.Decoder(PacketStructNoPatterns)
    reports = list(validate_paths([str(path)]))
    packets = [rep._packet for rep in reports]  # noqa: SLF001  (a report keeps it until graded)

    def floor() -> None:
        for line in lines:
            dec.decode(line)

    def run_structs() -> None:
        for line in lines:
            check_patterns(structs.decode(line))

    def run_decode() -> None:
        for line in lines:
            decode_checked(line)

    def run_bare() -> None:
        real = engine_module.check_batch
        engine_module.check_batch = lambda ps, future=None: [[] for _ in ps]
        try:
            for _ in validate_paths([str(path)]):
                pass
        finally:
            engine_module.check_batch = real

    def run_engine() -> None:
        for _ in validate_paths([str(path)]):
            pass

    def run_grades() -> None:
        for rep in reports:
            rep.grade  # noqa: B018  (computed when first read)

    stages = {
        "structs": run_structs,
        "decode": run_decode,
        "bare": run_bare,
        "engine": run_engine,
        "grades": run_grades,
    }
    best = dict.fromkeys(["floor", *stages], float("inf"))
    for _ in range(rounds):
        for name, fn in stages.items():
            t = time.process_time()
            floor()
            best["floor"] = min(best["floor"], time.process_time() - t)
            if name == "grades":  # ungraded again (a report drops its packet once graded)
                for rep, p in zip(reports, packets, strict=True):
                    rep._grade, rep._packet = None, p  # noqa: SLF001
            t = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t)
    return {k: v / n * 1e6 for k, v in best.items()}


def cli_run(path: Path, jobs: int = 0) -> tuple[float, int]:
    """Wall time and peak RSS (KiB) of `kevidence validate --quiet [--jobs N] path` in a child
    process (the largest of its processes: the command, or one of its workers)."""
    code = (
        "import resource,subprocess,sys,time;"
        "t=time.perf_counter();"
        f"r=subprocess.run([sys.executable,'-m','kernel_evidence','validate','--quiet','--no-progress','--jobs',{str(jobs)!r},{str(path)!r}],stdout=subprocess.DEVNULL);"
        "dt=time.perf_counter()-t;"
        "print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    if out[2] != "0":
        raise SystemExit("kevidence validate failed on the benchmark input")
    return float(out[0]), int(out[1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--packets", type=int, default=50_000)
    ap.add_argument("--jsonschema-packets", type=int, default=3_000)
    ap.add_argument(
        "--unique-strings",
        action="store_true",
        help="give each packet its own timestamps, commit and digest (the pattern check's cache misses)",
    )
    ap.add_argument("--memory", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument(
        "--stages",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time each stage of the engine against the parse floor",
    )
    ap.add_argument(
        "--cli-runs", type=int, default=3, help="runs of the CLI end to end (best and median shown)"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "packets.jsonl"
        make_packets(args.packets, path, unique=args.unique_strings)
        size = path.stat().st_size
        res = bench_interleaved(path, args.jsonschema_packets)
        n, dt = res["engine"]
        fn, fdt = res["floor"]
        jn, jdt = res["jsonschema"]
        # the command end to end: wall time, best of --cli-runs (other jobs only ever add time)
        cli_times = sorted(cli_run(path)[0] for _ in range(args.cli_runs))
        cli_dt = cli_times[0]
        ours, floor, js = rate(n, dt), rate(fn, fdt), rate(jn, jdt)
        print(f"input: {n} packets, {size / n:.0f} bytes/packet on average")
        print(f"kevidence engine (all rules)   {ours:>10,.0f} packets/s")
        print(
            f"kevidence validate (CLI, e2e)  {rate(n, cli_dt):>10,.0f} packets/s  ({cli_dt:.2f} s wall incl. start-up, "
            f"automatic --jobs on {os.cpu_count()} cores; best of {len(cli_times)}, median {statistics.median(cli_times):.2f} s)"
        )
        print(f"jsonschema Draft 2020-12       {js:>10,.0f} packets/s  (on {jn} packets)")
        print(f"msgspec.json.decode (floor)    {floor:>10,.0f} packets/s")
        print(f"ratio vs jsonschema: {ours / js:.1f}x faster (target >= 50x)")
        print(f"ratio vs parse floor: {floor / ours:.2f}x slower (target <= 3x; one process, CPU time)")
        print(
            f"CLI wall-clock vs parse floor: {floor / rate(n, cli_dt):.2f}x slower, median run "
            f"{floor / rate(n, statistics.median(cli_times)):.2f}x (wall clock, workers on this machine's cores vs "
            "one core's CPU time)"
        )
        if args.stages:
            st = bench_stages(path)
            print("per packet, CPU us (x parse floor), best of 3, each stage right after the floor:")
            rows = (
                ("parse floor (msgspec.json.decode)", st["floor"]),
                ("decode into the packet structs + patterns", st["structs"]),
                ("  + canonical re-encoding + id hash", st["decode"]),
                ("validate_paths without the rule bands", st["bare"]),
                ("the rule bands (engine - the above)", st["engine"] - st["bare"]),
                ("validate_paths (the engine)", st["engine"]),
                ("grading every report (--json, listed ones)", st["grades"]),
            )
            for label, us in rows:
                print(f"  {label:<45} {us:6.2f} us  ({us / st['floor']:.2f}x)")
        if args.memory:
            rss: dict[tuple[int, int], int] = {}
            for count in (20_000, 200_000):
                p = Path(tmp) / f"m{count}.jsonl"
                make_packets(count, p)
                for jobs in (1, 0):
                    _, rss[count, jobs] = cli_run(p, jobs)
                p.unlink()
            for jobs, label in ((1, "one process (--jobs 1)"), (0, "automatic --jobs")):
                small, large = rss[20_000, jobs], rss[200_000, jobs]
                print(
                    f"peak RSS, {label}: 20k packets {small / 1024:.1f} MiB, 200k packets "
                    f"{large / 1024:.1f} MiB (ratio {large / small:.2f})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
