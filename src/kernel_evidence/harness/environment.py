"""What machine and code a measurement ran on, captured without help from the harness.

:func:`capture_environment` looks at, in this order and each only when present:

* accelerators: NVML through ``pynvml`` when it imports, else ``nvidia-smi``; ``amd-smi``
  or ``rocm-smi`` for AMD; the device query of a framework the harness has *already*
  imported (``torch.cuda``); otherwise the CPU, with the note "no accelerator found";
* the host: name, OS, CPU model, Python, memory, the core clock observed now;
* package versions (torch, triton, jax, cupy, numpy, ...) through
  :mod:`importlib.metadata` - nothing is imported to read a version;
* the git commit of the working directory, whether the tree is dirty, the branch and the
  remote (credentials stripped);
* the container image and digest when known (``KEVIDENCE_CONTAINER_IMAGE``, podman's
  ``/run/.containerenv``), or a note that a container was seen but its image is unknown;
* the command line as an argv to replay (``sys.orig_argv`` with ``sys.executable`` first).

Every probe has a short timeout and every failure becomes a note, never an exception.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from ..models import (
    ByteSize,
    Clocks,
    Container,
    Frequency,
    Hardware,
    Host,
    Power,
    Replay,
    Repository,
    Software,
)

__all__ = [
    "DEFAULT_PACKAGES",
    "RECORDED_ENV_VARS",
    "Environment",
    "EnvironmentDifference",
    "capture_environment",
    "capture_hardware",
    "cpu_last_level_cache",
    "device_last_level_cache",
    "diff_environment",
    "package_versions",
    "replay_command",
]

#: distributions whose versions are recorded when installed
DEFAULT_PACKAGES = (
    "torch",
    "triton",
    "pytorch-triton-rocm",
    "jax",
    "jaxlib",
    "cupy",
    "cupy-cuda12x",
    "cupy-cuda11x",
    "numpy",
    "kernel-evidence",
)

#: environment variables that change what runs or how fast; nothing else is recorded
RECORDED_ENV_VARS = (
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "PYTHONHASHSEED",
    "XLA_FLAGS",
    "TRITON_CACHE_DIR",
)

_PROBE_TIMEOUT = 5.0


@dataclass
class Environment:
    """The captured environment; :meth:`replay` turns it into the packet's replay category."""

    hardware: Hardware
    command: list[str] | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    packages: dict[str, str] = field(default_factory=dict)
    repository: Repository | None = None
    container: Container | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def accelerator_found(self) -> bool:
        """False when the hardware is the host CPU."""
        return self.hardware.vendor != "cpu"

    def replay(self, **overrides: Any) -> Replay:
        """The replay category: command, cwd, env, repository, container, packages, notes."""
        data: dict[str, Any] = {
            "command": self.command,
            "cwd": self.cwd,
            "env": self.env or None,
            "repository": self.repository,
            "container": self.container,
            "packages": self.packages or None,
            "notes": "; ".join(self.notes) or None,
        }
        data.update(overrides)
        return Replay(**data)


def _run(argv: Sequence[str], cwd: str | None = None, timeout: float = _PROBE_TIMEOUT) -> str | None:
    """Stdout of a probe command, or None when it is missing, fails or hangs."""
    try:
        proc = subprocess.run(  # noqa: S603 - fixed argv, no shell
            list(argv),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout


# ---------------------------------------------------------------- packages, command, env


def package_versions(names: Sequence[str] = DEFAULT_PACKAGES) -> dict[str, str]:
    """Installed versions of ``names`` from package metadata; absent packages are left out."""
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def replay_command() -> tuple[list[str] | None, str | None]:
    """``(argv, note)``: the command that started this process, interpreter first.

    ``sys.orig_argv`` keeps ``-m module`` and interpreter options, so it is preferred to
    ``sys.argv``. Code given with ``-c`` or typed at an interactive prompt cannot be
    replayed from the command line alone; the argv is still returned with a note.
    """
    orig = list(getattr(sys, "orig_argv", []) or [])
    argv = [sys.executable or "python", *orig[1:]] if orig else [sys.executable or "python", *sys.argv]
    note = None
    if "-c" in argv[1:2] or not sys.argv or sys.argv[0] in ("", "-c"):
        note = "the process ran inline code (-c or interactive); its command alone does not replay it"
    return argv, note


def recorded_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed environment variables that are set (see :data:`RECORDED_ENV_VARS`)."""
    environ = os.environ if environ is None else environ
    return {k: environ[k] for k in RECORDED_ENV_VARS if k in environ}


# ---------------------------------------------------------------- git


_USERINFO = re.compile(r"^(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@")


def _strip_credentials(url: str) -> str:
    """``https://user:token@host/x`` -> ``https://host/x``; scp-style URLs are kept."""
    return _USERINFO.sub(r"\g<scheme>", url.strip())


def git_repository(cwd: str | None = None) -> Repository | None:
    """Commit, dirtiness, branch and remote of the git tree around ``cwd``; None outside git."""
    if shutil.which("git") is None:
        return None
    commit = _run(["git", "rev-parse", "HEAD"], cwd=cwd)
    if not commit:
        return None
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd)
    branch = _run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=cwd)
    url = _run(["git", "config", "--get", "remote.origin.url"], cwd=cwd)
    return Repository(
        commit=commit.strip(),
        dirty=None if status is None else bool(status.strip()),
        branch=branch.strip() if branch and branch.strip() != "HEAD" else None,
        url=_strip_credentials(url) if url and url.strip() else None,
    )


