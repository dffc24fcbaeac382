"""msgspec mirror of the pydantic packet models, generated from them.

The pydantic models are the single source of truth. For speed, the batch validator
decodes JSON straight into msgspec ``Struct`` types built from the models' fields and
constraints, so structure is checked during parsing. The structs of the packet models are
generated once, as source (:mod:`kernel_evidence._codec._structs_gen`, written by
:mod:`kernel_evidence._codec._generate`; a test fails when it drifts from the models), so
that decoding and validating need neither pydantic nor the models: a command line that
validates one file starts in a fraction of the time. :func:`struct_for` returns those, and
builds the mirror of any other model at run time with the same translation. The translation covers the type
vocabulary the models use (strict scalars, ``Literal``, ``Enum``, ``list``, ``dict``,
optional fields, nested models, ``ge``/``le``/``min_length``/``pattern`` constraints); a
test asserts both accept and reject the same documents.
"""

from __future__ import annotations

import types
import typing
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec

from . import _structs_gen as _gen

if typing.TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "PacketStruct",
    "PacketStructNoPatterns",
    "check_patterns",
    "canonical_from_encoded",
    "columns_encoder",
    "canonical_struct_bytes",
    "encode_struct",
    "encode_struct_into",
    "packet_decoder",
    "struct_for",
]

_cache: dict[tuple[type[BaseModel], bool], type[msgspec.Struct]] = {}
_MODELS = "kernel_evidence.models"


def _meta_kwargs(items: typing.Iterable[Any], patterns: bool = True) -> dict[str, Any]:
    import annotated_types
    from pydantic.fields import FieldInfo

    kw: dict[str, Any] = {}
    for m in items:
        if isinstance(m, FieldInfo):
            kw.update(_meta_kwargs(m.metadata, patterns))
        elif isinstance(m, annotated_types.Ge):
            kw["ge"] = m.ge
        elif isinstance(m, annotated_types.Gt):
            kw["gt"] = m.gt
        elif isinstance(m, annotated_types.Le):
            kw["le"] = m.le
        elif isinstance(m, annotated_types.Lt):
            kw["lt"] = m.lt
        elif isinstance(m, annotated_types.MinLen):
            kw["min_length"] = m.min_length
        elif isinstance(m, annotated_types.MaxLen):
            kw["max_length"] = m.max_length
        elif getattr(m, "pattern", None) is not None and patterns:
            kw["pattern"] = m.pattern
    return kw


def _convert(tp: Any, patterns: bool = True) -> Any:
    from pydantic import BaseModel

    origin = get_origin(tp)
    if origin is Annotated:
        base, *meta = get_args(tp)
        kw = _meta_kwargs(meta, patterns)
        conv = _convert(base, patterns)
        return Annotated[conv, msgspec.Meta(**kw)] if kw else conv
    if origin in (Union, types.UnionType):
        return Union[tuple(_convert(a, patterns) for a in get_args(tp))]  # noqa: UP007
    if origin is list:
        (item,) = get_args(tp)
        return list[_convert(item, patterns)]  # type: ignore[misc]
    if origin is dict:
        k, v = get_args(tp)
        return dict[_convert(k, patterns), _convert(v, patterns)]  # type: ignore[misc]
    if origin is Literal:
        return tp
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return struct_for(tp, patterns=patterns)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return tp
    if tp in (str, int, float, bool) or tp is Any or tp is type(None):
        return tp
    raise TypeError(f"no msgspec translation for {tp!r}")


def struct_for(model: type[BaseModel], *, patterns: bool = True) -> type[msgspec.Struct]:
    """The msgspec ``Struct`` mirroring ``model`` (built once).

    With ``patterns=False``, string fields carry no regular expression (the rest of the
    constraints stay): :func:`pattern_checker` checks those after decoding, faster.
    """
    key = (model, patterns)
    if key in _cache:
        return _cache[key]
    if model.__module__.startswith(_MODELS):  # a packet model: its generated struct
        generated: type[msgspec.Struct] | None = _gen.STRUCTS.get((model.__name__, patterns))
        if generated is not None:
            _cache[key] = generated
            return generated
    _cache[key] = st = _build(model, patterns)
    return st


