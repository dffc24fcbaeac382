"""``kevidence replay PACKET``: show how to run a packet again; run it only with ``--execute``.

Exit codes: 0 shown (or reproduced), 1 invalid packet, unrunnable command, an existing
output (without ``--force``), or a replay that failed, 3 drifted, 2 usage.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ..errors import InputError
from ..io import write_packets
from ._common import EXIT_INVALID, EXIT_OK, EXIT_USAGE, fail, out_console, shown

if TYPE_CHECKING:
    from ..harness.replay import ReplayPlan

EXIT_DRIFTED = 3


def register(app: typer.Typer) -> None:
    @app.command("replay")
    def replay_cmd(
        packet: str = typer.Argument(
            ..., help="The packet to replay (.json, or a stream holding one packet)."
        ),
        execute: bool = typer.Option(
            False,
            "--execute",
            help="Run the recorded command (argv, no shell) and write a child packet.",
        ),
        allow_shell: bool = typer.Option(
            False,
            "--allow-shell",
            help="Allow a command recorded with replay.shell: true to run through a shell.",
        ),
        timeout: float = typer.Option(
            600.0, "--timeout", help="Seconds before the command is stopped (at most 604800: 7 days)."
        ),
        tolerance: float = typer.Option(
            0.05,
            "--tolerance",
            help="Relative timing change still counted as reproduced (0.05 = 5%).",
        ),
        out: str | None = typer.Option(
            None,
            "--out",
            "-o",
            help="Where to write the child packet (default: <packet>.replay.json in the current folder).",
        ),
        force: bool = typer.Option(
            False, "--force", help="Overwrite an existing output file (never the packet being replayed)."
        ),
        select: str | None = typer.Option(
            None,
            "--select",
            help="Pick one packet of a stream: packet id (or its first hex digits), subject name or candidate id.",
        ),
        cwd: str | None = typer.Option(None, "--cwd", help="Run in this folder instead of the recorded one."),
        fmt: str = typer.Option("text", "--format", "-f", help="Output format: text or json."),
    ) -> None:
        """Show the recorded command, commit, container and environment differences; --execute runs it."""
        if fmt not in ("text", "json"):
            fail(f"--format must be text or json, got `{fmt}`", EXIT_USAGE)
        if not (math.isfinite(timeout) and timeout > 0):
            fail(f"--timeout must be a finite number of seconds > 0, got {timeout:g}", EXIT_USAGE)
        from ..harness.replay import MAX_TIMEOUT  # here, not at start-up

        if timeout > MAX_TIMEOUT:
            fail(f"--timeout must be at most {MAX_TIMEOUT:g} seconds (7 days), got {timeout:g}", EXIT_USAGE)
        if not (math.isfinite(tolerance) and tolerance >= 0):
            fail(f"--tolerance must be a finite number >= 0, got {tolerance:g}", EXIT_USAGE)
        if cwd is not None and (not cwd or not Path(cwd).is_dir()):
            fail(f"--cwd must be an existing folder, got `{cwd}`", EXIT_USAGE)
        raise typer.Exit(
            run(
                packet,
                execute=execute,
                allow_shell=allow_shell,
                timeout=timeout,
                tolerance=tolerance,
                out=out,
                force=force,
                cwd=cwd,
                select=select,
                fmt=fmt,
            )
        )


def run(
    packet_path: str,
    *,
    execute: bool = False,
    allow_shell: bool = False,
    timeout: float = 600.0,
    tolerance: float = 0.05,
    out: str | None = None,
    force: bool = False,
    cwd: str | None = None,
    select: str | None = None,
    fmt: str = "text",
) -> int:
    """Show (and with ``execute`` run) a packet's replay; returns the exit code."""
    from ..harness._load import load_packet  # here, not at start-up: other commands skip it
    from ..harness.replay import execute_replay, plan_replay

    try:
        packet = load_packet(packet_path, select)
    except InputError as exc:
        fail(str(exc), EXIT_INVALID)
    plan = plan_replay(packet, cwd=cwd)
    if not execute:
        _show(plan, packet_path, fmt)
        if plan.problems:
            fail(f"{shown(packet_path)}: {plan.problems[0]}", EXIT_INVALID)
        return EXIT_OK
    target = Path(out) if out else Path.cwd() / (_stem(packet_path) + ".replay.json")
    if _same_file(target, packet_path):
        fail(
            f"{shown(str(out or target))}: is the packet being replayed; refusing to write the child packet over it (choose another --out)",
            EXIT_USAGE,
        )
    if target.is_dir():
        fail(
            f"{shown(str(out or target))}: is a folder; expected a file name for the child packet", EXIT_USAGE
        )
    if target.exists() and not force:
        fail(f"{shown(str(out or target))}: already exists; refusing to overwrite it (use --force)")
    if plan.problems:
        _show(plan, packet_path, fmt)
        fail(f"{shown(packet_path)}: {plan.problems[0]}", EXIT_INVALID)
    if plan.shell and not allow_shell:
        _show(plan, packet_path, fmt, execute=True)
        fail(
            f"{shown(packet_path)}: the recorded command needs a shell (replay.shell: true); refusing without --allow-shell",
            EXIT_INVALID,
        )
    if fmt == "text":
        _show(plan, packet_path, fmt, executing=True)
    try:
        result = execute_replay(
            packet, plan=plan, timeout=timeout, allow_shell=allow_shell, tolerance=tolerance
        )
    except InputError as exc:
        fail(str(exc), EXIT_INVALID)
    try:
        write_packets(target, [result.child], overwrite=force)
    except FileExistsError:
        fail(
            f"{shown(str(out or target))}: appeared while the command ran; refusing to overwrite it (use --force)"
        )
    except (OSError, ValueError) as exc:
        msg = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        fail(f"{shown(str(target))}: could not write the child packet ({msg})", EXIT_INVALID)
    if fmt == "json":
        data = {
            "plan": {**plan.to_dict(), "runs_in": _runs_in(plan)},
            "verdict": result.verdict,
            "reason": result.reason,
            "returncode": result.returncode,
            "child_packet": str(target),
            "child_packet_id": result.child.packet_id,
            "comparison": result.comparison.to_dict() if result.comparison else None,
        }
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        con = out_console()
        style = {"reproduced": "bold green", "drifted": "yellow", "failed": "bold red"}[result.verdict]
        con.print(f"[{style}]{result.verdict}[/]: {_esc(result.reason or '')}")
        if result.comparison is not None:
            con.print(f"  {_esc(result.comparison.summary())}")
        if result.verdict == "failed" and result.stderr_tail.strip():
            con.print("  stderr (tail):")
            for line in result.stderr_tail.strip().splitlines()[-10:]:
                con.print(f"    {_esc(line)}")
        con.print(f"child packet: {_esc(str(target))} ({result.child.packet_id})")
    return {"reproduced": EXIT_OK, "drifted": EXIT_DRIFTED, "failed": EXIT_INVALID}[result.verdict]


