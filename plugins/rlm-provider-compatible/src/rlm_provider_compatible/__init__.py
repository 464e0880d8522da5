"""rlm-provider-compatible: the OpenAI-compatible services as providers of their own (``ollama:llama3.2``,
``groq:llama-3.3-70b-versatile``…), each served by the host's ``openai`` connector with its URL, key variable and
reply-format fields. The table is :data:`rlm_provider_compatible.services.PROVIDERS`."""
