"""``rlm run … --framework pydantic-ai``, end to end: the real pydantic-ai agent over the ``scripted`` provider,
code in the run's sandbox (``process``, and Monty), steps recorded as they happen, usage of both roles counted."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from rlm_host import ConfigError  # noqa: E402
from rlm_host.sdk.embedding import load_settings  # noqa: E402
from rlm_host.testing import (  # noqa: E402
    ANSWER, FINAL, FrameworkContract, MODEL_TEXT, RETRY, TOOL_CALL, TOOL_RESULT, ToolAgentScenarios,
    UserToolScenarios, actions, call, final, run_framework, write_station_log,
)

PLUGIN = "rlm-adapter-pydantic-ai"


class TestPydanticAIFramework(FrameworkContract):
    framework = "pydantic-ai"
    distribution = PLUGIN
    heavy_modules = ("pydantic_ai", "rlm_adapter_pydantic_ai.framework")
    finishing_replies = (call("run_code", code="x = llm_query('What is the code word? ' + context)\n"
                                               "print(context.splitlines()[2], x)"), final("PAPAYA"))
    final_answer = "PAPAYA"
    sub_rules = ({"match": "code word", "text": "PAPAYA"},)
    working_reply = call("run_code", code="print(len(context))")


class TestPydanticAIScenarios(ToolAgentScenarios):
    """The runs every tool-calling agent framework must get right (rlm_host.testing.ToolAgentScenarios)."""

    framework = "pydantic-ai"
    distribution = PLUGIN
    other_sandboxes = (("monty", "rlm-sandbox-monty"),)
    max_first_prompt_chars = 5_000


class TestPydanticAIUserTools(UserToolScenarios):
    """The user's functions as pydantic-ai function tools, the run's output type as the agent's output_type."""

    framework = "pydantic-ai"
    distribution = PLUGIN


run = partial(run_framework, framework="pydantic-ai", plugins=PLUGIN)


@pytest.fixture
def log_file(rlm_isolated) -> Path:
    return write_station_log(rlm_isolated.work)


