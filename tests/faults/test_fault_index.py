"""The fault suite's index (README.md) names only tests that exist, and every test of this
folder is in it: the list of classes and the tests that keep them cannot drift apart."""

from __future__ import annotations

import ast
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NAMED = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", (HERE / "README.md").read_text())


def _tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_test_the_index_names_exists() -> None:
    assert len(NAMED) > 40
    missing = [f"{f}::{t}" for f, t in NAMED if t not in _tests(ROOT / f)]
    assert missing == []


def test_every_fault_test_is_in_the_index() -> None:
    named = {(f, t) for f, t in NAMED}
    for path in sorted(HERE.glob("test_fault_*.py")):
        if path.name == "test_fault_index.py":
            continue
        rel = path.relative_to(ROOT).as_posix()
        missing = sorted(t for t in _tests(path) if (rel, t) not in named)
        assert missing == [], f"{rel}: not in tests/faults/README.md: {missing}"
