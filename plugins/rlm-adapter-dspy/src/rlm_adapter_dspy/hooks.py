"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import FrameworkSpec, hookimpl


@hookimpl
def rlm_register_frameworks():
    return [
        FrameworkSpec(
            "dspy-rlm",
            "DSPy's own RLM loop (dspy.RLM): code, llm_query and SUBMIT in rlm's sandbox, with rlm's models",
            "rlm_adapter_dspy.framework:create",  # imports dspy: only when a run uses the framework
            aliases=("dspy",),  # the seeds' compatibility alias
            requires=("dspy",),
            install_hint="pip install rlm-adapter-dspy",
            check="rlm_adapter_dspy.settings:readiness",
            settings="rlm_adapter_dspy.settings:DspyRlmSettings",  # [framework.dspy-rlm]
            mode="native_rlm",
        )
    ]
