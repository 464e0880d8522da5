"""The plugin's hook implementations: imported at every ``rlm`` start, so they import ``rlm_host`` only.

The ``google-genai`` SDK is imported only when a model is called (``rlm_provider_gemini.connector``).
"""

from rlm_host import ProviderSpec, hookimpl

#: The environment variables that may hold the API key, in the order the SDK itself reads them (it prefers
#: GOOGLE_API_KEY when both are set).
KEY_ENVS = ("GOOGLE_API_KEY", "GEMINI_API_KEY")

#: Where requests go unless ``[provider.gemini] base_url``, ``--base-url`` or ``$GOOGLE_GEMINI_BASE_URL`` say
#: otherwise.
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"

#: What ``--model auto`` runs when only a Gemini key is set: the current Flash model of the SDK's model list.
DEFAULT_MODEL = "gemini-3.8-flash"

INSTALL_HINT = "pip install rlm-provider-gemini (it depends on the official google-genai SDK)"


@hookimpl
def rlm_register_providers():
    return [
        ProviderSpec(
            "gemini",
            "Google Gemini models through the official google-genai SDK (Gemini Developer API)",
            "rlm_provider_gemini.connector:create",
            aliases=("google",),
            requires=("google.genai",),
            check="rlm_provider_gemini.checks:sdk_installed",
            install_hint=INSTALL_HINT,
            settings="rlm_provider_gemini.settings:GeminiSettings",
            key_env=KEY_ENVS,
            base_url=DEFAULT_BASE_URL,
            # No base_url_env: GOOGLE_GEMINI_BASE_URL alone must not make `--model auto` pick this provider (as
            # before); the connector still honours it.
            example_model=DEFAULT_MODEL,
            default_model=DEFAULT_MODEL,
            auto_priority=10,  # below a configured OpenAI endpoint (100) and anthropic (20)
            price_id="google",  # genai-prices' list prices and context windows
        )
    ]
