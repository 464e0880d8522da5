"""After each step that ran code, the trajectory keeps the REPL's variables (name, type, size, a short repr),
computed in the sandbox (``rlm replay`` showing them is rlm-runs': plugins/rlm-runs/tests/test_replay_player.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_host.models.scripted import ScriptedConnector
from rlm_host.trajectory import Replay, RunStore
from support.workers import PLUGINS, RUNTIMES, engine  # noqa: F401 (engine: a fixture)
from rlm_host.testing.engine import isolated_runner
from rlm_runs import compare_runs

STEPS = ["```repl\nwords = context.split()\nn = len(words)\nblob = 'x' * 5000\nprint(n)\n```",
         "```repl\nprint(1/0)\n```", "FINAL_VAR('n')"]


def _variables(tmp_path: Path, sandbox: str) -> list:
    """The variables of each step of a run in ``sandbox``; and ``rlm runs compare`` of that run with one that
    took another second step, in the same runtime."""
    runner = isolated_runner(tmp_path, sandbox=sandbox, plugins=PLUGINS[sandbox])
    results = []
    for script in (STEPS, [STEPS[0], "```repl\nprint(n * 2)\n```", STEPS[2]]):
        root = ScriptedConnector.from_responses(script)
        results.append(runner.run_task("How many words?", context="the quick brown fox",
                                       connectors={"root": root, "sub": root}))
        assert results[-1].final_response == "4", results[-1].error
    replays = [Replay(RunStore(runner.home / "runs").load(Path(r.trajectory_path))) for r in results]
    comparison = compare_runs(*replays)
    assert comparison.identical_steps == 1 and comparison.divergence.step == 2
    assert comparison.divergence.differs_in == ["code", "success"], comparison.divergence
    steps = [json.loads(line) for line in Path(results[0].trajectory_path).read_text().splitlines()]
    return [e["data"]["observation"].get("variables") for e in steps if e["type"] == "step"]


@pytest.mark.parametrize("engine", RUNTIMES, indirect=True)
def test_variables_and_compare_in_every_runtime(tmp_path, monkeypatch, engine):
    monkeypatch.chdir(tmp_path)
    per_step = _variables(tmp_path, engine)
    first = {v["name"]: v for v in per_step[0]}
    assert set(first) == {"words", "n", "blob"}  # the environment's helpers and `context` are left out
    assert first["words"]["type"] == "list" and first["words"]["size"] == 4
    assert first["n"]["repr"] == "4" and first["blob"]["size"] == 5000 and len(first["blob"]["repr"]) == 80
    assert {v["name"] for v in per_step[1]} == {"words", "n", "blob"}  # the failing step still reports them
    assert per_step[2] is None  # the final answer ran no code


@pytest.mark.parametrize("engine", RUNTIMES, indirect=True)
def test_a_collection_shows_its_first_items_without_its_whole_repr(tmp_path, monkeypatch, engine):
    """A list of chunks of a huge context is shown by its first items: the snapshot never builds the repr of the
    whole collection (at 100 MB that repr was the largest allocation of a chunking run)."""
    monkeypatch.chdir(tmp_path)
    code = ("```repl\nchunks = [c * 1000 for c in 'abcdefghijkl']\none = ('x',)\nnested = [[[[[[1]]]]]]\n"
            "table = {'k': chunks}\nprint(len(chunks))\n```")
    runner = isolated_runner(tmp_path, sandbox=engine, plugins=PLUGINS[engine])
    root = ScriptedConnector.from_responses([code, "FINAL(12)"])
    result = runner.run_task("How many?", context="ctx", connectors={"root": root, "sub": root})
    assert result.final_response == "12", result.error
    steps = [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()]
    shown = {v["name"]: v for e in steps if e["type"] == "step"
             for v in e["data"]["observation"].get("variables") or []}
    assert shown["chunks"]["size"] == 12 and shown["chunks"]["repr"].startswith("['aaaa")
    assert len(shown["chunks"]["repr"]) <= 80 and len(shown["table"]["repr"]) <= 80
    assert shown["one"]["repr"] == "('x',)" and shown["nested"]["repr"] == "[[[[...]]]]"
