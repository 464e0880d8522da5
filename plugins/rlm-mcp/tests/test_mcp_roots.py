"""Roots (paths and model files a client names must resolve inside them) and the HTTP guard's host check."""

from __future__ import annotations

import os

import pytest

from rlm_mcp.http_guard import is_loopback
from rlm_mcp.roots import OutsideRoots, Roots
from rlm_mcp.runner import step_message


@pytest.fixture
def tree(tmp_path):
    root, other = tmp_path / "root", tmp_path / "other"
    (root / "sub").mkdir(parents=True)
    other.mkdir()
    (root / "sub" / "a.txt").write_text("a")
    (other / "secret.txt").write_text("s")
    os.symlink(other / "secret.txt", root / "escape.txt")
    os.symlink(other, root / "escape-dir")
    return root, other


def test_paths_resolve_inside_the_roots(tree):
    root, other = tree
    roots = Roots([root])
    assert roots.check("sub/a.txt") == root / "sub" / "a.txt"
    assert roots.check(str(root / "sub")) == root / "sub"
    for bad in ("escape.txt", "escape-dir/secret.txt", "../other/secret.txt", str(other / "secret.txt"), "/etc"):
        with pytest.raises(OutsideRoots, match="outside the allowed roots"):
            roots.check(bad)
    with pytest.raises(OutsideRoots, match="does not exist"):
        roots.check("missing.txt")
    assert Roots([root, other]).check(str(other / "secret.txt")) == other / "secret.txt"


def test_model_strings_naming_files_outside_the_roots_are_refused(tree, monkeypatch):
    root, other = tree
    monkeypatch.chdir(root)
    roots = Roots([root])
    for fine in ("openai:gpt-4o-mini", "vllm:Qwen/Qwen2.5-7B-Instruct", "scripted:sub/a.txt", "replay:latest", ""):
        roots.check_model(fine)
    for bad in (f"scripted:{other}/secret.txt", "scripted:../other/secret.txt", "scripted:escape.txt",
                f"replay:{other}/run.jsonl", f"llamacpp:{other}/secret.txt"):  # fmt: skip
        with pytest.raises(OutsideRoots):
            roots.check_model(bad)


def test_only_loopback_hosts_are_served():
    assert all(map(is_loopback, ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.2", "example.com", ""]))


def test_progress_messages_name_the_step_action_and_code():
    assert step_message({"step": 3, "action": "run_code", "code": "x = 1\nprint(x)"}) == "step 3: run_code x = 1"
    assert step_message({"step": 4, "action": "final", "reply": "FINAL(7)"}) == "step 4: final FINAL(7)"
