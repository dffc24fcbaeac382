"""Nsight Compute raw-page ingest vs ``pyarrow.csv.read_csv`` on the same file, in one run.

Generates (in a temp dir) an ``ncu --csv --page raw`` export: two ``==PROF==`` lines, the
header, the units row, then LAUNCHES rows x METRICS metric columns (like a real raw page:
a block of device attributes identical in every row, launch settings that repeat, and
measured counters that differ per launch). The launch settings and counters that a `--set
full` page holds and the mapping table turns into canonical metrics carry their real names
(15 canonical metrics per launch, as in a real full page; the ``realistic`` shape, the one
the target is judged on); the others are stand-ins. The ``plain`` shape gives every column
a stand-in name (one canonical metric per launch, ``duration``: the file this script made
until 2026-11-22, kept to compare with the figures of then).

Prints, per shape, the time to read it with pyarrow alone (the floor: just the CSV, no
header/units/noise handling, no packets) and the times of the ncu adapter: parsing only, to
a packet with every raw value inline (``ADAPTER.read``), and to a packet whose raw values go
to an Arrow IPC side file (``AdapterOptions(side_dir=...)``, see
``kernel_evidence.rawtable``), each with its ratio to the peer.

    python benchmarks/bench_ncu.py [--launches 20000] [--metrics 500] [--repeat 5]
        [--shape realistic|plain|both]
"""

from __future__ import annotations

import argparse
import csv
import gc
import os
import random
import statistics
import sys
import tempfile
import time


