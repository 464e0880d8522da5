"""rlm-provider-gemini: Google's Gemini models through the official ``google-genai`` SDK (Gemini Developer API).

Model strings are ``gemini:MODEL`` (``gemini:gemini-3.8-flash``); the API key comes from ``GOOGLE_API_KEY`` or
``GEMINI_API_KEY``. The SDK is imported only when a model is called (``rlm_provider_gemini.connector``).
"""

PLUGIN_NAME = "rlm-provider-gemini"
