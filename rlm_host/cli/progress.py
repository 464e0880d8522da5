"""The live view's spinner: while a model call or code runs, one line on a terminal's stderr with the step, its
elapsed time, the tokens so far and what is in progress ("waiting for openai:gpt-5…", "running code…", from the
live events). Driven by rich's refresh thread from ``run_start`` to ``final``, from the events the view receives.
Never drawn when stderr is not a terminal."""

from __future__ import annotations

import time
from typing import Any, Optional

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PER_SECOND = 8


class Spinner:
    """``start()`` at the root run's start, ``step(tokens)`` after each step, ``add(tokens)`` per sub-call,
    ``stop()`` at its final event (or when the command ends)."""

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
                         transient=True, redirect_stdout=False, redirect_stderr=True)  # fmt: skip
        self.live.start()

    def step(self, tokens: int) -> None:
        """One more root step finished: the next one is under way."""
        self.step_number += 1
        self.step_started = time.monotonic()
        self.doing.clear()  # whatever a failure left without its end event
        self.tokens += tokens

    def add(self, tokens: int) -> None:
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
                    f" · {self.tokens:,} tokens so far" + (f" · {doing[-1]}" if doing else ""), style="dim")  # fmt: skip
