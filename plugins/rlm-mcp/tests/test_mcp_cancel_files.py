"""``rlm_runs_cancel`` through the official MCP client writes its request with the host's one cancel-file writer:
a link planted at the request's name (in the registry folder) is replaced, never written through."""

from __future__ import annotations

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from rlm_host.sdk.embedding import ActiveRuns

from mcp_support import RLM, slow_script


def test_a_client_cancel_never_writes_through_a_link_planted_at_the_request(rlm_isolated, tmp_path):
    model = slow_script(rlm_isolated.work, steps=30, delay=0.5)
    created = tmp_path / "created-by-rlm.txt"
    server = StdioServerParameters(command=RLM, args=["mcp", "serve", "--model", model, "--max-steps", "40"],
                                   cwd=str(rlm_isolated.work), env={"HOME": str(rlm_isolated.home)})
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
            active = await session.call_tool("rlm_runs_active", {})
            run_id = active.structured_content["runs"][0]["run_id"]
            (ActiveRuns().dir / f"{run_id}.cancel").symlink_to(created)
            outcome["cancel"] = await session.call_tool("rlm_runs_cancel", {"run_id": "all"})
        return outcome

    async def session_calls():
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await calls(session)

    outcome = anyio.run(session_calls)
    assert not outcome["cancel"].is_error, outcome["cancel"].content
    assert not created.exists(), "the cancel request created the planted link's target"
    run = outcome["run"].structured_content
    assert run["termination_reason"] == "cancelled" and run["steps"] < 10