# ---------------------------------------------------------------- container


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def container_info(
    environ: Mapping[str, str] | None = None, root: str = "/"
) -> tuple[Container | None, str | None]:
    """``(container, note)`` from ``KEVIDENCE_CONTAINER_IMAGE`` or podman's ``.containerenv``.

    ``KEVIDENCE_CONTAINER_IMAGE`` may hold ``image@sha256:...``; ``KEVIDENCE_CONTAINER_DIGEST``
    gives the digest on its own. When only hints are found (``/.dockerenv``, a cgroup path
    naming docker, containerd or kubepods) the note says so and no container is recorded.
    """
    environ = os.environ if environ is None else environ
    image = environ.get("KEVIDENCE_CONTAINER_IMAGE", "").strip()
    digest = environ.get("KEVIDENCE_CONTAINER_DIGEST", "").strip() or None
    if image:
        if "@" in image:
            image, _, pinned = image.partition("@")
            digest = digest or pinned
        if digest and not _DIGEST.fullmatch(digest):
            return Container(
                image=image
            ), f"KEVIDENCE_CONTAINER_DIGEST `{digest}` is not sha256:<64 hex>; ignored"
        return Container(image=image, digest=digest), None
    base = Path(root)
    containerenv = base / "run" / ".containerenv"
    try:
        text = containerenv.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    if text:
        fields = dict(re.findall(r'^(\w+)="(.*)"$', text, flags=re.M))
        img = fields.get("image", "").strip()
        imageid = fields.get("imageid", "").strip()
        if img:
            dig = f"sha256:{imageid}" if re.fullmatch(r"[0-9a-f]{64}", imageid) else None
            return Container(image=img, digest=dig), None
        return (
            None,
            "running in a podman container whose image is unknown; set KEVIDENCE_CONTAINER_IMAGE",
        )
    hint = None
    if (base / ".dockerenv").exists():
        hint = "docker (/.dockerenv)"
    else:
        try:
            cg = (base / "proc" / "1" / "cgroup").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cg = ""
        for word in ("docker", "containerd", "kubepods", "libpod"):
            if word in cg:
                hint = f"{word} (cgroup)"
                break
    if hint:
        return (
            None,
            f"running in a container ({hint}) whose image is unknown; set KEVIDENCE_CONTAINER_IMAGE",
        )
    return None, None


