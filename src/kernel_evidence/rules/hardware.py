"""KE8xx: the device is identified and its state recorded."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from ..devices import (
    _mig,
    _name_candidates,
    all_devices,
    arch_agrees,
    architecture,
    device,
    memory_agrees,
    units_agree,
)
from ._common import CACHED_CHARS as _CACHED_CHARS
from ._common import lazy_re
from ._context import Add, Ctx
from ._engine import declare
from ._units import FACTOR as _FACTOR

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
    "Packets that claim performance SHOULD record the clock state: whether clocks were locked, and the clocks observed during measurement. "
    "A claim's `clock_policy` of `locked` (`timing.clock_policy`, or either side's conditions) SHOULD be backed by "
    "`hardware.clocks.locked: true` where `hardware.clocks` is recorded: a lock the clock record does not show is the producer's word "
    "(at the first `clock_policy` that says locked).",
)
declare(
    "KE804",
    "warning",
    "serving packets describe the workload",
    "record /task/serving: model, engine and traffic",
    "A serving packet SHOULD carry `task.serving` (model, engine with version, traffic shape).",
)

declare(
    "KE805",
    "error",
    "the device count is the devices that ran",
    "record in /hardware/count (and conditions.device_count) the devices the timed work used",
    "`hardware.count` (and the candidate's `timing.conditions.device_count`) MUST NOT exceed the "
    "devices the packet shows ran: the devices a replay exposes (`CUDA_VISIBLE_DEVICES`, "
    "`HIP_VISIBLE_DEVICES`, `ROCR_VISIBLE_DEVICES` in `replay.env`; for a TPU, "
    "`TPU_VISIBLE_CHIPS` or `TPU_CHIPS_PER_PROCESS_BOUNDS` times `TPU_PROCESS_BOUNDS`; per host, "
    "times the hosts a launcher names: `NNODES`, `SLURM_NNODES`, `TPU_WORKER_HOSTNAMES`), else the "
    "distinct devices of a capture of the candidate whose kernel records all name their device "
    "(only where the replay lists no visible devices: a run profiled on one rank shows one), or "
    "a serving run's "
    "`tensor_parallel_size` x `pipeline_parallel_size` x `data_parallel_size` (the last from "
    "`task.serving.settings`, when recorded). A serving run's tensor x pipeline parallel size "
    "(the pipeline size the largest of `pipeline_parallel_size` and the settings' "
    "`pipeline_parallel_size`/`pp_size` or the replay command's `--pipeline-parallel-size`/`-pp`/"
    "`--pp-size`), "
    "times its data-parallel replicas where `task.serving.settings` records them "
    "(`data_parallel_size`, `data-parallel-size`, `dp_size`; not under SGLang, whose dp "
    "attention splits the tensor-parallel group; or the replay command's `--data-parallel-size`/"
    "`-dp`/`--dp-size`, not under SGLang), and at least the nodes it spans (settings `nnodes`, the "
    "command's `--nnodes`), MUST NOT exceed `hardware.count`, nor the candidate's "
    "`conditions.device_count` (at `/timing/conditions/device_count`), and "
    "`conditions.device_count` MUST NOT exceed `hardware.count` either. From below, the candidate's "
    "`conditions.device_count` (else the flat `timing.device_count`), where given, MUST be at "
    "least the distinct `device` values of a candidate capture's kernel records (those of its "
    "`of.expected_kernels`, when it names them), and at least the processes a launcher in "
    "`replay.command` starts (`torchrun`/`torch.distributed.run --nproc_per_node`, "
    "`mpirun`/`mpiexec -np`/`-n`, `srun -n`/`--ntasks`, `accelerate launch --num_processes`), "
    "each on its own device, up to the devices the replay exposes and `hardware.count`.",
)
declare(
    "KE808",
    "warning",
    "the candidate's device count covers the devices the run exposed",
    "record in conditions.device_count the devices the candidate's timed work used, and expose only those (`CUDA_VISIBLE_DEVICES=3`)",
    "Where `hardware.count` and the devices the replay exposes (`CUDA_VISIBLE_DEVICES`, "
    "`HIP_VISIBLE_DEVICES`, `ROCR_VISIBLE_DEVICES`, `TPU_VISIBLE_CHIPS`, as KE805 reads them) "
    "both exceed the candidate's `conditions.device_count`, the candidate SHOULD NOT be "
    "compared per device: it may have used every device it could see against a baseline on "
    "the count the conditions state. Graded C at best.",
    caps="C",
)
declare(
    "KE806",
    "error",
    "the device name agrees with its arch, SM/CU count and memory",
    "record the name the tool reported for the device that ran, with its own arch, SM/CU count and memory",
    "Where the device table knows the models a `hardware.device` name can be (`kevidence rules "
    "--peaks`, docs/peaks.md), `hardware.arch`, `hardware.compute_units` (the whole device, one "
    "of its partition sizes, the whole split `hardware.partitions` ways, or fewer on a MIG "
    "slice) and `hardware.memory` (at most the marketed size read as GiB + 5%, at least 85% of "
    "it, or of its share when split `partitions` ways, read as GB; a CU count that is one of "
    "the table's partition sizes counts as split that way) MUST fit at least one of "
    "them; a `hardware.device_id` MUST be an id of the table, one of those models, and fit the "
    "same facts. Where the facts together fit another model of the table, the finding points at "
    "the name (`hardware.device`, or `hardware.device_id` when given), which the peaks are "
    "read from; otherwise at the fact that no model of the name has. A passed packet's "
    "`compile.target_arch` MUST be able to run on the device (its `hardware.arch`, else the "
    "arch of the models its name can be): an arch-specific target (`sm_90a`) runs only on that "
    "arch, a family target (`sm_100f`) on that major version, a plain `sm_NN`/`compute_NN` on "
    "NN or newer, an AMD `gfxNNN` (feature suffixes aside) only on itself; one runnable target "
    "of several suffices (the finding points at `hardware.device`; a name the table does not "
    "know is not judged). A profiler capture's own device name "
    "(ncu's `device__attribute_display_name`) MUST NOT name a model of another arch than "
    "`hardware.device` (the finding points at `hardware.device`). A claim's `hardware.clocks.memory_observed` "
    "MUST NOT be, where every model the name can be has a known memory clock (H100 SXM 2619 MHz, "
    "H200 3201 MHz), more than 10% off each of them and within 3% of the memory clock of another "
    "model of the same arch and SM count (an H100's HBM3 under an H200's name; the finding points "
    "at `hardware.device`, or `hardware.device_id` when given). A `hardware.device` the "
    "table does not know MUST NOT be a table name spelled with look-alike characters (Cyrillic "
    "or Greek letters, fullwidth or mathematical forms, invisible characters: `NVIDIA Н100` "
    "with a Cyrillic En), which hide it from the peak table (at `hardware.device`). A CPU "
    "(vendor `cpu`, or an x86/Arm/POWER/RISC-V arch) whose name states one core count "
    "(`96-Core`, `64 cores`; not a GPU's or NPU's cores) MUST NOT record more "
    "`hardware.compute_units` than those cores times `hardware.count` (sockets): SMT threads "
    "are not cores (at `hardware.compute_units`).",
)

declare(
    "KE807",
    "error",
    "locked clocks ran at the clock they were locked to",
    "record `hardware.clocks.locked: false` when the clocks boosted, or lock them (`nvidia-smi -lgc`) and record the clock observed while measuring",
    "Where `hardware.clocks.locked` is true and both `sm_requested` and `sm_observed` are "
    "given, `sm_observed` MUST NOT exceed `sm_requested` by more than 5%: a locked clock does "
    "not boost above the lock, so the clocks were not locked (or the observation is of "
    "another run). Nor MAY a packet that claims a speedup, or records its clocks locked, "
    "record an `sm_observed` below 20 MHz or above 10 GHz (0, or a "
    "MHz figure written in Hz): no device measures work at such a clock, so the record shows "
    "nothing (at `hardware.clocks.sm_observed`).",
)

#: how far an observed SM clock may sit above the one it was locked to (reporting rounding)
_LOCK_SLACK = 1.05

_UNIDENTIFIED = frozenset(
    {"", "unknown", "n/a", "na", "none", "gpu", "cuda", "device", "accelerator", "tpu", "cpu", "?"}
)


def check(p: Any, ctx: Ctx, add: Add) -> None:
    h = p.hardware
    claim = ctx.claim
    if h is not None:
        if len(h.device) <= _CACHED_CHARS:
            _identity(h, add)
            comp = p.compile
            if comp is not None and comp.target_arch is not None and ctx.status == "passed":
                _target_arch(h, comp, add)
            if p.profiler:
                _capture_device(p, h, add)
            if h.compute_units is not None and ("ore" in h.device or "ORE" in h.device):
                _cpu_cores(h, add)
        _device_count(p, h, add)
        c = h.clocks
        if c is not None:
            locked = c.locked
            # a claim's clock record, and a lock's (read below anyway)
            so = c.sm_observed if claim or locked is True else None
            if so is not None:
                if so.unit != "MHz" or not 20.0 <= so.value <= 10000.0:  # MHz in range: the common case
                    hz = so.value * _FACTOR[so.unit]
                    if not _FEWEST_HZ <= hz <= _MOST_HZ:
                        _implausible_clock(so, hz, add)
                        so = None
                if so is not None and locked is True and c.sm_requested is not None:
                    _locked_clocks(c, add)
            mo = c.memory_observed if claim else None
            if mo is not None:
                named = _MEMORY_NAMED.get(h.device_id or h.device)
                if named is None:
                    named = _memory_named(h)
                if named:
                    v = mo.value if mo.unit == "MHz" else mo.value * _FACTOR[mo.unit] / 1e6
                    for m in named:
                        if abs(v - m) <= 0.1 * m:
                            break  # a named model's own clock: the common case
                    else:
                        _memory_clock(h, mo, named, add)
            if locked is not True and claim:
                t = p.timing
                # no policy on timing, its conditions or the baseline's: none says locked (the
                # common case; _policy_locked would find nothing)
                if t.clock_policy is not None or t.conditions is not None or _baseline_conditions(t):
                    ptr = _policy_locked(t)
                    if ptr is not None:
                        _policy_finding(ptr, locked, add)
    # _hardware re-checks in full; this guard only skips it when it has nothing to say (the
    # common case)
    if (
        h is None
        or (h.vendor != "cpu" and _UNIDENTIFIED_CACHE.get(h.device) is not False and _unidentified(h.device))
        or (claim and (h.clocks is None or (h.clocks.locked is None and h.clocks.sm_observed is None)))
        or (p.subject.kind == "serving" and (p.task is None or p.task.serving is None))
    ):
        _hardware(p, p.timing, claim, add)


#: the SM clocks any device measuring work can run at: below 20 MHz (a clock written in Hz
#: under a MHz figure, or 0) or above 10 GHz (the overclocking record is under that) the record
#: is of no clock
_FEWEST_HZ = 20e6
_MOST_HZ = 10e9


def _implausible_clock(so: Any, hz: float, add: Add) -> None:
    """KE807: an observed SM clock no device runs work at (0, 1755 Hz, 50 GHz)."""
    add(
        (
            "KE807",
            "/hardware/clocks/sm_observed",
            f"sm_observed {so.value:g} {so.unit} ({hz / 1e6:.4g} MHz) is no clock a device measures at "
            f"(20 MHz to 10 GHz): the clock record proves nothing",
        )
    )


def _baseline_conditions(t: Any) -> bool:
    b = t.baseline
    return b is not None and b.conditions is not None


def _policy_locked(t: Any) -> str | None:
    """Where a clock_policy says `locked`: timing's, else the candidate's conditions', else
    (where neither says a policy) the baseline's conditions'; None where none says so."""
    cp = t.clock_policy
    if cp == "locked":
        return "/timing/clock_policy"
    cond = t.conditions
    ccp = cond.clock_policy if cond is not None else None
    if ccp == "locked":
        return "/timing/conditions/clock_policy"
    if cp is None and ccp is None:
        b = t.baseline
        bc = b.conditions if b is not None else None
        if bc is not None and bc.clock_policy == "locked":
            return "/timing/baseline/conditions/clock_policy"
    return None


def _policy_finding(ptr: str, locked: Any, add: Add) -> None:
    """KE803: a clock_policy `locked` where `hardware.clocks.locked` is not true: the lock is
    not in the clock record."""
    said = "not recorded" if locked is None else "false"
    add(
        (
            "KE803",
            ptr,
            f"clock_policy is locked, but hardware.clocks.locked is {said}: a lock is recorded as "
            "hardware.clocks.locked true (with the clock it was locked to)",
        )
    )


#: the memory clock (MHz, as nvidia-smi and ncu report it) of table models that share their
#: arch and SM count with a sibling told apart by the memory only (HBM3 vs HBM3e)
_MEMORY_MHZ = {
    "nvidia-h100-sxm5-80gb": 2619.0,
    "nvidia-h200-sxm-141gb": 3201.0,
    "nvidia-h200-nvl-141gb": 3201.0,
}
#: by device_id (else device name): the memory clocks of the models it can be, when every one
#: has a known clock (else empty: not judged)
_MEMORY_NAMED: dict[str, tuple[float, ...]] = {}
#: KE806 (memory clock) by (device, device_id, value, unit): the finding, or None
_MEMCLOCK_CACHE: dict[tuple[Any, ...], tuple[str, str, str] | None] = {}


def _memory_cands(h: Any) -> tuple[Any, ...]:
    did = h.device_id
    if did is not None:
        entry = device(did) if len(did) <= _CACHED_CHARS else None
        return (entry,) if entry is not None else ()
    return _name_candidates(h.device) if len(h.device) <= _CACHED_CHARS else ()


def _memory_named(h: Any) -> tuple[float, ...]:
    cands = _memory_cands(h)
    named = tuple(_MEMORY_MHZ.get(e.id, 0.0) for e in cands)
    if not named or 0.0 in named:
        named = ()
    key = h.device_id or h.device
    if len(_MEMORY_NAMED) < 1024 and len(key) <= _CACHED_CHARS:
        _MEMORY_NAMED[key] = named
    return named


def _memory_clock(h: Any, q: Any, named: tuple[float, ...], add: Add) -> None:
    """KE806: an observed memory clock that is a sibling model's, not the named one's (an
    H100's 2619 MHz HBM3 under an H200's name, whose HBM3e runs at 3201 MHz)."""
    mhz = q.value * _FACTOR[q.unit] / 1e6
    key = (h.device, h.device_id, q.value, q.unit)
    found = _MEMCLOCK_CACHE.get(key, _NOT_LOOKED)
    if found is _NOT_LOOKED:
        found = None
        if all(abs(mhz / m - 1) > 0.1 for m in named):
            cands = _memory_cands(h)
            for sib in all_devices():
                m = _MEMORY_MHZ.get(sib.id)
                if (
                    m is not None
                    and sib not in cands
                    and abs(mhz / m - 1) <= 0.03
                    and any(sib.arch == e.arch and sib.compute_units == e.compute_units for e in cands)
                ):
                    where = "/hardware/device_id" if h.device_id is not None else "/hardware/device"
                    have = "/".join(f"{x:g}" for x in named)
                    found = (
                        "KE806",
                        where,
                        f"`{h.device[:80]}` runs its memory at {have} MHz, but memory_observed is "
                        f"{q.value:g} {q.unit}: the memory clock of {sib.id}, a model of the same arch "
                        "and SM count (the name is what the peaks were read from)",
                    )
                    break
        if len(_MEMCLOCK_CACHE) < 1024 and len(h.device) + len(h.device_id or "") <= _CACHED_CHARS:
            _MEMCLOCK_CACHE[key] = found
    if found is not None:
        add(found)


def _locked_clocks(c: Any, add: Add) -> None:
    """KE807: clocks recorded locked whose observed SM clock is above the lock."""
    req = c.sm_requested.value * _FACTOR[c.sm_requested.unit]
    obs = c.sm_observed.value * _FACTOR[c.sm_observed.unit]
    if req > 0 and obs > req * _LOCK_SLACK:
        add(
            (
                "KE807",
                "/hardware/clocks/sm_observed",
                f"clocks recorded locked at sm_requested {c.sm_requested.value:g} {c.sm_requested.unit}, but "
                f"sm_observed is {c.sm_observed.value:g} {c.sm_observed.unit} ({obs / req:.3g}x): the clocks "
                f"were not locked",
            )
        )


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
_WORD = lazy_re(r"[a-z0-9]+")


def _names_no_model(device: str) -> bool:
    """A name made only of vendor names, generic words (gpu, device...) and indices:
    ``gpu``, ``NVIDIA GPU``, ``Google TPU``, ``cuda:0``, ``GPU 0``, blank."""
    d = device.strip().casefold()
    if d in _UNIDENTIFIED:
        return True
    words = _WORD.findall(d)
    return all(w in _VENDOR_WORDS or w in _GENERIC_WORDS or w.isdigit() for w in words)


# ---------------------------------------------------------------- KE805, KE806

#: KE806 by (device, device_id, arch, compute units, memory bytes, partitions): the findings
_IDENTITY_CACHE: dict[tuple[Any, ...], tuple[tuple[str, str, str], ...]] = {}


def _identity(h: Any, add: Add) -> None:
    m = h.memory
    key = (
        h.device,
        h.device_id,
        h.arch,
        h.compute_units,
        m.value if m else None,
        m.unit if m else None,
        h.partitions,
    )
    found = _IDENTITY_CACHE.get(key)
    if found is None:
        mem = m.value * _FACTOR[m.unit] if m is not None else None
        found = tuple(_identity_findings(h.device, h.device_id, h.arch, h.compute_units, mem, h.partitions))
        if len(_IDENTITY_CACHE) < 4096 and len(h.device_id or "") + len(h.arch or "") <= _CACHED_CHARS:
            _IDENTITY_CACHE[key] = found
    for f in found:
        add(f)


def _identity_findings(
    name: str,
    device_id: str | None,
    arch: str | None,
    units: int | None,
    mem: float | None,
    parts: int | None,
) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    cands = list(_name_candidates(name))
    if not cands and (not name.isascii() or _LETTER_DIGITS.search(name)):
        seen = _lookalike(name)
        if seen is not None:
            # `NVIDIA Н100` (a Cyrillic En) reads as an H100 to people while the table, and
            # every physics check on it, sees no device
            return [
                (
                    "KE806",
                    "/hardware/device",
                    f"`{name[:80]}` spells `{seen[:80]}` with look-alike characters "
                    f"({_odd_chars(name) or 'letters for digits'}): the device table, and the checks of "
                    "what it can do, do not see it",
                )
            ]
    if device_id is not None:
        entry = device(device_id)
        if entry is None:
            return [("KE806", "/hardware/device_id", f"device_id `{device_id}` is not in the device table")]
        if cands and entry not in cands:
            models = ", ".join(e.id for e in cands)
            out.append(
                ("KE806", "/hardware/device_id", f"device_id `{device_id}` is not `{name}` ({models})")
            )
        elif entry in cands or not cands:
            cands = [entry]  # the facts are checked against the model the id names
    if not cands:
        return out
    mig = _mig(name)
    what = f"`{name}`" if len(cands) > 1 else f"`{name}` ({cands[0].id})"
    facts: list[tuple[str, str, str]] = []
    if arch and not any(arch_agrees(e, arch) for e in cands):
        archs = "/".join(sorted({e.arch for e in cands}))
        facts.append(("KE806", "/hardware/arch", f"{what} is {archs}, not `{arch}`"))
    if units is not None and not any(units_agree(e, units, partitions=parts, mig=mig) for e in cands):
        have = "/".join(str(e.compute_units) for e in cands if e.compute_units)
        facts.append(("KE806", "/hardware/compute_units", f"{what} has {have} SMs/CUs, not {units}"))
    if mem is not None and not any(
        memory_agrees(e, mem, partitions=parts or _split(e, units), mig=mig) for e in cands
    ):
        have = "/".join(f"{m / 1e9:g}" for e in cands for m in e.memory_bytes)
        facts.append(
            ("KE806", "/hardware/memory", f"{what} has {have} GB of memory, not {mem / 2**30:.4g} GiB")
        )
    if facts:
        # facts that together fit another model of the table (an A100's sm_80 and 108 SMs
        # under an H100's name): the name is what lies, and what the peaks were read from
        fit = _fitting_models(arch, units, mem, parts, mig)
        if fit:
            where = "/hardware/device_id" if device_id is not None else "/hardware/device"
            said = "; ".join(f[2].removeprefix(what + " ") for f in facts)
            others = ", ".join(e.id for e in fit[:3]) + (" ..." if len(fit) > 3 else "")
            return [
                *out,
                ("KE806", where, f"{what} does not fit the device that ran ({said}); its facts fit {others}"),
            ]
    return out + facts


#: letters of other scripts that look like one Latin letter (Cyrillic, Greek), and
#: invisible characters (read as nothing)
_CONFUSABLE_MAP: dict[str, str | None] = {
    **dict(zip("АВЕКМНОРСТХУІЈЅԁԛԜԝҮүһаеорсухіјѕ", "ABEKMHOPCTXYIJSdqWwYyhaeopcyxijs", strict=True)),
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοιυνκρ", "ABEZHIKMNOPTYXoiuvkp", strict=True)),
    **dict.fromkeys("\u00ad\u200b\u200c\u200d\u2060\ufeff\u180e"),
}
_CONFUSABLE = str.maketrans(_CONFUSABLE_MAP)


def _fold_char(ch: str) -> str:
    """One character as the Latin letter or digit it looks like (NFKC of a fullwidth or
    mathematical letter), else itself (an accent, a kana, a trademark sign stay)."""
    if ch.isascii():
        return ch
    t = ch.translate(_CONFUSABLE)
    if t != ch:
        return t
    n = unicodedata.normalize("NFKC", ch)
    return n if len(n) == 1 and n.isascii() and n.isalnum() else ch


def _lookalike(name: str) -> str | None:
    """The table device name that ``name`` spells with look-alike characters (Cyrillic or
    Greek letters, fullwidth forms, invisible characters; the letters O, o, I and l among
    the digits of a model number: `H1OO`), or None."""
    folded = "".join(map(_fold_char, name))
    if folded != name and _name_candidates(folded):
        return folded
    digits = _LETTER_DIGITS.sub(_as_digits, folded)
    if digits != folded and _name_candidates(digits):
        return digits
    return None


#: a model number written with letters for digits: a word of a digit and O/o/I/l (`H1OO`)
_LETTER_DIGITS = lazy_re(r"\b[A-Za-z]{0,3}(?=[A-Za-z]{0,3}[0-9OoIl]*[0-9])[0-9OoIl]{2,}[A-Za-z]{0,3}\b")
_AS_DIGIT = str.maketrans({"O": "0", "o": "0", "I": "1", "l": "1"})


def _as_digits(m: Any) -> str:
    """The word with its look-alike letters read as digits, its letter prefix kept."""
    word: str = m.group(0)
    i = 0
    while i < len(word) and word[i].isalpha() and word[i] not in "OoIl":
        i += 1
    return word[:i] + word[i:].translate(_AS_DIGIT)


def _odd_chars(name: str) -> str:
    """The non-ASCII characters of a name that fold to ASCII, as code points."""
    odd = dict.fromkeys(ch for ch in name if not ch.isascii() and _fold_char(ch) != ch)
    return ", ".join(f"U+{ord(ch):04X}" for ch in list(odd)[:4])


#: a core count stated in a device name (`96-Core`, `64-core`, `16 Cores`) and what
#: follows it (a GPU's or an NPU's cores are not the CPU's)
_CORES = lazy_re(r"(?<![\w.])(\d{1,4})[\s-]?cores?\b(\s*[-/(]?\s*[a-z]+)?", re.IGNORECASE)
_NOT_CPU_CORES = frozenset({"gpu", "npu", "graphics", "neural", "tensor", "cuda", "rt", "xe", "compute"})
_CPU_ARCH = lazy_re(r"x86|amd64|aarch64|arm64|armv|ppc64|power|riscv|s390", re.IGNORECASE)
#: the core count a CPU's name states, by name (bounded)
_CORES_CACHE: dict[str, int | None] = {}


def _named_cores(name: str) -> int | None:
    """The one core count a name states (`AMD EPYC 9654 96-Core Processor`: 96); None where
    it states none, several, or the cores of a GPU or NPU (`38-core GPU`)."""
    hit: Any = _CORES_CACHE.get(name, _NOT_LOOKED)
    if hit is _NOT_LOOKED:
        counts: set[int] = set()
        hit = None
        for n, after in _CORES.findall(name):
            if after and after.strip(" -/(").casefold() in _NOT_CPU_CORES:
                counts = set()
                break
            counts.add(int(n))
        if len(counts) == 1:
            hit = counts.pop() or None
        if len(_CORES_CACHE) < 1024 and len(name) <= _CACHED_CHARS:
            _CORES_CACHE[name] = hit
    return hit if isinstance(hit, int) else None


def _cpu_cores(h: Any, add: Add) -> None:
    """KE806: a CPU whose name states its cores records no more compute units than those
    cores (times the sockets, `hardware.count`): SMT threads are not cores, and a CPU's peak
    is cores x clock x FLOP per cycle."""
    if not (h.vendor == "cpu" or (h.arch and len(h.arch) <= _CACHED_CHARS and _CPU_ARCH.search(h.arch))):
        return
    n = _named_cores(h.device)
    if n is None:
        return
    sockets = h.count if h.count and h.count > 1 else 1
    if h.compute_units > n * sockets:
        per = f" x {sockets} sockets" if sockets > 1 else ""
        add(
            (
                "KE806",
                "/hardware/compute_units",
                f"`{h.device[:80]}` names {n} cores{per}, not {h.compute_units} compute units: "
                "SMT threads are not cores (record several sockets in hardware.count)",
            )
        )


def _fitting_models(
    arch: str | None, units: int | None, mem: float | None, parts: int | None, mig: bool
) -> list[Any]:
    """The table's models that every given fact (arch, SM/CU count, memory) fits."""
    return [
        e
        for e in all_devices()
        if (not arch or arch_agrees(e, arch))
        and (units is None or units_agree(e, units, partitions=parts, mig=mig))
        and (mem is None or memory_agrees(e, mem, partitions=parts or _split(e, units), mig=mig))
    ]


