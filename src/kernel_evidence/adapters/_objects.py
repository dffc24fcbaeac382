"""Packet model objects built from values an adapter has already checked.

A large capture has 10^4..10^5 kernel records and 10^5..10^6 metric quantities. pydantic's
validation of that many objects costs more than reading the file they come from, so the
adapters that make them (ncu, rocprof) build them the way ``model_construct`` does, faster:
every value passed here has the field's exact type and range beforehand (the callers
check, and hand anything else to pydantic), and the tests validate every packet the
adapters make against the models.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from ..models import KernelRecord, ProfilerCapture, Quantity

__all__ = [
    "TEMPLATES",
    "built",
    "floats",
    "new",
    "quantities",
    "set_extra",
    "set_fields",
    "set_private",
    "setattr_",
]

new = object.__new__
setattr_ = object.__setattr__
#: every field of a model, None: a built object's ``__dict__`` starts from it
TEMPLATES: dict[type[Any], dict[str, None]] = {
    cls: dict.fromkeys(cls.model_fields) for cls in (Quantity, KernelRecord, ProfilerCapture)
}


def _slot_setter(name: str) -> Any:
    """The setter of one of pydantic's ``BaseModel`` slots (``__pydantic_fields_set__``...):
    the slot's own descriptor, which skips the attribute lookup of ``object.__setattr__``
    (10^5..10^6 calls per capture); ``object.__setattr__`` if it is not a slot."""
    slot: Any = vars(BaseModel).get(name)
    if type(slot).__name__ == "member_descriptor":
        return slot.__set__
    return lambda obj, value: setattr_(obj, name, value)


set_fields = _slot_setter("__pydantic_fields_set__")
set_extra = _slot_setter("__pydantic_extra__")
set_private = _slot_setter("__pydantic_private__")


def built(cls: type[Any], fields: dict[str, Any]) -> Any:
    """A model instance from already-checked values (what ``model_construct`` does)."""
    obj = new(cls)
    setattr_(obj, "__dict__", {**TEMPLATES[cls], **fields})
    set_fields(obj, set(fields))
    set_extra(obj, None)
    set_private(obj, None)
    return obj


_BOTH_SET = {"value", "unit"}


def floats(col: pa.Array) -> list[Any]:
    """A float64 array as Python floats (None where empty).

    Without empty cells, the values buffer is read through a memoryview: ``tolist()``
    makes the floats in one C loop, faster than ``to_pylist()`` over 10^6..10^7 cells.
    """
    if col.null_count or len(col) == 0:
        return col.to_pylist()  # type: ignore[no-any-return]
    start = col.offset * 8
    data = memoryview(col.buffers()[1])[start : start + len(col) * 8]
    return data.cast("d").tolist()


def quantities(col: pa.Array | list[float | None], unit: str) -> list[Quantity | None]:
    """One Quantity per value of a float64 column (None where empty), the values finite
    and in ``unit`` already; equal values share one object, made once per distinct value
    (found by Arrow's dictionary encoding, which tells ``-0.0`` from ``0.0``)."""
    if isinstance(col, list):
        col = pa.array(col, type=pa.float64())
    enc = pc.dictionary_encode(col)
    objs: list[Quantity | None] = []
    append, new_, set_ = objs.append, new, setattr_
    fields_, extra_, private_ = set_fields, set_extra, set_private
    for v in floats(enc.dictionary):  # built(), inlined: 10^5..10^6 quantities per capture
        q = new_(Quantity)
        set_(q, "__dict__", {"value": v, "unit": unit})
        fields_(q, _BOTH_SET)
        extra_(q, None)
        private_(q, None)
        append(q)
    indices = enc.indices
    if indices.null_count:
        append(None)
        indices = pc.fill_null(indices, len(objs) - 1)
    return list(map(objs.__getitem__, indices.to_pylist()))
