"""A real HTTP server on 127.0.0.1 speaking the Anthropic Messages API wire format, for tests.

The real API is paid and unreachable from the test machines, so the provider is tested with the REAL official
``anthropic`` SDK pointed at this server (``base_url``). ``POST /v1/messages`` answers with the next queued
:class:`Behaviour` (a message with usage, ``content: []``, only a ``tool_use`` block, empty text, errors…), with
Anthropic-style error bodies (``{"type": "error", "error": {"type": "rate_limit_error", "message": …}}``). Every
request is recorded — path, headers and JSON body — with its arrival time, so tests can assert what the SDK sent
(``system`` placement, merged turns, ``max_tokens``) and how long it waited between attempts. When the queue is
empty the server answers 418 (not retried), so a test that under-provisions the queue fails loudly instead of
hanging.

What it checks: the route (404 for anything but ``POST /v1/messages``) and that the body is JSON. What it does
NOT check: authentication (any key is accepted; the headers are recorded for tests to assert), the
``anthropic-version`` header, the request schema (model ids, role alternation, ``max_tokens`` limits), nor
anything about streaming — the real API validates all of these.

    with AnthropicServer() as server:
        server.push(error(529, "Overloaded"), answer("hello"))
        ...  # point the SDK at server.url ("http://127.0.0.1:PORT")

``server_fixture`` below is the pytest fixture ``server``: import it into a test module (plugin test folders have
no conftest.py, which would shadow the host tests' own ``conftest``).
"""

from __future__ import annotations

from typing import Any

import pytest
from rlm_host.testing import Behaviour, FakeHTTPServer, RecordedRequest


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


#: The error ``type`` the API gives each status.
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}


def error(status: int, message: str) -> Behaviour:
    """An error status with Anthropic's error body (``api_error`` for the statuses not in ERROR_TYPES)."""
    kind = ERROR_TYPES.get(status, "api_error")
    return Behaviour(status=status, body={"type": "error", "error": {"type": kind, "message": message}})


def answer(text: str, **kwargs: Any) -> Behaviour:
    """A normal answer with usage."""
    return Behaviour(body=message_body(text, **kwargs))


class AnthropicServer(FakeHTTPServer):
    """The server: start it (or use ``with``), ``push`` behaviours, read ``requests``; ``stop`` ends it.

    ``url`` is the base URL to give the SDK: ``http://127.0.0.1:PORT`` (the SDK appends ``/v1/messages``).
    """

    ROUTE = "/v1/messages"
    thread_name = "anthropic-test-server"
    extra_headers = {"request-id": "req_test_01"}

    def route(self, request: RecordedRequest) -> Behaviour | None:
        if request.path.split("?")[0].rstrip("/") != self.ROUTE:
            return error(404, f"test server: no route {request.path}")
        if request.body is None:
            return error(400, "test server: the body is not JSON")
        return None

    def no_behaviour(self) -> Behaviour:
        return error(418, "test server: no behaviour queued for this request")


@pytest.fixture(name="server")
def server_fixture():
    """The fixture ``server``: a started :class:`AnthropicServer`, stopped after the test."""
    with AnthropicServer() as srv:
        yield srv
