"""XProf adapter: real profiles from the corpus checked against xprof's own tool outputs,
plus synthetic XSpaces built here with the adapter's message classes for what the corpus lacks."""

from __future__ import annotations

import gzip
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from _xplane import PlaneBuilder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel_evidence.adapters import Adapter, AdapterOptions, get_adapter
from kernel_evidence.adapters.xprof import ADAPTER
from kernel_evidence.adapters.xprof import _proto as _xprof_proto
from kernel_evidence.errors import AdapterError, MissingExtra
from kernel_evidence.models import EvidencePacket, KernelRecord

OPTS = AdapterOptions(created_at="2026-11-22T01:02:03Z")
GIB = float(1 << 30)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "xprof"


# ------------------------------------------------------------------------------------------
# helpers


def _read(*paths: Any) -> list[EvidencePacket]:
    result = ADAPTER.read([str(p) for p in paths], OPTS)
    for packet in result.packets:
        assert packet.packet_id == packet.compute_id()
        EvidencePacket.model_validate(packet.to_dict())  # round trip through JSON data
    return result.packets


def _one(*paths: Any) -> EvidencePacket:
    packets = _read(*paths)
    assert len(packets) == 1
    return packets[0]


def _records(packet: EvidencePacket) -> dict[str, KernelRecord]:
    assert packet.profiler is not None and packet.profiler[0].kernels is not None
    return {k.id or k.name: k for k in packet.profiler[0].kernels}


def _m(rec: KernelRecord, name: str, unit: str) -> float:
    assert rec.metrics is not None
    q = rec.metrics[name]
    assert q.unit == unit
    return q.value


def _raw(rec: KernelRecord, name: str) -> Any:
    assert rec.raw is not None
    return rec.raw[name].value


