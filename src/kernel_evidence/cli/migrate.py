"""``kevidence migrate PATH... -o OUT``: rewrite packets at the current schema version."""

from __future__ import annotations

import sys

import typer

from .._codec.rewrite import migrate_paths
from .._codec.versions import CURRENT
from ..errors import KernelEvidenceError
from ._common import EXIT_INVALID, EXIT_USAGE, fail

#: error lines printed; the rest are counted in one last line
_SHOWN_ERRORS = 1000


def register(app: typer.Typer) -> None:
    @app.command("migrate")
    def migrate_cmd(
        paths: list[str] = typer.Argument(..., help="Packet files, directories or - for stdin."),
        output: str = typer.Option(
            ...,
            "-o",
            "--output",
            help="Write the packets here (.json for one, .jsonl[.zst] for several); never one of the inputs.",
        ),
        force: bool = typer.Option(False, "--force", help="Replace the output file if it exists."),
    ) -> None:
        """Rewrite packets of older schema versions at the current one, with their new ids.

        Packets already current are copied. A packet that cannot be read, or an older one
        whose packet_id does not match its own content, is reported and nothing is written.
        """
        if not output:
            fail("-o/--output expects a file name, got an empty one", EXIT_USAGE)
        errors = 0

        def error(line: str) -> None:
            nonlocal errors
            if errors < _SHOWN_ERRORS:
                sys.stderr.write(f"kevidence: error: {line}\n")
            errors += 1

        try:
            summary = migrate_paths(paths, output, overwrite=force, on_error=error)
        except FileExistsError as exc:
            fail(str(exc))
        except (KernelEvidenceError, OSError) as exc:
            fail(str(exc))
        except ValueError as exc:  # several packets for a .json name
            fail(f"{exc}", EXIT_USAGE)
        if errors > _SHOWN_ERRORS:
            sys.stderr.write(f"kevidence: error: ... and {errors - _SHOWN_ERRORS} more errors (not listed)\n")
        if summary.failed:
            fail(
                f"{summary.failed} packet(s) could not be migrated; nothing written to {output} "
                f"({summary.migrated + summary.current} readable)"
            )
        if summary.written == 0:
            fail(f"{' '.join(paths)}: no packets found; expected .json, .jsonl or .ndjson files (zstd: .zst)")
        print(
            f"{summary.migrated} packet(s) migrated to {CURRENT}, {summary.current} already at {CURRENT}; "
            f"{summary.written} written to {output}"
        )
        raise typer.Exit(0 if not errors else EXIT_INVALID)
