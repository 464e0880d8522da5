"""The host side of a session with a JSON-lines REPL worker (``worker.py``), shared by worker-based runtimes.

A runtime subclasses ``Channel`` for its byte stream to one running worker — the pipes of a local process (the
built-in ``process`` runtime), the attach socket of a container (``rlm-sandbox-docker``), … — and ``WorkerSession``
with ``_launch()``; only JSON crosses a channel. Everything else is here, once: the request/response loop,
host-function calls served while code runs, timeouts counting only the worker's own time, and restarts into a
fresh worker with the host-set variables and host functions restored; the lifecycle common to every runtime is
``SessionBase``'s (``session_base.py``).
"""

from __future__ import annotations

import collections
import contextlib
import json
import queue
import time
from pathlib import Path
from typing import Any, Callable

from rlm_host.context import TextFile
from rlm_host.errors import SandboxError
from rlm_host.results import ExecResult, FinalSignal
from rlm_host.sandbox.protocol import HostFunction, SandboxLimits
from rlm_host.sandbox.session_base import SessionBase
from rlm_host.sandbox.worker import encode_line, to_jsonable

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
        with contextlib.suppress(ValueError):  # not a protocol line: ignore
            self.messages.put(json.loads(line))

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


#: The standard-library-only REPL worker: runtimes copy it into their image or run it with any Python 3.
WORKER_SCRIPT = Path(__file__).with_name("worker.py")


class SessionResources:
    """What must be freed even if the session is never shut down (closed by ``weakref.finalize``)."""

    def __init__(self) -> None:
        self.channel: Channel | None = None
        self.cleanups: list[Callable[[], None]] = []  # run once, last added first, after the worker is killed

    def kill_channel(self) -> None:
        if self.channel is not None:
            self.channel.kill()
            self.channel = None

    def close(self) -> None:
        self.kill_channel()
        while self.cleanups:
            with contextlib.suppress(Exception):
                self.cleanups.pop()()


