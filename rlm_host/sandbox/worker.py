"""The REPL worker of the ``process`` sandbox (also reused inside container images): standard library only.

Run as ``python -I -u worker.py [--memory-mb N] [--max-output-chars N]``. It speaks JSON lines (one UTF-8 JSON
object per line, never pickle) over the stdin/stdout it was started with:

host → worker   {"id": n, "op": "execute", "code": str}        → {"id": n, "op": "result", "stdout", "stderr",
                                                                   "error", "final"}
                {"id": n, "op": "set", "name": str, "value": v} → {"id": n, "op": "result"}
                {"id": n, "op": "set_file", "name": str, "path": str, "format": "text"|"textfile"|"json"}
                                                                → {"id": n, "op": "result"}
                {"id": n, "op": "get", "name": str}             → {"id": n, "op": "result", "value": v} or "missing"
                {"id": n, "op": "list"}                         → {"id": n, "op": "result", "variables": {name: type}}
                {"id": n, "op": "register", "names": [str]}     → {"id": n, "op": "result"}
worker → host   {"op": "call", "call_id": k, "name": fn, "args": [...], "kwargs": {...}} while executing; the host
                answers {"op": "return", "call_id": k, "value": v} or {"op": "raise", "call_id": k, "error": msg}.
A request that fails carries ``"error": "ExcType: message"`` in its result. On start the worker sends
{"op": "ready", "pid": ..., "python": ...}. ``set_file`` binds a large value from a file the host prepared (UTF-8
text read as is, or a JSON document) instead of streaming it through the channel; container runtimes mount the
host's directory read-only. When the host closes the channel the worker exits at once, even while code runs.

User code cannot corrupt the channel by accident: at start the protocol moves to private close-on-exec file
descriptors and fds 0/1 point at /dev/null; ``print`` goes to a per-execute capture (stdout and stderr).
On Linux the worker is a child subreaper, so what user code leaves running stays its descendant, killed with it.
This is crash isolation only, not a security boundary: code running here can do anything its user can.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import fcntl
import io
import json
import linecache
import os
import sys
import threading
import traceback
import types

CELL_PREFIX = "<cell "
MAX_DEPTH = 100
MAX_TRACEBACK_FRAMES = 8


def to_jsonable(value, _depth=0):
    """``value`` as JSON-compatible data: str/int/float/bool/None/list/dict as is, anything else as ``repr()``."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if _depth < MAX_DEPTH:
        if isinstance(value, (list, tuple)):
            return [to_jsonable(v, _depth + 1) for v in value]
        if isinstance(value, dict):
            return {(k if isinstance(k, str) else str(k)): to_jsonable(v, _depth + 1) for k, v in value.items()}
        tolist = getattr(type(value), "tolist", None)  # numpy arrays and scalars, without importing numpy
        if callable(tolist):
            with contextlib.suppress(Exception):
                return to_jsonable(value.tolist(), _depth + 1)
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__} object (repr failed)>"