def _gviz(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    return doc if isinstance(doc, list) else [doc]


def _rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    ids = [c["id"] for c in table["cols"]]
    return [{ids[i]: (c or {}).get("v") for i, c in enumerate(r["c"])} for r in table["rows"]]


def _f(v: Any) -> float:
    return float(v)


def _close(a: float, b: float, rel: float = 1e-9, abs_: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


# ------------------------------------------------------------------------------------------
# interface


def test_registered_under_name_and_alias() -> None:
    assert get_adapter("xprof") is ADAPTER
    assert get_adapter("jax-profile") is ADAPTER
    assert isinstance(ADAPTER, Adapter)


def test_proto_file_matches_runtime_descriptors() -> None:
    """The documented .proto and the field table the classes are built from agree field by field."""
    text = (Path(_xprof_proto.__file__).parent / "_xplane.proto").read_text()
    found: dict[str, set[tuple[str, int]]] = {}
    for m in re.finditer(r"message (\w+) \{(.*?)\n\}", text, re.S):
        body = re.sub(r"//[^\n]*", "", m.group(2))
        found[m.group(1)] = {(f, int(n)) for f, n in re.findall(r"(\w+) = (\d+);", body)}
    table = {name: {(f[0], f[1]) for f in fields} for name, fields in _xprof_proto.MESSAGES.items()}
    assert found == table
    classes = _xprof_proto.messages()
    for name, fields in _xprof_proto.MESSAGES.items():
        desc = getattr(classes, name).DESCRIPTOR
        assert {(f.name, f.number) for f in desc.fields} == {(f[0], f[1]) for f in fields}


def test_missing_protobuf_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _xprof_proto.messages.cache_clear()
    for mod in list(sys.modules):
        if mod == "google.protobuf" or mod.startswith("google.protobuf."):
            monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "google.protobuf", None)
    f = tmp_path / "host.xplane.pb"
    f.write_bytes(b"\x0a\x00")
    try:
        with pytest.raises(MissingExtra) as err:
            ADAPTER.read([str(f)], OPTS)
        assert str(err.value) == (
            "reading XProf .xplane.pb profiles needs the `protobuf` package: "
            "pip install 'kernel-evidence[xprof]'"
        )
    finally:
        monkeypatch.undo()
        _xprof_proto.messages.cache_clear()


# ------------------------------------------------------------------------------------------
# corpus: TPU v6e, 4 TensorCores (xplane + xprof 2.24.2 tool outputs in derived/)


@pytest.fixture
def tpu(corpus: Path) -> Path:
    path = corpus / "xprof" / "tpu_v6e_inference_4core.xplane.pb"
    if not path.is_file():
        pytest.skip("TPU v6e profile absent")
    return path


def test_tpu_device_and_ops(tpu: Path) -> None:
    packet = _one(tpu)
    hw = packet.hardware
    assert hw is not None
    assert (hw.vendor, hw.device, hw.arch, hw.count) == ("google", "TPU v6e", "tpu_v6e", 4)
    assert hw.peak_flop_rate is not None and (hw.peak_flop_rate.value, hw.peak_flop_rate.unit) == (
        918.0,
        "TFLOP/s",
    )
    assert hw.peak_bandwidth is not None and hw.peak_bandwidth.value == pytest.approx(1637.993152512)
    assert packet.subject.name == "jit_f"
    assert packet.timing is None  # no step markers in this profile
    cap = packet.profiler[0]  # type: ignore[index]
    assert cap.tool == "xprof"
    assert cap.source is not None and cap.source.size is not None and cap.source.size.value == 862707
    assert cap.attributes is not None and cap.attributes["device_type"] == "TPU v6 Lite"
    recs = _records(packet)
    assert len(recs) == 17
    fusion = recs["12190760917235803885/broadcast_add_fusion.1"]
    assert fusion.invocations == 400 and fusion.category == "loop fusion" and fusion.process == "jit_f"
    assert _m(fusion, "flops", "FLOP") == 1342177280 * 400
    assert _m(fusion, "bytes_accessed", "B") == 10737418240 * 400
    assert _m(fusion, "arithmetic_intensity", "ratio") == 0.125
    assert _m(fusion, "duration", "ns") == pytest.approx(3262107413.75)
    assert _raw(fusion, "flops") == 1342177280.0  # per occurrence, as the profiler said
    assert _raw(fusion, "bound_by") == "HBM"
    assert fusion.raw_name is not None and fusion.raw_name.startswith(
        "%broadcast_add_fusion.1 = f32[5,1024,1024,256]"
    )
    allreduce = recs["9646411105960254074/all-reduce"]
    assert allreduce.invocations == 12 and allreduce.process == "jit__psum"
    assert _m(allreduce, "duration", "ns") == pytest.approx(1460345258.75)


def test_tpu_ops_agree_with_xprof_hlo_stats(tpu: Path, corpus: Path) -> None:
    recs = _records(_one(tpu))
    rows = _rows(_gviz(corpus / "xprof" / "derived" / "tpu_v6e_inference_4core.hlo_stats.json.gz")[0])
    assert len(rows) == len(recs) == 17
    for row in rows:
        rec = recs[f"{row['program_id']}/{row['hlo_op_name']}"]
        assert rec.invocations == int(row["occurrences"])
        assert rec.category == row["category"]
        assert rec.raw_name == row["hlo_op_expression"]
        time_us = _m(rec, "duration", "ns") / 1e3
        assert _close(time_us, row["total_time"])
        assert _close(_raw(rec, "total_self_time_ps") / 1e6, row["total_self_time"])
        assert _close(_m(rec, "achieved_flop_rate", "FLOP/s") / 1e9, _f(row["model_flop_rate"]))
        gibs = _m(rec, "bytes_accessed", "B") / (time_us * 1e-6) / GIB
        assert _close(gibs, _f(row["measured_memory_bw"]))
        assert _close(_m(rec, "dram_bandwidth", "GB/s") * 1e9 / GIB, _f(row["hbm_bw"]))
        assert _close(_m(rec, "arithmetic_intensity", "ratio"), _f(row["operational_intensity"]))
        assert _raw(rec, "bound_by") == row["bound_by"]


def test_tpu_roofline_agrees_with_xprof(tpu: Path, corpus: Path) -> None:
    packet = _one(tpu)
    recs = {r.name: r for r in _records(packet).values()}
    table = _gviz(corpus / "xprof" / "derived" / "tpu_v6e_inference_4core.roofline_model.json.gz")[0]
    p = table["p"]
    hw = packet.hardware
    assert hw is not None and hw.peak_flop_rate is not None and hw.peak_bandwidth is not None
    assert hw.peak_flop_rate.value * 1e3 == _f(p["peak_flop_rate"])  # GFLOP/s
    assert round(hw.peak_bandwidth.value * 1e9 / GIB, 1) == _f(p["peak_hbm_bw"])  # GiB/s, 1 decimal
    summary = packet.profiler[0].summary  # type: ignore[index]
    assert summary is not None
    assert round(summary["hbm_ridge_point"].value, 3) == _f(p["hbm_ridge_point"])
    rows = [r for r in _rows(table) if r["step"] == "Total" and str(r["include_infeed_outfeed"]) == "True"]
    program = next(r for r in rows if r["category"] == "Program")
    assert _close(summary["device_time"].value / 1e3, _f(program["total_time"]))
    assert _close(summary["achieved_flop_rate"].value / 1e9, _f(program["measured_flop_rate"]))
    assert _close(summary["arithmetic_intensity"].value, _f(program["operational_intensity"]))
    ops = [r for r in rows if r["category"] != "Program"]
    assert len(ops) == 17
    for row in ops:
        rec = recs[row["operation"]]
        assert _raw(rec, "bound_by") == row["bound_by"]
        assert _close(_raw(rec, "roofline_efficiency"), _f(row["roofline_efficiency"]), rel=1e-6)
        assert _close(_raw(rec, "optimal_flop_rate") / 1e9, _f(row["optimal_flop_rate"]), rel=1e-6)


def test_tpu_overview_and_op_profile_agree(tpu: Path, corpus: Path) -> None:
    packet = _one(tpu)
    derived = corpus / "xprof" / "derived"
    env = _gviz(derived / "tpu_v6e_inference_4core.overview_page.json.gz")[2]["p"]
    assert packet.hardware is not None and packet.hardware.count == int(env["device_core_count"])
    assert packet.profiler[0].attributes["device_type"] == env["device_type"]  # type: ignore[index]
    op_profile = json.loads(
        gzip.decompress((derived / "tpu_v6e_inference_4core.op_profile.json.gz").read_bytes())
    )
    root = op_profile["byProgramExcludeIdle"]["metrics"]
    summary = packet.profiler[0].summary  # type: ignore[index]
    assert summary is not None
    assert _close(summary["op_time"].value * 1e3, root["rawTime"], rel=1e-10)
    assert summary["flops"].value == root["rawFlops"]


def test_tpu_trace_json_gives_the_same_ops(tpu: Path, corpus: Path) -> None:
    trace = corpus / "xprof" / "derived" / "tpu_v6e_inference_4core.tsl_export.trace.json.gz"
    from_pb = _records(_one(tpu))
    packet = _one(trace)
    from_json = _records(packet)
    assert set(from_json) == set(from_pb)
    for key, rec in from_json.items():
        assert rec.invocations == from_pb[key].invocations
        assert _close(_m(rec, "duration", "ns"), _m(from_pb[key], "duration", "ns"))
        assert _m(rec, "bytes_accessed", "B") == _m(from_pb[key], "bytes_accessed", "B")
    assert packet.hardware is not None and (packet.hardware.vendor, packet.hardware.device) == (
        "google",
        "TPU",
    )
    assert packet.profiler[0].warnings == [  # type: ignore[index]
        "trace-event JSON records no device capabilities: peaks, clock and memory are unknown",
        "trace-event JSON omits the `flops` stat; FLOPs are the `model_flops` figures",
    ]


def test_tpu_tool_json_set_is_one_packet(corpus: Path) -> None:
    derived = corpus / "xprof" / "derived"
    files = sorted(derived.glob("tpu_v6e_inference_4core.*.json.gz"))
    files = [f for f in files if "tsl_export" not in f.name]  # trace_viewer stays: not needed
    if len(files) < 4:
        pytest.skip("derived TPU tool outputs absent")
    packet = _one(*files)
    recs = _records(packet)
    assert len(recs) == 17
    rec = recs["12190760917235803885/copy-done.4"]
    assert rec.invocations == 400
    assert _m(rec, "duration", "ns") == pytest.approx(77773215731.25)
    assert packet.hardware is not None and packet.hardware.device == "TPU v6e" and packet.hardware.count == 4
    assert packet.hardware.peak_flop_rate is not None and packet.hardware.peak_flop_rate.value == 918.0


def test_tpu_single_tool_files(corpus: Path) -> None:
    """Each tool alone still gives the ops: op_profile per HLO op, framework_op_stats per JAX op."""
    derived = corpus / "xprof" / "derived"
    prof, fw = (
        derived / f"tpu_v6e_inference_4core.{t}.json.gz" for t in ("op_profile", "framework_op_stats")
    )
    if not prof.is_file() or not fw.is_file():
        pytest.skip("derived TPU tool outputs absent")
    total_ps = 315117903706250  # op_profile byProgramExcludeIdle rawTime
    by_op = _one(prof)
    recs = _records(by_op)
    assert len(recs) == 17
    assert recs["12190760917235803885/copy-done.4"].invocations == 400
    summary = by_op.profiler[0].summary  # type: ignore[index]
    assert summary is not None and summary["op_time"].value * 1e3 == pytest.approx(total_ps)
    assert summary["flops"].value == 1626718863360
    framework = _one(fw)
    recs = _records(framework)
    assert len(recs) == 15  # device rows without IDLE
    add = recs["jit(f)/jit(main)/add"]
    assert (add.invocations, add.category) == (400, "add")
    assert _m(add, "duration", "ns") == pytest.approx(9619893637.5)
    summary = framework.profiler[0].summary  # type: ignore[index]
    assert summary is not None and summary["op_time"].value * 1e3 == pytest.approx(total_ps)


def test_xprof_cli_device_information(corpus: Path) -> None:
    path = corpus / "xprof" / "derived" / "tpu_v6e_inference_4core.xprof_cli_get_device_information.json"
    if not path.is_file():
        pytest.skip("xprof CLI output absent")
    hw = _one(path).hardware
    assert hw is not None and (hw.device, hw.arch) == ("TPU v6e", "tpu_v6e")
    assert hw.peak_flop_rate is not None and hw.peak_flop_rate.value == 918.0  # 918000 GFLOP/s
    assert hw.peak_bandwidth is not None
    assert round(hw.peak_bandwidth.value * 1e9 / GIB, 1) == 1525.5  # GiB/s as printed


def test_profile_directory_merges_hosts(tpu: Path, tmp_path: Path) -> None:
    run = tmp_path / "logs" / "plugins" / "profile" / "2026_11_22_00_00_00"
    run.mkdir(parents=True)
    (run / "host0.xplane.pb").symlink_to(tpu)
    (run / "host1.xplane.pb").symlink_to(tpu)
    packet = _one(tmp_path / "logs")
    rec = _records(packet)["12190760917235803885/copy-done.4"]
    assert rec.invocations == 800
    assert _m(rec, "duration", "ns") == pytest.approx(2 * 77773215731.25)
    assert packet.profiler[0].source is None  # two files: no single artifact  # type: ignore[index]


# ------------------------------------------------------------------------------------------
# corpus: 8x V100, TensorFlow 2020 (no HLO ops, no device_vendor stat)


@pytest.fixture
def v100(corpus: Path) -> Path:
    path = corpus / "xprof" / "gpu_v100x8_tf_bert_multiworker.xplane.pb"
    if not path.is_file():
        pytest.skip("V100 profile absent")
    return path


def test_v100_device_steps_and_kernels(v100: Path, corpus: Path) -> None:
    packet = _one(v100)
    hw = packet.hardware
    assert hw is not None
    assert (hw.vendor, hw.device, hw.arch, hw.count, hw.compute_units) == (
        "nvidia",
        "Nvidia GPU (Volta)",
        "sm_70",
        8,
        80,
    )
    assert hw.memory is not None and hw.memory.value == 16945512448
    assert hw.peak_bandwidth is not None and hw.peak_bandwidth.value == 898.048
    # derived: 1024 FLOP/cycle/SM (fp16 tensor) x 80 SMs x 1.53 GHz
    assert hw.peak_flop_rate is not None and hw.peak_flop_rate.value == pytest.approx(125.3376)
    assert packet.timing is not None and packet.timing.stats is not None
    assert packet.timing.stats.n == 1 and packet.timing.stats.median == pytest.approx(19.865491)
    cap = packet.profiler[0]  # type: ignore[index]
    assert cap.attributes is not None and cap.attributes["active_device_planes"] == 3
    assert cap.warnings == [
        "the profile records no GPU vendor (device_vendor); "
        "assumed NVIDIA from the CUDA kernel details (`regs:`)"
    ]
    kernels = [k for k in _records(packet).values() if k.category == "kernel"]
    rows = _rows(_gviz(corpus / "xprof" / "derived" / "gpu_v100x8.kernel_stats.json.gz")[0])
    assert len(kernels) == len(rows) == 15
    assert sum(k.invocations or 0 for k in kernels) == 1330
    remaining = list(kernels)
    for row in rows:  # match on name, launch shape and registers (names repeat)
        match = next(
            k
            for k in remaining
            if k.name == row["kernel_name"]
            and k.grid == [int(x) for x in row["grid_dim"].split(",")]
            and k.block == [int(x) for x in row["block_dim"].split(",")]
            and _m(k, "registers_per_thread", "count") == row["registers_per_thread"]
            and k.invocations == row["occurrences"]
        )
        remaining.remove(match)
        assert _close(_m(match, "duration", "ns") / 1e3, row["total_duration_us"], rel=1e-6)
        assert _m(match, "shared_memory_per_block", "B") == row["shmem_bytes"]
    assert not remaining


def test_v100_tool_json(corpus: Path) -> None:
    files = sorted((corpus / "xprof" / "derived").glob("gpu_v100x8.*.json.gz"))
    if not files:
        pytest.skip("derived V100 tool outputs absent")
    packet = _one(*files)
    recs = list(_records(packet).values())
    assert len(recs) == 15 and all(r.category == "kernel" for r in recs)
    assert sum(r.invocations or 0 for r in recs) == 1330
    assert packet.hardware is not None and packet.hardware.count == 8
    assert packet.timing is not None and packet.timing.stats is not None
    assert packet.timing.stats.median == pytest.approx(21.310352)  # xprof's step (host + device)


# ------------------------------------------------------------------------------------------
# corpus: JAX 0.10.2 on CPU, and the TPU v5 training golden outputs (tool JSON only)


def test_cpu_xplane_and_trace(corpus: Path) -> None:
    pb = corpus / "xprof" / "derived" / "jax0.10.2_cpu_host.xplane.pb"
    trace = corpus / "xprof" / "jax0.10.2_cpu_host.trace.json.gz"
    if not pb.is_file() or not trace.is_file():
        pytest.skip("CPU profile absent")
    for packet in (_one(pb), _one(trace)):
        assert packet.hardware is not None and (packet.hardware.vendor, packet.hardware.device) == (
            "cpu",
            "CPU",
        )
        (rec,) = _records(packet).values()
        assert (rec.name, rec.process, rec.invocations) == ("ynn_fusion", "jit_step", 3)
        assert _m(rec, "duration", "ns") == pytest.approx(2071232.0)
        assert packet.subject.name == "jit_step"
    attrs = _one(pb).profiler[0].attributes  # type: ignore[index]
    assert attrs is not None and attrs["jax_version"] == "0.10.2" and attrs["jaxlib_version"] == "0.10.2"
    steps = _one(trace).timing
    assert steps is not None and steps.stats is not None and steps.stats.n == 3


def test_tpu_v5_golden_tool_outputs(corpus: Path) -> None:
    files = sorted((corpus / "xprof").glob("golden_tpu_v5_training.*.json.gz"))
    if len(files) < 5:
        pytest.skip("TPU v5 golden outputs absent")
    packet = _one(*files)
    hw = packet.hardware
    assert hw is not None and (hw.vendor, hw.device, hw.arch, hw.count) == (
        "google",
        "TPU v5p",
        "tpu_v5p",
        8,
    )
    assert hw.peak_flop_rate is not None and hw.peak_flop_rate.value == pytest.approx(233.4)
    assert hw.peak_bandwidth is not None and hw.peak_bandwidth.value * 1e9 / GIB == pytest.approx(1287.45)
    recs = _records(packet)
    assert len(recs) == 357  # hlo_stats rows
    rec = recs["2041036616644817336/fusion.606"]
    assert rec.invocations == 512 and rec.category == "megacore fusion"
    assert _m(rec, "duration", "ns") == pytest.approx(119756153.274)
    assert _raw(rec, "total_self_time_ps") == pytest.approx(37451740064.0)
    assert _m(rec, "achieved_flop_rate", "FLOP/s") == pytest.approx(36792.190344448856e9)
    assert _m(rec, "arithmetic_intensity", "ratio") == pytest.approx(244.52839851024208)
    assert packet.timing is not None and packet.timing.stats is not None
    assert packet.timing.stats.n == 5
    # each step agrees with the overview's own tooltip ("Step time = 120.882 ms")
    overview = _gviz(corpus / "xprof" / "golden_tpu_v5_training.overview_page.json.gz")[1]
    tips = [float(re.search(r"Step time = ([\d.]+) ms", r["tooltip"]).group(1)) for r in _rows(overview)]  # type: ignore[union-attr]
    assert [round(x, 3) for x in packet.timing.stats.samples or []] == tips
    assert round(packet.timing.stats.max or 0, 1) == _f(overview["p"]["steptime_ms_maximum"])
    attrs = packet.profiler[0].attributes  # type: ignore[index]
    assert attrs is not None and attrs["mxu_utilization_percent"] == 15.7


def test_every_corpus_file_reads(corpus: Path) -> None:
    """Each real input alone gives a valid packet (hostile or partial shapes must not crash)."""
    folder = corpus / "xprof"
    inputs = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.endswith((".md", ".tsv")))
    assert inputs
    for path in inputs:
        packet = _one(path)
        assert packet.profiler is not None and packet.profiler[0].tool == "xprof"


