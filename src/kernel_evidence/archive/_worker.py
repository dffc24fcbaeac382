"""Packets analysed in batches, in this process or in a second one.

Analysing a packet means decoding its JSON bytes once into the core packet struct
(:func:`kernel_evidence._codec.decode.decode_checked`), validating that struct and reading the typed
column values and the partition from it. :func:`analyse` does it for one batch; the archive
writer calls it directly, and on large inputs also hands batches to a second process
(``python -m kernel_evidence.archive._worker``) so that two cores share the work while this
one also reads the input and writes the dataset.

The pipes carry frames: a 4-byte big-endian length and a msgpack body. A request is a list
of JSON objects' bytes; the answer is what :func:`analyse` returns for them. The worker
exits at the end of its input.
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

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

import msgspec

from .._codec.decode import decode_checked
from .._codec.structs import encode_struct
from .._gc import paused_gc
from ..errors import ArchiveError
from ._check import check_fields
from ._rows import extract_struct, partition_from

__all__ = ["RemoteValidator", "analyse", "main", "not_json"]

_HEADER = struct.Struct(">I")
#: pipe buffer asked for (Linux caps it at /proc/sys/fs/pipe-max-size, 1 MiB by default)
PIPE_BYTES = 1 << 20
_enc = msgspec.msgpack.Encoder()
_dec = msgspec.msgpack.Decoder()


def not_json(exc: Exception) -> str:
    """Why a document is not readable JSON, in the words the validator uses."""
    if isinstance(exc, UnicodeDecodeError):
        return "not valid UTF-8; expected a UTF-8 JSON document"
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply (hostile or corrupt input)"
    return f"not valid JSON ({exc})"


def analyse(raws: list[bytes], peaks: Any) -> tuple[list[Any], dict[int, Any]]:
    """``(answers, fixes)``: one answer per JSON object's bytes, in order, and what the
    writer must know about the bytes themselves.

    The bytes are made compact first (insignificant whitespace removed: what the ``packet``
    column keeps); a packet of an older schema version is kept migrated, as the canonical
    JSON of its current form (with the id of that form, see :mod:`kernel_evidence._codec.ids`). ``fixes`` maps the index of a document to its compact bytes when they
    differ from the input, or to the reason it is not JSON (a string); the writer keeps the
    input bytes of every other document, which are compact already.

    An answer is ``(vendor, month, row, ok, grade, reasons, findings, lines)`` for a packet
    that decodes into the core struct and carries its id (``row`` as
    :func:`~._rows.extract_struct` gives it, the rest as the fields of
    :class:`~._check.Checked`), else ``None``: the writer then takes the reference path over
    the decoded JSON data.
    """
    out: list[Any] = []
    fixes: dict[int, Any] = {}
    for i, raw in enumerate(raws):
        # bytes in canonical form (as kernel-evidence writes packets) are compact already;
        # for others the decoder finds out in its duplicate-key screen
        one = decode_checked(raw, compact=True)
        if one is not None and one.migrated:
            # a packet of an older schema version is kept in its current form, with its id
            fixes[i] = encode_struct(one.packet)
        elif one is None or not one.compact:
            try:
                compact = msgspec.json.format(raw, indent=-1)
            except (msgspec.DecodeError, ValueError, RecursionError) as exc:
                fixes[i] = not_json(exc)
                out.append(None)
                continue
            if compact != raw:
                fixes[i] = compact
                if one is None:  # e.g. leading whitespace, which the fast decoder does not take
                    one = decode_checked(compact)
        if one is None or one.packet is None or one.packet.packet_id is None:
            out.append(None)
            continue
        p = one.packet
        ok, grade, reasons, findings, lines = check_fields(p, content_id=one.content_id)
        hw = p.hardware
        vendor, month = partition_from(hw.vendor if hw is not None else None, p.created_at, p.measured_at)
        out.append((vendor, month, extract_struct(p, peaks), ok, grade, reasons, findings, lines))
    return out, fixes


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


def _widen(pipe: Any) -> None:
    """Give a pipe a buffer of up to ``PIPE_BYTES`` where the system allows (Linux).

    A request of 1,024 packets is nearly three megabytes; through the default 64 KiB buffer
    it takes some forty writes, and after each the feeder thread waits for the GIL, which this
    process's main thread holds while it analyses and writes, so the second process would
    sit idle waiting for its input.
    """
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if pipe is None or setsize is None:
        return
    for size in (PIPE_BYTES, PIPE_BYTES // 4):
        try:
            fcntl.fcntl(pipe.fileno(), setsize, size)
        except OSError:  # above /proc/sys/fs/pipe-max-size for an unprivileged user
            continue
        return


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
        for pipe in (self._proc.stdin, self._proc.stdout):
            _widen(pipe)
        self._requests: queue.Queue[bytes | None] = queue.Queue(maxsize=4)
        self._answers: queue.Queue[bytes | None] = queue.Queue()
        self._error: BaseException | None = None
        #: batches sent, and answers arrived (counted by the reader thread)
        self._sent = 0
        self._arrived = 0
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
                self._arrived += 1
                if frame is None:
                    break
        except (EOFError, OSError, ValueError):
            self._answers.put(None)

    def submit(self, raws: list[bytes]) -> None:
        self._requests.put(_enc.encode(raws))
        self._sent += 1

    def unanswered(self) -> int:
        """Batches sent whose answer has not arrived yet (received or not)."""
        return self._sent - self._arrived

    def ready(self) -> bool:
        """Whether the oldest answer not yet received has arrived."""
        return not self._answers.empty()

    def receive(self) -> Any:
        frame = self._answers.get()
        if frame is None:
            self._answers.put(None)  # every later call fails the same way
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=10)
            code = self._proc.poll()
            why = f" ({self._error})" if self._error else ""
            raise ArchiveError(f"the validator process stopped unexpectedly (exit code {code}){why}")
        answers, fixes = _dec.decode(frame)
        return answers, fixes

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
