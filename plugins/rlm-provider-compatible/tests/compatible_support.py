"""A loopback OpenAI-compatible chat server for these tests: ``rlm_host.testing.FakeHTTPServer`` with OpenAI's route
and a chat.completion body (``answer``)."""

from __future__ import annotations

from typing import Any

from rlm_host.testing import Behaviour, FakeHTTPServer, RecordedRequest


def answer(text: str, *, prompt_tokens: int = 11, completion_tokens: int = 7) -> Behaviour:
    """A chat.completion answering ``text``, with usage."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }  # fmt: skip
    return Behaviour(body=body)


class OpenAIServer(FakeHTTPServer):
    """``POST /v1/chat/completions`` answers the next pushed behaviour; ``url`` is the base URL a client takes."""

    thread_name = "compatible-test-server"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def route(self, request: RecordedRequest) -> Behaviour | None:
        if request.path.rstrip("/") != "/v1/chat/completions":
            return Behaviour(status=404, body={"error": {"message": f"no route {request.path}"}})
        return None

    def no_behaviour(self) -> Behaviour:
        return Behaviour(status=418, body={"error": {"message": "no behaviour queued for this request"}})


def unauthorized() -> Behaviour:
    """401 with OpenAI's invalid-key error body."""
    return Behaviour(status=401, body={"error": {"message": "Incorrect API key provided: sk-bad.", "type": "test_error",
                                                 "code": "invalid_api_key"}})  # fmt: skip
