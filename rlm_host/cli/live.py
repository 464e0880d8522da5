"""The live view of ``rlm run``: each step as ``rlm runs show`` shows it (``render.step_lines``, compact), printed on
stderr as it ends (stdout stays free for ``--json``), its sub-calls under its code; an ``rlm_query`` with its child
run's model and tokens. On a terminal a spinner (:class:`Spinner`) shows the step under way, its time and the tokens
so far; piped, nothing but the lines."""

from __future__ import annotations

import time
from typing import Any, Optional

from rlm_host.cli.render import step_lines, sub_call_line
from rlm_host.events import RunEvent
from rlm_host.results import RunUsage, StepRecord, Usage
from rlm_host.text import terminal_safe

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PER_SECOND = 8


class LiveView:
    """An event subscriber that renders with rich when stderr is a terminal, plain text otherwise."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)  # "openai:x:" stays text
        self.sub_calls: dict[str, list[RunEvent]] = {}  # per run: the sub-calls of the step under way
        self.branches: dict[str, list[RunEvent]] = {}  # per run: the candidates of the step under way
        self.children: dict[str, tuple[str, int]] = {}  # child run id → its model and tokens (for ↳ rlm_query)
        self.spinner = Spinner(self.console)

    def __call__(self, event: RunEvent) -> None:
        if (handler := getattr(self, f"_on_{event.type}", None)) is not None:
            handler(event, "  " * event.depth)

    def close(self) -> None:
        """Stop the spinner (a run that raised before its final event)."""
        self.spinner.stop()

    def _print(self, text: str, style: str = "") -> None:
        """The view's one printer: markup escaped, control characters shown, never sent (``terminal_safe``: the
        model's code and output, a task or an error could otherwise move the cursor or rewrite the screen)."""
        from rich.markup import escape

        shown = escape(terminal_safe(text))
        self.console.print(f"[{style}]{shown}[/]" if style else shown)

    def _on_run_start(self, event: RunEvent, indent: str) -> None:
        data = event.data
        context = data.get("context", {})
        size = {"none": "no context", "path": f"{context.get('path')} ({context.get('bytes', 0):,} bytes, unread)"}.get(
            context.get("type"), f"{context.get('total_chars', 0):,} chars")
        if event.depth:
            self.children[event.run_id] = (data.get("model", ""), 0)
        framework = data.get("framework") or "native"
        setup = f"framework={framework}" if framework != "native" else f"env={data['environment']}"
        self._print(f"{indent}▶ {'child run' if event.depth else 'run'} {event.run_id}  {setup} model={data['model']} "
                    f"sandbox={data['sandbox']} context={size}", "bold")
        for notice in data.get("notices", []) if event.depth == 0 else []:  # a child run repeats its root's
            self._print(f"{indent}! {notice}", "yellow")
        if event.depth == 0:
            self.spinner.start()

    def _on_step(self, event: RunEvent, indent: str) -> None:
        record = StepRecord.model_validate(event.data)
        own = record.usage.root.total_tokens  # sub-calls were counted as they came
        if event.depth:
            self.spinner.tokens += own
        else:
            self.spinner.step(own)
        branches = [b.data for b in self.branches.pop(event.run_id, [])]
        sub_calls = [e.data for e in self.sub_calls.pop(event.run_id, [])]
        for text, style in step_lines(record, sub_calls=sub_calls, branches=branches, children=self.children,
                                      compact=True):
            self._print(indent + text, style)

    def _on_sub_call(self, event: RunEvent, indent: str) -> None:
        """Kept until its step is shown: a sub-call is made by the step's code, and the step is reported after."""
        if event.data.get("kind") != "rlm_query":  # a child run's tokens come with its steps
            self.spinner.tokens += Usage.model_validate(event.data.get("usage") or {}).total_tokens
        self.sub_calls.setdefault(event.run_id, []).append(event)

    def _on_branch(self, event: RunEvent, indent: str) -> None:
        self.branches.setdefault(event.run_id, []).append(event)

    def _flush_sub_calls(self, run_id: str, indent: str) -> None:
        """The sub-calls of a step an error stopped, or of a run that ended before its next step."""
        for event in self.sub_calls.pop(run_id, []):
            text, style = sub_call_line(event.data, self.children, compact=True)
            self._print(indent + text, style)

    def _on_model_call_start(self, event: RunEvent, indent: str) -> None:
        self.spinner.doing[event.data.get("call", 0)] = f"waiting for {event.data.get('model') or 'the model'}…"

    def _on_model_call_end(self, event: RunEvent, indent: str) -> None:
        self.spinner.doing.pop(event.data.get("call", 0), None)

    def _on_code_start(self, event: RunEvent, indent: str) -> None:
        self.spinner.doing[event.data.get("call", 0)] = "running code…"

    _on_code_end = _on_model_call_end

    def _on_compaction(self, event: RunEvent, indent: str) -> None:
        self._print(f"{indent}  ⇣ history compacted: {event.data['turns_before']} → {event.data['turns_after']} turns",
                    "yellow")

    def _on_model_retry(self, event: RunEvent, indent: str) -> None:
        data = event.data
        self._print(f"{indent}  ⟳ {data.get('role', '')} {data.get('model', '')} · {data.get('reason', '')} · retry "
                    f"(attempt {data.get('attempt', 0) + 1}) in {data.get('wait', 0):.1f}s", "yellow")

    def _on_error(self, event: RunEvent, indent: str) -> None:
        self._flush_sub_calls(event.run_id, indent)  # made by a step the error stopped
        self._print(f"{indent}  ✗ {event.data['message']}", "red")

    def _on_final(self, event: RunEvent, indent: str) -> None:
        if event.depth == 0:
            self.spinner.stop()
        self._flush_sub_calls(event.run_id, indent)
        data: dict[str, Any] = event.data
        usage = RunUsage.model_validate(data["usage"])
        if event.run_id in self.children:  # the whole child run, synthesis included
            self.children[event.run_id] = (self.children[event.run_id][0], usage.total_tokens)
        cost = final_cost(data)
        spent = " + ".join(([f"${cost:.4f}"] if cost is not None else [])
                           + ([f"{usage.unpriced_calls} call(s) of unknown cost"] if usage.unpriced_calls else []))
        spent += " · " if spent else ""
        self._print(f"{indent}{'✓' if data['completed'] else '■'} {data['termination_reason']} after {data['steps']} "
                    f"step{'' if data['steps'] == 1 else 's'} · reward {data['total_reward']:+.2f} · tokens root "
                    f"{usage.root.total_tokens:,} sub {usage.sub.total_tokens:,} · {spent}{data['duration_s']:.1f}s",
                    "bold green" if data["completed"] else "bold yellow")


