"""The reusable pieces: SpanRecord → ReadableSpan, the OTLP/JSON lines, and SpanExportSink's batching and its
handling of a backend that fails (HTTP 500 / 400, refused connections, a slow answer)."""

from __future__ import annotations

import json
import logging
import socket
import time

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import SpanKind, StatusCode

from rlm_host import RunEvent
from rlm_host.sdk.observability import ContentPolicy, SpanEventRecord, SpanRecord, trace_id_for
from rlm_sink_otel import (
    OTLPJsonLinesExporter,
    SpanExportSink,
    encode_otlp_json,
    make_resource,
    otlp_http_exporter,
    to_readable_span,
)
from rlm_sink_otel.testing import OTLPReceiver, decode_trace_body

RECORD = SpanRecord("0" * 30 + "ab", "1" * 15 + "f", "2" * 16, "chat m", "client", 10, 20, "run_1",
                    {"i": 1, "f": 1.5, "b": True, "s": "x"}, [SpanEventRecord("rlm.reply", 15, {"rlm.text": "hi"})],
                    "error", "boom")


CONTENT = ContentPolicy(capture=True)


def _event(type_: str, run_id: str = "run_a", parent: str | None = None, ts: float = 1.0, **data) -> RunEvent:
    return RunEvent.model_construct(type=type_, run_id=run_id, root_run_id="run_a", parent_run_id=parent,
                                    depth=0 if parent is None else 1, seq=0, ts=ts, data=data)


def _root_run(run_id: str = "run_a") -> list[RunEvent]:
    return [_event("run_start", run_id, ts=1.0, environment="pure_rlm", model="m", provider="p"),
            _event("step", run_id, ts=2.0, step=1, duration_s=1.0, model_seconds=0.5, code="print(1)",
                   reply="```repl\nprint(1)\n```", usage={"root": {"calls": 1, "input_tokens": 5, "output_tokens": 2}},
                   observation={"blocks": [{"stdout": "1\n"}]}),
            _event("final", run_id, ts=3.0, completed=True, steps=1, final_response="1")]


def test_to_readable_span_keeps_ids_kind_times_attributes_events_and_status():
    span = to_readable_span(RECORD, make_resource("svc"))
    assert f"{span.context.trace_id:032x}" == RECORD.trace_id and f"{span.context.span_id:016x}" == RECORD.span_id
    assert f"{span.parent.span_id:016x}" == "2" * 16 and span.parent.trace_id == span.context.trace_id
    assert span.kind == SpanKind.CLIENT and (span.start_time, span.end_time) == (10, 20)
    assert span.status.status_code == StatusCode.ERROR and span.status.description == "boom"
    assert dict(span.attributes) == RECORD.attributes
    assert [(e.name, e.timestamp, dict(e.attributes)) for e in span.events] == [("rlm.reply", 15, {"rlm.text": "hi"})]
    assert span.resource.attributes["service.name"] == "svc" and span.instrumentation_scope.name == "rlm"
    root = to_readable_span(SpanRecord(RECORD.trace_id, "3" * 16, None, "invoke_agent x", "internal", 1, 2, "r",
                                       status="ok"), make_resource())
    assert root.parent is None and root.kind == SpanKind.INTERNAL and root.status.status_code == StatusCode.OK


def test_otlp_json_is_the_collector_file_format():
    batch = encode_otlp_json([to_readable_span(RECORD, make_resource())])
    group = batch["resourceSpans"][0]
    assert {"key": "service.name", "value": {"stringValue": "rlm"}} in group["resource"]["attributes"]
    span = group["scopeSpans"][0]["spans"][0]
    assert span["traceId"] == RECORD.trace_id and span["spanId"] == RECORD.span_id  # hex, not base64
    assert span["parentSpanId"] == "2" * 16
    assert span["kind"] == 3 and span["status"] == {"code": 2, "message": "boom"}
    assert (span["startTimeUnixNano"], span["endTimeUnixNano"]) == ("10", "20")
    assert span["attributes"] == [{"key": "i", "value": {"intValue": "1"}},
                                  {"key": "f", "value": {"doubleValue": 1.5}},
                                  {"key": "b", "value": {"boolValue": True}},
                                  {"key": "s", "value": {"stringValue": "x"}}]
    assert span["events"] == [{"timeUnixNano": "15", "name": "rlm.reply",
                               "attributes": [{"key": "rlm.text", "value": {"stringValue": "hi"}}]}]


def test_the_file_exporter_appends_one_batch_per_line(tmp_path):
    path = tmp_path / "deep" / "t.jsonl"
    exporter = OTLPJsonLinesExporter(path)
    span = to_readable_span(RECORD, make_resource())
    assert exporter.export([span]) == SpanExportResult.SUCCESS and exporter.export([span, span])
    lines = path.read_text().splitlines()
    assert [len(decode_trace_body(line.encode(), "application/json")) for line in lines] == [1, 2]
    exporter.shutdown()
    assert exporter.export([span]) == SpanExportResult.FAILURE


class _Recording:
    def __init__(self):
        self.batches, self.shutdowns = [], 0

    def export(self, spans):
        self.batches.append([s.name for s in spans])
        return SpanExportResult.SUCCESS

    def shutdown(self):
        self.shutdowns += 1