def _split(e: Any, units: int | None) -> int | None:
    """How many ways a device is split when its SM/CU count is one of the table's partition
    sizes (an MI300X reporting 38 CUs is an eighth of one), None otherwise."""
    whole: int | None = e.compute_units
    if units and whole and units < whole and units in e.partition_units:
        return round(whole / units)
    return None


_VISIBLE = (
    "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS",
    "TPU_VISIBLE_DEVICES",
)  # fmt: skip


def _bounds(v: str | None) -> int | None:
    """The product of a TPU bounds variable (``TPU_CHIPS_PER_PROCESS_BOUNDS=2,2,1``: 4)."""
    if v is None:
        return None
    n = 1
    for x in v.split(","):
        x = x.strip()
        if not x.isdigit() or int(x) < 1:
            return None
        n *= int(x)
    return n


def _visible_devices(env: dict[str, str]) -> int | None:
    """How many devices a replay environment exposes (the fewest its variables allow). A TPU
    run's chips per process (``TPU_VISIBLE_CHIPS``, ``TPU_CHIPS_PER_PROCESS_BOUNDS``) count
    once per process of ``TPU_PROCESS_BOUNDS`` (a multi-host slice)."""
    n: int | None = None
    tpu: int | None = _bounds(env.get("TPU_CHIPS_PER_PROCESS_BOUNDS"))
    for var in _VISIBLE:
        v = env.get(var)
        if v is None:
            continue
        ids = [x for x in v.split(",") if x.strip()]
        if not ids or any(x.strip().casefold() in ("all", "none", "void") for x in ids):
            continue
        if var[0] == "T":
            tpu = len(ids) if tpu is None else min(tpu, len(ids))
        else:
            n = len(ids) if n is None else min(n, len(ids))
    if tpu is not None:
        tpu *= _bounds(env.get("TPU_PROCESS_BOUNDS")) or 1
        n = tpu if n is None else min(n, tpu)
    if n is not None:
        n *= _nodes(env)
    return n


