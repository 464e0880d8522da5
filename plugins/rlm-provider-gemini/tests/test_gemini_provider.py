"""The gemini provider, through the REAL official ``google-genai`` SDK against a fake Gemini API server.

The real Gemini API is paid (or quota-limited) and cannot be reached from the machines these tests run on, so
every call goes to ``fake_gemini.GeminiServer``: a real HTTP server on 127.0.0.1 that speaks the
``generateContent`` wire format (``POST /v1/models/MODEL:generateContent``, the URL the installed SDK sends) and
records what the SDK sent. What that proves and what it cannot: the request the SDK builds from our arguments
(``systemInstruction``, roles, ``generationConfig``, the key header), how the SDK's responses and exceptions are
turned into Completions and ModelErrors, and the retry timing; it does not prove that the real API accepts the
request (model ids, schema details) — that needs a key and the network.

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
from fake_gemini import (  # noqa: F401  (server_fixture: the fixture `server`)
    Behaviour,
    GeminiServer,
    answer,
    error,
    invalid_key,
    rate_limited,
    response_body,
    server_error,
    server_fixture,
    slow,
    truncated,
)
from rlm_host.config import load_settings
from rlm_host.errors import ConfigError
from rlm_host.llm.protocol import ModelConnector, ModelError, ModelOptions
from rlm_host.llm.resolve import auto_model, resolve_connector
from rlm_host.llm.retry import RetryPolicy
from rlm_host.plugins.host import PluginHost

from rlm_provider_gemini import connector as connector_module
from rlm_provider_gemini.checks import sdk_installed
from rlm_provider_gemini.connector import GeminiConnector, context_window_for, create, to_gemini_contents
from rlm_provider_gemini.hooks import DEFAULT_MODEL
from rlm_provider_gemini.settings import GeminiSettings

DIST = "rlm-provider-gemini"
MODEL = "gemini-3.8-flash"
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "What is 2+2?"}]


def connect(server: GeminiServer, *, retries: int = 2, timeout: float = 5.0, settings=None, **options):
    """A connector to the fake server with fast backoff, and the list its retries are reported to."""
    reported: list[tuple[int, float, str]] = []
    connector = GeminiConnector(
        MODEL,
        ModelOptions(base_url=server.url, api_key="g-test-key", timeout=timeout, **options),
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
    server.push(answer("4", prompt_tokens=12, output_tokens=1))
    connector, reported = connect(server, temperature=0.0, max_tokens=5)
    assert isinstance(connector, ModelConnector)
    result = connector.complete(MESSAGES)
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("4", 12, 1)
    assert result.finish_reason == "STOP" and result.model == "gemini-test-001" and result.seconds > 0
    assert result.raw == {"id": "resp-test-01"} and reported == []
    [request] = server.requests
    assert request.path == f"/v1/models/{MODEL}:generateContent" and request.model == MODEL
    assert request.headers["x-goog-api-key"] == "g-test-key"
    assert request.headers["x-server-timeout"] == "5"  # the per-call timeout reached the SDK
    assert request.body == {
        "contents": [{"role": "user", "parts": [{"text": "What is 2+2?"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "be brief"}]},
        "generationConfig": {"temperature": 0.0, "maxOutputTokens": 5},
    }


def test_system_instruction_model_role_and_merged_turns(server):
    server.push(answer("ok"))
    messages = [
        {"role": "system", "content": "You are an RLM."},
        {"role": "user", "content": "context: 3 files"},
        {"role": "user", "content": "task: count them"},
        {"role": "assistant", "content": "```repl\nprint(len(context))\n```"},
        {"role": "system", "content": "Answer with FINAL(...)."},
        {"role": "assistant", "content": ""},  # empty: left out
        {"role": "user", "content": "3"},
    ]
    connect(server)[0].complete(messages)
    body = server.bodies[0]
    assert body["systemInstruction"]["parts"] == [{"text": "You are an RLM.\n\nAnswer with FINAL(...)."}]
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "context: 3 files\n\ntask: count them"}]},
        {"role": "model", "parts": [{"text": "```repl\nprint(len(context))\n```"}]},
        {"role": "user", "parts": [{"text": "3"}]},
    ]
    assert "generationConfig" not in body or body["generationConfig"] == {}  # the model's defaults


def test_conversion_errors_are_clear_and_send_nothing():
    with pytest.raises(ModelError, match="no user or assistant message"):
        to_gemini_contents([{"role": "system", "content": "only a system prompt"}])
    with pytest.raises(ModelError, match="unsupported message role 'tool'"):
        to_gemini_contents([{"role": "tool", "content": "x"}])


def test_thought_parts_are_not_the_answer_and_thinking_tokens_count(server):
    parts = [{"text": "Let me think...", "thought": True}, {"text": "The answer "}, {"text": "is 4."}]
    server.push(answer("", parts=parts, prompt_tokens=3, output_tokens=4, thoughts_tokens=20))
    result = connect(server)[0].complete(MESSAGES)
    assert result.text == "The answer is 4." and (result.prompt_tokens, result.completion_tokens) == (3, 24)
    assert result.raw["thoughts_tokens"] == 20


def test_missing_usage_counts_zero(server):
    server.push(answer("ok", usage=False))
    result = connect(server)[0].complete(MESSAGES)
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("ok", 0, 0)


@pytest.mark.parametrize(
    "body, problem, finish",
    [
        (
            {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 4}},
            "no candidates: prompt blocked (SAFETY)",
            None,
        ),
        ({"candidates": [], "modelVersion": "m"}, "no candidates in response", None),
        (
            response_body(candidates=[{"finishReason": "SAFETY", "index": 0}]),
            "candidate has no content parts (finish reason: SAFETY)",
            "SAFETY",
        ),
        (
            response_body(parts=[{"functionCall": {"name": "f", "args": {}}}]),
            "no text part in content (parts: function_call) (finish reason: STOP)",
            "STOP",
        ),
        (response_body("", finish_reason="MAX_TOKENS"), "text is empty (finish reason: MAX_TOKENS)", "MAX_TOKENS"),
    ],
    ids=["prompt-blocked", "no-candidates", "safety-no-parts", "no-text-part", "empty-text"],
)
def test_malformed_answers_come_back_flagged_not_raised_nor_retried(server, body, problem, finish):
    server.push(Behaviour(body=body))
    result = connect(server)[0].complete(MESSAGES)
    assert result.text is None and result.raw["malformed"] == problem and result.finish_reason == finish
    assert len(server.requests) == 1


def test_blocked_prompt_keeps_the_block_reason(server):
    feedback = {"blockReason": "PROHIBITED_CONTENT", "blockReasonMessage": "The prompt was blocked."}
    server.push(Behaviour(body={"promptFeedback": feedback, "usageMetadata": {"promptTokenCount": 9}}))
    result = connect(server)[0].complete(MESSAGES)
    assert result.raw["block_reason"] == "PROHIBITED_CONTENT" and result.prompt_tokens == 9
    assert result.raw["malformed"] == "no candidates: prompt blocked (PROHIBITED_CONTENT): The prompt was blocked."


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


def test_429_without_header_follows_the_retry_info_delay(server):
    server.push(rate_limited(retry_after=None, retry_delay="0.3s"), answer("done"))
    connector, reported = connect(server)
    assert connector.complete(MESSAGES).text == "done"
    first, second = server.requests
    assert second.at - first.at >= 0.3 and reported == [(1, 0.3, "HTTP 429 Too Many Requests")]


def test_500_and_503_then_success(server):
    server.push(server_error(500), server_error(503), answer("fine"))
    connector, reported = connect(server, retries=3)
    assert connector.complete(MESSAGES).text == "fine"
    assert [r[2] for r in reported] == ["HTTP 500 Internal Server Error", "HTTP 503 Service Unavailable"]
    assert all(0 <= r[1] <= 2.0 for r in reported) and len(server.requests) == 3


def test_final_error_after_max_retries_is_one_clear_message(server):
    server.push(*[rate_limited(retry_after=None)] * 3)
    connector, reported = connect(server, retries=2)
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    assert str(info.value) == f"gemini:{MODEL}: HTTP 429 Too Many Requests after 3 attempts"
    assert len(server.requests) == 3 and [r[0] for r in reported] == [1, 2]


def test_timeout_is_retried_then_a_clear_error(server):
    server.push(slow(3.0), slow(3.0))
    connector, reported = connect(server, retries=1)
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES, timeout=0.3)
    assert time.monotonic() - started < 2.5
    assert str(info.value) == f"gemini:{MODEL}: no answer from {server.url} within 0.3 s (timeout) after 2 attempts"
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
    server.push(invalid_key(), error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."))
    server.push(error(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers."))
    connector, reported = connect(server)
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    message = str(info.value)
    assert message.startswith(f"gemini:{MODEL}: HTTP 400 Bad Request: invalid API key")
    assert message.endswith("— set GEMINI_API_KEY (or GOOGLE_API_KEY)") and "API key not valid" in info.value.hint
    with pytest.raises(ModelError, match="HTTP 401 Unauthorized: invalid API key"):
        connector.complete(MESSAGES)
    with pytest.raises(ModelError, match="HTTP 403 Forbidden: the API key may not use this"):
        connector.complete(MESSAGES)
    assert len(server.requests) == 3 and reported == []


def test_other_4xx_are_not_retried(server):
    server.push(error(400, "INVALID_ARGUMENT", "The input token count exceeds the maximum (1048576)."))
    server.push(error(404, "NOT_FOUND", "models/gemini-nope is not found for API version v1"))
    connector, reported = connect(server)
    with pytest.raises(ModelError, match=r"HTTP 400 Bad Request: The input token count exceeds the maximum"):
        connector.complete(MESSAGES)
    with pytest.raises(ModelError, match="HTTP 404 Not Found: models/gemini-nope is not found") as info:
        connector.complete(MESSAGES)
    assert "Gemini model id" in info.value.hint
    assert len(server.requests) == 2 and reported == []


def test_connection_refused_names_the_url():
    url = f"http://127.0.0.1:{free_port()}"
    connector = GeminiConnector(
        MODEL, ModelOptions(base_url=url, api_key="k"), retry_policy=RetryPolicy(max_retries=1, base_delay=0.01),
        environ={},
    )  # fmt: skip
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    assert str(info.value) == f"gemini:{MODEL}: cannot reach {url}: connection refused after 2 attempts"


# -- configuration ---------------------------------------------------------------------------------------------


def test_missing_key_is_a_clear_error():
    with pytest.raises(ModelError) as info:
        GeminiConnector(MODEL, ModelOptions(), environ={})
    assert str(info.value) == "no API key for gemini: set GEMINI_API_KEY (or GOOGLE_API_KEY)"
    assert "export GEMINI_API_KEY=" in info.value.hint
    with pytest.raises(ModelError, match="set MY_GEMINI_KEY$"):
        GeminiConnector(MODEL, ModelOptions(), {"api_key_env": "MY_GEMINI_KEY"}, environ={"GEMINI_API_KEY": "k"})


def test_keys_and_base_url_from_the_environment(server):
    server.push(answer("a"), answer("b"), answer("c"), answer("d"))
    base = {"GOOGLE_GEMINI_BASE_URL": server.url}
    for environ in ({"GEMINI_API_KEY": "gem"}, {"GOOGLE_API_KEY": "goo"},
                    {"GEMINI_API_KEY": "gem", "GOOGLE_API_KEY": "goo"}, {}):  # fmt: skip
        GeminiConnector(MODEL, ModelOptions(), environ={**base, **environ}).complete(MESSAGES)
    keys = [r.headers["x-goog-api-key"] for r in server.requests]
    assert keys == ["gem", "goo", "goo", connector_module.PLACEHOLDER_KEY]  # GOOGLE_API_KEY first, as the SDK


def test_settings_section(server):
    server.push(answer("a"))
    settings = {"base_url": server.url, "api_key_env": "MY_KEY", "max_retries": 1, "timeout": 7, "max_tokens": 99,
                "temperature": 0.5, "context_window": 4096, "api_version": "v1beta"}  # fmt: skip
    connector = GeminiConnector("gemini-x", ModelOptions(), settings, environ={"MY_KEY": "mine"})
    assert (connector.retry_policy.max_retries, connector.timeout, connector.context_window) == (1, 7, 4096)
    connector.complete(MESSAGES)
    [request] = server.requests
    assert request.path == "/v1beta/models/gemini-x:generateContent" and request.headers["x-goog-api-key"] == "mine"
    assert request.body["generationConfig"] == {"temperature": 0.5, "maxOutputTokens": 99}
    options = ModelOptions(max_retries=0, timeout=3, max_tokens=10)  # explicit options beat the section
    explicit = GeminiConnector("m", options, GeminiSettings(base_url=server.url, max_retries=5, timeout=9))
    assert (explicit.retry_policy.max_retries, explicit.timeout, explicit.max_tokens) == (0, 3, 10)
    with pytest.raises(ConfigError, match=r"\[provider.gemini\]: max_token: Extra inputs"):
        GeminiConnector("m", ModelOptions(base_url=server.url), {"max_token": 2})


def test_rlm_toml_section_reaches_the_connector_through_the_host(server, tmp_path):
    server.push(answer("from the section"))
    (tmp_path / "rlm.toml").write_text(f'[provider.gemini]\nbase_url = "{server.url}"\nmax_tokens = 256\n')
    environ = {"RLM_PLUGINS": DIST, "GEMINI_API_KEY": "g-toml"}
    host = PluginHost(environ=environ)
    settings = load_settings(environ=environ, cwd=tmp_path, host=host)
    assert isinstance(settings.component("provider", "gemini"), GeminiSettings)
    connector = resolve_connector(f"gemini:{MODEL}", host=host, settings=settings)
    assert connector.complete(MESSAGES).text == "from the section"
    assert server.bodies[0]["generationConfig"] == {"maxOutputTokens": 256}
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "rlm.toml").write_text("[provider.gemini]\nmax_tokns = 5\n")
    with pytest.raises(ConfigError, match="max_tokns"):
        load_settings(environ=environ, cwd=tmp_path / "bad", host=host)


def test_context_windows():
    assert context_window_for("gemini-2.5-flash") == context_window_for("gemini-2.0-flash-001") == 1_048_576
    assert context_window_for("gemini-1.5-flash-8b") == context_window_for("models/gemini-2.5-pro") == 1_048_576
    assert context_window_for("gemini-1.5-pro-002") == 2_097_152
    assert context_window_for(DEFAULT_MODEL) == 1_048_576 and context_window_for("gemma-3-27b-it") is None
    assert create("gemini-2.5-pro", ModelOptions(api_key="k")).context_window == 1_048_576


# -- registration, --model auto, import cost -------------------------------------------------------------------


def test_registers_the_provider():
    collected = PluginHost(environ={"RLM_PLUGINS": DIST}).collect_all()
    dist = next(d for d in collected.distributions if d.name == DIST)
    assert dist.status == "ok", dist.errors
    assert dist.provides == {"provider": ["gemini"]}
    spec = collected.providers().get("gemini")
    assert spec.key_env == ("GOOGLE_API_KEY", "GEMINI_API_KEY")
    assert spec.default_model == DEFAULT_MODEL == "gemini-3.8-flash"
    assert spec.readiness().ok and sdk_installed().ok and spec.settings_model() is GeminiSettings


def test_readiness_without_the_sdk(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    result = sdk_installed()
    assert not result.ok and "google.genai" in result.detail and "pip install rlm-provider-gemini" in result.hint


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
def test_auto_model_picks_gemini_when_only_its_key_is_set(variable):
    every_plugin = PluginHost(environ={})  # every installed plugin, local models included
    model, notice = auto_model(every_plugin, environ={variable: "g-test"})
    assert (model, notice) == (f"gemini:{DEFAULT_MODEL}", "")
    model, _ = auto_model(every_plugin, environ={variable: "g-test", "OPENAI_API_KEY": "sk-test"})
    assert model.startswith("openai:")  # a configured OpenAI endpoint wins (rlm_host.llm.resolve)
    model, _ = auto_model(every_plugin, environ={})
    assert not model.startswith("gemini:")


def test_importing_the_plugin_does_not_import_the_sdk():
    code = (
        "import sys, rlm_provider_gemini.hooks, rlm_provider_gemini.connector, rlm_provider_gemini.settings\n"
        "import rlm_provider_gemini.checks\n"
        "from rlm_provider_gemini.connector import create\n"
        "from rlm_host.llm.protocol import ModelOptions\n"
        "c = create('gemini-3.8-flash', ModelOptions(api_key='k'))\n"
        "assert rlm_provider_gemini.checks.sdk_installed().ok\n"
        "assert 'google.genai' not in sys.modules, 'google.genai imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_rlm_run_with_model_auto_reaches_generate_content(server, tmp_path):
    """End to end: `rlm run` with only GEMINI_API_KEY set picks this provider and prints its answer."""
    server.push(answer("FINAL(4)", prompt_tokens=50, output_tokens=3))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "OPENAI_", "ANTHROPIC_", "GOOGLE_"))}
    env.update(GEMINI_API_KEY="g-run", GOOGLE_GEMINI_BASE_URL=server.url, RLM_HOME=str(tmp_path / "home"))
    rlm = str(Path(sys.executable).with_name("rlm"))
    command = [rlm, "run", "What is 2+2?", "--quiet"]
    result = subprocess.run(command, check=False, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (0, "4"), result.stderr[-2000:]
    [request] = server.requests
    assert request.model == DEFAULT_MODEL and request.headers["x-goog-api-key"] == "g-run"
    assert request.body["systemInstruction"]["parts"][0]["text"].startswith("You are a Recursive")
    assert "What is 2+2?" in request.body["contents"][0]["parts"][0]["text"]
