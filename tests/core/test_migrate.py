"""Migration: the step table, golden before/after pairs, every reader taking 0.1 packets,
ids of migrated packets, unsupported versions, and ``kevidence migrate``."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, assume, given, settings

from kernel_evidence import SCHEMA_VERSION, SchemaVersion, validate
from kernel_evidence._codec.canonical import packet_id_for
from kernel_evidence._codec.decode import decode_checked, model_from_data
from kernel_evidence._codec.migrate import (
    STEPS,
    migrate,
    migrate_packet,
    not_in_version,
    step_0_1_to_0_2,
)
from kernel_evidence._codec.versions import CURRENT, SUPPORTED
from kernel_evidence.cli import main
from kernel_evidence.errors import MigrationError
from kernel_evidence.harness._load import load_packet
from kernel_evidence.io import read_packets
from kernel_evidence.models import EvidencePacket
from kernel_evidence.schema import load_schema
from kernel_evidence.strategies import packets

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "fixtures" / "migrate"
PAIRS = sorted(p.name.removesuffix(".v0.1.json") for p in GOLDEN.glob("*.v0.1.json"))
OLD = ROOT / "examples" / "packets" / "v0.1" / "valid"
H100 = OLD / "nvidia_h100_gemm_vs_cublaslt.json"


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_bytes())
    return data


# ---------------------------------------------------------------- the table


def test_the_steps_chain_every_supported_version_to_the_current_one() -> None:
    assert SCHEMA_VERSION == str(CURRENT) == "0.2"
    assert dict(STEPS) == {SchemaVersion(0, 1): step_0_1_to_0_2}
    for v in SUPPORTED[:-1]:
        data = {"schema_version": str(v)}
        seen = [v]
        while SchemaVersion.parse(data["schema_version"]) != CURRENT:
            data = STEPS[SchemaVersion.parse(data["schema_version"])](data)
            seen.append(SchemaVersion.parse(data["schema_version"]))
        assert seen == sorted(seen) and seen[-1] == CURRENT


def test_a_step_works_on_a_copy_and_changes_only_the_version() -> None:
    before = _load(H100)
    kept = copy.deepcopy(before)
    after = step_0_1_to_0_2(before)
    assert before == kept  # the input is untouched
    after["task"]["operator"] = "changed"  # and shares nothing with the output
    assert before["task"]["operator"] != "changed"
    assert {k: v for k, v in after.items() if k not in ("schema_version", "task")} == {
        k: v for k, v in before.items() if k not in ("schema_version", "task")
    }


@pytest.mark.parametrize("name", PAIRS)
def test_golden_pairs(name: str) -> None:
    before = _load(GOLDEN / f"{name}.v0.1.json")
    after = _load(GOLDEN / f"{name}.v0.2.json")
    assert before["schema_version"] == "0.1" and after["schema_version"] == "0.2"
    assert migrate_packet(before) == after
    step = step_0_1_to_0_2(before)
    assert {k: v for k, v in step.items() if k != "packet_id"} == {k: v for k, v in after.items() if k != "packet_id"}
    # the 0.2 packet carries the id of its own content, the 0.1 one that of its content
    assert after["packet_id"] == packet_id_for(after)
    if "packet_id" in before:
        assert before["packet_id"] == packet_id_for(before) != after["packet_id"]
    assert validate(json.dumps(after).encode()).ok == validate(json.dumps(before).encode()).ok
    assert EvidencePacket.model_validate(after).compute_id() == after["packet_id"]


def test_golden_pairs_exist() -> None:
    assert len(PAIRS) >= 4


# ---------------------------------------------------------------- Hypothesis


def _strip_to(data: Any, node: dict[str, Any], root: dict[str, Any]) -> Any:
    """``data`` without the members the schema ``root`` does not define (0.2-only fields)."""
    while "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
    members = node.get("anyOf", [node])
    members = [m if "$ref" not in m else root["$defs"][m["$ref"].rsplit("/", 1)[1]] for m in members]
    if isinstance(data, dict):
        obj = next((m for m in members if "properties" in m or m.get("type") == "object"), None)
        if obj is None:
            return data
        props = obj.get("properties", {})
        extra = obj.get("additionalProperties")
        out = {}
        for k, v in data.items():
            if k in props:
                out[k] = _strip_to(v, props[k], root)
            elif isinstance(extra, dict):
                out[k] = _strip_to(v, extra, root)
            elif extra is not False or not props:
                out[k] = v
        return out
    if isinstance(data, list):
        arr = next((m for m in members if m.get("type") == "array"), None)
        items = arr.get("items") if arr else None
        return [_strip_to(v, items, root) for v in data] if isinstance(items, dict) else data
    return data


def as_01(packet: EvidencePacket) -> dict[str, Any]:
    """A current packet as the 0.1 packet it would have been: its 0.2-only fields dropped,
    version 0.1, with the 0.1 id of that content."""
    root = load_schema("0.1")
    data = _strip_to(packet.to_dict(), root, root)
    data["schema_version"] = "0.1"
    data.pop("packet_id", None)
    data["packet_id"] = packet_id_for(data)
    return data


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packets())
def test_a_migrated_01_packet_validates_as_02_and_migration_is_idempotent(packet: EvidencePacket) -> None:
    old = as_01(packet)
    assume(not_in_version(old, SchemaVersion(0, 1)) is None)  # no 0.2-only enum value
    kept = copy.deepcopy(old)
    new = migrate_packet(old)
    assert old == kept  # pure
    assert new["schema_version"] == "0.2" and new["packet_id"] == packet_id_for(new)
    assert migrate(new) == new and migrate_packet(new) == new  # idempotent
    assert migrate(migrate(old)) == migrate(old)
    model = EvidencePacket.model_validate(new)  # structurally a 0.2 packet
    assert model.compute_id() == new["packet_id"]
    raw = json.dumps(old).encode()
    as_bytes, as_dict, as_new = validate(raw), validate(old), validate(new)
    assert not any(f.rule_id in ("KE000", "KE001", "KE003", "KE004") for f in as_bytes.findings)
    findings = [(f.rule_id, f.pointer) for f in as_new.findings]
    assert [(f.rule_id, f.pointer) for f in as_bytes.findings] == findings
    assert [(f.rule_id, f.pointer) for f in as_dict.findings] == findings
    assert as_bytes.packet_id == as_dict.packet_id == as_new.packet_id == new["packet_id"]


# ---------------------------------------------------------------- readers and ids


def test_every_reader_takes_a_01_packet(tmp_path: Path) -> None:
    raw = H100.read_bytes()
    old = json.loads(raw)
    new = migrate_packet(old)
    checked = decode_checked(raw)
    assert checked is not None and checked.migrated and checked.content_id == new["packet_id"]
    assert checked.packet.schema_version == "0.2" and checked.packet.packet_id == new["packet_id"]
    assert model_from_data(old).to_dict() == EvidencePacket.model_validate(new).to_dict()
    jsonl = tmp_path / "mixed.jsonl.zst"
    jsonl.write_bytes(zstandard.ZstdCompressor().compress(json.dumps(old).encode() + b"\n" + json.dumps(new).encode() + b"\n"))
    got = list(read_packets(jsonl))
    assert [p.packet_id for p in got] == [new["packet_id"]] * 2
    assert load_packet(H100).packet_id == new["packet_id"]
    from kernel_evidence.harness import compare_packets

    assert compare_packets(old, new) is not None


def test_a_json_array_may_mix_versions(tmp_path: Path) -> None:
    old = _load(H100)
    new = migrate_packet(old)
    src = tmp_path / "both.json"
    src.write_text(json.dumps([old, new]))
    reports = list(__import__("kernel_evidence").validate_paths([src]))
    assert [r.ok for r in reports] == [True, True]
    assert {r.packet_id for r in reports} == {new["packet_id"]}


def test_a_01_packet_with_a_wrong_id_names_its_01_id() -> None:
    old = _load(H100)
    right = old["packet_id"]
    old["packet_id"] = "sha256:" + "0" * 64
    for report in (validate(json.dumps(old).encode()), validate(old)):
        (f,) = [f for f in report.findings if f.rule_id == "KE004"]
        assert right in f.message and report.packet_id == old["packet_id"]
    with pytest.raises(MigrationError, match="does not match the content at schema 0.1"):
        migrate_packet(old)


def test_a_01_packet_may_not_carry_what_is_new_in_02() -> None:
    old = _load(H100)
    old["measured_at"] = "2026-11-20T09:00:00Z"
    for report in (validate(json.dumps(old).encode()), validate(old)):
        (f,) = report.findings
        assert f.rule_id == "KE001" and "`measured_at` is new in schema 0.2" in f.message
    with pytest.raises(MigrationError, match="measured_at"):
        migrate(old)
    old.pop("measured_at")
    old["nonsense"] = 1
    (f,) = validate(old).findings
    assert "unknown field `nonsense` (not in schema 0.1" in f.message


def test_a_value_wrong_at_every_version_gets_the_current_message() -> None:
    raw = (ROOT / "examples/packets/v0.1/invalid/KE001_time_stats_in_bandwidth_unit.json").read_bytes()
    (f,) = validate(raw).findings
    assert f.pointer == "/timing/stats/unit" and "expected a time unit" in f.message


@pytest.mark.parametrize(
    ("version", "newer"), [("9.0", True), ("0.10", True), ("0.0", False), ("1", False), ("", False)]
)
def test_an_unsupported_version_names_the_supported_ones(version: str, newer: bool) -> None:
    data = _load(H100)
    data["schema_version"] = version
    for report in (validate(json.dumps(data).encode()), validate(data)):
        (f,) = report.findings
        assert f.rule_id == "KE001" and f.pointer == "/schema_version"
        assert "reads 0.1, 0.2" in f.message
        assert ("newer kernel-evidence" in f.message) == newer
    with pytest.raises(MigrationError, match="reads 0.1, 0.2"):
        migrate(data)


def test_a_version_that_is_not_a_string_is_named() -> None:
    data = _load(H100)
    data["schema_version"] = 0.1
    for report in (validate(json.dumps(data).encode()), validate(data)):
        (f,) = report.findings
        assert f.rule_id == "KE001" and f.pointer == "/schema_version"


# ---------------------------------------------------------------- kevidence migrate


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_migrates_files_directories_jsonl_and_zstd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    olds = [_load(p) for p in sorted(OLD.glob("*.json"))]
    news = [migrate_packet(d) for d in olds]
    src = tmp_path / "in"
    src.mkdir()
    (src / "one.json").write_bytes(H100.read_bytes())
    (src / "many.jsonl.zst").write_bytes(
        zstandard.ZstdCompressor().compress(b"".join(json.dumps(d).encode() + b"\n" for d in olds[:3]))
    )
    (src / "current.jsonl").write_text(json.dumps(news[3]) + "\n")
    out = tmp_path / "out.jsonl.zst"
    code, stdout, err = run(capsys, "migrate", str(src), "-o", str(out))
    assert code == 0, err
    assert "4 packet(s) migrated to 0.2, 1 already at 0.2; 5 written" in stdout
    lines = zstandard.ZstdDecompressor().decompressobj().decompress(out.read_bytes()).splitlines()
    got = {json.loads(line)["packet_id"] for line in lines}
    assert got == {n["packet_id"] for n in news[:4]} | {migrate_packet(_load(H100))["packet_id"]}
    for line in lines:  # canonical JSON at 0.2, with the id of that content
        report = validate(line)
        assert report.ok and json.loads(line)["schema_version"] == "0.2"
        assert line == EvidencePacket.model_validate_json(line).to_json()
    # one packet into a .json name; the input stays as it was
    before = H100.read_bytes()
    one = tmp_path / "one.json"
    assert run(capsys, "migrate", str(H100), "-o", str(one))[0] == 0
    assert H100.read_bytes() == before
    assert json.loads(one.read_bytes())["packet_id"] == migrate_packet(_load(H100))["packet_id"]


def test_cli_never_overwrites_an_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "p.json"
    src.write_bytes(H100.read_bytes())
    link = tmp_path / "link.json"
    link.symlink_to(src)
    for target in (src, link):
        code, _, err = run(capsys, "migrate", str(src), "-o", str(target))
        assert code == 1 and "is one of the inputs" in err and len(err.strip().splitlines()) == 1
        assert src.read_bytes() == H100.read_bytes()
    code, _, err = run(capsys, "migrate", str(tmp_path), "-o", str(src))
    assert code == 1 and "is one of the inputs" in err


def test_cli_refuses_bad_packets_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _load(H100)
    bad["packet_id"] = "sha256:" + "1" * 64
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(_load(H100)) + "\n" + json.dumps(bad) + "\n" + '{"schema_version": "7.0"}\n')
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "migrate", str(src), "-o", str(out))
    assert code == 1 and not out.exists()
    lines = err.strip().splitlines()
    assert any(":line 2" in line and "not migrated" in line for line in lines), lines
    assert any(":line 3" in line and "unsupported schema_version `7.0`" in line for line in lines), lines
    assert "nothing written" in lines[-1]
    # an existing output is kept without --force
    out.write_text("keep\n")
    code, _, err = run(capsys, "migrate", str(H100), "-o", str(out))
    assert code == 1 and "already exists" in err and out.read_text() == "keep\n"
    assert run(capsys, "migrate", str(H100), "-o", str(out), "--force")[0] == 0


def test_cli_schema_serves_every_supported_version(capsys: pytest.CaptureFixture[str]) -> None:
    for v in ("0.1", "0.2"):
        code, out, _ = run(capsys, "schema", "--version", v)
        assert code == 0 and json.loads(out)["$id"] == f"urn:kernel-evidence:packet:{v}"
    assert json.loads(run(capsys, "schema")[1])["$id"] == "urn:kernel-evidence:packet:0.2"
    assert run(capsys, "schema", "--version", "0.3")[0] == 2


def test_cli_id_gives_the_id_of_the_current_form(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "withid.json"
    code, stdout, _ = run(capsys, "id", str(H100), "-o", str(out))
    want = migrate_packet(_load(H100))["packet_id"]
    assert code == 0 and stdout.startswith(want)
    written = json.loads(out.read_bytes())
    assert written["schema_version"] == "0.2" and written["packet_id"] == want


def test_versions_are_written_down_in_one_place() -> None:
    """No schema version literal outside the codec, except the models' own ``Literal``,
    which must be the current version (a migration step names the version it writes)."""
    import ast
    import typing

    # the generated structs copy the models' Literal (tests/core/test_startup.py: no drift)
    allowed = {("models/envelope.py", "0.2"), ("_codec/migrate.py", "0.2"), ("_codec/_structs_gen.py", "0.2")}
    src = ROOT / "src" / "kernel_evidence"
    versions = {str(v) for v in SUPPORTED}
    found = set()
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in versions:
                found.add((str(path.relative_to(src)), node.value))
    assert found <= allowed, found - allowed
    (literal,) = typing.get_args(EvidencePacket.model_fields["schema_version"].annotation)
    assert literal == str(CURRENT) == SCHEMA_VERSION


def test_ingest_into_a_01_base_writes_02(tmp_path: Path) -> None:
    from kernel_evidence import ingest

    result = ingest(
        "ncu",
        [str(ROOT / "tests" / "fixtures" / "ncu" / "raw_clean.csv")],
        into=H100,
        created_at="2026-11-22T00:00:00Z",
    )
    (p,) = result.packets
    assert p.schema_version == "0.2" and p.packet_id == p.compute_id()
    assert p.subject.name == _load(H100)["subject"]["name"]  # the base's fields kept
    bad = _load(H100)
    bad["measured_at"] = "2026-11-20T09:00:00Z"
    with pytest.raises(__import__("kernel_evidence").InputError, match="new in schema 0.2"):
        ingest("ncu", [str(ROOT / "tests" / "fixtures" / "ncu" / "raw_clean.csv")], into=bad)
