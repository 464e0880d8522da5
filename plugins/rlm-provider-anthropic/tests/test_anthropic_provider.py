"""The anthropic provider, through the REAL official ``anthropic`` SDK against a fake Messages API server.

The real Anthropic API is paid and cannot be reached from the machines these tests run on, so every call goes
to ``fake_anthropic.AnthropicServer``: a real HTTP server on 127.0.0.1 that speaks the Messages API wire format
(``POST /v1/messages``) and records what the SDK sent. What that proves and what it cannot: the request the SDK
builds from our arguments (system placement, merged turns, max_tokens, headers), how the SDK's responses and
exceptions are turned into Completions and ModelErrors, and the retry timing; it does not prove that the real
API accepts the request (model ids, schema details) — that needs a key and the network.

``TestAnthropicContract`` runs the provider contract suite (answers, retries, errors, keys, registration,
``--model auto``); the tests beside it are the Messages API's own. Waits are kept short: the file runs in seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_anthropic import (  # noqa: F401  (server_fixture: the fixture `server`)
    AnthropicServer,
    Behaviour,
    answer,
    error,
    message_body,
    server_fixture,
)
from rlm_host import ConfigError, ModelError
from rlm_host.sdk.embedding import load_settings
from rlm_host.sdk.models import ModelOptions, RetryPolicy, resolve_connector
from rlm_host.testing import ProviderContract

from rlm_provider_anthropic.connector import PLACEHOLDER_KEY, AnthropicConnector, to_messages_api
from rlm_provider_anthropic.hooks import DEFAULT_MODEL
from rlm_provider_anthropic.settings import AnthropicSettings

DIST = "rlm-provider-anthropic"
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "What is 2+2?"}]


class TestAnthropicContract(ProviderContract):
    provider = "anthropic"
    distribution = DIST
    model = DEFAULT_MODEL
    key_help = "ANTHROPIC_API_KEY"
    # genai-prices' windows, else our table's for a model it lacks (claude-mythos-5, claude-instant)
    context_windows = {"claude-haiku-5-5": 1_000_000, "claude-3-5-haiku-20241022": 200_000,
                       "claude-opus-4-8": 1_000_000, "claude-sonnet-4-5-20250929": 200_000, "claude-2.1": 200_000,
                       "claude-mythos-5": 200_000, "claude-instant-1.2": 100_000, "gpt-4o": None}
    lazy_modules = ("anthropic",)
    fake_server = AnthropicServer
    other_env = ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN")  # read by the connector and by the SDK

    def answer(self, text, usage=(11, 7)):
        body = message_body(text)
        if usage is None:
            del body["usage"]
        else:
            body["usage"] = {"input_tokens": usage[0], "output_tokens": usage[1]}
        return Behaviour(body=body)

    def error(self, status, message):
        return error(status, message)

    def malformed_answers(self):
        tool_use = [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]
        return [
            (answer("", content=[]), "empty 'content' list (stop_reason: end_turn)"),
            (answer("", content=tool_use, stop_reason="tool_use"),
             "no text block in content (blocks: tool_use) (stop_reason: tool_use)"),
            (answer("", stop_reason="max_tokens"), "text is empty (stop_reason: max_tokens)"),
            (Behaviour(body={"id": "msg_x", "type": "message", "role": "assistant"}), "no 'content' in response"),
        ]

    def sent_key(self, request):
        return sent_key(request)


def sent_key(request) -> str:
    """The key a request carried: ``x-api-key``, or ``Authorization: Bearer`` (what some SDK versions send)."""
    return request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")


def connect(server: AnthropicServer, *, settings=None, **options) -> AnthropicConnector:
    """A connector to the fake server that does not retry."""
    options = {"base_url": server.url, "api_key": "sk-ant-test", "max_retries": 0, **options}
    return AnthropicConnector("claude-haiku-5-5", ModelOptions(**options), settings, environ={})


# -- the request sent and the answer ---------------------------------------------------------------------------


def test_the_request_sent_and_the_answer(server):
    server.push(answer("4", input_tokens=12, output_tokens=1))
    result = connect(server, temperature=0.0).complete(MESSAGES)  # ignored: the Messages API has no temperature
    assert result.finish_reason == "end_turn" and result.model == "claude-test" and result.raw == {"id": "msg_test_01"}
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert sent_key(request) == "sk-ant-test" and request.headers["anthropic-version"]
    assert request.body == {
        "model": "claude-haiku-5-5",
        "max_tokens": 4096,  # required by the Messages API: the settings' default
        "system": "be brief",
        "messages": [{"role": "user", "content": "What is 2+2?"}],
    }


def test_system_messages_go_to_the_system_parameter_and_same_role_turns_are_merged(server):
    server.push(answer("ok"))
    messages = [
        {"role": "system", "content": "You are an RLM."},
        {"role": "user", "content": "context: 3 files"},
        {"role": "user", "content": "task: count them"},
        {"role": "assistant", "content": "```repl\nprint(len(context))\n```"},
        {"role": "system", "content": "Answer with FINAL(...)."},
        {"role": "assistant", "content": ""},  # empty: left out (the API refuses empty text)
        {"role": "user", "content": "3"},
        {"role": "assistant", "content": "FINAL(3)  \n"},  # a final assistant turn: trailing whitespace refused
    ]
    connect(server).complete(messages)
    body = server.bodies[0]
    assert body["system"] == "You are an RLM.\n\nAnswer with FINAL(...)."
    assert body["messages"] == [
        {"role": "user", "content": "context: 3 files\n\ntask: count them"},
        {"role": "assistant", "content": "```repl\nprint(len(context))\n```"},
        {"role": "user", "content": "3"},
        {"role": "assistant", "content": "FINAL(3)"},
    ]
    assert all(m["role"] != "system" for m in body["messages"])


def test_no_system_message_sends_no_system_parameter_and_options_set_max_tokens(server):
    server.push(answer("ok"))
    connect(server, max_tokens=64).complete([{"role": "user", "content": "hi"}])
    assert "system" not in server.bodies[0] and server.bodies[0]["max_tokens"] == 64


def test_conversion_errors_are_clear_and_send_nothing():
    with pytest.raises(ModelError, match="no user or assistant message"):
        to_messages_api([{"role": "system", "content": "only a system prompt"}])
    with pytest.raises(ModelError, match="unsupported message role 'tool'"):
        to_messages_api([{"role": "tool", "content": "x"}])


def test_cache_tokens_count_as_input_tokens(server):
    usage = {"input_tokens": 5, "output_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 7}
    server.push(answer("ok", usage=usage))
    result = connect(server).complete(MESSAGES)
    assert (result.input_tokens, result.output_tokens) == (112, 3)
    assert result.raw["cache_creation_input_tokens"] == 100 and result.raw["cache_read_input_tokens"] == 7


def test_text_blocks_are_joined_and_other_blocks_ignored(server):
    blocks = [{"type": "thinking", "thinking": "hmm", "signature": "sig"},
              {"type": "text", "text": "The answer "}, {"type": "text", "text": "is 4."}]
    server.push(answer("", content=blocks))
    assert connect(server).complete(MESSAGES).text == "The answer is 4."


# -- errors the API has of its own -----------------------------------------------------------------------------


def test_529_overloaded_is_retried_and_the_sdk_does_not_retry_on_its_own(server):
    server.push(error(529, "Overloaded"), answer("fine"))
    reported: list[tuple[int, float, str]] = []
    connector = AnthropicConnector("claude-haiku-5-5", ModelOptions(base_url=server.url, api_key="k"),
                                   retry_policy=RetryPolicy(max_retries=1, base_delay=0.01), environ={})
    assert connector.complete(MESSAGES, on_retry=lambda *a: reported.append(a)).text == "fine"
    assert [r[2] for r in reported] == ["HTTP 529 Overloaded"]
    assert server.requests[1].headers.get("x-stainless-retry-count", "0") == "0"


def test_403_says_the_key_may_not_use_this(server):
    server.push(error(403, "Your API key does not have permission to use the specified resource."))
    with pytest.raises(ModelError, match="HTTP 403 Forbidden: the API key in ANTHROPIC_API_KEY may not use this"):
        connect(server, max_retries=2).complete(MESSAGES)
    assert len(server.requests) == 1


# -- configuration ---------------------------------------------------------------------------------------------


def test_base_url_from_the_environment_and_placeholder_key(server):
    server.push(answer("a"), answer("b"))
    environ = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-ant-env"}
    AnthropicConnector("claude-haiku-5-5", ModelOptions(), environ=environ).complete(MESSAGES)
    environ = {"ANTHROPIC_BASE_URL": server.url}
    AnthropicConnector("claude-haiku-5-5", ModelOptions(), environ=environ).complete(MESSAGES)
    assert [sent_key(r) for r in server.requests] == ["sk-ant-env", PLACEHOLDER_KEY]


def test_settings_section(server):
    server.push(answer("a"))
    settings = {"base_url": server.url, "api_key_env": "MY_KEY", "max_retries": 1, "timeout": 7, "max_tokens": 99,
                "context_window": 4096}
    connector = AnthropicConnector("claude-x", ModelOptions(), settings, environ={"MY_KEY": "sk-mine"})
    assert (connector.retry_policy.max_retries, connector.timeout, connector.context_window) == (1, 7, 4096)
    connector.complete(MESSAGES)
    [request] = server.requests
    assert request.body["max_tokens"] == 99 and "temperature" not in request.body
    assert sent_key(request) == "sk-mine"
    options = ModelOptions(max_retries=0, timeout=3, max_tokens=10)  # explicit options beat the section
    explicit = AnthropicConnector("m", options, AnthropicSettings(base_url=server.url, max_retries=5, timeout=9))
    assert (explicit.retry_policy.max_retries, explicit.timeout, explicit.max_tokens) == (0, 3, 10)
    with pytest.raises(ConfigError, match=r"\[provider.anthropic\]: max_token: Extra inputs"):
        AnthropicConnector("m", ModelOptions(base_url=server.url), {"max_token": 2})


def test_rlm_toml_section_reaches_the_request(server, rlm_isolated, rlm_plugin_host):
    server.push(answer("from the section"))
    (rlm_isolated.work / "rlm.toml").write_text(f'[provider.anthropic]\nbase_url = "{server.url}"\nmax_tokens = 256\n')
    host = rlm_plugin_host(DIST)
    settings = load_settings(environ={}, cwd=rlm_isolated.work, host=host, trust=True)  # the project's own file
    connector = resolve_connector("claude:claude-haiku-5-5", host=host, settings=settings,
                                  options=ModelOptions(api_key="sk-ant-toml"))
    assert connector.complete(MESSAGES).text == "from the section"
    assert server.bodies[0]["max_tokens"] == 256


# -- a whole run -----------------------------------------------------------------------------------------------


def test_rlm_run_with_model_auto_reaches_the_messages_api(server, tmp_path):
    """End to end: `rlm run` with only ANTHROPIC_API_KEY set picks this provider and prints its answer."""
    server.push(answer("FINAL(4)", input_tokens=50, output_tokens=3))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "OPENAI_", "GEMINI_", "GOOGLE_"))}
    env.update(ANTHROPIC_API_KEY="sk-ant-run", ANTHROPIC_BASE_URL=server.url, RLM_HOME=str(tmp_path / "home"))
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    rlm = str(Path(sys.executable).with_name("rlm"))
    command = [rlm, "run", "What is 2+2?", "--quiet"]
    result = subprocess.run(command, check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, "4"), result.stderr[-2000:]
    [request] = server.requests
    assert request.body["model"] == DEFAULT_MODEL and request.body["system"].startswith("You are a Recursive")
    assert request.body["messages"][0]["role"] == "user" and "What is 2+2?" in request.body["messages"][0]["content"]
