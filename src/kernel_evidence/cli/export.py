# ruff: noqa: E501, B008  (typer declares options as defaults; help texts unwrapped)
"""``kevidence export DIR -o FILE``: give archived packets back as JSONL."""

from __future__ import annotations

import sys

import typer

from ..errors import ArchiveError
from ._common import EXIT_OK, EXIT_USAGE, fail, shown, stdout_failed


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export_cmd(
        archive: str = typer.Argument(..., help="Archive directory."),
        output: str = typer.Option(
            ...,
            "--output",
            "-o",
            help="Output file: .jsonl, .jsonl.zst (zstd), .json (one packet); - for stdout.",
        ),
        where: list[str] = typer.Option(
            [],
            "--where",
            "-w",
            help="Filter COLUMN OP VALUE (OP: = != < <= > >=; a|b for one of several; null). Repeatable: all must hold.",
        ),
        force: bool = typer.Option(False, "--force", help="Replace an existing output file."),
    ) -> None:
        """Export archived packets, byte for byte as they were archived (compact JSON).

        Raw metric side files (raw_table) are copied from the archive to beside a file output,
        under their plain file names; an existing file is never replaced. What is not copied
        is a warning on stderr.
        """
        from ..archive.reader import OutputError, WhereError, export_packets, parse_where

        try:
            expr = parse_where(where)
        except WhereError as exc:
            fail(f"--where: {exc}", EXIT_USAGE)

        def warn(message: str) -> None:
            sys.stderr.write(f"kevidence: warning: {shown(' '.join(message.split()))}\n")

        try:
            n = export_packets(archive, output, where=expr, overwrite=force, on_warning=warn)
        except OutputError as exc:
            fail(str(exc), EXIT_USAGE)
        except FileExistsError as exc:
            fail(str(exc))
        except (ArchiveError, OSError) as exc:
            if stdout_failed(exc):
                raise
            fail(str(exc))
        if output != "-":
            sys.stderr.write(f"{output}: {n} packets exported\n")
        raise typer.Exit(EXIT_OK)
