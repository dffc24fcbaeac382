"""Decode raw JSON documents into packet structs, with the input-level checks.

Input-level problems (malformed JSON, NaN tokens, non-UTF-8, nesting too deep, numbers out
of range, duplicate keys, structure that does not match the schema) become findings of
rules ``KE001``-``KE003`` with a JSON Pointer where one is known.

This is the single entry point for packet bytes: a packet of the current version takes the
fast path (straight into the structs); one of an older supported version is decoded to JSON
data, migrated (:mod:`.migrate`) and then decoded by the same structs, so every reader
gets current packets.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from ..errors import MigrationError
from .canonical import packet_id_for

if TYPE_CHECKING:  # the models load only for JSON data (dicts): decoding bytes needs none
    from ..models import EvidencePacket
from .messages import from_msgspec
from .migrate import migrate
from .patterns import DIGEST_PATTERN as _DIGEST
from .structs import (
    PacketStruct,
    PacketStructNoPatterns,
    canonical_from_encoded,
    canonical_struct_bytes,
    check_patterns,
    encode_struct,
    encode_struct_into,
)
from .versions import older_supported

__all__ = [
    "EMPTY_ARRAY",
    "Checked",
    "Decoded",
    "decode_checked",
    "decode_document",
    "decode_one",
    "find_duplicate_key",
    "maybe_duplicates",
    "model_and_id",
    "model_from_data",
]

_packet_decoder = msgspec.json.Decoder(PacketStruct)
_list_decoder = msgspec.json.Decoder(list[PacketStruct])  # type: ignore[valid-type]
_any_decoder = msgspec.json.Decoder()
#: the hot path: structs without regular expressions, then one generated check of them all
#: (a packet it rejects is decoded again by ``_packet_decoder`` for the exact message)
_fast_decoder = msgspec.json.Decoder(PacketStructNoPatterns)
_patterns_match = check_patterns


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
    #: the packet was migrated from an older schema version
    migrated: bool = False


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


def maybe_duplicates(raw: bytes, encoded_quotes: int) -> bool:
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


_local = threading.local()  # each thread's reusable encode buffer


class Checked(NamedTuple):
    """A decoded packet, the id its content gives (None when it has no ``packet_id``: nothing
    to check), whether the input bytes were its canonical JSON already, whether they
    are compact (no insignificant whitespace; only worked out when asked, else the same as
    ``canonical``), and whether the packet was migrated from an older schema version (its
    bytes are then not the packet's: :func:`~.structs.encode_struct` gives them)."""

    packet: Any
    content_id: str | None
    canonical: bool
    compact: bool
    migrated: bool


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
    except msgspec.ValidationError:
        return _checked_older(raw)  # None unless it is a packet of an older version
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
        elif maybe_duplicates(raw, buf.count(b'"')):
            return None
    pid = p.packet_id
    if pid is None:
        return _checked((p, None, canonical, flat, False))
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
    return _checked((p, cid, canonical, flat, False))


_checked = partial(tuple.__new__, Checked)
_sha256 = hashlib.sha256


# ---------------------------------------------------------------- older schema versions


class _Head(msgspec.Struct):
    """A document's ``schema_version`` alone (the other members are skipped unread)."""

    schema_version: Any = None


_head_decoder = msgspec.json.Decoder(_Head)
_plain_encoder = msgspec.json.Encoder()


def _migrated(data: dict[str, Any]) -> tuple[Any, str | None]:
    """``(struct, content id)`` of a packet of an older supported version, given as JSON
    data: migrated to the current version and decoded by the current structs.

    The stated ``packet_id`` is checked against the content at the stated version. When it
    matches, the migrated packet gets the id of its migrated content (the id it is written
    with); when it does not, the packet keeps the stated one and the content id returned is
    the stated version's, so KE004 names the id its own file should carry. Raises
    :class:`MigrationError` or :class:`msgspec.ValidationError` (structure).
    """
    new = migrate(data)
    p: Any = _packet_decoder.decode(_plain_encoder.encode(new))
    pid = p.packet_id
    if pid is None:
        return p, None
    stated = packet_id_for(data)
    if pid != stated:
        return p, stated
    cid = "sha256:" + _sha256(canonical_struct_bytes(p)).hexdigest()
    return msgspec.structs.replace(p, packet_id=cid), cid


def _repeats_a_key(raw: bytes, data: Any) -> bool:
    return (
        maybe_duplicates(raw, _plain_encoder.encode(data).count(b'"')) and find_duplicate_key(raw) is not None
    )


def _checked_older(raw: bytes) -> Checked | None:
    """:func:`decode_checked` of a document the current structs refused: a packet of an
    older supported version, migrated; None for anything else (or anything wrong with it:
    :func:`decode_document` explains)."""
    try:
        if older_supported(_head_decoder.decode(raw).schema_version) is None:
            return None
        data = _any_decoder.decode(raw)
        if not isinstance(data, dict) or _repeats_a_key(raw, data):
            return None
        p, cid = _migrated(data)
    except (msgspec.DecodeError, MigrationError, RecursionError, UnicodeDecodeError):
        return None
    return _checked((p, cid, False, False, True))


def _older_document(raw: bytes, loc: str | None) -> list[Decoded] | None:
    """:func:`decode_document` of a document holding a packet of an older version (alone
    or in an array), each packet migrated or explained; None when it holds none."""
    try:
        data = _any_decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return None  # the general path words what is wrong with the JSON
    multi = isinstance(data, list)
    items = data if multi else [data]
    if not any(isinstance(d, dict) and older_supported(d.get("schema_version")) for d in items):
        return None
    if _repeats_a_key(raw, data):
        dup = find_duplicate_key(raw)
        return [Decoded(loc, rule_id="KE003", error=_duplicate(dup))]
    out = []
    for i, d in enumerate(items):
        at = f"{loc + ', ' if loc else ''}item {i}" if multi else loc
        try:
            if isinstance(d, dict) and older_supported(d.get("schema_version")):
                p, cid = _migrated(d)
                out.append(Decoded(at, packet=p, content_id=cid, migrated=True))
            else:
                p = _packet_decoder.decode(_plain_encoder.encode(d))
                out.append(Decoded(at, packet=p, canonical=canonical_struct_bytes(p)))
        except MigrationError as exc:
            out.append(Decoded(at, rule_id="KE001", error=exc.message, pointer=exc.pointer))
        except msgspec.ValidationError as exc:
            msg, pointer = from_msgspec(str(exc))
            out.append(Decoded(at, rule_id="KE001", error=msg, pointer=pointer))
        except RecursionError:
            out.append(
                Decoded(at, rule_id="KE001", error="JSON nested too deeply (hostile or corrupt input)")
            )
    return out


def _duplicate(key: str | None) -> str:
    return f"duplicate key `{key}` in one object; a JSON object must not repeat a key"


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
        yield Decoded(loc, packet=one.packet, content_id=one.content_id, migrated=one.migrated)
        return
    older = _older_document(raw, loc)
    if older is not None:
        yield from older
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
        msg, pointer = from_msgspec(str(exc))
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
        if maybe_duplicates(raw, quotes):
            dup = find_duplicate_key(raw)
            if dup is not None:
                yield Decoded(loc, rule_id="KE003", error=_duplicate(dup))
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


# ---------------------------------------------------------------- JSON data to models


def model_and_id(data: Mapping[str, Any]) -> tuple[EvidencePacket, str | None]:
    """The packet model of JSON data (a dict) of any supported version, migrated, and the
    id its content gives when that had to be worked out here (an older version: see
    :func:`_migrated`; None for a current packet, whose model holds all there is to check).

    Raises :class:`MigrationError` (version) or pydantic's ``ValidationError`` (structure:
    :func:`.messages.from_pydantic` words it).
    """
    from ..models import EvidencePacket

    if not older_supported(data.get("schema_version")):
        return EvidencePacket.model_validate(data), None
    model = EvidencePacket.model_validate(migrate(data))
    pid = data.get("packet_id")
    if not isinstance(pid, str):
        return model, None
    stated = packet_id_for(data)
    if pid != stated:
        return model, stated
    model = model.with_id()
    return model, model.packet_id


def model_from_data(data: Mapping[str, Any]) -> EvidencePacket:
    """:func:`model_and_id` without the id: what readers of JSON data (compare, the reward,
    ``load_packet``) take, a current packet whatever version it was written in."""
    return model_and_id(data)[0]
