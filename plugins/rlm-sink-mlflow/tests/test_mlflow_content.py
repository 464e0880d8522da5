"""No server: what MLflow is given to show (span inputs, outputs and chat, trace previews, the run's description)
from hand-made ``SpanRecord`` s carrying the host's content attributes; nothing of it with capture off; and the
benchmark parent-run scheme against an in-memory stand-in for ``MlflowClient`` replaying the races."""

from __future__ import annotations

import itertools
import json
from types import SimpleNamespace

from mlflow_server import quiet_home  # noqa: F401

from rlm_host import RunEvent
from rlm_host.sdk.observability import SpanBuilder, SpanEventRecord, SpanRecord, content_policy
from rlm_sink_mlflow.benchmark import BenchmarkRuns
from rlm_sink_mlflow.run_text import run_note
from rlm_sink_mlflow.settings import MlflowSinkSettings
from rlm_sink_mlflow.traces import build_trace

TRACE = "ab" * 16
QUESTION, ANSWER = "What is the capital of France?", "Paris"
SYSTEM, PROMPT, REPLY = "You explore the context with code.", "Find the capital.", "```repl\nprint(capital)\n```"
CODE, OUTPUT = "capital = 'Paris'\nprint(capital)", "Paris\n"


def genai(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def span(part: str, parent, name: str, operation: str, **attributes) -> SpanRecord:
    return SpanRecord(TRACE, part.ljust(16, "0"), parent and parent.ljust(16, "0"), name, "internal", 1_000, 2_000,
                      "run_1", {"gen_ai.operation.name": operation, "rlm.run_id": "run_1", **attributes})


def content_tree() -> list[SpanRecord]:
    """A run span, a root model turn, a failed sub-call and a code step, as the host's builder makes them."""
    run = span("a1", None, "invoke_agent pure_rlm", "invoke_agent", **{
        "rlm.root_run_id": "run_1", "rlm.task": QUESTION, "rlm.final_response": ANSWER,
        "input.value": QUESTION, "input.mime_type": "text/plain", "output.value": ANSWER,
        "output.mime_type": "text/plain"})
    run.status = "ok"
    chat = span("b2", "a1", "chat gpt-x", "chat", **{
        "rlm.purpose": "root_turn", "gen_ai.request.model": "gpt-x", "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.input.messages": json.dumps([genai("system", SYSTEM), genai("user", PROMPT)]),
        "gen_ai.output.messages": json.dumps([{**genai("assistant", REPLY), "finish_reason": "stop"}]),
        "input.value": PROMPT, "output.value": REPLY})
    chat.events.append(SpanEventRecord("rlm.reply", 1_500, {"rlm.text": REPLY}))
    failed = span("c3", "d4", "chat gpt-mini", "chat", **{
        "rlm.purpose": "sub_call", "gen_ai.request.model": "gpt-mini", "error.type": "RateLimitError",
        "gen_ai.input.messages": json.dumps([genai("user", "Classify: a text")]), "input.value": "Classify: a text"})
    failed.status, failed.status_message = "error", "RateLimitError: slow down"
    tool = span("d4", "a1", "execute_tool repl", "execute_tool", **{
        "gen_ai.tool.name": "repl", "gen_ai.tool.call.arguments": json.dumps({"code": CODE}),
        "gen_ai.tool.call.result": OUTPUT, "input.value": CODE, "output.value": OUTPUT})
    tool.events += [SpanEventRecord("rlm.code", 1_600, {"rlm.text": CODE}),
                    SpanEventRecord("rlm.output", 1_900, {"rlm.text": OUTPUT})]
    return [chat, failed, tool, run]


def by_name(spans) -> dict:
    return {s.name: s for s in spans}


def test_spans_show_question_answer_messages_code_and_output():
    info, spans = build_trace(content_tree(), "3", "run-x", {"rlm.root_run_id": "run_1"})
    assert json.loads(info.request_preview) == {"task": QUESTION} and json.loads(info.response_preview) == ANSWER
    named = by_name(spans)
    run, chat = named["invoke_agent pure_rlm"], named["chat gpt-x"]
    assert run.inputs == {"task": QUESTION} and run.outputs == ANSWER and run.span_type == "AGENT"
    assert chat.span_type == "CHAT_MODEL"
    assert chat.inputs == {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]}
    assert chat.outputs == REPLY
    assert chat.get_attribute("mlflow.chat.messages")[-1] == {"role": "assistant", "content": REPLY}
    assert chat.get_attribute("mlflow.chat.tokenUsage") == {"input_tokens": 30, "output_tokens": 7,
                                                            "total_tokens": 37}
    failed = named["chat gpt-mini"]
    assert failed.status.status_code.value == "ERROR" and failed.get_attribute("error.type") == "RateLimitError"
    assert failed.inputs == {"messages": [{"role": "user", "content": "Classify: a text"}]} and failed.outputs is None
    tool = named["execute_tool repl"]
    assert tool.span_type == "TOOL" and tool.inputs == {"code": CODE} and tool.outputs == OUTPUT
    assert [e.name for e in tool.events] == ["rlm.code", "rlm.output"]  # the old events stay


