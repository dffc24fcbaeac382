"""Decode raw JSON documents into packet structs, with the input-level checks.

Input-level problems (malformed JSON, NaN tokens, non-UTF-8, nesting too deep, numbers out
of range, duplicate keys, structure that does not match the schema) become findings of
rules ``KE001``-``KE003`` with a JSON Pointer where one is known.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import msgspec

from ._fast import (
    PacketStruct,
    canonical_from_encoded,
    canonical_struct_bytes,
    encode_struct,
    encode_struct_into,
    struct_for,
)
from ._patterns import DIGEST_PATTERN as _DIGEST
from ._patterns import pattern_checker
from .models import EvidencePacket

__all__ = [
    "Decoded",
    "decode_checked",
    "decode_document",
    "decode_one",
    "find_duplicate_key",
    "msgspec_path_to_pointer",
]

_packet_decoder = msgspec.json.Decoder(PacketStruct)
_list_decoder = msgspec.json.Decoder(list[PacketStruct])  # type: ignore[valid-type]
_any_decoder = msgspec.json.Decoder()
#: the hot path: structs without regular expressions, then one generated check of them all
#: (a packet it rejects is decoded again by ``_packet_decoder`` for the exact message)
_fast_decoder = msgspec.json.Decoder(struct_for(EvidencePacket, patterns=False))
_patterns_match = pattern_checker(EvidencePacket, skip=frozenset({"packet_id"}))[0]

_PATH_RE = re.compile(r" - at (?:`key` in )?`\$(.*)`$")
_SEG_RE = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\]")


@dataclass(slots=True)
class Decoded:
    """One packet decoded from a record, or why it could not be."""

    location: str | None
    packet: Any = None  # PacketStruct
    canonical: bytes | None = None
    content_id: str | None = None  # the id the content gives, when computed instead of `canonical`
    rule_id: str | None = None
    error: str | None = None
    pointer: str = ""


def _escape(seg: str) -> str:
    return seg.replace("~", "~0").replace("/", "~1")


def msgspec_path_to_pointer(path: str) -> str:
    """``$.timing.stats[0]`` style path (without ``$``) -> JSON Pointer ``/timing/stats/0``
    (a ``[...]`` segment, a dict key msgspec does not name, is left out)."""
    out = []
    for m in _SEG_RE.finditer(path):
        name, idx, key = m.groups()
        if name is not None:
            out.append(_escape(name))
        elif idx is not None:
            out.append(idx)
        else:
            out.append(_escape(key[1:-1]))
    return "/" + "/".join(out) if out else ""


def _split_msgspec_error(msg: str) -> tuple[str, str, str | None]:
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


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for k, _ in pairs:
        if k in seen:
            raise _Duplicate(k)
        seen.add(k)
    return dict(pairs)


class _Duplicate(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def find_duplicate_key(data: bytes) -> str | None:
    """The first key that appears twice in one object, or None (exact, slow path)."""
    try:
        json.loads(data, object_pairs_hook=_pairs_hook)
    except _Duplicate as d:
        return d.key
    except (ValueError, RecursionError):
        return None
    return None


def _maybe_duplicates(raw: bytes, encoded_quotes: int) -> bool:
    """Cheap screen: a document without duplicate keys re-encodes with as many quote marks.

    Every string (key or value) contributes two quote bytes; a dropped duplicate removes at
    least one key string. Escaped quotes count the same on both sides unless the input used
    ``\\u`` escapes, in which case the exact check runs. Explicit nulls in the input also
    trip the screen (they are not re-encoded); the exact check then clears them.
    """
    # a one-byte search first: memchr, where the two-byte one scans byte by byte (2 us a packet)
    if b"\\" in raw and b"\\u" in raw:
        return True
    return raw.count(b'"') != encoded_quotes


def _structural_message(msg: str, pointer: str) -> tuple[str, str]:
    """Make msgspec's structural messages read like ours (unit fields name the dimension)."""
    if msg.startswith("Object contains unknown field"):
        field = msg.split("`")[1] if "`" in msg else "?"
        return (
            f"unknown field `{field}` (not in schema 0.1; put tool-specific data under /extensions)",
            pointer,
        )
    if msg.startswith("Object missing required field"):
        field = msg.split("`")[1] if "`" in msg else "?"
        return f"missing required field `{field}`", pointer + "/" + _escape(field)
    if msg.startswith("Number out of range"):
        return "number too large or too small to represent; expected a finite float64", pointer
    if msg.startswith("Integer value out of range"):
        return "integer out of range; expected a 64-bit integer", pointer
    if pointer == "/extensions" and msg.startswith("Expected `str` matching regex"):
        return "an extension key is not a URI; expected `scheme:rest` (e.g. `vendor:name`)", pointer
    if pointer.endswith("/schema_version"):
        return f"unsupported schema_version; this validator reads 0.1 ({msg})", pointer
    if pointer.endswith("/unit") and msg.startswith("Invalid enum value"):
        got = msg.split("Invalid enum value ")[-1].strip("'\"")
        return f"{_unit_expectation(pointer)}, got `{got}`", pointer
    return msg, pointer


