"""The live events: what is in progress, in order, in the trajectory; typed payloads; the filter."""

from __future__ import annotations

import pytest

from rlm_host.event_types import (LIVE_EVENT_TYPES, ChildRunEnd, CodeEnd, CodeStart, ModelCallEnd, ModelCallStart,
                                  StepStart, SubCallStart)
from rlm_host.events import EventBus, RunEvent
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.plugins.host import PluginHost
from rlm_host.results import RunResult, StepRecord
from rlm_host.testing.engine import isolated_runner, trajectory
from rlm_host.testing.engine import run_scripted as run

LIVE = {"step_start", "model_call_start", "model_call_end", "code_start", "code_end", "sub_call_start",
        "child_run_start", "child_run_end"}


def test_the_live_types_are_the_typed_ones():
    assert LIVE == LIVE_EVENT_TYPES


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return isolated_runner(tmp_path, sandbox="process")


def _types(result, depth=0):
    return [e["type"] for e in trajectory(result) if e["depth"] == depth]


def test_native_loop_with_code_and_a_sub_call_in_order(runner):
    code = "```repl\nx = llm_query('Say hi')\nprint(x)\n```"
    result, events, _ = run(runner, "q", [code, "FINAL_VAR(x)"], sub_rules=[{"match": "Say hi", "text": "hi"}],
                            context="c")
    assert result.final_response == "hi"
    assert _types(result) == [
        "run_start",
        "step_start", "model_call_start", "model_call_end",
        "code_start", "sub_call_start", "model_call_start", "model_call_end", "sub_call", "code_end", "step",
        "step_start", "model_call_start", "model_call_end", "step",
        "final",
    ]
    assert [e.type for e in events] == _types(result)  # on_event and the trajectory see the same stream
    # the old events are as they were: the same sequence once the live ones are left out
    assert [t for t in _types(result) if t not in LIVE] == ["run_start", "sub_call", "step", "step", "final"]
    by_type = {}
    for event in events:
        by_type.setdefault(event.type, []).append(event)
    assert by_type["step_start"][1].payload() == StepStart(step=2)
    root_start, root_end, sub_start, sub_end = (by_type["model_call_start"][0], by_type["model_call_end"][0],
                                                by_type["model_call_start"][1],
                                                by_type["model_call_end"][1])
    assert isinstance(root_start.payload(), ModelCallStart) and isinstance(root_end.payload(), ModelCallEnd)
    assert root_start.data["call"] == root_end.data["call"] != sub_start.data["call"] == sub_end.data["call"]
    ended = root_end.payload()
    assert (ended.role, ended.purpose, ended.model) == ("root", "turn", "scripted:root")
    assert (sub_end.payload().role, sub_end.payload().purpose) == ("sub", "sub_call")
    assert root_end.payload().output_tokens > 0 and root_end.payload().error is None and root_end.payload().seconds >= 0
    assert root_start.operation == root_end.operation == "chat"
    code_start, code_end = by_type["code_start"][0].payload(), by_type["code_end"][0].payload()
    assert isinstance(code_start, CodeStart) and isinstance(code_end, CodeEnd)
    assert (code_start.step, code_start.block, code_start.code) == (1, 1, "x = llm_query('Say hi')\nprint(x)\n")
    assert code_end.call == code_start.call and code_end.ok and not code_end.final
    assert "stdout" not in by_type["code_end"][0].data
    sub_call_start = by_type["sub_call_start"][0].payload()
    assert isinstance(sub_call_start, SubCallStart) and sub_call_start.kind == "llm_query"
    assert sub_call_start.prompt_hash == by_type["sub_call"][0].data["prompt_hash"]
    assert isinstance(by_type["step"][0].payload(), StepRecord) and isinstance(by_type["final"][0].payload(), RunResult)
    assert by_type["run_start"][0].payload() is None


