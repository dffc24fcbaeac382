"""The example packets are exactly what examples/packets/generate.py writes."""

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "packets"


def test_examples_match_their_generator() -> None:
    spec = importlib.util.spec_from_file_location("generate_examples", EXAMPLES / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rendered = module.render()
    on_disk = {str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*.json")}
    assert on_disk == set(rendered), "run: python examples/packets/generate.py"
    for rel, text in rendered.items():
        assert (EXAMPLES / rel).read_text(encoding="utf-8") == text, rel
