"""Metamorphic tests: rewrite every real input the way another tool version or platform
could have written it, without changing its meaning, and check that the packets say the same.

Inputs are the real files under ``/work/shared/corpus/{ncu,rocprof,vllm,xprof}`` (skipped
when absent; override the root with ``KEV_CORPUS``) and the project fixtures under
``tests/fixtures``. Nothing is copied into the project: each variant is written under
``tmp_path`` at test time.

What must not change: kernel names and count, canonical metrics per kernel record, timing
statistics, serving metrics, hardware, subject, status. What may: ids and file digests (the
bytes differ), the order of raw columns, and raw/attribute entries named like the junk the
transformation added (``x_unknown*``). Warnings must stay the same too (paths aside).
"""

from __future__ import annotations

import copy
import csv
import gzip
import io
import json
import math
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence.adapters import AdapterOptions, get_adapter
from kernel_evidence.errors import KernelEvidenceError

CORPUS = Path(os.environ.get("KEV_CORPUS", "/work/shared/corpus"))
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OPTS = AdapterOptions(created_at="2026-01-01T00:00:00Z")
JUNK = "x_unknown"
SKIP_NAMES = {"FORMAT_NOTES.md", "SOURCES.tsv", "make_fixtures.py", "derived", "README.md"}

# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Case:
    tool: str
    path: Path  # a file or a directory

    @property
    def label(self) -> str:
        root = "corpus" if CORPUS in self.path.parents else "fixture"
        return f"{self.tool}:{root}:{self.path.name}"


def _inputs() -> list[Case]:
    out: list[Case] = []
    for tool in ("ncu", "rocprof", "vllm", "xprof"):
        for root in (CORPUS / tool, CORPUS / tool / "derived", FIXTURES / tool):
            if not root.is_dir():
                continue
            for p in sorted(root.iterdir()):
                if p.name in SKIP_NAMES or p.name.startswith("."):
                    continue
                if tool != "rocprof" and p.is_dir():
                    continue
                if tool == "rocprof" and not p.is_dir():
                    continue
                out.append(Case(tool, p))
    return out


# --------------------------------------------------------------------------- running


@dataclass
class Outcome:
    content: Any = None  # normalised packets + warnings
    error: str | None = None  # class of the KernelEvidenceError raised
    message: str = ""


def _run(tool: str, target: Path, roots: list[Path], renames: dict[str, str] | None = None) -> Outcome:
    try:
        result = get_adapter(tool).read([str(target)], OPTS)
    except KernelEvidenceError as exc:
        msg = str(exc)
        assert "\n" not in msg.strip(), f"multi-line error: {msg!r}"
        return Outcome(error=type(exc).__name__, message=msg)
    subs = [(str(r), "<ROOT>") for r in sorted(roots, key=lambda r: -len(str(r)))]
    subs += list((renames or {}).items())

    def fix(s: str) -> str:
        for a, b in subs:
            s = s.replace(a, b)
        return s

    packets = [_norm(p.to_dict(), fix) for p in result.packets]
    return Outcome(
        content={
            "packets": packets,
            "warnings": sorted(_EXAMPLE.sub("(e.g. `...`)", fix(w)) for w in result.warnings),
        }
    )


_EXAMPLE = re.compile(r"\(e\.g\. `[^`]*`\)")


_DROP = {"packet_id", "id", "created_at"}


def _norm(obj: Any, fix: Callable[[str], str]) -> Any:
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in _DROP:
                continue
            if k == "source" and isinstance(v, dict):
                v = {"kind": v.get("kind"), "name": v.get("name")}
            out[k] = _norm(v, fix)
            if k == "non_finite_keys" and isinstance(out[k], list):  # raw: in the file's key order
                out[k] = sorted(out[k])
        return out
    if isinstance(obj, list):
        return [_norm(v, fix) for v in obj]
    if isinstance(obj, str):  # an example cell quoted in a warning may be another one
        return _EXAMPLE.sub("(e.g. `...`)", fix(obj))
    return obj


#: under these keys the variant may hold more entries (junk columns/keys it was given)
_SUBSET_KEYS = {"raw_columns", "raw_units", "raw", "attributes", "extensions", "metadata", "settings"}


