"""Progress table of the adversarial suite: which cheats are caught, by which rules.

    python -m tests.adversarial.report            # every cheat and control
    python -m tests.adversarial.report --missed   # only cheats not caught, controls rejected
    python -m tests.adversarial.report -v         # with every finding of the rows shown
    python -m tests.adversarial.report --json     # one JSON line per cheat and control

A cheat is caught when a finding points at its lying field (``on lie``) and the packet is
invalid or graded C or lower, both when validated as JSON data and as file bytes (the fast
path; ``data``/``bytes`` in the caught column says which one alone caught it); ``other``
lists the rules that fired elsewhere.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _adv_cheats import CHEATS, CLASSES  # noqa: E402
from _adv_controls import CONTROLS  # noqa: E402
from _adv_judge import judge, judge_cheat  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tests.adversarial.report", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--missed", action="store_true", help="only uncaught cheats and rejected controls")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every finding of the rows shown")
    ap.add_argument("--json", action="store_true", help="one JSON object per cheat and control instead")
    args = ap.parse_args(argv)
    if args.json:
        return _json_lines()

    caught_per_class: Counter[str] = Counter()
    total_per_class: Counter[str] = Counter()
    print(f"{'cheat':58} {'class':25} {'caught':6} {'grade':5} {'on lie':18} other")
    for name in sorted(CHEATS, key=lambda n: (list(CLASSES).index(CHEATS[n].klass), n)):
        c = CHEATS[name]
        v = judge_cheat(name)
        vb = judge_cheat(name, as_bytes=True)  # the fast path of files must agree
        caught = v.caught and vb.caught
        total_per_class[c.klass] += 1
        caught_per_class[c.klass] += caught
        if args.missed and caught:
            continue
        other = sorted({f[0] for f in v.findings} - set(v.on_lie))
        mark = "yes" if caught else ("data" if v.caught else "bytes" if vb.caught else "NO")
        print(
            f"{name:58} {c.klass:25} {mark:6} {v.grade:5} {','.join(v.on_lie) or '-':18} {','.join(other) or '-'}"
        )
        if args.verbose:
            print(f"    lie at {', '.join(c.pointers)}: {c.lie}")
            for rid, sev, ptr, msg in v.findings:
                print(f"    {rid} {sev} at {ptr}: {msg}")
    print()
    print(f"{'control':45} {'want':5} {'grade':5} {'ok':3} findings")
    rejected = 0
    for name in sorted(CONTROLS):
        ctl = CONTROLS[name]
        packet = ctl.build()
        v = judge(packet)
        vb = judge(packet, as_bytes=True)
        bad = any(not x.ok or (ctl.grade is not None and x.grade not in ctl.grade) for x in (v, vb))
        rejected += bad
        if args.missed and not bad:
            continue
        ids = ",".join(f"{f[0]}({f[1][0]})" for f in v.findings) or "-"
        print(f"{name:45} {ctl.grade or '-':5} {v.grade:5} {'ok' if v.ok else 'NO':3} {ids}")
        if args.verbose and bad:
            for r in v.reasons:
                print(f"    reason: {r}")
            for rid, sev, ptr, msg in v.findings:
                print(f"    {rid} {sev} at {ptr}: {msg}")
    print()
    for k in CLASSES:
        print(f"{k:26} {caught_per_class[k]:3}/{total_per_class[k]:<3} caught")
    n_caught = sum(caught_per_class.values())
    print(
        f"{'all cheats':26} {n_caught:3}/{len(CHEATS):<3} caught; controls off target: {rejected}/{len(CONTROLS)}"
    )
    return 0 if n_caught == len(CHEATS) and not rejected else 1


def _json_lines() -> int:
    """One JSON line per cheat and control: name, verdict, grade and the rules that fired."""
    ok = True
    for name, c in sorted(CHEATS.items()):
        v, vb = judge_cheat(name), judge_cheat(name, as_bytes=True)
        caught = v.caught and vb.caught
        ok &= caught
        row = {"cheat": name, "class": c.klass, "control": c.control, "caught": caught, "grade": v.grade,
               "on_lie": list(v.on_lie), "rules": sorted({f[0] for f in v.findings}), "lie": c.lie}  # fmt: skip
        print(json.dumps(row))
    for name, ctl in sorted(CONTROLS.items()):
        packet = ctl.build()
        v, vb = judge(packet), judge(packet, as_bytes=True)
        accepted = all(x.ok and (ctl.grade is None or x.grade in ctl.grade) for x in (v, vb))
        ok &= accepted
        row = {"control": name, "accepted": accepted, "grade": v.grade, "want": ctl.grade,
               "rules": sorted({f[0] for f in v.findings}), "about": ctl.about}  # fmt: skip
        print(json.dumps(row))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
