"""The fast path (msgspec) and the model path (pydantic) give the same findings."""

from __future__ import annotations

import json

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel_evidence import validate
from kernel_evidence.strategies import packets

_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(-1e6, 1e6, allow_nan=False)
    | st.sampled_from(["", "ms", "GB/s", "passed", "failed", "nvidia", "gpu", "0.1", "sha256:" + "0" * 64])
)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


@st.composite
def mutated(draw):
    packet = draw(packets())
    d = packet.to_dict()
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(d) if p]
        path = draw(st.sampled_from(paths))
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(_leaf)
    return d


def _key(report):
    return sorted((f.rule_id, f.severity, f.pointer, f.message) for f in report.findings)


@settings(max_examples=150, deadline=None)
@given(packets())
def test_same_findings_on_valid_packets(packet) -> None:
    d = packet.to_dict()
    assert _key(validate(d)) == _key(validate(msgspec.json.encode(d))) == _key(validate(packet))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_same_verdict_and_findings_on_mutated_packets(d) -> None:
    slow = validate(d)
    fast = validate(json.dumps(d).encode())
    slow_structural = {f.pointer for f in slow.findings if f.rule_id == "KE001"}
    fast_structural = [f for f in fast.findings if f.rule_id == "KE001"]
    assert bool(slow_structural) == bool(fast_structural), (slow.findings, fast.findings)
    if slow_structural:
        # msgspec stops at the first structural error; it must be one pydantic reports too
        ptr = fast_structural[0].pointer
        assert any(p == ptr or p.startswith(ptr + "/") or ptr.startswith(p + "/") for p in slow_structural), (
            ptr,
            slow_structural,
        )
    else:
        assert _key(slow) == _key(fast)
        assert slow.grade == fast.grade


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packets(), st.booleans(), st.booleans())
def test_decode_checked_gives_the_canonical_id(packet, reorder, spaced) -> None:
    """The validator's in-place id equals the id of the canonical form, whatever the key
    order and whitespace of the input, with or without extensions."""
    from kernel_evidence._canonical import packet_id_for
    from kernel_evidence._decode import decode_checked, decode_one

    d = packet.with_id().to_dict()
    if reorder:
        d = dict(reversed(list(d.items())))
    raw = json.dumps(d, indent=1 if spaced else None, ensure_ascii=False).encode()
    one = decode_checked(raw)
    # None sends the document down the general path, exactly when decode_one does
    assert (one is None) == (decode_one(raw) is None)
    assert one is not None or "\\u" in raw.decode()
    if one is None:
        return
    assert one[1] == packet_id_for(d) == d["packet_id"]
    d["packet_id"] = "sha256:" + "0" * 64
    other = decode_checked(json.dumps(d, ensure_ascii=False).encode())
    assert other is not None and other[1] == one[1]  # the id itself is not part of the content


def test_decode_checked_refuses_what_decode_one_refuses() -> None:
    from kernel_evidence._decode import decode_checked, decode_one

    good = json.dumps(json.loads(next(iter(_example_bytes())))).encode()
    dup = good[:-1] + b',"status":"passed"}'
    for raw in (b"[]", b"{", dup, b'{"schema_version": 1}'):
        assert decode_one(raw) is None
        assert decode_checked(raw) is None
    assert decode_checked(good) is not None


def _example_bytes():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"
    for f in sorted(root.glob("*.json")):
        yield f.read_bytes()
