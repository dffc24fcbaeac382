"""What the audit checks in one packet, beyond the rules: the speedup recomputed from the
raw timings, the physical floor, lenient or unrecorded tolerances, a flagged reward hack.

Works on the decoded packet struct (:class:`kernel_evidence._codec.structs.PacketStruct`)
the rules see, and returns the reasons plus the few facts the checks across packets need
(:class:`Facts`): a set of 100,000 packets keeps 100,000 small records, not the packets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..devices import device as _device_entry
from ..rules._tables import device_peaks, dtype_class, peak_flops_for
from ..rules._units import FACTOR
from ..rules.physics import _derived_flops, _op_kind
from ._model import Level, Reason

__all__ = ["Facts", "RULE_LEVELS", "inspect_packet", "rule_level"]

#: rule errors that say the result cannot be true as stated
_CRITICAL = frozenset({
    "KE004", "KE301", "KE303", "KE412", "KE601", "KE602", "KE605", "KE607", "KE1005", "KE1101",
    "KE1102", "KE1201",
})  # fmt: skip
#: rule errors that say the result should not be believed as it stands
_HIGH = frozenset({
    "KE207", "KE208", "KE401", "KE404", "KE405", "KE406", "KE407", "KE409", "KE411", "KE503",
    "KE505", "KE506", "KE507", "KE606", "KE701", "KE806", "KE1001", "KE1004", "KE1006",
})  # fmt: skip
#: rule errors that are gaps in the evidence (a missing replay command, an unnamed device):
#: nothing contradicts the number, it just cannot be checked
_GAPS = frozenset({"KE101", "KE102", "KE201", "KE202", "KE203", "KE302", "KE604", "KE801", "KE802"})

#: rule id -> audit level, for the rules the sets above name (others: error -> medium,
#: warning -> low, info -> not a reason)
RULE_LEVELS: dict[str, Level] = {
    **dict.fromkeys(_CRITICAL, "critical"),
    **dict.fromkeys(_HIGH, "high"),
    **dict.fromkeys(_GAPS, "low"),
}

#: relative disagreement allowed between a claimed and a recomputed speedup when the claim
#: states no tolerance of its own (rounding of the printed figures)
SPEEDUP_TOLERANCE = 0.02
#: a time this much below the speed-of-light time is reported (the peak figures are dense
#: datasheet peaks; 5% covers boost clocks above the datasheet's)
FLOOR_SLACK = 0.05
#: bytes per element of a dtype class
_ELEMENT_BYTES = {
    "fp64": 8.0, "fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0,
    "fp6": 0.75, "fp4": 0.5,
}  # fmt: skip


def rule_level(rule_id: str, severity: str) -> Level | None:
    """The audit level of a rule finding (None for an ``info``)."""
    hit = RULE_LEVELS.get(rule_id)
    if hit is not None:
        return hit
    if severity == "error":
        return "medium"
    if severity == "warning":
        return "low"
    return None


@dataclass(slots=True)
class Facts:
    """What the checks across packets need to know of one packet."""

    packet_id: str | None
    subject: str | None
    candidate: str | None
    model: str | None
    submitter: str | None
    device: str | None
    status: str
    shape_id: str | None
    #: the input the packet ran on: workload, shape id, dims and seeds (outputs that are the
    #: same for two different inputs are suspect)
    input_key: tuple[Any, ...] | None
    outputs: tuple[str, ...]
    run_id: str | None
    parent: str | None
    iteration: int | None
    claimed: float | None
    recomputed: float | None
    #: the candidate's typical time in seconds (median, else mean)
    seconds: float | None
    #: a run on held-back inputs (a leaderboard's secret seed), as an extension says
    secret: bool | None = None


def _value(x: Any) -> Any:
    return getattr(x, "_value_", x)


def _seconds(stats: Any, basis: str | None) -> float | None:
    if stats is None:
        return None
    if basis in ("median", "mean", "min"):
        v = getattr(stats, basis)
    else:
        v = stats.median if stats.median is not None else stats.mean
    if v is None:
        return None
    f = FACTOR.get(stats.unit)
    return v * f if f is not None else None


def _recompute(t: Any) -> tuple[float | None, str | None]:
    """The speedup the raw timings give (baseline / candidate on the claim's basis, else
    the median, else the mean), and the basis used."""
    b = t.baseline
    if t.stats is None or b is None or b.stats is None:
        return None, None
    sp = t.speedup
    basis = _value(sp.basis) if sp is not None and sp.basis is not None else None
    if basis not in (None, "median", "mean", "min"):
        return None, None  # a throughput claim: serving rules check it
    if basis is None:
        for name in ("median", "mean", "min"):
            if getattr(t.stats, name) is not None and getattr(b.stats, name) is not None:
                basis = name
                break
        else:
            return None, None
    cand = _seconds(t.stats, basis)
    base = _seconds(b.stats, basis)
    if cand is None or base is None or cand <= 0 or not math.isfinite(cand) or not math.isfinite(base):
        return None, basis
    return base / cand, basis


def _extension_text(p: Any, keys: tuple[str, ...]) -> str | None:
    ext = p.extensions
    if not ext:
        return None
    for body in ext.values():
        if isinstance(body, dict):
            for k in keys:
                v = body.get(k)
                if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v):
                    return str(v)
    return None


def _model_of(p: Any) -> str | None:
    got = _extension_text(p, ("model", "llm", "generator"))
    if got is not None:
        return got
    pr = p.producer
    if pr is not None and pr.name != "kernel-evidence":
        return f"{pr.name} {pr.version}"
    return None


def _outputs(p: Any) -> tuple[str, ...]:
    found: list[str] = []
    for group in (
        p.compile.artifacts if p.compile is not None else None,
        p.replay.inputs if p.replay else None,
    ):
        for a in group or ():
            if _value(a.kind) == "output" and a.sha256:
                found.append(a.sha256)
    digest = _extension_text(p, ("output_sha256", "output_digest"))
    if digest is not None:
        found.append(digest)
    return tuple(dict.fromkeys(found))


def _input_key(p: Any, shape_id: str | None) -> tuple[Any, ...] | None:
    task = p.task
    dims: tuple[Any, ...] = ()
    if task is not None and task.shapes:
        for sh in task.shapes:
            if shape_id is None or sh.id == shape_id:
                dims = tuple(sorted((sh.dims or {}).items()))
                break
    seeds = tuple(p.validation.seeds) if p.validation is not None and p.validation.seeds else ()
    workload = (task.workload or task.operator) if task is not None else None
    if shape_id is None and not dims and not seeds:
        return None
    return (workload or p.subject.name, shape_id, dims, seeds)


def inspect_packet(p: Any, rule_ids: frozenset[str]) -> tuple[list[Reason], Facts]:
    """The audit's own reasons for packet ``p`` (beyond the rule findings, whose ids are
    ``rule_ids``: a check a rule already made is not repeated) and its :class:`Facts`."""
    reasons: list[Reason] = []
    status = str(_value(p.status))
    t = p.timing
    claimed = recomputed = seconds = None
    shape_id = None
    if t is not None:
        shape_id = t.shape_id
        seconds = _seconds(t.stats, None)
        recomputed, basis = _recompute(t)
        if t.speedup is not None:
            claimed = float(t.speedup.value)
            _check_claim(t, claimed, recomputed, basis, rule_ids, reasons)
        if seconds is not None and not rule_ids & {"KE601", "KE602"}:
            _check_floor(p, t, reasons)
    f = p.failure
    if f is not None and str(_value(f.failure_class)) == "reward_hack":
        reasons.append(
            Reason("AU101", "critical", "the harness flagged this run as a reward hack", "/failure")
        )
    if p.validation is not None and p.validation.shapes:
        _check_tolerance(p, rule_ids, reasons)
    lin = p.lineage
    h = p.hardware
    facts = Facts(
        packet_id=p.packet_id,
        subject=p.subject.name,
        candidate=(lin.candidate_id if lin is not None else None) or p.subject.name,
        model=_model_of(p),
        submitter=_extension_text(p, ("submitter", "user", "author", "user_name")),
        device=(h.device or h.device_id) if h is not None else None,
        status=status,
        shape_id=shape_id,
        input_key=_input_key(p, shape_id),
        outputs=_outputs(p),
        run_id=lin.run_id if lin is not None else None,
        parent=lin.parent_packet_id if lin is not None else None,
        iteration=lin.iteration if lin is not None else None,
        claimed=claimed,
        recomputed=recomputed,
        seconds=seconds,
        secret=_extension_flag(p, "secret"),
    )
    return reasons, facts


def _extension_flag(p: Any, key: str) -> bool | None:
    for body in (p.extensions or {}).values():
        if isinstance(body, dict) and isinstance(body.get(key), bool):
            return bool(body[key])
    return None


def _check_claim(
    t: Any,
    claimed: float,
    recomputed: float | None,
    basis: str | None,
    rule_ids: frozenset[str],
    out: list[Reason],
) -> None:
    if recomputed is None or "KE301" in rule_ids or recomputed <= 0:
        return
    tol = t.speedup.tolerance if t.speedup.tolerance is not None else SPEEDUP_TOLERANCE
    if abs(claimed - recomputed) > tol * recomputed:
        out.append(
            Reason(
                "AU201",
                "critical",
                f"claims {claimed:.4g}x; its own timings give {recomputed:.4g}x (baseline / candidate {basis})",
                "/timing/speedup/value",
            )
        )


def _work(p: Any, t: Any) -> tuple[float | None, float | None, bool]:
    """(FLOPs, bytes, derived) of the timed call: stated work (the timed shape's, else the
    task's), else FLOPs from the operator and the shape's dims and bytes from its tensors."""
    task = p.task
    if task is None:
        return None, None, False
    shape = None
    if task.shapes:
        for sh in task.shapes:
            if sh.id == t.shape_id or (t.shape_id is None and len(task.shapes) == 1):
                shape = sh
                break
    w = shape.work if shape is not None and shape.work is not None else task.work
    flops = bytes_ = None
    if w is not None:
        if w.flops is not None:
            flops = w.flops.value * FACTOR.get(w.flops.unit, math.nan)
        if w.bytes is not None:
            bytes_ = w.bytes.value * FACTOR.get(w.bytes.unit, math.nan)
    if flops is not None or bytes_ is not None or shape is None:
        return flops, bytes_, False
    kind = _op_kind(task.operator) if task.operator and len(task.operator) <= 200 else None
    rng = _derived_flops(kind, shape) if kind is not None else None
    flops = rng[0] if rng is not None else None
    if shape.tensors:
        total = 0.0
        for ts in shape.tensors:
            size = _ELEMENT_BYTES.get(dtype_class(ts.dtype) or "")
            if size is None:
                total = 0.0
                break
            total += size * math.prod(ts.shape)
        bytes_ = total or None
    return flops, bytes_, True


def _peaks(h: Any) -> tuple[Any, float | None]:
    """The device's peaks and last-level cache size (bytes), from the table."""
    if h is None:
        return None, None
    entry = _device_entry(h.device_id) if h.device_id else None
    peaks = device_peaks(h.device_id) if entry is not None else device_peaks(h.device, h.arch)
    llc = entry.last_level_cache_bytes if entry is not None else None
    return peaks, llc


def _check_floor(p: Any, t: Any, out: list[Reason]) -> None:
    """AU301: the candidate's fastest reported time below its speed-of-light time."""
    flops, bytes_, derived = _work(p, t)
    if flops is None and bytes_ is None:
        return
    peaks, llc = _peaks(p.hardware)
    if peaks is None:
        return
    st = t.stats
    fastest = next((getattr(st, n) for n in ("min", "median", "mean") if getattr(st, n) is not None), None)
    if fastest is None:
        return
    sec = fastest * FACTOR.get(st.unit, math.nan)
    count = p.hardware.count if getattr(p.hardware, "count", None) else 1
    dtypes = tuple(p.task.dtypes if p.task is not None and p.task.dtypes else ())
    floor_f = flops / (peak_flops_for(peaks, dtypes) * count) if flops else 0.0
    floor_b = 0.0
    if bytes_:
        cache = _value(t.cache_policy) if t.cache_policy is not None else None
        dram = bytes_ if cache in ("flushed", "cold_start") else max(0.0, bytes_ - (llc or bytes_))
        floor_b = dram / (peaks.bandwidth * count)
    floor = max(floor_f, floor_b)
    if floor <= 0 or not math.isfinite(sec) or sec >= floor * (1 - FLOOR_SLACK):
        return
    what = "FLOPs" if floor_f >= floor_b else "bytes beyond the last-level cache"
    source = "derived from the shape" if derived else "stated"
    out.append(
        Reason(
            "AU301",
            "critical",
            f"{_ms(sec)} is below the {_ms(floor)} speed-of-light time of its {what} ({source}) on "
            f"{peaks.key}: {floor / sec:.3g}x faster than the device allows",
            "/timing/stats",
        )
    )


def _ms(sec: float) -> str:
    if sec >= 1e-3:
        return f"{sec * 1e3:.4g} ms"
    if sec >= 1e-6:
        return f"{sec * 1e6:.4g} us"
    return f"{sec * 1e9:.4g} ns"


def _check_tolerance(p: Any, rule_ids: frozenset[str], out: list[Reason]) -> None:
    """AU401: a tolerance so wide that a wrong output passes; AU402: a pass under a tolerance
    nobody recorded (medium when its error is large)."""
    tol = p.task.tolerance if p.task is not None else None
    for i, s in enumerate(p.validation.shapes):
        if not s.passed:
            continue
        atol = s.atol if s.atol is not None else (tol.atol if tol is not None else None)
        rtol = s.rtol if s.rtol is not None else (tol.rtol if tol is not None else None)
        ratio = s.required_matched_ratio
        if ratio is None and tol is not None:
            ratio = tol.required_matched_ratio
        ptr = f"/validation/shapes/{i}"
        if "KE701" not in rule_ids and rtol is not None and rtol >= 0.5:
            out.append(
                Reason(
                    "AU401",
                    "high",
                    f"shape `{s.shape_id}` passed under rtol {rtol:g}: an output off by half passes",
                    ptr,
                )
            )
        elif ratio is not None and ratio < 0.5:
            out.append(
                Reason(
                    "AU401", "high",
                    f"shape `{s.shape_id}` passed needing only {ratio:.0%} of its elements to match", ptr,
                )
            )  # fmt: skip
        elif atol is None and rtol is None:
            rel = s.max_rel_error
            if rel is not None and rel >= 0.1:
                out.append(
                    Reason(
                        "AU402", "medium",
                        f"shape `{s.shape_id}` passed with a {rel:.3g} relative error under a tolerance "
                        "the packet does not record", ptr,
                    )
                )  # fmt: skip
            else:
                out.append(
                    Reason(
                        "AU402",
                        "low",
                        f"shape `{s.shape_id}` passed under a tolerance the packet does not record",
                        ptr,
                    )
                )
