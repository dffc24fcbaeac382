"""Where recorded packets go, written so that a killed process loses at most the packet in flight.

* a directory: one ``<id>.json`` file per packet, written to a temporary file and renamed;
* ``*.json``: exactly one packet, temporary file and rename (used for ``KEVIDENCE_OUT``);
* ``*.jsonl`` / ``*.ndjson``: one line per packet, appended with a single ``write`` on an
  ``O_APPEND`` descriptor (no user-space buffer to lose);
* ``*.jsonl.zst`` / ``*.ndjson.zst``: each packet is its own zstd frame, appended the same
  way, so every complete frame decompresses on its own.

When an existing stream is opened for appending, a torn tail left by a killed writer is
cut off first (for JSONL: the incomplete last line is closed with a newline, so it stays
one bad line; for zstd: the stream is cut after the last complete frame), so new records
never merge into a torn one. :func:`kernel_evidence.io.iter_records` reads every complete
record before a torn tail.

``durable=True`` adds an ``fsync`` per packet (survives power loss, costs ~ms per packet).
"""

from __future__ import annotations

import os
import struct
import threading
from pathlib import Path
from typing import Protocol

import zstandard

from ..io import open_output

__all__ = [
    "DirectorySink",
    "JsonlSink",
    "MemorySink",
    "PacketSink",
    "SingleFileSink",
    "TeeSink",
    "open_sink",
]


class PacketSink(Protocol):
    """Something packets can be written to."""

    def write(self, packet_id: str, data: bytes) -> str:
        """Write one packet's JSON bytes; return where it went."""
        ...

    def close(self) -> None:
        """Release resources; further writes are an error."""
        ...


class MemorySink:
    """Keeps the encoded packets in a list (tests, or a harness that ships them itself)."""

    def __init__(self) -> None:
        self.items: list[bytes] = []

    def write(self, packet_id: str, data: bytes) -> str:
        self.items.append(data)
        return f"memory[{len(self.items) - 1}]"

    def close(self) -> None:
        return None


class DirectorySink:
    """One ``<hex id>.json`` per packet in a folder; temporary file, then rename."""

    def __init__(self, folder: str | os.PathLike[str], *, durable: bool = False) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.durable = durable

    def write(self, packet_id: str, data: bytes) -> str:
        name = packet_id.split(":", 1)[-1][:32] + ".json"
        target = self.folder / name
        fh, commit = open_output(target)
        ok = False
        try:
            fh.write(data)
            fh.write(b"\n")
            fh.flush()
            if self.durable:
                os.fsync(fh.fileno())
            ok = True
        finally:
            commit(ok)
        return str(target)

    def close(self) -> None:
        return None


class SingleFileSink(DirectorySink):
    """Exactly one packet in a ``.json`` file (temporary file, then rename)."""

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.durable = durable
        self.written = False

    def write(self, packet_id: str, data: bytes) -> str:
        if self.written:
            raise ValueError(
                f"{self.path}: a .json file holds one packet; use a .jsonl stream or a folder for more"
            )
        fh, commit = open_output(self.path)
        ok = False
        try:
            fh.write(data + b"\n")
            fh.flush()
            if self.durable:
                os.fsync(fh.fileno())
            ok = True
        finally:
            commit(ok)
        self.written = True
        return str(self.path)


_ZSTD_MAGIC = 0xFD2FB528


def _complete_frames_end(path: Path) -> int:
    """Offset just after the last complete zstd frame of ``path`` (0 when none is complete).

    Walks frame headers and block headers (RFC 8878, sections 3.1.1 and 3.1.1.2) without
    decompressing; skippable frames are stepped over.
    """
    size = path.stat().st_size
    good = 0
    with open(path, "rb") as fh:
        pos = 0
        while pos < size:
            fh.seek(pos)
            head = fh.read(4)
            if len(head) < 4:
                break
            (magic,) = struct.unpack("<I", head)
            if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
                ln = fh.read(4)
                if len(ln) < 4:
                    break
                end = pos + 8 + struct.unpack("<I", ln)[0]
                if end > size:
                    break
                pos = good = end
                continue
            if magic != _ZSTD_MAGIC:
                break
            fhd_b = fh.read(1)
            if not fhd_b:
                break
            fhd = fhd_b[0]
            fcs_flag = fhd >> 6
            single = (fhd >> 5) & 1
            checksum = (fhd >> 2) & 1
            dict_flag = fhd & 3
            header = 4 + 1 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
            header += (1 if single else 0, 2, 4, 8)[fcs_flag]
            cur = pos + header
            complete = False
            while cur + 3 <= size:
                fh.seek(cur)
                b = fh.read(3)
                bh = b[0] | (b[1] << 8) | (b[2] << 16)
                last = bh & 1
                btype = (bh >> 1) & 3
                bsize = bh >> 3
                if btype == 3:
                    return good
                cur += 3 + (1 if btype == 1 else bsize)
                if last:
                    cur += 4 if checksum else 0
                    complete = cur <= size
                    break
            if not complete:
                break
            pos = good = cur
    return good


