"""SIGTERM and SIGHUP end a run as Ctrl-C does (the closing event written, the sandbox released, exit 143 / 129);
after SIGKILL the run is listed as interrupted and still replays."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

RLM = [sys.executable, "-m", "rlm_host"]
SLOW = [{"text": "```repl\nx = 1\nprint(x)\n```"}, {"text": "FINAL(1)", "delay": 60}]


def _start(tmp_path: Path, sandbox: str = "process") -> tuple[subprocess.Popen, Path]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SLOW))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    env.update(RLM_HOME=str(tmp_path / "home"), RLM_PLUGINS="" if sandbox == "process" else "rlm-sandbox-docker")
    process = subprocess.Popen(RLM + ["run", "q", "--model", f"scripted:{script}", "--sandbox", sandbox, "--quiet"],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    runs = tmp_path / "home" / "runs"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # wait until step 1 is on record: the run is waiting for its model
        files = list(runs.glob("*.jsonl")) if runs.is_dir() else []
        if files and '"type":"step"' in files[0].read_text().replace(" ", ""):
            return process, files[0]
        time.sleep(0.05)
    process.kill()
    raise AssertionError("the run never reached its first step")


def _workers_of(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (the sandbox worker of a process-sandbox run)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    children.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return children


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_termination_signal_ends_the_run_like_ctrl_c(tmp_path, signum, code):
    process, trajectory = _start(tmp_path)
    workers = _workers_of(process.pid)
    assert workers, "the process sandbox has a worker"
    process.send_signal(signum)
    out, err = process.communicate(timeout=30)
    assert process.returncode == code, err
    assert "Traceback" not in err
    last = json.loads(trajectory.read_text().splitlines()[-1])
    assert last["type"] == "final" and last["data"]["termination_reason"] == "cancelled"
    assert last["data"]["error"] == f"terminated by {signal.Signals(signum).name}"
    assert not [w for w in workers if Path(f"/proc/{w}").exists() and "zombie" not in
                Path(f"/proc/{w}/status").read_text().lower()], "the sandbox worker was released"


def test_after_sigkill_the_run_is_listed_as_interrupted_and_replays(tmp_path):
    process, trajectory = _start(tmp_path)
    process.kill()
    process.communicate(timeout=30)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    env.update(RLM_HOME=str(tmp_path / "home"), RLM_PLUGINS="rlm-runs")
    listed = subprocess.run(RLM + ["runs", "list", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True)
    (run,) = json.loads(listed.stdout)
    assert run["termination_reason"] == "interrupted" and run["steps"] == 1
    replayed = subprocess.run(RLM + ["replay", trajectory.stem], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert replayed.returncode == 0 and "x = 1" in replayed.stdout, replayed.stderr


@pytest.mark.slow
def test_sigterm_with_the_docker_sandbox_leaves_no_container(tmp_path):
    pytest.importorskip("rlm_sandbox_docker")
    import docker
    from rlm_sandbox_docker.testing import prepare_engine, release_engine

    prepare_engine()
    try:
        from rlm_sandbox_docker import LABEL

        client = docker.from_env()
        process, _ = _start(tmp_path, "docker")

        def containers() -> list:  # the containers this rlm process owns ("<host>:<pid>:<start>")
            return [c for c in client.containers.list(all=True, filters={"label": f"{LABEL}=1"})
                    if f":{process.pid}:" in c.labels.get("rlm.owner", "")]

        assert containers(), "the run has a container"
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
        assert process.returncode == 143
        assert not containers(), "no container left behind"
    finally:
        release_engine()
