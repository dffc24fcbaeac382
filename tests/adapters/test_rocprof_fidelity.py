"""rocprof-compute 3.x on the rocprofv3 CSV path (seen on an MI350 capture): ``pmc_perf.csv``
joins the counter passes and writes each dispatch's Start/End averaged over them
(non-integer); the per-pass ``pmc_perf_N.csv`` files keep each pass's own integer
timestamps. Durations come from the passes, every pass kept as a sample."""

from __future__ import annotations

from pathlib import Path

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.rocprof import ADAPTER
from kernel_evidence.models import EvidencePacket

KERNEL = "vecCopy(double*, double*, double*, int, int)"
#: (start, end) per pass and dispatch: pass 0, 1, 2 of dispatches 0 and 1
PASSES = [
    [(811_000_001, 811_006_001), (812_000_000, 812_008_000)],
    [(813_000_000, 813_005_000), (814_000_001, 814_009_001)],
    [(815_000_000, 815_007_000), (816_000_000, 816_007_000)],
]
_LAUNCH = (
    "Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,Arch_VGPR,Accum_VGPR,SGPR,Wave_Size"
)


def _workload(tmp_path: Path, *, passes: bool = True) -> Path:
    w = tmp_path / "workloads" / "vcopy" / "MI350"
    w.mkdir(parents=True)
    (w / "sysinfo.csv").write_text(
        "workload_name,version,gpu_model,gpu_arch,gpu_series,cu_per_gpu,num_xcd,max_sclk,se_per_gpu\n"
        "vcopy,3,MI350,gfx950,MI350,256,8,0,32\n"
    )
    # the join: counters of every pass, timestamps averaged over the passes
    lines = [
        f"Dispatch_ID,GPU_ID,{_LAUNCH},Kernel_Name,Correlation_ID,Kernel_ID,SQ_WAVES,GRBM_GUI_ACTIVE,"
        "Kernel_ID_1,Kernel_ID_2,Start_Timestamp,End_Timestamp"
    ]
    for i in range(2):
        s = sum(p[i][0] for p in PASSES) / 3
        e = sum(p[i][1] for p in PASSES) / 3
        lines.append(f'{i},0,1048576,256,0,0,16,0,16,64,"{KERNEL}",{i + 1},7,16384.0,4200.0,7,7,{s!r},{e!r}')
    (w / "pmc_perf.csv").write_text("\n".join(lines) + "\n")
    if passes:
        for n, times in enumerate(PASSES):
            rows = [
                f"Dispatch_ID,GPU_ID,Queue_ID,PID,TID,{_LAUNCH},Kernel_Name,Start_Timestamp,End_Timestamp,"
                "Correlation_ID,Kernel_ID,SQ_WAVES"
            ]
            rows += [
                f'{i},0,1,4242,4242,1048576,256,0,0,16,0,16,64,"{KERNEL}",{s},{e},{i + 1},7,16384'
                for i, (s, e) in enumerate(times)
            ]
            (w / f"pmc_perf_{n}.csv").write_text("\n".join(rows) + "\n")
    return w


def _one(path: Path) -> EvidencePacket:
    (packet,) = ADAPTER.read([str(path)], AdapterOptions(created_at="2026-11-27T00:00:00Z")).packets
    return packet


def test_averaged_timestamps_take_durations_from_the_pass_files(tmp_path: Path) -> None:
    packet = _one(_workload(tmp_path))
    cap = packet.profiler[0]
    # each dispatch's duration: its pass of median duration (6, 5, 7 us and 8, 9, 7 us)
    assert [k.metrics["duration"].value for k in cap.kernels or []] == [6000.0, 8000.0]  # type: ignore[index]
    # every pass is one more run of the dispatch: six samples of the kernel
    assert packet.timing is not None
    stats = packet.timing.stats
    assert (stats.n, stats.min, stats.max, stats.median) == (6, 5000.0, 9000.0, 7000.0)
    assert stats.mean == 7000.0
    assert "per counter pass" in (packet.timing.notes or "")
    assert cap.attributes is not None and cap.attributes["pass_files"] == 3
    assert any("pmc_perf_0.csv ... pmc_perf_2.csv" in w for w in cap.warnings or [])
    assert not any("rounded or non-integer notation" in w for w in cap.warnings or [])
    # what pmc_perf.csv wrote is kept as it was
    assert cap.raw_columns is not None
    assert cap.raw_columns["Start_Timestamp"][0] == "813000000.3333334"


def test_without_pass_files_the_averaged_timestamps_still_give_no_duration(tmp_path: Path) -> None:
    packet = _one(_workload(tmp_path, passes=False))
    assert packet.timing is None
    assert any("rounded or non-integer notation" in w for w in packet.profiler[0].warnings or [])
