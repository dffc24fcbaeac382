"""The ``kevidence`` command. Thin: one module per command, each calling library functions.

Exit codes: 0 success / all valid, 1 invalid input or a failed check, 2 usage error.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
from typing import Any

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
    "migrate",
    "ingest",
    "metrics",
    "replay",
    "compare",
    "archive",
    "export",
    "report",
    "audit",
    "verdict",
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


class _Output:
    """Standard output as the commands see it, remembering the error that stopped a write.

    Everything is passed through to the real stream; an :class:`OSError` from writing or
    flushing it (ENOSPC on a full disk, EPIPE from a closed pipe) is kept in ``error`` before
    it propagates, so :func:`main` can tell a failed output from any other error. Text the
    stream's encoding cannot represent (an ASCII locale) is written backslash-escaped
    instead of failing. ``buffer`` (for binary output) is watched the same way.
    """

    def __init__(self, inner: Any, owner: _Output | None = None) -> None:
        self._inner = inner
        self._owner = owner or self
        self._buffer: _Output | None = None
        self.error: OSError | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def buffer(self) -> Any:
        if self._buffer is None:
            self._buffer = _Output(self._inner.buffer, self._owner)
        return self._buffer

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self._inner, method)(*args)
        except OSError as exc:
            self._owner.error = exc
            raise

    def write(self, data: Any) -> Any:
        try:
            return self._call("write", data)
        except UnicodeEncodeError:
            enc = getattr(self._inner, "encoding", None) or "utf-8"
            return self._call("write", data.encode(enc, "backslashreplace").decode(enc))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._call("flush")


def _stdout_failed(out: _Output, error: OSError, *, report: bool) -> None:
    """After standard output failed: say so in one line (not for a closed pipe, nor when the
    command already did), and make sure Python's own flush at exit cannot fail again."""
    if report and error.errno != errno.EPIPE:
        why = os.strerror(error.errno) if error.errno else str(error)
        sys.stderr.write(f"kevidence: error: cannot write to standard output: {why}\n")
    if out._inner is sys.__stdout__:
        # what is still buffered would fail again when Python flushes it at exit: send it
        # nowhere (the pattern the Python documentation recommends for a closed pipe)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.__stdout__.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``kevidence``; returns the exit code.

    A failed write to standard output (a full disk, a closed pipe) ends the command with
    exit code 1 and one line on stderr (none for a closed pipe, as usual), not a traceback.
    """
    out = _Output(sys.stdout)
    saved = sys.stdout, sys.stderr
    sys.stdout = out
    code = 1
    handled = False  # the command saw its output fail and reported it itself
    try:
        code = _run(argv)
        handled = out.error is not None
        out.flush()  # the last output may still be buffered: it can fail only here
    except OSError as exc:
        if exc is not out.error:
            raise
    finally:
        # click puts wrappers on both streams after a closed pipe: put the real ones back
        sys.stdout, sys.stderr = saved
    if out.error is not None:
        _stdout_failed(out, out.error, report=not handled)
        return code if handled else 1
    return code


def _run(argv: list[str] | None) -> int:
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
