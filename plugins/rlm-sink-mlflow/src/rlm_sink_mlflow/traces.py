"""A run tree's spans (``rlm_host.SpanBuilder`` records) as one MLflow trace, uploaded to one tracking server.

MLflow's span APIs (``mlflow.start_span_no_context``, ``MlflowClient.start_trace``) export through the process-wide
tracer provider to the process-wide tracking URI, asynchronously, with ids MLflow picks. This module does what
that exporter does (``MlflowV3SpanExporter._log_trace``) with its own ``TracingClient(tracking_uri)``:
finished spans built with the public ``Span.from_dict``, ``log_spans`` (span rows in a SQL store), then
``start_trace`` with the trace info, and the spans as a trace artifact when the store keeps no span rows. No
global state, synchronous, and the trace id is the run tree's own (``tr-`` + ``trace_id_for(root_run_id)``).
What each span shows as inputs, outputs and chat comes from ``span_io``; the trace's request and response previews
are the root's task and answer (none of it when the sink's content policy kept the content off the records).
"""

from __future__ import annotations

import base64
import json
from typing import Any, Optional

from mlflow.entities import Span, SpanType, TraceData, TraceInfo, TraceLocation, TraceState
from mlflow.tracing.client import TracingClient

from rlm_host.sdk.observability import SpanRecord, tree_order
from rlm_sink_mlflow.span_io import inputs_outputs

SPAN_TYPES = {"invoke_agent": SpanType.AGENT, "chat": SpanType.CHAT_MODEL, "execute_tool": SpanType.TOOL}
STATUS = {"ok": "STATUS_CODE_OK", "error": "STATUS_CODE_ERROR", "unset": "STATUS_CODE_UNSET"}
PREVIEW_CHARS = 1000  # what MLflow's own tracing keeps of a request or response preview (OSS)


def mlflow_trace_id(record: SpanRecord) -> str:
    return f"tr-{record.trace_id}"


def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


def span_dict(record: SpanRecord, trace_id: str, parent_known: bool) -> dict[str, Any]:
    """The ``Span.to_dict`` form of a record: attribute values JSON-encoded, as MLflow stores them."""
    operation = record.operation
    inputs, outputs, chat = inputs_outputs(record)
    attributes = {key: json.dumps(value) for key, value in record.attributes.items()}
    attributes.update({"mlflow.traceRequestId": json.dumps(trace_id),
                       "mlflow.spanType": json.dumps(SPAN_TYPES.get(operation, SpanType.UNKNOWN))})
    if inputs is not None:
        attributes["mlflow.spanInputs"] = json.dumps(inputs, ensure_ascii=False)
    if outputs is not None:
        attributes["mlflow.spanOutputs"] = json.dumps(outputs, ensure_ascii=False)
    if chat is not None:
        attributes["mlflow.chat.messages"] = json.dumps(chat, ensure_ascii=False)
    inp, out = (record.attributes.get(f"gen_ai.usage.{k}") for k in ("input_tokens", "output_tokens"))
    if operation == "chat" and isinstance(inp, int) and isinstance(out, int):
        attributes["mlflow.chat.tokenUsage"] = json.dumps({"input_tokens": inp, "output_tokens": out,
                                                           "total_tokens": inp + out})
    return {
        "trace_id": _b64(record.trace_id),
        "span_id": _b64(record.span_id),
        "parent_span_id": _b64(record.parent_span_id) if parent_known and record.parent_span_id else None,
        "name": record.name,
        "start_time_unix_nano": record.start_ns,
        "end_time_unix_nano": max(record.end_ns, record.start_ns),
        "events": [{"name": e.name, "time_unix_nano": e.time_ns, "attributes": dict(e.attributes)}
                   for e in record.events],
        "status": {"code": STATUS.get(record.status, "STATUS_CODE_UNSET"), "message": record.status_message},
        "attributes": attributes,
    }


def build_trace(records: list[SpanRecord], experiment_id: str, source_run: Optional[str],
                tags: dict[str, str]) -> tuple[TraceInfo, list[Span]]:
    """The trace info and MLflow spans of one run tree (its root is the first span in tree order)."""
    ordered = list(tree_order(records))
    ids = {r.span_id for r in ordered}
    root = ordered[0]
    trace_id = mlflow_trace_id(root)
    spans = [Span.from_dict(span_dict(r, trace_id, r.parent_span_id in ids)) for r in ordered]
    metadata = {"mlflow.trace_schema.version": "3", "rlm.root_run_id": str(root.attributes.get("rlm.root_run_id", ""))}
    if source_run:
        metadata["mlflow.sourceRun"] = source_run  # the run page's Traces tab lists the trace
    inputs, answer, _ = inputs_outputs(root)
    info = TraceInfo(
        trace_id=trace_id,
        trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=root.start_ns // 1_000_000,
        execution_duration=max(0, root.end_ns - root.start_ns) // 1_000_000,
        state=TraceState.ERROR if root.status == "error" else TraceState.OK,
        request_preview=_preview(inputs),
        response_preview=_preview(answer),
        trace_metadata=metadata,
        tags={"mlflow.traceName": root.name, **tags},
    )
    return info, spans


def _preview(value: Any) -> Optional[str]:
    """A request or response preview as MLflow's own tracing writes it: the JSON of the root's inputs or
    outputs, cut to ``PREVIEW_CHARS``."""
    return None if value is None else json.dumps(value, ensure_ascii=False)[:PREVIEW_CHARS]


def upload_trace(client: TracingClient, records: list[SpanRecord], experiment_id: str, source_run: Optional[str],
                 tags: dict[str, str]) -> str:
    """Log one run tree as a trace; return its MLflow trace id."""
    info, spans = build_trace(records, experiment_id, source_run, tags)
    try:
        client.log_spans(experiment_id, spans)  # span rows (SQL stores); the trace info comes next
    except NotImplementedError:
        pass  # a store without span rows: the spans go to the trace's artifact below
    returned = client.start_trace(info)
    if returned.tags.get("mlflow.trace.spansLocation") != "TRACKING_STORE":
        client._upload_trace_data(returned, TraceData(spans))  # what MLflow's own exporter does here
    return returned.trace_id


def tracing_client(tracking_uri: Optional[str]) -> TracingClient:
    return TracingClient(tracking_uri)