#: how a launcher says how many hosts run the job (each with the visible devices)
_NODES = ("NNODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "PET_NNODES", "OMPI_MCA_orte_num_nodes")


def _nodes(env: dict[str, str]) -> int:
    """The hosts a replay's environment says run the job (1 unless a launcher says more):
    its visible devices are per host."""
    for var in _NODES:
        v = env.get(var, "").strip()
        if v.isdigit() and int(v) >= 1:
            return int(v)
    hosts = env.get("TPU_WORKER_HOSTNAMES")
    if hosts:
        return max(1, len([h for h in hosts.split(",") if h.strip()]))
    return 1


def _device_count(p: Any, h: Any, add: Add) -> None:
    t = p.timing
    cond = t.conditions if t is not None else None
    cc = cond.device_count if cond is not None else None
    count = h.count
    if t is not None:
        low = cc if cc is not None else getattr(t, "device_count", None)  # as cand() reads it
        # from below, a capture with more kernel records than low, or a hardware.count above
        # low (it caps the launcher's processes; KE808 needs it above), may say more: else
        # nothing does (the common case)
        if (
            isinstance(low, int)
            and low >= 1
            and (
                count is None
                or count > low
                or (p.profiler and any(len(cap.kernels or ()) > low for cap in p.profiler))
            )
        ):
            lowp = "/timing/conditions/device_count" if cc is not None else "/timing/device_count"
            _devices_below(p, h, low, lowp, add)
    if cc is None and (count is None or count == 1) and (p.task is None or p.task.serving is None):
        return  # one device, nothing that says otherwise (the common case)
    if cc is not None and count is not None and cc > count:
        add(("KE805", "/timing/conditions/device_count", f"device_count {cc} exceeds hardware.count {count}"))
    claimed = max(count or 1, cc or 1)
    if claimed > 1:
        ran, why = _devices_that_ran(p)
        if ran is not None and claimed > ran:
            ptr = "/hardware/count" if (count or 1) >= (cc or 1) else "/timing/conditions/device_count"
            add(("KE805", ptr, f"{claimed} devices claimed, but {why}"))
    task = p.task
    sv = task.serving if task is not None else None
    if sv is not None and (count is not None or cc is not None):
        cpp, cdp, nodes, inside = _command_sizes(p.replay)
        pp = max(sv.pipeline_parallel_size or 1, cpp)
        dp = None
        settings = sv.settings
        # settings with none of the parallel keys give no pipeline, nodes or data-parallel
        # size (the common case; _setting and _data_parallel_replicas would find none)
        if settings and not _SERVING_KEYS.isdisjoint(settings):
            if not _PARALLEL_KEYS.isdisjoint(settings):
                pp = max(pp, _setting(settings, _PP_KEYS))
                nodes = max(nodes, _setting(settings, _NNODES_KEYS))
            dp = _data_parallel_replicas(sv)
        need = (sv.tensor_parallel_size or 1) * pp
        if cdp > 1 and (dp is None or dp == 1) and not inside:
            engine = sv.engine
            if not (engine is not None and "sglang" in (engine.name or "").casefold()):
                dp = cdp
        what = "tensor x pipeline"
        if dp is not None and dp > 1:
            need *= dp
            what = "tensor x pipeline x data"
        if nodes > need:
            need, what = nodes, "nodes"
        if count is not None and need > count:
            add(
                (
                    "KE805",
                    "/hardware/count",
                    f"{what} parallel size {need} needs {need} devices, hardware.count is {count}"
                    if what != "nodes"
                    else f"the run spans {need} nodes, each with a device, hardware.count is {count}",
                )
            )
        elif cc is not None and need > cc:
            add(
                (
                    "KE805",
                    "/timing/conditions/device_count",
                    f"{what} parallel size {need} needs {need} devices, conditions.device_count is {cc}"
                    if what != "nodes"
                    else f"the run spans {need} nodes, each with a device, conditions.device_count is {cc}",
                )
            )


def _devices_below(p: Any, h: Any, cc: int, ptr: str, add: Add) -> None:
    """KE805 (from below), KE808: the candidate used more devices than its device_count."""
    for i, cap in enumerate(p.profiler or ()):
        of = cap.of
        ks = cap.kernels
        if of is None or of.side != "candidate" or not ks or len(ks) < cc + 1:
            continue
        d0 = ks[0].device
        if all(k.device == d0 for k in ks):
            continue  # one device (the common case)
        want = of.expected_kernels
        devs = {
            k.device
            for k in ks
            if k.device is not None and (not want or any(w in k.name or k.name in w for w in want))
        }
        if len(devs) > cc:
            shown = ", ".join(str(d) for d in sorted(devs)[:8])
            add(
                (
                    "KE805",
                    ptr,
                    f"device_count {cc}, but the candidate's capture /profiler/{i} shows its kernels on "
                    f"{len(devs)} devices ({shown})",
                )
            )
            return
    r = p.replay
    env = r.env if r is not None else None
    seen = _visible_devices(env) if env else None
    cmd = r.command if r is not None else None
    if cmd:
        line = " ".join(cmd) if isinstance(cmd, list) else str(cmd)
        if len(line) <= 4096 and any(w in line for w in _LAUNCHER_WORDS):
            n, how = _launched(line)
            if n is not None:
                # each process on its own device, as far as the devices it could see go
                for cap_n in (seen, h.count):
                    if cap_n is not None:
                        n = min(n, cap_n)
                if n > cc:
                    add(
                        (
                            "KE805",
                            ptr,
                            f"device_count {cc}, but the replay's {how} starts {n} processes, one per device",
                        )
                    )
                    return
    count = h.count
    if seen is not None and count is not None and seen > cc and count > cc:
        add(
            (
                "KE808",
                ptr,
                f"device_count {cc}, but hardware.count is {count} and the replay exposes {seen} devices: "
                "the candidate may have used them all",
            )
        )


_LAUNCHER_WORDS = ("torchrun", "torch.distributed", "mpirun", "mpiexec", "orterun", "srun", "accelerate")
#: a launcher's option giving its processes (per node for torchrun), by launcher
_PROC_OPTS = {
    "torchrun": ("--nproc_per_node", "--nproc-per-node"),
    "torch.distributed.run": ("--nproc_per_node", "--nproc-per-node"),
    "torch.distributed.launch": ("--nproc_per_node", "--nproc-per-node"),
    "mpirun": ("-np", "-n", "--np", "--n", "-c"),
    "mpiexec": ("-np", "-n", "--np", "--n", "-c"),
    "orterun": ("-np", "-n", "--np", "--n", "-c"),
    "srun": ("-n", "--ntasks"),
    "launch": ("--num_processes", "--num-processes"),  # accelerate launch
}


def _launched(line: str) -> tuple[int | None, str]:
    """The processes a launcher in a replay command starts (its own options, before the
    program it runs), and how it says so; (None, "") when none is named."""
    toks = line.split()
    for j, tok in enumerate(toks):
        name = tok.rsplit("/", 1)[-1]
        if name == "launch" and (j == 0 or toks[j - 1].rsplit("/", 1)[-1] != "accelerate"):
            continue
        opts = _PROC_OPTS.get(name)
        if opts is None:
            continue
        may_be_value = False  # a bare word right after the launcher is the program it runs
        for k in range(j + 1, len(toks)):
            x = toks[k]
            if not x.startswith("-"):
                if not may_be_value:
                    break  # the program: its options are not the launcher's
                may_be_value = False
                continue
            key, eq, val = x.partition("=")
            if key in opts:
                v = val if eq else (toks[k + 1] if k + 1 < len(toks) else "")
                if v.isdigit() and int(v) >= 1:
                    return int(v), f"`{name} {key} {v}`"
                return None, ""
            may_be_value = not eq
        return None, ""
    return None, ""


#: the settings that give a serving engine's data-parallel replicas, each of tensor x
#: pipeline parallel devices (vLLM's and SGLang's spellings)
_DP_KEYS = ("data_parallel_size", "data-parallel-size", "dp_size", "dp-size")
#: settings under which SGLang's data parallelism splits attention inside the tensor-parallel
#: group instead of adding replicas
_DP_INSIDE_TP = ("enable_dp_attention", "enable-dp-attention")


#: a serving run's pipeline-parallel size, data-parallel size and nodes, in its settings and
#: on a serving command line (vLLM's and SGLang's spellings)
_PP_KEYS = ("pipeline_parallel_size", "pipeline-parallel-size", "pp_size", "pp-size")
_PP_FLAGS = ("--pipeline-parallel-size", "-pp", "--pp-size", "--pp")
_DP_FLAGS = ("--data-parallel-size", "-dp", "--dp-size", "--dp")
_DP_INSIDE_TP_FLAGS = ("--enable-dp-attention", "--enable_dp_attention")
_NNODES_KEYS = ("nnodes", "num_nodes", "num-nodes")
_NNODES_FLAGS = ("--nnodes", "--num-nodes")
_PARALLEL_KEYS = frozenset(_PP_KEYS + _NNODES_KEYS)
_SERVING_KEYS = _PARALLEL_KEYS | frozenset(_DP_KEYS)


#: a replay command's (pipeline, data parallel size, nodes, dp attention) by the command (short
#: ones only)
_CMD_SIZES: dict[Any, tuple[int, int, int, bool]] = {}
_NO_SIZES = (1, 1, 1, False)


def _command_sizes(r: Any) -> tuple[int, int, int, bool]:
    """The pipeline-parallel size, data-parallel size and nodes a serving replay command
    names (``--flag N`` or ``--flag=N``; 1 where it names none), and whether it turns on
    SGLang's dp attention (its dp then splits the tensor-parallel group)."""
    cmd = r.command if r is not None else None
    if not cmd:
        return _NO_SIZES
    key = tuple(cmd) if isinstance(cmd, list) else cmd
    hit = _CMD_SIZES.get(key)
    if hit is None:
        line = " ".join(cmd) if isinstance(cmd, list) else str(cmd)
        if len(line) > 4096 or (
            "-pp" not in line and "-dp" not in line and "node" not in line and "parallel" not in line
        ):
            hit = _NO_SIZES
        else:
            toks = line.split()
            hit = (
                _flag(toks, _PP_FLAGS),
                _flag(toks, _DP_FLAGS),
                _flag(toks, _NNODES_FLAGS),
                any(f in line for f in _DP_INSIDE_TP_FLAGS),
            )
        if len(_CMD_SIZES) < 1024 and len(line) <= 4 * _CACHED_CHARS:
            _CMD_SIZES[key] = hit
    return hit


def _flag(toks: list[str], flags: tuple[str, ...]) -> int:
    """The largest positive integer given to one of ``flags`` (1 when none is)."""
    best = 1
    for j, tok in enumerate(toks):
        key, eq, val = tok.partition("=")
        if key in flags:
            v = val if eq else (toks[j + 1] if j + 1 < len(toks) else "")
            if v.isdigit() and int(v) > best:
                best = int(v)
    return best


def _setting(settings: Any, keys: tuple[str, ...]) -> int:
    """The largest positive integer a serving run's settings give under ``keys`` (1 when none)."""
    best = 1
    for k in keys:
        v = settings.get(k)
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v.strip())
        if isinstance(v, int) and not isinstance(v, bool) and v > best:
            best = v
    return best


