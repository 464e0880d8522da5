"""A saved run as text (``rlm runs show``, ``rlm replay``): its summary, and each root step whole, with the child runs
it started. A step's lines are the host's ``step_lines``, the shapes ``rlm run``'s live view prints."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from rlm_host.sdk.commands import clip, step_lines
from rlm_host.sdk.embedding import Replay, ReplayStep, RunTrace, run_labels

SUB_TEXT_CHARS = 80


def _short(value: Any, limit: int = SUB_TEXT_CHARS) -> str:
    return clip(value if isinstance(value, str) else json.dumps(value, default=str), limit, one_line=True)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def render_step(step: ReplayStep, *, total: int | None = None) -> str:
    """A saved step whole (``rlm runs show``, ``rlm replay``): its lines, then the child runs it started."""
    children = {child.run_id: (str(child.start.get("model") or ""), child.result.usage.total_tokens
                               if child.result else 0) for child in step.children}
    lines = [text for text, _ in step_lines(step.record, total=total, sub_calls=[c.event.data for c in step.sub_calls],
                                            branches=step.branches, children=children)]
    return "\n".join(lines + ["  " + line for child in step.children for line in render_child(child).splitlines()])


def render_child(child: RunTrace) -> str:
    """A child run: a header line, then each of its steps rendered and indented."""
    result = child.result
    status = "interrupted" if result is None else result.termination_reason
    head = f"▸ child run {child.run_id} (depth {child.depth}): {_plural(len(child.steps), 'step')}, {status}"
    if result is not None and result.final_response is not None:
        head += f", final {_short(result.final_response)!r}"
    task = child.start.get("task")
    lines = [head] + ([f"  task: {_short(task)}"] if task else [])
    return "\n".join(lines + ["  " + line for step in child.steps for line in render_step(step).splitlines()])


def render_summary(replay: Replay) -> str:
    """The run's header: id, task (a chat turn's question), labels and instructions, components, outcome, steps,
    reward, tokens, cost, duration, answer."""
    root, result, start = replay.root, replay.result, replay.root.start
    started = datetime.fromtimestamp(replay.events[0].ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    parts = [f"run {root.run_id}  started {started}"]
    settings = found if isinstance(found := start.get("settings"), dict) else {}
    labels = run_labels(start)
    task = start.get("task") or (result.task if result else "")
    if start.get("question"):  # a chat turn: its task carries the conversation, its question is what was asked
        session = (f" (turn {labels.get('turn', '?')} of chat {labels['session_id']})"
                   if labels.get("session_id") else "")
        parts.append(f"question: {_short(start['question'], 200)}{session}")
    elif task:
        parts.append(f"task: {_short(task, 200)}")
    parts += ["labels: " + "  ".join(f"{k}={_short(v, 60)}" for k, v in labels.items())] if labels else []
    parts += [f"instructions: {_short(settings['instructions'], 200)}"] if settings.get("instructions") else []
    setup = {k: start.get(k) or (getattr(result, k, "") if result else "")
             for k in ("framework", "environment", "model", "sandbox")}
    if setup["framework"] == "native":
        setup["framework"] = ""  # shown only for a framework run
    parts.append("  ".join(f"{k}: {v}" for k, v in setup.items() if v) or "setup: unknown")
    if result is None:
        parts.append(f"status: interrupted after {len(replay.steps)} steps (no final event)")
    else:
        cost = result.cost if result.cost is not None else result.usage.cost
        spent = f"cost: ${cost:.4f}{'' if result.cost_complete else ' (incomplete)'}  " if cost is not None else ""
        parts.append(f"status: {result.termination_reason} ({'completed' if result.completed else 'not completed'})  "
                     f"steps: {result.steps}  reward: {result.total_reward:.2f}  tokens: {result.usage.total_tokens:,}"
                     f"  {spent}duration: {result.duration_s:.1f} s")
        parts += [f"final answer: {_short(result.final_response, 200)}"] if result.final_response is not None else []
        parts += [f"error: {_short(result.error, 200)}"] if result.error else []
    parts.extend(_sink_lines(replay))
    children = [r for r in replay.runs.values() if r.run_id != root.run_id]
    errors = replay.errors()
    parts.append(f"{_plural(len(replay.steps), 'root step')}, {_plural(len(children), 'child run')}, " + (
        f"errors at steps {', '.join(str(replay.steps[i].number) for i in errors)}" if errors else "no error steps"))
    return "\n".join(parts)


def _sink_lines(replay: Replay) -> list[str]:
    """The sinks the run fed, with the OpenTelemetry trace id under which span-shaped sinks file it (to look the
    run up in Jaeger, MLflow, Langfuse…), and any sink the run disabled."""
    from rlm_host.sdk.observability import trace_id_for

    sinks = [str(s) for s in (replay.root.start.get("settings") or {}).get("sinks") or []]
    lines = [f"sinks: {', '.join(sinks)}  trace id: {trace_id_for(replay.root.run_id)}"] if sinks else []
    for event in replay.events:
        if event.type == "sink_error":
            lines.append(f"sink {event.data.get('sink')} disabled: {_short(str(event.data.get('error')), 200)}")
    return lines
