"""Loopback OTLP receivers for tests: what an OTLP sink sent, decoded into plain span and metric dicts.

``OTLPReceiver`` is an HTTP server on ``127.0.0.1`` (a free port) that records every request and decodes OTLP/HTTP
trace bodies (protobuf or JSON, gzip or not) posted to any path ending in ``/traces``, and metric bodies posted to
any path ending in ``/metrics``::

    from rlm_sink_otel.testing import OTLPReceiver

    with OTLPReceiver() as receiver:                      # started; stopped on exit
        receiver.respond("/v1/info", json={"ok": True})  # a vendor endpoint (any method)
        receiver.respond("/v1/traces", status=500)        # or: delay=0.5 for a slow backend
        ...  # point the exporter at receiver.traces_url ("http://127.0.0.1:PORT/v1/traces")
        spans = receiver.wait_for_spans(3)                # the decoded spans, at least 3 (5 s at most)
        receiver.wait_for_metrics("rlm.runs")             # the decoded metrics, once these names came (5 s at most)
        runs = receiver.metric("rlm.runs")                # the last one received of that name (or None)

A span dict: ``name``, ``trace_id`` / ``span_id`` / ``parent_span_id`` (hex; None for a root), ``kind`` (the OTLP
enum int: 1 internal, 3 client), ``start_ns``, ``end_ns``, ``attributes`` (plain values), ``events`` (``name``,
``time_ns``, ``attributes``), ``status`` (``code`` 0 unset / 1 ok / 2 error, ``message``), ``resource``
(attributes), ``scope`` (name) and ``path`` (the request's). ``requests`` holds every request as a
:class:`Received` (method, path, headers with lower-case names, raw body).

A metric dict (one per metric of each request; ``metrics`` holds them in arrival order, so a cumulative
metric exported twice is there twice): ``name``, ``unit``, ``description``, ``kind`` (``sum``, ``gauge``,
``histogram`` or ``exponential_histogram``), ``temporality`` (``cumulative``, ``delta`` or None for a gauge),
``monotonic``, ``points`` (each: ``attributes``, ``start_ns``, ``time_ns`` and ``value`` for a sum or gauge;
``count``, ``sum``, ``min``, ``max``, ``bucket_counts``, ``bounds`` for a histogram), ``resource``, ``scope`` and
``path``.

``received_text()`` is everything a receiver got, as one text (the decoded spans and metrics, and for
``OTLPReceiver`` every request body, unpacked): what a test searches for content that must not have left.

``OTLPGrpcReceiver`` (needs ``grpcio``; the ``grpc`` extra) does the same for OTLP/gRPC (the trace and the metrics
services) at ``receiver.endpoint`` (``127.0.0.1:PORT``); ``fail_with(grpc.StatusCode.UNAVAILABLE)`` makes it
refuse exports.
"""

from __future__ import annotations

import base64
import gzip
import json as jsonlib
import socket
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from google.protobuf.json_format import MessageToDict, ParseDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

__all__ = ["OTLPReceiver", "OTLPGrpcReceiver", "Received", "decode_trace_body", "spans_of_request",
           "decode_metrics_body", "metrics_of_request"]


