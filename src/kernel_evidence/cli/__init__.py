"""The ``kevidence`` command. Thin: one module per command, each calling library functions.

Exit codes: 0 success / all valid, 1 invalid input or a failed check, 2 usage error.
"""

from __future__ import annotations

import ast
import errno
import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__

if TYPE_CHECKING:
    import typer

__all__ = ["app", "main"]


def _new_app() -> typer.Typer:
    import typer

    def _version(value: bool) -> None:
        if value:
            typer.echo(f"kevidence {__version__}")
            raise typer.Exit(0)

    def _root(
        version: bool = typer.Option(
            False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ) -> None:
        """Evidence packets for GPU and accelerator performance claims."""

    app = typer.Typer(
        name="kevidence",
        help="Evidence packets for GPU and accelerator performance claims.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        # plain help and usage errors: typer's rich rendering imports markdown and
        # traceback machinery that doubles the time `kevidence --help` takes
        rich_markup_mode=None,
    )
    app.callback()(_root)
    return app


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

_HERE = Path(__file__).resolve().parent
#: keyword arguments of ``@app.command(...)`` that a stand-in for the --help list keeps
_LISTED = ("help", "short_help", "hidden", "deprecated", "rich_help_panel")


def _register(app: typer.Typer, name: str) -> None:
    try:
        module = importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{name}":
            return  # command not part of this build yet
        raise
    module.register(app)


def _listing(name: str) -> tuple[str, dict[str, Any]] | None:
    """The command a module registers, read from its source without importing it: its
    name and the ``@app.command`` keywords, with the docstring as ``help``. ``None`` when
    the module registers something else (a group) and must be imported to be listed."""
    try:
        tree = ast.parse((_HERE / f"{name}.py").read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            if (
                isinstance(deco, ast.Call)
                and isinstance(deco.func, ast.Attribute)
                and deco.func.attr == "command"
                and isinstance(deco.func.value, ast.Name)
                and deco.func.value.id == "app"
            ):
                found.append((node, deco))
    if len(found) != 1:
        return None
    func, deco = found[0]
    try:
        kw = {k.arg: ast.literal_eval(k.value) for k in deco.keywords if k.arg in _LISTED}
        cmd = ast.literal_eval(deco.args[0]) if deco.args else func.name.replace("_", "-")
    except ValueError:
        return None
    if "help" not in kw:
        kw["help"] = ast.get_docstring(func) or ""
    return str(cmd), kw


def _listed(**_: Any) -> None:
    """Stands in for a command in the --help list; never run (a command named on the
    command line is registered from its module)."""


def _wanted(argv: list[str]) -> str | None:
    """The command named on the command line: the first argument that is not an option
    (the root options take no value), when it is one of :data:`COMMANDS`."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def _build(argv: list[str] | None) -> typer.Typer:
    """The app for one command line: only the command it names is imported (its heavy
    dependencies load when it runs); without one (``--help``, ``--version``, a mistyped
    name) every command is listed from its module's source, unimported."""
    app = _new_app()
    wanted = _wanted(list(sys.argv[1:] if argv is None else argv))
    if wanted is not None:
        _register(app, wanted)
        return app
    for name in COMMANDS:
        if not (_HERE / f"{name}.py").exists():
            continue  # command not part of this build yet
        listing = _listing(name)
        if listing is None:
            _register(app, name)
        else:
            app.command(listing[0], **listing[1])(_listed)
    return app


def _flag(param: Any) -> Any:
    if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
        param.metavar = ""  # shown as nothing, where typer would show ``<bool>``
    return param


def _as_flags(command: Any) -> Any:
    """Boolean flags (``--help`` too) show as flags in --help, without a ``<bool>`` type."""
    for param in getattr(command, "params", ()):
        _flag(param)
    make_help = command.get_help_option
    command.get_help_option = lambda ctx: _flag(make_help(ctx))
    for sub in getattr(command, "commands", {}).values():
        _as_flags(sub)
    return command


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole app, every command imported (documentation tools)
        app = _new_app()
        for command in COMMANDS:
            _register(app, command)
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


#: the ``validate`` flags the parser-free path understands (what a harness passes), and the
#: keyword of :func:`.validate.run` each sets
_PLAIN_FLAGS = {
    "--strict": ("strict", True),
    "--verbose": ("verbose", True),
    "-v": ("verbose", True),
    "--quiet": ("quiet", True),
    "-q": ("quiet", True),
    "--progress": ("progress", True),
    "--no-progress": ("progress", False),
}


def _plain_validate(argv: list[str]) -> tuple[list[str], dict[str, Any]] | None:
    """The paths and options of a ``validate`` command line that needs no parser (what a
    harness runs once per candidate: paths, with at most ``--strict``, ``--verbose``,
    ``--quiet``, ``--[no-]progress`` and ``--format text|json``, each once), else None.
    :func:`.validate.run` then runs as the parsed command would call it, and the start-up
    skips building the parser (typer builds pydantic adapters for it). Anything else (other
    options, a bad value, a repeated option, ``--``) goes through the parser, which words
    its errors."""
    if len(argv) < 2 or argv[0] != "validate":
        return None
    paths: list[str] = []
    options: dict[str, Any] = {}
    rest = iter(argv[1:])
    for a in rest:
        if a == "-" or not a.startswith("-"):
            paths.append(a)
            continue
        if a in ("--format", "-f") or a.startswith("--format="):
            value = a.partition("=")[2] if "=" in a else next(rest, None)
            if value not in ("text", "json") or "fmt" in options:
                return None
            options["fmt"] = value
            continue
        flag = _PLAIN_FLAGS.get(a)
        if flag is None or flag[0] in options:
            return None
        options[flag[0]] = flag[1]
    return (paths, options) if paths else None


def _run(argv: list[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    plain = _plain_validate(args)
    try:
        if plain is not None:
            from .validate import run as validate

            try:
                return validate(plain[0], **plain[1])
            except (KeyboardInterrupt, EOFError):  # as the parser's standalone mode does
                sys.stderr.write("\nAborted!\n")
                return 1
        from typer.main import get_command

        command = _as_flags(get_command(_build(args)))
        command.main(args=args, prog_name="kevidence", standalone_mode=True)
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