def _esc(text: str) -> str:
    """Text from a file name or the packet, as rich markup on one line (no terminal codes)."""
    from rich.markup import escape

    return escape(shown(text))


def _same_file(target: Path, packet_path: str) -> bool:
    """True when ``target`` is the input packet's file (also through a link)."""
    try:
        return target.exists() and os.path.samefile(target, packet_path)
    except OSError:
        return False


def _stem(path: str) -> str:
    name = Path(path).name
    for suffix in (".jsonl.zst", ".json.zst", ".jsonl", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _runs_in(plan: ReplayPlan) -> str:
    """The absolute folder the command runs in: the plan's ``cwd`` (``--cwd`` or the recorded
    one), else the current folder (``cwd`` is null in the JSON then)."""
    return os.path.abspath(plan.cwd) if plan.cwd else os.getcwd()


def _show(plan: ReplayPlan, path: str, fmt: str, *, executing: bool = False, execute: bool = False) -> None:
    """The plan as text or JSON; ``executing``: it runs next, ``execute``: --execute was given."""
    if fmt == "json":
        data = {"packet": path, **plan.to_dict(), "runs_in": _runs_in(plan)}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    import shlex

    con = out_console()
    p = plan.packet
    r = p.replay
    con.print(f"packet     {_esc(path)} ({p.packet_id or p.compute_id()})")
    if plan.command:
        cmd = plan.command[0] if plan.shell else shlex.join(plan.command)
        con.print(f"command    {_esc(cmd)}" + ("  [yellow](shell)[/]" if plan.shell else ""))
    else:
        con.print("command    [red](none recorded)[/]")
    # where the command runs (or would run): the plan's folder, else the current one
    where = _runs_in(plan) + ("" if plan.cwd else " (current folder)")
    con.print(f"cwd        {_esc(where)}")
    repo = r.repository if r else None
    if repo is not None and repo.commit:
        dirty = " [yellow](dirty: uncommitted changes were not recorded)[/]" if repo.dirty else ""
        where = f" {_esc(repo.url)}" if repo.url else ""
        branch = f" on {_esc(repo.branch)}" if repo.branch else ""
        con.print(f"commit     {_esc(repo.commit)}{branch}{where}{dirty}")
    else:
        con.print("commit     (not recorded)")
    box = r.container if r else None
    con.print(
        f"container  {_esc(box.image + ('@' + box.digest if box.digest else '')) if box else '(not recorded)'}"
    )
    if plan.env:
        con.print("env        " + _esc(" ".join(f"{k}={v}" for k, v in plan.env.items())))
    if plan.ignored_env:
        con.print("[yellow]ignored env[/] (not on the allow-list): " + _esc(", ".join(plan.ignored_env)))
    if plan.differences:
        con.print("differences from this machine:")
        for d in plan.differences:
            con.print(f"  {_esc(d.field)}: recorded {_esc(repr(d.recorded))}, here {_esc(repr(d.current))}")
    else:
        con.print("differences from this machine: none found in the recorded fields")
    if plan.problems or executing:
        return
    if not plan.shell:
        con.print(
            "[dim]nothing was run; pass --execute to run the command (argv, no shell, with a timeout)[/]"
        )
    else:
        needed = "--allow-shell as well" if execute else "--execute --allow-shell"
        con.print(
            f"[dim]nothing was run; the recorded command needs a shell: pass {needed} to run it through one (with a timeout)[/]"
        )