def final_cost(result: dict[str, Any]) -> float | None:
    """A RunResult's cost in USD (its own, else the sum over roles), None when no price was known."""
    return float(result["cost"]) if result.get("cost") is not None else RunUsage.model_validate(
        result.get("usage") or {}).cost


class Spinner:
    """The live view's spinner: while a model call or code runs, one line on a terminal's stderr with the step, its
    elapsed time, the tokens so far and what is in progress ("waiting for openai:gpt-5…", "running code…", from the
    live events), drawn by rich's refresh thread, never when stderr is not a terminal. ``start()`` at the root run's
    start, ``step(tokens)`` after each step (a sub-call's add to ``tokens``), ``stop()`` at its final event (or when the
    command ends)."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.enabled = bool(console.is_terminal and not console.is_dumb_terminal)
        self.live: Optional[Any] = None
        self.step_number, self.tokens = 1, 0
        self.started = self.step_started = 0.0
        self.doing: dict[int, str] = {}  # call number → what it is, in start order: the latest one is shown

    def start(self) -> None:
        if not self.enabled or self.live is not None:
            return
        from rich.live import Live

        self.started = self.step_started = time.monotonic()
        self.live = Live(console=self.console, get_renderable=self._line, refresh_per_second=PER_SECOND,
                         transient=True, redirect_stdout=False, redirect_stderr=True)
        self.live.start()

    def step(self, tokens: int) -> None:
        """One more root step finished: the next one is under way."""
        self.step_number += 1
        self.step_started = time.monotonic()
        self.doing.clear()  # whatever a failure left without its end event
        self.tokens += tokens

    def stop(self) -> None:
        live, self.live = self.live, None
        if live is not None:
            live.stop()

    def _line(self) -> Any:
        from rich.text import Text

        now = time.monotonic()
        frame = FRAMES[int(now * 10) % len(FRAMES)]
        doing = list(self.doing.values())  # one C-level copy: the run's thread may change it meanwhile
        return Text(f"{frame} step {self.step_number} · {now - self.step_started:.1f}s (run {now - self.started:.1f}s)"
                    f" · {self.tokens:,} tokens so far" + (f" · {doing[-1]}" if doing else ""),
                    style="dim")
