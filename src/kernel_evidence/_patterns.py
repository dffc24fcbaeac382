"""Transitional alias of :mod:`kernel_evidence._codec.patterns` (removed once every importer moved)."""

from ._codec.patterns import *  # noqa: F403
