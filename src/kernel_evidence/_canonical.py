"""Transitional alias of :mod:`kernel_evidence._codec.canonical` (removed once every importer moved)."""

from ._codec.canonical import *  # noqa: F403
