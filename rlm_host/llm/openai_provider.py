"""The ``openai`` provider: OpenAI and any OpenAI-compatible server (vLLM, llama.cpp, Ollama, LM Studio…).

Built on the official ``openai`` SDK, which is imported only when the first request is made, so importing this
module (as ``rlm --help`` and the plugin registry may) stays cheap. The SDK's own retries are switched off:
:mod:`rlm_host.llm.retry` retries 429, 5xx, timeouts and connection errors with jittered backoff and
``Retry-After``, reports each retry through ``on_retry``, and ends with one clear ModelError.

Where things come from, strongest first:

- base URL: ``options.base_url``, ``[provider.openai] base_url``, ``$OPENAI_BASE_URL``, the SDK default;
- API key: ``options.api_key``, ``$OPENAI_API_KEY`` (or the variable named by ``api_key_env``); with a base URL
  and no key a placeholder is sent, since local servers need none;
- timeout and max_retries: set explicitly in ``options``, else ``[provider.openai]``, else the options' defaults.

Malformed answers (no ``choices``, an empty list, ``content`` null or empty) are not errors: they come back as a
Completion whose ``raw["malformed"]`` says what was wrong, for the caller to record.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlm_host.errors import ConfigError
from rlm_host.llm.protocol import Completion, Message, ModelError, ModelOptions
from rlm_host.llm.retry import (
    Failure,
    RetryCallback,
    RetryPolicy,
    call_with_retries,
    is_retryable_status,
    retry_after_from_headers,
    status_text,
)

if TYPE_CHECKING:  # pragma: no cover
    import openai

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Sent when a base URL is set but no key exists: local OpenAI-compatible servers ignore it.
PLACEHOLDER_KEY = "sk-no-key-required"

#: Context windows (tokens) of common models, matched by the longest prefix of the model name.
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
}

#: Reasoning models take ``max_completion_tokens`` instead of ``max_tokens``.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


class ProviderSettings(BaseModel):
    """``[provider.openai]`` in rlm.toml."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(None, description="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the API key")
    timeout: float | None = Field(None, gt=0, description="seconds per request")
    max_retries: int | None = Field(None, ge=0, description="retries after a failed request")
    max_retry_wait: float = Field(60.0, gt=0, description="cap of one wait between retries, seconds")
    context_window: int | None = Field(None, ge=1, description="context window in tokens, when not known")
    organization: str | None = Field(None, description="OpenAI organization id")


def context_window_for(model: str) -> int | None:
    """The context window of a known model (longest matching prefix of :data:`CONTEXT_WINDOWS`), else None."""
    name = model.rsplit("/", 1)[-1].lower()
    best = max((p for p in CONTEXT_WINDOWS if name.startswith(p)), key=len, default=None)
    return CONTEXT_WINDOWS[best] if best else None


class _MalformedBody(Exception):
    """The server answered 2xx with a body that is not a chat completion (retried like a transient error)."""


