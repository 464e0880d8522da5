"""The run event stream as a tree of spans named by the OpenTelemetry GenAI semantic conventions.

Every OpenTelemetry-shaped sink (OTLP, MLflow Tracing, Langfuse, Logfire, LangSmith) needs the same tree, so it
is built once here, with no dependency on any SDK: a :class:`SpanBuilder` turns events into finished
:class:`SpanRecord` s that a sink converts to its own span type.

The tree of one run tree (a root run and the child runs ``rlm_query`` / ``delegate`` made):

- ``invoke_agent <environment>`` per run: from ``run_start`` to ``final``; a child run nests under the
  ``execute_tool`` span of the parent's step that called it;
- ``chat <model>`` per root model turn (a step's model time, with its token usage), per ``llm_query`` sub-call
  and per compaction summary;
- ``execute_tool <tool>`` per step that ran code (tool ``repl``) or made sub-calls (tool: the step's action), with
  the code and its output as span events capped at :data:`EVENT_TEXT_CHARS`; the sub-calls and child runs the
  step made nest under it.

Ids are derived from run ids, so the same run always gives the same ids: :func:`trace_id_for` is the trace id
``rlm runs show`` prints, and a span may be exported before its parent (whose id is already known).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Union

from rlm_host.events import RunEvent
from rlm_host.text import clip

#: Characters of code, output, prompts and answers kept in a span event or attribute.
EVENT_TEXT_CHARS = 4096

AttributeValue = Union[str, bool, int, float]
SpanKind = Literal["internal", "client"]
SpanStatus = Literal["unset", "ok", "error"]


@dataclass
class SpanEventRecord:
    """A timestamped annotation of a span (code run, its output, a retry)."""

    name: str
    time_ns: int
    attributes: dict[str, AttributeValue] = field(default_factory=dict)


@dataclass
class SpanRecord:
    """One finished span. Ids are lower-case hex: ``trace_id`` 32 digits, span ids 16."""

    trace_id: str
    span_id: str
    parent_span_id: Optional[str]
    name: str
    kind: SpanKind
    start_ns: int
    end_ns: int
    run_id: str
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    events: list[SpanEventRecord] = field(default_factory=list)
    status: SpanStatus = "unset"
    status_message: str = ""

    @property
    def operation(self) -> str:
        """``invoke_agent``, ``chat`` or ``execute_tool``."""
        return str(self.attributes.get("gen_ai.operation.name", ""))


def trace_id_for(root_run_id: str) -> str:
    """The OpenTelemetry trace id of a run tree: 32 hex digits derived from its root run id."""
    return _digest(f"rlm-trace:{root_run_id}", 32)


def span_id_for(run_id: str, part: str) -> str:
    """The span id of one part of a run (``run``, ``chat:3``, ``tool:3``, ``sub:17``…)."""
    return _digest(f"rlm-span:{run_id}:{part}", 16)


def _digest(text: str, digits: int) -> str:
    value = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:digits]
    return value if value.strip("0") else "1".rjust(digits, "0")  # an all-zero id is invalid in OpenTelemetry


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def _text(value: Any) -> str:
    return clip(value if isinstance(value, str) else json.dumps(value, default=str), EVENT_TEXT_CHARS, "count")


def _scalar(value: Any) -> Optional[AttributeValue]:
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return clip(value, EVENT_TEXT_CHARS, "count")
    return None


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


class SpanBuilder:
    """Turns the events of run trees into finished spans, in the order they finish.

    Feed it every event with :meth:`add` (events of one run tree in emission order; several trees may
    interleave); each call returns the spans the event finished. :meth:`finish` ends the runs that never sent a
    ``final`` (a crash, a killed process) as errors. Not thread-safe: a sink calls it from one worker.
    """

    def __init__(self, service_name: str = "rlm") -> None:
        self.service_name = service_name
        self._runs: dict[str, _RunState] = {}
        self._sub_calls = 0

    def add(self, event: RunEvent) -> list[SpanRecord]:
        handler = getattr(self, f"_on_{event.type}", None)
        return handler(event) if handler is not None else []

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
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": str(data.get("environment") or "rlm"),
            "gen_ai.agent.id": event.run_id,
            "gen_ai.conversation.id": event.root_run_id,
            "gen_ai.request.model": str(data.get("model") or ""),
            "gen_ai.provider.name": str(data.get("provider") or ""),
            "rlm.run_id": event.run_id,
            "rlm.root_run_id": event.root_run_id,
            "rlm.depth": event.depth,
            "rlm.task": _text(data.get("task") or ""),
            "rlm.environment": str(data.get("environment") or ""),
            "rlm.framework": str(data.get("framework") or "native"),
            "rlm.sandbox": str(data.get("sandbox") or ""),
            "rlm.sub_model": str(data.get("sub_model") or ""),
        }
        if event.parent_run_id:
            attributes["rlm.parent_run_id"] = event.parent_run_id
        settings = data.get("settings") if isinstance(data.get("settings"), dict) else {}
        for key, value in (settings.get("labels") or {}).items():
            attributes[f"rlm.label.{key}"] = str(value)
        for key in ("max_steps", "max_depth", "max_llm_calls"):
            if isinstance(settings.get(key), int):
                attributes[f"rlm.{key}"] = settings[key]
        context = data.get("context") if isinstance(data.get("context"), dict) else {}
        for key in ("type", "total_chars", "documents"):
            value = _scalar(context.get(key))
            if value is not None:
                attributes[f"rlm.context.{key}"] = value
        self._runs[event.run_id] = _RunState(event.run_id, trace_id_for(event.root_run_id), parent_span, event.ts,
                                             attributes, last_ts=event.ts)  # fmt: skip
        return []

    def _on_step(self, event: RunEvent) -> list[SpanRecord]:
        state = self._runs.get(event.run_id)
        if state is None:
            return []
        data = event.data
        step = int(data.get("step") or state.last_step + 1)
        end = event.ts
        start = max(state.last_ts, end - float(data.get("duration_s") or 0.0))
        model_end = min(end, start + float(data.get("model_seconds") or 0.0))
        usage = (data.get("usage") or {}).get("root") or {}
        spans = []
        if usage.get("calls") or data.get("reply") is not None:
            chat = self._chat_span(state, f"chat:{step}", span_id_for(state.run_id, "run"),
                                   str(state.attributes.get("gen_ai.request.model", "")),
                                   str(state.attributes.get("gen_ai.provider.name", "")), start, model_end, usage)  # fmt: skip
            chat.attributes["rlm.step"] = step
            if data.get("reply") is not None:
                chat.events.append(SpanEventRecord("rlm.reply", _ns(model_end), {"rlm.text": _text(data["reply"])}))
            spans.append(chat)
        code = data.get("code")
        if code or state.step_has_children:
            spans.append(self._tool_span(state, step, data, model_end, end))
        state.last_step, state.last_ts, state.step_has_children = step, end, False
        return spans

    def _tool_span(self, state: _RunState, step: int, data: dict[str, Any], start: float,
                   end: float) -> SpanRecord:  # fmt: skip
        from rlm_host.trajectory.tree import observation_error

        observation = data.get("observation") if isinstance(data.get("observation"), dict) else {}
        tool = "repl" if data.get("code") else str(data.get("action") or "step")
        span = SpanRecord(state.trace_id, span_id_for(state.run_id, f"tool:{step}"), span_id_for(state.run_id, "run"),
                          f"execute_tool {tool}", "internal", _ns(start), _ns(end), state.run_id)  # fmt: skip
        span.attributes.update({
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": f"{state.run_id}:{step}",
            "rlm.run_id": state.run_id,
            "rlm.step": step,
            "rlm.action": str(data.get("action") or ""),
            "rlm.reward": float(data.get("reward") or 0.0),
            "rlm.cumulative_reward": float(data.get("cumulative_reward") or 0.0),
        })  # fmt: skip
        if data.get("code"):
            span.events.append(SpanEventRecord("rlm.code", _ns(start), {"rlm.text": _text(data["code"])}))
        output = "".join(str(b.get("stdout") or "") for b in observation.get("blocks") or [] if isinstance(b, dict))
        if output or not data.get("code"):
            shown = output or {k: v for k, v in observation.items() if k != "blocks"}
            span.events.append(SpanEventRecord("rlm.output", _ns(end), {"rlm.text": _text(shown)}))
        error = observation_error(observation)
        if error:
            span.status, span.status_message = "error", clip(error, 500)
            span.attributes["error.type"] = error.split(":", 1)[0][:100] or "error"
        return span

    def _chat_span(self, state: _RunState, part: str, parent: str, model: str, provider: str, start: float,
                   end: float, usage: dict[str, Any]) -> SpanRecord:  # fmt: skip
        span = SpanRecord(state.trace_id, span_id_for(state.run_id, part), parent, f"chat {model}".strip(), "client",
                          _ns(start), _ns(max(start, end)), state.run_id)  # fmt: skip
        span.attributes.update({"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                                "gen_ai.provider.name": provider, "rlm.run_id": state.run_id})  # fmt: skip
        for ours, theirs in (("input_tokens", "gen_ai.usage.input_tokens"), ("output_tokens", "gen_ai.usage.output_tokens")):
            if isinstance(usage.get(ours), int):
                span.attributes[theirs] = usage[ours]
        if isinstance(usage.get("cost"), (int, float)):
            span.attributes["rlm.cost"] = float(usage["cost"])
        return span

    def _on_sub_call(self, event: RunEvent) -> list[SpanRecord]:
        state = self._runs.get(event.run_id)
        if state is None:
            return []
        state.step_has_children = True
        data = event.data
        if data.get("child_run_id"):
            return []  # the child run's own invoke_agent span stands for it
        self._sub_calls += 1
        seconds = float(data.get("seconds") or 0.0)
        parent = span_id_for(state.run_id, f"tool:{state.last_step + 1}")
        span = self._chat_span(state, f"sub:{event.seq or self._sub_calls}", parent, str(data.get("model") or ""),
                               str(data.get("provider") or ""), event.ts - seconds, event.ts, data.get("usage") or {})  # fmt: skip
        span.attributes["rlm.sub_call.kind"] = str(data.get("kind") or "llm_query")
        if data.get("prompt") is not None:
            span.events.append(SpanEventRecord("rlm.prompt", _ns(event.ts - seconds), {"rlm.text": _text(data["prompt"])}))
        if data.get("error"):
            span.status, span.status_message = "error", clip(str(data["error"]), 500)
            span.attributes["error.type"] = "sub_call_error"
        elif data.get("response") is not None:
            span.events.append(SpanEventRecord("rlm.response", _ns(event.ts), {"rlm.text": _text(data["response"])}))
        state.last_ts = max(state.last_ts, event.ts - seconds)  # the next step starts no earlier than this call
        return [span]

    def _on_compaction(self, event: RunEvent) -> list[SpanRecord]:
        state = self._runs.get(event.run_id)
        if state is None:
            return []
        data = event.data
        span = self._chat_span(state, f"compaction:{event.seq}", span_id_for(state.run_id, "run"),
                               str(state.attributes.get("gen_ai.request.model", "")),
                               str(state.attributes.get("gen_ai.provider.name", "")), event.ts, event.ts, {})  # fmt: skip
        span.attributes.update({"rlm.compaction": True, "rlm.turns_before": int(data.get("turns_before") or 0),
                                "rlm.turns_after": int(data.get("turns_after") or 0)})  # fmt: skip
        if data.get("summary"):
            span.events.append(SpanEventRecord("rlm.summary", _ns(event.ts), {"rlm.text": _text(data["summary"])}))
        return [span]

    def _on_model_retry(self, event: RunEvent) -> list[SpanRecord]:
        state = self._runs.get(event.run_id)
        if state is not None:
            attributes = {f"rlm.{k}": v for k, v in event.data.items() if _scalar(v) is not None}
            state.events.append(SpanEventRecord("rlm.model_retry", _ns(event.ts), attributes))  # type: ignore[arg-type]
        return []

    def _on_error(self, event: RunEvent) -> list[SpanRecord]:
        state = self._runs.get(event.run_id)
        if state is not None:
            state.error = str(event.data.get("message") or "error")
            state.events.append(SpanEventRecord("exception", _ns(event.ts), {"exception.message": _text(state.error),
                                                "exception.type": str(event.data.get("where") or "rlm")}))  # fmt: skip
        return []

    def _on_final(self, event: RunEvent) -> list[SpanRecord]:
        state = self._runs.pop(event.run_id, None)
        return [self._run_span(state, event.ts, event.data)] if state is not None else []

    def _run_span(self, state: _RunState, end: float, result: dict[str, Any]) -> SpanRecord:
        span = SpanRecord(state.trace_id, span_id_for(state.run_id, "run"), state.parent_span_id,
                          f"invoke_agent {state.attributes['gen_ai.agent.name']}", "internal", _ns(state.start),
                          _ns(max(end, state.start)), state.run_id, dict(state.attributes), list(state.events))  # fmt: skip
        usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
        root, sub = usage.get("root") or {}, usage.get("sub") or {}
        for key in ("input_tokens", "output_tokens"):  # the run's totals: not gen_ai.usage.*, which a consumer
            if isinstance(root.get(key), int):           # sums over spans (the chat spans already carry them)
                span.attributes[f"rlm.usage.{key}"] = root[key] + int(sub.get(key) or 0)
        for key in ("completed", "steps", "total_reward", "termination_reason", "cost", "duration_s"):
            value = _scalar(result.get(key))
            if value is not None:
                span.attributes[f"rlm.{key}"] = value
        if result.get("final_response") is not None:
            span.attributes["rlm.final_response"] = _text(result["final_response"])
        error = result.get("error") or state.error
        if error or result.get("termination_reason") == "error" or not result:
            span.status, span.status_message = "error", clip(str(error or "run failed"), 500)
            span.attributes["error.type"] = str(result.get("termination_reason") or "error")
        else:
            span.status = "ok"
        return span


def tree_order(spans: Iterable[SpanRecord]) -> Iterator[SpanRecord]:
    """Spans with every parent before its children (for SDKs that open a child under a live parent span);
    spans whose parent is not among them come first, in start order."""
    spans = sorted(spans, key=lambda s: (s.start_ns, s.end_ns))
    ids = {s.span_id for s in spans}
    children: dict[Optional[str], list[SpanRecord]] = {}
    for span in spans:
        children.setdefault(span.parent_span_id if span.parent_span_id in ids else None, []).append(span)
    pending = list(reversed(children.get(None, [])))
    while pending:
        span = pending.pop()
        yield span
        pending.extend(reversed(children.get(span.span_id, [])))
