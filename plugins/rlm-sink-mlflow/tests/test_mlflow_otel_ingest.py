"""The ``otel`` sink (rlm-sink-otel) exporting OTLP/HTTP to the same MLflow server's ``/v1/traces`` (with the
``x-mlflow-experiment-id`` header): the trace reads back through ``MlflowClient`` with the same span tree."""

from __future__ import annotations

import importlib.util
import uuid

import pytest
from mlflow_server import client, quiet_home, record_tree, server  # noqa: F401

from rlm_host import HostServices
from rlm_host.sdk.embedding import PluginHost
from rlm_host.sdk.observability import ContentPolicy, SpanBuilder, trace_id_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("rlm_sink_otel") is None,
                       reason="rlm-sink-otel is not installed (pip install -e plugins/rlm-sink-otel)"),
]


def test_the_otel_sink_sends_the_tree_to_mlflows_otlp_endpoint(server, tmp_path):
    result, events = record_tree(tmp_path / "rec")
    mlflow = client(server)
    experiment_id = mlflow.create_experiment(f"otlp-{uuid.uuid4().hex[:8]}")
    spec = PluginHost(environ={"RLM_PLUGINS": "rlm-sink-otel"}).sinks().get("otel")
    settings = spec.settings_model()(exporter="otlp-http", endpoint=f"{server.url}/v1/traces",
                                     headers={"x-mlflow-experiment-id": experiment_id}, timeout=10)
    sink = spec.create(settings, HostServices(home=tmp_path))
    for event in events:
        sink.handle(event)
    sink.close()
    traces = mlflow.search_traces(locations=[experiment_id])
    assert len(traces) == 1, "the OTLP export did not land in the experiment"
    trace = mlflow.get_trace(traces[0].info.trace_id)
    assert traces[0].info.trace_id.endswith(trace_id_for(result.run_id))
    builder = SpanBuilder(content=ContentPolicy(capture=True))
    expected = [span for event in events for span in builder.add(event)]
    assert {s.span_id for s in trace.data.spans} == {r.span_id for r in expected}
    parents = {r.span_id: r.parent_span_id for r in expected}
    assert all(s.parent_id == parents[s.span_id] for s in trace.data.spans)
    assert sorted(s.name for s in trace.data.spans) == sorted(r.name for r in expected)
