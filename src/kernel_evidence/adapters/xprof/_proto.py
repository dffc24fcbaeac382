"""XSpace message classes, built at run time from our own field table (no generated code).

The table below mirrors ``_xplane.proto`` (a test checks they agree). Building the
descriptors with :mod:`google.protobuf.descriptor_pb2` instead of shipping protoc output
means the classes work with every protobuf release from 4.21 on, whatever runtime
(upb, C++ or pure Python) is installed. ``protobuf`` is the optional extra ``xprof``.
"""

from __future__ import annotations

from functools import lru_cache
from types import SimpleNamespace
from typing import Any

from ...errors import MissingExtra

__all__ = ["MESSAGES", "PACKAGE", "messages"]

PACKAGE = "kernel_evidence.xplane"

# message -> [(field, number, type, label, message type or None, oneof or None)]
# type: a descriptor_pb2.FieldDescriptorProto.Type name without TYPE_; label "opt" / "rep";
# maps are written as ("map", key type, value type or message).
_Field = tuple[str, int, str, str, "str | None", "str | None"]

MESSAGES: dict[str, list[_Field]] = {
    "XSpace": [
        ("planes", 1, "MESSAGE", "rep", "XPlane", None),
        ("errors", 2, "STRING", "rep", None, None),
        ("warnings", 3, "STRING", "rep", None, None),
        ("hostnames", 4, "STRING", "rep", None, None),
    ],
    "XPlane": [
        ("id", 1, "INT64", "opt", None, None),
        ("name", 2, "STRING", "opt", None, None),
        ("lines", 3, "MESSAGE", "rep", "XLine", None),
        ("event_metadata", 4, "MAP", "rep", "XEventMetadata", None),
        ("stat_metadata", 5, "MAP", "rep", "XStatMetadata", None),
        ("stats", 6, "MESSAGE", "rep", "XStat", None),
    ],
    "XLine": [
        ("id", 1, "INT64", "opt", None, None),
        ("display_id", 10, "INT64", "opt", None, None),
        ("name", 2, "STRING", "opt", None, None),
        ("display_name", 11, "STRING", "opt", None, None),
        ("timestamp_ns", 3, "INT64", "opt", None, None),
        ("duration_ps", 9, "INT64", "opt", None, None),
        ("events", 4, "MESSAGE", "rep", "XEvent", None),
    ],
    "XEvent": [
        ("metadata_id", 1, "INT64", "opt", None, None),
        ("offset_ps", 2, "INT64", "opt", None, "data"),
        ("num_occurrences", 5, "INT64", "opt", None, "data"),
        ("duration_ps", 3, "INT64", "opt", None, None),
        ("stats", 4, "MESSAGE", "rep", "XStat", None),
    ],
    "XStat": [
        ("metadata_id", 1, "INT64", "opt", None, None),
        ("double_value", 2, "DOUBLE", "opt", None, "value"),
        ("uint64_value", 3, "UINT64", "opt", None, "value"),
        ("int64_value", 4, "INT64", "opt", None, "value"),
        ("str_value", 5, "STRING", "opt", None, "value"),
        ("bytes_value", 6, "BYTES", "opt", None, "value"),
        ("ref_value", 7, "UINT64", "opt", None, "value"),
    ],
    "XEventMetadata": [
        ("id", 1, "INT64", "opt", None, None),
        ("name", 2, "STRING", "opt", None, None),
        ("display_name", 4, "STRING", "opt", None, None),
        ("metadata", 3, "BYTES", "opt", None, None),
        ("stats", 5, "MESSAGE", "rep", "XStat", None),
        ("child_id", 6, "INT64", "rep", None, None),
    ],
    "XStatMetadata": [
        ("id", 1, "INT64", "opt", None, None),
        ("name", 2, "STRING", "opt", None, None),
        ("description", 3, "STRING", "opt", None, None),
    ],
    "MemoryAccessBreakdown": [
        ("memory_accessed", 1, "MESSAGE", "rep", "MemoryAccessed", None),
    ],
    "MemoryAccessed": [
        ("operation_type", 1, "INT32", "opt", None, None),
        ("memory_space", 2, "INT32", "opt", None, None),
        ("bytes_accessed", 3, "INT64", "opt", None, None),
    ],
}

_RESERVED = {"XLine": [(5, 9)]}  # reserved 5..8 (end exclusive)


def _file_descriptor() -> Any:
    from google.protobuf import descriptor_pb2  # type: ignore[import-untyped,unused-ignore]

    fdp = descriptor_pb2.FileDescriptorProto(
        name="kernel_evidence/xplane.proto", package=PACKAGE, syntax="proto3"
    )
    ftype = descriptor_pb2.FieldDescriptorProto
    for mname, fields in MESSAGES.items():
        msg = fdp.message_type.add(name=mname)
        oneofs: list[str] = []
        for fname, number, typ, label, type_name, oneof in fields:
            field = msg.field.add(name=fname, number=number)
            field.label = ftype.LABEL_REPEATED if label == "rep" else ftype.LABEL_OPTIONAL
            if typ == "MAP":
                entry_name = "".join(p.capitalize() for p in fname.split("_")) + "Entry"
                entry = msg.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, type=ftype.TYPE_INT64, label=ftype.LABEL_OPTIONAL)
                entry.field.add(
                    name="value",
                    number=2,
                    type=ftype.TYPE_MESSAGE,
                    label=ftype.LABEL_OPTIONAL,
                    type_name=f".{PACKAGE}.{type_name}",
                )
                field.type = ftype.TYPE_MESSAGE
                field.type_name = f".{PACKAGE}.{mname}.{entry_name}"
                continue
            field.type = getattr(ftype, f"TYPE_{typ}")
            if type_name:
                field.type_name = f".{PACKAGE}.{type_name}"
            if oneof:
                if oneof not in oneofs:
                    oneofs.append(oneof)
                    msg.oneof_decl.add(name=oneof)
                field.oneof_index = oneofs.index(oneof)
        for start, end in _RESERVED.get(mname, []):
            msg.reserved_range.add(start=start, end=end)
    return fdp


@lru_cache(maxsize=1)
def messages() -> SimpleNamespace:
    """The message classes (``XSpace``, ``XPlane``, ...), built once per process.

    Raises :class:`MissingExtra` when ``protobuf`` is not installed.
    """
    try:
        from google.protobuf import (  # type: ignore[import-untyped,unused-ignore]
            descriptor_pool,
            message_factory,
        )
    except ImportError as exc:
        raise MissingExtra("protobuf", "xprof", "reading XProf .xplane.pb profiles") from exc
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file_descriptor())
    classes: dict[str, Any] = {}
    for name in MESSAGES:
        desc = pool.FindMessageTypeByName(f"{PACKAGE}.{name}")
        if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.21
            classes[name] = message_factory.GetMessageClass(desc)
        else:  # pragma: no cover - protobuf < 4.21 is outside the supported range
            classes[name] = message_factory.MessageFactory(pool).GetPrototype(desc)
    return SimpleNamespace(**classes)
