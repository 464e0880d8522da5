"""Work on untrusted bytes (parsing a document, a trace file) in a child process the host can always stop.

``run_bounded(target, *args, limits=BoundedLimits(...))`` runs ``target(*args)`` in a child process with an
address-space limit (``RLIMIT_AS``: what the child may add to the address space it starts with), a CPU-time limit
(``RLIMIT_CPU``), no core dumps, and a wall deadline after which the parent kills it; the child sends back the
target's JSON-able value through a pipe, and the parent reads at most ``output_bytes`` of it. JSON, not pickle: a
child whose parser was subverted can send the parent data, never code. The parent gets the value, or one
:class:`LimitExceeded` (``limit``: ``memory``, ``cpu``, ``wall`` or ``output``) or :class:`ChildFailed` (the target
raised, or the child crashed); it never holds more than the cap, whatever the input.

The child is forked from the caller when the caller has one thread (≈2 ms). When the caller has other threads (a
server), a fork could inherit a lock another thread held, so the child comes instead from the host's fork server
(``rlm_host.sandbox.fork_server``, the one that forks the process runtime's workers): a single-threaded template
started once (``python -I``, never re-running the caller's main module as ``multiprocessing`` would) with this
file as its script, which imports what callers ask it to preload and forks a child per request; the target is
then named by its import path and its arguments must be JSON-able (they reach the child on its stdin, never
through the template). Either way the child is reaped with ``wait4``: one that died of a signal after growing to
near its memory limit is reported as the memory limit (a C library that cannot allocate often aborts instead of
failing the call). This file is standard library only: the template runs it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import gc
import json
import math
import os
import select
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

MB = 1024 * 1024
#: The child's exit status when it ran out of memory (a ``MemoryError``, from the target or while reporting).
MEMORY_EXIT = 3
_READ = 1 << 20
#: The fork server's template: its environment (each child gets the caller's), and how long it may take to answer
#: (its first answer imports what the request preloads).
TEMPLATE_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
START_SECONDS = 30.0


@dataclass(frozen=True)
class BoundedLimits:
    """``memory_mb``: address space the child may add to what it starts with; ``cpu_seconds``: its CPU time;
    ``wall_seconds``: the deadline after which it is killed; ``output_bytes``: the most it may send back (None:
    no limit of that kind, except ``output_bytes``, which is always bounded)."""

    memory_mb: Optional[int] = 1024
    cpu_seconds: Optional[float] = 60
    wall_seconds: Optional[float] = 120
    output_bytes: int = 256 * MB


class BoundedError(Exception):
    """The child gave no value. ``limit`` names the limit it hit ("" when it failed otherwise)."""

    limit = ""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class LimitExceeded(BoundedError):
    """The child went past ``limit`` (``memory``, ``cpu``, ``wall`` or ``output``)."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


class ChildFailed(BoundedError):
    """The target raised (``error_type`` is the exception's class name), or the child died (``signal``: the
    signal's name, e.g. ``SIGSEGV``, when it was killed by one)."""

    def __init__(self, message: str, error_type: str = "", signal_name: str = "") -> None:
        super().__init__(message)
        self.error_type = error_type
        self.signal = signal_name


def bounded_start_method(method: str = "auto") -> str:
    """``fork`` when this process has one thread, else ``forkserver`` (the host's fork server); an explicit
    method is kept."""
    return method if method != "auto" else "fork" if threading.active_count() == 1 else "forkserver"


def run_bounded(target: Callable[..., Any], *args: Any, limits: BoundedLimits = BoundedLimits(),
                method: str = "auto", preload: Iterable[str] = ()) -> Any:
    """``target(*args)`` computed in a bounded child process; its value must be JSON-able.

    With the fork server (``method`` ``forkserver``, or ``auto`` in a threaded caller) ``target`` must be a
    module-level function and ``args`` JSON-able; ``preload`` names modules the server imports once, so that its
    children start with them."""
    deadline = None if limits.wall_seconds is None else time.monotonic() + limits.wall_seconds
    forked = bounded_start_method(method) == "fork"
    child = _Forked(target, args, limits) if forked else _served(target, args, limits, list(preload))
    code = None
    try:
        data = bytearray()
        killed = _collect(child.stdout.fileno(), deadline, limits.output_bytes, data)
        if not killed:
            code = child.exit_code(None if deadline is None else max(0.0, deadline - time.monotonic()))
            killed = "wall" if code is None and deadline is not None and time.monotonic() >= deadline else ""
        return _outcome(code, killed, bytes(data), limits, child.grown_mb())
    finally:
        if code is None:  # a limit, or an interruption (Ctrl-C): never leave it running
            child.kill()
        child.stdout.close()


