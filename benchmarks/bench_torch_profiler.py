"""torch-profiler adapter speed: full ingest of a generated ~100 MB Kineto trace vs msgspec.

Peer: ``msgspec.json.decode`` of the same bytes (generic: dicts and lists), the least a
Python reader of the trace does before looking at one event. The adapter's ingest reads the
file, decodes it into typed events, links each kernel to its runtime call and CPU operator,
aggregates per kernel name and device and builds the packet with its id. Target: within 2x.
Each run is a fresh process, so its peak resident memory (``ru_maxrss``) is its own; the two
sides alternate, so that other load on the machine falls on both.

    python benchmarks/bench_torch_profiler.py [--mb 100] [--repeat 3] [--keep PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

_KERNELS = [
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     [132, 1, 1], [384, 1, 1], 168, 213248),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
     [4096, 1, 1], [128, 1, 1], 24, 0),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
     [8192, 1, 1], [256, 1, 1], 40, 16),
    ("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>",
     [16, 32, 8], [128, 1, 1], 255, 98304),
]  # fmt: skip
_OPS = ["aten::linear", "aten::gelu", "aten::layer_norm", "aten::_scaled_dot_product_flash_attention"]


def generate(path: str, target_bytes: int) -> int:
    """A Kineto-layout trace of about ``target_bytes``: per launch a cpu_op (with its input
    shapes), a nested op, a cudaLaunchKernel, the kernel with CUPTI's args, two flow events."""
    rng = random.Random(7)
    with open(path, "w") as fh:
        dp = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 84929216512, "computeMajor": 9,
              "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
              "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132}  # fmt: skip
        fh.write('{"schemaVersion": 1, "deviceProperties": [' + json.dumps(dp) + '], "distributedInfo": '
                 '{"backend": "nccl", "rank": 0, "world_size": 8}, "cupti_version": 24, "cuda_runtime_version": 12040, '
                 '"baseTimeNanoseconds": 1767225600000000000, "traceEvents": [\n')  # fmt: skip
        ts = 1000.0
        n = 0
        first = True
        while fh.tell() < target_bytes:
            k = n % len(_KERNELS)
            name, grid, block, regs, shm = _KERNELS[k]
            corr = 100 + n
            ext = 10 + n
            events = [
                {"ph": "X", "cat": "cpu_op", "name": _OPS[k], "pid": 4242, "tid": 4242, "ts": round(ts, 3), "dur": 40.125,
                 "args": {"External id": ext, "Record function id": 0, "Sequence number": n, "Fwd thread id": 0,
                          "Ev Idx": 3 * n, "Input Dims": [[8, 4096, 4096], [4096, 4096], [4096]],
                          "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"],
                          "Input Strides": [[16777216, 4096, 1], [4096, 1], [1]], "Concrete Inputs": ["", "", ""]}},
                {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 4242, "tid": 4242, "ts": round(ts + 2.5, 3),
                 "dur": 30.5, "args": {"External id": ext + 1, "Record function id": 0, "Ev Idx": 3 * n + 1}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
                 "ts": round(ts + 5.0, 3), "dur": 6.25, "args": {"External id": ext + 1, "cbid": 211, "correlation": corr}},
                {"ph": "s", "id": corr, "pid": 4242, "tid": 4242, "ts": round(ts + 5.0, 3), "cat": "ac2g", "name": "ac2g"},
                {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": round(ts + 20.0, 3),
                 "dur": round(rng.uniform(5.0, 80.0), 3),
                 "args": {"External id": ext + 1, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": corr,
                          "registers per thread": regs, "shared memory": shm, "blocks per SM": 1.0, "warps per SM": 12.0,
                          "grid": grid, "block": block, "est. achieved occupancy %": 12}},
                {"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": round(ts + 20.0, 3), "cat": "ac2g", "name": "ac2g", "bp": "e"},
            ]  # fmt: skip
            for ev in events:
                fh.write(("" if first else ",\n") + json.dumps(ev))
                first = False
            ts += 50.0
            n += 1
        fh.write("\n]}\n")
    return n


def _child(mode: str, path: str, repeat: int) -> None:
    import msgspec

    times = []
    out: object = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        if mode == "peer":
            with open(path, "rb") as fh:
                out = msgspec.json.decode(fh.read())
        else:
            from kernel_evidence.adapters import AdapterOptions
            from kernel_evidence.adapters.torch_profiler import ADAPTER

            result = ADAPTER.read([path], AdapterOptions(created_at="2026-01-01T00:00:00Z"))
            out = result.packets[0]
        times.append(time.perf_counter() - t0)
        del out
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"best": min(times), "times": times, "peak_rss_mib": rss_kib / 1024}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0, help="size of the generated trace (MB)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="write the trace here and keep it")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], args.repeat)
        return
    path = args.keep or os.path.join(tempfile.mkdtemp(prefix="bench_torch_profiler_"), "trace.pt.trace.json")
    launches = generate(path, int(args.mb * 1e6))
    size = os.path.getsize(path)
    # the two sides alternate, one fresh process per run, so that load from other processes
    # on the machine falls on both alike; best time and largest peak RSS of each side
    runs: dict[str, list[dict[str, float]]] = {"peer": [], "ingest": []}
    for _ in range(args.repeat):
        for mode in ("peer", "ingest"):
            cmd = [sys.executable, __file__, "--repeat", "1", "--child", mode, path]
            runs[mode].append(
                json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            )
    peer, ing = (
        {"best": min(r["best"] for r in runs[m]), "peak_rss_mib": max(r["peak_rss_mib"] for r in runs[m])}
        for m in ("peer", "ingest")
    )
    print(
        f"trace: {size / 1e6:.1f} MB, {launches} kernel launches (each with 2 cpu_ops, a runtime call, 2 flows)"
    )
    print(f"msgspec.json.decode (peer): best {peer['best']:.3f} s, peak RSS {peer['peak_rss_mib']:.0f} MiB")
    print(
        f"kevidence ingest torch-profiler: best {ing['best']:.3f} s, peak RSS {ing['peak_rss_mib']:.0f} MiB"
    )
    print(f"ratio ingest / peer: {ing['best'] / peer['best']:.2f}x (target <= 2x)")
    if not args.keep:
        os.remove(path)


if __name__ == "__main__":
    main()
