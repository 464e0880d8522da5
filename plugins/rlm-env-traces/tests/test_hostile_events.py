"""Attacks through span events: a span with a million events, events with thousands of attributes, megabyte values
and names, absurd times and counts, nesting past Python's stack — each read into a bounded view that says how
much it left out, through ``TraceStore``, ``rlm traces view`` and ``rlm run --env traces``."""

import json
import time

import pytest

from rlm_env_traces.events import EVENT_ATTRIBUTES, EVENT_VALUE_CHARS, HEAD_EVENTS, MAX_EVENTS, TAIL_EVENTS
from rlm_env_traces.spans import MalformedLine, spans
from rlm_env_traces.store import VIEW_SPANS_CHARS, VIEW_TRACE_CHARS, TraceStore
from rlm_env_traces.views import SHORT_CHARS, dumps

PLUGIN = "rlm-env-traces"
TRACE = "ab" * 16
MILLION = 1_000_000
BIG = 4 << 20  # a 4 MB value


def _million_events_line() -> bytes:
    """One OTLP span holding a million events (unnamed but for the first and the last), about 3 MB."""
    events = [b'{"name":"first","timeUnixNano":"1"}'] + [b"{}"] * (MILLION - 2) + [b'{"name":"last"}']
    head = json.dumps({"traceId": TRACE, "spanId": "01", "name": "flood", "kind": 1})[:-1].encode()
    return (b'{"resourceSpans":[{"scopeSpans":[{"spans":[' + head + b',"events":[' + b",".join(events)
            + b'],"droppedEventsCount":"5"}]}]}]}\n')


def _huge_values_line() -> bytes:
    """One flat span whose events carry a 4 MB value, 10,000 attributes, a 1 MB name and junk times and counts."""
    many = {f"k{i}": i for i in range(10_000)}
    return json.dumps({"trace_id": TRACE, "span_id": "02", "name": "huge", "kind": "client",
                       "dropped_events_count": "9" * 40, "events": [
                           {"name": "exception", "time": "9" * 10_000,
                            "attributes": {"exception.stacktrace": "x" * BIG, "nested": {"deep": ["y" * BIG]}}},
                           {"name": "n" * (1 << 20), "attributes": many},
                           {"name": "kv", "attributes": [{"key": f"k{i}", "value": {"stringValue": "z" * 100}}
                                                         for i in range(10_000)], "droppedAttributesCount": -4},
                       ]}).encode() + b"\n"


def _chatty_line() -> bytes:
    """One flat span of 40 output events of 10,000 characters each: a trace past what ``view_trace`` shows."""
    events = [{"name": f"rlm.output.{i}", "time": i, "attributes": {"rlm.text": "o" * 10_000}} for i in range(40)]
    return json.dumps({"trace_id": TRACE, "span_id": "03", "name": "chatty", "events": events}).encode() + b"\n"


