"""A sixth red-team round, baseline band: call dims with grouping separators, a host copy
or sync in the baseline's timed call, the candidate warmed alone, a provider its call's
namespace contradicts, a version the replay's own package of that library contradicts.
Each beside an honest twin that must still pass."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_kit import control, found  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
EW = "l40s_fused_elementwise_30x_over_eager"
CALL = (
    "cublasLtMatmul(bf16, transa=N, transb=T, m={m}, n={n}, k={k}, compute=CUBLAS_COMPUTE_32F, heuristic=0)"
)


CALL_PTR = ("KE207", "/timing/baseline/call")


# ---------------------------------------------------------------- KE207: grouped call dims


def test_call_dims_with_grouping_separators_are_integers() -> None:
    for k in ("16.384", "16 384", "16'384", "16,384"):
        p = control()
        p["timing"]["baseline"]["call"] = CALL.format(m="8.192", n="8.192", k=k)
        assert CALL_PTR in found(p), k
    for k in ("8.192", "8 192", "8'192", "8,192", "8192"):
        p = control()
        p["timing"]["baseline"]["call"] = CALL.format(m="8.192", n="8 192", k=k)
        assert CALL_PTR not in found(p), k


def test_a_comma_grouped_dim_may_be_read_as_two_arguments() -> None:
    # `k=64,128`: k=64 and a 128 after it, or 64128; the shape's k=64 is one reading
    p = control()
    for c in (p["timing"]["conditions"], p["timing"]["baseline"]["conditions"]):
        c["dims"]["k"] = 64
    p["task"]["shapes"][0]["dims"]["k"] = 64
    p["timing"]["baseline"]["call"] = CALL.format(m=8192, n=8192, k="64,128")
    assert CALL_PTR not in found(p)
    p["timing"]["baseline"]["call"] = CALL.format(m=8192, n=8192, k="96,128")
    assert CALL_PTR in found(p)


# ---------------------------------------------------------------- KE207: host copy in the call


def test_a_host_copy_or_sync_in_the_timed_call_handicaps_the_baseline() -> None:
    base = control(EW)["timing"]["baseline"]["call"]
    for call in (
        base + ".cpu()",
        "float((" + base + ").sum().item())",
        base + ".numpy()",
        base + ".tolist()",
        base + "; torch.cuda.synchronize()",
    ):
        p = control(EW)
        p["timing"]["baseline"]["call"] = call
        assert CALL_PTR in found(p), call
    p = control(EW)
    assert CALL_PTR not in found(p)
    p["timing"]["baseline"]["call"] = base + "; y.cpu() after timing, outside the timed region"
    assert CALL_PTR not in found(p)


def test_a_host_copy_on_a_cpu_baseline_copies_nothing() -> None:
    p = control(EW)
    p["timing"]["baseline"]["call"] = "np.exp(x.numpy())"
    p["timing"]["baseline"]["provider"] = "numpy"
    assert CALL_PTR not in found(p)
    p["hardware"]["vendor"] = "cpu"
    p["timing"]["baseline"]["provider"] = "torch eager"
    p["timing"]["baseline"]["call"] = "torch.exp(x).numpy()"
    assert CALL_PTR not in found(p)


# ---------------------------------------------------------------- KE208: warmup on one side


def test_the_candidate_warmed_far_more_than_the_baseline() -> None:
    p = control()
    p["timing"]["warmup"] = 200
    p["timing"]["conditions"]["warmup"] = 200
    assert ("KE208", "/timing/conditions/warmup") in found(p)
    p["timing"]["conditions"]["warmup"] = 30  # 30 against 20: within the margin
    p["timing"]["warmup"] = 30
    assert ("KE208", "/timing/conditions/warmup") not in found(p)
    p = control()
    p["timing"]["baseline"]["conditions"]["warmup"] = 200  # the baseline warmed more: fine
    assert not {f for f in found(p) if f[0] == "KE208"}


# ---------------------------------------------------------------- KE202: namespace vs provider


def test_a_call_in_another_librarys_namespace_contradicts_the_provider() -> None:
    p = control()
    p["timing"]["baseline"]["call"] = "np.matmul(a, b.T)"
    assert ("KE202", "/timing/baseline/provider") in found(p)
    p["timing"]["baseline"]["call"] = "rocblas_gemm_ex(handle, N, T, 8192, 8192, 8192)"
    assert ("KE202", "/timing/baseline/provider") in found(p)
    # torch calling cuBLASLt underneath, or the cuBLAS call itself: the provider's
    for call in (
        "torch.matmul(a, b.T)",
        "torch.matmul(a, b.T) -> cublasLtMatmul",
        CALL.format(m=8192, n=8192, k=8192),
    ):
        p["timing"]["baseline"]["call"] = call
        assert ("KE202", "/timing/baseline/provider") not in found(p), call
    # numpy may be built on MKL: not contradicted
    p = control()
    p["timing"]["baseline"]["provider"] = "MKL"
    p["timing"]["baseline"]["version"] = "2024.2"
    p["timing"]["baseline"]["call"] = "np.matmul(a, b.T)"
    assert ("KE202", "/timing/baseline/provider") not in found(p)


# ---------------------------------------------------------------- KE210: the package of that name


def test_a_version_the_replays_own_package_contradicts() -> None:
    p = control(EW)
    b = p["timing"]["baseline"]
    p["replay"]["packages"] = {"torch": "2.5.1+cu124"}
    b["version"] = "2.1.0"
    b["same_session"] = True
    assert ("KE210", "/timing/baseline/version") in found(p)
    for v in ("2.5.1", "2.5", "2.5.1+cu124"):
        b["version"] = v
        assert ("KE210", "/timing/baseline/version") not in found(p), v
