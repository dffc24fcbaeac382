"""`kevidence ingest` side files: written beside `-o`, referenced relative to the packet,
never written for stdout, removed when the ingest fails after writing them."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from kernel_evidence.cli import main
from kernel_evidence.io import read_packets
from kernel_evidence.models import EvidencePacket

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "vllm"
DETAILED = FIX / "serve_v0.25_detailed_p99-mismatch.json"  # one run, 10 requests with arrays
SWEEP = FIX / "sweep_detailed_summary.json"  # several runs with arrays
T0 = "2026-11-22T00:00:00Z"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _samples(packet: EvidencePacket) -> object:
    assert packet.timing is not None and packet.timing.serving is not None
    return packet.timing.serving.samples_artifact


def test_large_samples_go_beside_the_output_with_a_relative_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out" / "run.json"
    out.parent.mkdir()
    code, _, err = run(capsys, "ingest", "vllm", str(DETAILED), "--opt", "inline_samples_max=0",
                       "--created-at", T0, "-o", str(out))  # fmt: skip
    assert code == 0, err
    packet = EvidencePacket.model_validate_json(out.read_bytes())
    art = _samples(packet)
    assert art is not None and art.media_type == "application/vnd.apache.parquet"  # type: ignore[attr-defined]
    assert art.path == art.name  # type: ignore[attr-defined]  # beside the packet: moves with it
    side = out.parent / str(art.path)  # type: ignore[attr-defined]
    assert art.sha256 == "sha256:" + hashlib.sha256(side.read_bytes()).hexdigest()  # type: ignore[attr-defined]
    assert f"raw metrics kept in {side}" in err or str(side) in err
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(["run.json", side.name])


def test_side_dir_elsewhere_is_recorded_relative_to_the_packet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "packets" / "run.json"
    out.parent.mkdir()
    code, _, err = run(capsys, "ingest", "vllm", str(DETAILED), "--opt", "inline_samples_max=0",
                       "--created-at", T0, "-o", str(out), "--side-dir", str(tmp_path / "side"))  # fmt: skip
    assert code == 0, err
    art = _samples(EvidencePacket.model_validate_json(out.read_bytes()))
    assert art.path == os.path.join("..", "side", str(art.name))  # type: ignore[attr-defined]
    assert (out.parent / str(art.path)).is_file()  # type: ignore[attr-defined]


def test_stdout_and_inline_raw_write_no_side_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "ingest", "vllm", str(DETAILED), "--opt", "inline_samples_max=0",
                         "--created-at", T0)  # fmt: skip
    assert code == 0, err
    art = _samples(EvidencePacket.model_validate_json(out))
    assert art.path == str(DETAILED)  # type: ignore[attr-defined]  # the source, by sha256
    code, _, err = run(capsys, "ingest", "vllm", str(DETAILED), "--opt", "inline_samples_max=0",
                       "--created-at", T0, "-o", "run.json", "--inline-raw")  # fmt: skip
    assert code == 0, err
    assert sorted(os.listdir(tmp_path)) == ["run.json"]


def test_contradicting_options_are_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "ingest", "vllm", str(DETAILED), "-o", str(tmp_path / "r.json"),
                       "--inline-raw", "--side-dir", str(tmp_path))  # fmt: skip
    assert code == 2 and "contradict" in err
    (tmp_path / "file").write_text("x")
    code, _, err = run(capsys, "ingest", "vllm", str(DETAILED), "--side-dir", str(tmp_path / "file"))
    assert code == 2 and "is not a directory" in err
    assert sorted(os.listdir(tmp_path)) == ["file"]


def test_a_failed_ingest_removes_the_side_files_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "runs.json"  # several packets need .jsonl: refused after reading
    code, _, err = run(capsys, "ingest", "vllm", str(SWEEP), "--opt", "inline_samples_max=0",
                       "--created-at", T0, "-o", str(out))  # fmt: skip
    assert code == 2 and ".jsonl" in err
    assert list(tmp_path.iterdir()) == []
    code, _, err = run(capsys, "ingest", "vllm", str(SWEEP), "--opt", "inline_samples_max=0",
                       "--created-at", T0, "--set", "status=bogus", "-o", str(tmp_path / "r.jsonl"))  # fmt: skip
    assert code == 2, err
    assert list(tmp_path.iterdir()) == []
    # and the same command that succeeds writes them all
    code, _, err = run(capsys, "ingest", "vllm", str(SWEEP), "--opt", "inline_samples_max=0",
                       "--created-at", T0, "-o", str(tmp_path / "r.jsonl"))  # fmt: skip
    assert code == 0, err
    packets = list(read_packets(tmp_path / "r.jsonl"))
    names = {str(_samples(p).name) for p in packets if _samples(p) is not None}  # type: ignore[attr-defined]
    assert len(names) >= 2 and names <= {p.name for p in tmp_path.iterdir()}
