"""Roots (checked on what will be read: links, FIFOs, sockets), the ceilings on a client's sandbox, models and
limits, and the HTTP guard's host check."""

from __future__ import annotations

import os
import socket

import pytest
from rlm_host.sdk.commands import is_loopback_host as is_loopback

from rlm_mcp.ceilings import CeilingError, Ceilings, allow_list
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


def test_outside_paths_answer_alike_whether_they_exist_or_not(tree):
    root, other = tree
    roots = Roots([root])
    answers = set()
    for outside in (str(other / "secret.txt"), str(other / "missing.txt"), "../other/missing.txt", "/nonexistent/x"):
        with pytest.raises(OutsideRoots) as refused:
            roots.check(outside)
        answers.add(str(refused.value).replace(repr(outside), "PATH"))
    assert len(answers) == 1 and "outside the allowed roots" in answers.pop()
    linked = root.parent / "root-link"
    os.symlink(root, linked)  # a root given through a link to it, and a path spelled through that link
    assert Roots([linked]).check(str(linked / "sub" / "a.txt")) == root / "sub" / "a.txt"


def test_a_folder_holding_a_link_out_of_the_roots_is_refused_unread(tree):
    root, other = tree
    roots = Roots([root])
    (root / "docs" / "deeper").mkdir(parents=True)
    (root / "docs" / "a.txt").write_text("a")
    assert roots.check_context("docs") == root / "docs"
    os.symlink(root / "sub" / "a.txt", root / "docs" / "inside.txt")  # a link inside the roots is fine
    os.symlink(root / "sub", root / "docs" / "inside-dir")
    os.symlink(other / "secret.txt", root / "docs" / ".hidden-link")  # hidden: the host never reads it
    assert roots.check_context("docs") == root / "docs"
    for link, target in (("deeper/out.txt", other / "secret.txt"), ("deeper/out-dir", other),
                         ("deeper/dangling", other / "missing.txt")):
        os.symlink(target, root / "docs" / link)
        with pytest.raises(OutsideRoots, match="a link out of the allowed roots") as refused:
            roots.check_context("docs")
        assert str(other) not in str(refused.value)  # the target is not shown
        os.unlink(root / "docs" / link)
    os.symlink(other, root / "sub" / "out")  # reached through the inside-dir link
    with pytest.raises(OutsideRoots, match="a link out of the allowed roots"):
        roots.check_context("docs")
    assert Roots([root, other]).check_context(str(root / "docs")) == root / "docs"


def test_fifos_and_sockets_are_refused_before_any_read(tree):
    root, _ = tree
    roots = Roots([root])
    os.mkfifo(root / "pipe")
    (root / "docs").mkdir()
    with pytest.raises(OutsideRoots, match="a FIFO, not a regular file or folder"):
        roots.check_context("pipe")
    os.mkfifo(root / "docs" / "pipe")
    with pytest.raises(OutsideRoots, match="a FIFO, not a regular file"):
        roots.check_context("docs")
    os.unlink(root / "docs" / "pipe")
    os.symlink(root / "pipe", root / "docs" / "to-pipe")
    with pytest.raises(OutsideRoots, match="a FIFO"):
        roots.check_context("docs")
    os.unlink(root / "docs" / "to-pipe")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(root / "docs" / "s.sock"))
        with pytest.raises(OutsideRoots, match="a socket"):
            roots.check_context("docs")
    with pytest.raises(OutsideRoots, match="does not exist"):
        roots.check_context("bad\x00name")


def test_a_folder_walk_has_a_time_limit(tree):
    root, _ = tree
    with pytest.raises(OutsideRoots, match="too large to check"):
        Roots([root]).check_context(str(root), seconds=-1)


def test_sandbox_ceiling():
    ceilings = Ceilings("monty", frozenset({"monty", "docker"}), frozenset({"monty"}))
    assert ceilings.check_sandbox(None) is None and ceilings.check_sandbox("auto") is None
    assert ceilings.check_sandbox("docker") == "docker" and ceilings.check_sandbox("monty") == "monty"
    for weak in ("process", "local", "nonsense"):
        with pytest.raises(CeilingError, match="this server allows: auto, docker, monty"):
            ceilings.check_sandbox(weak)
    opted = Ceilings("monty", frozenset({"monty"}), frozenset({"monty", "process"}))
    assert opted.check_sandbox("process") == "process"
    assert opted.check_sandbox("local", canonical=lambda name: "process") == "process"  # an alias


def test_model_ceiling_is_an_allow_list_never_a_spelling(tmp_path):
    models = allow_list("scripted:root.json", "scripted:sub.json", ["openai:gpt-4o-mini", "scripted:root.json"])
    assert models == ("scripted:root.json", "scripted:sub.json", "openai:gpt-4o-mini")
    ceilings = Ceilings("auto", frozenset(), models=models)
    assert ceilings.check_model(None) is None and ceilings.check_model("openai:gpt-4o-mini") == "openai:gpt-4o-mini"
    for bad in (f"scripted/{tmp_path}/x.json", f"replay/{tmp_path}/run.jsonl", "scripted:../outside.json",
                "scripted:./root.json", "openai:gpt-4o", "OPENAI:gpt-4o-mini"):
        with pytest.raises(CeilingError, match="this server allows: scripted:root.json, scripted:sub.json"):
            ceilings.check_model(bad)
    with pytest.raises(CeilingError, match="lets clients choose no model"):
        Ceilings("auto", frozenset()).check_model("openai:gpt-4o-mini")


def test_numeric_limits_are_lowered_never_raised():
    ceilings = Ceilings("auto", frozenset(), limits={"max_steps": 4, "max_depth": 1, "timeout": 60.0, "max_cost": None})
    options = ceilings.run_options(max_steps=50, max_depth=0, timeout=5.0, max_cost=9.0)
    assert options == {"max_steps": 4, "max_depth": 0, "timeout": 5.0, "max_cost": 9.0}
    assert ceilings.run_options(max_steps=2) == {"max_steps": 2}
    for name, bad in (("max_steps", 0), ("timeout", -1.0), ("max_cost", float("nan")), ("max_depth", -1),
                      ("timeout", float("inf"))):
        with pytest.raises(CeilingError, match=f"{name} must be"):
            ceilings.run_options(**{name: bad})


def test_only_loopback_hosts_are_served():
    assert all(map(is_loopback, ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.2", "example.com", ""]))


def test_progress_messages_name_the_step_action_and_code():
    assert step_message({"step": 3, "action": "run_code", "code": "x = 1\nprint(x)"}) == "step 3: run_code x = 1"
    assert step_message({"step": 4, "action": "final", "reply": "FINAL(7)"}) == "step 4: final FINAL(7)"
