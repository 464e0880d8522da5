"""A client process for the disconnect tests: calls ``rlm_run`` with a slow model and prints ``progress`` at the
first step; the test then kills it (SIGKILL), leaving the server with a vanished client."""

import os
import sys

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


async def call(session: ClientSession, model: str) -> None:
    await session.initialize()

    async def on_progress(progress, total, message):
        print("progress", progress, message, flush=True)

    await session.call_tool("rlm_run", {"query": "count", "text": "abc", "model": model, "max_steps": 40},
                            progress_callback=on_progress)
    print("finished", flush=True)


async def main(transport: str, target: str, model: str, work: str) -> None:
    if transport == "stdio":
        serve = ["mcp", "serve", "--model", model, "--max-steps", "40"]  # the model is the operator's choice
        params = StdioServerParameters(command=target, args=serve, cwd=work, env={"HOME": os.environ["HOME"]})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await call(session, model)
        return
    headers = {"Authorization": f"Bearer {os.environ['MCP_TEST_TOKEN']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with streamable_http_client(target, http_client=http) as (read, write), ClientSession(read, write) as s:
            await call(s, model)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:5])
