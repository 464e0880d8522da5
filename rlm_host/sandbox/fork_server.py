"""The host side of the process runtime's fork server (``zygote.py``): fresh workers in ≈ 1 ms of CPU, not ≈ 20.

Starting ``python -I -u worker.py`` costs an interpreter start per session, which ``rlm bench run -j 32`` pays for
every case (3.5× the ideal on 2 cores). A ``ForkServer`` starts one pristine template per interpreter and
environment, with the runtime's empty environment; each session asks it for a worker, which is a fresh fork of
the template with its own pipes, session, working directory and environment. No state passes between sessions:
the template never runs user code, and a worker is never reused.

``ForkedProcess`` gives the runtime what it uses of a ``Popen`` (pid, pipes, ``poll``, ``wait``); the exit
codes come from the server, the workers' parent. A server that cannot start or has died is reported as an
``OSError``, and the runtime falls back to starting the worker itself. Servers are per host process: a forked
child of the host (``rlm bench run`` worker processes) starts its own.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any, Optional

from rlm_host.threads import run_in_thread

ZYGOTE_SCRIPT = Path(__file__).with_name("zygote.py")


class ForkedProcess:
    """A worker forked by a ``ForkServer``: its pid, its pipes as file objects, and its exit code when known."""

    def __init__(self, server: "ForkServer", pid: int, stdin: Any, stdout: Any, stderr: Any) -> None:
        self.server, self.pid = server, pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr

    def poll(self) -> Optional[int]:
        return self.server.exit_code(self.pid)

    def wait(self, timeout: Optional[float] = None) -> int:
        code = self.server.wait_exit(self.pid, timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0)
        return code


class ForkServer:
    """One running ``zygote.py`` and the socket to it; ``spawn`` asks it for a worker."""

    def __init__(self, python: str, env: dict[str, str], start_timeout: float) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.proc = subprocess.Popen(
                [python, "-I", "-u", str(ZYGOTE_SCRIPT), str(theirs.fileno())], pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", env=env,
                start_new_session=True, close_fds=True,
            )  # fmt: skip
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        self._socket = ours
        self._timeout = start_timeout
        self._request = threading.Lock()  # one request in flight: its reply is the next "pid" or "error" line
        self._changed = threading.Condition()
        self._replies: list[dict[str, Any]] = []
        self._codes: dict[int, int] = {}
        self.alive = True
        run_in_thread(self._read, f"rlm-fork-server-{self.proc.pid}")

    def spawn(self, args: list[str], cwd: str, env: dict[str, str]) -> ForkedProcess:
        """A fresh worker running ``worker.main(args)`` in ``cwd`` with ``env``; OSError when the server cannot."""
        pipes = [os.pipe() for _ in range(3)]  # stdin, stdout, stderr: (read end, write end)
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1]]
        ours = [pipes[0][1], pipes[1][0], pipes[2][0]]
        try:
            with self._request:
                if not self.alive:
                    raise OSError("the fork server has ended")
                line = (json.dumps({"cwd": cwd, "env": env, "args": args}) + "\n").encode()
                socket.send_fds(self._socket, [line], theirs)
                reply = self._next_reply()
        except BaseException:
            for fd in ours:
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        if "pid" not in reply:
            for fd in ours:
                os.close(fd)
            raise OSError(f"the fork server could not start a worker: {reply.get('error', reply)}")
        return ForkedProcess(self, int(reply["pid"]), os.fdopen(ours[0], "wb"), os.fdopen(ours[1], "rb"),
                             os.fdopen(ours[2], "rb"))  # fmt: skip

    def exit_code(self, pid: int) -> Optional[int]:
        with self._changed:
            return self._codes.get(pid)

    def wait_exit(self, pid: int, timeout: Optional[float]) -> Optional[int]:
        with self._changed:
            self._changed.wait_for(lambda: pid in self._codes or not self.alive, timeout)
            return self._codes.get(pid)

    def _next_reply(self) -> dict[str, Any]:
        with self._changed:
            if not self._changed.wait_for(lambda: self._replies or not self.alive, self._timeout):
                raise OSError(f"the fork server did not answer within {self._timeout:g} s")
            if not self._replies:
                raise OSError("the fork server has ended")
            return self._replies.pop(0)

    def _read(self) -> None:
        stream = self._socket.makefile("rb")
        try:
            for line in stream:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                with self._changed:
                    if "exited" in message:
                        self._codes[int(message["exited"])] = int(message["code"])
                    else:
                        self._replies.append(message)
                    self._changed.notify_all()
        except (OSError, ValueError):
            pass
        finally:
            with self._changed:
                self.alive = False
                self._changed.notify_all()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


_lock = threading.Lock()
_servers: dict[tuple[Any, ...], ForkServer] = {}


def fork_server(python: str, env: dict[str, str], start_timeout: float) -> ForkServer:
    """The running server for this interpreter and environment, started on first use (OSError if it cannot)."""
    key = (python, tuple(sorted(env.items())))
    with _lock:
        server = _servers.get(key)
        if server is None or not server.alive:
            server = _servers[key] = ForkServer(python, env, start_timeout)
        return server


def _let_go() -> None:
    """Close this process's ends of the servers' sockets (each server then ends: it sees the socket close)."""
    for server in list(_servers.values()):
        server._socket.close()
    _servers.clear()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    _let_go()  # the parent's servers answer the parent only; closing the child's copies leaves them running


atexit.register(_let_go)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
