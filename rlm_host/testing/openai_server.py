"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, driven by a queue of behaviours.

``POST /v1/chat/completions`` answers with the next queued :class:`Behaviour` (normal answer, 429 with
Retry-After, 5xx, ``choices: []``, ``content: null``…; ``Behaviour.delayed`` and ``.truncated`` make slow and
cut ones). Every request is recorded — body, headers and arrival time — so tests can assert what prompts were
sent and how long the client waited between attempts. When the queue is empty the server answers 418 (not
retried by clients), so a test that under-provisions the queue fails loudly instead of hanging.

    with OpenAIServer() as server:
        server.push(rate_limited(retry_after="0.3"), answer("hello"))
        ...  # point a client at server.url ("http://127.0.0.1:PORT/v1")
"""

from __future__ import annotations

import time
from typing import Any

from rlm_host.testing.fake_http import Behaviour, FakeHTTPServer, RecordedRequest


def completion_body(text: Any, *, prompt_tokens: int = 11, completion_tokens: int = 7, model: str = "test-model",
                    finish_reason: str = "stop", usage: bool = True) -> dict[str, Any]:
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


def error(status: int, message: str, code: str | None = None, **extra: Any) -> Behaviour:
    """An error ``status`` with OpenAI's error body."""
    body = {"message": message, "type": "test_error", "code": code}
    return Behaviour(status=status, body={"error": body}, **extra)


def answer(text: str, **kwargs: Any) -> Behaviour:
    """A normal answer with usage."""
    return Behaviour(body=completion_body(text, **kwargs))


def rate_limited(retry_after: str | None = "1", *, code: str | None = "rate_limit_exceeded") -> Behaviour:
    """429 Too Many Requests, with a Retry-After header unless ``retry_after`` is None."""
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return error(429, "Rate limit reached", code, headers=headers)


def server_error(status: int = 500) -> Behaviour:
    """A 5xx (or any) error status with an OpenAI-style error body."""
    return error(status, "The server had an error while processing your request.")


def unauthorized() -> Behaviour:
    """401 with OpenAI's invalid-key error body."""
    return error(401, "Incorrect API key provided: sk-bad.", "invalid_api_key")


def no_choices() -> Behaviour:
    """A 200 whose body has ``choices: []``."""
    body = completion_body("x")
    body["choices"] = []
    return Behaviour(body=body)


def null_content() -> Behaviour:
    """A 200 whose only choice has ``message.content: null``."""
    return Behaviour(body=completion_body(None))


class OpenAIServer(FakeHTTPServer):
    """The server: start it (or use ``with``), ``push`` behaviours, read ``requests``; ``stop`` ends it."""

    thread_name = "openai-test-server"

    @property
    def url(self) -> str:
        """The base URL to give an OpenAI client: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def route(self, request: RecordedRequest) -> Behaviour | None:
        if request.path.rstrip("/") != "/v1/chat/completions":
            return error(404, f"test server: no route {request.path}")
        return None

    def no_behaviour(self) -> Behaviour:
        return error(418, "test server: no behaviour queued for this request")


#: The names ``rlm_host.testing`` exports for plugins' tests (beside ``OpenAIServer``).
openai_answer, openai_unauthorized = answer, unauthorized

__all__ = [
    "Behaviour",
    "OpenAIServer",
    "RecordedRequest",
    "answer",
    "completion_body",
    "error",
    "no_choices",
    "null_content",
    "rate_limited",
    "server_error",
    "unauthorized",
]
