"""``ProviderContract``: the test suite of the model connector protocol (``rlm_host.sdk.models.ModelConnector``) and
of the ``ProviderSpec`` fields the host reads, for every provider.

A provider plugin proves it keeps them by subclassing it in its tests::

    from rlm_host.testing import Behaviour, ProviderContract

    from fake_mine import MineServer, answer_body, error_body  # the test's fake API (a FakeHTTPServer)


    class TestMineContract(ProviderContract):
        provider = "mine"                    # the registered name
        distribution = "rlm-provider-mine"   # RLM_PLUGINS: the distribution registering it ("" for built-ins)
        model = "mine-small"                 # a model id the tests use
        otel_provider = "mine_ai"            # gen_ai.provider.name, when it is not the registered name
        key_help = "MINE_API_KEY"            # what errors tell the user to set
        context_windows = {"mine-small": 32_000, "not-a-mine-model": None}
        lazy_modules = ("mine_sdk",)         # imported only by the first call, never by building a connector
        fake_server = MineServer             # speaks the API; its ``url`` is the base URL a connector is given

        def answer(self, text, usage=(11, 7)):   # a 200 answering ``text``; usage None: no usage block
            return Behaviour(body=answer_body(text, usage))

        def error(self, status, message):        # the API's error body
            return Behaviour(status, error_body(status, message))

        def malformed_answers(self):             # 200s without an answer, and what raw["malformed"] must say
            return [(Behaviour(body={"choices": []}), "empty 'choices' list")]

        def sent_key(self, request):             # the API key a recorded request carried
            return request.headers["x-api-key"]

pytest then runs every ``test_*`` below against connectors built as the host builds them — by the registered
factory, ``factory(validated [provider.<name>], ProviderServices(model=…, options=…))`` — and talking to a
started ``fake_server``. What they check, beyond the protocol's docstrings:

- registration: ready, aliases resolve, the key variables are named; ``--model auto`` and ``rlm models list`` do
  what the spec's fields say; the settings section is validated by the host; the SDK is imported lazily;
- a connector is named ``provider:model``, knows its context window, names its provider as OpenTelemetry does
  (``otel_provider``), and ``complete(messages, timeout=, on_retry=, purpose=)`` returns a Completion with the
  usage the server reported (0 when it sent none);
- malformed answers come back flagged in ``raw["malformed"]`` with ``text=None``, neither raised nor retried;
- 429 (after its ``Retry-After``), 5xx, timeouts and broken or malformed bodies are retried, each retry told to
  ``on_retry(attempt, wait, reason)``, ``raw["attempts"]`` counting them; when retries run out, one ModelError
  ``provider:model: <what happened> after N attempts``; a refused connection names the URL;
- other 4xx fail at once: 401 says "invalid API key — set <key_help>", a 404's hint names the model;
- keys are read from the spec's ``key_env`` variables (and ``api_key_env`` when the settings have it), are
  optional for a server given by URL, and are never printed: not in errors, ``repr``, nor ``rlm models list``;
- ``complete(…, reply_format=)`` is accepted by every connector: one declaring a kind of the format in
  ``reply_formats`` enforces it (the real model answers in its shape; an HTTP request carries it) and names it in
  ``raw["reply_format"]``, any other ignores it.

Class attributes declare what differs legitimately between providers. A provider running its model in this
process (``in_process = True``, e.g. llamacpp) has no HTTP API: the tests of one are skipped, saying so, and the
rest run against the real model (keep ``model`` small). Real examples: the host's tests/test_providers.py and the
tests of rlm-provider-anthropic, -gemini and -llamacpp. An HTTP connector keeps its ``RetryPolicy`` in
``retry_policy`` (as ``RetryingConnector`` does): the suite shortens the waits through it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from rlm_host.config import load_settings
from rlm_host.errors import ConfigError
from rlm_host.models.protocol import Completion, ModelConnector, ModelError, ModelOptions, ReplyFormat, provider_of
from rlm_host.models.resolve import auto_model, resolve_connector
from rlm_host.plugins.discovery import HOST_DISTRIBUTION
from rlm_host.testing.provider_calls import KEY, MESSAGES, ProviderCalls


#: The reply format the suite asks for: "yes" or "no", as a grammar and as a JSON schema.
YES_NO = ReplyFormat(
    "contract_yes_no",
    gbnf='root ::= "yes" | "no"\n',
    json_schema={"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
                 "required": ["answer"], "additionalProperties": False},
)


def carries(value: Any, reply_format: ReplyFormat) -> bool:
    """Whether a request body holds the format's grammar or JSON schema anywhere."""
    if value == reply_format.gbnf or value == reply_format.json_schema:
        return True
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return any(carries(child, reply_format) for child in children)


