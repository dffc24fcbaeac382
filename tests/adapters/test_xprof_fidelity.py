"""XProf on GPU: an op's invocations are its executions, and its record names its dominant
kernel. Fixtures shaped as a JAX GPU capture: a host thread with one
``<module>:XLA GPU module`` event per call and the driver launches inside it (with their
correlation ids), a GPU stream with the kernels (``hlo_op``, ``hlo_module``,
``program_id``, ``correlation_id``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.protobuf")

from _xplane import PlaneBuilder  # noqa: E402

from kernel_evidence.adapters import AdapterOptions  # noqa: E402
from kernel_evidence.adapters.xprof import ADAPTER  # noqa: E402
from kernel_evidence.adapters.xprof._proto import messages  # noqa: E402
from kernel_evidence.models import KernelRecord  # noqa: E402

US = 1_000_000  # ps
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"


class _Plane(PlaneBuilder):
    def __init__(self, space: Any, name: str) -> None:
        super().__init__(space, name)
        self.ids: dict[str, int] = {}

    def md(self, name: str) -> int:
        if name not in self.ids:
            i = self.ids[name] = len(self.ids) + 1
            m = self.p.event_metadata[i]
            m.id, m.name = i, name
        return self.ids[name]

    def ev(self, line: Any, name: str, off_us: float, dur_us: float, **stats: Any) -> None:
        e = line.events.add(
            metadata_id=self.md(name), offset_ps=int(off_us * US), duration_ps=int(dur_us * US)
        )
        for k, v in stats.items():
            self.put(e.stats.add(), k, v)


def _capture(calls: list[tuple[str, int, list[tuple[str, str, float]]]], *, host: bool = True) -> Any:
    """One XSpace: ``calls`` are (module, program id, [(hlo op, kernel, us)...]), run one
    after the other, 80 us apart; each kernel starts 5 us after its launch."""
    space = messages().XSpace()
    cpu = _Plane(space, "/host:CPU")
    thread = cpu.p.lines.add(id=1, name="python3")
    gpu = _Plane(space, "/device:GPU:0")
    for k, v in (
        ("clock_rate", 1_980_000),
        ("core_count", 132),
        ("compute_cap_major", 9),
        ("compute_cap_minor", 0),
    ):
        gpu.put(gpu.p.stats.add(), k, v)
    gpu.put(gpu.p.stats.add(), "device_vendor", "Nvidia")
    stream = gpu.p.lines.add(id=7, name="Stream #7(Kernel)")
    t = 0.0
    corr = 100
    for module, program, kernels in calls:
        launches = len(kernels)
        if host:
            cpu.ev(thread, f"{module}:XLA GPU module", t, 2.0 * launches + 1.0)
        device_t = t + 5.0
        for i, (op, kernel, dur) in enumerate(kernels):
            corr += 7  # other driver calls between launches take ids too
            if host:
                cpu.ev(thread, "cuLaunchKernelEx", t + 0.5 + 2.0 * i, 1.0, correlation_id=corr)
            gpu.ev(
                stream,
                kernel,
                device_t,
                dur,
                hlo_op=("ref", op),
                hlo_module=("ref", module),
                program_id=program,
                correlation_id=corr,
            )
            device_t += dur
        t += 80.0
    return space


def _records(tmp_path: Path, space: Any) -> dict[str, KernelRecord]:
    path = tmp_path / "plugins" / "profile" / "run1" / "node0.xplane.pb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(space.SerializeToString())
    (packet,) = ADAPTER.read([str(path)], AdapterOptions(created_at="2026-11-27T00:00:00Z")).packets
    return {k.name: k for k in packet.profiler[0].kernels or []}  # type: ignore[index]


def _ns(k: KernelRecord, name: str = "duration") -> float:
    q = (k.metrics or {})[name]
    return q.value


def test_three_calls_of_one_gemm_are_three_invocations(tmp_path: Path) -> None:
    # three calls of a jitted matmul: the same kernel each time, nothing between them on the stream
    recs = _records(tmp_path, _capture([("jit_matmul", 5, [("dot.1", GEMM, 40.0)])] * 3))
    dot = recs["dot.1"]
    assert dot.invocations == 3
    assert _ns(dot) == 120_000.0  # 3 x 40 us
    assert _ns(dot) / dot.invocations == 40_000.0  # per call, not 120 us


def test_without_host_events_a_kernel_launched_again_is_another_execution(tmp_path: Path) -> None:
    # a capture without host threads: the same kernel again is still one more execution
    recs = _records(tmp_path, _capture([("jit_matmul", 5, [("dot.1", GEMM, 40.0)])] * 3, host=False))
    assert recs["dot.1"].invocations == 3


def test_correlation_ids_delimit_executions_that_launch_other_kernels(tmp_path: Path) -> None:
    # two calls whose GEMM picked another kernel the second time: only the host module
    # executions, reached through the launches' correlation ids, tell the calls apart
    space = _capture(
        [
            ("jit_matmul", 5, [("dot.1", "gemm_algo_a", 40.0)]),
            ("jit_matmul", 5, [("dot.1", "gemm_algo_b", 30.0)]),
        ]
    )
    assert _records(tmp_path, space)["dot.1"].invocations == 2


def test_one_execution_of_a_fusion_with_two_kernels_stays_one(tmp_path: Path) -> None:
    space = _capture(
        [("jit_norm", 9, [("fusion.3", "reduce_prologue", 1.0), ("fusion.3", "triton_rmsnorm", 9.0)])] * 2
    )
    fusion = _records(tmp_path, space)["fusion.3"]
    assert fusion.invocations == 2
    assert _ns(fusion) == 20_000.0


def test_record_names_the_kernel_with_most_of_the_time(tmp_path: Path) -> None:
    # a minor kernel first, the dominant one second: the record names the dominant one
    space = _capture(
        [("jit_norm", 9, [("fusion.3", "reduce_prologue", 1.0), ("fusion.3", "triton_rmsnorm", 9.0)])] * 2
    )
    fusion = _records(tmp_path, space)["fusion.3"]
    assert fusion.raw_name == "triton_rmsnorm"
    assert fusion.raw is not None and fusion.raw["kernel_count"].value == 2.0


def _trace_json(tmp_path: Path, calls: int) -> Path:
    """The same capture as trace-event JSON (what ``<host>.trace.json.gz`` holds)."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "python3"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "pid": 2, "tid": 7, "name": "thread_name", "args": {"name": "Stream #7(Kernel)"}},
    ]
    for n in range(calls):
        t, corr = 80.0 * n, 100 + 7 * n
        events += [
            {"ph": "X", "pid": 1, "tid": 1, "ts": t, "dur": 3.0, "name": "jit_norm:XLA GPU module"},
            {"ph": "X", "pid": 1, "tid": 1, "ts": t + 0.5, "dur": 1.0, "name": "cuLaunchKernelEx",
             "args": {"correlation_id": corr}},
            {"ph": "X", "pid": 1, "tid": 1, "ts": t + 1.5, "dur": 1.0, "name": "cuLaunchKernelEx",
             "args": {"correlation_id": corr + 1}},
        ]  # fmt: skip
        for i, (kernel, dur) in enumerate((("reduce_prologue", 1.0), ("triton_rmsnorm", 9.0))):
            events.append(
                {"ph": "X", "pid": 2, "tid": 7, "ts": t + 5.0 + i, "dur": dur, "name": kernel,
                 "args": {"hlo_op": "fusion.3", "hlo_module": "jit_norm", "program_id": "9",
                          "correlation_id": corr + i}}
            )  # fmt: skip
    path = tmp_path / "node0.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}).encode()))
    return path


def test_trace_json_counts_executions_and_names_the_dominant_kernel(tmp_path: Path) -> None:
    path = _trace_json(tmp_path, 3)
    (packet,) = ADAPTER.read([str(path)], AdapterOptions(created_at="2026-11-27T00:00:00Z")).packets
    (fusion,) = [k for k in packet.profiler[0].kernels or [] if k.name == "fusion.3"]  # type: ignore[index]
    assert fusion.invocations == 3
    assert fusion.raw_name == "triton_rmsnorm"
