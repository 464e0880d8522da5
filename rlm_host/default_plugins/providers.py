"""Built-in providers: ``openai`` and the OpenAI-compatible family (one connector, each service's URL and key
variable), ``scripted`` (replies from a script, for dry runs and tests) and ``replay`` (a saved run's replies)."""

from __future__ import annotations

from rlm_host.components import ProviderSpec
from rlm_host.hookspecs import hookimpl

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


@hookimpl
def rlm_register_providers() -> list[ProviderSpec]:
    from rlm_host.llm.openai_compatible import PROVIDERS, CompatibleFactory  # not needed by `rlm --help`

    return [
        ProviderSpec(
            "openai",
            "OpenAI, or any OpenAI-compatible server through OPENAI_BASE_URL / [provider.openai] base_url",
            "rlm_host.llm.openai_provider:create",
            requires=("httpx",),
            install_hint="pip install httpx",
            settings="rlm_host.llm.openai_provider:ProviderSettings",
            key_env=("OPENAI_API_KEY",),
            base_url=OPENAI_DEFAULT_BASE_URL,
            base_url_env="OPENAI_BASE_URL",
            example_model="gpt-4o-mini",
            default_model="gpt-4o-mini",
            auto_priority=100,  # a configured OpenAI(-compatible) endpoint wins over other keys
        ),
        ProviderSpec(
            "scripted",
            "Deterministic replies from a script file (scripted:PATH), for dry runs and tests",
            "rlm_host.llm.scripted:create",
            key_optional=True,
            example_model="replies.json",
            model_files=True,
        ),
        ProviderSpec(
            "replay",
            "Answers with the model replies recorded in a saved run (replay:RUN_ID, a prefix, latest or a .jsonl path)",
            "rlm_host.trajectory.replay_provider:create",
            settings="rlm_host.trajectory.replay_provider:ReplaySettings",
            key_optional=True,
            example_model="latest",
            model_files=True,
        ),
        *(
            ProviderSpec(
                service.name,
                service.description,
                CompatibleFactory(service.name),
                aliases=service.aliases,
                requires=("httpx",),
                install_hint="pip install httpx",
                settings="rlm_host.llm.openai_compatible_settings:CompatibleSettings",
                key_env=service.key_env,
                key_optional=service.local,
                base_url=service.base_url,
                example_model=service.example_model,
            )
            for service in PROVIDERS.values()
        ),
    ]
