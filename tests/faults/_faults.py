"""Helpers of the fault suite: packets, the command line in-process, a child process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_evidence.cli import main
from kernel_evidence.models import EvidencePacket
from kernel_evidence.strategies import example_packet

GOOD = example_packet().to_json()


def packet(i: int, **changes: object) -> bytes:
    """A valid packet, distinct for each ``i`` (its subject's name), as compact JSON."""
    d = json.loads(GOOD)
    d.pop("packet_id", None)
    d["subject"]["name"] = f"kernel_{i}"
    d.update(changes)
    return EvidencePacket.model_validate(d).with_id().to_json()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``kevidence ARGV`` in this process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def child(*argv: str, timeout: float = 60, **kw: object) -> subprocess.CompletedProcess[str]:
    """``kevidence ARGV`` in a child process (for what must not hang or must be killed)."""
    return subprocess.run(
        [sys.executable, "-m", "kernel_evidence", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **kw,  # type: ignore[arg-type]
    )


def one_line_each(text: str) -> list[str]:
    """The lines of ``text``; a traceback fails the test."""
    assert "Traceback" not in text, text
    return text.splitlines()


def write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)
