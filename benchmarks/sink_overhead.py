"""Do observability sinks slow a run down when their backends are slow?

Runs the same pure_rlm task (``--steps`` root turns of ``--model-delay`` seconds, each running code with one
``llm_query``) without sinks and with every installed remote sink enabled, alternately, ``--repeat`` times. Every
backend answers each request after ``--delay`` seconds (500 ms by default): one loopback server stands in for the
OTLP collector, Langfuse, LangSmith and Logfire (it answers what their SDKs send), and a real ``mlflow server``
sits behind a proxy adding the same delay. Printed per configuration: the run's own duration (start to final
answer), the time until ``run_task`` returned (the sinks deliver in the background), until they delivered
(``wait_for_sinks``), requests the backends got, and sinks disabled; then the ratios against the run without sinks.
Then the same through ``rlm run`` in a subprocess: the seconds until the answer is on stdout and until the
process exits (it waits for the sinks after printing the answer).

    .venv/bin/python benchmarks/sink_overhead.py [--delay 0.5] [--steps 6] [--model-delay 0.2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional

from rlm_host import wait_for_sinks
from rlm_host.config import load_settings
from rlm_host.engine.runner import RLMRunner
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.plugins.host import PluginHost


PROJECT = "1b1c5ad2-3e2b-4b51-9a55-0d9a8b0c5f11"
#: What the vendor SDKs need to hear back (Logfire's token check, LangSmith's project lookup, Langfuse's scores).
CANNED: dict[str, Any] = {
    "/v1/info": {"project_name": "rlm-bench", "project_url": "http://127.0.0.1/rlm-bench"},
    "/info": {"version": "0.10.0"},
    "/sessions": [{"id": PROJECT, "name": "rlm", "start_time": "2026-01-01T00:00:00", "tenant_id": PROJECT,
                   "reference_dataset_id": None}],
    "/api/public/ingestion": {"successes": [], "errors": []},
}


class SlowBackend:
    """A loopback HTTP server answering every request after ``delay`` seconds: 200 and a small JSON body (what
    the OTLP exporters, Langfuse, LangSmith and Logfire accept), or, with ``upstream``, the upstream's answer."""

    def __init__(self, delay: float, upstream: Optional[tuple[str, int]] = None) -> None:
        self.delay, self.upstream, self.requests = delay, upstream, 0
        lock = threading.Lock()
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    backend.requests += 1
                time.sleep(backend.delay)
                status, headers, payload = backend._forward(self, body) if backend.upstream else backend._canned(self)
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    @staticmethod
    def _canned(handler: BaseHTTPRequestHandler) -> tuple[int, list[tuple[str, str]], bytes]:
        path = handler.path.partition("?")[0]
        body: Any = CANNED.get(path, {})
        status = 207 if path == "/api/public/ingestion" else 202 if path == "/runs/multipart" else 200
        return status, [("Content-Type", "application/json")], json.dumps(body).encode()

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        assert self.upstream is not None
        connection = http.client.HTTPConnection(*self.upstream, timeout=60)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("host", "connection")}
        connection.request(handler.command, handler.path, body=body or None, headers=headers)
        reply = connection.getresponse()
        payload = reply.read()
        kept = [(k, v) for k, v in reply.getheaders() if k.lower() in ("content-type",)]
        connection.close()
        return reply.status, kept, payload

    def stop(self) -> None:
        self.server.shutdown()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_mlflow(folder: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {**os.environ, "HOME": str(folder), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
           "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{folder}/mlflow.db",
         "--default-artifact-root", str(folder / "artifacts"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/health")
            if connection.getresponse().status == 200:
                return server, port
        except OSError:
            time.sleep(0.5)
    server.kill()
    raise SystemExit("mlflow server did not start within 90 s")


def sink_environ(installed: set[str], backend: str, mlflow_url: Optional[str], home: Path) -> dict[str, str]:
    """The ``RLM_SINK__…`` settings pointing each installed remote sink at the slow backends."""
    env: dict[str, str] = {}
    if "otel" in installed:
        env["RLM_SINK__OTEL__ENDPOINT"] = backend + "/v1/traces"
    if "langfuse" in installed:
        env.update({"RLM_SINK__LANGFUSE__BASE_URL": backend, "RLM_SINK__LANGFUSE__PUBLIC_KEY": "pk-lf-bench",
                    "RLM_SINK__LANGFUSE__SECRET_KEY": "sk-lf-bench"})
    if "langsmith" in installed:
        env.update({"RLM_SINK__LANGSMITH__API_URL": backend, "RLM_SINK__LANGSMITH__API_KEY": "lsv2-bench"})
    if "logfire" in installed:
        env.update({"RLM_SINK__LOGFIRE__BASE_URL": backend, "RLM_SINK__LOGFIRE__TOKEN": "pylf_v1_us_bench"})
    if "mlflow" in installed and mlflow_url:
        env["RLM_SINK__MLFLOW__TRACKING_URI"] = mlflow_url
    return env


def one_run(home: Path, sinks: list[str], environ: dict[str, str], steps: int, model_delay: float,
            flush: float) -> dict[str, float]:
    code = "```repl\nnote = llm_query('Summarise: ' + context[:200])\nprint(len(context), note)\n```"
    root = ScriptedConnector.from_responses([{"text": code, "delay": model_delay}] * (steps - 1)
                                            + [{"text": "FINAL('done')", "delay": model_delay}])
    sub = ScriptedConnector.from_responses([], rules=[{"match": ".", "text": "a note", "delay": model_delay / 2}])
    env = {"HOME": str(home), "RLM_RUN__SINKS": json.dumps(sinks), "RLM_RUN__SINK_FLUSH_SECONDS": str(flush),
           **environ}
    host = PluginHost()
    runner = RLMRunner(loaded=load_settings(environ=env, cwd=home, host=host), host=host, home=home / ".rlm")
    events: list[Any] = []
    started = time.perf_counter()
    result = runner.run_task("Summarise the context.", context="word " * 5000, sandbox="process",
                             connectors={"root": root, "sub": sub}, on_event=events.append,
                             max_steps=steps + 1)
    returned = time.perf_counter() - started
    wait_for_sinks()
    delivered = time.perf_counter() - started
    if result.final_response != "done":
        raise SystemExit(f"run failed: {result.termination_reason}: {result.error}")
    errors = [e.data for e in events if e.type == "sink_error"]
    return {"duration": result.duration_s, "returned": returned, "delivered": delivered, "sink_errors": len(errors),
            "error_text": "; ".join(f"{e['sink']}: {e['error']}" for e in errors)}  # type: ignore[dict-item]


def cli_run(home: Path, sinks: list[str], environ: dict[str, str], steps: int, model_delay: float,
            flush: float) -> dict[str, float]:
    """``rlm run`` as a user types it: seconds until the answer is on stdout, and until the process exits."""
    code = "```repl\nnote = llm_query('Summarise: ' + context[:200])\nprint(len(context), note)\n```"
    script = home / "script.json"
    script.write_text(json.dumps({"responses": [{"text": code, "delay": model_delay}] * (steps - 1)
                                  + [{"text": "FINAL('done')", "delay": model_delay}],
                                  "rules": [{"match": "Summarise:", "text": "a note", "delay": model_delay / 2}]}))
    (home / "context.txt").write_text("word " * 5000)
    env = {**os.environ, "HOME": str(home), "RLM_HOME": str(home / ".rlm"), "RLM_RUN__SINKS": json.dumps(sinks),
           "RLM_RUN__SINK_FLUSH_SECONDS": str(flush), **environ}
    rlm = str(Path(sys.executable).with_name("rlm"))
    started = time.perf_counter()
    process = subprocess.Popen([rlm, "run", "Summarise the context.", "--context", str(home / "context.txt"),
                                "--model", f"scripted:{script}", "--sandbox", "process", "--quiet",
                                "--max-steps", str(steps + 1)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env, cwd=home)
    assert process.stdout is not None
    answer = process.stdout.readline().decode().strip()
    answered = time.perf_counter() - started
    process.wait()
    exited = time.perf_counter() - started
    if answer != "done":
        raise SystemExit(f"rlm run failed: {answer!r} "
                         f"{process.stderr.read().decode()[-500:] if process.stderr else ''}")
    return {"answered": answered, "exited": exited}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.5, help="seconds each backend takes per request")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--model-delay", type=float, default=0.2, help="seconds per root model call")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--flush", type=float, default=10.0, help="[run] sink_flush_seconds")
    parser.add_argument("--sinks", default="", help="only these sinks (comma-separated; default: every installed one)")
    parser.add_argument("--no-mlflow", action="store_true", help="skip the MLflow server (it takes ~10 s to start)")
    args = parser.parse_args()

    host = PluginHost()
    remote = [s for s in ("otel", "mlflow", "langfuse", "langsmith", "logfire") if s in host.sinks()]
    if args.sinks:
        remote = [s for s in remote if s in args.sinks.split(",")]
    if args.no_mlflow or importlib.util.find_spec("mlflow") is None:
        remote = [s for s in remote if s != "mlflow"]
    print(f"sinks: {', '.join(remote) or 'none installed'}; every backend answers in {args.delay * 1000:.0f} ms; "
          f"{args.steps} root turns of {args.model_delay * 1000:.0f} ms, each with one llm_query")
    with tempfile.TemporaryDirectory(prefix="rlm-sink-bench-") as tmp:
        folder = Path(tmp)
        backend = SlowBackend(args.delay)
        mlflow_server, proxy = None, None
        if "mlflow" in remote:
            (folder / "mlflow").mkdir()
            mlflow_server, port = start_mlflow(folder / "mlflow")
            proxy = SlowBackend(args.delay, upstream=("127.0.0.1", port))
        try:
            environ = sink_environ(set(remote), backend.url, proxy.url if proxy else None, folder)
            rows: dict[str, list[dict[str, float]]] = {"no sinks": [], "all sinks": []}
            one_run(folder, [], {}, 2, 0.0, args.flush)  # warm up the engine and the sandbox
            cold = one_run(folder, ["local", *remote], environ, args.steps, args.model_delay, args.flush)
            requests_before = backend.requests + (proxy.requests if proxy else 0)
            for _ in range(args.repeat):
                rows["no sinks"].append(one_run(folder, [], {}, args.steps, args.model_delay, args.flush))
                rows["all sinks"].append(one_run(folder, ["local", *remote], environ, args.steps, args.model_delay,
                                                 args.flush))
            requests = backend.requests + (proxy.requests if proxy else 0) - requests_before
            cli: dict[str, list[dict[str, float]]] = {"no sinks": [], "all sinks": []}
            for _ in range(args.repeat):
                cli["no sinks"].append(cli_run(folder, [], {}, args.steps, args.model_delay, args.flush))
                cli["all sinks"].append(cli_run(folder, ["local", *remote], environ, args.steps, args.model_delay,
                                                args.flush))
        finally:
            backend.stop()
            if proxy is not None:
                proxy.stop()
            if mlflow_server is not None:
                mlflow_server.terminate()
                mlflow_server.wait(20)
    print(f"first run with sinks in this process (SDK imports and connections included): answered in "
          f"{cold['duration']:.3f} s, returned after {cold['returned']:.3f} s, {cold['sink_errors']:.0f} sinks disabled"
          + (f" ({cold['error_text']})" if cold["error_text"] else ""))
    base = {k: statistics.median(r[k] for r in rows["no sinks"]) for k in ("duration", "returned")}
    print(f"\nthen {args.repeat} runs each:\n{'':<10} {'run (start→answer)':>19} {'run_task returned':>18} "
          f"{'sinks delivered':>16} {'sinks disabled':>15}")
    for name, runs in rows.items():
        duration = statistics.median(r["duration"] for r in runs)
        returned = statistics.median(r["returned"] for r in runs)
        delivered = statistics.median(r["delivered"] for r in runs)
        disabled = sum(int(r["sink_errors"]) for r in runs)
        print(f"{name:<10} {duration:>17.3f} s {returned:>16.3f} s {delivered:>14.3f} s {disabled:>15}")
        for r in runs:
            if r["error_text"]:
                print(f"    {r['error_text']}")
    with_sinks = rows["all sinks"]
    print("\nrun duration ratio (all sinks / none): "
          f"{statistics.median(r['duration'] for r in with_sinks) / base['duration']:.3f}")
    print("time until run_task returned, ratio: "
          f"{statistics.median(r['returned'] for r in with_sinks) / base['returned']:.3f}"
          f" (+{statistics.median(r['returned'] for r in with_sinks) - base['returned']:.3f} s)")
    answered = {k: statistics.median(r["answered"] for r in v) for k, v in cli.items()}
    exited = {k: statistics.median(r["exited"] for r in v) for k, v in cli.items()}
    print(f"\n`rlm run` ({args.repeat} each), seconds until the answer is on stdout / until the process exits:")
    for name in cli:
        print(f"{name:<10} {answered[name]:>8.3f} s {exited[name]:>8.3f} s")
    print(f"answer on stdout: +{answered['all sinks'] - answered['no sinks']:.3f} s with the slow backends "
          f"(target ≤ 0.2 s); exit: +{exited['all sinks'] - exited['no sinks']:.3f} s (the sinks' end-of-run flush)")
    print(f"backend requests during the {args.repeat} runs with sinks: {requests} ({requests / args.repeat:.1f} per "
          "run)")


if __name__ == "__main__":
    main()
