"""OTLP/JSON encoding and ``OTLPJsonLinesExporter``: one export batch per line, as the Collector's file exporter.

A line is ``{"resourceSpans": [...]}`` in the OTLP/JSON encoding (the protobuf JSON mapping with the spec's
exceptions): lower-case hex ``traceId`` / ``spanId`` / ``parentSpanId`` (the protobuf mapping would give base64),
64-bit integers as decimal strings (``startTimeUnixNano``, ``intValue``), enums as integers (``kind``,
``status.code``), attributes as ``{"key": …, "value": {"stringValue" | "intValue" | "doubleValue" | "boolValue":
…}}``, fields with default values left out. ``rlm traces`` (rlm-env-traces) and the Collector read it.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Union

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(node: dict[str, Any]) -> None:
    for key in _ID_FIELDS:
        if isinstance(node.get(key), str):
            node[key] = base64.b64decode(node[key]).hex()


def encode_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The OTLP/JSON ``ExportTraceServiceRequest`` of ``spans``: ``{"resourceSpans": [...]}``."""
    message = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for group in message.get("resourceSpans", []):
        for scope in group.get("scopeSpans", []):
            for span in scope.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return message


def otlp_json_line(spans: Sequence[ReadableSpan]) -> str:
    """One compact JSON line (no trailing newline) holding the batch."""
    return json.dumps(encode_otlp_json(spans), ensure_ascii=False, separators=(",", ":"))


class OTLPJsonLinesExporter(SpanExporter):
    """A ``SpanExporter`` appending each ``export`` batch as one OTLP/JSON line to ``path`` (one open/write per
    batch, so a line is complete on disk at once). Thread-safe; the folder is made on first write."""

    def __init__(self, path: Union[str, Path]) -> None:
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._shutdown = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        line = otlp_json_line(spans) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._shutdown = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
