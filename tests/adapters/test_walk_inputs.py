"""The one folder walk of the harness and profiler adapters."""

import os
from pathlib import Path

from kernel_evidence.adapters._read import walk_inputs


def test_files_as_given_folders_walked_sorted_without_junk(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ("b/2.json", "b/1.JSON", "b/.hidden.json", "b/notes.txt", "b/~lock.json#"):
        (tmp_path / name).write_text("{}")
    named = tmp_path / "given.txt"
    named.write_text("x")
    got = list(walk_inputs([str(named), str(tmp_path / "b")], (".json",)))
    assert got == [
        (str(named), True),
        (str(tmp_path / "b/1.JSON"), False),
        (str(tmp_path / "b/2.json"), False),
    ]


def test_a_symlinked_folder_loop_ends(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.json").write_text("{}")
    os.symlink(tmp_path / "d", tmp_path / "d" / "loop")
    assert list(walk_inputs([str(tmp_path / "d")], (".json",))) == [(str(tmp_path / "d/a.json"), False)]
