"""The ``kevidence`` command. Thin: one module per command, each calling library functions.

Exit codes: 0 success / all valid, 1 invalid input or a failed check, 2 usage error.
"""

from __future__ import annotations

import importlib
import sys

import typer

from .._version import __version__

__all__ = ["app", "main"]

app = typer.Typer(
    name="kevidence",
    help="Evidence packets for GPU and accelerator performance claims.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

#: command modules, in the order they appear in --help; each defines ``register(app)``
COMMANDS = (
    "validate",
    "rules",
    "schema",
    "id",
    "ingest",
    "metrics",
    "replay",
    "compare",
    "archive",
    "export",
    "report",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kevidence {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Evidence packets for GPU and accelerator performance claims."""


def _register_all() -> None:
    for name in COMMANDS:
        try:
            module = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue  # command not part of this build yet
            raise
        module.register(app)


_register_all()


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``kevidence``; returns the exit code."""
    try:
        app(args=argv, prog_name="kevidence", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except MemoryError:
        # an input too large for this machine's memory: one line, not a traceback (outputs
        # are written to a temp file first, so nothing half-written is left in place)
        sys.stderr.write(
            "kevidence: error: out of memory; the input is too large for this machine "
            "(split it, or run where more memory is available)\n"
        )
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


def _entry() -> None:
    """Console-script entry point."""
    sys.exit(main())
