"""End to end through ``rlm run``: the ``otel`` sink named in ``[run] sinks`` sends a scripted run's tree to a
receiver and to an OTLP-JSON file, and rlm-env-traces reads that file back (the round trip)."""

from __future__ import annotations

import json
from pathlib import Path

from otel_support import PLUGIN, assert_run_tree
from rlm_host import RunEvent
from rlm_host.sdk.observability import model_name, trace_id_for
from rlm_sink_otel.testing import OTLPReceiver, decode_trace_body

REPLIES = ["```repl\nx = llm_query('a question')\nprint(x)\n```", "FINAL(42)"]


def _events(trajectory: str) -> list[RunEvent]:
    return [RunEvent.model_validate_json(line) for line in Path(trajectory).read_text().splitlines() if line.strip()]


def _run(rlm_cli, rlm_script, monkeypatch, plugins: str = PLUGIN, **environ: str):
    monkeypatch.setenv("RLM_RUN__SINKS", '["otel"]')
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    model = rlm_script(REPLIES, rules=[{"match": "a question", "text": "an answer"}])
    Path("notes.txt").write_text("a context of a few words")
    result = rlm_cli("run", "What?", "--context", "notes.txt", "--model", model, "--sandbox", "process", "--json",
                     plugins=plugins)
    assert result.code == 0, result.err
    run = json.loads(result.out)
    return run, _events(run["trajectory_path"]), result


def _file_spans(path: Path) -> list[dict]:
    return [s for line in path.read_text().splitlines() for s in decode_trace_body(line.encode(), "application/json")]


def test_rlm_run_sends_its_spans_over_otlp_http(rlm_cli, rlm_script, monkeypatch):
    with OTLPReceiver() as receiver:
        run, events, result = _run(rlm_cli, rlm_script, monkeypatch, RLM_SINK__OTEL__ENDPOINT=receiver.traces_url)
        spans = receiver.wait_for_spans(4)
    agents = assert_run_tree(spans, events)
    agent = agents[run["run_id"]]["attributes"]
    assert agent["rlm.final_response"] == "42" and agent["output.value"] == "42"
    assert agent["input.value"] == run["task"] and agent["openinference.span.kind"] == "AGENT"
    sub = [s for s in spans if s["attributes"].get("rlm.purpose") == "sub_call"]
    assert len(sub) == 1 and sub[0]["attributes"]["openinference.span.kind"] == "LLM"
    sent = json.loads(sub[0]["attributes"]["gen_ai.input.messages"])
    assert sent[0]["role"] == "user" and sent[0]["parts"][0]["type"] == "text"
    reply = json.loads(sub[0]["attributes"]["gen_ai.output.messages"])
    assert reply[0]["role"] == "assistant" and reply[0]["parts"][0]["content"] == sub[0]["attributes"]["output.value"]
    tool = next(s for s in spans if s["name"] == "execute_tool repl")
    assert "code" in json.loads(tool["attributes"]["gen_ai.tool.call.arguments"])
    assert "gen_ai.tool.call.result" in tool["attributes"]
    assert "otel" not in result.err  # no warning


def test_rlm_run_writes_otlp_json_lines(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    path = rlm_isolated.work / "traces" / "otel.jsonl"
    run, events, _ = _run(rlm_cli, rlm_script, monkeypatch, RLM_SINK__OTEL__EXPORTER="file",
                          RLM_SINK__OTEL__PATH=str(path), RLM_SINK__OTEL__SERVICE_NAME="rlm")
    # one batch per time the host's worker caught up with the run (it calls the sink's flush() then)
    assert 1 <= len(path.read_text().splitlines()) <= len(_file_spans(path))
    assert_run_tree(_file_spans(path), events)
    assert {s["trace_id"] for s in _file_spans(path)} == {trace_id_for(run["run_id"])}


def test_a_down_backend_does_not_fail_the_run(rlm_cli, rlm_script, monkeypatch):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run, _, result = _run(rlm_cli, rlm_script, monkeypatch, RLM_SINK__OTEL__TIMEOUT="0.5",
                          RLM_SINK__OTEL__ENDPOINT=f"http://127.0.0.1:{port}/v1/traces")
    assert run["final_response"] == "42"
    assert result.err.count("otel sink: could not export") == 1 and "Connection refused" in result.err, result.err


def test_rlm_env_traces_reads_our_file_back(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    """The round trip: a run recorded by the file exporter, then ``rlm traces`` and ``rlm run --env traces-repl``
    (rlm-env-traces) over that file find its trace, service, model, agent and span tree."""
    path = rlm_isolated.work / "otel.jsonl"
    run, events, _ = _run(rlm_cli, rlm_script, monkeypatch, RLM_SINK__OTEL__EXPORTER="file",
                          RLM_SINK__OTEL__PATH=str(path))
    trace_id = trace_id_for(run["run_id"])
    ours = _file_spans(path)
    monkeypatch.delenv("RLM_RUN__SINKS")
    both = f"{PLUGIN},rlm-env-traces"
    overview = json.loads(rlm_cli("traces", "overview", str(path), "--json", plugins=both).out)
    assert overview["traces"] == 1 and overview["spans"] == len(ours) and overview["malformed_lines"] == 0
    assert overview["sample_trace_ids"] == [trace_id] and overview["error_traces"] == 0
    assert overview["services"] == {"rlm": 1} and overview["agents"] == {"pure_rlm": 1}
    assert list(overview["models"]) == [model_name(run["model"])]  # as GenAI names it: no "scripted:" prefix
    # the run's token total is what rlm-env-traces adds up over the spans: only chat spans carry gen_ai.usage.*
    chats = sum(s["attributes"].get("gen_ai.usage.input_tokens", 0) for s in ours if s["name"].startswith("chat"))
    agent = next(s for s in ours if s["name"].startswith("invoke"))
    assert "gen_ai.usage.input_tokens" not in agent["attributes"]
    assert overview["input_tokens"] == chats == agent["attributes"]["rlm.usage.input_tokens"]
    view = json.loads(rlm_cli("traces", "view", str(path), trace_id, plugins=both).out)
    by_id = {s["span_id"]: s for s in view["spans"]}
    assert set(by_id) == {s["span_id"] for s in ours}
    for span in ours:
        seen = by_id[span["span_id"]]
        assert seen["parent_span_id"] == span["parent_span_id"] and seen["name"] == span["name"]
        assert seen["attributes"] == span["attributes"] and seen["start_time"] == span["start_ns"]
        assert seen["status"]["code"] == {0: "UNSET", 1: "OK", 2: "ERROR"}[span["status"]["code"]]
    tool = next(s for s in view["spans"] if s["name"] == "execute_tool repl")  # span kinds and events come back
    assert tool["kind"] == "INTERNAL" and [e["name"] for e in tool["events"]][:2] == ["rlm.code", "rlm.output"]
    # and the trace_rlm environment's REPL functions see the same run
    code = ("o = trace_overview()\nt = view_trace(o['sample_trace_ids'][0])\n"
            "found = f\"{o['traces']} {sorted(o['agents'])} \" + "
            "','.join(sorted(s['name'].split()[0] for s in t['spans']))")
    model = rlm_script([f"```repl\n{code}\n```", "```repl\nFINAL_VAR('found')\n```"])
    result = rlm_cli("run", "What ran?", "--env", "traces-repl", "--context", str(path), "--model", model,
                     "--sandbox", "process", "--json", plugins=both)
    assert result.code == 0, result.err
    assert json.loads(result.out)["final_response"] == "1 ['pure_rlm'] chat,chat,chat,execute_tool,invoke_agent"
