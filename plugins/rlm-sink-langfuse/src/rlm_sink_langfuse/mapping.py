"""The Langfuse attributes of one span record: what makes the Langfuse UI show an rlm run tree well.

Each ``invoke_agent`` span becomes an *agent* observation, ``chat`` a *generation* (model, usage details, cost),
``execute_tool`` a *tool* (the code as input, its output as output); anything else a *span*. A generation's input
is the messages sent, as the chat Langfuse renders, its output the reply. The root run's span
also names the trace (the task), gives its input / output, tags and metadata (the run's labels). Attribute names
are the SDK's own (``langfuse.LangfuseOtelSpanAttributes``).
"""

from __future__ import annotations

import json
from typing import Any, Optional

from rlm_sink_langfuse.sdk import LangfuseOtelSpanAttributes as A

from rlm_host.sdk.observability import SpanRecord, chat_messages

#: gen_ai.operation.name → Langfuse observation type.
OBSERVATION_TYPES = {"invoke_agent": "agent", "chat": "generation", "execute_tool": "tool"}
TRACE_NAME_CHARS = 200
_INPUT_EVENTS = ("rlm.prompt", "rlm.code")
_OUTPUT_EVENTS = ("rlm.reply", "rlm.response", "rlm.output", "rlm.summary")


def _event_text(record: SpanRecord, names: tuple[str, ...]) -> Optional[str]:
    texts = [str(e.attributes.get("rlm.text", "")) for e in record.events if e.name in names]
    return "\n".join(texts) if texts else None


def _input(record: SpanRecord) -> Optional[str]:
    """What went in: a generation's messages as a chat (Langfuse renders role/content lists), else the span's
    ``input.value`` (the task, the code); a trajectory recorded before those existed: the rlm.* events."""
    attrs = record.attributes
    if record.operation == "chat" and attrs.get("gen_ai.input.messages"):
        messages = chat_messages(attrs["gen_ai.input.messages"])
        if messages:
            return json.dumps(messages, ensure_ascii=False)
    if "input.value" in attrs:
        return str(attrs["input.value"])
    return attrs.get("rlm.task") if record.operation == "invoke_agent" else _event_text(record, _INPUT_EVENTS)  # type: ignore[return-value]


def _output(record: SpanRecord) -> Optional[str]:
    attrs = record.attributes
    if "output.value" in attrs:
        return str(attrs["output.value"])
    if record.operation == "invoke_agent":
        return attrs.get("rlm.final_response")  # type: ignore[return-value]
    return _event_text(record, _OUTPUT_EVENTS)


def observation_attributes(record: SpanRecord) -> dict[str, Any]:
    """Langfuse observation attributes (type, input/output, model and usage, level) of ``record``."""
    attrs = record.attributes
    kind = OBSERVATION_TYPES.get(record.operation, "span")
    out: dict[str, Any] = {A.OBSERVATION_TYPE: kind}
    out[A.OBSERVATION_INPUT], out[A.OBSERVATION_OUTPUT] = _input(record), _output(record)
    if kind == "generation":
        out[A.OBSERVATION_MODEL] = attrs.get("gen_ai.request.model") or None
        usage = {ours: count for ours, theirs in (("input", "gen_ai.usage.input_tokens"),
                                                  ("output", "gen_ai.usage.output_tokens"))
                 if isinstance(count := attrs.get(theirs), (int, float))}
        if usage:
            usage["total"] = sum(usage.values())
            out[A.OBSERVATION_USAGE_DETAILS] = json.dumps(usage)
        if isinstance(attrs.get("rlm.cost"), float):
            out[A.OBSERVATION_COST_DETAILS] = json.dumps({"total": attrs["rlm.cost"]})
    if record.status == "error":
        out[A.OBSERVATION_LEVEL] = "ERROR"
        out[A.OBSERVATION_STATUS_MESSAGE] = record.status_message or None
    return out


def trace_attributes(record: SpanRecord) -> dict[str, Any]:
    """Trace-level attributes, set on the root run's span only: name (the task), input, output, tags, metadata."""
    if record.parent_span_id is not None or record.operation != "invoke_agent":
        return {}
    attrs = record.attributes
    task = str(attrs.get("rlm.task") or "")
    tags = [t for t in ("rlm", attrs.get("rlm.environment"), attrs.get("rlm.framework")) if t]
    out: dict[str, Any] = {
        A.TRACE_NAME: (task[:TRACE_NAME_CHARS].splitlines() or [record.name])[0] or record.name,
        A.TRACE_TAGS: tags,
    }
    # SDK v4 has trace-level input/output attributes; v5 dropped them (a trace's input/output are its root
    # observation's, which observation_attributes already sets to the task and the final response).
    if hasattr(A, "TRACE_INPUT"):
        out[A.TRACE_INPUT], out[A.TRACE_OUTPUT] = task or None, attrs.get("rlm.final_response")
    for key in ("rlm.run_id", "rlm.environment", "rlm.framework", "rlm.sandbox", "gen_ai.request.model"):
        if attrs.get(key):
            out[f"{A.TRACE_METADATA}.{key.rsplit('.', 1)[-1]}"] = str(attrs[key])
    for key, value in attrs.items():
        if key.startswith("rlm.label."):
            label = key[len("rlm.label."):]
            out[f"{A.TRACE_METADATA}.{label}"] = str(value)
            if label in ("session", "session_id"):
                out[A.TRACE_SESSION_ID] = str(value)
            if label in ("user", "user_id"):
                out[A.TRACE_USER_ID] = str(value)
    return out


def langfuse_attributes(record: SpanRecord) -> dict[str, Any]:
    """All the Langfuse attributes of ``record`` (None values are dropped by the replay)."""
    return {**observation_attributes(record), **trace_attributes(record)}
