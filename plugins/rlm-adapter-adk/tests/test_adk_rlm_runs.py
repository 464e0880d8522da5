"""``rlm run … --framework adk-rlm``, end to end: the RLM loop of ADK agents (code generator, REPL executor,
completion checker) over the ``scripted`` provider, code in the run's sandbox (``process``, and Monty)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

pytest.importorskip("google.adk")

from rlm_host.testing import FrameworkContract, isolated_runner, run_scripted  # noqa: E402

PLUGIN = "rlm-adapter-adk"
LOG = "Station log\nday 116: sensor A ok\nday 117: sensor B FAILED, last reading 42.7\nday 118: sensor A ok\n"
SUB_RULES = [{"match": "^Extract the sensor", "text": "sensor B, 42.7"}]
FIRST_LOOK = ("lines = context.splitlines()\nprint(len(lines))\nhit = [l for l in lines if 'FAILED' in l][0]\n"
              "print(llm_query('Extract the sensor and reading: ' + hit))")
ANSWER = "Sensor B failed on day 117; its last reading was 42.7."


def repl(code: str, prose: str = "Let me look.") -> str:
    return f"{prose}\n```repl\n{code}\n```"


class TestAdkRlm(FrameworkContract):
    framework = "adk-rlm"
    distribution = PLUGIN
    heavy_modules = ("google.adk", "google.adk.runners", "google.genai", "rlm_adapter_adk.rlm_loop",
                     "rlm_adapter_adk.framework", "rlm_adapter_adk.model")
    finishing_replies = (repl("x = llm_query('What is the code word? ' + context)\nprint(context.splitlines()[2], x)"),
                         "FINAL(PAPAYA)")
    final_answer = "PAPAYA"
    sub_rules = ({"match": "code word", "text": "PAPAYA"},)
    working_reply = repl("print(len(context))")


@pytest.fixture
def log_file(rlm_isolated) -> Path:
    path = rlm_isolated.work / "station_log.txt"
    path.write_text(LOG)
    return path


def run(rlm_cli, model: str, context: Path, *extra: str, plugins: str = PLUGIN, sandbox: str = "process"):
    result = rlm_cli("run", "Which sensor failed on day 117, and what did it read?", "--framework", "adk-rlm",
                     "--context", str(context), "--model", model, "--sandbox", sandbox, "--json", *extra,
                     plugins=plugins)
    assert result.out.strip(), result.err
    outcome = json.loads(result.out)
    events = [json.loads(line) for line in (context.parent / outcome["trajectory_path"]).read_text().splitlines()]
    steps = [event["data"] for event in events if event["type"] == "step"]
    return result, outcome, steps, events


def assert_a_look_then_the_answer(result, outcome, steps, events, sandbox: str) -> None:
    assert result.code == 0, result.err
    assert outcome["framework"] == "adk-rlm" and outcome["sandbox"] == sandbox
    assert outcome["completed"] and outcome["termination_reason"] == "final" and outcome["error"] is None
    assert outcome["final_response"] == ANSWER
    assert [s["action"] for s in steps] == ["run_code", "run_code", "final"]
    first, second, answer = steps
    assert first["code"] == FIRST_LOOK and first["reply"] == repl(FIRST_LOOK)
    assert first["observation"]["blocks"] == [{"code": FIRST_LOOK, "ok": True, "output": "4\nsensor B, 42.7"}]
    assert first["reward"] > 0 and first["usage"]["sub"]["calls"] == 1
    assert second["observation"]["blocks"][0]["output"] == "day 117: sensor B FAILED, last reading 42.7"
    assert answer["observation"]["answer"] == ANSWER and answer["reward"] == pytest.approx(1.0)
    usage = outcome["usage"]
    assert usage["root"]["calls"] == 3 and usage["sub"]["calls"] == 1
    sub_calls = [event["data"] for event in events if event["type"] == "sub_call"]
    assert [(s["kind"], s["response"]) for s in sub_calls] == [("llm_query", "sensor B, 42.7")]
    assert "Warning" not in result.err and "deprecat" not in result.err.lower(), result.err


def test_a_run_in_the_process_sandbox(rlm_cli, rlm_script, log_file):
    model = rlm_script([repl(FIRST_LOOK), repl("print(hit)"), f"I have it.\nFINAL({ANSWER})"], rules=SUB_RULES)
    assert_a_look_then_the_answer(*run(rlm_cli, model, log_file), "process")


def test_the_same_run_in_monty(rlm_cli, rlm_script, log_file):
    pytest.importorskip("pydantic_monty")
    model = rlm_script([repl(FIRST_LOOK), repl("print(hit)"), f"FINAL({ANSWER})"], rules=SUB_RULES)
    assert_a_look_then_the_answer(*run(rlm_cli, model, log_file, plugins=f"{PLUGIN},rlm-sandbox-monty",
                                       sandbox="monty"), "monty")


def test_final_var_in_code_and_in_text(rlm_cli, rlm_script, log_file):
    model = rlm_script([repl("answer = [l for l in context.splitlines() if 'FAILED' in l][0]\nFINAL_VAR('answer')")])
    _, outcome, steps, _ = run(rlm_cli, model, log_file)
    assert outcome["final_response"] == "day 117: sensor B FAILED, last reading 42.7"
    assert [s["action"] for s in steps] == ["final"] and steps[0]["observation"]["via"] == "code"
    model = rlm_script([repl("ans = context.splitlines()[2][-4:]"), "FINAL_VAR(ans)"])
    _, outcome, steps, _ = run(rlm_cli, model, log_file)
    assert outcome["final_response"] == "42.7" and [s["action"] for s in steps] == ["run_code", "final"]


def test_a_reply_without_code_is_sent_back_and_errors_are_shown(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")
    replies = ["I think it is 3.", repl("print(context[10**9])"), repl("print(len(context))"), "FINAL(3)"]
    result, events, root = run_scripted(runner, "How long is the context?", replies, context="abc",
                                        framework="adk-rlm")
    assert result.final_response == "3", result.error
    steps = [event.data for event in events if event.type == "step"]
    assert [s["action"] for s in steps] == ["no_code", "run_code", "run_code", "final"]
    assert steps[0]["reward"] < 0 and steps[1]["reward"] < steps[2]["reward"]
    system, *turns = root.calls[-1]
    assert system["role"] == "system" and "```repl" in system["content"]
    assert "a string of 3 characters" in system["content"]
    assert [m["role"] for m in turns] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert turns[0]["content"].startswith("Query: How long is the context?")
    assert "no ```repl code block" in turns[2]["content"]
    assert "IndexError" in turns[4]["content"] and turns[6]["content"].endswith("REPL output:\n3")


def test_max_steps_ends_the_loop_cleanly(rlm_cli, rlm_script, log_file, caplog):
    model = rlm_script([repl("print(len(context))")] * 6)
    result, outcome, steps, events = run(rlm_cli, model, log_file, "--max-steps", "2")
    assert not [r for r in caplog.records if r.name.startswith("google_adk") and r.levelno >= 30], caplog.text
    assert outcome["termination_reason"] == "max_steps" and not outcome["completed"] and outcome["error"] is None
    assert [s["action"] for s in steps] == ["run_code", "run_code"]
    assert outcome["usage"]["root"]["calls"] == 3  # two turns, then the one synthesis call a native run makes too
    assert outcome["final_response"]  # the synthesised answer (here the script's next reply)
    assert events[-1]["type"] == "final"


def test_the_sub_call_budget_ends_the_run(rlm_cli, rlm_script, log_file):
    code = "print(llm_query('Extract the sensor: a'))\nprint(llm_query('Extract the sensor: b'))"
    model = rlm_script([repl(code), "FINAL(x)"], rules=SUB_RULES)
    _, outcome, _, _ = run(rlm_cli, model, log_file, "--max-llm-calls", "1")
    assert outcome["termination_reason"] == "max_llm_calls"


def test_the_spec_and_no_deprecation_warning(rlm_plugin_host, tmp_path, monkeypatch):
    spec = rlm_plugin_host(PLUGIN).frameworks().get("adk-rlm")
    assert spec.mode == "native_rlm" and spec.requires == ("google.adk",) and spec.readiness().ok
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, _, _ = run_scripted(runner, "Code word?", [repl("print(context)"), "FINAL(PAPAYA)"],
                                    context="the code word is PAPAYA", framework="adk-rlm")
    assert result.final_response == "PAPAYA", result.error
    assert not [w for w in caught if "google" in str(w.filename) or "adk" in str(w.message).lower()], \
        [str(w.message) for w in caught]


def test_callbacks_carry_iteration_metadata_and_session_metrics_and_the_formatter_rewrites_the_answer(
        rlm_cli, rlm_script, log_file, rlm_isolated):
    """Seed 003's design: after_model puts each reply's metadata in ``custom_metadata``, the executor its execution
    metadata, the loop's callbacks keep session metrics (in the run's ``framework_metadata``); with
    ``format_result`` a result formatter rewrites the answer (one synthesis call, not a turn)."""
    (rlm_isolated.work / "rlm.toml").write_text('[framework.adk-rlm]\nformat_result = true\n')
    failing = repl("print(undefined_name)")
    model = rlm_script([failing, repl(FIRST_LOOK), "FINAL(sensor B, 42.7)", "Sensor B failed; it read 42.7."],
                       rules=SUB_RULES)
    result, outcome, steps, events = run(rlm_cli, model, log_file)
    assert result.code == 0, result.err
    assert outcome["final_response"] == "Sensor B failed; it read 42.7."
    metrics = outcome["framework_metadata"]["session_metrics"]
    assert metrics["total_iterations"] == 3 and metrics["total_code_blocks"] == 2
    assert metrics["total_llm_query_calls"] == 1 and metrics["total_sub_lm_calls"] == 1
    assert metrics["errors_encountered"] == 1 and metrics["errors_recovered"] == 1
    assert metrics["final_answer_found"] and metrics["termination_reason"] == "FINAL"
    assert metrics["total_model_latency_ms"] >= 0 and metrics["total_execution_time_seconds"] > 0
    purposes = [e["data"]["purpose"] for e in events if e["type"] == "model_call_start" and e["data"]["role"] == "root"]
    assert purposes == ["turn", "turn", "turn", "synthesis"]


def test_the_iteration_metadata_of_a_reply():
    from rlm_adapter_adk.rlm_callbacks import IterationMetadata

    meta = IterationMetadata.of("Look.\n```repl\nx = llm_query_batched(p)\ny = rlm_query('q')\n```\nFINAL_VAR(x)", 4)
    assert (meta.iteration_number, meta.code_block_count, meta.has_llm_query, meta.has_llm_query_batched) == (
        4, 1, False, True)
    assert meta.has_rlm_query and meta.has_final_answer and meta.final_answer_type == "FINAL_VAR"


def test_the_users_tools_are_in_the_repl_and_listed_in_the_prompt(tmp_path, monkeypatch):
    """``tools=[fn]`` / ``--tool``: defined in the run's REPL as in a native run (the host-side call, a ``tool_call``
    sub-call), listed in the system prompt; an exception of one is an exception in the code."""
    called = []

    def reading(sensor: str, day: int = 117) -> str:
        """Read a sensor's last reading on a day from the station database."""
        called.append((sensor, day))
        return {"B": "42.7"}.get(sensor, "no reading")

    def recalibrate(sensor: str) -> dict:
        """Recalibrate a sensor."""
        raise RuntimeError(f"sensor {sensor} is offline")

    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")
    look = repl("print('B reads', reading('B'))\ntry:\n    recalibrate('B')\nexcept Exception as exc:\n"
                "    print('caught:', exc)")
    result, events, root = run_scripted(runner, "What does sensor B read?", [look, "FINAL(42.7)"], context=LOG,
                                        tools=[reading, recalibrate], framework="adk-rlm")
    assert result.final_response == "42.7" and called == [("B", 117)], result.error
    system = root.calls[0][0]["content"]
    assert "`reading(sensor: str, day: int = 117) -> str`: Read a sensor's last reading on a day" in system
    assert "`recalibrate(sensor: str) -> dict`: Recalibrate a sensor." in system
    shown = root.calls[1][-1]["content"]
    assert "B reads 42.7" in shown and "caught: sensor B is offline" in shown
    calls = [e.data for e in events if e.type == "sub_call" and e.data["kind"] == "tool_call"]
    assert [(c["tool"], c.get("result"), c.get("error")) for c in calls] == [
        ("reading", '"42.7"', None), ("recalibrate", None, "RuntimeError: sensor B is offline")]


