"""GPU MODE kernelbot results as run records, whatever container they came in.

Four containers hold the same runs (field names: ``docs/adapters/kernelbot.md``):

- a runner's ``result.json``: a ``FullResult`` (``success``, ``error``, ``system``,
  ``runs`` mapping a run key such as ``test``, ``benchmark``, ``leaderboard`` to an
  ``EvalResult`` with ``start``, ``end``, ``compilation``, ``run``, ``profile``);
- a submission as the bot's database returns it: ``SubmissionItem`` (``submission_id``,
  ``leaderboard_name``, ``user_id``, ``file_name``, ``runs``: a list of ``RunItem``
  with ``start_time``, ``end_time``, ``mode``, ``secret``, ``runner``, ``score``,
  ``passed``, ``compilation``, ``meta``, ``result``, ``system``), or a bare list of run items
  (the admin ``runs.json``);
- a Parquet export of runs: gpu-mode/kernelbot-data's ``submissions.parquet`` (one row a
  run: ``run_mode``, ``run_score``, ``run_passed``, ``run_result``, ``run_system_info``,
  ``run_start_time``, ``run_end_time`` beside the submission's columns); columns
  ``run_secret``/``secret`` and ``run_runner``/``runner`` are read when present.

Every key is optional: a record keeps what its container had.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..._iso import parse_iso
from ...errors import AdapterError

__all__ = ["RunRecord", "records_from_json", "records_from_parquet", "looks_like_kernelbot"]

_WHAT = "a GPU MODE kernelbot result (result.json FullResult, run items, or a runs Parquet export)"
#: Parquet columns read, by the record field they fill (first present wins)
_PARQUET = {
    "mode": ("run_mode", "mode"),
    "score": ("run_score", "score"),
    "passed": ("run_passed", "passed"),
    "result": ("run_result", "result"),
    "system": ("run_system_info", "system_info", "system"),
    "start": ("run_start_time", "start_time"),
    "end": ("run_end_time", "end_time"),
    "secret": ("run_secret", "secret"),
    "runner": ("run_runner", "runner"),
    "meta": ("run_meta", "meta"),
    "compilation": ("run_compilation", "compilation"),
    "run_id": ("run_id",),
    "submission_id": ("submission_id",),
    "leaderboard_id": ("leaderboard_id",),
    "leaderboard": ("leaderboard_name", "problem_name"),
    "user": ("user_name", "user_id"),
    "file_name": ("file_name",),
    "code": ("code",),
    "code_id": ("code_id",),
    "submission_time": ("submission_time",),
}


@dataclass
class RunRecord:
    """One run of one submission on one GPU, in the bot's own terms."""

    where: str
    key: str | None = None  # the FullResult run key (``test``, ``benchmark``, ``profile.0``...)
    mode: str | None = None
    secret: bool | None = None
    runner: str | None = None
    score: float | None = None
    passed: bool | None = None
    success: bool | None = None
    command: str | None = None
    exit_code: int | None = None
    duration: float | None = None
    stderr: str | None = None
    result: dict[str, str] = field(default_factory=dict)
    system: dict[str, Any] = field(default_factory=dict)
    compilation: dict[str, Any] | None = None
    start: Any = None
    end: Any = None
    run_id: Any = None
    submission_id: Any = None
    leaderboard_id: Any = None
    leaderboard: str | None = None
    user: str | None = None
    file_name: str | None = None
    code: str | None = None
    code_id: Any = None
    #: the FullResult said the runner itself failed (``success: false``, with ``error``)
    runner_error: str | None = None


def looks_like_kernelbot(head: bytes) -> bool:
    """Whether the first bytes of a JSON file look like a kernelbot result."""
    return (
        b'"runs"' in head
        or b'"mode"' in head
        and b'"result"' in head
        and (b'"system"' in head or b'"system_info"' in head)
    )


def _obj(value: Any, where: str, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):  # a JSON column or a field stored as text
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            raise AdapterError(f"{where}: `{what}` is text that is not JSON; expected an object") from None
    if isinstance(value, list) and all(isinstance(kv, (list, tuple)) and len(kv) == 2 for kv in value):
        return {str(k): v for k, v in value}  # a Parquet map column: (key, value) pairs
    if not isinstance(value, Mapping):
        raise AdapterError(f"{where}: `{what}` is {type(value).__name__}; expected an object")
    return dict(value)


def _result(value: Any, where: str) -> dict[str, str]:
    """The tester's ``key: value`` lines as a dict of texts (a JSON column may hold numbers)."""
    raw = _obj(value, where, "result")
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in raw.items() if v is not None}


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _int(value: Any) -> int | None:
    f = _float(value)
    return int(f) if f is not None and f.is_integer() else None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _fill_run(rec: RunRecord, run: Mapping[str, Any]) -> None:
    """A ``RunResult`` (FullResult) or a run item's ``meta``."""
    rec.success = _bool(run.get("success"))
    if "passed" in run and rec.passed is None:
        rec.passed = _bool(run.get("passed"))
    rec.command = _text(run.get("command"))
    rec.exit_code = _int(run.get("exit_code"))
    rec.duration = _float(run.get("duration"))
    rec.stderr = _text(run.get("stderr"))


