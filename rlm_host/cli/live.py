"""The live view of ``rlm run``: each step's code, output, sub-calls and tokens, printed on stderr as they
happen (stdout stays free for ``--json``). A step's sub-calls are shown under its code, once the step is over;
an ``rlm_query`` with its child run's model and tokens. On a terminal a spinner (:class:`Spinner`) shows the step
under way, its time and the tokens so far; piped, nothing but the lines."""

from __future__ import annotations

import json
import time
from typing import Any, Optional

from rlm_host.events import RunEvent
from rlm_host.results import RunUsage
from rlm_host.text import clip, clip_lines, terminal_safe

CODE_LINES = 12
OUTPUT_CHARS = 600
FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PER_SECOND = 8


class LiveView:
    """An event subscriber that renders with rich when stderr is a terminal, plain text otherwise."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)  # "openai:x:" stays text
        self.sub_calls: dict[str, list[RunEvent]] = {}  # per run: the sub-calls of the step under way
        self.branches: dict[str, list[RunEvent]] = {}  # per run: the candidates of the step under way
        self.children: dict[str, dict[str, Any]] = {}  # child run id → its model and tokens (for ↳ rlm_query)
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
            self.children[event.run_id] = {"model": data.get("model", ""), "tokens": 0}
        framework = data.get("framework") or "native"
        setup = f"framework={framework}" if framework != "native" else f"env={data['environment']}"
        self._print(f"{indent}▶ {'child run' if event.depth else 'run'} {event.run_id}  {setup} model={data['model']} "
                    f"sandbox={data['sandbox']} context={size}", "bold")
        for notice in data.get("notices", []) if event.depth == 0 else []:  # a child run repeats its root's
            self._print(f"{indent}! {notice}", "yellow")
        if event.depth == 0:
            self.spinner.start()

    def _on_step(self, event: RunEvent, indent: str) -> None:
        data = event.data
        usage = data.get("usage", {})
        own = _tokens(usage.get("root"))  # sub-calls were counted as they came
        tokens = own + _tokens(usage.get("sub"))
        if event.depth:
            self.spinner.tokens += own
            if event.run_id in self.children:
                self.children[event.run_id]["tokens"] += tokens
        else:
            self.spinner.step(own)
        self._print(f"{indent}── step {data['step']} · {data['action']} · reward {data['reward']:+.2f} · "
                    f"{tokens:,} tokens · {data['duration_s']:.2f}s", "cyan")
        observation = data.get("observation") or {}
        for block in observation.get("blocks", []):
            self._show_code(block["code"], indent)
            self._show_output(block.get("stdout"), indent)
            if block.get("error"):
                self._print(f"{indent}  ✗ {error_summary(block['error'])}", "red")
        if not observation.get("blocks"):  # a framework's steps: a tool call's code or arguments, a tool's result
            if data.get("code"):
                self._show_code(data["code"], indent)
            elif observation.get("tool") and "args" in observation:
                args = json.dumps(observation["args"], ensure_ascii=False, default=str)
                self._print(f"{indent}  │ {observation['tool']}({clip(args, OUTPUT_CHARS // 3)})", "dim")
            detail = next((f"{key}: {observation[key]}" for key in ("path", "command", "pattern")
                           if isinstance(observation.get(key), str)), None)  # a tool-protocol step (the harness)
            if detail and not data.get("code"):
                self._print(f"{indent}  │ {clip(detail, OUTPUT_CHARS // 3)}", "dim")
            for key in ("output", "stdout", "content"):  # what the tool gave back: a command's, a file's, a server's
                if isinstance(observation.get(key), str):
                    self._show_output(observation[key], indent)
                    break
            if observation.get("success") is False:
                why = observation.get("error") or observation.get("stderr") or (
                    f"exit code {observation['exit_code']}" if observation.get("exit_code") is not None else "failed")
                self._print(f"{indent}  ✗ {error_summary(str(why))}", "red")  # a refusal says "refused: …" itself
        if isinstance(observation.get("final_rejected"), str):  # an answer the run's output type refused
            for line in observation["final_rejected"].splitlines()[:5]:
                self._print(f"{indent}  ✗ not the required type: {clip(line, OUTPUT_CHARS // 3)}", "red")
        for tried in (b.data for b in self.branches.pop(event.run_id, [])):  # --branch-width: the kept one marked
            self._print(f"{indent}  {candidate_line(tried)}", "green" if tried.get("chosen") else "dim")
        self._flush_sub_calls(event.run_id, indent)
        for note in (n for n in observation.get("notes", []) if n != observation.get("error")):  # a refusal: said once
            self._print(f"{indent}  ! {note}", "yellow")

    def _show_code(self, code: str, indent: str) -> None:
        """A step's code, its first ``CODE_LINES`` lines."""
        for line in clip_lines(code.strip(), CODE_LINES).splitlines():
            self._print(f"{indent}  │ {line}", "dim")

    def _show_output(self, output: Any, indent: str) -> None:
        """What the code printed (or a tool returned), its first ``OUTPUT_CHARS`` characters."""
        text = (output or "").strip()
        for line in (text if len(text) <= OUTPUT_CHARS else text[:OUTPUT_CHARS] + " …").splitlines():
            self._print(f"{indent}  → {line}")

    def _on_sub_call(self, event: RunEvent, indent: str) -> None:
        """Kept until its step is shown: a sub-call is made by the step's code, and the step is reported after."""
        if event.data.get("kind") != "rlm_query":  # a child run's tokens come with its steps
            self.spinner.tokens += _tokens(event.data.get("usage"))
        self.sub_calls.setdefault(event.run_id, []).append(event)

    def _on_branch(self, event: RunEvent, indent: str) -> None:
        self.branches.setdefault(event.run_id, []).append(event)

    def _flush_sub_calls(self, run_id: str, indent: str) -> None:
        """The sub-calls the run's step (or the error that stopped it) made; an ``rlm_query`` with its child run's
        model and tokens, a user's tool with no tokens (it costs none)."""
        for data in (event.data for event in self.sub_calls.pop(run_id, [])):
            child = self.children.get(data.get("child_run_id") or "")
            tokens = child["tokens"] if child is not None else _tokens(data.get("usage"))
            done = "ok" if data.get("tool") else f"{tokens:,} tokens"
            who = data.get("tool") or data.get("model") or (child["model"] if child is not None else "")
            self._print(f"{indent}  ↳ {data['kind']} {who} {data.get('seconds', 0):.2f}s "
                        + (f"error: {data['error']}" if data.get("error") else done),
                        "red" if data.get("error") else "magenta")

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
            self.children[event.run_id]["tokens"] = usage.total_tokens
        cost = final_cost(data)
        spent = " + ".join(([f"${cost:.4f}"] if cost is not None else [])
                           + ([f"{usage.unpriced_calls} call(s) of unknown cost"] if usage.unpriced_calls else []))
        spent += " · " if spent else ""
        self._print(f"{indent}{'✓' if data['completed'] else '■'} {data['termination_reason']} after {data['steps']} "
                    f"step{'' if data['steps'] == 1 else 's'} · reward {data['total_reward']:+.2f} · tokens root "
                    f"{usage.root.total_tokens:,} sub {usage.sub.total_tokens:,} · {spent}{data['duration_s']:.1f}s",
                    "bold green" if data["completed"] else "bold yellow")


def error_summary(error: str) -> str:
    """The line that says why a step's code failed: every sandbox writes ``ExcType: message`` first, then the
    traceback of the model's own code (its last line is a source line or a ``~^~`` marker, not the reason)."""
    return next((line for line in error.strip().splitlines() if line.strip()), error)


def candidate_line(tried: dict[str, Any]) -> str:
    """One ``--branch-width`` candidate of a step (``rlm run``'s live view, ``rlm runs show``): its number, action
    and score, then ``kept`` or why it failed."""
    mark = "kept" if tried.get("chosen") else clip(error_summary(str(tried["error"])), 100, one_line=True) \
        if tried.get("error") else ""
    return f"⑂ candidate {tried.get('candidate')} · {tried.get('action')} · score {tried.get('score', 0):+.2f}" + (
        f" · {mark}" if mark else "")


def _tokens(usage: Any) -> int:
    """Input plus output tokens of a usage record (0 when there is none)."""
    return int(usage.get("input_tokens", 0) + usage.get("output_tokens", 0)) if isinstance(usage, dict) else 0


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
