"""Golden comparison of findings and grades: a performance change must not change them.

    python benchmarks/golden_findings.py --ref HEAD [--packets 20000] [--paths FILE...]
    python benchmarks/golden_findings.py --write /tmp/golden.jsonl [--packets 20000]
    python benchmarks/golden_findings.py --check /tmp/golden.jsonl

Builds one corpus (JSONL, the same bytes for both sides): the bundled examples (valid,
invalid, schema 0.1), the adversarial suite's controls and cheats, packets drawn from
:mod:`kernel_evidence.strategies`, the benchmark's templates, and seeded mutants of all of
them (a number scaled, zeroed or negated, a string replaced by a placeholder or by another
packet's value at the same key, a member dropped, a list element dropped or repeated, a
subtree swapped with another packet's; the candidate's conditions copied to the baseline; the id recomputed or kept stale; canonical or
pretty-printed bytes). Each record is validated by ``validate_paths`` (the batched fast path)
and, for the records that are not mutants, by ``validate`` of the JSON data (the models'
path); the outcome of each is the list of findings and the grade with its reasons.

``--ref REV`` validates the same corpus with the package as committed at ``REV`` (extracted
with ``git archive``, run in a child process) and compares: any difference is printed and
the exit status is 1; with ``--paths``, the reference is the working tree with only those
files as committed at ``REV`` (one's own edits, apart from others' in the same tree).
``--write``/``--check`` do the same against a file.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: strings a mutant may put in place of another string (placeholders, no-op programs, units)
_STRINGS = (
    "unknown", "latest", "n/a", "", "echo", "true", "main", "x", "ms", "ns", "GB/s", "TFLOP/s",
    "fp32", "bf16", "failed", "passed", "error", "cuBLAS", "AMD Instinct MI300X", "sm_80",
)  # fmt: skip
_FACTORS = (0.0, -1.0, 0.5, 2.0, 10.0, 1000.0, 1e-6, 1.0000001)


# ---------------------------------------------------------------- the corpus


def _templates() -> tuple[list[bytes], list[dict[str, Any]]]:
    """(raw documents used as they are, packets as JSON data to mutate)."""
    raws: list[bytes] = []
    datas: list[dict[str, Any]] = []
    for sub in ("valid", "invalid", "v0.1"):
        for f in sorted((ROOT / "examples/packets" / sub).glob("*.json")):
            raw = f.read_bytes()
            raws.append(b" ".join(raw.split(b"\n")))  # one JSONL line, bytes otherwise kept
            try:
                d = json.loads(raw)
            except ValueError:
                continue
            if isinstance(d, dict):
                datas.append(d)
    sys.path.insert(0, str(ROOT / "tests/adversarial"))
    try:
        from _adv_cheats import CHEATS
        from _adv_controls import CONTROLS
        from _adv_judge import build_cheat
    finally:
        sys.path.pop(0)
    for name in sorted(CONTROLS):
        datas.append(CONTROLS[name].build())
    for name in sorted(CHEATS):
        datas.append(build_cheat(CHEATS[name]))
    datas.extend(_strategy_packets(150))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_validate import recorded_templates
    finally:
        sys.path.pop(0)
    recorded = recorded_templates()
    datas.extend(recorded)
    datas.extend(_edges(recorded))
    return raws, datas


def _edges(recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Packets whose two sides record the same conditions, with values that a rule looking
    at one side still reports (what a shortcut for equal sides must not skip)."""
    out = []
    for base in recorded:
        for change in ("dims", "flush", "interleaved", "warm", "reused"):
            d = copy.deepcopy(base)
            c = d["timing"]["conditions"]
            if change == "dims":
                c["dims"] = {"M": 4096, "m": 2, "N": 4096, "K": 1024}
            elif change == "flush":
                c["cache"] = {"mode": "flushed", "flush_bytes": {"value": 1, "unit": "MiB"}}
            elif change == "interleaved":
                c["interleaved"] = False
                d["timing"]["baseline"]["interleaved"] = True
            elif change == "warm":
                c["cache"] = {"mode": "warm"}
            else:
                c["fresh_inputs"] = False
            d["timing"]["baseline"]["conditions"] = copy.deepcopy(c)
            out.append(d)
    return out


