"""One packet, one id: `kevidence id`, `EvidencePacket.compute_id()` and the validator agree
however the packet's numbers are spelled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings

from kernel_evidence._codec.canonical import packet_id_for
from kernel_evidence.cli import main
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rules import validate
from kernel_evidence.strategies import example_packet, packets


def as_ints(obj: Any) -> Any:
    """The same data with every integral float spelled as an integer (``155.0`` -> ``155``)."""
    if isinstance(obj, dict):
        return {k: as_ints(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [as_ints(v) for v in obj]
    if isinstance(obj, float) and obj.is_integer() and abs(obj) < 2**53:
        return int(obj)
    return obj


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packets())
def test_spelling_of_numbers_does_not_change_the_id(p: EvidencePacket) -> None:
    data = as_ints(json.loads(p.to_json()))
    pid = packet_id_for(data)
    assert pid == p.compute_id() == EvidencePacket.model_validate(data).compute_id()
    assert validate({**data, "packet_id": pid}).ok


def test_kevidence_id_gives_the_id_the_validator_expects(tmp_path: Path, capsys) -> None:
    data = as_ints(json.loads(example_packet().to_json()))
    data.pop("packet_id")
    assert any(isinstance(v, int) for v in data["timing"]["stats"].values())  # e.g. "n", "max"
    src = tmp_path / "p.json"
    src.write_text(json.dumps(data))
    out = tmp_path / "p_id.json"
    assert main(["id", str(src), "-o", str(out)]) == 0
    assert main(["validate", str(out)]) == 0
    assert "KE004" not in capsys.readouterr().out


def test_data_that_is_no_packet_still_gets_an_id() -> None:
    assert packet_id_for({"anything": [1, 2.0, None]}).startswith("sha256:")
