"""``rlm run … --framework google-adk``, end to end: a real ADK LlmAgent and InMemoryRunner over the ``scripted``
provider, code in the run's sandbox (``process``, and Monty), steps recorded as events arrive, usage of both roles
counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("google.adk")

from rlm_host import ConfigError, load_settings  # noqa: E402
from rlm_host.testing import (  # noqa: E402
    HAYSTACK_NEEDLE, FrameworkContract, haystack, isolated_runner, run_scripted,
)  # fmt: skip

PLUGIN = "rlm-adapter-adk"
LOG = "Station log\nday 116: sensor A ok\nday 117: sensor B FAILED, last reading 42.7\nday 118: sensor A ok\n"
#: the sub-model's answer to llm_query, for prompts starting so (never a root prompt: those start otherwise)
SUB_RULES = [{"match": "^Extract the sensor", "text": "sensor B, 42.7"}]
FIRST_LOOK = ("lines = context.splitlines()\nprint(len(lines))\nhit = [l for l in lines if 'FAILED' in l][0]\n"
              "print(llm_query('Extract the sensor and reading: ' + hit))")  # fmt: skip
ANSWER = "Sensor B failed on day 117; its last reading was 42.7."
# the seeds' rewards ([rewards] defaults)
TOOL_CALL, TOOL_RESULT, TOOL_ERROR, RETRY, MODEL_TEXT, FINAL = 0.02, 0.06, -0.05, -0.05, 0.05, 1.0


def call(tool: str, **args: object) -> str:
    return json.dumps({"tool": tool, "args": args})


def final(answer: str) -> str:
    return json.dumps({"final": answer})


class TestAdkAdapter(FrameworkContract):
    framework = "google-adk"
    distribution = PLUGIN
    heavy_modules = ("google.adk", "google.adk.runners", "google.genai", "rlm_adapter_adk.adapter",
                     "rlm_adapter_adk.model")  # fmt: skip
    finishing_replies = (call("run_code", code="x = llm_query('What is the code word? ' + context)\n"
                                               "print(context.splitlines()[2], x)"), final("PAPAYA"))  # fmt: skip
    final_answer = "PAPAYA"
    sub_rules = ({"match": "code word", "text": "PAPAYA"},)
    working_reply = call("run_code", code="print(len(context))")


@pytest.fixture
def log_file(rlm_isolated) -> Path:
    path = rlm_isolated.work / "station_log.txt"
    path.write_text(LOG)
    return path


def run(rlm_cli, model: str, context: Path, *extra: str, plugins: str = PLUGIN, sandbox: str = "process",
        framework: str = "google-adk"):  # fmt: skip
    result = rlm_cli("run", "Which sensor failed on day 117, and what did it read?", "--framework", framework,
                     "--context", str(context), "--model", model, "--sandbox", sandbox, "--json", *extra,
                     plugins=plugins)  # fmt: skip
    assert result.out.strip(), result.err
    outcome = json.loads(result.out)
    events = [json.loads(line) for line in (context.parent / outcome["trajectory_path"]).read_text().splitlines()]
    steps = [event["data"] for event in events if event["type"] == "step"]
    return result, outcome, steps, events


def actions(steps: list[dict]) -> list[tuple[str, float]]:
    return [(step["action"], step["reward"]) for step in steps]


def assert_two_looks_then_the_answer(outcome, steps, events, sandbox: str) -> None:
    assert outcome["framework"] == "google-adk" and outcome["sandbox"] == sandbox
    assert outcome["completed"] and outcome["termination_reason"] == "final" and outcome["error"] is None
    assert outcome["final_response"] == ANSWER
    assert actions(steps) == [("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT), ("tool_call", TOOL_CALL),
                              ("tool_result", TOOL_RESULT), ("final", FINAL)]  # fmt: skip
    assert outcome["steps"] == 5 and outcome["total_reward"] == pytest.approx(2 * TOOL_CALL + 2 * TOOL_RESULT + FINAL)
    first_call, first_result, second_call, second_result, answer = steps
    assert first_call["code"] == FIRST_LOOK
    assert first_call["observation"] == {"tool": "run_code", "args": {"code": FIRST_LOOK}}
    assert first_call["reply"] == call("run_code", code=FIRST_LOOK)  # the model's exact text
    assert first_result["observation"]["ok"] and first_result["observation"]["output"] == "4\nsensor B, 42.7"
    assert second_result["observation"]["output"] == "day 117: sensor B FAILED, last reading 42.7"
    assert answer["observation"] == {"answer": ANSWER} and answer["reply"] == final(ANSWER)
    # root tokens: three model calls; sub tokens: the llm_query inside the first code, in that code's step
    usage = outcome["usage"]
    assert usage["root"]["calls"] == 3 and usage["root"]["input_tokens"] > 0 and usage["root"]["output_tokens"] > 0
    assert usage["sub"]["calls"] == 1 and usage["sub"]["input_tokens"] > 0
    assert first_result["usage"]["sub"]["calls"] == 1 and first_call["usage"]["root"]["calls"] == 1
    assert sum(step["usage"]["root"]["input_tokens"] for step in steps) == usage["root"]["input_tokens"]
    sub_calls = [event["data"] for event in events if event["type"] == "sub_call"]
    assert [(s["kind"], s["response"]) for s in sub_calls] == [("llm_query", "sensor B, 42.7")]
    assert events[-1]["type"] == "final"


def test_a_run_through_adk_in_the_process_sandbox(rlm_cli, rlm_script, log_file):
    model = rlm_script([call("run_code", code=FIRST_LOOK), call("run_code", code="print(hit)"), final(ANSWER)],
                       rules=SUB_RULES)  # fmt: skip
    result, outcome, steps, events = run(rlm_cli, model, log_file)
    assert result.code == 0, result.err
    assert_two_looks_then_the_answer(outcome, steps, events, "process")
    assert "Warning" not in result.err and "deprecated" not in result.err.lower(), result.err


def test_the_same_run_in_monty(rlm_cli, rlm_script, log_file):
    pytest.importorskip("pydantic_monty")
    model = rlm_script([call("run_code", code=FIRST_LOOK), call("run_code", code="print(hit)"), final(ANSWER)],
                       rules=SUB_RULES)  # fmt: skip
    result, outcome, steps, events = run(rlm_cli, model, log_file, plugins=f"{PLUGIN},rlm-sandbox-monty",
                                         sandbox="monty")  # fmt: skip
    assert result.code == 0, result.err
    assert_two_looks_then_the_answer(outcome, steps, events, "monty")


def test_rejected_calls_and_malformed_replies_become_retry_steps_and_the_run_goes_on(rlm_cli, rlm_script, log_file,
                                                                                     caplog):  # fmt: skip
    model = rlm_script([
        call("search", pattern="FAILED"),  # no such tool: ADK answers with an error the model sees
        call("run_code"),  # no code: ADK reports the missing argument
        '{"thought": "the answer must be in the log"}',  # JSON, but no action: sent back by the adapter
        {"text": None},  # an empty reply: sent back too
        "Looking at the log.\n" + call("run_code", code="print(context.splitlines()[2])"),
        "```json\n" + final(ANSWER) + "\n```",
    ])  # fmt: skip
    result, outcome, steps, _ = run(rlm_cli, model, log_file, "--max-steps", "20")
    assert result.code == 0 and outcome["final_response"] == ANSWER, result.err
    assert actions(steps) == [
        ("tool_call", TOOL_CALL), ("retry", RETRY),  # unknown tool
        ("tool_call", TOOL_CALL), ("retry", RETRY),  # missing argument
        ("model_text", MODEL_TEXT), ("retry", RETRY),  # the malformed reply, sent back
        ("model_text", MODEL_TEXT), ("retry", RETRY),  # the empty reply, sent back
        ("model_text", MODEL_TEXT), ("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT),
        ("final", FINAL),
    ]  # fmt: skip
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
                                   framework="google-adk")  # fmt: skip
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


def test_max_steps_stops_the_run_cleanly_with_its_trajectory(rlm_cli, rlm_script, log_file, caplog):
    model = rlm_script([call("run_code", code="print(len(context))")] * 6)
    result, outcome, steps, events = run(rlm_cli, model, log_file, "--max-steps", "2")
    # ADK logs the exception that ended its run with a traceback: not for the one a run ends with on purpose
    assert not [r for r in caplog.records if r.name.startswith("google_adk") and r.levelno >= 30], caplog.text
    assert outcome["termination_reason"] == "max_steps" and not outcome["completed"] and outcome["error"] is None
    assert actions(steps) == [("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT)] * 2
    assert outcome["usage"]["root"]["calls"] == 2  # max_steps counts root turns: the third is refused
    assert events[0]["type"] == "run_start" and events[-1]["type"] == "final"
    assert result.code != 0 or outcome["final_response"] is None


def test_final_called_in_run_code_ends_the_run(rlm_cli, rlm_script, log_file):
    code = "hit = [l for l in context.splitlines() if 'FAILED' in l][0]\nFINAL('Sensor B: ' + hit.split()[-1])"
    model = rlm_script([call("run_code", code=code)])  # one reply: no further model call is made
    result, outcome, steps, _ = run(rlm_cli, model, log_file)
    assert result.code == 0 and outcome["final_response"] == "Sensor B: 42.7", result.err
    assert actions(steps) == [("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT), ("final", FINAL)]
    assert steps[1]["observation"]["final"] == "Sensor B: 42.7" and outcome["usage"]["root"]["calls"] == 1


def test_an_answer_given_in_the_last_allowed_turn_stands(rlm_cli, rlm_script, log_file):
    model = rlm_script([call("run_code", code="print(1)"), call("run_code", code="FINAL('B')")])
    result, outcome, steps, _ = run(rlm_cli, model, log_file, "--max-steps", "2")
    assert result.code == 0 and outcome["completed"] and outcome["final_response"] == "B", result.err
    assert outcome["termination_reason"] == "final" and outcome["usage"]["root"]["calls"] == 2
    assert steps[-1]["action"] == "final" and steps[-2]["observation"]["final"] == "B"


def test_failing_code_is_a_tool_error_the_model_sees(rlm_cli, rlm_script, log_file):
    model = rlm_script([call("run_code", code="print(context[10**9])"), final("no idea")])
    result, outcome, steps, _ = run(rlm_cli, model, log_file)
    assert outcome["final_response"] == "no idea"
    assert actions(steps)[:2] == [("tool_call", TOOL_CALL), ("tool_error", TOOL_ERROR)]
    assert not steps[1]["observation"]["ok"] and "IndexError" in steps[1]["observation"]["output"]


def test_the_llm_query_tool_and_the_sub_call_budget(rlm_cli, rlm_script, log_file):
    model = rlm_script([call("llm_query", prompt="Extract the sensor: day 117 sensor B"),
                        call("llm_query", prompt="Extract the sensor again")], rules=SUB_RULES)  # fmt: skip
    _, outcome, steps, _ = run(rlm_cli, model, log_file, "--max-llm-calls", "1")
    assert actions(steps) == [("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT), ("tool_call", TOOL_CALL),
                              ("tool_error", TOOL_ERROR)]  # fmt: skip
    assert steps[1]["observation"]["output"] == "sensor B, 42.7"
    assert "max_llm_calls" in steps[3]["observation"]["output"]
    assert outcome["termination_reason"] == "max_llm_calls", "a refused sub-call ends the run, as in a native run"


def test_malformed_replies_beyond_output_retries_end_the_run_with_an_error(rlm_cli, rlm_script, log_file,
                                                                           rlm_isolated):  # fmt: skip
    (rlm_isolated.work / "rlm.toml").write_text("[framework.google-adk]\noutput_retries = 0\n")
    model = rlm_script(['{"thought": "hmm"}', final("never")])
    result, outcome, steps, _ = run(rlm_cli, model, log_file, framework="google_adk")  # either spelling works
    assert outcome["framework"] == "google-adk" and outcome["termination_reason"] == "error"
    assert "google-adk stopped the run" in outcome["error"] and result.code != 0
    assert [step["action"] for step in steps] == ["model_text"]


def test_the_settings_section_is_validated(rlm_isolated, rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN)
    (rlm_isolated.work / "rlm.toml").write_text("[framework.google-adk]\noutput_retries = 5\nmax_output_chars = 500\n"
                                                "instructions = 'Answer in {braces}.'\n")  # fmt: skip
    loaded = load_settings(environ={"HOME": str(rlm_isolated.home)}, cwd=rlm_isolated.work, host=host)
    settings = loaded.component("framework", "google-adk")
    assert (settings.output_retries, settings.max_output_chars, settings.preview_chars) == (5, 500, 200)
    (rlm_isolated.work / "rlm.toml").write_text("[framework.google-adk]\nretrys = 5\n")
    with pytest.raises(ConfigError, match="retrys"):
        load_settings(environ={"HOME": str(rlm_isolated.home)}, cwd=rlm_isolated.work, host=host)


def test_instructions_with_braces_reach_the_model_verbatim(rlm_cli, rlm_script, log_file, rlm_isolated):
    # ADK fills {placeholders} of a string instruction from the session state: the adapter's is a callable
    (rlm_isolated.work / "rlm.toml").write_text("[framework.google-adk]\ninstructions = 'Answer as {\"a\": 1}.'\n")
    model = rlm_script([final("ok")])
    result, outcome, _, _ = run(rlm_cli, model, log_file)
    assert result.code == 0 and outcome["final_response"] == "ok", result.err


@pytest.mark.parametrize("chars", [1_000, 2_000_000])
def test_the_context_stays_in_the_sandbox_not_the_prompt(tmp_path, monkeypatch, chars):
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")
    find = call("run_code", code="i = context.find('magic number')\nprint(llm_query('Extract the number: ' + "
                                 "context[i:i+40]))")  # fmt: skip
    result, _, root = run_scripted(runner, "What is the magic number?", [find, final("4217")],
                                   sub_rules=[{"match": "Extract", "text": "4217"}], context=haystack(chars),
                                   framework="google-adk")  # fmt: skip
    assert result.final_response == "4217" and result.usage.sub.calls == 1, result.error
    prompts = ["".join(m["content"] for m in sent) for sent in root.calls]
    assert all(HAYSTACK_NEEDLE not in prompt for prompt in prompts)
    assert f"a string of {len(haystack(chars)):,} characters" in prompts[0] and len(prompts[0]) < 5_000


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
                            context="the code word is PAPAYA", framework="google-adk")  # fmt: skip

    result, _, _ = asyncio.run(from_a_notebook())
    assert result.completed and result.final_response == "PAPAYA", result.error


def test_bench_compares_native_and_google_adk_on_one_preset(rlm_cli, rlm_script, rlm_isolated):
    pytest.importorskip("rlm_bench")
    pack = rlm_isolated.work / "pack.yaml"
    pack.write_text("presets:\n  words:\n    cases:\n      - case_id: code_word\n        task: What is the code word?\n"
                    "        context: {inline: 'the code word is PAPAYA'}\n        expected: PAPAYA\n")  # fmt: skip
    # the agent's last user message is the bare task; the native loop's first prompt says more
    model = rlm_script([], rules=[{"match": r"^What is the code word\?$", "text": final("PAPAYA")},
                                  {"match": ".", "text": "FINAL(PAPAYA)"}])  # fmt: skip
    result = rlm_cli("bench", "run", "--pack", str(pack), "--framework", "native,google-adk", "--model", model,
                     "--sandbox", "process", "--json", "--quiet", plugins=f"rlm-bench,{PLUGIN}")  # fmt: skip
    assert result.code == 0, result.err
    rows = json.loads(result.out)["frameworks"]
    assert [(r["framework"], r["accuracy"]) for r in rows] == [("native", 1.0), ("google-adk", 1.0)]
