"""The ``plugin-template-ollama`` provider: Ollama's own chat API (``POST /api/chat``), as a provider over HTTP.

It talks to Ollama's hosted API (``https://ollama.com``, with the key in ``OLLAMA_API_KEY``) by default, and to a
local ``ollama serve`` with ``--base-url http://127.0.0.1:11434`` (no key needed there).

A provider factory is called once per model string as ``create(settings, services)``: ``settings`` is the
validated ``[provider.plugin-template-ollama]`` section, ``services.model`` the part after ``provider:`` and
``services.options`` the run's connection options (base URL, key, timeout, retries). It returns a
``ModelConnector``: ``name``, ``context_window`` and ``complete(messages, …) -> Completion``.

``RetryingConnector`` (the host's connector kit) does the rest every HTTP provider needs: the timeout, retry
policy and base URL from options and settings, one shared client per endpoint and key, retries of 429, 5xx,
timeouts and broken bodies with ``Retry-After`` honoured, one clear ``ModelError`` when they run out, and what an
httpx failure means (``json_body`` reads each answer). What is left here is the API's wire format. ``httpx`` is
imported only by the first request, so building a connector (``rlm --help``, ``rlm models list``) stays cheap.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field
from rlm_host import ModelError, ProviderServices
from rlm_host.sdk.models import (
    Completion, Message, ModelOptions, ReplyFormat, RetryingConnector, context_window_of, json_body, token_count,
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


class OllamaConnector(RetryingConnector):
    """``plugin-template-ollama:MODEL``. Enforces a JSON-schema reply format through Ollama's ``format`` field."""

    reply_formats = frozenset({"json_schema"})
    # what RetryingConnector.classify says when the server cannot be reached, and of a 404 (an unknown model)
    connect_hint = "check the network, or that --base-url is right"
    missing_model_hint = "is '{model}' pulled? `ollama pull {model}`"

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
        # the JSON body; a non-2xx answer, a body cut short or not JSON raise what RetryingConnector.classify reads
        return json_body(client.post("api/chat", json=body, timeout=request["timeout"]))

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


def create(settings: Optional[OllamaSettings], services: ProviderServices) -> OllamaConnector:
    """The provider factory named by the ProviderSpec: ``create(settings, services)``."""
    return OllamaConnector(services.model, services.options, settings)
