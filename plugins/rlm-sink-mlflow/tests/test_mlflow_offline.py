"""What needs no MLflow server: registration, run status, the readiness check, and the trace built from a
recorded run tree."""

from __future__ import annotations

import http.server
import threading

import pytest
from mlflow_server import quiet_home, record_tree  # noqa: F401

from rlm_host.sdk.embedding import PluginHost
from rlm_host.sdk.observability import ContentPolicy, SpanBuilder
from rlm_sink_mlflow.settings import MlflowSinkSettings, check
from rlm_sink_mlflow.sink import run_status


def test_the_sink_is_registered_with_its_settings_and_check():
    spec = PluginHost(environ={"RLM_PLUGINS": "rlm-sink-mlflow"}).sinks().get("mlflow")
    assert spec.settings_model() is MlflowSinkSettings and spec.requires == ("mlflow",)
    assert MlflowSinkSettings().experiment == "rlm" and MlflowSinkSettings().tracking_uri is None


@pytest.mark.parametrize("reason, completed, status", [
    ("final", True, "FINISHED"), ("cancelled", False, "KILLED"), ("error", False, "FAILED"),
    ("max_steps", False, "FAILED"), ("timeout", False, "FAILED"), ("budget", True, "FINISHED"),
])
def test_termination_reasons_map_to_run_statuses(reason, completed, status):
    assert run_status(reason, completed) == status


def test_check_without_a_server_uri_and_with_a_dead_one(monkeypatch, tmp_path):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)  # MLflow's default store is a file of the working folder
    assert check(None).ok and "mlflow.db opens" in check(None).detail and (tmp_path / "mlflow.db").is_file()
    assert check(MlflowSinkSettings(tracking_uri=f"sqlite:///{tmp_path}/x.db")).ok
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler) as probe:
        port = probe.server_port
    state = check(MlflowSinkSettings(tracking_uri=f"http://127.0.0.1:{port}"))
    assert not state.ok and "does not answer" in state.detail and "mlflow server" in state.hint


class _AuthServer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200 if self.path == "/health" else 401)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_check_names_credential_variables_never_their_values(monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AuthServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "alice-made-up")
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "pw-made-up-42")
        state = check(MlflowSinkSettings(tracking_uri=f"http://127.0.0.1:{server.server_port}"))
    finally:
        server.shutdown()
    shown = f"{state.detail} {state.hint}"
    assert not state.ok and "HTTP 401" in state.detail and "MLFLOW_TRACKING_USERNAME" in shown
    assert "MLFLOW_TRACKING_TOKEN" in state.hint
    assert "alice-made-up" not in shown and "pw-made-up-42" not in shown


def test_a_recorded_tree_becomes_one_trace_with_its_span_tree(tmp_path):
    from rlm_sink_mlflow.traces import build_trace

    result, events = record_tree(tmp_path / "rec")
    builder = SpanBuilder(content=ContentPolicy(capture=True))
    records = [span for event in events for span in builder.add(event)]
    info, spans = build_trace(records, "7", "mlflow-run-1", {"rlm.root_run_id": result.run_id})
    assert info.trace_id == spans[0].trace_id and info.trace_metadata["mlflow.sourceRun"] == "mlflow-run-1"
    assert info.experiment_id == "7" and spans[0].parent_id is None and spans[0].span_type == "AGENT"
    assert {s.span_id for s in spans} == {r.span_id for r in records}
    by_id = {r.span_id: r for r in records}
    assert all(s.parent_id == by_id[s.span_id].parent_span_id for s in spans)
    seen = set()
    for span in spans:  # parents first
        assert span.parent_id is None or span.parent_id in seen
        seen.add(span.span_id)
