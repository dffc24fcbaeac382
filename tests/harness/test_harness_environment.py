"""Environment capture: this CPU machine, and parsers fed with small synthetic tool outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kernel_evidence.harness.environment import (
    _strip_credentials,
    capture_environment,
    container_info,
    cpu_clock_mhz,
    cpu_last_level_cache,
    cpu_model,
    device_last_level_cache,
    diff_environment,
    parse_amd_smi,
    parse_cache_size,
    parse_nvidia_smi,
    parse_rocm_smi,
    recorded_env,
)
from kernel_evidence.models import Hardware, Replay, Repository


def test_capture_on_a_cpu_machine_says_no_accelerator() -> None:
    env = capture_environment()
    if env.accelerator_found:  # pragma: no cover - only on a machine with a GPU
        return
    assert env.hardware.vendor == "cpu"
    assert env.hardware.device == cpu_model()
    assert env.hardware.host is not None and env.hardware.host.python
    assert (
        "no accelerator found (NVML, nvidia-smi, amd-smi, rocm-smi, torch.cuda); hardware is the host CPU"
        in env.notes
    )
    assert env.command is not None and env.command[0] == sys.executable
    replay = env.replay()
    assert replay.command == env.command and replay.notes is not None


def test_versions_are_read_without_importing_frameworks() -> None:
    code = (
        "import sys\n"
        "from kernel_evidence.harness.environment import package_versions\n"
        "v = package_versions(('numpy', 'torch', 'no-such-dist-kevidence'))\n"
        "print('numpy' in v, 'numpy' in sys.modules, 'no-such-dist-kevidence' in v)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False", "False"]


def test_cpuinfo_parsing() -> None:
    text = "processor\t: 0\nmodel name\t: Example CPU @ 3.00GHz\ncpu MHz\t\t: 2000.0\n\nprocessor\t: 1\ncpu MHz\t\t: 3000.0\n"
    assert cpu_model(text) == "Example CPU @ 3.00GHz"
    assert cpu_clock_mhz(text) == 2500.0
    assert cpu_model("Processor\t: AArch64 rev 1\nModel\t: Raspberry Pi 4\n") == "Raspberry Pi 4"


def test_nvidia_smi_csv() -> None:
    fields = (
        "name",
        "driver_version",
        "memory.total",
        "clocks.sm",
        "clocks.mem",
        "power.limit",
        "compute_cap",
    )
    csv = "NVIDIA H100 80GB HBM3, 550.54.15, 81559, 1980, 2619, 700.00, 9.0\nNVIDIA H100 80GB HBM3, 550.54.15, 81559, 345, 2619, 700.00, 9.0\n"
    hw = parse_nvidia_smi(csv, fields)
    assert hw is not None
    assert (hw.vendor, hw.device, hw.arch, hw.count) == (
        "nvidia",
        "NVIDIA H100 80GB HBM3",
        "sm_90",
        2,
    )
    assert hw.clocks is not None and hw.clocks.sm_observed is not None and hw.clocks.sm_observed.value == 1980
    assert hw.driver is not None and hw.driver.version == "550.54.15"
    assert hw.power_limit is not None and hw.power_limit.value == 700
    # unsupported fields are absent, not zero
    hw = parse_nvidia_smi("Tesla T4, 470.1, 15360, [N/A], [N/A], [N/A]\n", fields[:-1])
    assert hw is not None and hw.clocks is None and hw.power_limit is None and hw.arch is None
    assert parse_nvidia_smi("garbage\n", fields) is None


def test_rocm_smi_json() -> None:
    data = {
        "card0": {
            "Card Series": "AMD Instinct MI300X",
            "GFX Version": "gfx942",
            "sclk clock level:": "x",
            "sclk clock level": "1 (2100Mhz)",
        },
        "card1": {"Card Series": "AMD Instinct MI300X", "GFX Version": "gfx942"},
        "system": {"Driver version": "6.7.0"},
    }
    hw = parse_rocm_smi(json.dumps(data))
    assert hw is not None
    assert (hw.vendor, hw.device, hw.arch, hw.count) == ("amd", "AMD Instinct MI300X", "gfx942", 2)
    assert hw.driver is not None and hw.driver.version == "6.7.0"
    assert hw.clocks is not None and hw.clocks.sm_observed is not None and hw.clocks.sm_observed.value == 2100
    assert parse_rocm_smi("{not json") is None


def test_amd_smi_json() -> None:
    data = [
        {
            "gpu": 0,
            "asic": {"market_name": "AMD Instinct MI250X", "target_graphics_version": "gfx90a"},
            "driver": {"name": "amdgpu", "version": "6.3.6"},
        }
    ]
    hw = parse_amd_smi(json.dumps(data))
    assert hw is not None and (hw.device, hw.arch) == ("AMD Instinct MI250X", "gfx90a")
    assert hw.driver is not None and hw.driver.version == "6.3.6"


def test_container_from_env_and_podman(tmp_path: Path) -> None:
    digest = "sha256:" + "ab" * 32
    box, note = container_info(
        {"KEVIDENCE_CONTAINER_IMAGE": f"nvcr.io/nvidia/pytorch:24.05-py3@{digest}"}, str(tmp_path)
    )
    assert (
        box is not None
        and box.image == "nvcr.io/nvidia/pytorch:24.05-py3"
        and box.digest == digest
        and note is None
    )
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".containerenv").write_text(
        f'engine="podman-4.9"\nimage="docker.io/library/python:3.11"\nimageid="{"cd" * 32}"\n'
    )
    box, note = container_info({}, str(tmp_path))
    assert (
        box is not None
        and box.image == "docker.io/library/python:3.11"
        and box.digest == "sha256:" + "cd" * 32
    )


def test_container_hint_without_image(tmp_path: Path) -> None:
    (tmp_path / ".dockerenv").write_text("")
    box, note = container_info({}, str(tmp_path))
    assert box is None
    assert (
        note
        == "running in a container (docker (/.dockerenv)) whose image is unknown; set KEVIDENCE_CONTAINER_IMAGE"
    )
    assert container_info({}, str(tmp_path / "nothing")) == (None, None)


def test_credentials_are_stripped_and_env_is_allow_listed() -> None:
    assert _strip_credentials("https://user:ghp_secret@github.com/o/r.git") == "https://github.com/o/r.git"
    assert _strip_credentials("git@github.com:o/r.git") == "git@github.com:o/r.git"
    assert recorded_env({"CUDA_VISIBLE_DEVICES": "0", "AWS_SECRET_ACCESS_KEY": "x"}) == {
        "CUDA_VISIBLE_DEVICES": "0"
    }


def test_diff_environment_lists_only_recorded_fields() -> None:
    env = capture_environment()
    recorded_hw = Hardware(vendor="nvidia", device="NVIDIA A100-SXM4-80GB", arch="sm_80")
    replay = Replay(command=["python"], repository=Repository(commit="0" * 40), packages={"numpy": "0.0.1"})
    fields = {d.field: d for d in diff_environment(recorded_hw, replay, env)}
    assert fields["hardware.device"].recorded == "NVIDIA A100-SXM4-80GB"
    assert fields["packages.numpy"].recorded == "0.0.1"
    assert fields["repository.commit"].recorded == "0" * 40
    assert "hardware.driver" not in fields  # not recorded: unknown, not different


def test_nvidia_smi_csv_with_its_header_and_units() -> None:
    # plain `--format=csv`: a header naming the long field names with their units, and
    # values with units (the form nvidia-smi writes without noheader,nounits)
    csv = (
        "name, driver_version, memory.total [MiB], clocks.current.sm [MHz], clocks.current.memory [MHz],"
        " power.limit [W], compute_cap\n"
        "NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB, 1980 MHz, 2619 MHz, 700.00 W, 9.0\n"
    )
    hw = parse_nvidia_smi(csv)
    assert hw is not None and (hw.device, hw.arch, hw.count) == ("NVIDIA H100 80GB HBM3", "sm_90", 1)
    assert hw.memory is not None and hw.memory.value == round(81559 / 1024, 2)
    assert hw.clocks is not None and hw.clocks.sm_observed is not None and hw.clocks.sm_observed.value == 1980
    assert hw.clocks.memory_observed is not None and hw.clocks.memory_observed.value == 2619
    assert hw.power_limit is not None and hw.power_limit.value == 700
    # a header in another order than the query: the header decides
    swapped = "power.limit [W], name\n[N/A], Tesla T4\n"
    hw = parse_nvidia_smi(swapped)
    assert hw is not None and hw.device == "Tesla T4" and hw.power_limit is None


def test_cache_sizes_from_sysfs(tmp_path: Path) -> None:
    # the layout of /sys/devices/system/cpu/cpu0/cache: index*/level, type, size
    for index, (level, kind, size) in enumerate(
        [
            ("1", "Data", "48K"),
            ("1", "Instruction", "32K"),
            ("2", "Unified", "1024K"),
            ("3", "Unified", "32768K"),
        ]
    ):
        d = tmp_path / f"index{index}"
        d.mkdir()
        (d / "level").write_text(level + "\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
    assert cpu_last_level_cache(str(tmp_path)) == 32 * 1024**2
    assert cpu_last_level_cache(str(tmp_path / "none")) is None
    assert [parse_cache_size(t) for t in ("48K", "36M", "1G", "512", "x", "")] == [
        48 * 1024, 36 * 1024**2, 1024**3, 512, None, None,
    ]  # fmt: skip


def test_the_captured_cpu_records_its_last_level_cache() -> None:
    env = capture_environment()
    if env.accelerator_found:  # pragma: no cover - only on a machine with a GPU
        return
    expected = cpu_last_level_cache()
    llc = env.hardware.last_level_cache
    assert (llc.value if llc else None) == (float(expected) if expected else None)
    assert device_last_level_cache() is None  # torch not imported: nothing asked of a device
