"""One running REPL worker (``worker.py``) as a worker session sees it: JSON lines in, JSON messages out.

A runtime subclasses ``Channel`` for its byte stream — the pipes of a local process (the built-in ``process``
runtime), the attach socket of a container (``rlm-sandbox-docker``), … — and ``WorkerSession`` (``session.py``)
speaks the protocol through it. Only JSON crosses a channel.
"""

from __future__ import annotations

import collections
import json
import queue
from typing import Callable

from rlm_host.sandbox.worker import encode_line

STDERR_TAIL = 2000


class WorkerGone(Exception):
    """The worker exited or closed its channel."""


class WorkerTimeout(Exception):
    """No answer from the worker in time."""


class Channel:
    """One running worker: a reader (thread) turns its JSON lines into ``messages``; None marks the end.

    Subclasses start the worker, feed ``_deliver`` with each protocol line and call ``_closed()`` at the end of
    the stream, keep the end of its stderr in ``stderr_tail``, and implement the four methods below.
    """

    def __init__(self) -> None:
        self.messages: queue.SimpleQueue[dict | None] = queue.SimpleQueue()
        self.stderr_tail: collections.deque[bytes] = collections.deque(maxlen=64)

    # -- for subclasses -----------------------------------------------------------------------------------
    def _deliver(self, line: bytes) -> None:
        try:
            self.messages.put(json.loads(line))
        except ValueError:
            pass  # not a protocol line: ignore

    def _closed(self) -> None:
        self.messages.put(None)

    def stderr_text(self, drop: Callable[[str], bool] = lambda line: False) -> str:
        """The end of the worker's stderr (at most STDERR_TAIL characters), without lines ``drop`` rejects."""
        text = b"".join(self.stderr_tail).decode("utf-8", "replace")
        return "\n".join(line for line in text.splitlines() if not drop(line)).strip()[-STDERR_TAIL:]

    def write_line(self, data: bytes) -> None:
        """Write one encoded line (without its newline); raise OSError/ValueError if the channel is closed."""
        raise NotImplementedError

    def exited(self) -> bool:
        """Whether the worker is known to have ended."""
        raise NotImplementedError

    def describe_exit(self) -> str:
        """How the worker ended ("exit code 1", "killed by signal SIGKILL …"), then the end of its stderr."""
        raise NotImplementedError

    def kill(self) -> None:
        """Stop the worker for good and free what it holds (idempotent, never raises)."""
        raise NotImplementedError

    # -- used by the session ------------------------------------------------------------------------------
    def send(self, message: dict) -> None:
        """Encode and write one message in one go (a value that cannot be encoded fails before any write)."""
        data = encode_line(message)
        try:
            self.write_line(data)
        except (OSError, ValueError) as exc:
            raise WorkerGone() from exc

    def recv(self, timeout: float | None) -> dict:
        """The next message; WorkerTimeout after ``timeout`` seconds, WorkerGone when the channel closed."""
        try:
            message = self.messages.get(timeout=None if timeout is None else max(timeout, 0.0))
        except queue.Empty:
            raise WorkerTimeout() from None
        if message is None:
            self.messages.put(None)  # stay closed for later readers
            raise WorkerGone()
        return message
