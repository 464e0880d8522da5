"""The openai and scripted providers and the retry policy.

The openai connector is exercised through the real ``openai`` SDK against a real HTTP server on 127.0.0.1
(``tests/support/openai_server.py``); waits are kept short so the whole file runs in a few seconds.
"""

from __future__ import annotations

import json
import random
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from support.openai_server import (
    OpenAIServer,
    answer,
    no_choices,
    null_content,
    rate_limited,
    server_error,
    slow,
    truncated,
    unauthorized,
)

from rlm_host.errors import ConfigError
from rlm_host.llm import openai_provider, scripted
from rlm_host.llm.openai_provider import OpenAIConnector, ProviderSettings, context_window_for
from rlm_host.llm.protocol import ModelConnector, ModelError, ModelOptions
from rlm_host.llm.retry import Failure, RetryPolicy, call_with_retries, parse_retry_after, retry_after_from_headers
from rlm_host.llm.scripted import ScriptedConnector

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "What is 2+2?"}]


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def connect(server: OpenAIServer, *, retries: int = 2, timeout: float = 5.0, **options) -> tuple[OpenAIConnector, list]:
    """A connector to the test server with fast backoff, and the list its retries are reported to."""
    reported: list[tuple[int, float, str]] = []
    connector = OpenAIConnector(
        "gpt-4o-mini",
        ModelOptions(base_url=server.url, api_key="sk-test", timeout=timeout, **options),
        retry_policy=RetryPolicy(max_retries=retries, base_delay=0.01, max_delay=2.0),
        on_retry=lambda *args: reported.append(args),
    )
    return connector, reported


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- openai: answers -------------------------------------------------------------------------------------------


def test_chat_answer_with_usage_and_the_request_sent(server):
    server.push(answer("4", prompt_tokens=12, completion_tokens=1))
    connector, reported = connect(server, temperature=0.0, max_tokens=5)
    assert isinstance(connector, ModelConnector)
    result = connector.complete(MESSAGES)
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("4", 12, 1)
    assert result.finish_reason == "stop" and result.model == "test-model" and result.seconds > 0
    assert "malformed" not in result.raw and reported == []
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body["model"] == "gpt-4o-mini" and request.body["messages"] == MESSAGES
    assert request.body["temperature"] == 0.0 and request.body["max_tokens"] == 5


def test_missing_usage_counts_zero(server):
    server.push(answer("ok", usage=False))
    result = connect(server)[0].complete(MESSAGES)
    assert (result.text, result.prompt_tokens, result.completion_tokens) == ("ok", 0, 0)


@pytest.mark.parametrize(
    "behaviour, problem", [(no_choices(), "empty 'choices' list"), (null_content(), "message.content is null")]
)
def test_malformed_answers_come_back_flagged_not_raised_nor_retried(server, behaviour, problem):
    server.push(behaviour)
    result = connect(server)[0].complete(MESSAGES)
    assert result.text is None and result.raw["malformed"] == problem
    assert len(server.requests) == 1


def test_concurrent_calls_share_one_client(server):
    server.push(*[answer(f"a{i}") for i in range(8)])
    connector, _ = connect(server)
    with ThreadPoolExecutor(8) as pool:
        texts = list(pool.map(lambda _: connector.complete(MESSAGES).text, range(8)))
    assert sorted(texts) == sorted(f"a{i}" for i in range(8))


# -- openai: retries -------------------------------------------------------------------------------------------


def test_429_is_retried_after_the_retry_after_wait(server):
    server.push(rate_limited(retry_after="0.4"), answer("done"))
    connector, reported = connect(server)
    result = connector.complete(MESSAGES)
    assert result.text == "done" and result.raw["attempts"] == 2
    first, second = server.requests
    assert second.at - first.at >= 0.4
    assert reported == [(1, 0.4, "HTTP 429 Too Many Requests")]


def test_500_then_success(server):
    server.push(server_error(500), server_error(503), answer("fine"))
    connector, reported = connect(server, retries=3)
    assert connector.complete(MESSAGES).text == "fine"
    assert [r[2] for r in reported] == ["HTTP 500 Internal Server Error", "HTTP 503 Service Unavailable"]
    assert all(0 <= r[1] <= 2.0 for r in reported)


