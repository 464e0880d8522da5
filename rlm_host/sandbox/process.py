"""The built-in ``process`` sandbox runtime: model-written code runs in a separate Python process.

NOT A SECURITY BOUNDARY. The worker is a plain child process of the same user: it shares the filesystem, can
open network connections and can do anything the user running rlm can. What it does give is crash isolation:
an infinite loop, a memory bomb, a segfault or ``os._exit`` in model code costs one restarted worker, never the
host. Use a boundary runtime (Monty, Docker) for untrusted code.

The worker (``worker.py`` next to this file, standard library only) is started as ``python -I -u worker.py``
in a new session with an empty environment (PATH, HOME/TMPDIR = a fresh temporary working directory,
PYTHONIOENCODING, LANG) and an address-space limit of ``limits.memory_mb``. Host and worker exchange JSON
lines (see the worker's docstring). A timeout or a crash kills the worker's whole process group and starts a
fresh worker, into which the host-set variables and host functions are restored.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rlm_host.sandbox.protocol import HostFunction, SandboxError, SandboxInfo, SandboxLimits
from rlm_host.sandbox.worker import encode_line, to_jsonable
from rlm_host.types import ExecResult, FinalSignal

WORKER = Path(__file__).with_name("worker.py")
RESERVED = frozenset({"FINAL", "FINAL_VAR", "SUBMIT", "SHOW_VARS"})
STDERR_TAIL = 2000


class ProcessSettings(BaseModel):
    """``[sandbox.process]``: how the worker process is started."""

    model_config = ConfigDict(extra="forbid")

    python: str | None = Field(None, description="interpreter running the worker (default: the host's)")
    start_timeout: float = Field(15.0, gt=0, description="seconds a new worker may take to answer 'ready'")
    control_timeout: float = Field(120.0, gt=0, description="seconds for set/get/list/register requests")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment variables for the worker")


class _WorkerGone(Exception):
    """The worker process exited or closed its channel."""


class _Timeout(Exception):
    """No answer from the worker in time."""


class _Worker:
    """One running worker process, a thread reading its protocol lines and one keeping its stderr tail."""

    def __init__(self, argv: list[str], cwd: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=cwd, env=env, start_new_session=True, close_fds=True,
        )
        self.messages: queue.SimpleQueue[dict | None] = queue.SimpleQueue()
        self.stderr_tail = collections.deque(maxlen=64)
        threading.Thread(target=self._read_protocol, name=f"rlm-process-{self.proc.pid}", daemon=True).start()
        threading.Thread(target=self._read_stderr, name=f"rlm-process-err-{self.proc.pid}", daemon=True).start()

    def _read_protocol(self) -> None:
        stream = self.proc.stdout
        try:
            for line in stream:
                try:
                    self.messages.put(json.loads(line))
                except ValueError:
                    continue  # not a protocol line: ignore
        except (OSError, ValueError):
            pass
        finally:
            self.messages.put(None)
            try:
                stream.close()
            except OSError:
                pass

    def _read_stderr(self) -> None:
        fd = self.proc.stderr.fileno()
        try:
            while chunk := os.read(fd, 65536):
                self.stderr_tail.append(chunk)
        except OSError:
            pass

    def send(self, message: dict) -> None:
        """Write one message in one go (a 100 MB string is one write, no intermediate copies of the pipe)."""
        data = encode_line(message)
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise _WorkerGone() from exc

    def recv(self, timeout: float | None) -> dict:
        """The next message; _Timeout after ``timeout`` seconds, _WorkerGone when the channel closed."""
        try:
            message = self.messages.get(timeout=None if timeout is None else max(timeout, 0.0))
        except queue.Empty:
            raise _Timeout() from None
        if message is None:
            self.messages.put(None)  # stay closed for later readers
            raise _WorkerGone()
        return message

    def describe_exit(self) -> str:
        """How the process ended ("exit code 1", "killed by signal SIGSEGV"), then the end of its stderr."""
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            how = "it closed its channel"
        elif code < 0:
            try:
                how = f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
            if code == -signal.SIGKILL:
                how += " (out of memory, or killed from outside)"
        else:
            how = f"exit code {code}"
        text = b"".join(self.stderr_tail).decode("utf-8", "replace")
        lines = [line for line in text.splitlines() if WORKER.name + '"' not in line]  # no worker frames
        tail = "\n".join(lines).strip()[-STDERR_TAIL:]
        return how + (f".\nThe process's last stderr output:\n{tail}\n" if tail else "")

    def kill(self) -> None:
        """Kill the worker's whole process group and reap it."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass


