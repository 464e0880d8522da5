"""Work on untrusted bytes (parsing a document, a trace file) in a child process the host can always stop.

``run_bounded(target, *args, limits=BoundedLimits(...))`` runs ``target(*args)`` in a child process with an
address-space limit (``RLIMIT_AS``: what the child may add to the address space it starts with), a CPU-time limit
(``RLIMIT_CPU``), no core dumps, and a wall deadline after which the parent kills it; the child sends back the
target's JSON-able value through a pipe, and the parent reads at most ``output_bytes`` of it. JSON, not pickle: a
child whose parser was subverted can send the parent data, never code. The parent gets the value, or one
:class:`LimitExceeded` (``limit``: ``memory``, ``cpu``, ``wall`` or ``output``) or :class:`ChildFailed` (the target
raised, or the child crashed); it never holds more than the cap, whatever the input.

The child is forked from the caller when the caller has one thread (≈2 ms). When the caller has other threads (a
server), a fork could inherit a lock another thread held, so the child is forked instead by this module's own fork
server: a single-threaded helper process started once (``python -c``, never re-running the caller's main module
as ``multiprocessing`` would), which imports what callers ask it to preload and forks, per request, a waiter that
forks the worker; the target is then named by its import path and its arguments must be JSON-able. Either way the
worker is reaped with ``wait4``: one that died of a signal after growing to near its memory limit is reported as
the memory limit (a C library that cannot allocate often aborts instead of failing the call).
"""

from __future__ import annotations

import dataclasses
import faulthandler
import gc
import importlib
import json
import math
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

MB = 1024 * 1024
#: The child's exit status when it ran out of memory (a ``MemoryError`` it could not even report).
MEMORY_EXIT = 3
_READ = 1 << 20
#: The fork server of this process: (owner pid, process, control socket), started on first need.
_server: Optional[tuple[int, subprocess.Popen, socket.socket]] = None
_server_lock = threading.Lock()


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


def start_method(method: str = "auto") -> str:
    """``fork`` when this process has one thread, else ``forkserver`` (this module's fork server); an explicit
    method is kept."""
    if method != "auto":
        return method
    return "fork" if threading.active_count() == 1 else "forkserver"


#: ``start_method`` as the context kit (``rlm_host.sdk.context``) exports it (a bare ``start_method`` would say too little there).
bounded_start_method = start_method


def run_bounded(target: Callable[..., Any], *args: Any, limits: BoundedLimits = BoundedLimits(),
                method: str = "auto", preload: Iterable[str] = ()) -> Any:  # fmt: skip
    """``target(*args)`` computed in a bounded child process; its value must be JSON-able.

    With the fork server (``method`` ``forkserver``, or ``auto`` in a threaded caller) ``target`` must be a
    module-level function and ``args`` JSON-able; ``preload`` names modules the server imports once, so that its
    children start with them."""
    deadline = None if limits.wall_seconds is None else time.monotonic() + limits.wall_seconds
    if start_method(method) == "fork":
        return _run_forked(target, args, limits, deadline)
    return _run_served(target, args, limits, deadline, list(preload))


def _run_forked(target: Callable[..., Any], args: tuple, limits: BoundedLimits, deadline: Optional[float]) -> Any:
    at_fork = _resident()
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(write_end, target, args, limits)
    os.close(write_end)
    status = usage = None
    data = bytearray()
    try:
        killed = _collect(read_end, None, deadline, limits.output_bytes, data)
        while not killed:  # the pipe is closed: the child is ending
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            status = None
            if deadline is not None and time.monotonic() > deadline:
                killed = "wall"
            else:
                time.sleep(0.0005)
        if status is None:
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
        grown = max(0, usage.ru_maxrss * 1024 - at_fork) // MB
        return _outcome(os.waitstatus_to_exitcode(status), killed, bytes(data), limits, grown)
    finally:
        if status is None:  # interrupted (Ctrl-C): never leave it running
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(read_end)


