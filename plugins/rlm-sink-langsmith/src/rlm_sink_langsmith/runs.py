"""The host's span records of one run tree as LangSmith run dicts, ready for ``Client.multipart_ingest``.

``invoke_agent`` → a ``chain`` run (task in, answer out), ``chat`` → ``llm`` (the messages sent as ``inputs.messages``
and the reply as ``outputs.choices``, the shapes LangSmith renders as a chat; model and provider as
``ls_model_name`` / ``ls_provider``, tokens as ``usage_metadata``), ``execute_tool`` → ``tool`` (code in, output
out). Run ids are uuid5 of the
span ids, so the same run tree always gives the same runs; the LangSmith trace id is the root run's id, and
``dotted_order`` (``<start>Z<id>`` joined by dots from the root) carries the nesting, as the API requires.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any, Optional

from rlm_host.sdk.observability import SpanRecord, chat_messages, tree_order

#: uuid5 namespace of the run ids.
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/rlm/langsmith-runs")
RUN_TYPES = {"invoke_agent": "chain", "chat": "llm", "execute_tool": "tool"}
_TEXT_EVENTS = {"rlm.prompt": ("inputs", "prompt"), "rlm.code": ("inputs", "code"),
                "rlm.reply": ("outputs", "reply"), "rlm.response": ("outputs", "response"),
                "rlm.output": ("outputs", "output"), "rlm.summary": ("outputs", "summary")}


def run_id_for(record: SpanRecord) -> uuid.UUID:
    """The LangSmith run id of a span: uuid5 of its trace and span ids."""
    return uuid.uuid5(NAMESPACE, f"{record.trace_id}:{record.span_id}")


def _time(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)


def _io(record: SpanRecord) -> tuple[dict[str, Any], dict[str, Any]]:
    attrs = record.attributes
    inputs: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    if record.operation == "chat" and attrs.get("gen_ai.input.messages"):  # a model call: the chat LangSmith shows
        inputs["messages"] = chat_messages(attrs["gen_ai.input.messages"])
        if "output.value" in attrs:
            outputs["choices"] = [{"message": {"role": "assistant", "content": attrs["output.value"]}}]
        return inputs, outputs
    if record.operation == "execute_tool" and "input.value" in attrs:
        inputs["code"] = attrs["input.value"]
    if "output.value" in attrs and record.operation == "execute_tool":
        outputs["output"] = attrs["output.value"]
    if record.operation == "invoke_agent":
        inputs["task"] = attrs.get("rlm.task", "")
        if "rlm.final_response" in attrs:
            outputs["final_response"] = attrs["rlm.final_response"]
    for event in record.events:
        if event.name in _TEXT_EVENTS:
            side, key = _TEXT_EVENTS[event.name]
            (inputs if side == "inputs" else outputs).setdefault(key, event.attributes.get("rlm.text", ""))
    return inputs, outputs


def _metadata(record: SpanRecord) -> dict[str, Any]:
    attrs = record.attributes
    metadata: dict[str, Any] = {k: v for k, v in attrs.items() if k.startswith(("rlm.", "gen_ai."))
                                and k not in ("rlm.task", "rlm.final_response")}
    metadata["otel_trace_id"], metadata["otel_span_id"] = record.trace_id, record.span_id
    if record.operation == "chat":
        metadata["ls_model_name"] = attrs.get("gen_ai.request.model", "")
        metadata["ls_provider"] = attrs.get("gen_ai.provider.name", "")
        tokens = {k: attrs[f"gen_ai.usage.{k}"] for k in ("input_tokens", "output_tokens")
                  if isinstance(attrs.get(f"gen_ai.usage.{k}"), int)}
        if tokens:
            metadata["usage_metadata"] = {**tokens, "total_tokens": sum(tokens.values())}
    return metadata


def to_runs(records: list[SpanRecord], project: str) -> list[dict[str, Any]]:
    """The run dicts of one run tree's records (parents first). Records whose parent is missing become roots."""
    runs: list[dict[str, Any]] = []
    dotted: dict[str, str] = {}
    root_id: Optional[uuid.UUID] = None
    for record in tree_order(records):
        run_id = run_id_for(record)
        stamp = f"{_time(record.start_ns):%Y%m%dT%H%M%S%fZ}{run_id}"
        parent = dotted.get(record.parent_span_id or "")
        dotted[record.span_id] = f"{parent}.{stamp}" if parent else stamp
        if parent is None:
            root_id = run_id
        inputs, outputs = _io(record)
        run: dict[str, Any] = {
            "id": run_id, "trace_id": root_id, "dotted_order": dotted[record.span_id],
            "parent_run_id": run_id_for(_parent(record)) if parent else None,
            "name": record.name, "run_type": RUN_TYPES.get(record.operation, "chain"),
            "start_time": _time(record.start_ns), "end_time": _time(max(record.end_ns, record.start_ns)),
            "inputs": inputs, "outputs": outputs, "session_name": project,
            "extra": {"metadata": _metadata(record)},
            "tags": [t for t in ("rlm", str(record.attributes.get("rlm.environment") or "")) if t],
        }
        if record.status == "error":
            run["error"] = record.status_message or "error"
        runs.append(run)
    return runs


def _parent(record: SpanRecord) -> SpanRecord:
    """A stand-in record with the parent's ids (enough for :func:`run_id_for`)."""
    return SpanRecord(record.trace_id, record.parent_span_id or "", None, "", "internal", 0, 0, record.run_id)