@dataclass
class Received:
    """One HTTP request the receiver got."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    query: str = ""


@dataclass
class _Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def _any_value(value: dict[str, Any]) -> Any:
    if "arrayValue" in value:
        return [_any_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return {kv["key"]: _any_value(kv.get("value", {})) for kv in value["kvlistValue"].get("values", [])}
    if "intValue" in value:
        return int(value["intValue"])
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    return None


def _attributes(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    return {kv["key"]: _any_value(kv.get("value", {})) for kv in pairs}


def _hex(b64: Optional[str]) -> Optional[str]:
    return base64.b64decode(b64).hex() if b64 else None


def spans_of_request(request: ExportTraceServiceRequest, path: str = "") -> list[dict[str, Any]]:
    """The plain span dicts of one decoded ``ExportTraceServiceRequest``."""
    data = MessageToDict(request, use_integers_for_enums=True)
    spans = []
    for group in data.get("resourceSpans", []):
        resource = _attributes(group.get("resource", {}).get("attributes", []))
        for scope in group.get("scopeSpans", []):
            for span in scope.get("spans", []):
                status = span.get("status", {})
                spans.append({
                    "name": span.get("name", ""), "trace_id": _hex(span.get("traceId")),
                    "span_id": _hex(span.get("spanId")), "parent_span_id": _hex(span.get("parentSpanId")),
                    "kind": int(span.get("kind", 0)), "start_ns": int(span.get("startTimeUnixNano", 0)),
                    "end_ns": int(span.get("endTimeUnixNano", 0)),
                    "attributes": _attributes(span.get("attributes", [])),
                    "events": [{"name": e.get("name", ""), "time_ns": int(e.get("timeUnixNano", 0)),
                                "attributes": _attributes(e.get("attributes", []))} for e in span.get("events", [])],
                    "status": {"code": int(status.get("code", 0)), "message": status.get("message", "")},
                    "resource": resource, "scope": scope.get("scope", {}).get("name", ""), "path": path,
                })
    return spans


def _hex_to_b64(node: dict[str, Any]) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        if node.get(key):
            node[key] = base64.b64encode(bytes.fromhex(node[key])).decode()


def decode_trace_body(body: bytes, content_type: str = "application/x-protobuf", content_encoding: str = "",
                      path: str = "") -> list[dict[str, Any]]:
    """The spans of an OTLP/HTTP trace body: protobuf, or OTLP/JSON (hex ids) when ``content_type`` says JSON;
    ``content_encoding`` ``gzip`` or ``deflate`` is undone first."""
    if content_encoding == "gzip":
        body = gzip.decompress(body)
    elif content_encoding == "deflate":
        body = zlib.decompress(body)
    request = ExportTraceServiceRequest()
    if "json" in content_type:
        data = jsonlib.loads(body or b"{}")
        for group in data.get("resourceSpans", []):
            for scope in group.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    _hex_to_b64(span)
                    for link in span.get("links", []):
                        _hex_to_b64(link)
        ParseDict(data, request, ignore_unknown_fields=True)
    else:
        request.ParseFromString(body)
    return spans_of_request(request, path)


_TEMPORALITY = {1: "delta", 2: "cumulative"}
_METRIC_KINDS = {"sum": "sum", "gauge": "gauge", "histogram": "histogram",
                 "exponentialHistogram": "exponential_histogram"}


def _number(point: dict[str, Any]) -> Any:
    if "asInt" in point:
        return int(point["asInt"])
    return float(point.get("asDouble", 0.0))


def _point(point: dict[str, Any], kind: str) -> dict[str, Any]:
    plain: dict[str, Any] = {"attributes": _attributes(point.get("attributes", [])),
                             "start_ns": int(point.get("startTimeUnixNano", 0)),
                             "time_ns": int(point.get("timeUnixNano", 0))}
    if kind in ("sum", "gauge"):
        plain["value"] = _number(point)
    else:
        plain.update({"count": int(point.get("count", 0)), "sum": point.get("sum"), "min": point.get("min"),
                      "max": point.get("max"), "bucket_counts": [int(c) for c in point.get("bucketCounts", [])],
                      "bounds": [float(b) for b in point.get("explicitBounds", [])]})
    return plain


def metrics_of_request(request: ExportMetricsServiceRequest, path: str = "") -> list[dict[str, Any]]:
    """The plain metric dicts of one decoded ``ExportMetricsServiceRequest`` (see the module docstring)."""
    data = MessageToDict(request, use_integers_for_enums=True)
    metrics = []
    for group in data.get("resourceMetrics", []):
        resource = _attributes(group.get("resource", {}).get("attributes", []))
        for scope in group.get("scopeMetrics", []):
            for metric in scope.get("metrics", []):
                field = next((key for key in _METRIC_KINDS if key in metric), None)
                body = metric.get(field, {}) if field else {}
                kind = _METRIC_KINDS.get(field or "", "unknown")
                metrics.append({
                    "name": metric.get("name", ""), "unit": metric.get("unit", ""),
                    "description": metric.get("description", ""), "kind": kind,
                    "temporality": _TEMPORALITY.get(int(body.get("aggregationTemporality", 0))),
                    "monotonic": bool(body.get("isMonotonic", False)),
                    "points": [_point(p, kind) for p in body.get("dataPoints", [])],
                    "resource": resource, "scope": scope.get("scope", {}).get("name", ""), "path": path,
                })
    return metrics


def _unpack(body: bytes, content_encoding: str) -> bytes:
    if content_encoding == "gzip":
        return gzip.decompress(body)
    if content_encoding == "deflate":
        return zlib.decompress(body)
    return body


def _request_text(request: Received) -> str:
    """A request's method, path and query, then its body unpacked and decoded as UTF-8 (non-text bytes replaced)."""
    body = _unpack(request.body, request.headers.get("content-encoding", ""))
    return f"{request.method} {request.path}?{request.query}\n{body.decode(errors='replace')}"


