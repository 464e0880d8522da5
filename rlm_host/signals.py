"""SIGTERM and SIGHUP end a command the way Ctrl-C does: the run writes its closing event, releases its sandbox
and exits 128 + the signal's number (143, 129), instead of dying with its status only inferred.

``handle_termination()`` installs the handlers (main thread only; the ``rlm`` command line does it); a signal then
raises :class:`Terminated`, a ``KeyboardInterrupt``, so every place that already cleans up after Ctrl-C cleans up
after it too. A second signal while that cleanup runs is ignored; SIGKILL remains the way to stop at once.
"""

from __future__ import annotations

import signal
import threading
from typing import Any, Optional

HANDLED = ("SIGTERM", "SIGHUP")
_received: dict[str, int] = {}


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by a signal; ``exit_code`` is 128 + its number."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.exit_code = 128 + signum
        super().__init__(f"terminated by {self.name}")


def _handler(signum: int, frame: Any) -> None:
    if _received:  # already stopping: let the cleanup finish
        return
    _received["signum"] = signum
    raise Terminated(signum)


def handle_termination() -> None:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` in this process (a no-op outside the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in HANDLED:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _handler)


def exit_code(default: int = 130) -> int:
    """128 + the number of the signal that stopped this process, or ``default`` (Ctrl-C's 130) when none did."""
    signum: Optional[int] = _received.get("signum")
    return 128 + signum if signum is not None else default


def interruption(exc: BaseException) -> str:
    """What ended a run, for its error field: the signal, or the user's Ctrl-C."""
    return str(exc) if isinstance(exc, Terminated) else "interrupted by the user (Ctrl-C)"
