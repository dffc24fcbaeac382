"""The adversarial suite (issue 16, item 6): every cheat caught, every control accepted.

Cheats live in ``_adv_cheats`` (one honest control plus one lie each), controls in
``_adv_controls``. ``python -m tests.adversarial.report`` prints which rules catch what.

To add a cheat: pick a control, write a function that changes one thing in its packet
(keeping everything else consistent, as a cheater would: ``scale_side``, ``set_side_samples``
and ``recompute_speedup`` help), give it a docstring that says the lie, and decorate it with
``@cheat(class, control, *pointers of the lying fields)``. Name it for the lie and, where
there is one, the public incident it models. Never mark a cheat xfail: an uncaught cheat is
a rule still to write.
"""

from __future__ import annotations

from collections import Counter

import pytest
from _adv_build import LEGACY, finalize
from _adv_cheats import CHEATS, CLASSES
from _adv_controls import CONTROLS
from _adv_judge import build_cheat, judge, judge_cheat, related

from kernel_evidence.models import EvidencePacket


def _describe(v) -> str:
    lines = [f"ok={v.ok} grade={v.grade} reasons={list(v.reasons)}"]
    lines += [f"  {rid} {sev} at {ptr}: {msg}" for rid, sev, ptr, msg in v.findings]
    return "\n".join(lines)


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_control_accepted(name: str) -> None:
    c = CONTROLS[name]
    packet = c.build()
    if not name.startswith("migrated_v01"):
        EvidencePacket.model_validate(packet)  # the control is well formed 0.2
        assert finalize(dict(packet))["packet_id"] == packet["packet_id"]
    for as_bytes in (False, True):  # JSON data, and the bytes of a file (the fast path)
        v = judge(packet, as_bytes=as_bytes)
        via = "bytes" if as_bytes else "data"
        errors = [f for f in v.findings if f[1] == "error"]
        assert not errors, f"honest control `{name}` falsely rejected ({via}):\n{_describe(v)}"
        if c.grade is not None:
            assert v.grade in c.grade, (
                f"control `{name}` ({c.about}) graded {v.grade} ({via}), expected {c.grade}:\n{_describe(v)}"
            )


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_cheat_caught(name: str) -> None:
    c = CHEATS[name]
    packet = build_cheat(c)
    if not c.structural and packet["schema_version"] != LEGACY:
        EvidencePacket.model_validate(packet)  # the lie hides in a well-formed packet
    for as_bytes in (False, True):  # JSON data, and the bytes of a file (the fast path)
        v = judge_cheat(name, as_bytes=as_bytes)
        assert v.caught, (
            f"cheat `{name}` ({c.klass}) not caught ({'bytes' if as_bytes else 'data'}): {c.lie}\n"
            f"lying fields: {', '.join(c.pointers)}\n{_describe(v)}"
        )


def _resolve(doc: object, pointer: str) -> bool:
    for part in pointer.split("/")[1:]:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            return False
    return True


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_lying_pointers_exist(name: str) -> None:
    """Each pointer a cheat names is a field of the cheat or of its control (no typo can make
    a cheat uncatchable)."""
    c = CHEATS[name]
    docs = (build_cheat(c), CONTROLS[c.control].build())
    for ptr in c.declared:
        assert any(_resolve(d, ptr) for d in docs), f"{name}: {ptr} is in neither the cheat nor its control"


def test_cheats_change_their_control() -> None:
    """A cheat that leaves its control unchanged would test nothing."""
    for c in CHEATS.values():
        control = CONTROLS[c.control].build()
        assert build_cheat(c) != control, c.name


