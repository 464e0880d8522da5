"""The span tree every OpenTelemetry-shaped sink sends (rlm_host.observability.spans): GenAI convention names, a
child run nested under the code execution that called it, sub-calls under their execution, stable ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_host.sdk.observability import ContentPolicy, SpanBuilder, trace_id_for, tree_order
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
                                     labels={"benchmark_id": "b1"})
    assert result.completed, result.error
    return events


CAPTURE = ContentPolicy(capture=True)


def _spans(events):
    builder = SpanBuilder(content=CAPTURE)
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
    assert root.attributes["rlm.usage.input_tokens"] > 0 and "gen_ai.usage.input_tokens" not in root.attributes
    assert root.attributes["rlm.sandbox"] == "process"
    # the child run nests under the execution of the step that called rlm_query
    tool = by_id[child.parent_span_id]
    assert tool.operation == "execute_tool" and tool.attributes["rlm.step"] == 1 and tool.parent_span_id == root.span_id
    assert [e.name for e in tool.events] == ["rlm.code", "rlm.output", "rlm.sub_call", "rlm.sub_call"]
    assert "llm_query_batched" in tool.events[0].attributes["rlm.text"]
    assert tool.events[2].attributes["rlm.sub_call.kind"] == "llm_query_batched"
    assert "llm_query_batched" in tool.attributes["input.value"]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"])["code"].startswith("parts")
    assert tool.attributes["openinference.span.kind"] == "TOOL"
    # both batched sub-calls are chat spans (one per model call) under that same execution, with model and usage
    subs = [s for s in spans if s.attributes.get("rlm.purpose") == "sub_call" and s.parent_span_id == tool.span_id]
    assert len(subs) == 2
    assert all(s.name == "chat sub" and s.kind == "client" and s.attributes["gen_ai.provider.name"] == "scripted"
               and s.attributes["gen_ai.request.model"] == "sub" and s.attributes["rlm.model"] == "scripted:sub"
               and "gen_ai.usage.input_tokens" in s.attributes and s.attributes["output.value"] == "yes"
               for s in subs)
    asked = sorted(json.loads(s.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"] for s in subs)
    assert asked == ["one?", "two?"]
    # one chat span per root turn, under the run, with the messages sent and the reply
    turns = [s for s in spans if s.attributes.get("rlm.purpose") == "turn" and s.parent_span_id == root.span_id]
    assert sorted(s.attributes["rlm.step"] for s in turns) == [1, 2, 3]
    sent = json.loads(turns[-1].attributes["gen_ai.input.messages"])
    assert sent[0]["role"] == "system" and sent[-1]["role"] == "user"
    assert turns[-1].attributes["output.value"] == "FINAL(42)"
    assert root.attributes["input.value"] == "What?" and root.attributes["output.value"] == "42"
    assert root.attributes["openinference.span.kind"] == "AGENT"
    # the step whose code raised is an error span; the run still ended well
    failed = next(s for s in spans if s.operation == "execute_tool" and s.attributes["rlm.step"] == 2)
    assert failed.status == "error" and "ZeroDivisionError" in failed.status_message
    for span in spans:
        assert span.start_ns <= span.end_ns
        parent = by_id.get(span.parent_span_id)
        assert span.parent_span_id is None or parent is not None, span.name
        assert parent is None or parent.start_ns <= span.start_ns, (parent.name, span.name)  # a timeline reads right


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
    builder = SpanBuilder(content=CAPTURE)
    future = RunEvent.model_construct(type="from_the_future", run_id="x", root_run_id="x", data={})
    assert builder.add(future) == []
    assert builder.add(RunEvent(type="step", run_id="never-started", root_run_id="x", data={"step": 1})) == []


def test_a_trajectory_without_model_call_events_still_gives_every_model_span(recorded):
    """A trajectory recorded before the live events existed has no model_call_end: the tree falls back
    to one chat span per root turn and per sub-call, from the step and sub_call events; replay and ``rlm runs
    show`` render the same run with or without the live events."""
    from rlm_runs.render import render_child, render_step, render_summary
    from rlm_host.event_types import LIVE_EVENT_TYPES
    from rlm_host.trajectory.tree import Replay

    old = [event for event in recorded if event.type not in LIVE_EVENT_TYPES]
    assert len(old) < len(recorded)
    spans, new = _spans(old)[0], _spans(recorded)[0]
    chats = [s for s in spans if s.operation == "chat"]
    assert len(chats) == len([s for s in new if s.operation == "chat"])
    assert {s.attributes.get("rlm.sub_call.kind") for s in chats} >= {"llm_query_batched"}
    assert [s.span_id for s in spans if s.operation != "chat"] == [s.span_id for s in new if s.operation != "chat"]
    full, plain = Replay(recorded), Replay(old)
    assert render_summary(full) == render_summary(plain)
    assert [render_step(step) for step in full.steps] == [render_step(step) for step in plain.steps]
    assert [render_child(run) for run in full.runs.values() if run.depth] == \
        [render_child(run) for run in plain.runs.values() if run.depth]


def test_a_failed_model_call_is_an_error_span_and_content_can_be_turned_off():
    def events():
        yield RunEvent(type="run_start", run_id="r", root_run_id="r", ts=1.0,
                       data={"task": "the question sk-secret", "model": "openai:gpt-4o", "provider": "openai"})
        yield RunEvent(type="model_call_end", run_id="r", root_run_id="r", ts=3.0,
                       data={"call": 7, "role": "root", "model": "openai:gpt-4o", "provider": "openai",
                             "purpose": "turn",
                             "seconds": 1.5, "error": "ProviderError: HTTP 503 Service Unavailable"},
                       content={"messages": [{"role": "user", "content": "hello"}]})
        yield RunEvent(type="final", run_id="r", root_run_id="r", ts=4.0,
                       data={"completed": False, "error": "the provider failed", "termination_reason": "error"})

    spans, _ = _spans(events())
    chat = next(s for s in spans if s.operation == "chat")
    assert chat.name == "chat gpt-4o" and chat.status == "error" and chat.attributes["error.type"] == "ProviderError"
    assert chat.attributes["gen_ai.request.model"] == "gpt-4o" and chat.end_ns - chat.start_ns == 1_500_000_000
    assert "hello" in chat.attributes["gen_ai.input.messages"] and "output.value" not in chat.attributes
    builder = SpanBuilder(content=ContentPolicy(capture=False))
    quiet = [span for event in events() for span in builder.add(event)]
    texts = json.dumps([s.attributes for s in quiet] + [[e.attributes for e in s.events] for s in quiet])
    assert "question" not in texts and "hello" not in texts and "input.value" not in texts
    assert all(s.attributes["gen_ai.request.model"] == "gpt-4o" for s in quiet)


def test_content_is_capped_and_keeps_the_system_message_and_the_latest_turns():
    policy = ContentPolicy(capture=True, max_chars=2_000)
    messages = [{"role": "system", "content": "S" * 5_000}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"turn {i} " + "x" * 400} for i in range(40)]
    kept = json.loads(policy.messages(messages))
    assert kept[0]["role"] == "system" and len(kept[0]["parts"][0]["content"]) < 1_000
    assert "left out" in kept[1]["parts"][0]["content"] and kept[-1]["parts"][0]["content"].startswith("turn 39")
    assert len(json.dumps(kept)) < 3_000
    assert len(policy.text("y" * 100_000)) < 2_100


def test_content_never_carries_a_known_secret_and_a_huge_message_costs_its_cap():
    """The model, its code and the task are hostile: a key they echo is scrubbed from every content attribute, and
    a 20 MB reply or message list is cut to the cap before it is encoded."""
    import time

    from rlm_host.redact import register

    secret = "sk-live-7f3a9c2b5d8e1f4a6b0c"
    register(secret)
    huge = "x" * 20_000_000
    events = [
        RunEvent(type="run_start", run_id="s", root_run_id="s", ts=1.0, data={"task": f"use {secret}", "model": "m:m"}),
        RunEvent(type="model_call_end", run_id="s", root_run_id="s", ts=2.0,
                 data={"call": 1, "role": "root", "model": "m:m", "provider": "m", "purpose": "turn", "seconds": 0.5},
                 content={"messages": [{"role": "system", "content": f"key={secret}"},
                                       {"role": "user", "content": huge}],
                          "reply": f"```repl\nprint('{secret}')\n```" + huge}),
        RunEvent(type="step", run_id="s", root_run_id="s", ts=3.0,
                 data={"step": 1, "code": f"print('{secret}')", "observation": {"blocks": [{"stdout": secret}]},
                       "duration_s": 2.0}),
        RunEvent(type="final", run_id="s", root_run_id="s", ts=4.0, data={"completed": True, "final_response": secret}),
    ]
    started = time.monotonic()
    spans, _ = _spans(events)
    assert time.monotonic() - started < 2.0
    dumped = json.dumps([s.attributes for s in spans] + [[e.attributes for e in s.events] for s in spans])
    assert secret not in dumped and "***" in dumped
    assert all(len(str(v)) <= 17_000 for s in spans for v in s.attributes.values())
