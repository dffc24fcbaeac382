"""archive -> export gives back the same packets: same ids, same JSON modulo key order."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel_evidence.archive import archive_packets, export_packets, iter_packets
from kernel_evidence.io import write_packets
from kernel_evidence.strategies import packets

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "packets" / "valid"


def _by_id(lines: list[bytes]) -> dict[str, object]:
    out = {}
    for line in lines:
        data = json.loads(line)
        out[data["packet_id"]] = data
    return out


def test_examples_round_trip_losslessly(tmp_path: Path) -> None:
    files = sorted(EXAMPLES.glob("*.json"))
    if not files:
        pytest.skip("examples/packets/valid is empty")
    summary = archive_packets([EXAMPLES], tmp_path / "a")
    assert summary.refused_count == 0, [r.line() for r in summary.refused]
    assert summary.added == len(files)
    out = tmp_path / "back.jsonl.zst"
    assert export_packets(tmp_path / "a", out) == len(files)
    raw = zstandard.ZstdDecompressor().decompressobj().decompress(out.read_bytes())
    back = _by_id(raw.splitlines())
    originals = {}
    for f in files:
        data = json.loads(f.read_bytes())
        originals[data["packet_id"]] = data
    assert back == originals
    # the stored bytes are the input's JSON without whitespace: numbers keep their spelling
    for f in files:
        compact = msgspec.json.format(f.read_bytes().strip(), indent=-1)
        assert compact in raw.splitlines()


def test_jsonl_bytes_come_back_identical(tmp_path: Path, packets_file: Path) -> None:
    archive_packets([packets_file], tmp_path / "a")
    lines = packets_file.read_bytes().splitlines()
    assert sorted(iter_packets(tmp_path / "a")) == sorted(lines)


def test_packet_without_id_gets_its_content_id(tmp_path: Path, packets_file: Path) -> None:
    first = json.loads(packets_file.read_bytes().splitlines()[0])
    pid = first.pop("packet_id")
    src = tmp_path / "noid.json"
    src.write_text(json.dumps(first, indent=2))
    archive_packets([src], tmp_path / "a")
    (back,) = list(iter_packets(tmp_path / "a"))
    assert json.loads(back) == {"packet_id": pid, **first}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(packets(), min_size=1, max_size=6))
def test_generated_packets_round_trip(tmp_path_factory: pytest.TempPathFactory, drawn: list) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    src = tmp / "in.jsonl"
    write_packets(src, drawn)
    summary = archive_packets([src], tmp / "a")
    assert summary.refused_count == 0, [r.line() for r in summary.refused]
    want = {p.packet_id: p.to_dict() for p in drawn}
    assert summary.added == len(want)
    assert summary.duplicates == len(drawn) - len(want)
    assert _by_id(list(iter_packets(tmp / "a"))) == want
