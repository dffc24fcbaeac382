"""torch-profiler adapter on the shapes of real traces it had not seen.

Each fixture in tests/fixtures/torch_profiler/wild is small and written by hand in the
shape of a public trace (named in its README and in docs/adapters/torch-profiler.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.torch_profiler import ADAPTER

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "torch_profiler" / "wild"
T0 = "2026-11-22T00:00:00Z"


def kernels(path: Path) -> dict[str, Any]:
    result = ADAPTER.read([str(path)], AdapterOptions(created_at=T0))
    (packet,) = result.packets
    return {k.name: k for k in packet.profiler[0].kernels or []}


def test_hip_ext_module_launch_grid_is_work_items_not_blocks() -> None:
    ks = kernels(WILD / "rocm_ext_module_launch.json")
    gemm = ks["Cijk_Ailk_Bljk_test_MT64x16x32"]
    # hipExtModuleLaunchKernel's grid [512, 8, 1] is the global size in work-items:
    # 512 / 256 = 2 blocks across, 8 down
    assert gemm.grid == [2, 8, 1]
    assert gemm.block == [256, 1, 1]
    assert gemm.metrics["grid_size"].value == 512 * 8
    # hipLaunchKernel's grid counts blocks: unchanged
    add = ks["void add_kernel<4>(int)"]
    assert add.grid == [3, 1, 1]
    assert add.metrics["grid_size"].value == 3 * 128
