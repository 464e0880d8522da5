"""Replay: a saved run tree read back as steps, with child runs nested under the step that spawned them.

Events are grouped per run (``run_id``). A run's ``sub_call`` events and its child runs happen while a step's
code executes, before that step's ``step`` event, so each is attached to the next step event of its parent run;
a ``sub_call`` with ``data.child_run_id`` names the child run it started. ``Replay`` navigates the root run's
steps; ``render_step`` and ``render_summary`` are the text views the CLI prints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Optional

from rlm_host.events import RunEvent
from rlm_host.results import RunResult, StepRecord
from rlm_host.text import clip, clip_lines

OUTPUT_LINES = 40
SUB_TEXT_CHARS = 80


@dataclass
class SubCall:
    """One ``sub_call`` event: a sub-model call or a child run started from sandbox code."""

    event: RunEvent
    child: Optional["RunTrace"] = None

    @property
    def kind(self) -> str:
        return str(self.event.data.get("kind") or "sub_call")

    @property
    def child_run_id(self) -> Optional[str]:
        return self.event.data.get("child_run_id")


@dataclass
class ReplayStep:
    """One step of a run: its record, the sub-calls made during it and the child runs it spawned."""

    record: StepRecord
    event: RunEvent
    sub_calls: list[SubCall] = field(default_factory=list)
    children: list["RunTrace"] = field(default_factory=list)

    @property
    def number(self) -> int:
        return self.record.step

    @property
    def error(self) -> Optional[str]:
        """The observation's error (of the step or of one of its code blocks), or why an ``error`` action failed."""
        error = observation_error(self.record.observation)
        if error is None and self.record.action == "error":
            return str(self.record.observation.get("message") or self.record.reply or "error")
        return error

    @property
    def is_error(self) -> bool:
        return self.error is not None


@dataclass
class RunTrace:
    """One run of the tree: its start data, steps, final result and any events after its last step."""

    run_id: str
    parent_run_id: Optional[str] = None
    depth: int = 0
    start: dict[str, Any] = field(default_factory=dict)
    steps: list[ReplayStep] = field(default_factory=list)
    result: Optional[RunResult] = None
    errors: list[RunEvent] = field(default_factory=list)
    pending_sub_calls: list[SubCall] = field(default_factory=list)  # after the last step (interrupted run)
    pending_children: list["RunTrace"] = field(default_factory=list)

    @property
    def interrupted(self) -> bool:
        return self.result is None


class Replay:
    """Navigation over the root run's steps of a loaded trajectory; ``cursor`` is a 0-based step index."""

    def __init__(self, events: Iterable[RunEvent]) -> None:
        self.events = sorted(events, key=lambda e: e.seq)
        if not self.events:
            raise ValueError("a replay needs at least one event")
        self.runs = _build(self.events)
        root_id = self.events[0].root_run_id
        self.root = self.runs.get(root_id) or self.runs[self.events[0].run_id]
        self.steps = self.root.steps
        self.cursor = 0

    @property
    def result(self) -> Optional[RunResult]:
        return self.root.result

    def __len__(self) -> int:
        return len(self.steps)

    def step(self, index: int) -> ReplayStep:
        """The step at ``index`` (0-based); IndexError when out of range."""
        if not 0 <= index < len(self.steps):
            raise IndexError(f"step index {index} out of range (run has {len(self.steps)} steps)")
        return self.steps[index]

    @property
    def current(self) -> Optional[ReplayStep]:
        return self.steps[self.cursor] if self.steps else None

    def goto(self, index: int) -> ReplayStep:
        """Move the cursor to ``index`` and return that step."""
        step = self.step(index)
        self.cursor = index
        return step

    def next(self) -> Optional[ReplayStep]:
        """Advance one step; None (cursor unchanged) at the last step."""
        if self.cursor + 1 >= len(self.steps):
            return None
        return self.goto(self.cursor + 1)

    def prev(self) -> Optional[ReplayStep]:
        """Go back one step; None (cursor unchanged) at the first step."""
        if self.cursor <= 0:
            return None
        return self.goto(self.cursor - 1)

    def index_of(self, number: int) -> Optional[int]:
        """The index of the step recorded with step number ``number``."""
        return next((i for i, s in enumerate(self.steps) if s.number == number), None)

    def errors(self) -> list[int]:
        """Indices of the steps whose observation has an error or whose action is ``error``."""
        return [i for i, s in enumerate(self.steps) if s.is_error]

    def next_error(self) -> Optional[ReplayStep]:
        """Move to the next error step after the cursor; None (cursor unchanged) when there is none."""
        following = [i for i in self.errors() if i > self.cursor]
        return self.goto(following[0]) if following else None

    def recorded_responses(self) -> list[Optional[str]]:
        """The root model's reply texts, one per root step in order (None: the provider returned no content)."""
        return [s.record.reply for s in self.steps]


