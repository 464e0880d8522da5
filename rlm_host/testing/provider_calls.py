"""The base of ``ProviderContract``: what a provider's test class declares, how the suite builds connectors and
talks to the fake API, and what calls over HTTP must do — answers, malformed answers, retries, errors, keys.

Read ``rlm_host.testing.provider_contract`` for how to use it; this module is split off to keep each one short.
"""

from __future__ import annotations

import functools
import socket
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Optional

import pytest

from rlm_host.components import ProviderSpec
from rlm_host.models.protocol import ModelError, ModelOptions
from rlm_host.models.retry import RetryPolicy
from rlm_host.plugins.host import PluginHost
from rlm_host.services import ProviderServices
from rlm_host.testing.fake_http import Behaviour, FakeHTTPServer, RecordedRequest

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "What is 2+2?"}]
#: The API key the suite hands out; it must never appear in anything printed.
KEY = "sk-contract-SECRET-0123456789"
#: The variable the suite names in ``[provider.<name>] api_key_env``.
KEY_VARIABLE = "RLM_CONTRACT_KEY"


@functools.lru_cache(maxsize=None)
def registered(provider: str, distribution: str) -> ProviderSpec:
    """The ProviderSpec ``distribution`` registers as ``provider`` (records are immutable: cached per process)."""
    return PluginHost(environ={"RLM_PLUGINS": distribution}).providers().get(provider)


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def with_header(behaviour: Behaviour, name: str, value: str) -> Behaviour:
    """``behaviour`` answering with one more header."""
    return replace(behaviour, headers={**behaviour.headers, name: value})