def content_events() -> list[RunEvent]:
    """A run with a root model turn, a failed sub-call whose error quotes its prompt, a code step and an answer."""
    def event(type_: str, ts: float, data: dict, content: dict | None = None) -> RunEvent:
        return RunEvent(type=type_, run_id="run_1", root_run_id="run_1", ts=ts, data=data, content=content)

    call = {"role": "root", "model": "openai:gpt-x", "provider": "openai", "purpose": "turn", "seconds": 0.5,
            "input_tokens": 30, "output_tokens": 7}
    return [event("run_start", 1.0, {"task": QUESTION, "model": "openai:gpt-x", "environment": "pure_rlm"}),
            event("model_call_end", 2.0, {**call, "call": 1},
                  {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}],
                   "reply": REPLY}),
            event("model_call_end", 2.5, {**call, "call": 2, "role": "sub", "purpose": "sub_call",
                                          "error": "ModelError: HTTP 400: cannot read 'Classify: a text'"},
                  {"messages": [{"role": "user", "content": "Classify: a text"}]}),
            event("step", 3.0, {"step": 1, "code": CODE, "reply": REPLY, "duration_s": 2.0,
                                "observation": {"blocks": [{"stdout": OUTPUT}]}}),
            event("final", 4.0, {"completed": True, "final_response": ANSWER, "steps": 1})]


def test_with_capture_off_no_content_leaves():
    builder = SpanBuilder(content=content_policy(MlflowSinkSettings(capture_content=False)))
    info, spans = build_trace([r for e in content_events() for r in builder.add(e)], "3", "run-x", {})
    sent = json.dumps([s.to_dict() for s in spans]) + json.dumps(info.to_dict())
    for text in (QUESTION, ANSWER, SYSTEM, PROMPT, "Classify", "capital", "print"):
        assert text not in sent, text
    assert info.request_preview is None and info.response_preview is None
    assert all(s.inputs is None and s.outputs is None for s in spans)
    named = by_name(spans)
    assert named["chat gpt-x"].get_attribute("gen_ai.usage.input_tokens") == 30  # the rest stays
    failed = next(s for s in spans if s.get_attribute("rlm.role") == "sub")
    assert failed.status.status_code.value == "ERROR" and failed.status.description == "ModelError"


def test_records_with_content_only_in_span_events_still_show_it():
    """The builder's older shape: task/answer attributes, the rest as events (a sub-call's prompt and response)."""
    run = span("a1", None, "invoke_agent pure_rlm", "invoke_agent", **{"rlm.task": QUESTION,
                                                                       "rlm.final_response": ANSWER})
    sub = span("b2", "a1", "chat sub", "chat")
    sub.events += [SpanEventRecord("rlm.prompt", 1_100, {"rlm.text": "Classify: x"}),
                   SpanEventRecord("rlm.response", 1_900, {"rlm.text": "prose"})]
    tool = span("c3", "a1", "execute_tool repl", "execute_tool")
    tool.events.append(SpanEventRecord("rlm.code", 1_600, {"rlm.text": CODE}))
    named = by_name(build_trace([run, sub, tool], "3", None, {})[1])
    assert named["invoke_agent pure_rlm"].inputs == {"task": QUESTION}
    assert named["chat sub"].inputs == {"messages": [{"role": "user", "content": "Classify: x"}]}
    assert named["chat sub"].outputs == "prose" and named["execute_tool repl"].inputs == {"code": CODE}


def test_the_run_description_holds_task_and_answer():
    assert run_note("What is 6*7?", "42") == "**Task:** What is 6\\*7?\n\n**Answer:** 42"  # one line: inline
    note = run_note("Show\n``` fences", "It is ````x````\n")
    assert note.startswith("**Task:**\n\n````text\nShow\n``` fences\n````")
    assert "**Answer:**\n\n`````text\nIt is ````x````\n\n`````" in note
    assert run_note(None, None) is None and "**No answer:** boom" in run_note("t", None, "boom")
    assert len(run_note("x" * 50_000, "y" * 50_000)) < 8000