class ProviderContract(ProviderCalls):
    """Subclass in a ``Test…`` class: set the attributes and implement the hooks of :class:`ProviderCalls`."""

    # -- registration and what the host reads from the spec -------------------------------------------------
    def test_registered_ready_and_named(self, rlm_plugin_host):
        host = rlm_plugin_host(self.distribution).collect_all()
        spec, owner = next((s, o) for s, o in host.providers().items() if s.name == self.provider)
        assert owner == (self.distribution or HOST_DISTRIBUTION)
        if self.distribution:
            dist = next(d for d in host.distributions if d.name == self.distribution)
            assert dist.status == "ok", dist.errors
        assert all(host.providers().get(name) is spec for name in spec.names)
        assert spec.readiness().ok, spec.readiness()
        assert spec.key_env or spec.key_optional, "name the key variables (key_env), or declare key_optional"
        assert all(name.isupper() and " " not in name for name in spec.key_env), spec.key_env

    def test_context_windows(self):
        assert self.context_windows, f"{type(self).__name__} must declare context_windows"
        for model, window in self.context_windows.items():
            connector = self.make_connector(model, ModelOptions(api_key=KEY))
            assert isinstance(connector, ModelConnector)
            assert (connector.name, connector.context_window) == (f"{self.provider}:{model}", window)

    def test_events_name_the_provider_as_opentelemetry_does(self):
        connector = self.make_connector(self.model, ModelOptions(api_key=KEY))
        assert provider_of(connector) == (self.otel_provider or self.provider)

    def test_model_auto(self, rlm_plugin_host):
        host = rlm_plugin_host(self.distribution)
        spec = host.providers().get(self.provider)
        if not spec.default_model:
            pytest.skip(f"{self.provider} has no default_model: --model auto never picks it")
        mine = (f"{spec.name}:{spec.default_model}", spec.default_notice)
        setups = [{name: KEY} for name in spec.key_env] or [{}]  # each key variable alone; keyless: nothing set
        for environ in setups:
            assert auto_model(host, environ=environ) == mine, environ
        if spec.key_env:
            try:
                picked = auto_model(host, environ={})[0]
            except ConfigError:
                picked = ""
            assert picked != mine[0], "picked without its key"
        for other in host.providers():  # a configured provider ranked higher (or any keyed one) wins
            if other.key_env and other.default_model and (not spec.key_env or other.auto_priority > spec.auto_priority):
                environ = {**setups[0], other.key_env[0]: KEY}
                assert auto_model(host, environ=environ)[0] == f"{other.name}:{other.default_model}", environ

    def test_models_list_names_the_key_variables_never_their_values(self, rlm_cli, monkeypatch):
        spec = self.spec()

        def row() -> dict[str, Any]:
            result = rlm_cli("models", "list", "--json", plugins=self.distribution)
            assert result.code == 0, result.err
            return next(r for r in json.loads(result.out)["providers"] if r["name"] == self.provider)

        before = row()
        assert before["plugin"] == (self.distribution or HOST_DISTRIBUTION)
        assert before["keys"] == [{"variable": name, "set": False} for name in spec.key_env]
        assert before["status"] == ("no key" if spec.key_env and not spec.key_optional else "ready")
        assert (before["default_model"], before["base_url"]) == (spec.default_model, spec.base_url or None)
        for name in spec.key_env:
            monkeypatch.setenv(name, KEY)
        after = row()
        assert after["status"] == "ready" and all(key["set"] for key in after["keys"])
        for args in (("--json",), ()):
            result = rlm_cli("models", "list", *args, plugins=self.distribution)
            assert KEY not in result.out + result.err

    def test_settings_are_validated_by_the_host_and_reach_the_factory(self, rlm_isolated, rlm_plugin_host):
        spec = self.spec()
        if spec.settings is None:
            pytest.skip(f"{self.provider} declares no settings model")
        host = rlm_plugin_host(self.distribution)
        config = rlm_isolated.work / "rlm.toml"
        config.write_text(f"[provider.{self.provider}]\n")
        loaded = load_settings(cwd=rlm_isolated.work, host=host, environ={})
        settings_model = spec.settings_model()
        assert settings_model is not None and isinstance(loaded.component("provider", self.provider), settings_model)
        alias = spec.names[-1]
        connector = resolve_connector(f"{alias}:{self.model}", host=host, settings=loaded,
                                      options=ModelOptions(api_key=KEY))
        assert connector.name == f"{self.provider}:{self.model}"
        config.write_text(f"[provider.{self.provider}]\nno_such_setting = 1\n")
        with pytest.raises(ConfigError, match="no_such_setting"):
            load_settings(cwd=rlm_isolated.work, host=host, environ={})

    def test_readiness_and_building_a_connector_import_no_sdk(self):
        if not self.lazy_modules:
            pytest.skip(f"{type(self).__name__}.lazy_modules is empty: nothing to import lazily")
        code = textwrap.dedent(f"""
            import sys
            from rlm_host import ModelOptions, PluginHost, ProviderServices
            spec = PluginHost(environ={{"RLM_PLUGINS": {self.distribution!r}}}).providers().get({self.provider!r})
            section = spec.settings_model()
            services = ProviderServices(model={self.model!r}, options=ModelOptions(api_key="k"))
            assert spec.readiness().ok
            spec.create(section() if section else None, services)
            loaded = [name for name in {self.lazy_modules!r} if name in sys.modules]
            assert not loaded, f"imported: {{loaded}}"
        """)
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr[-2000:]

    # -- the connector protocol -----------------------------------------------------------------------------
    def test_an_answer_is_a_completion_with_its_usage(self, request):
        server = self._server(request)
        if server is not None:
            server.push(self.answer("4", usage=(12, 1)))
        connector = self.connect(server.url if server is not None else None)
        reported: list[tuple[int, float, str]] = []
        result = connector.complete(MESSAGES, timeout=60, on_retry=lambda *a: reported.append(a), purpose="sub_call")
        assert isinstance(connector, ModelConnector) and isinstance(result, Completion)
        assert result.text and result.model and result.seconds > 0 and "malformed" not in result.raw, result
        assert reported == []
        if server is None:
            assert result.input_tokens > 0 and result.output_tokens > 0, result
        else:
            assert (result.text, result.input_tokens, result.output_tokens) == ("4", 12, 1)
            assert len(server.requests) == 1

    def test_a_reply_format_is_honoured_or_ignored(self, request):
        server = self._server(request)
        if server is not None:
            server.push(self.answer("yes"))
        connector = self.connect(server.url if server is not None else None)
        kinds = YES_NO.kinds & getattr(connector, "reply_formats", frozenset())
        result = connector.complete(MESSAGES, timeout=60, purpose="turn", reply_format=YES_NO)
        assert isinstance(result, Completion) and result.text, result
        assert result.raw.get("reply_format") == (YES_NO.name if kinds else None), result.raw
        if server is not None:
            assert carries(server.requests[0].body, YES_NO) == bool(kinds), server.requests[0].body
        elif "gbnf" in kinds:
            assert result.text in ("yes", "no"), result.text
        elif kinds:
            assert json.loads(result.text)["answer"] in ("yes", "no"), result.text

    def test_concurrent_calls_each_get_their_answer(self, request):
        server = self._server(request)
        texts = [f"answer {i}" for i in range(4)]
        if server is not None:
            server.push(*(self.answer(text) for text in texts))
        connector = self.connect(server.url if server is not None else None)
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda _: connector.complete(MESSAGES, timeout=60), texts))
        assert all(isinstance(r, Completion) and r.text for r in results), results
        if server is not None:
            assert sorted(r.text for r in results) == texts and len(server.requests) == 4

    def test_connectors_may_share_a_client_but_never_a_key(self, request):
        """An SDK client may be shared between connectors of one process (the host's ``RetryingConnector`` shares
        one per construction arguments): each request still carries its own connector's key."""
        server = self._server(request)
        if server is None:
            pytest.skip("an in-process model sends no key")
        server.push(*(self.answer(f"answer {i}") for i in range(3)))
        first, same, other = self.connect(server.url), self.connect(server.url), self.connect(server.url, api_key="k2")
        for connector in (first, same, other):
            assert connector.complete(MESSAGES, timeout=60).text
        assert [self.sent_key(r) for r in server.requests] == [KEY, KEY, "k2"]

    def test_a_model_that_does_not_exist_is_one_clear_error(self, request):
        server = self._server(request)
        if server is None:
            assert self.missing_model, f"{type(self).__name__} must set missing_model"
            with pytest.raises(ModelError) as info:
                self.connect(model=self.missing_model).complete(MESSAGES)
            assert self.missing_model in info.value.message and info.value.hint
            return
        server.push(self.error(404, f"model {self.model} does not exist"))
        connector = self.connect(server.url)
        with pytest.raises(ModelError) as info:
            connector.complete(MESSAGES)
        assert str(info.value) == f"{connector.name}: HTTP 404 Not Found: model {self.model} does not exist"
        assert self.model in info.value.hint and len(server.requests) == 1