def test_failed_code_and_a_failed_model_call_say_so(runner):
    failing = ScriptedConnector.from_responses(["```repl\n1/0\n```"], name="scripted:root")
    events = []
    runner.run_task("q", context="c", connectors={"root": failing}, on_event=events.append, max_steps=2)
    code_end = next(e.payload() for e in events if e.type == "code_end")
    assert not code_end.ok and code_end.error.startswith("ZeroDivisionError")
    ends = [e.payload() for e in events if e.type == "model_call_end"]
    assert ends[-1].error  # the script ran out: the second turn's call failed
    starts = [e.data["call"] for e in events if e.type == "model_call_start"]
    assert starts == [e.call for e in ends]


def test_child_run_is_bracketed_in_its_parent(runner):
    parent_code = "```repl\nr = rlm_query('Count the words', context='a b c')\nprint(r)\nFINAL_VAR('r')\n```"
    child_reply = "```repl\nFINAL(str(len(context.split())))\n```"
    root = ScriptedConnector.from_responses([parent_code], rules=[{"match": "Count the words", "text": child_reply}])
    events = []
    result = runner.run_task("q", context="ctx", sandbox="process", connectors={"root": root}, on_event=events.append)
    assert result.final_response == "3"
    seq = [(e.depth, e.type) for e in events]
    start = seq.index((0, "child_run_start"))
    assert seq[start - 1] == (0, "sub_call_start") and seq[start + 1] == (1, "run_start")
    end = seq.index((0, "child_run_end"))
    assert seq[end - 1] == (1, "final") and seq[end + 1] == (0, "sub_call")
    assert [t for d, t in seq[start + 1:end]][:4] == ["run_start", "step_start", "model_call_start", "model_call_end"]
    child_start, child_end = events[start].payload(), events[end].payload()
    child_final = next(e for e in events if e.type == "final" and e.depth == 1)
    assert child_start.child_run_id == child_end.child_run_id == child_final.run_id
    assert child_start.depth == 1 and child_start.task == "Count the words"
    assert isinstance(child_end, ChildRunEnd) and child_end.completed and child_end.termination_reason == "final"
    assert events[start].operation == "invoke_agent" and events[start - 1].operation == "invoke_agent"
    assert {e["type"] for e in trajectory(result)} >= LIVE


def test_rlm_query_at_max_depth_announces_one_sub_call(runner):
    code = "```repl\nr = rlm_query('sub question')\nFINAL_VAR('r')\n```"
    result, events, _ = run(runner, "q", [code], sub_rules=[{"match": "sub question", "text": "plain"}], context="c",
                            max_depth=0)
    assert [e.data["kind"] for e in events if e.type == "sub_call_start"] == ["rlm_query"]
    assert [e.data["kind"] for e in events if e.type == "sub_call"] == ["rlm_query(max_depth: plain llm_query)"]


def test_the_filter_delivers_only_the_asked_types(runner):
    root = ScriptedConnector.from_responses(["```repl\nprint(1)\n```", "FINAL(done)"], name="scripted:root")
    events = []
    result = runner.run_task("q", context="c", connectors={"root": root}, on_event=events.append,
                             event_types={"step", "model_call_start"})
    assert [e.type for e in events] == ["model_call_start", "step", "model_call_start", "step"]
    assert "code_start" in _types(result)  # the trajectory still has every event
    with pytest.raises(ValueError, match="unknown event type"):
        runner.run_task("q", connectors={"root": root}, on_event=events.append, event_types={"stepp"})


def test_bus_filter_and_unfiltered_subscribers():
    bus, every, steps = EventBus(), [], []
    bus.subscribe("every", every.append)
    bus.subscribe("steps", steps.append, types=["step_start"])
    for type_ in ("run_start", "step_start", "code_start", "step_start"):
        bus.emit(RunEvent(type=type_, run_id="r", root_run_id="r", data={"step": 1} if type_ == "step_start" else {}))
    assert [e.type for e in every] == ["run_start", "step_start", "code_start", "step_start"]
    assert [e.type for e in steps] == ["step_start", "step_start"]
    with pytest.raises(ValueError):
        bus.subscribe("bad", steps.append, types=["nope"])


