"""A tiny XPlane builder the XProf tests share: stat names interned per plane, as the
profiler does, and stat values of every kind an XStat holds."""

from __future__ import annotations

from typing import Any


class PlaneBuilder:
    """One XPlane of ``space`` (``pid``: its id; default the next free one)."""

    def __init__(self, space: Any, name: str, pid: int | None = None) -> None:
        self.p = space.planes.add(name=name, id=len(space.planes) if pid is None else pid)
        self.stat_ids: dict[str, int] = {}

    def sid(self, name: str) -> int:
        """The interned id of a stat name (its StatMetadata made on first use)."""
        if name not in self.stat_ids:
            i = self.stat_ids[name] = len(self.stat_ids) + 1
            self.p.stat_metadata[i].id = i
            self.p.stat_metadata[i].name = name
        return self.stat_ids[name]

    def put(self, stat: Any, name: str, v: Any) -> None:
        """Fill an XStat: float, int, str or bytes as such, ``("u", n)`` as uint64,
        ``("ref", text)`` as a reference to an interned name."""
        stat.metadata_id = self.sid(name)
        if isinstance(v, float):
            stat.double_value = v
        elif isinstance(v, int):
            stat.int64_value = v
        elif isinstance(v, str):
            stat.str_value = v
        elif isinstance(v, bytes):
            stat.bytes_value = v
        elif v[0] == "u":
            stat.uint64_value = v[1]
        else:  # ("ref", text)
            stat.ref_value = self.sid(v[1])
