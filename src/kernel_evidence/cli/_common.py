"""Small helpers shared by the command modules: one-line errors, exit codes, consoles."""

from __future__ import annotations

import sys
from typing import NoReturn

import typer
from rich.console import Console

__all__ = ["EXIT_INVALID", "EXIT_OK", "EXIT_USAGE", "err_console", "fail", "out_console"]

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2


def out_console() -> Console:
    """Console for results: colour only on a terminal, never wrapped."""
    return Console(file=sys.stdout, soft_wrap=True, highlight=False)


def err_console() -> Console:
    return Console(file=sys.stderr, soft_wrap=True, highlight=False)


def fail(message: str, code: int = EXIT_INVALID) -> NoReturn:
    """Print ``kevidence: error: message`` on stderr (one line) and exit with ``code``."""
    sys.stderr.write(f"kevidence: error: {' '.join(message.split())}\n")
    raise typer.Exit(code)
