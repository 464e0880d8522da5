"""``RLM(persistent=True)``: completions build on each other as in the authors' package — each prompt becomes
``context_N``, each conversation ``history_N``, the REPL's data carries over — in any rlm sandbox, each completion
in a fresh sandbox session (what carries is data; functions are named for the model to rebuild)."""

from __future__ import annotations

import pytest

from rlm_compat_rlms import RLM
from rlm_host.testing import openai_answer as answer


def submit(value: str) -> str:
    return f"```repl\nanswer['content'] = {value}\nanswer['ready'] = True\n```"


@pytest.mark.parametrize("sandbox", ["process", "monty"])
def test_contexts_histories_and_data_carry_from_one_completion_to_the_next(server, kwargs_for, bodies, sandbox):
    server.push(answer("```repl\ntotal = sum(int(x) for x in context.split())\nprint(total)\n```"),
                answer(submit("str(total)")))
    with RLM(backend="openai", backend_kwargs=kwargs_for(server), environment=sandbox, persistent=True) as rlm:
        assert rlm._persistent_env is None  # made by the first completion, as in rlms
        assert rlm.completion("1 2 3", "Sum them.").response == "6"
        env = rlm._persistent_env
        assert env.locals["total"] == 6 and env.get_context_count() == 1 and env.get_history_count() == 1
        server.push(answer(submit("str(total + len(context_1)) + '/' + context + '/' + str(len(history))")))
        assert rlm.completion("four", "Add the length of the new text.").response == "10/1 2 3/" + str(
            len(env.locals["history_0"]))
        assert rlm._persistent_env is env and env.get_context_count() == 2 and env.get_history_count() == 2
        assert env.locals["context_1"] == "four" and env.locals["context"] == "1 2 3"
        assert env.locals["history"] == env.locals["history_0"]
        assert [m["role"] for m in env.locals["history_0"]][:2] == ["system", "user"]
        assert env.locals["history_0"][-1]["content"].startswith("```repl\nanswer['content']")
    assert rlm._persistent_env is None  # `with` closed it

    turn = bodies(server)[-1]["messages"][-1]["content"]
    assert "The REPL holds 2 contexts: context_0 … context_1" in turn
    assert "conversation of 1 earlier completion in `history`" in turn


def test_what_is_not_data_is_named_for_the_model_to_rebuild(server, kwargs_for, bodies):
    server.push(answer("```repl\ndef double(x):\n    return 2 * x\nkept = double(21)\n```"), answer(submit("'ok'")))
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process", persistent=True)
    rlm.completion("ctx", "Make a helper.")
    assert rlm._persistent_env.locals["kept"] == 42 and "double" not in rlm._persistent_env.locals
    server.push(answer(submit("str(kept)")))
    assert rlm.completion("ctx", "Use it.").response == "42"
    first_turn = bodies(server)[-1]["messages"][-1]["content"]
    assert "Not carried over from earlier completions" in first_turn and "double (function)" in first_turn
    rlm.close()
    assert rlm._persistent_env is None


def test_without_persistence_each_completion_starts_afresh(server, kwargs_for):
    server.push(answer("```repl\nkept = 1\n```"), answer(submit("'one'")))
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process")
    rlm.completion("ctx", "q")
    assert rlm.persistent is False and rlm._persistent_env is None
    server.push(answer(submit("str(kept)")), answer(submit("'gone'")))
    assert rlm.completion("ctx", "q").response == "gone"  # `kept` was not there: the first attempt failed
