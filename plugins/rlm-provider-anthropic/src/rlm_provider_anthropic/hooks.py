"""The plugin's hook implementations: imported at every ``rlm`` start, so they import ``rlm_host`` only.

The ``anthropic`` SDK is imported only when a model is called (``rlm_provider_anthropic.connector``).
"""

from rlm_host import ProviderSpec, hookimpl

#: The environment variable ``--model auto`` looks at (the connector reads ``[provider.anthropic] api_key_env``).
KEY_ENV = "ANTHROPIC_API_KEY"

#: Where requests go unless ``[provider.anthropic] base_url``, ``--base-url`` or ``$ANTHROPIC_BASE_URL`` say
#: otherwise.
DEFAULT_BASE_URL = "https://api.anthropic.com"

#: What ``--model auto`` runs when only ANTHROPIC_API_KEY is set: a current small Claude model (in the SDK's
#: list of model ids).
DEFAULT_MODEL = "claude-haiku-5-5"

INSTALL_HINT = "pip install rlm-provider-anthropic (it depends on the official anthropic SDK)"


@hookimpl
def rlm_register_providers():
    return [
        ProviderSpec(
            "anthropic",
            "Anthropic Claude models through the official anthropic SDK (Messages API)",
            "rlm_provider_anthropic.connector:create",
            aliases=("claude",),
            requires=("anthropic",),
            install_hint=INSTALL_HINT,
            settings="rlm_provider_anthropic.settings:AnthropicSettings",
            key_env=(KEY_ENV,),
            sampling=(),  # the Messages API of the anthropic SDK 2.x takes no sampling parameters: said, not sent
            base_url=DEFAULT_BASE_URL,
            # No base_url_env: ANTHROPIC_BASE_URL alone (set by other tools for their own gateways) must not make
            # `--model auto` pick this provider; the connector still honours it.
            example_model=DEFAULT_MODEL,
            default_model=DEFAULT_MODEL,
            auto_priority=20,  # below a configured OpenAI endpoint (100), above gemini (10)
            price_id="anthropic",  # genai-prices' list prices and context windows
            prices=(("claude-mythos-5", 10.00, 50.00),),  # genai-prices (0.2.3) lists Mythos 5.2, not Mythos 5
        )
    ]
