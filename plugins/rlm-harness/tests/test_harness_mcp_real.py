"""The harness against real MCP servers: rlm's own ``rlm mcp serve`` over stdio and over streamable HTTP (bearer
token), and the reference filesystem server from the npm registry (``@modelcontextprotocol/server-filesystem``,
run with node), each listed, called, and refused where its tools' annotations say they change things."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness_support import PLUGIN, RLM, call, final, harness, mcp_file

TOKEN = "harness-test-token"
FS_PACKAGE = "@modelcontextprotocol/server-filesystem"
REQUIRED = os.environ.get("RLM_REQUIRE_NETWORK_TOOLS") == "1"


@pytest.fixture(scope="session")
def filesystem_server(tmp_path_factory) -> Path:
    """The npm filesystem server installed once per test session (``npm install``, 3 minutes at most); its script.
    Skipped, with the reason, when node or the registry is not there (a failure with RLM_REQUIRE_NETWORK_TOOLS=1)."""
    def unavailable(reason: str):
        if REQUIRED:
            pytest.fail(f"RLM_REQUIRE_NETWORK_TOOLS=1 but {reason}", pytrace=False)
        pytest.skip(reason)

    if not shutil.which("node") or not shutil.which("npm"):
        unavailable("node and npm are needed for the npm filesystem MCP server")
    prefix = tmp_path_factory.mktemp("npm")
    try:
        done = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", FS_PACKAGE],
                              capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        unavailable(f"npm install {FS_PACKAGE} took more than 180 s (registry unreachable?)")
    script = prefix / "node_modules" / FS_PACKAGE / "dist" / "index.js"
    if done.returncode != 0 or not script.is_file():
        unavailable(f"npm install {FS_PACKAGE} failed (registry unreachable?): {done.stderr[-300:]}")
    return script


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def http_server(rlm_isolated):
    """``rlm mcp serve --transport http`` on a free loopback port, answering once it is up; its /mcp URL."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    log = (rlm_isolated.work / "server.log").open("w")
    process = subprocess.Popen([RLM, "mcp", "serve", "--transport", "http", "--port", str(port), "--token", TOKEN],
                               cwd=rlm_isolated.work, env={**env, "HOME": str(rlm_isolated.home)}, stdout=log,
                               stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
        except urllib.error.HTTPError:
            break  # it answers (401 without the token)
        except OSError:
            time.sleep(0.1)
    yield url
    process.terminate()
    process.wait(10)


def test_rlm_mcp_serve_over_stdio(rlm_cli, rlm_script, rlm_isolated):
    project = rlm_isolated.work / "project"
    project.mkdir()
    config = mcp_file(rlm_isolated.work, {"rlm": {"command": RLM, "args": ["mcp", "serve"], "trust_annotations": True}})
    replies = [call("mcp__rlm__rlm_runs_list", limit=5), call("mcp__rlm__rlm_runs_cancel", run_id="all"), final()]
    result, run, steps = harness(rlm_cli, rlm_script, project, replies, "--mcp-config", str(config), "--approve",
                                 "read-only")
    assert result.code == 0, result.err
    listed, cancel = steps[0]["observation"], steps[1]["observation"]
    assert listed["success"] and "run" in listed["content"] and listed["seconds"] < 10
    assert cancel["refused"] and "read-only run" in cancel["error"], "a destructive tool is refused read-only"


def test_rlm_mcp_serve_over_http_with_a_bearer_token(rlm_cli, rlm_script, rlm_isolated, http_server):
    project = rlm_isolated.work / "project"
    project.mkdir()
    config = mcp_file(rlm_isolated.work, {
        "rlm": {"url": http_server, "headers": {"Authorization": f"Bearer {TOKEN}"}},
        "wrong": {"url": http_server, "headers": {"Authorization": "Bearer nope"}, "startup_timeout": 10},
    })
    listed = rlm_cli("harness", "tools", "--mcp-config", str(config), "--json", plugins=PLUGIN)
    assert listed.code == 0, listed.err
    servers = {s["server"]: s for s in json.loads(listed.out)["servers"]}
    assert "mcp__rlm__rlm_runs_list" in servers["rlm"]["tools"] and servers["rlm"]["transport"] == "http"
    assert servers["wrong"]["error"] and "could not start" in servers["wrong"]["error"]
    replies = [call("mcp__rlm__rlm_runs_list"), final()]
    result, run, steps = harness(rlm_cli, rlm_script, project, replies, "--mcp-config", str(config))
    assert result.code == 0, result.err
    assert steps[0]["observation"]["success"], steps[0]["observation"]


def test_the_npm_filesystem_server(rlm_cli, rlm_script, rlm_isolated, filesystem_server):
    project = rlm_isolated.work / "project"
    project.mkdir()
    (project / "notes.txt").write_text("from the project\n")
    server = {"command": "node", "args": [str(filesystem_server), str(project)], "trust_annotations": True}
    config = mcp_file(rlm_isolated.work, {"fs": server})
    replies = [call("mcp__fs__list_directory", path=str(project)),
               call("mcp__fs__read_text_file", path=str(project / "notes.txt")),
               call("mcp__fs__read_text_file", path="/etc/passwd"),
               call("mcp__fs__write_file", path=str(project / "made.txt"), content="by mcp"),
               final()]
    result, run, steps = harness(rlm_cli, rlm_script, project, replies, "--mcp-config", str(config), "--approve",
                                 "read-only")
    assert result.code == 0, result.err
    listing, read, outside, write = (s["observation"] for s in steps[:4])
    assert listing["success"] and "notes.txt" in listing["content"]
    assert read["success"] and "from the project" in read["content"]
    assert outside["success"] is False and "root:" not in json.dumps(outside), "the server keeps to its folder"
    assert write["refused"] and not (project / "made.txt").exists()
    _, _, steps = harness(rlm_cli, rlm_script, project, replies[3:], "--mcp-config", str(config))
    assert steps[0]["observation"]["success"] and (project / "made.txt").read_text() == "by mcp"
