"""Span kinds and span events in both formats: kinds as names, events decoded (OTLP key/value lists, flat
objects), counts of what was left out, and the index's summaries unchanged by either."""

import json

import pytest

from rlm_env_traces.events import HEAD_EVENTS, MAX_EVENTS, TAIL_EVENTS, kind_name
from rlm_env_traces.generate import SYSTEMIC_MESSAGE, generate
from rlm_env_traces.spans import spans, summaries
from rlm_env_traces.store import TraceStore


def line(value):
    return json.dumps(value).encode() + b"\n"


def otlp(*spans_, resource=None):
    return {"resourceSpans": [{"resource": {"attributes": resource or []}, "scopeSpans": [{"spans": list(spans_)}]}]}


def kv(key, **value):
    return {"key": key, "value": value}


@pytest.mark.parametrize(("value", "name"), [
    (1, "INTERNAL"), (2, "SERVER"), (3, "CLIENT"), (4, "PRODUCER"), (5, "CONSUMER"), ("3", "CLIENT"),
    ("SPAN_KIND_CLIENT", "CLIENT"), ("client", "CLIENT"), ("SpanKind.SERVER", "SERVER"), (" Consumer ", "CONSUMER"),
    ("KIND_PRODUCER", "PRODUCER"), (0, None), (None, None), ("SPAN_KIND_UNSPECIFIED", None), (9, None), (-1, None),
    (True, None), ({"x": 1}, None), (["CLIENT"], None), ("", None), ("gateway", "gateway"), ("x" * 500, "x" * 64),
])
def test_kind_names(value, name):
    assert kind_name(value) == name


def test_an_otlp_span_keeps_its_kind_and_its_events():
    span = {"traceId": "AB", "spanId": "01", "name": "execute_tool repl", "kind": 1, "startTimeUnixNano": "10",
            "events": [{"timeUnixNano": "11", "name": "rlm.code",
                        "attributes": [kv("rlm.text", stringValue="print(1)")]},
                       {"timeUnixNano": "12", "name": "exception", "droppedAttributesCount": 2,
                        "attributes": [kv("exception.type", stringValue="ValueError"), kv("n", intValue="7"),
                                       kv("ok", boolValue=True),
                                       kv("xs", arrayValue={"values": [{"doubleValue": 1.5}]}),
                                       kv("m", kvlistValue={"values": [kv("a", stringValue="b")]})]}],
            "droppedEventsCount": "3"}
    (flat,) = spans(line(otlp(span, {"traceId": "AB", "spanId": "02", "kind": 0})))[:1]
    assert flat["kind"] == "INTERNAL" and flat["events_left_out"] == 3
    assert flat["events"] == [
        {"name": "rlm.code", "time": 11, "attributes": {"rlm.text": "print(1)"}},
        {"name": "exception", "time": 12, "attributes": {"exception.type": "ValueError", "n": 7, "ok": True,
                                                         "xs": [1.5], "m": {"a": "b"}}, "attributes_left_out": 2},
    ]
    plain = spans(line(otlp(span, {"traceId": "AB", "spanId": "02", "kind": 0})))[1]
    assert "kind" not in plain and "events" not in plain and "events_left_out" not in plain


def test_a_flat_span_keeps_its_kind_and_its_events():
    span = {"trace_id": "t", "span_id": "s", "name": "chat", "kind": "SPAN_KIND_CLIENT", "dropped_events_count": 1,
            "events": [{"name": "rlm.reply", "time": "2026-01-01T00:00:00Z", "attributes": {"rlm.text": "hi"}},
                       {"name": "otlp-style", "timeUnixNano": "5", "attributes": [kv("k", stringValue="v")]},
                       {"name": "python-sdk", "timestamp": 6}, "not an event", 7]}
    (flat,) = spans(line(span))
    assert flat["kind"] == "CLIENT" and flat["events_left_out"] == 1 and "dropped_events_count" not in flat
    assert flat["events"] == [{"name": "rlm.reply", "time": 1_767_225_600_000_000_000,
                               "attributes": {"rlm.text": "hi"}},
                              {"name": "otlp-style", "time": 5, "attributes": {"k": "v"}},
                              {"name": "python-sdk", "time": 6, "attributes": {}}]
    (odd,) = spans(line({"trace_id": "t", "kind": {"not": "a kind"}, "events": "not a list"}))
    assert "kind" not in odd and "events" not in odd


