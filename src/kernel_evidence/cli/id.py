"""``kevidence id PATH...``: print content-addressed packet ids; optionally write packets with ids set."""

from __future__ import annotations

import sys

import msgspec
import typer

from .._canonical import packet_id_for
from ..io import discover, iter_records, write_packets
from ._common import EXIT_INVALID, EXIT_USAGE, fail


def register(app: typer.Typer) -> None:
    @app.command("id")
    def id_cmd(
        paths: list[str] = typer.Argument(..., help="Packet files, directories or - for stdin."),
        output: str | None = typer.Option(
            None,
            "-o",
            "--output",
            help="Write the packets, with packet_id set, to this file (.json/.jsonl[.zst]).",
        ),
        force: bool = typer.Option(False, "--force", help="Overwrite the output file if it exists."),
    ) -> None:
        """Compute each packet's id (sha256 of its canonical JSON without packet_id)."""
        out: list[dict] = []  # type: ignore[type-arg]
        code = 0
        seen = False
        for name in discover(paths):
            for rec in iter_records(name):
                seen = True
                if rec.error is not None:
                    sys.stderr.write(f"kevidence: error: {rec.error}\n")
                    code = EXIT_INVALID
                    continue
                assert rec.data is not None  # a record without error carries data
                try:
                    data = msgspec.json.decode(rec.data)
                except (msgspec.DecodeError, RecursionError) as exc:
                    where = f"{rec.source}:{rec.location}" if rec.location else rec.source
                    sys.stderr.write(f"kevidence: error: {where}: not JSON ({exc})\n")
                    code = EXIT_INVALID
                    continue
                items = data if isinstance(data, list) else [data]
                for d in items:
                    if not isinstance(d, dict):
                        sys.stderr.write(f"kevidence: error: {rec.source}: expected a JSON object\n")
                        code = EXIT_INVALID
                        continue
                    pid = packet_id_for(d)
                    where = f"{rec.source}:{rec.location}" if rec.location else rec.source
                    print(f"{pid}  {where}")
                    if output is not None:
                        out.append({**d, "packet_id": pid})
        if not seen and code == 0:
            fail(
                f"{' '.join(paths)}: no packets found; expected .json, .jsonl, .json.zst or .jsonl.zst files"
            )
        if output is not None and code == 0:
            if len(out) > 1 and not output.lower().endswith(
                (".jsonl", ".ndjson", ".jsonl.zst", ".ndjson.zst")
            ):
                fail(
                    f"{output}: {len(out)} packets need a .jsonl (or .jsonl.zst) output name; a .json file holds one",
                    EXIT_USAGE,
                )
            try:
                write_packets(output, out, overwrite=force)
            except (OSError, ValueError) as exc:
                fail(str(exc))
        raise typer.Exit(code)
