"""The step timer: kills a Monty worker whose step has run longer than its limit.

Monty's own feed-duration limit is fixed when a session is checked out, but every ``execute`` may ask for its
own timeout, so the limit is kept here, on the host: one daemon helper thread per sandbox session (reused by the next
session once this one stops) sleeps until the
armed deadline and then SIGKILLs the worker, which makes the blocked ``feed_run`` raise ``MontyCrashedError``.
Time spent inside host functions (``llm_query`` …) does not count: ``pause()`` / ``resume()`` around each call
push the deadline back, as the process runtime does.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from rlm_host.sdk.sandbox import run_in_thread


class StepTimer:
    """A restartable deadline for the step running in one worker process."""

    def __init__(self, name: str = "rlm-monty-timer") -> None:
        self._cond = threading.Condition()
        self._name = name
        self._started = False
        self._stopped = False
        self._pid: int | None = None
        self._deadline: float | None = None
        self._paused_at: float | None = None
        self._pauses = 0
        self.fired = False

    def start(self) -> None:
        """Give the timer its thread now (with the session, off the first step's path); ``arm`` does it otherwise."""
        with self._cond:
            if not self._started and not self._stopped:
                self._started = True
                run_in_thread(self._run, self._name)

    def arm(self, pid: int | None, seconds: float) -> None:
        """Start counting ``seconds`` of running time for the worker ``pid``."""
        self.start()
        with self._cond:
            self._pid, self._deadline = pid, time.monotonic() + seconds
            self._paused_at, self._pauses, self.fired = None, 0, False
            self._cond.notify()

    def disarm(self) -> bool:
        """Stop counting; True if the deadline had passed and the worker was killed."""
        with self._cond:
            self._pid = self._deadline = self._paused_at = None
            self._pauses = 0
            return self.fired

    def pause(self) -> None:
        """A host function starts: its time does not count (calls may nest)."""
        with self._cond:
            self._pauses += 1
            if self._pauses == 1 and self._deadline is not None:
                self._paused_at = time.monotonic()

    def resume(self) -> None:
        """The host function has returned: the clock runs again."""
        with self._cond:
            self._pauses = max(0, self._pauses - 1)
            if self._pauses == 0 and self._paused_at is not None:
                if self._deadline is not None:
                    self._deadline += time.monotonic() - self._paused_at
                self._paused_at = None
                self._cond.notify()

    def stop(self) -> None:
        """End the thread (idempotent)."""
        with self._cond:
            self._stopped = True
            self._deadline = None
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                if self._deadline is None or self._paused_at is not None:
                    self._cond.wait()
                    continue
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                self.fired, self._deadline = True, None
                if self._pid is not None:
                    try:
                        os.kill(self._pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
