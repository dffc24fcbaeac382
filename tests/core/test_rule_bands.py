"""The rules live one module per band, each rule declared beside its check, and none can be
skipped silently: the dispatcher calls every band with no guard of its own, every module of
the rules package that is a band is in the dispatcher's list, and every declared rule is
seen firing on some packet (a spec case of test_spec_enforced, an invalid example, or a
case below)."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kernel_evidence.rules as rules_pkg
from kernel_evidence import validate, validate_paths
from kernel_evidence.rules import RULES, _checks
from kernel_evidence.strategies import example_packet

HERE = Path(__file__).resolve().parent
INVALID = HERE.parents[1] / "examples" / "packets" / "invalid"

#: the band of each hundred of rule ids
BAND_OF_HUNDRED = {
    0: "identity",
    1: "replay",
    2: "baseline",
    3: "claim",
    4: "status",
    5: "statistics",
    6: "physics",
    7: "tolerance",
    8: "hardware",
    9: "rawtable",
    10: "serving",
    11: "profile",
    12: "cost",
}


def _band_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(rules_pkg.__path__) if not m.name.startswith("_"))


def test_every_band_module_is_dispatched() -> None:
    bands = [b.__name__.rsplit(".", 1)[1] for b in _checks.BANDS]
    assert sorted(bands) == _band_modules(), "add the band to BANDS in rules/_checks.py"
    assert len(set(bands)) == len(bands)
    assert tuple(b.check for b in _checks.BANDS) == _checks._CHECKS
    for band in _checks.BANDS:
        assert list(inspect.signature(band.check).parameters) == ["p", "ctx", "add"], band.__name__


def test_the_dispatcher_has_no_shortcut() -> None:
    """check_packet calls every band's check for every packet: no branch in it skips one."""
    tree = ast.parse(inspect.getsource(_checks.check_packet))
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    for node in ast.walk(fn):
        assert not isinstance(node, (ast.If, ast.Return, ast.Break, ast.Continue, ast.Try)) or (
            isinstance(node, ast.Return) and node is fn.body[-1]
        ), ast.unparse(node)
    loops = [n for n in ast.walk(fn) if isinstance(n, ast.For)]
    assert len(loops) == 1 and ast.unparse(loops[0].iter) == "_CHECKS"


def test_the_batch_dispatcher_has_no_shortcut_and_agrees() -> None:
    """check_batch runs every band over every packet of the batch (its only branch skips a
    record that is not a packet) and finds what check_packet finds, in the same order."""
    tree = ast.parse(inspect.getsource(_checks.check_batch))
    ifs = [n for n in ast.walk(tree) if isinstance(n, ast.If)]
    assert [ast.unparse(n.test) for n in ifs] == ["future is None", "p is None"]
    fors = [ast.unparse(n.iter) for n in ast.walk(tree) if isinstance(n, ast.For)]
    assert fors == ["packets", "_CHECKS", "todo"]
    import msgspec

    from kernel_evidence._codec.structs import PacketStruct

    dec = msgspec.json.Decoder(PacketStruct)
    packets: list[Any] = []
    for path in sorted(INVALID.glob("KE*.json")):
        try:
            packets.append(dec.decode(path.read_bytes()))
        except msgspec.DecodeError:
            packets.append(None)
    assert sum(p is not None for p in packets) > 20
    got = _checks.check_batch(packets)
    assert got == [[] if p is None else _checks.check_packet(p) for p in packets]


def _declared_in(module: str) -> list[str]:
    src = (Path(rules_pkg.__file__).parent / f"{module}.py").read_text()
    return re.findall(r"declare\(\s*['\"](KE\d+)['\"]", src)


def test_each_rule_is_declared_in_its_band() -> None:
    seen: dict[str, str] = {}
    for module in _band_modules():
        for rid in _declared_in(module):
            assert rid not in seen, f"{rid} declared in {seen[rid]} and {module}"
            seen[rid] = module
            hundred = int(rid[2:]) // 100
            assert BAND_OF_HUNDRED.get(hundred) == module, f"{rid} belongs to {BAND_OF_HUNDRED.get(hundred)}"
    assert set(seen) == set(RULES), "every rule is declared in a band module, beside its check"


# ------------------------------------------------------------- every rule is seen firing


def _spec_cases() -> list[tuple[str, Callable[[dict[str, Any]], None], str, str]]:
    spec = importlib.util.spec_from_file_location("_spec_enforced", HERE / "test_spec_enforced.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [*module.CASES, *module.WARNINGS]


def _base() -> dict[str, Any]:
    d = example_packet().to_dict()
    del d["packet_id"]
    return d


def _fired(raw: bytes) -> set[str]:
    return {f.rule_id for f in validate(raw).findings}


def _reference_baseline(d: dict[str, Any]) -> None:
    d["timing"]["baseline"]["provider"] = "torch eager"


def _no_timing_no_hardware(d: dict[str, Any]) -> None:
    del d["timing"], d["hardware"]


#: rules no spec case or example shows (those that fire only on files are checked below)
EXTRA: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("KE204", _reference_baseline),
    ("KE802", _no_timing_no_hardware),
]

_FILE_RULES = {"KE000", "KE903", "KE904"}


def test_every_rule_is_seen_firing(tmp_path: Path) -> None:
    fired: set[str] = set()
    for _, mutate, rule, _ in _spec_cases():
        d = _base()
        mutate(d)
        if rule in _fired(json.dumps(d).encode()):
            fired.add(rule)
    for path in sorted(INVALID.glob("KE*.json")):
        rule = path.name.split("_", 1)[0]
        if rule in _fired(path.read_bytes()):
            fired.add(rule)
    for rule, mutate in EXTRA:
        d = _base()
        mutate(d)
        assert rule in _fired(json.dumps(d).encode()), rule
        fired.add(rule)
    # the rules that need a file: a missing one (KE000), a raw table missing (KE904) or
    # not the one named (KE903)
    d = _base()
    d["profiler"] = [
        {
            "tool": "ncu",
            "kernels": [{"name": "k"}],
            "raw_table": {
                "kind": "profile",
                "path": "r.arrow",
                "sha256": "sha256:" + "0" * 64,
                "media_type": "application/vnd.apache.arrow.file",
            },
        }
    ]
    packet = tmp_path / "p.json"
    packet.write_text(json.dumps(d))
    found = {f.rule_id for r in validate_paths([packet, tmp_path / "absent.json"]) for f in r.findings}
    fired |= found & _FILE_RULES
    (tmp_path / "r.arrow").write_bytes(b"not the table")
    fired |= {f.rule_id for r in validate_paths([packet]) for f in r.findings} & _FILE_RULES
    missing = sorted(set(RULES) - fired)
    assert not missing, f"rules no case shows firing (add a spec case or an invalid example): {missing}"


@pytest.mark.parametrize("band", _checks.BANDS, ids=lambda b: b.__name__.rsplit(".", 1)[1])
def test_each_band_documents_its_rules(band: Any) -> None:
    for rid in _declared_in(band.__name__.rsplit(".", 1)[1]):
        rule = RULES[rid]
        assert rule.title and rule.hint and rule.doc, rid


def test_the_spec_lists_every_rule_that_caps_at_c() -> None:
    """The grade table's list of rules marked "grade C at best" is the rules declared so."""
    spec = (HERE.parents[1] / "docs" / "spec.md").read_text(encoding="utf-8")
    m = re.search(r'rules marked "grade C at best": ([^)]*)\)', spec)
    assert m is not None
    listed = {r.strip() for r in m.group(1).split(",")}
    declared = {r.id for r in RULES.values() if r.caps == "C"}
    assert listed == declared