def test_settings_take_the_content_fields():
    assert content_policy(MlflowSinkSettings(capture_content=False)).capture is False
    assert content_policy(MlflowSinkSettings(content_max_chars=500)).max_chars == 500


class FakeClient:
    """Runs in memory, with MLflow's semantics for what the scheme uses (server-made ids; deleted runs are not
    searched); ``before`` hooks let a test run another process's calls between two of ours."""

    def __init__(self) -> None:
        self.runs: dict[str, SimpleNamespace] = {}
        self.ids = (f"{n:032x}" for n in itertools.count(0xF000, -7))  # not in creation order
        self.before: dict[str, list] = {}

    def _hook(self, name: str) -> None:
        hooks = self.before.get(name) or []
        if hooks:
            hooks.pop(0)()

    def create_run(self, experiment_id, start_time, tags, run_name):
        self._hook("create_run")
        run = SimpleNamespace(info=SimpleNamespace(run_id=next(self.ids), start_time=start_time, lifecycle="active"),
                              data=SimpleNamespace(tags=dict(tags)))
        self.runs[run.info.run_id] = run
        return run

    def search_runs(self, experiments, filter_string, max_results=100, order_by=None):
        self._hook("search_runs")
        key, value = filter_string.split("` = ")
        key, value = key.removeprefix("tags.`"), value.strip("'")
        found = [r for r in self.runs.values() if r.info.lifecycle == "active" and r.data.tags.get(key) == value]
        return sorted(found, key=lambda r: r.info.start_time)

    def delete_run(self, run_id):
        if self.runs[run_id].info.lifecycle == "deleted":
            raise RuntimeError("already deleted")
        self.runs[run_id].info.lifecycle = "deleted"

    def set_tag(self, run_id, key, value):
        self.runs[run_id].data.tags[key] = value

    def root(self, name: str, parent: str) -> str:
        return self.create_run("1", 0, {"rlm.run_id": name, "mlflow.parentRunId": parent}, name).info.run_id

    def active(self) -> list[str]:
        return [r.info.run_id for r in self.runs.values() if r.info.lifecycle == "active" and "rlm.benchmark_id"
                in r.data.tags]


def test_two_processes_that_both_create_a_parent_end_with_one():
    """Both search before either creates; B runs all its steps inside A's (it sees only its own parent and keeps
    it), A then sees both. Whichever way the ids fall, once each root has ended there is one parent left."""
    for start_a, start_b in ((1_000, 1_000), (900, 1_000), (1_000, 900)):
        client = FakeClient()
        a, b = BenchmarkRuns(client, "1"), BenchmarkRuns(client, "1")
        picked_b = {}
        client.before["create_run"] = [lambda: picked_b.setdefault("id", b.parent("B", {}, start_b))]
        picked_a = a.parent("B", {}, start_a)
        assert picked_a == min(b._candidates("B"))[1]  # A, seeing both, took the winner
        root_a, root_b = client.root("root_a", picked_a), client.root("root_b", picked_b["id"])
        a.settle("B", root_a, picked_a)
        b.settle("B", root_b, picked_b["id"])
        assert len(client.active()) == 1, (start_a, start_b)
        assert {client.runs[r].data.tags["mlflow.parentRunId"] for r in (root_a, root_b)} == set(client.active())


def test_a_parent_that_appears_after_a_process_looked_is_merged_when_a_root_ends():
    """Process A saw only its own parent and nested a root under it; B's parent (earlier start time) appeared
    after A's second search: B keeps its own. At A's root end, A's root moves under B's parent and A's goes."""
    client = FakeClient()
    a, b = BenchmarkRuns(client, "1"), BenchmarkRuns(client, "1")
    client.before["search_runs"] = [lambda: None]
    picked_a = a.parent("B", {}, 2_000)
    root_a = client.root("root_a", picked_a)
    client.before["search_runs"] = []
    client.before["create_run"] = []
    # b searched before a's parent existed (replayed: b creates without looking), then looks again: sees both
    b_run = client.create_run("1", 1_000, {"rlm.benchmark_id": "B"}, "benchmark B").info.run_id
    assert min(b._candidates("B"))[1] == b_run
    root_b = client.root("root_b", b_run)
    assert len(client.active()) == 2
    winner = a.settle("B", root_a, picked_a)
    assert winner == b_run and client.active() == [b_run]
    assert client.runs[root_a].data.tags["mlflow.parentRunId"] == b_run
    assert client.runs[root_b].data.tags["mlflow.parentRunId"] == b_run
    assert b.settle("B", root_b, b_run) == b_run and client.active() == [b_run]
