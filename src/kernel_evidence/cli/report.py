# ruff: noqa: E501, B008  (typer declares options as defaults; help texts unwrapped)
"""``kevidence report DIR -o report.html``: one self-contained HTML report of an archive."""

from __future__ import annotations

import sys

import typer

from ..errors import ArchiveError
from ._common import EXIT_OK, EXIT_USAGE, fail, stdout_failed


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report_cmd(
        archive: str = typer.Argument(..., help="Archive directory."),
        output: str = typer.Option(..., "--output", "-o", help="Output HTML file; - for stdout."),
        where: list[str] = typer.Option(
            [], "--where", "-w", help="Report on matching packets only (same filters as export)."
        ),
        title: str = typer.Option("kernel-evidence report", "--title", help="Report title."),
        force: bool = typer.Option(False, "--force", help="Replace an existing output file."),
    ) -> None:
        """Write an HTML report (inline CSS and SVG, no network) of the archived packets."""
        from ..archive.reader import OutputError, WhereError, check_output, parse_where
        from ..archive.report import build_report, write_report

        try:
            expr = parse_where(where)
            if output != "-":
                check_output(archive, output)
        except WhereError as exc:
            fail(f"--where: {exc}", EXIT_USAGE)
        except OutputError as exc:
            fail(str(exc), EXIT_USAGE)
        try:
            if output == "-":
                text, n = build_report(archive, where=expr, title=title)
                sys.stdout.buffer.write(text.encode("utf-8"))
                sys.stdout.buffer.flush()
            else:
                n = write_report(archive, output, where=expr, title=title, overwrite=force)
        except (ArchiveError, FileExistsError, OSError) as exc:
            if stdout_failed(exc):
                raise
            fail(str(exc))
        if output != "-":
            sys.stderr.write(f"{output}: report on {n} packets\n")
        raise typer.Exit(EXIT_OK)