def test_past_the_cap_the_first_and_last_events_are_kept_and_the_rest_counted():
    events = [{"name": f"e{i}", "timeUnixNano": str(i)} for i in range(MAX_EVENTS + 50)]
    (flat,) = spans(line(otlp({"traceId": "ab", "spanId": "01", "events": events})))
    names = [e["name"] for e in flat["events"]]
    assert len(names) == MAX_EVENTS and flat["events_left_out"] == 50
    assert names[:HEAD_EVENTS] == [f"e{i}" for i in range(HEAD_EVENTS)]
    assert names[HEAD_EVENTS:] == [f"e{i}" for i in range(MAX_EVENTS + 50 - TAIL_EVENTS, MAX_EVENTS + 50)]


def test_kinds_and_events_do_not_change_what_the_index_keeps():
    bare = {"trace_id": "t", "status": {"code": "ERROR"}, "attributes": {"gen_ai.request.model": "m"}}
    rich = {**bare, "kind": "client", "events": [{"name": "exception", "attributes": {"exception.message": "x"}}]}
    assert summaries(line(bare)) == summaries(line(rich))
    batch = otlp({"traceId": "ab", "kind": 3, "events": [{"name": "e", "attributes": [kv("k", intValue="1")]}]})
    assert summaries(line(batch))[0].trace_id == "ab"


def test_the_views_show_kinds_and_events(tmp_path):
    path = tmp_path / "t.jsonl"
    tool = {"traceId": "ab" * 16, "spanId": "01", "name": "execute_tool repl", "kind": 1,
            "events": [{"name": "rlm.output", "timeUnixNano": "5", "attributes": [kv("rlm.text", stringValue="42\n")]}]}
    chat = {"traceId": "ab" * 16, "spanId": "02", "name": "chat m", "kind": "SPAN_KIND_CLIENT"}
    path.write_bytes(line(otlp(tool, chat)))
    store = TraceStore.load(path)
    view = store.view_trace("ab" * 16)
    assert [(s["name"], s["kind"]) for s in view["spans"]] == [("execute_tool repl", "INTERNAL"), ("chat m", "CLIENT")]
    (shown,) = store.view_spans("ab" * 16, ["01"])["spans"]
    assert shown["events"] == [{"name": "rlm.output", "time": 5, "attributes": {"rlm.text": "42\n"}}]
    (match,) = store.search_trace("ab" * 16, "rlm.output")["matches"]
    assert match["span_id"] == "01" and match["kind"] == "INTERNAL" and "42" in match["snippet"]


def test_generated_files_carry_kinds_and_exception_events_in_both_formats(tmp_path):
    for fmt in ("flat", "otlp"):
        info = generate(tmp_path / f"{fmt}.jsonl", traces=6, fmt=fmt)
        store = TraceStore.load(tmp_path / f"{fmt}.jsonl")
        view = store.view_trace(info["error_trace_ids"][0])["spans"]
        assert {s["name"].split()[0]: s["kind"] for s in view} == {"invoke_agent": "INTERNAL", "chat": "CLIENT",
                                                                    "execute_tool": "INTERNAL"}
        (failed,) = [s for s in view if s["status"]["code"] == "ERROR" and s["name"].startswith("execute_tool")]
        (event,) = failed["events"]
        assert event["name"] == "exception" and event["time"] == failed["end_time"]
        attributes = event["attributes"]
        assert f"{attributes['exception.type']}: {attributes['exception.message']}" == SYSTEMIC_MESSAGE