def test_a_final_answer_is_held_to_the_output_type(tmp_path, monkeypatch):
    """``output_type``: the schema in the prompt; a FINAL (in the text or the code) that does not match is a
    ``final_rejected`` step, the problems go back to the model, the loop goes on; the result formatter is left
    out (the answer stays JSON) and ``RunResult.output`` holds the object."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rlm.toml").write_text("[framework.adk-rlm]\nformat_result = true\n")
    runner = isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process")
    schema = {"type": "object", "properties": {"sensor": {"type": "string"}, "reading": {"type": "number"}},
              "required": ["sensor", "reading"]}
    replies = ["FINAL(sensor B)", repl("x = {'sensor': 'B'}\nFINAL_VAR('x')"), repl("x['reading'] = 42.7"),
               "FINAL_VAR(x)"]
    result, events, root = run_scripted(runner, "Which sensor failed?", replies, context=LOG, output_type=schema,
                                        framework="adk-rlm")
    assert result.completed and result.output == {"sensor": "B", "reading": 42.7}, result.error
    assert json.loads(result.final_response) == result.output and result.usage.root.calls == 4  # no formatter
    assert '"reading"' in root.calls[0][0]["content"]  # the schema, in the system prompt
    steps = [event.data for event in events if event.type == "step"]
    assert [s["action"] for s in steps] == ["final_rejected", "final_rejected", "run_code", "final"]
    assert "is not of type 'object'" in steps[0]["observation"]["final_rejected"]
    assert "'reading' is a required property" in steps[1]["observation"]["final_rejected"]
    for call, problem in ((root.calls[1], "is not of type 'object'"), (root.calls[2], "'reading' is a required")):
        assert "does not match the required type" in call[-1]["content"] and problem in call[-1]["content"]