def _diff(a: Any, b: Any, path: str, subset: bool, ignore: frozenset[str], out: list[str]) -> None:
    if len(out) > 20:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k in ignore:
                continue
            if k not in b:
                out.append(f"{path}.{k}: missing in variant")
                continue
            _diff(a[k], b[k], f"{path}.{k}", subset or k in _SUBSET_KEYS, ignore, out)
        for k in b:
            if k not in a and k not in ignore:
                if subset and (JUNK in k or k == "" or k.startswith("column_")):
                    continue
                if k in _SUBSET_KEYS and isinstance(b[k], dict) and all(JUNK in x for x in b[k]):
                    continue
                out.append(f"{path}.{k}: only in variant ({str(b[k])[:80]})")
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: length {len(a)} != {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]", subset, ignore, out)
        return
    if (
        isinstance(a, bool)
        or isinstance(b, bool)
        or not isinstance(a, (int, float))
        or not isinstance(b, (int, float))
    ):
        if a != b:
            out.append(f"{path}: {str(a)[:100]!r} != {str(b)[:100]!r}")
        return
    if math.isnan(a) and math.isnan(b):
        return
    if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
        out.append(f"{path}: {a!r} != {b!r}")


def _compare(base: Outcome, var: Outcome, ignore: frozenset[str] = frozenset()) -> None:
    assert base.error == var.error, f"baseline error {base.error}, variant error {var.error}: {var.message}"
    if base.error is not None:
        return
    problems: list[str] = []
    _diff(base.content, var.content, "", False, ignore, problems)
    assert not problems, "\n".join(problems)


_BASELINES: dict[tuple[str, Path], Outcome] = {}


def _baseline(case: Case, tmp_factory: pytest.TempPathFactory) -> Outcome:
    key = (case.tool, case.path)
    if key not in _BASELINES:
        root = tmp_factory.mktemp("base")
        target = _place(case.path, root)
        _BASELINES[key] = _run(case.tool, target, [root])
    return _BASELINES[key]


def _place(src: Path, root: Path) -> Path:
    dst = root / src.name
    if src.is_dir():
        shutil.copytree(src, dst)
        for p in dst.rglob("*"):
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        os.chmod(dst, 0o755)
    else:
        shutil.copyfile(src, dst)
    return dst


# --------------------------------------------------------------------------- CSV

_NCU_HEADER = re.compile(r'^\ufeff?"?ID"?,"?Process ID"?,')


def _csv_start(lines: list[str]) -> int:
    for i, line in enumerate(lines):
        if _NCU_HEADER.match(line):
            return i
    return 0


def _is_csv_text(text: str, name: str) -> bool:
    lines = text.splitlines()
    if any(_NCU_HEADER.match(x) for x in lines[:400]):
        return True
    return name.lower().endswith(".csv") and bool(lines) and "," in lines[0]


def _rewrite_csv(
    text: str,
    fn: Callable[[list[list[str]]], list[list[str]]],
    quoting: int | None = None,
    eol: str = "\n",
    pad: bool = True,
) -> str:
    """Rewrite the CSV table of ``text`` record by record (a quoted cell may span lines);
    what precedes an ncu header and ncu noise lines inside the table (``==PROF==``, program
    output: lines that do not start with a quote, blank lines) stay as they are."""
    lines = text.splitlines(keepends=True)
    start = _csv_start([x.rstrip("\r\n") for x in lines])
    ncu = bool(lines) and bool(_NCU_HEADER.match(lines[start]))
    quoted = lines[start].lstrip("\ufeff").startswith('"') if start < len(lines) else False
    rows: list[list[str]] = []
    slots: list[str | int] = []  # verbatim line, or index into rows
    pending = ""
    for line in lines[start:]:
        if pending:
            pending += line
        else:
            bare = line.rstrip("\r\n")
            if not bare.strip() or (ncu and (bare.startswith("==") or (quoted and not bare.startswith('"')))):
                slots.append(bare + eol)
                continue
            pending = line
        if pending.count('"') % 2:
            continue  # a quoted cell goes on on the next line
        slots.append(len(rows))
        rows.append(next(csv.reader(io.StringIO(pending.lstrip("\ufeff")))))
        pending = ""
    if not rows:
        return text
    if (
        quoting == csv.QUOTE_MINIMAL
        and ncu
        and any(isinstance(x, str) and x.strip() and not x.startswith("==") for x in slots)
    ):
        return text  # program output inside an unquoted table cannot be told from rows: ncu always quotes
    width = len(rows[0])
    if pad:  # ragged rows (ncu details page) padded, so that columns can move
        rows = [r + [""] * (width - len(r)) if 0 < len(r) < width else r for r in rows]
    new_rows = fn(rows)
    if quoting is None:
        quoting = csv.QUOTE_ALL if quoted else csv.QUOTE_MINIMAL
    out = [x.rstrip("\r\n") + eol for x in lines[:start]]
    for slot in slots:
        if isinstance(slot, str):
            out.append(slot)
            continue
        buf = io.StringIO()
        csv.writer(buf, quoting=quoting, lineterminator=eol).writerow(new_rows[slot])
        out.append(buf.getvalue())
    return "".join(out)