def generate(path: str, launches: int, metrics: int, seed: int = 7, real_names: bool = True) -> None:
    """The raw page; ``real_names=False`` gives every setting and counter a stand-in name
    (the ``plain`` shape: one canonical metric per launch, ``duration``)."""
    rng = random.Random(seed)
    ids = [
        "ID",
        "Process ID",
        "Process Name",
        "Host Name",
        "Kernel Name",
        "Context",
        "Stream",
        "Block Size",
        "Grid Size",
        "Device",
        "CC",
    ]
    n_dev = metrics // 3  # constant device attributes
    n_launch = metrics // 6  # launch settings: few distinct values
    n_meas = metrics - n_dev - n_launch  # measured counters: distinct per launch
    # the settings and counters a `--set full` raw page holds under their real names (the
    # ones the mapping table turns into canonical metrics: 13 per launch), the rest stand-ins
    launch_real = [
        ("launch__block_size", ""), ("launch__grid_size", ""), ("launch__thread_count", "thread"),
        ("launch__registers_per_thread", "register/thread"), ("launch__shared_mem_per_block_static", "byte/block"),
        ("launch__shared_mem_per_block_dynamic", "byte/block"),
    ]  # fmt: skip
    meas_real = [
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
        ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%"),
        ("dram__bytes.sum", "byte"), ("dram__bytes.sum.per_second", "byte/second"),
        ("sm__warps_active.avg.pct_of_peak_sustained_active", "%"),
        ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "%"),
        ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "%"),
        ("lts__t_sector_hit_rate.pct", "%"),
        ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", ""),
        ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", ""),
    ] + [(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum", "inst")
         for op in ("fadd", "fmul", "ffma", "hadd", "hmul", "hfma", "dadd", "dmul", "dfma")]  # fmt: skip
    launch_real = launch_real[:n_launch] if real_names else []  # a small --metrics run has room for fewer
    meas_real = meas_real[: n_meas - 1] if real_names else []
    names = [f"device__attribute_a{j:03d}" for j in range(n_dev - 1)] + ["device__attribute_display_name"]
    names += [n for n, _u in launch_real] + [
        f"launch__setting_{j:03d}" for j in range(n_launch - len(launch_real))
    ]
    names += ["gpu__time_duration.sum"] + [n for n, _u in meas_real]
    names += [f"sm__counter_{j:03d}.sum" for j in range(n_meas - 1 - len(meas_real))]
    units = (
        [""] * n_dev
        + [u for _n, u in launch_real]
        + ["block"] * (n_launch - len(launch_real))
        + ["ns"]
        + [u for _n, u in meas_real]
        + ["%" if j % 3 == 0 else "inst" for j in range(n_meas - 1 - len(meas_real))]
    )
    dev_values = [str(rng.randrange(1, 10**6)) for _ in range(n_dev - 1)] + ["NVIDIA H100 80GB HBM3"]
    kernels = [
        "void gemm<cutlass::half_t, 128, 256, 64>(Params<float, 2>, int, int)",
        "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 4, bfloat16_t>, 0, 1>(Flash_fwd_params)",
        "elementwise_add",
    ]
    with open(path, "w", newline="") as fh:
        fh.write(
            "==PROF== Connected to process 4242 (/usr/bin/python3)\n==PROF== Disconnected from process 4242\n"
        )
        w = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writerow(ids + names)
        w.writerow([""] * len(ids) + units)
        for i in range(launches):
            k = kernels[i % 3]
            row = [
                str(i),
                "4242",
                "python3",
                "127.0.0.1",
                k,
                "1",
                "7",
                "(128, 1, 1)",
                f"({i % 64 + 1}, 16, 1)",
                "0",
                "9.0",
            ]
            row += dev_values
            row += [str(rng.choice((1, 2, 4, 8, 128, 256))) for _ in range(n_launch)]
            row += [f"{rng.randrange(10**4, 10**7)}"] + [
                f"{rng.random() * 100:.2f}" for _ in range(n_meas - 1)
            ]
            w.writerow(row)


def _times(fns: dict[str, object], repeat: int, reset: object) -> dict[str, list[float]]:
    """Wall times of every function, interleaved run by run (these machines are shared and
    noisy: interleaving spreads the noise over all of them). ``reset`` frees the previous
    run's result before the clock starts, for every function alike."""
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for key, fn in fns.items():
            reset()  # type: ignore[operator]
            gc.collect()
            t = time.perf_counter()
            fn()  # type: ignore[operator]
            out[key].append(time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--metrics", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--shape", choices=["realistic", "plain", "both"], default="realistic")
    args = ap.parse_args()
    shapes = ["realistic", "plain"] if args.shape == "both" else [args.shape]
    for shape in shapes:
        run(shape, args.launches, args.metrics, args.repeat)
    print("target: full ingest within 2x of the peer, judged on the realistic shape")
    return 0


def run(shape: str, launches: int, metrics: int, repeat: int) -> None:

    import pyarrow.csv as pacsv

    from kernel_evidence._gc import paused_gc
    from kernel_evidence.adapters import AdapterOptions
    from kernel_evidence.adapters.ncu import ADAPTER, read_reports
    from kernel_evidence.rawtable import read_raw_table

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ncu_raw.csv")
        side_dir = os.path.join(tmp, "side")
        t = time.perf_counter()
        generate(path, launches, metrics, real_names=shape == "realistic")
        size = os.path.getsize(path)
        print(
            f"[{shape}] file: {launches} launches x {metrics} metrics, {size / 1e6:.1f} MB "
            f"(generated in {time.perf_counter() - t:.1f} s)"
        )

        def peer() -> None:
            # the peer reads the table only: told where it starts, header row as names
            table = pacsv.read_csv(path, read_options=pacsv.ReadOptions(skip_rows=2))
            assert table.num_rows == launches + 1  # + the units row
            result["table"] = table  # freed outside the clock, like our results

        result: dict[str, object] = {}
        kept: dict[str, object] = {}

        def reset() -> None:
            kept.update(result)  # the full ingest's packets are checked below
            result.clear()

        def ours() -> None:
            result["r"] = ADAPTER.read([path], AdapterOptions(created_at="2026-11-22T00:00:00Z"))

        def side() -> None:
            # every run writes the same file (its name carries its digest): replaced in place
            options = AdapterOptions(
                created_at="2026-11-22T00:00:00Z", side_dir=side_dir, side_base=side_dir, inline_max_cells=0
            )
            result["s"] = ADAPTER.read([path], options)

        def parse_only() -> None:
            with paused_gc():
                result["reports"] = read_reports(path)[0]

        runs = {"peer": peer, "parse": parse_only, "ours": ours, "side": side}
        times = _times(runs, repeat, reset)
        reset()
        packets = kept["r"].packets  # type: ignore[attr-defined]
        cap = packets[0].profiler[0]
        kernels = cap.kernels
        n_kept = len(cap.raw_columns) + sum(k.startswith("device__attribute_") for k in cap.attributes)
        assert len(kernels) == launches and n_kept >= metrics, n_kept
        assert packets[0].packet_id is not None
        # the side-file packet: same records, its raw values in the file it references
        side_packets = kept["s"].packets  # type: ignore[attr-defined]
        side_cap = side_packets[0].profiler[0]
        assert side_cap.raw_columns is None and side_cap.raw_table is not None
        assert side_packets[0].packet_id is not None
        assert len(side_cap.kernels) == launches
        table = read_raw_table(side_cap, side_dir)
        assert table.num_rows == launches, table.num_rows
        assert table.num_columns == len(cap.raw_columns), (table.num_columns, len(cap.raw_columns))
        assert table.column_names == list(cap.raw_columns)
        side_mb = side_cap.raw_table.size.value / 1e6
        cells = launches * metrics
        best = {k: min(v) for k, v in times.items()}
        med = {k: statistics.median(v) for k, v in times.items()}

        def line(label: str, key: str) -> str:
            text = (
                f"{label:<41s}{best[key]:7.3f} s ({med[key]:.3f})  {cells / best[key] / 1e6:6.1f} M cells/s"
            )
            if key != "peer":
                text += f"  ratio {best[key] / best['peer']:.2f}x ({med[key] / med['peer']:.2f}x)"
            return text

        print(f"[{shape}] best of {repeat} (median), interleaved:")
        print(line("pyarrow.csv.read_csv (peer):", "peer"))
        print(line("ours, parse to raw columns:", "parse"))
        print(
            line("ours, full ingest to a packet with id:", "ours")
            + f"  ({len(packets)} packet, {len(kernels)} KernelRecords with {len(kernels[0].metrics)} "
            f"canonical metrics each, {len(cap.raw_columns)} raw columns)"
        )
        print(
            line("ours, full ingest with a side file:", "side")
            + f"  ({table.num_columns} raw columns in a {side_mb:.1f} MB Arrow IPC file)"
        )


if __name__ == "__main__":
    sys.exit(main())
