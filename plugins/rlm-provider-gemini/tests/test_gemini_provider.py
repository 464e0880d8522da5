"""The gemini provider, through the REAL official ``google-genai`` SDK against a fake Gemini API server.

The real Gemini API is paid (or quota-limited) and cannot be reached from the machines these tests run on, so
every call goes to ``fake_gemini.GeminiServer``: a real HTTP server on 127.0.0.1 that speaks the
``generateContent`` wire format (``POST /v1/models/MODEL:generateContent``, the URL the installed SDK sends) and
records what the SDK sent. What that proves and what it cannot: the request the SDK builds from our arguments
(``systemInstruction``, roles, ``generationConfig``, the key header), how the SDK's responses and exceptions are
turned into Completions and ModelErrors, and the retry timing; it does not prove that the real API accepts the
request (model ids, schema details) — that needs a key and the network.

``TestGeminiContract`` runs the provider contract suite (answers, retries, errors, keys, registration,
``--model auto``); the tests beside it are the Gemini API's own. Waits are kept short: the file runs in seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
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
    server_fixture,
)
from rlm_host import ConfigError, ModelError
from rlm_host.sdk.embedding import load_settings
from rlm_host.sdk.models import ModelOptions, RetryPolicy, resolve_connector
from rlm_host.testing import ProviderContract

from rlm_provider_gemini.checks import sdk_installed
from rlm_provider_gemini.connector import PLACEHOLDER_KEY, GeminiConnector, to_gemini_contents
from rlm_provider_gemini.hooks import DEFAULT_MODEL
from rlm_provider_gemini.settings import GeminiSettings

DIST = "rlm-provider-gemini"
MODEL = DEFAULT_MODEL
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "What is 2+2?"}]

#: Answers without text: (body, what raw["malformed"] says, the Completion's finish_reason).
MALFORMED = [
    ({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 4}},
     "no candidates: prompt blocked (SAFETY)", None),
    ({"candidates": [], "modelVersion": "m"}, "no candidates in response", None),
    (response_body(candidates=[{"finishReason": "SAFETY", "index": 0}]),
     "candidate has no content parts (finish reason: SAFETY)", "SAFETY"),
    (response_body(parts=[{"functionCall": {"name": "f", "args": {}}}]),
     "no text part in content (parts: function_call) (finish reason: STOP)", "STOP"),
    (response_body("", finish_reason="MAX_TOKENS"), "text is empty (finish reason: MAX_TOKENS)", "MAX_TOKENS"),
]


class TestGeminiContract(ProviderContract):
    provider = "gemini"
    distribution = DIST
    model = MODEL
    otel_provider = "gcp.gemini"
    key_help = "GEMINI_API_KEY (or GOOGLE_API_KEY)"
    # genai-prices' windows, else our table's for a model it lists without one (gemini-2.5-pro)
    context_windows = {"gemini-2.5-flash": 1_048_576, "gemini-2.0-flash-001": 1_000_000,
                       "gemini-1.5-flash-8b": 1_000_000, "models/gemini-2.5-pro": 1_048_576,
                       "gemini-1.5-pro-002": 1_000_000, DEFAULT_MODEL: 1_000_000, "gemma-3-27b-it": None}
    lazy_modules = ("google.genai",)
    fake_server = GeminiServer
    other_env = ("GOOGLE_GEMINI_BASE_URL",)  # read by the connector

    def answer(self, text, usage=(11, 7)):
        if usage is None:
            return answer(text, usage=False)
        return answer(text, prompt_tokens=usage[0], output_tokens=usage[1])

    def error(self, status, message):
        return error(status, message)

    def malformed_answers(self):
        return [(Behaviour(body=body), problem) for body, problem, _ in MALFORMED]

    def sent_key(self, request):
        return request.headers["x-goog-api-key"]


def connect(server: GeminiServer, *, settings=None, **options) -> GeminiConnector:
    """A connector to the fake server that does not retry."""
    options = {"base_url": server.url, "api_key": "g-test-key", "max_retries": 0, **options}
    return GeminiConnector(MODEL, ModelOptions(**options), settings, environ={})


# -- the request sent and the answer ---------------------------------------------------------------------------


def test_the_request_sent_and_the_answer(server):
    server.push(answer("4", prompt_tokens=12, output_tokens=1))
    result = connect(server, temperature=0.0, max_tokens=5, timeout=5.0).complete(MESSAGES)
    assert result.finish_reason == "STOP" and result.model == "gemini-test-001"
    assert result.raw == {"id": "resp-test-01"}
    [request] = server.requests
    # the SDK's default API version: v1 from google-genai 3, v1beta before (2.x, which google-adk requires)
    assert request.path in (f"/v1/models/{MODEL}:generateContent", f"/v1beta/models/{MODEL}:generateContent")
    assert request.model == MODEL
    assert request.headers["x-goog-api-key"] == "g-test-key"
    assert request.headers["x-server-timeout"] == "5"  # the per-call timeout reached the SDK
    assert request.body == {
        "contents": [{"role": "user", "parts": [{"text": "What is 2+2?"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "be brief"}]},
        "generationConfig": {"temperature": 0.0, "maxOutputTokens": 5},
    }


def test_the_runs_sampling_options_reach_the_generation_config(server):
    server.push(answer("4"))
    connect(server, temperature=0.3, top_p=0.9, seed=7, max_tokens=5).complete(MESSAGES)
    [request] = server.requests
    assert request.body["generationConfig"] == {"temperature": 0.3, "topP": 0.9, "seed": 7, "maxOutputTokens": 5}


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
    connect(server).complete(messages)
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
    result = connect(server).complete(MESSAGES)
    assert result.text == "The answer is 4." and (result.input_tokens, result.output_tokens) == (3, 24)
    assert result.raw["thoughts_tokens"] == 20


def test_malformed_answers_keep_the_finish_reason(server):
    connector = connect(server)
    for body, _, finish in MALFORMED:
        server.push(Behaviour(body=body))
        assert connector.complete(MESSAGES).finish_reason == finish, body


def test_blocked_prompt_keeps_the_block_reason(server):
    feedback = {"blockReason": "PROHIBITED_CONTENT", "blockReasonMessage": "The prompt was blocked."}
    server.push(Behaviour(body={"promptFeedback": feedback, "usageMetadata": {"promptTokenCount": 9}}))
    result = connect(server).complete(MESSAGES)
    assert result.raw["block_reason"] == "PROHIBITED_CONTENT" and result.input_tokens == 9
    assert result.raw["malformed"] == "no candidates: prompt blocked (PROHIBITED_CONTENT): The prompt was blocked."


# -- errors the API has of its own -----------------------------------------------------------------------------


def test_429_without_header_follows_the_retry_info_delay(server):
    server.push(rate_limited(retry_after=None, retry_delay="0.3s"), answer("done"))
    reported: list[tuple[int, float, str]] = []
    connector = GeminiConnector(MODEL, ModelOptions(base_url=server.url, api_key="k"),
                                retry_policy=RetryPolicy(max_retries=1, base_delay=0.01), environ={})
    assert connector.complete(MESSAGES, on_retry=lambda *a: reported.append(a)).text == "done"
    first, second = server.requests
    assert second.at - first.at >= 0.3 and reported == [(1, 0.3, "HTTP 429 Too Many Requests")]


def test_a_key_google_refuses_or_may_not_use_this_is_not_retried(server):
    server.push(invalid_key(), error(403, "Method doesn't allow unregistered callers."))
    connector = connect(server, max_retries=2)
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    message = str(info.value)
    assert message.startswith(f"gemini:{MODEL}: HTTP 400 Bad Request: invalid API key")
    assert message.endswith("— set GEMINI_API_KEY (or GOOGLE_API_KEY)") and "API key not valid" in info.value.hint
    with pytest.raises(ModelError, match="HTTP 403 Forbidden: the API key may not use this"):
        connector.complete(MESSAGES)
    assert len(server.requests) == 2


# -- configuration ---------------------------------------------------------------------------------------------


def test_keys_and_base_url_from_the_environment(server):
    server.push(answer("a"), answer("b"), answer("c"), answer("d"))
    base = {"GOOGLE_GEMINI_BASE_URL": server.url}
    for environ in ({"GEMINI_API_KEY": "gem"}, {"GOOGLE_API_KEY": "goo"},
                    {"GEMINI_API_KEY": "gem", "GOOGLE_API_KEY": "goo"}, {}):
        GeminiConnector(MODEL, ModelOptions(), environ={**base, **environ}).complete(MESSAGES)
    keys = [r.headers["x-goog-api-key"] for r in server.requests]
    assert keys == ["gem", "goo", "goo", PLACEHOLDER_KEY]  # GOOGLE_API_KEY first, as the SDK


def test_settings_section(server):
    server.push(answer("a"))
    settings = {"base_url": server.url, "api_key_env": "MY_KEY", "max_retries": 1, "timeout": 7, "max_tokens": 99,
                "temperature": 0.5, "context_window": 4096, "api_version": "v1beta"}
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


def test_rlm_toml_section_reaches_the_request(server, rlm_isolated, rlm_plugin_host):
    server.push(answer("from the section"))
    (rlm_isolated.work / "rlm.toml").write_text(f'[provider.gemini]\nbase_url = "{server.url}"\nmax_tokens = 256\n')
    host = rlm_plugin_host(DIST)
    settings = load_settings(environ={}, cwd=rlm_isolated.work, host=host, trust=True)  # the project's own file
    connector = resolve_connector(f"gemini:{MODEL}", host=host, settings=settings, options=ModelOptions(api_key="g"))
    assert connector.complete(MESSAGES).text == "from the section"
    assert server.bodies[0]["generationConfig"] == {"maxOutputTokens": 256}


def test_readiness_without_the_sdk(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    result = sdk_installed(GeminiSettings())
    assert not result.ok and "google.genai" in result.detail and "pip install rlm-provider-gemini" in result.hint


# -- a whole run -----------------------------------------------------------------------------------------------


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
