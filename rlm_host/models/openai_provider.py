"""The ``openai`` provider: OpenAI and any OpenAI-compatible server (vLLM, llama.cpp, Ollama, LM Studio…).

It speaks the chat-completions HTTP API itself, through one shared ``httpx`` client per endpoint and key (its
connection pool, proxies from the environment, TLS): the API is one POST with a JSON body, and the official SDK
costs ~0.9 s to import at every command's first model call and ~0.3 ms of CPU per request for features we do not
use (typed responses, its own retries). ``httpx`` is imported only when the first request is made, so importing
this module (as ``rlm --help`` and the plugin registry may) stays cheap. :mod:`rlm_host.models.retry` retries 429,
5xx, timeouts and connection errors with jittered backoff and ``Retry-After``, reports each retry through
``on_retry``, and ends with one clear ModelError.

Where things come from, strongest first:

- base URL: ``options.base_url``, ``[provider.openai] base_url``, ``$OPENAI_BASE_URL``, OpenAI's own;
- API key: ``options.api_key``, ``$OPENAI_API_KEY`` (or the variable named by ``api_key_env``); with a base URL
  and no key a placeholder is sent, since local servers need none;
- timeout and max_retries: set explicitly in ``options``, else ``[provider.openai]``, else the options' defaults.

Where a server takes a reply format (:class:`ReplyFormatFields`) differs: llama.cpp's server reads a GBNF grammar
from ``grammar``, vLLM from ``structured_outputs.grammar`` and SGLang from ``ebnf``; a JSON schema goes in OpenAI's
``response_format`` of type ``json_schema``, except on llama.cpp's server (llama-cpp-python's as well as the C++
one), which takes ``{"type": "json_object", "schema": …}``. Each OpenAI-compatible service (the
rlm-provider-compatible plugin) gives its connector one.

Malformed answers (no ``choices``, an empty list, ``content`` null or empty) are not errors: they come back as a
Completion whose ``raw["malformed"]`` says what was wrong, for the caller to record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rlm_host.models.connector_base import RetryingConnector, StatusError, context_window_of, json_body, token_count
from rlm_host.models.protocol import Completion, Message, ModelError, ModelOptions, ReplyFormat
from rlm_host.models.retry import Failure, RetryCallback, RetryPolicy, status_text

if TYPE_CHECKING:  # pragma: no cover
    import httpx

    from rlm_host.services import ProviderServices

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Sent when a base URL is set but no key exists: local OpenAI-compatible servers ignore it.
PLACEHOLDER_KEY = "sk-no-key-required"

#: Context windows (tokens) of the models genai-prices lists without one (it gives every other OpenAI model's),
#: matched by the longest prefix of the model name.
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4.5": 128_000,
}

#: Reasoning models take ``max_completion_tokens`` instead of ``max_tokens``.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


@dataclass(frozen=True)
class ReplyFormatFields:
    """How one service takes a reply format: ``grammar`` is the dotted path of the request-body field holding a
    GBNF grammar ("" when it takes none); ``json_schema`` the ``response_format`` type carrying a JSON schema ("" when
    it takes none); ``by_default`` says the connector enforces a format unless the run says ``off``."""

    grammar: str = ""
    json_schema: Literal["", "json_schema", "json_object"] = ""
    by_default: bool = False

    @property
    def kinds(self) -> frozenset[str]:
        """The ReplyFormat kinds this service can enforce (``gbnf``, ``json_schema``)."""
        return frozenset(kind for kind, field in (("gbnf", self.grammar), ("json_schema", self.json_schema)) if field)

    def apply(self, request: dict[str, Any], reply_format: ReplyFormat) -> None:
        """Add ``reply_format`` to ``request`` (the keyword arguments of ``chat.completions.create``): its grammar
        when the service takes one and the format has one, else its JSON schema."""
        if self.grammar and reply_format.gbnf is not None:
            body = request.setdefault("extra_body", {})
            *parents, leaf = self.grammar.split(".")
            for key in parents:
                body = body.setdefault(key, {})
            body[leaf] = reply_format.gbnf
        elif self.json_schema and reply_format.json_schema is not None:
            schema = dict(reply_format.json_schema)
            request["response_format"] = (
                {"type": "json_schema", "json_schema": {"name": reply_format.name, "schema": schema, "strict": True}}
                if self.json_schema == "json_schema"
                else {"type": "json_object", "schema": schema}
            )


#: OpenAI's own API, and services that follow it: JSON schemas through ``response_format``, no grammars.
OPENAI_STYLE = ReplyFormatFields(json_schema="json_schema")


class ProviderSettings(BaseModel):
    """``[provider.openai]`` in rlm.toml."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(None, description="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the API key")
    timeout: float | None = Field(None, gt=0, description="seconds per request")
    max_retries: int | None = Field(None, ge=0, description="retries after a failed request")
    max_retry_wait: float = Field(60.0, gt=0, description="cap of one wait between retries, seconds")
    context_window: int | None = Field(None, ge=1, description="context window in tokens, when not known")
    max_concurrency: int | None = Field(None, ge=1, description="requests in flight at once (a server's slots)")
    organization: str | None = Field(None, description="OpenAI organization id")


