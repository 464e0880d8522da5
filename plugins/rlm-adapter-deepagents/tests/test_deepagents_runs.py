"""``rlm run … --framework deepagents``, end to end: the real deep agent (LangGraph) over the ``scripted``
provider, code in the run's sandbox (``process``, and Monty), steps recorded as they stream, usage of both roles
counted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("deepagents")

from rlm_host import ConfigError, load_settings  # noqa: E402
from rlm_host.testing import (  # noqa: E402
    HAYSTACK_NEEDLE, FrameworkContract, haystack, isolated_runner, run_scripted,
)  # fmt: skip

PLUGIN = "rlm-adapter-deepagents"
LOG = "Station log\nday 116: sensor A ok\nday 117: sensor B FAILED, last reading 42.7\nday 118: sensor A ok\n"
#: the sub-model's answer to llm_query, for prompts starting so (never a root prompt: those start otherwise)
SUB_RULES = [{"match": "^Extract the sensor", "text": "sensor B, 42.7"}]
FIRST_LOOK = ("lines = context.splitlines()\nprint(len(lines))\nhit = [l for l in lines if 'FAILED' in l][0]\n"
              "print(llm_query('Extract the sensor and reading: ' + hit))")  # fmt: skip
ANSWER = "Sensor B failed on day 117; its last reading was 42.7."
# the seeds' rewards ([rewards] defaults)
TOOL_CALL, PLANNING, TOOL_RESULT, TOOL_ERROR, MODEL_TEXT, FINAL = 0.02, 0.03, 0.06, -0.05, 0.05, 1.0


def call(tool: str, **args: object) -> str:
    return json.dumps({"tool": tool, "args": args})


def final(answer: str) -> str:
    return json.dumps({"final": answer})


class TestDeepAgentsAdapter(FrameworkContract):
    framework = "deepagents"
    distribution = PLUGIN
    heavy_modules = ("deepagents", "langchain_core", "langgraph", "rlm_adapter_deepagents.adapter")
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


def run(rlm_cli, model: str, context: Path, *extra: str, plugins: str = PLUGIN, sandbox: str = "process"):
    result = rlm_cli("run", "Which sensor failed on day 117, and what did it read?", "--framework", "deepagents",
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
    assert outcome["framework"] == "deepagents" and outcome["sandbox"] == sandbox
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


def test_a_run_through_deepagents_in_the_process_sandbox(rlm_cli, rlm_script, log_file):
    model = rlm_script([call("run_code", code=FIRST_LOOK), call("run_code", code="print(hit)"), final(ANSWER)],
                       rules=SUB_RULES)  # fmt: skip
    result, outcome, steps, events = run(rlm_cli, model, log_file)
    assert result.code == 0, result.err
    assert_two_looks_then_the_answer(outcome, steps, events, "process")


def test_the_same_run_in_monty(rlm_cli, rlm_script, log_file):
    pytest.importorskip("pydantic_monty")
    model = rlm_script([call("run_code", code=FIRST_LOOK), call("run_code", code="print(hit)"), final(ANSWER)],
                       rules=SUB_RULES)  # fmt: skip
    result, outcome, steps, events = run(rlm_cli, model, log_file, plugins=f"{PLUGIN},rlm-sandbox-monty",
                                         sandbox="monty")  # fmt: skip
    assert result.code == 0, result.err
    assert_two_looks_then_the_answer(outcome, steps, events, "monty")


def test_planning_tool_calls_errors_and_malformed_replies_are_steps_and_the_run_goes_on(rlm_cli, rlm_script,
                                                                                       log_file):  # fmt: skip
    model = rlm_script([
        call("write_todos", todos=[{"content": "find day 117", "status": "in_progress"}]),
        call("search", pattern="FAILED"),  # no such tool
        call("run_code", code="print(undefined_name)"),  # the code raises
        '{"thought": "the answer must be in the log"}',  # JSON, but no action: sent back
        "Looking at the log.\n" + call("run_code", code="print(context.splitlines()[2])"),
        "```json\n" + final(ANSWER) + "\n```",
    ])  # fmt: skip
    result, outcome, steps, _ = run(rlm_cli, model, log_file, "--max-steps", "20")
    assert result.code == 0 and outcome["final_response"] == ANSWER, result.err
    assert actions(steps) == [
        ("planning_tool_call", PLANNING), ("tool_result", TOOL_RESULT),
        ("tool_call", TOOL_CALL), ("tool_error", TOOL_ERROR),  # unknown tool
        ("tool_call", TOOL_CALL), ("tool_error", TOOL_ERROR),  # NameError
        ("model_text", MODEL_TEXT),  # the malformed reply, sent back
        ("model_text", MODEL_TEXT), ("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT),
        ("final", FINAL),
    ]  # fmt: skip
    assert steps[1]["observation"]["tool"] == "write_todos"
    assert steps[3]["observation"]["tool"] == "search" and "not a valid tool" in steps[3]["observation"]["output"]
    assert "NameError" in steps[5]["observation"]["output"]
    assert steps[6]["reply"] == '{"thought": "the answer must be in the log"}' and steps[6]["observation"]["invalid"]
    assert steps[7]["observation"] == {"text": "Looking at the log."} and steps[7]["reply"].startswith("Looking")
    assert steps[8]["reply"] is None and steps[8]["code"] == "print(context.splitlines()[2])"
    assert outcome["usage"]["root"]["calls"] == 6


def test_max_steps_stops_the_run_cleanly_with_its_trajectory(rlm_cli, rlm_script, log_file):
    model = rlm_script([call("run_code", code="print(len(context))")] * 6)
    result, outcome, steps, events = run(rlm_cli, model, log_file, "--max-steps", "2")
    assert outcome["termination_reason"] == "max_steps" and not outcome["completed"] and outcome["error"] is None
    assert actions(steps) == [("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT)] * 2
    assert outcome["usage"]["root"]["calls"] == 2  # max_steps counts root turns: the third is refused
    assert events[0]["type"] == "run_start" and events[-1]["type"] == "final"


def test_final_called_in_run_code_ends_the_run(rlm_cli, rlm_script, log_file):
    code = "hit = [l for l in context.splitlines() if 'FAILED' in l][0]\nFINAL('Sensor B: ' + hit.split()[-1])"
    model = rlm_script([call("run_code", code=code)])  # one reply: no further model call is made
    result, outcome, steps, _ = run(rlm_cli, model, log_file)
    assert result.code == 0 and outcome["final_response"] == "Sensor B: 42.7", result.err
    assert actions(steps) == [("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT), ("final", FINAL)]
    assert steps[1]["observation"]["final"] == "Sensor B: 42.7" and outcome["usage"]["root"]["calls"] == 1


def test_the_llm_query_tool_and_the_sub_call_budget(rlm_cli, rlm_script, log_file):
    model = rlm_script([call("llm_query", prompt="Extract the sensor: day 117 sensor B"),
                        call("llm_query", prompt="Extract the sensor again")], rules=SUB_RULES)  # fmt: skip
    _, outcome, steps, _ = run(rlm_cli, model, log_file, "--max-llm-calls", "1")
    assert actions(steps) == [("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT), ("tool_call", TOOL_CALL),
                              ("tool_error", TOOL_ERROR)]  # fmt: skip
    assert steps[1]["observation"]["output"] == "sensor B, 42.7"
    assert "max_llm_calls" in steps[3]["observation"]["output"]
    assert outcome["termination_reason"] == "max_llm_calls", "a refused sub-call ends the run, as in a native run"


def test_the_filesystem_backend_is_confined_to_its_root(rlm_cli, rlm_script, log_file, rlm_isolated):
    notes = rlm_isolated.work / "notes"
    notes.mkdir()
    (rlm_isolated.work / "secret.txt").write_text("outside the root")
    (rlm_isolated.work / "rlm.toml").write_text('[framework.deepagents]\nbackend = "filesystem"\nroot = "notes"\n')
    model = rlm_script([call("write_file", file_path="/plan.md", content="look for FAILED"),
                        call("read_file", file_path="/../secret.txt"), final(ANSWER)])  # fmt: skip
    result, outcome, steps, _ = run(rlm_cli, model, log_file)
    assert result.code == 0 and outcome["final_response"] == ANSWER, result.err
    assert (notes / "plan.md").read_text() == "look for FAILED"
    escaped = steps[3]["observation"]
    assert escaped["tool"] == "read_file" and "outside the root" not in escaped["output"]


def test_the_settings_section_is_validated(rlm_isolated, rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN)
    environ = {"HOME": str(rlm_isolated.home)}
    (rlm_isolated.work / "rlm.toml").write_text("[framework.deepagents]\nmax_output_chars = 500\n")
    settings = load_settings(environ=environ, cwd=rlm_isolated.work, host=host).component("framework", "deepagents")
    assert (settings.backend, settings.max_output_chars, settings.root) == ("state", 500, None)
    for text, error in [("backnd = 'state'", "backnd"), ("backend = 'shell'", "backend"),
                        ("backend = 'filesystem'", "needs `root`"), ("root = 'x'", "only used by")]:  # fmt: skip
        (rlm_isolated.work / "rlm.toml").write_text(f"[framework.deepagents]\n{text}\n")
        with pytest.raises(ConfigError, match=error):
            load_settings(environ=environ, cwd=rlm_isolated.work, host=host)


@pytest.mark.parametrize("chars", [1_000, 2_000_000])
def test_the_context_stays_in_the_sandbox_not_the_prompt(tmp_path, monkeypatch, chars):
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")
    find = call("run_code", code="i = context.find('magic number')\nprint(llm_query('Extract the number: ' + "
                                 "context[i:i+40]))")  # fmt: skip
    result, _, root = run_scripted(runner, "What is the magic number?", [find, final("4217")],
                                   sub_rules=[{"match": "Extract", "text": "4217"}], context=haystack(chars),
                                   framework="deepagents")  # fmt: skip
    assert result.final_response == "4217" and result.usage.sub.calls == 1, result.error
    prompts = ["".join(m["content"] for m in sent) for sent in root.calls]
    assert all(HAYSTACK_NEEDLE not in prompt for prompt in prompts)
    assert f"a string of {len(haystack(chars)):,} characters" in prompts[0]


def test_readiness_reports_a_missing_deepagents(rlm_plugin_host, monkeypatch):
    spec = rlm_plugin_host(PLUGIN).frameworks().get("deepagents")
    assert spec.mode == "agent" and spec.requires == ("deepagents", "langchain_core") and spec.readiness().ok
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "deepagents" else real(name, *a))
    ready = spec.readiness()
    assert not ready.ok and "deepagents" in ready.detail and "pip install rlm-adapter-deepagents" in ready.hint


def test_the_local_shell_backend_runs_commands_inside_the_sandbox_session(rlm_cli, rlm_script, log_file,
                                                                         rlm_isolated):  # fmt: skip
    (rlm_isolated.work / "rlm.toml").write_text('[framework.deepagents]\nbackend = "local_shell"\n')
    note = str(rlm_isolated.work / "scratch" / "note.md")  # the process sandbox sees this machine's files
    model = rlm_script([call("run_code", code="import os\nprint(os.getpid())"),
                        call("execute", command="echo $PPID; echo oops >&2; exit 3"),
                        call("write_file", file_path=note, content="sensor B\n42.7\n"),
                        call("read_file", file_path=note), final(ANSWER)])  # fmt: skip
    result, outcome, steps, _ = run(rlm_cli, model, log_file)
    assert result.code == 0 and outcome["final_response"] == ANSWER, result.err
    assert (rlm_isolated.work / "scratch" / "note.md").read_text() == "sensor B\n42.7\n"  # written by the session
    assert "42.7" in steps[7]["observation"]["output"] and steps[7]["observation"]["tool"] == "read_file"
    session_pid = steps[1]["observation"]["output"].strip()
    shell = steps[3]["observation"]
    assert shell["tool"] == "execute" and "oops" in shell["output"] and "exit code 3" in shell["output"]
    # the shell's parent is the sandbox session's process (where run_code ran), not the host's rlm process
    assert shell["output"].splitlines()[0] == session_pid and int(session_pid) != os.getpid()


def test_the_local_shell_backend_in_monty_reports_that_commands_cannot_run(rlm_cli, rlm_script, log_file,
                                                                          rlm_isolated):  # fmt: skip
    pytest.importorskip("pydantic_monty")
    (rlm_isolated.work / "rlm.toml").write_text('[framework.deepagents]\nbackend = "local_shell"\n')
    model = rlm_script([call("execute", command="echo hi"), final(ANSWER)])
    result, outcome, steps, _ = run(rlm_cli, model, log_file, plugins=f"{PLUGIN},rlm-sandbox-monty",
                                    sandbox="monty")  # fmt: skip
    assert result.code == 0 and outcome["final_response"] == ANSWER, result.err
    assert "could not run the command" in steps[1]["observation"]["output"]


def test_bench_compares_native_and_deepagents_on_one_preset(rlm_cli, rlm_script, rlm_isolated):
    pytest.importorskip("rlm_bench")
    pack = rlm_isolated.work / "pack.yaml"
    pack.write_text("presets:\n  words:\n    cases:\n      - case_id: code_word\n        task: What is the code word?\n"
                    "        context: {inline: 'the code word is PAPAYA'}\n        expected: PAPAYA\n")  # fmt: skip
    # the agent's last user message is the bare task; the native loop's first prompt says more
    model = rlm_script([], rules=[{"match": r"^What is the code word\?$", "text": final("PAPAYA")},
                                  {"match": ".", "text": "FINAL(PAPAYA)"}])  # fmt: skip
    result = rlm_cli("bench", "run", "--pack", str(pack), "--framework", "native,deepagents", "--model", model,
                     "--sandbox", "process", "--json", "--quiet", plugins=f"rlm-bench,{PLUGIN}")  # fmt: skip
    assert result.code == 0, result.err
    rows = json.loads(result.out)["frameworks"]
    assert [(r["framework"], r["accuracy"]) for r in rows] == [("native", 1.0), ("deepagents", 1.0)]
