"""Evicting the last-level cache between timed calls, with the evidence that it did.

A kernel timed again and again on the same inputs finds them in the last-level cache (50 MB
of L2 on an H100, tens of MB of L3 on a server CPU) and looks faster than it will be in a
model, where its inputs come from memory. :class:`CacheFlush` writes a buffer larger than
that cache before every timed call, outside the timed window, and records its size against
the cache's, so the packet can show the flush was big enough (``cache_flush`` defence).

>>> flush = CacheFlush(nbytes=1 << 20, last_level_cache=1 << 19, device="cpu")
>>> flush(); flush.flush_bytes, flush.last_level_cache, flush.source
(1048576, 524288, 'given')
"""

from __future__ import annotations

import ctypes
import math
import sys
from typing import Any, Literal

from ..models import ByteSize, CachePolicy
from .environment import cpu_last_level_cache, device_last_level_cache

__all__ = ["CacheFlush"]


def _cuda_torch() -> Any | None:
    torch = sys.modules.get("torch")  # only when the harness imported it already
    if torch is None:
        return None
    try:
        return torch if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 - a broken torch install means "no CUDA"
        return None


class CacheFlush:
    """A buffer written before every timed call to evict the last-level cache.

    Pass it to :class:`~kernel_evidence.harness.Timer` as ``flush=``.

    ``device``: ``"cuda"`` writes a device buffer (``torch.empty(..., device="cuda").zero_()``,
    needs torch already imported with CUDA); ``"cpu"`` writes a host buffer; ``"auto"``
    picks CUDA when the harness imported torch and a device is there, else the CPU.
    ``last_level_cache``: the cache size in bytes; by default read from the device
    (``torch.cuda.get_device_properties(0).L2_cache_size``) or, on the CPU, from
    ``/sys/devices/system/cpu/cpu0/cache``. ``nbytes``: the buffer size; by default
    ``factor`` times the cache (twice: caches that are not strictly LRU keep part of a
    buffer the size of the cache). A size that is unknown, or a buffer smaller than the
    cache, is a ``ValueError``: such a flush would evict nothing for certain.
    """

    def __init__(
        self,
        nbytes: int | None = None,
        *,
        last_level_cache: int | None = None,
        device: Literal["auto", "cpu", "cuda"] = "auto",
        factor: float = 2.0,
    ) -> None:
        if device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"expected device 'auto', 'cpu' or 'cuda', got {device!r}")
        if not (math.isfinite(factor) and factor >= 1.0):
            raise ValueError(f"expected factor to be a finite number >= 1, got {factor}")
        torch = _cuda_torch() if device in ("auto", "cuda") else None
        if device == "cuda" and torch is None:
            raise ValueError("device='cuda' needs torch (already imported) with CUDA available")
        self.device: Literal["cpu", "cuda"] = "cuda" if torch is not None else "cpu"
        #: where the cache size came from: ``given``, ``torch.cuda`` or ``sysfs``
        self.source = "given"
        if last_level_cache is None:
            last_level_cache = device_last_level_cache() if torch is not None else cpu_last_level_cache()
            self.source = "torch.cuda" if torch is not None else "sysfs"
        for name, value in (("nbytes", nbytes), ("last_level_cache", last_level_cache)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"expected {name} to be an int >= 1 or None, got {value!r}")
        if nbytes is None:
            if last_level_cache is None:
                raise ValueError(
                    f"the last-level cache size of the {self.device} is unknown: pass nbytes= (and"
                    " last_level_cache=, so that the packet can show the flush is larger)"
                )
            nbytes = math.ceil(factor * last_level_cache)
        elif last_level_cache is not None and nbytes < last_level_cache:
            raise ValueError(
                f"a flush of {nbytes} bytes cannot evict a last-level cache of {last_level_cache} bytes"
            )
        #: bytes written by each flush
        self.flush_bytes: int = nbytes
        #: the cache size in bytes, None when unknown
        self.last_level_cache: int | None = last_level_cache
        self._calls = 0
        if torch is not None:
            self._tensor: Any = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
            self._host: bytearray | None = None
        else:
            self._tensor = None
            self._host = bytearray(nbytes)
            self._view = (ctypes.c_char * nbytes).from_buffer(self._host)  # kept: pins the buffer
            self._address = ctypes.addressof(self._view)

    def __call__(self) -> None:
        """Write the whole buffer (a new byte value each time, on the device or the host)."""
        self._calls += 1
        if self._tensor is not None:
            self._tensor.fill_(self._calls & 0xFF)
        else:
            ctypes.memset(self._address, self._calls & 0xFF, self.flush_bytes)

    def policy(self) -> CachePolicy:
        """The ``cache`` member of the conditions: flushed, with the sizes, outside the window."""
        llc = self.last_level_cache
        return CachePolicy(
            mode="flushed",
            flush_bytes=ByteSize(value=float(self.flush_bytes), unit="B"),
            last_level_cache=ByteSize(value=float(llc), unit="B") if llc is not None else None,
            flush_in_timed_window=False,
        )

    def __repr__(self) -> str:
        return (
            f"CacheFlush(nbytes={self.flush_bytes}, last_level_cache={self.last_level_cache},"
            f" device={self.device!r})"
        )
