"""Locate the data shipped with the package: JSON Schema files and adapter mapping tables.

In a wheel they live in ``kernel_evidence/_data/``; in a source checkout (editable
install, or tests run from the tree) they are the top-level ``schema/`` and ``adapters/``.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["adapters_dir", "load_toml", "schema_dir"]

_PKG = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    shipped = _PKG / "_data" / name
    if shipped.is_dir():
        return shipped
    checkout = _PKG.parent.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"kernel-evidence data folder `{name}` not found in {shipped} or {checkout}")


def schema_dir() -> Path:
    """The folder holding ``v0.1/packet.schema.json`` and later versions."""
    return _find("schema")


def adapters_dir() -> Path:
    """The folder holding the adapter mapping tables (TOML)."""
    return _find("adapters")


@cache
def load_toml(name: str) -> dict[str, Any]:
    """Load ``adapters/<name>`` (TOML) once."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    with open(adapters_dir() / name, "rb") as fh:
        return tomllib.load(fh)
