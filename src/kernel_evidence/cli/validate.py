"""``kevidence validate PATH...``: check packets against the schema and every rule."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from ..io import Limits
from ..rules import Report, validate_paths
from ._common import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    MAX_SIZE_LIMIT,
    err_console,
    fail,
    out_console,
    shown,
)

if TYPE_CHECKING:
    import typer


def _style(sev: str) -> str:
    return {"error": "bold red", "warning": "yellow", "info": "cyan"}[sev]


#: the markup this module writes (and nothing a packet's text could hold: that is escaped)
_TAGS = ("[bold green]", "[bold red]", "[green]", "[yellow]", "[cyan]", "[dim]", "[/]")
#: stands for a ``[`` of a packet's text on the plain path until the markup is gone
_BRACKET = "\x00"


class _PlainOut:
    """What rich's console prints when standard output is not a terminal (no colour, no
    wrapping), without importing rich: a harness that runs `kevidence validate` once per
    candidate and reads its output pays a fifth less start-up. The markup is this module's
    own; text from packets comes through :func:`_esc`, which hides its brackets."""

    def print(self, text: str) -> None:
        for tag in _TAGS:
            text = text.replace(tag, "")
        sys.stdout.write(text.replace(_BRACKET, "[") + "\n")


def _output() -> Any:
    """rich's console on a terminal (or where colour is forced), else the plain printer."""
    if sys.stdout.isatty() or os.environ.get("FORCE_COLOR") or os.environ.get("TTY_COMPATIBLE"):
        return out_console()
    return _PlainOut()


def register(app: typer.Typer) -> None:
    import typer  # here: `validate PATH...` alone runs without the parser (see cli.main)

    @app.command("validate")
    def validate_cmd(
        paths: list[str] = typer.Argument(
            ...,
            help="Packet files, directories (recursive) or - for stdin; .json, .jsonl, .json.zst, .jsonl.zst.",
        ),
        fmt: str = typer.Option("text", "--format", "-f", help="Output format: text or json."),
        strict: bool = typer.Option(False, "--strict", help="Warnings fail too."),
        verbose: bool = typer.Option(
            False, "--verbose", "-v", help="Also list valid packets, their grade, and info findings."
        ),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="Only the summary line."),
        progress: bool | None = typer.Option(
            None, "--progress/--no-progress", help="Progress bar (default: on a terminal)."
        ),
        max_record_bytes: int = typer.Option(
            Limits.max_record_bytes, min=1, max=MAX_SIZE_LIMIT, help="Largest single document accepted."
        ),
        jobs: int = typer.Option(
            0,
            "--jobs",
            "-j",
            min=0,
            help="Worker processes (0: automatic - several for inputs of 32 MiB and more; never more than the CPUs).",
        ),
        max_decompressed_bytes: int = typer.Option(
            Limits.max_decompressed_bytes,
            min=1,
            max=MAX_SIZE_LIMIT,
            help="Largest amount one zstd file may decompress to.",
        ),
        side_files_from: list[str] = typer.Option(
            [],
            "--side-files-from",
            metavar="DIR",
            help="Also check raw tables (side files) found in DIR and below; by default only those in the packet file's folder are read. Repeatable.",
        ),
    ) -> None:
        """Validate packets: exit 0 when all are valid, 1 when any is invalid, 2 on usage errors."""
        if fmt not in ("text", "json"):
            fail(f"--format must be text or json, got `{fmt}`", EXIT_USAGE)
        limits = Limits(max_record_bytes=max_record_bytes, max_decompressed_bytes=max_decompressed_bytes)
        if jobs > 1:
            jobs = min(jobs, _cpus())  # more workers than CPUs only cost start-up time and memory
        allowing: Any = contextlib.nullcontext()
        if side_files_from:
            from ..rawtable import side_files_from as allow  # here: the models load slowly

            allowing = allow(*side_files_from)
            jobs = 1  # the folders allowed are this process's setting, not its workers'
        with allowing:
            code = run(
                paths,
                fmt=fmt,
                strict=strict,
                verbose=verbose,
                quiet=quiet,
                progress=progress,
                limits=limits,
                jobs=jobs,
            )
        raise typer.Exit(code)


def _shown_count(n: int, total: int | None) -> str:
    """``1,200 packets``, or ``1,200 of 4,000 packets`` when the total is known."""
    return f"{n:,} packets" if total is None else f"{n:,} of {total:,} packets"