def test_final_error_after_max_retries_is_one_clear_message(server):
    server.push(*[rate_limited(retry_after=None)] * 3)
    connector, reported = connect(server, retries=2)
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    assert str(info.value) == "openai:gpt-4o-mini: HTTP 429 Too Many Requests after 3 attempts"
    assert len(server.requests) == 3 and [r[0] for r in reported] == [1, 2]


def test_timeout_is_retried_then_a_clear_error(server):
    server.push(slow(3.0), slow(3.0))
    connector, reported = connect(server, retries=1)
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES, timeout=0.3)
    assert time.monotonic() - started < 2.5
    assert str(info.value) == f"openai:gpt-4o-mini: no answer from {server.url} within 0.3 s (timeout) after 2 attempts"
    assert len(server.requests) == 2 and len(reported) == 1


def test_timeout_then_success(server):
    server.push(slow(3.0), answer("in time"))
    connector, _ = connect(server, timeout=0.3)
    assert connector.complete(MESSAGES).text == "in time"


@pytest.mark.parametrize("cut", [False, True], ids=["bad-json", "cut-connection"])
def test_truncated_json_is_retried_then_a_clear_error(server, cut):
    server.push(truncated(cut_connection=cut), answer("whole"))
    connector, reported = connect(server, retries=1)
    assert connector.complete(MESSAGES).text == "whole" and len(reported) == 1
    server.push(truncated(cut_connection=cut), truncated(cut_connection=cut))
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    expected = "broken mid-response" if cut else "malformed JSON in response"
    assert expected in str(info.value) and str(info.value).endswith("after 2 attempts")


def test_bad_key_is_not_retried(server):
    server.push(unauthorized())
    connector, reported = connect(server)
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    assert "HTTP 401 Unauthorized: invalid API key" in str(info.value) and "set OPENAI_API_KEY" in str(info.value)
    assert "Incorrect API key" in info.value.hint
    assert len(server.requests) == 1 and reported == []


def test_other_4xx_and_exhausted_quota_are_not_retried(server):
    from support.openai_server import Behaviour

    server.push(Behaviour(400, {"error": {"message": "context too long", "code": "context_length_exceeded"}}))
    server.push(rate_limited(code="insufficient_quota"))
    connector, reported = connect(server)
    with pytest.raises(ModelError, match=r"HTTP 400 Bad Request: context too long$"):
        connector.complete(MESSAGES)
    with pytest.raises(ModelError, match="insufficient quota"):
        connector.complete(MESSAGES)
    assert len(server.requests) == 2 and reported == []


def test_connection_refused_names_the_url():
    url = f"http://127.0.0.1:{free_port()}/v1"
    connector = OpenAIConnector(
        "gpt-4o-mini", ModelOptions(base_url=url), retry_policy=RetryPolicy(max_retries=1, base_delay=0.01)
    )
    with pytest.raises(ModelError) as info:
        connector.complete(MESSAGES)
    assert str(info.value) == f"openai:gpt-4o-mini: cannot reach {url}: connection refused after 2 attempts"
    assert "--base-url" in info.value.hint


# -- openai: configuration -------------------------------------------------------------------------------------


def test_missing_key_without_base_url_is_a_clear_error():
    with pytest.raises(ModelError) as info:
        OpenAIConnector("gpt-4o-mini", ModelOptions(), environ={})
    assert str(info.value) == "no API key for openai: set OPENAI_API_KEY or pass --base-url"


