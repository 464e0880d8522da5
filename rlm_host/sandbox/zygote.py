"""The process runtime's fork server: a pristine worker template that forks one fresh worker per session.

Run by the host as ``python -I -u zygote.py FD`` (standard library only; FD is a Unix socket to the host). It
imports ``worker.py`` (next to it) once and then waits. For each request, a JSON line ``{"cwd", "env", "args"}``
sent with the three ends of the worker's stdin, stdout and stderr pipes, it forks: the child starts a new session,
takes the pipes as fds 0-2, the request's working directory and environment, and runs ``worker.main(args)``, as
``python -I -u worker.py ARGS`` would, without starting an interpreter (≈ 1 ms instead of ≈ 20 ms of CPU). The
template holds nothing of any session: it never runs user code, and each worker is a fresh fork of it.

Replies, JSON lines on the socket: ``{"pid": n}`` for each request (or ``{"error": text}``), and
``{"exited": pid, "code": c}`` when a worker ends (``c`` as ``Popen.returncode``: negative for a signal), since
only this process can reap them. It exits when the host closes the socket.
"""

import gc
import importlib
import importlib.util
import json
import os
import select
import signal
import socket
import sys


def _load_worker():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
    spec = importlib.util.spec_from_file_location("rlm_sandbox_worker", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _code(status):
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _reap(channel):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(channel, {"exited": pid, "code": _code(status)})


def _send(channel, message):
    channel.sendall((json.dumps(message) + "\n").encode())


def _read_request(channel):
    """One request line and the file descriptors sent with it; (None, []) when the host has closed the socket."""
    data, fds = b"", []
    while not data.endswith(b"\n"):
        chunk, received, _, _ = socket.recv_fds(channel, 1 << 16, 3)
        fds += received
        if not chunk:
            for fd in fds:
                os.close(fd)
            return None, []
        data += chunk
    return data, fds


def _become_worker(worker, channel, request, fds, wakeup):
    """In the forked child: the session's worker (never returns)."""
    code = 1
    try:
        channel.close()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in wakeup:
            os.close(fd)
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        worker.main(request["args"])
        code = 0
    except BaseException:  # told on the worker's stderr (fd 2 is the host's pipe once dup2 has run)
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
    finally:
        os._exit(code)


#: Modules a worker imports when it starts (``worker.main``) or often right after: imported once, here.
PRELOADED = ("faulthandler", "resource", "select", "re", "json", "math", "collections", "itertools", "functools",
             "ctypes")


def serve(fd):
    worker = _load_worker()
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # the template's objects move to the permanent generation: a worker's garbage collections never walk them,
    # so its pages stay shared with the template instead of being copied by the collector's reference counting
    gc.collect()
    gc.freeze()
    channel = socket.socket(fileno=fd)
    wakeup = os.pipe()  # a byte arrives here when a worker ends (SIGCHLD), so it is reaped and reported at once
    for end in wakeup:
        os.set_blocking(end, False)
    signal.set_wakeup_fd(wakeup[1])
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    while True:
        try:
            ready, _, _ = select.select([channel, wakeup[0]], [], [])
        except InterruptedError:
            continue
        if wakeup[0] in ready:
            try:
                while os.read(wakeup[0], 512):
                    pass
            except BlockingIOError:
                pass
            _reap(channel)
        if channel not in ready:
            continue
        try:
            line, fds = _read_request(channel)
        except OSError:
            return
        if line is None:
            return  # the host is gone
        try:
            request = json.loads(line)
            if len(fds) != 3:
                raise ValueError(f"expected 3 file descriptors, got {len(fds)}")
        except ValueError as exc:
            for fd in fds:
                os.close(fd)
            _send(channel, {"error": str(exc)})
            continue
        try:
            pid = os.fork()
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            _send(channel, {"error": f"fork failed: {exc}"})
            continue
        if pid == 0:
            _become_worker(worker, channel, request, fds, wakeup)
        for fd in fds:
            os.close(fd)
        _send(channel, {"pid": pid})
        _reap(channel)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
