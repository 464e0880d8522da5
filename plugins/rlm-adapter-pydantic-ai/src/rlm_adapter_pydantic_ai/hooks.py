"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import FrameworkSpec, hookimpl


@hookimpl
def rlm_register_frameworks():
    return [
        FrameworkSpec(
            "pydantic-ai",
            "A Pydantic AI agent with the run's sandbox as tools (run_code, llm_query), over rlm's own models",
            "rlm_adapter_pydantic_ai.framework:create",  # pydantic-ai is imported only when a run uses it
            # no alias "pydantic_ai": names compare with "-" and "_" equal, so that spelling already works
            requires=("pydantic_ai",),
            install_hint="pip install rlm-adapter-pydantic-ai  (it brings pydantic-ai-slim)",
            settings="rlm_adapter_pydantic_ai.settings:PydanticAISettings",  # [framework.pydantic-ai]
            mode="agent",
        )
    ]