def _hostile_file(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(_million_events_line() + _huge_values_line() + _chatty_line())
    return path


def test_a_million_events_are_read_as_a_bounded_head_and_tail():
    started = time.monotonic()
    (span,) = spans(_million_events_line())
    names = [e["name"] for e in span["events"]]
    assert len(names) == MAX_EVENTS and span["events_left_out"] == MILLION - MAX_EVENTS + 5
    assert names[0] == "first" and names[-1] == "last" and names[1:HEAD_EVENTS] == [None] * (HEAD_EVENTS - 1)
    assert span["events"][0]["time"] == 1 and span["kind"] == "INTERNAL"
    assert time.monotonic() - started < 30


def test_huge_values_names_and_attribute_counts_are_cut_and_counted():
    (span,) = spans(_huge_values_line())
    stack, named, listed = span["events"]
    assert stack["time"] is None, "a 10,000-digit time is no time"
    assert len(stack["attributes"]["exception.stacktrace"]) <= EVENT_VALUE_CHARS + 200
    assert len(stack["attributes"]["nested"]["deep"][0]) <= EVENT_VALUE_CHARS + 200
    assert len(named["name"]) <= SHORT_CHARS + 1
    assert len(named["attributes"]) == EVENT_ATTRIBUTES and named["attributes_left_out"] == 10_000 - EVENT_ATTRIBUTES
    assert len(listed["attributes"]) == EVENT_ATTRIBUTES and listed["attributes_left_out"] == 10_000 - EVENT_ATTRIBUTES
    assert "events_left_out" not in span, "a 40-digit dropped count is no count"
    assert span["kind"] == "CLIENT"


@pytest.mark.parametrize("levels", [60, 250, 2_000])
def test_events_nested_past_pythons_stack_are_malformed_or_cut_never_a_crash(levels):
    value = '{"stringValue":"leaf"}'
    for _ in range(levels):  # key/value lists in key/value lists: three JSON levels each
        value = '{"kvlistValue":{"values":[{"key":"k","value":' + value + "}]}}"
    batch = ('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"' + TRACE + '","events":[{"name":"deep",'
             '"attributes":[{"key":"k","value":' + value + "}]}]}]}]}]}")
    try:
        (span,) = spans(batch.encode())
    except MalformedLine:
        return
    assert "nested deeper than" in dumps(span), "decoded, then cut to the views' depth"


def test_the_views_of_a_hostile_file_stay_bounded(tmp_path):
    store = TraceStore.load(_hostile_file(tmp_path))
    assert store.get_overview()["spans"] == 3 and store.get_overview()["malformed_lines"] == 0
    view = store.view_trace(TRACE)
    assert view["oversized"] and len(json.dumps(view)) <= VIEW_TRACE_CHARS
    listing = {s["span_id"]: s for s in view["spans"]}  # each span's kind and its first events' names
    assert listing["01"]["kind"] == "INTERNAL" and listing["01"]["events"][0] == "first"
    assert listing["01"]["events"][-1] == f"… {MILLION - 10 + 5} more" and listing["02"]["kind"] == "CLIENT"
    assert listing["03"]["kind"] is None and listing["03"]["events"][-1] == "… 30 more"
    shown = store.view_spans(TRACE, ["01", "02", "03"])
    assert len(json.dumps(shown)) <= VIEW_SPANS_CHARS
    by_id = {s["span_id"]: s for s in shown["spans"]}
    assert by_id["01"]["events_left_out"] == MILLION - MAX_EVENTS + 5 and len(by_id["03"]["events"]) == 40
    assert store.search_trace(TRACE, '"last"')["match_count"] == 1, "the tail is kept, and searched"
    (match,) = store.search_trace(TRACE, "exception.stacktrace")["matches"]
    assert match["span_id"] == "02" and match["kind"] == "CLIENT"


def test_rlm_traces_view_and_a_run_over_a_hostile_file_stay_bounded(rlm_cli, rlm_script, rlm_isolated):
    path = _hostile_file(rlm_isolated.work)
    view = rlm_cli("traces", "view", str(path), TRACE, plugins=PLUGIN)
    assert view.code == 0, view.err
    assert json.loads(view.out)["oversized"] and len(view.out) <= 2 * VIEW_TRACE_CHARS  # indented JSON
    actions = [{"action": "view_spans", "trace_id": TRACE, "span_ids": ["01", "02", "03"]},
               {"action": "final", "final_response": "floods"}]
    model = rlm_script([json.dumps(action) for action in actions])
    result = rlm_cli("run", "Find failures.", "--env", "traces", "--context", str(path), "--model", model, "--json",
                     "--max-steps", "2", plugins=PLUGIN)
    assert result.code == 0, result.err
    run = json.loads(result.out)
    events = [json.loads(line) for line in open(run["trajectory_path"])]
    steps = [event["data"] for event in events if event["type"] == "step"]
    shown = steps[0]["observation"]["result"]
    flood = next(s for s in shown["spans"] if s["span_id"] == "01")
    assert flood["kind"] == "INTERNAL" and flood["events_left_out"] == MILLION - MAX_EVENTS + 5
    assert len(json.dumps(shown)) <= VIEW_SPANS_CHARS + 10_000
    assert HEAD_EVENTS + TAIL_EVENTS == MAX_EVENTS
