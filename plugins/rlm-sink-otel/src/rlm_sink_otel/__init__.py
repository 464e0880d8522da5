"""rlm-sink-otel: the ``otel`` sink, rlm run trees as OpenTelemetry GenAI spans (OTLP/HTTP, OTLP/gRPC, OTLP-JSON files).

The public API other sinks reuse (imported lazily, so ``rlm`` starts without OpenTelemetry):

- :func:`to_readable_span` (``rlm_sink_otel.convert``): a host ``SpanRecord`` as an SDK ``ReadableSpan``;
  :func:`make_resource`, :func:`make_scope`;
- :class:`SpanExportSink` (``rlm_sink_otel.export_sink``): a sink exporting the span tree with any SDK
  ``SpanExporter``;
- :func:`otlp_http_exporter` (``rlm_sink_otel.http_exporter``): the SDK's OTLP/HTTP exporter that can say why it
  failed (``last_problem()``);
- :class:`OTLPJsonLinesExporter` and :func:`encode_otlp_json` (``rlm_sink_otel.otlp_json``): OTLP/JSON batch lines;
- :class:`OtelSinkSettings`, ``create`` and ``check`` (``rlm_sink_otel.sink``): the ``otel`` sink itself;
- :class:`ReplaySink`, :func:`replay`, :class:`ReplayIdGenerator` (``rlm_sink_otel.replay``): a finished run
  tree replayed through a vendor SDK's own tracer with our ids and times (rlm-sink-langfuse, rlm-sink-logfire);
- :class:`FoldedLogs` (``rlm_sink_otel.folded_logs``): an SDK's own warning lines folded into the sink's one
  warning; :func:`tcp_probe`: a quick reachability test for ``SpanExportSink(probe=…)``;
- :class:`OtelSink` (``rlm_sink_otel.otel_sink``): the ``otel`` sink's spans and metrics together;
  :class:`RunMetrics` / :class:`MetricsPipeline` (``rlm_sink_otel.metrics``): the run instruments over OTLP metrics;
- test receivers in ``rlm_sink_otel.testing`` (``OTLPReceiver``, ``OTLPGrpcReceiver``: traces and metrics).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "to_readable_span": "rlm_sink_otel.convert",
    "make_resource": "rlm_sink_otel.convert",
    "make_scope": "rlm_sink_otel.convert",
    "SpanExportSink": "rlm_sink_otel.export_sink",
    "otlp_http_exporter": "rlm_sink_otel.http_exporter",
    "OTLPJsonLinesExporter": "rlm_sink_otel.otlp_json",
    "encode_otlp_json": "rlm_sink_otel.otlp_json",
    "OtelSinkSettings": "rlm_sink_otel.settings",
    "create": "rlm_sink_otel.sink",
    "check": "rlm_sink_otel.sink",
    "make_exporter": "rlm_sink_otel.sink",
    "ReplayIdGenerator": "rlm_sink_otel.replay",
    "replay": "rlm_sink_otel.replay",
    "ReplaySink": "rlm_sink_otel.replay",
    "tcp_probe": "rlm_sink_otel.export_sink",
    "FoldedLogs": "rlm_sink_otel.folded_logs",
    "OtelSink": "rlm_sink_otel.otel_sink",
    "RunMetrics": "rlm_sink_otel.metrics",
    "MetricsPipeline": "rlm_sink_otel.metrics",
    "OTLP_EXPORTER_LOGGERS": "rlm_sink_otel.folded_logs",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rlm_sink_otel' has no attribute {name!r}")
