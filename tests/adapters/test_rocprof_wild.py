"""rocprof formats met in the wild that the corpus lacks: per-kernel statistics files
(rocprofv3 ``*_kernel_stats.csv``, rocprof v1 ``results.stats.csv``) and kernel traces
without counters. Fixtures are hand-written (tests/fixtures/rocprof/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.rocprof import ADAPTER
from kernel_evidence.errors import AdapterError, InputError
from kernel_evidence.models import EvidencePacket

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "rocprof"
T0 = "2026-11-22T00:00:00Z"


def one(path: Path) -> EvidencePacket:
    result = ADAPTER.read([str(path)], AdapterOptions(created_at=T0))
    assert len(result.packets) == 1
    p = result.packets[0]
    EvidencePacket.model_validate(p.to_dict())
    assert p.packet_id == p.compute_id()
    return p


def test_rocprofv3_kernel_stats_folder() -> None:
    p = one(FIX / "rocprofv3_kernel_stats")  # hip_api / domain stats beside it are not kernels
    cap = p.profiler[0]
    assert cap.tool == "rocprofv3"
    assert [(k.name, k.invocations, k.metrics["duration"].value) for k in cap.kernels] == [
        ("saxpy(float, float const*, float*, int)", 40, 50000.0),
        ("fill_kernel(float*, int)", 10, 50000.0),
    ]
    assert p.subject.name == "saxpy(float, float const*, float*, int)"  # largest TotalDurationNs
    s = p.timing.stats
    assert (s.mean, s.min, s.max, s.std, s.n, s.median) == (50000.0, 48000.0, 56000.0, 1500.0, 40, None)
    assert (p.hardware.device, p.hardware.arch, p.hardware.compute_units) == (
        "Radeon RX 7900 XTX",
        "gfx1100",
        96,
    )
    assert cap.raw_columns["TotalDurationNs"] == [2000000.0, 500000.0]
    # the file itself is accepted as well
    assert one(FIX / "rocprofv3_kernel_stats" / "77_kernel_stats.csv").subject.name == p.subject.name


def test_rocprof_v1_results_stats_csv() -> None:
    p = one(FIX / "rocprofv1_stats")
    cap = p.profiler[0]
    assert cap.tool == "rocprof"
    k = {r.name: r for r in cap.kernels}
    assert set(k) == {"transpose(float*, float const*, int)", "zero(float*)"}  # [clone .kd] removed
    assert k["transpose(float*, float const*, int)"].metrics["duration"].value == 200000.0
    assert k["transpose(float*, float const*, int)"].invocations == 4
    assert k["zero(float*)"].metrics is None  # empty AverageNs: left out, never 0
    assert any("`AverageNs` is empty" in w for w in cap.warnings)
    assert p.hardware is None


def test_api_statistics_are_not_kernels(tmp_path: Path) -> None:
    f = tmp_path / "results.hip_stats.csv"
    f.write_text((FIX / "rocprofv1_stats" / "results.hip_stats.csv").read_text())
    with pytest.raises((AdapterError, InputError)):
        ADAPTER.read([str(f)], AdapterOptions(created_at=T0))


def test_kernel_trace_without_counters_is_not_called_counter_collection() -> None:
    p = one(FIX / "rocprofv3_trace_only")
    assert [k.metrics["duration"].value for k in p.profiler[0].kernels] == [3000.0, 5000.0]
    assert [k.metrics["shared_memory_per_block"].value for k in p.profiler[0].kernels] == [2048.0, 2048.0]
    assert "counter collection" not in p.timing.notes
    assert "kernel trace" in p.timing.notes


def test_rocprof_v1_stats_with_unquoted_kernel_names(tmp_path: Path) -> None:
    # older rocprof v1 quoted the header but not the names: a name's commas split the row
    f = tmp_path / "results.stats.csv"
    f.write_text(
        '"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
        "void launch<Body(View<int*>, View<int*>)::{lambda(int)#1}, Policy>(Body const*),2,900,450,60.0\n"
        "init_table(),1,600,600,40.0\n"
    )
    p = one(f)
    k = {r.name: r for r in p.profiler[0].kernels}
    name = "void launch<Body(View<int*>, View<int*>)::{lambda(int)#1}, Policy>(Body const*)"
    assert set(k) == {name, "init_table()"}
    assert (k[name].invocations, k[name].metrics["duration"].value) == (2, 450.0)
    assert p.subject.name == name  # largest TotalDurationNs, not the one row that parsed before
    assert p.profiler[0].raw_columns["Name"][0] == name
    assert any("joined back into `Name`" in w for w in p.profiler[0].warnings)


def _pass_file(path: Path, counters: dict[str, list[float]], times: list[tuple[int, int]]) -> None:
    head = (
        "GPU_ID,GUID,Correlation_Id,Dispatch_ID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,"
        "Scratch_Per_Workitem,Arch_VGPR,Accum_VGPR,SGPR,Kernel_Name,Start_Timestamp,End_Timestamp,"
        "Kernel_ID,Counter_Name,Counter_Value\n"
    )
    rows = [
        f'0,guid-{path.stem},{i + 1},{i},4096,64,0,0,12,0,24,"scale(float*, int)",{s},{e},3,{name},{vals[i]}\n'
        for i, (s, e) in enumerate(times)
        for name, vals in counters.items()
    ]
    path.write_text(head + "".join(rows))


def test_rocprof_compute_workload_of_per_pass_results_files(tmp_path: Path) -> None:
    # rocprof-compute >= 3.5 (rocpd path) leaves results_pmc_perf_N.csv, one per counter pass,
    # and no pmc_perf.csv until analyze joins them; the dispatches were lost
    w = tmp_path / "wl"
    w.mkdir()
    (w / "sysinfo.csv").write_text(
        "workload_path,version,gpu_model,gpu_arch,cu_per_gpu,num_xcd,max_waves_per_cu\nwl,3,TESTGPU,gfx1100,10,1,32\n"
    )
    _pass_file(w / "results_pmc_perf_1.csv", {"SQ_WAVES": [64.0, 64.0]}, [(1000, 4000), (9000, 11000)])
    _pass_file(
        w / "results_pmc_perf_2.csv", {"GRBM_GUI_ACTIVE": [500.0, 700.0]}, [(2000, 6000), (12000, 13000)]
    )
    _pass_file(w / "results_pmc_perf_3.csv", {"SQ_BUSY_CYCLES": [30.0, 40.0]}, [(3000, 8000), (14000, 17000)])
    p = one(w)
    cap = p.profiler[0]
    assert [k.id for k in cap.kernels] == ["0", "1"]
    # the pass of median duration: 3000, 4000, 5000 ns and 2000, 1000, 3000 ns
    assert [k.metrics["duration"].value for k in cap.kernels] == [4000.0, 2000.0]
    assert cap.raw_columns["SQ_WAVES"] == [64.0, 64.0]
    assert cap.raw_columns["GRBM_GUI_ACTIVE"] == [500.0, 700.0]
    assert cap.raw_columns["SQ_BUSY_CYCLES"] == [30.0, 40.0]
    assert cap.attributes["pass_files"] == 3
    assert p.subject.name == "scale(float*, int)"
    assert any("3 per-pass file(s)" in w for w in cap.warnings)


_V2_COLUMNS = "Dispatch_ID,GPU_ID,Grid_Size,Workgroup_Size,Kernel_Name,Start_Timestamp,End_Timestamp"


def _v2_workload(tmp_path: Path, times: list[tuple[int, int]]) -> Path:
    """An Omniperf 2.x workload on rocprofv2: sysinfo.csv, and timestamps.csv numbering the
    dispatches from 1 (the counter passes number them from 0)."""
    w = tmp_path / "wl"
    w.mkdir()
    (w / "sysinfo.csv").write_text(
        "workload_name,version,gpu_model,gpu_arch,cu_per_gpu,num_xcd,max_waves_per_cu\nwl,2,TESTGPU,gfx90a,10,1,20\n"
    )
    (w / "timestamps.csv").write_text(
        _V2_COLUMNS
        + "\n"
        + "".join(f'{i + 1},1,640,64,"k(int) (.kd)",{s},{e}\n' for i, (s, e) in enumerate(times))
    )
    return w


def test_rocprofv2_timestamps_numbered_from_one_match_level_pass_from_zero(tmp_path: Path) -> None:
    # Omniperf 2.x on rocprofv2: timestamps.csv counts dispatches from 1, SQ_LEVEL_WAVES.csv from
    # 0; matched by id, every dispatch got its successor's occupancy counters
    times = [(100, 1100), (2000, 2500), (3000, 3800)]
    w = _v2_workload(tmp_path, times)
    cols = _V2_COLUMNS
    level = [(400.0, 8000.0), (200.0, 2000.0), (100.0, 500.0)]  # GRBM_GUI_ACTIVE, SQ_ACCUM_PREV_HIRES
    (w / "SQ_LEVEL_WAVES.csv").write_text(
        cols
        + ",GRBM_GUI_ACTIVE,SQ_ACCUM_PREV_HIRES\n"
        + "".join(
            f'{i},1,640,64,"k(int) (.kd)",{s},{e},{g},{a}\n'
            for i, ((s, e), (g, a)) in enumerate(zip(times, level, strict=True))
        )
    )
    p = one(w)
    cap = p.profiler[0]
    assert cap.raw_columns["SQ_LEVEL_WAVES.GRBM_GUI_ACTIVE"] == [400.0, 200.0, 100.0]
    # 100 * ACCUM / GRBM / (max_waves_per_cu * cu_per_gpu) = 100 * 8000 / 400 / 200 = 10 %
    assert [k.metrics["achieved_occupancy"].value for k in cap.kernels] == pytest.approx([10.0, 5.0, 2.5])
    assert any("rows matched with that offset" in w for w in cap.warnings)


def test_rocprof_v1_derived_metrics_are_not_called_no_hardware_counters(tmp_path: Path) -> None:
    # a counter run with rocprof v1 derived metrics only: the warning said "no hardware counters"
    f = tmp_path / "run_output.csv"
    f.write_text(
        "Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,accum_vgpr,sgpr,"
        "wave_size,sig,obj,GPUBusy,Wavefronts\n"
        '0,"axpy(float*, int) [clone .kd]",1,0,0,10,10,4096,64,0,0,8,0,16,64,0x0,0x1,100.0,64.0\n'
    )
    p = one(f)
    cap = p.profiler[0]
    assert cap.raw_columns["GPUBusy"] == [100.0]
    assert not any("no hardware counters" in w for w in cap.warnings)
    assert any("the file's GPUBusy, Wavefronts are kept in raw_columns" in w for w in cap.warnings)


def test_rocprofv2_timestamps_from_one_give_pmc_perf_from_zero_its_own_durations(tmp_path: Path) -> None:
    # a pmc_perf.csv without timestamps takes them from timestamps.csv, matched by Dispatch_ID:
    # with rocprofv2's numbering every dispatch got its successor's duration
    w = _v2_workload(tmp_path, [(0, 100), (500, 700), (900, 1200)])
    (w / "pmc_perf.csv").write_text(
        "Dispatch_ID,GPU_ID,Grid_Size,Workgroup_Size,Kernel_Name,SQ_WAVES\n"
        + "".join(f'{i},1,640,64,"k(int) (.kd)",{10 * (i + 1)}\n' for i in range(3))
    )
    cap = one(w).profiler[0]
    assert [k.metrics["duration"].value for k in cap.kernels] == [100.0, 200.0, 300.0]
    assert any("timestamps matched with that offset" in w for w in cap.warnings)