def _build(model: type[BaseModel], patterns: bool) -> type[msgspec.Struct]:
    """The mirror of ``model`` built now from its fields (what the generator writes down)."""
    fields: list[tuple[str, Any, Any]] = []
    # fields in sorted order: with dict keys sorted by the encoder, a struct then encodes in
    # canonical key order without the cost of sorting struct fields on every packet
    for name, info in sorted(model.model_fields.items()):
        tp = _convert(info.annotation, patterns)
        kw = _meta_kwargs(info.metadata, patterns)
        if kw:
            tp = Annotated[tp, msgspec.Meta(**kw)]
        if info.is_required():
            fields.append((name, tp, msgspec.NODEFAULT))
        else:
            if info.default is not None:
                raise TypeError(f"{model.__name__}.{name}: packet fields default to None only")
            fields.append((name, tp, None))
    st = msgspec.defstruct(
        model.__name__,
        fields,
        kw_only=True,
        forbid_unknown_fields=True,
        omit_defaults=True,
        gc=False,
        module=__name__,
    )
    return st


PacketStruct: type[msgspec.Struct] = _gen.STRUCTS[("EvidencePacket", True)]
#: the same without ``pattern`` constraints, checked after decoding by :data:`check_patterns`
PacketStructNoPatterns: type[msgspec.Struct] = _gen.STRUCTS[("EvidencePacket", False)]
#: whether every pattern-constrained string of a :data:`PacketStructNoPatterns` (its
#: ``packet_id`` apart) matches its pattern (:func:`.patterns.pattern_checker`, generated)
check_patterns: typing.Callable[[Any], bool] = _gen.check_patterns
#: decodes JSON bytes straight into a checked packet struct
packet_decoder = msgspec.json.Decoder(PacketStruct)

_canonical_encoder = msgspec.json.Encoder(order="deterministic")
#: encodes a raw-column table canonically (sorted keys; lists keep their nulls)
columns_encoder = _canonical_encoder


def _has_raw(packet: Any) -> bool:
    return any(isinstance(c.raw_columns, msgspec.Raw) for c in packet.profiler or ())


def _has_null(obj: Any) -> bool:
    if obj is None:
        return True
    if isinstance(obj, dict):
        return any(_has_null(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_has_null(v) for v in obj)
    return False


def encode_struct(packet: Any) -> bytes:
    """The packet (with its id) in canonical key order, nulls omitted."""
    return _canonical_encoder.encode(packet)


#: :func:`encode_struct` into a reusable bytearray (resized to the encoding); the encoder's
#: own bound method, so the validator's hot path pays no wrapper call
encode_struct_into = _canonical_encoder.encode_into


def canonical_from_encoded(packet: Any, encoded: bytes) -> bytes:
    """Canonical bytes without the id, cut out of :func:`encode_struct`'s output.

    Inside JSON strings a quote is always escaped, and no object that sorts before
    ``packet_id`` has free-form keys except ``extensions``, so the first
    ``,"packet_id":"…"`` is the top-level member. Packets with extensions take the general path.
    """
    if packet.packet_id is None:
        return encoded if packet.extensions is None else canonical_struct_bytes(packet)
    if packet.extensions is not None:
        return canonical_struct_bytes(packet)
    member = b',"packet_id":"' + packet.packet_id.encode() + b'"'
    i = encoded.find(member)
    if i < 0:  # pragma: no cover - cannot happen for a struct with an id
        return canonical_struct_bytes(packet)
    return encoded[:i] + encoded[i + len(member) :]


def canonical_struct_bytes(packet: Any) -> bytes:
    """Canonical JSON bytes of a decoded packet without its id (same bytes as
    :func:`.canonical.canonical_bytes` of its JSON data).

    Struct fields that are null are omitted by the encoder, and the typed free-form maps
    cannot hold nulls; only ``extensions`` can, so only they are stripped here.
    """
    ext = packet.extensions
    if ext is not None and _has_null(ext):
        from .canonical import strip_nulls

        return _canonical_encoder.encode(
            msgspec.structs.replace(packet, packet_id=None, extensions=strip_nulls(ext))
        )
    return _canonical_encoder.encode(msgspec.structs.replace(packet, packet_id=None))
