# ruff: noqa: B008  (typer declares options as defaults)
"""``kevidence audit PATH...``: which results of a set cannot be trusted, and why.

Thin: the work is :func:`kernel_evidence.audit.audit`; the rendering
:func:`kernel_evidence.audit.render`. Exit code 0 when no suspect reaches ``--fail-on``,
1 when one does (or a document could not be read, or an input not at all), 2 for bad usage.
"""

from __future__ import annotations

import sys
import time

import typer

from ..errors import KernelEvidenceError, UsageError
from ._common import EXIT_INVALID, EXIT_OK, EXIT_USAGE, fail, shown, stdout_failed

_LEVELS = ("critical", "high", "medium", "low")


def register(app: typer.Typer) -> None:
    @app.command("audit")
    def audit_cmd(
        paths: list[str] = typer.Argument(
            ..., help="Packet files or folders (JSON, JSONL, .zst), or harness outputs; - for stdin."
        ),
        source: str | None = typer.Option(
            None,
            "--from",
            help="The tool that wrote every input (an ingest adapter: flashinfer-trace, kernelbench, "
            "kernelbot, tritonbench...). Default: packets, or recognised by content.",
        ),
        opts: list[str] = typer.Option(
            [], "--opt", help="KEY=VALUE: an option of the --from adapter. Repeatable."
        ),
        fmt: str = typer.Option("text", "--format", "-f", help="text, json, csv or md."),
        output: str | None = typer.Option(
            None, "--output", "-o", help="Write the audit here. Default: stdout."
        ),
        fail_on: str = typer.Option(
            "high",
            "--fail-on",
            help="Exit 1 when a suspect reaches this level: critical, high, medium, low, or never.",
        ),
        top: int | None = typer.Option(
            None,
            "--top",
            min=0,
            help="List the N worst suspects (default: 50 in text and md, all in json and csv).",
        ),
        min_level: str = typer.Option("low", "--min-level", help="List suspects at this level or above."),
        lineage_jump: float = typer.Option(
            10.0, "--lineage-jump", min=1.0, help="The largest believable speedup over a parent in one step."
        ),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the adapters' warnings."),
    ) -> None:
        """Audit a result set: every rule, every speedup recomputed, the physical floor, vacuous
        tolerances, one output for different inputs, implausible jumps over a lineage."""
        from .._ingest import parse_opts
        from ..audit import FORMATS, audit, render

        if fmt not in FORMATS:
            fail(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}", EXIT_USAGE)
        if fail_on not in (*_LEVELS, "never"):
            fail(f"--fail-on: expected one of {', '.join(_LEVELS)}, never; got {fail_on!r}", EXIT_USAGE)
        if min_level not in _LEVELS:
            fail(f"--min-level: expected one of {', '.join(_LEVELS)}; got {min_level!r}", EXIT_USAGE)
        if output is not None and output in paths:
            fail(f"{output}: is one of the inputs; write the audit to another file", EXIT_USAGE)
        progress = _Progress() if sys.stderr.isatty() else None
        try:
            extra = parse_opts(opts) if opts else {}
            if extra and source is None:
                raise UsageError("--opt needs --from: options belong to one adapter")
            result = audit(paths, adapter=source, options=extra, progress=progress)
        except UsageError as exc:
            fail(str(exc), EXIT_USAGE)
        except KernelEvidenceError as exc:
            fail(str(exc), EXIT_INVALID)
        finally:
            if progress is not None:
                progress.done()
        if not quiet:
            for w in result.warnings:
                sys.stderr.write(f"kevidence: warning: {shown(w)}\n")
        if result.packets == 0 and not result.unreadable:
            # a gate that read nothing must not pass: a wrong path is not a clean result set
            fail(f"{', '.join(paths)}: no packets or harness outputs found to audit")
        limit = top if top is not None else (50 if fmt in ("text", "md") else None)
        text = render(result, fmt, top=limit, min_level=min_level)
        _write(text, output)
        failed = result.fails(fail_on)
        if failed and fail_on != "never":
            n = len(result.at_least(fail_on))
            sys.stderr.write(
                f"kevidence: audit failed: {n} suspects at {fail_on} or above"
                f"{f', {len(result.unreadable)} unreadable documents' if result.unreadable else ''}\n"
            )
        raise typer.Exit(EXIT_INVALID if failed else EXIT_OK)


def _write(text: str, output: str | None) -> None:
    if output is None or output == "-":
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError as exc:
            if stdout_failed(exc):
                raise
            fail(str(exc))
        return
    from ..io import open_output

    try:
        fh, commit = open_output(output)
    except OSError as exc:
        fail(str(exc))
    ok = False
    try:
        fh.write(text.encode("utf-8"))
        ok = True
    except OSError as exc:
        fail(f"{output}: cannot be written ({exc.strerror or exc})")
    finally:
        commit(ok)


class _Progress:
    """``audited N packets`` on one stderr line, rewritten at most ten times a second."""

    def __init__(self) -> None:
        self.last = 0.0
        self.shown = False

    def __call__(self, n: int) -> None:
        now = time.monotonic()
        if now - self.last >= 0.1:
            self.last = now
            self.shown = True
            sys.stderr.write(f"\rkevidence: audited {n} packets")
            sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