def _strategy_packets(n: int) -> list[dict[str, Any]]:
    from hypothesis import HealthCheck, Phase, given, settings

    from kernel_evidence.strategies import packets

    out: list[dict[str, Any]] = []

    @settings(
        derandomize=True,
        max_examples=n,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(packets())
    def draw(p: Any) -> None:
        out.append(json.loads(p.to_json()))

    draw()
    return out


def _paths(obj: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every member and element path under ``obj``."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((*at, k))
            out.extend(_paths(v, (*at, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((*at, i))
            out.extend(_paths(v, (*at, i)))
    return out


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def _by_key(datas: list[dict[str, Any]]) -> dict[Any, list[Any]]:
    """Values seen at each member name, over all templates (for cross-over mutants)."""
    seen: dict[Any, list[Any]] = {}
    for d in datas:
        for path in _paths(d):
            if isinstance(path[-1], str):
                seen.setdefault(path[-1], []).append(_get(d, path))
    return seen


def _mutate(d: dict[str, Any], rng: random.Random, pool: dict[Any, list[Any]]) -> None:
    paths = [p for p in _paths(d) if p[0] not in ("packet_id", "schema_version")]
    if not paths:
        return
    path = rng.choice(paths)
    parent = _get(d, path[:-1])
    key = path[-1]
    v = parent[key]
    r = rng.random()
    if r < 0.12:  # drop the member or the element
        del parent[key]
    elif r < 0.2 and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(v))
    elif r < 0.4 and isinstance(key, str) and pool.get(key):  # another packet's value here
        parent[key] = copy.deepcopy(rng.choice(pool[key]))
    elif isinstance(v, bool):
        parent[key] = not v
    elif isinstance(v, (int, float)):
        x = v * rng.choice(_FACTORS)
        parent[key] = int(x) if isinstance(v, int) and rng.random() < 0.7 else x
    elif isinstance(v, str):
        parent[key] = rng.choice(_STRINGS) if rng.random() < 0.8 else v + " " + rng.choice(_STRINGS)
    elif isinstance(v, list) and v:
        del v[rng.randrange(len(v))]
    elif isinstance(v, dict) and v:
        del v[rng.choice(sorted(v))]


def _mirror(d: dict[str, Any]) -> None:
    """Give the baseline the candidate's conditions (after a mutation of either): both sides
    then record the same conditions, odd values included."""
    t = d.get("timing")
    if isinstance(t, dict) and isinstance(t.get("baseline"), dict) and isinstance(t.get("conditions"), dict):
        t["baseline"]["conditions"] = copy.deepcopy(t["conditions"])


def build_corpus(path: Path, packets: int, seed: int = 16) -> int:
    """Write the corpus (JSONL) to ``path``; return the number of its records that are not
    mutants (the first ones)."""
    import msgspec

    from kernel_evidence._codec.canonical import packet_id_for

    raws, datas = _templates()
    enc = msgspec.json.Encoder(order="sorted")
    rng = random.Random(seed)
    pool = _by_key(datas)
    lines: list[bytes] = list(raws)
    lines += [enc.encode(d) for d in datas]
    plain = len(lines)
    while len(lines) < packets:
        d = copy.deepcopy(rng.choice(datas))
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            _mutate(d, rng, pool)
        if rng.random() < 0.2:
            _mirror(d)
        if rng.random() < 0.85 and isinstance(d.get("packet_id"), str):
            d["packet_id"] = packet_id_for(d)
        if rng.random() < 0.1:
            lines.append(json.dumps(d, ensure_ascii=rng.random() < 0.5).encode())
        else:
            lines.append(enc.encode(d))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return plain


# ---------------------------------------------------------------- the outcomes


def _outcome(rep: Any) -> list[Any]:
    g = rep.grade
    return [
        rep.location,
        rep.packet_id,
        [[f.rule_id, f.severity, f.pointer, f.message] for f in rep.findings],
        g.letter,
        list(g.reasons),
    ]


def evaluate(corpus: Path, plain: int) -> list[str]:
    """One JSON line per outcome: the batched fast path over every record, then
    ``validate`` of the JSON data of the first ``plain`` records (those that parse)."""
    import kernel_evidence
    from kernel_evidence.rules import validate_paths

    out = [json.dumps(["paths", *_outcome(r)]) for r in validate_paths([str(corpus)])]
    with open(corpus, "rb") as fh:
        for i, line in enumerate(fh):
            if i >= plain:
                break
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict):
                out.append(json.dumps([f"data {i + 1}", *_outcome(kernel_evidence.validate(d))]))
    return out


def _evaluate_at(rev: str, corpus: Path, plain: int, tmp: Path, paths: list[str]) -> list[str]:
    """:func:`evaluate` with the package as committed at ``rev``, in a child process; with
    ``paths``, the package as it is in the working tree but for those files, taken from
    ``rev`` (what isolates one's own edits from those of others in the same tree)."""
    ref = tmp / "ref"
    if paths:
        for sub in ("src/kernel_evidence", "schema"):
            shutil.copytree(ROOT / sub, ref / sub, ignore=shutil.ignore_patterns("__pycache__"))
        for rel in paths:
            shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{rel}"], capture_output=True)
            if shown.returncode == 0:
                (ref / rel).write_bytes(shown.stdout)
            else:
                (ref / rel).unlink(missing_ok=True)
    else:
        tar = tmp / "ref.tar"
        subprocess.run(
            ["git", "-C", str(ROOT), "archive", "-o", str(tar), rev, "src/kernel_evidence", "schema"],
            check=True,
        )
        with tarfile.open(tar) as tf:
            tf.extractall(ref, filter="data")
    result = tmp / "ref.out"
    env = dict(os.environ, PYTHONPATH=str(ref / "src"))
    subprocess.run(
        [sys.executable, __file__, "--evaluate", str(corpus), "--plain", str(plain), "--out", str(result)],
        env=env,
        check=True,
    )
    return result.read_text().splitlines()


def compare(want: list[str], got: list[str], show: int = 10) -> int:
    """Print the differences; return how many outcomes differ."""
    diffs = 0
    rules: Counter[str] = Counter()
    for i, (w, g) in enumerate(zip(want, got, strict=False)):
        if w == g:
            continue
        diffs += 1
        wl, gl = json.loads(w), json.loads(g)
        for f in {tuple(x) for x in wl[3]} ^ {tuple(x) for x in gl[3]}:
            rules[f[0]] += 1
        if diffs <= show:
            print(f"outcome {i} differs:\n  reference: {w[:600]}\n  now:       {g[:600]}")
    if len(want) != len(got):
        print(f"{len(want)} reference outcomes, {len(got)} now")
        diffs += abs(len(want) - len(got))
    if rules:
        print("findings that differ, by rule:", dict(rules.most_common()))
    return diffs


def _summary(lines: list[str]) -> str:
    letters: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    for line in lines:
        o = json.loads(line)
        letters[o[4]] += 1
        for f in o[3]:
            rules[f[0]] += 1
    return f"{len(lines)} outcomes; grades {dict(sorted(letters.items()))}; {len(rules)} rules fired, {sum(rules.values())} findings"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packets", type=int, default=20_000, help="records in the corpus, mutants included")
    ap.add_argument("--seed", type=int, default=16)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--ref", metavar="REV", help="compare with the package as committed at REV")
    g.add_argument("--write", metavar="FILE", help="write the outcomes to FILE")
    g.add_argument("--check", metavar="FILE", help="compare with the outcomes in FILE")
    g.add_argument("--evaluate", metavar="CORPUS", help=argparse.SUPPRESS)  # the child of --ref
    ap.add_argument(
        "--paths",
        nargs="+",
        default=[],
        help="with --ref: only these files from REV, the rest as in the working tree",
    )
    ap.add_argument("--plain", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.evaluate:
        Path(args.out).write_text("\n".join(evaluate(Path(args.evaluate), args.plain)) + "\n")
        return 0
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        corpus = tmp / "corpus.jsonl"
        plain = build_corpus(corpus, args.packets, args.seed)
        got = evaluate(corpus, plain)
        print(_summary(got))
        if args.write:
            Path(args.write).write_text("\n".join(got) + "\n")
            return 0
        want = (
            Path(args.check).read_text().splitlines()
            if args.check
            else _evaluate_at(args.ref, corpus, plain, tmp, args.paths)
        )
    diffs = compare(want, got)
    print("identical" if not diffs else f"{diffs} outcomes differ")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
