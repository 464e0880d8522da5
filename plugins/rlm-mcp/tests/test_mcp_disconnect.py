"""A client killed mid-run (SIGKILL, no goodbye) stops the run: over stdio the server sees its stdin close, over
HTTP the guard sees the request's connection close. Either way the trajectory ends with a root ``final`` event
whose termination_reason is "cancelled"."""

from __future__ import annotations

import pytest

from mcp_support import RLM, slow_script, start_http_server, start_killable_client, stop, wait_for_final

pytestmark = pytest.mark.slow


def _kill_after_first_step(client) -> None:
    line = client.stdout.readline()
    assert line.startswith("progress"), (line, client.stderr.read() if client.poll() is not None else "")
    client.kill()
    client.wait(10)


def _assert_cancelled(rlm_isolated) -> None:
    final = wait_for_final(rlm_isolated.runs / "runs", timeout=30)
    assert final is not None, "no final event written"
    assert final["data"]["termination_reason"] == "cancelled"
    assert final["data"]["steps"] < 10  # 30 scripted steps of 0.5 s: stopped early


def test_a_killed_stdio_client_cancels_the_run(rlm_isolated):
    model = slow_script(rlm_isolated.work, steps=30, delay=0.5)
    client = start_killable_client(rlm_isolated.work, "stdio", RLM, model, home=rlm_isolated.home)
    _kill_after_first_step(client)
    _assert_cancelled(rlm_isolated)


def test_a_killed_http_client_cancels_the_run(rlm_isolated):
    model = slow_script(rlm_isolated.work, steps=30, delay=0.5)
    server, url = start_http_server(rlm_isolated.work, rlm_isolated.home, "tok-disconnect", "--model", model,
                                    "--max-steps", "40")
    try:
        client = start_killable_client(rlm_isolated.work, "http", url, model, token="tok-disconnect",
                                       home=rlm_isolated.home)
        _kill_after_first_step(client)
        _assert_cancelled(rlm_isolated)
        assert server.poll() is None, "the server keeps serving"
    finally:
        stop(server)
