"""``SpanRecord`` (the host's SDK-free span) → OpenTelemetry SDK ``ReadableSpan``, ready for any ``SpanExporter``.

The host builds the span tree once (``rlm_host.SpanBuilder``); every OpenTelemetry-shaped sink only converts the
finished records. Ids stay exactly the host's (hex → int), so ``rlm runs show``'s trace id finds the trace in a
backend, and a span may be exported before its parent.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import Any, Optional

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from rlm_host.sdk.observability import SpanRecord

#: The instrumentation scope of every span the rlm sinks send.
SCOPE_NAME = "rlm"

_KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT, "server": SpanKind.SERVER,
          "producer": SpanKind.PRODUCER, "consumer": SpanKind.CONSUMER}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def _version() -> str:
    try:
        return metadata.version("rlm-host")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source checkout
        return "0"


def make_resource(service_name: str = "rlm", attributes: Optional[Mapping[str, Any]] = None) -> Resource:
    """The resource of the spans: ``service.name`` plus ``OTEL_RESOURCE_ATTRIBUTES`` and the SDK's defaults
    (``telemetry.sdk.*``), as ``Resource.create`` merges them; ``attributes`` win over the environment."""
    return Resource.create({"service.name": service_name, **(attributes or {})})


def make_scope() -> InstrumentationScope:
    """The instrumentation scope ``rlm`` at the host's version."""
    return InstrumentationScope(SCOPE_NAME, _version())


def span_context(trace_id: str, span_id: str) -> SpanContext:
    """A sampled, non-remote span context from hex ids."""
    return SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=False, trace_flags=_SAMPLED)


def to_readable_span(record: SpanRecord, resource: Resource,
                     scope: Optional[InstrumentationScope] = None) -> ReadableSpan:
    """One finished OpenTelemetry span with the record's ids, kind, times (ns), attributes, events and status.

    ``scope`` defaults to :func:`make_scope`. The parent is a (non-remote) span context of the same trace, so
    exporters write ``parentSpanId``; a status message is kept only with an error status (OpenTelemetry drops
    descriptions of other statuses).
    """
    parent = span_context(record.trace_id, record.parent_span_id) if record.parent_span_id else None
    if record.status == "error":
        status = Status(StatusCode.ERROR, record.status_message or None)
    elif record.status == "ok":
        status = Status(StatusCode.OK)
    else:
        status = Status(StatusCode.UNSET)
    events = [Event(e.name, dict(e.attributes), e.time_ns) for e in record.events]
    return ReadableSpan(
        name=record.name,
        context=span_context(record.trace_id, record.span_id),
        parent=parent,
        resource=resource,
        attributes=dict(record.attributes),
        events=events,
        kind=_KINDS.get(record.kind, SpanKind.INTERNAL),
        status=status,
        start_time=record.start_ns,
        end_time=max(record.end_ns, record.start_ns),
        instrumentation_scope=scope or make_scope(),
    )
