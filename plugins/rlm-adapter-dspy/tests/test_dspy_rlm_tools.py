"""The user's own functions and the run's answer type in dspy.RLM (issue 46): ``tools=[fn]`` / ``--tool`` are
dspy.RLM's ``tools=`` (listed in its prompt, called from the code through the run's host-side tool path: a
``tool_call`` sub-call, an exception the code sees), and ``output_type`` holds SUBMIT's answer to the type."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from rlm_host import ConfigError
from rlm_host.testing import isolated_runner, run_scripted, trajectory

from dspy_rlm_replies import CONTEXT, SUB_RULES, TASK, reply

PLUGIN = "rlm-adapter-dspy"
CALLED: list[tuple[str, int]] = []


def reading(sensor: str, day: int = 117) -> str:
    """Read a sensor's last reading on a day from the station database."""
    CALLED.append((sensor, day))
    return {"B": "42.7"}.get(sensor, "no reading")


def recalibrate(sensor: str) -> dict:
    """Recalibrate a sensor."""
    raise RuntimeError(f"sensor {sensor} is offline")


class SensorReading(BaseModel):
    sensor: str
    reading: float


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")


def go(runner, replies, **options):
    result, events, root = run_scripted(runner, TASK, replies, sub_rules=SUB_RULES, context=CONTEXT,
                                        framework="dspy-rlm", **options)
    prompts = ["\n".join(message["content"] for message in call) for call in root.calls]
    return result, [event.data for event in events if event.type == "step"], prompts


def test_the_users_tools_are_dspy_rlms_tools(runner):
    CALLED.clear()
    look = reply("print('B reads', reading('B'))\ntry:\n    recalibrate('B')\nexcept Exception as exc:\n"
                 "    print('caught:', exc)")
    result, steps, prompts = go(runner, [look, reply("recalibrate(sensor='A')"), reply("SUBMIT(reading('A', 118))")],
                                tools=[reading, recalibrate])
    assert result.completed and result.final_response == "no reading", result.error
    assert CALLED == [("B", 117), ("A", 118)]  # the model's arguments
    assert "Additional tools available" in prompts[0]  # dspy's own list of the tools, with their docstrings
    assert "`reading(sensor: string, day: integer)` - Read a sensor's last reading" in prompts[0]
    assert "B reads 42.7" in prompts[1]  # the result reached the model
    assert "caught: sensor B is offline" in prompts[1]  # the exception, caught by the code
    assert "[Error]" in prompts[2] and "sensor A is offline" in prompts[2]  # uncaught: the step's error; run goes on
    assert [s["action"] for s in steps] == ["run_code", "run_code", "final"]
    calls = [e["data"] for e in trajectory(result) if e["type"] == "sub_call" and e["data"]["kind"] == "tool_call"]
    assert [(c["tool"], c.get("result"), c.get("error")) for c in calls] == [
        ("reading", '"42.7"', None), ("recalibrate", None, "RuntimeError: sensor B is offline"),
        ("recalibrate", None, "RuntimeError: sensor A is offline"), ("reading", '"no reading"', None)]
    assert json.loads(calls[0]["arguments"]) == {"sensor": "B", "day": 117}


def test_a_tool_may_not_take_a_name_dspy_keeps(runner):
    with pytest.raises(ConfigError, match="'query'"):
        go(runner, [reply("SUBMIT('x')")], tools={"query": reading})


@pytest.mark.parametrize("given", ["model", "schema"])
def test_submit_is_held_to_the_output_type(runner, given):
    output_type = SensorReading if given == "model" else SensorReading.model_json_schema()
    replies = [reply("SUBMIT('sensor B, 42.7')"), reply("SUBMIT(answer={'sensor': 'B'})"),
               reply("SUBMIT(answer={'sensor': 'B', 'reading': 42.7})")]
    result, steps, prompts = go(runner, replies, output_type=output_type)
    assert result.completed and result.termination_reason == "final", result.error
    expected = {"sensor": "B", "reading": 42.7}
    assert json.loads(result.final_response) == expected
    assert result.output == (SensorReading(**expected) if given == "model" else expected)
    assert '"reading"' in prompts[0] and "SUBMIT(answer=value)" in prompts[0]  # the schema, in the instructions
    assert "does not match the required type" in prompts[1]
    assert "reading" in prompts[2].rpartition("does not match the required type")[2]  # the missing field, named
    assert [s["action"] for s in steps] == ["final_rejected", "final_rejected", "final"]
    assert steps[1]["observation"]["final_rejected"]
