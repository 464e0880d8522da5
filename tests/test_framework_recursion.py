"""rlm_query from a framework's code starts a child run one level deeper, as in a native run: the same
framework drives the child, the budget is shared and max_depth holds; depth 2 (a grandchild) in both kinds."""

from __future__ import annotations

from rlm_host.models.scripted import ScriptedConnector
from rlm_host.plugins.host import PluginHost
from rlm_host.testing.engine import isolated_runner, trajectory

OUTER = "x = rlm_query('inner task')\nprint('outer got', x)"
INNER = "y = rlm_query('deepest task')\nprint('inner got', y)"


def _runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    host = PluginHost(environ={"RLM_PLUGINS": "", "RLM_PLUGIN_MODULES": "support.echo_framework"})
    return isolated_runner(tmp_path, sandbox="process", host=host)


def test_a_framework_run_recurses_to_a_grandchild_with_the_shared_budget(tmp_path, monkeypatch):
    runner = _runner(tmp_path, monkeypatch)
    # one scripted root model serves the run tree in call order: outer turn, child turn, grandchild answer,
    # child answer, outer answer
    root = ScriptedConnector.from_responses([OUTER, INNER, "ANSWER: 42", "ANSWER: inner says 42",
                                             "ANSWER: outer says inner says 42"], name="scripted:root")
    result = runner.run_task("q", context="c", framework="echo", connectors={"root": root}, max_depth=2)
    assert result.final_response == "outer says inner says 42"
    events = trajectory(result)
    starts = [e for e in events if e["type"] == "run_start"]
    assert [e["depth"] for e in starts] == [0, 1, 2] and {e["data"]["framework"] for e in starts} == {"echo"}
    finals = {e["depth"]: e["data"] for e in events if e["type"] == "final"}
    assert finals[2]["final_response"] == "42" and finals[1]["final_response"] == "inner says 42"
    sub_calls = [e for e in events if e["type"] == "sub_call" and e["data"]["kind"] == "rlm_query"]
    assert [e["depth"] for e in sub_calls] == [1, 0] and all(e["data"]["child_run_id"] for e in sub_calls)
    assert result.usage.sub.calls >= 3  # the children's calls count as the root run's sub usage


def test_at_max_depth_rlm_query_is_a_plain_llm_query_in_a_framework_run_too(tmp_path, monkeypatch):
    runner = _runner(tmp_path, monkeypatch)
    root = ScriptedConnector.from_responses([OUTER, "ANSWER: done"], name="scripted:root")
    sub = ScriptedConnector.from_responses([], rules=[{"match": "inner task", "text": "plain"}], name="scripted:sub")
    result = runner.run_task("q", context="c", framework="echo", connectors={"root": root, "sub": sub}, max_depth=0)
    assert result.final_response == "done"
    kinds = [e["data"]["kind"] for e in trajectory(result) if e["type"] == "sub_call"]
    assert kinds == ["rlm_query(max_depth: plain llm_query)"]


def test_a_native_run_recurses_to_a_grandchild(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, sandbox="process")
    replies = [f"```repl\n{OUTER}\n```", f"```repl\n{INNER}\n```", "FINAL(42)", "FINAL(inner says 42)",
               "FINAL(outer says inner says 42)"]
    root = ScriptedConnector.from_responses(replies, name="scripted:root")
    result = runner.run_task("q", context="c", connectors={"root": root}, max_depth=2)
    assert result.final_response == "outer says inner says 42"
    assert [e["depth"] for e in trajectory(result) if e["type"] == "run_start"] == [0, 1, 2]


def test_a_framework_run_out_of_steps_synthesises_an_answer_as_a_native_run_does(tmp_path, monkeypatch):
    """One purpose="synthesis" root call from the task and the steps the framework reported."""
    runner = _runner(tmp_path, monkeypatch)
    replies = ["print('counting')", "print('still counting')", "seven, probably"]
    root = ScriptedConnector.from_responses(replies, name="scripted:root")
    result = runner.run_task("How many?", context="c", framework="echo", connectors={"root": root}, max_steps=2)
    assert (result.completed, result.termination_reason, result.steps) == (False, "max_steps", 2)
    assert result.final_response == "seven, probably"
    synthesis = root.calls[-1]
    assert "Task: How many?" in synthesis[-1]["content"] and "still counting" in synthesis[-1]["content"]
    purposes = [e["data"]["purpose"] for e in trajectory(result) if e["type"] == "model_call_start"]
    assert purposes == ["turn", "turn", "synthesis"]
