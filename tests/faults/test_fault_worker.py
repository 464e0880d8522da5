"""A sandbox worker lost between steps or during one (killed, its container removed) is replaced and rebuilt:
pure_rlm's earlier successful cells run again in the new worker, sub-model calls answered from the record, and
the step says what was rebuilt. The same in the process, Monty and Docker runtimes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_host.models.protocol import Completion
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.sandbox.session_base import SessionBase
from rlm_host.testing.engine import isolated_runner
from support.workers import PLUGINS, RUNTIMES, engine, kill_worker  # noqa: F401 (engine: a fixture)

FIRST = "words = context.split()\nn = len(words)\nanswer = llm_query('summarise')\nprint(n)"
SECOND = "print(n, answer, len(words))"


class _Sub:
    """The sub-model: counts its calls; ``during`` kills the worker while a step waits for it."""

    name, context_window = "test:sub", None

    def __init__(self) -> None:
        self.calls, self.session, self.kill_on = 0, None, None

    def complete(self, messages, **_):
        self.calls += 1
        if self.kill_on is not None and self.kill_on in messages[-1]["content"]:
            kill_worker(self.session)
        return Completion(text="sub says hi", model=self.name, input_tokens=1, output_tokens=1)


def _run(tmp_path, sandbox, replies, sub, monkeypatch, kill_before=None):
    """Run the replies; ``kill_before``: kill the worker just before the step whose code starts so."""
    real = SessionBase.execute

    def execute(self, code, **kwargs):
        sub.session = self
        if kill_before is not None and code.startswith(kill_before):
            kill_worker(self)
        return real(self, code, **kwargs)

    monkeypatch.setattr(SessionBase, "execute", execute)
    runner = isolated_runner(tmp_path, sandbox=sandbox, plugins=PLUGINS[sandbox])
    root = ScriptedConnector.from_responses([f"```repl\n{r}\n```" if not r.startswith("FINAL") else r for r in replies])
    result = runner.run_task("q", context="a b c d", connectors={"root": root, "sub": sub})
    events = [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()]
    return result, [e["data"]["observation"]["blocks"][0] for e in events if e["type"] == "step" and
                    e["data"]["observation"].get("blocks")]


@pytest.mark.parametrize("engine", RUNTIMES, indirect=True)
def test_a_worker_killed_between_steps_is_rebuilt_and_the_step_runs(tmp_path, monkeypatch, engine):
    monkeypatch.chdir(tmp_path)
    sub = _Sub()
    result, blocks = _run(tmp_path, engine, [FIRST, SECOND, "FINAL_VAR('n')"], sub, monkeypatch, kill_before=SECOND)
    assert result.final_response == "4", result.error
    assert blocks[1]["stdout"] == "4 sub says hi 4\n", blocks[1]
    assert "had exited since the previous step" in blocks[1]["stderr"]
    assert "rebuilt by running the 2 earlier successful cell(s) again" in blocks[1]["stderr"]
    assert sub.calls == 1, "the rebuild answered llm_query from the record"


@pytest.mark.parametrize("engine", RUNTIMES, indirect=True)
def test_a_worker_killed_during_a_step_fails_that_step_only(tmp_path, monkeypatch, engine):
    monkeypatch.chdir(tmp_path)
    sub = _Sub()
    sub.kill_on = "now"
    during = "extra = llm_query('now')\nprint(extra)"
    result, blocks = _run(tmp_path, engine, [FIRST, during, SECOND, "FINAL_VAR('n')"], sub, monkeypatch)
    assert result.final_response == "4", result.error
    assert "SandboxCrash" in (blocks[1].get("error") or ""), blocks[1]
    assert "rebuilt by running the 2 earlier successful cell(s) again" in blocks[1]["error"]
    assert blocks[2]["stdout"] == "4 sub says hi 4\n", "the variables of the cells before the crash are back"


def test_a_cell_that_fails_on_replay_is_named(tmp_path, monkeypatch):
    """A cell that succeeded once but fails when run again (here: it made a folder in the session's working
    directory, which outlives the worker) ends the rebuild there; the step says how far it got."""
    monkeypatch.chdir(tmp_path)
    sub = _Sub()
    cells = ["a = 1", "import os\nos.mkdir('made')\nb = a + 1", "print(b)"]
    result, blocks = _run(tmp_path, "process", [*cells, "FINAL(done)"], sub, monkeypatch, kill_before="print(b)")
    assert result.final_response == "done"
    assert "2 of the 3 earlier cells were run again" in blocks[2]["stderr"], blocks[2]
    assert "cell 3 failed this time (FileExistsError" in blocks[2]["stderr"]
    assert "NameError" in blocks[2]["error"], "b came from the failed cell: lost, and the step says so"


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["docker"], indirect=True)
def test_an_engine_unreachable_mid_run_ends_the_run_with_its_record(tmp_path, monkeypatch, engine):
    """The container is gone and the engine no longer answers (a restart, a crash): the step cannot get a new
    container, so the run ends as an error naming the engine, its trajectory closed and listed."""
    import requests
    from docker.models.containers import ContainerCollection

    from rlm_host.trajectory import RunStore

    monkeypatch.chdir(tmp_path)
    real = SessionBase.execute
    dead = f"unix://{tmp_path}/dead.sock"

    def execute(self, code, **kwargs):
        if code.startswith(SECOND):
            kill_worker(self)
            monkeypatch.setenv("DOCKER_HOST", dead)  # where a reconnect looks: nobody answers there
            refused = requests.exceptions.ConnectionError("Connection refused")
            monkeypatch.setattr(ContainerCollection, "create", lambda *_, **__: (_ for _ in ()).throw(refused))
        return real(self, code, **kwargs)

    monkeypatch.setattr(SessionBase, "execute", execute)
    runner = isolated_runner(tmp_path, sandbox="docker", plugins=PLUGINS["docker"])
    root = ScriptedConnector.from_responses([f"```repl\n{FIRST}\n```", f"```repl\n{SECOND}\n```", "FINAL(1)"])
    result = runner.run_task("q", context="a b c d", connectors={"root": root, "sub": _Sub()})
    assert result.termination_reason == "error" and result.steps == 1
    assert "Docker engine" in result.error, result.error
    (summary,) = RunStore(runner.home).list_runs()
    assert summary.termination_reason == "error" and summary.steps == 1