def _repair_tail(path: Path, zst: bool) -> None:
    """Make an existing stream safe to append to (see the module docstring)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    if zst:
        end = _complete_frames_end(path)
        if end < size:
            os.truncate(path, end)
        return
    with open(path, "rb") as fh:
        fh.seek(size - 1)
        last = fh.read(1)
    if last != b"\n":
        with open(path, "ab") as fh:
            fh.write(b"\n")


class JsonlSink:
    """Appends one record per packet to a JSONL stream, zstd-framed when the name ends in ``.zst``."""

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = False, level: int = 3) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.zst = self.path.name.lower().endswith(".zst")
        self.durable = durable
        _repair_tail(self.path, self.zst)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._cctx = zstandard.ZstdCompressor(level=level, write_checksum=True) if self.zst else None
        self._lock = threading.Lock()
        self._torn = False

    def write(self, packet_id: str, data: bytes) -> str:
        with self._lock:  # a zstd compressor is not thread-safe; one record at a time
            if self._fd is None:
                raise ValueError(f"{self.path}: the sink is closed")
            record = data + b"\n"
            if self._cctx is not None:
                record = self._cctx.compress(record)
            if self._torn and not self.zst:
                record = b"\n" + record  # close a torn record another writer appended after
            view = memoryview(record)
            done = 0
            try:
                while view:  # os.write may write less than asked on some file systems
                    n = os.write(self._fd, view)
                    done += n
                    view = view[n:]
            except BaseException:
                if done:
                    self._undo(done)
                raise
            self._torn = False
            if self.durable:
                os.fsync(self._fd)
            return str(self.path)

    def _undo(self, done: int) -> None:
        """Remove the ``done`` bytes of a record whose write failed (a full disk, a signal).

        Left in place they would merge with the next record into one unreadable line, or
        make the rest of a zstd stream undecodable. When another writer appended after
        them, they cannot be cut without cutting its record: the next JSONL record then
        starts on a new line instead.
        """
        assert self._fd is not None
        try:
            end = os.lseek(self._fd, 0, os.SEEK_CUR)  # just after our bytes (O_APPEND)
            if os.fstat(self._fd).st_size == end:
                os.ftruncate(self._fd, end - done)
                return
        except OSError:
            pass
        self._torn = True

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class TeeSink:
    """Writes every packet to several sinks (the harness's output and ``KEVIDENCE_OUT``)."""

    def __init__(self, sinks: list[PacketSink]) -> None:
        self.sinks = sinks

    def write(self, packet_id: str, data: bytes) -> str:
        where = [s.write(packet_id, data) for s in self.sinks]
        return where[0]

    def close(self) -> None:
        for s in self.sinks:
            s.close()


def open_sink(target: str | os.PathLike[str] | PacketSink, *, durable: bool = False) -> PacketSink:
    """A sink for ``target``: an existing sink, a ``.json`` file, a JSONL stream or a folder."""
    if not isinstance(target, (str, os.PathLike)):
        return target
    name = os.fspath(target).lower()
    if name.endswith((".jsonl", ".ndjson", ".jsonl.zst", ".ndjson.zst")):
        return JsonlSink(target, durable=durable)
    if name.endswith(".json"):
        return SingleFileSink(target, durable=durable)
    if name.endswith((".zst", ".json.zst")):
        raise ValueError(f"{target}: a zstd output must be a JSONL stream (.jsonl.zst)")
    return DirectorySink(target, durable=durable)
