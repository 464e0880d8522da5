"""``rlm_compat_rlms.RLM``: a program written for the authors' package runs by changing its import. Each completion
is a real rlm run of the ``rlms`` loop — rlm's openai connector talking to a loopback OpenAI-compatible server,
the model's code in a real sandbox — that ends the authors' way and answers in their types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_compat_rlms import RLM
from rlm_compat_rlms.clients import get_client
from rlm_compat_rlms.core.types import ModelUsageSummary
from rlm_compat_rlms.utils.exceptions import RunFailedError
from rlm_host import ConfigError
from rlm_host.testing import openai_answer as answer

SUBMIT = "Done.\n```repl\nanswer['content'] = str(len(context))\nanswer['ready'] = True\n```"


def test_a_completion_is_a_run_of_the_rlms_loop_answered_in_the_authors_types(server, kwargs_for, bodies, capsys):
    server.push(answer("First a look.\n```repl\nprint(len(context))\n```"), answer(SUBMIT))
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(server, "gpt-test"), environment="local", max_iterations=4)
    completion = rlm.completion("hello world", root_prompt="How long is it?")
    assert completion.response == "11" and completion.root_model == "gpt-test" and completion.metadata is None
    assert completion.usage_summary.model_usage_summaries == {"gpt-test": ModelUsageSummary(2, 22, 14, None)}
    assert completion.prompt == "hello world" and completion.execution_time > 0
    run = completion.run
    assert (run.environment, run.sandbox, run.steps, run.termination_reason) == ("rlms", "process", 2, "final")
    assert Path(run.trajectory_path).is_file()

    first, second = bodies(server)
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    system, opening = (m["content"] for m in first["messages"])
    assert 'answer["ready"] = True' in system and "rlm_query(prompt, model=None)" in system
    assert "Answer the following: How long is it?" in opening and "str of 11 characters" in opening
    assert "Turn 1 of 4." in opening
    assert all("hello world" not in m["content"] for m in first["messages"])  # the context stays in the REPL
    assert second["messages"][-1] == {"role": "user", "content": "REPL output:\n11\n\nTurn 2 of 4."}
    assert server.requests[0].headers["authorization"] == "Bearer sk-test-kwargs-0000"


def test_local_is_full_python_in_the_process_sandbox_and_says_once_it_is_no_boundary(server, kwargs_for, capsys):
    code = ("```repl\nimport collections\nclass Box:\n    pass\nfirst = next((w for w in context.split() if "
            "w.startswith('w')), None)\nanswer['content'] = first + str(collections.Counter(context)['l'])\n"
            "answer['ready'] = True\n```")
    server.push(answer(code), answer(code))
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="local")
    assert rlm.completion("hello world").response == "world3"
    assert capsys.readouterr().err.count("NOT a security boundary") == 1
    assert rlm.completion("hello world").response == "world3"
    assert "NOT a security boundary" not in capsys.readouterr().err  # once per RLM


@pytest.mark.parametrize("reply", ["```repl\nFINAL(str(len(context)))\n```", "Counted it.\nFINAL(11)",
                                   "```repl\nn = str(len(context))\n```\nFINAL_VAR(n)"])
def test_rlms_finish_with_final_too(server, kwargs_for, reply):
    server.push(answer(reply))
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="monty", max_iterations=2)
    completion = rlm.completion("hello world", "How long?")
    assert completion.response == "11" and completion.run.sandbox == "monty"


def test_a_reply_without_code_gets_the_next_turn_and_the_turns_running_out_get_one_more_call(
        server, kwargs_for, bodies):
    server.push(answer("Let me think about it."), answer("```repl\nprint('still')\n```"), answer("It is 11."))
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process", max_iterations=2)
    completion = rlm.completion("hello world", "How long?")
    assert completion.response == "It is 11." and completion.run.termination_reason == "max_steps"
    second, third = bodies(server)[1:]
    assert second["messages"][-2:] == [{"role": "assistant", "content": "Let me think about it."},
                                       {"role": "user", "content": "Turn 2 of 2."}]
    assert "You have used all your turns" in third["messages"][-1]["content"]


def test_without_a_question_the_model_is_shown_only_the_context_shape(server, kwargs_for, bodies):
    server.push(answer(SUBMIT))
    RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process").completion(["ab", "cde"])
    opening = bodies(server)[0]["messages"][1]["content"]
    assert opening.startswith("Your context is a list of 5 characters in total, in parts of [2, 3] characters")
    assert "Answer the following" not in opening


def test_custom_system_prompt_user_prologue_and_orchestrator(server, kwargs_for, bodies):
    server.push(answer(SUBMIT))
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process", orchestrator=False,
              custom_system_prompt="Be brief.{custom_tools_section} Use the REPL.", user_prologue="Tip: count.")
    rlm.completion("hello world", "How long?")
    system, opening = (m["content"] for m in bodies(server)[0]["messages"])
    assert system == "Be brief. Use the REPL."  # rlms fills the placeholder; no orchestration advice
    assert "Tip: count." in opening
    server.push(answer(SUBMIT))
    RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process").completion("x", "q")
    assert "Work as an orchestrator" in bodies(server)[1]["messages"][0]["content"]


def test_sampling_args_reach_the_root_and_sub_sampling_args_the_sub_model(servers, kwargs_for, bodies):
    root, sub = servers
    root.push(answer("```repl\nprint(llm_query('hi'))\n```"), answer(SUBMIT))
    sub.push(answer("hello"))
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(root), other_backends=["openai"],
              other_backend_kwargs=[kwargs_for(sub, "sub-model")], environment="process",
              sampling_args={"temperature": 0.2, "seed": 7}, sub_sampling_args={"temperature": 0.9})
    rlm.completion("hello world", "q")
    assert {k: bodies(root)[0].get(k) for k in ("temperature", "seed")} == {"temperature": 0.2, "seed": 7}
    assert bodies(sub)[0]["temperature"] == 0.9 and "seed" not in bodies(sub)[0]


def lookup(key: str) -> str:
    """Find a part number by name."""
    return {"pump": "P-42"}.get(key, "?")


USE_TOOLS = ("```repl\nanswer['content'] = find('pump') + ' ' + str(LIMITS['max']) + ' ' + str(plain('x'))\n"
             "answer['ready'] = True\n```")


def test_custom_tools_are_functions_and_data_in_the_repl(server, kwargs_for, bodies, trajectory_of):
    """rlms' ``custom_tools``: a function (plain, or with a description) is called on the host through rlm's tool
    bridge and listed in the prompt; a data value is a variable of the REPL."""
    server.push(answer(USE_TOOLS))
    completion = RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="local",
                     custom_tools={"find": {"tool": lookup, "description": "Look up a part by its name."},
                                   "plain": str.upper, "LIMITS": {"max": 3}}).completion("ctx", "q")
    assert completion.response == "P-42 3 X"
    system = bodies(server)[0]["messages"][0]["content"]
    assert "`find(key: str) -> str`: Look up a part by its name." in system
    calls = [e["data"] for e in trajectory_of(completion.run) if e["type"] == "sub_call"
             and e["data"]["kind"] == "tool_call"]
    assert [c["tool"] for c in calls] == ["find", "plain"]


def test_bad_arguments_fail_at_once_by_name(rlm_isolated):
    with pytest.raises(TypeError, match=r"custom_tools\['bad'\] is neither a function nor JSON data"):
        RLM(backend="openai", backend_kwargs={"model_name": "m"}, custom_tools={"bad": object()}).completion("x")
    with pytest.raises(ValueError, match="Unknown backend: 'nope'"):
        RLM(backend="nope")
    with pytest.raises(ValueError, match="other_backends takes exactly one"):
        RLM(other_backends=["openai", "anthropic"], other_backend_kwargs=[{}, {}])
    with pytest.raises(ValueError, match="environment 'modal' is not available"):
        RLM(environment="modal")
    with pytest.raises(ValueError, match="persistent=True is not supported for environment type 'e2b'"):
        RLM(environment="e2b", persistent=True)
    with pytest.raises(TypeError, match="environment_kwargs: gpu not supported"):
        RLM(environment_kwargs={"gpu": True})
    with pytest.raises(ConfigError, match=r"RLM\(max_iterations=…\)"):
        RLM(max_iterations=5000)
    with pytest.raises(TypeError, match="sampling_args'\\]: frequency_penalty not supported"):
        get_client("openai", {"model_name": "m", "sampling_args": {"frequency_penalty": 0.5}})
    with pytest.raises(TypeError, match="default_headers not supported"):
        get_client("openai", {"model_name": "m", "default_headers": {"x": "y"}})
    with pytest.raises(ValueError, match="Invalid prompt type"):
        RLM(backend="openai", backend_kwargs={"model_name": "m"}).completion(42)


def test_max_depth_counts_the_root_and_zero_is_one_plain_model_call(server, kwargs_for, trajectory_of):
    server.push(answer(SUBMIT))
    completion = RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process",
                     max_depth=3).completion("x", "q")
    assert trajectory_of(completion.run)[0]["data"]["settings"]["max_depth"] == 2  # rlms' 3 levels: root + 2
    server.push(answer("just an answer"))
    plain = RLM(backend="openai", backend_kwargs=kwargs_for(server), max_depth=0).completion("What is 2+2?")
    assert plain.response == "just an answer" and plain.run is None
    assert plain.usage_summary.model_usage_summaries["root-model"].total_calls == 1
    assert json.loads(json.dumps(plain.to_dict()))["response"] == "just an answer"


def test_setup_code_runs_before_the_first_turn_and_a_failing_one_says_so(server, kwargs_for):
    server.push(answer("```repl\nanswer['content'] = str(helper + 1)\nanswer['ready'] = True\n```"))
    rlm = RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process",
              environment_kwargs={"setup_code": "helper = 41"})
    assert rlm.completion("x", "q").response == "42"
    broken = RLM(backend="openai", backend_kwargs=kwargs_for(server), environment="process",
                 environment_kwargs={"setup_code": "raise ValueError('no setup today')"})
    with pytest.raises(RunFailedError, match=r"setup_code'\] failed: .*no setup today"):
        broken.completion("x", "q")
