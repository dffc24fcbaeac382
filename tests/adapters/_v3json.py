"""Build rocprofv3 JSON outputs (``<pid>_results.json``) for tests and the benchmark.

The layout is rocprofiler-sdk's JSON writer's (see the docstring of
``kernel_evidence.adapters.rocprof._v3_json``); fields the adapter does not read are
included too, as a real file has them. The node has one CPU and ``gpus`` MI300X agents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

NAMES = [
    (
        "void addition_kernel<float>(float*, float const*, float const*, int, int)",
        "_Z15addition_kernelIfEvPT_PKS0_S3_ii",
    ),
    ("divide_kernel(float*, float const*, float const*, int, int)", "_Z13divide_kernelPfPKfS1_ii"),
]


def agents(gpus: int = 8) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"id": {"handle": 100}, "type": 1, "node_id": 0, "logical_node_id": 0, "logical_node_type_id": 0,
         "name": "AMD EPYC 9654 96-Core Processor", "product_name": "AMD EPYC 9654 96-Core Processor", "cu_count": 0}
    ]  # fmt: skip
    for g in range(gpus):
        out.append(
            {"id": {"handle": 200 + g}, "type": 2, "node_id": 2 + g, "logical_node_id": 1 + g, "logical_node_type_id": g,
             "name": "gfx942", "product_name": "AMD Instinct MI300X", "vendor_name": "AMD", "cu_count": 304,
             "num_xcc": 8, "wave_front_size": 64, "simd_count": 1216}
        )  # fmt: skip
    return out


def symbol(kernel_id: int, name: str, mangled: str, vgpr: int = 8, sgpr: int = 16) -> dict[str, Any]:
    return {
        "size": 120, "kernel_id": kernel_id, "code_object_id": 1, "kernel_name": mangled,
        "formatted_kernel_name": name, "demangled_kernel_name": name, "truncated_kernel_name": name.split("(")[0],
        "kernel_object": 140000000 + kernel_id, "kernarg_segment_size": 32, "arch_vgpr_count": vgpr,
        "accum_vgpr_count": 0, "sgpr_count": sgpr, "group_segment_size": 0, "private_segment_size": 0,
    }  # fmt: skip


def dispatch(
    did: int, kernel_id: int, gpu: int, start: int, end: int, queue: int = 1, lds: int = 0
) -> dict[str, Any]:
    return {
        "size": 112, "kind": 5, "operation": 1, "thread_id": 834304,
        "correlation_id": {"internal": did, "external": 0},
        "start_timestamp": start, "end_timestamp": end, "stream_id": {"handle": queue},
        "dispatch_info": {
            "size": 64, "agent_id": {"handle": 200 + gpu}, "queue_id": {"handle": queue}, "kernel_id": kernel_id,
            "dispatch_id": did, "private_segment_size": 0, "group_segment_size": lds,
            "workgroup_size": {"x": 64, "y": 1, "z": 1}, "grid_size": {"x": 1024, "y": 1024, "z": 1},
        },
    }  # fmt: skip


def results(
    dispatches: Sequence[dict[str, Any]],
    *,
    symbols: Sequence[dict[str, Any]] | None = None,
    gpus: int = 8,
    pid: int = 4242,
    as_list: bool = True,
) -> dict[str, Any]:
    syms = list(symbols) if symbols is not None else [symbol(i + 1, n, m) for i, (n, m) in enumerate(NAMES)]
    entry = {
        "metadata": {"pid": pid, "init_time": 1, "fini_time": 2, "command": ["./app"], "config": {}},
        "agents": agents(gpus),
        "counters": [],
        "strings": {"buffer_records": []},
        "code_objects": [],
        "kernel_symbols": [{"kernel_id": 0, "kernel_name": ""}, *syms],
        "host_functions": [],
        "summary": [],
        "callback_records": {"counter_collection": []},
        "buffer_records": {"kernel_dispatch": list(dispatches), "memory_copy": []},
    }
    return {"rocprofiler-sdk-tool": [entry] if as_list else entry}
