"""The openai and scripted providers and the retry policy.

The openai connector is exercised through the real ``openai`` SDK against a real HTTP server on 127.0.0.1
(``rlm_host.testing.openai_server``): ``TestOpenAIContract`` runs the provider contract suite, the tests beside
it what is OpenAI's own (the request sent, reasoning models, quota, the settings section). Waits are kept short
so the whole file runs in a few seconds.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from rlm_host.testing.openai_server import OpenAIServer, answer, error, no_choices, null_content, rate_limited

from rlm_host.errors import ConfigError
from rlm_host.models import scripted
from rlm_host.models.openai_provider import OpenAIConnector, ProviderSettings
from rlm_host.models.protocol import ModelConnector, ModelError, ModelOptions
from rlm_host.models.retry import Failure, RetryPolicy, call_with_retries, parse_retry_after, retry_after_from_headers
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.services import ProviderServices
from rlm_host.testing import ProviderContract

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "What is 2+2?"}]


class TestOpenAIContract(ProviderContract):
    provider = "openai"
    model = "gpt-4o-mini"
    key_help = "OPENAI_API_KEY"
    # genai-prices' windows (gpt-4.1's rounded to 1M), else our table's for a model it lists without one
    context_windows = {"gpt-4o": 128_000, "gpt-4o-mini-2024-07-18": 128_000, "gpt-4.1-nano": 1_000_000,
                       "gpt-4": 8_192, "o3-mini": 200_000, "gpt-4.5-preview": 128_000, "llama-3-8b": None}
    lazy_modules = ("httpx",)
    fake_server = OpenAIServer

    def answer(self, text, usage=(11, 7)):
        if usage is None:
            return answer(text, usage=False)
        return answer(text, prompt_tokens=usage[0], completion_tokens=usage[1])

    def error(self, status, message):
        return error(status, message)

    def malformed_answers(self):
        return [(no_choices(), "empty 'choices' list"), (null_content(), "message.content is null")]

    def sent_key(self, request):
        return request.headers["authorization"].removeprefix("Bearer ")


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def connect(server: OpenAIServer, **options) -> OpenAIConnector:
    """A connector to the test server that does not retry."""
    options = {"base_url": server.url, "api_key": "sk-test", "max_retries": 0, **options}
    return OpenAIConnector("gpt-4o-mini", ModelOptions(**options))


# -- openai: what is its own -----------------------------------------------------------------------------------


def test_the_request_sent_and_the_answer(server):
    server.push(answer("4", prompt_tokens=12, completion_tokens=1))
    result = connect(server, temperature=0.0, max_tokens=5).complete(MESSAGES)
    assert result.finish_reason == "stop" and result.model == "test-model" and result.raw == {"id": "chatcmpl-test"}
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body["model"] == "gpt-4o-mini" and request.body["messages"] == MESSAGES
    assert request.body["temperature"] == 0.0 and request.body["max_tokens"] == 5


def test_runs_share_one_sdk_client_per_endpoint_and_key(server):
    """Building an SDK client costs ~10 ms (its TLS context, its pool): a benchmark's hundreds of runs share one."""
    first, second = connect(server), connect(server)
    assert first.client() is second.client()
    assert connect(server, api_key="sk-other").client() is not first.client()
    assert connect(server, timeout=7.0).client() is not first.client()


def test_requests_go_through_the_proxy_the_environment_names(server, monkeypatch):
    """The request is posted through the transport the client mounts for its URL (``post_json``), so a proxy from
    ``HTTP_PROXY`` carries it, as ``client.post`` would: the proxy sees the absolute URL of the model server."""

    class Proxy(OpenAIServer):
        def route(self, request):
            return None if request.path == "http://models.invalid/v1/chat/completions" else error(404, request.path)

    with Proxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        proxy.push(answer("through the proxy"))
        connector = OpenAIConnector("proxied-model", ModelOptions(base_url="http://models.invalid/v1",
                                                                  api_key="sk-proxied", max_retries=0))
        assert connector.complete(MESSAGES).text == "through the proxy"
        [request] = proxy.requests
        assert request.headers["authorization"] == "Bearer sk-proxied" and request.body["model"] == "proxied-model"
        assert request.headers["content-type"] == "application/json"
    assert not server.requests


def test_a_base_url_without_a_scheme_is_one_error_not_retried():
    connector = OpenAIConnector("m", ModelOptions(base_url="127.0.0.1:9/v1", api_key="k", max_retries=3))
    with pytest.raises(ModelError, match="invalid base URL 127.0.0.1:9/v1") as info:
        connector.complete(MESSAGES)
    assert "http://" in info.value.hint and "after" not in str(info.value)


def test_reasoning_models_are_given_max_completion_tokens(server):
    server.push(answer("4"))
    OpenAIConnector("o3-mini", ModelOptions(base_url=server.url, api_key="k", max_tokens=5)).complete(MESSAGES)
    assert server.bodies[0]["max_completion_tokens"] == 5 and "max_tokens" not in server.bodies[0]


