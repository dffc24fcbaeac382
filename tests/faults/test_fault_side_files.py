"""Fault suite: a packet's side-file path (``raw_table.path``) is untrusted.

`validate` and `archive` read a side file only inside the packet file's folder (links
resolved) or a folder the user names with ``--side-files-from``; a path elsewhere is not
looked at, and nothing printed tells whether such a file exists, its size or its digest.
FIFOs and devices as side files: ``tests/archive/test_raw_tables.py``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from _faults import run

import kernel_evidence as ke
from kernel_evidence.rawtable import write_raw_table


def _secret(tmp_path: Path) -> Path:
    """A file of the user's, outside every packet folder (an Arrow file, so that a copy of
    it would also pass as a raw table)."""
    ref = write_raw_table({"a": [1.0, 2.0]}, None, 2, tmp_path / "private", "secret")
    return Path(str(ref.path))


def _packet(folder: Path, path: str, sha256: str, size: int, name: str = "p.json") -> Path:
    d = ke.strategies.example_packet().to_dict()
    d.pop("packet_id", None)
    d["profiler"] = [
        {
            "tool": "ncu",
            "kernels": [{"name": "k0"}, {"name": "k1"}],
            "raw_table": {
                "kind": "profile",
                "name": "t.arrow",
                "path": path,
                "sha256": sha256,
                "size": {"value": size, "unit": "B"},
                "media_type": "application/vnd.apache.arrow.file",
            },
        }
    ]
    out = folder / name
    ke.write_packets(out, [ke.EvidencePacket.model_validate(d).with_id()], overwrite=True)
    return out


def _digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _probes(tmp_path: Path, secret: Path) -> dict[str, tuple[str, str, int]]:
    """Packets guessing at the secret file: right digest and size, wrong size, wrong
    digest, a file that does not exist; by absolute path, by `..`, through a link."""
    size = secret.stat().st_size
    good = _digest(secret)
    wrong = "sha256:" + "0" * 64
    link = tmp_path / "pk" / "innocent.arrow"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(secret)
    rel = os.path.relpath(secret, tmp_path / "pk")
    return {
        "guessed": (str(secret), good, size),
        "size": (str(secret), good, size + 1),
        "digest": (str(secret), wrong, size),
        "absent": (str(secret.parent / "nope.arrow"), good, size),
        "dotdot": (rel, good, size),
        "link": ("innocent.arrow", good, size),
    }


def test_validate_reveals_nothing_about_files_outside_the_packet_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    secret = _secret(tmp_path)
    said = {}
    for kind, (path, sha, size) in _probes(tmp_path, secret).items():
        packet = _packet(tmp_path / "pk", path, sha, size)
        code, out, err = run(capsys, "validate", "--strict", str(packet))
        assert code == 1, out
        # the same answer whatever the file is: only the path the packet gave differs
        said[kind] = (out + err).replace(path, "PATH").split("(")[0]
        assert str(secret.stat().st_size) not in out and _digest(secret)[7:] not in out.replace(sha, "")
        assert "is outside the packet's folder" in out and "KE904" in out
    assert len(set(said.values())) == 1, said


def test_side_files_from_allows_a_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    secret = _secret(tmp_path)
    packet = _packet(tmp_path / "pk", str(secret), _digest(secret), secret.stat().st_size)
    code, out, _ = run(capsys, "validate", "--strict", "--side-files-from", str(secret.parent), str(packet))
    assert code == 0, out
    damaged = _packet(tmp_path / "pk", str(secret), "sha256:" + "1" * 64, secret.stat().st_size)
    code, out, _ = run(capsys, "validate", "--side-files-from", str(secret.parent), str(damaged))
    assert code == 1 and "KE903" in out


def test_archive_does_not_copy_a_file_outside_the_packet_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    secret = _secret(tmp_path)
    probes = _probes(tmp_path, secret)
    for kind in ("guessed", "size", "absent", "dotdot", "link"):
        path, sha, size = probes[kind]
        _packet(tmp_path / "pk", path, sha, size, name=f"{kind}.json")
    arch = tmp_path / "arch"
    code, out, err = run(capsys, "archive", str(tmp_path / "pk"), "--to", str(arch))
    assert code == 0, err
    assert not (arch / "_raw").exists()
    # one line per file named (the secret by three packets, the absent file, the link)
    assert "5 added" in out and "0 copied, 3 not archived" in out
    warnings = [ln for ln in err.splitlines() if ln.startswith("kevidence: warning:")]
    assert len(warnings) == 3 and all("is outside the packet's folder" in w for w in warnings)
    assert str(secret.stat().st_size) not in err
    # allowed explicitly, the right file is copied
    code, out, err = run(
        capsys, "archive", str(tmp_path / "pk"), "--to", str(arch), "--side-files-from", str(secret.parent)
    )
    assert (arch / "_raw" / f"{_digest(secret)[7:]}.arrow").read_bytes() == secret.read_bytes()


def test_a_file_inside_the_packet_folder_is_still_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ref = write_raw_table({"a": [1.0, 2.0]}, None, 2, tmp_path / "pk" / "side", "t")
    packet = _packet(tmp_path / "pk", str(ref.path), str(ref.sha256), int(ref.size.value))  # type: ignore[union-attr]
    code, out, _ = run(capsys, "validate", "--strict", str(packet))
    assert code == 0, out


def test_one_large_side_file_named_by_many_packets_is_hashed_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ref = write_raw_table(
        {"a": [float(i) for i in range(2)]}, None, 2, tmp_path / "pk", "t", relative_to=tmp_path / "pk"
    )
    side = tmp_path / "pk" / str(ref.path)
    for i in range(20):
        _packet(tmp_path / "pk", str(ref.path), str(ref.sha256), int(ref.size.value), name=f"p{i:02}.json")  # type: ignore[union-attr]
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: object, *args: object, **kw: object) -> int:
        if os.fspath(path) == str(side):  # type: ignore[arg-type]
            opened.append(str(path))
        return real_open(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", counting_open)
    code, out, _ = run(capsys, "validate", "--strict", str(tmp_path / "pk"))
    assert code == 0, out
    assert len(opened) == 1
    # a file changed since (same size, new time) is hashed again, and found to differ
    data = bytearray(side.read_bytes())
    data[-1] ^= 0xFF
    side.write_bytes(bytes(data))
    st = side.stat()
    os.utime(side, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    code, out, _ = run(capsys, "validate", str(tmp_path / "pk"))
    assert code == 1 and out.count("KE903") == 20 and len(opened) == 2


@pytest.mark.parametrize("path", ["a\x00b.arrow", "x" * 5000 + ".arrow", "\x1b[2J.arrow"])
def test_odd_side_file_paths_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, path: str
) -> None:
    packet = _packet(tmp_path / "pk", path, "sha256:" + "0" * 64, 10)
    code, out, err = run(capsys, "validate", "--strict", str(packet))
    assert code == 1 and "KE904" in out and "Traceback" not in out + err and "\x1b" not in out
    code, out, err = run(capsys, "archive", str(packet), "--to", str(tmp_path / "arch"))
    assert code == 0 and "1 added" in out and "not archived" in err and "\x1b" not in err
