"""The ``anthropic`` provider: Claude models through the official ``anthropic`` SDK (Messages API).

The SDK is imported only when the first request is made, so importing this module (as the plugin registry may)
stays cheap. The SDK's own retries are switched off: :func:`rlm_host.llm.retry.call_with_retries` retries 429
(honouring ``Retry-After``), 5xx (529 "overloaded" included), timeouts and connection errors with jittered
backoff, and ends with one clear ModelError; 401/403 fail at once saying which variable to set.

Where things come from, strongest first:

- base URL: ``options.base_url``, ``[provider.anthropic] base_url``, ``$ANTHROPIC_BASE_URL``,
  ``https://api.anthropic.com``; always handed to the SDK explicitly;
- API key: ``options.api_key``, ``$ANTHROPIC_API_KEY`` (or the variable named by ``api_key_env``); with a custom
  base URL and no key a placeholder is sent (local Anthropic-compatible servers need none). The key is always
  passed explicitly, so the SDK never falls back to its profile files or other credentials on its own;
- ``max_tokens`` (required by the Messages API): ``options.max_tokens`` when given, else the section (4096);
  ``options.temperature`` is ignored: the Messages API of the SDK this plugin is built on (2.x) has no
  sampling parameters;
- timeout and max_retries: set explicitly in ``options``, else the section, else the options' defaults.

Messages are converted to what the Messages API accepts: every ``system`` message goes, in order, into the
top-level ``system`` parameter; messages with empty content are left out (the API refuses empty text);
consecutive messages of the same role are merged into one turn (joined by a blank line); a final assistant turn
loses its trailing whitespace (the API refuses it).

Malformed answers (no ``content`` blocks, no text block, empty text) are not errors: they come back as a
Completion with ``text=None`` and ``raw["malformed"]`` saying what was wrong, for the caller to record.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
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

from rlm_provider_anthropic.hooks import INSTALL_HINT
from rlm_provider_anthropic.settings import AnthropicSettings

if TYPE_CHECKING:  # pragma: no cover
    import anthropic

DEFAULT_BASE_URL = "https://api.anthropic.com"
#: Sent when a custom base URL is set but no key exists: local Anthropic-compatible servers ignore it.
PLACEHOLDER_KEY = "sk-ant-no-key-required"

#: Context windows (tokens), matched by the longest prefix of the model name. Every Claude 3 and later model
#: (claude-3-…, claude-opus-4-…, claude-sonnet-4-5, claude-haiku-5-5…) has 200k; some accept 1M behind a beta
#: flag this provider does not send.
CONTEXT_WINDOWS: dict[str, int] = {
    "claude-instant": 100_000,
    "claude-2": 100_000,
    "claude-3": 200_000,
    "claude-opus-": 200_000,
    "claude-sonnet-": 200_000,
    "claude-haiku-": 200_000,
    "claude-fable-": 200_000,
    "claude-mythos-": 200_000,
}


def context_window_for(model: str) -> int | None:
    """The context window of a known model (longest matching prefix of :data:`CONTEXT_WINDOWS`), else None."""
    name = model.lower()
    best = max((p for p in CONTEXT_WINDOWS if name.startswith(p)), key=len, default=None)
    return CONTEXT_WINDOWS[best] if best else None


def to_messages_api(messages: list[Message], *, what: str = "anthropic") -> tuple[str | None, list[dict[str, str]]]:
    """``(system, messages)`` for the Messages API: system text apart, same-role turns merged, empty ones left out."""
    system: list[str] = []
    turns: list[dict[str, str]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        content = "" if content is None else str(content)
        if role == "system":
            if content.strip():
                system.append(content)
            continue
        if role not in ("user", "assistant"):
            raise ModelError(f"{what}: unsupported message role {role!r} (expected system, user or assistant)")
        if not content.strip():
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + content
        else:
            turns.append({"role": role, "content": content})
    if not turns:
        raise ModelError(f"{what}: no user or assistant message to send (the Messages API needs at least one)")
    if turns[-1]["role"] == "assistant":
        turns[-1]["content"] = turns[-1]["content"].rstrip()
    return ("\n\n".join(system) or None), turns


class _MalformedBody(Exception):
    """The server answered 2xx with a body that is not a message (retried like a transient error)."""


class AnthropicConnector:
    """A ModelConnector for the Anthropic Messages API.

    ``retry_policy`` replaces the policy built from options and settings (tests use short waits);
    ``on_retry`` is called as ``on_retry(attempt, wait_seconds, reason)`` before each retry.
    """

    def __init__(
        self,
        model: str,
        options: ModelOptions | None = None,
        settings: AnthropicSettings | Mapping[str, Any] | None = None,
        *,
        retry_policy: RetryPolicy | None = None,
        on_retry: RetryCallback | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not model:
            raise ModelError("anthropic: empty model name (use anthropic:MODEL, e.g. anthropic:claude-haiku-5-5)")
        options = options or ModelOptions()
        settings = _validate_settings(settings)
        env = os.environ if environ is None else environ

        self.model = model
        self.name = f"anthropic:{model}"
        self.options = options
        self.settings = settings
        self.key_env = settings.api_key_env
        self.context_window: int | None = settings.context_window or context_window_for(model)
        self.on_retry = on_retry
        self.max_tokens = options.max_tokens if options.max_tokens is not None else settings.max_tokens

        explicit = options.model_fields_set
        self.timeout = options.timeout if "timeout" in explicit or settings.timeout is None else settings.timeout
        max_retries = (
            options.max_retries if "max_retries" in explicit or settings.max_retries is None else settings.max_retries
        )
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries, max_delay=settings.max_retry_wait)

        self._custom_base_url = options.base_url or settings.base_url or env.get("ANTHROPIC_BASE_URL") or None
        self.base_url = (self._custom_base_url or DEFAULT_BASE_URL).rstrip("/")
        key = options.api_key or env.get(self.key_env) or None
        if key is None and self._custom_base_url is None:
            raise ModelError(
                f"no API key for anthropic: set {self.key_env}",
                hint=f"export {self.key_env}=sk-ant-… (from console.anthropic.com), or pass --model for another "
                "provider",
            )
        self._api_key = key or PLACEHOLDER_KEY
        self._client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AnthropicConnector({self.name!r}, base_url={self.base_url!r})"

    # -- the SDK client ------------------------------------------------------------------------------------------

    def client(self) -> anthropic.Anthropic:
        """The SDK client, created on first use (this is where ``anthropic`` is imported); thread-safe."""
        with self._lock:
            if self._client is None:
                try:
                    import anthropic
                except ImportError as exc:
                    raise ModelError(f"anthropic: cannot import the anthropic SDK ({exc})", hint=INSTALL_HINT) from None
                self._client = anthropic.Anthropic(
                    api_key=self._api_key,
                    base_url=self.base_url,  # always given: the SDK must not pick one on its own
                    max_retries=0,  # retries are ours (rlm_host.llm.retry)
                    timeout=self.timeout,
                )
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
        limit = timeout if timeout is not None else self.timeout
        request = self.request(messages, limit)
        client = self.client()
        attempts = 0

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            response = client.messages.create(**request)
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

    def request(self, messages: list[Message], timeout: float) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``messages``."""
        system, turns = to_messages_api(messages, what=self.name)
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": turns,
            "timeout": timeout,
        }
        if system is not None:
            request["system"] = system
        return request

    def _completion(self, response: Any, seconds: float, attempts: int) -> Completion:
        """Turn an SDK Message into a Completion, flagging (never raising for) malformed content."""
        raw: dict[str, Any] = {}
        if getattr(response, "id", None):
            raw["id"] = response.id
        if attempts > 1:
            raw["attempts"] = attempts
        stop_reason = getattr(response, "stop_reason", None)
        why = f" (stop_reason: {stop_reason})" if stop_reason else ""
        text: str | None = None
        blocks = getattr(response, "content", None)
        if blocks is None:
            raw["malformed"] = "no 'content' in response" + why
        elif not blocks:
            raw["malformed"] = "empty 'content' list" + why
        else:
            texts = [b.text for b in blocks if getattr(b, "type", None) == "text" and isinstance(b.text, str)]
            if not texts:
                kinds = ", ".join(str(getattr(b, "type", "?")) for b in blocks)
                raw["malformed"] = f"no text block in content (blocks: {kinds})" + why
            elif not "".join(texts):
                raw["malformed"] = "text is empty" + why
            else:
                text = "".join(texts)
        usage = getattr(response, "usage", None)
        cache_written = _int(getattr(usage, "cache_creation_input_tokens", 0))
        cache_read = _int(getattr(usage, "cache_read_input_tokens", 0))
        if cache_written or cache_read:
            raw["cache_creation_input_tokens"], raw["cache_read_input_tokens"] = cache_written, cache_read
        return Completion(
            text=text,
            model=getattr(response, "model", None) or self.model,
            prompt_tokens=_int(getattr(usage, "input_tokens", 0)) + cache_written + cache_read,
            completion_tokens=_int(getattr(usage, "output_tokens", 0)),
            finish_reason=stop_reason,
            seconds=seconds,
            raw=raw,
        )

    # -- failures ------------------------------------------------------------------------------------------------

    def classify(self, exc: BaseException, timeout: float) -> Failure | None:
        """Map an SDK exception to a retry verdict with a readable message; None for unknown exceptions."""
        import anthropic

        if isinstance(exc, anthropic.APITimeoutError):
            return Failure(True, f"no answer from {self.base_url} within {timeout:g} s (timeout)")
        if isinstance(exc, anthropic.APIConnectionError):
            broken, detail = _connection_detail(exc)
            if broken:
                return Failure(True, f"connection to {self.base_url} broken mid-response: {detail}")
            return Failure(
                True,
                f"cannot reach {self.base_url}: {detail}",
                hint="check your network, or the server named by --base-url / ANTHROPIC_BASE_URL",
            )
        if isinstance(exc, anthropic.APIStatusError):
            return self._status_failure(exc)
        if isinstance(exc, anthropic.APIResponseValidationError):
            return Failure(True, f"malformed response from {self.base_url}: {exc}")
        if isinstance(exc, json.JSONDecodeError):
            return Failure(True, f"malformed JSON in response from {self.base_url} (truncated body?)")
        if isinstance(exc, _MalformedBody):
            return Failure(True, f"malformed response from {self.base_url}: {exc}")
        if isinstance(exc, anthropic.AnthropicError):
            return Failure(False, f"{type(exc).__name__}: {exc}")
        return None

    def _status_failure(self, exc: Any) -> Failure:
        status = exc.status_code
        kind, detail = _error_body(exc)
        said = f"the server said: {detail[:200]}" if detail else ""
        if status == 401:
            where = "" if self._custom_base_url is None else f" for {self.base_url}"
            return Failure(False, f"{status_text(status)}: invalid API key{where} — set {self.key_env}", hint=said)
        if status == 403:
            return Failure(
                False,
                f"{status_text(status)}: the API key in {self.key_env} may not use this"
                + (f": {detail[:200]}" if detail else ""),
                hint=f"check the key's workspace and permissions, or set {self.key_env} to another key",
            )
        if is_retryable_status(status):
            headers = getattr(getattr(exc, "response", None), "headers", None)
            message = status_text(status)
            if kind == "overloaded_error" or status == 529:
                message = f"HTTP {status} Overloaded"
            return Failure(True, message, retry_after=retry_after_from_headers(headers))
        message = status_text(status) + (f": {detail[:300]}" if detail else "")
        hint = f"is '{self.model}' a Claude model id (e.g. claude-haiku-5-5)?" if status == 404 else ""
        return Failure(False, message, hint=hint)


def _int(value: Any) -> int:
    """A token count, 0 when absent or not a number."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def _error_body(exc: Any) -> tuple[str, str]:
    """(error type, error message) from an API error's JSON body (``{"type": "error", "error": {...}}``)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("type") or ""), str(error.get("message") or "")
        return "", str(error)
    return "", str(body or "")


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


def _validate_settings(settings: AnthropicSettings | Mapping[str, Any] | None) -> AnthropicSettings:
    if settings is None:
        return AnthropicSettings()
    if isinstance(settings, AnthropicSettings):
        return settings
    try:
        return AnthropicSettings.model_validate(dict(settings))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"[provider.anthropic]: {problems}") from None


def create(
    model: str, options: ModelOptions | None = None, settings: AnthropicSettings | Mapping[str, Any] | None = None
) -> AnthropicConnector:
    """The provider factory named by the ``anthropic`` ProviderSpec: ``anthropic:MODEL``."""
    return AnthropicConnector(model, options, settings)


__all__ = [
    "CONTEXT_WINDOWS",
    "AnthropicConnector",
    "AnthropicSettings",
    "context_window_for",
    "create",
    "to_messages_api",
]