def test_exhausted_quota_is_not_retried(server):
    server.push(rate_limited(code="insufficient_quota"))
    with pytest.raises(ModelError, match="HTTP 429 Too Many Requests: insufficient quota") as info:
        connect(server, max_retries=2).complete(MESSAGES)
    assert info.value.hint == "check your plan and billing" and len(server.requests) == 1


def test_missing_key_without_base_url_says_a_base_url_would_do():
    with pytest.raises(ModelError) as info:
        OpenAIConnector("gpt-4o-mini", ModelOptions(), environ={})
    assert str(info.value) == "no API key for openai: set OPENAI_API_KEY or pass --base-url"


def test_settings_section(server):
    server.push(answer("a"))
    settings = {"base_url": server.url, "api_key_env": "MY_KEY", "max_retries": 1, "timeout": 7,
                "context_window": 4096, "organization": "org-123"}
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


def test_importing_the_providers_imports_no_http_client_or_sdk():
    code = (
        "import sys, rlm_host.models.openai_provider, rlm_host.models.scripted, rlm_host.models.retry\n"
        "sys.exit(1 if {'openai', 'httpx'} & set(sys.modules) else 0)"
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


def scripted_file(path) -> ScriptedConnector:
    """The ``scripted:PATH`` connector, built by the provider's factory."""
    return scripted.create(None, ProviderServices(model=str(path)))


def test_scripted_plays_responses_in_order_with_token_estimates():
    model = ScriptedConnector.from_responses(["first", {"text": "second", "output_tokens": 9, "input_tokens": 2}])
    assert isinstance(model, ModelConnector) and model.context_window == 32_768
    one, two = model.complete(MESSAGES), model.complete(MESSAGES)
    assert (one.text, one.output_tokens, one.input_tokens) == ("first", 1, len("be briefWhat is 2+2?") // 4)
    assert (two.text, two.output_tokens, two.input_tokens) == ("second", 9, 2)
    assert model.calls == [MESSAGES, MESSAGES] and model.remaining == 0
    with pytest.raises(ModelError, match="^scripted model script inline: no response left for call 3$"):
        model.complete(MESSAGES)


def test_scripted_rules_match_the_last_user_message_and_are_not_consumed():
    model = ScriptedConnector.from_responses(["in order"], rules=[{"match": r"chunk (\d+)", "text": "summary"}])

    def ask(text):
        return model.complete([{"role": "user", "content": text}, {"role": "assistant", "content": "chunk 1"}])

    assert [ask("summarize chunk 3").text, ask("summarize chunk 4").text, ask("other").text] == [
        "summary", "summary", "in order"
    ]
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
    model = scripted_file(script)
    assert model.name == f"scripted:{script}" and model.context_window == 8192
    assert model.complete([{"role": "user", "content": "x"}]).text == "X"
    assert model.complete(MESSAGES).text == "a"
    with pytest.raises(ModelError, match=f"^scripted model script {script}: no response left for call 3$"):
        model.complete(MESSAGES)

    listed = tmp_path / "list.json"
    listed.write_text('["one", "two"]')
    assert scripted_file(listed).complete(MESSAGES).text == "one"

    lines = tmp_path / "script.jsonl"
    lines.write_text('{"text": "first"}\n\n"second"\n{"match": "hi", "text": "hello"}\n')
    model = scripted_file(lines)
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
        scripted_file(script)


def test_scripted_missing_file(tmp_path):
    with pytest.raises(ModelError, match="cannot read"):
        scripted_file(tmp_path / "nope.json")


@pytest.mark.parametrize(("model", "message", "hint"), [
    ("gpt-4o-mini", "names no provider", "--model openai:gpt-4o-mini"),
    ("claude-haiku-4-5", "names no provider", "--model anthropic:claude-haiku-4-5"),
    ("openai", "names no provider", "--model openai:gpt-4o-mini"),
    ("Qwen/Qwen2.5-7B", "names no provider", "--model vllm:Qwen/Qwen2.5-7B"),
])
def test_model_strings_of_other_tools_get_the_exact_provider_model_to_type(model, message, hint):
    from rlm_host import ConfigError
    from rlm_host.sdk.embedding import PluginHost
    from rlm_host.models.resolve import split_model_string

    with pytest.raises(ConfigError, match=message) as caught:
        split_model_string(model, PluginHost())
    assert hint in caught.value.hint


def test_litellm_style_provider_slash_model_is_accepted_when_the_provider_exists():
    from rlm_host.sdk.embedding import PluginHost
    from rlm_host.models.resolve import split_model_string

    host = PluginHost(environ={"RLM_PLUGINS": "rlm-provider-compatible"})
    assert split_model_string("openai/gpt-4o-mini", host) == ("openai", "gpt-4o-mini")
    assert split_model_string("openrouter/meta-llama/llama-3-8b", host) == ("openrouter", "meta-llama/llama-3-8b")
    assert split_model_string("vllm:Qwen/Qwen2.5-7B", host) == ("vllm", "Qwen/Qwen2.5-7B")