def _run_served(target: Callable[..., Any], args: tuple, limits: BoundedLimits, deadline: Optional[float],
                preload: list[str]) -> Any:  # fmt: skip
    request = json.dumps({"target": _reference(target), "args": list(args), "limits": dataclasses.asdict(limits),
                          "cwd": os.getcwd()})  # the server started elsewhere: a relative path means the caller's
    read_end, write_end = os.pipe()
    channel, theirs = socket.socketpair()
    try:
        with _server_lock:
            for attempt in (1, 2):
                try:
                    socket.send_fds(_control(), [json.dumps(preload).encode()], [theirs.fileno(), write_end])
                    break
                except OSError:  # the server has gone: start another, once
                    if attempt == 2:
                        raise
                    _stop_server()
        theirs.close()
        os.close(write_end)
        write_end = -1
        channel.sendall(request.encode() + b"\n")
        data = bytearray()
        killed = _collect(read_end, channel.fileno(), deadline, limits.output_bytes, data)
        status = {} if killed else _status(channel, deadline)
        if "error" in status:
            raise ChildFailed(str(status["error"]))
        if not killed and "code" not in status:
            killed = "wall" if deadline is not None and time.monotonic() >= deadline else ""
        code = status.get("code") if isinstance(status.get("code"), int) else None
        return _outcome(code, killed, bytes(data), limits, status.get("grown"))
    finally:
        channel.close()  # a worker still running is killed by its waiter
        theirs.close()
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def _reference(target: Callable[..., Any]) -> str:
    ref = f"{getattr(target, '__module__', '')}:{getattr(target, '__qualname__', '')}"
    try:
        if _resolve(ref) is target:
            return ref
    except (ImportError, AttributeError, ValueError):
        pass
    raise TypeError(f"run_bounded: {target!r} is not a module-level function (the fork server imports it by name)")


def _resolve(ref: str) -> Any:
    module, _, qualname = ref.partition(":")
    value: Any = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def _control() -> socket.socket:
    """The control socket of this process's fork server, started if need be (the caller holds the lock)."""
    global _server
    if _server is not None and (_server[0] != os.getpid() or _server[1].poll() is not None):
        _stop_server()
    if _server is None:
        ours, theirs = socket.socketpair()
        code = ("import json, sys; sys.path[:0] = json.loads(sys.argv[2]); "
                "from rlm_host.bounded import _serve; _serve(int(sys.argv[1]))")  # fmt: skip
        try:
            process = subprocess.Popen([sys.executable, "-c", code, str(theirs.fileno()), json.dumps(sys.path)],
                                       pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL)  # fmt: skip
        finally:
            theirs.close()
        _server = (os.getpid(), process, ours)
    return _server[2]


def _stop_server() -> None:
    """Forget the fork server (closing its control socket ends it; one inherited from a parent is only closed)."""
    global _server
    if _server is not None:
        _server[2].close()
        _server = None


def _status(channel: socket.socket, deadline: Optional[float]) -> dict[str, Any]:
    """The waiter's last word: ``{"code", "grown"}`` once the worker is reaped ({} if none came in time)."""
    line = b""
    while not line.endswith(b"\n") and len(line) < 4096:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        channel.settimeout(timeout)
        try:
            chunk = channel.recv(4096)
        except (socket.timeout, OSError):
            return {}
        if not chunk:
            return {}
        line += chunk
    try:
        status = json.loads(line)
    except ValueError:
        return {}
    return status if isinstance(status, dict) else {}


