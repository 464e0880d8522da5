"""Local model servers: ``rlm models list`` says ``not running`` when nothing listens at a loopback base URL, and a
run against one fails at once with the URL and how to start the server, instead of retrying a refused
connection for seconds."""

import json
import socket
import time
from pathlib import Path

from rlm_host.testing.openai_server import OpenAIServer


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_models_list_probes_local_servers(rlm):
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    with OpenAIServer() as server:
        env = {"RLM_PROVIDER__OLLAMA__BASE_URL": dead, "RLM_PROVIDER__VLLM__BASE_URL": server.url}
        started = time.monotonic()
        listing = rlm("models", "list", plugins=["rlm-provider-compatible"], env=env)
        report = json.loads(rlm("models", "list", "--json", plugins=["rlm-provider-compatible"], env=env).stdout)
    rows = {row["name"]: row for row in report["providers"]}
    assert (rows["ollama"]["status"], rows["ollama"]["listening"], rows["ollama"]["ready"]) == ("not running", False,
                                                                                               False)
    assert "ollama serve" in rows["ollama"]["hint"]
    assert (rows["vllm"]["status"], rows["vllm"]["listening"]) == ("ready", True)
    assert rows["groq"]["listening"] is None  # a hosted API is never probed
    assert listing.returncode == 0 and time.monotonic() - started < 10
    line = next(line for line in listing.stdout.splitlines() if line.startswith("ollama "))
    assert "not running" in line
    names = [line for line in listing.stdout.splitlines() if not line.startswith(" ")]
    assert len({line.index(line.split()[1]) for line in names if len(line.split()) > 1 and line.split()[1] in
                ("ready", "no")}) == 1  # statuses in one column, llamacpp_server too


def test_a_run_against_a_local_server_that_refuses_fails_fast(rlm, isolated_env):
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    started = time.monotonic()
    result = rlm("run", "q", "--model", "ollama:llama3.2", "--sandbox", "process", "-q",
                 plugins=["rlm-provider-compatible"],
                 env={"RLM_PROVIDER__OLLAMA__BASE_URL": dead})
    took = time.monotonic() - started
    assert result.returncode == 1 and took < 4, (took, result.stderr)
    assert f"nothing listens at {dead} (connection refused)" in result.stderr
    assert "ollama serve" in result.stderr
    trajectory = next((Path(isolated_env["WORK"]) / ".rlm" / "runs").glob("*.jsonl"))
    types = [json.loads(line)["type"] for line in trajectory.read_text().splitlines()]
    assert "model_retry" not in types and types[-1] == "final"
