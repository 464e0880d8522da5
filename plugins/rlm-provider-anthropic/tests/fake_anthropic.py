"""A real HTTP server on 127.0.0.1 speaking the Anthropic Messages API wire format, for tests.

The real API is paid and unreachable from the test machines, so the provider is tested with the REAL official
``anthropic`` SDK pointed at this server (``base_url``). ``POST /v1/messages`` answers with the next queued
:class:`Behaviour` (a message with usage, 429 with Retry-After, 5xx / 529 overloaded, a slow answer, a body cut
short, ``content: []``, only a ``tool_use`` block, empty text…), with Anthropic-style error bodies
(``{"type": "error", "error": {"type": "rate_limit_error", "message": …}}``). Every request is recorded — path,
headers and JSON body — with its arrival time, so tests can assert what the SDK sent (``system`` placement,
merged turns, ``max_tokens``) and how long it waited between attempts. When the queue is empty the server
answers 418 (not retried), so a test that under-provisions the queue fails loudly instead of hanging.

What it checks: the route (404 for anything but ``POST /v1/messages``) and that the body is JSON. What it does
NOT check: authentication (any key is accepted; the headers are recorded for tests to assert), the
``anthropic-version`` header, the request schema (model ids, role alternation, ``max_tokens`` limits), nor
anything about streaming — the real API validates all of these.

    with AnthropicServer() as server:
        server.push(rate_limited(retry_after="0.3"), answer("hello"))
        ...  # point the SDK at server.url ("http://127.0.0.1:PORT")

``server_fixture`` below is the pytest fixture ``server``: import it into a test module (plugin test folders have
no conftest.py, which would shadow the host tests' own ``conftest``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from rlm_host.testing.fake_http import Behaviour, FakeHTTPServer, RecordedRequest


def message_body(
    text: Any = "hello",
    *,
    content: list[dict[str, Any]] | None = None,
    input_tokens: int = 11,
    output_tokens: int = 7,
    model: str = "claude-test",
    stop_reason: str | None = "end_turn",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Messages API ``message`` body: one text block holding ``text`` unless ``content`` is given."""
    blocks = content if content is not None else [{"type": "text", "text": text}]
    return {
        "id": "msg_test_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage if usage is not None else {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def error(status: int, kind: str, message: str, **extra: Any) -> Behaviour:
    """An error status with Anthropic's error body."""
    return Behaviour(status=status, body={"type": "error", "error": {"type": kind, "message": message}}, **extra)


def answer(text: str, **kwargs: Any) -> Behaviour:
    """A normal answer with usage."""
    return Behaviour(body=message_body(text, **kwargs))


def rate_limited(retry_after: str | None = "1") -> Behaviour:
    """429 with a ``rate_limit_error`` body, and a Retry-After header unless ``retry_after`` is None."""
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return error(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.", headers=headers)


def server_error(status: int = 500) -> Behaviour:
    """A 5xx: ``api_error`` (500…), or ``overloaded_error`` for 529."""
    if status == 529:
        return error(529, "overloaded_error", "Overloaded")
    return error(status, "api_error", "Internal server error")


def unauthorized() -> Behaviour:
    """401 with the API's invalid-key error body."""
    return error(401, "authentication_error", "invalid x-api-key")


def forbidden() -> Behaviour:
    """403 with the API's permission error body."""
    return error(403, "permission_error", "Your API key does not have permission to use the specified resource.")


def slow(seconds: float, text: str = "late") -> Behaviour:
    """A normal answer sent only after ``seconds`` (longer than the client's timeout)."""
    return Behaviour(body=message_body(text), delay=seconds)


def truncated(*, cut_connection: bool = False) -> Behaviour:
    """A 200 whose JSON body is cut in half; with ``cut_connection`` it also declares the full length."""
    full = json.dumps(message_body("this answer is cut")).encode()
    return Behaviour(body=full[: len(full) // 2], content_length=len(full) if cut_connection else None)


class AnthropicServer(FakeHTTPServer):
    """The server: start it (or use ``with``), ``push`` behaviours, read ``requests``; ``stop`` ends it.

    ``url`` is the base URL to give the SDK: ``http://127.0.0.1:PORT`` (the SDK appends ``/v1/messages``).
    """

    ROUTE = "/v1/messages"
    thread_name = "anthropic-test-server"
    extra_headers = {"request-id": "req_test_01"}

    def route(self, request: RecordedRequest) -> Behaviour | None:
        if request.path.split("?")[0].rstrip("/") != self.ROUTE:
            return error(404, "not_found_error", f"test server: no route {request.path}")
        if request.body is None:
            return error(400, "invalid_request_error", "test server: the body is not JSON")
        return None

    def no_behaviour(self) -> Behaviour:
        return error(418, "invalid_request_error", "test server: no behaviour queued for this request")


@pytest.fixture(name="server")
def server_fixture():
    """The fixture ``server``: a started :class:`AnthropicServer`, stopped after the test."""
    with AnthropicServer() as srv:
        yield srv