# ---------------------------------------------------------------- host


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU model name from ``/proc/cpuinfo`` (x86 ``model name``, Arm ``Model``...)."""
    text = _read("/proc/cpuinfo") if cpuinfo is None else cpuinfo
    for key in ("model name", "Model", "cpu model", "Processor", "cpu"):
        m = re.search(rf"^{re.escape(key)}\s*:\s*(.+)$", text, flags=re.M)
        if m and m.group(1).strip():
            return m.group(1).strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def cpu_clock_mhz(cpuinfo: str | None = None) -> float | None:
    """The mean ``cpu MHz`` over cores at this moment, or the cpufreq value of core 0."""
    text = _read("/proc/cpuinfo") if cpuinfo is None else cpuinfo
    values = [float(v) for v in re.findall(r"^cpu MHz\s*:\s*([0-9.]+)\s*$", text, flags=re.M)]
    if values:
        return sum(values) / len(values)
    khz = _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq").strip()
    return int(khz) / 1000.0 if khz.isdigit() else None


_CACHE_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)(?:i?B)?\s*$", flags=re.I)
_CACHE_SCALE = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_cache_size(text: str) -> int | None:
    """Bytes of a cache size as sysfs writes it (``48K``, ``32768K``, ``36M``); None otherwise."""
    m = _CACHE_SIZE.match(text)
    if m is None:
        return None
    return int(m.group(1)) * _CACHE_SCALE[m.group(2).upper()]


def cpu_last_level_cache(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """Size in bytes of CPU 0's last-level cache (the highest ``level`` among its data and
    unified caches in ``root/index*/``), or None where sysfs does not say (not Linux, a
    container hiding it)."""
    best: tuple[int, int] | None = None
    for index in sorted(Path(root).glob("index*")):
        level = _read(str(index / "level")).strip()
        kind = _read(str(index / "type")).strip().lower()
        size = parse_cache_size(_read(str(index / "size")))
        if not level.isdigit() or kind == "instruction" or not size:
            continue
        if best is None or (int(level), size) > best:
            best = (int(level), size)
    return best[1] if best is not None else None


def device_last_level_cache(index: int = 0) -> int | None:
    """Bytes of the L2 cache of device ``index`` as ``torch.cuda`` reports it
    (``get_device_properties(index).L2_cache_size``), only when the harness already imported
    torch and a device is there; None otherwise (NVML and nvidia-smi do not report it)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        size = getattr(torch.cuda.get_device_properties(index), "L2_cache_size", None)
    except Exception:  # noqa: BLE001 - a broken framework install means "unknown"
        return None
    return int(size) if isinstance(size, int) and size > 0 else None


def _bytes(n: int | None) -> ByteSize | None:
    return ByteSize(value=float(n), unit="B") if n else None


def host_info() -> Host:
    """Host name, OS, CPU model, Python version and memory."""
    mem = None
    m = re.search(r"^MemTotal:\s*(\d+)\s*kB", _read("/proc/meminfo"), flags=re.M)
    if m:
        mem = ByteSize(value=round(int(m.group(1)) / 1024.0**2, 2), unit="GiB")
    return Host(
        hostname=socket.gethostname() or None,
        os=platform.platform(),
        cpu=cpu_model(),
        python=f"{platform.python_implementation()} {platform.python_version()}",
        memory=mem,
    )


# ---------------------------------------------------------------- accelerators


def _num(text: str | None) -> float | None:
    if text is None:
        return None
    m = re.search(r"-?\d+(?:\.\d+)?", text)
    return float(m.group(0)) if m else None


def _nvml_hardware(host: Host) -> Hardware | None:
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - NVML raises its own error types; any failure means "not usable"
        return None
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count < 1:
            return None
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(h)
        name = name.decode() if isinstance(name, bytes) else str(name)
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else str(driver)
        mem = pynvml.nvmlDeviceGetMemoryInfo(h).total
        arch = None
        try:
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            arch = f"sm_{major}{minor}"
        except Exception:  # noqa: BLE001
            arch = None
        clocks = Clocks(
            sm_observed=Frequency(
                value=float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)), unit="MHz"
            ),
            memory_observed=Frequency(
                value=float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)), unit="MHz"
            ),
        )
        limit = None
        try:
            limit = Power(value=pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000.0, unit="W")
        except Exception:  # noqa: BLE001
            limit = None
        return Hardware(
            vendor="nvidia",
            device=name,
            arch=arch,
            count=count,
            memory=ByteSize(value=round(mem / 1024.0**3, 2), unit="GiB"),
            driver=Software(name="nvidia-driver", version=driver),
            clocks=clocks,
            power_limit=limit,
            host=host,
        )
    except Exception:  # noqa: BLE001
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


_SMI_FIELDS = (
    "name",
    "driver_version",
    "memory.total",
    "clocks.sm",
    "clocks.mem",
    "power.limit",
    "compute_cap",
)


#: the long names nvidia-smi writes in a CSV header for the short query names used here
_SMI_LONG_NAMES = {"clocks.current.sm": "clocks.sm", "clocks.current.memory": "clocks.mem"}


