"""A loopback OpenAI-compatible chat-completions server for benchmarks, timing every request it answers.

``POST /v1/chat/completions`` (non-streaming JSON, with ``usage``) on 127.0.0.1. Requests for the root model
(``ROOT_MODEL``) get the scripted turns of the current run in order; requests for any other model are sub-calls,
answered with a short fixed text. Each request waits ``root_latency`` / ``sub_latency`` seconds before its answer,
and is recorded with its arrival and finish times (``time.perf_counter()`` of this process), so a benchmark can
tell the engine's time from the model's without trusting the client's clocks.

    with LoopbackLLM(sub_latency=0.2) as llm:
        llm.script(["```repl\\nx = 1\\n```", "FINAL(done)"])
        ...  # point a client at llm.base_url ("http://127.0.0.1:PORT/v1")
        llm.records  # [Record(kind="root", arrival=…, finish=…), …]

A root request beyond the script is answered 400 (which clients do not retry), so a wrong script fails loudly.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

ROOT_MODEL = "bench-root"
SUB_MODEL = "bench-sub"
SUB_REPLY = "ok"


@dataclass
class Record:
    """One answered request: root or sub, server-side arrival and finish, request body size."""

    kind: str
    arrival: float
    finish: float
    request_bytes: int


class LoopbackLLM:
    """The server: ``script`` a run's root turns, point a client at ``base_url``, read ``records``."""

    def __init__(self, *, root_latency: float = 0.0, sub_latency: float = 0.0) -> None:
        self.root_latency = root_latency
        self.sub_latency = sub_latency
        self.records: list[Record] = []
        self._turns: list[str] = []
        self._responder: Callable[[dict], str] | None = None
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    def script(self, turns: list[str], *, root_latency: float | None = None,
               sub_latency: float | None = None) -> None:
        """Start a new run: forget the records, answer root requests with ``turns`` in order."""
        with self._lock:
            self._turns, self._responder = list(turns), None
            self.records = []
            if root_latency is not None:
                self.root_latency = root_latency
            if sub_latency is not None:
                self.sub_latency = sub_latency

    def respond_with(self, responder: Callable[[dict], str], *, root_latency: float | None = None) -> None:
        """Start a new series: answer each root request with ``responder(body)`` (for concurrent runs, whose turns
        no single script can order)."""
        with self._lock:
            self._responder, self._turns, self.records = responder, [], []
            if root_latency is not None:
                self.root_latency = root_latency

    def of_kind(self, kind: str) -> list[Record]:
        """The records of one kind ("root" or "sub"), in arrival order."""
        return sorted((r for r in self.records if r.kind == kind), key=lambda r: r.arrival)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def start(self) -> LoopbackLLM:
        handler = type("Handler", (_Handler,), {"llm": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> LoopbackLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # -- answering -----------------------------------------------------------------------------------------------

    def _answer(self, body: dict) -> tuple[str, str | None, float]:
        """(kind, reply text or None when the script is exhausted, latency) for a request body."""
        with self._lock:
            if body.get("model") != ROOT_MODEL:
                return "sub", SUB_REPLY, self.sub_latency
            if self._responder is not None:
                return "root", self._responder(body), self.root_latency
            return "root", (self._turns.pop(0) if self._turns else None), self.root_latency

    def _record(self, record: Record) -> None:
        with self._lock:
            self.records.append(record)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default backlog (5) drops a burst of connections: a 1 s SYN retry each


class _Handler(BaseHTTPRequestHandler):
    llm: LoopbackLLM
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
    disable_nagle_algorithm = True  # headers and body leave at once: no 40 ms delayed-ACK stalls

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        arrival = time.perf_counter()
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        kind, text, latency = self.llm._answer(body)
        if latency:
            time.sleep(latency)
        if text is None:
            self._send(400, {"error": {"message": "loopback server: the root script is exhausted"}})
        else:
            self._send(200, _completion(body, text, prompt_chars=len(raw)))
        self.llm._record(Record(kind, arrival, time.perf_counter(), len(raw)))

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the http.server API)
        pass


def _completion(body: dict, text: str, *, prompt_chars: int) -> dict:
    prompt_tokens, completion_tokens = max(1, prompt_chars // 4), max(1, len(text) // 4)
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }
