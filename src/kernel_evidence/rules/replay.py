"""KE1xx: the replay reproduces the run."""

from __future__ import annotations

from typing import Any

from ._context import Add, Ctx
from ._engine import declare

declare(
    "KE101",
    "error",
    "replay command present",
    "record the exact argv that reproduces the run in /replay/command",
    "Every packet, whatever its status, MUST carry `replay.command`: a non-empty argv whose "
    "first element names the program. Without it the packet is not evidence.",
)
declare("KE102", "warning", "replay pins the code",
     "record /replay/repository/commit or /replay/container/digest",
     "A replay SHOULD pin the code it runs: a repository commit or a container digest.")  # fmt: skip


def check(p: Any, ctx: Ctx, add: Add) -> None:
    r = p.replay
    # _replay re-checks in full; this guard only skips it when it has nothing to say (the
    # common case)
    if not (
        r is not None
        and r.command
        and r.command[0].strip()
        and not (r.shell and len(r.command) != 1)
        and (
            (r.repository is not None and r.repository.commit)
            or (r.container is not None and r.container.digest)
        )
    ):
        _replay(r, add)


def _replay(r: Any, add: Add) -> None:
    if r is None:
        add(("KE101", "/replay", "no replay category; a packet without a replay command is not evidence"))
        return
    if not r.command:
        add(("KE101", "/replay/command", "replay command is missing or empty"))
        return
    if not r.command[0].strip():
        add(("KE101", "/replay/command/0", "replay command's program (argv[0]) is empty"))
    if r.shell and len(r.command) != 1:
        add(
            (
                "KE101",
                "/replay/command",
                f"replay.shell is true but the command holds {len(r.command)} strings; a shell "
                "command is one string",
            )
        )
    if not (r.repository is not None and r.repository.commit) and not (
        r.container is not None and r.container.digest
    ):
        add(("KE102", "/replay", "replay pins neither a repository commit nor a container digest"))
