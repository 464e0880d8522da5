"""The ``generic`` environment keeps the environment protocol, rewards its steps with RLM Code's formula, delegates
to child runs behind the cycle guard, shows its code live, and asks connectors for its action schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rlm_host.sdk.environments import parse_action
from rlm_host.testing import (ENVIRONMENT_REPLY_FORMATS, EnvironmentContract, ScriptedConnector, isolated_runner,
                              run_scripted)
from rlm_env_generic.environment import ACTION_SCHEMA, REPLY_FORMAT, GenericEnvironment

PLUGIN = "rlm-env-generic"


class TestGeneric(EnvironmentContract):
    environment = "generic"
    distribution = PLUGIN
    final_reply = '{"action": "final", "final_response": "42"}'
    final_answer = "42"
    working_reply = '{"action": "run_python", "code": "x = len(context)\\nprint(x)"}'


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")


def test_rewards_and_final(runner):
    replies = [
        json.dumps({"action": "run_python", "code": "x = 6 * 7\nprint(x)"}),
        json.dumps({"action": "run_python", "code": "1/0"}),
        json.dumps({"action": "run_python", "code": "import sys\nsys.stderr.write('warn')\nprint(x)"}),
        "```json\n" + json.dumps({"action": "final", "final_response": "42", "done": True}) + "\n```",
    ]
    result, events, _ = run_scripted(runner, "compute", replies, environment="generic")
    rewards = [e.data["reward"] for e in events if e.type == "step"]
    assert rewards == pytest.approx([0.8, -0.2, 0.7, 1.0])
    assert result.final_response == "42" and result.environment == "generic"


def test_delegate_and_the_cycle_guard(runner):
    delegate_same = json.dumps({"action": "delegate", "task": "solve it"})
    final = json.dumps({"action": "final", "final_response": "done"})
    # root run: task "solve it" delegates "solve it" again → refused by the cycle guard
    result, events, _ = run_scripted(runner, "solve it", [delegate_same, final], environment="generic")
    step = [e for e in events if e.type == "step"][0].data
    assert step["observation"]["children"][0]["status"] == "blocked_by_cycle_guard"
    assert step["reward"] == pytest.approx(-0.25)
    assert result.final_response == "done"


def test_delegate_runs_a_child(runner):
    root = ScriptedConnector.from_responses(
        [json.dumps({"action": "delegate", "task": "child task"}),
         json.dumps({"action": "final", "final_response": "ok"})],
        rules=[{"match": "Task: child task",
                "text": json.dumps({"action": "final", "final_response": "child answer"})}],
    )
    events: list[Any] = []
    result = runner.run_task("parent", environment="generic", sandbox="process", connectors={"root": root},
                             on_event=events.append)
    step = [e for e in events if e.type == "step" and e.depth == 0][0].data
    assert step["observation"]["children"][0]["answer"] == "child answer"
    assert result.completed


def test_its_code_is_bracketed_by_live_events(runner):
    """Every environment that runs model code (generic, and rlm-env-dspy's run_python through it) shows it live."""
    action = '{"action": "run_python", "code": "print(6 * 7)"}'
    result, events, _ = run_scripted(runner, "q", [action, '{"action": "final", "final_response": "42"}'],
                                     environment="generic")
    assert result.final_response == "42"
    starts, ends = ([e.payload() for e in events if e.type == kind] for kind in ("code_start", "code_end"))
    assert [(s.step, s.code) for s in starts] == [(1, "print(6 * 7)")]
    assert [(e.call, e.ok, e.final) for e in ends] == [(starts[0].call, True, False)]


# ------------------------------------------------------------------------------ the reply format


def test_the_environment_offers_its_action_schema():
    assert GenericEnvironment.reply_format is REPLY_FORMAT and REPLY_FORMAT.json_schema is ACTION_SCHEMA
    assert REPLY_FORMAT.kinds == {"json_schema"}
    assert len({REPLY_FORMAT, REPLY_FORMAT}) == 1  # the schema (a dict) does not stop hashing
    assert ENVIRONMENT_REPLY_FORMATS["generic"][0] is REPLY_FORMAT  # what providers' tests enforce


def test_the_schema_is_what_parse_action_reads():
    reply = {"action": "run_python", "code": "print(1)", "rationale": None, "done": False, "final_response": None,
             "task": None, "tasks": None, "context": None}
    assert set(ACTION_SCHEMA["required"]) == set(reply) == set(ACTION_SCHEMA["properties"])
    assert parse_action(json.dumps(reply)) == reply
    assert set(ACTION_SCHEMA["properties"]["action"]["enum"]) == {"run_python", "final", "delegate", "delegate_batch"}
    acts_on = ENVIRONMENT_REPLY_FORMATS["generic"][1]
    assert acts_on(json.dumps(reply)) and not acts_on(json.dumps({**reply, "action": "explode"}))


class Recording:
    """A scripted model that enforces JSON schemas and records the reply format each call was given."""

    reply_formats, reply_format_by_default = frozenset({"json_schema"}), True

    def __init__(self, replies: list[str]) -> None:
        self.inner = ScriptedConnector.from_responses(replies, name="scripted:recording")
        self.name, self.context_window = self.inner.name, self.inner.context_window
        self.calls: list[tuple[Any, Any]] = []

    def complete(self, messages, **kwargs):
        self.calls.append((kwargs.get("purpose"), kwargs.get("reply_format")))
        return self.inner.complete(messages, **kwargs)


def test_the_run_asks_for_its_action_schema(runner):
    model = Recording([json.dumps({"action": "final", "final_response": "done", "done": True})])
    result = runner.run_task("q", context="some text", connectors={"root": model, "sub": model}, sandbox="process",
                             environment="generic")
    assert result.completed, result.error
    assert model.calls == [("turn", REPLY_FORMAT)]
