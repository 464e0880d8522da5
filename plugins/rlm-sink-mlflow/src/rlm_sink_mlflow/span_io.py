"""What MLflow's trace UI shows of a span: its Inputs and Outputs, and for a model call the chat.

The host's ``SpanBuilder`` puts content on the spans under the OpenTelemetry GenAI and OpenInference names:
``input.value`` / ``output.value`` on every kind, ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (GenAI
JSON: ``[{"role", "parts": [{"type": "text", "content"}]}]``) on ``chat`` spans,
``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result`` on ``execute_tool`` spans; older records carry the
task and answer as ``rlm.task`` / ``rlm.final_response`` and the rest as span events (``rlm.code``, ``rlm.output``,
``rlm.reply``, ``rlm.prompt``, ``rlm.response``, ``rlm.summary``). This module turns either into what MLflow reads:

- ``invoke_agent`` (AGENT): inputs ``{"task": …}``, outputs the answer;
- ``chat`` (CHAT_MODEL): inputs ``{"messages": [{"role", "content"}]}`` (OpenAI's chat shape), outputs the reply,
  and ``mlflow.chat.messages`` (the messages and the reply): the attribute MLflow's UI draws as a chat;
- ``execute_tool`` (TOOL): inputs ``{"code": …}``, outputs the printed output.

With content capture off the builder puts none of it on the records (``rlm_host.sdk.observability.content_policy``),
so there is nothing here to show.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from rlm_host.sdk.observability import SpanRecord

ROLES = {"system", "user", "assistant", "tool"}


def text_of(record: SpanRecord, *names: str) -> Optional[str]:
    """The first of ``names`` present on the record, as an attribute or as a span event's ``rlm.text``."""
    for name in names:
        if name in record.attributes:
            return str(record.attributes[name])
        for event in record.events:
            if event.name == name:
                return str(event.attributes.get("rlm.text", ""))
    return None


def chat_messages(value: Any) -> Optional[list[dict[str, str]]]:
    """GenAI message JSON (``parts``) → ``[{"role", "content"}]``, text parts joined; None when not messages."""
    try:
        items = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None
    if not isinstance(items, list) or not items:
        return None
    messages = []
    for item in items:
        if not isinstance(item, dict):
            return None
        role = str(item.get("role") or "user")
        if isinstance(item.get("content"), str):
            content = item["content"]
        else:
            parts = got if isinstance(got := item.get("parts"), list) else []
            content = "\n".join(_part_text(p) for p in parts)
        messages.append({"role": role if role in ROLES else "user", "content": content})
    return messages


def _part_text(part: Any) -> str:
    if not isinstance(part, dict):
        return str(part)
    if isinstance(part.get("content"), str):
        return part["content"]
    if part.get("type") == "tool_call":
        return json.dumps({"tool_call": part.get("name"), "arguments": part.get("arguments")}, ensure_ascii=False)
    return json.dumps(part.get("content", part), ensure_ascii=False, default=str)


def inputs_outputs(record: SpanRecord) -> tuple[Any, Any, Optional[list[dict[str, str]]]]:
    """(inputs, outputs, chat) MLflow shows for the span; None where the record has nothing to show."""
    operation = record.operation
    if operation == "invoke_agent":
        task = text_of(record, "input.value", "rlm.task")
        answer = text_of(record, "output.value", "rlm.final_response")
        return ({"task": task} if task is not None else None), answer, None
    if operation == "chat":
        return _chat(record)
    if operation == "execute_tool":
        arguments = record.attributes.get("gen_ai.tool.call.arguments")
        inputs = _json_object(arguments)
        if inputs is None:
            code = text_of(record, "input.value", "rlm.code")
            inputs = {"code": code} if code is not None else None
        return inputs, text_of(record, "output.value", "gen_ai.tool.call.result", "rlm.output"), None
    return None, None, None


def _chat(record: SpanRecord) -> tuple[Any, Any, Optional[list[dict[str, str]]]]:
    messages = chat_messages(record.attributes.get("gen_ai.input.messages"))
    replies = chat_messages(record.attributes.get("gen_ai.output.messages"))
    reply = "\n".join(m["content"] for m in replies) if replies else None
    if reply is None:
        reply = text_of(record, "output.value", "rlm.reply", "rlm.response", "rlm.summary")
    if messages is None:
        prompt = text_of(record, "input.value", "rlm.prompt")
        if prompt is None:
            return None, reply, None
        messages = [{"role": "user", "content": prompt}]
    chat = messages + ([{"role": "assistant", "content": reply}] if reply is not None else [])
    return {"messages": messages}, reply, chat


def _json_object(value: Any) -> Optional[dict[str, Any]]:
    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None