def _unit_expectation(pointer: str) -> str:
    from .rules._units import expected_unit_text

    return expected_unit_text(pointer)


_local = threading.local()  # each thread's reusable encode buffer


class Checked(NamedTuple):
    """A decoded packet, the id its content gives (None when it has no ``packet_id``: nothing
    to check), whether the input bytes were its canonical JSON already, and whether they
    are compact (no insignificant whitespace; only worked out when asked, else the same as
    ``canonical``)."""

    packet: Any
    content_id: str | None
    canonical: bool
    compact: bool


#: every byte but the quote, the space, the backslash and the other JSON whitespace
_NOT_SCREENED = bytes(b for b in range(256) if b not in b'" \\\t\n\r')


def decode_checked(raw: bytes, *, compact: bool = False) -> Checked | None:
    """:func:`decode_one` for the validator: the packet and the id its content gives.

    Same acceptance as :func:`decode_one` (None for anything it would not take), but the
    canonical form is never materialised: the packet is re-encoded into a reusable per-thread
    buffer, its ``packet_id`` member is cut out in place, and the rest is hashed.

    With ``compact``, input that is not canonical is also checked for insignificant
    whitespace, in the same pass as the duplicate-key screen (what the archive needs to
    know to keep the bytes as they are).
    """
    if raw[:1] != b"{":
        return None
    try:
        p: Any = _fast_decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return None
    if not _patterns_match(p):
        return None
    try:
        buf: bytearray = _local.buf
    except AttributeError:  # the first packet of this thread
        buf = _local.buf = bytearray(1 << 14)
    encode_struct_into(p, buf)
    n = len(buf)
    # input already in canonical form (as kernel-evidence writes it) cannot repeat a key
    canonical = flat = raw == buf
    if not (canonical or (raw.startswith(buf) and not raw[n:].strip())):
        if compact:
            screened = _compact_screen(raw, buf)
            if screened is None:
                return None
            flat = screened
        elif _maybe_duplicates(raw, buf.count(b'"')):
            return None
    pid = p.packet_id
    if pid is None:
        return _checked((p, None, canonical, flat))
    member = b',"packet_id":"' + pid.encode() + b'"'
    i = -1 if p.extensions is not None else buf.find(member)
    if i < 0:
        # nulls inside extensions are dropped (or the id has characters JSON escapes): the
        # general path
        cid = "sha256:" + _sha256(canonical_struct_bytes(p)).hexdigest()
    else:
        del buf[i : i + len(member)]
        cid = "sha256:" + _sha256(buf).hexdigest()
    if n > 1 << 20:
        _local.buf = bytearray(1 << 14)  # do not keep a huge packet's buffer alive
    # the fast structs check no pattern on the id: one equal to the content's id has it
    if cid != pid and _DIGEST.search(pid) is None:
        return None
    return _checked((p, cid, canonical, flat))


_checked = partial(tuple.__new__, Checked)
_sha256 = hashlib.sha256


def _compact_screen(raw: bytes, encoded: bytearray) -> bool | None:
    """:func:`_maybe_duplicates` (None: maybe), and else whether ``raw`` is compact.

    Both sides are cut down to their quotes, spaces, backslashes and other whitespace in
    one pass each. Without a backslash in the input, every string is spelled the same on
    both sides (nothing to unescape), and with as many quotes, both hold the same strings
    (no key was dropped). Spaces in the re-encoding are all inside strings, so the input
    has a space outside its strings exactly when it has more spaces; tabs and line breaks
    can only be outside strings (inside they are escaped).
    """
    r = raw.translate(None, _NOT_SCREENED)
    e = bytes(encoded).translate(None, _NOT_SCREENED)  # bytearray.translate is 2.5x slower
    escaped = b"\\" in r
    if (escaped and b"\\u" in raw) or r.count(b'"') != e.count(b'"'):
        return None
    return not (escaped or b"\n" in r or b"\t" in r or b"\r" in r or r.count(b" ") != e.count(b" "))


def decode_one(raw: bytes) -> tuple[Any, bytes] | None:
    """:func:`decode_checked`, with the packet's canonical bytes (without id) instead of its
    content id: ``(packet, canonical)``, or None for what :func:`decode_document` explains."""
    one = decode_checked(raw)
    return None if one is None else (one.packet, canonical_struct_bytes(one.packet))


