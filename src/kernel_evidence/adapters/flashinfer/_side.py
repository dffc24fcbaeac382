"""The files around a trace: definition and solution JSON, the dataset folder, ``run.log``.

A FlashInfer-Trace dataset is a folder holding ``definitions/``, ``solutions/``,
``workloads/`` and ``traces/``; a trace line names its definition and solution, which are
looked up by their ``name`` among the JSON files given as inputs, then in the dataset folder
the trace file sits in. ``run.log`` (written beside the dataset by the flashinfer-bench
runs observed) holds the ``flashinfer-bench run`` command line with the warm-up, iteration
and trial counts.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from ...errors import AdapterError
from .._read import is_junk_entry
from ._io import read_maybe_gzip

__all__ = [
    "Definition",
    "RunSettings",
    "SideIndex",
    "Solution",
    "classify_json",
    "dataset_root",
    "read_run_log",
]

#: definition and solution files are small; a larger one is not read
SIDE_MAX_BYTES = 64 << 20
#: the most JSON files read from one dataset folder's definitions/ and solutions/
SIDE_MAX_FILES = 20_000


@dataclass(frozen=True)
class Definition:
    """What the adapter uses of a definition JSON."""

    name: str
    op_type: str | None
    description: str | None
    #: axis name -> value, for ``const`` axes
    const_axes: dict[str, int]
    #: tensor name -> (axis names or sizes, dtype), inputs then outputs
    tensors: dict[str, tuple[list[Any], str]]
    reference: str | None
    source: str


@dataclass(frozen=True)
class SourceFile:
    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Solution:
    """What the adapter uses of a solution JSON."""

    name: str
    definition: str | None
    author: str | None
    language: str | None
    target_hardware: tuple[str, ...]
    entry_point: str | None
    sources: tuple[SourceFile, ...]
    #: sha256 over the sources' paths and contents, in the file's order
    digest: str | None
    source: str


@dataclass
class SideIndex:
    """Definitions and solutions by name; the first one found for a name wins."""

    definitions: dict[str, Definition] = field(default_factory=dict)
    solutions: dict[str, Solution] = field(default_factory=dict)
    #: dataset folders already indexed
    roots: set[str] = field(default_factory=set)

    def add(self, item: Definition | Solution) -> None:
        if isinstance(item, Definition):
            self.definitions.setdefault(item.name, item)
        else:
            self.solutions.setdefault(item.name, item)

    def add_root(self, root: str, warnings: list[str]) -> None:
        """Index the definitions and solutions of the dataset folder ``root`` (once)."""
        if root in self.roots:
            return
        self.roots.add(root)
        count = 0
        for sub in ("definitions", "solutions"):
            base = Path(root, sub)
            if not base.is_dir():
                continue
            for p in sorted(base.rglob("*.json")):
                if not p.is_file() or is_junk_entry(p, base):
                    continue
                count += 1
                if count > SIDE_MAX_FILES:
                    warnings.append(
                        f"{root}: more than {SIDE_MAX_FILES} definition/solution files; the rest not read"
                    )
                    return
                try:
                    item = classify_json(str(p), read_maybe_gzip(str(p), SIDE_MAX_BYTES, "a JSON file"))
                except AdapterError as exc:
                    warnings.append(f"skipped: {exc}")
                    continue
                if item is not None:
                    self.add(item)


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _definition(path: str, d: dict[str, Any]) -> Definition:
    const: dict[str, int] = {}
    axes = d.get("axes")
    if isinstance(axes, dict):
        for name, spec in axes.items():
            if isinstance(spec, dict) and spec.get("type") == "const":
                v = spec.get("value")
                if isinstance(v, int) and not isinstance(v, bool):
                    const[str(name)] = v
    tensors: dict[str, tuple[list[Any], str]] = {}
    for part in ("inputs", "outputs"):
        block = d.get(part)
        if not isinstance(block, dict):
            continue
        for name, spec in block.items():
            if not isinstance(spec, dict):
                continue
            dtype = _str(spec.get("dtype"))
            shape = spec.get("shape")
            if dtype is None:
                continue
            tensors[str(name)] = (list(shape) if isinstance(shape, list) else [], dtype)
    return Definition(
        name=str(d["name"]),
        op_type=_str(d.get("op_type")),
        description=_str(d.get("description")),
        const_axes=const,
        tensors=tensors,
        reference=d.get("reference") if isinstance(d.get("reference"), str) else None,
        source=os.path.basename(path),
    )


def _solution(path: str, d: dict[str, Any]) -> Solution:
    raw_spec = d.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    target = spec.get("target_hardware")
    targets = tuple(str(t) for t in target if isinstance(t, str)) if isinstance(target, list) else ()
    files: list[SourceFile] = []
    whole = hashlib.sha256()
    sources = d.get("sources")
    if isinstance(sources, list):
        for s in sources:
            if not isinstance(s, dict) or not isinstance(s.get("content"), str):
                continue
            given = s.get("path")
            name = given if isinstance(given, str) else f"source{len(files)}"
            body = s["content"].encode("utf-8", "surrogatepass")
            files.append(SourceFile(name, "sha256:" + hashlib.sha256(body).hexdigest(), len(body)))
            # the path and the length delimit each source, so moving text between two files
            # changes the digest
            whole.update(f"{name}\0{len(body)}\0".encode("utf-8", "surrogatepass"))
            whole.update(body)
    return Solution(
        name=str(d["name"]),
        definition=_str(d.get("definition")),
        author=_str(d.get("author")),
        language=_str(spec.get("language")),
        target_hardware=targets,
        entry_point=_str(spec.get("entry_point")),
        sources=tuple(files),
        digest="sha256:" + whole.hexdigest() if files else None,
        source=os.path.basename(path),
    )


def classify_json(path: str, data: bytes) -> Definition | Solution | None:
    """The definition or solution that ``data`` (a JSON object) is, or None for any other
    JSON; :class:`AdapterError` when it is not JSON."""
    try:
        d = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise AdapterError(f"{path}: not JSON ({exc}); expected a definition or solution JSON") from None
    if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not d["name"]:
        return None
    if "sources" in d or "spec" in d:
        return _solution(path, d)
    if "reference" in d or ("axes" in d and ("inputs" in d or "outputs" in d)):
        return _definition(path, d)
    return None


def dataset_root(trace_path: str, levels: int = 4) -> str | None:
    """The dataset folder a trace file sits in: the nearest ancestor (up to ``levels`` up)
    holding ``traces/`` and ``definitions/`` or ``solutions/``."""
    here = os.path.dirname(os.path.abspath(trace_path))
    given = os.path.dirname(trace_path) or "."
    for _ in range(levels):
        if os.path.isdir(os.path.join(here, "traces")) and (
            os.path.isdir(os.path.join(here, "definitions")) or os.path.isdir(os.path.join(here, "solutions"))
        ):
            return os.path.normpath(given)
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
        given = os.path.join(given, "..")
    return None


@dataclass(frozen=True)
class RunSettings:
    """What ``run.log`` says about the benchmark loop."""

    warmup: int | None = None
    iterations: int | None = None
    trials: int | None = None
    timeout_s: int | None = None
    command: tuple[str, ...] | None = None
    source: str | None = None


_RUN_LINE = re.compile(r"flashinfer-bench\s+run\b[^\n]*")
_FLAGS = {
    "--warmup-runs": "warmup",
    "--iterations": "iterations",
    "--num-trials": "trials",
    "--timeout": "timeout_s",
}


def read_run_log(root: str) -> RunSettings | None:
    """The ``flashinfer-bench run`` settings in ``run.log`` in ``root`` or its parent."""
    for folder in (root, os.path.dirname(os.path.abspath(root))):
        path = os.path.join(folder, "run.log")
        if not os.path.isfile(path):
            continue
        try:
            text = read_maybe_gzip(path, SIDE_MAX_BYTES, "a run log").decode("utf-8", "replace")
        except AdapterError:
            return None
        m = _RUN_LINE.search(text)
        if m is None:
            return None
        try:
            argv = shlex.split(m.group(0))
        except ValueError:
            return None
        found: dict[str, int] = {}
        for i, arg in enumerate(argv):
            flag, _, inline = arg.partition("=")
            key = _FLAGS.get(flag)
            if key is None:
                continue
            value = inline or (argv[i + 1] if i + 1 < len(argv) else "")
            if value.isdigit():
                found[key] = int(value)
        return RunSettings(command=tuple(argv), source=path, **found)
    return None
