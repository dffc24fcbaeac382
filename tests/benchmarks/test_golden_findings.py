"""The golden comparison of findings (benchmarks/golden_findings.py) on a small corpus.

The script guards performance work: findings and grades must not change. Here it runs on a
few hundred records, and the batched path (``validate_paths``: every band over a batch) must
give each record what ``validate`` of its bytes gives (``check_packet``, one packet at a time).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import kernel_evidence

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("golden_findings", ROOT / "benchmarks/golden_findings.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_batched_path_equals_one_packet_at_a_time(tmp_path: Path) -> None:
    g = _script()
    corpus = tmp_path / "corpus.jsonl"
    plain = g.build_corpus(corpus, 800)
    outcomes = [json.loads(line) for line in g.evaluate(corpus, plain)]
    lines = corpus.read_bytes().splitlines()
    batched = [o for o in outcomes if o[0] == "paths"]
    assert len(batched) == len(lines)
    assert any(o[4] == "A" for o in batched) and any(o[4] == "F" for o in batched)
    checked = 0
    for line, o in zip(lines, batched, strict=True):
        if any(f[0] in ("KE903", "KE904") for f in o[3]):
            continue  # side files are looked for next to a file only
        r = kernel_evidence.validate(line)
        assert [[f.rule_id, f.severity, f.pointer, f.message] for f in r.findings] == o[3], o[1]
        assert (r.grade.letter, list(r.grade.reasons)) == (o[4], o[5]), o[1]
        checked += 1
    assert checked > 700


def test_check_mode_round_trip(tmp_path: Path) -> None:
    g = _script()
    out = tmp_path / "golden.jsonl"
    assert g.main(["--write", str(out), "--packets", "600"]) == 0
    assert g.main(["--check", str(out), "--packets", "600"]) == 0
    lines = out.read_text().splitlines()
    last = json.loads(lines[-1])
    last[4] = "Z"  # a grade the reference never gave
    lines[-1] = json.dumps(last)
    out.write_text("\n".join(lines) + "\n")
    assert g.main(["--check", str(out), "--packets", "600"]) == 1
