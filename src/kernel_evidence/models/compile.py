"""How the candidate was built: compiler, flags, target, artifacts."""

from __future__ import annotations

from ._base import Artifact, Bool, Digest, Duration, Model, NonEmptyStr, Software, Str

__all__ = ["Compile"]


class Compile(Model):
    """The compile category of a packet."""

    compiler: Software | None = None
    language: Str | None = None
    target_arch: NonEmptyStr | None = None
    flags: list[Str] | None = None
    source_digest: Digest | None = None
    succeeded: Bool | None = None
    duration: Duration | None = None
    artifacts: list[Artifact] | None = None
    log_excerpt: Str | None = None
