"""The ``plugin-template-ollama`` provider: Ollama's own chat API (``POST /api/chat``), as a provider over HTTP.

It talks to Ollama's hosted API (``https://ollama.com``, with the key in ``OLLAMA_API_KEY``) by default, and to a
local ``ollama serve`` with ``--base-url http://127.0.0.1:11434`` (no key needed there).

A provider factory is called once per model string as ``create(settings, services)``: ``settings`` is the
validated ``[provider.plugin-template-ollama]`` section, ``services.model`` the part after ``provider:`` and
``services.options`` the run's connection options (base URL, key, timeout, retries). It returns a
``ModelConnector``: ``name``, ``context_window`` and ``complete(messages, …) -> Completion``.

``RetryingConnector`` (the host's connector kit) does the rest every HTTP provider needs: the timeout, retry
policy and base URL from options and settings, one shared client per endpoint and key, retries of 429, 5xx,
timeouts and broken bodies with ``Retry-After`` honoured, and one clear ``ModelError`` when they run out. What is
left here is the API's wire format: the request, the answer, and what each failure means. ``httpx`` is imported
only by the first request, so building a connector (``rlm --help``, ``rlm models list``) stays cheap.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field
from rlm_host import ModelError, ProviderServices
from rlm_host.sdk.models import (
    Completion, Failure, MalformedBody, Message, ModelOptions, ReplyFormat, RetryingConnector, context_window_of,
    is_retryable_status, retry_after_of, status_text, token_count,
)

NAME = "plugin-template-ollama"
DEFAULT_BASE_URL = "https://ollama.com"
KEY_ENV = "OLLAMA_API_KEY"
PLACEHOLDER_KEY = "no-key-required"  # sent to a server given by URL when no key is set: a local one needs none
#: Context windows by model-name prefix (the longest matching prefix wins); others are unknown (None).
CONTEXT_WINDOWS = {"gpt-oss": 131_072, "llama3.2": 131_072, "qwen2.5": 32_768}


class OllamaSettings(BaseModel):
    """``[provider.plugin-template-ollama]`` in rlm.toml (the fields ``RetryingConnector`` reads, and ours)."""

    model_config = ConfigDict(extra="forbid")

    base_url: Optional[str] = Field(None, description="the server (default https://ollama.com; local: http://127.0.0.1:11434)")
    timeout: Optional[float] = Field(None, gt=0, description="seconds per request")
    max_retries: Optional[int] = Field(None, ge=0, description="retries after a failed request")
    max_retry_wait: float = Field(60.0, gt=0, description="cap of one wait between retries, seconds")
    context_window: Optional[int] = Field(None, ge=1, description="context window in tokens, when not known")
    api_key_env: str = Field(KEY_ENV, description="the environment variable holding the API key")
    keep_alive: str = Field("5m", description="how long Ollama keeps the model loaded after a request")


class StatusError(Exception):
    """A non-2xx answer: its status, its ``{"error": "…"}`` message, and the response (for ``Retry-After``)."""

    def __init__(self, response: Any) -> None:
        self.response, self.status_code = response, response.status_code
        try:
            body = json.loads(response.content)
        except ValueError:
            body = response.text
        self.detail = str(body.get("error", "")) if isinstance(body, dict) else str(body)
        super().__init__(f"HTTP {self.status_code}")


class OllamaConnector(RetryingConnector):
    """``plugin-template-ollama:MODEL``. Enforces a JSON-schema reply format through Ollama's ``format`` field."""

    reply_formats = frozenset({"json_schema"})

    def __init__(self, model: str, options: Optional[ModelOptions], settings: Any) -> None:
        if not model:
            raise ModelError(f"{NAME}: empty model name", hint=f"e.g. --model {NAME}:llama3.2")
        env = self._configure(
            NAME, model, options, settings, settings_type=OllamaSettings, context_window=None,
            retry_policy=None, on_retry=None, base_url_env="", default_base_url=DEFAULT_BASE_URL, environ=None,
        )
        self.context_window = self.settings.context_window or context_window_of(model, CONTEXT_WINDOWS)
        self.key_env = self.settings.api_key_env
        key = self.options.api_key or env.get(self.key_env)
        if not key and self._custom_base_url is None:  # the hosted API needs a key; a server given by URL may not
            raise ModelError(f"no API key for {NAME}: set {self.key_env} or pass --base-url",
                             hint=f"export {self.key_env}=… (an ollama.com key), "
                                  "or --base-url http://127.0.0.1:11434")
        self._api_key = key or PLACEHOLDER_KEY

    # -- the HTTP client: built on the first request, shared by connectors with the same arguments -------------
    def client_arguments(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "api_key": self._api_key, "timeout": self.timeout}

    def build_client(self, arguments: dict[str, Any]) -> Any:
        import httpx

        return httpx.Client(base_url=arguments["base_url"] + "/", timeout=arguments["timeout"],
                            headers={"Authorization": f"Bearer {arguments['api_key']}"})

    # -- one call -----------------------------------------------------------------------------------------------
    def request(self, messages: list[Message], timeout: float) -> dict[str, Any]:
        options = self.options.sampling()  # temperature, top_p, seed: Ollama's options take all three
        if self.options.max_tokens is not None:
            options["num_predict"] = self.options.max_tokens
        return {"model": self.model, "messages": list(messages), "stream": False, "options": options,
                "keep_alive": self.settings.keep_alive, "timeout": timeout}

    def constrain(self, request: dict[str, Any], reply_format: ReplyFormat) -> None:
        request["format"] = dict(reply_format.json_schema or {})

    def send(self, client: Any, request: dict[str, Any]) -> Any:
        body = {key: value for key, value in request.items() if key != "timeout"}
        response = client.post("api/chat", json=body, timeout=request["timeout"])
        if response.status_code >= 400:
            raise StatusError(response)
        try:
            return json.loads(response.content)
        except ValueError:
            if "json" in response.headers.get("content-type", ""):
                raise  # a JSON body cut short: retried as malformed JSON
            raise MalformedBody(f"response body is not JSON: {response.text[:80]!r}") from None

    def _completion(self, response: Any, seconds: float, attempts: int) -> Completion:
        """The answer as a Completion; a 200 without text is flagged in ``raw["malformed"]``, never raised."""
        body = response if isinstance(response, dict) else {}
        raw: dict[str, Any] = {"attempts": attempts} if attempts > 1 else {}
        message = body.get("message")
        text = message.get("content") if isinstance(message, dict) else None
        if not isinstance(message, dict):
            raw["malformed"] = "no 'message' in response"
        elif not isinstance(text, str) or not text:
            raw["malformed"], text = "message.content is empty", None
        return Completion(text=text, model=str(body.get("model") or self.model), seconds=seconds, raw=raw,
                          input_tokens=token_count(body.get("prompt_eval_count")),
                          output_tokens=token_count(body.get("eval_count")),
                          finish_reason=body.get("done_reason")
                          if isinstance(body.get("done_reason"), str) else None)

    # -- what each failure means: retried or not, and the message the user reads --------------------------------
    def classify(self, exc: BaseException, timeout: float) -> Optional[Failure]:
        import httpx

        if isinstance(exc, StatusError):
            status = exc.status_code
            if status == 401:
                return self.invalid_key_failure(status, self.key_env, f"the server said: {exc.detail[:200]}")
            if is_retryable_status(status):
                return Failure(True, status_text(status), retry_after=retry_after_of(exc))
            return self.final_status_failure(status_text(status), status, exc.detail,
                                             f"is '{self.model}' pulled? `ollama pull {self.model}`")
        if isinstance(exc, httpx.TimeoutException):
            return self.timeout_failure(timeout)
        if isinstance(exc, httpx.TransportError):
            return self.connection_failure(exc, "check the network, or that --base-url is right")
        if isinstance(exc, json.JSONDecodeError):
            return self.malformed_json_failure()
        if isinstance(exc, MalformedBody):
            return self.malformed_failure(exc)
        return None


def create(settings: Optional[OllamaSettings], services: ProviderServices) -> OllamaConnector:
    """The provider factory named by the ProviderSpec: ``create(settings, services)``."""
    return OllamaConnector(services.model, services.options, settings)