# ------------------------------------------------------------------------------------------
# synthetic XSpaces (what the corpus lacks): GPU HLO ops (AMD), nested TPU ops, steps


class _Plane(PlaneBuilder):
    """Build one XPlane with interned stat and event names."""

    def __init__(self, space: Any, pid: int, name: str) -> None:
        super().__init__(space, name, pid)
        self._event_ids: dict[str, int] = {}

    def stat(self, target: Any, name: str, value: Any, ref: bool = False) -> None:
        self.put(target.add(), name, ("ref", value) if ref else value)

    def event_md(self, name: str, display: str = "", **stats: Any) -> int:
        if name not in self._event_ids:
            i = len(self._event_ids) + 1
            self._event_ids[name] = i
            md = self.p.event_metadata[i]
            md.id, md.name, md.display_name = i, name, display
            for k, v in stats.items():
                self.stat(md.stats, k, v)
        return self._event_ids[name]

    def line(self, lid: int, name: str) -> Any:
        return self.p.lines.add(id=lid, name=name)


def _breakdown(*items: tuple[int, int, int]) -> bytes:
    msg = _xprof_proto.messages().MemoryAccessBreakdown()
    for op_type, space, nbytes in items:
        msg.memory_accessed.add(operation_type=op_type, memory_space=space, bytes_accessed=nbytes)
    return msg.SerializeToString()


