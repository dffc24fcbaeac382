"""Packets from kernelbot run records: one per benchmark of a timed run, one per test run.

The tester's ``key: value`` lines (``benchmark-count``, ``benchmark.<i>.spec``,
``benchmark.<i>.mean|std|err|best|worst|runs`` in nanoseconds, ``benchmark.<i>.status``
and ``.error``, ``test-count``, ``test.<i>.spec|status|error``, ``check``) become timing,
shapes and validation; the run's ``success``, ``passed`` and ``exit_code`` the status; the
system info the hardware; the compile result the compile record; the command the replay.
"""

from __future__ import annotations

import hashlib
import math
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from ...devices import canonical_id
from ...models import (
    Compile,
    Conditions,
    EvidencePacket,
    Failure,
    FailureClass,
    Hardware,
    Host,
    Lineage,
    Replay,
    ShapeCase,
    ShapeResult,
    Software,
    Stats,
    Task,
    Timing,
    Validation,
)
from .._device import vendor_of
from .._envelope import start_packet
from ._read import RunRecord, utc_text

__all__ = ["Builder", "EXTENSION", "TIMEOUT_EXIT", "parse_spec"]

#: the extension key holding what the bot says that the packet has no field for
EXTENSION = "gpu-mode:kernelbot"
#: libkernelbot.consts.ExitCode: the runner's own exit codes
TIMEOUT_EXIT = 114
_EXIT_NAMES = {
    110: "CUDA_FAIL",
    111: "PIPE_FAILED",
    112: "VALIDATE_FAIL",
    113: "TEST_SPEC",
    114: "TIMEOUT_EXPIRED",
}
LOG_EXCERPT_CHARS = 4000
_SPEC_PART = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*?)\s*$")


def parse_spec(spec: str) -> dict[str, int]:
    """The integer parameters of a test or benchmark spec (``k: v; k: v``, as the bot's
    ``build_test_string`` writes it); other values are left out.

    >>> parse_spec("m: 1024; n: 512; seed: 7; dtype: bf16")
    {'m': 1024, 'n': 512, 'seed': 7}
    """
    out: dict[str, int] = {}
    for part in spec.split(";"):
        m = _SPEC_PART.match(part)
        if m is not None and re.fullmatch(r"-?\d+", m.group(2)):
            out[m.group(1)] = int(m.group(2))
    return out


def _num(result: dict[str, str], key: str) -> float | None:
    v = result.get(key)
    if v is None:
        return None
    try:
        f = float(v)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


