"""Arithmetic formulas over counter columns, as written in ``adapters/rocprof.toml``.

A formula is a small expression in the style of rocprof-compute's analysis configs:
counter names (``SQ_ACTIVE_INST_VALU``), pass-qualified counter names
(``SQ_LEVEL_WAVES.SQ_ACCUM_PREV_HIRES``), system variables (``$cu_per_gpu``), numbers,
``+ - * /``, unary minus and parentheses. Nothing else parses: no calls, no attribute
access beyond a dotted counter name, no comparisons. Evaluation is vectorised over
:mod:`pyarrow` arrays; a division by zero, an infinite or a missing operand gives a null
for that dispatch, never an exception.

>>> f = Formula.parse("100 * A / ($n * B)")
>>> sorted(f.columns), sorted(f.variables)
(['A', 'B'], ['n'])
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Formula", "FormulaError"]

_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_VAR_PREFIX = "var__"

#: a pyarrow array (pyarrow ships no type information) or a float
Operand: TypeAlias = Any


class FormulaError(ValueError):
    """A formula in the mapping table is not in the supported subset."""


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


@dataclass(frozen=True)
class Formula:
    """A parsed formula: its text, the counter columns and system variables it reads."""

    text: str
    tree: ast.expr
    columns: frozenset[str]
    variables: frozenset[str]

    @classmethod
    def parse(cls, text: str) -> Formula:
        """Parse ``text``; raise :class:`FormulaError` naming what is not allowed."""
        source = _VAR.sub(lambda m: _VAR_PREFIX + m.group(1), text)
        try:
            tree = ast.parse(source, mode="eval").body
        except SyntaxError as exc:
            raise FormulaError(f"formula `{text}` does not parse: {exc.msg}") from None
        columns: set[str] = set()
        variables: set[str] = set()

        def check(node: ast.expr) -> None:
            if isinstance(node, ast.BinOp):
                if not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
                    raise FormulaError(f"formula `{text}`: only + - * / are allowed")
                check(node.left)
                check(node.right)
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                check(node.operand)
            elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
                pass
            elif (name := _dotted(node)) is not None:
                if name.startswith(_VAR_PREFIX):
                    variables.add(name[len(_VAR_PREFIX) :])
                else:
                    columns.add(name)
            else:
                raise FormulaError(f"formula `{text}`: `{ast.unparse(node)}` is not allowed")

        check(tree)
        return cls(text, tree, frozenset(columns), frozenset(variables))

    def evaluate(
        self, columns: Mapping[str, pa.Array | pa.ChunkedArray], variables: Mapping[str, float]
    ) -> pa.Array | pa.ChunkedArray | float:
        """Evaluate over ``columns`` (float arrays of equal length) and scalar ``variables``.

        Non-finite results become nulls. The caller checks beforehand that every column and
        variable is present (:attr:`columns`, :attr:`variables`).
        """

        def ev(node: ast.expr) -> Operand:
            if isinstance(node, ast.BinOp):
                a, b = ev(node.left), ev(node.right)
                if isinstance(a, float) and isinstance(b, float):
                    return _scalar(node.op, a, b)
                fn = {ast.Add: pc.add, ast.Sub: pc.subtract, ast.Mult: pc.multiply}.get(type(node.op))
                if fn is not None:
                    return fn(a, b)
                return pc.divide(_as_float(a), _as_float(b))
            if isinstance(node, ast.UnaryOp):
                v = ev(node.operand)
                return -v if isinstance(v, float) else pc.negate(v)
            if isinstance(node, ast.Constant):
                return float(node.value)  # type: ignore[arg-type]  # numeric, checked by parse()
            name = _dotted(node)
            assert name is not None  # noqa: S101 - guaranteed by parse()
            if name.startswith(_VAR_PREFIX):
                return float(variables[name[len(_VAR_PREFIX) :]])
            return columns[name]

        out = ev(self.tree)
        if isinstance(out, float):
            return out
        out = _as_float(out)
        return pc.if_else(pc.is_finite(out), out, pa.scalar(None, pa.float64()))


def _as_float(v: Operand) -> Operand:
    if isinstance(v, float):
        return v
    if pa.types.is_floating(v.type):
        return v
    return pc.cast(v, pa.float64())


def _scalar(op: ast.operator, a: float, b: float) -> float:
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    return a / b if b != 0 else float("nan")