def parse_nvidia_smi(
    csv_text: str, fields: Sequence[str] = _SMI_FIELDS, host: Host | None = None
) -> Hardware | None:
    """Hardware from ``nvidia-smi --query-gpu=<fields> --format=csv...`` output, one row per GPU.

    Both forms nvidia-smi writes are read: ``csv,noheader,nounits`` (``81559``) and plain
    ``csv``, whose header row (``memory.total [MiB]``) names the fields in its own order and
    whose values carry units (``81559 MiB``, ``700.00 W``). ``[N/A]`` and ``[Not Supported]``
    mean unknown.
    """
    rows = [[c.strip() for c in line.split(",")] for line in csv_text.splitlines() if line.strip()]
    if rows:
        header = [re.sub(r"\s*\[[^\]]*\]$", "", c) for c in rows[0]]
        if "name" in header and all(re.fullmatch(r"[a-z_][a-z0-9_.]*", c) for c in header):
            # the header names each field by its long name (`clocks.current.sm` for `clocks.sm`)
            fields, rows = [_SMI_LONG_NAMES.get(c, c) for c in header], rows[1:]
    rows = [r for r in rows if len(r) == len(fields)]
    if not rows:
        return None
    first = dict(zip(fields, rows[0], strict=True))

    def val(key: str) -> str | None:
        v = first.get(key)
        return None if v is None or v in ("[N/A]", "N/A", "[Not Supported]", "") else v

    name = val("name")
    if not name:
        return None
    sm, memclk, mem, limit = (
        _num(val("clocks.sm")),
        _num(val("clocks.mem")),
        _num(val("memory.total")),
        _num(val("power.limit")),
    )
    cap = val("compute_cap")
    clocks = Clocks(
        sm_observed=Frequency(value=sm, unit="MHz") if sm is not None else None,
        memory_observed=Frequency(value=memclk, unit="MHz") if memclk is not None else None,
    )
    return Hardware(
        vendor="nvidia",
        device=name,
        arch=f"sm_{cap.replace('.', '')}" if cap else None,
        count=len(rows),
        memory=ByteSize(value=round(mem / 1024.0, 2), unit="GiB") if mem is not None else None,
        driver=Software(name="nvidia-driver", version=val("driver_version")),
        clocks=clocks if (sm is not None or memclk is not None) else None,
        power_limit=Power(value=limit, unit="W") if limit is not None else None,
        host=host,
    )


def _nvidia_smi_hardware(host: Host) -> Hardware | None:
    if shutil.which("nvidia-smi") is None:
        return None
    for fields in (_SMI_FIELDS, _SMI_FIELDS[:-1]):  # compute_cap is missing on old drivers
        out = _run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
        if out:
            return parse_nvidia_smi(out, fields, host)
    return None


def _find_key(obj: Any, *names: str) -> Any:
    """First value under any of ``names`` (case-insensitive), searched depth-first."""
    wanted = {n.lower() for n in names}
    stack = [obj]
    while stack:
        cur = stack.pop(0)
        if isinstance(cur, dict):
            for k, v in cur.items():
                if str(k).lower() in wanted and v not in (None, "", "N/A"):
                    return v
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)
    return None


