"""Regular-expression checks of a decoded packet, generated from the models.

msgspec checks a ``pattern`` constraint by calling Python's ``re`` for every constrained
string while it decodes, about 0.3 us a value. The validator's hot path decodes into mirror
structs built without patterns (``struct_for(model, patterns=False)``) and then runs the one
function generated here: straight-line code that visits only the fields that can hold a
constrained string, with the same compiled expression msgspec would use (``re.search``), so
acceptance is identical; msgspec's own call costs about twice as much. Short strings found
to match are remembered (a bounded set per pattern): batches repeat timestamps and digests.
The caller checks the top-level ``packet_id`` itself: an id equal to the one the content
gives needs no pattern.

A packet the function rejects is decoded again with the patterned structs, which give the
usual message and JSON Pointer.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

if typing.TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["pattern_checker"]

#: the pattern of every ``sha256:`` digest field
DIGEST_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")


def _pattern(items: typing.Iterable[Any]) -> str | None:
    from pydantic.fields import FieldInfo  # here: the generated check needs no pydantic

    for m in items:
        if isinstance(m, FieldInfo):
            p = _pattern(m.metadata)
            if p is not None:
                return p
        elif getattr(m, "pattern", None) is not None:
            return str(m.pattern)
    return None


class _Gen:
    def __init__(self) -> None:
        self.consts: dict[str, Any] = {}
        self.stack: list[type[BaseModel]] = []

    def regex(self, pattern: str) -> str:
        for name, value in self.consts.items():
            if isinstance(value, re.Pattern) and value.pattern == pattern:
                return name
        name = f"_R{len(self.consts)}"
        self.consts[name] = re.compile(pattern)
        self.consts["_S" + name[2:]] = set()
        return name

    def check_str(self, var: str, pattern: str, ind: str) -> list[str]:
        r = self.regex(pattern)
        seen = "_S" + r[2:]
        return [
            f"{ind}if {var} not in {seen}:",
            f"{ind}    if {r}.search({var}) is None:",
            f"{ind}        return False",
            f"{ind}    _remember({seen}, {var})",
        ]

    def visit(self, tp: Any, var: str, ind: str, depth: int, pattern: str | None = None) -> list[str]:
        """Code checking the value in ``var`` (of type ``tp``, known not to be None unless
        ``tp`` allows it); empty when nothing under ``tp`` has a pattern."""
        origin = get_origin(tp)
        if origin is Annotated:
            base, *meta = get_args(tp)
            return self.visit(base, var, ind, depth, _pattern(meta) or pattern)
        if origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            codes = [self.visit(a, var, ind + "    ", depth, pattern) for a in args]
            if not any(codes):
                return []
            if len(args) != 1:
                raise TypeError(f"no pattern check for a union of several types: {tp!r}")
            if len(args) == len(get_args(tp)):
                return codes[0]
            return [f"{ind}if {var} is not None:", *codes[0]]
        if pattern is not None:
            if tp is not str:
                raise TypeError(f"a pattern on a non-string type: {tp!r}")
            return self.check_str(var, pattern, ind)
        if origin is list:
            (item,) = get_args(tp)
            v = f"v{depth}"
            body = self.visit(item, v, ind + "    ", depth + 1)
            return [f"{ind}for {v} in {var}:", *body] if body else []
        if origin is dict:
            k_tp, v_tp = get_args(tp)
            k, v = f"k{depth}", f"v{depth}"
            out = []
            body = self.visit(k_tp, k, ind + "    ", depth + 1)
            if body:
                out += [f"{ind}for {k} in {var}:", *body]
            body = self.visit(v_tp, v, ind + "    ", depth + 1)
            if body:
                out += [f"{ind}for {v} in {var}.values():", *body]
            return out
        from pydantic import BaseModel

        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return self.model(tp, var, ind, depth)
        if origin is Literal or tp in (str, int, float, bool) or tp is Any or tp is type(None):
            return []
        if isinstance(tp, type) and issubclass(tp, Enum):
            return []
        raise TypeError(f"no pattern check for {tp!r}")

    def model(
        self, model: type[BaseModel], var: str, ind: str, depth: int, skip: frozenset[str] = frozenset()
    ) -> list[str]:
        if model in self.stack:
            raise TypeError(f"recursive model {model.__name__}: no inline pattern check")
        self.stack.append(model)
        out = []
        for name, info in sorted(model.model_fields.items()):
            if name in skip:
                continue
            x = f"x{depth}"
            body = self.visit(info.annotation, x, ind, depth + 1, _pattern(info.metadata))
            if body:
                out += [f"{ind}{x} = {var}.{name}", *body]
        self.stack.pop()
        return out


#: strings remembered per pattern as matching it; a batch repeats the same timestamps and
#: digests (one run's seconds, its container and source digests) many times over
REMEMBERED = 8192


#: longer strings (free-form extension keys) are checked every time, never held
REMEMBERED_CHARS = 128


def _remember(seen: set[str], value: str) -> None:
    if len(value) > REMEMBERED_CHARS:
        return
    if len(seen) >= REMEMBERED:
        seen.clear()
    seen.add(value)


def pattern_checker(
    model: type[BaseModel], skip: frozenset[str] = frozenset()
) -> tuple[Callable[[Any], bool], str]:
    """A function telling whether every pattern-constrained string in a decoded ``model``
    struct matches its pattern (except in the top-level fields named in ``skip``), and its
    source (for tests and curious readers)."""
    gen = _Gen()
    body = gen.model(model, "o", "    ", 0, skip)
    src = "\n".join(["def check(o):", *body, "    return True", ""])
    namespace: dict[str, Any] = dict(gen.consts, _remember=_remember)
    exec(compile(src, f"<pattern check of {model.__name__}>", "exec"), namespace)  # noqa: S102
    return namespace["check"], src
