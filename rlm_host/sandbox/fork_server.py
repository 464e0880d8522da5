"""The host side of the host's fork server (``fork_template.py``): fresh child processes in ≈ 1 ms of CPU, not ≈ 20.

Starting ``python -I -u worker.py`` costs an interpreter start per session, which ``rlm bench run -j 32`` pays for
every case (3.5× the ideal on 2 cores). A ``ForkServer`` starts one pristine template per interpreter, script
and environment (``fork_server``): the process runtime's (``worker.py``, with the runtime's empty environment),
and the one ``run_bounded`` uses in a threaded caller (``bounded.py``, with the document parsers it preloads, so
that sandbox workers never carry them). Each ``spawn`` gets a fresh fork of the template with its own pipes,
session, working directory and environment. No state passes between children: the template never runs user
code, and a child is never reused.

``ForkedProcess`` gives its user what it uses of a ``Popen`` (pid, pipes, ``poll``, ``wait``, ``kill``); the exit
codes come from the server, the children's parent. A server that cannot start or has died is reported as an
``OSError`` (the process runtime then starts the worker itself). Servers are per host process: a forked child of
the host (``rlm bench run`` worker processes) starts its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any, Optional

from rlm_host.process_state import register
from rlm_host.threads import run_in_thread

TEMPLATE_SCRIPT = Path(__file__).with_name("fork_template.py")


class ForkedProcess:
    """A child forked by a ``ForkServer``: its pid, its pipes as file objects (``stderr`` None when the caller
    gave its own), and its exit code when known."""

    def __init__(self, server: "ForkServer", pid: int, stdin: Any, stdout: Any, stderr: Any) -> None:
        self.server, self.pid = server, pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr

    def exit_code(self, timeout: Optional[float] = 0.0) -> Optional[int]:
        """Its exit code once it has ended, waiting up to ``timeout`` seconds for that (None: no limit), else None."""
        return self.server.exit_of(self.pid, timeout)[0]

    poll = exit_code  # Popen's name for it

    def wait(self, timeout: Optional[float] = None) -> int:
        code = self.exit_code(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0)
        return code

    def grown_mb(self) -> Optional[int]:
        """How far its peak resident memory went past the template's (known once it has ended)."""
        return self.server.exit_of(self.pid)[1]

    def kill(self) -> None:
        if self.poll() is None:  # not reaped yet, so the pid is still this child's
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


class ForkServer:
    """One running ``fork_template.py`` and the socket to it; ``spawn`` asks it for a child."""

    def __init__(self, python: str, script: Path, env: dict[str, str], start_timeout: float) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.proc = subprocess.Popen(
                [python, "-I", "-u", str(TEMPLATE_SCRIPT), str(theirs.fileno()), str(script)],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, cwd="/", env=env, start_new_session=True, close_fds=True,
            )
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
        self._exits: dict[int, tuple[int, Optional[int]]] = {}
        self.alive = True
        run_in_thread(self._read, f"rlm-fork-server-{self.proc.pid}")

    def spawn(self, request: dict[str, Any], stderr: Optional[int] = None) -> ForkedProcess:
        """A fresh child running the script's ``main(request["args"])`` in ``request["cwd"]`` with
        ``request["env"]`` (and the template's other request keys: ``preload``, ``path``, ``kill_on_close``); its
        stderr is ``stderr`` when given, else a pipe. OSError when the server cannot."""
        pipes = [os.pipe() for _ in range(2 if stderr is not None else 3)]  # (read end, write end) each
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1] if stderr is None else stderr]
        ours = [pipes[0][1], pipes[1][0]] + ([pipes[2][0]] if stderr is None else [])
        try:
            with self._request:
                if not self.alive:
                    raise OSError("the fork server has ended")
                try:
                    socket.send_fds(self._socket, [(json.dumps(request) + "\n").encode()], theirs)
                    with self._changed:
                        if not self._changed.wait_for(lambda: self._replies or not self.alive, self._timeout):
                            raise OSError(f"the fork server did not answer within {self._timeout:g} s")
                        if not self._replies:
                            raise OSError("the fork server has ended")
                        reply = self._replies.pop(0)
                except OSError:
                    self.close()  # no answer, or a late one that would be taken for the next request's
                    raise
            if "pid" not in reply:
                raise OSError(f"the fork server could not start a child: {reply.get('error', reply)}")
        except BaseException:
            for fd in ours:
                os.close(fd)
            raise
        finally:
            for fd in theirs[: len(pipes)]:  # the child's ends this call made (a given stderr stays open)
                os.close(fd)
        files = [os.fdopen(ours[0], "wb")] + [os.fdopen(fd, "rb") for fd in ours[1:]]
        return ForkedProcess(self, int(reply["pid"]), files[0], files[1], files[2] if stderr is None else None)

    def exit_of(self, pid: int, timeout: Optional[float] = 0.0) -> tuple[Optional[int], Optional[int]]:
        """(exit code, growth in MB) of a child once it has ended, waiting up to ``timeout`` seconds for that (None:
        no limit), else (None, None)."""
        with self._changed:
            self._changed.wait_for(lambda: pid in self._exits or not self.alive, timeout)
            return self._exits.get(pid, (None, None))

    def close(self) -> None:
        """Stop using this server: it ends (and kills its ``kill_on_close`` children) once it sees the socket
        shut; children already reported keep their exit codes."""
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)
        with self._changed:
            self.alive = False
            self._changed.notify_all()

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
                        self._exits[int(message["exited"])] = (int(message["code"]), message.get("grown"))
                    else:
                        if "pid" in message:  # a pid used again: the earlier child's exit is not this one's
                            self._exits.pop(int(message["pid"]), None)
                        self._replies.append(message)
                    self._changed.notify_all()
        except (OSError, ValueError):
            pass
        finally:
            self.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)


_lock = threading.Lock()
_servers: dict[tuple[Any, ...], ForkServer] = {}


def fork_server(python: str, script: Path, env: dict[str, str], start_timeout: float) -> ForkServer:
    """The running server for this interpreter, script and environment, started on first use (OSError if it
    cannot)."""
    key = (python, str(script), tuple(sorted(env.items())))
    with _lock:
        server = _servers.get(key)
        if server is None or not server.alive:
            server = _servers[key] = ForkServer(python, script, env, start_timeout)
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


register("fork servers", after_fork_in_child=_after_fork_in_child, at_exit=_let_go)
