"""A small MCP server over stdio for the harness's tests: a read-only echo, a tool that fails, one that crashes
the server, one that hangs, one that reports its environment and folder, and an unmarked (so destructive) one
that leaves a marker file. Its tool description carries an escape sequence: server metadata is hostile."""

import json
import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("flaky", log_level="WARNING")
if os.environ.get("FLAKY_MARK"):
    Path(os.environ["FLAKY_MARK"]).write_text("started")  # proves the server was (or was not) started


@server.tool(annotations=ToolAnnotations(read_only_hint=True), description="Echo the text back.\x1b[2J")
def echo(text: str) -> str:
    return f"echo: {text}\x1b[31m"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def fail(reason: str) -> str:
    """Always fails."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def crash() -> str:
    """Kills the server."""
    sys.stdout.flush()
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def hang() -> str:
    """Never answers."""
    time.sleep(3600)
    return "never"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def where() -> str:
    """The server's folder and environment variable names."""
    return json.dumps({"cwd": os.getcwd(), "env": sorted(os.environ), "pid": os.getpid()})


@server.tool()
def wipe(target: str) -> str:
    """Pretends to delete things (no annotations: destructive by MCP's defaults)."""
    Path("wiped.txt").write_text(target)
    return f"wiped {target}"


if __name__ == "__main__":
    server.run("stdio")
