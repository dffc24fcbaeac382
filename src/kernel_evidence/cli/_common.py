"""Small helpers shared by the command modules: one-line errors, exit codes, consoles."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn

from ..errors import shown as _shown

if TYPE_CHECKING:  # typer and rich load when a command needs them: not for a plain validate
    from rich.console import Console

__all__ = [
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_USAGE",
    "MAX_SIZE_LIMIT",
    "err_console",
    "fail",
    "out_console",
    "shown",
    "stdout_failed",
]

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2

#: upper bound of the byte-size options (``--max-record-bytes``, ``--max-decompressed-bytes``,
#: typer ``max=``): a read size or file offset must fit in a signed 64-bit integer, with room
#: for the ``+ 1`` a capped read asks for
MAX_SIZE_LIMIT = 1 << 62


def out_console() -> Console:
    """Console for results: colour only on a terminal, never wrapped."""
    from rich.console import Console

    return Console(file=sys.stdout, soft_wrap=True, highlight=False)


def err_console() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr, soft_wrap=True, highlight=False)


def shown(text: str) -> str:
    """``text`` (a file name, or a string from a packet) safe to print on one line: see
    :func:`kernel_evidence.errors.shown`."""
    return _shown(text)


def stdout_failed(exc: BaseException) -> bool:
    """Whether ``exc`` is the error that stopped a write to standard output (a full disk, a
    closed pipe): :func:`kernel_evidence.cli.main` reports it, once, in its own words."""
    return exc is not None and getattr(sys.stdout, "error", None) is exc


def fail(message: str, code: int = EXIT_INVALID) -> NoReturn:
    """Print ``kevidence: error: message`` on stderr (one line) and exit with ``code``.

    Runs of white space (line breaks too) become one space; other characters that are not
    printable (ESC, NUL, ...: from a file name or a packet) are shown escaped.
    """
    import typer

    sys.stderr.write(f"kevidence: error: {shown(' '.join(message.split()))}\n")
    raise typer.Exit(code)