class OpenAIConnector:
    """A ModelConnector for the OpenAI chat completions API.

    ``retry_policy`` replaces the policy built from options and settings (tests use short waits);
    ``on_retry`` is called as ``on_retry(attempt, wait_seconds, reason)`` before each retry.
    """

    def __init__(
        self,
        model: str,
        options: ModelOptions | None = None,
        settings: ProviderSettings | Mapping[str, Any] | None = None,
        *,
        retry_policy: RetryPolicy | None = None,
        on_retry: RetryCallback | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not model:
            raise ModelError("openai: empty model name (use openai:MODEL, e.g. openai:gpt-4o-mini)")
        options = options or ModelOptions()
        settings = _validate_settings(settings)
        env = os.environ if environ is None else environ

        self.model = model
        self.name = f"openai:{model}"
        self.options = options
        self.settings = settings
        self.key_env = settings.api_key_env
        self.context_window: int | None = settings.context_window or context_window_for(model)
        self.on_retry = on_retry

        explicit = options.model_fields_set
        self.timeout = options.timeout if "timeout" in explicit or settings.timeout is None else settings.timeout
        max_retries = (
            options.max_retries if "max_retries" in explicit or settings.max_retries is None else settings.max_retries
        )
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries, max_delay=settings.max_retry_wait)

        self._custom_base_url = options.base_url or settings.base_url or env.get("OPENAI_BASE_URL") or None
        self.base_url = (self._custom_base_url or DEFAULT_BASE_URL).rstrip("/")
        key = options.api_key or env.get(self.key_env) or None
        if key is None and self._custom_base_url is None:
            raise ModelError(
                f"no API key for openai: set {self.key_env} or pass --base-url",
                hint=f"export {self.key_env}=sk-… for OpenAI, or --base-url http://127.0.0.1:8000/v1 (local server)",
            )
        self._api_key = key or PLACEHOLDER_KEY
        self._client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIConnector({self.name!r}, base_url={self.base_url!r})"

    # -- the SDK client ------------------------------------------------------------------------------------------

    def client(self) -> openai.OpenAI:
        """The SDK client, created on first use (this is where ``openai`` is imported); thread-safe."""
        with self._lock:
            if self._client is None:
                import openai

                kwargs: dict[str, Any] = {
                    "api_key": self._api_key,
                    "base_url": self.base_url,  # always given: the SDK must not read $OPENAI_BASE_URL on its own
                    "max_retries": 0,  # retries are ours (rlm_host.llm.retry)
                    "timeout": self.timeout,
                }
                if self.settings.organization:
                    kwargs["organization"] = self.settings.organization
                self._client = openai.OpenAI(**kwargs)
            return self._client

    def close(self) -> None:
        """Close the SDK client's connections (a later call opens new ones)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- one call ------------------------------------------------------------------------------------------------

    def complete(
        self,
        messages: list[Message],
        *,
        timeout: float | None = None,
        on_retry: RetryCallback | None = None,
    ) -> Completion:
        """Answer ``messages``; retries transient failures and raises one ModelError when they persist."""
        client = self.client()
        limit = timeout if timeout is not None else self.timeout
        request = self._request(messages, limit)
        attempts = 0

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            response = client.chat.completions.create(**request)
            if isinstance(response, (str, bytes)):  # the SDK hands back raw text it could not parse as JSON
                raise _MalformedBody(f"response body is not JSON: {str(response)[:80]!r}")
            return response

        started = time.monotonic()
        response = call_with_retries(
            attempt,
            lambda exc: self.classify(exc, limit),
            policy=self.retry_policy,
            what=self.name,
            on_retry=on_retry or self.on_retry,
        )
        return self._completion(response, time.monotonic() - started, attempts)

    def _request(self, messages: list[Message], timeout: float) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": list(messages), "timeout": timeout}
        if self.options.temperature is not None:
            request["temperature"] = self.options.temperature
        if self.options.max_tokens is not None:
            reasoning = self.model.lower().startswith(_REASONING_PREFIXES)
            request["max_completion_tokens" if reasoning else "max_tokens"] = self.options.max_tokens
        return request

    def _completion(self, response: Any, seconds: float, attempts: int) -> Completion:
        """Turn an SDK response into a Completion, flagging (never raising for) malformed content."""
        raw: dict[str, Any] = {}
        if getattr(response, "id", None):
            raw["id"] = response.id
        if attempts > 1:
            raw["attempts"] = attempts
        usage = getattr(response, "usage", None)
        text: str | None = None
        finish_reason: str | None = None
        choices = getattr(response, "choices", None)
        if choices is None:
            raw["malformed"] = "no 'choices' in response"
        elif not choices:
            raw["malformed"] = "empty 'choices' list"
        else:
            choice = choices[0]
            finish_reason = getattr(choice, "finish_reason", None)
            message = getattr(choice, "message", None)
            text = getattr(message, "content", None)
            if message is None:
                raw["malformed"] = "first choice has no message"
            elif text is None:
                refusal = getattr(message, "refusal", None)
                tools = getattr(message, "tool_calls", None)
                why = f" (refusal: {refusal})" if refusal else (" (tool calls instead)" if tools else "")
                raw["malformed"] = "message.content is null" + why
            elif text == "":
                raw["malformed"] = "message.content is empty"
        return Completion(
            text=text,
            model=getattr(response, "model", None) or self.model,
            prompt_tokens=_int(getattr(usage, "prompt_tokens", 0)),
            completion_tokens=_int(getattr(usage, "completion_tokens", 0)),
            finish_reason=finish_reason,
            seconds=seconds,
            raw=raw,
        )

    # -- failures ------------------------------------------------------------------------------------------------

    def classify(self, exc: BaseException, timeout: float) -> Failure | None:
        """Map an SDK exception to a retry verdict with a readable message; None for unknown exceptions."""
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return Failure(True, f"no answer from {self.base_url} within {timeout:g} s (timeout)")
        if isinstance(exc, openai.APIConnectionError):
            broken, detail = _connection_detail(exc)
            if broken:
                return Failure(True, f"connection to {self.base_url} broken mid-response: {detail}")
            return Failure(
                True,
                f"cannot reach {self.base_url}: {detail}",
                hint="check that the server is running and --base-url is right",
            )
        if isinstance(exc, openai.APIStatusError):
            return self._status_failure(exc)
        if isinstance(exc, json.JSONDecodeError):
            return Failure(True, f"malformed JSON in response from {self.base_url} (truncated body?)")
        if isinstance(exc, _MalformedBody):
            return Failure(True, f"malformed response from {self.base_url}: {exc}")
        if isinstance(exc, openai.OpenAIError):
            return Failure(False, f"{type(exc).__name__}: {exc}")
        return None

    def _status_failure(self, exc: Any) -> Failure:
        status = exc.status_code
        code, detail = _error_body(exc)
        if status == 401:
            where = "" if self._custom_base_url is None else f" for {self.base_url}"
            return Failure(
                False,
                f"{status_text(status)}: invalid API key{where} — set {self.key_env}",
                hint=f"the server said: {detail[:200]}" if detail else "",
            )
        if status == 429 and code == "insufficient_quota":
            return Failure(False, f"{status_text(status)}: insufficient quota", hint="check your plan and billing")
        if is_retryable_status(status):
            headers = getattr(getattr(exc, "response", None), "headers", None)
            return Failure(True, status_text(status), retry_after=retry_after_from_headers(headers))
        message = status_text(status) + (f": {detail[:300]}" if detail else "")
        hint = f"is '{self.model}' a model this server serves?" if status == 404 else ""
        return Failure(False, message, hint=hint)


def _int(value: Any) -> int:
    """A token count, 0 when absent or not a number."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def _error_body(exc: Any) -> tuple[str, str]:
    """(error code, error message) from an API error's JSON body, empty strings when absent."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("code") or ""), str(error.get("message") or "")
        return "", str(error)
    return str(getattr(exc, "code", "") or ""), str(body or getattr(exc, "message", "") or "")


def _connection_detail(exc: BaseException) -> tuple[bool, str]:
    """(broken mid-response?, 'connection refused' / 'unknown host' / the innermost cause's message)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 20:
        chain.append(current)
        current = current.__cause__ or current.__context__
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in text:
        return False, "connection refused"
    if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
        return False, "unknown host"
    innermost = chain[-1]
    broken = any(type(e).__name__ in ("RemoteProtocolError", "ReadError") for e in chain)
    return broken, str(innermost) or type(innermost).__name__


def _validate_settings(settings: ProviderSettings | Mapping[str, Any] | None) -> ProviderSettings:
    if settings is None:
        return ProviderSettings()
    if isinstance(settings, ProviderSettings):
        return settings
    try:
        return ProviderSettings.model_validate(dict(settings))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"[provider.openai]: {problems}") from None


def create(
    model: str, options: ModelOptions | None = None, settings: ProviderSettings | Mapping[str, Any] | None = None
) -> OpenAIConnector:
    """The provider factory named by the ``openai`` ProviderSpec: ``openai:MODEL``."""
    return OpenAIConnector(model, options, settings)


__all__ = ["CONTEXT_WINDOWS", "OpenAIConnector", "ProviderSettings", "context_window_for", "create"]
