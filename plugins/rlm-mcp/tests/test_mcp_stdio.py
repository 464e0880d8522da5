"""The server over stdio, driven by the MCP SDK's own client spawning ``rlm mcp serve``: the tools, a scripted run
over a text and over a file, progress, roots, saved runs, benchmarks, and a cancelled run."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp_support import QUICK, RLM, slow_script, wait_for_final

TOOLS = {"rlm_run", "rlm_runs_list", "rlm_runs_show", "rlm_runs_active", "rlm_runs_cancel", "rlm_bench_run"}
RUN_FIELDS = {"run_id", "final_response", "completed", "termination_reason", "steps", "tokens", "cost", "duration_s",
              "trajectory_path", "error"}


def params(rlm_isolated, *args: str) -> StdioServerParameters:
    """``rlm mcp serve`` in the test's working directory and HOME, every installed plugin loaded."""
    return StdioServerParameters(command=RLM, args=["mcp", "serve", *args], cwd=str(rlm_isolated.work),
                                 env={"HOME": str(rlm_isolated.home)})


async def session_calls(server: StdioServerParameters, calls):
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await calls(session)


def test_tools_runs_progress_and_roots_over_stdio(rlm_isolated, rlm_script, tmp_path):
    model = rlm_script(QUICK * 3)
    (rlm_isolated.work / "notes.txt").write_text("hello world")
    outside = tmp_path / "secret.txt"
    outside.write_text("not for clients")
    os.symlink(outside, rlm_isolated.work / "link.txt")  # inside by name, outside once resolved
    progress: list[tuple] = []

    async def on_progress(value, total, message):
        progress.append((value, total, message))

    async def calls(session: ClientSession):
        listed = await session.list_tools()
        found = {tool.name: tool for tool in listed.tools}
        by_text = await session.call_tool("rlm_run", {"query": "How long?", "text": "abcdef", "model": model})
        by_file = await session.call_tool("rlm_run", {"query": "How long?", "path": "notes.txt", "model": model},
                                          progress_callback=on_progress)
        refused = [await session.call_tool("rlm_run", {"query": "q", "path": p, "model": model})
                   for p in (str(outside), "link.txt", "../secret.txt", "missing.txt")]
        both = await session.call_tool("rlm_run", {"query": "q", "path": "notes.txt", "text": "x"})
        script = await session.call_tool("rlm_run", {"query": "q", "text": "x", "model": f"scripted:{outside}"})
        runs = await session.call_tool("rlm_runs_list", {"limit": 10})
        shown = await session.call_tool("rlm_runs_show", {"run_id": by_file.structured_content["run_id"]})
        by_path = await session.call_tool("rlm_runs_show", {"run_id": str(outside)})
        return found, by_text, by_file, refused, both, script, runs, shown, by_path

    outcome = anyio.run(session_calls, params(rlm_isolated, "--model", model), calls)
    found, by_text, by_file, refused, both, script, runs, shown, by_path = outcome
    assert TOOLS <= set(found)
    helped = subprocess.run([RLM, "mcp", "serve", "--help"], capture_output=True, text=True, timeout=60).stdout
    named = re.search(r"Serve the rlm tools \(([^)]*)\)", " ".join(helped.split())).group(1)
    assert set(re.findall(r"\brlm_\w+", named)) == set(found)  # the help names every tool served
    assert set(found["rlm_run"].output_schema["properties"]) == RUN_FIELDS
    assert {"query", "text", "path", "model", "max_steps"} <= set(found["rlm_run"].input_schema["properties"])
    for result, chars in ((by_text, 6), (by_file, 11)):
        assert not result.is_error, result.content
        run = result.structured_content
        assert set(run) == RUN_FIELDS and run["final_response"] == "42" and run["completed"]
        assert run["termination_reason"] == "final" and run["steps"] == 2 and run["tokens"] > 0
        assert Path(run["trajectory_path"]).is_file()
        assert result.content[0].text.startswith("42")
        events = [json.loads(line) for line in Path(run["trajectory_path"]).read_text().splitlines()]
        first_step = next(e for e in events if e["type"] == "step")
        assert first_step["data"]["observation"]["blocks"][0]["stdout"] == f"{chars}\n"
    assert [(v, m) for v, _, m in progress] == [(1, "step 1: run_code print(len(context))"),
                                                (2, "step 2: final FINAL(42)")]
    assert all(total == 8 for _, total, _ in progress)  # the configured max_steps
    for result in refused:
        assert result.is_error
    assert "outside the allowed roots" in refused[0].content[0].text
    assert "outside the allowed roots" in refused[1].content[0].text and "does not exist" in refused[3].content[0].text
    assert both.is_error and "not both" in both.content[0].text
    assert script.is_error and f"this server allows: {model}" in script.content[0].text
    assert runs.structured_content["total"] == 2
    assert {r["run_id"] for r in runs.structured_content["runs"]} == {by_text.structured_content["run_id"],
                                                                       by_file.structured_content["run_id"]}
    detail = shown.structured_content
    assert detail["final_response"] == "42" and detail["termination_reason"] == "final"
    assert [s["action"] for s in detail["steps_detail"]] == ["run_code", "final"]
    assert detail["steps_detail"][0]["code"].startswith("print(len(context))")
    assert detail["steps_detail"][0]["output"] == "11\n"
    assert by_path.is_error and "not a path" in by_path.content[0].text


