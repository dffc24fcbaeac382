"""Every adapter gives a packet's hardware the device table's canonical id (the tool's own
string kept in ``device``); a device the table does not know, or that could be several
models, stays without one. Checked on every corpus file (skipped when absent) and on an
archive built from all of them: each physical device appears under exactly one id."""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from kernel_evidence import archive_packets, write_packets
from kernel_evidence.adapters import AdapterOptions, get_adapter, start_packet
from kernel_evidence.adapters._device import hardware_with_id
from kernel_evidence.errors import KernelEvidenceError
from kernel_evidence.models import ByteSize, EvidencePacket, Hardware

T0 = "2026-11-27T00:00:00Z"

# ------------------------------------------------------------------------------------------
# the one shared place: start_packet fills the id


@pytest.mark.parametrize(
    ("vendor", "device", "arch", "units", "expected"),
    [
        ("amd", "MI300X_A1", "gfx942", 304, "amd-mi300x"),  # rocprof-compute's gpu_model
        ("amd", "AMD Instinct MI300X", None, None, "amd-mi300x"),
        ("amd", "AMD Radeon Graphics", "gfx90a", 220, "amd-mi250x"),  # a generic name + gfx id
        ("nvidia", "NVIDIA H100 80GB HBM3", "sm_90", 132, "nvidia-h100-sxm5-80gb"),
        ("nvidia", "H100_Modal", None, None, "nvidia-h100-sxm5-80gb"),  # a KernelBench folder
        ("amd", "mi200", "gfx90a", 104, None),  # MI210 or an MI250 die: not guessed
        ("nvidia", "Nvidia GPU (Volta)", "sm_70", 80, None),  # V100 SXM2 or PCIe: not guessed
        ("nvidia", "unknown", "sm_86", 46, None),
        ("nvidia", "NVIDIA H100 80GB HBM3", "gfx942", None, None),  # facts that contradict the name
    ],
)
def test_start_packet_fills_the_device_id(
    vendor: str, device: str, arch: str | None, units: int | None, expected: str | None
) -> None:
    hw = Hardware(vendor=vendor, device=device, arch=arch, compute_units=units)
    packet = start_packet(subject_kind="kernel", subject_name="k", created_at=T0, hardware=hw)
    assert packet.hardware is not None
    assert packet.hardware.device_id == expected
    assert packet.hardware.device == device  # the tool's string is kept


def test_memory_tells_variants_apart_and_a_given_id_is_kept() -> None:
    h100 = Hardware(vendor="nvidia", device="NVIDIA H100", arch="sm_90")
    assert hardware_with_id(h100).device_id is None  # SXM5, PCIe or NVL
    sized = h100.model_copy(update={"memory": ByteSize(value=93.6, unit="GiB")})
    assert hardware_with_id(sized).device_id == "nvidia-h100-nvl-94gb"
    given = h100.model_copy(update={"device_id": "nvidia-h100-pcie-80gb"})
    assert hardware_with_id(given) is given


def test_a_partition_reports_its_share_of_the_device() -> None:
    cpx = Hardware(vendor="amd", device="AMD Instinct MI300X", compute_units=38, partitions=8)
    assert hardware_with_id(cpx).device_id == "amd-mi300x"


# ------------------------------------------------------------------------------------------
# the corpus

