"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import FrameworkSpec, hookimpl


@hookimpl
def rlm_register_frameworks():
    return [
        FrameworkSpec(
            "google-adk",
            "A Google ADK LlmAgent with the run's sandbox as tools (run_code, llm_query), over rlm's own models",
            "rlm_adapter_adk.framework:create",  # google.adk is imported only when a run uses it
            # no alias "google_adk": names compare with "-" and "_" equal, so that spelling already works
            requires=("google.adk",),
            install_hint="pip install rlm-adapter-adk  (it brings google-adk)",
            settings="rlm_adapter_adk.settings:AdkSettings",  # [framework.google-adk]
            mode="agent",
        ),
        FrameworkSpec(
            "adk-rlm",
            "The RLM loop built of Google ADK agents (code generator, REPL executor in the run's sandbox, "
            "completion checker), over rlm's own models",
            "rlm_adapter_adk.rlm_loop:create",
            requires=("google.adk",),
            install_hint="pip install rlm-adapter-adk  (it brings google-adk)",
            settings="rlm_adapter_adk.rlm_settings:AdkRlmSettings",  # [framework.adk-rlm]
            mode="native_rlm",
        ),
        FrameworkSpec(
            "adk-rlm-agent",
            "Seed 003's conversational root agent on Google ADK: rlm_execute_code, rlm_load_context and "
            "rlm_query_context tools, a context_loader sub-agent, the adk-rlm loop as rlm_workflow, callback bundles",
            "rlm_adapter_adk.agent:create",
            requires=("google.adk",),
            install_hint="pip install rlm-adapter-adk  (it brings google-adk)",
            settings="rlm_adapter_adk.agent_settings:AdkAgentSettings",  # [framework.adk-rlm-agent]
            mode="agent",
        ),
    ]