class _Resources:
    """What must be freed even if the session is never shut down (used by weakref.finalize)."""

    def __init__(self) -> None:
        self.worker: _Worker | None = None
        self.workdir: str | None = None

    def close(self) -> None:
        if self.worker is not None:
            self.worker.kill()
            self.worker = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


class ProcessSandbox:
    """A persistent REPL session in a separate worker process (crash isolation only, no security boundary)."""

    info = SandboxInfo(
        name="process",
        security_boundary=False,
        isolation="separate OS process: crash isolation only, NOT a security boundary "
        "(same user, same filesystem, network not blocked)",
    )

    def __init__(self, settings: ProcessSettings | None = None, limits: SandboxLimits | None = None) -> None:
        self.settings = settings or ProcessSettings()
        self.limits = limits or SandboxLimits()
        self._host_vars: dict[str, Any] = {}
        self._functions: dict[str, HostFunction] = {}
        self._res = _Resources()
        self._finalizer = weakref.finalize(self, self._res.close)
        self._lock = threading.RLock()
        self._calling_thread: int | None = None  # set while a host function runs
        self._unreported: str | None = None  # a restart the model has not been told about yet
        self._closed = False
        self._next_id = 0

    # -- lifecycle ----------------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The worker's process id (None before start and after shutdown)."""
        worker = self._res.worker
        return worker.proc.pid if worker else None

    @property
    def workdir(self) -> str | None:
        """The worker's working directory (also its HOME and TMPDIR)."""
        return self._res.workdir

    def start(self) -> None:
        """Start the worker (idempotent)."""
        with self._guard():
            if self._res.worker is None:
                self._spawn()

    def shutdown(self) -> None:
        """Kill the worker and remove its working directory (idempotent)."""
        with self._lock:
            self._closed = True
            self._finalizer()

    def __enter__(self) -> "ProcessSandbox":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _guard(self):
        """Serialize use across threads; refuse use after shutdown or from inside a host function."""
        if self._closed:
            raise SandboxError("the process sandbox has been shut down")
        if self._calling_thread == threading.get_ident():
            raise SandboxError("the sandbox cannot be used from inside one of its own host functions")
        return self._lock

    def _spawn(self) -> None:
        """Start a worker, wait for 'ready', restore host variables and functions."""
        if self._res.workdir is None:
            self._res.workdir = tempfile.mkdtemp(prefix="rlm-process-")
        workdir = self._res.workdir
        env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir,
               "PYTHONIOENCODING": "utf-8", "LANG": "C.UTF-8", **self.settings.env}
        argv = [self.settings.python or sys.executable, "-I", "-u", str(WORKER),
                "--memory-mb", str(self.limits.memory_mb), "--max-output-chars", str(self.limits.max_output_chars)]
        try:
            worker = _Worker(argv, workdir, env)
        except OSError as exc:
            raise SandboxError(f"cannot start the sandbox worker ({argv[0]}): {exc}") from exc
        self._res.worker = worker
        try:
            ready = worker.recv(self.settings.start_timeout)
            if ready.get("op") != "ready":
                raise SandboxError(f"the sandbox worker sent {ready!r} instead of 'ready'")
            restore = [{"op": "register", "names": list(self._functions)}] if self._functions else []
            restore += [{"op": "set", "name": n, "value": v} for n, v in self._host_vars.items()]
            for message in restore:
                reply = self._request(worker, message, self.settings.control_timeout)
                if reply.get("error"):
                    raise SandboxError(f"restoring the sandbox state failed: {reply['error']}")
        except (_WorkerGone, _Timeout) as exc:
            detail = worker.describe_exit() if isinstance(exc, _WorkerGone) else "no answer in time"
            self._kill()
            raise SandboxError(f"the sandbox worker could not be started: {detail}") from None
        except BaseException:
            self._kill()
            raise

    def _kill(self) -> None:
        if self._res.worker is not None:
            self._res.worker.kill()
            self._res.worker = None

    def _restart(self, why: str | None = None) -> None:
        """Replace the worker by a fresh one with the host's variables and functions (SandboxError if not).

        ``why`` is kept for the next ``execute`` when the model is not told right away.
        """
        self._kill()
        self._unreported = why
        self._spawn()

    def _worker(self) -> _Worker:
        """The running worker: started if needed, replaced if it has exited since it was last used."""
        worker = self._res.worker
        if worker is not None and worker.proc.poll() is not None:
            self._restart(f"the sandbox process had exited since the previous step: {worker.describe_exit()}")
        elif worker is None:
            self._spawn()
        return self._res.worker  # type: ignore[return-value]

    # -- requests -----------------------------------------------------------------------------------------
    def _request(self, worker: _Worker, message: dict, timeout: float | None) -> dict:
        """Send a request and wait for its result, serving host-function calls meanwhile.

        ``timeout`` counts only the worker's own time: waiting inside a host function does not use it up.
        """
        self._next_id += 1
        message["id"] = self._next_id
        worker.send(message)  # a value that cannot be encoded fails here, before anything is written
        remaining = timeout
        try:
            while True:
                started = time.monotonic()
                reply = worker.recv(remaining)
                if remaining is not None:
                    remaining -= time.monotonic() - started
                op = reply.get("op")
                if op == "call":
                    self._serve_call(worker, reply)
                elif op == "result" and reply.get("id") == message["id"]:
                    return reply
        except (_Timeout, _WorkerGone):
            raise
        except BaseException:  # KeyboardInterrupt, a failing host function…: the worker is mid-request
            self._kill()
            self._unreported = "the host was interrupted while the sandbox was busy, and the sandbox was stopped"
            raise

    def _checked(self, worker: _Worker, message: dict) -> dict:
        """A control request (not execute): SandboxError if the worker reports an error."""
        try:
            reply = self._request(worker, message, self.settings.control_timeout)
        except _Timeout:
            self._restart(f"the sandbox process did not answer a {message['op']!r} request in time")
            raise SandboxError(f"the sandbox worker did not answer {message['op']!r} in time; restarted") from None
        if reply.get("error"):
            raise SandboxError(f"sandbox {message['op']!r} failed: {reply['error']}")
        return reply

    def _control(self, message: dict) -> dict:
        """A control request, retried once on a fresh worker if the worker had died."""
        try:
            return self._checked(self._worker(), message)
        except _WorkerGone:
            worker = self._res.worker
            self._restart(f"the sandbox process died: {worker.describe_exit() if worker else 'unknown cause'}")
        try:
            return self._checked(self._worker(), message)
        except _WorkerGone:
            self._kill()
            raise SandboxError("the sandbox worker died again after a restart") from None

    def _serve_call(self, worker: _Worker, call: dict) -> None:
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
        worker.send(answer)

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
            worker = self._worker()
            if self._unreported:
                why, self._unreported = self._unreported, None
                return ExecResult(
                    error=f"SandboxCrash: the sandbox was restarted and your code was NOT run: "
                    f"{self._lost_state_note()} Run your code again.\nCause: {why}",
                    restarted=True, duration_s=time.monotonic() - started)
            try:
                reply = self._request(worker, {"op": "execute", "code": code}, limit)
            except _Timeout:
                self._restart()
                return ExecResult(
                    error=f"TimeoutError: this step exceeded the time limit of {limit:g} s and was stopped. The "
                    f"sandbox was restarted: {self._lost_state_note()} Split the work into smaller steps.",
                    timed_out=True, restarted=True, duration_s=time.monotonic() - started)
            except _WorkerGone:
                how = worker.describe_exit()
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
        _check_name(name)
        with self._guard():
            try:
                # encoded once, in send(), before anything is written: a bad value leaves the channel intact
                self._checked(self._worker(), {"op": "set", "name": name, "value": value})
            except (TypeError, ValueError) as exc:
                raise TypeError(f"set_variable({name!r}): the value is not JSON-compatible: {exc}") from None
            except _WorkerGone:
                how = self._res.worker.describe_exit() if self._res.worker else "unknown"
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
            _check_name(name)
            if not callable(function):
                raise TypeError(f"host function {name!r} is not callable")
        with self._guard():
            self._functions.update(functions)
            self._control({"op": "register", "names": list(functions)})


def _check_name(name: str) -> None:
    """A host-provided name must be a plain identifier that does not shadow a REPL builtin."""
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"{name!r} is not a valid variable name (an identifier not starting with '_')")
    if name in RESERVED:
        raise ValueError(f"{name!r} is a REPL builtin of the sandbox and cannot be replaced")


def create(settings: ProcessSettings | None, limits: SandboxLimits | None) -> ProcessSandbox:
    """The ``SandboxSpec`` factory: ``create(settings, limits) -> ProcessSandbox``."""
    if isinstance(settings, dict):
        settings = ProcessSettings(**settings)
    return ProcessSandbox(settings, limits)
