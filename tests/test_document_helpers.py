"""The REPL's multi-document helpers (RLM Code's list_files, load_file, load_files, switch_to, remove_file) behave
the same in every sandbox runtime, and the system prompt describes them only for a set of several documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_host.context import Documents
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.testing.engine import isolated_runner

CODE = """```repl
print(list_files())
print(switch_to('b.txt'), repr(context))
print(load_files(['c.txt', 'a.txt']))
print(remove_file('a.txt'), list_files(), repr(context))
print(switch_to(), context)
try:
    load_file('a.txt')
except KeyError as exc:
    print('gone:', exc)
```"""
EXPECTED = ["['a.txt', 'b.txt', 'c.txt']", "4 'beta'", "['gamma', 'alpha']", "2 ['b.txt', 'c.txt'] 'beta'",
            "2 ['beta', 'gamma']", "gone: \"no file named 'a.txt'; list_files() shows the names\""]


def _run(tmp_path: Path, sandbox: str, context) -> tuple[list[str], str]:
    runner = isolated_runner(tmp_path, sandbox=sandbox, plugins={"process": "", "monty": "rlm-sandbox-monty",
                                                                  "docker": "rlm-sandbox-docker"}[sandbox])
    root = ScriptedConnector.from_responses([CODE, "FINAL(1)"])
    result = runner.run_task("q", context=context, connectors={"root": root, "sub": root})
    assert result.completed, result.error
    events = [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()]
    step = next(e for e in events if e["type"] == "step")
    return step["data"]["observation"]["blocks"][0]["stdout"].splitlines(), root.calls[0][0]["content"]


@pytest.mark.parametrize("sandbox", ["process", "monty", pytest.param("docker", marks=pytest.mark.slow)])
def test_the_helpers_in_every_runtime(tmp_path, monkeypatch, sandbox):
    monkeypatch.chdir(tmp_path)
    if sandbox == "monty":
        pytest.importorskip("rlm_sandbox_monty")
    documents = Documents(["alpha", "beta", "gamma"], ["a.txt", "b.txt", "c.txt"])
    if sandbox != "docker":
        lines, system = _run(tmp_path, sandbox, documents)
    else:
        pytest.importorskip("rlm_sandbox_docker")
        from rlm_sandbox_docker.testing import prepare_engine, release_engine

        prepare_engine()
        try:
            lines, system = _run(tmp_path, sandbox, documents)
        finally:
            release_engine()
    assert lines == EXPECTED
    assert "switch_to(name)" in system and "remove_file(name)" in system


def test_one_document_gets_no_file_helpers_in_the_prompt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = ScriptedConnector.from_responses(["```repl\nprint(len(context))\n```", "FINAL(1)"])
    isolated_runner(tmp_path, sandbox="process").run_task("q", context="one text",
                                                          connectors={"root": root, "sub": root})
    assert "switch_to" not in root.calls[0][0]["content"] and "list_files" not in root.calls[0][0]["content"]
