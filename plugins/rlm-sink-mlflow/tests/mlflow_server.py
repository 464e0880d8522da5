"""A real MLflow tracking server for the slow tests (a plain module the test modules import: a conftest.py here
would shadow the ``import conftest`` of the host's tests in a run of the whole repository).

``mlflow_server()`` starts ``mlflow server`` once per test session — SQLite store and proxied artifact folder in
a temporary directory, a free port on 127.0.0.1, telemetry and the job runner off — waits for ``/health`` (60 s,
failing with the tail of the server's log), and stops it at exit. ``client(server)`` is an ``MlflowClient`` for
it. The autouse-when-imported fixture ``quiet_home`` points HOME at a temporary folder (importing mlflow writes
``~/.config/mlflow/telemetry.json``) and turns telemetry off. ``record_tree(folder)`` records a real run tree
(a root run with an llm_query and one child run, scripted models, ``process`` sandbox) and returns (result, events).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

QUIET = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
#: The scripted replies of a root run that asks the sub-model (llm_query: ``SUB_RULES``) and calls one child run
#: (rlm_query), in the order the root model is asked.
TREE_REPLIES = [
    "```repl\nkind = llm_query('Classify: ' + context)\nnote = rlm_query('Summarise the context', context)\n"
    "print(kind, note)\n```",
    "```repl\nprint(context[:10])\n```", "FINAL('a summary')",  # the child run
    "FINAL(42)",
]
SINK_SET = ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT")
SUB_RULES = [{"match": "Classify", "text": "prose"}]
_state: dict = {}  # the server of this test session, shared by every test module


@dataclass
class MlflowServer:
    url: str
    folder: Path
    started_in: float  # seconds from the spawn to the first /health answer
    process: subprocess.Popen


def quiet_environ(home: Path) -> dict[str, str]:
    return {"HOME": str(home), **QUIET}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def mlflow_server() -> MlflowServer:
    """The session's server, started on first use."""
    if "server" in _state:
        return _state["server"]
    if "failed" in _state:
        pytest.fail(_state["failed"], pytrace=False)
    folder = Path(tempfile.mkdtemp(prefix="rlm-mlflow-server-"))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    mlflow = Path(sys.executable).with_name("mlflow")
    command = [str(mlflow), "server", "--backend-store-uri", f"sqlite:///{folder}/mlflow.db",
               "--artifacts-destination", str(folder / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
               "--workers", "1"]
    stderr = (folder / "server.log").open("wb")
    env = {**os.environ, **quiet_environ(folder)}
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=stderr, stderr=subprocess.STDOUT,
                               start_new_session=True)
    deadline = start + 60
    while time.monotonic() < deadline and process.poll() is None and not _healthy(url):
        time.sleep(0.2)
    if not _healthy(url):
        _stop(process)
        tail = (folder / "server.log").read_text(errors="replace")[-3000:]
        _state["failed"] = f"mlflow server did not answer {url}/health within 60 s; its log ends with:\n{tail}"
        pytest.fail(_state["failed"], pytrace=False)
    server = _state["server"] = MlflowServer(url, folder, time.monotonic() - start, process)
    atexit.register(_shutdown, server)
    return server


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)  # the server's own group: gunicorn/uvicorn workers too
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def _shutdown(server: MlflowServer) -> None:
    _stop(server.process)
    shutil.rmtree(server.folder, ignore_errors=True)


def client(server: MlflowServer):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=server.url)


@pytest.fixture
def server() -> MlflowServer:
    return mlflow_server()


@pytest.fixture(autouse=True)
def quiet_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    for key, value in quiet_environ(home).items():
        monkeypatch.setenv(key, value)
    for key in SINK_SET:  # the sink sets these when unset: each test starts without, and they go afterwards
        monkeypatch.delenv(key, raising=False)
    return home


def record_tree(folder: Path, task: str = "What is the answer?"):
    """A real run tree (root + one rlm_query child) recorded under ``folder``: (RunResult, events)."""
    from rlm_host.testing import isolated_runner, run_scripted

    folder.mkdir(parents=True, exist_ok=True)
    runner = isolated_runner(folder, sandbox="process", environ={"RLM_RUN__SINKS": "[]"})
    result, events, _ = run_scripted(runner, task, TREE_REPLIES, sub_rules=SUB_RULES,
                                     context="a context of a few words", max_depth=1)
    assert result.completed, result.error
    return result, events


def with_labels(events, labels: dict[str, str]):
    """The events with ``labels`` in the root's run_start settings (what the benchmark runner sets)."""
    out = []
    for event in events:
        if event.type == "run_start" and event.depth == 0:
            settings = {**event.data.get("settings", {}), "labels": dict(labels)}
            event = event.model_copy(update={"data": {**event.data, "settings": settings}})
        out.append(event)
    return out


def runs_by_rlm_id(mlflow_client, experiment: str) -> dict:
    """The experiment's runs keyed by their ``rlm.run_id`` tag (benchmark runs under ``benchmark:<id>``)."""
    found = mlflow_client.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment!r}"
    runs = mlflow_client.search_runs([found.experiment_id], max_results=1000)
    return {r.data.tags.get("rlm.run_id") or f"benchmark:{r.data.tags.get('rlm.benchmark_id')}": r for r in runs}