@dataclass
class Builder:
    """Builds the packets of one adapter call and counts what they lack."""

    created_at: str
    leaderboard: str | None = None
    naive_times: int = 0
    profile_runs: int = 0
    no_device: int = 0
    bad_numbers: list[str] = field(default_factory=list)

    def packets(self, rec: RunRecord) -> list[EvidencePacket]:
        """The packets of one run record."""
        res = rec.result
        if rec.mode == "profile" or (rec.key or "").startswith("profile"):
            self.profile_runs += 1
            return []
        count = _num(res, "benchmark-count")
        if count is not None and count > 0 and not res.get("test-count"):
            return [self._benchmark(rec, i) for i in range(int(count))]
        if res or rec.runner_error or rec.success is not None or rec.passed is not None:
            return [self._run_packet(rec)]
        if rec.score is not None:
            return [self._score_only(rec)]
        return []

    # ------------------------------------------------------------------ shared parts

    def _hardware(self, rec: RunRecord) -> Hardware | None:
        sysinfo = rec.system
        gpu = str(sysinfo.get("gpu") or "").strip() or (rec.runner or "").strip()
        if not gpu:
            self.no_device += 1
            return None
        runtime = str(sysinfo.get("runtime") or "").strip()
        vendor = {"cuda": "nvidia", "rocm": "amd", "hip": "amd"}.get(runtime.lower()) or vendor_of(gpu)
        count = sysinfo.get("device_count")
        host = Host(
            hostname=_str(sysinfo.get("hostname")),
            cpu=_str(sysinfo.get("cpu")),
            os=_str(sysinfo.get("platform")),
        )
        return Hardware(
            vendor=vendor,
            device=gpu,
            device_id=canonical_id(gpu),
            count=count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else None,
            runtime=Software(name=runtime) if runtime else None,
            host=host if (host.hostname or host.cpu or host.os) else None,
        )

    def _method(self, rec: RunRecord) -> str:
        runtime = str(rec.system.get("runtime") or "").lower()
        return "hip_events" if runtime in ("rocm", "hip") else "cuda_events" if runtime == "cuda" else "other"

    def _compile(self, rec: RunRecord) -> Compile | None:
        c = rec.compilation
        digest = "sha256:" + hashlib.sha256(rec.code.encode("utf-8")).hexdigest() if rec.code else None
        lang = _language(rec.file_name)
        if c is None:
            return Compile(language=lang, source_digest=digest) if digest or lang else None
        version = re.search(r"release (\d+(?:\.\d+)*)", str(c.get("nvcc_version") or ""))
        ok = c.get("success")
        stderr = c.get("stderr")
        return Compile(
            compiler=Software(name="nvcc", version=version.group(1) if version else None)
            if c.get("nvcc_found") is not False
            else None,
            language=lang or "cuda",
            succeeded=ok if isinstance(ok, bool) else None,
            source_digest=digest,
            flags=_flags(c.get("command")),
            log_excerpt=stderr[-LOG_EXCERPT_CHARS:]
            if ok is False and isinstance(stderr, str) and stderr
            else None,
        )

    def _replay(self, rec: RunRecord) -> Replay | None:
        torch = _str(rec.system.get("torch"))
        packages = {"torch": torch} if torch else None
        command = None
        if rec.command:
            try:
                command = shlex.split(rec.command)
            except ValueError:
                command = None
        if command is None and packages is None:
            return None
        return Replay(
            command=command or None,
            packages=packages,
            notes="the command GPU MODE's runner ran in its sandbox, beside the submission and the task's "
            "files (neither is in this packet)"
            if command
            else None,
        )

    def _status(self, rec: RunRecord, failed_here: bool) -> tuple[str, Failure | None]:
        """(status, failure) of a run: the runner's own error, a compile failure, a crash
        or timeout (error), a failed check (failed), else passed."""
        c = rec.compilation
        if rec.runner_error is not None:
            return "error", Failure(failure_class=FailureClass.INFRA_ERROR, message=rec.runner_error[:500])
        if c is not None and c.get("success") is False:
            return "error", Failure(failure_class=FailureClass.COMPILE_ERROR, message="compilation failed")
        excerpt = rec.stderr[-LOG_EXCERPT_CHARS:] if rec.stderr else None
        if rec.success is False:
            if rec.exit_code == TIMEOUT_EXIT:
                return "error", Failure(
                    failure_class=FailureClass.TIMEOUT, message="the run timed out (exit code 114)"
                )
            name = _EXIT_NAMES.get(rec.exit_code or 0)
            msg = f"the run failed with exit code {rec.exit_code}{f' ({name})' if name else ''}"
            return "error", Failure(
                failure_class=FailureClass.RUNTIME_ERROR, message=msg, log_excerpt=excerpt
            )
        check = rec.result.get("check")
        if failed_here or rec.passed is False or check == "fail":
            msg = "the tester's check failed" if check == "fail" or failed_here else "the run did not pass"
            return "failed", Failure(
                failure_class=FailureClass.INCORRECT_NUMERICAL, message=msg, log_excerpt=excerpt
            )
        return "passed", None

    def _extension(self, rec: RunRecord, **more: Any) -> dict[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "mode": rec.mode,
            "run_key": rec.key,
            "secret": rec.secret,
            "runner": rec.runner,
            "score_s": rec.score,
            "submission_id": _plain(rec.submission_id),
            "run_id": _plain(rec.run_id),
            "leaderboard_id": _plain(rec.leaderboard_id),
            "submitter": rec.user,
            "file_name": rec.file_name,
            "exit_code": rec.exit_code,
            "run_duration_s": rec.duration,
            **more,
        }
        return {EXTENSION: {k: v for k, v in body.items() if v is not None}}

    def _lineage(self, rec: RunRecord) -> Lineage | None:
        cand = None
        if rec.code_id is not None:
            cand = f"code {rec.code_id}"
        elif rec.submission_id is not None:
            cand = f"submission {rec.submission_id}"
        run = f"submission {rec.submission_id}" if rec.submission_id is not None else None
        return Lineage(run_id=run, candidate_id=cand) if cand or run else None

    def _measured_at(self, rec: RunRecord) -> str | None:
        at, naive = utc_text(rec.start)
        if naive:
            self.naive_times += 1
        return at

    def _subject(self, rec: RunRecord) -> str:
        if rec.leaderboard:
            return rec.leaderboard
        if self.leaderboard:
            return self.leaderboard
        if rec.leaderboard_id is not None:
            return f"leaderboard {rec.leaderboard_id}"
        return "kernelbot submission"

    def _tests(self, res: dict[str, str]) -> list[ShapeResult]:
        out = []
        n = _num(res, "test-count")
        for i in range(int(n) if n is not None and n > 0 else 0):
            status = res.get(f"test.{i}.status")
            if status not in ("pass", "fail"):
                continue
            spec = res.get(f"test.{i}.spec") or f"test {i}"
            error = res.get(f"test.{i}.error")
            out.append(
                ShapeResult(shape_id=f"test {i}: {spec}", passed=status == "pass", message=error or None)
            )
        return out

    # ------------------------------------------------------------------ packets

    def _benchmark(self, rec: RunRecord, i: int) -> EvidencePacket:
        res = rec.result
        spec = res.get(f"benchmark.{i}.spec") or f"benchmark {i}"
        sid = f"benchmark {i}: {spec}"
        dims = parse_spec(spec)
        failed_here = res.get(f"benchmark.{i}.status") == "fail"
        status, failure = self._status(rec, failed_here)
        if failure is not None and failed_here and res.get(f"benchmark.{i}.error"):
            failure = failure.model_copy(
                update={"message": res[f"benchmark.{i}.error"][:2000], "shape_id": sid}
            )
        hw = self._hardware(rec)
        method = self._method(rec)
        cond = Conditions(
            shape_id=sid, dims=dims or None, device=hw.device if hw else None, device_id=hw.device_id if hw else None,
            method=method, repeats=_count(res, f"benchmark.{i}.runs"), sample_handling="all",
        )  # fmt: skip
        timing = None
        mean = _num(res, f"benchmark.{i}.mean")
        if mean is not None and mean >= 0 and not failed_here:
            timing = Timing(
                method=method,
                repeats=_count(res, f"benchmark.{i}.runs"),
                shape_id=sid,
                stats=Stats(
                    unit="ns",
                    mean=mean,
                    std=_nonneg(res, f"benchmark.{i}.std"),
                    min=_nonneg(res, f"benchmark.{i}.best"),
                    max=_nonneg(res, f"benchmark.{i}.worst"),
                    n=_count(res, f"benchmark.{i}.runs"),
                ),
                notes="kernelbot's tester: each repeat timed with device events (elapsed ms x 1e6 = ns), after "
                "one correctness check; best/worst are min/max; err (std / sqrt(runs)) is in the extension",
                conditions=cond,
            )
        shapes = [ShapeResult(shape_id=sid, passed=not failed_here and status != "failed",
                              message=res.get(f"benchmark.{i}.error") or None)]  # fmt: skip
        validation = (
            None
            if status == "error"
            else Validation(verdict="failed" if status == "failed" else "passed", shapes=shapes)
        )
        secret = " (secret)" if rec.secret else ""
        return start_packet(
            subject_kind="kernel",
            subject_name=self._subject(rec),
            description=f"{rec.mode or 'benchmark'} run{secret} {sid} ({rec.where})",
            status=status,
            created_at=self.created_at,
            measured_at=self._measured_at(rec),
            failure=failure,
            lineage=self._lineage(rec),
            task=Task(workload=self._subject(rec), shapes=[ShapeCase(id=sid, dims=dims or None)]),
            compile=self._compile(rec),
            validation=validation,
            timing=timing,
            hardware=hw,
            replay=self._replay(rec),
            extensions=self._extension(
                rec, benchmark_index=i, spec=spec, err_ns=_num(res, f"benchmark.{i}.err")
            ),
        )

    def _run_packet(self, rec: RunRecord) -> EvidencePacket:
        """A run without benchmarks (a test run, a failed run, the runner's own error)."""
        tests = self._tests(rec.result)
        status, failure = self._status(rec, any(not s.passed for s in tests))
        validation = None
        if tests and status != "error":
            validation = Validation(verdict="failed" if status == "failed" else "passed", shapes=tests)
        secret = " (secret)" if rec.secret else ""
        return start_packet(
            subject_kind="kernel",
            subject_name=self._subject(rec),
            description=f"{rec.mode or 'kernelbot'} run{secret} ({rec.where})",
            status=status,
            created_at=self.created_at,
            measured_at=self._measured_at(rec),
            failure=failure,
            lineage=self._lineage(rec),
            task=Task(
                workload=self._subject(rec),
                shapes=[
                    ShapeCase(id=s.shape_id, dims=parse_spec(s.shape_id.split(": ", 1)[-1]) or None)
                    for s in tests
                ]
                or None,
            ),
            compile=self._compile(rec),
            validation=validation,
            hardware=self._hardware(rec),
            replay=self._replay(rec),
            extensions=self._extension(rec),
        )

    def _score_only(self, rec: RunRecord) -> EvidencePacket:
        """A row that has the leaderboard's score and no tester output (the public
        submissions export): the score, in seconds, as the mean."""
        status, failure = ("passed", None) if rec.passed is not False else (
            "failed", Failure(failure_class=FailureClass.INCORRECT_NUMERICAL, message="the run did not pass"))  # fmt: skip
        hw = self._hardware(rec)
        timing = Timing(
            method=self._method(rec),
            stats=Stats(unit="s", mean=rec.score) if rec.score is not None and rec.score >= 0 else None,
            notes="the leaderboard's score: benchmark means in seconds, combined by the task's ranking "
            "(last, mean or geometric mean); no per-benchmark statistics in this export",
        )
        return start_packet(
            subject_kind="kernel",
            subject_name=self._subject(rec),
            description=f"{rec.mode or 'leaderboard'} score ({rec.where})",
            status=status,
            created_at=self.created_at,
            measured_at=self._measured_at(rec),
            failure=failure,
            lineage=self._lineage(rec),
            compile=self._compile(rec),
            timing=timing if status == "passed" else None,
            hardware=hw,
            extensions=self._extension(rec),
        )


def _str(v: Any) -> str | None:
    return v.strip() if isinstance(v, str) and v.strip() else None


def _plain(v: Any) -> Any:
    return v if v is None or isinstance(v, (str, int, float, bool)) else str(v)


def _nonneg(res: dict[str, str], key: str) -> float | None:
    v = _num(res, key)
    return v if v is not None and v >= 0 else None


def _count(res: dict[str, str], key: str) -> int | None:
    v = _num(res, key)
    return int(v) if v is not None and v >= 0 and v.is_integer() else None


def _language(file_name: str | None) -> str | None:
    if not file_name:
        return None
    low = file_name.lower()
    if low.endswith((".cu", ".cuh")):
        return "cuda"
    if low.endswith(".py"):
        return "python"
    if low.endswith((".cpp", ".cc", ".hip")):
        return "hip" if low.endswith(".hip") else "c++"
    return None


def _flags(command: Any) -> list[str] | None:
    """The options of the compile command (its words that start with ``-``)."""
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return [w for w in words[1:] if w.startswith("-")] or None
