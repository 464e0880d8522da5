"""A real HTTP server on 127.0.0.1 speaking the Gemini API's ``generateContent`` wire format, for tests.

The real Gemini API is paid (or quota-limited) and unreachable from the test machines, so the provider is
tested with the REAL official ``google-genai`` SDK pointed at this server (``HttpOptions.base_url``).
``POST /{version}/models/{model}:generateContent`` — the URL the installed SDK sends (``v1`` by default,
``v1beta`` when asked) — answers with the next queued :class:`Behaviour` (a response with ``usageMetadata``,
429 with Retry-After or with a ``google.rpc.RetryInfo`` delay, 5xx, no candidates with
``promptFeedback.blockReason``, a candidate stopped for SAFETY without content, only a ``functionCall`` part,
empty text…), with Google-style error bodies
(``{"error": {"code": 429, "message": …, "status": "RESOURCE_EXHAUSTED", "details": [...]}}``). Every request is
recorded — path, headers and JSON body — with its arrival time, so tests can assert what the SDK sent
(``systemInstruction``, ``contents`` roles, ``generationConfig``) and how long it waited between attempts. When
the queue is empty the server answers 418 (not retried), so a test that under-provisions the queue fails loudly
instead of hanging.

What it checks: the route (404 for anything but ``POST /v1*/models/MODEL:generateContent``) and that the body
is JSON; the model named in the path is recorded (``RecordedRequest.model``). What it does NOT check:
authentication (any ``x-goog-api-key`` is accepted; tests assert the recorded header), the request schema
(roles, part types, generationConfig ranges), model ids, nor streaming (``streamGenerateContent``) — the real
API validates all of these.

    with GeminiServer() as server:
        server.push(rate_limited(retry_after="0.3"), answer("hello"))
        ...  # point the SDK at server.url ("http://127.0.0.1:PORT")

``server_fixture`` below is the pytest fixture ``server``: import it into a test module (plugin test folders have
no conftest.py, which would shadow the host tests' own ``conftest``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from rlm_host.testing import Behaviour, FakeHTTPServer
from rlm_host.testing import RecordedRequest as _BaseRecord

ROUTE = re.compile(r"^/(?P<version>v1[a-z0-9]*)/models/(?P<model>[^/:?]+):generateContent$")


def response_body(
    text: Any = "hello",
    *,
    parts: list[dict[str, Any]] | None = None,
    candidates: list[dict[str, Any]] | None = None,
    prompt_tokens: int = 11,
    output_tokens: int = 7,
    thoughts_tokens: int | None = None,
    finish_reason: str = "STOP",
    model_version: str = "gemini-test-001",
    usage: bool = True,
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` body: one candidate whose parts are ``[{"text": text}]`` unless given."""
    if candidates is None:
        content = {"role": "model", "parts": parts if parts is not None else [{"text": text}]}
        candidates = [{"content": content, "finishReason": finish_reason, "index": 0}]
    body: dict[str, Any] = {"candidates": candidates, "modelVersion": model_version, "responseId": "resp-test-01"}
    if usage:
        metadata = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens,
                    "totalTokenCount": prompt_tokens + output_tokens + (thoughts_tokens or 0)}
        if thoughts_tokens is not None:
            metadata["thoughtsTokenCount"] = thoughts_tokens
        body["usageMetadata"] = metadata
    return body


#: The ``status`` Google's error bodies give each HTTP status.
GOOGLE_STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                   418: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE",
                   504: "DEADLINE_EXCEEDED"}


def error(status: int, message: str, details: list[Any] | None = None, **extra: Any) -> Behaviour:
    """An error status with Google's error body (``status`` from GOOGLE_STATUSES, else UNKNOWN)."""
    error_body: dict[str, Any] = {"code": status, "message": message, "status": GOOGLE_STATUSES.get(status, "UNKNOWN")}
    if details is not None:
        error_body["details"] = details
    return Behaviour(status=status, body={"error": error_body}, **extra)


def answer(text: str, **kwargs: Any) -> Behaviour:
    """A normal answer with usage."""
    return Behaviour(body=response_body(text, **kwargs))


def rate_limited(retry_after: str | None = "1", *, retry_delay: str | None = None) -> Behaviour:
    """429 RESOURCE_EXHAUSTED, with a Retry-After header and/or a ``google.rpc.RetryInfo`` delay ("0.3s")."""
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    details = None
    if retry_delay is not None:
        details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}]
    return error(429, "Resource has been exhausted (e.g. check quota).", details, headers=headers)


def invalid_key() -> Behaviour:
    """What the Gemini API answers to a bad key: 400 INVALID_ARGUMENT with reason API_KEY_INVALID."""
    details = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                "domain": "googleapis.com", "metadata": {"service": "generativelanguage.googleapis.com"}}]
    return error(400, "API key not valid. Please pass a valid API key.", details)


@dataclass
class RecordedRequest(_BaseRecord):
    """What the server received: method, path, headers (lower-case names), JSON body (None if not JSON), the
    model named in the path, and arrival time."""

    model: str = ""


class GeminiServer(FakeHTTPServer):
    """The server: start it (or use ``with``), ``push`` behaviours, read ``requests``; ``stop`` ends it.

    ``url`` is the base URL to give the SDK: ``http://127.0.0.1:PORT`` (the SDK appends ``/v1/models/…``).
    """

    thread_name = "gemini-test-server"
    content_type = "application/json; charset=UTF-8"
    record_type = RecordedRequest

    def route(self, request: RecordedRequest) -> Behaviour | None:
        match = ROUTE.match(request.path.split("?")[0])
        if match is None:
            return error(404, f"test server: no route {request.path}")
        request.model = match.group("model")
        if request.body is None:
            return error(400, "test server: the body is not JSON")
        return None

    def no_behaviour(self) -> Behaviour:
        return error(418, "test server: no behaviour queued for this request")


@pytest.fixture(name="server")
def server_fixture():
    """The fixture ``server``: a started :class:`GeminiServer`, stopped after the test."""
    with GeminiServer() as srv:
        yield srv
