"""``rlm run … --framework google-adk``, end to end: a real ADK LlmAgent and InMemoryRunner over the ``scripted``
provider, code in the run's sandbox (``process``, and Monty), steps recorded as events arrive, usage of both roles
counted."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

pytest.importorskip("google.adk")

from rlm_host import ConfigError  # noqa: E402
from rlm_host.sdk.embedding import load_settings  # noqa: E402
from rlm_host.testing import (  # noqa: E402
    ANSWER, FINAL, FrameworkContract, MODEL_TEXT, RETRY, TOOL_CALL, TOOL_RESULT, ToolAgentScenarios,
    UserToolScenarios, actions, call, final, isolated_runner, run_framework, run_scripted, write_station_log,
)

PLUGIN = "rlm-adapter-adk"


class TestAdkFramework(FrameworkContract):
    framework = "google-adk"
    distribution = PLUGIN
    heavy_modules = ("google.adk", "google.adk.runners", "google.genai", "rlm_adapter_adk.framework",
                     "rlm_adapter_adk.model")
    finishing_replies = (call("run_code", code="x = llm_query('What is the code word? ' + context)\n"
                                               "print(context.splitlines()[2], x)"), final("PAPAYA"))
    final_answer = "PAPAYA"
    sub_rules = ({"match": "code word", "text": "PAPAYA"},)
    working_reply = call("run_code", code="print(len(context))")


class TestAdkScenarios(ToolAgentScenarios):
    """The runs every tool-calling agent framework must get right (rlm_host.testing.ToolAgentScenarios)."""

    framework = "google-adk"
    distribution = PLUGIN
    other_sandboxes = (("monty", "rlm-sandbox-monty"),)
    quiet_loggers = ("google_adk",)  # ADK logs the exception that ended a run with a traceback


class TestAdkUserTools(UserToolScenarios):
    """The user's functions as ADK FunctionTools, the answer held to the run's output type."""

    framework = "google-adk"
    distribution = PLUGIN
    rejected_actions = ("final_rejected",)


run = partial(run_framework, framework="google-adk", plugins=PLUGIN)


@pytest.fixture
def log_file(rlm_isolated) -> Path:
    return write_station_log(rlm_isolated.work)


def test_rejected_calls_and_malformed_replies_become_retry_steps_and_the_run_goes_on(rlm_cli, rlm_script, log_file,
                                                                                     caplog):
    model = rlm_script([
        call("search", pattern="FAILED"),  # no such tool: ADK answers with an error the model sees
        call("run_code"),  # no code: ADK reports the missing argument
        '{"thought": "the answer must be in the log"}',  # JSON, but no action: sent back by the framework
        {"text": None},  # an empty reply: sent back too
        "Looking at the log.\n" + call("run_code", code="print(context.splitlines()[2])"),
        "```json\n" + final(ANSWER) + "\n```",
    ])
    result, outcome, steps, _ = run(rlm_cli, model, log_file, "--max-steps", "20")
    assert result.code == 0 and outcome["final_response"] == ANSWER, result.err
    assert actions(steps) == [
        ("tool_call", TOOL_CALL), ("retry", RETRY),  # unknown tool
        ("tool_call", TOOL_CALL), ("retry", RETRY),  # missing argument
        ("model_text", MODEL_TEXT), ("retry", RETRY),  # the malformed reply, sent back
        ("model_text", MODEL_TEXT), ("retry", RETRY),  # the empty reply, sent back
        ("model_text", MODEL_TEXT), ("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT),
        ("final", FINAL),
    ]
    assert not [r for r in caplog.records if r.name.startswith("google_adk") and r.levelno >= 30], caplog.text
    retries = [step["observation"] for step in steps if step["action"] == "retry"]
    assert [r["cause"] for r in retries] == ["rejected_call", "rejected_call", "invalid_reply", "invalid_reply"]
    assert retries[0]["tool"] == "search" and "no tool with that name" in retries[0]["feedback"]
    assert "code" in retries[1]["feedback"] and "not understood" in retries[2]["feedback"]
    assert steps[4]["reply"] == '{"thought": "the answer must be in the log"}'
    assert steps[8]["observation"] == {"text": "Looking at the log."} and steps[8]["reply"].startswith("Looking")
    assert steps[9]["reply"] is None and steps[9]["code"] == "print(context.splitlines()[2])"


def test_the_model_sees_the_history_in_the_protocols_form(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")
    replies = [call("search", q="x"), call("run_code", code="print(len(context))"), final("3")]
    result, _, root = run_scripted(runner, "How long is the context?", replies, context="abc",
                                   framework="google-adk")
    assert result.final_response == "3", result.error
    system, *turns = root.calls[-1]
    assert system["role"] == "system" and "loaded in a persistent Python REPL" in system["content"]
    assert "## run_code(code: string)" in system["content"] and "## llm_query(prompt: string)" in system["content"]
    assert [m["role"] for m in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert turns[0]["content"] == "How long is the context?"
    assert turns[1]["content"] == call("search", q="x")
    assert turns[2]["content"].startswith("Your call of search was rejected (fix it and call again):")
    assert turns[3]["content"] == call("run_code", code="print(len(context))")
    assert turns[4]["content"] == "Result of run_code:\n3"


def test_malformed_replies_beyond_output_retries_end_the_run_with_an_error(rlm_cli, rlm_script, log_file,
                                                                           rlm_isolated):
    (rlm_isolated.work / "rlm.toml").write_text("[framework.google-adk]\noutput_retries = 0\n")
    model = rlm_script(['{"thought": "hmm"}', final("never")])
    result, outcome, steps, _ = run(rlm_cli, model, log_file, framework="google_adk")  # either spelling works
    assert outcome["framework"] == "google-adk" and outcome["termination_reason"] == "error"
    assert "google-adk stopped the run" in outcome["error"] and result.code != 0
    assert [step["action"] for step in steps] == ["model_text"]


def test_the_settings_section_is_validated(rlm_isolated, rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN)
    (rlm_isolated.work / "rlm.toml").write_text("[framework.google-adk]\noutput_retries = 5\nmax_output_chars = 500\n"
                                                "instructions = 'Answer in {braces}.'\n")
    loaded = load_settings(environ={"HOME": str(rlm_isolated.home)}, cwd=rlm_isolated.work, host=host, trust=True)
    settings = loaded.component("framework", "google-adk")
    assert (settings.output_retries, settings.max_output_chars, settings.preview_chars) == (5, 500, 200)
    (rlm_isolated.work / "rlm.toml").write_text("[framework.google-adk]\nretrys = 5\n")
    with pytest.raises(ConfigError, match="retrys"):
        load_settings(environ={"HOME": str(rlm_isolated.home)}, cwd=rlm_isolated.work, host=host, trust=True)


def test_instructions_with_braces_reach_the_model_verbatim(rlm_cli, rlm_script, log_file, rlm_isolated):
    # ADK fills {placeholders} of a string instruction from the session state: the framework's is a callable
    (rlm_isolated.work / "rlm.toml").write_text("[framework.google-adk]\ninstructions = 'Answer as {\"a\": 1}.'\n")
    model = rlm_script([final("ok")])
    result, outcome, _, _ = run(rlm_cli, model, log_file)
    assert result.code == 0 and outcome["final_response"] == "ok", result.err


def test_readiness_reports_a_missing_google_adk(rlm_plugin_host, monkeypatch):
    spec = rlm_plugin_host(PLUGIN).frameworks().get("google-adk")
    assert spec.mode == "agent" and spec.requires == ("google.adk",) and spec.readiness().ok
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "google.adk" else real(name, *a))
    ready = spec.readiness()
    assert not ready.ok and "google.adk" in ready.detail and "pip install rlm-adapter-adk" in ready.hint


def test_a_run_started_from_async_code_gets_its_own_loop(tmp_path, monkeypatch):
    import asyncio

    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")

    async def from_a_notebook():  # an event loop is running here: ADK must not nest in it
        return run_scripted(runner, "What is the code word?", [call("run_code", code="print(context)"),
                                                                final("PAPAYA")],
                            context="the code word is PAPAYA", framework="google-adk")

    result, _, _ = asyncio.run(from_a_notebook())
    assert result.completed and result.final_response == "PAPAYA", result.error


def test_bench_compares_native_and_google_adk_on_one_preset(rlm_cli, rlm_script, rlm_isolated):
    pytest.importorskip("rlm_bench")
    pack = rlm_isolated.work / "pack.yaml"
    pack.write_text("presets:\n  words:\n    cases:\n      - case_id: code_word\n        task: What is the code word?\n"
                    "        context: {inline: 'the code word is PAPAYA'}\n        expected: PAPAYA\n")
    # the agent's last user message is the bare task; the native loop's first prompt says more
    model = rlm_script([], rules=[{"match": r"^What is the code word\?$", "text": final("PAPAYA")},
                                  {"match": ".", "text": "FINAL(PAPAYA)"}])
    result = rlm_cli("bench", "run", "--pack", str(pack), "--framework", "native,google-adk", "--model", model,
                     "--sandbox", "process", "--json", "--quiet", plugins=f"rlm-bench,{PLUGIN}")
    assert result.code == 0, result.err
    rows = json.loads(result.out)["frameworks"]
    assert [(r["framework"], r["accuracy"]) for r in rows] == [("native", 1.0), ("google-adk", 1.0)]
