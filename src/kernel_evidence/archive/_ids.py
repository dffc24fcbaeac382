"""The packet ids an archive run has seen, in about 40 bytes each.

Duplicate detection needs every id of the touched partitions at hand, the one structure of
an archive run that grows with the number of packets. A Python ``set`` of the 32-byte
digests costs about 110 bytes an id; this index keeps the digests back to back in one
``bytearray`` (32 bytes) and finds them through an open-addressing table of 4-byte slot
numbers kept at most half full (8 bytes an id). Digests are uniformly random, so their
first eight bytes are the hash. Keys of another length (the text of an id that is not a
``sha256:`` digest, only in packets stored with ``--allow-invalid``) go to a plain set.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

__all__ = ["IdIndex"]

_WIDTH = 32
_START = 1 << 10


class IdIndex:
    """A set of 32-byte digests (and, rarely, other byte strings)."""

    __slots__ = ("_count", "_digests", "_mask", "_other", "_table")

    def __init__(self, keys: Iterable[bytes] = ()) -> None:
        self._digests = bytearray()
        self._table = array("I", bytes(4 * _START))
        self._mask = _START - 1
        self._count = 0
        self._other: set[bytes] = set()
        for k in keys:
            self.add(k)

    def __len__(self) -> int:
        return self._count + len(self._other)

    def _slot(self, key: bytes) -> int:
        """The table slot holding ``key``, or the empty slot where it would go."""
        table, digests, mask = self._table, self._digests, self._mask
        i = int.from_bytes(key[:8], "little") & mask
        while True:
            j = table[i]
            if not j:
                return i
            k = (j - 1) * _WIDTH
            if digests[k : k + _WIDTH] == key:
                return i
            i = (i + 1) & mask

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, bytes):
            return False
        if len(key) != _WIDTH:
            return key in self._other
        return bool(self._table[self._slot(key)])

    def add(self, key: bytes) -> None:
        if len(key) != _WIDTH:
            self._other.add(key)
            return
        i = self._slot(key)
        if self._table[i]:
            return
        self._digests += key
        self._count += 1
        self._table[i] = self._count
        if self._count * 2 > len(self._table):
            self._grow()

    def _grow(self) -> None:
        size = len(self._table) * 2
        self._table = array("I", bytes(4 * size))
        self._mask = size - 1
        table, digests, mask = self._table, self._digests, size - 1
        for n in range(self._count):
            k = n * _WIDTH
            i = int.from_bytes(digests[k : k + 8], "little") & mask
            while table[i]:
                i = (i + 1) & mask
            table[i] = n + 1

    def nbytes(self) -> int:
        """Bytes held by the digests and the table (not counting the rare other keys)."""
        return len(self._digests) + self._table.itemsize * len(self._table)