def _write(space: Any, path: Path) -> Path:
    path.write_bytes(space.SerializeToString())
    return path


def _amd_space() -> Any:
    space = _xprof_proto.messages().XSpace()
    space.hostnames.append("node7")
    gpu = _Plane(space, 1, "/device:GPU:0")
    for name, value in (
        ("clock_rate", 2100000),
        ("core_count", 304),
        ("memory_bandwidth", 5300000000000),
        ("memory_size", 205822885888),
        ("compute_cap_major", 9),
        ("compute_cap_minor", 4),
    ):
        gpu.stat(gpu.p.stats, name, value)
    gpu.stat(gpu.p.stats, "device_vendor", "AMD")
    gpu.stat(gpu.p.stats, "gpu_device_name", "gfx942:sramecc+:xnack-")
    line = gpu.line(7, "Stream #7(Kernel)")
    kernels = [  # (kernel, hlo_op, offset_ps, duration_ps)
        ("Cijk_gemm_kernel", "dot.2", 0, 4_000_000),
        ("loop_fusion_kernel_a", "fusion.1", 5_000_000, 1_000_000),
        ("loop_fusion_kernel_b", "fusion.1", 6_500_000, 500_000),
        ("Cijk_gemm_kernel", "dot.2", 8_000_000, 3_000_000),
    ]
    for kname, op, off, dur in kernels:
        ev = line.events.add(metadata_id=gpu.event_md(kname), offset_ps=off, duration_ps=dur)
        gpu.stat(ev.stats, "hlo_op", op, ref=True)
        gpu.stat(ev.stats, "hlo_module", "jit_mlp", ref=True)
        gpu.stat(ev.stats, "program_id", 42)
        gpu.stat(
            ev.stats,
            "kernel_details",
            "grid:1216,1,1 block:256,1,1 private_mem:0 group_mem:16384 occ_pct:50",
            ref=True,
        )
    idle = _Plane(space, 2, "/device:GPU:1")
    idle.stat(idle.p.stats, "core_count", 304)
    return space


