"""A tracking server that is not there, or that hangs: no exception out of ``handle`` or ``close``, one warning
on ``rlm.sinks``, and ``close`` returns well within the runner's flush deadline (≈ 5 s)."""

from __future__ import annotations

import http.server
import logging
import socket
import threading
import time

import pytest
from mlflow_server import quiet_home, record_tree  # noqa: F401

from rlm_sink_mlflow.settings import MlflowSinkSettings
from rlm_sink_mlflow.sink import MlflowSink


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


def feed_timed(sink: MlflowSink, events) -> float:
    start = time.monotonic()
    for event in events:
        sink.handle(event)
    sink.close()
    sink.close()
    return time.monotonic() - start


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return record_tree(tmp_path_factory.mktemp("unreachable"))[1]


def test_an_unreachable_server_gives_one_warning_and_a_quick_close(tree, tmp_path, caplog):
    sink = MlflowSink(MlflowSinkSettings(tracking_uri=f"http://127.0.0.1:{closed_port()}", timeout=1), tmp_path)
    with caplog.at_level(logging.WARNING, logger="rlm.sinks"):
        seconds = feed_timed(sink, tree)
    warnings = [r for r in caplog.records if r.name == "rlm.sinks"]
    assert len(warnings) == 1 and "does not answer" in warnings[0].getMessage(), caplog.text
    assert seconds < 3, seconds


class _HealthyButHanging(http.server.BaseHTTPRequestHandler):
    """Answers /health, then never answers the API (a server stuck behind a proxy)."""

    def do_GET(self):  # noqa: N802
        if self.path == "/health":
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"OK")
        else:
            time.sleep(30)

    do_POST = do_GET  # noqa: N815

    def log_message(self, *args):
        pass


@pytest.mark.slow
def test_a_hanging_server_is_given_up_after_one_timeout(tree, tmp_path, caplog):
    """``timeout`` and ``max_retries`` reach MLflow's REST client (through its environment variables)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HealthyButHanging)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        settings = MlflowSinkSettings(tracking_uri=f"http://127.0.0.1:{server.server_port}", timeout=1, max_retries=0)
        sink = MlflowSink(settings, tmp_path)
        with caplog.at_level(logging.WARNING, logger="rlm.sinks"):
            seconds = feed_timed(sink, tree)
    finally:
        server.shutdown()
    warnings = [r for r in caplog.records if r.name == "rlm.sinks"]
    assert len(warnings) == 1, caplog.text
    assert seconds < 5, seconds