def _serve(control_fd: int) -> None:
    """The fork server's loop: each message on the control socket names modules to import (once) and carries a
    request's channel and result pipe; a forked waiter serves it. It ends when the host closes the socket."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the host's to handle; its exit ends this
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # waiters are reaped by the kernel
    control = socket.socket(fileno=control_fd)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 16, 2)
        except OSError:
            return
        if not message and not fds:
            return
        try:
            names = json.loads(message)
        except ValueError:
            names = []
        for name in names if isinstance(names, list) else []:
            try:
                importlib.import_module(str(name))
            except Exception:  # noqa: BLE001 - a module that cannot be imported is the worker's error to report
                pass
        if len(fds) == 2 and os.fork() == 0:
            code = 1
            try:
                control.close()
                _wait_one(fds[0], fds[1])
                code = 0
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)


def _wait_one(channel_fd: int, result_fd: int) -> None:
    """A waiter: read the request, fork the worker, and answer with its exit status and growth once it is reaped;
    if the host closes the channel first (a limit, or it stopped), kill the worker."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    channel = socket.socket(fileno=channel_fd)
    channel.settimeout(60)

    def answer(message: dict[str, Any]) -> None:
        channel.sendall(json.dumps(message).encode() + b"\n")

    try:
        line = b""
        while not line.endswith(b"\n"):
            chunk = channel.recv(1 << 20)
            if not chunk:
                return
            line += chunk
        request = json.loads(line)
        target, args = _resolve(request["target"]), tuple(request["args"])
        limits = BoundedLimits(**request["limits"])
    except Exception as exc:  # noqa: BLE001 - told to the host as data
        answer({"error": f"the fork server could not start the target: {type(exc).__name__}: {exc}"})
        return
    at_fork = _resident()
    pid = os.fork()
    if pid == 0:
        channel.close()
        try:
            os.chdir(str(request.get("cwd") or "."))  # where the caller is now, as a forked child would be
        except OSError:
            pass  # the caller's folder is gone: relative paths fail as they would there
        _child(result_fd, target, args, limits)
    os.close(result_fd)
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    poller = select.poll()
    poller.register(channel.fileno(), select.POLLIN)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            answer({"code": os.waitstatus_to_exitcode(status), "grown": max(0, usage.ru_maxrss * 1024 - at_fork) // MB})
            return
        if any(fd == channel.fileno() for fd, _ in poller.poll(None if pidfd is not None else 5)):
            os.kill(pid, signal.SIGKILL)  # the host closed the channel: it wants no more of this worker
            os.waitpid(pid, 0)
            return


def _collect(fd: int, sentinel: Optional[int], deadline: Optional[float], cap: int, data: bytearray) -> str:
    """Read the child's message into ``data`` until it ends; "wall" or "output" when a limit stops it first.
    (``poll``, not ``select``: a long-lived server may hold descriptors past ``FD_SETSIZE``.)"""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if sentinel is not None:
        poller.register(sentinel, select.POLLIN)
    while True:
        timeout = None if deadline is None else max(0, math.ceil((deadline - time.monotonic()) * 1000))
        ready = {number for number, _ in poller.poll(timeout)}
        if not ready:
            return "wall"
        if fd not in ready:  # the child ended: take what it left in the pipe
            drain = select.poll()
            drain.register(fd, select.POLLIN)
            while drain.poll(0):
                chunk = os.read(fd, _READ)
                if not chunk:
                    break
                if len(data) + len(chunk) > cap:
                    return "output"
                data += chunk
            return ""
        chunk = os.read(fd, _READ)
        if not chunk:
            return ""
        if len(data) + len(chunk) > cap:
            return "output"
        data += chunk


def _outcome(code: Optional[int], killed: str, data: bytes, limits: BoundedLimits, grown_mb: Optional[int]) -> Any:
    memory = "needed more memory"
    if killed == "wall":
        raise LimitExceeded("wall", f"did not finish within {limits.wall_seconds:g} s")
    if killed == "output":
        raise LimitExceeded("output", f"sent back more than {limits.output_bytes:,} bytes")
    if code == -signal.SIGXCPU:
        raise LimitExceeded("cpu", f"used more than {limits.cpu_seconds:g} s of CPU time")
    if code == MEMORY_EXIT:
        raise LimitExceeded("memory", memory)
    if code == 0:
        try:
            message = json.loads(data)
        except ValueError:
            message = None
        if isinstance(message, dict):
            if "ok" in message:
                return message["ok"]
            if message.get("limit") == "memory":
                raise LimitExceeded("memory", memory)
            raised = message.get("raised")
            if isinstance(raised, dict):
                kind, text = str(raised.get("type", "")), str(raised.get("message", ""))
                raise ChildFailed(f"{kind}: {text}" if text else kind, error_type=kind)
        raise ChildFailed("the child process sent back no readable result")
    if code is not None and code < 0:
        name = _signal_name(-code)
        if limits.memory_mb and grown_mb is not None and grown_mb >= limits.memory_mb * 3 // 4:
            # a library that cannot allocate aborts (PDFium: SIGABRT) rather than raise: it died at the limit
            raise LimitExceeded("memory", f"{memory} (it grew by {grown_mb} MB, then died of {name})")
        if -code == signal.SIGKILL:  # not ours (we said so above): the out-of-memory killer, or a person
            raise ChildFailed(f"the child process was killed ({name}; out of memory?)", signal_name=name)
        raise ChildFailed(f"the child process crashed ({name})", signal_name=name)
    if code is None:
        raise ChildFailed("the child process ended without a status (its fork server stopped?)")
    raise ChildFailed(f"the child process exited with status {code}")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _child(fd: int, target: Callable[..., Any], args: tuple, limits: BoundedLimits) -> None:
    """In the child: limits, the target, its value (or what it raised) as JSON to the pipe ``fd``, then exit at
    once (the parent's exit handlers never run here)."""
    code = 0
    try:
        _reset_signals()
        faulthandler.disable()  # a crash here is reported by the parent, not as a dump of the parent's stack
        gc.freeze()  # the collector skips the inherited heap: traversing it would copy every page it touches
        _apply(limits)
        try:
            message: dict[str, Any] = {"ok": target(*args)}
        except MemoryError:
            message = {"limit": "memory"}
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
        try:
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        except (ValueError, OSError, AttributeError):  # not the main thread, or no such signal here
            pass


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
        size = _address_space()
        lower(resource.RLIMIT_AS, size + limits.memory_mb * MB, size + limits.memory_mb * MB)


def _address_space() -> int:
    """This process's address space in bytes (0 where /proc is missing)."""
    return _statm(0)


def _resident() -> int:
    """This process's resident memory in bytes (0 where /proc is missing)."""
    return _statm(1)


def _statm(field: int) -> int:
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[field]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


__all__ = ["BoundedLimits", "BoundedError", "LimitExceeded", "ChildFailed", "run_bounded", "start_method", "MEMORY_EXIT"]