def test_synthetic_amd_gpu_hlo_ops(tmp_path: Path) -> None:
    packet = _one(_write(_amd_space(), tmp_path / "node7.xplane.pb"))
    hw = packet.hardware
    assert hw is not None
    assert (hw.vendor, hw.device, hw.arch, hw.count, hw.compute_units) == (
        "amd",
        "AMD GPU - gfx942",
        "gfx942",
        2,
        304,
    )
    # 2048 FLOP/cycle/CU x 304 CUs x 2.1 GHz = 1307.4 TFLOP/s (MI300X dense fp16)
    assert hw.peak_flop_rate is not None and hw.peak_flop_rate.value == pytest.approx(1307.4432)
    assert hw.peak_bandwidth is not None and hw.peak_bandwidth.value == 5300.0
    recs = _records(packet)
    assert set(recs) == {"42/dot.2", "42/fusion.1"}
    dot, fusion = recs["42/dot.2"], recs["42/fusion.1"]
    assert (dot.invocations, dot.process, dot.device) == (2, "jit_mlp", 0)
    assert _m(dot, "duration", "ns") == 7000.0
    # two contiguous kernels of one HLO op are one occurrence (xprof merges them)
    assert _m(fusion, "duration", "ns") == 1500.0 and fusion.invocations == 1
    assert _raw(fusion, "kernel_count") == 2.0
    assert fusion.raw_name == "loop_fusion_kernel_a"
    assert packet.profiler[0].kernels[0].name == "dot.2"  # sorted by time  # type: ignore[index]
    assert "flops" not in (dot.metrics or {})  # GPU captures carry no FLOP stats