def parse_rocm_smi(json_text: str, host: Host | None = None) -> Hardware | None:
    """Hardware from ``rocm-smi --showproductname --showdriverversion --showclocks --json``.

    Keys are read by name (``Card series``, ``Card SKU``, ``GFX Version``, ``Driver version``,
    ``sclk clock level``); cards are the top-level ``cardN`` objects.
    """
    try:
        data = json.loads(json_text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    cards = {k: v for k, v in data.items() if str(k).lower().startswith("card") and isinstance(v, dict)}
    if not cards:
        return None
    first = cards[sorted(cards)[0]]
    name = _find_key(first, "Card Series", "Card series", "Card model", "Device Name", "Card SKU")
    if not name:
        return None
    gfx = _find_key(first, "GFX Version", "gfx_version")
    driver = _find_key(data, "Driver version", "driver_version")
    sclk = _find_key(first, "sclk clock level", "current sclk")
    mclk = _find_key(first, "mclk clock level", "current mclk")
    s_mhz = _num(str(sclk).split("(")[-1]) if sclk else None
    m_mhz = _num(str(mclk).split("(")[-1]) if mclk else None
    clocks = None
    if s_mhz is not None or m_mhz is not None:
        clocks = Clocks(
            sm_observed=Frequency(value=s_mhz, unit="MHz") if s_mhz is not None else None,
            memory_observed=Frequency(value=m_mhz, unit="MHz") if m_mhz is not None else None,
        )
    return Hardware(
        vendor="amd",
        device=str(name),
        arch=str(gfx) if gfx else None,
        count=len(cards),
        driver=Software(name="amdgpu", version=str(driver)) if driver else None,
        clocks=clocks,
        host=host,
    )


def parse_amd_smi(json_text: str, host: Host | None = None) -> Hardware | None:
    """Hardware from ``amd-smi static --json`` (``asic.market_name``, ``asic.target_graphics_version``)."""
    try:
        data = json.loads(json_text)
    except ValueError:
        return None
    gpus = data if isinstance(data, list) else (data.get("gpu_data") if isinstance(data, dict) else None)
    if isinstance(data, dict) and gpus is None:
        gpus = [data]
    if not isinstance(gpus, list) or not gpus:
        return None
    first = gpus[0]
    name = _find_key(first, "market_name", "product_name")
    if not name:
        return None
    arch = _find_key(first, "target_graphics_version", "gfx_version")
    driver = _find_key(first, "driver")
    version = driver.get("version") if isinstance(driver, dict) else driver
    return Hardware(
        vendor="amd",
        device=str(name),
        arch=str(arch) if arch else None,
        count=len(gpus),
        driver=Software(name="amdgpu", version=str(version)) if version else None,
        host=host,
    )


def _amd_hardware(host: Host) -> Hardware | None:
    if shutil.which("amd-smi") is not None:
        out = _run(["amd-smi", "static", "--json"])
        hw = parse_amd_smi(out, host) if out else None
        if hw:
            return hw
    if shutil.which("rocm-smi") is not None:
        out = _run(["rocm-smi", "--showproductname", "--showdriverversion", "--showclocks", "--json"])
        return parse_rocm_smi(out, host) if out else None
    return None


def _torch_hardware(host: Host) -> Hardware | None:
    """The device ``torch`` sees, only when the harness already imported torch."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        props = torch.cuda.get_device_properties(0)
        hip = getattr(torch.version, "hip", None)
        arch = getattr(props, "gcnArchName", None) if hip else f"sm_{props.major}{props.minor}"
        return Hardware(
            vendor="amd" if hip else "nvidia",
            device=str(props.name),
            arch=arch or None,
            count=int(torch.cuda.device_count()),
            compute_units=int(props.multi_processor_count) or None,
            memory=ByteSize(value=round(props.total_memory / 1024.0**3, 2), unit="GiB"),
            runtime=Software(name="hip" if hip else "cuda", version=hip or torch.version.cuda),
            last_level_cache=_bytes(device_last_level_cache(0)),
            host=host,
        )
    except Exception:  # noqa: BLE001 - a broken framework install must not stop the capture
        return None


def cpu_hardware(host: Host) -> Hardware:
    """The host CPU as the device: vendor ``cpu``, device = CPU model, the core clock now."""
    mhz = cpu_clock_mhz()
    return Hardware(
        vendor="cpu",
        device=host.cpu or cpu_model(),
        arch=platform.machine() or None,
        count=1,
        compute_units=os.cpu_count() or None,
        clocks=Clocks(sm_observed=Frequency(value=round(mhz, 1), unit="MHz")) if mhz else None,
        last_level_cache=_bytes(cpu_last_level_cache()),
        host=host,
    )


def _with_device_details(hw: Hardware) -> Hardware:
    """``hw`` from NVML or a vendor tool, with what only the framework's device query knows
    (SM count, L2 size, runtime version) filled in where the harness imported torch."""
    details = _torch_hardware(hw.host or Host())
    if details is None or details.vendor != hw.vendor:
        return hw
    update = {
        k: getattr(details, k)
        for k in ("compute_units", "last_level_cache", "runtime", "arch")
        if getattr(hw, k) is None and getattr(details, k) is not None
    }
    return hw.model_copy(update=update) if update else hw


def capture_hardware(host: Host | None = None) -> Hardware:
    """The accelerator (or the CPU when none is found), with the clocks observed now.

    Only queries: nothing here locks clocks, changes power limits or persistence mode, or
    resets a device; the clocks and power limit are recorded as observed.
    """
    host = host or host_info()
    for probe in (_nvml_hardware, _nvidia_smi_hardware, _amd_hardware):
        hw = probe(host)
        if hw is not None:
            return _with_device_details(hw)
    hw = _torch_hardware(host)
    return hw if hw is not None else cpu_hardware(host)


def capture_environment(cwd: str | None = None, packages: Sequence[str] = DEFAULT_PACKAGES) -> Environment:
    """Everything the recorder knows about this machine and code, with notes on what is unknown."""
    notes: list[str] = []
    hw = capture_hardware()
    if hw.vendor == "cpu":
        notes.append(
            "no accelerator found (NVML, nvidia-smi, amd-smi, rocm-smi, torch.cuda); hardware is the host CPU"
        )
    command, note = replay_command()
    if note:
        notes.append(note)
    container, cnote = container_info()
    if cnote:
        notes.append(cnote)
    work = cwd or os.getcwd()
    # the code's repository: the folder of the script that runs, else the working folder
    script = sys.argv[0] if sys.argv and sys.argv[0] not in ("", "-c", "-m") else None
    repo = None
    if script and os.path.exists(script):
        repo = git_repository(os.path.dirname(os.path.abspath(script)))
    if repo is None:
        repo = git_repository(work)
    return Environment(
        hardware=hw,
        command=command,
        cwd=work,
        env=recorded_env(),
        packages=package_versions(packages),
        repository=repo,
        container=container,
        notes=notes,
    )


# ---------------------------------------------------------------- differences


@dataclass(frozen=True)
class EnvironmentDifference:
    """One field that differs between a recorded packet and this machine."""

    field: str
    recorded: str | None
    current: str | None


def _flat_hw(hw: Hardware | None) -> dict[str, str | None]:
    if hw is None:
        return {}
    host = hw.host
    return {
        "hardware.vendor": hw.vendor,
        "hardware.device": hw.device,
        "hardware.arch": hw.arch,
        "hardware.count": None if hw.count is None else str(hw.count),
        "hardware.driver": None
        if hw.driver is None
        else f"{hw.driver.name} {hw.driver.version or ''}".strip(),
        "hardware.runtime": None
        if hw.runtime is None
        else f"{hw.runtime.name} {hw.runtime.version or ''}".strip(),
        "hardware.host.os": host.os if host else None,
        "hardware.host.cpu": host.cpu if host else None,
        "hardware.host.python": host.python if host else None,
    }


def diff_environment(
    recorded_hardware: Hardware | None, recorded_replay: Replay | None, current: Environment
) -> list[EnvironmentDifference]:
    """Fields that differ between a packet's hardware/replay and the current environment.

    Only fields the packet recorded are compared: a field the packet left out is unknown,
    not different. Package versions are compared for every package the packet names.
    """
    diffs: list[EnvironmentDifference] = []
    rec = _flat_hw(recorded_hardware)
    cur = _flat_hw(current.hardware)
    for key, value in rec.items():
        if value is not None and value != cur.get(key):
            diffs.append(EnvironmentDifference(key, value, cur.get(key)))
    if recorded_replay is not None:
        for name, version in sorted((recorded_replay.packages or {}).items()):
            now = current.packages.get(name)
            if now is None:
                try:
                    now = metadata.version(name)
                except metadata.PackageNotFoundError:
                    now = None
            if version != now:
                diffs.append(EnvironmentDifference(f"packages.{name}", version, now))
        repo = recorded_replay.repository
        if (
            repo is not None
            and repo.commit
            and (current.repository is None or current.repository.commit != repo.commit)
        ):
            diffs.append(
                EnvironmentDifference(
                    "repository.commit",
                    repo.commit,
                    current.repository.commit if current.repository else None,
                )
            )
        box = recorded_replay.container
        if box is not None:
            now_box = current.container
            if now_box is None or (box.digest or box.image) != (now_box.digest or now_box.image):
                diffs.append(
                    EnvironmentDifference(
                        "container",
                        f"{box.image}@{box.digest}" if box.digest else box.image,
                        None
                        if now_box is None
                        else (f"{now_box.image}@{now_box.digest}" if now_box.digest else now_box.image),
                    )
                )
        for k, v in sorted((recorded_replay.env or {}).items()):
            now_v = os.environ.get(k)
            if now_v != v:
                diffs.append(EnvironmentDifference(f"env.{k}", v, now_v))
    return diffs