def context_window_for(model: str) -> int | None:
    """The context window of a model genai-prices lacks (longest matching prefix of :data:`CONTEXT_WINDOWS`)."""
    return context_window_of(model.rsplit("/", 1)[-1].lower(), CONTEXT_WINDOWS)


class OpenAIConnector(RetryingConnector):
    """A ModelConnector for the OpenAI chat completions API. (retries: see :class:`RetryingConnector`).

    ``reply_fields`` says how the server takes a reply format: OpenAI's JSON schemas here, each OpenAI-compatible
    service's own fields when a plugin builds the connector for it (rlm-provider-compatible).
    """

    provider = "openai"  # gen_ai.provider.name; an OpenAI-compatible service's connector is given its own
    reply_fields: ReplyFormatFields = OPENAI_STYLE
    settings: ProviderSettings

    @property
    def reply_formats(self) -> frozenset[str]:  # type: ignore[override]  # read-only: derived from reply_fields
        """The reply-format kinds the server enforces (see :class:`ReplyFormatFields`)."""
        return self.reply_fields.kinds

    @property
    def reply_format_by_default(self) -> bool:
        return self.reply_fields.by_default

    def __init__(self, model: str, options: ModelOptions | None = None,
                 settings: ProviderSettings | Mapping[str, Any] | None = None, *,
                 retry_policy: RetryPolicy | None = None, on_retry: RetryCallback | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        if not model:
            raise ModelError("openai: empty model name (use openai:MODEL, e.g. openai:gpt-4o-mini)")
        env = self._configure(
            "openai", model, options, settings, settings_type=ProviderSettings, environ=environ,
            context_window=context_window_for(model), retry_policy=retry_policy, on_retry=on_retry,
            base_url_env="OPENAI_BASE_URL", default_base_url=DEFAULT_BASE_URL,
        )
        self.key_env = self.settings.api_key_env
        key = self.options.api_key or env.get(self.key_env) or None
        if key is None and self._custom_base_url is None:
            raise ModelError(
                f"no API key for openai: set {self.key_env} or pass --base-url",
                hint=f"export {self.key_env}=sk-… for OpenAI, or --base-url http://127.0.0.1:8000/v1 (local server)",
            )
        self._api_key = key or PLACEHOLDER_KEY

    # -- the SDK client ------------------------------------------------------------------------------------------

    def client_arguments(self) -> dict[str, Any]:
        return {"api_key": self._api_key, "base_url": self.base_url, "timeout": self.timeout,
                "organization": self.settings.organization}

    def build_client(self, arguments: dict[str, Any]) -> httpx.Client:
        import httpx

        headers = {"Authorization": f"Bearer {arguments['api_key']}", "Accept": "application/json"}
        if arguments["organization"]:
            headers["OpenAI-Organization"] = arguments["organization"]
        return httpx.Client(base_url=arguments["base_url"].rstrip("/") + "/", headers=headers,
                            timeout=arguments["timeout"], follow_redirects=False,
                            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100))

    # -- one call ------------------------------------------------------------------------------------------------

    def send(self, client: Any, request: dict[str, Any]) -> Any:
        """One ``POST /chat/completions``; the JSON body as it came (a non-2xx answer raises StatusError)."""
        body = {key: value for key, value in request.items() if key not in ("timeout", "extra_body")}
        body.update(request.get("extra_body") or {})
        return json_body(post_json(client, "chat/completions", body, request["timeout"]))

    def request(self, messages: list[Message], timeout: float) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``messages``."""
        request: dict[str, Any] = {"model": self.model, "messages": list(messages), "timeout": timeout}
        request.update(self.options.sampling())  # temperature, top_p, seed: as the run set them
        if self.options.max_tokens is not None:
            reasoning = self.model.lower().startswith(_REASONING_PREFIXES)
            request["max_completion_tokens" if reasoning else "max_tokens"] = self.options.max_tokens
        return request

    def constrain(self, request: dict[str, Any], reply_format: ReplyFormat) -> None:
        """The reply format in the fields this server reads."""
        self.reply_fields.apply(request, reply_format)

    def _completion(self, response: Any, seconds: float, attempts: int) -> Completion:
        """Turn a chat-completions JSON body into a Completion, flagging (never raising for) malformed content."""
        body = _object(response)
        raw: dict[str, Any] = {"id": body["id"]} if body.get("id") else {}
        if attempts > 1:
            raw["attempts"] = attempts
        text, finish_reason, malformed = _reply_text(response)
        if malformed:
            raw["malformed"] = malformed
        usage = _object(body.get("usage"))
        return Completion(text=text, model=str(body.get("model") or self.model),
                          input_tokens=token_count(usage.get("prompt_tokens", 0)),
                          output_tokens=token_count(usage.get("completion_tokens", 0)),
                          finish_reason=finish_reason if isinstance(finish_reason, str) else None, seconds=seconds,
                          raw=raw)

    # -- failures (the rest: RetryingConnector.classify) -----------------------------------------------------------

    def status_failure(self, exc: StatusError) -> Failure:
        """OpenAI's 429 for an exhausted quota is final; other statuses as any server's."""
        if exc.status_code == 429 and exc.code == "insufficient_quota":
            return Failure(False, f"{status_text(429)}: insufficient quota", hint="check your plan and billing")
        return super().status_failure(exc)


def post_json(client: Any, path: str, body: Any, timeout: float) -> Any:
    """POST ``body`` as JSON to ``path`` under the client's base URL and return the read response: what
    ``client.post(path, json=body)`` does for this API (the client's headers, the transport its URL is mounted on,
    so proxies from the environment too, the timeout), without the client's cookie jar, auth and redirect steps
    that a JSON API never uses: ≈ 0.17 ms less CPU and 0.2 ms less time a call (``benchmarks/engine_overhead.py``)."""
    import httpx

    transport_for = getattr(client, "_transport_for_url", None)
    if transport_for is None:  # another httpx release: the public way
        return client.post(path, json=body, timeout=timeout)
    url = client.base_url.join(path)
    content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    headers = client.headers.copy()
    headers["Content-Type"] = "application/json"
    request = httpx.Request("POST", url, headers=headers, content=content,
                            extensions={"timeout": httpx.Timeout(timeout).as_dict()})
    response = transport_for(url).handle_request(request)
    try:
        response.read()
    finally:
        response.close()
    response.request = request
    return response


def _object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a malformed body never raises here)."""
    return value if isinstance(value, dict) else {}


