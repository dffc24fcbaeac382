"""The codec: the one home of schema versions, decoding, canonical form, ids and migration.

- :mod:`.versions`: the ordered :class:`~.versions.SchemaVersion`, the current and the
  supported versions (imports nothing of the package: the models take their version here).
- :mod:`.structs`: msgspec mirrors of the pydantic models (the fast path) and their
  canonical encoders; :mod:`.patterns`: the generated regular-expression check of them.
- :mod:`.decode`: the single entry point from bytes (or JSON data) to packets, with the
  input-level checks (KE001-KE003); older versions are migrated there.
- :mod:`.messages`: the one translation of structural errors (msgspec's and pydantic's).
- :mod:`.canonical`, :mod:`.ids`, :mod:`.encode`: canonical form, packet ids, models to JSON.
- :mod:`.migrate`: the table of version steps; :mod:`.rewrite`: packet files rewritten at
  the current version (``kevidence migrate``).

Nothing is imported here, so that importing :mod:`.versions` pulls in nothing else.
"""
