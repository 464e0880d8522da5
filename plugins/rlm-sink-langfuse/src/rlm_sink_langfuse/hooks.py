"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import SinkSpec, hookimpl


@hookimpl
def rlm_register_sinks():
    return [
        SinkSpec(
            "langfuse",
            "Langfuse traces (agent / generation / tool observations) with reward and completed scores",
            "rlm_sink_langfuse.sink:create",
            settings="rlm_sink_langfuse.settings:LangfuseSinkSettings",  # [sink.langfuse]
            requires=("langfuse", "opentelemetry"),
            install_hint="pip install rlm-sink-langfuse",
            check="rlm_sink_langfuse.sink:check",
        )
    ]