#: (adapter, corpus path) -> (physical device, expected device id); None: no id (the device
#: unknown or ambiguous), the packets' hardware present
EXPECTED: dict[tuple[str, str], tuple[str, str | None]] = {
    ("ncu", "ncu/cs599k_rms_norm_triton.ncu-rep"): ("GH200", "nvidia-gh200-96gb"),
    ("ncu", "ncu/raw_b200_cc100_flashattn_prof_prefix.csv"): ("B200", "nvidia-b200"),
    ("ncu", "ncu/raw_gtx1080_cc61_legacy_fp_thousands_stdout_prefix.txt"): ("GTX 1080", "nvidia-gtx-1080"),
    ("ncu", "ncu/speedy_scan_profile.ncu-rep"): ("RTX 3070", "nvidia-rtx-3070"),
    ("rocprof", "rocprof/GENERATED_rocprof-compute-3.3.0_analyze_MI300X_A1_rocpd"): ("MI300X", "amd-mi300x"),
    ("rocprof", "rocprof/omniperf-2.x_vcopy_MI300X_A1"): ("MI300X", "amd-mi300x"),
    ("rocprof", "rocprof/rocprof-compute-3.x_vcopy_MI300X_A1_rocpd"): ("MI300X", "amd-mi300x"),
    ("rocprof", "rocprof/omniperf-2.x_vcopy_MI300A_A1"): ("MI300A", "amd-mi300a"),
    ("rocprof", "rocprof/omniperf-2.x_vcopy_MI100"): ("MI100", "amd-mi100"),
    ("rocprof", "rocprof/omniperf-1.0.10_mixbench_MI200"): ("MI200", None),  # `mi200`, 104 CUs
    ("rocprof", "rocprof/omniperf-2.x_vcopy_MI200"): ("MI200", None),
    ("xprof", "xprof/tpu_v6e_inference_4core.xplane.pb"): ("TPU v6e", "google-tpu-v6e"),
    ("xprof", "xprof/derived/tpu_v6e_inference_4core.overview_page.json.gz"): ("TPU v6e", "google-tpu-v6e"),
    ("xprof", "xprof/derived/tpu_v6e_inference_4core.roofline_model.json.gz"): ("TPU v6e", "google-tpu-v6e"),
    ("xprof", "xprof/golden_tpu_v5_training.overview_page.json.gz"): ("TPU v5p", "google-tpu-v5p"),
    ("xprof", "xprof/gpu_v100x8_tf_bert_multiworker.xplane.pb"): ("V100", None),  # `Nvidia GPU (Volta)`
    ("vllm", "vllm/inferencex_agentic_kimik2.5-nvfp4_b200_tp4_conc12_vllm0.22.0.json"): (
        "B200",
        "nvidia-b200",
    ),
    ("vllm", "vllm/serve_llama3.2-3b_4xL40S_llm-d_metadata_vllm2025-05.jsonl"): ("L40S", "nvidia-l40s"),
    ("nsys", "nsys/nsys2026.1_rtx4060ti_add_parallel_report1.sqlite"): ("RTX 4060 Ti", "nvidia-rtx-4060-ti"),
    ("kernelbench", "kernelbench/baseline_time_torch_H100_Modal.json"): ("H100 SXM", "nvidia-h100-sxm5-80gb"),
    ("flashinfer-trace", "flashinfer-trace/fib_a800_gemm_n128_k2048_gpt-5_passed_incorrect.jsonl"): (
        "A800",
        "nvidia-a800-sxm4-80gb",
    ),
    ("flashinfer-trace", "flashinfer-trace/fib_a800_rmsnorm_h4096_gpt-5.2_passed.jsonl"): (
        "A800",
        "nvidia-a800-sxm4-80gb",
    ),
}

#: corpus folder -> adapter; every file (or workload folder) in it is ingested
FOLDERS = {
    "ncu": "ncu",
    "rocprof": "rocprof",
    "rocpd": "rocprof",
    "xprof": "xprof",
    "vllm": "vllm",
    "nsys": "nsys",
    "torch-profiler": "torch-profiler",
    "guidellm": "guidellm",
    "kernelbench": "kernelbench",
    "flashinfer-trace": "flashinfer-trace",
    "tritonbench": "tritonbench",
    "kernelbot": "kernelbot",
}


def _inputs(corpus: Path) -> list[tuple[str, Path]]:
    out = []
    for folder, adapter in FOLDERS.items():
        root = corpus / folder
        if not root.is_dir():
            continue
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root)
            if p.name in ("FORMAT_NOTES.md", "SOURCES.tsv") or any(
                part.startswith(".") for part in rel.parts
            ):
                continue
            # a workload folder is one input; the files inside it are not read alone
            if (
                p.is_dir()
                and folder == "rocprof"
                and len(rel.parts) == 1
                and p.name != "rocprofv3_sdk-docs-data"
                or p.is_file()
                and not (folder == "rocprof" and p.parent != root / "rocprofv3_sdk-docs-data")
            ):
                out.append((adapter, p))
    return out


def _ingest(adapter: str, path: Path) -> list[EvidencePacket]:
    try:
        return get_adapter(adapter).read([str(path)], AdapterOptions(created_at=T0)).packets
    except KernelEvidenceError:
        return []  # a file the adapter refuses (clearly): no packets, no device


@pytest.fixture(scope="module")
def corpus_packets() -> dict[tuple[str, str], list[EvidencePacket]]:
    from conftest import CORPUS

    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not present")
    return {(a, str(p.relative_to(CORPUS))): _ingest(a, p) for a, p in _inputs(CORPUS)}


