"""The device table: the strings tools write map to one canonical device, or stay unknown."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kernel_evidence import devices
from kernel_evidence.devices import all_devices, architecture, candidates, canonical_id, device, identify
from kernel_evidence.rules._tables import device_peaks

CORPUS = Path("/work/shared/corpus")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # nvidia-smi / torch.cuda.get_device_name spellings
        ("NVIDIA H100 80GB HBM3", "nvidia-h100-sxm5-80gb"),
        ("NVIDIA H100 PCIe", "nvidia-h100-pcie-80gb"),
        ("NVIDIA H100 NVL", "nvidia-h100-nvl-94gb"),
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "nvidia-h100-sxm5-80gb"),
        ("NVIDIA A100-SXM4-80GB", "nvidia-a100-sxm4-80gb"),
        ("NVIDIA A100-PCIE-40GB", "nvidia-a100-pcie-40gb"),
        ("NVIDIA A800-SXM4-80GB", "nvidia-a800-sxm4-80gb"),
        ("NVIDIA GH200 480GB", "nvidia-gh200-96gb"),
        ("NVIDIA B200", "nvidia-b200"),
        ("NVIDIA GeForce RTX 3070", "nvidia-rtx-3070"),
        ("NVIDIA GeForce RTX 3070 Ti", "nvidia-rtx-3070-ti"),
        ("NVIDIA GeForce GTX 1080", "nvidia-gtx-1080"),
        ("NVIDIA GeForce RTX 4060 Ti", "nvidia-rtx-4060-ti"),
        ("Tesla V100-SXM2-16GB", "nvidia-v100-sxm2-16gb"),
        ("Tesla T4", "nvidia-t4"),
        # KernelBench results/timing folder names
        ("H100_Modal", "nvidia-h100-sxm5-80gb"),
        ("H100_PCIe_LambdaLabs", "nvidia-h100-pcie-80gb"),
        ("L40S_matx3", "nvidia-l40s"),
        ("L40S_babel", "nvidia-l40s"),
        ("B200_together", "nvidia-b200"),
        ("MI300X_rocm", "amd-mi300x"),
        ("RTX6000Ada", "nvidia-rtx-6000-ada"),
        ("RTX_3090_Ti", "nvidia-rtx-3090-ti"),
        ("A6000_babel", "nvidia-rtx-a6000"),
        # ROCm spellings: rocprof-compute gpu_model, rocminfo marketing names
        ("MI300X_A1", "amd-mi300x"),
        ("MI300A_A1", "amd-mi300a"),
        ("AMD Instinct MI300X", "amd-mi300x"),
        ("AMD Instinct MI250X", "amd-mi250x"),
        ("MI100", "amd-mi100"),
        # JAX device_kind
        ("TPU v5 lite", "google-tpu-v5e"),
        ("TPU v5", "google-tpu-v5p"),
        ("TPU v6 lite", "google-tpu-v6e"),
        ("TPU v4", "google-tpu-v4"),
    ],
)
def test_known_spellings_name_one_device(raw: str, expected: str) -> None:
    assert canonical_id(raw) == expected
    assert identify(raw) is device(expected)


@pytest.mark.parametrize(
    "raw",
    [
        "H100",  # SXM5, PCIe or NVL
        "A100-80GB_modal",  # SXM4 or PCIe
        "NVIDIA A100-PG509-200",  # a board code: 40 or 80 GB, SXM4 or PCIe
        "mi200",  # MI210, MI250 or MI250X
        "MI300",  # MI300X, MI300A or MI325X
        "V100",
        "AMD Radeon Graphics",
        "Nvidia GPU (Volta)",
        "NVIDIA GeForce RTX 4090 Laptop GPU",  # shares the name, not the figures
        "A10G_modal",  # not in the table
        "GA104",  # a chip, not a board
        "cuda:0",
        "",
        "x" * 300,
    ],
)
def test_unknown_or_ambiguous_names_stay_unknown(raw: str) -> None:
    assert identify(raw) is None
    assert canonical_id(raw) is None


def test_other_facts_resolve_an_ambiguous_name() -> None:
    assert canonical_id("H100", compute_units=114) == "nvidia-h100-pcie-80gb"
    assert canonical_id("H100", memory_bytes=94e9) == "nvidia-h100-nvl-94gb"
    assert canonical_id("H100", compute_units=132) is None  # SXM5 or NVL: still two
    assert canonical_id("mi200", compute_units=220) == "amd-mi250x"
    # 104 CUs: an MI210, or one GCD of an MI250 - ROCm shows both the same way
    assert canonical_id("mi200", compute_units=104) is None
    assert canonical_id("V100", memory_bytes=34e9) is None  # SXM2, PCIe or V100S 32GB
    assert canonical_id("MI300", compute_units=228) == "amd-mi300a"
    assert canonical_id("MI300", compute_units=304, memory_bytes=206e9) == "amd-mi300x"


def test_generic_names_identify_only_by_an_arch_the_table_covers_whole() -> None:
    # every gfx90a device is in the table: 220 CUs is an MI250X
    e = identify("AMD Radeon Graphics", arch="gfx90a", compute_units=220)
    assert e is not None and e.id == "amd-mi250x"
    assert identify("AMD Radeon Graphics", arch="gfx908") is device("amd-mi100")
    # gfx942 has devices the table lacks (MI308X): never guessed
    assert identify("AMD Radeon Graphics", arch="gfx942", compute_units=304, memory_bytes=206e9) is None
    # sm_75 is far more than a T4
    assert identify("NVIDIA GPU", arch="sm_75", compute_units=40) is None
    # a specific but unknown name never falls back to its arch
    assert identify("NVIDIA A10G", arch="sm_86", compute_units=72) is None


@pytest.mark.parametrize(
    ("raw", "arch"),
    [
        ("sm_90a", "sm_90"),
        ("compute_86", "sm_86"),
        ("8.6", "sm_86"),
        ("gfx942:sramecc+:xnack-", "gfx942"),
        ("Nvidia GPU (Volta)", "sm_70"),
        ("GA104", "sm_86"),
        ("NVIDIA GeForce RTX 4060 Ti (AD106)", "sm_89"),
        ("mi200", "gfx90a"),
        ("H100", "sm_90"),
        ("AMD Radeon Graphics", None),
        ("A10G 80", None),  # a bare number is not a compute capability
        ("NVIDIA GPU", None),
    ],
)
def test_architecture(raw: str, arch: str | None) -> None:
    assert architecture(raw) == arch


def test_facts_that_contradict_the_name_leave_no_candidate() -> None:
    assert candidates("NVIDIA H100 80GB HBM3", arch="sm_80") == ()
    assert candidates("AMD Instinct MI300X", compute_units=80) == ()
    assert candidates("NVIDIA A100-SXM4-80GB", memory_bytes=192 * 2**30) == ()
    # partitions: an MI300X in CPX mode, a MIG slice
    assert candidates("AMD Instinct MI300X", compute_units=38) == (device("amd-mi300x"),)
    assert candidates("NVIDIA H100 80GB HBM3 MIG 1g.10gb", compute_units=16, memory_bytes=10e9)
    assert candidates("AMD Instinct MI300X", compute_units=101, partitions=3)  # 304 // 3
    assert candidates("AMD Instinct MI300X", compute_units=100, partitions=3) == ()
    assert candidates("AMD Instinct MI300X", memory_bytes=48 * 2**30, partitions=4)  # NPS4
    assert candidates("AMD Instinct MI300X", memory_bytes=48 * 2**30) == ()
    # what tools really report: H100 81559 MiB, MI300X 191.7 GiB, V100 16.9 GB
    assert canonical_id("NVIDIA H100 80GB HBM3", compute_units=132, memory_bytes=81559 * 2**20)
    assert canonical_id("MI300X_A1", arch="gfx942", compute_units=304, memory_bytes=205.8e9) == "amd-mi300x"
    assert candidates("V100", arch="sm_70", compute_units=80, memory_bytes=16.9e9)


def test_table_integrity() -> None:
    ids = [e.id for e in all_devices()]
    assert len(ids) == len(set(ids))
    for e in all_devices():
        assert e.id.startswith(f"{e.vendor}-"), e.id
        assert e.source.startswith("https://"), e.id
        assert architecture(e.arch) == e.arch, e.id
        # each entry's own spellings name it
        for alias in (e.id, e.name, *e.aliases):
            assert identify(alias) is e, (alias, e.id)
        if e.flops:
            assert e.memory_bandwidth and e.memory_bandwidth > 1e11
            assert all(1e11 < v < 1e17 for v in e.flops.values()), e.id
        if e.compute_units is not None:
            assert all(u < e.compute_units for u in e.partition_units)


def test_peaks_come_from_the_device_table() -> None:
    h100 = device("nvidia-h100-sxm5-80gb")
    peaks = device_peaks("NVIDIA H100 80GB HBM3")
    assert peaks is not None and peaks.key == h100.id and peaks.bandwidth == h100.memory_bandwidth
    # an ambiguous name is checked against the highest figure among its candidates
    any_h100 = device_peaks("H100")
    assert any_h100 is not None and any_h100.bandwidth == device("nvidia-h100-nvl-94gb").memory_bandwidth
    assert any_h100.flops["bf16"] == h100.flops["bf16"]
    # a device of the table without published rates has no peaks (KE604 warns instead)
    assert device("amd-mi350p") is not None and device_peaks("AMD Instinct MI350P") is None
    assert device_peaks("Some Unknown Accelerator") is None


def test_public_module() -> None:
    import kernel_evidence

    assert kernel_evidence.devices is devices
    assert repr(device("amd-mi300x")) == "DeviceEntry('amd-mi300x')"


@pytest.mark.skipif(not (CORPUS / "rocprof").is_dir(), reason="corpus not present")
def test_rocprof_sysinfo_devices_of_the_corpus() -> None:
    """Every rocprof-compute sysinfo.csv of the corpus: gpu_model (or omniperf 1.x `name`)
    with its gfx arch and CU count names one device, or stays unknown where ambiguous."""
    seen: dict[str, str | None] = {}
    for path in sorted((CORPUS / "rocprof").glob("*/sysinfo.csv")):
        with open(path, newline="") as fh:
            row = next(csv.DictReader(fh))
        model = row.get("gpu_model") or row.get("name") or ""
        arch = row.get("gpu_arch") or row.get("gpu_soc")
        cus = row.get("cu_per_gpu") or row.get("numCU")
        seen[model] = canonical_id(model, arch=arch, compute_units=int(cus) if cus else None)
    assert seen.get("MI300X_A1", "amd-mi300x") == "amd-mi300x"
    assert seen.get("MI300A_A1", "amd-mi300a") == "amd-mi300a"
    assert seen.get("MI100", "amd-mi100") == "amd-mi100"
    # MI200 with 104 CUs: an MI210 or an MI250 GCD
    assert seen.get("MI200") is None and seen.get("mi200") is None
    assert len(seen) >= 3
