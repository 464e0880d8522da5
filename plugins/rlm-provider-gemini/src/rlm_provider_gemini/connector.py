"""The ``gemini`` provider: Gemini models through the official ``google-genai`` SDK (Gemini Developer API).

The SDK is imported only when the first request is made, so importing this module (as the plugin registry may)
stays cheap. The SDK's own retries are switched off (``HttpRetryOptions(attempts=1)``):
:class:`rlm_host.RetryingConnector` retries 429 (honouring ``Retry-After``, or the ``RetryInfo`` delay Google
puts in the error body), 5xx, timeouts and connection errors with jittered backoff, and ends with one clear
ModelError; a rejected key (401/403, or Google's 400 ``API_KEY_INVALID``) fails at once saying which
variable to set.

Where things come from, strongest first:

- base URL: ``options.base_url``, ``[provider.gemini] base_url``, ``$GOOGLE_GEMINI_BASE_URL`` (the SDK's own
  variable), the SDK default (https://generativelanguage.googleapis.com);
- API key: ``options.api_key``, then the variable named by ``api_key_env``, else ``$GOOGLE_API_KEY`` then
  ``$GEMINI_API_KEY`` (the SDK's order); with a custom base URL and no key a placeholder is sent. The client is
  always built for the Gemini Developer API (``vertexai=False``) with the key passed explicitly;
- ``max_tokens`` / ``temperature``: the options when given, else the section, else the model's defaults;
  ``top_p`` and ``seed`` when the run sets them;
- timeout and max_retries: set explicitly in ``options``, else the section, else the options' defaults.

Messages are converted to ``contents``: every ``system`` message goes, in order, into ``system_instruction``;
the ``assistant`` role becomes ``model``; messages with empty content are left out and consecutive messages of
the same role are merged into one turn (joined by a blank line).

Malformed answers (no candidates — e.g. a blocked prompt —, a candidate without parts — e.g. stopped for
SAFETY —, no text part, empty text) are not errors: they come back as a Completion with ``text=None`` and
``raw["malformed"]`` naming the finish or block reason, for the caller to record. Thought-summary parts are
not part of the answer; thinking tokens count as output tokens (they are billed as output). Events name the
provider ``gcp.gemini``, as the OpenTelemetry GenAI conventions do.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rlm_host import ModelError
from rlm_host.sdk.models import (
    Completion, Failure, Message, ModelOptions, RetryCallback, RetryPolicy, RetryingConnector, context_window_of,
    is_retryable_status, merge_same_role, retry_after_of, status_text, token_count,
)

from rlm_provider_gemini.hooks import DEFAULT_BASE_URL, INSTALL_HINT, KEY_ENVS
from rlm_provider_gemini.settings import GeminiSettings

if TYPE_CHECKING:  # pragma: no cover
    from google import genai
    from rlm_host import ProviderServices

#: Sent when a custom base URL is set but no key exists: local Gemini-compatible servers ignore it.
PLACEHOLDER_KEY = "no-key-required"

#: Context windows (input tokens) of the models genai-prices lacks or lists without one, matched by the longest
#: prefix of the model name (genai-prices gives the others').
CONTEXT_WINDOWS: dict[str, int] = {
    "gemini-2.0-pro": 2_097_152,
    "gemini-2.5-pro": 1_048_576,
    "gemini-3": 1_048_576,
    "gemini-pro-latest": 1_048_576,
}

#: Parts of a response that hold no answer text, named as the API names them.
_PART_FIELDS = ("text", "inline_data", "file_data", "function_call", "function_response", "executable_code",
                "code_execution_result", "thought")


def context_window_for(model: str) -> int | None:
    """The context window of a model genai-prices lacks (longest matching prefix of :data:`CONTEXT_WINDOWS`)."""
    return context_window_of(model.rsplit("/", 1)[-1].lower(), CONTEXT_WINDOWS)  # "models/gemini-…" too


def to_gemini_contents(messages: list[Message], *, what: str = "gemini") -> tuple[str | None, list[dict[str, Any]]]:
    """``(system_instruction, contents)``: system text apart, ``assistant`` → ``model``, same-role turns merged."""
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
    if not turns:
        raise ModelError(f"{what}: no user or assistant message to send (the API needs at least one)")
    contents = [{"role": "model" if turn["role"] == "assistant" else "user", "parts": [{"text": turn["content"]}]}
                for turn in merge_same_role(turns)]
    return ("\n\n".join(system) or None), contents


class GeminiConnector(RetryingConnector):
    """A ModelConnector for the Gemini API's ``generateContent``. (retries: see :class:`RetryingConnector`)."""

    provider = "gcp.gemini"  # the Gemini API's gen_ai.provider.name in the OpenTelemetry GenAI conventions
    settings: GeminiSettings  # what _configure validated

    def __init__(
        self,
        model: str,
        options: ModelOptions | None = None,
        settings: GeminiSettings | Mapping[str, Any] | None = None,
        *,
        retry_policy: RetryPolicy | None = None,
        on_retry: RetryCallback | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not model:
            raise ModelError("gemini: empty model name (use gemini:MODEL, e.g. gemini:gemini-3.8-flash)")
        env = self._configure(
            "gemini", model, options, settings, settings_type=GeminiSettings, environ=environ,
            context_window=context_window_for(model), retry_policy=retry_policy, on_retry=on_retry,
            base_url_env="GOOGLE_GEMINI_BASE_URL", default_base_url=DEFAULT_BASE_URL,
        )
        options, settings = self.options, self.settings
        self.max_tokens = options.max_tokens if options.max_tokens is not None else settings.max_tokens
        self.temperature = options.temperature if options.temperature is not None else settings.temperature
        key_envs = (settings.api_key_env,) if settings.api_key_env else KEY_ENVS
        self.key_env = settings.api_key_env or "GEMINI_API_KEY"  # named in messages
        self._key_help = settings.api_key_env or "GEMINI_API_KEY (or GOOGLE_API_KEY)"
        key = options.api_key or next((env[name] for name in key_envs if env.get(name)), None)
        if key is None and self._custom_base_url is None:
            raise ModelError(
                f"no API key for gemini: set {self._key_help}",
                hint=f"export {self.key_env}=… (from aistudio.google.com), or pass --model for another provider",
            )
        self._api_key = key or PLACEHOLDER_KEY

    # -- the SDK client ------------------------------------------------------------------------------------------

    def client_arguments(self) -> dict[str, Any]:
        return {"api_key": self._api_key, "base_url": self.base_url, "timeout": self.timeout,
                "api_version": self.settings.api_version}

    def build_client(self, arguments: dict[str, Any]) -> genai.Client:
        """The SDK client (this is where ``google.genai`` is imported)."""
        try:
            from google import genai
            from google.genai import types
        except ImportError as exc:
            raise ModelError(f"gemini: cannot import the google-genai SDK ({exc})", hint=INSTALL_HINT) from None
        http_options = types.HttpOptions(
            base_url=arguments["base_url"],  # always given: the SDK must not pick one on its own
            timeout=_millis(arguments["timeout"]),
            retry_options=types.HttpRetryOptions(attempts=1),  # retries are ours (RetryingConnector)
        )
        if arguments["api_version"]:
            http_options.api_version = arguments["api_version"]
        return genai.Client(vertexai=False, api_key=arguments["api_key"], http_options=http_options)

    # -- one call ------------------------------------------------------------------------------------------------

    def send(self, client: Any, request: dict[str, Any]) -> Any:
        """One ``models.generate_content`` call."""
        return client.models.generate_content(**request)

    def request(self, messages: list[Message], timeout: float) -> dict[str, Any]:
        """The keyword arguments of ``models.generate_content`` for ``messages`` (config as a plain dict)."""
        system, contents = to_gemini_contents(messages, what=self.name)
        config: dict[str, Any] = {"http_options": {"timeout": _millis(timeout)}}
        if system is not None:
            config["system_instruction"] = system
        if self.max_tokens is not None:
            config["max_output_tokens"] = self.max_tokens
        if self.temperature is not None:
            config["temperature"] = self.temperature
        for name in ("top_p", "seed"):  # the run's sampling options, as GenerateContentConfig names them
            if getattr(self.options, name) is not None:
                config[name] = getattr(self.options, name)
        return {"model": self.model, "contents": contents, "config": config}

    def _completion(self, response: Any, seconds: float, attempts: int) -> Completion:
        """Turn an SDK GenerateContentResponse into a Completion, flagging (never raising for) malformed content."""
        raw: dict[str, Any] = {}
        if getattr(response, "response_id", None):
            raw["id"] = response.response_id
        if attempts > 1:
            raw["attempts"] = attempts
        text: str | None = None
        finish_reason: str | None = None
        candidates = getattr(response, "candidates", None)
        if not candidates:
            feedback = getattr(response, "prompt_feedback", None)
            block = _enum_text(getattr(feedback, "block_reason", None))
            if block:
                raw["block_reason"] = block
                said = getattr(feedback, "block_reason_message", None)
                raw["malformed"] = f"no candidates: prompt blocked ({block})" + (f": {said}" if said else "")
            else:
                raw["malformed"] = "no candidates in response"
        else:
            candidate = candidates[0]
            finish_reason = _enum_text(getattr(candidate, "finish_reason", None))
            why = f" (finish reason: {finish_reason})" if finish_reason else ""
            if getattr(candidate, "finish_message", None):
                raw["finish_message"] = candidate.finish_message
            parts = getattr(getattr(candidate, "content", None), "parts", None)
            if not parts:
                raw["malformed"] = "candidate has no content parts" + why
            else:
                texts = [p.text for p in parts if isinstance(getattr(p, "text", None), str) and not p.thought]
                if not texts:
                    kinds = ", ".join(_part_kind(p) for p in parts)
                    raw["malformed"] = f"no text part in content (parts: {kinds})" + why
                elif not "".join(texts):
                    raw["malformed"] = "text is empty" + why
                else:
                    text = "".join(texts)
        usage = getattr(response, "usage_metadata", None)
        thoughts = token_count(getattr(usage, "thoughts_token_count", 0))
        if thoughts:
            raw["thoughts_tokens"] = thoughts
        return Completion(
            text=text,
            model=getattr(response, "model_version", None) or self.model,
            input_tokens=token_count(getattr(usage, "prompt_token_count", 0)),
            output_tokens=token_count(getattr(usage, "candidates_token_count", 0)) + thoughts,
            finish_reason=finish_reason,
            seconds=seconds,
            raw=raw,
        )

    # -- failures ------------------------------------------------------------------------------------------------

    def classify(self, exc: BaseException, timeout: float) -> Failure | None:
        """Map an SDK (or its HTTP library's) exception to a retry verdict; None for unknown exceptions."""
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            return self._status_failure(exc)
        if isinstance(exc, (errors.UnknownApiResponseError, json.JSONDecodeError)):
            return self.malformed_json_failure()
        for httpx in _http_libraries():
            if isinstance(exc, httpx.TimeoutException):
                return self.timeout_failure(timeout)
            if isinstance(exc, httpx.TransportError):
                return self.connection_failure(
                    exc, "check your network, or the server named by --base-url / GOOGLE_GEMINI_BASE_URL"
                )
        return None

    def _status_failure(self, exc: Any) -> Failure:
        status = int(getattr(exc, "code", 0) or 0)
        detail = str(getattr(exc, "message", None) or "")
        reasons = _detail_values(exc, "reason")
        said = f"the server said: {detail[:200]}" if detail else ""
        if status == 401 or (status == 400 and ("API_KEY_INVALID" in reasons or "API key not valid" in detail)):
            return self.invalid_key_failure(status, self._key_help, said)
        if status == 403:
            return Failure(
                False,
                f"{status_text(status)}: the API key may not use this" + (f": {detail[:200]}" if detail else ""),
                hint=f"check the key's project and permissions, or set {self._key_help} to another key",
            )
        if status and is_retryable_status(status):
            retry_after = retry_after_of(exc)
            if retry_after is None:
                retry_after = _retry_info_delay(exc)
            return Failure(True, status_text(status), retry_after=retry_after)
        return self.final_status_failure(
            status_text(status) if status else "API error", status, detail,
            f"is '{self.model}' a Gemini model id (e.g. gemini-3.8-flash)?",
        )


def _http_libraries() -> list[Any]:
    """The HTTP libraries the SDK may be using (``httpx2`` and/or ``httpx``), among those already imported."""
    return [module for module in (sys.modules.get("httpx2"), sys.modules.get("httpx")) if module is not None]


def _millis(seconds: float) -> int:
    """HttpOptions.timeout is in whole milliseconds."""
    return max(1, math.ceil(seconds * 1000))


def _enum_text(value: Any) -> str | None:
    """``FinishReason.STOP`` → ``"STOP"``; plain strings as they are; None stays None."""
    if value is None:
        return None
    return str(getattr(value, "value", value)) or None


def _part_kind(part: Any) -> str:
    """What a part holds: ``function_call``, ``thought``, ``inline_data``… (``empty`` when nothing)."""
    if getattr(part, "thought", False):
        return "thought"
    kinds = [name for name in _PART_FIELDS if getattr(part, name, None) not in (None, False)]
    return "/".join(kinds) or "empty"


def _detail_values(exc: Any, key: str) -> list[str]:
    """Values of ``key`` in the ``details`` list of a Google error body."""
    body = getattr(exc, "details", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    if not isinstance(details, list):
        return []
    return [str(item[key]) for item in details if isinstance(item, dict) and key in item]


def _retry_info_delay(exc: Any) -> float | None:
    """The ``google.rpc.RetryInfo`` delay of an error body (``"retryDelay": "37s"``), in seconds."""
    for value in _detail_values(exc, "retryDelay"):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", value)
        if match:
            return float(match.group(1))
    return None


def create(settings: GeminiSettings | None, services: ProviderServices) -> GeminiConnector:
    """The provider factory named by the ``gemini`` ProviderSpec: ``gemini:MODEL``."""
    return GeminiConnector(services.model, services.options, settings)


__all__ = ["CONTEXT_WINDOWS", "GeminiConnector", "GeminiSettings", "context_window_for", "create", "to_gemini_contents"]
