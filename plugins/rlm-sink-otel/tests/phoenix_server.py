"""A real Arize Phoenix server for the slow tests (a plain module the test modules import: a conftest.py here
would shadow the ``import conftest`` of the host's tests in a run of the whole repository).

Phoenix lives in its own virtualenv, ``.venv-phoenix`` at the repository root (its pins conflict with .venv's),
made by ``bash scripts/install-phoenix.sh`` (``scripts/install.sh`` calls it). Without it the tests that need the
server FAIL, naming that command: the project installs Phoenix, so a missing one is a broken checkout, not a
reason to skip.

``phoenix_server()`` starts ``phoenix serve`` once per test session — its SQLite database in a temporary
``PHOENIX_WORKING_DIR``, free ports on 127.0.0.1 for HTTP and gRPC, telemetry and external resources off — waits
for ``/healthz`` (≈ 12 s here; 90 s at most, failing with the tail of its log) and is stopped at the end of the
session (the ``phoenix`` fixture) or at exit. Read-back:

- ``rest_spans(server, project, trace_id)``: the spans as Phoenix's REST API gives them
  (``GET /v1/projects/{project}/spans``): name, ``span_kind`` (AGENT / LLM / TOOL …), ``parent_id``,
  ``status_code``, ``status_message``, ``attributes`` (flat: what Phoenix stored, its OpenInference conversion of
  the GenAI attributes included) and ``events``.
- ``trace_view(server, project, trace_id)``: what the trace page of the UI shows, through its GraphQL API: the
  trace's span count, error count, spans per kind, session; per span the kind, status, the Input / Output panes
  (``input``/``output``: value and mime type) and token counts (own and cumulative).
- ``wait_for_trace(server, project, trace_id, count)``: polls until the trace has ``count`` spans (Phoenix
  inserts what it receives in batches, a moment after the OTLP request has been answered).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]  # the repository
PHOENIX = ROOT / ".venv-phoenix" / "bin" / "phoenix"
INSTALL = "bash scripts/install-phoenix.sh"
START_TIMEOUT = 90.0
_state: dict = {}  # the server of this test session


@dataclass
class PhoenixServer:
    url: str  # http://127.0.0.1:PORT: the UI, REST (/v1/…), GraphQL (/graphql) and OTLP/HTTP (/v1/traces)
    grpc_port: int  # OTLP/gRPC
    folder: Path  # PHOENIX_WORKING_DIR and the server's log
    started_in: float  # seconds from the spawn to the first /healthz answer
    rss_mb: float  # resident memory of the server when it first answered
    process: subprocess.Popen

    @property
    def traces_url(self) -> str:
        return f"{self.url}/v1/traces"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def phoenix_environ(folder: Path, port: int, grpc_port: int) -> dict[str, str]:
    """The server's environment: ours without PHOENIX_* / OTEL_* from the developer's shell, plus its settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_", "RLM_"))}
    return env | {
        "HOME": str(folder),
        "PHOENIX_WORKING_DIR": str(folder / "phoenix"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",  # else it tries a download at start
    }


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (Linux /proc), in MB; 0 when unknown."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            if entry.name != str(pid) and int(fields.get("PPid", "0").strip()) != pid:
                continue
            total += int(fields.get("VmRSS", "0 kB").split()[0])
        except (OSError, ValueError):
            continue
    return total / 1024


def require_phoenix() -> None:
    """Fail (never skip) when .venv-phoenix is missing, naming the command that installs it."""
    if not PHOENIX.exists():
        pytest.fail(f"Arize Phoenix is not installed: {PHOENIX} is missing. Install it (its own virtualenv, "
                    f".venv-phoenix) with:\n    {INSTALL}", pytrace=False)


def start_phoenix(folder: Path) -> PhoenixServer:
    """Start ``phoenix serve`` in ``folder`` and wait for /healthz; fails (pytest.fail) when it does not come up."""
    require_phoenix()
    port, grpc_port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    folder.mkdir(parents=True, exist_ok=True)
    log = (folder / "server.log").open("wb")
    start = time.monotonic()
    process = subprocess.Popen([str(PHOENIX), "serve"], cwd=folder, env=phoenix_environ(folder, port, grpc_port),
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = start + START_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None and not _healthy(url):
        time.sleep(0.2)
    if not _healthy(url):
        stop(process)
        tail = (folder / "server.log").read_text(errors="replace")[-3000:]
        pytest.fail(f"phoenix serve did not answer {url}/healthz within {START_TIMEOUT:.0f} s "
                    f"(exit code {process.returncode}); its log ends with:\n{tail}", pytrace=False)
    return PhoenixServer(url, grpc_port, folder, time.monotonic() - start, rss_mb(process.pid), process)


def phoenix_server() -> PhoenixServer:
    """The session's server, started on first use."""
    if "server" in _state:
        return _state["server"]
    if "failed" in _state:
        pytest.fail(_state["failed"], pytrace=False)
    require_phoenix()
    folder = Path(tempfile.mkdtemp(prefix="rlm-phoenix-server-"))
    try:
        server = start_phoenix(folder)
    except pytest.fail.Exception as exc:  # the message holds the tail of the server's log
        _state["failed"] = str(exc.msg)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    _state["server"] = server
    atexit.register(shutdown, server)
    return server


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)  # the server's own group
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def shutdown(server: PhoenixServer) -> None:
    stop(server.process)
    shutil.rmtree(server.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def phoenix():
    """The Phoenix server of this test session (started once, stopped at the end)."""
    server = phoenix_server()
    yield server
    shutdown(server)
    _state.pop("server", None)


# --- read-back ---------------------------------------------------------------------------------------------------


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def rest_spans(server: PhoenixServer, project: str, trace_id: str | None = None) -> list[dict]:
    """The project's spans from ``GET /v1/projects/{project}/spans`` (every page), those of ``trace_id`` only
    when given; [] while the project does not exist yet."""
    spans: list[dict] = []
    cursor = None
    while True:
        query = {"limit": "1000"} | ({"cursor": cursor} if cursor else {})
        url = f"{server.url}/v1/projects/{urllib.parse.quote(project)}/spans?{urllib.parse.urlencode(query)}"
        try:
            page = _get(url)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # no span of this project has arrived yet
                return []
            raise
        spans += page["data"]
        cursor = page.get("next_cursor")
        if not cursor:
            break
    return [s for s in spans if trace_id is None or s["context"]["trace_id"] == trace_id]


def wait_for_trace(server: PhoenixServer, project: str, trace_id: str, count: int, timeout: float = 30) -> list[dict]:
    """The trace's spans once at least ``count`` are in Phoenix (and no new one came for half a second)."""
    deadline = time.monotonic() + timeout
    spans: list[dict] = []
    while time.monotonic() < deadline:
        spans = rest_spans(server, project, trace_id)
        if len(spans) >= count:
            time.sleep(0.5)
            again = rest_spans(server, project, trace_id)
            if len(again) == len(spans):
                return again
            continue
        time.sleep(0.3)
    names = sorted(s["name"] for s in spans)
    raise AssertionError(f"Phoenix has {len(spans)} span(s) of trace {trace_id} in project {project!r} after "
                         f"{timeout:.0f} s, expected {count}: {names}")


def graphql(server: PhoenixServer, query: str, variables: dict | None = None) -> dict:
    """One query to the GraphQL API the UI uses; raises on errors."""
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{server.url}/graphql", data=body, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.loads(response.read())
    if answer.get("errors"):
        raise AssertionError(f"Phoenix GraphQL errors: {answer['errors']}")
    return answer["data"]


TRACE_QUERY = """
query ($project: ID!, $traceId: ID!) {
  node(id: $project) {
    ... on Project {
      trace(traceId: $traceId) {
        numSpans errorCount latencyMs
        spanCountsByKind { spanKind count }
        session { sessionId }
        rootSpan { spanId name }
        spans(first: 1000) {
          edges { node {
            spanId parentId name spanKind statusCode statusMessage latencyMs
            input { value mimeType }
            output { value mimeType }
            tokenCountPrompt tokenCountCompletion tokenCountTotal
            cumulativeTokenCountPrompt cumulativeTokenCountCompletion cumulativeTokenCountTotal
            numChildSpans
          } }
        }
      }
    }
  }
}
"""


def project_id(server: PhoenixServer, project: str) -> str:
    return _get(f"{server.url}/v1/projects/{urllib.parse.quote(project)}")["data"]["id"]


def trace_view(server: PhoenixServer, project: str, trace_id: str) -> dict:
    """What the UI's trace page shows: the trace's summary, and ``spans`` keyed by span id (see TRACE_QUERY)."""
    data = graphql(server, TRACE_QUERY, {"project": project_id(server, project), "traceId": trace_id})
    trace = data["node"]["trace"]
    assert trace is not None, f"Phoenix has no trace {trace_id} in project {project!r}"
    trace["spans"] = {e["node"]["spanId"]: e["node"] for e in trace["spans"]["edges"]}
    trace["spanCountsByKind"] = {c["spanKind"]: c["count"] for c in trace["spanCountsByKind"]}
    return trace