def encode_line(message):
    """One protocol line as UTF-8 bytes (without the newline); lone surrogates fall back to \\u escapes."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode("ascii")


class Capture(io.TextIOBase):
    """A text stream keeping the first and last ``limit // 2`` characters written to it, and how many were cut.

    Writes are appended to a list (the fast path); the list is compacted once it holds over twice the limit,
    so memory stays bounded and the cost stays linear in what is written.
    """

    def __init__(self, limit):
        self._limit, self._head_max, self._tail_max = limit, limit // 2, limit - limit // 2
        self._head = None  # set at the first compaction: the first head_max characters
        self._parts, self._size, self._cut = [], 0, 0  # what follows the head, its length, what was cut from it

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self._parts.append(s)
        self._size += len(s)
        if self._size > 2 * self._limit:
            self._compact()
        return len(s)

    def _compact(self):
        text = "".join(self._parts)
        if self._head is None:
            self._head, text = text[: self._head_max], text[self._head_max:]
        if len(text) > self._tail_max:
            self._cut += len(text) - self._tail_max
            text = text[-self._tail_max:]
        self._parts, self._size = [text], len(text)

    def getvalue(self):
        if self._head is None and self._size <= self._limit:
            return "".join(self._parts)
        self._compact()
        cut = f"\n[... {self._cut} characters cut from the middle of this output ...]\n" if self._cut else ""
        return f"{self._head}{cut}{self._parts[0]}"


class _Final(BaseException):
    """Raised by FINAL / FINAL_VAR / SUBMIT to stop the current execute (a BaseException: `except Exception`
    in user code does not swallow it)."""


class Worker:
    """The persistent namespace and the request loop."""

    def __init__(self, proto_in, proto_out, max_output_chars):
        self._in = proto_in
        self._out = proto_out
        self._pid = os.getpid()
        self._max_output = max_output_chars
        self._send_lock = threading.Lock()
        self._call_lock = threading.Lock()
        self._call_seq = 0
        self._cells = 0
        self._final = None
        module = types.ModuleType("__main__")  # user code runs as __main__ (dataclasses, typing, … resolve it)
        sys.modules["__main__"] = module
        self.ns = module.__dict__
        self.ns["__builtins__"] = builtins
        self._system = {"FINAL": self._FINAL, "FINAL_VAR": self._FINAL_VAR, "SUBMIT": self._SUBMIT,
                        "SHOW_VARS": self._SHOW_VARS}
        self.ns.update(self._system)

    # -- channel ------------------------------------------------------------------------------------------
    def _only_the_worker(self):
        """A process user code forked shares the channel's file descriptors: it must never speak on it (it would
        answer the host's next request in the worker's place), so it ends here."""
        if os.getpid() != self._pid:
            os._exit(0)

    def _reap(self):
        """Collect the exit status of children user code left behind, so dead ones do not hold process slots."""
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass

    def send(self, message):
        """Write one protocol message in one go."""
        self._only_the_worker()
        try:
            data = encode_line(message)
        except (TypeError, ValueError) as exc:  # e.g. an int too large to print: report instead of hanging
            message = {k: v for k, v in message.items() if k not in ("final", "value", "args", "kwargs")}
            message["error"] = f"{type(exc).__name__}: could not encode the value for the host: {exc}"
            data = encode_line(message)
        with self._send_lock:
            self._out.write(data)
            self._out.write(b"\n")
            self._out.flush()

    def recv(self):
        """The next message from the host, or None when the host has gone."""
        self._only_the_worker()
        while True:
            line = self._in.readline()
            if not line:
                return None
            if line.strip():
                return json.loads(line)

    # -- REPL builtins --------------------------------------------------------------------------------------
    def _stop(self, kind, value, var=None):
        if self._final is None:  # the first one wins, even if user code swallowed the exception
            self._final = {"kind": kind, "value": to_jsonable(value), "var": var}
        raise _Final()

    def _FINAL(self, answer):
        """End the run with ``answer``."""
        self._stop("direct", answer)

    def _FINAL_VAR(self, name):
        """End the run with the value of the variable called ``name`` (a string)."""
        if not isinstance(name, str):
            raise TypeError("FINAL_VAR expects the variable NAME as a string, e.g. FINAL_VAR('answer')")
        name = name.strip().strip("'\"").strip()
        if name not in self.ns or name.startswith("__"):
            raise NameError(f"FINAL_VAR: no variable named {name!r}")
        self._stop("variable", self.ns[name], var=name)

    def _SUBMIT(self, **fields):
        """End the run with named output fields."""
        self._stop("submit", fields)

    def _SHOW_VARS(self):
        """Print the user variables and their types."""
        lines = [f"  {name}: {type_name}" for name, type_name in self.user_variables().items()]
        print("\n".join(["Variables:", *lines]) if lines else "No variables defined yet.")

    def user_variables(self):
        """{name: type name} of the namespace without builtins, host functions and _private names."""
        return {
            name: type(value).__name__
            for name, value in self.ns.items()
            if not name.startswith("_") and self._system.get(name) is not value
        }

    def _proxy(self, name):
        """A sandbox-side stand-in for the host function ``name``."""

        def proxy(*args, **kwargs):
            return self.call_host(name, args, kwargs)

        proxy.__name__ = proxy.__qualname__ = name
        proxy.__doc__ = f"Host function {name}(...): arguments and result are JSON-compatible data."
        return proxy

    def call_host(self, name, args, kwargs):
        """Ask the host to run ``name(*args, **kwargs)`` and wait for its answer."""
        with self._call_lock:
            self._call_seq += 1
            self.send({"op": "call", "call_id": self._call_seq, "name": name,
                       "args": to_jsonable(list(args)), "kwargs": to_jsonable(kwargs)})
            message = self.serve(self._call_seq)
        if message["op"] == "raise":
            raise RuntimeError(message.get("error", "host function failed"))
        return message.get("value")

    # -- requests -----------------------------------------------------------------------------------------
    def execute(self, code):
        """Run ``code`` in the namespace; capture its output, its error and a final answer."""
        self._cells += 1
        filename = f"{CELL_PREFIX}{self._cells}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        out, err = Capture(self._max_output), Capture(self._max_output)
        self._final = None
        error = None
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        try:
            exec(compile(code, filename, "exec", dont_inherit=True), self.ns)
        except _Final:
            pass
        except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the session goes on
            error = format_error(exc)
        finally:
            sys.stdout, sys.stderr = saved
        self._only_the_worker()  # a fork of user code that got this far stops before the protocol
        self._reap()
        return {"stdout": out.getvalue(), "stderr": err.getvalue(), "error": error, "final": self._final}

    def handle(self, message):
        """Answer one request (everything but its id)."""
        op = message.get("op")
        if op == "execute":
            return self.execute(message["code"])
        if op in ("set", "set_file"):
            self.ns[message["name"]] = (message.get("value") if op == "set"
                                        else read_value_file(message["path"], message.get("format", "text")))
            return {}
        if op == "get":
            found = message["name"] in self.ns
            return {"value": to_jsonable(self.ns[message["name"]])} if found else {"missing": True}
        if op == "list":
            return {"variables": self.user_variables()}
        if op == "register":
            for name in message["names"]:
                self._system[name] = self.ns[name] = self._proxy(name)
            return {}
        raise ValueError(f"unknown op {op!r}")

    def serve(self, call_id=None):
        """The request loop; the worker exits when the host closes the channel. Inside the host-function call
        ``call_id`` it returns that call's answer, and requests meanwhile are refused (the worker is busy)."""
        while True:
            message = self.recv()
            if message is None:
                os._exit(0)  # the host has gone: do not wait for threads user code left running
            if call_id is not None and message.get("op") in ("return", "raise") and message.get("call_id") == call_id:
                return message
            if "id" not in message:
                continue  # a stray return/raise: nothing is waiting for it
            try:
                reply = self.handle(message) if call_id is None else {"error": "RuntimeError: worker is busy"}
            except BaseException as exc:
                reply = {"error": f"{type(exc).__name__}: {exc}"}
            reply.update(id=message["id"], op="result")
            self.send(reply)


