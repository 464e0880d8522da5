"""``run_bounded`` children run where the caller is now: the fork server (used once the caller has threads) may
have started in another folder, and a relative path must mean the caller's."""

from __future__ import annotations

import os
from pathlib import Path

from rlm_host.bounded import run_bounded


def read_text(path: str) -> str:
    return Path(path).read_text()


def test_a_fork_server_child_reads_relative_paths_from_the_callers_folder(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, text in ((first, "one"), (second, "two")):
        folder.mkdir()
        (folder / "note.txt").write_text(text)
    monkeypatch.chdir(first)
    assert run_bounded(read_text, "note.txt", method="forkserver") == "one"  # the server starts here
    monkeypatch.chdir(second)
    assert run_bounded(read_text, "note.txt", method="forkserver") == "two"
    assert os.getcwd() == str(second)
