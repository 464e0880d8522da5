"""dspy-rlm as users meet it: ``rlm run --framework dspy-rlm`` end to end, through the real dspy.RLM, with the
``scripted`` provider answering as dspy's ChatAdapter expects, in the process and Monty sandboxes."""

from __future__ import annotations

import importlib.util
import json

import pytest

from dspy_rlm_replies import CONTEXT, LOOK, SUB_RULES, SUBMIT_WORD, TASK, WORKING, reply, steps_of

PLUGIN = "rlm-adapter-dspy"
needs_monty = pytest.mark.skipif(importlib.util.find_spec("pydantic_monty") is None, reason="pydantic-monty")


@pytest.fixture
def context_file(rlm_isolated):
    path = rlm_isolated.work / "notes.txt"
    path.write_text(CONTEXT)
    return path


def run(rlm_cli, model, context_file, *extra, framework="dspy-rlm", sandbox="process", plugins=PLUGIN):
    result = rlm_cli("run", TASK, "--framework", framework, "--context", str(context_file), "--model", model,
                     "--sandbox", sandbox, "--json", *extra, plugins=plugins)
    assert result.out.strip(), result.err
    return result, json.loads(result.out)


def assert_found_the_word(result, data):
    assert result.code == 0, result.err
    assert data["completed"] and data["final_response"] == "PAPAYA", data["error"]
    assert data["framework"] == "dspy-rlm" and data["termination_reason"] == "final"
    steps = steps_of(data["trajectory_path"])
    assert [s["action"] for s in steps] == ["run_code", "final"] and data["steps"] == 2
    first, last = steps
    assert first["code"].startswith("print(len(context)") and first["reply"] == LOOK
    output = first["observation"]["blocks"][0]["stdout"]
    assert "42 characters" in output and "sub-model: PAPAYA" in output, output
    assert last["code"] == "SUBMIT(word)" and last["observation"]["blocks"][0]["final"]["value"] == {"answer": "PAPAYA"}
    assert data["usage"]["root"]["calls"] == 2 and data["usage"]["root"]["input_tokens"] > 0
    assert data["usage"]["sub"]["calls"] == 1 and data["usage"]["sub"]["input_tokens"] > 0
    assert first["usage"]["sub"]["calls"] == 1, "the sub-call is counted in the step that made it"
    return steps


def test_a_run_answers_with_its_steps_and_both_roles_counted(rlm_cli, rlm_script, context_file):
    result, data = run(rlm_cli, rlm_script([LOOK, SUBMIT_WORD], rules=SUB_RULES), context_file)
    assert_found_the_word(result, data)
    assert data["sandbox"] == "process"


@needs_monty
def test_the_same_run_in_monty(rlm_cli, rlm_script, context_file):
    result, data = run(rlm_cli, rlm_script([LOOK, SUBMIT_WORD], rules=SUB_RULES), context_file,
                       sandbox="monty", plugins=f"{PLUGIN},rlm-sandbox-monty")
    assert_found_the_word(result, data)
    assert data["sandbox"] == "monty"


def test_the_seeds_alias_dspy(rlm_cli, rlm_script, context_file):
    result, data = run(rlm_cli, rlm_script([LOOK, SUBMIT_WORD], rules=SUB_RULES), context_file, framework="dspy")
    assert_found_the_word(result, data)


