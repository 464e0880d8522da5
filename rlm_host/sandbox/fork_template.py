"""The host's fork server: a pristine template process that forks one fresh child per request.

Run by the host as ``python -I -u fork_template.py FD SCRIPT`` (standard library only; FD is a Unix socket to the host,
SCRIPT a standard-library-only module with a ``main(args)``: the process runtime's ``worker.py``, or
``rlm_host/bounded.py`` for bounded children of threaded callers). It imports SCRIPT once and then waits. For each
request, a JSON line ``{"cwd", "env", "args"}`` sent with three file descriptors (the child's stdin, stdout and
stderr), it forks: the child starts a new session, takes the descriptors as fds 0-2, the request's working
directory and environment, and runs ``main(args)``, as ``python -I -u SCRIPT ARGS`` would, without starting an
interpreter (≈ 1 ms instead of ≈ 20 ms of CPU). The template never runs user code or reads untrusted bytes: each
child is a fresh fork of it. A request may also name modules to ``preload`` (found on ``path``), which the
template imports once before it forks, so that later children start with them (the host's own trusted code:
document parsers), and ask to be killed when the host goes (``kill_on_close``).

Replies, JSON lines on the socket: ``{"pid": n}`` for each request (or ``{"error": text}``), and ``{"exited": pid,
"code": c, "grown": mb}`` when a child ends (``c`` as ``Popen.returncode``: negative for a signal; ``grown``: how
far its peak resident memory went past what it started with), since only this process can reap them. It exits
when the host closes the socket.
"""

import contextlib
import gc
import importlib
import json
import os
import runpy
import select
import signal
import socket
import sys

MB = 1024 * 1024


def _resident():
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _reap(channel, live):
    with contextlib.suppress(ChildProcessError):  # no child left
        while (ended := os.wait4(-1, os.WNOHANG))[0]:
            pid, status, usage = ended
            at_fork, _ = live.pop(pid, (0, False))
            code = os.waitstatus_to_exitcode(status)
            _send(channel, {"exited": pid, "code": code, "grown": max(0, usage.ru_maxrss * 1024 - at_fork) // MB})


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


def _preload(request):
    sys.path[:0] = [entry for entry in request.get("path", ()) if entry not in sys.path]
    for name in request.get("preload", ()):
        with contextlib.suppress(Exception):  # a module that cannot be imported is the child's error to report
            importlib.import_module(str(name))


def _become_child(main, channel, request, fds, wakeup):
    """In the forked child: ``main(args)`` with the request's descriptors, folder and environment (never returns)."""
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
        main(request["args"])
        code = 0
    except BaseException:  # told on the child's stderr (fd 2 is the host's once dup2 has run)
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
    finally:
        os._exit(code)


#: Modules a child imports when it starts (``main``) or often right after: imported once, here.
PRELOADED = ("faulthandler", "resource", "select", "re", "json", "math", "collections", "itertools", "functools",
             "ctypes")


def serve(fd, script):
    main = runpy.run_path(script, run_name="rlm_forked_" + os.path.basename(script)[:-3])["main"]
    _preload({"preload": PRELOADED})
    # the template's objects move to the permanent generation: a child's garbage collections never walk them,
    # so its pages stay shared with the template instead of being copied by the collector's reference counting
    gc.collect()
    gc.freeze()
    channel = socket.socket(fileno=fd)
    live: dict[int, tuple[int, bool]] = {}  # pid -> (resident bytes at the fork, kill it when the host goes)
    wakeup = os.pipe()  # a byte arrives here when a child ends (SIGCHLD), so it is reaped and reported at once
    for end in wakeup:
        os.set_blocking(end, False)
    signal.set_wakeup_fd(wakeup[1])
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    try:
        while True:
            ready, _, _ = select.select([channel.fileno(), wakeup[0]], [], [])  # retried on EINTR (PEP 475)
            if wakeup[0] in ready:
                with contextlib.suppress(BlockingIOError):
                    while os.read(wakeup[0], 512):
                        pass
                _reap(channel, live)
            if channel.fileno() not in ready:
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
                _preload(request)
                at_fork = _resident()
                pid = os.fork()
            except (ValueError, OSError) as exc:  # not a request, or no fork
                for fd in fds:
                    os.close(fd)
                _send(channel, {"error": f"fork failed: {exc}" if isinstance(exc, OSError) else str(exc)})
                continue
            if pid == 0:
                _become_child(main, channel, request, fds, wakeup)
            live[pid] = (at_fork, bool(request.get("kill_on_close")))
            for fd in fds:
                os.close(fd)
            _send(channel, {"pid": pid})
            _reap(channel, live)
    finally:
        for pid, (_, kill) in live.items():
            if kill:
                os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
