"""Text renderings of a saved run for ``rlm runs show`` and ``rlm replay``: one step, a child run, a summary."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from rlm_host.cli.live import candidate_line
from rlm_host.text import clip, clip_lines
from rlm_host.trajectory.tree import Replay, ReplayStep, RunTrace, SubCall, observation_error

OUTPUT_LINES = 40
SUB_TEXT_CHARS = 80


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.splitlines())


def _short(value: Any, limit: int = SUB_TEXT_CHARS) -> str:
    return clip(value if isinstance(value, str) else json.dumps(value, default=str), limit, one_line=True)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _tokens(input_tokens: int, output_tokens: int) -> str:
    return f"{input_tokens + output_tokens:,} tokens ({input_tokens:,} in / {output_tokens:,} out)"


def _section(label: str, text: Any, max_lines: int) -> list[str]:
    return [f"{label}:", _indent(clip_lines(str(text), max_lines), "    ")] if text not in (None, "") else []


def render_step(step: ReplayStep, *, total: int | None = None, max_lines: int = OUTPUT_LINES) -> str:
    """One step as text: number, action, reward, tokens, code, output, error, sub-calls and child runs."""
    record = step.record
    root, sub = record.usage.root, record.usage.sub
    extra = ((root.total_tokens, _tokens(root.input_tokens, root.output_tokens)),
             (sub.total_tokens, f"sub {sub.total_tokens:,} tokens"), (record.duration_s, f"{record.duration_s:.1f} s"))
    head = [f"step {record.step}{f'/{total}' if total else ''}", f"action: {record.action}",
            f"reward {record.reward:+.2f}", *(text for shown, text in extra if shown)]
    lines = [f"── {' · '.join(head)}" + (f" [depth {step.event.depth}]" if step.event.depth else "") + " ──"]
    observation = dict(record.observation)
    if blocks := [b for b in observation.pop("blocks", None) or [] if isinstance(b, dict)]:
        for number, block in enumerate(blocks, 1):
            suffix = f" {number}/{len(blocks)}" if len(blocks) > 1 else ""
            lines += _section(f"code{suffix}", block.get("code"), max_lines)
            lines += _section("output", (block.get("stdout") or "").rstrip("\n"), max_lines)
            lines += _section("stderr", block.get("stderr"), max_lines)
            timed_out = "timed out" if block.get("timed_out") else None
            lines += _section("error", block.get("error") or timed_out, max_lines)
    elif record.code:
        lines += _section("code", record.code, max_lines)
    else:
        lines += _section("reply", record.reply, max_lines)
    for label, keys in (("output", ("stdout", "output")), ("stderr", ("stderr",)), ("error", ("error",))):
        text = next((observation[k] for k in keys if observation.get(k)), None)
        for key in keys:
            observation.pop(key, None)
        lines += _section(label, text, max_lines)
    if record.action == "error" and step.error and not observation_error(record.observation):
        lines += _section("error", step.error, max_lines)
    lines += [f"note: {note}" for note in observation.pop("notes", None) or []]
    observation.pop("success", None)
    if variables := [v for v in observation.pop("variables", None) or [] if isinstance(v, dict)]:
        lines.append("variables:")
        for v in variables:
            size = f", {v['size']:,}" if isinstance(v.get("size"), int) and v["size"] >= 0 else ""
            lines.append(f"  │ {v.get('name')} ({v.get('type')}{size}) = {_short(v.get('repr'), 70)}")
    rest = {k: v for k, v in observation.items() if v not in (None, "", [], {}, False)}
    lines += ["observation: " + ", ".join(f"{k}={_short(v, 60)}" for k, v in rest.items())] if rest else []
    if step.branches:
        lines.append(f"candidates ({len(step.branches)}):")
        lines += [f"    {candidate_line(tried)}  {_short(str(tried.get('code') or tried.get('reply') or ''), 70)}"
                  for tried in step.branches]
    lines += [f"sub-calls ({len(step.sub_calls)}):"] if step.sub_calls else []
    lines += ["    " + _render_sub_call(call) for call in step.sub_calls]
    lines += [f"child runs ({len(step.children)}):"] if step.children else []
    lines += [_indent(render_child(child, max_lines=max_lines), "    ") for child in step.children]
    return "\n".join(lines)


def _render_sub_call(call: SubCall) -> str:
    data = call.event.data
    usage, who = data.get("usage") or {}, data.get("model") or data.get("tool")
    tokens = _tokens(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))
    extra = ((who, str(who)), (usage, tokens), (data.get("seconds"), f"{float(data.get('seconds') or 0):.1f} s"))
    text = " · ".join([call.kind, *(part for shown, part in extra if shown)])
    if data.get("prompt") or data.get("arguments"):
        text += f"  {_short(data.get('prompt') or data['arguments'])!r}"
    if data.get("error"):
        text += f"  → error: {_short(data['error'])}"
    elif data.get("response") is not None or data.get("result") is not None:
        text += f"  → {_short(data['response'] if data.get('response') is not None else data['result'])!r}"
    if call.child_run_id:
        text += f"  (child run {call.child_run_id})"
    return text


def render_child(child: RunTrace, *, max_lines: int = OUTPUT_LINES) -> str:
    """A child run: a header line, then each of its steps rendered and indented."""
    result = child.result
    status = "interrupted" if result is None else result.termination_reason
    head = f"▸ child run {child.run_id} (depth {child.depth}): {_plural(len(child.steps), 'step')}, {status}"
    if result is not None and result.final_response is not None:
        head += f", final {_short(result.final_response)!r}"
    task = child.start.get("task")
    lines = [head] + ([f"  task: {_short(task)}"] if task else [])
    return "\n".join(lines + [_indent(render_step(step, max_lines=max_lines), "  ") for step in child.steps])


def render_summary(replay: Replay) -> str:
    """The run's header: id, task (a chat turn's question), labels and instructions, components, outcome, steps,
    reward, tokens, cost, duration, answer."""
    root, result, start = replay.root, replay.result, replay.root.start
    started = datetime.fromtimestamp(replay.events[0].ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    parts = [f"run {root.run_id}  started {started}"]
    settings = found if isinstance(found := start.get("settings"), dict) else {}
    labels = found if isinstance(found := settings.get("labels"), dict) else {}
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
    from rlm_host.observability.spans import trace_id_for

    sinks = [str(s) for s in (replay.root.start.get("settings") or {}).get("sinks") or []]
    lines = [f"sinks: {', '.join(sinks)}  trace id: {trace_id_for(replay.root.run_id)}"] if sinks else []
    for event in replay.events:
        if event.type == "sink_error":
            lines.append(f"sink {event.data.get('sink')} disabled: {_short(str(event.data.get('error')), 200)}")
    return lines
