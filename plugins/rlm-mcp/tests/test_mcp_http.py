"""The server over streamable HTTP (a subprocess on a free loopback port) with the SDK's client: the bearer
token (401 without it), the tools, a scripted run with progress, and a loopback-only listen address."""

from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from mcp_support import QUICK, start_http_server, stop

TOKEN = "test-token-1234"


@pytest.fixture
def model(rlm_script):
    return rlm_script(QUICK)


@pytest.fixture
def http_server(rlm_isolated, model):
    process, url = start_http_server(rlm_isolated.work, rlm_isolated.home, TOKEN, "--model", model)
    yield url
    stop(process)


async def _with_session(url: str, calls, token: str = TOKEN):
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return await calls(s)


def test_requests_without_the_token_get_401(http_server):
    client = {"name": "t", "version": "1"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        response = httpx2.post(http_server, json=body, headers={**headers, **auth}, timeout=10)
        assert response.status_code == 401, auth
        assert response.headers["www-authenticate"].startswith("Bearer")
    with pytest.raises(Exception):
        anyio.run(_with_session, http_server, lambda s: s.list_tools(), "wrong")


def test_a_scripted_run_with_progress_over_http(http_server, rlm_isolated, model):
    (rlm_isolated.work / "notes.txt").write_text("hello world")
    progress = []

    async def on_progress(value, total, message):
        progress.append(message)

    async def calls(session):
        tools = await session.list_tools()
        run = await session.call_tool("rlm_run", {"query": "How long?", "path": "notes.txt", "model": model},
                                      progress_callback=on_progress)
        outside = await session.call_tool("rlm_run", {"query": "q", "path": "/etc/hostname", "model": model})
        listed = await session.call_tool("rlm_runs_list", {})
        return tools, run, outside, listed

    tools, run, outside, listed = anyio.run(_with_session, http_server, calls)
    assert {"rlm_run", "rlm_runs_list", "rlm_runs_show", "rlm_bench_run"} <= {t.name for t in tools.tools}
    assert not run.is_error and run.structured_content["final_response"] == "42"
    assert progress == ["step 1: run_code print(len(context))", "step 2: final FINAL(42)"]
    assert outside.is_error and "outside the allowed roots" in outside.content[0].text
    assert listed.structured_content["runs"][0]["run_id"] == run.structured_content["run_id"]


def test_a_non_loopback_host_is_refused(rlm_cli):
    result = rlm_cli("mcp", "serve", "--transport", "http", "--host", "0.0.0.0", plugins="rlm-mcp")
    assert result.code != 0
    assert "only loopback" in result.err
    assert rlm_cli("mcp", "serve", "--transport", "carrier-pigeon", plugins="rlm-mcp").code != 0
