"""Transitional alias of :mod:`kernel_evidence._codec.structs` (removed once every importer moved)."""

from ._codec.encode import kernels_json_wanted
from ._codec.structs import *  # noqa: F403
from ._codec.structs import columns_encoder, packet_decoder

__all__ = ["columns_encoder", "kernels_json_wanted", "packet_decoder"]
