"""OpenAI-compatible providers by name (ollama, vllm, groq, …): registration records, base URLs and keys, real
requests to a loopback server, and ``rlm run`` with them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlm_host.cli.main import main
from rlm_host.llm import openai_compatible as compatible
from rlm_host.llm.openai_provider import OpenAIConnector
from rlm_host.llm.protocol import ModelError, ModelOptions
from rlm_host.plugins import get_host
from rlm_host.services import ProviderServices
from support.openai_server import OpenAIServer, answer, unauthorized

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


def test_the_table_and_the_registration_records(monkeypatch):
    monkeypatch.setenv("RLM_PLUGINS", "")
    specs = {spec.name: spec for spec in get_host().providers()}
    for name, (url, keys) in EXPECTED.items():
        assert compatible.PROVIDERS[name].base_url == url
        spec = specs[name]
        assert spec.key_env == keys and spec.requires == ("httpx",) and not spec.default_model  # never auto-picked
        assert url in spec.description and spec.readiness().ok
    assert set(compatible.local_provider_names()) == {"ollama", "llamacpp_server", "lmstudio", "vllm", "sglang", "tgi"}


def test_registered_providers_resolve_by_name_and_alias(monkeypatch):
    monkeypatch.setenv("RLM_PLUGINS", "")
    providers = get_host().providers()
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


def test_rlm_run_with_a_named_compatible_provider(isolated_env, monkeypatch, capsys):
    work = Path(isolated_env["WORK"])
    monkeypatch.setenv("RLM_PLUGINS", "")
    with OpenAIServer() as server:
        (work / "rlm.toml").write_text(f'[provider.ollama]\nbase_url = "{server.url}"\n')
        server.push(answer("FINAL(42)"), answer("FINAL(43)"))
        code = main(["--trust-config", "run", "q", "--model", "ollama:test-model", "--sandbox", "process", "--json",
                     "-q"])  # fmt: skip
        first = capsys.readouterr()
        (work / "rlm.toml").unlink()
        code2 = main(["run", "q", "--model", "lmstudio:m", "--base-url", server.url, "--sandbox", "process",
                      "--json", "-q"])
        second = capsys.readouterr()
    assert code == 0, first.err
    run = json.loads(first.out)
    assert run["final_response"] == "42" and run["model"] == "ollama:test-model" and run["cost"] == 0.0
    assert code2 == 0, second.err
    assert json.loads(second.out)["final_response"] == "43"


def test_importing_the_table_stays_light():
    probe = ("import sys, rlm_host.default_plugins.providers as p; p.rlm_register_providers(); "
             "print(sorted(m for m in ('pydantic', 'openai') if m in sys.modules))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
