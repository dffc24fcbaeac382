"""KE0xx: the input is readable, structured, and the packet's identity holds.

KE000, KE001 and KE003 are checked while decoding (:mod:`kernel_evidence._codec.decode`): they are
declared here so every rule has one home. KE004/KE005 need the canonical bytes the decoder
computed, so :func:`identity_finding` is called beside :func:`check` by the reports.
"""

from __future__ import annotations

import hashlib
import time
import unicodedata
from datetime import datetime, timedelta, timezone
from typing import Any

from ._common import CACHED_CHARS
from ._context import Add, Ctx
from ._engine import declare

declare(
    "KE000",
    "error",
    "input is readable",
    "check the path, permissions and compression of the input",
    "The file exists, can be read, decompresses within the cap, is UTF-8 text and is not empty.",
)
declare(
    "KE001",
    "error",
    "document matches the packet schema",
    "fix the field at the pointer; `kevidence schema` prints the JSON Schema",
    "The document must be valid JSON (no NaN/Infinity tokens, bounded nesting, numbers "
    "in range) and match the published JSON Schema of its schema_version: required fields "
    "present, types and units right, no unknown fields (tool-specific data goes under "
    "`extensions`).",
)
declare(
    "KE003",
    "error",
    "no duplicate keys",
    "remove the repeated key (or give each shape its own id); parsers disagree on which value wins",
    "A JSON object must not repeat a key: readers would silently keep different values. Nor "
    "may two `task.shapes` share one `id`, compared NFKC-folded, casefolded and stripped: "
    "every lookup by that id (the timed shape, its work, its validation, a capture's shape) "
    "is ambiguous, and a reader taking the first match reads another shape than one taking "
    "the last (pointer: the second one's id). (`validation.shapes` may repeat a `shape_id`: "
    "one result per shape and seed.)",
)
declare(
    "KE004",
    "error",
    "packet_id matches the content",
    "recompute it: EvidencePacket.with_id() or `kevidence id FILE -o OUT`",
    "`packet_id` is `sha256:` + the SHA-256 of the canonical JSON of the packet without its id "
    "(keys sorted, null members dropped, compact). A packet whose content changed after its id "
    "was computed fails.",
)
declare(
    "KE005",
    "warning",
    "packet has a packet_id",
    "set it with EvidencePacket.with_id() or `kevidence id FILE -o OUT`",
    "Packets SHOULD carry their content-addressed id so that others can reference them.",
)
declare(
    "KE006",
    "warning",
    "created_at is not in the future",
    "record the time in UTC when the packet was made",
    "`created_at` SHOULD NOT be more than a day in the future (a day covers any clock or "
    "timezone error): a packet dated later sorts as newer than it is (grade C at best).",
    caps="C",
)
declare(
    "KE007",
    "error",
    "created_at is a real calendar time",
    "record the time the packet was made, in UTC (e.g. 2026-02-28T12:00:00Z)",
    "`created_at` names a day that exists in its month (no 30 February, 29 February only in "
    "leap years) and a leap second only at 23:59:60.",
)
declare("KE008", "error", "measured_at is not after the packet was made",
     "record in measured_at when the measurement ran (UTC), at or before created_at",
     "`measured_at` (schema 0.2) is when the result was measured; `created_at` when the "
     "packet was made from it. A measurement cannot postdate its packet: `measured_at` "
     "MUST NOT be more than an hour after `created_at` (clocks of two machines may differ a "
     "little) nor more than a day in the future, and MUST name a real calendar time.")  # fmt: skip

declare(
    "KE009",
    "warning",
    "extensions do not restate a core claim",
    "record the speedup, grade, status and validation in the packet's own fields, where they are checked",
    "An extension object SHOULD NOT carry, at its top level, a member named `speedup`, "
    "`grade`, `verified`, `valid`, `verdict` or `status` (any case, `-`/`_` ignored): the "
    "validator does not check extensions, so a claim there (a speedup on a slowdown, a "
    "grade the packet did not earn) is taken on its producer's word by whoever reads it. "
    "The project's own namespace, `kevidence:replay` (the verdict the harness's replay writes), "
    "is exempt only on a replay: beside `lineage.relation` `replay` or `rerun` and a "
    "`lineage.parent_packet_id`, as an object whose `verdict` is `reproduced`, `drifted` or "
    "`failed`; elsewhere it is a forged verdict. Any other `kevidence:*` namespace is reserved "
    "to the project, which writes none: a producer's member there SHOULD NOT be recorded. "
    "Graded C at best.",
    caps="C",
)

_sha256 = hashlib.sha256


