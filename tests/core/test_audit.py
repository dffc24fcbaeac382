"""``kevidence audit``: each check catches its lie and leaves its honest control alone."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence.audit import LEVELS, audit, audit_packets, render
from kernel_evidence.cli import main
from kernel_evidence.io import write_packets
from kernel_evidence.models import EvidencePacket
from kernel_evidence.strategies import example_packet

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _base() -> dict[str, Any]:
    d = example_packet().to_dict()
    d.pop("packet_id")
    d["replay"]["repository"]["commit"] = "3f5c1e9a7b2d4c6e8f0a91b2c3d4e5f6a7b8c9d0"
    return d


def _packet(d: dict[str, Any]) -> EvidencePacket:
    return EvidencePacket.model_validate(d).with_id()


def _codes(result: Any, index: int | None = None) -> set[str]:
    suspects = result.suspects if index is None else [result.suspects[index]]
    return {r.code for s in suspects for r in s.reasons}


def test_an_honest_packet_is_not_a_suspect_above_low() -> None:
    result = audit_packets([_packet(_base())])
    assert result.packets == 1
    assert result.at_least("medium") == [], [
        r.line() if hasattr(r, "line") else r for s in result.suspects for r in s.reasons
    ]
    assert not result.fails("medium")


def test_a_claim_its_timings_contradict() -> None:
    d = _base()
    d["timing"]["speedup"]["value"] = 2.3  # 207 / 180 = 1.15
    result = audit_packets([_packet(d)])
    s = result.suspects[0]
    assert s.level == "critical"
    assert _codes(result) & {"KE301", "AU201"}
    assert s.claimed_speedup == 2.3 and s.recomputed_speedup == pytest.approx(207 / 180)
    assert result.fails("critical")


def test_faster_than_the_device_allows_from_the_shape_alone() -> None:
    d = _base()
    # no stated work (KE601 cannot run); the operator and dims give 2*m*n*k
    d["task"]["shapes"] = [{"id": "4096", "dims": {"m": 16384, "n": 16384, "k": 16384}}]
    # 4 ms is 2.2 PFLOP/s: above the H100's bf16 peak, though within what the validator's
    # own bound for work it cannot read the precision of allows (twice the highest peak in
    # any precision: KE601 says so below that, and the audit then defers to it)
    d["timing"]["stats"] = {"unit": "us", "median": 4000.0, "min": 3990.0, "max": 4100.0}
    d["timing"]["baseline"]["stats"]["median"] = 4600.0
    result = audit_packets([_packet(d)])
    au = [r for s in result.suspects for r in s.reasons if r.code == "AU301"]
    assert len(au) == 1 and au[0].level == "critical"
    assert "speed-of-light" in au[0].message and "derived from the shape" in au[0].message
    # the honest control: the same GEMM at 12 ms is within the H100's bf16 peak
    d["timing"]["stats"] = {"unit": "ms", "median": 12.0, "min": 11.9, "max": 12.5}
    d["timing"]["baseline"]["stats"] = {"unit": "ms", "median": 13.8}
    assert "AU301" not in _codes(audit_packets([_packet(d)]))


def test_a_tolerance_that_passes_anything() -> None:
    d = _base()
    d["validation"]["shapes"][0]["rtol"] = 0.6
    d["validation"]["shapes"][0]["reference_max_abs"] = 41.0
    result = audit_packets([_packet(d)])
    reasons = [r for s in result.suspects for r in s.reasons if r.code == "AU401"]
    assert reasons and reasons[0].level == "high" and "rtol 0.6" in reasons[0].message


def test_one_output_for_different_inputs() -> None:
    out = "sha256:" + "ab" * 32
    packets = []
    for i, m in enumerate((1024, 2048, 4096)):
        d = _base()
        d["task"]["shapes"][0]["id"] = f"m{m}"
        d["task"]["shapes"][0]["dims"] = {"m": m, "n": 4096, "k": 4096}
        d["validation"]["shapes"][0]["shape_id"] = f"m{m}"
        d["timing"]["shape_id"] = f"m{m}"
        d["compile"] = {
            "artifacts": [
                {"kind": "output", "name": "out.bin", "sha256": out if i < 2 else "sha256:" + "cd" * 32}
            ]
        }
        packets.append(_packet(d))
    result = audit_packets(packets)
    hit = [s for s in result.suspects if any(r.code == "AU501" for r in s.reasons)]
    assert len(hit) == 2  # the third output differs: not a suspect for this
    assert all(s.level == "critical" for s in hit)
    assert "same for 2 different inputs" in next(r.message for r in hit[0].reasons if r.code == "AU501")


def test_a_jump_over_the_parent() -> None:
    parent = _base()
    parent["timing"]["speedup"]["value"] = 1.15
    p = _packet(parent)
    child = _base()
    child["timing"]["stats"] = {"unit": "us", "median": 9.0, "min": 8.8, "max": 9.5}  # 207/9 = 23x
    child["timing"]["speedup"]["value"] = 23.0
    child["lineage"] = {"parent_packet_id": p.packet_id, "candidate_id": "c1", "iteration": 2}
    child["task"]["shapes"][0].pop("work")  # keep the floor out of this test
    result = audit_packets([p, _packet(child)])
    jumps = [r for s in result.suspects for r in s.reasons if r.code == "AU601"]
    assert len(jumps) == 1 and "20x faster than its parent" in jumps[0].message
    # a believable step is not flagged; a looser limit lets the jump through
    assert "AU601" not in _codes(audit_packets([p, _packet(child)], lineage_jump=25.0))


def test_a_jump_between_iterations_without_parent_ids() -> None:
    steps = []
    for it, median in ((1, 180.0), (2, 170.0), (3, 6.0)):
        d = _base()
        d["timing"]["stats"] = {"unit": "us", "median": median}
        d["timing"]["speedup"]["value"] = round(207.0 / median, 6)
        d["task"]["shapes"][0].pop("work")
        d["lineage"] = {"run_id": "rl-7", "candidate_id": "k", "iteration": it}
        steps.append(_packet(d))
    result = audit_packets(steps)
    jumped = [s for s in result.suspects if any(r.code == "AU601" for r in s.reasons)]
    assert len(jumped) == 1 and jumped[0].recomputed_speedup == pytest.approx(34.5)
    assert "iteration 2 of the same run" in next(r.message for r in jumped[0].reasons if r.code == "AU601")


def test_reward_hack_and_secret_runs() -> None:
    d = _base()
    d["status"] = "failed"
    d["failure"] = {"failure_class": "reward_hack", "message": "REWARD_HACK"}
    d["validation"] = {"verdict": "failed", "shapes": [{"shape_id": "4096", "passed": False}]}
    d["timing"].pop("speedup")
    assert "AU101" in _codes(audit_packets([_packet(d)]))
    public = _base()
    public["lineage"] = {"candidate_id": "sub-1"}
    public["extensions"] = {"gpu-mode:kernelbot": {"secret": False}}
    secret = copy.deepcopy(d)
    secret["failure"]["failure_class"] = "incorrect_numerical"
    secret["lineage"] = {"candidate_id": "sub-1"}
    secret["extensions"] = {"gpu-mode:kernelbot": {"secret": True}}
    result = audit_packets([_packet(public), _packet(secret)])
    assert "AU702" in _codes(result) and result.suspects[0].level == "high"
    assert result.candidates["sub-1"].notes == ["AU701: passes 1 and fails 1 of its judged runs"]


def test_formats_and_ranking(tmp_path: Path) -> None:
    lie = _base()
    lie["timing"]["speedup"]["value"] = 3.0
    gap = _base()
    gap.pop("replay")
    result = audit_packets([_packet(gap), _packet(lie)])
    assert [s.level for s in result.suspects][0] == "critical"  # worst first
    data = json.loads(render(result, "json"))
    assert data["packets"] == 2 and data["suspects"][0]["level"] == "critical"
    assert set(data["suspects_by_level"]) == set(LEVELS)
    rows = list(csv.DictReader(io.StringIO(render(result, "csv"))))
    assert rows[0]["rank"] == "1" and rows[0]["level"] == "critical"
    assert {r["code"] for r in rows} >= {"KE101"}
    md = render(result, "md")
    assert "| # | level | score | packet |" in md and "## Candidates" in md
    text = render(result, "text", top=1)
    assert text.startswith("audited 2 packets: 2 suspects (1 critical, 0 high")
    assert "(1 more not shown)" in text
    assert render(result, "json", min_level="critical").count('"rank"') == 0
    with pytest.raises(ValueError, match="expected one of the formats"):
        render(result, "xml")


def test_cli_exit_codes_and_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lie = _base()
    lie["timing"]["speedup"]["value"] = 3.0
    good = tmp_path / "good.jsonl"
    bad = tmp_path / "bad.jsonl"
    write_packets(good, [_packet(_base())])
    write_packets(bad, [_packet(_base()), _packet(lie)])
    assert main(["audit", str(good)]) == 0
    assert main(["audit", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "kevidence: audit failed: 1 suspects at high or above" in err
    assert "\r" not in err  # no progress line off a terminal
    assert main(["audit", str(bad), "--fail-on", "never"]) == 0
    assert main(["audit", str(good), "--fail-on", "low"]) in (0, 1)
    assert main(["audit", str(bad), "--fail-on", "severe"]) == 2
    assert main(["audit", str(bad), "--format", "xml"]) == 2
    assert main(["audit", str(tmp_path / "missing.jsonl")]) == 1
    assert "missing.jsonl: no such file or directory" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["audit", str(empty)]) == 1  # a gate that read nothing does not pass
    assert "no packets or harness outputs found to audit" in capsys.readouterr().err
    out = tmp_path / "audit.json"
    assert main(["audit", str(bad), "-f", "json", "-o", str(out), "--fail-on", "never"]) == 0
    assert json.loads(out.read_text())["suspects_by_level"]["critical"] == 1


def test_an_unreadable_document_fails_the_gate(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(_packet(_base()).to_json() + b"\n{not json\n")
    result = audit([str(path)])
    assert result.packets == 1 and len(result.unreadable) == 1
    assert result.unreadable[0][0].endswith("mixed.jsonl:line 2")
    assert result.fails("critical") and not result.fails("never")


def test_harness_outputs_are_recognised(tmp_path: Path) -> None:
    result = audit([str(FIXTURES / "kernelbot")])
    assert result.packets == 7
    assert "AU702" in _codes(result)
    assert set(result.submitters) == {"182736"}
    with pytest.raises(Exception, match="neither packets nor an output of a harness"):
        stray = tmp_path / "notes.txt"
        stray.write_text("hello\n")
        audit([str(stray)])


def test_corpus_kernelbench_baselines_are_recognised(corpus: Path) -> None:
    from kernel_evidence import ingest

    files = sorted((corpus / "kernelbench").glob("baseline_time_*.json"))
    if not files:
        pytest.skip("no kernelbench baseline files in the corpus")
    result = audit([str(corpus / "kernelbench")])
    # recognised by name and read by the kernelbench adapter: the same packets it gives
    assert result.packets == len(ingest("kernelbench", [str(f) for f in files]).packets) > 0
    assert all(s.source == "kernelbench output" for s in result.suspects)
    text = render(result, "text", top=3)
    assert f"({len(result.candidates) - 3} more candidates: --top N lists more" in text


def test_corpus_traces(corpus: Path) -> None:
    folder = corpus / "flashinfer-trace"
    if not folder.is_dir():
        pytest.skip("no flashinfer-trace corpus")
    result = audit([str(folder)])
    assert result.packets == 39
    gemm = result.candidates["gpt-5_gemm_n128_k2048_cuda_optimized_r8_c0_high"]
    assert (gemm.packets, gemm.passed, gemm.failed) == (25, 22, 3)
    assert gemm.median_speedup() == pytest.approx(0.1572, abs=1e-3)
    assert gemm.best_speedup() == pytest.approx(0.27387387249202655)
    norm = result.candidates["gpt-5.2_rmsnorm_h4096_cuda_optimized_r1_c0_high"]
    assert (norm.packets, norm.passed, norm.best_speedup()) == (14, 14, pytest.approx(4.564054670314057))
    # every passed gemm line is a suspect for its candidate's 3 numerical failures
    mixed = [s for s in result.suspects if any(r.code == "AU701" for r in s.reasons)]
    assert len(mixed) == 22
    lenient = [
        r.message for s in result.suspects for r in s.reasons if r.code == "AU402" and r.level == "medium"
    ]
    assert len(lenient) == 3 and any("0.194 relative error" in m for m in lenient)
    # the speedups it claims are the ones its latencies give
    assert not _codes(result) & {"KE301", "AU201", "AU301", "AU501", "AU601"}
    assert not result.fails("high") and result.fails("medium")


@pytest.mark.parametrize(
    "name",
    [
        "kernel_evidence.audit",
        "kernel_evidence.archive.verdicts",
        "kernel_evidence.adapters.kernelbot._build",
        "kernel_evidence.adapters.tritonbench._parse",
    ],
)
def test_docstring_examples(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_progress_only_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "many.jsonl"
    write_packets(path, [_packet(_base())] * 1200)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Tty()
    monkeypatch.setattr("sys.stderr", err)
    assert main(["audit", str(path), "--fail-on", "never", "-f", "json"]) == 0
    assert "\rkevidence: audited 1000 packets" in err.getvalue()
    assert err.getvalue().endswith("\r\033[K")  # the line is cleared before the result
