"""``kevidence id PATH...``: print content-addressed packet ids; optionally write packets with ids set."""

from __future__ import annotations

import json
import sys
from typing import Any

import msgspec
import typer

from .._codec.canonical import packet_id_for
from .._codec.decode import EMPTY_ARRAY, find_duplicate_key, maybe_duplicates
from .._codec.migrate import migrate
from ..errors import MigrationError
from ..io import discover, iter_records, output_streams_jsonl, write_packets
from ._common import EXIT_INVALID, EXIT_USAGE, fail, shown

#: error lines printed; the rest are counted in one last line (a file of a million bad
#: lines must not flood the terminal)
_SHOWN_ERRORS = 1000

_encoder = msgspec.json.Encoder()
_WHITESPACE = " \t\r\n"


class _Repeated(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _Repeated(k)
            seen.add(k)
    return out


def _repeated_keys(raw: bytes, data: Any) -> dict[int | None, str]:
    """The key an object repeats, for each item of a JSON array that has one (``None``:
    the document itself, when it is not an array); empty when no object repeats a key.

    The decoder keeps the last of repeated keys; the validator refuses such a packet (KE003),
    as its content is ambiguous, and so does ``id``. The cheap screen of the validator runs
    first (a document without repeated keys re-encodes with as many quote marks), the exact
    search only when it trips.
    """
    if not maybe_duplicates(raw, _encoder.encode(data).count(b'"')):
        return {}
    if not isinstance(data, list):
        key = find_duplicate_key(raw)
        return {} if key is None else {None: key}
    # which items: each decoded on its own, from where the one before ended
    text = raw.decode("utf-8")
    checking = json.JSONDecoder(object_pairs_hook=_no_repeats)
    plain = json.JSONDecoder()
    out: dict[int | None, str] = {}
    pos = text.index("[") + 1
    try:
        for i in range(len(data)):
            while text[pos] in _WHITESPACE or text[pos] == ",":
                pos += 1
            try:
                _, pos = checking.raw_decode(text, pos)
            except _Repeated as r:
                out[i] = r.key
                _, pos = plain.raw_decode(text, pos)
    except (ValueError, IndexError, RecursionError):
        pass  # what the json module does not read (as for the validator's exact search)
    return out


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
        """Compute each packet's id (sha256 of its canonical JSON without packet_id).

        A packet of an older schema version is migrated first: its id is that of its
        current form, and -o writes the current form."""
        out: list[dict] = []  # type: ignore[type-arg]
        errors = 0
        seen = False

        def error(line: str) -> None:
            nonlocal errors
            if errors < _SHOWN_ERRORS:
                sys.stderr.write(f"kevidence: error: {line}\n")
            errors += 1

        for name in discover(paths):
            for rec in iter_records(name):
                seen = True
                if rec.error is not None:
                    error(str(rec.error))
                    continue
                assert rec.data is not None  # a record without error carries data
                where = f"{shown(rec.source)}:{rec.location}" if rec.location else shown(rec.source)
                try:
                    data = msgspec.json.decode(rec.data)
                except (msgspec.DecodeError, RecursionError) as exc:
                    error(f"{where}: not JSON ({exc})")
                    continue
                repeated = _repeated_keys(rec.data, data)
                if None in repeated:
                    error(
                        f"{where}: duplicate key `{repeated[None]}` in one object; a JSON object must not repeat a key"
                    )
                    continue
                multi = isinstance(data, list)
                items = data if multi else [data]
                if not items:
                    error(f"{where}: {EMPTY_ARRAY}")
                    continue
                for i, d in enumerate(items):
                    at = (
                        f"{shown(rec.source)}:{rec.location + ', ' if rec.location else ''}item {i}"
                        if multi
                        else where
                    )
                    if not isinstance(d, dict):
                        error(f"{at}: expected a JSON object (a packet), got {type(d).__name__}")
                        continue
                    if i in repeated:
                        error(
                            f"{at}: duplicate key `{repeated[i]}` in one object; a JSON object must not repeat a key"
                        )
                        continue
                    try:
                        d = migrate(d)  # an older packet's id is that of its current form
                    except MigrationError as exc:
                        error(f"{at}: {exc}")
                        continue
                    pid = packet_id_for(d)
                    print(f"{pid}  {where}")
                    if output is not None:
                        out.append({**d, "packet_id": pid})
        if errors > _SHOWN_ERRORS:
            sys.stderr.write(f"kevidence: error: ... and {errors - _SHOWN_ERRORS} more errors (not listed)\n")
        code = EXIT_INVALID if errors else 0
        if not seen and code == 0:
            fail(f"{' '.join(paths)}: no packets found; expected .json, .jsonl or .ndjson files (zstd: .zst)")
        if output is not None and code == 0:
            if len(out) > 1 and not output_streams_jsonl(output):
                fail(
                    f"{output}: {len(out)} packets need a .jsonl (or .jsonl.zst) output name; a .json file holds one",
                    EXIT_USAGE,
                )
            try:
                write_packets(output, out, overwrite=force)
            except (OSError, ValueError) as exc:
                fail(str(exc))
        raise typer.Exit(code)
