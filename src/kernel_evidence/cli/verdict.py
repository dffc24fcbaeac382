# ruff: noqa: B008  (typer declares options as defaults)
"""``kevidence verdict add|list``: third-party verdicts kept beside an archive.

Thin: the work is :mod:`kernel_evidence.archive.verdicts`. ``add`` appends one record (the
archived packets are never rewritten); ``list`` prints them, one per line or as JSONL.
"""

from __future__ import annotations

import json
import sys

import typer

from ..errors import KernelEvidenceError, UsageError
from ._common import EXIT_INVALID, EXIT_OK, EXIT_USAGE, fail, shown


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        name="verdict",
        help="Third-party verdicts on archived packets: confirmed, reproduced, drifted, hacked, retracted.",
        no_args_is_help=True,
    )
    app.add_typer(group, name="verdict")

    @group.command("add")
    def add_cmd(
        archive: str = typer.Argument(..., help="Archive directory."),
        packet_id: str = typer.Argument(..., help="The archived packet's id (sha256:...)."),
        verdict: str = typer.Argument(..., help="confirmed, reproduced, drifted, hacked or retracted."),
        by: str = typer.Option(..., "--by", help="Who gives the verdict (a name, an account, a team)."),
        why: str = typer.Option(..., "--why", help="Why, in a sentence."),
        evidence: str | None = typer.Option(
            None, "--evidence", help="The packet id of the evidence (required for reproduced and drifted)."
        ),
        at: str | None = typer.Option(None, "--at", help="When, as RFC 3339 UTC (default: now)."),
        unarchived: bool = typer.Option(
            False, "--allow-unarchived", help="Accept a packet id the archive does not hold."
        ),
    ) -> None:
        """Append a verdict on one archived packet."""
        from ..archive.verdicts import add_verdict, verdicts_path

        try:
            v = add_verdict(
                archive, packet_id, verdict, by=by, why=why, evidence=evidence, at=at,
                require_archived=not unarchived,
            )  # fmt: skip
        except UsageError as exc:
            fail(str(exc), EXIT_USAGE)
        except KernelEvidenceError as exc:
            fail(str(exc), EXIT_INVALID)
        sys.stderr.write(f"{shown(str(verdicts_path(archive)))}: {v.verdict} on {v.packet_id} recorded\n")
        raise typer.Exit(EXIT_OK)

    @group.command("list")
    def list_cmd(
        archive: str = typer.Argument(..., help="Archive directory."),
        packet_id: str | None = typer.Option(None, "--packet", help="Only the verdicts on this packet."),
        verdicts: list[str] = typer.Option([], "--verdict", help="Only these verdicts. Repeatable."),
        latest: bool = typer.Option(False, "--latest", help="Only the latest verdict on each packet."),
        as_json: bool = typer.Option(False, "--json", help="One JSON record a line."),
    ) -> None:
        """List the verdicts kept beside an archive, in the order they were given."""
        from ..archive.verdicts import VERDICTS, current_verdicts, iter_verdicts

        bad = [v for v in verdicts if v not in VERDICTS]
        if bad:
            fail(f"--verdict: expected one of {', '.join(VERDICTS)}, got {bad[0]!r}", EXIT_USAGE)
        wanted = set(verdicts) or None
        try:
            _check_archive(archive)
            if latest:
                found = [
                    v for v in current_verdicts(archive).values()
                    if (packet_id is None or v.packet_id == packet_id) and (wanted is None or v.verdict in wanted)
                ]  # fmt: skip
            else:
                found = list(iter_verdicts(archive, packet_id=packet_id, verdict=wanted))
        except UsageError as exc:
            fail(str(exc), EXIT_USAGE)
        except KernelEvidenceError as exc:
            fail(str(exc), EXIT_INVALID)
        for v in found:
            if as_json:
                sys.stdout.write(json.dumps(v.to_dict(), ensure_ascii=False) + "\n")
            else:
                ev = f" (evidence {v.evidence})" if v.evidence else ""
                sys.stdout.write(
                    shown(f"{v.at}  {v.packet_id}  {v.verdict:<10}  by {v.by}: {v.why}{ev}") + "\n"
                )
        raise typer.Exit(EXIT_OK)


def _check_archive(archive: str) -> None:
    """An :class:`~kernel_evidence.errors.ArchiveError` unless ``archive`` is one."""
    from pathlib import Path

    from ..archive._layout import read_marker

    read_marker(Path(archive), for_write=False)