class ProviderCalls:
    """Declarations, hooks and fixtures of the provider suite, and its tests of calls over HTTP."""

    # -- what the provider declares -------------------------------------------------------------------------
    #: The registered provider name (required), and the distribution registering it ("" for the host's own).
    provider: str = ""
    distribution: str = ""
    #: A model id the tests build connectors for (required).
    model: str = ""
    #: The provider as events name it, ``gen_ai.provider.name`` of the OpenTelemetry GenAI conventions (a
    #: well-known value such as "gcp.gemini"); "" when that is the registered name (a well-known one, or none).
    otel_provider: str = ""
    #: Model id → the context window a connector for it must report (None: unknown). At least one entry.
    context_windows: Mapping[str, Optional[int]] = {}
    #: Modules that building a connector must not import (the SDK, the model package): they load on first call.
    lazy_modules: tuple[str, ...] = ()
    #: True: the model runs in this process, there is no HTTP API; the HTTP tests are skipped.
    in_process: bool = False
    # HTTP providers:
    #: The fake API server (a ``FakeHTTPServer`` subclass); its ``url`` is the base URL given to connectors.
    fake_server: Optional[type[FakeHTTPServer]] = None
    #: What the errors about keys tell the user to set ("OPENAI_API_KEY", "GEMINI_API_KEY (or GOOGLE_API_KEY)").
    key_help: str = ""
    #: Environment variables the connector reads besides the spec's (e.g. a base-URL variable the spec does not
    #: declare): cleared before every test with the spec's own.
    other_env: tuple[str, ...] = ()
    # In-process providers:
    #: A model the provider cannot find: its connector, or its first call, fails with a ModelError naming it.
    missing_model: str = ""

    # -- hooks of HTTP providers ----------------------------------------------------------------------------
    def answer(self, text: str, usage: Optional[tuple[int, int]] = (11, 7)) -> Behaviour:
        """A 200 answering ``text`` with ``usage`` (input tokens, output tokens); None: no usage in it."""
        raise NotImplementedError(f"{type(self).__name__} must implement answer(text, usage)")

    def error(self, status: int, message: str) -> Behaviour:
        """An error ``status`` with the API's error body carrying ``message``."""
        raise NotImplementedError(f"{type(self).__name__} must implement error(status, message)")

    def malformed_answers(self) -> list[tuple[Behaviour, str]]:
        """200s that hold no answer text, each with what ``Completion.raw["malformed"]`` must say."""
        raise NotImplementedError(f"{type(self).__name__} must implement malformed_answers()")

    def sent_key(self, request: RecordedRequest) -> str:
        """The API key ``request`` carried (from its headers)."""
        raise NotImplementedError(f"{type(self).__name__} must implement sent_key(request)")

    # -- building connectors --------------------------------------------------------------------------------
    def make_connector(self, model: str, options: ModelOptions, settings: Optional[Mapping[str, Any]] = None) -> Any:
        """A connector for ``provider:model``, built as the host builds it: the registered factory, called with
        ``settings`` validated as ``[provider.<name>]`` and ``ProviderServices``."""
        spec = self.spec()
        section = spec.settings_model()
        validated = section.model_validate(dict(settings or {})) if section is not None else None
        return spec.create(validated, ProviderServices(model=model, options=options))

    def spec(self) -> ProviderSpec:
        """The provider's registered record."""
        assert self.provider and self.model, f"{type(self).__name__} must set provider and model"
        return registered(self.provider, self.distribution)

    def connect(self, url: Optional[str] = None, *, model: str = "", retries: int = 2,
                settings: Optional[Mapping[str, Any]] = None, **options: Any) -> Any:
        """A connector with short answers; given ``url``, to that server with the suite's key and short waits."""
        if url is not None:
            options = {"base_url": url, "api_key": KEY, "timeout": 5.0, **options}
        connector = self.make_connector(model or self.model, ModelOptions(max_tokens=16, **options), settings)
        if url is not None:
            connector.retry_policy = RetryPolicy(max_retries=retries, base_delay=0.01, max_delay=2.0)
        return connector

    # -- fixtures -------------------------------------------------------------------------------------------
    @pytest.fixture(autouse=True)
    def _clean_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """No key, base URL or default model of the provider from the developer's shell."""
        spec = self.spec()
        for name in (*spec.key_env, spec.base_url_env, *self.other_env, KEY_VARIABLE):
            if name:
                monkeypatch.delenv(name, raising=False)

    @pytest.fixture
    def server(self):
        """A started ``fake_server``, stopped after the test (HTTP providers only)."""
        self._needs_http("no HTTP API")
        assert self.fake_server is not None, f"{type(self).__name__} must set fake_server"
        with self.fake_server() as srv:
            yield srv

    def _needs_http(self, what: str) -> None:
        if self.in_process:
            pytest.skip(f"{type(self).__name__}.in_process is True: {what}")

    def _keyed(self) -> ProviderSpec:
        spec = self.spec()
        if not spec.key_env:
            pytest.skip(f"{self.provider} declares no key_env: it needs no key")
        return spec

    def _takes_api_key_env(self) -> bool:
        """Whether ``[provider.<name>] api_key_env`` names the key variable (``rlm models list`` shows it then)."""
        section = self.spec().settings_model()
        return section is not None and "api_key_env" in section.model_fields

    def _server(self, request: pytest.FixtureRequest) -> Optional[FakeHTTPServer]:
        """The ``server`` fixture for an HTTP provider, None for an in-process one."""
        return None if self.in_process else request.getfixturevalue("server")

    # -- HTTP: answers --------------------------------------------------------------------------------------
    def test_missing_usage_counts_zero(self, server):
        server.push(self.answer("ok", usage=None))
        result = self.connect(server.url).complete(MESSAGES)
        assert (result.text, result.input_tokens, result.output_tokens) == ("ok", 0, 0)

    def test_malformed_answers_come_back_flagged_not_raised_nor_retried(self, server):
        cases = self.malformed_answers()
        assert cases, "malformed_answers() must give at least one case"
        connector = self.connect(server.url)
        for behaviour, problem in cases:
            server.push(behaviour)
            result = connector.complete(MESSAGES)
            assert result.text is None and result.raw.get("malformed") == problem, (behaviour, result)
        assert len(server.requests) == len(cases)

    # -- HTTP: retries --------------------------------------------------------------------------------------
    def test_429_is_retried_after_the_retry_after_wait(self, server):
        server.push(with_header(self.error(429, "rate limited"), "Retry-After", "0.4"), self.answer("done"))
        reported: list[tuple[int, float, str]] = []
        result = self.connect(server.url).complete(MESSAGES, on_retry=lambda *a: reported.append(a))
        assert result.text == "done" and result.raw["attempts"] == 2
        first, second = server.requests
        assert second.at - first.at >= 0.4
        assert reported == [(1, 0.4, "HTTP 429 Too Many Requests")]

    def test_5xx_are_retried_until_the_answer(self, server):
        server.push(self.error(500, "internal error"), self.error(503, "unavailable"), self.answer("fine"))
        reported: list[tuple[int, float, str]] = []
        result = self.connect(server.url, retries=3).complete(MESSAGES, on_retry=lambda *a: reported.append(a))
        assert result.text == "fine" and len(server.requests) == 3
        assert [r[2] for r in reported] == ["HTTP 500 Internal Server Error", "HTTP 503 Service Unavailable"]
        assert all(0 <= r[1] <= 2.0 for r in reported)

    def test_final_error_after_max_retries_is_one_clear_message(self, server):
        server.push(*[self.error(429, "rate limited")] * 3)
        connector = self.connect(server.url, retries=2)
        reported: list[tuple[int, float, str]] = []
        with pytest.raises(ModelError) as info:
            connector.complete(MESSAGES, on_retry=lambda *a: reported.append(a))
        assert str(info.value) == f"{connector.name}: HTTP 429 Too Many Requests after 3 attempts"
        assert len(server.requests) == 3 and [r[0] for r in reported] == [1, 2]

    def test_timeout_is_retried_then_a_clear_error(self, server):
        server.push(self.answer("late").delayed(3.0), self.answer("late").delayed(3.0))
        connector = self.connect(server.url, retries=1)
        reported: list[tuple[int, float, str]] = []
        started = time.monotonic()
        with pytest.raises(ModelError) as info:
            connector.complete(MESSAGES, timeout=0.3, on_retry=lambda *a: reported.append(a))
        assert time.monotonic() - started < 2.5
        expected = f"{connector.name}: no answer from {server.url} within 0.3 s (timeout) after 2 attempts"
        assert str(info.value) == expected and len(server.requests) == 2 and len(reported) == 1

    def test_timeout_then_success(self, server):
        server.push(self.answer("late").delayed(3.0), self.answer("in time"))
        assert self.connect(server.url, timeout=0.3).complete(MESSAGES).text == "in time"

    @pytest.mark.parametrize("cut", [False, True], ids=["bad-json", "cut-connection"])
    def test_truncated_body_is_retried_then_a_clear_error(self, server, cut):
        server.push(self.answer("cut").truncated(cut_connection=cut), self.answer("whole"))
        connector = self.connect(server.url, retries=1)
        reported: list[tuple[int, float, str]] = []
        assert connector.complete(MESSAGES, on_retry=lambda *a: reported.append(a)).text == "whole"
        assert len(reported) == 1
        server.push(*[self.answer("cut").truncated(cut_connection=cut)] * 2)
        with pytest.raises(ModelError) as info:
            connector.complete(MESSAGES)
        expected = "broken mid-response" if cut else "malformed JSON in response"
        assert expected in str(info.value) and str(info.value).endswith("after 2 attempts")

    def test_connection_refused_names_the_url(self):
        self._needs_http("no connection to refuse")
        url = f"http://127.0.0.1:{unused_port()}"
        connector = self.connect(url, retries=1)
        with pytest.raises(ModelError) as info:
            connector.complete(MESSAGES)
        # nothing listens on this machine: not retried (waiting will not start a server), the URL and what to do
        assert str(info.value).startswith(f"{connector.name}: nothing listens at {url} (connection refused): ")
        assert "--base-url" in info.value.hint and "after" not in str(info.value)

    # -- HTTP: errors that are not retried, and keys --------------------------------------------------------
    def test_bad_key_is_not_retried_and_says_which_variable_to_set(self, server):
        server.push(self.error(401, "the key was refused"))
        connector = self.connect(server.url)
        reported: list[tuple[int, float, str]] = []
        with pytest.raises(ModelError) as info:
            connector.complete(MESSAGES, on_retry=lambda *a: reported.append(a))
        message = str(info.value)
        assert message.startswith(f"{connector.name}: HTTP 401 Unauthorized: invalid API key"), message
        assert message.endswith(f"set {self.key_help}") and "the key was refused" in info.value.hint
        assert KEY not in message + info.value.hint + repr(connector)
        assert self.sent_key(server.requests[0]) == KEY and len(server.requests) == 1 and reported == []

    def test_other_client_errors_are_not_retried(self, server):
        server.push(self.error(400, "prompt is too long"))
        connector = self.connect(server.url)
        with pytest.raises(ModelError) as info:
            connector.complete(MESSAGES)
        assert str(info.value) == f"{connector.name}: HTTP 400 Bad Request: prompt is too long"
        assert len(server.requests) == 1

    def test_missing_key_is_a_clear_error(self, monkeypatch):
        spec = self._keyed()
        with pytest.raises(ModelError) as info:
            self.make_connector(self.model, ModelOptions()).complete(MESSAGES)
        assert info.value.message.startswith(f"no API key for {self.provider}: set {self.key_help}")
        assert any(f"export {name}=" in info.value.hint for name in spec.key_env), info.value.hint
        if self._takes_api_key_env():  # a configured variable replaces the usual ones
            for name in spec.key_env:
                monkeypatch.setenv(name, KEY)
            with pytest.raises(ModelError, match=f"set {KEY_VARIABLE}"):
                self.make_connector(self.model, ModelOptions(), {"api_key_env": KEY_VARIABLE})

    def test_keys_come_from_the_key_variables(self, server, monkeypatch):
        spec = self._keyed()
        for name in spec.key_env:
            monkeypatch.setenv(name, f"{KEY}-{name}")
            server.push(self.answer("ok"))
            self.connect(server.url, api_key=None).complete(MESSAGES)
            assert self.sent_key(server.requests[-1]) == f"{KEY}-{name}"
            monkeypatch.delenv(name)
        if self._takes_api_key_env():
            monkeypatch.setenv(KEY_VARIABLE, KEY)
            server.push(self.answer("ok"))
            self.connect(server.url, api_key=None, settings={"api_key_env": KEY_VARIABLE}).complete(MESSAGES)
            assert self.sent_key(server.requests[-1]) == KEY

    def test_a_server_given_by_url_needs_no_key(self, server, monkeypatch):
        """Local compatible servers take no key (``rlm models list`` counts on it): a placeholder is sent."""
        server.push(self.answer("no key"))
        assert self.connect(server.url, api_key=None).complete(MESSAGES).text == "no key"
        spec = self.spec()
        if spec.base_url_env:
            monkeypatch.setenv(spec.base_url_env, server.url)
            server.push(self.answer("from the variable"))
            assert self.make_connector(self.model, ModelOptions()).complete(MESSAGES).text == "from the variable"
        assert all(self.sent_key(request) for request in server.requests)
