"""The examples in the harness docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("module", ["recorder", "timer", "reward", "flush"])
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(f"kernel_evidence.harness.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
