"""Shared assertions of the otel sink's tests: the span tree of one recorded run tree."""

from __future__ import annotations

from rlm_host.sdk.observability import trace_id_for

PLUGIN = "rlm-sink-otel"


def assert_run_tree(spans: list[dict], events: list) -> dict[str, dict]:
    """The spans of ``events``' run tree are all there and nested right; returns the invoke_agent span per run."""
    root_run_id = events[0].root_run_id
    trace_id = trace_id_for(root_run_id)
    mine = [s for s in spans if s["trace_id"] == trace_id]
    assert mine, f"no span of trace {trace_id}"
    by_id = {s["span_id"]: s for s in mine}
    assert len(by_id) == len(mine), "every span is sent once"
    run_ids = {e.run_id for e in events}
    agents = {}
    for span in mine:
        if span["name"].startswith("invoke_agent"):
            assert span["attributes"]["rlm.run_id"] not in agents, "one invoke_agent span per run"
            agents[span["attributes"]["rlm.run_id"]] = span
    assert set(agents) == run_ids
    for event in events:
        if event.type != "run_start":
            continue
        agent = agents[event.run_id]
        assert agent["attributes"]["gen_ai.operation.name"] == "invoke_agent"
        if event.parent_run_id is None:
            assert agent["parent_span_id"] is None and agent["status"]["code"] == 1  # ok
        else:  # a child run nests under the execute_tool span of its parent's step
            tool = by_id[agent["parent_span_id"]]
            assert tool["name"].startswith("execute_tool")
            assert tool["attributes"]["rlm.run_id"] == event.parent_run_id
            assert by_id[tool["parent_span_id"]] is agents[event.parent_run_id]
    chats = [s for s in mine if s["name"].startswith("chat")]
    assert chats and all(s["attributes"]["gen_ai.operation.name"] == "chat" for s in chats)
    assert all(s["attributes"]["gen_ai.request.model"] for s in chats)
    assert any("gen_ai.usage.input_tokens" in s["attributes"] and "gen_ai.usage.output_tokens" in s["attributes"]
               for s in chats)
    assert all(s["kind"] == 3 for s in chats)  # client
    assert all(s["resource"]["service.name"] == "rlm" for s in mine)
    assert all(s["parent_span_id"] is None or s["parent_span_id"] in by_id for s in mine)
    assert all(s["end_ns"] >= s["start_ns"] > 0 for s in mine)
    return agents
