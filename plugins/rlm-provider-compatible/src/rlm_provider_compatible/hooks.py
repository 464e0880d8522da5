"""The plugin's hook implementations: imported at every ``rlm`` start, so they import ``rlm_host`` and the service
table only (the ``openai`` connector is imported when a model is made)."""

from rlm_host import ProviderSpec, hookimpl


@hookimpl
def rlm_register_providers():
    from rlm_provider_compatible.services import PROVIDERS, CompatibleFactory

    return [
        ProviderSpec(
            service.name,
            service.description,
            CompatibleFactory(service.name),
            aliases=service.aliases,
            requires=("httpx",),
            install_hint="pip install httpx",
            settings="rlm_provider_compatible.settings:CompatibleSettings",  # [provider.<name>]
            key_env=service.key_env,
            key_optional=service.local,
            base_url=service.base_url,
            example_model=service.example_model,
            price_id=service.price_id,
            local=service.local,  # free, and probed by `rlm models list`
            start_command=service.start_command,  # said when nothing listens at its URL
        )
        for service in PROVIDERS.values()
    ]
