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
    from kernel_evidence._codec.canonical import packet_id_for
    from kernel_evidence._codec.decode import decode_checked, decode_one

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
    from kernel_evidence._codec.decode import decode_checked, decode_one

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


# strings near the patterns: every one is either accepted by both the patterned decoder and
# the fast structs plus the generated check, or refused by both
_NEAR = [
    "sha256:" + "0123456789abcdef" * 4,
    "sha256:" + "0123456789ABCDEF" * 4,
    "sha256:" + "0" * 63,
    "sha256:" + "0" * 65,
    "sha256:" + "0" * 64 + "\n",
    "sha256:" + "g" * 64,
    "SHA256:" + "0" * 64,
    "sha256:" + "٠" * 64,
    "2026-11-22T04:05:09Z",
    "2026-11-22T04:05:09.123456789Z",
    "2026-11-22T04:05:09.1234567890Z",
    "2026-11-22T04:05:09Z\n",
    "2026-11-22 04:05:09Z",
    "٢٠٢٦-١١-٢٢T04:05:09Z",
    "2026-11-22",
    "2026-11-22\n",
    "26-11-22",
    "x-kernel:tool",
    "urn:example:a",
    "1urn:x",
    "urn:",
    "",
]
_PATTERN_FIELDS = {
    "packet_id",
    "created_at",
    "measured_at",
    "parent_packet_id",
    "source_digest",
    "sha256",
    "digest",
    "price_date",
    "currency",
}


def _pattern_sites(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, str) and k in _PATTERN_FIELDS:
                yield (*prefix, k)
            yield from _pattern_sites(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _pattern_sites(v, (*prefix, i))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packets(), st.data())
def test_generated_pattern_check_accepts_what_msgspec_patterns_accept(packet, data) -> None:
    from kernel_evidence._codec.decode import _packet_decoder, decode_checked

    d = packet.with_id().to_dict()
    sites = list(_pattern_sites(d))
    for _ in range(data.draw(st.integers(1, 3))):
        target = data.draw(st.sampled_from([*sites, ("extensions",)]))
        value = data.draw(st.sampled_from(_NEAR))
        if target == ("extensions",):
            d["extensions"] = {value: {"k": 1}}
            continue
        parent = d
        for k in target[:-1]:
            parent = parent[k]
        parent[target[-1]] = value
    raw = json.dumps(d, ensure_ascii=False).encode()
    try:
        _packet_decoder.decode(raw)
        strict_ok = True
    except msgspec.ValidationError:
        strict_ok = False
    assert (decode_checked(raw) is not None) == strict_ok


_DEFS: dict = {}


def _has_own_pattern(sub, defs=None) -> bool:
    """A pattern on this value itself (its items, map keys or values), not in nested models;
    a reference to a definition that is a plain string type (not a model) is followed."""
    if isinstance(sub, list):
        return any(_has_own_pattern(v, defs) for v in sub)
    if not isinstance(sub, dict):
        return False
    ref = sub.get("$ref")
    if ref is not None:
        target = _DEFS[ref.rsplit("/", 1)[-1]]
        return target.get("type") == "string" and "pattern" in target
    return (
        "pattern" in sub
        or "patternProperties" in sub
        or any(_has_own_pattern(v) for k, v in sub.items() if k not in ("properties", "$defs", "$ref"))
    )


def _schema_pattern_fields(node, out):
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            if _has_own_pattern(sub):
                out.add(name)
        for v in node.values():
            _schema_pattern_fields(v, out)
    elif isinstance(node, list):
        for v in node:
            _schema_pattern_fields(v, out)
    return out


def test_generated_pattern_check_covers_every_pattern_field() -> None:
    """Every field the published schema constrains with a pattern is visited by the
    generated check (and the test's own list of them is complete)."""
    from kernel_evidence._codec.patterns import pattern_checker
    from kernel_evidence.models import EvidencePacket
    from kernel_evidence.schema import load_schema

    _, src = pattern_checker(EvidencePacket)
    schema = load_schema()
    _DEFS.update(schema.get("$defs", {}))
    fields = _schema_pattern_fields(schema, set())
    assert fields == _PATTERN_FIELDS | {"extensions"}
    for name in fields:
        assert f".{name}\n" in src, name
    assert "for k1 in x0:" in src  # the extension keys


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    packets(),
    st.sampled_from([(",", ":"), (", ", ": "), (",", ": "), (" ,", ":")]),
    st.sampled_from([None, 0, 1]),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["", "a b", "tab\there", "new\nline", 'q"uote', "é ü", "back\\slash"]),
)
def test_decode_checked_tells_compact_input(packet, seps, indent, ascii_only, reorder, text) -> None:
    """With ``compact=True`` the decoder says the bytes are compact only when
    ``msgspec.json.format`` would leave them as they are, and always so for input without
    escapes."""
    from kernel_evidence._codec.decode import decode_checked

    d = packet.with_id().to_dict()
    d["subject"]["name"] = text or d["subject"]["name"]
    d["packet_id"] = "sha256:" + "0" * 64  # any well-formed id: only the content is checked
    if reorder:
        d = dict(reversed(list(d.items())))
    raw = json.dumps(d, separators=seps, indent=indent, ensure_ascii=ascii_only).encode()
    one = decode_checked(raw, compact=True)
    plain = decode_checked(raw)
    assert (one is None) == (plain is None)
    if one is None:
        return
    already = msgspec.json.format(raw, indent=-1) == raw
    if one.compact:
        assert already
    if b"\\" not in raw:  # with escapes the screen does not tell (formatting does)
        assert one.compact == already
    assert one.canonical == plain.canonical and one.content_id == plain.content_id
    assert plain.compact == plain.canonical  # not worked out unless asked