def test_key_and_base_url_from_the_environment_and_placeholder_key(server):
    server.push(answer("a"), answer("b"))
    OpenAIConnector("m", ModelOptions(), environ={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-env"}).complete(
        MESSAGES
    )
    OpenAIConnector("m", ModelOptions(), environ={"OPENAI_BASE_URL": server.url}).complete(MESSAGES)
    keys = [r.headers["authorization"] for r in server.requests]
    assert keys == ["Bearer sk-env", f"Bearer {openai_provider.PLACEHOLDER_KEY}"]


def test_settings_section(server):
    server.push(answer("a"))
    settings = {"base_url": server.url, "api_key_env": "MY_KEY", "max_retries": 1, "timeout": 7,
                "context_window": 4096, "organization": "org-123"}  # fmt: skip
    connector = OpenAIConnector("local-model", ModelOptions(), settings, environ={"MY_KEY": "sk-mine"})
    assert (connector.retry_policy.max_retries, connector.timeout, connector.context_window) == (1, 7, 4096)
    connector.complete(MESSAGES)
    headers = server.requests[0].headers
    assert headers["authorization"] == "Bearer sk-mine" and headers["openai-organization"] == "org-123"
    options = ModelOptions(max_retries=0, timeout=3)  # explicit options beat the section
    explicit = OpenAIConnector("m", options, ProviderSettings(base_url=server.url, max_retries=5, timeout=9))
    assert (explicit.retry_policy.max_retries, explicit.timeout) == (0, 3)
    with pytest.raises(ConfigError, match="max_retry: Extra inputs"):
        OpenAIConnector("m", ModelOptions(base_url=server.url), {"max_retry": 2})


def test_context_windows():
    assert context_window_for("gpt-4o") == context_window_for("gpt-4o-mini-2024-07-18") == 128_000
    assert context_window_for("gpt-4.1-nano") == 1_047_576 and context_window_for("gpt-4") == 8_192
    assert context_window_for("o3-mini") == 200_000 and context_window_for("llama-3-8b") is None
    connector = openai_provider.create("gpt-4o", ModelOptions(api_key="k"), None)
    assert connector.name == "openai:gpt-4o" and connector.context_window == 128_000


def test_importing_the_providers_does_not_import_openai():
    code = (
        "import sys, rlm_host.llm.openai_provider, rlm_host.llm.scripted, rlm_host.llm.retry\n"
        "sys.exit(1 if 'openai' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# -- retry policy ----------------------------------------------------------------------------------------------


def test_parse_retry_after():
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after("3") == 3.0 and parse_retry_after("0.5") == 0.5
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now=now) == 30.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now=now) == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after("-1") is None and parse_retry_after(None) is None
    assert retry_after_from_headers({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25


def test_call_with_retries_waits_caps_and_classifies():
    waits: list[float] = []
    iterations = iter(range(10))

    def flaky():
        if next(iterations) < 2:
            raise TimeoutError("slow")
        return "ok"

    def classify(exc):
        return Failure(True, "slow", retry_after=100.0) if isinstance(exc, TimeoutError) else None

    policy = RetryPolicy(max_retries=3, max_delay=1.5)
    assert call_with_retries(flaky, classify, policy=policy, sleep=waits.append) == "ok"
    assert waits == [1.5, 1.5]  # Retry-After (100 s) capped at max_delay

    with pytest.raises(KeyError):  # unknown exceptions propagate unchanged
        call_with_retries(lambda: {}["x"], classify, sleep=waits.append)

    def fatal(exc):
        return Failure(False, "HTTP 401 Unauthorized", hint="set KEY")

    with pytest.raises(ModelError, match="^svc: HTTP 401 Unauthorized$") as info:
        call_with_retries(lambda: 1 / 0, fatal, what="svc", sleep=waits.append)
    assert info.value.hint == "set KEY" and len(waits) == 2


def test_backoff_is_full_jitter_and_capped():
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    rng = random.Random(7)
    samples = [policy.backoff(attempt, rng) for attempt in range(1, 12) for _ in range(20)]
    assert all(0 <= s <= 5.0 for s in samples) and max(samples) > 2.0
    assert all(policy.backoff(1, rng) <= 1.0 for _ in range(50))


# -- scripted --------------------------------------------------------------------------------------------------


def test_scripted_plays_responses_in_order_with_token_estimates():
    model = ScriptedConnector.from_responses(["first", {"text": "second", "completion_tokens": 9, "prompt_tokens": 2}])
    assert isinstance(model, ModelConnector) and model.context_window == 32_768
    one, two = model.complete(MESSAGES), model.complete(MESSAGES)
    assert (one.text, one.completion_tokens, one.prompt_tokens) == ("first", 1, len("be briefWhat is 2+2?") // 4)
    assert (two.text, two.completion_tokens, two.prompt_tokens) == ("second", 9, 2)
    assert model.calls == [MESSAGES, MESSAGES] and model.remaining == 0
    with pytest.raises(ModelError, match="^scripted model script inline: no response left for call 3$"):
        model.complete(MESSAGES)


def test_scripted_rules_match_the_last_user_message_and_are_not_consumed():
    model = ScriptedConnector.from_responses(["in order"], rules=[{"match": r"chunk (\d+)", "text": "summary"}])

    def ask(text):
        return model.complete([{"role": "user", "content": text}, {"role": "assistant", "content": "chunk 1"}])

    assert [ask("summarize chunk 3").text, ask("summarize chunk 4").text, ask("other").text] == [
        "summary", "summary", "in order"
    ]  # fmt: skip
    assert ask("summarize chunk 5").raw["rule"] == 1


def test_scripted_errors_malformed_and_delays():
    script = [{"error": "quota exceeded"}, {"text": None}, {"text": "late", "delay": 1}]
    model = ScriptedConnector.from_responses(script)
    with pytest.raises(ModelError, match="^quota exceeded$"):
        model.complete(MESSAGES)
    malformed = model.complete(MESSAGES)
    assert malformed.text is None and "malformed" in malformed.raw
    with pytest.raises(ModelError, match="timeout"):
        model.complete(MESSAGES, timeout=0.05)


def test_scripted_is_thread_safe():
    model = ScriptedConnector.from_responses([f"r{i}" for i in range(64)], rules=[{"match": "^rule$", "text": "R"}])
    prompts = ["rule" if i % 4 == 0 else f"q{i}" for i in range(80)]
    with ThreadPoolExecutor(16) as pool:
        texts = list(pool.map(lambda prompt: model.complete([{"role": "user", "content": prompt}]).text, prompts))
    assert texts.count("R") == 20 and sorted(t for t in texts if t != "R") == sorted(f"r{i}" for i in range(60))
    assert len(model.calls) == 80 and model.remaining == 4


def test_scripted_files(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": ["a"], "rules": [{"match": "x", "text": "X"}], "context_window": 8192}))
    model = scripted.create(str(script), ModelOptions(), None)
    assert model.name == f"scripted:{script}" and model.context_window == 8192
    assert model.complete([{"role": "user", "content": "x"}]).text == "X"
    assert model.complete(MESSAGES).text == "a"
    with pytest.raises(ModelError, match=f"^scripted model script {script}: no response left for call 3$"):
        model.complete(MESSAGES)

    listed = tmp_path / "list.json"
    listed.write_text('["one", "two"]')
    assert scripted.create(str(listed)).complete(MESSAGES).text == "one"

    lines = tmp_path / "script.jsonl"
    lines.write_text('{"text": "first"}\n\n"second"\n{"match": "hi", "text": "hello"}\n')
    model = scripted.create(str(lines))
    assert [model.complete(MESSAGES).text, model.complete(MESSAGES).text] == ["first", "second"]
    assert len(model.rules) == 1


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"responses": [{"txt": "a"}]}', "response 1: txt: Extra inputs"),
        ('{"rules": [{"match": "(", "text": "a"}]}', "rule 1: match: Value error, bad regular expression"),
        ('{"answers": []}', "unknown key"),
        ('{"responses": [1]}', "expected a string or an object"),
        ('{"a": 1}\nnot json\n', "line 2 is not JSON"),
    ],
)
def test_scripted_bad_scripts_are_clear_errors(tmp_path, content, message):
    script = tmp_path / "bad.json"
    script.write_text(content)
    with pytest.raises(ModelError, match=message):
        scripted.create(str(script))


def test_scripted_missing_file(tmp_path):
    with pytest.raises(ModelError, match="cannot read"):
        scripted.create(str(tmp_path / "nope.json"))