def test_api_completion_and_stream_filter(rlm_isolated):
    from rlm_host import RLM

    def rlm():
        root = ScriptedConnector.from_responses(["```repl\nprint(1)\n```", "FINAL(done)"], name="scripted:root")
        return RLM(connectors={"root": root}, sandbox="process")

    seen = []
    result = rlm().completion("ctx", "q", on_event=seen.append, event_types={"code_start", "code_end"})
    assert result.final_response == "done" and [e.type for e in seen] == ["code_start", "code_end"]
    stream = rlm().stream("ctx", "q", event_types=["step_start", "final"])
    assert [e.type for e in stream] == ["step_start", "step_start", "final"]
    with pytest.raises(ValueError):
        rlm().stream("ctx", "q", event_types=["nope"])


def test_framework_run_code_is_bracketed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    host = PluginHost(environ={"RLM_PLUGINS": "", "RLM_PLUGIN_MODULES": "support.echo_framework"})
    runner = isolated_runner(tmp_path, sandbox="process", host=host)
    root = ScriptedConnector.from_responses(["print(1)", "ANSWER: done"], name="scripted:root")
    events = []
    result = runner.run_task("q", context="c", framework="echo", connectors={"root": root}, on_event=events.append)
    assert result.final_response == "done"
    assert [t for t in _types(result)] == [
        "run_start", "step_start", "model_call_start", "model_call_end", "code_start", "code_end", "step",
        "step_start", "model_call_start", "model_call_end", "step", "final",
    ]
    assert [e.data["step"] for e in events if e.type == "step_start"] == [1, 2]  # the step its first turn begins
    code_start = next(e.payload() for e in events if e.type == "code_start")
    assert (code_start.step, code_start.block, code_start.code) == (None, None, "print(1)")


def test_the_live_view_shows_what_is_in_progress():
    from rlm_host.cli.live import LiveView

    view = LiveView()

    def event(type_, **data):
        view(RunEvent(type=type_, run_id="r", root_run_id="r", data=data))
        return str(view.spinner._line())

    assert event("code_start", call=1, code="x").endswith("running code…")
    assert event("model_call_start", call=2, role="sub", model="m1", provider="p", purpose="sub_call").endswith(
        "waiting for m1…")
    assert event("model_call_end", call=2, role="sub", model="m1", provider="p", purpose="sub_call",
                 seconds=0.1).endswith("running code…")
    assert event("code_end", call=1, ok=True, seconds=0.1).endswith("tokens so far")


def test_the_trajectory_writes_a_live_event_with_the_next_one_or_alone_soon_after_or_at_close(tmp_path):
    """A live event costs no write of its own when another follows, yet shows in the file within HOLD_SECONDS when
    none does (a long model call: a live view in another process sees it), and is never lost at close."""
    import time

    from rlm_host.trajectory.store import HOLD_SECONDS, TrajectoryWriter

    writer = TrajectoryWriter(tmp_path, "run_a")

    def emit(type_, **data):
        writer(RunEvent(type=type_, run_id="run_a", root_run_id="run_a", data=data))
        return [line for line in writer.path.read_text().splitlines()]

    assert emit("step_start", step=1) == []  # a model call follows at once: written with it
    assert emit("model_call_start", call=1, role="root", model="m", provider="p", purpose="turn") == []
    time.sleep(HOLD_SECONDS * 6)  # the call goes on: the two are written alone
    assert [RunEvent.model_validate_json(line).type for line in writer.path.read_text().splitlines()] == [
        "step_start", "model_call_start"]
    assert len(emit("model_call_end", call=1, role="root", model="m", provider="p", purpose="turn", seconds=0)) == 2
    assert len(emit("step", step=1)) == 4  # written with the held end, in order
    emit("code_start", call=2, code="x")
    writer.close()  # a run that died there: the held event is not lost
    assert [RunEvent.model_validate_json(line).type for line in writer.path.read_text().splitlines()] == [
        "step_start", "model_call_start", "model_call_end", "step", "code_start"]
