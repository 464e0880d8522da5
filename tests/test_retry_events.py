"""Retries end up in the trajectory as ``model_retry`` events, and a provider that fails for good ends the run
with termination "error", an error event and the final event: through ``rlm run`` against a real loopback
OpenAI-compatible server, and at the ModelClient level."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from rlm_host.engine.budget import Budget
from rlm_host.engine.model_client import ModelClient
from rlm_host.engine.scope import RunScope
from rlm_host.events import EventBus
from rlm_host.models.protocol import Completion
from rlm_host.results import Usage
from rlm_host.testing.openai_server import OpenAIServer, answer, rate_limited, server_error

FAST_RETRIES = {"OPENAI_API_KEY": "", "RLM_PROVIDER__OPENAI__MAX_RETRY_WAIT": "0.2"}


def trajectory(work: Path, run: dict) -> list[dict]:
    return [json.loads(line) for line in (work / run["trajectory_path"]).read_text().splitlines()]


def test_429_then_500_then_ok_records_two_retries(rlm, isolated_env):
    work = Path(isolated_env["WORK"])
    with OpenAIServer() as server:
        server.push(rate_limited(retry_after="0.1"), server_error(500), answer("FINAL(42)"))
        result = rlm("run", "What is six times seven?", "--model", "openai:x", "--base-url", server.url,
                     "--sandbox", "process", "--json", plugins=[], env=FAST_RETRIES)
        assert len(server.requests) == 3
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert run["final_response"] == "42" and run["termination_reason"] == "final"
    retries = [e for e in trajectory(work, run) if e["type"] == "model_retry"]
    assert [e["data"]["attempt"] for e in retries] == [1, 2]
    assert [e["data"]["reason"] for e in retries] == ["HTTP 429 Too Many Requests", "HTTP 500 Internal Server Error"]
    assert all(e["data"]["role"] == "root" and e["data"]["model"] == "openai:x" for e in retries)
    assert all(e["data"]["provider"] == "openai" and e["operation"] is None for e in retries)  # OTel's names
    assert retries[0]["data"]["wait"] == 0.1  # the server's Retry-After
    assert 0 <= retries[1]["data"]["wait"] <= 0.2  # backoff, capped by [provider.openai] max_retry_wait
    assert all(e["run_id"] == run["run_id"] for e in retries)
    assert "⟳ root openai:x · HTTP 429 Too Many Requests · retry (attempt 2) in 0.1s" in result.stderr  # live view


def test_a_provider_that_fails_for_good_ends_the_run_with_an_error(rlm, isolated_env):
    work = Path(isolated_env["WORK"])
    with OpenAIServer() as server:
        server.push(server_error(500), server_error(503))
        result = rlm("run", "q", "--model", "openai:x", "--base-url", server.url, "--sandbox", "process", "--json",
                     plugins=[], env={**FAST_RETRIES, "RLM_PROVIDER__OPENAI__MAX_RETRIES": "1"})
    assert result.returncode == 1
    run = json.loads(result.stdout)
    assert run["termination_reason"] == "error" and not run["completed"]
    assert run["error"] == "openai:x: HTTP 503 Service Unavailable after 2 attempts"
    events = trajectory(work, run)
    types = [e["type"] for e in events]
    assert types.count("model_retry") == 1 and types[-1] == "final"
    (error,) = [e for e in events if e["type"] == "error"]
    assert error["data"]["message"] == run["error"]
    assert events[-1]["data"]["termination_reason"] == "error"
    assert f"error: {run['error']}" in result.stderr and "Traceback" not in result.stderr


class Retrying:
    """A connector that reports two retries before answering, like the openai connector does."""

    name = "test:retrying"
    context_window = None

    def complete(self, messages, *, timeout=None, on_retry=None, purpose="turn"):
        for attempt, reason in ((1, "HTTP 429 Too Many Requests"), (2, "connection reset")):
            if on_retry is not None:
                on_retry(attempt, 0.25, reason)
        return Completion(text="ok", input_tokens=3, output_tokens=1)


def test_model_client_emits_retries_on_its_scope_with_its_role():
    bus, events = EventBus(), []
    bus.subscribe("test", events.append, types={"model_retry"})  # the call's start and end: test_live_events.py
    scope = RunScope("run_a", "run_a", 0, bus)
    budget = Budget(timeout=30, max_llm_calls=5)
    client = ModelClient(Retrying(), "sub", Usage(), budget, threading.Lock(), scope=scope)
    assert client.complete([{"role": "user", "content": "hi"}]).text == "ok"
    assert [(e.type, e.data) for e in events] == [
        ("model_retry", {"role": "sub", "model": "test:retrying", "provider": "test", "attempt": 1, "wait": 0.25,
                         "reason": "HTTP 429 Too Many Requests"}),
        ("model_retry", {"role": "sub", "model": "test:retrying", "provider": "test", "attempt": 2, "wait": 0.25,
                         "reason": "connection reset"}),
    ]
    without_scope = ModelClient(Retrying(), "root", Usage(), budget)
    assert without_scope.complete([{"role": "user", "content": "hi"}]).text == "ok"
    assert len(events) == 2