def check(p: Any, ctx: Ctx, add: Add) -> None:
    # KE006: same fixed-width UTC format on both sides, so string order is time order (the
    # whole string is never before its first 19 characters: compared first, it spares
    # cutting them in the common case)
    ts = p.created_at
    future = ctx.future
    if ts > future and ts[:19] > future:
        add(("KE006", "/created_at", f"created_at {ts} is in the future"))
    if ts[8:10] > "28" or ts[17:19] == "60":  # the pattern checked the ranges; rarely needed
        why = _not_a_calendar_time(ts)
        if why:
            add(("KE007", "/created_at", f"created_at {ts} is not a real time: {why}"))
    m = p.measured_at
    # the common case (measured before the packet was made) in one string comparison
    if m is not None and (m[:19] > ts[:19] or m[8:10] > "28" or m[17:19] == "60"):
        _measured_at(m, ts, future, add)
    ext = p.extensions
    if ext:
        _extension_claims(p, ext, add)
    # KE003: ids that key a list (one shape each); a single shape has no twin (two
    # shapes, the common suite, without a list comprehension's frame). Not validation's
    # shape ids: a harness records one result per shape and seed, so they repeat.
    t = p.task
    if t is not None:
        sh = t.shapes
        if sh is not None and len(sh) > 1:
            ids = (sh[0].id, sh[1].id) if len(sh) == 2 else tuple([s.id for s in sh])
            if ids not in _DISTINCT_IDS:
                _twin_ids(ids, add)


#: an id as compared (NFKC-folded, casefolded, stripped), by id (short ones only)
_FOLDED_IDS: dict[str, str] = {}
#: lists of ids known to be distinct as compared (short ones only): a batch repeats them
_DISTINCT_IDS: set[tuple[str, ...]] = set()


def _twin_ids(ids: tuple[str, ...], add: Add) -> None:
    """KE003: two task shapes that share an id (as folded), at the second one."""
    if len(set(ids)) == len(ids):
        # distinct as written (the common case): only a fold can make two of them one
        folded = []
        for x in ids:
            f = _FOLDED_IDS.get(x)
            if f is None:
                f = unicodedata.normalize("NFKC", x).casefold().strip()
                if len(_FOLDED_IDS) < 4096 and len(x) <= CACHED_CHARS:
                    _FOLDED_IDS[x] = f
            folded.append(f)
        if len(set(folded)) == len(folded):
            if len(_DISTINCT_IDS) < 4096 and sum(map(len, ids)) <= CACHED_CHARS:
                _DISTINCT_IDS.add(ids)
            return
    else:
        folded = [unicodedata.normalize("NFKC", x).casefold().strip() for x in ids]
    first: dict[str, int] = {}
    for j, f in enumerate(folded):
        i = first.setdefault(f, j)
        if i != j:
            same = "" if ids[i] == ids[j] else f" (`{ids[i][:60]}` as compared)"
            add(
                (
                    "KE003",
                    f"/task/shapes/{j}/id",
                    f"task.shapes[{j}].id `{ids[j][:60]}` repeats task.shapes[{i}].id{same}: a "
                    "lookup by that id (the timed shape, its work, its validation) may read either shape",
                )
            )


#: member names of an extension that restate a claim of the packet's own fields
#: (compared casefolded, without `-`, `_` or spaces)
_CLAIM_KEYS = frozenset({"speedup", "grade", "verified", "valid", "verdict", "status"})
_CLAIM_KEY_CACHE: dict[str, bool] = {}


def _claim_key(key: str) -> bool:
    """Whether an extension member's name restates a core claim (cached)."""
    hit = _CLAIM_KEY_CACHE.get(key)
    if hit is None:
        hit = (
            len(key) <= 64
            and key.casefold().replace("_", "").replace("-", "").replace(" ", "") in _CLAIM_KEYS
        )
        if len(_CLAIM_KEY_CACHE) < 4096 and len(key) <= CACHED_CHARS:
            _CLAIM_KEY_CACHE[key] = hit
    return hit


#: the namespace the project writes itself (:func:`kernel_evidence.harness.execute_replay`)
_REPLAY_NS = "kevidence:replay"
#: the verdicts the harness's replay writes
_REPLAY_VERDICTS = frozenset({"reproduced", "drifted", "failed"})