@pytest.mark.slow
def test_a_client_cancel_stops_the_run_with_a_cancelled_final_event(rlm_isolated):
    model = slow_script(rlm_isolated.work, steps=30, delay=0.5)
    seen = anyio.Event()

    async def on_progress(value, total, message):
        seen.set()

    async def calls(session: ClientSession):
        async with anyio.create_task_group() as group:
            async def call():
                await session.call_tool("rlm_run", {"query": "q", "text": "abc", "model": model, "max_steps": 40},
                                        progress_callback=on_progress)
            group.start_soon(call)
            with anyio.fail_after(20):
                await seen.wait()
            group.cancel_scope.cancel()  # the SDK sends notifications/cancelled
        # the session is still usable; the run ends within one scripted delay
        return await session.call_tool("rlm_runs_list", {})

    anyio.run(session_calls, params(rlm_isolated, "--model", model, "--max-steps", "40"), calls)
    final = wait_for_final(rlm_isolated.runs / "runs")
    assert final is not None, "no final event written"
    assert final["data"]["termination_reason"] == "cancelled"
    assert final["data"]["steps"] < 10


@pytest.mark.slow
def test_a_client_stops_its_own_run_through_the_registry_never_another_process_run(rlm_isolated):
    """rlm_runs_cancel is the host's mechanism (``rlm runs cancel``), limited to runs this server started."""
    import subprocess

    model = slow_script(rlm_isolated.work, steps=30, delay=0.5)
    other = subprocess.Popen([RLM, "run", "someone else's task", "--model", model, "--max-steps", "40"],
                             cwd=rlm_isolated.work, env={**os.environ, "HOME": str(rlm_isolated.home)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = anyio.Event()

    async def on_progress(value, total, message):
        seen.set()

    async def calls(session: ClientSession):
        outcome = {}
        async with anyio.create_task_group() as group:
            async def call():
                outcome["run"] = await session.call_tool("rlm_run", {"query": "q", "text": "abc", "model": model,
                                                                     "max_steps": 40}, progress_callback=on_progress)
            group.start_soon(call)
            with anyio.fail_after(30):
                await seen.wait()
                while True:  # the other process's run registers too
                    active = await session.call_tool("rlm_runs_active", {})
                    if len(active.structured_content["runs"]) == 2:
                        break
                    await anyio.sleep(0.2)
            outcome["active"] = active
            theirs = next(r for r in active.structured_content["runs"] if not r["own"])
            outcome["refused"] = await session.call_tool("rlm_runs_cancel", {"run_id": theirs["run_id"]})
            outcome["cancel"] = await session.call_tool("rlm_runs_cancel", {"run_id": "all"})
        return outcome

    try:
        outcome = anyio.run(session_calls, params(rlm_isolated, "--model", model, "--max-steps", "40"), calls)
        assert other.poll() is None, "the other process's run must go on"
    finally:
        other.kill()
    mine = [r for r in outcome["active"].structured_content["runs"] if r["own"]]
    assert len(mine) == 1 and mine[0]["status"] == "active"
    assert outcome["refused"].is_error and "no run of this server matches" in outcome["refused"].content[0].text
    assert [r["run_id"] for r in outcome["cancel"].structured_content["runs"]] == [mine[0]["run_id"]]
    run = outcome["run"].structured_content
    assert run["termination_reason"] == "cancelled" and run["steps"] < 10