def _tpu_space(with_steps: bool = True) -> Any:
    space = _xprof_proto.messages().XSpace()
    tpu = _Plane(space, 2, "/device:TPU:0")
    tpu.stat(tpu.p.stats, "device_type_string", "TPU v5 lite")
    tpu.stat(tpu.p.stats, "peak_teraflops_per_second", 197.0)
    tpu.stat(tpu.p.stats, "peak_hbm_bw_gigabytes_per_second", 819.0)
    modules = tpu.line(2, "XLA Modules")
    ops = tpu.line(3, "XLA Ops")
    mod = tpu.event_md("jit_step(77)")
    while_md = tpu.event_md(
        "%while.1 = (s32[]) while(...)",
        "while.1",
        program_id=77,
        hlo_category="while",
        flops=2_000_000_000,
        bytes_accessed=4_000_000,
    )
    conv_md = tpu.event_md(
        "%convolution.3 = bf16[8,128] convolution(...)",
        "convolution.3",
        program_id=77,
        hlo_category="convolution",
        flops=1_000_000_000,
        bytes_accessed=2_000_000,
        memory_access_breakdown=_breakdown((1, 1, 1_500_000), (2, 3, 500_000)),
    )
    stamp = 0
    for _ in range(2):  # two executions: while (10 us) containing two convolutions (3 us each)
        modules.events.add(metadata_id=mod, offset_ps=stamp, duration_ps=12_000_000)
        ops.events.add(metadata_id=while_md, offset_ps=stamp + 1_000_000, duration_ps=10_000_000)
        ops.events.add(metadata_id=conv_md, offset_ps=stamp + 2_000_000, duration_ps=3_000_000)
        ops.events.add(metadata_id=conv_md, offset_ps=stamp + 6_000_000, duration_ps=3_000_000)
        stamp += 20_000_000
    if with_steps:
        steps = tpu.line(1, "Steps")
        for i, dur in enumerate((12_000_000, 14_000_000, 13_000_000)):
            steps.events.add(metadata_id=tpu.event_md(str(i)), offset_ps=i * 20_000_000, duration_ps=dur)
    return space


def test_synthetic_tpu_nesting_breakdown_and_steps(tmp_path: Path) -> None:
    packet = _one(_write(_tpu_space(), tmp_path / "t.xplane.pb"))
    hw = packet.hardware
    assert hw is not None and (hw.device, hw.arch, hw.count) == ("TPU v5e", "tpu_v5e", 1)
    recs = _records(packet)
    wh, conv = recs["77/while.1"], recs["77/convolution.3"]
    assert _m(wh, "duration", "ns") == 20_000.0
    assert _raw(wh, "total_self_time_ps") == 8_000_000.0  # 2 x (10 us - 2 x 3 us)
    assert _raw(conv, "total_self_time_ps") == 12_000_000.0
    assert conv.invocations == 4 and conv.process == "jit_step"
    assert _m(conv, "flops", "FLOP") == 4e9
    assert _m(conv, "achieved_flop_rate", "FLOP/s") == pytest.approx(4e9 / 12e-6)
    # HBM bytes come from the memory_access_breakdown (space 1), not bytes_accessed
    assert _m(conv, "dram_bandwidth", "GB/s") == pytest.approx(4 * 1_500_000 / 12e-6 / 1e9)
    assert _raw(conv, "hbm_bytes_accessed") == 1_500_000.0
    assert _raw(conv, "bound_by") == "Compute"  # 333 TFLOP/s of 197 beats 500 GB/s of 819
    timing = packet.timing
    assert timing is not None and timing.method == "xprof" and timing.stats is not None
    assert timing.stats.n == 3
    assert [timing.stats.median, timing.stats.min, timing.stats.max] == pytest.approx([0.013, 0.012, 0.014])
    summary = packet.profiler[0].summary  # type: ignore[index]
    assert summary is not None and summary["step_count"].value == 3


