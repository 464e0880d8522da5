"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, driven by a queue of behaviours.

``POST /v1/chat/completions`` answers with the next queued :class:`Behaviour` (normal answer, 429 with
Retry-After, 5xx, a slow answer, a truncated JSON body, ``choices: []``, ``content: null``…). Every request is
recorded — body, headers and arrival time — so tests can assert what prompts were sent and how long the client
waited between attempts. When the queue is empty the server answers 418 (not retried by clients), so a test
that under-provisions the queue fails loudly instead of hanging.

    with OpenAIServer() as server:
        server.push(rate_limited(retry_after="0.3"), answer("hello"))
        ...  # point a client at server.url ("http://127.0.0.1:PORT/v1")
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Behaviour:
    """One scripted HTTP answer. ``body`` is JSON-encoded unless it is bytes (sent as is)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering
    content_length: int | None = None  # declare a different length than sent (a cut connection)


def completion_body(text: Any, *, prompt_tokens: int = 11, completion_tokens: int = 7, model: str = "test-model",
                    finish_reason: str = "stop", usage: bool = True) -> dict[str, Any]:  # fmt: skip
    """A chat.completion JSON body with one choice whose content is ``text`` (may be None)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return body


def _error(status: int, message: str, code: str | None = None, **extra: Any) -> Behaviour:
    error = {"message": message, "type": "test_error", "code": code}
    return Behaviour(status=status, body={"error": error}, **extra)


def answer(text: str, **kwargs: Any) -> Behaviour:
    """A normal answer with usage."""
    return Behaviour(body=completion_body(text, **kwargs))


def rate_limited(retry_after: str | None = "1", *, code: str | None = "rate_limit_exceeded") -> Behaviour:
    """429 Too Many Requests, with a Retry-After header unless ``retry_after`` is None."""
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return _error(429, "Rate limit reached", code, headers=headers)


def server_error(status: int = 500) -> Behaviour:
    """A 5xx (or any) error status with an OpenAI-style error body."""
    return _error(status, "The server had an error while processing your request.")


def unauthorized() -> Behaviour:
    """401 with OpenAI's invalid-key error body."""
    return _error(401, "Incorrect API key provided: sk-bad.", "invalid_api_key")


def slow(seconds: float, text: str = "late") -> Behaviour:
    """A normal answer sent only after ``seconds`` (longer than the client's timeout)."""
    return Behaviour(body=completion_body(text), delay=seconds)


def truncated(*, cut_connection: bool = False) -> Behaviour:
    """A 200 whose JSON body is cut in half; with ``cut_connection`` it also declares the full length."""
    full = json.dumps(completion_body("this answer is cut")).encode()
    half = full[: len(full) // 2]
    return Behaviour(body=half, content_length=len(full) if cut_connection else None)


def no_choices() -> Behaviour:
    """A 200 whose body has ``choices: []``."""
    body = completion_body("x")
    body["choices"] = []
    return Behaviour(body=body)


def null_content() -> Behaviour:
    """A 200 whose only choice has ``message.content: null``."""
    return Behaviour(body=completion_body(None))


@dataclass
class RecordedRequest:
    """What the server received: method, path, headers (lower-case names), JSON body (None if not JSON), and
    arrival time."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float  # time.monotonic() on arrival


class OpenAIServer:
    """The server: start it (or use ``with``), ``push`` behaviours, read ``requests``; ``stop`` ends it."""

    def __init__(self) -> None:
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        """Bind an ephemeral port on 127.0.0.1 and serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"server_state": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="openai-test-server", daemon=True)  # fmt: skip
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

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """The base URL to give an OpenAI client: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- behaviours and records ----------------------------------------------------------------------------------

    def push(self, *behaviours: Behaviour) -> OpenAIServer:
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

    def _next(self, request: RecordedRequest) -> Behaviour:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
        return _error(418, "test server: no behaviour queued for this request")


class _Handler(BaseHTTPRequestHandler):
    server_state: OpenAIServer  # set on the per-server subclass
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
        record = RecordedRequest("POST", self.path, headers, body, time.monotonic())
        state = self.server_state
        if self.path.rstrip("/") != "/v1/chat/completions":
            with state._lock:
                state.requests.append(record)
            self._send(_error(404, f"test server: no route {self.path}"))
            return
        self._send(state._next(record))

    def _send(self, behaviour: Behaviour) -> None:
        if behaviour.delay and self.server_state._stopping.wait(behaviour.delay):
            return  # the server is stopping: drop the request
        payload = behaviour.body if isinstance(behaviour.body, bytes) else json.dumps(behaviour.body).encode()
        try:
            self.send_response(behaviour.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(behaviour.content_length or len(payload)))
            for name, value in behaviour.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to answer


__all__ = [
    "Behaviour",
    "OpenAIServer",
    "RecordedRequest",
    "answer",
    "completion_body",
    "no_choices",
    "null_content",
    "rate_limited",
    "server_error",
    "slow",
    "truncated",
    "unauthorized",
]
