"""OpenAI-compatible providers by name: local servers (Ollama, llama.cpp's server, LM Studio, vLLM, SGLang, TGI)
and hosted APIs (OpenRouter, Groq, Together, DeepSeek, Fireworks, Mistral, xAI, Cerebras, DeepInfra).

Each is a provider of its own — ``ollama:llama3.2``, ``groq:llama-3.3-70b-versatile`` — served by the
``openai`` connector with the provider's usual base URL and API-key variable; the connector keeps the
provider's name (``connector.name == "ollama:llama3.2"``), in errors and trajectories too. The base URL can be
changed per provider with ``[provider.<name>] base_url`` or for a run with ``--base-url``; the key variable with
``[provider.<name>] api_key_env``. Hosted APIs need their key; local servers take one when it is set (vLLM's
``--api-key``) and send a placeholder otherwise. Events name the service as the OpenTelemetry GenAI conventions
do (``connector.provider``: ``x_ai`` for xai, ``mistral_ai`` for mistral, the provider's own name otherwise).
Each service's ``reply_fields`` say how it takes an environment's reply format (a GBNF grammar, a JSON schema),
and whether it is enforced by default (llama.cpp's server only).

These providers have no ``default_model``, so ``--model auto`` never picks them: an API key that happens to be
in the environment does not silently choose where a run is sent. Their ``example_model`` is shown by
``rlm models list`` and in hints.

This module is imported when the plugin's hook registers the providers, so it imports nothing heavy: the host's
``openai`` connector is imported by the factory, when a model is first made. Each record tells the host what it
needs to know without naming a service (``ProviderSpec.local``, ``start_command``, ``price_id``, ``aliases``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Optional

if TYPE_CHECKING:
    from rlm_host import ProviderServices
    from rlm_host.sdk.models import ModelOptions, OpenAIConnector

#: ``ReplyFormatFields``' arguments: the grammar field, the JSON schema's response format type, enforced by default.
ReplyFields = tuple[str, Literal["", "json_schema", "json_object"], bool]


@dataclass(frozen=True)
class CompatibleProvider:
    """One OpenAI-compatible service: where it listens and which variables may hold its key."""

    name: str
    label: str
    base_url: str
    key_env: tuple[str, ...] = ()
    local: bool = False  # a server on this machine: no key required, costs nothing
    start_command: str = ""  # how a local server is started (said when nothing listens at its URL)
    example_model: str = ""
    aliases: tuple[str, ...] = ()
    otel_name: str = ""  # its gen_ai.provider.name in the OpenTelemetry GenAI conventions, when that is not ``name``
    price_id: str = ""  # its provider id in genai-prices (list prices, context windows): see PRICE_IDS
    #: how it takes a reply format: ``rlm_host.sdk.models.ReplyFormatFields``' arguments (grammar field, JSON schema
    #: type, enforced by default), kept plain so that registering the providers imports nothing
    reply_fields: ReplyFields = ("", "", False)

    @property
    def description(self) -> str:
        where = "local" if self.local else "hosted"
        key = f", key in ${self.key_env[0]}" if self.key_env and not self.local else ""
        return f"{self.label} ({where} OpenAI-compatible API at {self.base_url}{key})"


#: llama.cpp's server (the C++ ``llama-server`` and ``python -m llama_cpp.server``): a GBNF grammar in ``grammar``,
#: a JSON schema as a ``json_object`` response format; enforced by default, as for the in-process llamacpp provider.
LLAMA_CPP_SERVER: ReplyFields = ("grammar", "json_object", True)
#: OpenAI's own way: JSON schemas through ``response_format``, no grammars.
OPENAI_STYLE: ReplyFields = ("", "json_schema", False)

#: The known services, by provider name.
PROVIDERS: dict[str, CompatibleProvider] = {
    p.name: p
    for p in (
        CompatibleProvider("ollama", "Ollama", "http://localhost:11434/v1", local=True,
                           start_command="ollama serve", example_model="llama3.2",
                           reply_fields=OPENAI_STYLE),
        CompatibleProvider("llamacpp_server", "llama.cpp server", "http://localhost:8080/v1", local=True,
                           start_command="llama-server -m MODEL.gguf --port 8080",
                           example_model="smollm2", aliases=("llama-server",), reply_fields=LLAMA_CPP_SERVER),
        CompatibleProvider("lmstudio", "LM Studio", "http://localhost:1234/v1", local=True,
                           start_command="lms server start",
                           example_model="qwen2.5-7b-instruct", aliases=("lm_studio",), reply_fields=OPENAI_STYLE),
        CompatibleProvider("vllm", "vLLM", "http://localhost:8000/v1", ("VLLM_API_KEY",), local=True,
                           start_command="vllm serve MODEL",
                           example_model="Qwen/Qwen2.5-7B-Instruct",
                           reply_fields=("structured_outputs.grammar", "json_schema", False)),
        CompatibleProvider("sglang", "SGLang", "http://localhost:30000/v1", local=True,
                           start_command="python -m sglang.launch_server --model-path MODEL",
                           example_model="Qwen/Qwen2.5-7B-Instruct",
                           reply_fields=("ebnf", "json_schema", False)),
        CompatibleProvider("tgi", "Hugging Face TGI", "http://localhost:8080/v1", local=True,
                           start_command="text-generation-launcher --model-id MODEL", example_model="tgi"),
        CompatibleProvider("openrouter", "OpenRouter", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",),
                           example_model="openai/gpt-4o-mini", reply_fields=OPENAI_STYLE),
        CompatibleProvider("groq", "Groq", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",),
                           example_model="llama-3.3-70b-versatile", reply_fields=OPENAI_STYLE),
        CompatibleProvider("together", "Together AI", "https://api.together.xyz/v1", ("TOGETHER_API_KEY",),
                           example_model="meta-llama/Llama-3.3-70B-Instruct-Turbo", aliases=("togetherai",),
                           reply_fields=OPENAI_STYLE),
        CompatibleProvider("deepseek", "DeepSeek", "https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",),
                           example_model="deepseek-chat"),
        CompatibleProvider("fireworks", "Fireworks AI", "https://api.fireworks.ai/inference/v1",
                           ("FIREWORKS_API_KEY",), example_model="accounts/fireworks/models/llama-v3p3-70b-instruct",
                           reply_fields=OPENAI_STYLE),
        CompatibleProvider("mistral", "Mistral AI", "https://api.mistral.ai/v1", ("MISTRAL_API_KEY",),
                           example_model="mistral-small-latest", otel_name="mistral_ai", reply_fields=OPENAI_STYLE),
        CompatibleProvider("xai", "xAI", "https://api.x.ai/v1", ("XAI_API_KEY",), example_model="grok-3-mini",
                           otel_name="x_ai", reply_fields=OPENAI_STYLE),
        CompatibleProvider("cerebras", "Cerebras", "https://api.cerebras.ai/v1", ("CEREBRAS_API_KEY",),
                           example_model="llama-3.3-70b", reply_fields=OPENAI_STYLE),
        CompatibleProvider("deepinfra", "DeepInfra", "https://api.deepinfra.com/v1/openai", ("DEEPINFRA_API_KEY",),
                           example_model="meta-llama/Llama-3.3-70B-Instruct"),
    )
}


#: The services genai-prices lists (list prices and context windows), by our name → its provider id.
PRICE_IDS = {"groq": "groq", "deepseek": "deepseek", "mistral": "mistral", "openrouter": "openrouter",
             "together": "together", "fireworks": "fireworks", "xai": "x-ai", "cerebras": "cerebras"}
PROVIDERS = {name: replace(p, price_id=PRICE_IDS.get(name, "")) for name, p in PROVIDERS.items()}


@dataclass(frozen=True)
class CompatibleFactory:
    """The provider factory of one service: ``factory(settings, services) -> OpenAIConnector``."""

    provider: str

    def __call__(self, settings: Any, services: "ProviderServices") -> "OpenAIConnector":
        return create(self.provider, services.model, services.options, settings)


def base_url_for(provider: str, settings: Any = None, options: Optional["ModelOptions"] = None) -> str:
    """Where ``provider`` is reached: ``--base-url``, ``[provider.<name>] base_url``, else its usual URL."""
    return (
        (options.base_url if options is not None else None)
        or _setting(settings, "base_url")
        or PROVIDERS[provider].base_url
    )


def key_variable(provider: str, settings: Any = None, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The variable the key is read from: ``api_key_env`` when configured, else the first of the provider's
    variables that is set (else its first one); None for a local server without one."""
    configured = _setting(settings, "api_key_env")
    if configured:
        return str(configured)
    names = PROVIDERS[provider].key_env
    env = os.environ if environ is None else environ
    return next((name for name in names if env.get(name)), names[0] if names else None)


def create(provider: str, model: str, options: Optional["ModelOptions"] = None, settings: Any = None, *,
           environ: Optional[Mapping[str, str]] = None) -> "OpenAIConnector":
    """An OpenAI connector for ``provider:model`` with the service's base URL and key."""
    from rlm_host import ModelError
    from rlm_host.sdk.models import (ModelOptions, OpenAIConnector, OpenAISettings, ReplyFormatFields,
                                     listed_context_window)

    service = PROVIDERS[provider]
    if not model:
        example = f"{provider}:{service.example_model}" if service.example_model else f"{provider}:MODEL"
        raise ModelError(f"{provider}: empty model name (use {provider}:MODEL, e.g. {example})")
    options = options or ModelOptions()
    env = os.environ if environ is None else environ
    variable = key_variable(provider, settings, env)
    if not service.local and not options.api_key and not (variable and env.get(variable)):
        raise ModelError(
            f"no API key for {provider}: set {variable}",
            hint=f"export {variable}=… (the {service.label} API key), or choose another provider",
        )
    values = {key: _setting(settings, key) for key in ("timeout", "max_retries", "max_retry_wait", "context_window")}
    # the window genai-prices gives for this service's model (the openai connector would look it up as OpenAI's)
    values["context_window"] = values["context_window"] or listed_context_window(service.price_id, model)
    connector_settings = OpenAISettings(
        base_url=base_url_for(provider, settings, options),
        api_key_env=variable or f"{provider.upper()}_API_KEY",
        **{key: value for key, value in values.items() if value is not None},
    )
    connector = OpenAIConnector(model, options, connector_settings, environ=env)
    connector.name = f"{provider}:{model}"
    connector.provider = service.otel_name or provider
    connector.reply_fields = ReplyFormatFields(*service.reply_fields)
    return connector


def _setting(settings: Any, key: str) -> Any:
    if settings is None:
        return None
    if isinstance(settings, Mapping):
        return settings.get(key)
    return getattr(settings, key, None)


__all__ = [
    "PROVIDERS",
    "CompatibleFactory",
    "CompatibleProvider",
    "base_url_for",
    "create",
    "key_variable",
]
