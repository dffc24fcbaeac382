"""``ingest_json`` (what ``kevidence ingest`` writes) splices the records' JSON the ncu and
rocprof adapters made into the packets' JSON instead of encoding the records again: the
bytes and the id must be exactly those of the packet itself, with or without edits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_rocprof_raw_table import _workload

from kernel_evidence._ingest import ingest_json
from kernel_evidence.models import EvidencePacket

FIXTURES = Path(__file__).parent.parent / "fixtures"
T0 = "2026-11-22T00:00:00Z"


@pytest.fixture
def spliced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of captures spliced, per packet encoded (a spy on the encoder's input)."""
    from kernel_evidence._codec import encode

    counts: list[int] = []
    original = encode.packet_json_with_id

    def spy(packet: EvidencePacket, kernels: dict[int, bytes] | None = None) -> Any:
        counts.append(len(kernels or {}))
        return original(packet, kernels)

    monkeypatch.setattr(encode, "packet_json_with_id", spy)
    return counts


def _inputs(tool: str, tmp_path: Path) -> list[str]:
    if tool == "rocprof":
        return [str(_workload(tmp_path / "wl"))]
    return [str(FIXTURES / "ncu" / "raw_clean.csv"), str(FIXTURES / "ncu" / "raw_target_processes_all.csv")]


def _check(packets: list[EvidencePacket], encoded: list[bytes]) -> None:
    for packet, data in zip(packets, encoded, strict=True):
        assert packet.packet_id == packet.compute_id()
        assert data == packet.to_json()
        assert EvidencePacket.model_validate_json(data) == packet


@pytest.mark.parametrize("tool", ["ncu", "rocprof"])
@pytest.mark.parametrize("side", [False, True])
def test_spliced_bytes_are_the_packets_own(tool: str, side: bool, tmp_path: Path, spliced: list[int]) -> None:
    kw: dict[str, Any] = {
        "created_at": T0,
        "replay_cmd": "./run --n 4",
        "baseline": "cublas:12.4:cublasGemmEx",
    }
    if side:
        kw.update(side_dir=tmp_path / "side", side_base=tmp_path / "side", inline_max_cells=0)
    result, encoded = ingest_json(tool, _inputs(tool, tmp_path), **kw)
    _check(result.packets, encoded)
    assert spliced and all(n == 1 for n in spliced), spliced  # every capture's records spliced


def test_edited_captures_are_encoded_again(tmp_path: Path, spliced: list[int]) -> None:
    # --set on the capture gives it new kernels: their JSON is made from the models
    result, encoded = ingest_json(
        "ncu", [str(FIXTURES / "ncu" / "raw_clean.csv")], created_at=T0, sets=["profiler.0.version=2025.3.1"]
    )
    _check(result.packets, encoded)
    assert spliced == [0] * len(result.packets)


def test_nothing_is_kept_after_the_call(tmp_path: Path) -> None:
    from kernel_evidence._codec.encode import kernels_json_wanted

    ingest_json("ncu", [str(FIXTURES / "ncu" / "raw_clean.csv")], created_at=T0)
    assert not kernels_json_wanted()