def decode_metrics_body(body: bytes, content_type: str = "application/x-protobuf", content_encoding: str = "",
                        path: str = "") -> list[dict[str, Any]]:
    """The metrics of an OTLP/HTTP metrics body: protobuf, or OTLP/JSON when ``content_type`` says JSON (an
    OTLP-JSON line of the file exporter too); ``content_encoding`` ``gzip`` or ``deflate`` is undone first."""
    body = _unpack(body, content_encoding)
    request = ExportMetricsServiceRequest()
    if "json" in content_type:
        ParseDict(jsonlib.loads(body or b"{}"), request, ignore_unknown_fields=True)
    else:
        request.ParseFromString(body)
    return metrics_of_request(request, path)


def free_port() -> int:
    """A TCP port nothing listens on at the moment (for a backend that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_step_run(run_id: str = "run_t", **start: Any) -> list[Any]:
    """The events of a tiny root run made by hand: run_start (``start`` adds to its data), one step that ran code
    with one model call, a final answer "42" with reward 0.5."""
    from rlm_host import RunEvent

    def event(type_: str, ts: float, **data: Any) -> RunEvent:
        return RunEvent(type=type_, run_id=run_id, root_run_id=run_id, ts=ts, data=data)  # type: ignore[arg-type]

    return [event("run_start", 1.0, environment="pure_rlm", model="m", provider="p", task="What is 6*7?", **start),
            event("step", 2.0, step=1, duration_s=1.0, model_seconds=0.5, code="print(6*7)", reply="```repl```",
                  usage={"root": {"calls": 1, "input_tokens": 5, "output_tokens": 2}},
                  observation={"blocks": [{"stdout": "42\n"}]}),
            event("final", 3.0, completed=True, steps=1, final_response="42", total_reward=0.5)]


class _Collected:
    """Spans, metrics and requests shared by both receivers."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.metrics: list[dict[str, Any]] = []
        self.errors: list[str] = []  # bodies that did not decode
        self._changed = threading.Condition()

    def _add(self, spans: list[dict[str, Any]]) -> None:
        with self._changed:
            self.spans.extend(spans)
            self._changed.notify_all()

    def _add_metrics(self, metrics: list[dict[str, Any]]) -> None:
        with self._changed:
            self.metrics.extend(metrics)
            self._changed.notify_all()

    def wait_for_metrics(self, *names: str, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The metrics received once each of ``names`` (at least one metric when none is named) has come, or all
        there are after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while time.monotonic() < deadline:
                seen = {m["name"] for m in self.metrics}
                if (set(names) <= seen) if names else self.metrics:
                    break
                self._changed.wait(max(0.0, deadline - time.monotonic()))
            return list(self.metrics)

    def metric(self, name: str) -> Optional[dict[str, Any]]:
        """The last metric received named ``name`` (with cumulative temporality: the latest totals), or None."""
        return next((m for m in reversed(list(self.metrics)) if m["name"] == name), None)

    def wait_for_spans(self, count: int = 1, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The spans received once there are at least ``count`` (or all there are after ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.spans) < count and time.monotonic() < deadline:
                self._changed.wait(max(0.0, deadline - time.monotonic()))
            return list(self.spans)

    def trace_spans(self, events: list[Any], timeout: float = 5.0) -> list[dict[str, Any]]:
        """The spans of the run tree ``events`` describe (its trace id: ``trace_id_for(root run id)``), once one
        ``invoke_agent`` span per run of the tree has arrived (or all there are after ``timeout`` s)."""
        from rlm_host.sdk.observability import trace_id_for

        trace_id = trace_id_for(events[0].root_run_id)
        runs = len({e.run_id for e in events})
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                mine = [s for s in self.spans if s["trace_id"] == trace_id]
                if sum(s["name"].startswith("invoke_agent") for s in mine) >= runs or time.monotonic() >= deadline:
                    return mine
                self._changed.wait(max(0.0, min(0.1, deadline - time.monotonic())))

    def spans_named(self, prefix: str) -> list[dict[str, Any]]:
        """The spans whose name starts with ``prefix`` (``"invoke_agent"``, ``"chat"``…)."""
        return [s for s in list(self.spans) if s["name"].startswith(prefix)]

    def received_text(self) -> str:
        """The decoded spans and metrics as JSON text."""
        with self._changed:
            return jsonlib.dumps([self.spans, self.metrics], ensure_ascii=False, default=str)


class OTLPReceiver(_Collected):
    """A recording OTLP/HTTP server on ``127.0.0.1:<free port>`` (see the module docstring)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__()
        self.requests: list[Received] = []
        self._replies: dict[tuple[str, str], _Reply] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                receiver._serve(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"  # an AF_INET address: host is a str (typed str | bytes)

    @property
    def traces_url(self) -> str:
        return self.url + "/v1/traces"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def respond(self, path: str, status: int = 200, body: bytes | str = b"", *, json: Any = None,
                delay: float = 0.0, method: str = "*", headers: Optional[dict[str, str]] = None,
                content_type: str = "application/json") -> None:
        """Answer requests to ``path`` (``method`` or any) with ``status`` and ``body`` (or ``json``), after
        ``delay`` seconds. Trace paths still record and decode what they get, whatever the answer."""
        payload = body.encode() if isinstance(body, str) else body
        if json is not None:
            payload = jsonlib.dumps(json).encode()
        self._replies[(method.upper(), path)] = _Reply(status, payload, content_type, delay, dict(headers or {}))

    def clear(self) -> None:
        """Forget the requests and spans received so far (the answers stay)."""
        with self._changed:
            self.requests.clear()
            self.spans.clear()
            self.metrics.clear()
            self.errors.clear()

    def received_text(self) -> str:
        """The decoded spans and metrics, then every request's path, query and body (unpacked, as UTF-8)."""
        with self._changed:
            requests = list(self.requests)
        return "\n".join([super().received_text(), *map(_request_text, requests)])

    def start(self) -> "OTLPReceiver":
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> "OTLPReceiver":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        path, _, query = handler.path.partition("?")
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._changed:
            self.requests.append(Received(handler.command, path, headers, body, query))
        reply = self._replies.get((handler.command, path)) or self._replies.get(("*", path))
        signal = path.rstrip("/").rsplit("/", 1)[-1] if handler.command == "POST" else ""
        if signal in ("traces", "metrics"):
            content_type, encoding = headers.get("content-type", ""), headers.get("content-encoding", "")
            try:
                if signal == "traces":
                    self._add(decode_trace_body(body, content_type, encoding, path))
                else:
                    self._add_metrics(decode_metrics_body(body, content_type, encoding, path))
            except Exception as exc:  # noqa: BLE001 - recorded for the test to see
                self.errors.append(f"{path}: {type(exc).__name__}: {exc}")
                reply = reply or _Reply(400, b'{"error": "undecodable body"}')
            if reply is None:
                if "json" in content_type:
                    reply = _Reply(200, b"{}")
                else:
                    response = ExportTraceServiceResponse() if signal == "traces" else ExportMetricsServiceResponse()
                    reply = _Reply(200, response.SerializeToString(), "application/x-protobuf")
        reply = reply or _Reply(404, b'{"error": "not found"}')
        if reply.delay:
            time.sleep(reply.delay)
        handler.send_response(reply.status)
        handler.send_header("Content-Type", reply.content_type)
        handler.send_header("Content-Length", str(len(reply.body)))
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(reply.body)


class OTLPGrpcReceiver(_Collected):
    """A recording OTLP/gRPC trace and metrics service on ``127.0.0.1:<free port>``; ``metadata`` holds each
    call's."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__()
        from concurrent import futures

        import grpc
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        self.metadata: list[dict[str, str]] = []
        self._failure: Any = None
        self.delay = 0.0
        receiver = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
                receiver.metadata.append({k: v for k, v in context.invocation_metadata() if isinstance(v, str)})
                if receiver.delay:
                    time.sleep(receiver.delay)
                if receiver._failure is not None:
                    context.abort(receiver._failure, "refused by the test receiver")
                receiver._add(spans_of_request(request, "grpc"))
                return ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request: ExportMetricsServiceRequest, context: Any) -> ExportMetricsServiceResponse:
                receiver.metadata.append({k: v for k, v in context.invocation_metadata() if isinstance(v, str)})
                if receiver._failure is not None:
                    context.abort(receiver._failure, "refused by the test receiver")
                receiver._add_metrics(metrics_of_request(request, "grpc"))
                return ExportMetricsServiceResponse()

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self._server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self._server)
        self.port = self._server.add_insecure_port(f"{host}:{port}")
        self.endpoint = f"{host}:{self.port}"

    def fail_with(self, code: Any) -> None:
        """Abort every export with this ``grpc.StatusCode`` (None: accept again)."""
        self._failure = code

    def start(self) -> "OTLPGrpcReceiver":
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop(grace=None)

    def __enter__(self) -> "OTLPGrpcReceiver":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
