"""Transitional alias of :mod:`kernel_evidence._codec.decode` (removed once every importer moved)."""

from ._codec.decode import *  # noqa: F403
from ._codec.decode import maybe_duplicates as _maybe_duplicates

__all__ = ["_maybe_duplicates"]
