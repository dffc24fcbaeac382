"""Small helpers the red-team regression tests share (tests/core/test_redteam*.py): a fresh
honest control, and what the validator finds in a packet finished with its id."""

from __future__ import annotations

import copy
from typing import Any

from _adv_build import finalize
from _adv_controls import CONTROLS

from kernel_evidence import validate

__all__ = ["GEMM", "control", "found", "grade", "rules"]

GEMM = "h100_bf16_gemm_vs_cublaslt"


def control(name: str = GEMM) -> dict[str, Any]:
    """A fresh copy of the honest control ``name`` (the H100 GEMM by default)."""
    return copy.deepcopy(CONTROLS[name].build())


def found(p: dict[str, Any]) -> set[tuple[str, str]]:
    """(rule, pointer) of every finding on ``p``, finished with its id."""
    return {(f.rule_id, f.pointer) for f in validate(finalize(copy.deepcopy(p))).findings}


def rules(p: dict[str, Any]) -> set[str]:
    """The rule ids that fire on ``p``."""
    return {r for r, _ in found(p)}


def grade(p: dict[str, Any]) -> str:
    """The grade letter of ``p``, finished with its id."""
    return validate(finalize(copy.deepcopy(p))).grade.letter