def _reply_text(response: Any) -> tuple[str | None, Any, str]:
    """(text, finish reason, what is malformed: "" when nothing) of a chat-completions JSON body."""
    if not isinstance(response, dict):
        return None, None, f"response body is a JSON {type(response).__name__}, not an object"
    choices = response.get("choices")
    if choices is None:
        return None, None, "no 'choices' in response"
    if not isinstance(choices, list) or not choices:
        return None, None, "empty 'choices' list"
    choice = _object(choices[0])
    finish_reason, message = choice.get("finish_reason"), choice.get("message")
    if not isinstance(message, dict):
        return None, finish_reason, "first choice has no message"
    text = message.get("content")
    if text is None:
        refusal, tools = message.get("refusal"), message.get("tool_calls")
        why = f" (refusal: {refusal})" if refusal else (" (tool calls instead)" if tools else "")
        return None, finish_reason, "message.content is null" + why
    if not isinstance(text, str):
        return None, finish_reason, f"message.content is a JSON {type(text).__name__}, not text"
    return text, finish_reason, "" if text else "message.content is empty"


def create(settings: ProviderSettings | Mapping[str, Any] | None, services: "ProviderServices") -> OpenAIConnector:
    """The provider factory named by the ``openai`` ProviderSpec: ``openai:MODEL``."""
    return OpenAIConnector(services.model, services.options, settings)


__all__ = ["CONTEXT_WINDOWS", "OPENAI_STYLE", "OpenAIConnector", "ProviderSettings", "ReplyFormatFields",
           "context_window_for", "create"]