class _Forked:
    """A child forked from the caller, with what ``run_bounded`` uses of a fork server's child (``ForkedProcess``):
    its result pipe as ``stdout``, ``exit_code``, ``grown_mb`` and ``kill`` (which also reaps it)."""

    def __init__(self, target: Callable[..., Any], args: tuple, limits: BoundedLimits) -> None:
        self._at_fork = _statm(1)
        self.code: Optional[int] = None
        self.grown: Optional[int] = None
        read_end, write_end = os.pipe()
        try:
            self.pid = os.fork()
        except BaseException:
            os.close(read_end)
            os.close(write_end)
            raise
        if self.pid == 0:  # the child: never returns
            os.close(read_end)
            _child(write_end, target, args, limits)
        os.close(write_end)
        self.stdout = os.fdopen(read_end, "rb", buffering=0)

    def exit_code(self, timeout: Optional[float]) -> Optional[int]:
        """Its exit code once reaped, waiting up to ``timeout`` seconds (None: no limit) for it to end, else None."""
        end = None if timeout is None else time.monotonic() + timeout
        while self.code is None:
            done, status, usage = os.wait4(self.pid, os.WNOHANG)
            if done:
                self.code = os.waitstatus_to_exitcode(status)
                self.grown = max(0, usage.ru_maxrss * 1024 - self._at_fork) // MB
            elif end is not None and time.monotonic() > end:
                return None
            else:
                time.sleep(0.0005)
        return self.code

    def grown_mb(self) -> Optional[int]:
        return self.grown

    def kill(self) -> None:
        if self.code is None:  # not reaped yet, so the pid is still this child's
            os.kill(self.pid, signal.SIGKILL)
            self.exit_code(None)


def _served(target: Callable[..., Any], args: tuple, limits: BoundedLimits, preload: list[str]) -> Any:
    """A child of the host's fork server (a ``ForkedProcess``), given the request on its stdin."""
    from rlm_host.sandbox.fork_server import fork_server  # here: the template runs this file (standard library only)

    body = json.dumps({"target": _reference(target), "args": list(args), "limits": dataclasses.asdict(limits),
                       "path": sys.path}).encode()
    request = {"args": [], "cwd": os.getcwd(), "env": dict(os.environ), "path": sys.path, "preload": preload,
               "kill_on_close": True}  # the template is in /: a relative path means the caller's folder

    def spawn() -> Any:
        return fork_server(sys.executable, Path(__file__), TEMPLATE_ENV, START_SECONDS).spawn(request, stderr=2)

    try:
        child = spawn()
    except OSError:  # the server has gone: start another, once
        child = spawn()
    try:
        _write_all(child.stdin.fileno(), body)
    except BrokenPipeError:
        pass  # it ended before reading: its exit code says how
    except BaseException:
        child.kill()
        child.stdout.close()
        raise
    finally:
        child.stdin.close()
    return child


def main(argv: list[str]) -> None:
    """A bounded child of the fork server: the request on stdin (the target's import path, its JSON arguments, the
    limits, the caller's ``sys.path``), the value sent back on what was stdout (which becomes stderr: a library's
    prints cannot garble the value)."""
    result = os.dup(1)
    os.dup2(2, 1)
    with os.fdopen(0, "rb") as stdin:
        request = json.loads(stdin.read())
    sys.path[:] = request["path"]
    _child(result, request["target"], tuple(request["args"]), BoundedLimits(**request["limits"]))


def _reference(target: Callable[..., Any]) -> str:
    ref = f"{getattr(target, '__module__', '')}:{getattr(target, '__qualname__', '')}"
    with contextlib.suppress(ImportError, AttributeError, ValueError):
        if _resolve(ref) is target:
            return ref
    raise TypeError(f"run_bounded: {target!r} is not a module-level function (the fork server imports it by name)")


def _resolve(ref: str) -> Any:
    """The host's one importer of ``module:attr`` (in a fork server's child: found on the caller's ``sys.path``)."""
    from rlm_host.components import import_object  # here: the template runs this file (standard library only)

    return import_object(ref)


def _collect(fd: int, deadline: Optional[float], cap: int, data: bytearray) -> str:
    """Read the child's message into ``data`` until it ends; "wall" or "output" when a limit stops it first.
    (``poll``, not ``select``: a long-lived server may hold descriptors past ``FD_SETSIZE``.)"""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        timeout = None if deadline is None else max(0, math.ceil((deadline - time.monotonic()) * 1000))
        if not poller.poll(timeout):
            return "wall"
        chunk = os.read(fd, _READ)
        if not chunk:
            return ""
        if len(data) + len(chunk) > cap:
            return "output"
        data += chunk


