"""Turn a model string (``provider:model``) into a connector through the provider registry, and say what
``--model auto`` means here. Nothing in this module knows a provider by name: the records say it all."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from rlm_host import redact
from rlm_host.config.trust import model_parts
from rlm_host.errors import ConfigError
from rlm_host.models.protocol import ModelConnector, ModelOptions
from rlm_host.services import ProviderServices

if TYPE_CHECKING:
    from rlm_host.config import LoadedSettings
    from rlm_host.plugins.host import PluginHost


def split_model_string(model: str, host: "PluginHost") -> tuple[str, str]:
    """``"openai:gpt-4o-mini"`` → ``("openai", "gpt-4o-mini")``; the model part may itself contain colons.

    Model strings written for other tools are met half-way: ``openai/gpt-4o-mini`` (DSPy, LiteLLM) is accepted
    when the part before the first ``/`` is a registered provider; a bare ``gpt-4o-mini`` (simonw/llm) gets a
    hint naming the providers whose models look like it, never a guess that could bill the wrong API.
    """
    provider, name = model_parts(model)
    if name and model == f"{provider}:{name}":  # the colon spelling names any provider
        return provider, name
    registry = host.providers()
    if name and provider in registry:
        return registry.get(provider).name, name
    raise ConfigError(f"model {model!r} names no provider: write provider:model", hint=_provider_hint(model, registry))


def _provider_hint(model: str, registry: Any) -> str:
    """Suggest ``provider:model`` strings for a model string that names no provider."""
    if model in registry:  # a provider without its model
        spec = registry.get(model)
        return f"name the model too, e.g. --model {spec.name}:{spec.example_model or 'MODEL'}"
    family = re.match(r"[a-z]+", model.lower())
    alike = [spec.name for spec in registry if family and any(
        (word := re.match(r"[a-z]+", example.lower())) and word.group(0) == family.group(0)
        for example in (spec.example_model, spec.default_model) if example)]
    if alike:
        return "did you mean " + " or ".join(f"--model {name}:{model}" for name in alike[:4]) + "?"
    return f"e.g. --model openai:{model} (`rlm models list` shows the providers)"


def auto_model(host: "PluginHost", environ: Optional[Mapping[str, str]] = None) -> tuple[str, str]:
    """What ``--model auto`` means here, and a notice for the user (empty when nothing needs saying).

    Among providers with a default model, highest ``auto_priority`` first: the first the environment points
    at (a key or base-URL variable set); else the first that needs no key and is ready (a local model).
    """
    env = os.environ if environ is None else environ
    candidates = sorted((spec for spec in host.providers() if spec.default_model),
                        key=lambda spec: -spec.auto_priority)
    for spec in candidates:  # the environment points at it: one of its key variables, or its base-URL variable
        if any(env.get(name) for name in (*spec.key_env, spec.base_url_env) if name):
            return f"{spec.name}:{spec.default_model}", spec.default_notice
    for spec in candidates:
        if not spec.key_env and spec.readiness().ok:
            return f"{spec.name}:{spec.default_model}", spec.default_notice
    keyed = [f"{spec.key_env[0]} ({spec.name})" for spec in candidates if spec.key_env]
    raise ConfigError(
        "no model configured",
        hint="set " + (" or ".join(keyed) if keyed else "a provider's API key")
        + ", install a local model provider, or pass --model provider:model",
    )


def resolve_connector(model: str, *, host: "PluginHost", settings: "LoadedSettings",
                      options: Optional[ModelOptions] = None,
                      home: Optional[Path] = None) -> ModelConnector:
    """A ready connector for ``model`` (``auto`` resolved), built by its provider plugin."""
    if model == "auto":
        model, _ = auto_model(host)
    provider_name, model_name = split_model_string(model, host)
    spec = host.providers().get(provider_name)
    # a key given in code, a flag or a variable the provider reads: never printed or recorded
    redact.register(*(os.environ.get(name) for name in spec.key_env))
    if options is not None:
        redact.register(options.api_key)
        redact.register_url(options.base_url)
    services = ProviderServices(home=home or settings.home, model=model_name, options=options or ModelOptions())
    connector: Any = spec.create(settings.component("provider", spec.name), services)
    return connector