def test_rejected_replies_become_retry_steps_and_the_run_goes_on(rlm_cli, rlm_script, log_file):
    model = rlm_script([
        call("search", pattern="FAILED"),  # no such tool
        call("run_code"),  # no code
        '{"thought": "the answer must be in the log"}',  # JSON, but no action
        {"text": None},  # an empty reply
        "Looking at the log.\n" + call("run_code", code="print(context.splitlines()[2])"),
        "```json\n" + final(ANSWER) + "\n```",
    ])
    result, outcome, steps, _ = run(rlm_cli, model, log_file, "--max-steps", "20")  # each event is a step
    assert result.code == 0 and outcome["final_response"] == ANSWER, result.err
    assert actions(steps) == [
        ("tool_call", TOOL_CALL), ("retry", RETRY),  # unknown tool
        ("tool_call", TOOL_CALL), ("retry", RETRY),  # missing argument
        ("model_text", MODEL_TEXT), ("retry", RETRY),  # the malformed reply, sent back
        ("retry", RETRY),  # the empty reply
        ("model_text", MODEL_TEXT), ("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT),
        ("final", FINAL),
    ]
    retries = [step["observation"] for step in steps if step["action"] == "retry"]
    assert [r["cause"] for r in retries] == ["unknown_tool", "validation_error", "model_retry", "no_output"]
    assert retries[0]["tool"] == "search" and "Unknown tool name" in retries[0]["feedback"]
    assert "not understood" in retries[2]["feedback"]
    assert steps[4]["reply"] == '{"thought": "the answer must be in the log"}'
    assert steps[7]["observation"] == {"text": "Looking at the log."} and steps[7]["reply"].startswith("Looking")
    assert steps[8]["reply"] is None and steps[8]["code"] == "print(context.splitlines()[2])"


def test_pydantic_ai_giving_up_ends_the_run_with_an_error(rlm_cli, rlm_script, log_file, rlm_isolated):
    (rlm_isolated.work / "rlm.toml").write_text("[framework.pydantic-ai]\nretries = 0\n")
    model = rlm_script([call("search", pattern="x"), final("never")])
    result, outcome, steps, _ = run(rlm_cli, model, log_file, framework="pydantic_ai")  # either spelling works
    assert outcome["framework"] == "pydantic-ai" and outcome["termination_reason"] == "error"
    assert "pydantic-ai stopped the run" in outcome["error"] and result.code != 0
    assert [step["action"] for step in steps] == ["tool_call"]


def test_the_event_rewards_are_settings_of_the_framework(rlm_cli, rlm_script, log_file, rlm_isolated):
    """``[framework.pydantic-ai] reward_*`` (FrameworkRewards) weigh its events; ``[rewards]`` the final step."""
    (rlm_isolated.work / "rlm.toml").write_text("[framework.pydantic-ai]\nreward_tool_call = 0.3\n"
                                                "reward_tool_result = 0.4\n\n[rewards]\nfinal_reward = 0.9\n")
    model = rlm_script([call("run_code", code="print(context.splitlines()[2])"), final(ANSWER)])
    result, outcome, steps, _ = run(rlm_cli, model, log_file)
    assert result.code == 0 and outcome["final_response"] == ANSWER, result.err
    assert actions(steps) == [("tool_call", 0.3), ("tool_result", 0.4), ("final", 0.9)]


def test_the_settings_section_is_validated(rlm_isolated, rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN)
    (rlm_isolated.work / "rlm.toml").write_text("[framework.pydantic-ai]\nretries = 5\nmax_output_chars = 500\n")
    loaded = load_settings(environ={"HOME": str(rlm_isolated.home)}, cwd=rlm_isolated.work, host=host, trust=True)
    settings = loaded.component("framework", "pydantic-ai")
    assert (settings.retries, settings.max_output_chars, settings.output_retries) == (5, 500, None)
    (rlm_isolated.work / "rlm.toml").write_text("[framework.pydantic-ai]\nretrys = 5\n")
    with pytest.raises(ConfigError, match="retrys"):
        load_settings(environ={"HOME": str(rlm_isolated.home)}, cwd=rlm_isolated.work, host=host, trust=True)


def test_readiness_reports_a_missing_pydantic_ai(rlm_plugin_host, monkeypatch):
    spec = rlm_plugin_host(PLUGIN).frameworks().get("pydantic-ai")
    assert spec.mode == "agent" and spec.requires == ("pydantic_ai",) and spec.readiness().ok
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pydantic_ai" else real(name, *a))
    ready = spec.readiness()
    assert not ready.ok and "pydantic_ai" in ready.detail and "pip install rlm-adapter-pydantic-ai" in ready.hint


def test_bench_compares_native_and_pydantic_ai_on_one_preset(rlm_cli, rlm_script, rlm_isolated):
    pytest.importorskip("rlm_bench")
    pack = rlm_isolated.work / "pack.yaml"
    pack.write_text("presets:\n  words:\n    cases:\n      - case_id: code_word\n        task: What is the code word?\n"
                    "        context: {inline: 'the code word is PAPAYA'}\n        expected: PAPAYA\n")
    # the agent's last user message is the bare task; the native loop's first prompt says more
    model = rlm_script([], rules=[{"match": r"^What is the code word\?$", "text": final("PAPAYA")},
                                  {"match": ".", "text": "FINAL(PAPAYA)"}])
    result = rlm_cli("bench", "run", "--pack", str(pack), "--framework", "native,pydantic-ai", "--model", model,
                     "--sandbox", "process", "--json", "--quiet", plugins=f"rlm-bench,{PLUGIN}")
    assert result.code == 0, result.err
    rows = json.loads(result.out)["frameworks"]
    assert [(r["framework"], r["accuracy"]) for r in rows] == [("native", 1.0), ("pydantic-ai", 1.0)]


def test_rlm_run_with_a_tool_and_an_output_schema(rlm_cli, rlm_script, log_file, rlm_isolated, monkeypatch):
    """``rlm run --framework pydantic-ai --tool module:function --output-schema FILE``: the README's session. The
    live view shows the tool's calls and the rejected answer's problems; ``--json`` gives the typed output."""
    (rlm_isolated.work / "stationtools.py").write_text(
        'def spares(part: str) -> int:\n    """How many spares of a part the station holds."""\n'
        '    return {"T4": 0}[part]\n')
    monkeypatch.syspath_prepend(str(rlm_isolated.work))
    (rlm_isolated.work / "incident.json").write_text(json.dumps({
        "type": "object", "properties": {"sensor": {"type": "string"}, "spares_left": {"type": "integer"}},
        "required": ["sensor", "spares_left"]}))
    replies = [call("spares", part="thermistor T4"), call("spares", part="T4"), final({"sensor": "T4"}),
               final({"sensor": "T4", "spares_left": 0})]
    args = ("run", "Spares of the failed sensor?", "--framework", "pydantic-ai", "--context", str(log_file),
            "--sandbox", "process", "--tool", "stationtools:spares", "--output-schema", "incident.json")
    shown = rlm_cli(*args, "--model", rlm_script(replies), plugins=PLUGIN)
    assert shown.code == 0 and json.loads(shown.out) == {"sensor": "T4", "spares_left": 0}, shown.err
    assert "↳ tool_call spares" in shown.err and "error: KeyError: 'thermistor T4'" in shown.err
    assert "✗ not the required type: (the answer): 'spares_left' is a required property" in shown.err
    typed = rlm_cli(*args, "--model", rlm_script(replies), "--json", plugins=PLUGIN)
    outcome = json.loads(typed.out)
    assert outcome["output"] == {"sensor": "T4", "spares_left": 0} and outcome["termination_reason"] == "final"
