"""Packet model objects built from values an adapter has already checked.

A large capture has 10^4..10^5 kernel records and 10^5..10^6 metric quantities. pydantic's
validation of that many objects costs more than reading the file they come from, so the
adapters that make them (ncu, rocprof) build them the way ``model_construct`` does, faster:
every value passed here has the field's exact type and range beforehand (the callers
check, and hand anything else to pydantic), and the tests validate every packet the
adapters make against the models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from ..models import KernelRecord, Quantity

__all__ = ["Records", "floats", "quantities"]

new = object.__new__
setattr_ = object.__setattr__
#: every field of a KernelRecord, None: a built record's ``__dict__`` starts from it
_RECORD_TEMPLATE: dict[str, None] = dict.fromkeys(KernelRecord.model_fields)


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


class Records:
    """Kernel records built from checked values and, with ``encode``, their canonical JSON
    (for the packet id, see ``kernel_evidence._codec.ids.finish_packet``).

    ``metrics`` are the canonical metric columns ``(name, values, unit)``: one value per
    record (a list of finite floats and None, or a float64 Arrow array), in ``unit``. Each
    record's Quantity objects come from :func:`quantities`. The JSON is made from the same
    values without an object per value: each column's numbers are written once by msgspec
    (as it writes them in a packet) and a record's ``metrics`` object is joined from them,
    its keys in code point order, as canonical JSON orders them."""

    def __init__(self, metrics: Sequence[tuple[str, Any, str]], n: int, encode: bool) -> None:
        arrays = [(name, _float64(col), unit) for name, col, unit in metrics]
        self.names = [name for name, _col, _unit in arrays]
        objects = [quantities(col, unit) for _name, col, unit in arrays]
        self._rows: list[tuple[Quantity | None, ...]] = (
            list(zip(*objects, strict=True)) if objects else [()] * n
        )
        self.encode = encode
        self.records: list[KernelRecord] = []
        self._plain: list[dict[str, Any]] = []
        self._template = _RECORD_TEMPLATE
        #: each record's ``metrics`` object as canonical JSON (with ``encode``)
        self._json: list[Any] = _metrics_json(arrays, n) if encode else []

    def add(self, fields: dict[str, Any], i: int) -> None:
        """Record ``i``: ``fields`` (its identity, each value of the model's exact type and
        range) and the metrics of row ``i``."""
        metrics = {k: q for k, q in zip(self.names, self._rows[i], strict=True) if q is not None}
        data = dict(fields) if self.encode else fields
        if metrics:
            fields["metrics"] = metrics
            if self.encode:
                data["metrics"] = msgspec.Raw(self._json[i])
        rec = new(KernelRecord)  # built(), inlined: once per record
        setattr_(rec, "__dict__", {**self._template, **fields})
        set_fields(rec, set(fields))
        set_extra(rec, None)
        set_private(rec, None)
        self.records.append(rec)
        if self.encode:
            self._plain.append(data)

    def metrics_of(self, i: int) -> dict[str, Quantity]:
        """Row ``i``'s metrics, for a record pydantic validates instead (see :meth:`add_validated`)."""
        return {k: q for k, q in zip(self.names, self._rows[i], strict=True) if q is not None}

    def add_validated(self, record: KernelRecord) -> None:
        """A record pydantic made (values the builder could not vouch for)."""
        self.records.append(record)
        if self.encode:
            self._plain.append(record.model_dump(exclude_none=True))

    def result(self) -> tuple[list[KernelRecord], bytes | None]:
        """The records and their JSON (the per-record pieces are let go: 10^4..10^5 of them)."""
        from .._codec.structs import columns_encoder

        self._json = []
        encoded = columns_encoder.encode(self._plain) if self.encode else None
        self._plain = []
        return self.records, encoded


_json_encoder = msgspec.json.Encoder()


def _metrics_json(arrays: Sequence[tuple[str, pa.Array, str]], n: int) -> list[bytes]:
    """Per record, its ``metrics`` object as canonical JSON bytes (keys in code point order,
    a metric left out where its value is null): each column's numbers written once by
    msgspec, as it writes them in a packet, and joined across the columns by Arrow's kernels.
    (Each member ends with a comma, the last one cut off: pyarrow's join with
    ``null_handling="skip"`` drops the rows where every input is null, seen with pyarrow 26
    and reported downstream as narwhals-dev/narwhals#3965.)"""
    enc = _json_encoder
    members = []
    for name, col, unit in sorted(arrays, key=lambda m: m[0]):
        if not len(col):
            continue
        head = enc.encode(name) + b':{"unit":' + enc.encode(unit) + b',"value":'
        # the numbers as msgspec writes them; none holds a comma (nulls are written `null`)
        texts = pa.array(enc.encode(floats(col))[1:-1].split(b","), pa.binary())
        if col.null_count:
            texts = pc.if_else(pc.is_valid(col), texts, pa.scalar(None, pa.binary()))
        members.append(pc.fill_null(pc.binary_join_element_wise(head, texts, b"},", b""), b""))
    if not members:
        return [b"{}"] * n
    joined = pc.binary_slice(pc.binary_join_element_wise(*members, b""), 0, -1)
    del members
    out: list[bytes] = pc.binary_join_element_wise(b"{", joined, b"}", b"").to_pylist()
    del joined
    # the ~3x the JSON's size these joins took back to the OS at once (0.2 ms): Arrow's pool
    # keeps freed memory, and the records then built beside it would add to it (ncu 20,000 x
    # 15 metrics: peak RSS 400-430 MB instead of 480-520 MB)
    pa.default_memory_pool().release_unused()
    return out


def _float64(col: Any) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if not isinstance(col, pa.Array):
        col = pa.array(col, type=pa.float64())
    return col if col.type == pa.float64() else col.cast(pa.float64())
