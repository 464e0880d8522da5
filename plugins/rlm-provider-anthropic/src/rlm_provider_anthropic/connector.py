"""The ``anthropic`` provider: Claude models through the official ``anthropic`` SDK (Messages API).

The SDK is imported only when the first request is made, so importing this module (as the plugin registry may)
stays cheap. The SDK's own retries are switched off: :class:`rlm_host.RetryingConnector` retries 429 (honouring
``Retry-After``), 5xx (529 "overloaded" included), timeouts and connection errors with jittered backoff, and
ends with one clear ModelError; 401/403 fail at once saying which variable to set.

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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rlm_host import ModelError
from rlm_host.sdk.models import (
    Completion, Failure, MalformedBody, Message, ModelOptions, RetryCallback, RetryPolicy, RetryingConnector,
    context_window_of, is_retryable_status, merge_same_role, reject_raw_text, retry_after_of, status_text,
    token_count,
)

from rlm_provider_anthropic.hooks import DEFAULT_BASE_URL, INSTALL_HINT
from rlm_provider_anthropic.settings import AnthropicSettings

if TYPE_CHECKING:  # pragma: no cover
    import anthropic
    from rlm_host import ProviderServices

#: Sent when a custom base URL is set but no key exists: local Anthropic-compatible servers ignore it.
PLACEHOLDER_KEY = "sk-ant-no-key-required"

#: Context windows (tokens) of the models genai-prices lacks (it gives every Claude 2 and 3 model's and most
#: later ones'), matched by the longest prefix of the model name: older Claude Instant, and a newer model of a
#: known family (claude-opus-…, claude-sonnet-…) before genai-prices lists it, at the 200k every family has.
CONTEXT_WINDOWS: dict[str, int] = {
    "claude-instant": 100_000,
    "claude-opus-": 200_000,
    "claude-sonnet-": 200_000,
    "claude-haiku-": 200_000,
    "claude-fable-": 200_000,
    "claude-mythos-": 200_000,
}


def context_window_for(model: str) -> int | None:
    """The context window of a model genai-prices lacks (longest matching prefix of :data:`CONTEXT_WINDOWS`)."""
    return context_window_of(model.lower(), CONTEXT_WINDOWS)


def to_messages_api(messages: list[Message], *, what: str = "anthropic") -> tuple[str | None, list[dict[str, str]]]:
    """``(system, messages)`` for the Messages API: system text apart, same-role turns merged, empty ones left out."""
    system: list[str] = []
    turns: list[Message] = []
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
        if content.strip():
            turns.append({"role": role, "content": content})
    turns = merge_same_role(turns)
    if not turns:
        raise ModelError(f"{what}: no user or assistant message to send (the Messages API needs at least one)")
    if turns[-1]["role"] == "assistant":
        turns[-1]["content"] = turns[-1]["content"].rstrip()
    return ("\n\n".join(system) or None), turns


class AnthropicConnector(RetryingConnector):
    """A ModelConnector for the Anthropic Messages API. (retries: see :class:`RetryingConnector`)."""

    settings: AnthropicSettings  # what _configure validated

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
        env = self._configure(
            "anthropic", model, options, settings, settings_type=AnthropicSettings, environ=environ,
            context_window=context_window_for(model), retry_policy=retry_policy, on_retry=on_retry,
            base_url_env="ANTHROPIC_BASE_URL", default_base_url=DEFAULT_BASE_URL,
        )
        options, settings = self.options, self.settings
        self.key_env = settings.api_key_env
        self.max_tokens = options.max_tokens if options.max_tokens is not None else settings.max_tokens
        key = options.api_key or env.get(self.key_env) or None
        if key is None and self._custom_base_url is None:
            raise ModelError(
                f"no API key for anthropic: set {self.key_env}",
                hint=f"export {self.key_env}=sk-ant-… (from console.anthropic.com), or pass --model for another "
                "provider",
            )
        self._api_key = key or PLACEHOLDER_KEY

    # -- the SDK client ------------------------------------------------------------------------------------------

    def client_arguments(self) -> dict[str, Any]:
        return {
            "api_key": self._api_key,
            "base_url": self.base_url,  # always given: the SDK must not pick one on its own
            "max_retries": 0,  # retries are ours (RetryingConnector)
            "timeout": self.timeout,
        }

    def build_client(self, arguments: dict[str, Any]) -> anthropic.Anthropic:
        """The SDK client (this is where ``anthropic`` is imported)."""
        try:
            import anthropic
        except ImportError as exc:
            raise ModelError(f"anthropic: cannot import the anthropic SDK ({exc})", hint=INSTALL_HINT) from None
        return anthropic.Anthropic(**arguments)

    # -- one call ------------------------------------------------------------------------------------------------

    def send(self, client: Any, request: dict[str, Any]) -> Any:
        """One ``POST /v1/messages`` through the SDK client (auth, pool, errors, response type), without
        ``messages.create``'s request transform, which walks the whole history on every call (~0.5 ms per turn
        of history); our messages are plain JSON already and the timeout is always given."""
        from anthropic.types import Message as MessageResponse

        body = {key: value for key, value in request.items() if key not in ("timeout", "extra_body")}
        body.update(request.get("extra_body") or {})
        return reject_raw_text(client.post("/v1/messages", body=body, cast_to=MessageResponse,
                                           options={"timeout": request["timeout"]}))

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
        cache_written = token_count(getattr(usage, "cache_creation_input_tokens", 0))
        cache_read = token_count(getattr(usage, "cache_read_input_tokens", 0))
        if cache_written or cache_read:
            raw["cache_creation_input_tokens"], raw["cache_read_input_tokens"] = cache_written, cache_read
        return Completion(
            text=text,
            model=getattr(response, "model", None) or self.model,
            input_tokens=token_count(getattr(usage, "input_tokens", 0)) + cache_written + cache_read,
            output_tokens=token_count(getattr(usage, "output_tokens", 0)),
            finish_reason=stop_reason,
            seconds=seconds,
            raw=raw,
        )

    # -- failures ------------------------------------------------------------------------------------------------

    def classify(self, exc: BaseException, timeout: float) -> Failure | None:
        """Map an SDK exception to a retry verdict with a readable message; None for unknown exceptions."""
        import anthropic

        if isinstance(exc, anthropic.APITimeoutError):
            return self.timeout_failure(timeout)
        if isinstance(exc, anthropic.APIConnectionError):
            return self.connection_failure(
                exc, "check your network, or the server named by --base-url / ANTHROPIC_BASE_URL"
            )
        if isinstance(exc, anthropic.APIStatusError):
            return self._status_failure(exc)
        if isinstance(exc, anthropic.APIResponseValidationError):
            return self.malformed_failure(exc)
        if isinstance(exc, json.JSONDecodeError):
            return self.malformed_json_failure()
        if isinstance(exc, MalformedBody):
            return self.malformed_failure(exc)
        if isinstance(exc, anthropic.AnthropicError):
            return Failure(False, f"{type(exc).__name__}: {exc}")
        return None

    def _status_failure(self, exc: Any) -> Failure:
        status = exc.status_code
        kind, detail = _error_body(exc)
        said = f"the server said: {detail[:200]}" if detail else ""
        if status == 401:
            return self.invalid_key_failure(status, self.key_env, said)
        if status == 403:
            return Failure(
                False,
                f"{status_text(status)}: the API key in {self.key_env} may not use this"
                + (f": {detail[:200]}" if detail else ""),
                hint=f"check the key's workspace and permissions, or set {self.key_env} to another key",
            )
        if is_retryable_status(status):
            message = status_text(status)
            if kind == "overloaded_error" or status == 529:
                message = f"HTTP {status} Overloaded"
            return Failure(True, message, retry_after=retry_after_of(exc))
        return self.final_status_failure(
            status_text(status), status, detail, f"is '{self.model}' a Claude model id (e.g. claude-haiku-5-5)?"
        )


def _error_body(exc: Any) -> tuple[str, str]:
    """(error type, error message) from an API error's JSON body (``{"type": "error", "error": {...}}``)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("type") or ""), str(error.get("message") or "")
        return "", str(error)
    return "", str(body or "")


def create(settings: AnthropicSettings | None, services: ProviderServices) -> AnthropicConnector:
    """The provider factory named by the ``anthropic`` ProviderSpec: ``anthropic:MODEL``."""
    return AnthropicConnector(services.model, services.options, settings)


__all__ = [
    "CONTEXT_WINDOWS",
    "AnthropicConnector",
    "AnthropicSettings",
    "context_window_for",
    "create",
    "to_messages_api",
]
