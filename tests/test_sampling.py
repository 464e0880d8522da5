"""Sampling per role: ``--temperature``, ``--top-p`` and ``--seed`` reach every request of a run, ``--sub-sampling``
changes them for sub-calls, the run records what each role's model was sent, and a provider that cannot honour one
says so once instead of dropping it silently."""

from __future__ import annotations

import json
from pathlib import Path

from rlm_host.testing.openai_server import OpenAIServer, answer

CODE = "```repl\nanswer = llm_query('the sub question')\nprint(answer)\n```"


def test_sampling_options_reach_root_and_sub_calls_and_are_recorded(rlm, isolated_env):
    with OpenAIServer() as server:
        server.push(answer(CODE), answer("sub answer"), answer("FINAL(done)"))
        result = rlm("run", "q", "--model", "openai:gpt-4o-mini", "--sandbox", "monty", "--temperature", "0.3",
                     "--top-p", "0.9", "--seed", "7", "--sub-sampling", "temperature=0.1", "--json",
                     env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url}, plugins=["rlm-sandbox-monty"])
        bodies = [request.body for request in server.requests]
    assert result.returncode == 0, result.stderr
    root_calls = [b for b in bodies if "the sub question" not in json.dumps(b["messages"][-1])]
    [sub_call] = [b for b in bodies if b["messages"][-1]["content"] == "the sub question"]
    assert len(root_calls) == 2
    for body in root_calls:
        assert (body["temperature"], body["top_p"], body["seed"]) == (0.3, 0.9, 7)
    assert (sub_call["temperature"], sub_call["top_p"], sub_call["seed"]) == (0.1, 0.9, 7)
    run = json.loads(result.stdout)
    start = json.loads((Path(isolated_env["WORK"]) / run["trajectory_path"]).read_text().splitlines()[0])
    assert start["data"]["sampling"] == {"root": {"temperature": 0.3, "top_p": 0.9, "seed": 7},
                                         "sub": {"temperature": 0.1, "top_p": 0.9, "seed": 7}}


def test_no_sampling_option_set_sends_none(rlm):
    with OpenAIServer() as server:
        server.push(answer("FINAL(done)"))
        rlm("run", "q", "--model", "openai:gpt-4o-mini", "--sandbox", "monty",
            env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url}, plugins=["rlm-sandbox-monty"])
        [body] = [request.body for request in server.requests]
    assert not {"temperature", "top_p", "seed"} & set(body)


def test_a_provider_that_cannot_honour_an_option_says_so_once(rlm):
    result = rlm("run", "q", "--model", "anthropic:claude-test", "--sub-model", "anthropic:claude-other",
                 "--sandbox", "monty", "--temperature", "0.2", "--base-url", "http://127.0.0.1:9",
                 env={"ANTHROPIC_API_KEY": "test-key"}, plugins=["rlm-sandbox-monty", "rlm-provider-anthropic"])
    notice = "anthropic does not take temperature: it is not sent to anthropic:claude-test"
    assert result.stderr.count(notice) == 1, result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_sampling_value_is_bad_input_naming_the_flag(rlm):
    result = rlm("run", "q", "--model", "scripted:x.json", "--temperature", "5", plugins=[])
    assert result.returncode == 2 and "--temperature" in result.stderr, result.stderr
    result = rlm("run", "q", "--model", "scripted:x.json", "--sub-sampling", "heat=1", plugins=[])
    assert result.returncode == 2 and "unknown sampling option(s) heat" in result.stderr, result.stderr
