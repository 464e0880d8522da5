"""The authors' OpenAI-compatible service backends (``vercel``, ``portkey``, ``azure_openai``) on rlm's openai
connector: each request goes to the service's path with the service's authentication header, the key from
``backend_kwargs`` or the service's variable, and nowhere else. A loopback server stands for each service."""

from __future__ import annotations

import pytest

from rlm_compat_rlms import RLM
from rlm_compat_rlms.clients import get_client
from rlm_compat_rlms.utils.exceptions import RunFailedError
from rlm_host import ModelError
from rlm_host.testing import Behaviour, OpenAIServer
from rlm_host.testing import openai_answer as answer

SUBMIT = "```repl\nanswer['content'] = 'hi'\nanswer['ready'] = True\n```"
KEY = "sk-service-key-1234"


class AnyPathServer(OpenAIServer):
    """Answers chat completions under any prefix (Azure's are under /openai/v1)."""

    def route(self, request):
        return None if request.path.rstrip("/").endswith("/chat/completions") else super().route(request)


@pytest.fixture
def service(rlm_isolated, monkeypatch):
    for name in ("AI_GATEWAY_API_KEY", "PORTKEY_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT",
                 "AZURE_OPENAI_DEPLOYMENT", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with AnyPathServer() as server:
        server.push(answer(SUBMIT))
        yield server


def complete(backend: str, kwargs: dict) -> object:
    return RLM(backend=backend, backend_kwargs=kwargs, environment="process").completion("ctx", "q")


def test_vercel_takes_its_key_as_a_bearer_token_from_its_variable(service, monkeypatch):
    monkeypatch.setenv("AI_GATEWAY_API_KEY", KEY)
    completion = complete("vercel", {"model_name": "openai/gpt-4o-mini", "base_url": service.url})
    request = service.requests[0]
    assert completion.response == "hi" and completion.run.model == "vercel:openai/gpt-4o-mini"
    assert request.path == "/v1/chat/completions" and request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["model"] == "openai/gpt-4o-mini"


def test_portkey_sends_its_key_in_its_own_header_never_as_a_bearer_token(service):
    complete("portkey", {"model_name": "@openai/gpt-4o-mini", "base_url": service.url, "api_key": KEY})
    headers = service.requests[0].headers
    assert headers["x-portkey-api-key"] == KEY and "authorization" not in headers


def test_azure_openai_goes_to_the_deployment_under_openai_v1(service, monkeypatch):
    endpoint = service.url.removesuffix("/v1")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    kwargs = {"model_name": "gpt-4o", "azure_endpoint": endpoint, "azure_deployment": "my-deployment",
              "api_version": "2024-02-01"}
    completion = complete("azure_openai", kwargs)
    request = service.requests[0]
    assert completion.response == "hi" and request.path == "/openai/v1/chat/completions"
    assert request.body["model"] == "my-deployment" and request.headers["api-key"] == KEY


def test_a_service_without_a_key_is_a_clear_error_not_a_placeholder(service):
    with pytest.raises(ModelError, match="no API key for vercel: pass backend_kwargs\\['api_key'\\] or set "
                                         "AI_GATEWAY_API_KEY"):
        complete("vercel", {"model_name": "m", "base_url": service.url})
    assert not service.requests
    with pytest.raises(ModelError, match="azure_openai needs its endpoint"):
        get_client("azure_openai", {"model_name": "m", "api_key": KEY}).completion("hi")


def test_a_service_key_is_scrubbed_from_an_error_its_server_echoes(rlm_isolated):
    echoed = "sk-echoed-only-here-5678"  # a key no other test used (rlm's redaction registry is per process)
    with OpenAIServer() as server:
        server.push(Behaviour(status=400, body={"error": {"message": f"bad key {echoed}", "type": "invalid_request"}}))
        with pytest.raises(RunFailedError) as raised:
            complete("vercel", {"model_name": "m", "base_url": server.url, "api_key": echoed})
    assert echoed not in str(raised.value) and "bad key [key]" in str(raised.value)
