"""Replay a packet: show what it recorded, and - only when asked - run it again and judge.

A packet is untrusted input. :func:`plan_replay` never runs anything: it reports the
recorded command, commit and container, what differs between the recorded environment and
this machine, and any reason the command cannot run (missing, malformed, a program that is
not installed, a working folder that does not exist: the command never runs in another
folder than the plan's ``cwd``, the current one when that is None). :func:`execute_replay`
runs the command as an argv (no shell) with a timeout; a command recorded with
``replay.shell: true`` runs through a shell only with ``allow_shell=True``. Of the
recorded environment variables only the allow-listed ones
(:data:`~kernel_evidence.harness.environment.RECORDED_ENV_VARS`) are applied.

How the new measurement is captured: the command is run with ``KEVIDENCE_OUT`` set to a
fresh ``.jsonl`` path; a harness using :class:`~kernel_evidence.harness.Recorder` writes
its packets there by itself (as well as to its own output). When the run writes several
packets (a search loop), the one for the parent's candidate (same subject name and
``lineage.candidate_id``) is taken. Failing that, the last line of standard output that is
a JSON packet is used. The child packet names its parent (``lineage.parent_packet_id``,
``relation: replay``) and carries the verdict in ``extensions["kevidence:replay"]``:

* ``reproduced``: the new timing is not significantly different from the recorded one,
  or differs by no more than ``tolerance`` (default 5 %); for a packet without timing,
  the same status and failure class;
* ``drifted``: a significant difference beyond the tolerance, or a different outcome;
* ``failed``: the command failed, timed out, produced no packet, or a passing packet's
  replay did not pass.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import msgspec

from ..adapters._envelope import start_packet
from ..errors import InputError
from ..io import iter_records
from ..models import EvidencePacket, Failure, FailureClass, Lineage, Status
from ._load import packet_from_data
from .compare import Comparison, compare_packets
from .environment import (
    RECORDED_ENV_VARS,
    Environment,
    EnvironmentDifference,
    capture_environment,
    diff_environment,
    git_repository,
)

__all__ = ["MAX_TIMEOUT", "ReplayPlan", "ReplayResult", "execute_replay", "plan_replay"]

ReplayVerdict = Literal["reproduced", "drifted", "failed"]
_TAIL = 2000
#: longest timeout, in seconds (7 days): the operating system's wait takes at most about
#: 24 days in milliseconds, and a benchmark that needs more than a week is not a replay
MAX_TIMEOUT = 7 * 24 * 3600.0


@dataclass
class ReplayPlan:
    """What a replay would run, and why it cannot (``problems``)."""

    packet: EvidencePacket
    command: list[str] | None
    shell: bool
    cwd: str | None
    env: dict[str, str]
    ignored_env: list[str]
    differences: list[EnvironmentDifference]
    problems: list[str] = field(default_factory=list)

    @property
    def runnable(self) -> bool:
        """True when the command is present, well-formed and its program exists."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """JSON data for ``--json``."""
        r = self.packet.replay
        repo = r.repository if r else None
        box = r.container if r else None
        return {
            "packet_id": self.packet.packet_id or self.packet.compute_id(),
            "command": self.command,
            "shell": self.shell,
            "cwd": self.cwd,
            "env": self.env,
            "ignored_env": self.ignored_env,
            "repository": repo.model_dump(exclude_none=True) if repo else None,
            "container": box.model_dump(exclude_none=True) if box else None,
            "differences": [
                {"field": d.field, "recorded": d.recorded, "current": d.current} for d in self.differences
            ],
            "problems": self.problems,
        }


def _program_problem(program: str, cwd: str | None) -> str | None:
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program)
        if not path.is_absolute() and cwd:
            path = Path(cwd) / path
        if not path.exists():
            return f"the replay command refers to a missing program `{program}` (no such file)"
        if not os.access(path, os.X_OK) or path.is_dir():
            return f"the replay command's program `{program}` is not executable"
        return None
    if shutil.which(program) is None:
        return f"the replay command refers to a missing program `{program}` (not found on PATH)"
    return None


def plan_replay(
    packet: EvidencePacket, environment: Environment | None = None, *, cwd: str | None = None
) -> ReplayPlan:
    """Inspect a packet's replay category against this machine; runs nothing but local probes."""
    env_now = environment if environment is not None else capture_environment()
    r = packet.replay
    problems: list[str] = []
    command = list(r.command) if r is not None and r.command is not None else None
    shell = bool(r.shell) if r is not None else False
    if r is None:
        problems.append("the packet has no replay category: no command was recorded")
    elif command is None:
        problems.append("the packet records no replay command (replay.command is missing)")
    elif not command or not command[0].strip():
        problems.append("the replay command is malformed: expected a non-empty argv list, got an empty one")
    elif any("\x00" in part for part in command):
        problems.append("the replay command is malformed: an argument contains a NUL byte")
    elif shell and len(command) != 1:
        problems.append(
            f"the replay command is malformed: replay.shell is true but the command has {len(command)} items, expected 1 shell string"
        )
    # the folder the command runs in: never silently another one than shown
    work = cwd or (r.cwd if r is not None else None)
    if work and not Path(work).is_dir():
        what = "does not exist" if not Path(work).exists() else "is not a folder"
        if cwd:
            problems.append(f"the folder to run in `{work}` {what}")
        else:
            problems.append(
                f"the recorded working folder `{work}` (replay.cwd) {what} here; pass --cwd DIR to run elsewhere"
            )
    if command and not problems and not shell:
        prob = _program_problem(command[0], work)
        if prob:
            problems.append(prob)
    env: dict[str, str] = {}
    ignored: list[str] = []
    for k, v in sorted(((r.env or {}) if r is not None else {}).items()):
        (env.__setitem__(k, v) if k in RECORDED_ENV_VARS else ignored.append(k))
    # an environment variable cannot hold a NUL byte: the command could not start
    bad_env = [k for k, v in env.items() if "\x00" in v]
    if bad_env:
        problems.append(
            f"the replay environment is malformed: replay.env `{bad_env[0]}` contains a NUL byte in its value"
        )
    # the code that would run: the repository around the command's script, else the cwd
    probe = work if work and Path(work).is_dir() else os.getcwd()
    for arg in (command or [])[1:]:
        if arg.endswith(".py"):
            path = Path(arg) if Path(arg).is_absolute() else Path(probe) / arg
            if path.is_file():
                probe = str(path.parent)
            break
    env_now = replace(env_now, repository=git_repository(probe))
    return ReplayPlan(
        packet=packet,
        command=command,
        shell=shell,
        cwd=work,
        env=env,
        ignored_env=ignored,
        differences=diff_environment(packet.hardware, r, env_now),
        problems=problems,
    )