def records_from_json(path: str, data: bytes) -> list[RunRecord]:
    """The run records of a kernelbot JSON file; :class:`AdapterError` naming the file when
    it is not one."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise AdapterError(f"{path}: not JSON ({exc}); expected {_WHAT}") from None
    if isinstance(doc, list):
        return [_run_item(item, f"{path}: item {i}", {}) for i, item in enumerate(doc, 1)]
    if not isinstance(doc, dict):
        raise AdapterError(f"{path}: a JSON {type(doc).__name__}; expected {_WHAT}")
    runs = doc.get("runs")
    if isinstance(runs, dict):
        return list(_full_result(path, doc, runs))
    if isinstance(runs, list):
        sub = {k: doc.get(k) for k in ("submission_id", "leaderboard_id", "leaderboard_name", "user_id",
                                         "user_name", "file_name", "code", "submission_time")}  # fmt: skip
        return [_run_item(item, f"{path}: run {i}", sub) for i, item in enumerate(runs, 1)]
    if "mode" in doc and "result" in doc:
        return [_run_item(doc, path, {})]
    raise AdapterError(f"{path}: a JSON object without `runs` (or `mode` and `result`); expected {_WHAT}")


def _full_result(path: str, doc: Mapping[str, Any], runs: Mapping[str, Any]) -> Iterator[RunRecord]:
    system = _obj(doc.get("system"), path, "system")
    if doc.get("success") is False and not runs:
        yield RunRecord(
            where=path, system=system, success=False, runner_error=_text(doc.get("error")) or "failed"
        )
        return
    for key, ev in runs.items():
        where = f"{path}: run `{key}`"
        if not isinstance(ev, Mapping):
            raise AdapterError(f"{where}: {type(ev).__name__}; expected an EvalResult object")
        rec = RunRecord(where=where, key=str(key), mode=str(key).split(".")[0], system=system)
        rec.start, rec.end = ev.get("start"), ev.get("end")
        rec.compilation = _obj(ev.get("compilation"), where, "compilation") or None
        run = _obj(ev.get("run"), where, "run")
        if run:
            _fill_run(rec, run)
            rec.result = _result(run.get("result"), where)
        yield rec


def _run_item(item: Any, where: str, sub: Mapping[str, Any]) -> RunRecord:
    if not isinstance(item, Mapping):
        raise AdapterError(f"{where}: {type(item).__name__}; expected a run object")
    rec = RunRecord(where=where, mode=_text(item.get("mode")))
    rec.secret = _bool(item.get("secret"))
    rec.runner = _text(item.get("runner"))
    rec.score = _float(item.get("score"))
    rec.passed = _bool(item.get("passed"))
    rec.start, rec.end = item.get("start_time", item.get("start")), item.get("end_time", item.get("end"))
    rec.compilation = _obj(item.get("compilation"), where, "compilation") or None
    meta = _obj(item.get("meta"), where, "meta")
    if meta:
        _fill_run(rec, meta)
    rec.result = _result(item.get("result"), where)
    rec.system = _obj(item.get("system", item.get("system_info")), where, "system")
    rec.submission_id = sub.get("submission_id")
    rec.leaderboard_id = sub.get("leaderboard_id")
    rec.leaderboard = _text(sub.get("leaderboard_name"))
    rec.user = _text(sub.get("user_name") or sub.get("user_id"))
    rec.file_name = _text(sub.get("file_name"))
    rec.code = _text(sub.get("code"))
    return rec


def records_from_parquet(path: str) -> list[RunRecord]:
    """One run record per row of a kernelbot runs export."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
        names = set(schema.names)
        wanted = {f: next((c for c in cols if c in names), None) for f, cols in _PARQUET.items()}
        if wanted["result"] is None and wanted["score"] is None:
            raise AdapterError(
                f"{path}: a Parquet file without `run_result` or `score` columns; expected {_WHAT}"
            )
        table = pq.read_table(path, columns=sorted({c for c in wanted.values() if c is not None}))
    except (pa.ArrowException, OSError) as exc:
        raise AdapterError(
            f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]}); expected {_WHAT}"
        ) from None
    out: list[RunRecord] = []
    for i, row in enumerate(table.to_pylist(), 1):
        where = f"{path}: row {i}"
        rec = RunRecord(where=where)
        get = {f: (row.get(c) if c is not None else None) for f, c in wanted.items()}
        rec.mode = _text(get["mode"])
        rec.score = _float(get["score"])
        rec.passed = _bool(get["passed"])
        rec.secret = _bool(get["secret"])
        rec.runner = _text(get["runner"])
        rec.result = _result(get["result"], where)
        rec.system = _obj(get["system"], where, "run_system_info")
        rec.start, rec.end = get["start"], get["end"]
        meta = _obj(get["meta"], where, "meta")
        if meta:
            _fill_run(rec, meta)
        rec.compilation = _obj(get["compilation"], where, "compilation") or None
        rec.run_id = get["run_id"]
        rec.submission_id = get["submission_id"]
        rec.leaderboard_id = get["leaderboard_id"]
        rec.leaderboard = _text(get["leaderboard"])
        rec.user = _text(get["user"])
        rec.file_name = _text(get["file_name"])
        rec.code = _text(get["code"])
        rec.code_id = get["code_id"]
        out.append(rec)
    return out


def utc_text(value: Any) -> tuple[str | None, bool]:
    """(an RFC 3339 UTC time, whether the value named no zone) for a run's start."""
    if value is None or value == "":
        return None, False
    if isinstance(value, str):
        try:
            value = parse_iso(value)
        except ValueError:
            return None, False
    if not isinstance(value, datetime):
        return None, False
    if value.tzinfo is None:
        return None, True
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), False
