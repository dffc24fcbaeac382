"""The compact index of packet ids behaves as a set, whatever the keys."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from kernel_evidence.archive._ids import IdIndex

_digests = st.binary(min_size=32, max_size=32)
_keys = _digests | st.binary(max_size=40)


@settings(max_examples=200, deadline=None)
@given(st.lists(_keys, max_size=300), st.lists(_keys, max_size=50))
def test_index_is_a_set(added, probes) -> None:
    index, plain = IdIndex(), set()
    for k in added:
        index.add(k)
        plain.add(k)
        assert k in index
    assert len(index) == len(plain)
    for k in [*added, *probes]:
        assert (k in index) == (k in plain)


def test_index_grows_and_finds_every_digest_after_rehashing() -> None:
    keys = [hashlib.sha256(str(i).encode()).digest() for i in range(5000)]
    index = IdIndex(keys[:2500])
    for k in keys[2500:]:
        index.add(k)
    index.add(keys[0])  # a repeat adds nothing
    assert len(index) == 5000
    assert all(k in index for k in keys)
    assert hashlib.sha256(b"absent").digest() not in index
    assert "text" not in index
    # about 40 bytes an id: the digests, plus a table kept at most half full
    assert index.nbytes() <= 5000 * 32 + 4 * 4 * 5000


def test_colliding_prefixes_are_told_apart() -> None:
    """Keys that share their first eight bytes (the hash) land in the same slot chain."""
    a = b"\x01" * 8 + b"\x00" * 24
    b = b"\x01" * 8 + b"\xff" * 24
    index = IdIndex([a])
    assert a in index and b not in index
    index.add(b)
    assert a in index and b in index and len(index) == 2
