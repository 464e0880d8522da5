"""The span tree every OpenTelemetry-shaped sink sends (rlm_host.observability.spans): GenAI convention names, a
child run nested under the code execution that called it, sub-calls under their execution, stable ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_host.sdk.observability import SpanBuilder, trace_id_for, tree_order
from rlm_host.events import RunEvent
from rlm_host.testing.engine import isolated_runner, run_scripted

ROOT = ["```repl\nparts = llm_query_batched(['one?', 'two?'])\nnote = rlm_query('Summarise', context)\n"
        "print(parts, note)\n```", "```repl\nprint(1/0)\n```", "FINAL(42)"]
CHILD = ["```repl\nprint(context[:5])\n```", "FINAL('a summary')"]


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch) -> list[RunEvent]:
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, sandbox="process", environ={"RLM_RUN__SINKS": "[]"})
    result, events, _ = run_scripted(runner, "What?", ROOT[:1] + CHILD + ROOT[1:], context="some words",
                                     sub_rules=[{"match": "(one|two)", "text": "yes"}], max_depth=1,
                                     labels={"benchmark_id": "b1"})  # fmt: skip
    assert result.completed, result.error
    return events


def _spans(events):
    builder = SpanBuilder()
    spans = [span for event in events for span in builder.add(event)]
    return spans + builder.finish(), builder


def test_the_run_tree_as_genai_spans(recorded):
    spans, builder = _spans(recorded)
    assert builder.open_runs == 0
    by_id = {s.span_id: s for s in spans}
    root_run = recorded[0].run_id
    runs = [s for s in spans if s.operation == "invoke_agent"]
    assert len(runs) == 2 and {s.trace_id for s in spans} == {trace_id_for(root_run)}
    root = next(s for s in runs if s.parent_span_id is None)
    child = next(s for s in runs if s.parent_span_id is not None)
    assert root.name == "invoke_agent pure_rlm" and root.status == "ok"
    assert root.attributes["rlm.final_response"] == "42" and root.attributes["rlm.label.benchmark_id"] == "b1"
    assert root.attributes["rlm.usage.input_tokens"] > 0 and "gen_ai.usage.input_tokens" not in root.attributes and root.attributes["rlm.sandbox"] == "process"
    # the child run nests under the execution of the step that called rlm_query
    tool = by_id[child.parent_span_id]
    assert tool.operation == "execute_tool" and tool.attributes["rlm.step"] == 1 and tool.parent_span_id == root.span_id
    assert [e.name for e in tool.events] == ["rlm.code", "rlm.output"] and "llm_query_batched" in tool.events[0].attributes["rlm.text"]
    # both batched sub-calls are chat spans under that same execution, with their model and usage
    subs = [s for s in spans if s.attributes.get("rlm.sub_call.kind") == "llm_query_batched"]
    assert len(subs) == 2 and {s.parent_span_id for s in subs} == {tool.span_id}
    assert all(s.name == "chat scripted:sub" and s.kind == "client" and s.attributes["gen_ai.provider.name"] == "scripted"
               and "gen_ai.usage.input_tokens" in s.attributes for s in subs)  # fmt: skip
    # one chat span per root turn, under the run
    turns = [s for s in spans if s.operation == "chat" and "rlm.sub_call.kind" not in s.attributes]
    assert sorted(s.attributes["rlm.step"] for s in turns if s.parent_span_id == root.span_id) == [1, 2, 3]
    # the step whose code raised is an error span; the run still ended well
    failed = next(s for s in spans if s.operation == "execute_tool" and s.attributes["rlm.step"] == 2)
    assert failed.status == "error" and "ZeroDivisionError" in failed.status_message
    for span in spans:
        assert span.start_ns <= span.end_ns
        parent = by_id.get(span.parent_span_id)
        assert span.parent_span_id is None or parent is not None, span.name


def test_ids_are_stable_and_tree_order_puts_parents_first(recorded):
    first, _ = _spans(recorded)
    again, _ = _spans(recorded)
    assert [s.span_id for s in first] == [s.span_id for s in again]
    seen: set[str] = set()
    for span in tree_order(reversed(first)):
        assert span.parent_span_id is None or span.parent_span_id in seen
        seen.add(span.span_id)
    assert len(seen) == len(first)


def test_a_run_without_a_final_event_ends_as_an_error(recorded):
    spans, _ = _spans([e for e in recorded if e.type != "final"])
    runs = [s for s in spans if s.operation == "invoke_agent"]
    assert len(runs) == 2 and all(s.status == "error" and "without a final" in s.status_message for s in runs)


def test_unknown_and_orphan_events_are_ignored():
    builder = SpanBuilder()
    future = RunEvent.model_construct(type="from_the_future", run_id="x", root_run_id="x", data={})
    assert builder.add(future) == []
    assert builder.add(RunEvent(type="step", run_id="never-started", root_run_id="x", data={"step": 1})) == []


def test_the_live_events_change_no_span_and_no_replay(recorded):
    """The live events (issue 33) are ignored by the span tree, ``rlm runs show`` and replay: the same spans, the
    same rendered run, with or without them."""
    from rlm_host.cli.render import render_child, render_step, render_summary
    from rlm_host.event_types import LIVE_EVENT_TYPES
    from rlm_host.trajectory.tree import Replay

    old = [event for event in recorded if event.type not in LIVE_EVENT_TYPES]
    assert len(old) < len(recorded)
    assert _spans(recorded)[0] == _spans(old)[0]
    full, plain = Replay(recorded), Replay(old)
    assert render_summary(full) == render_summary(plain)
    assert [render_step(step) for step in full.steps] == [render_step(step) for step in plain.steps]
    assert [render_child(run) for run in full.runs.values() if run.depth] == \
        [render_child(run) for run in plain.runs.values() if run.depth]  # fmt: skip
