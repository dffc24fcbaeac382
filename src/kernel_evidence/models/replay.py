"""How to run it again: command, source, container, environment, seeds, inputs."""

from __future__ import annotations

from ._base import Artifact, Bool, Digest, Int, Model, NonEmptyStr, Str

__all__ = ["Container", "Replay", "Repository"]


class Repository(Model):
    """Source code: where, which commit, and whether the tree had local changes."""

    url: Str | None = None
    commit: Str | None = None
    dirty: Bool | None = None
    branch: Str | None = None


class Container(Model):
    """The container image, pinned by digest."""

    image: NonEmptyStr
    digest: Digest | None = None


class Replay(Model):
    """The replay category: the exact command (argv), never a bare description.

    ``shell`` is true only when ``command`` is a single shell string that must be run by a
    shell; replay tools ask before running such a command.
    """

    command: list[Str] | None = None
    shell: Bool | None = None
    cwd: Str | None = None
    env: dict[str, Str] | None = None
    repository: Repository | None = None
    container: Container | None = None
    seeds: dict[str, Int] | None = None
    inputs: list[Artifact] | None = None
    packages: dict[str, Str] | None = None
    notes: Str | None = None
