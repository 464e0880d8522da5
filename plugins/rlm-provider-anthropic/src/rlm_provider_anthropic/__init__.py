"""rlm-provider-anthropic: Anthropic's Claude models through the official ``anthropic`` SDK (Messages API).

Model strings are ``anthropic:MODEL`` (``anthropic:claude-haiku-5-5``); the API key comes from
``ANTHROPIC_API_KEY``. The SDK is imported only when a model is called (``rlm_provider_anthropic.connector``).
"""

PLUGIN_NAME = "rlm-provider-anthropic"