def test_corpus_files_get_their_device_ids(
    corpus_packets: dict[tuple[str, str], list[EvidencePacket]],
) -> None:
    checked = 0
    for key, (_, expected) in EXPECTED.items():
        packets = corpus_packets.get(key)
        if packets is None:
            continue  # that corpus file is absent
        assert packets, f"{key}: no packet"
        ids = {p.hardware.device_id if p.hardware else "no hardware" for p in packets}
        assert ids == {expected}, f"{key}: {ids}"
        checked += 1
    if not checked:
        pytest.skip("none of the expected corpus files is present")


def test_every_device_id_is_in_the_table_and_fits_the_raw_string(
    corpus_packets: dict[tuple[str, str], list[EvidencePacket]],
) -> None:
    from kernel_evidence.devices import candidates, device

    for key, packets in corpus_packets.items():
        for p in packets:
            h = p.hardware
            if h is None or h.device_id is None:
                continue
            entry = device(h.device_id)
            assert entry is not None, f"{key}: {h.device_id}"
            assert entry in candidates(h.device) or not candidates(h.device), f"{key}: {h.device}"


def test_an_archive_of_the_corpus_groups_each_physical_device_under_one_id(
    corpus_packets: dict[tuple[str, str], list[EvidencePacket]], tmp_path: Path
) -> None:
    pa = pytest.importorskip("pyarrow")
    pc = pytest.importorskip("pyarrow.compute")
    from kernel_evidence.archive.reader import read_table
    from kernel_evidence.archive.schema import DATASET_SCHEMA

    src = tmp_path / "packets"
    src.mkdir()
    physical: dict[str, str] = {}  # packet id -> physical device
    for n, (key, packets) in enumerate(sorted(corpus_packets.items())):
        if not packets:
            continue
        write_packets(src / f"{n:03d}.jsonl", packets)
        if key in EXPECTED:
            physical.update((p.packet_id or p.compute_id(), EXPECTED[key][0]) for p in packets)
    if not physical:
        pytest.skip("none of the expected corpus files is present")
    archive_packets([src], tmp_path / "archive", allow_invalid=True, parallel=False)
    has_column = "device_id" in DATASET_SCHEMA.names
    table = read_table(tmp_path / "archive", ["packet_id", "device", *(["device_id"] if has_column else [])])
    assert table.num_rows >= len(physical)
    if not has_column:
        pytest.skip("the archive has no device_id column")
    rows = table.filter(pc.is_valid(table["device_id"]))
    ids_of: dict[str, set[str]] = defaultdict(set)
    devices_of: dict[str, set[str]] = defaultdict(set)
    for pid, dev_id in zip(rows["packet_id"].to_pylist(), rows["device_id"].to_pylist(), strict=True):
        if pid in physical:
            ids_of[physical[pid]].add(dev_id)
            devices_of[dev_id].add(physical[pid])
    # each physical device under exactly one id, and no id shared by two physical devices
    assert {d: len(v) for d, v in ids_of.items()} == {d: 1 for d in ids_of}, dict(ids_of)
    assert {i: len(v) for i, v in devices_of.items()} == {i: 1 for i in devices_of}, dict(devices_of)
    # the raw strings stay: one id, several spellings (MI300X_A1 from three rocprof layouts...)
    b200 = table.filter(pc.equal(table["device_id"], pa.scalar("nvidia-b200")))
    if b200.num_rows:
        assert len(set(b200["device"].to_pylist())) >= 1
    unknown = {
        physical[p]
        for p in table.filter(pc.is_null(table["device_id"]))["packet_id"].to_pylist()
        if p in physical
    }
    assert unknown <= {"MI200", "V100"}, unknown  # only the ambiguous ones stay unknown


def test_a_kernelbench_folder_name_is_a_device(corpus: Path, tmp_path: Path) -> None:
    """KernelBench names the device only by its results folder (``results/timing/<GPU>/``)."""
    src = corpus / "kernelbench" / "baseline_time_torch_RTX6000Ada_tritonforge_no_hw_keys.json"
    if not src.exists():
        pytest.skip("corpus file absent")
    folder = tmp_path / "results" / "timing" / "RTX6000Ada"
    folder.mkdir(parents=True)
    shutil.copyfile(src, folder / "baseline_time_torch.json")
    packets = _ingest("kernelbench", folder / "baseline_time_torch.json")
    assert packets
    assert {(p.hardware.device, p.hardware.device_id) for p in packets if p.hardware} == {
        ("RTX6000Ada", "nvidia-rtx-6000-ada")
    }
