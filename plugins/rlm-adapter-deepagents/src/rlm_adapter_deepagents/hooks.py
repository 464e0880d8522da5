"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import FrameworkSpec, hookimpl


@hookimpl
def rlm_register_frameworks():
    return [
        FrameworkSpec(
            "deepagents",
            "A LangChain deep agent (planning, files, sub-agents) with the run's sandbox as tools (run_code, "
            "llm_query), over rlm's own models",
            "rlm_adapter_deepagents.framework:create",  # deepagents is imported only when a run uses it
            requires=("deepagents", "langchain_core"),
            install_hint="pip install rlm-adapter-deepagents  (it brings deepagents and langchain-core)",
            settings="rlm_adapter_deepagents.settings:DeepAgentsSettings",  # [framework.deepagents]
            mode="agent",
        )
    ]