class WorkerSession(SessionBase):
    """A persistent REPL session in a worker that a subclass launches (see ``_launch``).

    Subclasses set ``info``, ``start_timeout`` and ``control_timeout``, and may override ``_set_request``
    (how a host variable travels to the worker, e.g. as a file). Resources to free with the session go to
    ``self._res.cleanups``.
    """

    worker_noun = "the sandbox process"
    start_timeout: float = 15.0
    control_timeout: float = 120.0

    def __init__(self, limits: SandboxLimits | None = None) -> None:
        self._res = SessionResources()
        super().__init__(limits, release=self._res.close)
        self._next_id = 0

    # -- for subclasses -----------------------------------------------------------------------------------
    def _launch(self) -> Channel:
        """Start a new worker and return its channel (SandboxError if it cannot be started)."""
        raise NotImplementedError

    def _set_request(self, name: str, value: Any) -> dict:
        """The request binding a host variable in the worker (also used to restore it after a restart)."""
        return (self._text_file_request(name, value) if isinstance(value, TextFile)
                else {"op": "set", "name": name, "value": value})

    def _text_file_request(self, name: str, text_file: TextFile) -> dict:
        """The request binding a context kept on disk: here its text through the channel; a runtime whose
        worker can read a file the host prepares sends a ``set_file`` instead (no copy of the text in the host)."""
        return {"op": "set", "name": name, "value": text_file.read()}

    # -- the worker ---------------------------------------------------------------------------------------
    def _has_worker(self) -> bool:
        return self._res.channel is not None

    def _worker_exit(self) -> str | None:
        channel = self._res.channel
        return channel.describe_exit() if channel is not None and channel.exited() else None

    def _discard(self) -> None:
        self._res.kill_channel()

    def _spawn(self) -> None:
        """Start a worker, wait for 'ready', restore host variables and functions."""
        channel = self._res.channel = self._launch()
        try:
            ready = channel.recv(self.start_timeout)
            if ready.get("op") != "ready":
                raise SandboxError(f"the sandbox worker sent {ready!r} instead of 'ready'")
            restore = [{"op": "register", "names": list(self._functions)}] if self._functions else []
            restore += [self._set_request(n, v) for n, v in self._host_vars.items()]
            for message in restore:
                reply = self._request(channel, message, self.control_timeout)
                if reply.get("error"):
                    raise SandboxError(f"restoring the sandbox state failed: {reply['error']}")
        except BaseException as exc:
            detail = channel.describe_exit() if isinstance(exc, WorkerGone) else "no answer in time"
            self._res.kill_channel()
            if isinstance(exc, (WorkerGone, WorkerTimeout)):
                raise SandboxError(f"the sandbox worker could not be started: {detail}") from None
            raise

    def _channel(self) -> Channel:
        """The running worker's channel: started if needed, replaced if it has exited since it was last used."""
        self._live()
        return self._res.channel  # type: ignore[return-value]

    # -- requests -----------------------------------------------------------------------------------------
    def _request(self, channel: Channel, message: dict, timeout: float | None) -> dict:
        """Send a request and wait for its result, serving host-function calls meanwhile.

        ``timeout`` counts only the worker's own time: waiting inside a host function does not use it up.
        """
        self._next_id += 1
        message["id"] = self._next_id
        channel.send(message)  # a value that cannot be encoded fails here, before anything is written
        remaining = timeout
        try:
            while True:
                started = time.monotonic()
                reply = channel.recv(remaining)
                if remaining is not None:
                    remaining -= time.monotonic() - started
                op = reply.get("op")
                if op == "call":
                    self._serve_call(channel, reply)
                elif op == "result" and reply.get("id") == message["id"]:
                    return reply
        except (WorkerTimeout, WorkerGone):
            raise
        except BaseException:  # KeyboardInterrupt…: the worker is mid-request
            self._abandon()
            raise

    def _checked(self, channel: Channel, message: dict) -> dict:
        """A control request (not execute): SandboxError if the worker reports an error."""
        try:
            reply = self._request(channel, message, self.control_timeout)
        except WorkerTimeout:
            self._restart(f"{self.worker_noun} did not answer a {message['op']!r} request in time")
            raise SandboxError(f"the sandbox worker did not answer {message['op']!r} in time; restarted") from None
        if reply.get("error"):
            raise SandboxError(f"sandbox {message['op']!r} failed: {reply['error']}")
        return reply

    def _control(self, message: dict) -> dict:
        """A control request, retried once on a fresh worker if the worker had died."""
        try:
            return self._checked(self._channel(), message)
        except WorkerGone:
            channel = self._res.channel
            self._restart(f"{self.worker_noun} died: {channel.describe_exit() if channel else 'unknown cause'}")
        try:
            return self._checked(self._channel(), message)
        except WorkerGone:
            self._res.kill_channel()
            raise SandboxError("the sandbox worker died again after a restart") from None

    def _serve_call(self, channel: Channel, call: dict) -> None:
        """Run one host function for the worker and send back its value or its error."""
        name = call.get("name")
        function = self._functions.get(name) if isinstance(name, str) else None  # the worker's JSON: any value
        try:
            with self._host_call():
                if function is None:
                    raise LookupError(f"no host function named {name!r}")
                value = to_jsonable(function(*call.get("args", []), **call.get("kwargs", {})))
            answer = {"op": "return", "value": value}
        except RuntimeError as exc:  # what _host_call made of the function's exception
            answer = {"op": "raise", "error": str(exc)}
        answer["call_id"] = call.get("call_id")
        channel.send(answer)

    # -- the runtime's part of the session protocol -------------------------------------------------------
    def _execute(self, code: str, limit: float, started: float) -> ExecResult:
        channel = self._res.channel
        assert channel is not None  # execute() made the worker live
        try:
            reply = self._request(channel, {"op": "execute", "code": code}, limit)
        except WorkerTimeout:
            return self._timeout_result(limit, started)
        except WorkerGone:
            return self._crash_result(channel.describe_exit(), started)
        final = reply.get("final")
        return ExecResult(stdout=reply.get("stdout") or "", stderr=reply.get("stderr") or "", error=reply.get("error"),
                          final=FinalSignal(**final) if final else None, duration_s=time.monotonic() - started)

    def _bind(self, name: str, value: Any) -> None:
        try:
            # encoded before anything is written: a bad value leaves the channel intact
            self._checked(self._channel(), self._set_request(name, value))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"set_variable({name!r}): the value is not JSON-compatible: {exc}") from None
        except WorkerGone:
            how = self._res.channel.describe_exit() if self._res.channel else "unknown"
            raise self._lost_while_binding(name, how) from None

    def _register(self, functions: dict[str, HostFunction]) -> None:
        self._control({"op": "register", "names": list(functions)})

    def get_variable(self, name: str) -> Any:
        """A variable's value as JSON-compatible data; KeyError if it does not exist."""
        with self._guard():
            reply = self._control({"op": "get", "name": name})
        if reply.get("missing"):
            raise KeyError(name)
        return reply.get("value")

    def list_variables(self) -> dict[str, str]:
        """User variables and their type names (host functions, REPL builtins and _names excluded)."""
        with self._guard():
            return dict(self._control({"op": "list"})["variables"])