def _reverse_cols(rows: list[list[str]]) -> list[list[str]]:
    return [list(reversed(r)) if r else r for r in rows]


def _extra_cols(rows: list[list[str]]) -> list[list[str]]:
    out = []
    for i, r in enumerate(rows):
        if not r:
            out.append(r)
            continue
        if i == 0:
            out.append([r[0], f"{JUNK}_A", *r[1:], f"{JUNK}_B"])
        else:
            out.append([r[0], "junk, with comma", *r[1:], "v7"])
    return out


def _trailing_empty(rows: list[list[str]]) -> list[list[str]]:
    return [[*r, ""] if r else r for r in rows]


#: optional columns a tool version may lack; the only thing allowed to change is what they fed
DROPPABLE = ("Host Name", "obj", "Stream_Id", "Thread_Id", "Correlation_Id")


def _drop_cols(rows: list[list[str]]) -> list[list[str]]:
    keep = [i for i, name in enumerate(rows[0]) if name not in DROPPABLE]
    return [[r[i] for i in keep if i < len(r)] if r else r for r in rows]


def _text_crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _text_bom(text: str) -> str:
    return "\ufeff" + text.lstrip("\ufeff")


def _text_blank_tail(text: str) -> str:
    return text.rstrip("\n") + "\n\n\n"


CSV_TRANSFORMS: dict[str, Callable[[str], str]] = {
    "reorder_columns": lambda t: _rewrite_csv(t, _reverse_cols),
    "extra_columns": lambda t: _rewrite_csv(t, _extra_cols),
    "trailing_empty_column": lambda t: _rewrite_csv(t, _trailing_empty),
    "quote_all": lambda t: _rewrite_csv(t, lambda r: r, csv.QUOTE_ALL, pad=False),
    "quote_minimal": lambda t: _rewrite_csv(t, lambda r: r, csv.QUOTE_MINIMAL, pad=False),
    "drop_optional_column": lambda t: _rewrite_csv(t, _drop_cols),
    "crlf": lambda t: _rewrite_csv(t, lambda r: r, eol="\r\n", pad=False),
    "bom": _text_bom,
    "blank_tail": _text_blank_tail,
}
RESHAPING = ("reorder_columns", "extra_columns", "trailing_empty_column", "drop_optional_column")
TEXT_TRANSFORMS: dict[str, Callable[[str], str]] = {
    "crlf": _text_crlf,
    "bom": _text_bom,
    "blank_tail": _text_blank_tail,
}

# --------------------------------------------------------------------------- JSON


