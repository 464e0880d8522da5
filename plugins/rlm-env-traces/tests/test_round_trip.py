"""The round trip: a real ``rlm run`` recorded by rlm's own ``otel`` sink (file exporter, OTLP/JSON lines), read
back by this plugin — the span kinds and the span events (a step's code and its output) are visible through
``TraceStore``'s views, ``rlm traces view`` / ``search``, and runs of ``--env traces`` and ``--env traces-repl``
over that file. Skipped when rlm-sink-otel is not installed."""

import importlib.util
import json
from pathlib import Path

import pytest
from rlm_host.sdk.observability import trace_id_for

from rlm_env_traces.store import TraceStore

pytestmark = pytest.mark.skipif(importlib.util.find_spec("rlm_sink_otel") is None,
                                reason="rlm-sink-otel is not installed")

SINK, TRACES = "rlm-sink-otel", "rlm-env-traces"
# the step's code prints a line found nowhere else (not in the code, the task or the context)
CODE = 'print("the step", "says", 6 * 7)'
OUTPUT = "the step says 42"


def _steps(run: dict) -> list[dict]:
    events = [json.loads(line) for line in open(run["trajectory_path"])]
    return [e["data"] for e in events if e["type"] == "step"]


@pytest.fixture
def recorded(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    """A scripted run (one code step, then FINAL) recorded by the otel sink's file exporter: (file, run)."""
    path = rlm_isolated.work / "observability" / "otel-traces.jsonl"
    monkeypatch.setenv("RLM_SINK__OTEL__EXPORTER", "file")
    monkeypatch.setenv("RLM_SINK__OTEL__PATH", str(path))
    monkeypatch.setenv("RLM_SINK__OTEL__CAPTURE_CONTENT", "true")  # code and output are content
    model = rlm_script([f"```repl\n{CODE}\n```", "FINAL(42)"])
    Path("notes.txt").write_text("a context of a few words")
    result = rlm_cli("run", "What does the step say?", "--context", "notes.txt", "--model", model, "--sink", "otel",
                     "--sandbox", "process", "--json", plugins=SINK)
    assert result.code == 0, result.err
    run = json.loads(result.out)
    assert run["final_response"] == "42"
    monkeypatch.delenv("RLM_SINK__OTEL__EXPORTER")
    monkeypatch.delenv("RLM_SINK__OTEL__PATH")
    monkeypatch.delenv("RLM_SINK__OTEL__CAPTURE_CONTENT")
    assert path.is_file(), "the sink has written its file by the time the command returns"
    return path, run


def _assert_kinds_and_events(spans: list[dict]) -> dict[str, dict]:
    """The run's spans carry their kinds and events: the code step's code and output."""
    by_name = {}
    for span in spans:
        by_name.setdefault(span["name"].split()[0], []).append(span)
    assert set(by_name) >= {"invoke_agent", "chat", "execute_tool"}, sorted(by_name)
    assert all(s["kind"] == "CLIENT" for s in by_name["chat"]), "a model call is a client span"
    assert all(s["kind"] == "INTERNAL" for s in by_name["invoke_agent"] + by_name["execute_tool"])
    (tool,) = by_name["execute_tool"]
    events = {e["name"]: e for e in tool["events"]}
    assert events["rlm.code"]["attributes"]["rlm.text"].strip() == CODE
    assert events["rlm.output"]["attributes"]["rlm.text"].strip() == OUTPUT
    assert all(isinstance(e["time"], int) and e["time"] >= tool["start_time"] for e in tool["events"])
    replies = [e for s in by_name["chat"] for e in s.get("events", []) if e["name"] == "rlm.reply"]
    assert all(isinstance(e["attributes"].get("rlm.text"), str) for e in replies)  # where the sink adds them
    assert "events_left_out" not in tool
    return tool


def test_the_store_shows_the_kinds_and_events_our_sink_wrote(recorded):
    path, run = recorded
    store = TraceStore.load(path)
    overview = store.get_overview()
    trace_id = trace_id_for(run["run_id"])
    assert overview["sample_trace_ids"] == [trace_id] and overview["malformed_lines"] == 0
    tool = _assert_kinds_and_events(store.view_trace(trace_id)["spans"])
    (shown,) = store.view_spans(trace_id, [tool["span_id"]])["spans"]
    assert shown["kind"] == "INTERNAL" and [e["name"] for e in shown["events"]] == ["rlm.code", "rlm.output"]
    # the printed line is in the output event (and, with content capture on, in the next chat's input)
    found = {m["span_id"]: m for m in store.search_trace(trace_id, OUTPUT)["matches"]}
    assert found[tool["span_id"]]["kind"] == "INTERNAL" and OUTPUT in found[tool["span_id"]]["snippet"]


def test_the_content_attributes_come_back_whole(recorded):
    """What the sink writes where backends look — ``input.value`` / ``output.value``, the GenAI messages, a tool
    call's arguments and result — is read back as it was written (attributes are kept whole up to the views'
    caps)."""
    path, run = recorded
    spans = TraceStore.load(path).view_trace(trace_id_for(run["run_id"]))["spans"]
    (agent,) = [s for s in spans if s["name"].startswith("invoke_agent")]
    (tool,) = [s for s in spans if s["name"].startswith("execute_tool")]
    chats = [s for s in spans if s["name"].startswith("chat")]
    assert agent["attributes"]["input.value"] == "What does the step say?"
    assert agent["attributes"]["output.value"] == "42"
    assert json.loads(tool["attributes"]["gen_ai.tool.call.arguments"])["code"].strip() == CODE
    result, output = tool["attributes"]["gen_ai.tool.call.result"], tool["attributes"]["output.value"]
    assert result.strip() == output.strip() == OUTPUT
    replies = [json.loads(c["attributes"]["gen_ai.output.messages"])[0]["parts"][0]["content"] for c in chats]
    assert replies == [f"```repl\n{CODE}\n```", "FINAL(42)"]
    assert all(json.loads(c["attributes"]["gen_ai.input.messages"])[0]["role"] == "system" for c in chats)


def test_rlm_traces_view_and_search_show_them(rlm_cli, recorded):
    path, run = recorded
    trace_id = trace_id_for(run["run_id"])
    view = rlm_cli("traces", "view", str(path), trace_id[:8], plugins=TRACES)
    assert view.code == 0, view.err
    tool = _assert_kinds_and_events(json.loads(view.out)["spans"])
    search = rlm_cli("traces", "search", str(path), trace_id, "rlm.output", "--json", plugins=TRACES)
    assert search.code == 0, search.err
    found = {m["span_id"]: m for m in json.loads(search.out)["matches"]}
    assert found[tool["span_id"]]["kind"] == "INTERNAL" and "rlm.output" in found[tool["span_id"]]["snippet"]


def test_a_traces_run_over_our_file_sees_kinds_and_events(rlm_cli, rlm_script, recorded):
    """The environment's own actions (``--env traces``): view_trace, view_spans and search_trace observations."""
    path, run = recorded
    trace_id = trace_id_for(run["run_id"])
    tool_id = next(s["span_id"] for s in TraceStore.load(path).view_trace(trace_id)["spans"]
                   if s["name"].startswith("execute_tool"))
    actions = [{"action": "view_trace", "trace_id": trace_id},
               {"action": "view_spans", "trace_id": trace_id, "span_ids": [tool_id]},
               {"action": "search_trace", "trace_id": trace_id, "pattern": OUTPUT},
               {"action": "final", "final_response": "the step says 42"}]
    model = rlm_script([json.dumps(action) for action in actions])
    result = rlm_cli("run", "What did the step print?", "--env", "traces", "--context", str(path), "--model", model,
                     "--max-steps", "4", "--json", plugins=TRACES)
    assert result.code == 0, result.err
    steps = _steps(json.loads(result.out))
    assert [s["action"] for s in steps] == ["view_trace", "view_spans", "search_trace", "final"]
    view, spans, search = (s["observation"]["result"] for s in steps[:3])
    _assert_kinds_and_events(view["spans"])
    assert [e["attributes"]["rlm.text"].strip() for e in spans["spans"][0]["events"]] == [CODE, OUTPUT]
    assert tool_id in {m["span_id"] for m in search["matches"]}


def test_a_repl_run_over_our_file_prints_kinds_and_events(rlm_cli, rlm_script, recorded):
    """Full visibility end to end: a model's code in ``--env traces-repl`` calls the views and prints what they
    show, and the step's output holds the kinds and the events' text."""
    path, _ = recorded
    code = ("t = view_trace(trace_overview()['sample_trace_ids'][0])\n"
            "for s in t['spans']:\n"
            "    print(s['name'].split()[0], s.get('kind'), [e['name'] for e in s.get('events', [])])\n"
            "tool = [s for s in t['spans'] if s['name'].startswith('execute_tool')][0]\n"
            "shown = view_spans(t['trace_id'], [tool['span_id']])['spans'][0]\n"
            "for e in shown['events']:\n"
            "    print('EVENT', e['name'], repr(e['attributes']['rlm.text']))\n"
            "print('FOUND', [m['kind'] for m in search_trace(t['trace_id'], 'rlm.output')['matches']\n"
            "                if m['span_id'] == tool['span_id']])")
    model = rlm_script([f"```repl\n{code}\n```", "FINAL(seen)"])
    result = rlm_cli("run", "What ran?", "--env", "traces-repl", "--context", str(path), "--model", model,
                     "--sandbox", "process", "--json", plugins=TRACES)
    assert result.code == 0, result.err
    step = _steps(json.loads(result.out))[0]
    stdout = "".join(block["stdout"] for block in step["observation"]["blocks"])
    lines = stdout.splitlines()
    assert "invoke_agent INTERNAL []" in lines
    assert "execute_tool INTERNAL ['rlm.code', 'rlm.output']" in lines
    assert sum(line.startswith("chat CLIENT ") for line in lines) == 2, "the two model calls"
    assert f"EVENT rlm.code {CODE + chr(10)!r}" in lines and f"EVENT rlm.output {OUTPUT + chr(10)!r}" in lines
    assert "FOUND ['INTERNAL']" in lines


def test_the_default_file_of_a_project_config_reads_back(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    """``[sink.otel] exporter = "file"`` in a project's rlm.toml, no path: the run home's
    ``observability/otel-traces.jsonl``, which ``rlm traces view`` reads with its kinds and events."""
    (rlm_isolated.work / "rlm.toml").write_text('[run]\nsinks = ["otel"]\n\n[sink.otel]\nexporter = "file"\n'
                                                "capture_content = true\n")
    monkeypatch.setenv("RLM_TRUST_CONFIG", "1")
    model = rlm_script([f"```repl\n{CODE}\n```", "FINAL(42)"])
    result = rlm_cli("run", "What does the step say?", "--model", model, "--sandbox", "process", "--json",
                     plugins=f"{SINK},{TRACES}")
    assert result.code == 0, result.err
    run = json.loads(result.out)
    path = rlm_isolated.runs / "observability" / "otel-traces.jsonl"  # the run home's
    assert [path] == list(rlm_isolated.work.rglob("otel-traces.jsonl"))
    view = rlm_cli("traces", "view", str(path), trace_id_for(run["run_id"]), plugins=TRACES)
    assert view.code == 0, view.err
    _assert_kinds_and_events(json.loads(view.out)["spans"])