def _data_parallel_replicas(sv: Any) -> int | None:
    """The data-parallel replicas a serving run's settings record, each on its own tensor x
    pipeline parallel devices: None when none is recorded, or when they may share the
    tensor-parallel group (SGLang's dp attention, or an SGLang engine that does not say)."""
    settings = sv.settings
    dp = None
    for k in _DP_KEYS:
        v = settings.get(k)
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v.strip())
        if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
            dp = v
            break
    if dp is None or dp == 1:
        return dp
    if any(settings.get(k) not in (None, False, 0, "0", "false", "False", "no") for k in _DP_INSIDE_TP):
        return None
    engine = sv.engine
    if engine is not None and "sglang" in (engine.name or "").casefold():
        return None  # its dp attention (replicas inside the tensor-parallel group) may be unrecorded
    return dp


def _data_parallel(sv: Any) -> int | None:
    settings = sv.settings
    if not settings:
        return None
    for k in ("data_parallel_size", "dp", "data_parallel", "dp_size"):
        v = settings.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
            return v
    return None


def _devices_that_ran(p: Any) -> tuple[int | None, str]:
    """The fewest devices the packet shows ran, and how it shows it (None: nothing says)."""
    best: int | None = None
    why = ""
    r = p.replay
    if r is not None and r.env:
        n = _visible_devices(r.env)
        if n is not None:
            best, why = n, f"the replay exposes {n}"
    # a capture counts only where the replay lists no visible devices: a multi-device run
    # is often profiled on one rank only, so its capture shows fewer devices than ran
    for i, cap in enumerate(p.profiler or () if best is None else ()):
        of = cap.of
        if of is None or of.side != "candidate" or not cap.kernels:
            continue
        devs = {k.device for k in cap.kernels}
        if None in devs:
            continue
        if best is None or len(devs) < best:
            best, why = len(devs), f"the candidate's capture /profiler/{i} shows {len(devs)}"
    task = p.task
    sv = task.serving if task is not None else None
    if sv is not None:
        dp = _data_parallel(sv)
        if dp is not None:
            n = (sv.tensor_parallel_size or 1) * (sv.pipeline_parallel_size or 1) * dp
            if best is None or n < best:
                best, why = n, f"the serving run's parallel sizes use {n}"
    return best, why