def test_suite_size_and_coverage() -> None:
    assert len(CHEATS) >= 80
    assert len(CONTROLS) >= 25
    per_class = Counter(c.klass for c in CHEATS.values())
    assert set(per_class) == set(CLASSES), set(CLASSES) - set(per_class)
    assert min(per_class.values()) >= 3, per_class
    vendors = {c.build().get("hardware", {}).get("vendor") for c in CONTROLS.values()}
    assert {"nvidia", "amd", "google", "cpu", "intel"} <= vendors
    kinds = Counter(c.build()["subject"]["kind"] for c in CONTROLS.values())
    assert kinds["serving"] >= 3
    assert sum(c.build()["status"] != "passed" for c in CONTROLS.values()) >= 4


@pytest.mark.parametrize(
    ("found", "lie", "expected"),
    [
        ("/timing/stats/median", "/timing/stats", True),
        ("/timing/stats", "/timing/stats/median", True),
        ("/timing/stats", "/timing/stats", True),
        ("/timing/statsx", "/timing/stats", False),
        ("/timing/baseline/stats", "/timing/stats", False),
        ("", "/timing/stats", False),
        ("/", "/timing/stats", False),
    ],
)
def test_related_pointers(found: str, lie: str, expected: bool) -> None:
    assert related(found, lie) is expected


_STRONG = [n for n, c in sorted(CONTROLS.items()) if c.grade == "A"]


@pytest.mark.parametrize("name", _STRONG)
def test_self_asserted_booleans_alone_never_earn_a(name: str) -> None:
    """Strip what the harness proved (both sides' conditions, the defence record) and keep
    only its word (``same_session``/``interleaved: true``): the packet stays valid, not A."""
    p = CONTROLS[name].build()
    t = p["timing"]
    t.pop("conditions", None)
    t["baseline"].pop("conditions", None)
    p.pop("defences", None)
    assert t["baseline"]["same_session"] is True
    v = judge(finalize(p))
    assert v.ok, _describe(v)
    assert v.grade != "A", _describe(v)


@pytest.mark.parametrize(
    "check", ["fresh_inputs", "outputs_checked_after_timing", "unseen_inputs", "timer_integrity"]
)
def test_a_skipped_defence_shows_in_the_grade(check: str) -> None:
    """A harness author who skips a defence sees it in the grade (issue 16, item 5)."""
    p = CONTROLS["h100_bf16_gemm_vs_cublaslt"].build()
    for d in p["defences"]:
        if d["check"] == check:
            d["outcome"] = "skipped"
            d.pop("detail", None)
    v = judge(finalize(p))
    assert v.ok, _describe(v)
    assert v.grade != "A", _describe(v)


def _drop(path: str):
    def drop(p: dict) -> None:
        *parents, last = path.split("/")[1:]
        node = p
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return drop


def _drop_samples(p: dict) -> None:
    for st in (p["timing"]["stats"], p["timing"]["baseline"]["stats"]):
        del st["samples"]


def _drop_work_and_profile(p: dict) -> None:
    del p["profiler"]
    for sh in p["task"]["shapes"]:
        del sh["work"]


_RECORDS_A_NEEDS = {
    "raw samples": _drop_samples,
    "clocks": _drop("/hardware/clocks"),
    "commit": _drop("/replay/repository/commit"),
    "container digest": _drop("/replay/container/digest"),
    "defence record": _drop("/defences"),
    "baseline conditions": _drop("/timing/baseline/conditions"),
    "candidate conditions": _drop("/timing/conditions"),
    "reference magnitude": _drop("/validation/shapes/0/reference_max_abs"),
    "work figures and profile": _drop_work_and_profile,
}


@pytest.mark.parametrize("what", sorted(_RECORDS_A_NEEDS))
def test_each_record_an_a_needs_costs_the_a(what: str) -> None:
    """Grades mean what they say (issue 16, item 4): an A-grade control without one of its
    supporting records is still valid, is not A, and its reasons say why."""
    p = CONTROLS["h100_bf16_gemm_vs_cublaslt"].build()
    _RECORDS_A_NEEDS[what](p)
    v = judge(finalize(p))
    assert not [f for f in v.findings if f[1] == "error"], _describe(v)
    assert v.grade != "A" and v.reasons, f"without its {what}: {_describe(v)}"