def read_in_place(stream, piece_chars=1 << 22):
    """All of a text stream, grown in place: ``text += piece`` on the only reference resizes the str's buffer
    (realloc, no copy for a large one), so reading 100 MB peaks near 100 MB, where ``read()`` holds the bytes and
    the decoded str at once (2x)."""
    text = ""
    while True:
        piece = stream.read(piece_chars)
        if not piece:
            return text
        text += piece
        del piece


def read_value_file(path, fmt):
    """The value stored in ``path``: UTF-8 text read as is (no newline translation), or a JSON document."""
    if fmt in ("text", "textfile"):  # textfile: a user's text file as the host's text loader reads it
        exact = fmt == "text"
        with open(path, encoding="utf-8", newline="" if exact else None, errors="strict" if exact else "replace") as f:
            return read_in_place(f)
    if fmt == "json":
        with open(path, "rb") as f:
            return json.load(f)
    raise ValueError(f"unknown file format {fmt!r} (expected 'text' or 'json')")


def format_error(exc):
    """'ExcType: message', then the traceback restricted to frames of user code."""
    summary = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, MemoryError):
        summary += " (the sandbox ran out of memory: work on smaller pieces)"
    lines = [summary]
    if isinstance(exc, SyntaxError):
        lines.extend(s.rstrip("\n") for s in traceback.format_exception_only(type(exc), exc)[:-1])
        return "\n".join(lines)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(CELL_PREFIX)]
    if frames:
        frames = frames[-MAX_TRACEBACK_FRAMES:]
        lines.append("Traceback (most recent call last):")
        lines.extend(s.rstrip("\n") for s in traceback.format_list(frames))
    return "\n".join(lines)


def _private_channel():
    """Move the protocol to private close-on-exec fds and point fds 0/1 at /dev/null."""
    fd_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 100)
    fd_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 100)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    return os.fdopen(fd_in, "rb", buffering=1 << 20), os.fdopen(fd_out, "wb", buffering=1 << 16)


def _exit_when_host_closes(fd):
    """Exit at once when the host closes the channel, even while user code is busy (a thread polling for HUP)."""
    import select

    poller = select.poll()
    poller.register(fd, 0)  # no POLLIN: only hang-up, error and invalid-fd events are reported

    def watch():
        while not poller.poll():  # retried on EINTR (PEP 475); any event is a hang-up, an error or a closed fd
            pass
        os._exit(0)

    threading.Thread(target=watch, name="rlm-host-watch", daemon=True).start()


def adopt_orphans():
    """Make this worker a child subreaper (Linux): a process its children orphan (``setsid sleep 1000 &``) is
    re-parented to it, not to init, so the host finds and kills it with the session (``process_tree.py``)."""
    with contextlib.suppress(Exception):  # not Linux, no ctypes: the host kills the worker's process group only
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def main(argv=None):
    parser = argparse.ArgumentParser(description="rlm sandbox worker (JSON lines on stdin/stdout)")
    parser.add_argument("--memory-mb", type=int, default=0, help="address-space limit (0: none)")
    parser.add_argument("--max-output-chars", type=int, default=1_000_000, help="stdout/stderr kept per execute")
    args = parser.parse_args(argv)
    adopt_orphans()  # before the address-space limit: loading ctypes takes memory
    if args.memory_mb > 0:
        import resource

        limit = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import faulthandler

    faulthandler.enable()  # a segfault leaves a Python traceback on stderr for the host to report
    proto_in, proto_out = _private_channel()
    _exit_when_host_closes(proto_in.fileno())
    sys.argv = [""]
    worker = Worker(proto_in, proto_out, args.max_output_chars)
    worker.send({"op": "ready", "pid": os.getpid(), "python": sys.version.split()[0]})
    worker.serve()


if __name__ == "__main__":
    main()