# ---------------------------------------------------------------- KE806: the binary and the capture

#: NVIDIA targets (``sm_90a``, ``compute_80``, ``lto_89``, ``sm_100f``) and AMD ones
#: (``gfx942``, ``gfx90a:xnack-``; not the generic ``gfx9-4-generic``)
_NV_TARGET = lazy_re(r"(?<![a-z0-9])(?:sm|compute|lto)_(\d{2,3})([af]?)(?![0-9a-z])")
_AMD_TARGET = lazy_re(r"(?<![a-z0-9])gfx([0-9a-f]{3,4})(?![0-9a-z_-])")
#: TORCH_CUDA_ARCH_LIST spellings (``8.0``, ``9.0a``, ``8.6+PTX``), as whole tokens only
_CC_TARGET = lazy_re(r"^(\d{1,2})\.(\d)([af]?)(?:\+ptx)?$")
_SPLIT = lazy_re(r"[\s,;]+")
#: KE806 (target) by (target_arch, device, arch): the finding's pointer and message, or None
_TARGET_CACHE: dict[tuple[str, str, str | None], tuple[str, str] | None] = {}


def _targets(target: str) -> list[tuple[str, Any, str]]:
    """The targets a ``compile.target_arch`` names: ``("nv", 90, "a")``, ``("amd", "942", "")``."""
    t = target.casefold()
    out: list[tuple[str, Any, str]] = [("nv", int(n), suf) for n, suf in _NV_TARGET.findall(t)]
    out += [("amd", g, "") for g in _AMD_TARGET.findall(t)]
    for tok in _SPLIT.split(t):
        m = _CC_TARGET.match(tok)
        if m:
            out.append(("nv", int(m.group(1)) * 10 + int(m.group(2)), m.group(3)))
    return out


