"""The example packets are exactly what examples/packets/generate.py writes (the current
schema version); the released 0.1 examples, kept under v0.1/, migrate and keep their verdicts."""

import importlib.util
import json
from pathlib import Path

import pytest

from kernel_evidence import SCHEMA_VERSION, validate
from kernel_evidence._codec.migrate import migrate, migrate_packet

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "packets"
OLD = EXAMPLES / "v0.1"
OLD_FILES = sorted(OLD.rglob("*.json"))


def test_examples_match_their_generator() -> None:
    spec = importlib.util.spec_from_file_location("generate_examples", EXAMPLES / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rendered = module.render()
    on_disk = {str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*.json") if OLD not in p.parents}
    assert on_disk == set(rendered), "run: python examples/packets/generate.py"
    for rel, text in rendered.items():
        assert (EXAMPLES / rel).read_text(encoding="utf-8") == text, rel


def test_every_current_example_is_at_the_current_version() -> None:
    for path in sorted((EXAMPLES / "valid").glob("*.json")):
        assert json.loads(path.read_bytes())["schema_version"] == SCHEMA_VERSION, path.name


def _verdict(raw: bytes) -> tuple[bool, list[str], str | None]:
    report = validate(raw)
    errors = sorted({f.rule_id for f in report.findings if f.severity == "error"})
    return report.ok, errors, report.grade.letter


def test_the_released_01_examples_are_kept() -> None:
    names = {str(p.relative_to(OLD)) for p in OLD_FILES}
    assert len(names) >= 30 and {"valid/nvidia_h100_gemm_vs_cublaslt.json"} <= names
    for path in OLD_FILES:
        if path.name.startswith(("KE001_truncated", "KE001_nan", "KE003")):
            continue  # not JSON a reader can take a version from
        assert b'"schema_version": "0.1"' in path.read_bytes(), path.name


@pytest.mark.parametrize("path", OLD_FILES, ids=lambda p: str(p.relative_to(OLD)))
def test_01_examples_migrate_and_keep_their_verdict(path: Path) -> None:
    raw = path.read_bytes()
    current = EXAMPLES / path.relative_to(OLD)
    assert current.is_file(), f"no current counterpart of {path.name}"
    assert _verdict(raw) == _verdict(current.read_bytes())
    if path.parent.name == "valid":
        # a valid 0.1 packet migrates to the current example, id and all
        migrated = migrate(json.loads(raw))
        mine = json.loads(current.read_bytes())
        assert {k: v for k, v in migrated.items() if k != "packet_id"} == {
            k: v for k, v in mine.items() if k != "packet_id"
        }
        assert validate(raw).packet_id == mine["packet_id"]
        assert migrate_packet(json.loads(raw)) == mine
        assert validate(migrate_packet(json.loads(raw))).ok
