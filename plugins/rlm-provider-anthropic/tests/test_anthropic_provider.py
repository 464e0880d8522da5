"""The anthropic provider, through the REAL official ``anthropic`` SDK against a fake Messages API server.

The real Anthropic API is paid and cannot be reached from the machines these tests run on, so every call goes
to ``fake_anthropic.AnthropicServer``: a real HTTP server on 127.0.0.1 that speaks the Messages API wire format
(``POST /v1/messages``) and records what the SDK sent. What that proves and what it cannot: the request the SDK
builds from our arguments (system placement, merged turns, max_tokens, headers), how the SDK's responses and
exceptions are turned into Completions and ModelErrors, and the retry timing; it does not prove that the real
API accepts the request (model ids, schema details) — that needs a key and the network.

Waits are kept short so the whole file runs in a few seconds.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fake_anthropic import (  # noqa: F401  (server_fixture: the fixture `server`)
    AnthropicServer,
    Behaviour,
    answer,
    error,
    forbidden,
    message_body,
    rate_limited,
    server_error,
    server_fixture,
    slow,
    truncated,
    unauthorized,
)
from rlm_host.config import load_settings
from rlm_host.errors import ConfigError
from rlm_host.llm.protocol import ModelConnector, ModelError, ModelOptions
from rlm_host.llm.resolve import auto_model, resolve_connector
from rlm_host.llm.retry import RetryPolicy
from rlm_host.plugins.host import PluginHost

from rlm_provider_anthropic import connector as connector_module
from rlm_provider_anthropic.connector import AnthropicConnector, context_window_for, create, to_messages_api
from rlm_provider_anthropic.hooks import DEFAULT_MODEL
from rlm_provider_anthropic.settings import AnthropicSettings

DIST = "rlm-provider-anthropic"
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "What is 2+2?"}]


def connect(server: AnthropicServer, *, retries: int = 2, timeout: float = 5.0, settings=None, **options):
    """A connector to the fake server with fast backoff, and the list its retries are reported to."""
    reported: list[tuple[int, float, str]] = []
    connector = AnthropicConnector(
        "claude-haiku-5-5",
        ModelOptions(base_url=server.url, api_key="sk-ant-test", timeout=timeout, **options),
        settings,
        retry_policy=RetryPolicy(max_retries=retries, base_delay=0.01, max_delay=2.0),
        on_retry=lambda *args: reported.append(args),
        environ={},
    )
    return connector, reported


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- answers and the request sent ------------------------------------------------------------------------------


def test_answer_with_usage_and_the_request_sent(server):
    server.push(answer("4", input_tokens=12, output_tokens=1))
    connector, reported = connect(server, temperature=0.0)  # ignored: the Messages API has no temperature
    assert isinstance(connector, ModelConnector)
    result = connector.complete(MESSAGES)
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("4", 12, 1)
    assert result.finish_reason == "end_turn" and result.model == "claude-test" and result.seconds > 0
    assert result.raw == {"id": "msg_test_01"} and reported == []
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert "sk-ant-test" in (request.headers.get("x-api-key", "") + request.headers.get("authorization", ""))
    assert request.headers["anthropic-version"]
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
    connect(server)[0].complete(messages)
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
    connect(server, max_tokens=64)[0].complete([{"role": "user", "content": "hi"}])
    assert "system" not in server.bodies[0] and server.bodies[0]["max_tokens"] == 64


def test_conversion_errors_are_clear_and_send_nothing():
    with pytest.raises(ModelError, match="no user or assistant message"):
        to_messages_api([{"role": "system", "content": "only a system prompt"}])
    with pytest.raises(ModelError, match="unsupported message role 'tool'"):
        to_messages_api([{"role": "tool", "content": "x"}])


def test_cache_tokens_count_as_prompt_tokens(server):
    usage = {"input_tokens": 5, "output_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 7}
    server.push(Behaviour(body=message_body("ok", usage=usage)))
    result = connect(server)[0].complete(MESSAGES)
    assert (result.prompt_tokens, result.completion_tokens) == (112, 3)
    assert result.raw["cache_creation_input_tokens"] == 100 and result.raw["cache_read_input_tokens"] == 7


def test_text_blocks_are_joined_and_other_blocks_ignored(server):
    blocks = [{"type": "thinking", "thinking": "hmm", "signature": "sig"},
              {"type": "text", "text": "The answer "}, {"type": "text", "text": "is 4."}]  # fmt: skip
    server.push(Behaviour(body=message_body(content=blocks)))
    assert connect(server)[0].complete(MESSAGES).text == "The answer is 4."


@pytest.mark.parametrize(
    "body, problem",
    [
        (message_body(content=[], stop_reason="end_turn"), "empty 'content' list (stop_reason: end_turn)"),
        (
            message_body(content=[{"type": "tool_use", "id": "t1", "name": "f", "input": {}}], stop_reason="tool_use"),
            "no text block in content (blocks: tool_use) (stop_reason: tool_use)",
        ),
        (message_body("", stop_reason="max_tokens"), "text is empty (stop_reason: max_tokens)"),
        ({"id": "msg_x", "type": "message", "role": "assistant"}, "no 'content' in response"),
    ],
    ids=["no-blocks", "no-text-block", "empty-text", "no-content"],
)
def test_malformed_answers_come_back_flagged_not_raised_nor_retried(server, body, problem):
    server.push(Behaviour(body=body))
    result = connect(server)[0].complete(MESSAGES)
    assert result.text is None and result.raw["malformed"] == problem
    assert len(server.requests) == 1


def test_concurrent_calls_share_one_client(server):
    server.push(*[answer(f"a{i}") for i in range(6)])
    connector, _ = connect(server)
    with ThreadPoolExecutor(6) as pool:
        texts = list(pool.map(lambda _: connector.complete(MESSAGES).text, range(6)))
    assert sorted(texts) == sorted(f"a{i}" for i in range(6))


# -- retries ---------------------------------------------------------------------------------------------------


def test_429_is_retried_after_the_retry_after_wait(server):
    server.push(rate_limited(retry_after="0.4"), answer("done"))
    connector, reported = connect(server)
    result = connector.complete(MESSAGES)
    assert result.text == "done" and result.raw["attempts"] == 2
    first, second = server.requests
    assert second.at - first.at >= 0.4
    assert reported == [(1, 0.4, "HTTP 429 Too Many Requests")]
    assert second.headers.get("x-stainless-retry-count", "0") == "0"  # the SDK did not retry on its own


def test_500_and_529_overloaded_then_success(server):
    server.push(server_error(500), server_error(529), answer("fine"))
    connector, reported = connect(server, retries=3)
    assert connector.complete(MESSAGES).text == "fine"
    assert [r[2] for r in reported] == ["HTTP 500 Internal Server Error", "HTTP 529 Overloaded"]
    assert all(0 <= r[1] <= 2.0 for r in reported) and len(server.requests) == 3


def test_final_error_after_max_retries_is_one_clear_message(server):
    server.push(*[rate_limited(retry_after=None)] * 3)
    connector, reported = connect(server, retries=2)
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    assert str(info.value) == "anthropic:claude-haiku-5-5: HTTP 429 Too Many Requests after 3 attempts"
    assert len(server.requests) == 3 and [r[0] for r in reported] == [1, 2]


def test_timeout_is_retried_then_a_clear_error(server):
    server.push(slow(3.0), slow(3.0))
    connector, reported = connect(server, retries=1)
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES, timeout=0.3)
    assert time.monotonic() - started < 2.5
    expected = f"anthropic:claude-haiku-5-5: no answer from {server.url} within 0.3 s (timeout) after 2 attempts"
    assert str(info.value) == expected
    assert len(server.requests) == 2 and len(reported) == 1


def test_timeout_then_success(server):
    server.push(slow(3.0), answer("in time"))
    connector, _ = connect(server, timeout=0.3)
    assert connector.complete(MESSAGES).text == "in time"


@pytest.mark.parametrize("cut", [False, True], ids=["bad-json", "cut-connection"])
def test_truncated_body_is_retried_then_a_clear_error(server, cut):
    server.push(truncated(cut_connection=cut), answer("whole"))
    connector, reported = connect(server, retries=1)
    assert connector.complete(MESSAGES).text == "whole" and len(reported) == 1
    server.push(truncated(cut_connection=cut), truncated(cut_connection=cut))
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    expected = "broken mid-response" if cut else "malformed JSON in response"
    assert expected in str(info.value) and str(info.value).endswith("after 2 attempts")


def test_bad_key_is_not_retried_and_says_which_variable_to_set(server):
    server.push(unauthorized(), forbidden())
    connector, reported = connect(server)
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    message = str(info.value)
    assert message.startswith("anthropic:claude-haiku-5-5: HTTP 401 Unauthorized: invalid API key")
    assert message.endswith("— set ANTHROPIC_API_KEY") and "invalid x-api-key" in info.value.hint
    with pytest.raises(ModelError, match="HTTP 403 Forbidden: the API key in ANTHROPIC_API_KEY may not use this"):
        connector.complete(MESSAGES)
    assert len(server.requests) == 2 and reported == []


def test_other_4xx_are_not_retried(server):
    server.push(error(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"))
    server.push(error(404, "not_found_error", "model: claude-nope"))
    connector, reported = connect(server)
    with pytest.raises(ModelError, match=r"HTTP 400 Bad Request: prompt is too long: 250000 tokens > 200000 maximum$"):
        connector.complete(MESSAGES)
    with pytest.raises(ModelError, match="HTTP 404 Not Found: model: claude-nope") as info:
        connector.complete(MESSAGES)
    assert "Claude model id" in info.value.hint
    assert len(server.requests) == 2 and reported == []


def test_connection_refused_names_the_url():
    url = f"http://127.0.0.1:{free_port()}"
    connector = AnthropicConnector(
        "claude-haiku-5-5", ModelOptions(base_url=url), retry_policy=RetryPolicy(max_retries=1, base_delay=0.01),
        environ={},
    )  # fmt: skip
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    assert str(info.value) == f"anthropic:claude-haiku-5-5: cannot reach {url}: connection refused after 2 attempts"


# -- configuration ---------------------------------------------------------------------------------------------


def test_missing_key_is_a_clear_error():
    with pytest.raises(ModelError) as info:
        AnthropicConnector("claude-haiku-5-5", ModelOptions(), environ={})
    assert str(info.value) == "no API key for anthropic: set ANTHROPIC_API_KEY"
    assert "export ANTHROPIC_API_KEY=" in info.value.hint
    with pytest.raises(ModelError, match="set MY_CLAUDE_KEY"):
        AnthropicConnector("claude-haiku-5-5", ModelOptions(), {"api_key_env": "MY_CLAUDE_KEY"}, environ={})


def test_key_and_base_url_from_the_environment_and_placeholder_key(server):
    server.push(answer("a"), answer("b"))
    environ = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-ant-env"}
    AnthropicConnector("claude-haiku-5-5", ModelOptions(), environ=environ).complete(MESSAGES)
    AnthropicConnector("claude-haiku-5-5", ModelOptions(), environ={"ANTHROPIC_BASE_URL": server.url}).complete(
        MESSAGES
    )
    sent = [r.headers.get("x-api-key", "") + r.headers.get("authorization", "") for r in server.requests]
    assert "sk-ant-env" in sent[0] and connector_module.PLACEHOLDER_KEY in sent[1]


def test_settings_section(server):
    server.push(answer("a"))
    settings = {"base_url": server.url, "api_key_env": "MY_KEY", "max_retries": 1, "timeout": 7, "max_tokens": 99,
                "context_window": 4096}  # fmt: skip
    connector = AnthropicConnector("claude-x", ModelOptions(), settings, environ={"MY_KEY": "sk-mine"})
    assert (connector.retry_policy.max_retries, connector.timeout, connector.context_window) == (1, 7, 4096)
    connector.complete(MESSAGES)
    [request] = server.requests
    assert request.body["max_tokens"] == 99 and "temperature" not in request.body
    assert "sk-mine" in request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
    options = ModelOptions(max_retries=0, timeout=3, max_tokens=10)  # explicit options beat the section
    explicit = AnthropicConnector("m", options, AnthropicSettings(base_url=server.url, max_retries=5, timeout=9))
    assert (explicit.retry_policy.max_retries, explicit.timeout, explicit.max_tokens) == (0, 3, 10)
    with pytest.raises(ConfigError, match=r"\[provider.anthropic\]: max_token: Extra inputs"):
        AnthropicConnector("m", ModelOptions(base_url=server.url), {"max_token": 2})


def test_rlm_toml_section_reaches_the_connector_through_the_host(server, tmp_path):
    server.push(answer("from the section"))
    (tmp_path / "rlm.toml").write_text(f'[provider.anthropic]\nbase_url = "{server.url}"\nmax_tokens = 256\n')
    environ = {"RLM_PLUGINS": DIST, "ANTHROPIC_API_KEY": "sk-ant-toml"}
    host = PluginHost(environ=environ)
    settings = load_settings(environ=environ, cwd=tmp_path, host=host)
    assert isinstance(settings.component("provider", "anthropic"), AnthropicSettings)
    connector = resolve_connector("claude:claude-haiku-5-5", host=host, settings=settings)  # the alias
    assert connector.name == "anthropic:claude-haiku-5-5"
    assert connector.complete(MESSAGES).text == "from the section"
    assert server.bodies[0]["max_tokens"] == 256
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "rlm.toml").write_text("[provider.anthropic]\nmax_tokns = 5\n")
    with pytest.raises(ConfigError, match="max_tokns"):
        load_settings(environ=environ, cwd=tmp_path / "bad", host=host)


def test_context_windows():
    assert context_window_for("claude-haiku-5-5") == context_window_for("claude-3-5-haiku-20241022") == 200_000
    assert context_window_for("claude-opus-4-8") == context_window_for("claude-sonnet-4-5-20250929") == 200_000
    assert context_window_for("claude-2.1") == 100_000 and context_window_for("gpt-4o") is None
    assert create("claude-sonnet-4-6", ModelOptions(api_key="k")).context_window == 200_000


# -- registration, --model auto, import cost -------------------------------------------------------------------


def test_registers_the_provider():
    collected = PluginHost(environ={"RLM_PLUGINS": DIST}).collect_all()
    dist = next(d for d in collected.distributions if d.name == DIST)
    assert dist.status == "ok", dist.errors
    assert dist.provides == {"provider": ["anthropic"]}
    spec = collected.providers().get("claude")  # alias
    assert spec.name == "anthropic" and spec.key_env == ("ANTHROPIC_API_KEY",)
    assert spec.default_model == DEFAULT_MODEL == "claude-haiku-5-5"
    assert spec.readiness().ok and spec.settings_model() is AnthropicSettings


def test_auto_model_picks_anthropic_when_only_its_key_is_set():
    every_plugin = PluginHost(environ={})  # every installed plugin, local models included
    model, notice = auto_model(every_plugin, environ={"ANTHROPIC_API_KEY": "sk-ant-test"})
    assert (model, notice) == (f"anthropic:{DEFAULT_MODEL}", "")
    model, _ = auto_model(every_plugin, environ={"ANTHROPIC_API_KEY": "sk-ant-test", "OPENAI_API_KEY": "sk-test"})
    assert model.startswith("openai:")  # a configured OpenAI endpoint wins (rlm_host.llm.resolve)
    model, _ = auto_model(every_plugin, environ={})
    assert not model.startswith("anthropic:")


def test_importing_the_plugin_does_not_import_the_sdk():
    code = (
        "import sys, rlm_provider_anthropic.hooks, rlm_provider_anthropic.connector, rlm_provider_anthropic.settings\n"
        "from rlm_provider_anthropic.connector import create\n"
        "from rlm_host.llm.protocol import ModelOptions\n"
        "c = create('claude-haiku-5-5', ModelOptions(api_key='k'))\n"
        "assert 'anthropic' not in sys.modules, 'anthropic imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


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
