"""``rlm_compat_rlms``: a program written for the official package (``from rlm import RLM``) runs on our engine by
changing the import. Driven through our real openai connector against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_compat_rlms import RLM
from rlm_host.testing import OpenAIServer
from rlm_host.testing import openai_answer as answer

CODE = "```repl\nprint(len(context))\n```"


def test_the_official_call_shape_runs_on_our_engine(rlm_isolated, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAIServer() as server:
        server.push(answer(CODE), answer("FINAL(11)"))
        rlm = RLM(backend="openai", backend_kwargs={"model_name": "gpt-test", "base_url": server.url,
                                                    "api_key": "sk-from-kwargs"},
                  environment="process", max_iterations=4, max_depth=1)  # fmt: skip
        completion = rlm.completion(prompt="hello world", root_prompt="How long is it?")
        requests = list(server.requests)
    assert completion.response == "11" and completion.root_model == "openai:gpt-test"
    assert completion.prompt == "hello world" and completion.execution_time > 0
    usage = completion.usage_summary.model_usage_summaries["openai:gpt-test"]
    assert usage.total_calls == 2 and usage.total_input_tokens == 22 and usage.total_output_tokens == 14
    assert completion.to_dict()["usage_summary"]["model_usage_summaries"]["openai:gpt-test"]["total_calls"] == 2
    # the key went to this run's connector, never into the environment
    assert requests[0].headers.get("authorization") == "Bearer sk-from-kwargs"
    import os

    assert "OPENAI_API_KEY" not in os.environ
    body = requests[0].body if isinstance(requests[0].body, dict) else json.loads(requests[0].body)
    assert body["model"] == "gpt-test" and "How long is it?" in json.dumps(body["messages"])
    run = completion.run
    assert run.sandbox == "process" and Path(run.trajectory_path).is_file()
    start = json.loads(Path(run.trajectory_path).read_text().splitlines()[0])
    settings = start["data"]["settings"]
    assert settings["max_steps"] == 4 and settings["max_depth"] == 0  # their max_depth 1 = no recursion


def test_what_we_do_not_reproduce_is_refused_by_name():
    with pytest.raises(TypeError, match="custom_tools"):
        RLM(backend="openai", backend_kwargs={"model_name": "m"}, custom_tools={"f": print})
    with pytest.raises(TypeError, match="backend 'portkey' is not supported"):
        RLM(backend="portkey", backend_kwargs={"model_name": "m"})
    with pytest.raises(TypeError, match="no_such_option"):
        RLM(no_such_option=1)
    RLM(backend="openai", backend_kwargs={"model_name": "m"}, verbose=True, logger=None)  # accepted, unused


def test_rlm_the_official_import_name_is_not_ours():
    import importlib.util

    spec = importlib.util.find_spec("rlm")
    assert spec is None or "rlm_host" not in (spec.origin or ""), "we never install a module named rlm"