#: what an empty top-level array is told (it holds no packet, like an empty file)
EMPTY_ARRAY = "empty JSON array; expected a packet or an array of packets"


def decode_document(record: Any) -> Iterator[Decoded]:
    """Decode one record's bytes into packet structs (a JSON array yields one per element)."""
    raw: bytes = record.data
    loc = record.location
    one = decode_checked(raw)
    if one is not None:
        yield Decoded(loc, packet=one.packet, content_id=one.content_id)
        return
    head = raw.lstrip()[:1]
    try:
        if head == b"[":
            packets = _list_decoder.decode(raw)
            multi = True
        else:
            packets = [_packet_decoder.decode(raw)]
            multi = False
    except msgspec.ValidationError as exc:
        syntax = _syntax_error(raw)
        if syntax is not None:  # truncated or malformed: say so, not what came before it
            yield Decoded(loc, rule_id="KE001", error=syntax)
            return
        msg, pointer, at = _split_msgspec_error(str(exc))
        msg, pointer = _structural_message(msg, pointer)
        pointer = at if at is not None else pointer
        if head == b"[" and pointer.startswith("/"):
            first, _, rest = pointer[1:].partition("/")
            loc = f"{loc + ', ' if loc else ''}item {first}"
            pointer = "/" + rest if rest else ""
        yield Decoded(loc, rule_id="KE001", error=msg, pointer=pointer)
        return
    except msgspec.DecodeError as exc:
        yield Decoded(loc, rule_id="KE001", error=_decode_error_text(raw, str(exc)))
        return
    except RecursionError:
        yield Decoded(loc, rule_id="KE001", error="JSON nested too deeply (hostile or corrupt input)")
        return
    except UnicodeDecodeError:
        try:
            raw.decode("utf-8")
            pos = -1
        except UnicodeDecodeError as exc:
            pos = exc.start
        line = raw.count(b"\n", 0, pos) + 1
        col = pos - (raw.rfind(b"\n", 0, pos) + 1) + 1
        yield Decoded(
            loc,
            rule_id="KE001",
            error=f"not valid UTF-8 at line {line}, column {col} (byte {pos}); expected a UTF-8 JSON document",
        )
        return
    if not packets:
        yield Decoded(loc, rule_id="KE001", error=EMPTY_ARRAY)
        return
    encoded = [encode_struct(p) for p in packets]
    canon = [canonical_from_encoded(p, e) for p, e in zip(packets, encoded, strict=True)]
    # input already in canonical form (as kernel-evidence writes it) cannot repeat a key
    exact = not multi and raw.startswith(encoded[0]) and not raw[len(encoded[0]) :].strip()
    if not exact:
        quotes = sum(e.count(b'"') for e in encoded)
        if _maybe_duplicates(raw, quotes):
            dup = find_duplicate_key(raw)
            if dup is not None:
                yield Decoded(
                    loc,
                    rule_id="KE003",
                    error=f"duplicate key `{dup}` in one object; a JSON object must not repeat a key",
                )
                return
    for i, (p, c) in enumerate(zip(packets, canon, strict=True)):
        yield Decoded(f"{loc + ', ' if loc else ''}item {i}" if multi else loc, packet=p, canonical=c)


def _syntax_error(raw: bytes) -> str | None:
    """What is wrong with ``raw`` as JSON text, if anything (types aside).

    The typed decoders stop at the first value of the wrong type or name, before they reach
    a truncation or a syntax error further on; this pass (zero-copy) reads the syntax only.
    """
    try:
        msgspec.json.decode(raw, type=msgspec.Raw)
    except msgspec.DecodeError as exc:
        return _decode_error_text(raw, str(exc))
    except RecursionError:
        return "JSON nested too deeply (hostile or corrupt input)"
    return None


def _decode_error_text(raw: bytes, msg: str) -> str:
    if "truncated" in msg:
        return f"JSON truncated after {len(raw)} bytes; expected a complete JSON document"
    if "malformed" in msg.lower():
        m = re.search(r"byte (\d+)", msg)
        if m:
            pos = int(m.group(1))
            snippet = raw[pos : pos + 12]
            line = raw.count(b"\n", 0, pos) + 1
            col = pos - (raw.rfind(b"\n", 0, pos) + 1) + 1
            if snippet[:3] in (b"NaN", b"Inf", b"-In"):
                return (
                    f"NaN/Infinity at line {line}, column {col} is not JSON; expected a finite number or null"
                )
            return (
                f"malformed JSON at line {line}, column {col} (byte {pos}): {msg.split(':', 1)[-1].strip()}"
            )
    if "out of range" in msg.lower():
        return f"number too large or too small to represent: {msg}"
    return msg
