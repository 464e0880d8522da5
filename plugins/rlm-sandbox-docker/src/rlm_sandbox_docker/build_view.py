"""What a person sees of an image built on demand, on stderr: the one question, then the build's phases with
their elapsed time (on a terminal a live status line and a ✓ line per finished phase; piped, a line per phase).

``rlm run`` draws a spinner on stderr (rich's ``Live``, which also redirects ``sys.stderr``) while the sandbox
starts: ``paused_live_view()`` stops it for the question and the build and starts it again afterwards, so the
answer is typed on a quiet line and the build's own status line does not fight the spinner.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def attended() -> bool:
    """Whether a person can answer a question here: stdin and stderr are terminals and this is the main thread
    (a benchmark's cases run in worker threads, or in worker processes whose stdin is /dev/null)."""
    if not _main_thread():
        return False
    try:
        return sys.stdin is not None and sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed streams
        return False


def _live_display() -> Any:
    """The rich ``Live`` drawing on stderr (the run's spinner), found through the stderr proxy it installs."""
    console = getattr(sys.stderr, "_FileProxy__console", None)  # rich.file_proxy.FileProxy
    stack = getattr(console, "_live_stack", None) or [getattr(console, "_live", None)]
    live = stack[0] if stack else None
    return live if live is not None and hasattr(live, "stop") and hasattr(live, "start") else None


@contextmanager
def paused_live_view() -> Iterator[None]:
    """Stop the spinner of ``rlm run`` (if one is drawing) while the body runs; start it again after. Only from
    the main thread: a worker thread's build (a benchmark case) prints plain lines, which show above it."""
    live = _live_display() if _main_thread() else None
    if live is not None:
        try:
            live.stop()
        except Exception:  # a rich we do not know: leave it alone
            live = None
    try:
        yield
    finally:
        if live is not None:
            try:
                live.start()
            except Exception:
                pass


def ask(question: str) -> bool:
    """Ask a yes/no question on stderr and read the answer from stdin; only "y" or "yes" is yes (Enter, EOF: no)."""
    sys.stderr.write(question + " [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer:  # the terminal closed
        sys.stderr.write("\n")
    return answer.strip().lower() in ("y", "yes")


def say(message: str) -> None:
    """One line on stderr (above the spinner, when one draws)."""
    print(message, file=sys.stderr, flush=True)


class BuildView:
    """The progress of one build: ``phase(name)`` as each step begins, ``done(detail)`` or ``failed()`` at the end.

    ``phases`` is how many steps to expect (for "2/4"). On a terminal, from the main thread (or ``live=True``), a
    status line shows the image, the step, its number and the elapsed time, refreshed 8 times a second by rich;
    otherwise each step is a plain line with the time elapsed so far."""

    def __init__(self, image: str, phases: int, *, live: bool | None = None) -> None:
        self.image, self.phases = image, phases
        self.started = self.phase_started = time.monotonic()
        self.current = ""
        self.number = 0
        self.live: Any = None
        self.console: Any = None
        if (sys.stderr.isatty() and _main_thread()) if live is None else live:
            from rich.console import Console
            from rich.live import Live

            self.console = Console(stderr=True, highlight=False, emoji=False)
            if self.console.is_terminal and not self.console.is_dumb_terminal:
                self.live = Live(console=self.console, get_renderable=self._status, refresh_per_second=8,
                                 transient=True, redirect_stdout=False, redirect_stderr=False)
                self.live.start()
        if self.live is None:
            say(f"building the Docker sandbox image {image}…")

    def phase(self, name: str) -> None:
        self._finish_phase()
        self.number += 1
        self.current, self.phase_started = name, time.monotonic()
        if self.live is None:
            say(f"  {name} ({self.number}/{self.phases}) · {self._elapsed()} elapsed")

    def done(self, detail: str = "") -> None:
        self._finish_phase()
        self._stop()
        say(f"✓ built {self.image} in {time.monotonic() - self.started:.1f} s" + (f" ({detail})" if detail else ""))

    def failed(self, what: str = "failed") -> None:
        self._stop()
        where = f" during {self.current}" if self.current else ""
        say(f"✗ building {self.image} {what}{where}, after {time.monotonic() - self.started:.1f} s")

    def _finish_phase(self) -> None:
        if self.current and self.live is not None:
            self.console.print(f"  ✓ {self.current:<12} {time.monotonic() - self.phase_started:5.1f} s", style="dim")

    def _stop(self) -> None:
        live, self.live = self.live, None
        if live is not None:
            live.stop()

    def _elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def _status(self) -> Any:
        from rich.text import Text

        frame = FRAMES[int(time.monotonic() * 10) % len(FRAMES)]
        step = f" · {self.current} ({self.number}/{self.phases})" if self.current else ""
        return Text(f"{frame} building {self.image}{step} · {self._elapsed()} elapsed", style="bold")
