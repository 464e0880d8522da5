"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import SinkSpec, hookimpl


@hookimpl
def rlm_register_sinks():
    return [
        SinkSpec(
            "langsmith",
            "LangSmith runs (chain / llm / tool) with reward and completed feedback",
            "rlm_sink_langsmith.sink:create",
            settings="rlm_sink_langsmith.settings:LangSmithSinkSettings",  # [sink.langsmith]
            requires=("langsmith",),
            install_hint="pip install rlm-sink-langsmith",
            check="rlm_sink_langsmith.sink:check",
        )
    ]
