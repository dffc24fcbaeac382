"""Packets analysed in batches, in this process or in a second one.

Analysing a packet means decoding its JSON bytes once into the core packet struct
(:func:`kernel_evidence._decode.decode_one`), validating that struct and reading the typed
column values and the partition from it. :func:`analyse` does it for one batch; the archive
writer calls it directly, and on large inputs also hands batches to a second process
(``python -m kernel_evidence.archive._worker``) so that two cores share the work while this
one also reads the input and writes the dataset.

The pipes carry frames: a 4-byte big-endian length and a msgpack body. A request is a list
of packets' JSON bytes; the answer is, in the same order, one answer per packet (see
:func:`analyse`). The worker exits at the end of its input.
"""

from __future__ import annotations

import contextlib
import os
import queue
import struct
import subprocess
import sys
import threading
from typing import Any, BinaryIO

import msgspec

from .._decode import decode_one
from .._gc import paused_gc
from ..errors import ArchiveError
from ._check import check_struct
from ._rows import extract_struct, partition_from

__all__ = ["RemoteValidator", "analyse", "main"]

_HEADER = struct.Struct(">I")
_enc = msgspec.msgpack.Encoder()
_dec = msgspec.msgpack.Decoder()


def analyse(raws: list[bytes], peaks: Any) -> list[Any]:
    """One answer per packet's JSON bytes, in order.

    An answer is ``(vendor, month, row, ok, grade, reasons, findings, lines)`` for a packet
    that decodes into the core struct and carries its id (``row`` as
    :func:`~._rows.extract_struct` gives it, the rest as the fields of
    :class:`~._check.Checked`), else ``None``: the writer then takes the reference path over
    the decoded JSON data.
    """
    out: list[Any] = []
    for raw in raws:
        one = decode_one(raw)
        if one is None or one[0].packet_id is None:
            out.append(None)
            continue
        p, canonical = one
        c = check_struct(p, canonical)
        hw = p.hardware
        vendor, month = partition_from(hw.vendor if hw is not None else None, p.created_at)
        out.append((vendor, month, extract_struct(p, peaks), c.ok, c.grade, c.reasons, c.findings, c.lines))
    return out


def _read_frame(fh: BinaryIO) -> bytes | None:
    head = fh.read(_HEADER.size)
    if not head:
        return None
    if len(head) < _HEADER.size:
        raise EOFError("truncated frame header")
    (size,) = _HEADER.unpack(head)
    body = fh.read(size)
    if len(body) < size:
        raise EOFError("truncated frame")
    return body


def _write_frame(fh: BinaryIO, body: bytes) -> None:
    fh.write(_HEADER.pack(len(body)))
    fh.write(body)
    fh.flush()


def main() -> int:
    """The worker's loop: analyse every packet of every request, answer in order."""
    from .writer import _peak_lookup

    peaks = _peak_lookup()
    rin, rout = sys.stdin.buffer, sys.stdout.buffer
    with paused_gc():
        while True:
            frame = _read_frame(rin)
            if frame is None:
                return 0
            _write_frame(rout, _enc.encode(analyse(_dec.decode(frame), peaks)))


class RemoteValidator:
    """The writer's side: send batches, take the answers back in the order sent.

    A feeder thread writes requests and a reader thread reads answers, so that neither pipe
    can fill up and block the other (a deadlock), and the writer can ask whether an answer
    is :meth:`ready` without waiting for it.
    """

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "kernel_evidence.archive._worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._requests: queue.Queue[bytes | None] = queue.Queue(maxsize=4)
        self._answers: queue.Queue[bytes | None] = queue.Queue()
        self._error: BaseException | None = None
        self._feeder = threading.Thread(target=self._feed, name="kevidence-archive-feed", daemon=True)
        self._reader = threading.Thread(target=self._read, name="kevidence-archive-read", daemon=True)
        self._feeder.start()
        self._reader.start()

    def _feed(self) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            while True:
                body = self._requests.get()
                if body is None:
                    break
                _write_frame(stdin, body)  # type: ignore[arg-type]
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            self._error = exc
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _read(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        try:
            while True:
                frame = _read_frame(stdout)  # type: ignore[arg-type]
                self._answers.put(frame)
                if frame is None:
                    break
        except (EOFError, OSError, ValueError):
            self._answers.put(None)

    def submit(self, raws: list[bytes]) -> None:
        self._requests.put(_enc.encode(raws))

    def ready(self) -> bool:
        """Whether the oldest answer not yet received has arrived."""
        return not self._answers.empty()

    def receive(self) -> list[Any]:
        frame = self._answers.get()
        if frame is None:
            self._answers.put(None)  # every later call fails the same way
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=10)
            code = self._proc.poll()
            why = f" ({self._error})" if self._error else ""
            raise ArchiveError(f"the validator process stopped unexpectedly (exit code {code}){why}")
        return list(_dec.decode(frame))

    def close(self) -> None:
        """End the worker after its last answer."""
        self._requests.put(None)
        self._feeder.join(timeout=30)
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        self._reader.join(timeout=30)
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self._proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=10)
        with contextlib.suppress(queue.Full):
            self._requests.put_nowait(None)
        self._reader.join(timeout=10)
        if self._proc.stdout is not None:
            with contextlib.suppress(OSError):
                self._proc.stdout.close()


def _run() -> Any:  # pragma: no cover - the worker process
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    _run()