def _project_namespace(p: Any, ns: str, body: Any, add: Add) -> None:
    """KE009 for a ``kevidence:*`` namespace: only the replay verdict, and only on a replay."""
    esc = ns.replace("~", "~0").replace("/", "~1")
    if ns != _REPLAY_NS:
        add(
            (
                "KE009",
                f"/extensions/{esc}",
                f"extension `{ns[:80]}` is in the project's reserved `kevidence:` namespace, where "
                "the project writes only `kevidence:replay`: a producer's claim there is not the validator's",
            )
        )
        return
    lin = p.lineage
    relation = lin.relation if lin is not None else None
    if relation not in ("replay", "rerun") or lin.parent_packet_id is None:
        add(
            (
                "KE009",
                f"/extensions/{esc}",
                f"extension `{ns}` is a replay verdict on a packet that is no replay (lineage.relation "
                f"{relation!r}, parent_packet_id {'set' if lin is not None and lin.parent_packet_id else 'missing'}): "
                "only the harness's replay of a parent writes it",
            )
        )
        return
    verdict = body.get("verdict") if isinstance(body, dict) else None
    if verdict not in _REPLAY_VERDICTS:
        shown = repr(verdict[:60]) if isinstance(verdict, str) else type(verdict).__name__
        add(
            (
                "KE009",
                f"/extensions/{esc}",
                f"extension `{ns}` has verdict {shown}, not one the harness's replay writes "
                "(reproduced, drifted, failed)",
            )
        )


def _extension_claims(p: Any, ext: Any, add: Add) -> None:
    """KE009: extension members that restate a speedup, grade, verdict or status, and
    members of the project's own namespace that the project did not write."""
    for ns, body in ext.items():
        if ns.startswith("kevidence:"):
            _project_namespace(p, ns, body, add)
            continue
        if not isinstance(body, dict):
            continue
        for key in body:
            if isinstance(key, str) and _claim_key(key):
                value = body[key]
                if isinstance(value, str):
                    shown = repr(value[:60])
                elif isinstance(value, (int, float, bool)):
                    shown = repr(value)[:60]
                else:
                    shown = type(value).__name__
                esc = ns.replace("~", "~0").replace("/", "~1")
                kesc = key.replace("~", "~0").replace("/", "~1")
                add(
                    (
                        "KE009",
                        f"/extensions/{esc}/{kesc}",
                        f"extension `{ns[:80]}` restates `{key[:60]}` ({shown}), a claim the validator does not "
                        "check there",
                    )
                )


#: how far after created_at a measured_at may be (clocks of two machines)
_SKEW = timedelta(hours=1)


def _measured_at(m: str, created: str, future: str, add: Add) -> None:
    """KE008 for a measured_at that is not before created_at, or not a real time."""
    why = _not_a_calendar_time(m)
    if why:
        add(("KE008", "/measured_at", f"measured_at {m} is not a real time: {why}"))
        return
    if m[:19] > future:
        add(("KE008", "/measured_at", f"measured_at {m} is in the future"))
        return
    if _not_a_calendar_time(created):
        return  # KE007
    at = datetime.strptime(m[:19], "%Y-%m-%dT%H:%M:%S")
    made = datetime.strptime(created[:19], "%Y-%m-%dT%H:%M:%S")
    if at - made > _SKEW:
        add(
            (
                "KE008",
                "/measured_at",
                f"measured_at {m} is after the packet was made (created_at {created}): a "
                "measurement cannot postdate its packet",
            )
        )


def identity_finding(
    p: Any, canonical: bytes | None, content_id: str | None = None
) -> tuple[str, str, str] | None:
    """KE004/KE005: the id the content gives (``content_id``, or hashed from the canonical
    bytes, both computed once by the decoder when it can) against the packet's own."""
    pid = p.packet_id
    if pid is None:
        return "KE005", "/packet_id", "no packet_id; other packets and archives cannot reference this one"
    if content_id is not None:
        want = content_id
    else:
        if canonical is None:
            from .._codec.structs import canonical_struct_bytes

            canonical = canonical_struct_bytes(p)
        want = "sha256:" + _sha256(canonical).hexdigest()
    if want != pid:
        return "KE004", "/packet_id", f"packet_id does not match the content; expected {want}"
    return None


_future_cache: list[Any] = [float("-inf"), ""]


def future_limit() -> str:
    """Now + 1 day as ``YYYY-MM-DDTHH:MM:SS`` (UTC), refreshed once a minute: a created_at
    after it is in the future (KE006)."""
    mono = time.monotonic()
    if mono - _future_cache[0] > 60:
        _future_cache[0] = mono
        _future_cache[1] = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    return str(_future_cache[1])


def current_future() -> str:
    """:func:`future_limit`, from its cache without a call when it is fresh."""
    return _future_cache[1] if time.monotonic() - _future_cache[0] <= 60 else future_limit()


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _not_a_calendar_time(ts: str) -> str | None:
    """Why a timestamp that matches the pattern names no real time (None when it does)."""
    year, month, day = int(ts[0:4]), int(ts[5:7]), int(ts[8:10])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = 29 if month == 2 and leap else _MONTH_DAYS[month - 1]
    if day > days:
        return f"month {ts[5:7]} of {ts[0:4]} has {days} days"
    if ts[17:19] == "60" and ts[11:16] != "23:59":
        return "a leap second is only at 23:59:60"
    return None
