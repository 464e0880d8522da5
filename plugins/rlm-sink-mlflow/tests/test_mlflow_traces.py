"""A run tree as one MLflow trace: span tree, types, inputs and outputs (question, answer, chat messages, code,
output), previews and the link to the root's run, read back from a real MLflow server (``get_trace``,
``search_traces``); with ``capture_content=false`` none of that content, on the trace or the runs."""

from __future__ import annotations

import json
import uuid

import pytest
from mlflow_server import client, quiet_home, record_tree, runs_by_rlm_id, server  # noqa: F401

from rlm_host.sdk.observability import trace_id_for
from rlm_sink_mlflow.settings import MlflowSinkSettings
from rlm_sink_mlflow.sink import MlflowSink

pytestmark = pytest.mark.slow


def feed(server, tmp_path, **settings):
    result, events = record_tree(tmp_path / "rec")
    experiment = f"traces-{uuid.uuid4().hex[:8]}"
    sink = MlflowSink(MlflowSinkSettings(tracking_uri=server.url, experiment=experiment, **settings), tmp_path)
    for event in events:
        sink.handle(event)
    sink.close()
    assert sink._off is None, sink._off
    mlflow = client(server)
    return result, events, mlflow, runs_by_rlm_id(mlflow, experiment)


def decoded(value):
    """An attribute holding JSON text: the server may hand it back decoded already."""
    return json.loads(value) if isinstance(value, str) else value


@pytest.fixture
def traced(server, tmp_path):
    return feed(server, tmp_path)


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
    calls = [e for e in events if e.type == "model_call_end"]
    sub = [s for s in chats if s.get_attribute("rlm.purpose") == "sub_call"]
    assert len(chats) == len(calls) == 5 and len(sub) == 1  # every model call: 4 turns of either run, the llm_query
    assert parent[sub[0].span_id] is parent[child.span_id] and sub[0].outputs == "prose"
    assert sub[0].inputs["messages"][0]["content"].startswith("Classify: ") and sub[0].name == "chat sub"
    assert sub[0].get_attribute("gen_ai.request.model") == "sub"  # no provider prefix
    assert all(s.get_attribute("mlflow.chat.tokenUsage")["input_tokens"] > 0 for s in chats)
    for span in spans.values():
        assert span.start_time_ns <= span.end_time_ns
        if span.parent_id:
            # within 50 ms: a model call's start is its end minus its rounded duration, a step's code span starts
            # where SpanBuilder reckons its model time ended (seen 7 ms apart on a loaded machine)
            assert parent[span.span_id].start_time_ns <= span.start_time_ns + 50_000_000
    assert root.get_attribute("rlm.run_id") == result.run_id and root.status.status_code.value == "OK"


def test_spans_show_the_question_answer_messages_code_and_output(traced):
    result, _, mlflow, _ = traced
    trace = mlflow.get_trace(f"tr-{trace_id_for(result.run_id)}")
    assert json.loads(trace.info.request_preview) == {"task": "What is the answer?"}
    assert json.loads(trace.info.response_preview) == "42"
    root = next(s for s in trace.data.spans if s.parent_id is None)
    assert root.get_attribute("input.value") == "What is the answer?" and root.get_attribute("output.value") == "42"
    turns = [s for s in trace.data.spans if s.get_attribute("rlm.purpose") == "turn"]
    first = min(turns, key=lambda s: s.start_time_ns)
    roles = [m["role"] for m in first.inputs["messages"]]
    assert roles[0] == "system" and "user" in roles
    assert any("What is the answer?" in m["content"] for m in first.inputs["messages"])
    assert first.outputs.startswith("```repl\nkind = llm_query(")
    chat = first.get_attribute("mlflow.chat.messages")  # what MLflow's UI draws as a chat
    assert chat[:-1] == first.inputs["messages"] and chat[-1] == {"role": "assistant", "content": first.outputs}
    assert decoded(first.get_attribute("gen_ai.input.messages"))[0]["parts"][0]["type"] == "text"
    assert "FINAL(42)" in {s.outputs for s in turns}
    tool = next(s for s in trace.data.spans if s.name == "execute_tool repl" and s.parent_id == root.span_id)
    assert tool.inputs == {"code": "kind = llm_query('Classify: ' + context)\nnote = rlm_query('Summarise the "
                                   "context', context)\nprint(kind, note)\n"}
    assert tool.outputs == "prose a summary\n"
    assert decoded(tool.get_attribute("gen_ai.tool.call.arguments")) == tool.inputs
    assert [e.name for e in tool.events][:2] == ["rlm.code", "rlm.output"]  # the span events stay


def test_the_runs_show_the_task_and_the_answer(traced):
    result, _, _, runs = traced
    root = runs[result.run_id]
    assert root.data.params["task"] == "What is the answer?" and root.data.tags["rlm.answer"] == "42"
    note = root.data.tags["mlflow.note.content"]  # the run page's description
    assert note == "**Task:** What is the answer?\n\n**Answer:** 42"
    child = next(r for k, r in runs.items() if k != result.run_id)
    assert "Summarise the context" in child.data.tags["mlflow.note.content"]


def test_with_capture_content_off_neither_trace_nor_runs_carry_content(server, tmp_path):
    result, _, mlflow, runs = feed(server, tmp_path, capture_content=False)
    trace = mlflow.get_trace(f"tr-{trace_id_for(result.run_id)}")
    assert trace.info.request_preview in (None, "") and trace.info.response_preview in (None, "")
    assert len(trace.data.spans) == 9 and all(s.inputs is None and s.outputs is None for s in trace.data.spans)
    stored = trace.to_json()
    for text in ("What is the answer?", "Summarise the context", "Classify", "kind = ", "prose", "a summary",
                 "Recursive Language Model", "FINAL"):
        assert text not in stored, text
    for run in runs.values():
        assert "task" not in run.data.params and "rlm.answer" not in run.data.tags
        assert "mlflow.note.content" not in run.data.tags
        assert run.data.params["depth"] in ("0", "1") and run.info.status == "FINISHED"
