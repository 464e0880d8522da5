"""dspy.RLM's loop on rlm's side: what the model is shown, how each iteration becomes a step, SUBMIT in every
form, the context sent once, malformed replies, dspy's JSON retry, budgets and errors unwrapped."""

from __future__ import annotations

import importlib.util
import json

import pytest

from rlm_host import BudgetExceeded, ModelError
from rlm_host.sdk.frameworks import StepLimitReached
from rlm_host.testing import HAYSTACK_NEEDLE, haystack, isolated_runner, run_scripted

from dspy_rlm_replies import CONTEXT, LOOK, SUB_RULES, SUBMIT_WORD, TASK, reply

PLUGIN = "rlm-adapter-dspy"
SANDBOXES = ["process"] + (["monty"] if importlib.util.find_spec("pydantic_monty") else [])


def make_runner(tmp_path, monkeypatch, sandbox="process", toml=""):
    monkeypatch.chdir(tmp_path)
    if toml:
        (tmp_path / "rlm.toml").write_text(toml)
    plugins = PLUGIN + (",rlm-sandbox-monty" if sandbox == "monty" else "")
    return isolated_runner(tmp_path, plugins=plugins, sandbox=sandbox)


@pytest.fixture(params=SANDBOXES)
def runner(request, tmp_path, monkeypatch):
    return make_runner(tmp_path, monkeypatch, request.param)


@pytest.fixture
def process_runner(tmp_path, monkeypatch):
    return make_runner(tmp_path, monkeypatch)


def go(runner, replies, context=CONTEXT, **options):
    return run_scripted(runner, TASK, replies, sub_rules=SUB_RULES, context=context, framework="dspy-rlm", **options)


def steps(events):
    return [event.data for event in events if event.type == "step"]


def prompt(call):
    return "\n".join(message["content"] for message in call)


def test_the_prompt_is_dspys_with_our_sandbox_described(runner):
    result, _, root = go(runner, [LOOK, SUBMIT_WORD])
    assert result.final_response == "PAPAYA", result.error
    first = prompt(root.calls[0])
    assert "[[ ## repl_history ## ]]" in first and "SUBMIT(answer)" in first, "dspy.RLM's own action prompt"
    assert f"rlm's `{result.sandbox}` sandbox" in first and "SUBMIT(answer=...)" in first
    assert ("It is Monty" in first) == (result.sandbox == "monty"), "the runtime's Python notes reach the model"
    assert "Sub-agents (dspy)" not in first, "the sandbox dspy facade is declined, and dspy drops it from the prompt"
    assert CONTEXT.splitlines()[2] in first, "dspy's variables_info previews the (short) context"
    second = prompt(root.calls[1])
    assert "sub-model: PAPAYA" in second, "the step's output is in dspy's REPL history"


def test_an_error_is_shown_to_the_model_with_what_was_printed_before(runner):
    code = "print('before the error')\nprint(undefined_name)"
    result, events, root = go(runner, [reply(code), SUBMIT_WORD.replace("word", "'PAPAYA'")])
    assert result.completed and result.final_response == "PAPAYA"
    history = prompt(root.calls[1])
    assert "[Error] Output before the error:\nbefore the error" in history and "NameError" in history
    assert [s["action"] for s in steps(events)] == ["run_code", "final"]


@pytest.mark.parametrize("submit, answer", [
    ("SUBMIT(answer='a b')", "a b"), ("SUBMIT('a b')", "a b"), ("SUBMIT(answer=[1, 2])", "[1, 2]"),
    ("FINAL('a b')", "a b"), ("x = 'a b'\nFINAL_VAR('x')", "a b"),
])
def test_submit_in_every_form(runner, submit, answer):
    result, events, _ = go(runner, [reply(submit)])
    assert result.completed and result.final_response == answer, result.error
    assert [s["action"] for s in steps(events)] == ["final"] and steps(events)[0]["reward"] == 1.0


def test_submit_with_the_wrong_fields_is_an_error_the_model_can_fix(runner):
    result, events, root = go(runner, [reply("SUBMIT(result='x')"), reply("SUBMIT('x', 'y')"), reply("SUBMIT('x')")])
    assert result.final_response == "x" and [s["action"] for s in steps(events)] == ["run_code", "run_code", "final"]
    assert "SUBMIT expects the output fields answer, e.g. SUBMIT(answer=...)" in prompt(root.calls[1])


def test_the_context_is_bound_once_not_resent_each_step(runner):
    # dspy passes its inputs to every execute(); they reach the sandbox once, so the model's own rebinding stays
    replies = [reply("context = context.upper()"), reply("SUBMIT(context[:8])")]
    result, _, _ = go(runner, replies)
    assert result.final_response == "LINE ONE", result.error


def test_a_large_context_stays_in_the_sandbox(process_runner):
    first_prompt = {}
    find = reply("i = context.find('magic number')\nword = llm_query('Which code word: ' + context[i:i + 40])\n"
                 "print(word)")
    for chars in (10_000, 2_000_000):
        result, _, root = run_scripted(process_runner, "What is the magic number?", [find, SUBMIT_WORD],
                                       sub_rules=[{"match": "^Which code word", "text": "4217"}],
                                       context=haystack(chars), framework="dspy-rlm")
        assert result.final_response == "4217", result.error
        prompts = [prompt(call) for call in root.calls]
        assert all(HAYSTACK_NEEDLE not in text for text in prompts)
        first_prompt[chars] = len(prompts[0])
    assert abs(first_prompt[10_000] - first_prompt[2_000_000]) < 40, first_prompt