def test_created_at_defaults_to_profile_start(tmp_path: Path) -> None:
    space = _tpu_space(with_steps=False)
    env = _Plane(space, 9, "Task Environment")
    env.stat(env.p.stats, "profile_start_time", 1795305984332565306)
    f = _write(space, tmp_path / "h.xplane.pb")
    (packet,) = ADAPTER.read([str(f)], AdapterOptions()).packets
    assert packet.created_at == "2026-11-22T00:06:24Z"  # the run folder was 2026_11_22_00_06_24
    assert packet.timing is None


def test_checked_in_fixture(tmp_path: Path) -> None:
    """tests/fixtures/xprof holds the synthetic TPU space (written by make_fixtures.py)."""
    fixture = FIXTURES / "synthetic_tpu_v5e.xplane.pb"
    committed = _xprof_proto.messages().XSpace()
    committed.ParseFromString(fixture.read_bytes())
    assert committed == _tpu_space()  # message equality: map order in bytes may vary by runtime
    assert len(_records(_one(fixture))) == 2


# ------------------------------------------------------------------------------------------
# bad input: one line naming the file and what was expected


def test_garbage_protobuf(tmp_path: Path) -> None:
    f = tmp_path / "bad.xplane.pb"
    f.write_bytes(b"\xff\xff\xff\xff\x0f this is not protobuf")
    with pytest.raises(AdapterError) as err:
        ADAPTER.read([str(f)], OPTS)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{f}: not a valid XSpace protobuf (")
    assert msg.endswith("); expected the binary <host>.xplane.pb the profiler writes")


def test_truncated_profile(tpu: Path, tmp_path: Path) -> None:
    data = tpu.read_bytes()
    for cut in (1000, len(data) // 2, len(data) - 3):
        f = tmp_path / f"cut{cut}.xplane.pb"
        f.write_bytes(data[:cut])
        with pytest.raises(AdapterError) as err:
            ADAPTER.read([str(f)], OPTS)
        assert str(err.value).startswith(f"{f}: not a valid XSpace protobuf (")
        assert "\n" not in str(err.value)


def test_empty_and_text_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.xplane.pb"
    empty.write_bytes(b"")
    with pytest.raises(AdapterError) as err:
        ADAPTER.read([str(empty)], OPTS)
    assert str(err.value) == (
        f"{empty}: no XPlane in the file (0 bytes); expected the binary <host>.xplane.pb the profiler writes"
    )
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(AdapterError) as err:
        ADAPTER.read([str(other)], OPTS)
    assert str(err.value) == (
        f"{other}: not an XProf input; expected <host>.xplane.pb, <host>.trace.json.gz, "
        "an xprof tool .json(.gz), or a plugins/profile/<run>/ directory"
    )
    with pytest.raises(AdapterError, match=r"no such file or directory$"):
        ADAPTER.read([str(tmp_path / "missing.xplane.pb")], OPTS)
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(AdapterError) as err:
        ADAPTER.read([str(tmp_path / "emptydir")], OPTS)
    assert str(err.value) == (
        f"{tmp_path / 'emptydir'}: no XProf profile found; expected <host>.xplane.pb "
        "(or <host>.trace.json.gz) under plugins/profile/<run>/"
    )


def test_bad_json_inputs(tmp_path: Path) -> None:
    broken = tmp_path / "host.trace.json.gz"
    broken.write_bytes(gzip.compress(b'{"traceEvents": [')[:-6])
    with pytest.raises(AdapterError) as err:
        ADAPTER.read([str(broken)], OPTS)
    assert str(err.value).startswith(f"{broken}: truncated or corrupt gzip (")
    bad = tmp_path / "host.trace.json"
    bad.write_text('{"traceEvents": [')
    with pytest.raises(AdapterError) as err:
        ADAPTER.read([str(bad)], OPTS)
    assert str(err.value).startswith(f"{bad}: not valid JSON (")
    wrong = tmp_path / "x.trace.json"
    wrong.write_text('{"events": []}')
    with pytest.raises(AdapterError) as err:
        ADAPTER.read([str(wrong)], OPTS)
    assert str(err.value) == (
        f"{wrong}: no `traceEvents` array; expected Chrome trace-event JSON written by the profiler"
    )
    tool = tmp_path / "run.hlo_stats.json"
    tool.write_text('{"cols": [{"id": "a"}], "rows": []}')
    with pytest.raises(AdapterError) as err:
        ADAPTER.read([str(tool)], OPTS)
    assert str(err.value) == (
        f"{tool}: not an xprof tool output; expected hlo_stats, roofline_model, overview_page, "
        "op_profile, framework_op_stats or kernel_stats JSON (or xprof CLI get_overview / "
        "get_device_information)"
    )


def test_partial_trace_json_does_not_crash(tmp_path: Path) -> None:
    """Keys are optional: events without ts/dur/args, unknown phases, odd types."""
    doc = {"traceEvents": [
        {"ph": "M", "pid": 3, "name": "process_name", "args": {"name": "/device:TPU:0"}},
        {"ph": "M", "pid": 3, "tid": 3, "name": "thread_name", "args": {"name": "XLA Ops"}},
        {"ph": "X", "pid": 3, "tid": 3, "name": "fusion.1", "ts": 1.0, "dur": 2.5,
         "args": {"bytes_accessed": "100"}},
        {"ph": "X", "pid": 3, "tid": 3, "name": "fusion.1", "ts": "bad"},
        {"ph": "X", "pid": 3, "tid": 3, "name": "fusion.1", "ts": 9.0, "dur": 0.5, "args": None},
        {"ph": "B"}, 7, {},
    ]}  # fmt: skip
    f = tmp_path / "h.trace.json"
    f.write_text(json.dumps(doc))
    (rec,) = _records(_one(f)).values()
    assert (rec.name, rec.invocations) == ("fusion.1", 2)
    assert _m(rec, "duration", "ns") == 3000.0
    assert _m(rec, "bytes_accessed", "B") == 100.0


def test_plain_folder_keeps_profiles_apart(tpu: Path, v100: Path, tmp_path: Path) -> None:
    """Outside plugins/profile/<run>/ each file is its own profile; a host's trace JSON
    beside its XSpace is not read twice."""
    (tmp_path / "a.xplane.pb").symlink_to(tpu)
    (tmp_path / "b.xplane.pb").symlink_to(v100)
    run = tmp_path / "plugins" / "profile" / "run1"
    run.mkdir(parents=True)
    (run / "vm.xplane.pb").symlink_to(tpu)
    (run / "vm.trace.json.gz").write_bytes(gzip.compress(b'{"traceEvents": []}'))
    result = ADAPTER.read([str(tmp_path)], OPTS)
    devices = sorted(p.hardware.device for p in result.packets if p.hardware)
    assert devices == ["Nvidia GPU (Volta)", "TPU v6e", "TPU v6e"]
    assert f"{run}: 1 JSON file(s) repeat a profile already read; skipped" in result.warnings


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_never_crash(data: bytes, tmp_path: Path) -> None:
    """Any bytes named .xplane.pb give packets or one AdapterError line, never another error."""
    f = tmp_path / "fuzz.xplane.pb"
    f.write_bytes(data)
    try:
        result = ADAPTER.read([str(f)], OPTS)
    except AdapterError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(f))
        assert "could not read the profile" not in str(exc)  # the catch-all for bugs
    else:
        assert len(result.packets) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    doc=st.recursive(
        st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "traceEvents",
                        "ph",
                        "pid",
                        "tid",
                        "name",
                        "args",
                        "ts",
                        "dur",
                        "cols",
                        "rows",
                        "p",
                        "c",
                        "v",
                        "id",
                        "hlo_op",
                        "device_type",
                    ]
                ),
                inner,
                max_size=5,
            )
        ),
        max_leaves=25,
    )
)
def test_arbitrary_json_never_crashes(doc: Any, tmp_path: Path) -> None:
    f = tmp_path / "fuzz.trace.json"
    f.write_text(json.dumps(doc))
    try:
        ADAPTER.read([str(f)], OPTS)
    except AdapterError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(f))
        assert "could not read the profile" not in str(exc)  # the catch-all for bugs