def _device_archs(h: Any) -> tuple[set[tuple[str, Any]], bool]:
    """The archs the device can be (``("nv", 90)``, ``("amd", "942")``): its ``hardware.arch``
    when readable, and those of the models its name can be (where the two disagree, that is
    KE806's other finding, and the target is let through when it runs on either); and
    whether the table knows the name."""
    cands = _name_candidates(h.device)
    archs: set[tuple[str, Any]] = set()
    for spelling in (h.arch, architecture(h.arch) if h.arch else None):
        if spelling:
            got = {(v, n) for v, n, _ in _targets(spelling)}
            if len(got) == 1:
                archs |= got
                break
    for e in cands:
        archs |= {(v, n) for v, n, _ in _targets(e.arch)}
    return archs, bool(cands)


def _runs_on(target: tuple[str, Any, str], dev: tuple[str, Any]) -> bool:
    vendor, n, suf = target
    d = dev[1]
    if vendor == "amd":
        return bool(n == d)
    if suf == "a":
        return bool(d == n)  # arch-specific: that arch only
    if suf == "f":
        return bool(d // 10 == n // 10 and d >= n)  # family-specific: its major version
    return bool(d >= n)  # SASS for NN, or PTX that the driver compiles for newer archs


def _target_arch(h: Any, comp: Any, add: Add) -> None:
    target = comp.target_arch
    if comp.succeeded is False or len(target) > _CACHED_CHARS:
        return
    key = (target, h.device, h.arch)
    found = _TARGET_CACHE.get(key, _NOT_LOOKED)
    if found is _NOT_LOOKED:
        found = _target_finding(h, target)
        if len(_TARGET_CACHE) < 1024 and len(h.arch or "") <= _CACHED_CHARS:
            _TARGET_CACHE[key] = found
    if found is not None:
        add(("KE806", found[0], found[1]))


_NOT_LOOKED: Any = object()


def _target_finding(h: Any, target: str) -> tuple[str, str] | None:
    targets = _targets(target)
    if not targets:
        return None  # a TPU, a CPU, `native`: nothing to compare
    devs, known = _device_archs(h)
    if not known:
        return None  # a device the table does not know is not judged (as KE806's other facts)
    pairs = [(t, d) for t in targets for d in devs if t[0] == d[0]]
    if not pairs or any(_runs_on(t, d) for t, d in pairs):
        return None  # another vendor's target (not compared), or one that runs
    have = "/".join(sorted(f"sm_{n}" if v == "nv" else f"gfx{n}" for v, n in devs))
    return (
        "/hardware/device",
        f"compile.target_arch `{target[:80]}` cannot run on `{h.device[:80]}` ({have}): an "
        "arch-specific target (`sm_90a`) runs only on its arch, `sm_NN` on NN or newer, `gfxNNN` only on itself",
    )


_DISPLAY_NAME = "device__attribute_display_name"
#: KE806 (capture) by (capture's device name, hardware.device): the message, or None
_CAPTURE_CACHE: dict[tuple[str, str], str | None] = {}


def _capture_name(cap: Any) -> str | None:
    """The device name a capture itself recorded (ncu's display name), or None."""
    a = cap.attributes
    if a:
        v = a.get(_DISPLAY_NAME)
        if isinstance(v, str):
            return v
    for k in cap.kernels or ():
        raw = k.raw
        if raw:
            # the first record that keeps raw metrics (ncu keeps them per launch, the same
            # device attributes in each): no walk over a long capture
            m = raw.get(_DISPLAY_NAME)
            if m is not None and isinstance(m.value, str):
                return m.value
            break
    cols = cap.raw_columns
    if cols:
        col = cols.get(_DISPLAY_NAME)
        if col and isinstance(col[0], str):
            return col[0]
    return None


def _capture_device(p: Any, h: Any, add: Add) -> None:
    for cap in p.profiler:
        name = _capture_name(cap)
        if name is None or name == h.device or len(name) > _CACHED_CHARS:
            continue
        key = (name, h.device)
        msg = _CAPTURE_CACHE.get(key, _NOT_LOOKED)
        if msg is _NOT_LOOKED:
            msg = _capture_mismatch(name, h.device)
            if len(_CAPTURE_CACHE) < 1024:
                _CAPTURE_CACHE[key] = msg
        if msg is not None:
            add(("KE806", "/hardware/device", msg))
            return


def _capture_mismatch(name: str, dev: str) -> str | None:
    """Why a capture's device name cannot be ``hardware.device``: the models each can be
    share no arch (an H100's capture under an A100's name); None when they may agree."""
    seen = _name_candidates(name)
    said = _name_candidates(dev)
    if not seen or not said:
        return None
    if {e.arch for e in seen} & {e.arch for e in said}:
        return None
    return (
        f"`{dev[:80]}` ({'/'.join(sorted({e.arch for e in said}))}) is not the device its profiler "
        f"capture names: `{name[:80]}` ({'/'.join(sorted({e.arch for e in seen}))})"
    )
