"""KE11xx: a profile that contradicts the claim, or does not show the candidate, is caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernel_evidence import validate

EXAMPLE = (
    Path(__file__).resolve().parents[2]
    / "examples"
    / "packets"
    / "valid"
    / "nvidia_h100_gemm_vs_cublaslt.json"
)
BAND = {"KE1101", "KE1102"}
KERNEL = "gemm_bf16_tn_128x256_warpspecialized"


def honest(**of: Any) -> dict[str, Any]:
    """The H100 GEMM example with its ncu capture said to be of the candidate at the timed
    shape (median 151.9 us; the kernel ran 151.36 us)."""
    d = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    d.pop("packet_id")
    d["profiler"][0]["of"] = {
        "side": "candidate",
        "shape_id": "m4096n4096k4096",
        "expected_kernels": ["gemm_bf16_tn_128x256"],
        **of,
    }
    return d


def found(d: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f.rule_id, f.pointer) for f in validate(d).findings if f.rule_id in BAND}


def launch(name: str, ns: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "metrics": {"duration": {"value": ns, "unit": "ns"}}, **extra}


def test_the_honest_capture_passes() -> None:
    d = honest()
    report = validate(d)
    assert report.ok, [f.line() for f in report.errors]
    assert found(d) == set()


def test_a_claim_faster_than_its_own_kernel() -> None:
    """The timer stopped before the kernel finished (or was patched): 40 us claimed for a
    call whose kernel alone runs 151 us."""
    d = honest()
    st = d["timing"]["stats"]
    st.update(median=40.0, mean=40.0, min=39.0, max=41.0, percentiles={"p50": 40.0})
    del st["samples"]
    d["timing"]["speedup"]["value"] = 170.8897 / 40.0
    assert found(d) == {("KE1101", "/timing/stats/median")}
    # a stated wider tolerance counts as 0.5 at most (a kernel 1.5x the claimed time): 3.0
    # lets 40 us through only as stated, so the finding points at the tolerance; 1.0 does not
    # (40 x 2 < 151), so it points at the claim; 110 us is within 0.5
    wide = honest_with(d, claim_tolerance=3.0)
    assert found(wide) == {("KE1101", "/profiler/0/of/claim_tolerance")}
    wide = honest_with(d, claim_tolerance=1.0)
    assert found(wide) == {("KE1101", "/timing/stats/median")}
    wide["timing"]["stats"].update(median=110.0, mean=110.0, min=109.0, max=111.0, percentiles={"p50": 110.0})
    wide["timing"]["speedup"]["value"] = 170.8897 / 110.0
    assert found(wide) == set()
    # a capture of another shape is not compared, and a shape the task lacks is KE1103
    other = honest_with(d, shape_id="m8192n8192k8192")
    assert found(other) == set()
    assert ("KE1103", "/profiler/0/of/shape_id") in {(f.rule_id, f.pointer) for f in validate(other).findings}


def honest_with(d: dict[str, Any], **of: Any) -> dict[str, Any]:
    e = json.loads(json.dumps(d))
    e["profiler"][0]["of"].update(of)
    return e


def test_launch_overhead_above_the_kernel_time_is_not_a_lie() -> None:
    d = honest()
    d["profiler"][0]["kernels"] = [launch(KERNEL, 20_000.0)]  # a tiny kernel timed at 151 us
    assert found(d) == set()


def test_repeated_launches_and_streams() -> None:
    d = honest()
    # 10 profiled calls, each one launch of the GEMM and two of a split-K reduction on the
    # same stream: per call 100 + 2 x 30 = 160 us > 151.9 x 1.05 with tolerance 0.05
    d["profiler"][0]["kernels"] = [launch(KERNEL, 100_000.0, stream="7") for _ in range(10)] + [
        launch("gemm_bf16_tn_128x256_splitk_reduce", 30_000.0, stream="7", invocations=20)
    ]
    assert ("KE1101", "/timing/stats/median") in found(honest_with(d, claim_tolerance=0.05))
    # the same kernels on two streams overlap: the longest stream (100 us) bounds the call
    d["profiler"][0]["kernels"][-1]["stream"] = "8"
    assert found(honest_with(d, claim_tolerance=0.05)) == set()


def test_a_cache_flush_kernel_is_not_the_candidates_time() -> None:
    d = honest(expected_kernels=None)
    del d["profiler"][0]["of"]["expected_kernels"]
    d["timing"]["conditions"] = {"cache": {"mode": "flushed", "flush_bytes": {"value": 256, "unit": "MiB"}}}
    d["profiler"][0]["kernels"].append(
        # zeroing a 256 MiB flush buffer on an H100 (a fill that took longer than writing the
        # task's tensors or the flush could take would be work: test_redteam5_profile.py)
        launch("void at::native::vectorized_elementwise_kernel<FillFunctor>", 90_000.0)
    )
    assert found(d) == set()


def test_the_baseline_side() -> None:
    d = honest(side="baseline", expected_kernels=None)
    del d["profiler"][0]["of"]["expected_kernels"]
    d["profiler"][0]["kernels"] = [launch("sm90_xmma_gemm_bf16bf16_bf16f32", 400_000.0)]
    assert found(d) == {("KE1101", "/timing/baseline/stats/median")}


def test_the_expected_kernel_is_absent() -> None:
    """The candidate dispatched to a library: its capture shows cuBLAS, not its kernel."""
    d = honest()
    d["profiler"][0]["kernels"][0]["name"] = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64"
    assert ("KE1102", "/profiler/0/kernels") in found(d)
    # matched on the raw (mangled) name too, case-insensitively, under a display name the
    # raw name holds (a name that is a library's kernel over another raw name is edited)
    d["profiler"][0]["kernels"][0]["name"] = "GEMM_BF16_TN_128x256_kernel"
    d["profiler"][0]["kernels"][0]["raw_name"] = "_Z30GEMM_BF16_TN_128x256_kernelPKvS0_Pv"
    assert not {r for r, _ in found(d)} & {"KE1102"}


def test_a_capture_without_of_or_kernels_says_nothing() -> None:
    d = honest()
    del d["profiler"][0]["of"]
    d["timing"]["stats"]["median"] = 40.0
    assert found(d) == set()
    d = honest()
    del d["profiler"][0]["kernels"]
    assert found(d) == set()


def test_a_capture_without_its_shape_id_is_of_the_only_shape() -> None:
    d = honest()
    del d["profiler"][0]["of"]["shape_id"]
    d["profiler"][0]["kernels"] = [launch(KERNEL, 450_000.0)]
    assert found(d) == {("KE1101", "/timing/stats/median")}
    # with several shapes, a capture that does not say which is not compared
    d["task"]["shapes"].append({"id": "m8192n8192k8192", "dims": {"m": 8192, "n": 8192, "k": 8192}})
    assert found(d) == set()


def test_a_kernel_left_out_of_expected_still_counts() -> None:
    """A 4 ms set-up kernel launched with every call: naming only the fast GEMM as expected
    does not take it out of the call's time."""
    d = honest()
    d["profiler"][0]["kernels"].append(launch("weight_prepack_bf16", 4.0e6))
    assert found(d) == {("KE1101", "/timing/stats/median")}
    # launched once while the GEMM ran ten times: a tenth of it per call (4 us)
    d["profiler"][0]["kernels"] = [launch(KERNEL, 151_000.0) for _ in range(10)] + [
        launch("autotune_once", 40_000.0)
    ]
    assert found(d) == set()