def test_synthetic_gpu_trace_json_matches_xspace(tmp_path: Path) -> None:
    """The trace-event JSON of the synthetic AMD profile groups kernels like its XSpace."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "pid": 1, "tid": 7, "name": "thread_name", "args": {"name": "Stream #7(Kernel)"}},
    ]
    for kname, op, off, dur in (
        ("Cijk_gemm_kernel", "dot.2", 0, 4_000_000),
        ("loop_fusion_kernel_a", "fusion.1", 5_000_000, 1_000_000),
        ("loop_fusion_kernel_b", "fusion.1", 6_500_000, 500_000),
        ("Cijk_gemm_kernel", "dot.2", 8_000_000, 3_000_000),
    ):
        args = {"hlo_op": op, "hlo_module": "jit_mlp", "program_id": "42"}
        events.append({"ph": "X", "pid": 1, "tid": 7, "ts": off / 1e6, "dur": dur / 1e6,
                       "name": kname, "args": args})  # fmt: skip
    f = tmp_path / "node7.trace.json.gz"
    f.write_bytes(gzip.compress(json.dumps({"traceEvents": [*events, {}]}).encode()))
    from_json = _records(_one(f))
    from_pb = _records(_one(_write(_amd_space(), tmp_path / "node7.xplane.pb")))
    assert set(from_json) == set(from_pb) == {"42/dot.2", "42/fusion.1"}
    for key, rec in from_json.items():
        assert rec.invocations == from_pb[key].invocations
        assert _m(rec, "duration", "ns") == pytest.approx(_m(from_pb[key], "duration", "ns"))
