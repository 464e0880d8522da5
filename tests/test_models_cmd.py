"""``rlm models list``: every provider with its key status (never a key's value), base URL and readiness, and
what ``run.model`` / ``run.sub_model`` / ``auto`` mean here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_host.testing.openai_server import OpenAIServer

from rlm_host.cli.main import main
from rlm_host.redact import redact

SECRETS = {
    "OPENAI_API_KEY": "sk-proj-SECRET-openai-0123456789",
    "GROQ_API_KEY": "gsk_SECRET_groq_0123456789",
    "MY_VLLM_TOKEN": "SECRET-vllm-token",
}


@pytest.fixture
def models(isolated_env, monkeypatch, capsys):
    monkeypatch.setenv("RLM_PLUGINS", "rlm-provider-compatible")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENROUTER_API_KEY", "GROQ_API_KEY"):
        monkeypatch.delenv(name, raising=False)

    def run(*args: str) -> tuple[int, str, str]:
        code = main(["models", "list", *args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def test_no_key_value_is_ever_printed(models, monkeypatch, isolated_env):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://user:SECRET-in-url@proxy.example/v1")
    Path(isolated_env["WORK"], "rlm.toml").write_text('[provider.vllm]\napi_key_env = "MY_VLLM_TOKEN"\n')
    monkeypatch.setenv("RLM_TRUST_CONFIG", "1")  # the project's key variable applies once trusted
    for args in ((), ("--json",)):
        code, out, err = models(*args)
        assert code == 0, err
        assert "SECRET" not in out + err
    report = json.loads(out)
    rows = {row["name"]: row for row in report["providers"]}
    assert rows["openai"]["keys"] == [{"variable": "OPENAI_API_KEY", "set": True}]
    assert rows["openai"]["base_url"] == "https://user:***@proxy.example/v1"
    assert rows["vllm"]["keys"][0] == {"variable": "MY_VLLM_TOKEN", "set": True}
    assert rows["groq"]["status"] == "ready"


def test_each_provider_with_status_base_url_and_the_run_models(models, isolated_env, monkeypatch):
    monkeypatch.setenv("RLM_PLUGINS", "rlm-provider-compatible,rlm-runs")  # rlm-runs: the replay provider
    monkeypatch.setenv("RLM_TRUST_CONFIG", "1")
    Path(isolated_env["WORK"], "rlm.toml").write_text('[run]\nsub_model = "ollama:llama3.2"\n'
                                                      '[provider.ollama]\nbase_url = "http://gpu-box:11434/v1"\n')
    code, out, err = models("--json")
    assert code == 0, err
    report = json.loads(out)
    rows = {row["name"]: row for row in report["providers"]}
    assert {"openai", "scripted", "replay", "ollama", "groq", "openrouter"} <= set(rows)
    assert rows["openai"]["status"] == "no key" and rows["openai"]["default_model"] == "gpt-4o-mini"
    assert rows["openrouter"]["status"] == "no key" and "OPENROUTER_API_KEY" in rows["openrouter"]["hint"]
    assert rows["ollama"]["status"] == "ready" and rows["ollama"]["base_url"] == "http://gpu-box:11434/v1"
    assert rows["ollama"]["example_model"] and rows["ollama"]["plugin"] == "rlm-provider-compatible"
    assert rows["scripted"]["base_url"] is None and rows["scripted"]["keys"] == []
    assert report["run"]["model"] == "auto" and report["run"]["sub_model"] == "ollama:llama3.2"
    assert report["run"]["auto"] is None and "no model configured" in report["run"]["auto_error"]

    code, out, _ = models()
    assert "ollama" in out and "base URL: http://gpu-box:11434/v1" in out
    assert "run.sub_model  ollama:llama3.2" in out and "auto           none: no model configured" in out


def test_auto_resolves_to_what_run_would_use(models, monkeypatch):
    with OpenAIServer() as server:  # a local server that listens: no key needed
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        code, out, _ = models("--json")
    report = json.loads(out)
    assert report["run"]["auto"] == "openai:gpt-4o-mini"
    assert next(r for r in report["providers"] if r["name"] == "openai")["status"] == "ready"
    code, out, _ = models()
    assert "auto           openai:gpt-4o-mini" in out


def test_base_urls_are_shown_with_their_password_masked():
    assert redact("https://api.openai.com/v1") == "https://api.openai.com/v1"
    assert redact("http://u:p@host:8080/v1") == "http://u:***@host:8080/v1"
    assert redact(None) is None
