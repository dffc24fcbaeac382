"""``kevidence schema``: print the published JSON Schema."""

from __future__ import annotations

import sys

import typer

from ..schema import SUPPORTED_VERSIONS, SchemaVersion, dumps_schema, load_schema
from ._common import EXIT_USAGE, fail


def register(app: typer.Typer) -> None:
    @app.command("schema")
    def schema_cmd(
        schema_version: str | None = typer.Option(
            None,
            "--schema-version",
            "-s",
            help=f"Packet schema version (default: the current one, {SUPPORTED_VERSIONS[-1]}).",
        ),
        output: str | None = typer.Option(
            None, "-o", "--output", help="Write to a file instead of stdout (never overwrites)."
        ),
        old_version: str | None = typer.Option(
            None, "--version", hidden=True, help="The old spelling of --schema-version."
        ),
    ) -> None:
        """Print the JSON Schema (Draft 2020-12) of a packet version."""
        if old_version is not None:
            if schema_version is not None:
                fail("give --schema-version once (--version is its old spelling)", EXIT_USAGE)
            # kept working: `kevidence --version` is the program's version, so the schema's
            # is --schema-version now (docs/upgrading.md)
            sys.stderr.write("kevidence: note: `schema --version` is now `schema --schema-version`\n")
            schema_version = old_version
        version = str(SUPPORTED_VERSIONS[-1]) if schema_version is None else schema_version
        try:
            v = SchemaVersion.parse(version)
        except ValueError as exc:
            fail(str(exc), EXIT_USAGE)
        if v not in SUPPORTED_VERSIONS:
            fail(f"unknown schema version {v}; known: {', '.join(map(str, SUPPORTED_VERSIONS))}", EXIT_USAGE)
        text = dumps_schema(load_schema(v))
        if output is None:
            sys.stdout.write(text)
            return
        if not output:
            fail("-o/--output expects a file name, got an empty one", EXIT_USAGE)
        from ..io import write_output

        try:
            write_output(output, text.encode("utf-8"))  # never replaces an existing file
        except FileExistsError as exc:
            fail(str(exc).replace(" (use --force)", ""))  # schema -o has no --force
        except OSError as exc:
            fail(str(exc))