def _build(events: list[RunEvent]) -> dict[str, RunTrace]:
    """Group events into runs, attach sub-calls and child runs to the steps that made them."""
    runs: dict[str, RunTrace] = {}
    first_seq: dict[str, int] = {}
    pending: dict[str, list[SubCall]] = {}
    for event in events:
        run = runs.get(event.run_id)
        if run is None:
            run = runs[event.run_id] = RunTrace(event.run_id, event.parent_run_id, event.depth)
            first_seq[event.run_id] = event.seq
        if event.type == "run_start":
            run.start = dict(event.data)
        elif event.type == "sub_call":
            pending.setdefault(event.run_id, []).append(SubCall(event))
        elif event.type == "step":
            record = _step_record(event.data, len(run.steps) + 1)
            run.steps.append(ReplayStep(record, event, pending.pop(event.run_id, [])))
        elif event.type == "final":
            try:
                run.result = RunResult.model_validate(event.data)
            except ValueError:  # an unreadable result still ends the run: keep it as an error event
                run.errors.append(event)
        elif event.type == "error":
            run.errors.append(event)
    for run_id, calls in pending.items():
        runs[run_id].pending_sub_calls = calls
    _attach_children(runs, first_seq)
    return runs


def _step_record(data: dict[str, Any], number: int) -> StepRecord:
    """A step's record; one that does not validate is kept as an error step rather than lost."""
    try:
        return StepRecord.model_validate(data)
    except ValueError as exc:
        detail = str(exc).splitlines()[0]
        return StepRecord(step=number, action="error", observation={"error": f"unreadable step record: {detail}"})


def _attach_children(runs: dict[str, RunTrace], first_seq: dict[str, int]) -> None:
    """Nest each child run under its parent's step: by the sub_call naming it, else by event order."""
    linked: set[str] = set()
    for run in runs.values():
        holders = [(s.sub_calls, s.children) for s in run.steps] + [(run.pending_sub_calls, run.pending_children)]
        for calls, children in holders:
            for call in calls:
                child = runs.get(call.child_run_id or "")
                if child is not None and child.run_id not in linked:
                    call.child = child
                    children.append(child)
                    linked.add(child.run_id)
    for child in runs.values():
        parent = runs.get(child.parent_run_id or "")
        if parent is None or child.run_id in linked:
            continue
        seq = first_seq[child.run_id]
        step = next((s for s in parent.steps if s.event.seq > seq), None)
        (step.children if step else parent.pending_children).append(child)


def observation_error(observation: dict[str, Any]) -> Optional[str]:
    """The error an observation records: its own ``error``, else the first code block's error or time-out."""
    if observation.get("error"):
        return str(observation["error"])
    for block in observation.get("blocks") or []:
        if isinstance(block, dict) and (block.get("error") or block.get("timed_out")):
            return str(block.get("error") or "timed out")
    return None


# --- text rendering ---------------------------------------------------------------------------------------


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.splitlines())


def _short(value: Any, limit: int = SUB_TEXT_CHARS) -> str:
    return clip(value if isinstance(value, str) else json.dumps(value, default=str), limit, one_line=True)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _tokens(prompt: int, completion: int) -> str:
    return f"{prompt + completion:,} tokens ({prompt:,} in / {completion:,} out)"


def _section(label: str, text: Any, max_lines: int) -> list[str]:
    return [f"{label}:", _indent(clip_lines(str(text), max_lines), "    ")] if text not in (None, "") else []


