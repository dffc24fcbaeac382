"""Shared test fixtures. The real-file corpus lives beside the project in ../shared/corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
EXAMPLES = ROOT / "examples" / "packets"


@pytest.fixture
def corpus() -> Path:
    """The shared real-file corpus; the test is skipped when it is absent."""
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not present")
    return CORPUS
