"""KE8xx: the device is identified and its state recorded."""

from __future__ import annotations

import re
from typing import Any

from ._common import CACHED_CHARS as _CACHED_CHARS
from ._context import Add, Ctx
from ._engine import declare

declare(
    "KE801",
    "error",
    "the device is identified",
    "record /hardware with vendor and the device's model name (e.g. `NVIDIA H100 80GB HBM3`)",
    'A packet with timing or profiler data MUST identify the device it ran on: vendor and model name (not "GPU", "unknown", "cuda:0" or a vendor name alone such as "NVIDIA GPU").',
)
declare(
    "KE802",
    "warning",
    "the device is recorded",
    "record /hardware even for failed candidates",
    "Packets without timing SHOULD still say where they ran: failures can be device-specific.",
)
declare(
    "KE803",
    "warning",
    "clocks are recorded",
    "record /hardware/clocks: locked or not, and the clocks observed while measuring",
    "Packets that claim performance SHOULD record the clock state: whether clocks were locked, and the clocks observed during measurement.",
)
declare(
    "KE804",
    "warning",
    "serving packets describe the workload",
    "record /task/serving: model, engine and traffic",
    "A serving packet SHOULD carry `task.serving` (model, engine with version, traffic shape).",
)

_UNIDENTIFIED = frozenset(
    {"", "unknown", "n/a", "na", "none", "gpu", "cuda", "device", "accelerator", "tpu", "cpu", "?"}
)


def check(p: Any, ctx: Ctx, add: Add) -> None:
    h = p.hardware
    claim = ctx.claim
    # _hardware re-checks in full; this guard only skips it when it has nothing to say (the
    # common case)
    if (
        h is None
        or (h.vendor != "cpu" and _UNIDENTIFIED_CACHE.get(h.device) is not False and _unidentified(h.device))
        or (claim and (h.clocks is None or (h.clocks.locked is None and h.clocks.sm_observed is None)))
        or (p.subject.kind == "serving" and (p.task is None or p.task.serving is None))
    ):
        _hardware(p, p.timing, claim, add)


def _hardware(p: Any, t: Any, claim: bool, add: Add) -> None:
    h = p.hardware
    if h is None:
        ptr: str | None = "/hardware"
    elif h.vendor != "cpu" and _unidentified(h.device):
        ptr = "/hardware/device"
    else:
        ptr = None
    if ptr is not None:
        if t is not None or p.profiler:
            add(("KE801", ptr, "the device is not identified"))
        else:
            add(("KE802", ptr, "the device is not identified"))
    if claim and h is not None:
        c = h.clocks
        if c is None or (c.locked is None and c.sm_observed is None):
            add(("KE803", "/hardware/clocks", "clock state not recorded"))
    if p.subject.kind == "serving" and (p.task is None or p.task.serving is None):
        add(("KE804", "/task/serving", "serving packet without a serving task description"))


_UNIDENTIFIED_CACHE: dict[str, bool] = {}


def _unidentified(device: str) -> bool:
    """True for a device name that names no device (``gpu``, ``unknown``, blank...)."""
    hit = _UNIDENTIFIED_CACHE.get(device)
    if hit is None:
        hit = _names_no_model(device)
        if len(_UNIDENTIFIED_CACHE) < 4096 and len(device) <= _CACHED_CHARS:
            _UNIDENTIFIED_CACHE[device] = hit
    return hit


_VENDOR_WORDS = frozenset(
    {"nvidia", "amd", "ati", "google", "intel", "apple", "aws", "amazon", "huawei", "generic"}
)
_GENERIC_WORDS = _UNIDENTIFIED | {"npu", "xpu", "hpu", "mps", "gpus", "tpus", "unknown"}
_WORD = re.compile(r"[a-z0-9]+")


def _names_no_model(device: str) -> bool:
    """A name made only of vendor names, generic words (gpu, device...) and indices:
    ``gpu``, ``NVIDIA GPU``, ``Google TPU``, ``cuda:0``, ``GPU 0``, blank."""
    d = device.strip().casefold()
    if d in _UNIDENTIFIED:
        return True
    words = _WORD.findall(d)
    return all(w in _VENDOR_WORDS or w in _GENERIC_WORDS or w.isdigit() for w in words)
