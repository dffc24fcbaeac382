"""A validator in a second process, so that validation overlaps with writing the archive.

The archive writer starts ``python -m kernel_evidence.archive._worker`` once its input is
large enough, and talks to it over pipes: each frame is a 4-byte big-endian length and a
msgpack body. A request is a list of packets' JSON bytes; the answer is, in the same order,
one ``[ok, grade, reasons, findings, lines]`` per packet (the fields of
:class:`~kernel_evidence.archive._check.Checked`). The worker exits at the end of its input.
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

from ..errors import ArchiveError
from ._check import Checked, check

__all__ = ["RemoteValidator", "main"]

_HEADER = struct.Struct(">I")
_enc = msgspec.msgpack.Encoder()
_dec = msgspec.msgpack.Decoder()


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
    """The worker's loop: validate every packet of every request, answer in order."""
    rin, rout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        frame = _read_frame(rin)
        if frame is None:
            return 0
        answers = []
        for raw in _dec.decode(frame):
            c = check(None, raw)
            answers.append([c.ok, c.grade, c.reasons, c.findings, c.lines])
        _write_frame(rout, _enc.encode(answers))


class RemoteValidator:
    """The writer's side: send batches, read the answers back in the order sent.

    A feeder thread writes requests, so that a large request never blocks the reading of
    an earlier answer (both pipes full would deadlock).
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
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=4)
        self._error: BaseException | None = None
        self._feeder = threading.Thread(target=self._feed, name="kevidence-validate", daemon=True)
        self._feeder.start()

    def _feed(self) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            while True:
                body = self._queue.get()
                if body is None:
                    break
                _write_frame(stdin, body)  # type: ignore[arg-type]
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            self._error = exc
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def submit(self, raws: list[bytes]) -> None:
        self._queue.put(_enc.encode(raws))

    def receive(self) -> list[Checked]:
        stdout = self._proc.stdout
        assert stdout is not None
        try:
            frame = _read_frame(stdout)  # type: ignore[arg-type]
        except EOFError:
            frame = None
        if frame is None:
            code = self._proc.poll()
            why = f" ({self._error})" if self._error else ""
            raise ArchiveError(f"the validator process stopped unexpectedly (exit code {code}){why}")
        return [Checked(bool(a[0]), a[1], a[2], a[3], a[4]) for a in _dec.decode(frame)]

    def close(self) -> None:
        """End the worker: after its last answer normally, at once after a failure."""
        self._queue.put(None)
        self._feeder.join(timeout=30)
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self._proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=10)
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)
        if self._proc.stdout is not None:
            with contextlib.suppress(OSError):
                self._proc.stdout.close()


def _run() -> Any:  # pragma: no cover - the worker process
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    _run()