def test_spans_go_out_when_the_root_run_finishes_and_close_ends_open_runs():
    exporter = _Recording()
    sink = SpanExportSink(exporter, content=CONTENT)
    for event in _root_run()[:-1]:
        sink.handle(event)
    assert exporter.batches == []  # nothing until the root run finishes
    sink.handle(_root_run()[-1])
    assert exporter.batches == [["chat m", "execute_tool repl", "invoke_agent pure_rlm"]]
    sink.handle(_event("run_start", "run_b", ts=5.0, environment="generic"))
    sink.handle(_event("something_new", "run_b"))
    sink.close()
    sink.close()
    assert exporter.batches[-1] == ["invoke_agent generic"] and exporter.shutdowns == 1
    assert sink.exported == 4 and sink.dropped == 0


def test_a_full_batch_goes_out_before_the_run_ends():
    exporter = _Recording()
    sink = SpanExportSink(exporter, content=CONTENT)
    sink.batch_size = 2
    for event in _root_run()[:2]:
        sink.handle(event)
    assert exporter.batches == [["chat m", "execute_tool repl"]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("backend", ["500", "400", "refused"])
def test_a_failing_backend_is_one_warning_never_an_exception(backend, caplog):
    with OTLPReceiver() as receiver:
        if backend == "refused":
            url = f"http://127.0.0.1:{_free_port()}/v1/traces"
        else:
            receiver.respond("/v1/traces", status=int(backend))
            url = receiver.traces_url
        sink = SpanExportSink(otlp_http_exporter(url, timeout=0.5), content=CONTENT, target=url)
        sink.retry_after = 0  # try again at every batch
        with caplog.at_level(logging.INFO, logger="rlm.sinks"):
            for run_id in ("run_a", "run_b", "run_c"):
                for event in _root_run(run_id):
                    sink.handle(event)
            sink.close()
    # the exporter's own lines are folded into the sink's one warning (pytest's capture sees them anyway)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == "rlm.sinks"]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    message = warnings[0].getMessage()
    assert f"otel sink: could not export 3 span(s) to {url}" in message
    assert {"500": "HTTP 500 Internal Server Error", "400": "HTTP 400 Bad Request",
            "refused": "ConnectionError: [Errno 111] Connection refused"}[backend] in message
    assert sink.failures == 4 and sink.exported == 0 and sink.dropped == 9  # one try per run, one at close
    assert any("not delivered" in r.getMessage() for r in caplog.records)


def test_spans_wait_for_a_backend_that_comes_back(caplog):
    with OTLPReceiver() as receiver:
        receiver.respond("/v1/traces", status=400)
        sink = SpanExportSink(OTLPSpanExporter(endpoint=receiver.traces_url, timeout=1), content=CONTENT)
        sink.retry_after = 0
        for event in _root_run("run_a"):
            sink.handle(event)
        receiver.respond("/v1/traces", status=200)
        for event in _root_run("run_b"):
            sink.handle(event)
        sink.close()
        assert sink.exported == 6 and sink.dropped == 0
        assert {s["attributes"]["rlm.run_id"] for s in receiver.spans} == {"run_a", "run_b"}


def test_a_slow_backend_is_waited_for(caplog):
    with OTLPReceiver() as receiver:
        receiver.respond("/v1/traces", delay=0.5)
        sink = SpanExportSink(OTLPSpanExporter(endpoint=receiver.traces_url, timeout=5), content=CONTENT)
        started = time.monotonic()
        for event in _root_run():
            sink.handle(event)
        sink.close()
        assert 0.5 <= time.monotonic() - started < 3
        spans = receiver.wait_for_spans(3)
        assert {s["trace_id"] for s in spans} == {trace_id_for("run_a")} and sink.exported == 3


def test_the_receiver_answers_vendor_endpoints_and_decodes_json_and_gzip_bodies():
    import gzip
    import urllib.request

    from rlm_sink_otel.otlp_json import otlp_json_line

    with OTLPReceiver() as receiver:
        receiver.respond("/v1/info", json={"version": "1"}, method="GET")
        with urllib.request.urlopen(receiver.url + "/v1/info") as reply:
            assert json.load(reply) == {"version": "1"}
        body = otlp_json_line([to_readable_span(RECORD, make_resource())]).encode()
        for data, headers in ((body, {}), (gzip.compress(body), {"Content-Encoding": "gzip"})):
            request = urllib.request.Request(receiver.url + "/api/public/otel/v1/traces", data=data,
                                             headers={"Content-Type": "application/json", **headers})
            with urllib.request.urlopen(request) as reply:
                assert reply.status == 200
        spans = receiver.wait_for_spans(2)
        assert [s["span_id"] for s in spans] == [RECORD.span_id] * 2
        assert spans[0]["attributes"] == RECORD.attributes and spans[0]["status"] == {"code": 2, "message": "boom"}
        assert spans[0]["path"] == "/api/public/otel/v1/traces"
        assert [r.path for r in receiver.requests] == ["/v1/info"] + ["/api/public/otel/v1/traces"] * 2
