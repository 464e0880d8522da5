"""Helpers of the rlm-harness tests: a scripted session through ``rlm harness run``, the steps of its trajectory,
MCP configuration files, and the flaky test server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PLUGIN = "rlm-harness"
RLM = str(Path(sys.executable).with_name("rlm"))
FLAKY = str(Path(__file__).with_name("flaky_server.py"))


def call(tool: str, **args: Any) -> str:
    return json.dumps({"tool": tool, "args": args})


def final(answer: str = "done") -> str:
    return call("final", answer=answer)


def mcp_file(folder: Path, servers: dict[str, Any], name: str = "mcp.json") -> Path:
    """A Claude Desktop style configuration file."""
    path = folder / name
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def flaky(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [FLAKY], **extra}


def harness(rlm_cli, rlm_script, workdir: Path, replies: list[str], *extra: str, plugins: str = PLUGIN):
    """``rlm harness run`` with a scripted model answering ``replies``, in the process sandbox; (result, run, steps)."""
    model = rlm_script(replies)
    result = rlm_cli("harness", "run", "Do the task.", "--workdir", str(workdir), "--model", model, "--max-steps",
                     str(len(replies)), "--sandbox", "process", "--json", *extra, plugins=plugins)
    if result.code not in (0, 1):
        return result, None, []
    run = json.loads(result.out)
    return result, run, steps_of(run)


def steps_of(run: dict[str, Any]) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in Path(run["trajectory_path"]).read_text().splitlines()]
    return [e["data"] for e in events if e["type"] == "step" and e["run_id"] == run["run_id"]]
