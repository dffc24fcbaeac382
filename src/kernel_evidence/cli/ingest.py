"""``kevidence ingest TOOL INPUT... [-o OUT]``: turn profiler/benchmark outputs into packets.

Thin: the work is :func:`kernel_evidence._ingest.ingest`. One packet is written as JSON,
several as JSONL (zstd when the name ends in ``.zst``); stdout when no ``-o``. Warnings and
what the packets still lack to pass ``kevidence validate`` go to stderr.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping

import typer

from .._gc import paused_gc
from ..errors import KernelEvidenceError, UsageError
from ._common import EXIT_INVALID, EXIT_OK, EXIT_USAGE, fail


def register(app: typer.Typer) -> None:
    from ..adapters import builtin_names

    tools = ", ".join(builtin_names())

    @app.command("ingest")
    def ingest_cmd(
        tool: str = typer.Argument(..., help=f"Adapter name: {tools} (or an alias, or a plug-in's name)."),
        inputs: list[str] = typer.Argument(..., help="Files or directories the tool wrote."),
        output: str | None = typer.Option(
            None,
            "-o",
            "--output",
            help="Write here (.json: one packet; .jsonl: several; .zst: compressed). Default: stdout.",
        ),
        replay_cmd: str | None = typer.Option(
            None, "--replay-cmd", help="The exact command that reproduces the run (split like a shell would)."
        ),
        baseline: str | None = typer.Option(
            None,
            "--baseline",
            help="What it is compared with: PROVIDER:VERSION:CALL, e.g. cuBLASLt:12.4.5:cublasLtMatmul.",
        ),
        sets: list[str] = typer.Option(
            [],
            "--set",
            help="key=value: a dotted path into the packet; the value is JSON when it parses, else text. Repeatable.",
        ),
        opts: list[str] = typer.Option(
            [],
            "--opt",
            help="KEY=VALUE: an adapter option (e.g. vllm: device, engine_version, tensor_parallel_size, "
            "samples_dir); the value is JSON when it parses, else text. Repeatable.",
        ),
        into: str | None = typer.Option(
            None,
            "--into",
            help="Merge into this base packet: its fields are kept, the adapter fills the rest.",
        ),
        created_at: str | None = typer.Option(
            None, "--created-at", help="RFC 3339 UTC time for created_at (default: now)."
        ),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing output file."),
        side_dir: str | None = typer.Option(
            None,
            "--side-dir",
            help="Where captures with more than a million raw values keep them, as Arrow IPC files the "
            "packet references by sha256. Default: beside -o (stdout: every value stays inline).",
        ),
        inline_raw: bool = typer.Option(
            False, "--inline-raw", help="Keep every raw value inside the packet, however many there are."
        ),
        inline_max_cells: int = typer.Option(
            1_000_000,
            "--inline-max-cells",
            min=0,
            max=2**62,
            help="Captures with more raw values than this keep them in a side file.",
        ),
    ) -> None:
        """Turn what a profiler or benchmark wrote into evidence packets."""
        raise typer.Exit(
            run(
                tool,
                inputs,
                output=output,
                replay_cmd=replay_cmd,
                baseline=baseline,
                sets=sets,
                opts=opts,
                into=into,
                created_at=created_at,
                force=force,
                side_dir=side_dir,
                inline_raw=inline_raw,
                inline_max_cells=inline_max_cells,
            )
        )


def run(
    tool: str,
    inputs: list[str],
    *,
    output: str | None = None,
    replay_cmd: str | None = None,
    baseline: str | None = None,
    sets: list[str] | None = None,
    opts: list[str] | None = None,
    into: str | None = None,
    created_at: str | None = None,
    force: bool = False,
    side_dir: str | None = None,
    inline_raw: bool = False,
    inline_max_cells: int | None = None,
) -> int:
    """The command body; returns the exit code."""
    # here, not at start-up: the adapters' imports are only paid by `kevidence ingest`
    from .._ingest import ingest_json, missing_for_validation, parse_opts, remove_side_files
    from ..adapters import missing_fields

    if output == "":
        fail("-o/--output expects a file name, got an empty one", EXIT_USAGE)
    if output is not None:
        from ..io import replaces_file

        try:
            exists = replaces_file(output)
        except OSError as exc:
            fail(str(exc))
        if exists and not force:
            fail(f"{output}: already exists; refusing to overwrite it (use --force)")
        if exists and any(_same_file(output, i) for i in [*inputs, *([into] if into else [])]):
            fail(f"{output}: is one of the inputs; write the packets to another file", EXIT_USAGE)
    if inline_raw and side_dir is not None:
        fail("--inline-raw and --side-dir contradict each other; give one", EXIT_USAGE)
    side_base: str | None = None
    if side_dir == "":
        fail("--side-dir expects a directory, got an empty name", EXIT_USAGE)
    if side_dir is None and not inline_raw and output is not None and not _streams(output):
        side_dir = os.path.dirname(os.path.abspath(output))
    if side_dir is not None and os.path.exists(side_dir) and not os.path.isdir(side_dir):
        fail(f"{side_dir}: --side-dir is not a directory", EXIT_USAGE)
    if output is not None and not _streams(output):
        # side file paths are recorded relative to it, and those of an --into base rebased
        side_base = os.path.dirname(os.path.abspath(output))
    try:
        extra = parse_opts(opts or ())
        # each packet's id and JSON bytes from one encoding; the same bytes are written out
        # and validated (the validator's fast path)
        result, encoded = ingest_json(
            tool,
            inputs,
            replay_cmd=replay_cmd,
            baseline=baseline,
            sets=sets or (),
            into=into,
            created_at=created_at,
            extra=extra,
            side_dir=side_dir,
            side_base=side_base,
            inline_max_cells=inline_max_cells,
        )
    except UsageError as exc:  # a malformed option, an unknown tool, a bad --opt value
        fail(str(exc), EXIT_USAGE)
    except KernelEvidenceError as exc:
        fail(str(exc), EXIT_INVALID)
    packets = result.packets
    from ..io import output_streams_jsonl

    if output is not None and len(packets) > 1 and not output_streams_jsonl(output):
        remove_side_files(result.side_files)
        fail(
            f"{output}: {len(packets)} packets need a .jsonl (or .jsonl.zst) output name; a .json file holds one",
            EXIT_USAGE,
        )
    given = {kv.partition("=")[0].strip() for kv in sets or ()}
    if replay_cmd is not None:
        given.add("replay.command")
    if baseline is not None:
        given.add("timing.baseline")
    for w in result.warnings:
        missing = missing_fields(w)
        if missing and all(key in given for key in missing):
            continue  # the user supplied every field the warning says the packet lacks
        text = " ".join(w.split())
        if missing:
            text += f"; add {advice(missing)}"
        sys.stderr.write(f"kevidence: warning: {text}\n")
    import msgspec

    if output is None:
        out = sys.stdout.buffer
        for data in encoded:
            out.write(data)
            out.write(b"\n")
        out.flush()
    else:
        from ..io import write_packets

        try:
            write_packets(output, (msgspec.Raw(b) for b in encoded), overwrite=force)
        except (OSError, ValueError) as exc:
            remove_side_files(result.side_files)
            fail(str(exc))
        sys.stderr.write(f"kevidence: wrote {len(packets)} packet(s) to {output}\n")
    for side in result.side_files:
        sys.stderr.write(
            f"kevidence: raw metrics kept in {side} (referenced by sha256; keep it beside the packet)\n"
        )
    with paused_gc():
        lacks = missing_for_validation(encoded)
    if lacks:
        what = "the packet still needs" if len(packets) == 1 else "the packets still need"
        sys.stderr.write(f"kevidence: to pass `kevidence validate`, {what}:\n")
        for line in lacks:
            sys.stderr.write(f"  {line}\n")
    return EXIT_OK


def advice(missing: Mapping[str, str | None]) -> str:
    """The options of ``kevidence ingest`` that supply ``missing`` fields (dotted packet paths
    to an example value): ``--replay-cmd``, ``--baseline``, or ``--set PATH=VALUE``."""
    parts = []
    for path, example in missing.items():
        if path == "replay.command":
            parts.append(f"--replay-cmd {shlex.quote(example or '<the exact command>')}")
        elif path == "timing.baseline":
            parts.append(f"--baseline {shlex.quote(example or 'PROVIDER:VERSION:CALL')}")
        else:
            value = example or "<value>"
            parts.append(f"--set {shlex.quote(f'{path}={value}')}")
    return " ".join(parts)


def _streams(output: str) -> bool:
    """``-`` or a device, pipe or descriptor name: not a file side files can sit beside."""
    if output == "-":
        return True
    from ..io import _output_target

    try:
        return _output_target(output)[1]
    except OSError:
        return False  # refused with its reason when it is opened


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