def _walk(obj: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(obj, dict):
        return fn({k: _walk(v, fn) for k, v in obj.items()})
    if isinstance(obj, list):
        return fn([_walk(v, fn) for v in obj])
    return fn(obj)


def _reverse_keys(o: Any) -> Any:
    return dict(reversed(list(o.items()))) if isinstance(o, dict) else o


#: maps keyed by data, not by field name: an added key there is data (a sweep override, a percentile)
_DATA_MAPS = ("percentiles", "serve_overrides", "bench_overrides")


def _add_junk(o: Any) -> Any:
    if isinstance(o, dict):
        o = {
            k: {kk: vv for kk, vv in v.items() if not kk.startswith(JUNK)}
            if k in _DATA_MAPS and isinstance(v, dict)
            else v
            for k, v in o.items()
        }
        return {**o, f"{JUNK}_key": "junk"}
    return o


def _int_to_float(o: Any) -> Any:
    return float(o) if type(o) is int and abs(o) < 2**53 else o


def _float_to_int(o: Any) -> Any:
    return int(o) if type(o) is float and o.is_integer() and abs(o) < 2**53 else o


def _escape_str(s: str) -> str:
    body = json.dumps(s, ensure_ascii=True)[1:-1]
    if s and s[0].isalpha():  # \uXXXX for the first letter too: legal JSON, same string
        body = f"\\u{ord(s[0]):04x}" + body[1:]
    return '"' + body + '"'


def _dump_escaped(o: Any) -> str:
    if isinstance(o, dict):
        return "{" + ",".join(f"{_escape_str(k)}:{_dump_escaped(v)}" for k, v in o.items()) + "}"
    if isinstance(o, list):
        return "[" + ",".join(_dump_escaped(v) for v in o) + "]"
    if isinstance(o, str):
        return _escape_str(o)
    return json.dumps(o)


def _loads_all(text: str) -> tuple[list[Any], bool]:
    """The JSON value(s) of ``text`` and whether it was JSON Lines."""
    try:
        return [json.loads(text)], False
    except json.JSONDecodeError:
        return [json.loads(x) for x in text.splitlines() if x.strip()], True


def _json_rewrite(
    fn: Callable[[Any], Any], dump: Callable[[Any, bool], str] | None = None
) -> Callable[[str], str]:
    def go(text: str) -> str:
        values, lines = _loads_all(text)
        values = [fn(v) for v in values]
        if dump is not None:
            return "\n".join(dump(v, lines) for v in values) + "\n"
        compact = "\n" not in text.strip() or lines
        if compact:
            return "\n".join(json.dumps(v, separators=(",", ":")) for v in values) + "\n"
        return json.dumps(values[0], indent=2) + "\n"

    return go


def _top_junk(o: Any) -> Any:
    return {**o, f"{JUNK}_obj": {"a": [1, None, "b"], "c": {"d": 1.5}}} if isinstance(o, dict) else o


JSON_TRANSFORMS: dict[str, Callable[[str], str]] = {
    "reorder_keys": _json_rewrite(lambda v: _walk(v, _reverse_keys)),
    "pretty_or_compact": _json_rewrite(
        lambda v: v,
        lambda v, lines: (
            json.dumps(v, separators=(",", ":"))
            if not lines and "\n" in json.dumps(v, indent=1)
            else json.dumps(v, separators=(", ", ": "))
        ),
    ),
    "indent": _json_rewrite(
        lambda v: v, lambda v, lines: json.dumps(v) if lines else json.dumps(v, indent=4)
    ),
    "junk_keys": _json_rewrite(lambda v: _top_junk(_walk(v, _add_junk))),
    "unicode_escapes": _json_rewrite(lambda v: v, lambda v, lines: _dump_escaped(v)),
    "int_to_float": _json_rewrite(lambda v: _walk(v, _int_to_float)),
    "float_to_int": _json_rewrite(lambda v: _walk(v, _float_to_int)),
    "crlf": _text_crlf,
    "bom": _text_bom,
}

# --------------------------------------------------------------------------- variants


def _decode(data: bytes) -> tuple[str, bool]:
    gz = data[:2] == b"\x1f\x8b"
    if gz:
        data = gzip.decompress(data)
    return data.decode("utf-8"), gz


def _encode(text: str, gz: bool) -> bytes:
    data = text.encode("utf-8")
    return gzip.compress(data, mtime=0) if gz else data


def _file_kind(path: Path) -> str | None:
    """csv | json | text | None (binary) for one input file."""
    data = path.read_bytes()
    try:
        text, _ = _decode(data)
    except (UnicodeDecodeError, OSError, EOFError):
        return None
    stripped = text.lstrip("\ufeff \r\n\t")
    if path.name.lower().endswith((".json", ".json.gz", ".jsonl")) or stripped[:1] in "{[":
        try:
            _loads_all(text)
        except (json.JSONDecodeError, ValueError):
            return "text"
        return "json"
    if _is_csv_text(text, path.name.removesuffix(".gz")):
        return "csv"
    return "text"


def _transforms_for(kind: str | None) -> dict[str, Callable[[str], str]]:
    return {"csv": CSV_TRANSFORMS, "json": JSON_TRANSFORMS, "text": TEXT_TRANSFORMS}.get(kind or "", {})


def _apply_to_file(path: Path, name: str) -> bool:
    kind = _file_kind(path)
    fn = _transforms_for(kind).get(name)
    if fn is None:
        return False
    text, gz = _decode(path.read_bytes())
    new = fn(text)
    if new == text:
        return False
    path.write_bytes(_encode(new, gz))
    return True


#: inputs larger than this (bytes as stored) get only BIG_TRANSFORMS: keeps the suite fast
BIG_INPUT = 150_000
BIG_TRANSFORMS = (
    "reorder_columns",
    "extra_columns",
    "trailing_empty_column",
    "junk_keys",
    "int_to_float",
    "crlf",
)

DIR_TRANSFORMS = ("extra_files", "apple_double", "nested")


def _extra_files(folder: Path) -> None:
    (folder / "README.md").write_text("# notes\nrun on node 3\n")
    (folder / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1" + bytes(range(256)))
    (folder / "roofline.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    (folder / "Thumbs.db").write_bytes(b"\xd0\xcf\x11\xe0" + b"\x00" * 32)


def _apple_double(folder: Path) -> None:
    """macOS archives put ``._name`` resource forks beside every file (and a __MACOSX/ tree)."""
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.name.startswith("._"):
            blob = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + b"\x00" * 40
            (p.parent / f"._{p.name}").write_bytes(blob)
            mac = folder / "__MACOSX" / p.relative_to(folder).parent
            mac.mkdir(parents=True, exist_ok=True)
            (mac / f"._{p.name}").write_bytes(blob)


def _variants() -> Iterator[Any]:
    for case in _inputs():
        files = sorted(f for f in case.path.rglob("*") if f.is_file()) if case.path.is_dir() else [case.path]
        kinds = {_file_kind(f) for f in files}
        names: list[str] = []
        for kind in ("csv", "json", "text"):
            if kind in kinds:
                names.extend(n for n in _transforms_for(kind) if n not in names)
        size = sum(f.stat().st_size for f in files)
        if size > BIG_INPUT:  # big inputs: the transformations most likely to matter only
            names = [n for n in names if n in BIG_TRANSFORMS]
        # a transformation that changes none of the files is not a case (known here, at
        # collection, rather than skipped at run time)
        names = [n for n in names if any(_changes(f, n) for f in files)]
        for name in (*names, *DIR_TRANSFORMS):
            yield pytest.param(case, name, id=f"{case.label}-{name}")


def _changes(path: Path, name: str) -> bool:
    """Whether transformation ``name`` changes the file (as :func:`_apply_to_file` would)."""
    fn = _transforms_for(_file_kind(path)).get(name)
    if fn is None:
        return False
    text, _gz = _decode(path.read_bytes())
    return bool(fn(text) != text)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus {CORPUS} absent (fixtures still run)")
def test_corpus_present() -> None:
    assert any(c for c in _inputs() if CORPUS in c.path.parents)


@pytest.mark.parametrize(("case", "transform"), list(_variants()))
def test_meaning_preserved(
    case: Case, transform: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = _baseline(case, tmp_path_factory)
    root = tmp_path / "v"
    root.mkdir()
    target = _place(case.path, root)
    ignore: frozenset[str] = frozenset()
    if transform in DIR_TRANSFORMS:
        if not case.path.is_dir():  # a lone file: compare its clean folder with the altered one
            clean = tmp_path / "clean"
            clean.mkdir()
            _place(case.path, clean)
            base = _run(case.tool, clean, [clean])
            target = root
        if transform == "extra_files":
            _extra_files(target)
        elif transform == "apple_double":
            _apple_double(target)
        else:
            deep = tmp_path / "outer" / "inner"
            deep.mkdir(parents=True)
            shutil.move(str(target), str(deep / target.name))
            target, root = tmp_path / "outer", deep if case.path.is_dir() else deep / root.name
        _compare(base, _run(case.tool, target, [root]))
        return
    files = sorted(f for f in target.rglob("*") if f.is_file()) if target.is_dir() else [target]
    changed = [f for f in files if _apply_to_file(f, transform)]
    if not changed:
        pytest.skip("transformation leaves these inputs unchanged")
    if base.error is not None and transform in RESHAPING:
        pytest.skip("padding the rows of a malformed table repairs it")
    if transform == "drop_optional_column":
        ignore = frozenset(DROPPABLE)
    var = _run(case.tool, target, [root])
    if transform in RESHAPING and base.content is not None and var.content is not None:
        # the rewrite pads short (ragged) rows: the adapter's note that it padded them goes
        base = Outcome(content=copy.deepcopy(base.content))  # the cached baseline stays whole
        for out in (base, var):
            out.content["warnings"] = [w for w in out.content["warnings"] if "padded" not in w]
            for p in out.content["packets"]:
                for cap in p.get("profiler") or []:
                    if cap.get("warnings"):
                        cap["warnings"] = [w for w in cap["warnings"] if "padded" not in w] or None
                    if cap.get("warnings") is None:
                        cap.pop("warnings", None)
    _compare(base, var, ignore)
