"""The run event stream as a tree of spans named by the OpenTelemetry GenAI semantic conventions.

Every OpenTelemetry-shaped sink (OTLP, MLflow Tracing, Langfuse, Logfire, LangSmith) needs the same tree, so it
is built once here, with no dependency on any SDK: a :class:`SpanBuilder` turns events into finished
:class:`SpanRecord` s that a sink converts to its own span type.

The tree of one run tree (a root run and the child runs ``rlm_query`` / ``delegate`` made):

- ``invoke_agent <environment>`` per run: from ``run_start`` to ``final``; a child run nests under the
  ``execute_tool`` span of the parent's step that called it;
- ``chat <model>`` per model call (each ``model_call_end``: root turns, sub-calls, compaction, synthesis; a
  failed call too, as an error with ``error.type``), with its tokens; a trajectory recorded before those events
  existed gives one per root turn, sub-call and compaction summary instead;
- ``execute_tool <tool>`` per step that ran code (tool ``repl``) or made sub-calls (tool: the step's action); the
  sub-calls and child runs the step made nest under it.

Content goes where backends look for it, only through the sink's :class:`ContentPolicy` (redacted, then
size-capped): ``input.value`` / ``output.value`` on every span (the task and answer, the messages and reply, the
code and its output), ``gen_ai.input.messages`` / ``gen_ai.output.messages`` on model calls,
``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result`` on code steps, plus ``openinference.span.kind``
(Phoenix). rlm's own ``rlm.*`` attributes and span events (``rlm.code``, ``rlm.output``…) carry it too. Error
messages (statuses, ``exception`` events, a retry's reason) go through it as well: with content off, only the
error's class.

Ids are derived from run ids, so the same run always gives the same ids: :func:`trace_id_for` is the trace id
``rlm runs show`` prints, and a span may be exported before its parent (whose id is already known).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Optional

from rlm_host.events import RunEvent
from rlm_host.observability.span_records import (AttributeValue, SpanEventRecord, SpanRecord, error_type, model_name,
                                                 span_id_for, trace_id_for, tree_order)

__all__ = ["SpanBuilder", "SpanRecord", "SpanEventRecord", "SPAN_LIVE_EVENTS", "EVENT_TEXT_CHARS", "model_name",
           "error_type", "span_id_for", "trace_id_for", "tree_order"]
from rlm_host.observability.content import ContentPolicy
from rlm_host.redact import redacted_clip
from rlm_host.trajectory.tree import observation_error, run_labels

#: Characters of code, output, prompts and answers kept in a span event or attribute.
EVENT_TEXT_CHARS = 4096

SPAN_LIVE_EVENTS: frozenset[str] = frozenset({"model_call_end"})
_TEXT, _JSON = "text/plain", "application/json"


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def _scalars(prefix: str, data: Any, keys: Iterable[str]) -> dict[str, AttributeValue]:
    """``prefix + key`` for each of ``keys`` whose value in ``data`` (a dict, else none) is a number or a setting's
    string (redacted and cut: content never comes this way)."""
    values = {key: data.get(key) for key in keys} if isinstance(data, dict) else {}
    return {prefix + key: redacted_clip(value, EVENT_TEXT_CHARS) if isinstance(value, str) else value
            for key, value in values.items() if isinstance(value, (bool, int, float, str))}


@dataclass
class _RunState:
    """What the builder holds for a run until its ``final`` event."""

    run_id: str
    trace_id: str
    parent_span_id: Optional[str]
    start: float
    attributes: dict[str, AttributeValue]
    last_step: int = 0
    last_ts: float = 0.0
    step_has_children: bool = False
    events: list[SpanEventRecord] = field(default_factory=list)
    error: str = ""
    model_calls: bool = False  # chat spans come from model_call_end events (else from steps and sub_calls)
    turn_end: float = 0.0  # when the last root turn's model call ended: the step's code starts then
    step_events: list[SpanEventRecord] = field(default_factory=list)  # for the step's execute_tool span


class SpanBuilder:
    """Turns the events of run trees into finished spans, in the order they finish.

    Feed it every event with :meth:`add` (events of one run tree in emission order; several trees may
    interleave); each call returns the spans the event finished. :meth:`finish` ends the runs that never sent a
    ``final`` (a crash, a killed process) as errors. Not thread-safe: a sink calls it from one worker.
    """

    def __init__(self, service_name: str = "rlm", *, content: ContentPolicy) -> None:
        self.service_name, self.content = service_name, content  # the sink's: ``content_policy(settings)``
        self._runs: dict[str, _RunState] = {}
        self._sub_calls = 0

    def _text_event(self, span: SpanRecord, name: str, ts: float, value: Any) -> bool:
        """Whether ``span`` got an event holding ``value`` (capped at :data:`EVENT_TEXT_CHARS`): content is
        captured and there is a value."""
        text = self.content.text(value, EVENT_TEXT_CHARS)
        if text is not None:
            span.events.append(SpanEventRecord(name, _ns(ts), {"rlm.text": text}))
        return text is not None

    def _text_and_short(self, attributes: dict[str, AttributeValue], name: str, prefix: str, value: Any) -> None:
        """``rlm.<name>`` (cut at :data:`EVENT_TEXT_CHARS`) and ``<prefix>.value`` (whole), as the content policy
        allows."""
        whole, short = self.content.text(value), self.content.text(value, EVENT_TEXT_CHARS)
        if whole is not None and short is not None:
            attributes.update({f"rlm.{name}": short, f"{prefix}.value": whole, f"{prefix}.mime_type": _TEXT})

    def _io(self, span: SpanRecord, inputs: Any, outputs: Any, input_type: str = _TEXT) -> None:
        """``input.value`` / ``output.value`` (and their mime types) as the content policy allows."""
        for prefix, value, mime in (("input", inputs, input_type), ("output", outputs, _TEXT)):
            text = self.content.text(value)
            if text is not None:
                span.attributes.update({f"{prefix}.value": text, f"{prefix}.mime_type": mime})

    def add(self, event: RunEvent) -> list[SpanRecord]:
        """The spans ``event`` finished; an event of a run whose ``run_start`` was not seen finishes none."""
        if event.type == "run_start":
            return self._on_run_start(event)
        handler, state = getattr(self, f"_on_{event.type}", None), self._runs.get(event.run_id)
        return handler(state, event) if handler is not None and state is not None else []

    def _status(self, span: SpanRecord, error: Any, kind: Optional[str] = None) -> None:
        """``ok``, or ``error`` with the message as the content policy lets it leave and its ``error.type``."""
        if error:
            span.status, span.status_message = "error", self.content.error(error)
            span.attributes["error.type"] = kind or error_type(str(error))
        else:
            span.status = "ok"

    def finish(self, reason: str = "the run ended without a final event") -> list[SpanRecord]:
        """Spans for the runs still open, children first, each with an error status."""
        spans = []
        for state in sorted(self._runs.values(), key=lambda s: -len(s.run_id)):
            state.error = state.error or reason
            spans.append(self._run_span(state, state.last_ts or state.start, {}))
        self._runs.clear()
        return spans

    @property
    def open_runs(self) -> int:
        return len(self._runs)

    # ------------------------------------------------------------------ events

    def _on_run_start(self, event: RunEvent) -> list[SpanRecord]:
        data = event.data
        parent_span = None
        parent = self._runs.get(event.parent_run_id or "")
        if parent is not None:
            parent.step_has_children = True
            parent_span = span_id_for(parent.run_id, f"tool:{parent.last_step + 1}")
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": str(data.get("environment") or "rlm"),
            "gen_ai.agent.id": event.run_id, "gen_ai.conversation.id": event.root_run_id,
            "gen_ai.request.model": model_name(str(data.get("model") or "")),
            "gen_ai.provider.name": str(data.get("provider") or ""), "openinference.span.kind": "AGENT",
            "session.id": event.root_run_id, "rlm.run_id": event.run_id, "rlm.root_run_id": event.root_run_id,
            "rlm.depth": event.depth, "rlm.framework": str(data.get("framework") or "native"),
            **{f"rlm.{key}": str(data.get(key) or "") for key in ("model", "environment", "sandbox", "sub_model")},
        }
        if event.parent_run_id:
            attributes["rlm.parent_run_id"] = event.parent_run_id
        self._text_and_short(attributes, "task", "input", data.get("task") or "")
        settings = found if isinstance(found := data.get("settings"), dict) else {}
        attributes.update({f"rlm.label.{key}": value for key, value in run_labels(data).items()})
        attributes.update({f"rlm.{key}": settings[key] for key in ("max_steps", "max_depth", "max_llm_calls")
                           if isinstance(settings.get(key), int)})
        attributes.update(_scalars("rlm.context.", data.get("context"), ("type", "total_chars", "documents")))
        self._runs[event.run_id] = _RunState(event.run_id, trace_id_for(event.root_run_id), parent_span, event.ts,
                                             attributes, last_ts=event.ts)
        return []

    def _on_step(self, state: _RunState, event: RunEvent) -> list[SpanRecord]:
        data = event.data
        step = int(data.get("step") or state.last_step + 1)
        end = event.ts
        start = max(state.last_ts, end - float(data.get("duration_s") or 0.0))
        model_end = min(end, start + float(data.get("model_seconds") or 0.0))
        if state.model_calls and start <= state.turn_end <= end:  # model_seconds counts the step's sub-calls too
            model_end = state.turn_end
        usage = (data.get("usage") or {}).get("root") or {}
        spans = []
        if not state.model_calls and (usage.get("calls") or data.get("reply") is not None):
            chat = self._chat_span(state, f"chat:{step}", None, start, model_end, usage)
            chat.attributes["rlm.step"] = step
            if self._text_event(chat, "rlm.reply", model_end, data.get("reply")):
                chat.attributes["gen_ai.output.messages"] = self.content.reply(data["reply"]) or ""
                self._io(chat, None, data["reply"])
            spans.append(chat)
        if data.get("code") or state.step_has_children:
            spans.append(self._tool_span(state, step, data, model_end, end))
        state.last_step, state.last_ts, state.step_has_children, state.step_events = step, end, False, []
        return spans

    def _tool_span(self, state: _RunState, step: int, data: dict[str, Any], start: float,
                   end: float) -> SpanRecord:
        observation = found if isinstance(found := data.get("observation"), dict) else {}
        code = data.get("code")
        tool = "repl" if code else str(data.get("action") or "step")
        span = SpanRecord(state.trace_id, span_id_for(state.run_id, f"tool:{step}"), span_id_for(state.run_id, "run"),
                          f"execute_tool {tool}", "internal", _ns(start), _ns(end), state.run_id)
        span.attributes.update({
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": f"{state.run_id}:{step}", "openinference.span.kind": "TOOL",
            "rlm.run_id": state.run_id, "rlm.step": step, "rlm.action": str(data.get("action") or ""),
            "rlm.reward": float(data.get("reward") or 0.0),
            "rlm.cumulative_reward": float(data.get("cumulative_reward") or 0.0),
        })
        output = "".join(str(b.get("stdout") or "") for b in observation.get("blocks") or [] if isinstance(b, dict))
        shown = output if output or code else {k: v for k, v in observation.items() if k != "blocks"}
        self._text_event(span, "rlm.code", start, code or None)
        self._text_event(span, "rlm.output", end, shown if output or not code else None)
        span.events.extend(state.step_events)
        if self.content.capture:
            if code:
                span.attributes["gen_ai.tool.call.arguments"] = self.content.text({"code": code}) or ""
            span.attributes["gen_ai.tool.call.result"] = self.content.text(shown) or ""
            self._io(span, code or None, shown)
        self._status(span, observation_error(observation))
        return span

    def _chat_span(self, state: _RunState, part: str, parent: Optional[str], start: float, end: float,
                   usage: dict[str, Any], model: Optional[str] = None,
                   provider: Optional[str] = None) -> SpanRecord:
        """A ``chat`` span of run ``state`` (its parent: the run's span unless given; model and provider: the
        run's root model unless given)."""
        parent = parent or span_id_for(state.run_id, "run")
        model = str(state.attributes.get("rlm.model", "")) if model is None else model
        provider = str(state.attributes.get("gen_ai.provider.name", "")) if provider is None else provider
        name = model_name(model)
        span = SpanRecord(state.trace_id, span_id_for(state.run_id, part), parent, f"chat {name}".strip(), "client",
                          _ns(start), _ns(max(start, end)), state.run_id)
        span.attributes.update({"gen_ai.operation.name": "chat", "gen_ai.request.model": name,
                                "gen_ai.provider.name": provider, "openinference.span.kind": "LLM",
                                "rlm.model": model, "rlm.run_id": state.run_id})
        for ours, theirs in (("input_tokens", "gen_ai.usage.input_tokens"),
                             ("output_tokens", "gen_ai.usage.output_tokens")):
            if isinstance(usage.get(ours), int):
                span.attributes[theirs] = usage[ours]
        if isinstance(usage.get("cost"), (int, float)):
            span.attributes["rlm.cost"] = float(usage["cost"])
        return span

    def _on_model_call_end(self, state: _RunState, event: RunEvent) -> list[SpanRecord]:
        """One model call (root turn, sub-call, compaction, synthesis), failed or not, as a ``chat`` span."""
        state.model_calls = True
        data = event.data
        seconds = float(data.get("seconds") or 0.0)
        sub = data.get("role") == "sub"
        state.step_has_children = state.step_has_children or sub
        parent = span_id_for(state.run_id, f"tool:{state.last_step + 1}" if sub else "run")
        span = self._chat_span(state, f"call:{data.get('call') or event.seq}", parent, event.ts - seconds, event.ts,
                               data, str(data.get("model") or ""), str(data.get("provider") or ""))
        purpose = str(data.get("purpose") or ("sub_call" if sub else "turn"))
        span.attributes.update({"rlm.purpose": purpose, "rlm.role": str(data.get("role") or "root")})
        if purpose == "turn":
            span.attributes["rlm.step"] = state.last_step + 1
            state.turn_end = event.ts
        if data.get("reply_format"):
            span.attributes["rlm.reply_format"] = str(data["reply_format"])
        content = event.content or {}
        messages = self.content.messages(content.get("messages") or [])
        if messages is not None:
            span.attributes.update({"gen_ai.input.messages": messages, "input.value": messages,
                                    "input.mime_type": _JSON})
        self._status(span, data.get("error") and str(data["error"]))
        if not data.get("error") and content.get("reply") is not None and self.content.capture:
            span.attributes["gen_ai.output.messages"] = self.content.reply(content["reply"]) or ""
            self._io(span, None, content["reply"])
        return [span]

    def _on_sub_call(self, state: _RunState, event: RunEvent) -> list[SpanRecord]:
        state.step_has_children = True
        data = event.data
        if data.get("child_run_id"):
            return []  # the child run's own invoke_agent span stands for it
        if state.model_calls:  # its model call has its chat span: the step's span notes the sub-call
            attributes: dict[str, AttributeValue] = {"rlm.sub_call.kind": str(data.get("kind") or "llm_query"),
                                                     "rlm.model": str(data.get("model") or "")}
            prompt = self.content.text(data.get("prompt"))
            if prompt is not None:
                attributes["rlm.prompt"] = prompt
            if data.get("error"):
                attributes["rlm.error"] = self.content.error(data["error"])
            state.step_events.append(SpanEventRecord("rlm.sub_call", _ns(event.ts), attributes))
            return []
        self._sub_calls += 1
        seconds = float(data.get("seconds") or 0.0)
        parent = span_id_for(state.run_id, f"tool:{state.last_step + 1}")
        span = self._chat_span(state, f"sub:{event.seq or self._sub_calls}", parent, event.ts - seconds, event.ts,
                               data.get("usage") or {}, str(data.get("model") or ""),
                               str(data.get("provider") or ""))
        span.attributes["rlm.sub_call.kind"] = str(data.get("kind") or "llm_query")
        if self._text_event(span, "rlm.prompt", event.ts - seconds, data.get("prompt")):
            span.attributes["gen_ai.input.messages"] = self.content.messages([{"role": "user",
                                                                               "content": data["prompt"]}]) or ""
        self._status(span, data.get("error"), "sub_call_error")
        if not data.get("error") and self._text_event(span, "rlm.response", event.ts, data.get("response")):
            span.attributes["gen_ai.output.messages"] = self.content.reply(data["response"]) or ""
        self._io(span, data.get("prompt"), None if data.get("error") else data.get("response"))
        state.last_ts = max(state.last_ts, event.ts - seconds)  # the next step starts no earlier than this call
        return [span]

    def _on_compaction(self, state: _RunState, event: RunEvent) -> list[SpanRecord]:
        data = event.data
        attributes: dict[str, AttributeValue] = {"rlm.turns_before": int(data.get("turns_before") or 0),
                                                 "rlm.turns_after": int(data.get("turns_after") or 0)}
        if state.model_calls:  # the summary's model call has its chat span: the run notes the fold
            summary = self.content.text(data.get("summary") or None)
            state.events.append(SpanEventRecord("rlm.compaction", _ns(event.ts),
                                                {**attributes,
                                                 **({"rlm.text": summary} if summary else {})}))
            return []
        span = self._chat_span(state, f"compaction:{event.seq}", None, event.ts, event.ts, {})
        span.attributes.update({"rlm.compaction": True, **attributes})
        if self._text_event(span, "rlm.summary", event.ts, data.get("summary") or None):
            self._io(span, None, data["summary"])
        return [span]

    def _on_model_retry(self, state: _RunState, event: RunEvent) -> list[SpanRecord]:
        attributes = _scalars("rlm.", event.data, [key for key in event.data if key != "reason"])
        if event.data.get("reason"):  # a provider's error: it may quote the prompt
            attributes["rlm.reason"] = self.content.error(event.data["reason"])
        state.events.append(SpanEventRecord("rlm.model_retry", _ns(event.ts), attributes))
        return []

    def _on_error(self, state: _RunState, event: RunEvent) -> list[SpanRecord]:
        state.error = str(event.data.get("message") or "error")
        state.events.append(SpanEventRecord("exception", _ns(event.ts), {
            "exception.message": self.content.error(state.error, EVENT_TEXT_CHARS),
            "exception.type": str(event.data.get("where") or "rlm")}))
        return []

    def _on_final(self, state: _RunState, event: RunEvent) -> list[SpanRecord]:
        del self._runs[event.run_id]
        return [self._run_span(state, event.ts, event.data)]

    def _run_span(self, state: _RunState, end: float, result: dict[str, Any]) -> SpanRecord:
        span = SpanRecord(state.trace_id, span_id_for(state.run_id, "run"), state.parent_span_id,
                          f"invoke_agent {state.attributes['gen_ai.agent.name']}", "internal", _ns(state.start),
                          _ns(max(end, state.start)), state.run_id, dict(state.attributes),
                          list(state.events))
        usage = found if isinstance(found := result.get("usage"), dict) else {}
        root, sub = usage.get("root") or {}, usage.get("sub") or {}
        for key in ("input_tokens", "output_tokens"):  # the run's totals: not gen_ai.usage.*, which a consumer
            if isinstance(root.get(key), int):           # sums over spans (the chat spans already carry them)
                span.attributes[f"rlm.usage.{key}"] = root[key] + int(sub.get(key) or 0)
        span.attributes.update(_scalars("rlm.", result, ("completed", "steps", "total_reward", "termination_reason",
                                                         "cost", "duration_s")))
        self._text_and_short(span.attributes, "final_response", "output", result.get("final_response"))
        error = result.get("error") or state.error
        failed = error or result.get("termination_reason") == "error" or not result
        self._status(span, (error or "run failed") if failed else None,
                     str(result.get("termination_reason") or "error"))
        return span
