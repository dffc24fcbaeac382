"""`kevidence ingest` side files: written beside `-o`, referenced relative to the packet,
never written for stdout, removed when the ingest fails after writing them."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import kernel_evidence as ke
from kernel_evidence.cli import main
from kernel_evidence.io import read_packets
from kernel_evidence.models import EvidencePacket

FIX = Path(__file__).resolve().parents[1] / "fixtures"
RAW = FIX / "ncu" / "raw_clean.csv"  # 3 launches, a few dozen raw values
DETAILED = FIX / "vllm" / "serve_v0.25_detailed_p99-mismatch.json"  # 10 requests with arrays
T0 = "2026-11-22T00:00:00Z"
SMALL = ("--inline-max-cells", "10")  # this fixture's capture then goes to a side file
REPLAY = ("--replay-cmd", "ncu --csv --page raw ./attn")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _ref(packet: EvidencePacket) -> ke.models.Artifact:
    assert packet.profiler and packet.profiler[0].raw_table is not None
    assert packet.profiler[0].raw_columns is None
    return packet.profiler[0].raw_table


def test_side_file_beside_the_output_with_a_relative_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out" / "run.json"
    out.parent.mkdir()
    code, _, err = run(capsys, "ingest", "ncu", str(RAW), *SMALL, *REPLAY, "--created-at", T0, "-o", str(out))
    assert code == 0, err
    packet = EvidencePacket.model_validate_json(out.read_bytes())
    ref = _ref(packet)
    assert ref.path == ref.name and str(ref.name).startswith("raw_clean.csv.raw-")  # moves with the packet
    side = out.parent / str(ref.path)
    assert ref.sha256 == "sha256:" + hashlib.sha256(side.read_bytes()).hexdigest()
    assert f"raw metrics kept in {side}" in err
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(["run.json", side.name])
    # the same values as inline, and the packet validates with its file
    inline = tmp_path / "inline.json"
    assert main(["ingest", "ncu", str(RAW), "--created-at", T0, "-o", str(inline)]) == 0
    capsys.readouterr()
    cap = EvidencePacket.model_validate_json(inline.read_bytes()).profiler[0]  # type: ignore[index]
    table = ke.read_raw_table(packet.profiler[0], out.parent)  # type: ignore[index]
    from kernel_evidence.rawtable import raw_columns_of

    assert raw_columns_of(table)[0] == cap.raw_columns
    assert main(["validate", str(out)]) == 0


def test_default_threshold_keeps_small_captures_inline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "ingest", "ncu", str(RAW), "--created-at", T0, "-o", str(tmp_path / "r.json"))
    assert code == 0, err
    assert os.listdir(tmp_path) == ["r.json"]


def test_side_dir_elsewhere_is_recorded_relative_to_the_packet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "packets" / "run.json"
    out.parent.mkdir()
    code, _, err = run(capsys, "ingest", "ncu", str(RAW), *SMALL, *REPLAY, "--created-at", T0, "-o", str(out),
                       "--side-dir", str(tmp_path / "side"))  # fmt: skip
    assert code == 0, err
    ref = _ref(EvidencePacket.model_validate_json(out.read_bytes()))
    assert ref.path == os.path.join("..", "side", str(ref.name))
    assert (out.parent / str(ref.path)).is_file()
    assert main(["validate", str(out)]) == 0


def test_stdout_and_inline_raw_write_no_side_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "ingest", "ncu", str(RAW), *SMALL, "--created-at", T0)
    assert code == 0, err
    cap = EvidencePacket.model_validate_json(out).profiler[0]  # type: ignore[index]
    assert cap.raw_table is None and cap.raw_columns
    code, _, err = run(
        capsys, "ingest", "ncu", str(RAW), *SMALL, "--created-at", T0, "-o", "run.json", "--inline-raw"
    )
    assert code == 0, err
    assert sorted(os.listdir(tmp_path)) == ["run.json"]


def test_vllm_samples_are_not_moved_by_the_side_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run.json"
    code, _, err = run(capsys, "ingest", "vllm", str(DETAILED), "--opt", "inline_samples_max=0",
                       "--created-at", T0, "-o", str(out))  # fmt: skip
    assert code == 0, err
    packet = EvidencePacket.model_validate_json(out.read_bytes())
    assert packet.timing and packet.timing.serving and packet.timing.serving.samples_artifact
    assert packet.timing.serving.samples_artifact.path == str(DETAILED)  # the source, by sha256
    assert os.listdir(tmp_path) == ["run.json"]


def test_contradicting_options_are_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "ingest", "ncu", str(RAW), "-o", str(tmp_path / "r.json"),
                       "--inline-raw", "--side-dir", str(tmp_path))  # fmt: skip
    assert code == 2 and "contradict" in err
    (tmp_path / "file").write_text("x")
    code, _, err = run(capsys, "ingest", "ncu", str(RAW), "--side-dir", str(tmp_path / "file"))
    assert code == 2 and "is not a directory" in err
    code, _, err = run(capsys, "ingest", "ncu", str(RAW), "--inline-max-cells", "-1")
    assert code == 2
    assert sorted(os.listdir(tmp_path)) == ["file"]


def test_a_failed_ingest_removes_the_side_files_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "in" / "two.log"  # two tables: two packets
    log.parent.mkdir()
    text = RAW.read_text()
    log.write_text("==PROF== first run\n" + text + "==PROF== second run\n" + text.replace('"9001"', '"9002"'))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, _, err = run(
        capsys, "ingest", "ncu", str(log), *SMALL, "--created-at", T0, "-o", str(out_dir / "runs.json")
    )
    assert code == 2 and ".jsonl" in err  # several packets need .jsonl: refused after reading
    assert list(out_dir.iterdir()) == []
    code, _, err = run(capsys, "ingest", "ncu", str(log), *SMALL, "--created-at", T0, "--set", "status=bogus",
                       "-o", str(out_dir / "r.jsonl"))  # fmt: skip
    assert code == 2, err
    assert list(out_dir.iterdir()) == []
    # the same command that succeeds writes them all
    code, _, err = run(
        capsys, "ingest", "ncu", str(log), *SMALL, "--created-at", T0, "-o", str(out_dir / "r.jsonl")
    )
    assert code == 0, err
    packets = list(read_packets(out_dir / "r.jsonl"))
    names = {str(_ref(p).name) for p in packets}
    assert len(packets) == 2 and len(names) == 2
    assert sorted(p.name for p in out_dir.iterdir()) == sorted([*names, "r.jsonl"])
    # a failing run that writes the same side files again must not remove them: they were
    # there before it (r.jsonl references them), the same bytes under the same names
    before = {p.name: p.stat().st_ino for p in out_dir.iterdir()}
    code, _, err = run(capsys, "ingest", "ncu", str(log), *SMALL, "--created-at", T0, "--set", "status=bogus",
                       "-o", str(out_dir / "again.jsonl"))  # fmt: skip
    assert code == 2, err
    assert {p.name: p.stat().st_ino for p in out_dir.iterdir()} == before  # not even replaced
    code, report, _ = run(capsys, "validate", str(out_dir / "r.jsonl"))
    assert "KE903" not in report and "KE904" not in report, report  # its side files are whole


def test_into_a_base_elsewhere_keeps_finding_the_base_side_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a base packet with its raw metrics in a side file beside it, merged into a packet
    # written to another directory: the base capture's path is rebased, the file not moved
    base = tmp_path / "a" / "base.json"
    base.parent.mkdir()
    code, _, err = run(
        capsys, "ingest", "ncu", str(RAW), *SMALL, *REPLAY, "--created-at", T0, "-o", str(base)
    )
    assert code == 0, err
    name = str(_ref(EvidencePacket.model_validate_json(base.read_bytes())).name)
    out = tmp_path / "b" / "c" / "merged.json"
    out.parent.mkdir(parents=True)
    code, _, err = run(capsys, "ingest", "ncu", str(RAW), *SMALL, "--into", str(base), "--created-at", T0,
                       "-o", str(out))  # fmt: skip
    assert code == 0, err
    merged = EvidencePacket.model_validate_json(out.read_bytes())
    assert merged.profiler is not None and len(merged.profiler) == 1  # the same source: not added twice
    ref = merged.profiler[0].raw_table
    assert ref is not None and ref.path == os.path.join("..", "..", "a", name)
    assert (out.parent / ref.path).is_file()
    # outside the merged packet's folder: read only from a folder the user allows
    code, report, _ = run(capsys, "validate", "--side-files-from", str(base.parent), str(out))
    assert code == 0 and "KE904" not in report
    # the side file this run wrote for its own capture (dropped: the base has that source)
    # is not left behind
    assert [p.name for p in out.parent.iterdir()] == ["merged.json"]
    # beside the base, the path stays as it was
    near = tmp_path / "a" / "near.json"
    assert (
        main(["ingest", "ncu", str(RAW), *SMALL, "--into", str(base), "--created-at", T0, "-o", str(near)])
        == 0
    )
    capsys.readouterr()
    assert _ref(EvidencePacket.model_validate_json(near.read_bytes())).path == name


def test_vllm_samples_sidecar_is_referenced_relative_to_the_packet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow.parquet")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "packets" / "run.json"
    out.parent.mkdir()
    code, _, err = run(capsys, "ingest", "vllm", str(DETAILED), "--opt", "inline_samples_max=0",
                       "--opt", "samples_dir=samples", "--created-at", T0, "-o", str(out))  # fmt: skip
    assert code == 0, err
    packet = EvidencePacket.model_validate_json(out.read_bytes())
    assert packet.timing is not None and packet.timing.serving is not None
    art = packet.timing.serving.samples_artifact
    assert art is not None and art.path is not None
    assert art.path == os.path.join("..", "samples", str(art.name))  # from the packet, not the cwd
    assert art.sha256 == "sha256:" + hashlib.sha256((out.parent / art.path).read_bytes()).hexdigest()
