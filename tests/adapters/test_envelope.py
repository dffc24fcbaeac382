"""The one envelope helper every adapter and the harness start their packets with."""

from __future__ import annotations

import re
from pathlib import Path

from kernel_evidence import __version__
from kernel_evidence.adapters._envelope import start_packet, start_packet_data, utc_now
from kernel_evidence.models import SCHEMA_VERSION, EvidencePacket, Status, Timing

SRC = Path(__file__).resolve().parents[2] / "src" / "kernel_evidence"


def test_start_packet_fills_the_envelope() -> None:
    p = start_packet(subject_kind="kernel", subject_name="gemm", created_at="2026-11-22T01:02:03Z")
    assert isinstance(p, EvidencePacket)
    assert p.schema_version == SCHEMA_VERSION
    assert p.producer.name == "kernel-evidence" and p.producer.version == __version__
    assert p.created_at == "2026-11-22T01:02:03Z"
    assert p.subject.kind == "kernel" and p.subject.name == "gemm" and p.subject.description is None
    assert p.status is Status.PASSED
    assert p.measured_at is None


def test_created_at_defaults_to_now_in_utc() -> None:
    p = start_packet(subject_kind="serving", subject_name="s")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p.created_at)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", utc_now())


def test_measured_at_and_categories_only_when_given() -> None:
    data = start_packet_data(subject_kind="kernel", subject_name="k", timing=None, failure=None)
    assert "measured_at" not in data and "timing" not in data and "failure" not in data
    timing = Timing(method="cuda_events")
    p = start_packet(
        subject_kind="kernel",
        subject_name="k",
        description="d",
        status="error",
        measured_at="2025-01-02T03:04:05Z",
        timing=timing,
    )
    assert p.measured_at == "2025-01-02T03:04:05Z"
    assert p.timing == timing and p.status is Status.ERROR and p.subject.description == "d"


def test_no_hand_built_envelope_is_left() -> None:
    """No adapter or harness module writes the schema version or producer by hand."""
    for path in [*(SRC / "adapters").rglob("*.py"), *(SRC / "harness").rglob("*.py")]:
        if path.name == "_envelope.py":
            continue
        text = path.read_text()
        assert not re.search(r"schema_version\s*=\s*\"\d|\"schema_version\":\s*\"\d+\.\d+\",\s*\n", text), (
            path
        )
        assert 'Producer(name="kernel-evidence"' not in text, path
