"""Turn a model string (``provider:model``) into a connector through the provider registry."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Optional

from rlm_host.errors import ConfigError
from rlm_host.llm.protocol import ModelConnector, ModelOptions

if TYPE_CHECKING:
    from rlm_host.config import LoadedSettings
    from rlm_host.plugins.host import PluginHost

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"


def split_model_string(model: str) -> tuple[str, str]:
    """``"openai:gpt-4o-mini"`` → ``("openai", "gpt-4o-mini")``; the model part may itself contain colons."""
    provider, sep, name = model.partition(":")
    if not sep or not provider or not name:
        raise ConfigError(
            f"model {model!r} is not of the form provider:model",
            hint="e.g. --model openai:gpt-4o-mini, or --model scripted:replies.json",
        )
    return provider, name


def auto_model(host: "PluginHost", environ: Optional[dict[str, str]] = None) -> tuple[str, str]:
    """What ``--model auto`` means here, and a notice for the user (empty when nothing needs saying).

    A configured OpenAI(-compatible) endpoint wins; then any provider whose API key is set; then the first
    ready provider that needs no key (the embedded local model).
    """
    env = os.environ if environ is None else environ
    if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        return f"openai:{env.get('RLM_OPENAI_MODEL') or DEFAULT_OPENAI_MODEL}", ""
    candidates = [spec for spec in host.providers() if spec.default_model]
    for spec in candidates:
        if spec.key_env and any(env.get(name) for name in spec.key_env):
            return f"{spec.name}:{spec.default_model}", spec.default_notice
    for spec in candidates:
        if not spec.key_env and spec.readiness().ok:
            return f"{spec.name}:{spec.default_model}", spec.default_notice
    raise ConfigError(
        "no model configured",
        hint="set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server), install a local model provider "
        "(rlm-provider-llamacpp), or pass --model provider:model",
    )


def resolve_connector(
    model: str,
    *,
    host: "PluginHost",
    settings: "LoadedSettings",
    options: Optional[ModelOptions] = None,
) -> ModelConnector:
    """A ready connector for ``model`` (``auto`` resolved), built by its provider plugin."""
    if model == "auto":
        model, _ = auto_model(host)
    provider_name, model_name = split_model_string(model)
    spec = host.providers().get(provider_name)
    factory = spec.load()
    return factory(model_name, options or ModelOptions(), settings.component("provider", spec.name))
