"""Fault suite: `kevidence replay --execute` against hostile or runaway commands.

Also held elsewhere: a shell command needs --allow-shell, NUL bytes, missing programs and
folders (``tests/harness/test_harness_replay.py``).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _faults import GOOD, one_line_each, run, write


def _packet(tmp_path: Path, command: list[str], **replay: object) -> str:
    d = json.loads(GOOD)
    d.pop("packet_id", None)
    d["replay"] = {"command": command, **replay}
    return write(tmp_path / "p.json", json.dumps(d).encode())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (killed, not yet reaped by its parent) counts as gone
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_timeout_kills_the_whole_process_group(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = textwrap.dedent(
        f"""
        import subprocess, sys, time
        g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        open({str(pid_file)!r}, "w").write(str(g.pid))
        time.sleep(120)
        """
    )
    path = _packet(tmp_path, [sys.executable, "-c", script])
    start = time.monotonic()
    code, out, err = run(
        capsys, "replay", path, "--execute", "--timeout", "2", "-o", str(tmp_path / "c.json")
    )
    took = time.monotonic() - start
    assert code == 1 and "did not finish within 2 s" in out
    assert took < 30  # the grandchild held the output pipes: waiting on them would hang
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the command's own child survived the timeout"
    one_line_each(err)


def test_a_process_left_behind_does_not_hold_the_replay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # the command exits at once but leaves a process holding its standard output
    script = (
        "import subprocess, sys; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
        "print('done')"
    )
    path = _packet(tmp_path, [sys.executable, "-c", script])
    start = time.monotonic()
    code, out, _ = run(capsys, "replay", path, "--execute", "-o", str(tmp_path / "c.json"))
    assert time.monotonic() - start < 30
    assert code == 1 and "wrote no packet" in out


def test_a_command_printing_hundreds_of_megabytes_is_read_in_bounded_memory(tmp_path: Path) -> None:
    # the packet printed last, after 400 MB of noise
    child_packet = json.loads(GOOD)
    child_packet.pop("packet_id")
    script = textwrap.dedent(
        f"""
        import sys
        block = b"x" * (1 << 20) + b"\\n"
        for _ in range(400):
            sys.stdout.buffer.write(block)
        sys.stdout.buffer.write({json.dumps(child_packet).encode()!r} + b"\\n")
        """
    )
    path = _packet(tmp_path, [sys.executable, "-c", script])
    probe = textwrap.dedent(
        f"""
        import resource, subprocess, sys
        p = subprocess.run([sys.executable, "-m", "kernel_evidence", "replay", {path!r}, "--execute",
                            "-o", {str(tmp_path / "c.json")!r}], capture_output=True, text=True)
        print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        print(p.stdout)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    first, rest = done.stdout.split("\n", 1)
    code, maxrss_kib = map(int, first.split())
    assert code == 0, rest + done.stderr
    assert "reproduced" in rest
    assert maxrss_kib < 250 * 1024, f"peak {maxrss_kib // 1024} MiB for 400 MiB of output"
    assert resource.getrusage(resource.RUSAGE_SELF)  # (the probe ran in its own process)


def test_shell_syntax_in_an_argv_command_is_not_interpreted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    path = _packet(tmp_path, ["echo", f"x; touch {marker}", f"$(touch {marker})", f"`touch {marker}`"])
    code, _, _ = run(capsys, "replay", path, "--execute", "-o", str(tmp_path / "c.json"))
    assert code == 1 and not marker.exists()


def test_a_shell_command_does_not_run_without_allow_shell(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    path = _packet(tmp_path, [f"touch {marker}"], shell=True)
    code, _, err = run(capsys, "replay", path, "--execute", "-o", str(tmp_path / "c.json"))
    assert code == 1 and "--allow-shell" in err and not marker.exists()


def test_recorded_environment_cannot_preload_or_redirect(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    seen = tmp_path / "env.json"
    script = f"import json, os; json.dump(dict(os.environ), open({str(seen)!r}, 'w'))"
    env = {"LD_PRELOAD": "/tmp/evil.so", "PATH": "/evil", "PYTHONPATH": "/evil", "KEVIDENCE_OUT": "/etc/x"}
    path = _packet(tmp_path, [sys.executable, "-c", script], env=env)
    code, out, _ = run(capsys, "replay", path, "--execute", "-o", str(tmp_path / "c.json"))
    got = json.loads(seen.read_text())
    assert got.get("LD_PRELOAD") != "/tmp/evil.so" and got.get("PATH") != "/evil"
    assert got.get("PYTHONPATH") != "/evil" and got["KEVIDENCE_OUT"] != "/etc/x"
    assert "LD_PRELOAD" in out  # listed as ignored


def test_terminal_escapes_in_a_recorded_command_are_shown_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _packet(tmp_path, ["echo", "\x1b]0;owned\x07\x1b[2J"])
    code, out, err = run(capsys, "replay", path)
    assert code == 0
    assert "\x1b" not in out + err and "\\x1b" in out