def _outcome(code: Optional[int], killed: str, data: bytes, limits: BoundedLimits, grown_mb: Optional[int]) -> Any:
    memory = "needed more memory"
    if killed:
        raise LimitExceeded(killed, f"did not finish within {limits.wall_seconds:g} s" if killed == "wall"
                            else f"sent back more than {limits.output_bytes:,} bytes")
    if code == -signal.SIGXCPU:
        raise LimitExceeded("cpu", f"used more than {limits.cpu_seconds:g} s of CPU time")
    if code == MEMORY_EXIT:
        raise LimitExceeded("memory", memory)
    if code == 0:
        message = None
        with contextlib.suppress(ValueError):
            message = json.loads(data)
        if isinstance(message, dict):
            if "ok" in message:
                return message["ok"]
            raised = message.get("raised")
            if isinstance(raised, dict):
                kind, text = str(raised.get("type", "")), str(raised.get("message", ""))
                raise ChildFailed(f"{kind}: {text}" if text else kind, error_type=kind)
        raise ChildFailed("the child process sent back no readable result")
    if code is not None and code < 0:
        name = next((s.name for s in signal.Signals if s == -code), f"signal {-code}")
        if limits.memory_mb and grown_mb is not None and grown_mb >= limits.memory_mb * 3 // 4:
            # a library that cannot allocate aborts (PDFium: SIGABRT) rather than raise: it died at the limit
            raise LimitExceeded("memory", f"{memory} (it grew by {grown_mb} MB, then died of {name})")
        if -code == signal.SIGKILL:  # not ours (we said so above): the out-of-memory killer, or a person
            raise ChildFailed(f"the child process was killed ({name}; out of memory?)", signal_name=name)
        raise ChildFailed(f"the child process crashed ({name})", signal_name=name)
    if code is None:
        raise ChildFailed("the child process ended without a status (its fork server stopped?)")
    raise ChildFailed(f"the child process exited with status {code}")


def _child(fd: int, target: "Callable[..., Any] | str", args: tuple, limits: BoundedLimits) -> None:
    """In the child: the target (imported first when named by its import path), limits, its value (or what it
    raised) as JSON to the pipe ``fd``, then exit at once (the parent's exit handlers never run here)."""
    code = 0
    try:
        _reset_signals()
        faulthandler.disable()  # a crash here is reported by the parent, not as a dump of the parent's stack
        gc.freeze()  # the collector skips the inherited heap: traversing it would copy every page it touches
        try:
            function = _resolve(target) if isinstance(target, str) else target  # importing it is not the work
            _apply(limits)
            message: dict[str, Any] = {"ok": function(*args)}
        except MemoryError:
            raise  # the parent reads it from the exit status (MEMORY_EXIT)
        except Exception as exc:  # noqa: BLE001 - reported to the parent as data
            message = {"raised": {"type": type(exc).__name__, "message": str(exc)[:2000]}}
        payload = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str)
        _write_all(fd, payload.encode("utf-8", errors="surrogatepass"))
    except MemoryError:
        code = MEMORY_EXIT
    except BaseException:  # noqa: BLE001 - an interrupted or broken child just ends
        code = 1
    finally:
        os._exit(code)


def _reset_signals() -> None:
    """Ctrl-C and termination end the child at once (the parent's handlers are for the parent)."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        with contextlib.suppress(ValueError, OSError, AttributeError):  # not the main thread, or no such signal
            signal.signal(getattr(signal, name), signal.SIG_DFL)


def _apply(limits: BoundedLimits) -> None:
    try:
        import resource
    except ImportError:  # not POSIX: only the wall deadline and the output cap apply
        return

    def lower(kind: int, soft: int, hard: int) -> None:
        _, current = resource.getrlimit(kind)
        if current != resource.RLIM_INFINITY:
            soft, hard = min(soft, current), min(hard, current)
        resource.setrlimit(kind, (soft, hard))

    lower(resource.RLIMIT_CORE, 0, 0)
    if limits.cpu_seconds is not None:
        seconds = max(1, math.ceil(limits.cpu_seconds))
        lower(resource.RLIMIT_CPU, seconds, seconds + 2)  # SIGXCPU at the soft limit ends it first
    if limits.memory_mb is not None:
        size = _statm(0) + limits.memory_mb * MB  # on top of the address space it starts with
        lower(resource.RLIMIT_AS, size, size)


def _statm(field: int) -> int:
    """A field of ``/proc/self/statm`` in bytes (0: the address space, 1: the resident memory; 0 where /proc is
    missing)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[field]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
