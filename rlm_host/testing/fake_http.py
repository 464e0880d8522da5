"""A real HTTP server on 127.0.0.1 driven by a queue of scripted answers, for testing API clients.

This is the generic part of the fake API servers of the tests (OpenAI, Anthropic, Gemini…): a subclass of
:class:`FakeHTTPServer` adds only its API's wire format — the route it serves (:meth:`FakeHTTPServer.route`),
the error body it answers with when the queue is empty (:meth:`FakeHTTPServer.no_behaviour`), its
``Content-Type`` and any extra headers.

``POST`` requests are answered with the next queued :class:`Behaviour` (status, JSON or raw body, headers, a
delay, a wrong ``Content-Length``). Every request is recorded — path, headers and JSON body — with its arrival
time, so tests can assert what a client sent and how long it waited between attempts. When the queue is empty
the server answers 418 (not retried by clients), so a test that under-provisions the queue fails loudly instead
of hanging.

    with MyServer() as server:
        server.push(Behaviour(status=429, headers={"Retry-After": "0.3"}), Behaviour(body={...}))
        ...  # point a client at server.url ("http://127.0.0.1:PORT")

This module does not import pytest (the ``rlm_host.testing`` package itself does, for assert rewriting).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, TypeVar


@dataclass
class Behaviour:
    """One scripted HTTP answer. ``body`` is JSON-encoded unless it is bytes (sent as is)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering
    content_length: int | None = None  # declare a different length than sent (a cut connection)

    def delayed(self, seconds: float) -> Behaviour:
        """The same answer, sent only after ``seconds`` (longer than a client's timeout, to test it)."""
        return replace(self, delay=seconds)

    def truncated(self, *, cut_connection: bool = False) -> Behaviour:
        """The same answer with its JSON body cut in half (malformed JSON); with ``cut_connection`` the full
        length is still declared, so the connection breaks mid-response."""
        full = self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()
        return replace(self, body=full[: len(full) // 2], content_length=len(full) if cut_connection else None)


@dataclass
class RecordedRequest:
    """What the server received: method, path, headers (lower-case names), JSON body (None if not JSON), and
    arrival time."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float  # time.monotonic() on arrival


_Server = TypeVar("_Server", bound="FakeHTTPServer")


class FakeHTTPServer:
    """The server: start it (or use ``with``), ``push`` behaviours, read ``requests``; ``stop`` ends it.

    Subclasses set the class attributes below and override :meth:`route` and :meth:`no_behaviour`.
    """

    #: Name of the serving thread.
    thread_name: ClassVar[str] = "fake-http-server"
    #: ``Content-Type`` of every answer.
    content_type: ClassVar[str] = "application/json"
    #: Headers sent with every answer, before the behaviour's own.
    extra_headers: ClassVar[dict[str, str]] = {}
    #: The class the requests are recorded as (called with method, path, headers, body, arrival time).
    record_type: ClassVar[type] = RecordedRequest

    def __init__(self) -> None:
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[Any] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- what a subclass says about its API ----------------------------------------------------------------------

    def route(self, request: Any) -> Behaviour | None:
        """The answer to a request that must not consume a behaviour (unknown route, bad body…), else None.

        Called with the server's lock held, after the request is recorded.
        """
        return None

    def no_behaviour(self) -> Behaviour:
        """The answer when the queue is empty: a 418, which clients do not retry."""
        return Behaviour(status=418, body={"error": "test server: no behaviour queued for this request"})

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def start(self: _Server) -> _Server:
        """Bind an ephemeral port on 127.0.0.1 and serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"server_state": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Wake slow handlers, stop serving and close the socket."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self: _Server) -> _Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """The server's root URL: ``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    # -- behaviours and records ----------------------------------------------------------------------------------

    def push(self: _Server, *behaviours: Behaviour) -> _Server:
        """Queue behaviours, answered one per request in order."""
        with self._lock:
            self._queue.extend(behaviours)
        return self

    @property
    def pending(self) -> int:
        """Behaviours not used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies received, in order."""
        with self._lock:
            return [r.body for r in self.requests]

    def _next(self, request: Any) -> Behaviour:
        with self._lock:
            self.requests.append(request)
            refused = self.route(request)
            if refused is not None:
                return refused
            if self._queue:
                return self._queue.popleft()
        return self.no_behaviour()


class _Handler(BaseHTTPRequestHandler):
    server_state: FakeHTTPServer  # set on the per-server subclass
    protocol_version = "HTTP/1.0"  # one request per connection: nothing lingers after stop()

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, 10_000_000)) if length > 0 else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        state = self.server_state
        self._send(state._next(state.record_type("POST", self.path, headers, body, time.monotonic())))

    def _send(self, behaviour: Behaviour) -> None:
        state = self.server_state
        if behaviour.delay and state._stopping.wait(behaviour.delay):
            return  # the server is stopping: drop the request
        payload = behaviour.body if isinstance(behaviour.body, bytes) else json.dumps(behaviour.body).encode()
        try:
            self.send_response(behaviour.status)
            self.send_header("Content-Type", state.content_type)
            self.send_header("Content-Length", str(behaviour.content_length or len(payload)))
            for name, value in [*state.extra_headers.items(), *behaviour.headers.items()]:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to answer


__all__ = ["Behaviour", "FakeHTTPServer", "RecordedRequest"]
