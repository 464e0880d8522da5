"""The ``rlms`` environment on its own, driven by rlm's runner with scripted models (no ``RLM`` front): the
environment protocol's contract, the authors' ``rlm_query`` / ``rlm_query_batched``, ``answer`` kept a dict,
compaction with the whole conversation in ``history``, and ``rlm run --env rlms``."""

from __future__ import annotations

import pytest

from rlm_host.testing import EnvironmentContract, isolated_runner, run_scripted

PLUGIN = "rlm-compat-rlms"
SUBMIT_UPPER = "```repl\nanswer['content'] = context.upper()\nanswer['ready'] = True\n```"


class TestRlmsEnvironment(EnvironmentContract):
    environment = "rlms"
    distribution = PLUGIN
    working_reply = "```repl\nx = 1\nprint(x)\n```"
    final_reply = "```repl\nanswer['content'] = '42'\nanswer['ready'] = True\n```"
    final_answer = "42"


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return lambda **environ: isolated_runner(tmp_path, plugins=PLUGIN, sandbox="process", environ=environ)


def blocks(events) -> list[dict]:
    return [b for e in events if e.type == "step" and e.depth == 0 for b in e.data["observation"].get("blocks", [])]


def test_rlm_query_batched_runs_child_rlms_and_answers_in_order(runner):
    root = ["```repl\nparts = rlm_query_batched(['first', 'second', 'third'])\nprint(parts)\n```",
            SUBMIT_UPPER, SUBMIT_UPPER, SUBMIT_UPPER,
            "```repl\nanswer['content'] = ' '.join(parts)\nanswer['ready'] = True\n```"]
    result, events, _ = run_scripted(runner(), "Shout each word.", root, context="words", environment="rlms",
                                     max_depth=1)
    assert result.final_response == "FIRST SECOND THIRD", result.error
    children = [e for e in events if e.type == "child_run_start"]
    assert sorted(e.data["task"] for e in children) == ["first", "second", "third"]
    assert [e.data["kind"] for e in events if e.type == "sub_call" and e.depth == 0] == ["rlm_query"] * 3


def test_max_concurrent_subcalls_bounds_the_child_rlms_at_once(runner):
    root = ["```repl\nparts = rlm_query_batched(['a', 'b', 'c'])\n```", SUBMIT_UPPER, SUBMIT_UPPER, SUBMIT_UPPER,
            "```repl\nanswer['content'] = ''.join(parts)\nanswer['ready'] = True\n```"]
    one_at_a_time = runner(RLM_ENVIRONMENT__RLMS__MAX_CONCURRENT_SUBCALLS="1")
    result, events, _ = run_scripted(one_at_a_time, "q", root, context="c", environment="rlms", max_depth=1)
    assert result.final_response == "ABC"
    order = [e.type for e in events if e.type in ("child_run_start", "child_run_end")]
    assert order == ["child_run_start", "child_run_end"] * 3


def test_rlm_query_with_a_model_falls_back_to_llm_query_at_the_limit_and_is_refused_above_it(runner):
    code = "```repl\nprint(rlm_query('hello', model='scripted:sub'))\n```"
    done = "```repl\nanswer['content'] = 'x'\nanswer['ready'] = True\n```"
    _, events, _ = run_scripted(runner(), "q", [code, done], sub_rules=[{"match": "hello", "text": "plain"}],
                                context="c", environment="rlms", max_depth=0)
    assert blocks(events)[0]["stdout"].strip() == "plain"  # no recursion left: one sub-model call
    _, events, _ = run_scripted(runner(), "q", [code, done], context="c", environment="rlms", max_depth=1)
    assert "a child RLM runs with this run's model here" in blocks(events)[0]["error"]


@pytest.mark.parametrize(("last_word", "answer"), [("FINAL(42)", "42"), ("FINAL_VAR(n)", "7"),
                                                   ("It is 42.", "It is 42.")])
def test_the_answer_after_the_last_turn_may_be_written_as_a_final_line(runner, last_word, answer):
    result, _, _ = run_scripted(runner(), "q", ["```repl\nn = 7\n```", last_word], context="c", environment="rlms",
                                max_steps=1)
    assert (result.final_response, result.termination_reason) == (answer, "max_steps")


def test_answer_stays_a_dict_and_an_open_fence_is_said_not_run(runner):
    root = ["```repl\nanswer = 'oops'\n```", "```repl\nprint('never closed')",
            "```repl\nanswer['content'] = type(answer).__name__\nanswer['ready'] = True\n```"]
    result, events, connector = run_scripted(runner(), "q", root, context="c", environment="rlms")
    assert result.final_response == "dict"
    steps = [e.data for e in events if e.type == "step"]
    assert "was not closed" in steps[1]["observation"]["notes"][0] and steps[1]["observation"]["blocks"] == []
    assert "did not run" in connector.calls[2][-1]["content"]


def test_compaction_folds_old_turns_and_keeps_the_whole_conversation_in_history(runner):
    root = ["```repl\nprint('x' * 8000)\n```", "Summary: printed a long line.",
            "```repl\nanswer['content'] = str(len(history))\nanswer['ready'] = True\n```"]
    settings = {"RLM_ENVIRONMENT__RLMS__COMPACTION": "true", "RLM_ENVIRONMENT__RLMS__COMPACTION_THRESHOLD": "0.05"}
    result, events, connector = run_scripted(runner(**settings), "q", root, context="c", environment="rlms")
    assert result.final_response == "4", result.error  # system, first message, reply, its output
    assert [e.type for e in events].count("compaction") == 1
    last = connector.calls[-1]
    assert any("Summary: printed a long line." in m["content"] for m in last)
    assert not any(m["content"] == root[0] for m in last)  # the first reply is folded into the summary


def test_rlm_run_env_rlms(rlm_cli, rlm_script, rlm_isolated):
    (rlm_isolated.work / "notes.txt").write_text("hello world")
    model = rlm_script(["```repl\nprint(len(context))\n```", "```repl\nanswer['content'] = str(len(context))\n"
                        "answer['ready'] = True\n```"])
    done = rlm_cli("run", "How long is it?", "--context", "notes.txt", "--env", "rlms", "--model", model,
                   "--sandbox", "process", "-q", plugins=PLUGIN)
    assert done.code == 0, done.err
    assert done.out.splitlines()[0] == "11"
