"""The one translation of structural errors into the validator's words.

Structure is checked in two places: msgspec, while the fast path decodes JSON bytes into
the packet structs, and pydantic, when JSON data (a dict) is validated by the models. Both
name the same problems differently; :func:`from_msgspec` and :func:`from_pydantic` sort
each into one of a few kinds, and :func:`structural` words every kind once, so a packet
gets the same message and JSON Pointer whichever way it was read.
"""

from __future__ import annotations

import re
from typing import Any

from .versions import CURRENT, parse_pair, supported_text

__all__ = [
    "escape",
    "from_msgspec",
    "from_pydantic",
    "msgspec_path_to_pointer",
    "structural",
    "unsupported_version",
]

_PATH_RE = re.compile(r" - at (?:`key` in )?`\$(.*)`$")
_SEG_RE = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\]")


def escape(seg: str) -> str:
    """One JSON Pointer segment (RFC 6901: ``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return seg.replace("~", "~0").replace("/", "~1")


def unsupported_version(value: Any) -> str:
    """What a packet whose ``schema_version`` this reader does not read is told."""
    shown = value if isinstance(value, str) and len(value) <= 40 else repr(value)[:40]
    pair = parse_pair(value)
    newer = pair is not None and pair > (CURRENT.major, CURRENT.minor)
    return f"unsupported schema_version `{shown}`; this reader reads {supported_text()}" + (
        " (a newer packet needs a newer kernel-evidence)" if newer else ""
    )


def structural(
    kind: str, pointer: str, *, field: str = "", got: Any = None, detail: str = ""
) -> tuple[str, str]:
    """``(message, pointer)`` for one structural problem.

    ``kind`` is one of ``unknown`` (``field`` is not in the schema; ``pointer`` is the
    object holding it), ``missing`` (``field`` is required; ``pointer`` the object),
    ``float_range``, ``int_range``, ``extension_key``, ``schema_version`` (``got`` the
    value), ``unit`` (``got`` the unit given) or ``other`` (``detail`` as the checker
    worded it).
    """
    if kind == "unknown":
        return (
            f"unknown field `{field}` (not in schema {CURRENT}; put tool-specific data under /extensions)",
            pointer,
        )
    if kind == "missing":
        return f"missing required field `{field}`", pointer + "/" + escape(field)
    if kind == "float_range":
        return "number too large or too small to represent; expected a finite float64", pointer
    if kind == "int_range":
        return "integer out of range; expected a 64-bit integer", pointer
    if kind == "extension_key":
        return "an extension key is not a URI; expected `scheme:rest` (e.g. `vendor:name`)", pointer
    if kind == "schema_version":
        return unsupported_version(got), pointer
    if kind == "unit":
        from ..rules._units import expected_unit_text

        return f"{expected_unit_text(pointer)}, got `{got}`", pointer
    return detail, pointer


# ---------------------------------------------------------------- msgspec


def msgspec_path_to_pointer(path: str) -> str:
    """``$.timing.stats[0]`` style path (without ``$``) -> JSON Pointer ``/timing/stats/0``
    (a ``[...]`` segment, a dict key msgspec does not name, is left out)."""
    out = []
    for m in _SEG_RE.finditer(path):
        name, idx, key = m.groups()
        if name is not None:
            out.append(escape(name))
        elif idx is not None:
            out.append(idx)
        else:
            out.append(escape(key[1:-1]))
    return "/" + "/".join(out) if out else ""


def _split(msg: str) -> tuple[str, str, str | None]:
    """(message, pointer, reported pointer): msgspec writes ``[...]`` for a dict key it
    does not name; the finding then points at that dict (``/profiler/0/kernels/0/metrics``),
    not at a field path that skips the key, while the message is still worded from the
    field (``.../unit``)."""
    m = _PATH_RE.search(msg)
    if not m:
        return msg, "", None
    path = m.group(1)
    cut = path.find("[...]")
    at = msgspec_path_to_pointer(path[:cut]) if cut >= 0 else None
    return msg[: m.start()], msgspec_path_to_pointer(path), at


def _quoted(msg: str) -> str:
    return msg.split("`")[1] if "`" in msg else "?"


def from_msgspec(error: str) -> tuple[str, str]:
    """``(message, pointer)`` for a :class:`msgspec.ValidationError`'s text."""
    msg, pointer, at = _split(error)
    if msg.startswith("Object contains unknown field"):
        out = structural("unknown", pointer, field=_quoted(msg))
    elif msg.startswith("Object missing required field"):
        out = structural("missing", pointer, field=_quoted(msg))
    elif msg.startswith("Number out of range"):
        out = structural("float_range", pointer)
    elif msg.startswith("Integer value out of range"):
        out = structural("int_range", pointer)
    elif pointer == "/extensions" and msg.startswith("Expected `str` matching regex"):
        out = structural("extension_key", pointer)
    elif pointer == "/schema_version":
        if "Invalid enum value" in msg:
            out = structural("schema_version", pointer, got=msg.split("Invalid enum value ")[-1].strip("'\""))
        else:  # not a string at all
            out = structural(
                "other", pointer, detail=f"{msg}; expected a schema version ({supported_text()})"
            )
    elif pointer.endswith("/unit") and msg.startswith("Invalid enum value"):
        out = structural("unit", pointer, got=msg.split("Invalid enum value ")[-1].strip("'\""))
    else:
        out = structural("other", pointer, detail=msg)
    return out[0], (at if at is not None else out[1])


# ---------------------------------------------------------------- pydantic


def _data_path(data: Any, loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """The steps of a pydantic error location that exist in the data: pydantic adds the
    member of a union it tried (``constrained-float``, ``literal['inf']``) and ``[key]``
    for a bad dict key, which are not JSON Pointer segments. A step is kept when the data
    has it; the rest of the location after a missing member (a missing field) is kept."""
    out: list[int | str] = []
    node: Any = data
    for i, step in enumerate(loc):
        if isinstance(node, dict):
            if step in node:
                out.append(step)
                node = node[step]
                continue
            if i == len(loc) - 1 and not (isinstance(step, str) and _TAG.match(step)):
                out.append(step)  # the missing (or unknown) member itself
            continue
        if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            out.append(step)
            node = node[step]
            continue
        if isinstance(step, str) and _TAG.match(step):
            continue  # a union member or a key marker, not a step in the data
        out.append(step)
        node = None
    return tuple(out)


_TAG = re.compile(r"^(\[key\]|[a-z-]+\[.*\]|[a-z]+(-[a-z]+)+|int|float|str|bool|list|dict|none)$")


def from_pydantic(exc: Any, data: Any = None) -> list[tuple[str, str]]:
    """``(message, pointer)`` for each error of a pydantic ``ValidationError`` over ``data``."""
    out = []
    for err in exc.errors(include_url=False):
        loc = _data_path(data, err["loc"])
        pointer = "".join("/" + escape(str(x)) for x in loc)
        typ = err["type"]
        if typ == "missing":
            out.append(structural("missing", pointer.rsplit("/", 1)[0], field=str(loc[-1])))
        elif typ == "extra_forbidden":
            out.append(structural("unknown", pointer.rsplit("/", 1)[0], field=str(loc[-1])))
        elif loc and loc[-1] == "unit" and typ == "literal_error":
            out.append(structural("unit", pointer, got=err.get("input")))
        elif loc == ("schema_version",):
            out.append(structural("schema_version", pointer, got=err.get("input")))
        else:
            out.append(structural("other", pointer, detail=err["msg"]))
    return out
