"""The host side of a session with a JSON-lines REPL worker (``worker.py``), shared by worker-based runtimes.

A runtime supplies a ``Channel`` — one running worker reached through some byte stream: the pipes of a local
process (the built-in ``process`` runtime), the attach socket of a container (``rlm-sandbox-docker``), … — and
subclasses ``WorkerSession`` with ``_launch()``. Everything else is here, once: the request/response loop,
host-function calls served while code runs, timeouts counting only the worker's own time, and restarts into a
fresh worker with the host-set variables and host functions restored. Only JSON crosses the channel.
"""

from __future__ import annotations

import collections
import json
import queue
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable

from rlm_host.sandbox.protocol import HostFunction, SandboxError, SandboxInfo, SandboxLimits
from rlm_host.sandbox.worker import encode_line, to_jsonable
from rlm_host.results import ExecResult, FinalSignal

RESERVED = frozenset({"FINAL", "FINAL_VAR", "SUBMIT", "SHOW_VARS"})
STDERR_TAIL = 2000
#: The standard-library-only REPL worker: runtimes copy it into their image or run it with any Python 3.
WORKER_SCRIPT = Path(__file__).with_name("worker.py")


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
            try:
                self.cleanups.pop()()
            except Exception:
                pass


class WorkerSession:
    """A persistent REPL session in a worker that a subclass launches (see ``_launch``).

    Subclasses set ``info``, ``start_timeout`` and ``control_timeout``, and may override ``_set_request``
    (how a host variable travels to the worker, e.g. as a file).
    """

    info: SandboxInfo
    start_timeout: float = 15.0
    control_timeout: float = 120.0

    def __init__(self, limits: SandboxLimits | None = None) -> None:
        self.limits = limits or SandboxLimits()
        self._host_vars: dict[str, Any] = {}
        self._functions: dict[str, HostFunction] = {}
        self._res = SessionResources()
        self._finalizer = weakref.finalize(self, self._res.close)
        self._lock = threading.RLock()
        self._calling_thread: int | None = None  # set while a host function runs
        self._unreported: str | None = None  # a restart the model has not been told about yet
        self._closed = False
        self._next_id = 0

    # -- for subclasses -----------------------------------------------------------------------------------
    def _launch(self) -> Channel:
        """Start a new worker and return its channel (SandboxError if it cannot be started)."""
        raise NotImplementedError

    def _set_request(self, name: str, value: Any) -> dict:
        """The request binding a host variable in the worker (also used to restore it after a restart)."""
        return {"op": "set", "name": name, "value": value}

    # -- lifecycle ----------------------------------------------------------------------------------------
    @property
    def channel(self) -> Channel | None:
        """The running worker's channel (None before start, after shutdown and while restarting)."""
        return self._res.channel

    def start(self) -> None:
        """Start the worker (idempotent)."""
        with self._guard():
            if self._res.channel is None:
                self._spawn()

    def shutdown(self) -> None:
        """Stop the worker and free the session's resources (idempotent)."""
        with self._lock:
            self._closed = True
            self._finalizer()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _guard(self):
        """Serialize use across threads; refuse use after shutdown or from inside a host function."""
        if self._closed:
            raise SandboxError(f"the {self.info.name} sandbox has been shut down")
        if self._calling_thread == threading.get_ident():
            raise SandboxError("the sandbox cannot be used from inside one of its own host functions")
        return self._lock

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
        except (WorkerGone, WorkerTimeout) as exc:
            detail = channel.describe_exit() if isinstance(exc, WorkerGone) else "no answer in time"
            self._res.kill_channel()
            raise SandboxError(f"the sandbox worker could not be started: {detail}") from None
        except BaseException:
            self._res.kill_channel()
            raise

    def _restart(self, why: str | None = None) -> None:
        """Replace the worker by a fresh one with the host's variables and functions (SandboxError if not).

        ``why`` is kept for the next ``execute`` when the model is not told right away.
        """
        self._res.kill_channel()
        self._unreported = why
        self._spawn()

    def _channel(self) -> Channel:
        """The running worker: started if needed, replaced if it has exited since it was last used."""
        channel = self._res.channel
        if channel is not None and channel.exited():
            self._restart(f"the sandbox process had exited since the previous step: {channel.describe_exit()}")
        elif channel is None:
            self._spawn()
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
        except BaseException:  # KeyboardInterrupt, a failing host function…: the worker is mid-request
            self._res.kill_channel()
            self._unreported = "the host was interrupted while the sandbox was busy, and the sandbox was stopped"
            raise

    def _checked(self, channel: Channel, message: dict) -> dict:
        """A control request (not execute): SandboxError if the worker reports an error."""
        try:
            reply = self._request(channel, message, self.control_timeout)
        except WorkerTimeout:
            self._restart(f"the sandbox process did not answer a {message['op']!r} request in time")
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
            self._restart(f"the sandbox process died: {channel.describe_exit() if channel else 'unknown cause'}")
        try:
            return self._checked(self._channel(), message)
        except WorkerGone:
            self._res.kill_channel()
            raise SandboxError("the sandbox worker died again after a restart") from None

    def _serve_call(self, channel: Channel, call: dict) -> None:
        """Run one host function for the worker and send back its value or its error."""
        name = call.get("name")
        function = self._functions.get(name)
        self._calling_thread = threading.get_ident()
        try:
            if function is None:
                raise LookupError(f"no host function named {name!r}")
            answer = {"op": "return", "value": to_jsonable(function(*call.get("args", []), **call.get("kwargs", {})))}
        except Exception as exc:
            # the sandbox raises RuntimeError(error): name other exception types, which carry meaning
            plain = isinstance(exc, RuntimeError) and type(exc) is RuntimeError and str(exc)
            answer = {"op": "raise", "error": str(exc) if plain else f"{type(exc).__name__}: {exc}".rstrip(": ")}
        finally:
            self._calling_thread = None
        answer["call_id"] = call.get("call_id")
        channel.send(answer)

    def _lost_state_note(self) -> str:
        kept = [*self._host_vars, *self._functions]
        if kept:
            return ("all variables you created are lost; only the host-provided ones are still defined: "
                    + ", ".join(kept) + ".")
        return "all variables you created are lost."

    # -- the session protocol -----------------------------------------------------------------------------
    def execute(self, code: str, *, timeout: float | None = None) -> ExecResult:
        """Run ``code`` in the persistent namespace; never raises for errors in the code itself."""
        limit = self.limits.exec_timeout if timeout is None else timeout
        with self._guard():
            started = time.monotonic()
            channel = self._channel()
            if self._unreported:
                why, self._unreported = self._unreported, None
                return ExecResult(
                    error=f"SandboxCrash: the sandbox was restarted and your code was NOT run: "
                    f"{self._lost_state_note()} Run your code again.\nCause: {why}",
                    restarted=True, duration_s=time.monotonic() - started)
            try:
                reply = self._request(channel, {"op": "execute", "code": code}, limit)
            except WorkerTimeout:
                self._restart()
                return ExecResult(
                    error=f"TimeoutError: this step exceeded the time limit of {limit:g} s and was stopped. The "
                    f"sandbox was restarted: {self._lost_state_note()} Split the work into smaller steps.",
                    timed_out=True, restarted=True, duration_s=time.monotonic() - started)
            except WorkerGone:
                how = channel.describe_exit()
                self._restart()
                return ExecResult(
                    error=f"SandboxCrash: the sandbox process died during this step and was restarted: "
                    f"{self._lost_state_note()}\nCause: {how}",
                    restarted=True, duration_s=time.monotonic() - started)
        final = reply.get("final")
        return ExecResult(
            stdout=reply.get("stdout") or "",
            stderr=reply.get("stderr") or "",
            error=reply.get("error"),
            final=FinalSignal(**final) if final else None,
            duration_s=time.monotonic() - started,
        )

    def set_variable(self, name: str, value: Any) -> None:
        """Bind a JSON-compatible value in the namespace; kept across restarts."""
        check_name(name)
        with self._guard():
            try:
                # encoded before anything is written: a bad value leaves the channel intact
                self._checked(self._channel(), self._set_request(name, value))
            except (TypeError, ValueError) as exc:
                raise TypeError(f"set_variable({name!r}): the value is not JSON-compatible: {exc}") from None
            except WorkerGone:
                how = self._res.channel.describe_exit() if self._res.channel else "unknown"
                self._restart(f"the sandbox process died while receiving the variable {name!r}: {how}")
                raise SandboxError(f"the sandbox worker died while receiving {name!r} (is it too large for the "
                                   f"memory limit of {self.limits.memory_mb} MB?): {how}") from None
            self._host_vars[name] = value

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

    def register_functions(self, functions: dict[str, HostFunction]) -> None:
        """Make host callables available to sandbox code under these names; kept across restarts."""
        for name, function in functions.items():
            check_name(name)
            if not callable(function):
                raise TypeError(f"host function {name!r} is not callable")
        with self._guard():
            self._functions.update(functions)
            self._control({"op": "register", "names": list(functions)})


def check_name(name: str) -> None:
    """A host-provided name must be a plain identifier that does not shadow a REPL builtin."""
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"{name!r} is not a valid variable name (an identifier not starting with '_')")
    if name in RESERVED:
        raise ValueError(f"{name!r} is a REPL builtin of the sandbox and cannot be replaced")