def _cpus() -> int:
    """CPUs this process may run on (its affinity mask, where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def run(
    paths: list[str],
    *,
    fmt: str = "text",
    strict: bool = False,
    verbose: bool = False,
    quiet: bool = False,
    progress: bool | None = None,
    limits: Limits | None = None,
    jobs: int = 0,
) -> int:
    """Validate ``paths`` and print the reports; returns the exit code."""
    start = time.perf_counter()
    counts = {"packets": 0, "valid": 0, "invalid": 0, "warned": 0}
    sources: set[str] = set()
    out = _output()
    show_progress = (
        progress if progress is not None else (sys.stderr.isatty() and fmt == "text" and not quiet)
    )
    reports = validate_paths(paths, limits, jobs=jobs)
    listed = fmt == "json" and not quiet  # --quiet: the summary only, in JSON too
    if listed:
        sys.stdout.write('{"reports": [')
    bar = None
    if show_progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        from ._progress import known_total

        try:
            total = known_total(paths)  # .json files: one packet each, known before reading
        except OSError:
            total = None
        bar = Progress(
            TextColumn("validating"),
            BarColumn(),
            TextColumn("{task.fields[shown]}"),
            TimeElapsedColumn(),
            console=err_console(),
            transient=True,
        )
        bar.start()
        task = bar.add_task("validate", total=total, shown=_shown_count(0, total))
    first = True
    try:
        for rep in reports:
            counts["packets"] += 1
            if rep.source:
                sources.add(rep.source)
            good = rep.passes(strict=strict)
            counts["valid" if good else "invalid"] += 1
            if rep.ok and rep.warnings:
                counts["warned"] += 1
            if listed:
                doc = rep.to_dict()
                doc["valid"] = good  # under --strict, a packet with warnings is not valid
                sys.stdout.write(("" if first else ",") + "\n" + json.dumps(doc))
                first = False
            elif not quiet:
                _print_text(out, rep, good, verbose)
            if bar is not None and (counts["packets"] % 256 == 0 or total is not None):
                if total is not None and counts["packets"] > total:
                    total = None  # a JSON array held several: the total was not known after all
                    bar.update(task, total=None)
                bar.update(task, completed=counts["packets"], shown=_shown_count(counts["packets"], total))
    finally:
        if bar is not None:
            bar.stop()
    elapsed = time.perf_counter() - start
    summary = {
        "packets": counts["packets"],
        "files": len(sources),
        "valid": counts["valid"],
        "invalid": counts["invalid"],
        "with_warnings": counts["warned"],
        "strict": strict,
        "seconds": round(elapsed, 3),
    }
    if listed:
        sys.stdout.write('\n], "summary": ' + json.dumps(summary) + "}\n")
    elif fmt == "json":
        sys.stdout.write('{"summary": ' + json.dumps(summary) + "}\n")
    else:
        verdict = (
            "[bold green]ok[/]" if counts["invalid"] == 0 and counts["packets"] else "[bold red]FAILED[/]"
        )
        out.print(
            f"{verdict}: {counts['packets']} packet(s) in {len(sources)} file(s): "
            f"{counts['valid']} valid, {counts['invalid']} invalid, {counts['warned']} with warnings "
            f"({elapsed:.2f} s)"
        )
    if counts["packets"] == 0:
        return EXIT_INVALID
    return EXIT_OK if counts["invalid"] == 0 else EXIT_INVALID


def _print_text(out, rep: Report, good: bool, verbose: bool) -> None:  # type: ignore[no-untyped-def]
    shown = [f for f in rep.findings if verbose or f.severity != "info"]
    if good and not shown and not verbose:
        return
    where = _esc(rep.where(), out)
    if verbose or not good or shown:
        tag = "[green]valid[/]" if good else "[bold red]invalid[/]"
        if (
            len(rep.findings) == 1
            and rep.findings[0].rule_id in ("KE000", "KE001", "KE003")
            and rep.packet_id is None
        ):
            f = rep.findings[0]
            at = f" at {f.pointer}" if f.pointer else ""
            out.print(
                f"{where}: [{_style(f.severity)}]{f.rule_id} {f.severity}[/]{at}: {_esc(f.message, out)}"
            )
            return
        out.print(f"{where}: {tag} (grade {rep.grade.letter})")
        for f in shown:
            out.print(
                f"  [{_style(f.severity)}]{f.rule_id} {f.severity}[/] at {f.pointer or '/'}: {_esc(f.message, out)} [dim](hint: {_esc(f.hint, out)})[/]"
            )
        if verbose and rep.grade.reasons:
            for r in rep.grade.reasons:
                out.print(f"  [dim]grade: {_esc(r, out)}[/]")


def _esc(s: str, out: Any = None) -> str:
    if isinstance(out, _PlainOut):
        return shown(s).replace("[", _BRACKET)
    from rich.markup import escape

    return escape(shown(s))
