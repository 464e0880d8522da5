"""OpenAI-compatible providers by name (ollama, vllm, groq, …): registration records, base URLs and keys, real
requests to a loopback server, and ``rlm run`` with them."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from rlm_host.testing import OpenAIServer
from rlm_host.testing import openai_answer as answer
from rlm_host.testing import openai_unauthorized as unauthorized
from rlm_host import ModelError, ProviderServices
from rlm_host.sdk.models import ReplyFormat
from rlm_host.sdk.models import ModelOptions, OpenAIConnector
from rlm_host.testing import ENVIRONMENT_REPLY_FORMATS
from rlm_provider_compatible import services as compatible

PLUGIN = "rlm-provider-compatible"
#: What the reply-format tests send: the built-in environments' formats (a GBNF grammar, a JSON schema)
PURE_RLM, GENERIC = ENVIRONMENT_REPLY_FORMATS["pure_rlm"][0], ENVIRONMENT_REPLY_FORMATS["generic"][0]
ACTION_SCHEMA = GENERIC.json_schema
LOCAL = {"ollama", "llamacpp_server", "lmstudio", "vllm", "sglang", "tgi"}

EXPECTED = {
    "lmstudio": ("http://localhost:1234/v1", ()),
    "vllm": ("http://localhost:8000/v1", ("VLLM_API_KEY",)),
    "sglang": ("http://localhost:30000/v1", ()),
    "tgi": ("http://localhost:8080/v1", ()),
    "ollama": ("http://localhost:11434/v1", ()),
    "llamacpp_server": ("http://localhost:8080/v1", ()),
    "openrouter": ("https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
    "groq": ("https://api.groq.com/openai/v1", ("GROQ_API_KEY",)),
    "together": ("https://api.together.xyz/v1", ("TOGETHER_API_KEY",)),
    "deepseek": ("https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",)),
    "fireworks": ("https://api.fireworks.ai/inference/v1", ("FIREWORKS_API_KEY",)),
    "mistral": ("https://api.mistral.ai/v1", ("MISTRAL_API_KEY",)),
}


def test_the_table_and_the_registration_records(rlm_plugin_host):
    specs = {spec.name: spec for spec in rlm_plugin_host(PLUGIN, "rlm-runs").providers()}  # rlm-runs: replay
    for name, (url, keys) in EXPECTED.items():
        assert compatible.PROVIDERS[name].base_url == url
        spec = specs[name]
        assert spec.key_env == keys and spec.requires == ("httpx",) and not spec.default_model  # never auto-picked
        assert url in spec.description and spec.readiness().ok
    assert {name for name, spec in specs.items() if spec.local} == LOCAL | {"scripted", "replay"}
    assert all(specs[name].start_command and specs[name].key_optional for name in LOCAL)
    assert specs["xai"].price_id == "x-ai" and specs["groq"].price_id == "groq" and not specs["ollama"].price_id


def test_registered_providers_resolve_by_name_and_alias(rlm_plugin_host):
    providers = rlm_plugin_host(PLUGIN).providers()
    assert providers.get("lm-studio").name == "lmstudio" and providers.get("togetherai").name == "together"
    connector = providers.get("ollama").create(None, ProviderServices(model="llama3"))
    assert isinstance(connector, OpenAIConnector)
    assert connector.name == "ollama:llama3" and connector.base_url == "http://localhost:11434/v1"


def test_base_url_from_settings_or_options(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://never-used:1/v1")  # the openai provider's variable only
    assert compatible.create("vllm", "m").base_url == "http://localhost:8000/v1"
    configured = {"base_url": "http://gpu-box:8000/v1"}
    assert compatible.create("vllm", "m", None, configured).base_url == "http://gpu-box:8000/v1"
    options = ModelOptions(base_url="http://flag:9/v1")  # --base-url
    assert compatible.create("vllm", "m", options, configured).base_url == "http://flag:9/v1"


def test_context_windows_are_genai_prices_for_the_service_unless_configured():
    env = {"CEREBRAS_API_KEY": "k"}
    assert compatible.create("cerebras", "llama-3.3-70b", environ=env).context_window == 128_000
    configured = compatible.create("cerebras", "llama-3.3-70b", None, {"context_window": 4096}, environ=env)
    assert configured.context_window == 4096
    assert compatible.create("ollama", "llama3.2").context_window is None  # a local server's model: unknown


def test_hosted_providers_need_their_key(monkeypatch):
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    with pytest.raises(ModelError, match="no API key for groq: set GROQ_API_KEY") as info:
        compatible.create("groq", "llama-3.3-70b-versatile")
    assert "GROQ_API_KEY" in info.value.hint
    monkeypatch.setenv("MY_GROQ", "gsk-test")
    connector = compatible.create("groq", "m", None, {"api_key_env": "MY_GROQ"})
    assert connector.key_env == "MY_GROQ" and connector.name == "groq:m"
    with pytest.raises(ModelError, match="empty model name"):
        compatible.create("ollama", "")


def test_requests_go_to_the_server_with_the_right_key(monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test")
    with OpenAIServer() as server:
        server.push(answer("local"), answer("hosted"), unauthorized())
        local = compatible.create("ollama", "llama3", None, {"base_url": server.url})
        assert local.complete([{"role": "user", "content": "hi"}]).text == "local"
        hosted = compatible.create("openrouter", "openai/gpt-4o-mini", ModelOptions(base_url=server.url))
        assert hosted.complete([{"role": "user", "content": "hi"}]).text == "hosted"
        with pytest.raises(ModelError) as info:
            hosted.complete([{"role": "user", "content": "hi"}])
        headers = [r.headers.get("authorization") for r in server.requests]
        bodies = server.bodies
    assert headers[0] == "Bearer sk-no-key-required" and headers[1] == "Bearer sk-or-test"
    assert bodies[0]["model"] == "llama3" and bodies[1]["model"] == "openai/gpt-4o-mini"
    message = info.value.message
    assert message.startswith("openrouter:openai/gpt-4o-mini: HTTP 401") and "OPENROUTER_API_KEY" in message


def test_rlm_run_with_a_named_compatible_provider(rlm_cli, rlm_isolated):
    work = rlm_isolated.work
    with OpenAIServer() as server:
        (work / "rlm.toml").write_text(f'[provider.ollama]\nbase_url = "{server.url}"\n')
        server.push(answer("FINAL(42)"), answer("FINAL(43)"))
        first = rlm_cli("--trust-config", "run", "q", "--model", "ollama:test-model", "--sandbox", "process", "--json",
                        "-q", plugins=PLUGIN)
        (work / "rlm.toml").unlink()
        second = rlm_cli("run", "q", "--model", "lmstudio:m", "--base-url", server.url, "--sandbox", "process",
                         "--json", "-q", plugins=PLUGIN)
    assert first.code == 0, first.err
    run = json.loads(first.out)
    assert run["final_response"] == "42" and run["model"] == "ollama:test-model" and run["cost"] == 0.0  # local: free
    assert second.code == 0, second.err
    assert json.loads(second.out)["final_response"] == "43"


def test_nothing_listening_at_a_local_server_names_its_start_command(rlm_cli):
    port = free_port()
    failed = rlm_cli("run", "q", "--model", "ollama:llama3.2", "--base-url", f"http://127.0.0.1:{port}/v1",
                     "--sandbox", "process", "-q", plugins=PLUGIN)
    assert failed.code != 0 and "`ollama serve`" in failed.err, failed.err


def test_importing_the_table_stays_light():
    probe = ("import sys, rlm_provider_compatible.hooks as h; h.rlm_register_providers(); "
             "print(sorted(m for m in ('pydantic', 'httpx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ------------------------------------------------------------------------------ OpenAI-compatible reply formats


def request_for(provider: str, reply_format: ReplyFormat) -> dict[str, Any]:
    """The body ``provider``'s connector sends for a turn with ``reply_format`` (to a recording server)."""
    with OpenAIServer() as server:
        server.push(answer("ok"))
        connector = compatible.create(provider, "m", environ={"KEY": "k"}, settings={"base_url": server.url,
                                                                                    "api_key_env": "KEY"})
        result = connector.complete([{"role": "user", "content": "hi"}], reply_format=reply_format)
        body = server.requests[0].body
    enforced = reply_format.kinds & connector.reply_formats
    assert result.raw.get("reply_format") == (reply_format.name if enforced else None)
    return body


