"""`validate_paths` checks records in batches: the reports are the same, in the same order,
as when each record is checked on its own (mixed good, bad and broken records, and records
large enough to end a batch early)."""

from __future__ import annotations

import json
from pathlib import Path

import kernel_evidence as ke
from kernel_evidence.rules import _BATCH, _BATCH_BYTES


def _records() -> list[bytes]:
    base = ke.strategies.example_packet().to_dict()
    base.pop("packet_id", None)
    out: list[bytes] = []
    for i in range(3 * _BATCH + 5):
        p = json.loads(json.dumps(base))
        kind = i % 7
        if kind == 1:
            p.pop("replay", None)  # KE101
        elif kind == 2:
            p["packet_id"] = "sha256:" + "0" * 64  # KE004
        elif kind == 3:
            out.append(b'{"schema_version": "0.1", "truncated')  # KE001
            continue
        elif kind == 4:
            p["subject"]["description"] = "x" * (_BATCH_BYTES + 10)  # ends a batch early
        elif kind == 5:
            out.append(b"42")  # not an object
            continue
        out.append(json.dumps(p).encode())
    return out


def _key(rep: ke.Report) -> tuple[object, ...]:
    return (rep.ok, rep.packet_id, [(f.rule_id, f.pointer, f.message) for f in rep.findings])


def test_batches_give_the_reports_of_records_checked_alone(tmp_path: Path) -> None:
    records = _records()
    batch_file = tmp_path / "all.jsonl"
    batch_file.write_bytes(b"\n".join(records) + b"\n")
    together = list(ke.validate_paths([batch_file]))
    alone = []
    for i, rec in enumerate(records):
        one = tmp_path / f"one{i:03d}.jsonl"
        one.write_bytes(rec + b"\n")
        reps = list(ke.validate_paths([one]))
        assert len(reps) == 1
        alone.append(reps[0])
    assert [r.location for r in together] == [f"line {i + 1}" for i in range(len(records))]
    assert [_key(r) for r in together] == [_key(r) for r in alone]
    assert sum(not r.ok for r in together) >= 3 * 3  # the bad ones were there, and found