def test_max_steps_are_root_turns_and_stop_the_loop_cleanly(rlm_cli, rlm_script, context_file):
    # dspy.RLM's max_iters are the run's max_steps; its extract call after them is the run's one synthesis call
    extracted = "[[ ## reasoning ## ]]\nOut of steps.\n\n[[ ## answer ## ]]\nPAPAYA\n\n[[ ## completed ## ]]"
    result, data = run(rlm_cli, rlm_script([WORKING] * 2 + [extracted]), context_file, "--max-steps", "2")
    assert data["error"] is None and result.code == 1, data  # `rlm run` exits 1 for a run that did not complete
    assert data["termination_reason"] == "max_steps" and not data["completed"] and data["final_response"] == "PAPAYA"
    assert data["steps"] == 2 and data["usage"]["root"]["calls"] == 3
    assert [s["action"] for s in steps_of(data["trajectory_path"])] == ["run_code", "run_code"]
    events = [json.loads(line) for line in open(data["trajectory_path"])]
    purposes = [e["data"]["purpose"] for e in events if e["type"] == "model_call_start" and e["data"]["role"] == "root"]
    assert purposes == ["turn", "turn", "synthesis"]


@pytest.mark.parametrize("extracted,answer", [
    (WORKING, None),  # an action reply (reasoning, code) where extract's fields were asked for: no answer
    ("Bo ships it on Friday.", "Bo ships it on Friday."),  # plain prose: the answer as it is
    ("[[ ## answer ## ]]\nPAPAYA\n\n[[ ## completed ## ]]", "PAPAYA"),  # extract's answer field alone
])
def test_an_extract_reply_dspy_cannot_parse_gives_only_the_answer_it_holds(rlm_cli, rlm_script, context_file,
                                                                           extracted, answer):
    """Issue 47: at the step limit the next raw scripted reply (an action reply) was printed as the answer."""
    result = rlm_cli("run", TASK, "--framework", "dspy-rlm", "--context", str(context_file), "--model",
                     rlm_script([WORKING, extracted]), "--sandbox", "process", "--max-steps", "1", "-q",
                     plugins=PLUGIN)
    assert result.code == 1, result.err
    assert result.out == (f"{answer}\n" if answer else ""), result.out
    assert answer is not None or "no answer: the run ended max_steps" in result.err, result.err


def test_a_code_error_is_a_step_and_the_run_goes_on(rlm_cli, rlm_script, context_file):
    model = rlm_script([reply("print(undefined_name)"), LOOK, SUBMIT_WORD], rules=SUB_RULES)
    result, data = run(rlm_cli, model, context_file)
    assert data["completed"] and data["final_response"] == "PAPAYA"
    steps = steps_of(data["trajectory_path"])
    assert [s["action"] for s in steps] == ["run_code", "run_code", "final"]
    failed = steps[0]["observation"]
    assert not failed["success"] and failed["blocks"][0]["error"].startswith("NameError")
    assert steps[0]["reward"] < 0 < steps[1]["reward"] < steps[2]["reward"]


def test_a_replay_plays_the_run_back(rlm_cli, rlm_script, context_file):
    _, first = run(rlm_cli, rlm_script([LOOK, SUBMIT_WORD], rules=SUB_RULES), context_file)
    result, again = run(rlm_cli, f"replay:{first['run_id']}", context_file, plugins=f"{PLUGIN},rlm-runs")
    assert again["completed"] and again["final_response"] == "PAPAYA", again["error"]
    assert [s["reply"] for s in steps_of(again["trajectory_path"])] == [LOOK, SUBMIT_WORD]
    assert again["usage"]["sub"]["calls"] == 1


def test_settings_are_validated(rlm_cli, rlm_script, context_file, rlm_isolated):
    (rlm_isolated.work / "rlm.toml").write_text("[framework.dspy-rlm]\njson_fallbak = true\n")  # sic
    result = rlm_cli("run", TASK, "--framework", "dspy-rlm", "--context", str(context_file), "--model",
                     rlm_script([SUBMIT_WORD]), "--sandbox", "process", "--json", plugins=PLUGIN)
    assert result.code != 0 and "json_fallbak" in result.err


def test_listed_with_its_mode_and_alias(rlm_cli):
    result = rlm_cli("frameworks", "list", plugins=PLUGIN)
    line = next(line for line in result.out.splitlines() if line.startswith("dspy-rlm"))
    assert "native_rlm" in line and "ready" in line and "alias dspy" in line
