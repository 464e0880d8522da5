"""A run tree as one MLflow trace: span tree, types, inputs and outputs, previews and the link to the root's
run, read back from a real MLflow server (``get_trace``, ``search_traces``)."""

from __future__ import annotations

import uuid

import pytest
from mlflow_server import client, quiet_home, record_tree, runs_by_rlm_id, server  # noqa: F401

from rlm_host.sdk.observability import trace_id_for
from rlm_sink_mlflow.settings import MlflowSinkSettings
from rlm_sink_mlflow.sink import MlflowSink

pytestmark = pytest.mark.slow


@pytest.fixture
def traced(server, tmp_path):
    result, events = record_tree(tmp_path / "rec")
    experiment = f"traces-{uuid.uuid4().hex[:8]}"
    sink = MlflowSink(MlflowSinkSettings(tracking_uri=server.url, experiment=experiment), tmp_path)
    for event in events:
        sink.handle(event)
    sink.close()
    mlflow = client(server)
    return result, events, mlflow, runs_by_rlm_id(mlflow, experiment)


def test_the_tree_is_one_trace_with_the_run_trees_own_id_linked_to_the_root_run(traced):
    result, _, mlflow, runs = traced
    root_run = runs[result.run_id]
    found = mlflow.search_traces(locations=[root_run.info.experiment_id], run_id=root_run.info.run_id)
    assert [t.info.trace_id for t in found] == [f"tr-{trace_id_for(result.run_id)}"]
    info = mlflow.get_trace(found[0].info.trace_id).info
    assert info.trace_metadata["mlflow.sourceRun"] == root_run.info.run_id
    assert info.state.value == "OK" and info.execution_duration > 0
    assert "What is the answer?" in info.request_preview and "42" in info.response_preview
    assert info.tags["rlm.root_run_id"] == result.run_id and info.tags["mlflow.traceName"] == "invoke_agent pure_rlm"


def test_spans_nest_child_runs_under_the_tool_call_that_made_them(traced):
    result, events, mlflow, _ = traced
    trace = mlflow.get_trace(f"tr-{trace_id_for(result.run_id)}")
    spans = {s.span_id: s for s in trace.data.spans}
    parent = {s.span_id: spans.get(s.parent_id) for s in spans.values()}
    agents = [s for s in spans.values() if s.span_type == "AGENT"]
    assert len(agents) == 2
    root = next(s for s in agents if s.parent_id is None)
    child = next(s for s in agents if s.parent_id is not None)
    assert parent[child.span_id].span_type == "TOOL" and parent[child.span_id].name == "execute_tool repl"
    assert parent[parent[child.span_id].span_id] is root
    assert root.inputs == {"task": "What is the answer?"} and root.outputs == "42"
    assert child.inputs == {"task": "Summarise the context"} and child.outputs == "a summary"
    tools = [s for s in spans.values() if s.span_type == "TOOL"]
    assert all("code" in s.inputs for s in tools) and any("rlm_query" in s.inputs["code"] for s in tools)
    chats = [s for s in spans.values() if s.span_type == "CHAT_MODEL"]
    steps = [e for e in events if e.type == "step"]
    sub = [s for s in chats if s.get_attribute("rlm.sub_call.kind") == "llm_query"]
    assert len(chats) == len(steps) + 1 and len(sub) == 1  # a model turn per step of either run, the llm_query
    assert parent[sub[0].span_id] is parent[child.span_id] and sub[0].outputs == "prose"
    assert sub[0].inputs["prompt"].startswith("Classify: ") and sub[0].name == "chat scripted:sub"
    assert all(s.get_attribute("mlflow.chat.tokenUsage")["input_tokens"] > 0 for s in chats)
    for span in spans.values():
        assert span.start_time_ns <= span.end_time_ns
        if span.parent_id:
            # within 1 ms: a sub-call's start is its end minus its rounded duration (SpanBuilder)
            assert parent[span.span_id].start_time_ns <= span.start_time_ns + 1_000_000
    assert root.get_attribute("rlm.run_id") == result.run_id and root.status.status_code.value == "OK"