def test_a_reply_dspy_cannot_parse_is_a_step_shown_to_the_model(process_runner):
    result, events, root = go(process_runner, ["The answer is PAPAYA.", LOOK, SUBMIT_WORD])
    assert result.completed and result.final_response == "PAPAYA"
    recorded = steps(events)
    assert [s["action"] for s in recorded] == ["malformed_reply", "run_code", "final"]
    assert recorded[0]["reply"] == "The answer is PAPAYA." and recorded[0]["reward"] < 0
    assert "expected the fields reasoning, code" in prompt(root.calls[1])
    assert len(root.calls) == 3, "one root call per step: no JSON retry by default"


def test_dspys_json_retry_when_enabled_is_a_retry_step(tmp_path, monkeypatch):
    runner = make_runner(tmp_path, monkeypatch, toml="[framework.dspy-rlm]\njson_fallback = true\n")
    as_json = json.dumps({"reasoning": "Submit.", "code": "SUBMIT('PAPAYA')"})
    result, events, root = go(runner, ["The answer is PAPAYA.", as_json])
    assert result.completed and result.final_response == "PAPAYA", result.error
    recorded = steps(events)
    assert [s["action"] for s in recorded] == ["retry", "final"] and len(root.calls) == 2
    assert [s["reply"] for s in recorded] == ["The answer is PAPAYA.", as_json], "every root reply is in a step"


def test_budgets_and_model_errors_end_the_run_with_their_own_reason(process_runner):
    result, _, _ = go(process_runner, [LOOK, SUBMIT_WORD], max_tokens=500)
    assert result.termination_reason == "budget" and "token budget" in result.error
    result, _, _ = go(process_runner, [LOOK, {"error": "the provider is down"}])
    assert result.termination_reason == "error" and result.error == "the provider is down" and result.steps == 1


def test_errors_dspy_wrapped_are_found_in_the_chain():
    from dspy.utils.exceptions import LMUnexpectedError
    from rlm_adapter_dspy.framework import our_error

    for ours in (BudgetExceeded("budget", "token budget reached"), ModelError("down"), StepLimitReached("done")):
        try:
            try:
                raise ours
            except Exception as exc:
                raise LMUnexpectedError(str(exc), model="rlm/x") from exc
        except Exception as wrapped:
            assert our_error(wrapped) is ours
    assert our_error(ValueError("theirs")) is None


def test_a_reply_whose_code_dspy_refuses_to_run_is_still_a_step(process_runner):
    bash = LOOK.replace("```python", "```bash")  # dspy.RLM refuses a non-Python fence without running it
    result, events, root = go(process_runner, [bash, LOOK, SUBMIT_WORD])
    assert result.completed and result.final_response == "PAPAYA"
    recorded = steps(events)
    assert [s["action"] for s in recorded] == ["no_code", "run_code", "final"] and recorded[0]["reply"] == bash
    assert "Expected Python code but got ```bash fence" in prompt(root.calls[1])


def test_llm_query_batched_reaches_the_sub_model_once_per_prompt(runner):
    code = "words = llm_query_batched(['Which code word: a', 'Which code word: b'])\nprint(words)"
    result, events, _ = go(runner, [reply(code), SUBMIT_WORD.replace("(word)", "(words[1])")])
    assert result.final_response == "PAPAYA", result.error
    assert "['PAPAYA', 'PAPAYA']" in steps(events)[0]["observation"]["blocks"][0]["stdout"]
    assert result.usage.sub.calls == 2 and sum(event.type == "sub_call" for event in events) == 2


def test_after_a_timeout_the_restarted_sandbox_still_has_the_inputs_and_submit(runner):
    replies = [reply("x = 1\nwhile True:\n    x += 1"), reply("print(query)\nSUBMIT(context[:8])")]
    result, events, root = go(runner, replies, exec_timeout=1)
    assert result.completed and result.final_response == "line one", result.error
    first, last = steps(events)
    assert first["observation"]["blocks"][0]["timed_out"] and "TimeoutError" in prompt(root.calls[1])
    assert last["action"] == "final" and last["observation"]["blocks"][0]["stdout"] == TASK + "\n"


def test_a_refused_sub_call_ends_the_run_after_its_step(runner):
    # the prompt states the run's allowance, the run's budget counts (dspy's own counter is out of the way)
    code = "for i in range(3):\n    print(llm_query('Which code word: ' + str(i)))"
    result, events, root = go(runner, [reply(code), SUBMIT_WORD], max_llm_calls=2)
    assert "You have max 2 sub-LLM calls" in prompt(root.calls[0])
    assert result.termination_reason == "max_llm_calls" and not result.completed and result.steps == 1
    step = steps(events)[0]["observation"]["blocks"][0]
    assert step["stdout"] == "PAPAYA\nPAPAYA\n" and "max_llm_calls (2) reached" in step["error"]
    assert result.usage.sub.calls == 2 and len(root.calls) == 1
