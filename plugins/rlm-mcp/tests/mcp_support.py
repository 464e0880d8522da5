"""Helpers of the rlm-mcp tests: scripts for the scripted model, the server's environment, an HTTP server process,
waiting for a run's final event, and a client process to kill."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Optional

RLM = str(Path(sys.executable).with_name("rlm"))
QUICK = ["```repl\nprint(len(context))\n```", "FINAL(42)"]
CLIENT_SCRIPT = Path(__file__).with_name("mcp_killed_client.py")


def slow_script(work: Path, steps: int = 30, delay: float = 1.0) -> str:
    """A scripted model taking ``delay`` s per reply for ``steps`` code steps: a run lasting ``steps * delay`` s."""
    replies = [{"text": f"```repl\nprint({i})\n```", "delay": delay} for i in range(steps)] + ["FINAL(done)"]
    path = work / "slow.json"
    path.write_text(json.dumps({"responses": replies}))
    return f"scripted:{path}"


def server_env(home: Path, **extra: str) -> dict[str, str]:
    """The server's environment: this one without RLM_* (so every installed plugin loads), HOME in the test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    return {**env, "HOME": str(home), **extra}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_http_server(work: Path, home: Path, token: str, *args: str, **env: str) -> tuple[subprocess.Popen, str]:
    """``rlm mcp serve --transport http`` on a free port; returns the process and the /mcp URL once it answers."""
    port = free_port()
    log = (work / f"server-{port}.log").open("w")
    command = [RLM, "mcp", "serve", "--transport", "http", "--port", str(port), "--token", token, *args]
    process = subprocess.Popen(command, cwd=work, env=server_env(home, **env), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {(work / f'server-{port}.log').read_text()}")
        try:
            urllib.request.urlopen(url, timeout=1)
        except urllib.error.HTTPError:
            return process, url  # it answers (401 without a token)
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("server not ready in 30 s")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def wait_for_final(runs: Path, timeout: float = 30.0) -> Optional[dict]:
    """The root ``final`` event of a trajectory in ``runs`` (``<home>/runs``), polling until it is written."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in runs.glob("*.jsonl"):
            events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            finals = [e for e in events if e["type"] == "final" and e["run_id"] == e["root_run_id"]]
            if finals:
                return finals[-1]
        time.sleep(0.2)
    return None


def start_killable_client(work: Path, transport: str, target: str, model: str, *, token: str = "",
                          home: Optional[Path] = None) -> subprocess.Popen:
    """A client process calling ``rlm_run`` with a slow model; it prints ``progress`` at the first step."""
    env = server_env(home or work, MCP_TEST_TOKEN=token)
    return subprocess.Popen([sys.executable, str(CLIENT_SCRIPT), transport, target, model, str(work)], cwd=work,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