def test_remembered_matches_are_bounded_and_do_not_change_answers() -> None:
    from kernel_evidence._codec import patterns as _patterns
    from kernel_evidence._codec.patterns import REMEMBERED, pattern_checker
    from kernel_evidence.models import EvidencePacket

    check, _ = pattern_checker(EvidencePacket)
    good = json.loads(next(iter(_example_bytes())))
    from kernel_evidence._codec.decode import _fast_decoder

    p = _fast_decoder.decode(json.dumps(good).encode())
    assert check(p) and check(p)  # the second time from memory
    p.created_at = "2026-11-22 04:05:09Z"
    assert not check(p)  # a bad value is never remembered as good
    assert not check(p)
    seen: set[str] = set()
    for i in range(REMEMBERED + 5):
        _patterns._remember(seen, str(i))
    assert len(seen) <= REMEMBERED
    _patterns._remember(seen, "x" * (_patterns.REMEMBERED_CHARS + 1))
    assert "x" * (_patterns.REMEMBERED_CHARS + 1) not in seen  # long strings are not held


def test_long_strings_from_packets_are_not_held_by_caches() -> None:
    """The validator remembers short repeated strings (devices, percentile keys, pattern
    matches); a hostile packet's long strings are checked but never pinned in memory."""
    from kernel_evidence._codec import patterns as _patterns
    from kernel_evidence.rules import _checks, _tables

    d = json.loads(next(iter(_example_bytes())))
    long_device = "NVIDIA " + "H" * 5000
    long_key = "urn:" + "k" * 5000
    d["hardware"]["device"] = long_device
    d["extensions"] = {long_key: {"a": 1}}
    d["timing"]["stats"]["percentiles"] = {"p" + "9" * 5000: 1.0}
    d.pop("packet_id", None)
    report = validate(json.dumps(d).encode())
    assert report.findings  # the odd percentile key is reported, the rest checked
    assert long_device not in _checks._UNIDENTIFIED_CACHE
    assert not any(len(k) > _checks._CACHED_CHARS for k in _checks._PCT_CACHE)
    assert not any(sum(map(len, k)) > _checks._CACHED_CHARS for k in _checks._ORDER_CACHE)
    from kernel_evidence._codec.decode import _patterns_match

    remembered = [v for v in _patterns_match.__globals__.values() if isinstance(v, set)]
    assert remembered and any(remembered)  # the timestamp and digests were remembered
    assert all(len(v) <= _patterns.REMEMBERED_CHARS for seen in remembered for v in seen)
    assert not any(long_key in seen for seen in remembered)
    before = _tables._cached_device_peaks.cache_info().currsize
    _tables.device_peaks(long_device, "sm_90a")
    assert _tables._cached_device_peaks.cache_info().currsize == before


def test_fast_path_pointers_name_the_dict_when_msgspec_does_not_name_the_key() -> None:
    """msgspec reports a bad dict key as "`key` in `$.extensions`" and a bad value under an
    unnamed key as `$.…metrics[...].unit`: the finding points at the dict (it pointed at
    "" or at `…/metrics/unit`, a field that does not exist)."""
    import json

    from kernel_evidence import validate
    from kernel_evidence.strategies import example_packet

    d = example_packet().to_dict()
    d.pop("packet_id", None)
    d["extensions"] = {"mine": {"a": 1}}
    (f,) = validate(json.dumps(d).encode()).errors
    assert (f.rule_id, f.pointer) == ("KE001", "/extensions") and "not a URI" in f.message
    d = example_packet().to_dict()
    d.pop("packet_id", None)
    d["profiler"] = [
        {"tool": "ncu", "kernels": [{"name": "k", "metrics": {"t": {"value": 1, "unit": "parsec"}}}]}
    ]
    (f,) = validate(json.dumps(d).encode()).errors
    assert (f.rule_id, f.pointer) == ("KE001", "/profiler/0/kernels/0/metrics")
    assert "expected one of the units" in f.message and "`parsec`" in f.message
