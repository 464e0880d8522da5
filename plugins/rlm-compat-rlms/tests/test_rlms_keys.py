"""``rlm_compat_rlms.RLM``: each backend's key and server go to that backend's connector, and nowhere else.

Two loopback OpenAI-compatible servers stand for two providers. The root model's code calls ``llm_query`` so the
sub request really happens; each server must see only its own backend's key, never the other's (nor the key in
the environment when a backend brings its own).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_compat_rlms import RLM
from rlm_host.testing import OpenAIServer
from rlm_host.testing import openai_answer as answer

KEY_A, KEY_B, KEY_ENV = "sk-root-AAAA-1111", "sk-sub-BBBB-2222", "sk-env-CCCC-3333"
CODE = "```repl\nreply = llm_query('Say hi to the root.')\nprint(reply)\n```"


def seen(server: OpenAIServer) -> tuple[set[str], str]:
    """(the Authorization headers ``server`` received, everything it received as one string)."""
    requests = list(server.requests)
    headers = {r.headers.get("authorization", "") for r in requests}
    everything = json.dumps([[dict(r.headers), r.body if isinstance(r.body, (dict, str)) else str(r.body)]
                             for r in requests], default=str)
    return headers, everything


@pytest.fixture
def servers(rlm_isolated, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY_ENV)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with OpenAIServer() as root, OpenAIServer() as sub:
        root.push(answer(CODE), answer("FINAL_VAR('reply')"))
        sub.push(answer("hi from the sub-model"))
        yield root, sub


def run(root: OpenAIServer, sub_kwargs: dict) -> object:
    rlm = RLM(backend="openai", backend_kwargs={"model_name": "root-model", "base_url": root.url, "api_key": KEY_A},
              other_backends=["openai"], other_backend_kwargs=[{"model_name": "sub-model", **sub_kwargs}],
              environment="monty", max_iterations=4, max_depth=1)
    return rlm.completion(prompt="some context", root_prompt="Greet.")


def test_each_backend_sends_only_its_own_key_to_its_own_server(servers):
    root, sub = servers
    completion = run(root, {"base_url": sub.url, "api_key": KEY_B})
    assert completion.response == "hi from the sub-model", completion.run.error
    root_headers, root_seen = seen(root)
    sub_headers, sub_seen = seen(sub)
    assert root_headers == {f"Bearer {KEY_A}"} and len(root.requests) == 2
    assert sub_headers == {f"Bearer {KEY_B}"} and len(sub.requests) == 1
    assert KEY_B not in root_seen and KEY_ENV not in root_seen
    assert KEY_A not in sub_seen and KEY_ENV not in sub_seen
    sub_body = sub.requests[0].body if isinstance(sub.requests[0].body, dict) else json.loads(sub.requests[0].body)
    assert sub_body["model"] == "sub-model" and "Say hi to the root." in json.dumps(sub_body)


def test_a_backend_without_a_key_uses_its_providers_variable_not_the_roots_key(servers):
    root, sub = servers
    completion = run(root, {"base_url": sub.url})
    assert completion.response == "hi from the sub-model", completion.run.error
    assert seen(root)[0] == {f"Bearer {KEY_A}"}
    sub_headers, sub_seen = seen(sub)
    assert sub_headers == {f"Bearer {KEY_ENV}"} and KEY_A not in sub_seen


def test_the_roots_base_url_is_not_a_run_option_for_the_other_backends(servers):
    root, sub = servers
    completion = run(root, {"base_url": sub.url})
    start = json.loads(Path(completion.run.trajectory_path).read_text().splitlines()[0])
    assert start["data"]["settings"]["base_url"] is None  # a run option would apply to every connector of the run
    assert start["data"]["model"] == "openai:root-model" and start["data"]["sub_model"] == "openai:sub-model"


def test_a_key_without_a_model_name_is_refused_not_sent_to_the_configured_model():
    with pytest.raises(TypeError, match="backend_kwargs has api_key but no model_name"):
        RLM(backend="anthropic", backend_kwargs={"api_key": KEY_B})
    with pytest.raises(TypeError, match=r"other_backend_kwargs\[0\] has api_key and base_url but no model_name"):
        RLM(backend="openai", backend_kwargs={"model_name": "m"}, other_backends=["openai"],
            other_backend_kwargs=[{"api_key": KEY_B, "base_url": "http://127.0.0.1:9/v1"}])
