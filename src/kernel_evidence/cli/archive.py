# ruff: noqa: E501, B008  (typer declares options as defaults; help texts unwrapped)
"""``kevidence archive PACKETS... --to DIR``: add packets to a Parquet archive."""

from __future__ import annotations

import sys

import typer

from ..errors import ArchiveError
from ..io import Limits
from ._common import EXIT_INVALID, EXIT_OK, EXIT_USAGE, MAX_SIZE_LIMIT, fail
from ._common import shown as printable

#: refusals listed one per line; the rest are counted
_SHOWN_REFUSALS = 1000


def register(app: typer.Typer) -> None:
    @app.command("archive")
    def archive_cmd(
        paths: list[str] = typer.Argument(
            ...,
            help="Packet files, directories (recursive) or - for stdin; .json, .jsonl, .json.zst, .jsonl.zst.",
        ),
        to: str = typer.Option(
            ..., "--to", help="Archive directory (created when new; appended to when it exists)."
        ),
        allow_invalid: bool = typer.Option(
            False,
            "--allow-invalid",
            help="Store invalid packets too, with their findings and grade.",
        ),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="Only the summary line."),
        progress: bool | None = typer.Option(
            None,
            "--progress/--no-progress",
            help="Progress line: packets so far, of how many when known, and the rate (default: on a terminal).",
        ),
        side_files_from: list[str] = typer.Option(
            [],
            "--side-files-from",
            metavar="DIR",
            help="Also copy raw tables (side files) found in DIR and below; by default only those in the packet file's folder are read. Repeatable.",
        ),
        max_record_bytes: int = typer.Option(
            Limits.max_record_bytes, min=1, max=MAX_SIZE_LIMIT, help="Largest single document accepted."
        ),
        max_decompressed_bytes: int = typer.Option(
            Limits.max_decompressed_bytes,
            min=1,
            max=MAX_SIZE_LIMIT,
            help="Largest amount one zstd file may decompress to.",
        ),
    ) -> None:
        """Archive packets into a Parquet dataset (exit 1 when any is refused).

        Exit 0 when every packet was archived or already present, 1 when any was refused, none
        was found, or the archive could not be written. A run that adds nothing leaves no new
        archive behind. Raw metric side files (raw_table) are copied into DIR/_raw/; one that
        is missing or differs is a warning (its packet is archived all the same).
        """
        from ..archive import archive_packets
        from ..archive.reader import OutputError
        from ._progress import Counter, known_total

        limits = Limits(max_record_bytes=max_record_bytes, max_decompressed_bytes=max_decompressed_bytes)

        shown = [0]

        def show(refusal: object) -> None:
            # one line per refusal, up to a point: a hostile input of a million bad
            # documents must not flood the terminal (the summary counts them all)
            if not quiet and shown[0] < _SHOWN_REFUSALS:
                # packet content (a name, a status) may hold terminal escapes: shown escaped
                line = printable(" ".join(refusal.line().split()))  # type: ignore[attr-defined]
                sys.stderr.write(f"refused: {line}\n")
            shown[0] += 1

        counter = None
        if progress or (progress is None and not quiet and sys.stderr.isatty()):
            try:
                total = known_total(paths)
            except OSError:  # the archive run names what cannot be read
                total = None
            counter = Counter("archiving", total)
            counter.on = True

        def show_line(refusal: object) -> None:
            if counter is not None:
                counter.close()  # the refusal line starts a line of its own
                counter.on = True
            show(refusal)

        try:
            summary = archive_packets(
                paths,
                to,
                allow_invalid=allow_invalid,
                limits=limits,
                on_refusal=show_line,
                side_files_from=side_files_from,
                on_progress=counter.add if counter is not None else None,
            )
        except OutputError as exc:
            fail(str(exc), EXIT_USAGE)
        except ArchiveError as exc:
            fail(str(exc))
        finally:
            if counter is not None:
                counter.close()
        if not (summary.added or summary.duplicates or summary.refused_count):
            fail(f"{' '.join(paths)}: no packets found; expected .json, .jsonl or .ndjson files (zstd: .zst)")
        if not quiet and shown[0] > _SHOWN_REFUSALS:
            sys.stderr.write(f"refused: ... and {shown[0] - _SHOWN_REFUSALS} more (not listed)\n")
        if summary.cleaned and not quiet:
            sys.stderr.write(
                f"kevidence: note: removed {len(summary.cleaned)} file(s) an interrupted run had left in {printable(to)}\n"
            )
        if not quiet:
            # a raw table that was not archived: the packet was, so it is a warning (exit 0)
            for warning in summary.warnings:
                sys.stderr.write(f"kevidence: warning: {printable(' '.join(warning.line().split()))}\n")
            if summary.warning_count > len(summary.warnings):
                more = summary.warning_count - len(summary.warnings)
                sys.stderr.write(
                    f"kevidence: warning: ... and {more} more raw tables not archived (not listed)\n"
                )
        raw = ""
        if summary.raw_files or summary.warning_count:
            raw = f"; raw tables: {len(summary.raw_files)} copied, {summary.warning_count} not archived"
        sys.stdout.write(
            f"{to}: {summary.added} added, {summary.duplicates} already present, "
            f"{summary.refused_count} refused, {len(summary.files)} files written{raw}\n"
        )
        raise typer.Exit(EXIT_INVALID if summary.refused_count else EXIT_OK)
