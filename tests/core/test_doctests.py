"""Examples in docstrings run as tests."""

import doctest
import importlib

import pytest

MODULES = [
    "kernel_evidence",
    "kernel_evidence.units",
    "kernel_evidence.schema",
    "kernel_evidence.rules",
    "kernel_evidence.strategies",
    "kernel_evidence._codec.canonical",
    "kernel_evidence._codec.versions",
    "kernel_evidence._codec.migrate",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
