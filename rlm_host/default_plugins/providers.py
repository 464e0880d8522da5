"""Built-in providers: ``openai`` (OpenAI, or any OpenAI-compatible server through its base URL), ``scripted``
(replies from a script, for dry runs and tests) and ``replay`` (a saved run's replies). The OpenAI-compatible
services by name (ollama, groq…) are the rlm-provider-compatible plugin."""

from __future__ import annotations

from rlm_host.components import ProviderSpec
from rlm_host.hookspecs import hookimpl

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


@hookimpl
def rlm_register_providers() -> list[ProviderSpec]:
    return [
        ProviderSpec("openai", "OpenAI, or any OpenAI-compatible server through OPENAI_BASE_URL / [provider.openai] "
                     "base_url", "rlm_host.models.openai_provider:create", requires=("httpx",),
                     install_hint="pip install httpx", settings="rlm_host.models.openai_provider:ProviderSettings",
                     key_env=("OPENAI_API_KEY",), base_url=OPENAI_DEFAULT_BASE_URL, base_url_env="OPENAI_BASE_URL",
                     example_model="gpt-4o-mini", default_model="gpt-4o-mini", price_id="openai",
                     auto_priority=100),  # a configured OpenAI(-compatible) endpoint wins over other keys
        ProviderSpec("scripted", "Deterministic replies from a script file (scripted:PATH), for dry runs and tests",
                     "rlm_host.models.scripted:create", key_optional=True, example_model="replies.json",
                     model_files=True, local=True),  # local: free
        ProviderSpec("replay", "Answers with the model replies recorded in a saved run (replay:RUN_ID, a prefix, "
                     "latest or a .jsonl path)", "rlm_host.trajectory.replay_provider:create",
                     settings="rlm_host.trajectory.replay_provider:ReplaySettings", key_optional=True,
                     example_model="latest", model_files=True, local=True),  # local: free
    ]