STRICT_SCHEMA = {"type": "json_schema",
                 "json_schema": {"name": "generic_action", "schema": ACTION_SCHEMA, "strict": True}}


@pytest.mark.parametrize(
    ("provider", "grammar_fields", "schema_fields"),
    [
        ("llamacpp_server", {"grammar": PURE_RLM.gbnf},
         {"response_format": {"type": "json_object", "schema": ACTION_SCHEMA}}),
        ("vllm", {"structured_outputs": {"grammar": PURE_RLM.gbnf}}, {"response_format": STRICT_SCHEMA}),
        ("sglang", {"ebnf": PURE_RLM.gbnf}, {"response_format": STRICT_SCHEMA}),
        ("ollama", {}, {"response_format": STRICT_SCHEMA}),
        ("groq", {}, {"response_format": STRICT_SCHEMA}),
        ("deepseek", {}, {}),  # JSON mode only, no schema: nothing it could enforce
        ("tgi", {}, {}),
    ],
)
def test_each_service_gets_the_format_in_its_own_fields(provider, grammar_fields, schema_fields):
    plain = {"model", "messages", "max_tokens", "temperature"}
    grammar_body = request_for(provider, PURE_RLM)
    assert {k: v for k, v in grammar_body.items() if k not in plain} == grammar_fields
    schema_body = request_for(provider, GENERIC)
    assert {k: v for k, v in schema_body.items() if k not in plain} == schema_fields


def test_only_llama_cpp_servers_enforce_by_default():
    by_default = {name for name, service in compatible.PROVIDERS.items() if service.reply_fields[2]}
    assert by_default == {"llamacpp_server"}
    assert compatible.create("llamacpp_server", "m").reply_format_by_default
    openai = OpenAIConnector("gpt-4o-mini", environ={"OPENAI_API_KEY": "k"})
    assert openai.reply_formats == {"json_schema"} and not openai.reply_format_by_default