def render_step(step: ReplayStep, *, total: int | None = None, max_lines: int = OUTPUT_LINES) -> str:
    """One step as text: number, action, reward, tokens, code, output, error, sub-calls and child runs."""
    record = step.record
    root, sub = record.usage.root, record.usage.sub
    head = [f"step {record.step}{f'/{total}' if total else ''}", f"action: {record.action}",
            f"reward {record.reward:+.2f}"]  # fmt: skip
    if root.total_tokens:
        head.append(_tokens(root.prompt_tokens, root.completion_tokens))
    if sub.total_tokens:
        head.append(f"sub {sub.total_tokens:,} tokens")
    if record.duration_s:
        head.append(f"{record.duration_s:.1f} s")
    depth = f" [depth {step.event.depth}]" if step.event.depth else ""
    lines = [f"── {' · '.join(head)}{depth} ──"]
    observation = dict(record.observation)
    blocks = [b for b in observation.pop("blocks", None) or [] if isinstance(b, dict)]
    if blocks:
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
    for note in observation.pop("notes", None) or []:
        lines.append(f"note: {note}")
    observation.pop("success", None)
    rest = {k: v for k, v in observation.items() if v not in (None, "", [], {}, False)}
    if rest:
        lines.append("observation: " + ", ".join(f"{k}={_short(v, 60)}" for k, v in rest.items()))
    if step.sub_calls:
        lines.append(f"sub-calls ({len(step.sub_calls)}):")
        lines += ["    " + _render_sub_call(call) for call in step.sub_calls]
    if step.children:
        lines.append(f"child runs ({len(step.children)}):")
        lines += [_indent(render_child(child, max_lines=max_lines), "    ") for child in step.children]
    return "\n".join(lines)


def _render_sub_call(call: SubCall) -> str:
    data = call.event.data
    parts = [call.kind]
    if data.get("model"):
        parts.append(str(data["model"]))
    usage = data.get("usage") or {}
    if usage:
        parts.append(_tokens(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)))
    if data.get("seconds"):
        parts.append(f"{float(data['seconds']):.1f} s")
    text = " · ".join(parts)
    if data.get("prompt"):
        text += f"  {_short(data['prompt'])!r}"
    if data.get("error"):
        text += f"  → error: {_short(data['error'])}"
    elif data.get("response") is not None:
        text += f"  → {_short(data['response'])!r}"
    if call.child_run_id:
        text += f"  (child run {call.child_run_id})"
    return text


def render_child(child: RunTrace, *, max_lines: int = OUTPUT_LINES) -> str:
    """A child run: a header line, then each of its steps rendered and indented."""
    result = child.result
    status = "interrupted" if result is None else result.termination_reason
    count = len(child.steps)
    head = f"▸ child run {child.run_id} (depth {child.depth}): {_plural(count, 'step')}, {status}"
    if result is not None and result.final_response is not None:
        head += f", final {_short(result.final_response)!r}"
    task = child.start.get("task")
    lines = [head] + ([f"  task: {_short(task)}"] if task else [])
    for step in child.steps:
        lines.append(_indent(render_step(step, max_lines=max_lines), "  "))
    return "\n".join(lines)


def render_summary(replay: Replay) -> str:
    """The run's header: id, task, components, outcome, steps, reward, tokens, cost, duration, answer."""
    root, result, start = replay.root, replay.result, replay.root.start
    started = datetime.fromtimestamp(replay.events[0].ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    parts = [f"run {root.run_id}  started {started}"]
    task = start.get("task") or (result.task if result else "")
    if task:
        parts.append(f"task: {_short(task, 200)}")
    setup = {k: start.get(k) or (getattr(result, k, "") if result else "") for k in ("environment", "model", "sandbox")}
    parts.append("  ".join(f"{k}: {v}" for k, v in setup.items() if v) or "setup: unknown")
    if result is None:
        parts.append(f"status: interrupted after {len(replay.steps)} steps (no final event)")
    else:
        cost = result.cost if result.cost is not None else result.usage.cost
        parts.append(
            f"status: {result.termination_reason} ({'completed' if result.completed else 'not completed'})  "
            f"steps: {result.steps}  reward: {result.total_reward:.2f}  tokens: {result.usage.total_tokens:,}  "
            + (f"cost: ${cost:.4f}  " if cost is not None else "")
            + f"duration: {result.duration_s:.1f} s"
        )
        if result.final_response is not None:
            parts.append(f"final answer: {_short(result.final_response, 200)}")
        if result.error:
            parts.append(f"error: {_short(result.error, 200)}")
    children = [r for r in replay.runs.values() if r.run_id != root.run_id]
    errors = replay.errors()
    parts.append(
        f"{_plural(len(replay.steps), 'root step')}, {_plural(len(children), 'child run')}, "
        + (f"errors at steps {', '.join(str(replay.steps[i].number) for i in errors)}" if errors else "no error steps")
    )
    return "\n".join(parts)
