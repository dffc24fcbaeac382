"""Numbers at the edges of float64 anywhere in a packet never crash what reads packets.

Valid generated packets get a few of their number fields replaced by zero, subnormals,
values near the float64 maximum or negatives. Whatever the validator says of the result,
nothing downstream may raise: the validator itself, the archive's row extraction (both the
struct path and the plain-JSON path), the comparison of two packets, the replay plan and
the one-line summaries. Every float they derive is finite or absent (never an infinity or
a NaN). Past bugs of this kind: a subnormal median crashed `archive`, a zero median crashed
`compare`.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from kernel_evidence import EvidencePacket, validate
from kernel_evidence._codec.decode import decode_one
from kernel_evidence.archive._rows import extract, extract_struct
from kernel_evidence.archive.writer import _peak_lookup
from kernel_evidence.harness.compare import compare_packets
from kernel_evidence.harness.environment import capture_environment
from kernel_evidence.harness.replay import plan_replay
from kernel_evidence.strategies import packets

HOSTILE = (
    0.0,
    -0.0,
    5e-324,  # the smallest subnormal
    2.2250738585072014e-308,  # the smallest normal
    1e-300,
    1e300,
    1.7976931348623157e308,  # the largest float64
    -1.0,
    float(2**63),
)


_HERE = capture_environment()


def _number_leaves(node: Any) -> list[tuple[Any, Any]]:
    """(container, key) of every number in a decoded JSON tree (booleans are not numbers)."""
    out: list[tuple[Any, Any]] = []
    stack = [node]
    while stack:
        cur = stack.pop()
        items = cur.items() if isinstance(cur, dict) else enumerate(cur) if isinstance(cur, list) else ()
        for key, value in items:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append((cur, key))
            elif isinstance(value, (dict, list)):
                stack.append(value)
    return out


def _finite_floats(values: Any) -> bool:
    return all(math.isfinite(v) for v in values if isinstance(v, float))


def _hostile(packet: EvidencePacket, data: st.DataObject) -> dict[str, Any]:
    d = packet.to_dict()
    d.pop("packet_id", None)
    leaves = _number_leaves(d)
    assume(leaves)
    for i in data.draw(st.lists(st.integers(0, len(leaves) - 1), min_size=1, max_size=4)):
        container, key = leaves[i]
        container[key] = data.draw(st.sampled_from(HOSTILE))
    return d


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packets(), packets(), st.data())
def test_numbers_at_the_edges_never_crash_readers(a: EvidencePacket, b: EvidencePacket, data: Any) -> None:
    d = _hostile(a, data)
    raw = msgspec.json.encode(d)
    report = validate(raw)  # the library path
    assert report.grade.letter in "ABCDF"
    peaks = _peak_lookup()
    row = extract(msgspec.json.decode(raw), peaks)  # the archive's plain-JSON path
    assert _finite_floats(row)
    one = decode_one(raw)
    if one is not None:  # structurally a packet: the archive's struct path agrees
        assert extract_struct(one[0], peaks) == row
    event(f"valid: {report.ok}")
    if not report.ok:
        return
    packet = EvidencePacket.model_validate(d)
    plan_replay(packet, _HERE)
    for x, y in ((packet, b), (b, packet), (packet, packet)):
        if any(p.timing is None or p.timing.stats is None for p in (x, y)):
            continue  # nothing to compare: a documented ValueError
        result = compare_packets(x, y, force=True, resamples=200)
        assert _finite_floats(
            [
                result.speedup,
                result.ci_low,
                result.ci_high,
                result.p_value,
                result.median_a_ns,
                result.median_b_ns,
            ]
        )
        assert "\n" not in result.summary()


_POSITIVE = [v for v in HOSTILE if v >= 0]


def _flatten_stats(stats: dict[str, Any] | None, value: float) -> None:
    """Every time of a stats block set to ``value``: consistent, so the packet stays valid."""
    if not stats:
        return
    for key in ("median", "mean", "min", "max", "ci_low", "ci_high"):
        if key in stats and stats[key] is not None:
            stats[key] = value
    if stats.get("std") is not None:
        stats["std"] = 0.0
    if stats.get("percentiles"):
        stats["percentiles"] = {k: value for k in stats["percentiles"]}
    if stats.get("samples"):
        stats["samples"] = [value] * len(stats["samples"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packets(), st.sampled_from(_POSITIVE), st.sampled_from(_POSITIVE), st.sampled_from(_POSITIVE))
def test_valid_packets_with_extreme_times_are_read_without_error(
    packet: EvidencePacket, mine: float, theirs: float, work: float
) -> None:
    """The same, with the times of the candidate and of its baseline, and the work, set to
    extreme values consistently: most of these packets stay valid, so the archive row, the
    comparison and the summaries see them."""
    d = packet.to_dict()
    d.pop("packet_id", None)
    timing = d.get("timing") or {}
    _flatten_stats(timing.get("stats"), mine)
    base = timing.get("baseline") or {}
    _flatten_stats(base.get("stats"), theirs)
    if timing.get("speedup") is not None:
        ratio = theirs / mine if mine else math.inf
        if math.isfinite(ratio) and ratio > 0:
            timing["speedup"]["value"] = ratio
        else:
            timing.pop("speedup")
    for shape in (d.get("task") or {}).get("shapes") or ():
        flops = (shape.get("work") or {}).get("flops")
        if flops:
            flops["value"] = work
    raw = msgspec.json.encode(d)
    report = validate(raw)
    event(f"valid: {report.ok}")
    peaks = _peak_lookup()
    row = extract(msgspec.json.decode(raw), peaks)
    assert _finite_floats(row)
    one = decode_one(raw)
    if one is not None:
        assert extract_struct(one[0], peaks) == row
    if not report.ok:
        return
    a = EvidencePacket.model_validate(d)
    if a.timing is None or a.timing.stats is None:
        return
    result = (
        compare_packets(a, packet, force=True, resamples=200)
        if packet.timing and packet.timing.stats
        else None
    )
    for r in (result, compare_packets(a, a, force=True, resamples=200)):
        if r is not None:
            assert _finite_floats([r.speedup, r.ci_low, r.ci_high, r.p_value, r.median_a_ns, r.median_b_ns])
            assert "\n" not in r.summary()
