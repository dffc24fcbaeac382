"""Edge cases of the XProf adapter on XSpaces built at run time (shapes the corpus lacks:
other TPU/GPU devices, multiple hosts, damaged values, huge event counts)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.protobuf")

from _xplane import PlaneBuilder  # noqa: E402

from kernel_evidence.adapters import AdapterOptions  # noqa: E402
from kernel_evidence.adapters.xprof import ADAPTER  # noqa: E402
from kernel_evidence.adapters.xprof._proto import messages  # noqa: E402
from kernel_evidence.errors import AdapterError  # noqa: E402
from kernel_evidence.models import EvidencePacket, KernelRecord  # noqa: E402


class _Plane(PlaneBuilder):
    """An XPlane built stat by stat, event metadata by event metadata."""

    def __init__(self, space: Any, name: str) -> None:
        super().__init__(space, name)
        self.n_md = 0

    def stat(self, name: str, v: Any) -> None:
        self.put(self.p.stats.add(), name, v)

    def md(self, name: str, display: str = "", **stats: Any) -> int:
        self.n_md += 1
        m = self.p.event_metadata[self.n_md]
        m.id, m.name, m.display_name = self.n_md, name, display
        for k, v in stats.items():
            self.put(m.stats.add(), k, v)
        return self.n_md

    def line(self, name: str) -> Any:
        return self.p.lines.add(name=name, id=len(self.p.lines))

    def ev(self, line: Any, mid: int, off: int, dur: int, **stats: Any) -> None:
        e = line.events.add(metadata_id=mid, offset_ps=off, duration_ps=dur)
        for k, v in stats.items():
            self.put(e.stats.add(), k, v)


def _tpu(space: Any, core: int, peaks: bool = True) -> _Plane:
    b = _Plane(space, f"/device:TPU:{core}")
    if peaks:
        b.stat("peak_teraflops_per_second", 275.0)
        b.stat("peak_hbm_bw_gigabytes_per_second", 1200.0)
        b.stat("device_type_string", "TPU v4")
        b.stat("has_megacore", 1)
    return b


def _write(path: Path, space: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(space.SerializeToString())
    return path


def _read(*paths: Any) -> tuple[list[EvidencePacket], list[str]]:
    r = ADAPTER.read([str(p) for p in paths], AdapterOptions())
    return r.packets, r.warnings


def _kernels(packet: EvidencePacket) -> dict[str, KernelRecord]:
    return {k.name: k for k in packet.profiler[0].kernels or []}


def _m(k: KernelRecord, name: str) -> float | None:
    q = (k.metrics or {}).get(name)
    return None if q is None else q.value


def _finite_everywhere(packet: EvidencePacket) -> None:
    doc = packet.model_dump(mode="json")

    def walk(x: Any) -> None:
        if isinstance(x, float):
            assert math.isfinite(x)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)


# ------------------------------------------------------------------------------------------
# TPU


def test_tpu_two_cores_with_peaks_gives_xprof_numbers(tmp_path: Path) -> None:
    space = messages().XSpace()
    for core in (0, 1):
        b = _tpu(space, core)
        ops = b.line("XLA Ops")
        f = b.md(
            "%fusion.1 = f32[8] fusion()", "fusion.1", flops=2_000_000, bytes_accessed=4000, program_id=7
        )
        b.ev(ops, f, 0, 1_000_000)  # 1 us
        b.ev(ops, f, 2_000_000, 1_000_000, device_duration_ps=("u", 3_000_000))  # device clock: 3 us
    (packet,), _ = _read(_write(tmp_path / "h.xplane.pb", space))
    k = _kernels(packet)["fusion.1"]
    assert k.invocations == 4
    assert _m(k, "duration") == 8000.0  # ns: (1 + 3) us x 2 cores
    assert _m(k, "flops") == 8e6
    assert _m(k, "achieved_flop_rate") == pytest.approx(8e6 / 8e-6)
    assert _m(k, "arithmetic_intensity") == 500.0
    assert k.raw["bound_by"].value == "Compute"
    assert k.raw["roofline_efficiency"].value == pytest.approx(1e12 / 275e12)
    assert k.raw["optimal_flop_rate"].value == pytest.approx(min(275e12, 500 * 1200e9))
    assert k.raw["devices"].value == 2
    hw = packet.hardware
    assert hw is not None and hw.count == 2 and hw.vendor == "google"
    assert hw.peak_flop_rate is not None and hw.peak_flop_rate.value == 275.0


@pytest.mark.parametrize("peak", [None, 0.0, -1.0])
def test_tpu_without_usable_peaks_has_no_roofline(tmp_path: Path, peak: float | None) -> None:
    space = messages().XSpace()
    b = _tpu(space, 0, peaks=False)
    if peak is not None:
        b.stat("peak_teraflops_per_second", peak)
        b.stat("peak_hbm_bw_gigabytes_per_second", peak)
    ops = b.line("XLA Ops")
    b.ev(ops, b.md("%a", "a", flops=100, bytes_accessed=10), 0, 1000)
    (packet,), _ = _read(_write(tmp_path / "h.xplane.pb", space))
    assert packet.hardware is not None and packet.hardware.peak_flop_rate is None
    assert packet.hardware.peak_bandwidth is None
    k = _kernels(packet)["a"]
    assert "bound_by" not in k.raw and "optimal_flop_rate" not in k.raw
    assert _m(k, "achieved_flop_rate") == pytest.approx(100 / 1e-9)


def test_zero_huge_and_unicode_costs_stay_finite(tmp_path: Path) -> None:
    space = messages().XSpace()
    b = _tpu(space, 0)
    ops = b.line("XLA Ops")
    b.ev(ops, b.md("%c", "copy.1", flops=0, bytes_accessed=0, program_id=1), 0, 1000)
    b.ev(ops, b.md("%d", "dot.1", flops=5000, bytes_accessed=0, program_id=1), 1000, 1000)
    b.ev(ops, b.md("%z", "zero_time", flops=5000, bytes_accessed=5, program_id=1), 2000, 0)
    b.ev(ops, b.md("%b", "big", flops=1e30, bytes_accessed=1e30, program_id=1), 3000, 1000)
    b.ev(ops, b.md("%u", "ünïcødé☃", flops=("u", 7), bytes_accessed=1, program_id=("u", 1)), 4000, 1000)
    b.ev(ops, b.md("%u2", "ünïcødé☃", flops=1, program_id=2), 5000, 1000)  # same name, other program
    b.ev(ops, 999, 6000, 1000)  # metadata id that does not exist
    (packet,), _ = _read(_write(tmp_path / "h.xplane.pb", space))
    _finite_everywhere(packet)
    ks = {k.id: k for k in packet.profiler[0].kernels or []}
    assert "arithmetic_intensity" not in (ks["1/copy.1"].metrics or {})
    assert "arithmetic_intensity" not in (ks["1/dot.1"].metrics or {})
    assert "achieved_flop_rate" not in (ks["1/zero_time"].metrics or {})
    assert _m(ks["1/big"], "arithmetic_intensity") == 1.0
    assert _m(ks["1/ünïcødé☃"], "flops") == 7.0 and _m(ks["2/ünïcødé☃"], "flops") == 1.0
    assert _m(ks["event#999"], "duration") == 1.0


# ------------------------------------------------------------------------------------------
# bugs found by this audit


def test_negative_durations_are_skipped_not_subtracted(tmp_path: Path) -> None:
    space = messages().XSpace()
    b = _tpu(space, 0)
    mods = b.line("XLA Modules")
    b.ev(mods, b.md("jit_f(7)"), 0, -5)
    ops = b.line("XLA Ops")
    a = b.md("%a", "a", flops=100, bytes_accessed=10, program_id=7)
    b.ev(ops, a, 0, 1_000_000)
    b.ev(ops, a, 2_000_000, -100)
    b.ev(ops, b.md("%n", "neg", flops=100, program_id=7), 3_000_000, 1000, device_duration_ps=-1)
    g = _Plane(space, "/device:GPU:0")  # and on a GPU plane
    stream = g.line("Stream #1(Kernel)")
    g.ev(stream, g.md("gemm"), 0, 1000, hlo_op=("ref", "dot.1"), program_id=3)
    g.ev(stream, g.md("gemm2"), 5000, -1000, hlo_op=("ref", "dot.1"), program_id=3, group_id=9)
    (packet,), warnings = _read(_write(tmp_path / "h.xplane.pb", space))
    ks = _kernels(packet)
    assert set(ks) == {"a", "dot.1"}
    assert ks["a"].invocations == 1 and _m(ks["a"], "duration") == 1000.0
    assert ks["dot.1"].invocations == 1 and _m(ks["dot.1"], "duration") == 1.0
    summary = packet.profiler[0].summary or {}
    assert summary["op_time"].value == 1001.0
    assert "program_time" not in summary
    assert any("4 event(s) with a negative duration skipped" in w for w in warnings)


def test_negative_flops_and_bytes_are_left_out(tmp_path: Path) -> None:
    space = messages().XSpace()
    b = _tpu(space, 0)
    ops = b.line("XLA Ops")
    b.ev(ops, b.md("%a", "a", flops=1_000_000, bytes_accessed=-5, program_id=1), 0, 1_000_000)
    g = _Plane(space, "/device:GPU:0")
    stream = g.line("Stream #1")
    g.ev(stream, g.md("k"), 0, 1000, hlo_op="mul.1", program_id=2, flops=-3.0, bytes_accessed=8)
    (packet,), warnings = _read(_write(tmp_path / "h.xplane.pb", space))
    a = _kernels(packet)["a"]
    assert _m(a, "flops") == 1e6
    for name in ("bytes_accessed", "arithmetic_intensity", "dram_bandwidth"):
        assert name not in (a.metrics or {})
    assert "optimal_flop_rate" not in a.raw
    mul = _kernels(packet)["mul.1"]
    assert "flops" not in (mul.metrics or {}) and _m(mul, "bytes_accessed") == 8.0
    summary = packet.profiler[0].summary or {}
    assert summary["flops"].value == 1e6 and summary["bytes_accessed"].value == 8.0
    assert any("2 negative `flops`" in w for w in warnings)


def _host_space(host: int) -> Any:
    space = messages().XSpace()
    space.hostnames.append(f"host{host}")
    for core in (0, 1):
        b = _tpu(space, core)
        steps = b.line("Steps")
        b.ev(steps, b.md("0"), 0, 5_000_000)
        ops = b.line("XLA Ops")
        b.ev(ops, b.md("%f", "fusion.0", flops=2_000_000, bytes_accessed=4000, program_id=1), 0, 1_000_000)
    return space


def test_multi_host_run_counts_every_device_and_each_step_once(tmp_path: Path) -> None:
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    for host in (0, 1):
        _write(run / f"host{host}.xplane.pb", _host_space(host))
    (packet,), _ = _read(tmp_path)
    k = _kernels(packet)["fusion.0"]
    assert k.invocations == 4 and k.raw["devices"].value == 4 and k.device is None
    assert packet.hardware is not None and packet.hardware.count == 4
    summary = packet.profiler[0].summary or {}
    assert summary["step_count"].value == 1
    assert packet.timing is not None and packet.timing.stats.n == 1
    assert packet.timing.stats.median == 5e-3  # ms


def test_an_op_on_one_core_of_the_second_host_names_its_ordinal(tmp_path: Path) -> None:
    run = tmp_path / "plugins" / "profile" / "r"
    _write(run / "host0.xplane.pb", _host_space(0))
    space = messages().XSpace()
    b = _tpu(space, 3)
    b.ev(b.line("XLA Ops"), b.md("%x", "only_here", program_id=1), 0, 1000)
    _write(run / "host1.xplane.pb", space)
    (packet,), _ = _read(tmp_path)
    assert _kernels(packet)["only_here"].device == 3
    assert _kernels(packet)["fusion.0"].raw["devices"].value == 2


def test_trace_json_multi_host_steps_and_devices(tmp_path: Path) -> None:
    run = tmp_path / "plugins" / "profile" / "r"
    run.mkdir(parents=True)
    for host in (0, 1):
        events = [
            {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:TPU:0"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "Steps"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "XLA Ops"}},
            {"ph": "X", "pid": 1, "tid": 1, "name": "0", "ts": 0, "dur": 10},
            {"ph": "X", "pid": 1, "tid": 2, "name": "f", "ts": 1, "dur": 2},
        ]
        (run / f"host{host}.trace.json.gz").write_bytes(gzip.compress(json.dumps(events).encode()))
    (packet,), _ = _read(tmp_path)
    assert _kernels(packet)["f"].raw["devices"].value == 2
    assert packet.timing is not None and packet.timing.stats.n == 1


def test_a_gzip_of_the_xplane_is_read(tmp_path: Path) -> None:
    space = messages().XSpace()
    b = _tpu(space, 0)
    b.ev(b.line("XLA Ops"), b.md("%a", "a", flops=10, program_id=1), 0, 2000)
    plain = _write(tmp_path / "plain" / "h.xplane.pb", space)
    zipped = tmp_path / "gz" / "h.xplane.pb"
    zipped.parent.mkdir()
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    (p1,), _ = _read(plain)
    (p2,), _ = _read(zipped)
    assert _m(_kernels(p2)["a"], "duration") == _m(_kernels(p1)["a"], "duration") == 2.0
    assert _m(_kernels(p2)["a"], "flops") == 10.0
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(zipped.read_bytes()[:-10])
    with pytest.raises(AdapterError) as exc:
        _read(cut)
    assert "truncated or corrupt gzip" in str(exc.value) and "\n" not in str(exc.value)


def test_trace_json_negative_dur_and_flops_are_left_out(tmp_path: Path) -> None:
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:TPU:0"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "XLA Ops"}},
        {"ph": "X", "pid": 1, "tid": 2, "name": "f", "ts": "1", "dur": "2", "args": {"model_flops": "1000"}},
        {"ph": "X", "pid": 1, "tid": 2, "name": "f", "ts": 5, "dur": -3, "args": {"model_flops": 1000}},
        {"ph": "X", "pid": 1, "tid": 2, "name": "g", "ts": 9, "dur": 1, "args": {"model_flops": -5}},
        {"ph": "B", "pid": 1, "tid": 2, "name": "b", "ts": 10},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 12},
        {"pid": 1, "tid": 2, "name": "no_ph", "ts": 1, "dur": 1},
    ]
    path = tmp_path / "h.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(events).encode()))
    (packet,), warnings = _read(path)
    ks = _kernels(packet)
    assert set(ks) == {"f", "g"}
    assert ks["f"].invocations == 1 and _m(ks["f"], "duration") == 2000.0 and _m(ks["f"], "flops") == 1000.0
    assert "flops" not in (ks["g"].metrics or {})
    assert any("`dur` is -3, negative" in w for w in warnings)
    assert any("`model_flops` is -5, negative" in w for w in warnings)


# ------------------------------------------------------------------------------------------
# GPU, CPU, stat value types, damaged files, size


@pytest.mark.parametrize(
    ("vendor", "name", "device", "arch"),
    [
        ("Nvidia", None, "Nvidia GPU (Ampere)", "sm_80"),
        ("AMD", "gfx942:sramecc+:xnack-", "AMD GPU - gfx942", "gfx942"),
    ],
)
def test_gpu_planes(tmp_path: Path, vendor: str, name: str | None, device: str, arch: str) -> None:
    space = messages().XSpace()
    for n in (0, 1):
        b = _Plane(space, f"/device:GPU:{n}")
        b.stat("clock_rate", 1_410_000)
        b.stat("core_count", 108)
        b.stat("memory_bandwidth", ("u", 1_555_000_000_000))
        b.stat("compute_cap_major", 8 if vendor == "Nvidia" else 9)
        b.stat("compute_cap_minor", 0 if vendor == "Nvidia" else 4)
        b.stat("device_vendor", vendor)
        if name:
            b.stat("gpu_device_name", name)
        s = b.line("Stream #1(Kernel)")
        k = b.md("gemm")
        b.ev(
            s, k, 0, 2_000_000, hlo_op=("ref", "dot.1"), hlo_module=("ref", "jit_f"), program_id=7, group_id=1
        )
        b.ev(
            s,
            k,
            2_000_000,
            2_000_000,
            hlo_op=("ref", "dot.1"),
            hlo_module=("ref", "jit_f"),
            program_id=7,
            group_id=1,
        )
        b.ev(s, b.md("Memcpy HtoD"), 5_000_000, 1000, memcpy_details="size:112 dest:4 async:0")
    (packet,), _ = _read(_write(tmp_path / "g.xplane.pb", space))
    hw = packet.hardware
    assert hw is not None and (hw.device, hw.arch, hw.count) == (device, arch, 2)
    ks = _kernels(packet)
    # the same kernel launched again is one more execution of the op, back to back or not
    assert ks["dot.1"].invocations == 4 and _m(ks["dot.1"], "duration") == 8000.0
    assert _m(ks["Memcpy HtoD"], "bytes_accessed") == 224.0


def test_cpu_only_profile_and_every_stat_type(tmp_path: Path) -> None:
    space = messages().XSpace()
    b = _Plane(space, "/host:CPU")
    line = b.line("python")
    md = b.md("Thunk", odd_double=1.5, odd_bytes=b"\x00\xff", odd_ref=("ref", "x"), odd_u=("u", 2**64 - 1))
    b.ev(line, md, 0, 3000, hlo_op="add.1", hlo_module=("ref", "jit_g"), program_id=("u", 2**63 + 5))
    e = line.events.add(metadata_id=md, offset_ps=0, duration_ps=1)
    e.stats.add(metadata_id=12345, int64_value=1)  # stat metadata that does not exist
    e.stats.add(metadata_id=b.sid("hlo_op"))  # no value at all
    (packet,), _ = _read(_write(tmp_path / "c.xplane.pb", space))
    assert packet.hardware is not None and packet.hardware.vendor == "cpu"
    (k,) = packet.profiler[0].kernels or []
    assert (k.name, k.id, k.invocations, _m(k, "duration")) == ("add.1", f"{2**63 + 5}/add.1", 1, 3.0)


@pytest.mark.parametrize("data", [b"", b"\x0a\x05abc", b"\xff" * 40, b"hello\n", b"\x1f\x8bnot gzip"])
def test_damaged_xplane_is_one_line(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.xplane.pb"
    path.write_bytes(data)
    with pytest.raises(AdapterError) as exc:
        _read(path)
    assert str(exc.value).startswith(str(path)) and "\n" not in str(exc.value)


def test_a_hundred_thousand_events(tmp_path: Path) -> None:
    space = messages().XSpace()
    b = _tpu(space, 0)
    ops = b.line("XLA Ops")
    mids = [b.md(f"%op{i}", f"op{i}", flops=100, bytes_accessed=10, program_id=1) for i in range(1000)]
    for i in range(100_000):
        b.ev(ops, mids[i % 1000], i * 1000, 900 if i % 2 else 1100)  # overlapping every other
    (packet,), _ = _read(_write(tmp_path / "big.xplane.pb", space))
    ks = _kernels(packet)
    assert len(ks) == 1000
    assert ks["op0"].invocations == 100 and _m(ks["op0"], "duration") == 110.0
    summary = packet.profiler[0].summary or {}
    assert summary["flops"].value == 1e7
    assert summary["op_time"].value == pytest.approx(100_000 * 1.0)
