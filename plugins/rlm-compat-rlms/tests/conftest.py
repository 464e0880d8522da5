"""Fixtures of rlm-compat-rlms' tests: loopback OpenAI-compatible servers standing for the providers, and the
``backend_kwargs`` that point a backend at one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from rlm_host.testing import OpenAIServer

KEY = "sk-test-kwargs-0000"


@pytest.fixture
def servers(rlm_isolated, monkeypatch):
    """Two servers (root model, sub-model), no OpenAI key or URL from the developer's shell."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with OpenAIServer() as root, OpenAIServer() as sub:
        yield root, sub


@pytest.fixture
def server(servers):
    return servers[0]


@pytest.fixture
def kwargs_for() -> Callable[..., dict[str, Any]]:
    """``kwargs_for(server, "model")``: backend_kwargs sending that model to that server with the test key."""

    def make(server: OpenAIServer, model: str = "root-model", **extra: Any) -> dict[str, Any]:
        return {"model_name": model, "base_url": server.url, "api_key": KEY, **extra}

    return make


@pytest.fixture
def bodies() -> Callable[[OpenAIServer], list[dict[str, Any]]]:
    """``bodies(server)``: the JSON bodies the server received, in order."""

    def read(server: OpenAIServer) -> list[dict[str, Any]]:
        return [r.body if isinstance(r.body, dict) else json.loads(r.body) for r in server.requests]

    return read


@pytest.fixture
def trajectory_of() -> Callable[[Any], list[dict[str, Any]]]:
    """``trajectory_of(result)``: a run's events, as its trajectory file holds them."""

    def read(result: Any) -> list[dict[str, Any]]:
        return [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()]

    return read
