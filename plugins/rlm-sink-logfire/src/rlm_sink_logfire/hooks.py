"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import SinkSpec, hookimpl


@hookimpl
def rlm_register_sinks():
    return [
        SinkSpec(
            "logfire",
            "Logfire spans (the reward on the root span), through a local Logfire SDK instance",
            "rlm_sink_logfire.sink:create",
            settings="rlm_sink_logfire.settings:LogfireSinkSettings",  # [sink.logfire]
            requires=("logfire", "opentelemetry"),
            install_hint="pip install rlm-sink-logfire",
            check="rlm_sink_logfire.sink:check",
        )
    ]