@dataclass
class ReplayResult:
    """The outcome of :func:`execute_replay`."""

    verdict: ReplayVerdict
    child: EvidencePacket
    returncode: int | None
    comparison: Comparison | None = None
    reason: str | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""


def _packet_from_stdout(lines: list[str]) -> EvidencePacket | None:
    """The last of the standard output's last JSON-object lines that is a packet."""
    for line in reversed(lines):
        try:
            data = msgspec.json.decode(line)
            return packet_from_data(data, "<stdout>")
        except (msgspec.DecodeError, RecursionError, InputError):
            continue
    return None


#: standard output lines that start with ``{`` kept while the command runs (the packet is
#: looked for among the last of them), and the longest one kept
_CANDIDATES = 4
_CANDIDATE_BYTES = 64 << 20
#: seconds the output pipes may stay open after the command exited (a process it left
#: behind holds them) before its process group is killed
_GRACE = 2.0


@dataclass
class _Ran:
    returncode: int | None
    timed_out: bool
    stdout_tail: str
    stderr_tail: str
    candidates: list[str]


class _Drain:
    """Reads one output pipe to its end in a thread, keeping only its last ``_TAIL`` bytes
    and (for standard output) its last lines that start with ``{``: a command that prints
    gigabytes is read through in constant memory."""

    def __init__(self, pipe: Any, lines: bool) -> None:
        self._pipe = pipe
        self._lines = lines
        self.tail = b""
        self.candidates: deque[bytes] = deque(maxlen=_CANDIDATES)
        self._line: list[bytes] = []  # the current line, while it may be a candidate
        self._held = 0
        self._skip = False  # the current line is not a candidate (or is too long)
        self._start = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                chunk = (
                    self._pipe.read1(1 << 16) if hasattr(self._pipe, "read1") else self._pipe.read(1 << 16)
                )
                if not chunk:
                    break
                self.tail = (self.tail + chunk)[-_TAIL * 4 :]
                if self._lines:
                    self._scan(chunk)
            if self._lines:
                self._end_line()
        except (OSError, ValueError):
            pass  # the pipe was closed under us: what was read is kept
        finally:
            with contextlib.suppress(OSError):
                self._pipe.close()

    def _scan(self, chunk: bytes) -> None:
        pos = 0
        while pos < len(chunk):
            nl = chunk.find(b"\n", pos)
            piece = chunk[pos : len(chunk) if nl < 0 else nl]
            if self._start:
                piece = piece.lstrip()
                if piece or nl >= 0:  # else only blanks so far: undecided
                    self._start = False
                    self._skip = piece[:1] != b"{"
            if not self._skip:
                self._held += len(piece)
                if self._held > _CANDIDATE_BYTES:
                    self._skip, self._line, self._held = True, [], 0
                else:
                    self._line.append(piece)
            if nl < 0:
                return
            self._end_line()
            pos = nl + 1

    def _end_line(self) -> None:
        if not self._skip and self._line:
            self.candidates.append(b"".join(self._line))
        self._line, self._held, self._skip, self._start = [], 0, False, True


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command and every process it started (its own process group)."""
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def _run(command: Any, *, shell: bool, cwd: str | None, env: dict[str, str], timeout: float) -> _Ran:
    """Run the command in a process group of its own, its output read as it comes (bounded
    memory); at the timeout the whole group is killed, not only the command."""
    proc = subprocess.Popen(  # noqa: S603 - argv from the packet, shell only when allowed
        command,
        shell=shell,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    out = _Drain(proc.stdout, lines=True)
    err = _Drain(proc.stderr, lines=False)
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        proc.wait()
    except BaseException:  # an interrupt: nothing is left running
        _kill_group(proc)
        proc.wait()
        raise
    for drain in (out, err):
        drain.thread.join(_GRACE)
        if drain.thread.is_alive():  # a process the command left behind holds the pipe
            _kill_group(proc)
            drain.thread.join()
    return _Ran(
        returncode=None if timed_out else proc.returncode,
        timed_out=timed_out,
        stdout_tail=out.tail.decode(errors="replace")[-_TAIL:],
        stderr_tail=err.tail.decode(errors="replace")[-_TAIL:],
        candidates=[c.decode(errors="replace") for c in out.candidates],
    )


def _read_stream(path: Path) -> list[EvidencePacket]:
    out: list[EvidencePacket] = []
    for rec in iter_records(str(path)):
        if rec.error is not None:
            raise rec.error
        assert rec.data is not None
        try:
            data = msgspec.json.decode(rec.data)
        except msgspec.DecodeError as exc:
            raise InputError(str(path), rec.location, f"not valid JSON ({exc})") from None
        except RecursionError:
            raise InputError(
                str(path), rec.location, "not valid JSON (nested too deeply to be a packet)"
            ) from None
        out.append(packet_from_data(data, str(path), rec.location))
    return out


def _pick(found: list[EvidencePacket], parent: EvidencePacket) -> tuple[EvidencePacket | None, str | None]:
    """The replayed run's packet for the parent's candidate (a loop writes many)."""
    if len(found) == 1:
        return found[0], None
    want = parent.lineage.candidate_id if parent.lineage else None
    same = [
        p
        for p in found
        if p.subject.name == parent.subject.name
        and (want is None or (p.lineage is not None and p.lineage.candidate_id == want))
    ]
    if len(same) == 1:
        return same[0], None
    if not same:
        return (
            None,
            f"the command wrote {len(found)} packets, none for candidate `{want or parent.subject.name}`",
        )
    return same[-1], None


def _judge(
    parent: EvidencePacket, new: EvidencePacket, tolerance: float
) -> tuple[ReplayVerdict, Comparison | None, str]:
    if parent.status is Status.PASSED and new.status is not Status.PASSED:
        fc = new.failure.failure_class.value if new.failure else "no class"
        return (
            "failed",
            None,
            f"the recorded run passed, the replay did not ({new.status.value}, {fc})",
        )
    if parent.timing is None or parent.timing.stats is None or new.timing is None or new.timing.stats is None:
        same = parent.status == new.status and (
            (parent.failure.failure_class if parent.failure else None)
            == (new.failure.failure_class if new.failure else None)
        )
        if same:
            return "reproduced", None, f"same outcome ({new.status.value}); no timing to compare"
        return (
            "drifted",
            None,
            f"different outcome: recorded {parent.status.value}, replay {new.status.value}",
        )
    if parent.status is not Status.PASSED:
        same_class = (parent.failure.failure_class if parent.failure else None) == (
            new.failure.failure_class if new.failure else None
        )
        verdict_o: ReplayVerdict = "reproduced" if parent.status == new.status and same_class else "drifted"
        return verdict_o, None, f"recorded {parent.status.value}, replay {new.status.value}"
    cmp = compare_packets(parent, new, force=True)
    ratio = cmp.speedup
    if ratio is None:
        return "drifted", cmp, "the timings could not be compared: " + "; ".join(cmp.notes)
    off = abs(ratio - 1.0)
    if cmp.verdict == "no_change":
        return (
            "reproduced",
            cmp,
            f"no significant difference (replay/recorded time ratio {1 / ratio:.4g})",
        )
    if off <= tolerance:
        return (
            "reproduced",
            cmp,
            f"within the {tolerance:.0%} tolerance (replay/recorded time ratio {1 / ratio:.4g}, {cmp.verdict})",
        )
    return (
        "drifted",
        cmp,
        f"{cmp.verdict} beyond the {tolerance:.0%} tolerance (replay/recorded time ratio {1 / ratio:.4g})",
    )


def execute_replay(
    packet: EvidencePacket,
    *,
    plan: ReplayPlan | None = None,
    timeout: float = 600.0,
    allow_shell: bool = False,
    tolerance: float = 0.05,
    created_at: str | None = None,
    environment: Environment | None = None,
) -> ReplayResult:
    """Run the packet's command and build the child packet with its verdict.

    Raises :class:`~kernel_evidence.errors.InputError` when the command cannot be run
    (the plan's problems), or when it needs a shell and ``allow_shell`` is false;
    :class:`ValueError` for a ``timeout`` or ``tolerance`` that is not a finite number
    (> 0 and at most :data:`MAX_TIMEOUT`, and >= 0).
    """
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout:g}")
    if timeout > MAX_TIMEOUT:
        raise ValueError(f"timeout must be at most {MAX_TIMEOUT:g} seconds (7 days), got {timeout:g}")
    if not (math.isfinite(tolerance) and tolerance >= 0):
        raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance:g}")
    env_now = environment if environment is not None else capture_environment()
    plan = plan or plan_replay(packet, env_now)
    source = packet.packet_id or "packet"
    if plan.problems:
        raise InputError(source, "/replay/command", plan.problems[0])
    if plan.shell and not allow_shell:
        raise InputError(
            source,
            "/replay/shell",
            "the command must run through a shell; refusing without --allow-shell",
        )
    assert plan.command is not None
    parent_id = packet.packet_id or packet.compute_id()
    with tempfile.TemporaryDirectory(prefix="kevidence-replay-") as tmp:
        out_path = Path(tmp) / "replay.jsonl"
        child_env = dict(os.environ)
        child_env.update(plan.env)
        child_env["KEVIDENCE_OUT"] = str(out_path)
        child_env["KEVIDENCE_PARENT_PACKET_ID"] = parent_id
        returncode: int | None = None
        reason = None
        stdout = stderr = ""
        lines: list[str] = []
        try:
            ran = _run(
                plan.command[0] if plan.shell else plan.command,
                shell=plan.shell,
                cwd=plan.cwd,
                env=child_env,
                timeout=timeout,
            )
            stdout, stderr, lines = ran.stdout_tail, ran.stderr_tail, ran.candidates
            if ran.timed_out:
                reason = f"the replay command did not finish within {timeout:g} s"
            else:
                returncode = ran.returncode
        except OSError as exc:
            reason = f"the replay command could not start: {exc.strerror or exc}"
        except ValueError as exc:  # e.g. a NUL byte the plan did not catch
            reason = f"the replay command could not start: {exc}"
        new: EvidencePacket | None = None
        if reason is None and out_path.exists():
            try:
                new, why_not = _pick(_read_stream(out_path), packet)
            except InputError as exc:
                new, why_not = (
                    None,
                    f"the command wrote an unreadable packet to KEVIDENCE_OUT: {exc}",
                )
            if new is None:
                reason = why_not
        if reason is None and new is None:
            new = _packet_from_stdout(lines)
        if reason is None and returncode not in (0, None) and new is None:
            reason = f"the replay command exited with code {returncode}"
        if reason is None and new is None:
            reason = "the replay command wrote no packet (to KEVIDENCE_OUT or as a JSON line on stdout)"
    comparison = None
    if new is None:
        verdict: ReplayVerdict = "failed"
        fc = FailureClass.TIMEOUT if reason and "did not finish" in reason else FailureClass.RUNTIME_ERROR
        child = start_packet(
            subject_kind=packet.subject.kind,
            subject_name=packet.subject.name,
            description=packet.subject.description,
            status=Status.ERROR,
            created_at=created_at,
            failure=Failure(failure_class=fc, message=reason, log_excerpt=(stderr[-_TAIL:] or None)),
            task=packet.task,
            hardware=env_now.hardware,
            replay=packet.replay,
        )
        why = reason or "failed"
    else:
        verdict, comparison, why = _judge(packet, new, tolerance)
        child = new
    old_lineage = packet.lineage or Lineage()
    ext = dict(child.extensions or {})
    info: dict[str, Any] = {"verdict": verdict, "reason": why, "tolerance": tolerance}
    if returncode is not None:
        info["returncode"] = returncode
    if comparison is not None:
        info["comparison"] = comparison.to_dict()
    ext["kevidence:replay"] = info
    child = child.model_copy(
        update={
            "lineage": Lineage(
                run_id=old_lineage.run_id,
                candidate_id=old_lineage.candidate_id,
                parent_packet_id=parent_id,
                iteration=old_lineage.iteration,
                relation="replay",
            ),
            "extensions": ext,
            "packet_id": None,
        }
    ).with_id()
    return ReplayResult(
        verdict=verdict,
        child=child,
        returncode=returncode,
        comparison=comparison,
        reason=why,
        stdout_tail=stdout[-_TAIL:],
        stderr_tail=stderr[-_TAIL:],
    )
