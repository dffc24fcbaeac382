"""The exception tree. Every error kernel-evidence raises on purpose derives from one root::

    KernelEvidenceError
    ├── UsageError            a command or call used wrongly: a bad option or argument (CLI exit code 2)
    ├── InputError            a file or stream could not be read as packets (names file and place)
    │   └── LimitExceeded     input over a size, line-length or nesting cap
    ├── PacketInvalid         a packet failed validation (carries the report)
    ├── AdapterError          a profiler or benchmark output could not be turned into packets
    │   ├── UnknownAdapter    no adapter has that name or alias (also a UsageError)
    │   └── AdapterOptionError an adapter option (``--opt KEY=VALUE``) has a bad value (also a UsageError)
    ├── MissingExtra          an optional dependency is not installed (names the extra)
    ├── ArchiveError          a Parquet archive could not be read or written
    └── MigrationError        a packet's schema_version cannot be read or migrated to the current one

Messages are one line: what was expected, what was found, and where. The command line maps
errors to exit codes by type (a :class:`UsageError` is 2, any other error 1), never by the
words of their messages.
"""

from __future__ import annotations

__all__ = [
    "AdapterError",
    "AdapterOptionError",
    "ArchiveError",
    "InputError",
    "KernelEvidenceError",
    "LimitExceeded",
    "MigrationError",
    "MissingExtra",
    "PacketInvalid",
    "UnknownAdapter",
    "UsageError",
]


class KernelEvidenceError(Exception):
    """Root of every error kernel-evidence raises on purpose."""


def _escape_char(c: str) -> str:
    code = ord(c)
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a file name that is not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, f"\\x{code:02x}")
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(text: str) -> str:
    """``text`` (a file name, or a string from a packet) safe to print on one line.

    Characters that are not printable - newlines, ESC and the other control characters that
    would break the line or drive the terminal, bidirectional overrides, lone surrogates
    (the bytes of a file name that is not UTF-8) - are shown as backslash escapes
    (``\\n``, ``\\x1b``, ``\\u202e``, ``\\xff``); everything else is kept as it is.
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape_char(c) for c in text)


class InputError(KernelEvidenceError):
    """A file or stream could not be read. ``source`` and ``location`` say where."""

    def __init__(self, source: str, location: str | None, message: str) -> None:
        self.source = source
        self.location = location
        self.message = message
        where = f"{shown(source)}:{location}" if location else shown(source)
        super().__init__(f"{where}: {message}")

    def __reduce__(self) -> tuple[object, ...]:  # raised in a worker process, re-raised here
        return (type(self), (self.source, self.location, self.message))


class LimitExceeded(InputError):
    """Input larger or deeper than a configured cap."""


class PacketInvalid(KernelEvidenceError):
    """A packet failed validation; ``report`` holds every finding."""

    def __init__(self, report: object, message: str) -> None:
        self.report = report
        super().__init__(message)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.report, str(self)))


class AdapterError(KernelEvidenceError):
    """A source file could not be turned into packets."""


class UsageError(KernelEvidenceError, ValueError):
    """A command or call used wrongly: an option or argument the user gave is malformed,
    unknown or contradicts another (exit code 2 at the command line)."""


class UnknownAdapter(AdapterError, UsageError):
    """No adapter is registered under the name asked for (built-in or plug-in)."""


class AdapterOptionError(AdapterError, UsageError):
    """An adapter option (``AdapterOptions.extra``, ``--opt KEY=VALUE``) has a value the
    adapter cannot use."""


class MissingExtra(KernelEvidenceError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        self.package = package
        self.extra = extra
        self.purpose = purpose
        super().__init__(f"{purpose} needs the `{package}` package: pip install 'kernel-evidence[{extra}]'")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.package, self.extra, self.purpose))


class ArchiveError(KernelEvidenceError):
    """A Parquet archive could not be read or written."""


class MigrationError(KernelEvidenceError, ValueError):
    """A packet's ``schema_version`` is not one this version reads, or the packet holds
    what its own version does not define. ``pointer`` says where (a JSON Pointer)."""

    def __init__(self, pointer: str, message: str) -> None:
        self.pointer = pointer
        self.message = message
        super().__init__(f"{message} - at `{pointer or '/'}`")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.pointer, self.message))
