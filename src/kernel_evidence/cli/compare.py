"""``kevidence compare A B``: is B faster than A, by how much, and how sure.

Exit codes: 0 improved, 3 no significant change (or inconclusive), 4 regressed,
1 invalid input or not comparable, 2 usage.
"""

from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING, Any

import typer

from ..errors import InputError
from ._common import EXIT_INVALID, EXIT_USAGE, fail, out_console, shown

if TYPE_CHECKING:
    from ..harness.compare import Comparison


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare_cmd(
        a: str = typer.Argument(..., help="Packet A (the reference: the old or baseline run)."),
        b: str = typer.Argument(..., help="Packet B (the new run)."),
        fmt: str = typer.Option("text", "--format", "-f", help="Output format: text or json."),
        force: bool = typer.Option(
            False,
            "--force",
            help="Compare even when the packets are not comparable (the problems are still reported).",
        ),
        alpha: float = typer.Option(
            0.05,
            "--alpha",
            help="Significance level of the test; the interval is at 1 - alpha (median intervals recorded in packets keep their own level).",
        ),
        min_effect: float = typer.Option(
            0.01,
            "--min-effect",
            help="Smallest relative change that counts as improved or regressed (0.01 = 1%).",
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap (the answer is reproducible)."),
        resamples: int = typer.Option(2000, "--resamples", help="Bootstrap resamples (100 to 1000000)."),
        select_a: str | None = typer.Option(
            None, "--select-a", help="Pick A from a stream: packet id prefix, subject name or candidate id."
        ),
        select_b: str | None = typer.Option(
            None, "--select-b", help="Pick B from a stream: packet id prefix, subject name or candidate id."
        ),
    ) -> None:
        """Compare the timing of B against A: exit 0 improved, 3 no significant change, 4 regressed, 1 invalid or not comparable."""
        if fmt not in ("text", "json"):
            fail(f"--format must be text or json, got `{fmt}`", EXIT_USAGE)
        if not 0 < alpha < 1:
            fail(f"--alpha must be between 0 and 1, got {alpha:g}", EXIT_USAGE)
        if not (math.isfinite(min_effect) and min_effect >= 0):
            fail(f"--min-effect must be a finite number >= 0, got {min_effect:g}", EXIT_USAGE)
        if resamples < 100:
            fail(f"--resamples must be >= 100, got {resamples}", EXIT_USAGE)
        from ..harness.compare import MAX_RESAMPLES  # here, not at start-up

        if resamples > MAX_RESAMPLES:
            fail(f"--resamples must be at most {MAX_RESAMPLES}, got {resamples}", EXIT_USAGE)
        raise typer.Exit(
            run(
                a,
                b,
                fmt=fmt,
                force=force,
                alpha=alpha,
                min_effect=min_effect,
                seed=seed,
                resamples=resamples,
                select_a=select_a,
                select_b=select_b,
            )
        )


def run(
    a: str,
    b: str,
    *,
    fmt: str = "text",
    force: bool = False,
    alpha: float = 0.05,
    min_effect: float = 0.01,
    seed: int = 0,
    resamples: int = 2000,
    select_a: str | None = None,
    select_b: str | None = None,
) -> int:
    """Load, compare, print; returns the exit code."""
    from ..harness._load import load_packet  # here, not at start-up: other commands skip it
    from ..harness.compare import compare_packets

    try:
        pa = load_packet(a, select_a)
        pb = load_packet(b, select_b)
    except InputError as exc:
        fail(str(exc).replace("with --select ID|NAME", "with --select-a / --select-b"), EXIT_INVALID)
    try:
        result = compare_packets(
            pa,
            pb,
            force=force,
            alpha=alpha,
            min_effect=min_effect,
            level=1.0 - alpha,
            seed=seed,
            resamples=resamples,
        )
    except ValueError as exc:
        fail(f"{shown(a)} vs {shown(b)}: {exc}", EXIT_INVALID)
    if fmt == "json":
        data = {"a": a, "b": b, "a_packet": compared(pa), "b_packet": compared(pb), **result.to_dict()}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        _print_text(result, f"{a}: {named(pa)}", f"{b}: {named(pb)}")
    return result.exit_code


def compared(packet: Any) -> dict[str, Any]:
    """What identifies a compared packet: its id, subject, candidate and run, status."""
    lineage = packet.lineage
    return {
        "packet_id": packet.packet_id,
        "subject": packet.subject.name,
        "candidate_id": lineage.candidate_id if lineage is not None else None,
        "run_id": lineage.run_id if lineage is not None else None,
        "status": str(packet.status.value),
    }


def named(packet: Any) -> str:
    """``gemm_candidate_3 (candidate c3, run rl-a) sha256:3f1c0a9b…, passed``: the packet
    a path (or a --select-a/-b pick from a stream) stood for."""
    c = compared(packet)
    extra = ", ".join(f"{k} {c[k + '_id']}" for k in ("candidate", "run") if c[k + "_id"])
    pid = f" {c['packet_id'][:19]}…" if c["packet_id"] else ""
    return f"{c['subject']}{f' ({extra})' if extra else ''}{pid}, {c['status']}"


def _print_text(result: Comparison, a: str, b: str) -> None:
    from rich.markup import escape

    out = out_console()
    out.print(f"A: {escape(shown(a))}")
    out.print(f"B: {escape(shown(b))}")
    if result.verdict == "incomparable":
        out.print("[bold red]not comparable[/] (use --force to compare anyway):")
        for p in result.problems:
            out.print(f"  - {escape(shown(p))}")
        return
    style = {"improved": "bold green", "regressed": "bold red"}.get(result.verdict, "yellow")
    out.print(f"[{style}]{escape(shown(result.summary()))}[/]")
    if result.median_a_ns is not None and result.median_b_ns is not None:
        out.print(
            f"  median A {_fmt_ns(result.median_a_ns)} (n={result.n_a}), median B {_fmt_ns(result.median_b_ns)} (n={result.n_b})"
        )
    if result.method:
        out.print(f"  method: {escape(result.method)}")
    for p in result.problems:
        out.print(f"  [yellow]problem:[/] {escape(shown(p))}")
    for n in result.notes:
        out.print(f"  note: {escape(shown(n))}")


def _fmt_ns(v: float) -> str:
    for unit, f in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if v >= f:
            return f"{v / f:.4g} {unit}"
    return f"{v:.4g} ns"
