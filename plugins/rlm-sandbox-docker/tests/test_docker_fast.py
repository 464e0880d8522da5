"""Fast tests (no Docker engine needed): registration, readiness and errors with no engine, settings, the
worker's set_file operation, and the pieces of the runtime that do not talk to an engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rlm_host import WORKER_SCRIPT, ConfigError, SandboxError, load_settings
from rlm_host.testing import ScriptedConnector, isolated_runner

PLUGIN = "rlm-sandbox-docker"


@pytest.fixture
def dead_engine(tmp_path, monkeypatch):
    """DOCKER_HOST pointing at a socket nobody listens on."""
    address = f"unix://{tmp_path}/dead.sock"
    monkeypatch.setenv("DOCKER_HOST", address)
    return address


def test_registered_through_the_entry_point(rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN).collect_all()
    dist = next(d for d in host.distributions if d.name == PLUGIN)
    assert dist.status == "ok", dist.errors
    assert dist.provides == {"sandbox": ["docker"], "command": ["sandbox"], "check": ["docker-engine"]}
    spec = host.sandboxes().get("docker")
    assert spec.security_boundary and spec.isolation.startswith("Docker container: no network")
    assert spec.settings_model().__name__ == "DockerSettings"


def test_hooks_import_nothing_heavy():
    code = "import sys, rlm_sandbox_docker.hooks\nprint(sorted(m for m in ('docker', 'requests') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_readiness_without_an_engine_names_the_fix(dead_engine, rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN)
    ready = host.sandboxes().get("docker").readiness()
    assert not ready.ok
    assert ready.detail == f"cannot reach the Docker engine at {dead_engine} (no engine socket there): start the engine"
    assert "start" in ready.hint and "DOCKER_HOST" in ready.hint
    check = host.doctor_checks().get("docker-engine").readiness()
    assert not check.ok and "cannot reach the Docker engine" in check.detail


def test_readiness_and_commands_use_the_configuration_of_the_command(dead_engine, rlm_cli, rlm_isolated):
    """``rlm --config other.toml`` reaches the checks and the commands: its [sandbox.docker] base_url, not
    DOCKER_HOST nor the ./rlm.toml, is the engine they try."""
    configured = f"unix://{rlm_isolated.work}/configured.sock"
    (rlm_isolated.work / "other.toml").write_text(f'[sandbox.docker]\nbase_url = "{configured}"\n')
    doctor = rlm_cli("--config", "other.toml", "plugins", "doctor", "--json", plugins=PLUGIN)
    rows = {row["name"]: row for row in json.loads(doctor.out)["checks"]}
    for name in ("docker", "docker-engine"):
        assert not rows[name]["ok"] and configured in rows[name]["detail"], rows[name]
    cleanup = rlm_cli("--config", "other.toml", "sandbox", "cleanup", plugins=PLUGIN)
    assert cleanup.code == 1 and f"cannot reach the Docker engine at {configured}" in cleanup.err


def test_starting_without_an_engine_is_a_clear_error(dead_engine):
    from rlm_sandbox_docker.runtime import DockerSandbox

    session = DockerSandbox()
    with pytest.raises(SandboxError, match=r"cannot reach the Docker engine at unix://.*dead.sock: start it \("):
        session.start()
    session.shutdown()


def test_a_run_without_an_engine_ends_with_the_fix(dead_engine, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, plugins=PLUGIN)
    root = ScriptedConnector.from_responses(["```repl\nprint(1)\n```"], name="scripted:root")
    result = runner.run_task("q", context="c", sandbox="docker", connectors={"root": root})
    assert result.termination_reason == "error" and "cannot reach the Docker engine" in result.error
    assert "start it" in result.error


def test_commands_without_an_engine(dead_engine, rlm_cli):
    helped = rlm_cli("sandbox", "--help", plugins=PLUGIN)
    assert helped.code == 0 and "build-image" in helped.out and "cleanup" in helped.out
    cleanup = rlm_cli("sandbox", "cleanup", plugins=PLUGIN)
    assert cleanup.code == 1 and "cannot reach the Docker engine" in cleanup.err


def test_settings_are_validated(tmp_path, rlm_plugin_host):
    from rlm_sandbox_docker.settings import DockerSettings, size_bytes

    defaults = DockerSettings()
    assert defaults.network_mode == "none" and defaults.read_only and defaults.cap_drop == ["ALL"]
    assert defaults.user == "65534:65534" and defaults.security_opt == ["no-new-privileges"]
    with pytest.raises(ValueError):
        DockerSettings(netwrk_mode="host")
    with pytest.raises(ValueError):
        DockerSettings(memory="lots")
    assert size_bytes("512m") == 512 * 2**20 and size_bytes("2g") == 2 * 2**30 and size_bytes("100") == 100
    host = rlm_plugin_host(PLUGIN)
    loaded = load_settings(environ={"HOME": str(tmp_path), "RLM_SANDBOX__DOCKER__MEMORY": "2g"}, cwd=tmp_path,
                           host=host)
    assert loaded.component("sandbox", "docker").memory == "2g"
    with pytest.raises(ConfigError, match="memory"):
        load_settings(environ={"HOME": str(tmp_path), "RLM_SANDBOX__DOCKER__MEMORY": "x"}, cwd=tmp_path, host=host)


def test_large_values_are_chosen_for_files():
    from rlm_sandbox_docker.runtime import DockerSandbox
    from rlm_sandbox_docker.settings import DockerSettings

    session = DockerSandbox(DockerSettings(file_threshold=100))
    assert session._encode_large("x" * 100) is None
    assert session._encode_large("é" * 101) == ("é".encode() * 101, "text")
    assert session._encode_large("\ud800" * 101)[1] == "json"
    assert session._encode_large(list(range(100)))[1] == "json" and session._encode_large([1, 2]) is None
    assert session._encode_large(12345) is None
    with pytest.raises(TypeError):
        session._encode_large([object()] * 100)
    assert DockerSandbox(DockerSettings(file_threshold=0))._encode_large("x" * 10**6) is None
    session.shutdown()


def test_owners_of_stale_containers():
    from rlm_sandbox_docker.engine import owner_is_gone, owner_label

    mine = owner_label()
    host, pid, started = mine.split(":")
    assert pid == str(os.getpid()) and not owner_is_gone(mine)
    assert owner_is_gone(f"{host}:{pid}:{int(started) + 1}")  # a reused pid
    assert owner_is_gone(f"{host}:999999999:1")
    assert not owner_is_gone("another-machine:1:1") and not owner_is_gone("")


def test_worker_set_file_loads_text_and_json(tmp_path):
    text = "line one\r\nline two é\n"
    (tmp_path / "v.text").write_bytes(text.encode())
    (tmp_path / "v.json").write_text(json.dumps({"a": [1, 2], "s": "\ud800"}))
    requests = [
        {"id": 1, "op": "set_file", "name": "t", "path": str(tmp_path / "v.text"), "format": "text"},
        {"id": 2, "op": "set_file", "name": "j", "path": str(tmp_path / "v.json"), "format": "json"},
        {"id": 3, "op": "execute", "code": "ok = (t, j['a'], j['s'] == '\\ud800')"},
        {"id": 4, "op": "get", "name": "ok"},
        {"id": 5, "op": "set_file", "name": "x", "path": str(tmp_path / "missing"), "format": "text"},
        {"id": 6, "op": "set_file", "name": "x", "path": str(tmp_path / "v.text"), "format": "yaml"},
    ]
    proc = subprocess.Popen([sys.executable, "-I", "-u", str(WORKER_SCRIPT)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests).encode())
        proc.stdin.flush()  # kept open until the answers are in: the worker exits as soon as its host hangs up
        lines = [json.loads(proc.stdout.readline()) for _ in range(len(requests) + 1)]  # + "ready"
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    replies = {m.get("id"): m for m in lines}
    assert replies[1] == {"id": 1, "op": "result"} and replies[2] == {"id": 2, "op": "result"}
    assert replies[4]["value"] == [text, [1, 2], True]
    assert replies[5]["error"].startswith("FileNotFoundError") and "unknown file format" in replies[6]["error"]
